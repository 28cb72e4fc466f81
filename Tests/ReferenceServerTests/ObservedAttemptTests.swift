import Activation
import Foundation
import PostgresStore
import PowerAuthProtocol
import TestSupport
import Testing

@testable import ActivationServer
@testable import ReferenceServer

/// The one-statement path of a counted attempt (`recordAttempt(…, observed:)`): written only
/// while the row is exactly as the verifier read it, otherwise the locked rule on the current
/// row. Each test hands the store an observation that is out of date on purpose.
@Suite("Counted attempts given the record the verifier read")
struct ObservedAttemptTests {
    /// Runs `count` attempts at once on threads of their own, all with the same observation.
    static func race(
        _ count: Int, store: any ReferenceActivationStore, observed: ActivationRecord, outcome: AttemptOutcome
    ) -> [Result<AttemptResult, ActivationServerError>] {
        GroupCommitTests.concurrently(count) { _ in
            do throws(ActivationServerError) {
                return .success(
                    try store.recordAttempt(
                        activationId: observed.activationId, outcome: outcome, now: Date(),
                        failureBlockDuration: nil, observed: observed))
            } catch {
                return .failure(error)
            }
        }
    }

    /// The body every validate request of these tests signs.
    static let body: [UInt8] =
        (try? WireCoding.encode(RequestEnvelope(requestObject: ValidateSignatureRequest(reason: "OBSERVED")))) ?? []

    /// The validate endpoint of the device's generation: its path and the `uriId` a code signs.
    static func validateEndpoint(_ algorithm: ProtocolAlgorithm) -> (path: String, uriIdentifier: String) {
        algorithm.isV4
            ? (V4API.validate.path, V4API.validate.uriIdentifier ?? V4API.validate.path)
            : (ActivationAPI.validateSignature.path, "/pa/signature/validate")
    }

    /// A validate authorization header signed by `device` with `text` as its PIN.
    static func signed(_ device: Device, pin text: String = "1234") async throws -> String {
        try await device.service.signRequest(
            method: "POST", uriIdentifier: validateEndpoint(device.configuration.algorithm).uriIdentifier, body: body,
            authentication: .possessionWithPassword(try pin(text))
        ).value
    }

    /// The status the server answers `header` with (in process, no HTTP), on the validate
    /// endpoint of the server's generation.
    static func validate(_ s: InProcessServer, _ header: String) -> Int {
        let path = validateEndpoint(s.server.activationServer.configuration.algorithm).path
        return s.server.activationServer.respond(
            to: TransportRequest(path: path, headers: [AuthorizationHeader.name: header], body: body)
        ).statusCode
    }

    /// The activation's snapshot the server holds, if any.
    /// The end state of many wrong codes for one activation whose maximum is 5: stored blocked
    /// at exactly 5, and an audit row for each attempt — four failures, the one that blocked, and
    /// `refused` refusals after it.
    static func expectBlockedAtFive(
        _ store: any ReferenceActivationStore, _ id: String, refused: Int,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let stored = try #require(try store.fetch(activationId: id), sourceLocation: sourceLocation)
        #expect(stored.state == .blocked, sourceLocation: sourceLocation)
        #expect(stored.failedAttempts == 5, sourceLocation: sourceLocation)
        let trail = try store.auditTrail(activationId: id).map(\.outcome)
        #expect(trail.count == 5 + refused, sourceLocation: sourceLocation)
        #expect(trail.filter { $0 == .failure }.count == 4, sourceLocation: sourceLocation)
        #expect(trail.filter { $0 == .failureBlocked }.count == 1, sourceLocation: sourceLocation)
        #expect(trail.filter { $0 == .refused }.count == refused, sourceLocation: sourceLocation)
    }

    /// The audit outcomes after the first `prior` (a V4 activation's confirmation is one).
    static func trail(_ store: any ReferenceActivationStore, _ id: String, after prior: Int) throws -> [AuditOutcome] {
        Array(try store.auditTrail(activationId: id).map(\.outcome).dropFirst(prior))
    }

    /// The activation's snapshot the server holds (of either generation), if any.
    static func snapshot(_ s: InProcessServer, _ id: String) throws -> ActivationRecord? {
        let cache = s.server.activationServer.factorKeyCache
        if let (record, keys) = cache.snapshot(id, now: Date()) {
            keys.destroy()
            return record
        }
        if let (record, keys) = cache.v4Snapshot(id, now: Date()) {
            keys.destroy()
            return record
        }
        return nil
    }

    @Test(
        "an observation another attempt made stale is not written: the rule runs on the current row",
        arguments: StoreBackend.available)
    func staleObservationFallsBack(_ backend: StoreBackend) async throws {
        let s = try InProcessServer(backend: backend)
        defer { s.server.stop() }
        let (_, id) = try await s.activeDevice()
        let store = s.server.store
        let observed = try #require(try store.fetch(activationId: id))
        #expect(observed.failedAttempts == 0)
        for expected in 1...3 {
            // The same observation each time (failures 0): only the first matches the row.
            let result = try store.recordAttempt(
                activationId: id, outcome: .rejected, now: Date(), failureBlockDuration: nil, observed: observed)
            #expect(result.failedAttempts == expected)
            #expect(!result.accepted)
        }
        // A code accepted at the observed index, then the same code again from the same
        // (now stale) observation: a replay, counted as the locked rule counts it.
        let fresh = try #require(try store.fetch(activationId: id))
        let accept = AttemptOutcome.accepted(
            codeIndex: fresh.counterIndex, nextCounter: try fresh.counter.next(), resetsFailures: true)
        let first = try store.recordAttempt(
            activationId: id, outcome: accept, now: Date(), failureBlockDuration: nil, observed: fresh)
        #expect(first.accepted)
        #expect(first.failedAttempts == 0)
        let replay = try store.recordAttempt(
            activationId: id, outcome: accept, now: Date(), failureBlockDuration: nil, observed: fresh)
        #expect(!replay.accepted)
        #expect(replay.failedAttempts == 1)
        let stored = try #require(try store.fetch(activationId: id))
        #expect(stored.counterIndex == fresh.counterIndex + 1)
        #expect(stored.counter == (try fresh.counter.next()))
        let trail = try store.auditTrail(activationId: id).map(\.outcome)
        #expect(trail == [.failure, .failure, .failure, .accepted, .failure])
    }

    @Test(
        "48 wrong codes from one observation at once: blocked at exactly 5, one audit row each",
        arguments: StoreBackend.available)
    func concurrentStaleFailures(_ backend: StoreBackend) async throws {
        let s = try InProcessServer(backend: backend)
        defer { s.server.stop() }
        let (_, id) = try await s.activeDevice()
        let store = s.server.store
        let observed = try #require(try store.fetch(activationId: id))
        let results = Self.race(48, store: store, observed: observed, outcome: .rejected).compactMap { try? $0.get() }
        #expect(results.count == 48)
        #expect(results.allSatisfy { !$0.accepted })
        #expect(results.map(\.failedAttempts).sorted() == Array(1...5) + Array(repeating: 5, count: 43))
        try Self.expectBlockedAtFive(store, id, refused: 43)
    }

    @Test(
        "16 copies of one good code at once: exactly one accepted, the replays counted until the block",
        arguments: StoreBackend.available)
    func concurrentReplays(_ backend: StoreBackend) async throws {
        let s = try InProcessServer(backend: backend)
        defer { s.server.stop() }
        let (_, id) = try await s.activeDevice()
        let store = s.server.store
        let observed = try #require(try store.fetch(activationId: id))
        let accept = AttemptOutcome.accepted(
            codeIndex: observed.counterIndex, nextCounter: try observed.counter.next(), resetsFailures: true)
        let results = Self.race(16, store: store, observed: observed, outcome: accept).compactMap { try? $0.get() }
        #expect(results.count == 16)
        #expect(results.filter(\.accepted).count == 1)
        // Whichever came first was accepted; every later one is a replay of a consumed index.
        let trail = try store.auditTrail(activationId: id).map(\.outcome)
        #expect(
            trail == [.accepted, .failure, .failure, .failure, .failure, .failureBlocked]
                + Array(repeating: .refused, count: 10))
        let stored = try #require(try store.fetch(activationId: id))
        #expect(stored.counterIndex == observed.counterIndex + 1)
        #expect(stored.state == .blocked)
    }

    @Test(
        "a signed request through the server takes the one-statement path, on every suite",
        arguments: StoreBackend.available, ProtocolAlgorithm.allCases)
    func serverUsesTheShortPath(_ backend: StoreBackend, _ algorithm: ProtocolAlgorithm) async throws {
        let s = try InProcessServer(backend: backend, algorithm: algorithm)
        defer { s.server.stop() }
        let (device, id) = try await s.activeDevice()
        func shortPath() -> Int {
            if let store = s.server.store as? SQLiteActivationStore {
                return store.shortPathAttempts.load(ordering: .relaxed)
            }
            if let store = s.server.store as? PostgresActivationStore {
                return store.shortPathAttempts.load(ordering: .relaxed)
            }
            return -1
        }
        let before = shortPath()
        #expect(before >= 0)
        let prior = try s.server.store.auditTrail(activationId: id).count
        for _ in 0..<3 { #expect(Self.validate(s, try await Self.signed(device)) == 200) }
        #expect(shortPath() == before + 3)
        #expect(try Self.trail(s.server.store, id, after: prior) == [.accepted, .accepted, .accepted])
    }

    @Test(
        "a verified request without a read: a snapshot the row no longer matches is never trusted",
        arguments: StoreBackend.available, ProtocolAlgorithm.allCases)
    func snapshotIsOnlyAHint(_ backend: StoreBackend, _ algorithm: ProtocolAlgorithm) async throws {
        let s = try InProcessServer(backend: backend, algorithm: algorithm)
        defer { s.server.stop() }
        let (device, id) = try await s.activeDevice()
        let store = s.server.store
        let prior = try store.auditTrail(activationId: id).count
        func signed() async throws -> String { try await Self.signed(device) }
        func validate(_ header: String) -> Int { Self.validate(s, header) }
        func snapshot() throws -> ActivationRecord? { try Self.snapshot(s, id) }
        #expect(try snapshot() == nil)
        #expect(validate(try await signed()) == 200)  // read, then kept as a snapshot
        let kept = try #require(try snapshot())
        #expect(validate(try await signed()) == 200)  // from the snapshot
        #expect(try snapshot()?.counterIndex == kept.counterIndex + 1)

        // Blocked behind the server's back: the snapshot still says active, the row does not.
        try store.update(activationId: id) { $0.state = .blocked }
        #expect(validate(try await signed()) == 401)
        #expect(try store.fetch(activationId: id)?.failedAttempts == 0)  // refused, not counted
        #expect(try snapshot() == nil)
        try store.update(activationId: id) { $0.state = .active }
        #expect(validate(try await signed()) == 200)

        // Another instance moved the counter past the device's next code: that code is a replay.
        let replayed = try await signed()
        let next = try await signed()
        let current = try #require(try store.fetch(activationId: id))
        let moved = try current.counter.advanced(by: 2)
        let movedV4 = try current.v4?.counter.advanced(by: 2)
        try store.update(activationId: id) { r in
            r.counter = moved
            if let movedV4 { r.v4?.counter = movedV4 }
            r.counterIndex += 2
        }
        #expect(validate(replayed) == 401)
        #expect(try store.fetch(activationId: id)?.failedAttempts == 1)  // counted, as a fresh read counts it
        #expect(validate(next) == 401)
        #expect(validate(try await signed()) == 200)
        #expect(try store.fetch(activationId: id)?.failedAttempts == 0)
        let trail = try Self.trail(store, id, after: prior)
        #expect(trail == [.accepted, .accepted, .accepted, .failure, .failure, .accepted])
    }

    @Test(
        "a blocked activation tells nothing about a code: a right and a wrong PIN leave the same trace",
        arguments: StoreBackend.available, ProtocolAlgorithm.allCases)
    func blockedActivationIsNoOracle(_ backend: StoreBackend, _ algorithm: ProtocolAlgorithm) async throws {
        let s = try InProcessServer(backend: backend, algorithm: algorithm)
        defer { s.server.stop() }
        let (device, id) = try await s.activeDevice()
        let store = s.server.store
        let prior = try store.auditTrail(activationId: id).count
        func validate(pin text: String) async throws -> Int {
            Self.validate(s, try await Self.signed(device, pin: text))
        }
        func snapshotHeld() throws -> Bool { try Self.snapshot(s, id) != nil }
        /// A request with `text` against the activation blocked by this server's back office right
        /// after a verified request left a snapshot; whether a snapshot is held afterwards.
        func guessWhileBlocked(_ text: String) async throws -> Bool {
            #expect(try await validate(pin: "1234") == 200)
            #expect(try snapshotHeld())
            try await s.backOffice.block(id)
            #expect(try await validate(pin: text) == 401)
            let held = try snapshotHeld()
            try await s.backOffice.unblock(id)
            return held
        }
        // Before, a wrong PIN was checked against the kept snapshot and left it in place (so every
        // further guess was checked too, uncounted), while the right PIN cost a conditional write
        // and removed it: a difference in work, hence in time, that tells the right PIN apart.
        let afterWrong = try await guessWhileBlocked("0000")
        let afterRight = try await guessWhileBlocked("1234")
        #expect(afterWrong == afterRight)
        #expect(!afterWrong)
        // Refused, never counted: the block is what answered.
        #expect(try store.fetch(activationId: id)?.failedAttempts == 0)
        let trail = try Self.trail(store, id, after: prior)
        #expect(trail == [.accepted, .accepted])
    }

    @Test("an observation of another activation is not used for this one", arguments: StoreBackend.available)
    func observationOfAnotherActivation(_ backend: StoreBackend) async throws {
        let s = try InProcessServer(backend: backend)
        defer { s.server.stop() }
        let (_, first) = try await s.activeDevice()
        let (_, second) = try await s.activeDevice(pin: "5678")
        let store = s.server.store
        let other = try #require(try store.fetch(activationId: first))
        let result = try store.recordAttempt(
            activationId: second, outcome: .rejected, now: Date(), failureBlockDuration: nil, observed: other)
        #expect(result.failedAttempts == 1)
        #expect(try store.fetch(activationId: first)?.failedAttempts == 0)
        #expect(try store.fetch(activationId: second)?.failedAttempts == 1)
        #expect(try store.auditTrail(activationId: first).isEmpty)
    }

    @Test(
        "a V4 row written before the counter column: its counter read from the sealed state, then the column's",
        arguments: StoreBackend.available, [ProtocolAlgorithm.ecP384, .ecP384MLL3, .ecP384MLL5])
    func v4RowBeforeTheCounterColumn(_ backend: StoreBackend, _ algorithm: ProtocolAlgorithm) async throws {
        let s = try InProcessServer(backend: backend, algorithm: algorithm)
        defer { s.server.stop() }
        let (device, id) = try await s.activeDevice()
        let store = s.server.store
        // A change that seals the state again, so the sealed copy is current, as every row
        // written before the column is; then the column as such a row has it: none.
        try store.update(activationId: id) { $0.name = "before the column" }
        let sealedCounter = try #require(try store.fetch(activationId: id)?.v4?.counter)
        if let sqlite = store as? SQLiteActivationStore {
            _ = try sqlite.database.run("UPDATE activation SET v4_counter = NULL WHERE id = ?", [.text(id)])
        } else if let postgres = store as? PostgresActivationStore {
            _ = try postgres.pool.withConnection { (c) throws(PostgresError) in
                try c.query("UPDATE activation SET v4_counter = NULL WHERE id = $1", [.text(id)])
            }
        }
        s.server.activationServer.factorKeyCache.remove(id)
        #expect(try store.fetch(activationId: id)?.v4?.counter == sealedCounter)
        // Signed requests count as before; the one-statement path fills the column.
        for _ in 0..<3 { #expect(Self.validate(s, try await Self.signed(device)) == 200) }
        let after = try #require(try store.fetch(activationId: id))
        #expect(after.v4?.counter == (try sealedCounter.advanced(by: 3)))
        #expect(Self.validate(s, try await Self.signed(device, pin: "0000")) == 401)
        #expect(try store.fetch(activationId: id)?.failedAttempts == 1)
    }
}
