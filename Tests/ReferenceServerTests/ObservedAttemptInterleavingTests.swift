import Activation
import ActivationServer
import Foundation
import PowerAuthProtocol
import TestSupport
import Testing

@testable import ReferenceServer

/// The one-statement attempt against changes that are not attempts: between the verifier's
/// read and the attempt, an administrator or another endpoint changes one field the counting
/// rule or the verification reads. The attempt must then give exactly what the locked rule gives
/// on the current row (the short path must not match), and a change to a field the rule does not
/// read (the name) must neither stop the short path nor be undone by it.
@Suite("Counted attempts after a non-attempt change to the row")
struct ObservedAttemptInterleavingTests {
    /// One change made between the verifier's read and the attempt.
    struct Change: Sendable {
        let name: String
        /// Whether the short path may still serve the attempt after this change.
        let shortPathAllowed: Bool
        let apply: @Sendable (inout ActivationRecord, Date) throws(ActivationServerError) -> Void
    }

    static let changes: [Change] = [
        Change(name: "blocked by an administrator until later", shortPathAllowed: false) { r, now in
            r.state = .blocked
            r.blockedUntil = now.addingTimeInterval(600)
        },
        Change(name: "biometry switched", shortPathAllowed: false) { r, _ in r.biometryEnabled.toggle() },
        Change(name: "blocking limit lowered to one more failure", shortPathAllowed: false) { r, _ in
            r.maxFailedAttempts = r.failedAttempts + 1
        },
        Change(name: "another device key", shortPathAllowed: false) { r, _ in
            r.devicePublicKey = r.devicePublicKey.map { key in [key[0] ^ 0x01] + key.dropFirst() }
        },
        Change(name: "V4 upgrade started", shortPathAllowed: false) {
            (r: inout ActivationRecord, _: Date) throws(ActivationServerError) in
            var state = try V4ActivationState(algorithm: .ecP384)
            state.confirmationPending = false
            state.upgradePending = true
            r.v4 = state
        },
        Change(name: "renamed (a field the rule does not read)", shortPathAllowed: true) { r, _ in
            r.name = "renamed in between"
        },
    ]

    /// The short-path counter of the store under test.
    static func shortPath(_ store: any ReferenceActivationStore) -> Int {
        if let store = store as? SQLiteActivationStore { return store.shortPathAttempts.load(ordering: .relaxed) }
        if let store = store as? PostgresActivationStore { return store.shortPathAttempts.load(ordering: .relaxed) }
        return -1
    }

    @Test("each change in between: the locked rule's answer on the current row", arguments: StoreBackend.available)
    func changeInBetween(_ backend: StoreBackend) async throws {
        let s = try InProcessServer(backend: backend)
        defer { s.server.stop() }
        let store = s.server.store
        for change in Self.changes {
            for rejected in [true, false] {
                let (_, id) = try await s.activeDevice()
                let now = Date()
                let observed = try #require(try store.fetch(activationId: id))
                try store.update(activationId: id) { (r) throws(ActivationServerError) in try change.apply(&r, now) }
                let current = try #require(try store.fetch(activationId: id))
                let outcome: AttemptOutcome =
                    rejected
                    ? .rejected
                    : .accepted(
                        codeIndex: observed.counterIndex, nextCounter: try observed.counter.next(),
                        resetsFailures: true)
                // The locked rule on the current row: what the attempt must give.
                var expected = current
                let accepted = expected.apply(outcome, now: now, failureBlockDuration: nil)
                let label = AuditOutcome.of(accepted: accepted, before: current, after: expected, now: now)
                let before = Self.shortPath(store)
                let result = try store.recordAttempt(
                    activationId: id, outcome: outcome, now: now, failureBlockDuration: nil, observed: observed)
                let context = Comment(rawValue: "\(change.name), rejected: \(rejected)")
                #expect(
                    result
                        == AttemptResult(
                            accepted: accepted, state: expected.state, failedAttempts: expected.failedAttempts,
                            maxFailedAttempts: expected.maxFailedAttempts), context)
                #expect(Self.shortPath(store) == before + (change.shortPathAllowed ? 1 : 0), context)
                let stored = try #require(try store.fetch(activationId: id))
                #expect(stored.state == expected.state, context)
                #expect(stored.failedAttempts == expected.failedAttempts, context)
                #expect(stored.counterIndex == expected.counterIndex, context)
                #expect(stored.counter == expected.counter, context)
                #expect(stored.blockedUntil == expected.blockedUntil, context)
                #expect(stored.biometryEnabled == current.biometryEnabled, context)
                #expect(stored.devicePublicKey == current.devicePublicKey, context)
                #expect(stored.name == current.name, context)
                #expect((stored.v4 == nil) == (current.v4 == nil), context)
                #expect(try store.auditTrail(activationId: id).map(\.outcome) == [label], context)
            }
        }
    }

    @Test(
        "a temporary block whose time is up: both paths end it, count the failure and audit it as counted",
        arguments: StoreBackend.available)
    func expiredBlock(_ backend: StoreBackend) async throws {
        let s = try InProcessServer(backend: backend)
        defer { s.server.stop() }
        let store = s.server.store
        // limit 5: the failure after the block is the first of a new run; limit 1: it blocks again.
        for (limit, label) in [(5, AuditOutcome.failure), (1, .failureBlocked)] {
            var results: [AttemptResult] = []
            for useObserved in [true, false] {
                let (_, id) = try await s.activeDevice()
                let now = Date()
                // Blocked until a moment already past, at a fractional time that must compare
                // equal after the round trip through the column.
                try store.update(activationId: id) { r in
                    r.state = .blocked
                    r.maxFailedAttempts = limit
                    r.failedAttempts = limit
                    r.blockedUntil = now.addingTimeInterval(-0.123_456_789)
                }
                let observed = try #require(try store.fetch(activationId: id))
                let before = Self.shortPath(store)
                let result =
                    useObserved
                    ? try store.recordAttempt(
                        activationId: id, outcome: .rejected, now: now, failureBlockDuration: 30, observed: observed)
                    : try store.recordAttempt(
                        activationId: id, outcome: .rejected, now: now, failureBlockDuration: 30)
                results.append(result)
                let context = Comment(rawValue: "limit \(limit), observed: \(useObserved)")
                #expect(Self.shortPath(store) == before + (useObserved ? 1 : 0), context)
                #expect(result.failedAttempts == 1, context)
                #expect(result.state == (limit == 1 ? .blocked : .active), context)
                let stored = try #require(try store.fetch(activationId: id))
                #expect(stored.failedAttempts == 1, context)
                #expect(stored.state == result.state, context)
                #expect((stored.blockedUntil != nil) == (limit == 1), context)
                // The failure was counted (and for limit 1 it blocked): the audit row says so,
                // not `refused` ("not counted").
                #expect(try store.auditTrail(activationId: id).map(\.outcome) == [label], context)
            }
            #expect(results[0] == results[1])
        }
    }
}
