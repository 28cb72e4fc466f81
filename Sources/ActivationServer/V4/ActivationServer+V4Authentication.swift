import Foundation
import PostQuantum
import PowerAuthProtocol
import SecureCore
import Synchronization

// V4 factor-key rotation and the verify-and-count path of V4 codes.
extension ActivationServer {
    // MARK: - Dynamic factor keys

    /// `password/change` and `biometry/add`: authenticated with the current password, an
    /// activation-scope shared-secret exchange whose result becomes the next knowledge key (or
    /// the biometry key: current when biometry was off, next otherwise). The current key keeps
    /// working until the device first uses the new one (``v4Authenticate(_:_:allowed:)`` promotes it).
    func v4RotateFactorKey(_ request: TransportRequest, biometry: Bool) throws(ActivationServerError)
        -> TransportResponse
    {
        let endpoint = biometry ? V4API.biometryAdd : V4API.passwordChange
        let (record, keys, _) = try v4Authenticate(request, endpoint, allowed: [.possessionKnowledge])
        defer { keys.destroy() }
        let opened = try v4Open(
            request, body: request.body, sharedInfo1: biometry ? .biometryAdd : .passwordChange,
            activation: (record.activationId, keys), signed: true)
        let shared = try Self.decodePlaintext(opened.plaintext, V4SharedSecretRequest.self)
        opened.plaintext?.destroy()
        guard let suite = record.v4?.algorithm else { throw .invalidState(record.state) }
        let (response, secret) = try Self.v4Respond(to: shared, suite: suite)
        try store.update(activationId: record.activationId) { (r) throws(ActivationServerError) in
            guard r.state == .active, var state = r.v4 else { throw .invalidState(r.state) }
            if biometry {
                if r.biometryEnabled {
                    state.biometryNext = secret
                } else {
                    state.biometryKey = secret
                    state.biometryNext = nil
                    r.biometryEnabled = true
                }
            } else {
                state.knowledgeNext = secret
            }
            state.keyGeneration &+= 1
            r.v4 = state
        }
        return try Self.v4Encrypted(try v4Seal(try Self.encodePlaintext(response), opened))
    }

    /// After an accepted code: a match with a next key promotes it to current; a match with the
    /// current key drops a pending next key of that factor. Nothing to do (no transaction) when
    /// the state the code was verified against had no next key of a factor the code used.
    func v4SettleFactorKeys(_ verified: ActivationRecord, match: V4AuthenticationCodeMatch)
        throws(ActivationServerError)
    {
        guard let verifiedState = verified.v4,
            (match.knowledgeIndex != nil && verifiedState.knowledgeNext != nil)
                || (match.biometryIndex != nil && verifiedState.biometryNext != nil)
        else { return }
        factorKeyCache.forgetSnapshot(verified.activationId)
        try store.update(activationId: verified.activationId) { r in
            guard var state = r.v4 else { return }
            var changed = false
            if let index = match.knowledgeIndex, state.knowledgeNext != nil {
                if index == 1 { state.knowledgeKey = state.knowledgeNext }
                state.knowledgeNext = nil
                changed = true
            }
            if let index = match.biometryIndex, state.biometryNext != nil {
                if index == 1 { state.biometryKey = state.biometryNext }
                state.biometryNext = nil
                changed = true
            }
            if changed {
                state.keyGeneration &+= 1
                r.v4 = state
            }
        }
    }

    // MARK: - Authentication

    /// Verifies a V4 authentication code over the request as received (method, the endpoint's
    /// `uriId`, nonce, body bytes — the encrypted body for encrypted endpoints) and counts the
    /// attempt: a possession-only failure is not counted, a success with knowledge or biometry
    /// resets the failures, the last allowed failure blocks.
    func v4Authenticate(_ request: TransportRequest, _ endpoint: V4API.Endpoint, allowed: Set<FactorSet>?)
        throws(ActivationServerError) -> (ActivationRecord, V4ActivationKeys, FactorSet)
    {
        guard let value = request.header(AuthorizationHeader.name),
            let header = try? V4AuthorizationHeader.parse(value),
            header.applicationKey == applicationKey, header.factorSet.factors.first == .possession
        else { throw .authenticationFailed }
        if let allowed, !allowed.contains(header.factorSet) { throw .authenticationFailed }
        let appSecret = applicationSecret
        let (record, keys) = try v4CountCode(
            header.authenticationCode, activationId: header.activationId, factorSet: header.factorSet, format: .online,
            upgradeConfirm: endpoint.path == V4API.upgradeConfirm.path,
            pendingCommit: endpoint.path == V4API.activationConfirm.path
        ) { () throws(ProtocolError) in
            try RequestData(
                method: request.method, uriIdentifier: endpoint.uriIdentifier ?? request.path, nonce: header.nonce,
                body: request.body
            ).normalized(applicationSecret: appSecret)
        }
        return (record, keys, header.factorSet)
    }

    /// The common part of every V4 code check: refuses an unknown, inactive or not-V4
    /// activation without counting, validates with the look-ahead over the current and "next"
    /// factor keys, records the attempt atomically, settles a "next" key on its first use.
    /// `data` failing to build counts as a failed code. `upgradeConfirm` admits an activation
    /// whose upgrade from V3.3 waits for its confirmation (its V4 keys confirm nothing else).
    /// `pendingCommit` admits an activation still waiting for its commit and its confirmation:
    /// only `activation/confirm`, which the SDK sends in its persist step, right after
    /// `activation/create` and before the operator commits (upstream's server: PENDING_COMMIT
    /// verifies only where the endpoint allows it and the confirmation is pending).
    ///
    /// The path is V3.3's (``verifyCode(_:activationId:factorSet:data:format:)``): first against
    /// the snapshot the last conditional write left, counted by a conditional write; else the row
    /// is read, the key tree taken from the cache or derived, and the attempt counted
    /// conditionally or, when the row changed meanwhile, under its lock.
    func v4CountCode(
        _ code: String, activationId: String, factorSet: FactorSet, format: V4AuthenticationCodeFormat,
        upgradeConfirm: Bool, pendingCommit: Bool = false, data: () throws(ProtocolError) -> [UInt8]
    ) throws(ActivationServerError) -> (ActivationRecord, V4ActivationKeys) {
        if let verified = try v4VerifyFromSnapshot(
            code, activationId: activationId, factorSet: factorSet, format: format, data: data)
        {
            return verified
        }
        let now = clock.now()
        guard var record = try store.fetch(activationId: activationId) else { throw .authenticationFailed }
        record.expireBlock(now: now)
        guard let state = record.v4, let secret = state.activationSecret,
            record.state == .active || (pendingCommit && record.state == .pendingCommit && state.confirmationPending)
        else {
            throw .authenticationFailed
        }
        // While an upgrade from V3.3 waits, the V4 keys only confirm it.
        if state.upgradePending, !upgradeConfirm { throw .authenticationFailed }
        // A code naming biometry the activation does not have is refused before any key is
        // tried, and not counted (upstream: `AuthenticationSharedServiceBehavior.checkBiometryAvailable`).
        if factorSet.factors.contains(.biometry), !record.biometryEnabled { throw .authenticationFailed }
        let keys = try v4Keys(record, secret: secret, now: now)
        let (outcome, match) = v4Outcome(
            of: code, record: record, state: state, keys: keys, factorSet: factorSet, format: format, data: data)
        let result: AttemptResult
        do throws(ActivationServerError) {
            result = try recordCounted(outcome, record: record)
            guard result.accepted else { throw .authenticationFailed }
            if let match { try v4SettleFactorKeys(record, match: match) }
        } catch {
            keys.destroy()
            throw error
        }
        return (record, keys)
    }

    /// The short path of a V4 code, as ``verifyFromSnapshot(_:activationId:factorSet:data:format:)``
    /// is V3.3's: verified against the snapshot, written on condition that the row is still
    /// exactly the snapshot (its sealed state the same sealing), so the answer and the count are
    /// those a fresh read would give. `nil` (nothing written) when there is no snapshot, when the
    /// snapshot does not admit the code without a fresh read (an upgrade waiting, biometry it
    /// lacks: refusals the read path makes uncounted), or when the row changed.
    func v4VerifyFromSnapshot(
        _ code: String, activationId: String, factorSet: FactorSet, format: V4AuthenticationCodeFormat,
        data: () throws(ProtocolError) -> [UInt8]
    ) throws(ActivationServerError) -> (ActivationRecord, V4ActivationKeys)? {
        guard store.writesConditionally,
            let (snapshot, keys) = factorKeyCache.v4Snapshot(activationId, now: clock.now()),
            let state = snapshot.v4, !state.upgradePending,
            !factorSet.factors.contains(.biometry) || snapshot.biometryEnabled
        else { return nil }
        let (outcome, match) = v4Outcome(
            of: code, record: snapshot, state: state, keys: keys, factorSet: factorSet, format: format, data: data)
        let now = clock.now()
        guard
            let result = try store.recordAttemptIfUnchanged(
                activationId: activationId, outcome: outcome, now: now,
                failureBlockDuration: configuration.failureBlockDuration, observed: snapshot)
        else {
            factorKeyCache.forgetSnapshot(activationId)
            return nil
        }
        remember(result, of: outcome, on: snapshot, at: now)
        guard result.accepted else { throw .authenticationFailed }
        if let match { try v4SettleFactorKeys(snapshot, match: match) }
        return (snapshot, keys)
    }

    /// The activation's V4 key tree, from the cache (lent) or derived from `secret` (and a copy
    /// cached); the caller destroys what it gets (which does nothing to lent keys). A cache that
    /// cannot allocate is passed by.
    func v4Keys(_ record: ActivationRecord, secret: SecureBytes, now: Date) throws(ActivationServerError)
        -> V4ActivationKeys
    {
        if let cached = factorKeyCache.v4Keys(record, now: now) { return cached }
        let keys = try protocolStep { () throws(ProtocolError) in try V4ActivationKeys(activationSecret: secret) }
        try? factorKeyCache.putV4(keys, record: record, now: now)
        return keys
    }

    /// What a V4 code concludes against `state`'s counter, with the look-ahead over the current
    /// and "next" factor keys: accepted at the index it matched (and the match, to settle a next
    /// key), or a failure (uncounted when it claims possession alone). `data` failing to build
    /// is a failed code.
    func v4Outcome(
        of code: String, record: ActivationRecord, state: V4ActivationState, keys: V4ActivationKeys,
        factorSet: FactorSet, format: V4AuthenticationCodeFormat, data: () throws(ProtocolError) -> [UInt8]
    ) -> (AttemptOutcome, V4AuthenticationCodeMatch?) {
        let knowledge = [state.knowledgeKey ?? keys.knowledge] + (state.knowledgeNext.map { [$0] } ?? [])
        let biometry =
            record.biometryEnabled ? [state.biometryKey ?? keys.biometry] + (state.biometryNext.map { [$0] } ?? []) : []
        let lookAhead = configuration.lookAhead
        let match = try? protocolStep { () throws(ProtocolError) -> V4AuthenticationCodeMatch? in
            try V4AuthenticationCode.validate(
                code, factorSet: factorSet, format: format, possession: keys.possession,
                knowledgeCandidates: knowledge, biometryCandidates: biometry, counter: state.counter,
                lookAhead: lookAhead, data: try data())
        }
        guard let found = match ?? nil else { return (factorSet == .possession ? .rejectedUncounted : .rejected, nil) }
        return (
            .accepted(
                codeIndex: record.counterIndex + UInt64(found.steps), nextCounter: record.counter,
                resetsFailures: factorSet != .possession), found
        )
    }

    /// Decodes a plain V4 body; `enveloped` also accepts `{"requestObject": …}`.
    static func v4Decode<T: Codable & Sendable>(_ body: [UInt8], _ type: T.Type, enveloped: Bool)
        throws(ActivationServerError) -> T
    {
        if let object = try? WireCoding.decode(T.self, body) { return object }
        if enveloped, let object = try? WireCoding.decode(RequestEnvelope<T>.self, body) {
            return object.requestObject
        }
        throw .malformedRequest(reason: "the body is not a \(T.self)")
    }
}
