import Dispatch
import Foundation

/// Runs blocking work on `count` dedicated threads (never the cooperative pool) and awaits all
/// results, in the order of their index.
/// - Parameters:
///   - count: how many threads.
///   - work: the work of thread `index`.
/// - Returns: each thread's result.
public func onThreads<T: Sendable>(_ count: Int, _ work: @escaping @Sendable (Int) -> T) async -> [T] {
    let results = ThreadResults<T>(count: count)
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        Thread {
            results.set(index, work(index))
            group.leave()
        }.start()
    }
    return await withCheckedContinuation { continuation in
        group.notify(queue: .global()) { continuation.resume(returning: results.all()) }
    }
}

/// Runs blocking work on a thread of its own, so the test does not hold one of the cooperative
/// pool's few threads (other tests' continuations need them).
/// - Parameter work: the blocking work.
/// - Returns: what it returns.
public func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

/// One result per thread, filled in from any thread.
public final class ThreadResults<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [T?]
    /// Room for `count` results.
    public init(count: Int) { values = Array(repeating: nil, count: count) }
    /// Stores the result of thread `index`.
    public func set(_ index: Int, _ value: T) { lock.withLock { values[index] = value } }
    /// Every result; call only once every thread has stored its own.
    public func all() -> [T] { lock.withLock { values.map { $0! } } }
}
