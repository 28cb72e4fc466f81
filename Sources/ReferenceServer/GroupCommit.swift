import Dispatch
import Foundation

/// Group commit: callers that arrive while a batch is being made durable wait, and go together in
/// the next batch, so one `fsync` acknowledges many of them.
///
/// The first caller to find no batch in progress leads: it takes the queue (up to `limit` items),
/// runs `commit` on it without the queue's lock, hands the lead to the first caller still queued
/// and each caller of its batch its own output. Nobody gets an output before `commit` returned,
/// so nothing is acknowledged before its batch is durable. Callers wait on their own threads (the
/// HTTP server's connection threads); nothing suspends. Each waiting caller is woken once, for
/// its own news (its output, or the lead), not with every other caller at each batch.
final class GroupCommit<Item: Sendable, Output: Sendable>: @unchecked Sendable {
    private final class Ticket {
        let item: Item
        /// Set by the leader of the ticket's batch before it wakes the ticket's caller.
        var output: Output?
        /// Set when the lead is handed to this ticket's caller.
        var leads = false
        /// The ticket's caller sleeps here until it has an output or the lead.
        let wake = DispatchSemaphore(value: 0)
        init(_ item: Item) { self.item = item }
    }

    // `queue`, `leading` and the tickets' `output` and `leads` are guarded by `lock`.
    private let lock = NSLock()
    private var queue: [Ticket] = []
    private var leading = false
    private let limit: Int

    /// - Parameter limit: the most items one batch takes.
    init(limit: Int) { self.limit = max(1, limit) }

    /// Items queued and not yet taken by a batch (for tests).
    var waiting: Int {
        lock.lock()
        defer { lock.unlock() }
        return queue.count
    }

    /// Queues `item` and returns its output once the batch that holds it was committed.
    /// - Parameters:
    ///   - item: what to commit.
    ///   - commit: commits a batch and returns one output per item, in order (every caller passes
    ///     the same function; the leader's runs).
    /// - Returns: `item`'s output.
    func submit(_ item: Item, commit: ([Item]) -> [Output]) -> Output {
        let ticket = Ticket(item)
        lock.lock()
        queue.append(ticket)
        if leading {
            lock.unlock()
            ticket.wake.wait()
            lock.lock()
            if let output = ticket.output {
                lock.unlock()
                return output
            }
            // Woken to lead: `leading` stayed true for this ticket, the head of the queue.
            precondition(ticket.leads, "a waiting caller is woken for its output or the lead")
        } else {
            leading = true
        }
        // This caller leads and its ticket is the queue's head, so the batch holds it first.
        let batch = Array(queue.prefix(limit))
        queue.removeFirst(batch.count)
        lock.unlock()
        let outputs = commit(batch.map(\.item))
        precondition(outputs.count == batch.count, "a group commit must answer every item")
        lock.lock()
        for (waiting, output) in zip(batch, outputs) { waiting.output = output }
        if let next = queue.first {
            next.leads = true
            next.wake.signal()
        } else {
            leading = false
        }
        lock.unlock()
        for waiting in batch.dropFirst() { waiting.wake.signal() }
        return outputs[0]
    }
}
