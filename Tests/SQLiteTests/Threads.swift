import Foundation

/// Runs blocking work on `count` dedicated threads (not the cooperative pool) and awaits all results.
func onThreads<T: Sendable>(_ count: Int, _ work: @escaping @Sendable (Int) -> T) async -> [T] {
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

/// Runs blocking work on a thread of its own, so the test does not hold one of the
/// cooperative pool's few threads (other tests' continuations need them).
func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

final class ThreadResults<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [T?]
    init(count: Int) { values = Array(repeating: nil, count: count) }
    func set(_ index: Int, _ value: T) { lock.withLock { values[index] = value } }
    func all() -> [T] { lock.withLock { values.map { $0! } } }
}
