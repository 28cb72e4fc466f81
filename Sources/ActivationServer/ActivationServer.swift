import Foundation
import PostQuantum
import PowerAuthProtocol
import SecureCore

/// The server's protocol logic, with no network and no database: the
/// activation registry (back-office operations), verification of
/// authentication codes with failure counting, the status blob, and the API
/// endpoints of `docs/activation-api.md` through ``handle(_:)``, which takes
/// and returns transport-neutral requests.
///
/// It keeps its state in any ``ServerActivationStore``. It is not the
/// deployable server: `ReferenceServer` (in the module of that name) puts
/// this logic behind HTTP and keeps the activations in SQLite.
public final class ActivationServer: Sendable {
    /// The settings.
    public let configuration: ActivationServerConfiguration
    let store: any ServerActivationStore
    let clock: any ActivationClock
    let crypto: ActivationCrypto
    let applicationKey: String
    let applicationSecret: String
    /// The temporary keys this server issues and opens (ECIES 3.3 and V4), stateless.
    public let temporaryKeys: TemporaryKeyStore
    /// The replay protection its encrypted endpoints and tokens use.
    public let replayCache: ECIESReplayCache
    /// The factor keys of recently used activations (see ``FactorKeyCache``).
    public let factorKeyCache: FactorKeyCache
    /// What the application puts into each status response's `customObject` (upstream's status
    /// callbacks), `nil` for nothing; see ``StatusCustomObject``.
    let statusCustomObject: StatusCustomObject?

    /// The application's values for an activation's status response (`customObject`): called with
    /// the activation and its user on every `activation/status`, V3.3 and V4 alike. Any JSON object;
    /// the server adds `blockExpirationTime` (seconds since 1970) during a temporary block, which
    /// overrides a member of that name.
    public typealias StatusCustomObject = @Sendable (_ activationId: String, _ userId: String) -> [String: JSONValue]?

    /// The `customObject` of a status response: the application's values, and the end of a
    /// temporary block.
    func statusCustomObject(for record: ActivationRecord) -> [String: JSONValue]? {
        var object = statusCustomObject?(record.activationId, record.userId) ?? [:]
        if record.state == .blocked, let until = record.blockedUntil {
            object.merge(
                ActivationStatusResponse.customObject(blockExpirationTime: UnixTime.seconds(until)) ?? [:]
            ) { _, ours in ours }
        }
        return object.isEmpty ? nil : object
    }

    /// Creates a server.
    /// - Parameters:
    ///   - configuration: the settings.
    ///   - store: the activation store (default in memory).
    ///   - clock: the time source (temporary blocks).
    ///   - factorKeyLifetime: seconds the factor keys of an activation stay cached in secure
    ///     memory after their derivation (``FactorKeyCache``; default 60, 0 derives per request).
    ///   - statusCustomObject: the application's `customObject` values for status responses.
    /// - Throws: ``ActivationServerError/protocolFailure(_:)``.
    public init(
        configuration: ActivationServerConfiguration,
        store: any ServerActivationStore = InMemoryServerActivationStore(),
        clock: any ActivationClock = SystemActivationClock(),
        factorKeyLifetime: TimeInterval = 60,
        statusCustomObject: StatusCustomObject? = nil
    ) throws(ActivationServerError) {
        self.configuration = configuration
        self.statusCustomObject = statusCustomObject
        self.store = store
        self.clock = clock
        self.factorKeyCache = FactorKeyCache(lifetime: factorKeyLifetime, clock: { [clock] in clock.now() })
        self.crypto = try protocolStep { () throws(ProtocolError) in try ActivationCrypto() }
        self.applicationKey = Base64.encode(configuration.applicationKey)
        self.applicationSecret = Base64.encode(configuration.applicationSecret)
        self.temporaryKeys = try TemporaryKeyStore(masterPrivateKey: configuration.masterKeyPair.privateKey)
        self.replayCache = ECIESReplayCache(shared: store.sharedEphemeralState)
    }

    // MARK: - Back office

    /// Prepares an activation for a user: a fresh server key pair, counter,
    /// identifier and activation code (signed by the master key, as upstream's
    /// `initActivation`). State `PowerAuthProtocol.ProtocolActivationState.created`.
    /// - Parameter userId: the user.
    /// - Returns: the identifier and the code to hand to the device.
    /// - Throws: ``ActivationServerError/protocolFailure(_:)``, the store's errors.
    public func initActivation(userId: String) throws(ActivationServerError) -> PreparedActivation {
        let keyPair = try protocolStep { () throws(ProtocolError) in try crypto.generateKeyPair() }
        let code = try signedActivationCode()
        var record = ActivationRecord(
            activationId: UUID().uuidString.lowercased(), activationCode: code.code, userId: userId,
            serverKeyPair: keyPair, counter: HashCounter.random(), maxFailedAttempts: configuration.maxFailedAttempts)
        // An EC_P384 application prepares a V4 activation (its own P-384 server key pair and
        // SHA3 counter); the V3.3 endpoints refuse it.
        if configuration.algorithm.isV4 { record.v4 = try V4ActivationState(algorithm: configuration.algorithm) }
        try store.insert(record)
        return PreparedActivation(
            activationId: record.activationId, activationCode: code.code,
            activationSignature: Base64.encode(code.signature ?? []))
    }

    /// Commits an activation that waits for it.
    /// - Parameter activationId: the identifier.
    /// - Throws: ``ActivationServerError/activationNotFound``, ``ActivationServerError/invalidState(_:)``.
    public func commitActivation(_ activationId: String) throws(ActivationServerError) {
        try store.update(activationId: activationId) { (r) throws(ActivationServerError) in
            guard r.state == .pendingCommit else { throw .invalidState(r.state) }
            r.state = .active
        }
    }

    /// Blocks an active activation, until `until` or until unblocked.
    /// - Parameters:
    ///   - activationId: the identifier.
    ///   - until: the end of a temporary block, or `nil` for a permanent one.
    /// - Throws: ``ActivationServerError/activationNotFound``, ``ActivationServerError/invalidState(_:)``,
    ///   ``ActivationServerError/malformedRequest(reason:)`` for an end not after now or after
    ///   ``UnixTime/latestSeconds``.
    public func blockActivation(_ activationId: String, until: Date? = nil) throws(ActivationServerError) {
        let now = clock.now()
        if let until { try UnixTime.validateBlockEnd(until, now: now) }
        try store.update(activationId: activationId) { (r) throws(ActivationServerError) in
            r.expireBlock(now: now)
            guard r.state == .active else { throw .invalidState(r.state) }
            r.state = .blocked
            r.blockedUntil = until
        }
    }

    /// Unblocks a blocked activation and resets its failures.
    /// - Parameter activationId: the identifier.
    /// - Throws: ``ActivationServerError/activationNotFound``, ``ActivationServerError/invalidState(_:)``.
    public func unblockActivation(_ activationId: String) throws(ActivationServerError) {
        try store.update(activationId: activationId) { (r) throws(ActivationServerError) in
            guard r.state == .blocked else { throw .invalidState(r.state) }
            r.state = .active
            r.failedAttempts = 0
            r.blockedUntil = nil
        }
    }

    /// Removes an activation for good (the record stays, in `PowerAuthProtocol.ProtocolActivationState.removed`).
    /// - Parameter activationId: the identifier.
    /// - Throws: ``ActivationServerError/activationNotFound``.
    public func removeActivation(_ activationId: String) throws(ActivationServerError) {
        try store.update(activationId: activationId) { r in
            r.state = .removed
            r.blockedUntil = nil
        }
        factorKeyCache.remove(activationId)
    }

    /// The public facts of an activation, a temporary block applied.
    /// - Parameter activationId: the identifier.
    /// - Returns: the details.
    /// - Throws: ``ActivationServerError/activationNotFound``.
    public func activationDetail(_ activationId: String) throws(ActivationServerError) -> ActivationDetail {
        let now = clock.now()
        let record = try store.update(activationId: activationId) { r in
            r.expireBlock(now: now)
            return r
        }
        let crypto = crypto
        var fingerprint = record.devicePublicKey.flatMap { device in
            try? crypto.fingerprint(
                devicePublicKey: device, serverPublicKey: record.serverPublicKey,
                activationId: record.activationId)
        }
        if let state = record.v4, let device = state.devicePublicKey {
            let serverPostQuantum = try? state.postQuantumKeyPair()
            defer { serverPostQuantum?.destroy() }
            fingerprint = try? V4Fingerprint.compute(
                algorithm: state.algorithm, devicePublicKey: device, activationId: record.activationId,
                serverPublicKey: state.serverKeyPair.publicKey,
                devicePostQuantumKey: state.algorithm.signatureParameterSet.flatMap { set in
                    state.devicePostQuantumPublicKey.map { MLDSA.publicKeyInfo(set, publicKey: $0) }
                },
                serverPostQuantumKey: serverPostQuantum?.publicKeyInfo)
        }
        return ActivationDetail(
            activationId: record.activationId, userId: record.userId, state: record.state,
            failedAttempts: record.failedAttempts, maxFailedAttempts: record.maxFailedAttempts,
            blockedUntil: record.blockedUntil, biometryEnabled: record.biometryEnabled,
            counterIndex: record.counterIndex, fingerprint: fingerprint)
    }

    // MARK: - Verification for application servers

    /// Verifies the authorization header of an application request, counting
    /// the attempt (what an application server asks the PowerAuth server). The header's
    /// generation picks the check: `pa_version="4.0"` (`pa_auth_code_type`, `pa_auth_code`) is
    /// verified as a V4 code, `3.x` as a V3 code; either way against the activation's own keys.
    /// - Parameters:
    ///   - header: the `X-PowerAuth-Authorization` value.
    ///   - method: the request method.
    ///   - uriIdentifier: the resource identifier.
    ///   - body: the body bytes.
    /// - Returns: who was authenticated, with which factors.
    /// - Throws: ``ActivationServerError/authenticationFailed``.
    public func verifyAuthorization(header: String, method: String, uriIdentifier: String, body: [UInt8])
        throws(ActivationServerError) -> VerifiedAuthorization
    {
        if (try? V4AuthorizationHeader.parse(header)) != nil {
            return try verifyV4Authorization(header: header, method: method, uriIdentifier: uriIdentifier, body: body)
        }
        let (record, keys, factors) = try verify(
            headerValue: header, method: method, uriIdentifier: uriIdentifier, body: body, allowed: nil)
        keys.destroy()
        return VerifiedAuthorization(activationId: record.activationId, userId: record.userId, factorSet: factors)
    }

    /// Verifies an `X-PowerAuth-Token` for an application request (what an application server
    /// asks), in the token's generation: the token, its active activation, the digest (constant
    /// time), the timestamp within the replay window of the server clock and the nonce used once.
    /// A `version="4.0"` header is checked as a V4 token (KMAC-256 digest), `3.x` as a V3 token.
    /// - Parameter header: the header value.
    /// - Returns: the activation and the factors the token was created with.
    /// - Throws: ``ActivationServerError/tokenInvalid``; the store's errors when it is unavailable.
    public func verifyToken(header: String) throws(ActivationServerError) -> VerifiedAuthorization {
        if (try? V4TokenHeader.parse(header)) != nil { return try verifyV4Token(header: header) }
        let request = TransportRequest(path: "", headers: [TokenHeader.name: header], body: [])
        let (parsed, record, keys, factorSet) = try verifyToken(
            request, allowed: [.possession, .possessionKnowledge, .possessionBiometry])
        keys.destroy()
        try acceptTokenNonce(parsed)
        return VerifiedAuthorization(activationId: record.activationId, userId: record.userId, factorSet: factorSet)
    }

    /// Verifies an offline authentication code (decimal components over the
    /// offline data: `POST`, application secret `offline`), counting the
    /// attempt like any other. Possession alone is refused. A V4 activation's code is checked
    /// with V4 components (KMAC-256 over the hash-based counter, the same decimalisation).
    /// - Parameters:
    ///   - code: the code as the user typed it (components joined with `-`).
    ///   - activationId: the activation the operation was issued for.
    ///   - factorSet: the factors the code claims (`possession_knowledge` or `possession_biometry`).
    ///   - uriIdentifier: the operation's resource identifier.
    ///   - nonce: the operation's 16-byte nonce.
    ///   - body: the operation data.
    ///   - componentLength: digits per component, 4 ... 8 (the client's configuration).
    /// - Returns: who was authenticated.
    /// - Throws: ``ActivationServerError/authenticationFailed``, ``ActivationServerError/malformedRequest(reason:)``.
    public func verifyOfflineCode(
        _ code: String, activationId: String, factorSet: FactorSet, uriIdentifier: String, nonce: [UInt8],
        body: [UInt8], componentLength: Int = ProtocolConstants.decimalComponentLength
    ) throws(ActivationServerError) -> VerifiedAuthorization {
        guard ProtocolConstants.offlineComponentLengths.contains(componentLength) else {
            throw .malformedRequest(reason: "component length must be 4 ... 8")
        }
        guard factorSet != .possession else { throw .authenticationFailed }
        if let state = try store.fetch(activationId: activationId)?.v4, !state.upgradePending {
            // A V4 activation: V4 components (KMAC-256) over the same offline data.
            let (record, keys) = try v4CountCode(
                code, activationId: activationId, factorSet: factorSet, format: .offline(digits: componentLength),
                upgradeConfirm: false
            ) { () throws(ProtocolError) in
                try RequestData.offline(uriIdentifier: uriIdentifier, nonce: nonce, body: body).normalizedOffline
            }
            keys.destroy()
            return VerifiedAuthorization(
                activationId: record.activationId, userId: record.userId, factorSet: factorSet)
        }
        let data = try? RequestData.offline(uriIdentifier: uriIdentifier, nonce: nonce, body: body).normalizedOffline
        let (record, keys) = try verifyCode(
            code, activationId: activationId, factorSet: factorSet, data: data,
            format: .decimal(componentLength: componentLength))
        keys.destroy()
        return VerifiedAuthorization(activationId: record.activationId, userId: record.userId, factorSet: factorSet)
    }

    /// A fresh activation code (10 random bytes and their CRC-16/ARC in Base32),
    /// signed by the master key for its QR form, as a PowerAuth server issues it.
    /// A V4 application signs with its P-384 master key (ECDSA-SHA384), as upstream's V4 does.
    func signedActivationCode() throws(ActivationServerError) -> ActivationCode {
        if configuration.algorithm.isV4, let master = configuration.v4MasterKeyPair {
            return try protocolStep { () throws(ProtocolError) in
                try ActivationCode.generate().signedV4(masterKeyPair: master)
            }
        }
        let master = configuration.masterKeyPair.privateKey
        return try protocolStep { () throws(ProtocolError) in
            try ActivationCode.generate().signed(masterPrivateKey: master)
        }
    }
}

/// What ``ActivationServer/initActivation(userId:)`` returns.
public struct PreparedActivation: Sendable, Equatable {
    /// The identifier.
    public let activationId: String
    /// The code the device activates with, `XXXXX-XXXXX-XXXXX-XXXXX`.
    public let activationCode: String
    /// Base64 of the master key's DER signature of ``activationCode``: ECDSA-SHA256 by the P-256
    /// key (`LEGACY_P256`), ECDSA-SHA384 by the P-384 key (the V4 suites).
    public let activationSignature: String

    /// The QR form `CODE#SIGNATURE`, which the client verifies before it activates.
    public var qrText: String { activationCode + "#" + activationSignature }
}

/// The public facts of an activation.
public struct ActivationDetail: Sendable, Equatable {
    /// The identifier.
    public let activationId: String
    /// The user.
    public let userId: String
    /// The state.
    public let state: ProtocolActivationState
    /// Failed attempts in a row.
    public let failedAttempts: Int
    /// The blocking limit.
    public let maxFailedAttempts: Int
    /// End of a temporary block.
    public let blockedUntil: Date?
    /// Whether the device fetched the vault key to add biometry (informational).
    public let biometryEnabled: Bool
    /// Consumed counter steps.
    public let counterIndex: UInt64
    /// The activation fingerprint (8 decimal digits) once the device sent its key.
    public let fingerprint: String?
}

/// A verified application request.
public struct VerifiedAuthorization: Sendable, Equatable {
    /// The activation.
    public let activationId: String
    /// The user.
    public let userId: String
    /// The factors the code used.
    public let factorSet: FactorSet
}
