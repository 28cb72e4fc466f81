import Dispatch
import Foundation

/// Checks that blocking work started from async code does not sit on a thread of Swift's
/// cooperative pool (whose width is the number of cores): a derivation that blocked there would
/// stall every other task of the process.
public enum CooperativePool {
    /// Starts `count` tasks that each run `work`, which the caller has arranged to block (holding
    /// a lock it needs), then checks that one more trivial task still runs within `timeout`.
    /// Finally calls `release` so the blocked work can finish, and waits for all of it.
    ///
    /// Start more tasks than the pool has threads (`count` > cores): if `work` ran its blocking
    /// part on the pool, no thread would be left for the trivial task and the check fails. The
    /// waiting is done on a thread of its own, never on the pool, so the check itself cannot
    /// starve the pool.
    /// - Parameters:
    ///   - count: how many blocked tasks to start.
    ///   - timeout: how long the trivial task may take.
    ///   - work: the async call under test.
    ///   - release: unblocks `work` (called exactly once).
    /// - Returns: whether the trivial task ran while the work was blocked.
    public static func staysFree(
        whileBlocking count: Int, timeout: DispatchTimeInterval = .seconds(10),
        _ work: @escaping @Sendable () async -> Void, release: @escaping @Sendable () -> Void
    ) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            Thread.detachNewThread {
                let finished = DispatchGroup()
                for _ in 0..<count {
                    finished.enter()
                    Task.detached {
                        await work()
                        finished.leave()
                    }
                }
                // Give the blocked tasks time to reach their lock before the probe is scheduled.
                Thread.sleep(forTimeInterval: 0.3)
                let probe = DispatchSemaphore(value: 0)
                Task.detached { probe.signal() }
                let ran = probe.wait(timeout: .now() + timeout) == .success
                release()
                finished.wait()
                continuation.resume(returning: ran)
            }
        }
    }

    /// More tasks than the cooperative pool has threads.
    public static var oversubscribed: Int { ProcessInfo.processInfo.activeProcessorCount + 2 }
}
