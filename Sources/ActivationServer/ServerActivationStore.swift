import Foundation
import PowerAuthProtocol
import Synchronization

/// Where the server keeps activations (not the device's local copy, which
/// the client keeps in its own storage). Every change goes through
/// ``update(activationId:_:)``, which must be atomic: the closure sees the
/// current record and its changes are stored only if it returns (a SQL
/// store runs it inside one `BEGIN IMMEDIATE` transaction). Failure counting
/// is the single operation
/// ``recordAttempt(activationId:outcome:now:failureBlockDuration:)``, so
/// concurrent requests count exactly.
public protocol ServerActivationStore: Sendable {
    /// Adds a new record.
    /// - Parameter record: the record.
    /// - Throws: ``ActivationServerError/duplicate``, ``ActivationServerError/storage(reason:)``.
    func insert(_ record: ActivationRecord) throws(ActivationServerError)
    /// Reads a record.
    /// - Parameter activationId: the identifier.
    /// - Returns: the record, or `nil`.
    /// - Throws: ``ActivationServerError/storage(reason:)``.
    func fetch(activationId: String) throws(ActivationServerError) -> ActivationRecord?
    /// Finds the activation an activation code belongs to.
    /// - Parameter activationCode: the code.
    /// - Returns: the identifier, or `nil`.
    /// - Throws: ``ActivationServerError/storage(reason:)``.
    func activationId(forCode activationCode: String) throws(ActivationServerError) -> String?
    /// Changes a record atomically; nothing is stored when `body` throws.
    /// - Parameters:
    ///   - activationId: the identifier.
    ///   - body: the change; its result is returned.
    /// - Returns: what `body` returned.
    /// - Throws: ``ActivationServerError/activationNotFound``, what `body` throws,
    ///   ``ActivationServerError/storage(reason:)``.
    func update<R: Sendable>(
        activationId: String, _ body: (inout ActivationRecord) throws(ActivationServerError) -> R
    ) throws(ActivationServerError) -> R
    /// Records one verification attempt atomically (see ``ActivationRecord/apply(_:now:failureBlockDuration:)``).
    /// - Parameters:
    ///   - activationId: the identifier.
    ///   - outcome: the verification outcome.
    ///   - now: the current time.
    ///   - failureBlockDuration: the length of a block after too many failures, `nil` for permanent.
    /// - Returns: the state afterwards.
    /// - Throws: ``ActivationServerError/activationNotFound``, ``ActivationServerError/storage(reason:)``.
    func recordAttempt(
        activationId: String, outcome: AttemptOutcome, now: Date, failureBlockDuration: TimeInterval?
    ) throws(ActivationServerError) -> AttemptResult
    /// Records one attempt exactly as ``recordAttempt(activationId:outcome:now:failureBlockDuration:)``
    /// does, told which record the verifier read: a store may then write the attempt in one
    /// statement on condition that the stored row is still exactly as `observed` (every field
    /// the rule reads or the verification used) and otherwise must fall back to the locked
    /// read-apply-write. Either way the result is what the locked form gives in the same
    /// interleaving. The default ignores `observed`.
    /// - Parameters:
    ///   - activationId: the identifier.
    ///   - outcome: the verification outcome.
    ///   - now: the current time.
    ///   - failureBlockDuration: the length of a block after too many failures, `nil` for permanent.
    ///   - observed: the record as the verification read it.
    /// - Returns: the state afterwards.
    /// - Throws: ``ActivationServerError/activationNotFound``, ``ActivationServerError/storage(reason:)``.
    func recordAttempt(
        activationId: String, outcome: AttemptOutcome, now: Date, failureBlockDuration: TimeInterval?,
        observed: ActivationRecord
    ) throws(ActivationServerError) -> AttemptResult
    /// Whether ``recordAttemptIfUnchanged(activationId:outcome:now:failureBlockDuration:observed:)``
    /// really writes conditionally (the default: no, and it writes nothing).
    var writesConditionally: Bool { get }
    /// Records one attempt only if the stored row is still exactly as `observed` (every field the
    /// counting rule reads or a verification used): then the rule's result on `observed` and its
    /// audit row are written atomically. Otherwise nothing is written and the answer is `nil`.
    /// - Parameters:
    ///   - activationId: the identifier.
    ///   - outcome: the verification outcome.
    ///   - now: the current time.
    ///   - failureBlockDuration: the length of a block after too many failures, `nil` for permanent.
    ///   - observed: the record the verification used.
    /// - Returns: the state afterwards, or `nil` when the row had changed (nothing written).
    /// - Throws: ``ActivationServerError/storage(reason:)``, ``ActivationServerError/unavailable(reason:)``.
    func recordAttemptIfUnchanged(
        activationId: String, outcome: AttemptOutcome, now: Date, failureBlockDuration: TimeInterval?,
        observed: ActivationRecord
    ) throws(ActivationServerError) -> AttemptResult?
    /// Stores a MAC token the server issued (its identifier is new).
    /// - Parameter token: the token's public facts (the secret is derived, never stored).
    /// - Throws: ``ActivationServerError/duplicate``, ``ActivationServerError/storage(reason:)``.
    func insertToken(_ token: TokenRecord) throws(ActivationServerError)
    /// The token with that identifier.
    /// - Parameter tokenId: the identifier.
    /// - Returns: the token, or `nil`.
    /// - Throws: ``ActivationServerError/storage(reason:)``.
    func token(tokenId: String) throws(ActivationServerError) -> TokenRecord?
    /// Removes a token of an activation.
    /// - Parameters:
    ///   - tokenId: the identifier.
    ///   - activationId: the activation it must belong to.
    /// - Returns: whether a token was removed.
    /// - Throws: ``ActivationServerError/storage(reason:)``.
    func removeToken(tokenId: String, activationId: String) throws(ActivationServerError) -> Bool
    /// Where temporary keys and replay records live when several server processes share this
    /// store, or `nil` (the default) to keep them in process memory.
    var sharedEphemeralState: (any SharedEphemeralState)? { get }
}

extension ServerActivationStore {
    /// The default: temporary keys and replay records stay in process memory.
    public var sharedEphemeralState: (any SharedEphemeralState)? { nil }

    /// The default: no conditional writes.
    public var writesConditionally: Bool { false }

    /// The default: writes nothing (see ``writesConditionally``).
    public func recordAttemptIfUnchanged(
        activationId: String, outcome: AttemptOutcome, now: Date, failureBlockDuration: TimeInterval?,
        observed: ActivationRecord
    ) throws(ActivationServerError) -> AttemptResult? {
        nil
    }

    /// The default, for every store: the conditional write
    /// (``recordAttemptIfUnchanged(activationId:outcome:now:failureBlockDuration:observed:)``), and
    /// the locked form when it wrote nothing (the row changed, or the store has no conditional writes).
    public func recordAttempt(
        activationId: String, outcome: AttemptOutcome, now: Date, failureBlockDuration: TimeInterval?,
        observed: ActivationRecord
    ) throws(ActivationServerError) -> AttemptResult {
        if let result = try recordAttemptIfUnchanged(
            activationId: activationId, outcome: outcome, now: now, failureBlockDuration: failureBlockDuration,
            observed: observed)
        {
            return result
        }
        return try recordAttempt(
            activationId: activationId, outcome: outcome, now: now, failureBlockDuration: failureBlockDuration)
    }

    /// The default: one ``update(activationId:_:)``.
    public func recordAttempt(
        activationId: String, outcome: AttemptOutcome, now: Date, failureBlockDuration: TimeInterval?
    ) throws(ActivationServerError) -> AttemptResult {
        try update(activationId: activationId) { record in
            let accepted = record.apply(outcome, now: now, failureBlockDuration: failureBlockDuration)
            return AttemptResult(
                accepted: accepted, state: record.state, failedAttempts: record.failedAttempts,
                maxFailedAttempts: record.maxFailedAttempts)
        }
    }
}

/// ``ServerActivationStore`` in memory, one lock around everything.
public final class InMemoryServerActivationStore: ServerActivationStore {
    fileprivate struct Tables {
        var records: [String: ActivationRecord] = [:]
        var codes: [String: String] = [:]
        var tokens: [String: TokenRecord] = [:]
    }

    fileprivate let tables = Mutex(Tables())

    /// Creates an empty store.
    public init() {}

    /// Adds a new record.
    public func insert(_ record: ActivationRecord) throws(ActivationServerError) {
        let inserted = tables.withLock { t in
            guard t.records[record.activationId] == nil, t.codes[record.activationCode] == nil else { return false }
            t.records[record.activationId] = record
            t.codes[record.activationCode] = record.activationId
            return true
        }
        guard inserted else { throw .duplicate }
    }

    /// Reads a record.
    public func fetch(activationId: String) throws(ActivationServerError) -> ActivationRecord? {
        tables.withLock { $0.records[activationId] }
    }

    /// Finds the activation of a code.
    public func activationId(forCode activationCode: String) throws(ActivationServerError) -> String? {
        tables.withLock { $0.codes[activationCode] }
    }

    /// Changes a record under the lock.
    public func update<R: Sendable>(
        activationId: String, _ body: (inout ActivationRecord) throws(ActivationServerError) -> R
    ) throws(ActivationServerError) -> R {
        let result: Result<R, ActivationServerError> = tables.withLock { t in
            guard var record = t.records[activationId] else { return .failure(.activationNotFound) }
            do throws(ActivationServerError) {
                let value = try body(&record)
                t.records[activationId] = record
                return .success(value)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}

extension InMemoryServerActivationStore {
    /// Stores a token (identifiers are unique).
    /// - Parameter token: the token.
    /// - Throws: ``ActivationServerError/duplicate``.
    public func insertToken(_ token: TokenRecord) throws(ActivationServerError) {
        let inserted = tables.withLock { t in
            guard t.tokens[token.tokenId] == nil else { return false }
            t.tokens[token.tokenId] = token
            return true
        }
        guard inserted else { throw .duplicate }
    }

    /// The token with that identifier.
    /// - Parameter tokenId: the identifier.
    /// - Returns: the token, or `nil`.
    public func token(tokenId: String) throws(ActivationServerError) -> TokenRecord? {
        tables.withLock { $0.tokens[tokenId] }
    }

    /// Removes a token of an activation.
    /// - Parameters:
    ///   - tokenId: the identifier.
    ///   - activationId: the activation it must belong to.
    /// - Returns: whether a token was removed.
    public func removeToken(tokenId: String, activationId: String) throws(ActivationServerError) -> Bool {
        tables.withLock { t in
            guard t.tokens[tokenId]?.activationId == activationId else { return false }
            t.tokens[tokenId] = nil
            return true
        }
    }
}

/// A MAC token (`token/create`): which activation it belongs to and with which factors it
/// was created. Its secret is not stored: `ActivationCrypto.tokenSecret(transportKey:tokenId:)`
/// derives it from the activation's transport key.
public struct TokenRecord: Sendable, Equatable {
    /// The identifier (UUID).
    public let tokenId: String
    /// The activation.
    public let activationId: String
    /// The factors of the signature the token was created with.
    public let factorSet: FactorSet
    /// When it was created.
    public let createdAt: Date

    /// Creates the record.
    /// - Parameters:
    ///   - tokenId: the identifier.
    ///   - activationId: the activation.
    ///   - factorSet: the factors.
    ///   - createdAt: the time.
    public init(tokenId: String, activationId: String, factorSet: FactorSet, createdAt: Date) {
        self.tokenId = tokenId
        self.activationId = activationId
        self.factorSet = factorSet
        self.createdAt = createdAt
    }
}
