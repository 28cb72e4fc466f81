import Foundation

/// Group commit: callers that arrive while a batch is being made durable wait, and go together in
/// the next batch, so one `fsync` acknowledges many of them.
///
/// The first caller to find no batch in progress leads: it takes the queue (up to `limit` items),
/// runs `commit` on it without the queue's lock, and hands each caller its own output. Nobody gets
/// an output before `commit` returned, so nothing is acknowledged before its batch is durable.
/// Callers wait on their own threads (the HTTP server's connection threads); nothing suspends.
final class GroupCommit<Item: Sendable, Output: Sendable>: @unchecked Sendable {
    private final class Ticket {
        let item: Item
        var output: Output?
        init(_ item: Item) { self.item = item }
    }

    // `queue` and `leading` are guarded by `condition`.
    private let condition = NSCondition()
    private var queue: [Ticket] = []
    private var leading = false
    private let limit: Int

    /// - Parameter limit: the most items one batch takes.
    init(limit: Int) { self.limit = max(1, limit) }

    /// Items queued and not yet taken by a batch (for tests).
    var waiting: Int {
        condition.lock()
        defer { condition.unlock() }
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
        condition.lock()
        defer { condition.unlock() }
        queue.append(ticket)
        while true {
            if let output = ticket.output { return output }
            if leading {
                condition.wait()
                continue
            }
            leading = true
            let batch = Array(queue.prefix(limit))
            queue.removeFirst(batch.count)
            condition.unlock()
            let outputs = commit(batch.map(\.item))
            condition.lock()
            precondition(outputs.count == batch.count, "a group commit must answer every item")
            for (waiting, output) in zip(batch, outputs) { waiting.output = output }
            leading = false
            condition.broadcast()
        }
    }
}
