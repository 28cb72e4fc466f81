import Dispatch
import Foundation

/// Checks that blocking work started from async code does not sit on a thread of Swift's
/// cooperative pool (whose width is the number of cores): a derivation that blocked there would
/// stall every other task of the process.
public enum CooperativePool {
    /// Starts `count` tasks that each run `work`, which the caller has arranged to block (holding
    /// a lock it needs); checks that every task gets to start and that one more trivial task
    /// still runs; then calls `release` so the blocked work can finish, and waits for all of it.
    ///
    /// Start more tasks than the pool has threads (`count` > cores): if `work` blocked on the
    /// pool, the first tasks would hold every pool thread and the rest could never start. Other
    /// tests may keep the pool busy for a while, which only delays the tasks, so the bound is
    /// generous: a pool blocked by `work` stays blocked until `release`, however long one waits.
    /// The waiting is done on a thread of its own, never on the pool.
    /// - Parameters:
    ///   - count: how many blocked tasks to start.
    ///   - timeout: how long the tasks and the trivial task may take to start.
    ///   - work: the async call under test.
    ///   - release: unblocks `work` (called exactly once).
    /// - Returns: whether every task started and the trivial task ran while the work was blocked.
    public static func staysFree(
        whileBlocking count: Int, timeout: DispatchTimeInterval = .seconds(120),
        _ work: @escaping @Sendable () async -> Void, release: @escaping @Sendable () -> Void
    ) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            Thread.detachNewThread {
                let finished = DispatchGroup()
                let started = DispatchSemaphore(value: 0)
                for _ in 0..<count {
                    finished.enter()
                    Task.detached {
                        started.signal()
                        await work()
                        finished.leave()
                    }
                }
                let deadline = DispatchTime.now() + timeout
                var ran = (0..<count).allSatisfy { _ in started.wait(timeout: deadline) == .success }
                if ran {
                    let probe = DispatchSemaphore(value: 0)
                    Task.detached { probe.signal() }
                    ran = probe.wait(timeout: deadline) == .success
                }
                release()
                finished.wait()
                continuation.resume(returning: ran)
            }
        }
    }

    /// More tasks than the cooperative pool has threads.
    public static var oversubscribed: Int { ProcessInfo.processInfo.activeProcessorCount + 2 }
}
