import ActivationServer
import Dispatch
import Foundation
import PowerAuthProtocol
import Synchronization
import Testing

@testable import ReferenceServer

@Suite("Group commit of counted attempts")
struct GroupCommitTests {
    /// Runs `body(i)` for i in 0..<count on that many threads of its own, at once (not a pool's
    /// few: the callers must really wait side by side); returns the outputs in order.
    static func concurrently<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) -> T) -> [T] {
        let outputs = Mutex<[Int: T]>([:])
        let done = DispatchSemaphore(value: 0)
        for i in 0..<count {
            Thread {
                let output = body(i)
                outputs.withLock { $0[i] = output }
                done.signal()
            }.start()
        }
        for _ in 0..<count { done.wait() }
        return outputs.withLock { all in (0..<count).map { all[$0]! } }
    }

    @Test("callers that arrive during a commit share the next batch; each gets its own output, after its batch")
    func callersShareABatch() {
        let group = GroupCommit<Int, Int>(limit: 64)
        let batches = Mutex<[[Int]]>([])
        let outputs = Self.concurrently(16) { i in
            group.submit(i) { batch in
                if batches.withLock({ $0.isEmpty }) {
                    // The first batch waits for the other 15 to queue behind it (at most 10 s).
                    for _ in 0..<10_000 where group.waiting < 15 { usleep(1000) }
                }
                batches.withLock { $0.append(batch) }
                return batch.map { $0 * 10 }
            } == i * 10 && batches.withLock { $0.contains { $0.contains(i) } }
        }
        #expect(outputs.allSatisfy { $0 })
        let recorded = batches.withLock { $0 }
        #expect(recorded.map(\.count) == [1, 15])
        #expect(Set(recorded.joined()) == Set(0..<16))
    }

    @Test("a batch takes at most `limit` items; the rest go in later batches")
    func limitBoundsABatch() {
        let group = GroupCommit<Int, Int>(limit: 4)
        let batches = Mutex<[[Int]]>([])
        let outputs = Self.concurrently(16) { i in
            group.submit(i) { batch in
                if batches.withLock({ $0.isEmpty }) {
                    for _ in 0..<10_000 where group.waiting < 15 { usleep(1000) }
                }
                batches.withLock { $0.append(batch) }
                return batch.map { -$0 }
            }
        }
        #expect(outputs == (0..<16).map { -$0 })
        let recorded = batches.withLock { $0 }
        #expect(recorded.allSatisfy { $0.count <= 4 })
        #expect(recorded.map(\.count).reduce(0, +) == 16)
        #expect(recorded.count == 5)
    }

    @Test("SQLite: 48 concurrent attempts in shared transactions: blocked at exactly 5, one audit row each")
    func sqliteAttemptsGrouped() async throws {
        let s = try InProcessServer(backend: .sqlite)
        defer { s.server.stop() }
        let (_, id) = try await s.activeDevice()
        let store = s.server.store
        // Every third attempt names an activation that does not exist: it fails alone, in its batch.
        let outcomes = Self.concurrently(48) { i -> Result<AttemptResult, ActivationServerError> in
            do throws(ActivationServerError) {
                return .success(
                    try store.recordAttempt(
                        activationId: i % 3 == 0 ? "missing-\(i)" : id, outcome: .rejected, now: Date(),
                        failureBlockDuration: nil))
            } catch {
                return .failure(error)
            }
        }
        let missing = outcomes.enumerated().filter { $0.offset % 3 == 0 }.map(\.element)
        let counted = outcomes.enumerated().filter { $0.offset % 3 != 0 }.map(\.element)
        #expect(missing.allSatisfy { if case .failure(.activationNotFound) = $0 { true } else { false } })
        let results = counted.compactMap { try? $0.get() }
        #expect(results.count == 32)
        #expect(results.allSatisfy { !$0.accepted })
        // Each count from 1 to 5 was answered exactly once, in some order.
        #expect(results.map(\.failedAttempts).sorted() == Array(1...5) + Array(repeating: 5, count: 27))
        let detail = try await s.backOffice.detail(id)
        #expect(detail.state == "BLOCKED")
        #expect(detail.failedAttempts == 5)
        let trail = try store.auditTrail(activationId: id)
        #expect(trail.count == 32)
        #expect(trail.filter { $0.outcome == .failure }.count == 4)
        #expect(trail.filter { $0.outcome == .failureBlocked }.count == 1)
        #expect(trail.filter { $0.outcome == .refused }.count == 27)
    }
}

@Suite("Group commit hand-over")
struct GroupCommitHandOverTests {
    @Test("waiting callers are woken once each; the lead passes to the first queued caller, in arrival order")
    func leadPassesInOrder() {
        let group = GroupCommit<Int, Int>(limit: 1)
        let order = Mutex<[Int]>([])
        let inside = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        // The first caller holds its batch until three more have queued behind it, one by one.
        Thread {
            _ = group.submit(0) { batch in
                inside.signal()
                release.wait()
                order.withLock { $0.append(contentsOf: batch) }
                return batch
            }
            done.signal()
        }.start()
        inside.wait()
        for i in 1...3 {
            Thread {
                #expect(
                    group.submit(i) { batch in
                        order.withLock { $0.append(contentsOf: batch) }
                        return batch.map { $0 * 100 }
                    } == i * 100)
                done.signal()
            }.start()
            // Queue them in a known order.
            for _ in 0..<10_000 where group.waiting < i { usleep(1000) }
        }
        #expect(group.waiting == 3)
        release.signal()
        for _ in 0...3 { done.wait() }
        // limit 1: four batches, led in the order the callers arrived.
        #expect(order.withLock { $0 } == [0, 1, 2, 3])
        #expect(group.waiting == 0)
    }
}
