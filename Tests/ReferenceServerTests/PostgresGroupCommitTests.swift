import Activation
import ActivationServer
import Dispatch
import Foundation
import PostgresStore
import PowerAuthProtocol
import SecureCore
import Synchronization
import TestSupport
import Testing

@testable import ReferenceServer

/// Group commit of the PostgreSQL one-statement attempt: concurrent conditional attempts of one
/// instance share one statement. Each test forms its batch deterministically, not by timing: a
/// row lock the test holds stops the first attempt's statement, the others queue behind it
/// (``GroupCommit/waiting``), and releasing the lock sends them as the next statement.
@Suite(
    "PostgreSQL: conditional attempts written together",
    .enabled(if: StoreBackend.clusterConnectionString != nil, StoreBackend.skipReason))
struct PostgresGroupCommitTests {
    /// A row lock (`SELECT … FOR UPDATE`) held by a transaction of the test's own, on a thread
    /// of its own, until ``release()``.
    final class RowLock: @unchecked Sendable {
        private let held = DispatchSemaphore(value: 0)
        private let unlock = DispatchSemaphore(value: 0)
        private let ended = DispatchSemaphore(value: 0)

        init(_ dsn: SecureBytes, activationId: String) throws {
            let pool = try PostgresPool(
                connectionString: dsn, configuration: PostgresPool.Configuration(maximumConnections: 1))
            let (held, unlock, ended) = (held, unlock, ended)
            let failed = Mutex(false)
            Thread {
                do throws(PostgresError) {
                    try pool.transaction { (c) throws(PostgresError) in
                        try c.query("SELECT id FROM activation WHERE id = $1 FOR UPDATE", [.text(activationId)])
                        held.signal()
                        unlock.wait()
                    }
                } catch {
                    failed.withLock { $0 = true }
                    held.signal()
                }
                ended.signal()
            }.start()
            guard held.wait(timeout: .now() + 60) == .success, !failed.withLock({ $0 }) else {
                throw PostgresError.aborted(reason: "the test's row lock was not taken")
            }
        }

        /// Ends the transaction (the lock with it) and waits until it has ended.
        func release() {
            unlock.signal()
            ended.wait()
        }
    }

    /// Runs `body` on a thread of its own; the returned function waits for its output.
    static func spawn<T: Sendable>(_ body: @escaping @Sendable () -> T) -> @Sendable () -> T {
        let output = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            let value = body()
            output.withLock { $0 = value }
            done.signal()
        }.start()
        return {
            done.wait()
            done.signal()
            return output.withLock { $0! }
        }
    }

    /// Waits (polling, at most 60 s) until `condition` holds; whether it did. Synchronisation
    /// only: nothing here measures how long anything took.
    static func eventually(_ condition: () throws -> Bool) rethrows -> Bool {
        for _ in 0..<6_000 {
            if try condition() { return true }
            usleep(10_000)
        }
        return try condition()
    }

    /// The test database's backends waiting for a lock, with their statements' text.
    static func waitingOnLock(_ dsn: SecureBytes) throws -> [(pid: Int64, query: String)] {
        try PostgresPool(connectionString: dsn).withConnection { (c) throws(PostgresError) in
            try c.query(
                """
                SELECT pid::bigint, query FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event_type = 'Lock'
                """)
        }.compactMap { row in row[0].int64.flatMap { pid in row[1].string.map { (pid, $0) } } }
    }

    /// One conditional attempt, as the server's short path makes it.
    static func conditional(
        _ store: PostgresActivationStore, _ observed: ActivationRecord, _ outcome: AttemptOutcome = .rejected
    ) -> Result<AttemptResult?, ActivationServerError> {
        do throws(ActivationServerError) {
            return .success(
                try store.recordAttemptIfUnchanged(
                    activationId: observed.activationId, outcome: outcome, now: Date(), failureBlockDuration: nil,
                    observed: observed))
        } catch {
            return .failure(error)
        }
    }

    /// A server on a fresh database with `count` active activations; its store, their fresh
    /// records and the database's connection string.
    static func setUp(_ count: Int) async throws -> (
        InProcessServer, PostgresActivationStore, [ActivationRecord], SecureBytes
    ) {
        let s = try InProcessServer(backend: .postgres)
        let store = try #require(s.server.store as? PostgresActivationStore)
        var records: [ActivationRecord] = []
        for _ in 0..<count {
            let (_, id) = try await s.activeDevice()
            records.append(try #require(try store.fetch(activationId: id)))
        }
        return (s, store, records, try #require(s.store.connectionString))
    }

    /// Holds `blocker`'s row, starts an attempt on it (its statement then waits for the lock),
    /// queues `attempts` behind it, and releases the lock once all of them wait in the group
    /// commit: they go in the next statement together. Returns the blocker's answer and theirs.
    static func batch(
        _ store: PostgresActivationStore, dsn: SecureBytes, blocker: ActivationRecord,
        _ attempts: [@Sendable () -> Result<AttemptResult?, ActivationServerError>]
    ) throws -> (Result<AttemptResult?, ActivationServerError>, [Result<AttemptResult?, ActivationServerError>]) {
        let lock = try RowLock(dsn, activationId: blocker.activationId)
        let first = spawn { conditional(store, blocker) }
        #expect(try eventually { try !waitingOnLock(dsn).isEmpty })
        let rest = attempts.map { spawn($0) }
        #expect(eventually { store.conditionalWrites.waiting == attempts.count })
        lock.release()
        return (first(), rest.map { $0() })
    }

    @Test("attempts on many activations at once: one statement, each counted once with its audit row")
    func manyActivations() async throws {
        let (s, store, records, dsn) = try await Self.setUp(9)
        defer { s.server.stop() }
        let batchedBefore = store.batchedAttempts.load(ordering: .relaxed)
        let shortBefore = store.shortPathAttempts.load(ordering: .relaxed)
        let (first, rest) = try Self.batch(
            store, dsn: dsn, blocker: records[0],
            records.dropFirst().map { observed in { Self.conditional(store, observed) } })
        for result in [first] + rest {
            let answer = try #require(try result.get())
            #expect(answer == AttemptResult(accepted: false, state: .active, failedAttempts: 1, maxFailedAttempts: 5))
        }
        // The eight queued attempts went in one statement, the blocker in its own.
        #expect(store.batchedAttempts.load(ordering: .relaxed) == batchedBefore + 8)
        #expect(store.shortPathAttempts.load(ordering: .relaxed) == shortBefore + 9)
        for record in records {
            #expect(try store.fetch(activationId: record.activationId)?.failedAttempts == 1)
            #expect(try store.auditTrail(activationId: record.activationId).map(\.outcome) == [.failure])
        }
    }

    @Test("signed requests through the server (its metrics wrapper in between) share a statement")
    func throughTheServer() async throws {
        let s = try InProcessServer(backend: .postgres)
        defer { s.server.stop() }
        let store = try #require(s.server.store as? PostgresActivationStore)
        let dsn = try #require(s.store.connectionString)
        var ids: [String] = []
        var headers: [String] = []
        for _ in 0..<5 {
            let (device, id) = try await s.activeDevice()
            ids.append(id)
            headers.append(try await ObservedAttemptTests.signed(device))
        }
        let server = s.server.activationServer
        let validate: @Sendable (String) -> Int = { header in
            server.respond(
                to: TransportRequest(
                    path: ActivationAPI.validateSignature.path, headers: [AuthorizationHeader.name: header],
                    body: ObservedAttemptTests.body)
            ).statusCode
        }
        let batchedBefore = store.batchedAttempts.load(ordering: .relaxed)
        let shortBefore = store.shortPathAttempts.load(ordering: .relaxed)
        // The first request's conditional write waits for the row lock; the others read their
        // rows (a plain read does not wait for it) and queue behind it.
        let lock = try RowLock(dsn, activationId: ids[0])
        let firstHeader = headers[0]
        let first = Self.spawn { validate(firstHeader) }
        #expect(try Self.eventually { try !Self.waitingOnLock(dsn).isEmpty })
        let rest = headers.dropFirst().map { header in Self.spawn { validate(header) } }
        #expect(Self.eventually { store.conditionalWrites.waiting == 4 })
        lock.release()
        #expect(first() == 200)
        #expect(rest.map { $0() } == [200, 200, 200, 200])
        #expect(store.batchedAttempts.load(ordering: .relaxed) == batchedBefore + 4)
        #expect(store.shortPathAttempts.load(ordering: .relaxed) == shortBefore + 5)
        for id in ids {
            #expect(try store.auditTrail(activationId: id).map(\.outcome) == [.accepted])
        }
    }

    @Test("several attempts on one activation in a batch: at most one written, the others nil and unsent")
    func duplicateInBatch() async throws {
        let (s, store, records, dsn) = try await Self.setUp(5)
        defer { s.server.stop() }
        let target = records[1]
        // Two wrong codes and two copies of the right one, all from the same (current) observation:
        // each of them alone would be written.
        let accept = AttemptOutcome.accepted(
            codeIndex: target.counterIndex, nextCounter: try target.counter.next(), resetsFailures: true)
        let outcomes: [AttemptOutcome] = [.rejected, accept, .rejected, accept]
        let duplicatesBefore = store.duplicateAttempts.load(ordering: .relaxed)
        let batchedBefore = store.batchedAttempts.load(ordering: .relaxed)
        var attempts: [@Sendable () -> Result<AttemptResult?, ActivationServerError>] = outcomes.map { outcome in
            { Self.conditional(store, target, outcome) }
        }
        attempts += records.dropFirst(2).map { observed in { Self.conditional(store, observed) } }
        let (_, rest) = try Self.batch(store, dsn: dsn, blocker: records[0], attempts)
        let onTarget = try rest.prefix(4).map { try $0.get() }
        let written = onTarget.compactMap { $0 }
        #expect(written.count == 1)
        #expect(store.duplicateAttempts.load(ordering: .relaxed) == duplicatesBefore + 3)
        // The target once, and the three other activations: one statement of four.
        #expect(store.batchedAttempts.load(ordering: .relaxed) == batchedBefore + 4)
        // The row and the audit are the written attempt's, once.
        let answer = try #require(written.first)
        let stored = try #require(try store.fetch(activationId: target.activationId))
        #expect(stored.failedAttempts == answer.failedAttempts)
        #expect(stored.counterIndex == target.counterIndex + (answer.accepted ? 1 : 0))
        #expect(
            try store.auditTrail(activationId: target.activationId).map(\.outcome)
                == [answer.accepted ? .accepted : .failure])
        for result in rest.dropFirst(4) { #expect(try result.get()?.failedAttempts == 1) }
    }

    @Test("24 wrong codes from one stale observation in one batch: blocked at exactly 5, one audit row each")
    func staleObservationInBatch() async throws {
        let (s, store, records, dsn) = try await Self.setUp(2)
        defer { s.server.stop() }
        let observed = records[1]
        let id = observed.activationId
        // A failure counted after the observation was read: it no longer matches the row.
        _ = try store.recordAttempt(activationId: id, outcome: .rejected, now: Date(), failureBlockDuration: nil)
        let duplicatesBefore = store.duplicateAttempts.load(ordering: .relaxed)
        let shortBefore = store.shortPathAttempts.load(ordering: .relaxed)
        let attempts: [@Sendable () -> Result<AttemptResult?, ActivationServerError>] = (0..<24).map { _ in
            {
                // What the server does: the conditional write, then the locked path when it wrote nothing.
                do throws(ActivationServerError) {
                    return .success(
                        try store.recordAttempt(
                            activationId: id, outcome: .rejected, now: Date(), failureBlockDuration: nil,
                            observed: observed))
                } catch {
                    return .failure(error)
                }
            }
        }
        let (_, rest) = try Self.batch(store, dsn: dsn, blocker: records[0], attempts)
        let results = try rest.map { try #require(try $0.get()) }
        #expect(results.map(\.failedAttempts).sorted() == Array(2...5) + Array(repeating: 5, count: 20))
        #expect(store.duplicateAttempts.load(ordering: .relaxed) == duplicatesBefore + 23)
        // Only the blocker was written by the short path: the stale observation matched nothing.
        #expect(store.shortPathAttempts.load(ordering: .relaxed) == shortBefore + 1)
        try ObservedAttemptTests.expectBlockedAtFive(store, id, refused: 20)
    }

    @Test("a batch statement whose backend is terminated: every attempt of it fails, none is counted")
    func failedStatement() async throws {
        let (s, store, records, dsn) = try await Self.setUp(5)
        defer { s.server.stop() }
        // The batch's first row stays locked, so its statement waits until it is terminated.
        let inBatch = try RowLock(dsn, activationId: records[1].activationId)
        defer { inBatch.release() }
        let batchedBefore = store.batchedAttempts.load(ordering: .relaxed)
        let lock = try RowLock(dsn, activationId: records[0].activationId)
        let first = Self.spawn { Self.conditional(store, records[0]) }
        #expect(try Self.eventually { try !Self.waitingOnLock(dsn).isEmpty })
        let rest = records.dropFirst().map { observed in Self.spawn { Self.conditional(store, observed) } }
        #expect(Self.eventually { store.conditionalWrites.waiting == 4 })
        lock.release()
        #expect(try first().get()?.failedAttempts == 1)
        var batchStatement: Int64?
        #expect(
            try Self.eventually {
                batchStatement = try Self.waitingOnLock(dsn).first { $0.query.hasPrefix("WITH input(") }?.pid
                return batchStatement != nil
            })
        let pid = try #require(batchStatement)
        _ = try StoreBackend.adminPool().withConnection { (c) throws(PostgresError) in
            try c.query("SELECT pg_terminate_backend($1::int, 30000)", [.integer(pid)])
        }
        for result in rest.map({ $0() }) {
            #expect(throws: ActivationServerError.self) { try result.get() }
            if case .failure(let error) = result {
                guard case .unavailable = error else {
                    Issue.record("expected unavailable, got \(error)")
                    continue
                }
            }
        }
        #expect(store.batchedAttempts.load(ordering: .relaxed) == batchedBefore + 4)
        for record in records.dropFirst() {
            #expect(try store.fetch(activationId: record.activationId)?.failedAttempts == 0)
            #expect(try store.auditTrail(activationId: record.activationId).isEmpty)
        }
        // The store still works afterwards, on a new connection.
        #expect(try Self.conditional(store, records[2]).get()?.failedAttempts == 1)
    }
}
