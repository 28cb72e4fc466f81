import Foundation
import PostQuantum
import PowerAuthProtocol
import SecureCore
import Synchronization

// The V4 activation endpoints: `activation/create`, `activation/status`, and the status, user-info and detail lookups.
extension ActivationServer {
    // MARK: - activation/create

    func v4CreateActivation(_ request: TransportRequest) throws(ActivationServerError) -> TransportResponse {
        let outerOpened = try v4Open(request, body: request.body, sharedInfo1: .genericApplication, activation: nil)
        defer { outerOpened.plaintext?.destroy() }
        let outer = try Self.decodePlaintext(outerOpened.plaintext, V4ActivationLayer1Request.self)
        guard outer.type == "CODE", let code = outer.identityAttributes["code"] else { throw .invalidActivationCode }
        let innerOpened = try v4Open(outer.activationData, sharedInfo1: .activation, activation: nil)
        defer { innerOpened.plaintext?.destroy() }
        let inner = try Self.decodePlaintext(innerOpened.plaintext, V4ActivationLayer2Request.self)
        guard let device = Base64.decode(inner.devicePublicKeys.ecdsa), device.count == 97,
            (try? ECP384KeyPair.validate(publicKey: device)) != nil
        else { throw .malformedRequest(reason: "devicePublicKeys.ecdsa is not a P-384 key") }
        let name = inner.activationName ?? ""
        guard name.utf8.count <= 255 else { throw .malformedRequest(reason: "activationName is too long") }
        guard let activationId = try store.activationId(forCode: code) else { throw .invalidActivationCode }
        let suite = configuration.algorithm
        let devicePostQuantum = try Self.v4DevicePostQuantumKey(inner.devicePublicKeys, suite: suite)
        let (shared, secret) = try Self.v4Respond(to: inner.sharedSecretRequest, suite: suite)
        let autoCommit = configuration.autoCommit
        let record = try store.update(activationId: activationId) { (r) throws(ActivationServerError) in
            // Only once, and only an activation prepared for V4 with the suite served now.
            guard r.state == .created, var state = r.v4, state.algorithm == suite else { throw .invalidActivationCode }
            state.activationSecret = secret
            state.devicePublicKey = device
            state.devicePostQuantumPublicKey = devicePostQuantum
            state.confirmationPending = true
            r.v4 = state
            r.name = name
            r.state = autoCommit ? .active : .pendingCommit
            return r
        }
        guard let state = record.v4 else { throw .invalidActivationCode }
        let innerResponse = V4ActivationLayer2Response(
            activationId: record.activationId, sharedSecretResponse: shared,
            serverPublicKeys: try Self.v4PublicKeys(state), ctrData: state.counter.base64)
        let sealedInner = try v4Seal(try Self.encodePlaintext(innerResponse), innerOpened)
        let outerResponse = V4ActivationLayer1Response(activationData: sealedInner)
        return try Self.v4Encrypted(try v4Seal(try Self.encodePlaintext(outerResponse), outerOpened))
    }

    /// The server's half of a shared-secret exchange in `suite`; a request of another suite, or
    /// one whose keys do not parse, is the client's error (400), not the server's.
    static func v4Respond(to request: V4SharedSecretRequest, suite: ProtocolAlgorithm)
        throws(ActivationServerError) -> (V4SharedSecretResponse, SecureBytes)
    {
        do throws(ProtocolError) {
            return try V4SharedSecret.respond(to: request, algorithm: suite)
        } catch {
            if case .core = error { throw .protocolFailure(error) }
            throw .malformedRequest(reason: "the shared-secret request is not a valid \(suite.rawValue) request")
        }
    }

    /// The server's public signing keys of an activation: P-384, and the ML-DSA key's
    /// SubjectPublicKeyInfo for a hybrid suite.
    static func v4PublicKeys(_ state: V4ActivationState) throws(ActivationServerError) -> V4PublicKeys {
        let postQuantum = try state.postQuantumKeyPair()
        defer { postQuantum?.destroy() }
        return V4PublicKeys(
            ecdsa: Base64.encode(state.serverKeyPair.publicKey),
            mldsa: postQuantum.map { Base64.encode($0.publicKeyInfo) })
    }

    // MARK: - activation/status

    func v4Status(_ request: TransportRequest) throws(ActivationServerError) -> TransportResponse {
        guard let value = request.header(V4EncryptionHeader.name), let header = try? V4EncryptionHeader.parse(value),
            let activationId = header.activationId
        else { throw .encryptionFailed }
        let now = clock.now()
        let record = try store.update(activationId: activationId) { r in
            r.expireBlock(now: now)
            return r
        }
        guard let state = record.v4, let secret = state.activationSecret else { throw .encryptionFailed }
        let keys = try protocolStep { () throws(ProtocolError) in try V4ActivationKeys(activationSecret: secret) }
        defer { keys.destroy() }
        let opened = try v4Open(
            request, body: request.body, sharedInfo1: .genericActivation, activation: (activationId, keys))
        opened.plaintext?.destroy()
        let flags =
            (state.confirmationPending ? V4StatusBlob.flagConfirmationPending : 0)
            | (record.biometryEnabled ? V4StatusBlob.flagBiometryEnabled : 0)
            | (state.upgradePending ? V4StatusBlob.flagUpgradeConfirmationPending : 0)
        let blob = try protocolStep { () throws(ProtocolError) -> [UInt8] in
            let hash = try V4StatusBlob.counterDataHash(state.counter, counterDataMACKey: keys.counterDataMAC)
            return try V4StatusBlob(
                state: record.state, currentVersion: state.upgradePending ? 3 : 4, flags: flags,
                counterByte: UInt8(truncatingIfNeeded: record.counterIndex),
                failedAttempts: UInt8(clamping: record.failedAttempts),
                maxFailedAttempts: UInt8(clamping: record.maxFailedAttempts),
                counterLookAhead: UInt8(clamping: configuration.lookAhead), counterDataHash: hash
            ).seal(statusMACKey: keys.statusMAC)
        }
        let response = V4StatusResponse(
            activationStatus: Base64.encode(blob), customObject: statusCustomObject(for: record))
        return try Self.v4Encrypted(try v4Seal(try Self.encodePlaintext(response), opened))
    }

    /// The device's ML-DSA key (`devicePublicKeys.mldsa`, SubjectPublicKeyInfo in Base64) as its raw
    /// FIPS 204 bytes; `nil` when the device sent none (upstream's API marks it optional). Refused for
    /// `EC_P384` and when it is not a key of the suite's parameter set.
    static func v4DevicePostQuantumKey(_ keys: V4PublicKeys, suite: ProtocolAlgorithm) throws(ActivationServerError)
        -> [UInt8]?
    {
        guard let text = keys.mldsa else { return nil }
        guard let set = suite.signatureParameterSet, let der = Base64.decode(text),
            let key = try? MLDSA.publicKey(set, fromPublicKeyInfo: der)
        else { throw .malformedRequest(reason: "devicePublicKeys.mldsa is not an ML-DSA key of this suite") }
        return key
    }

    // MARK: - status, user/info, activation/detail

    /// `/pa/v4/status`: the clock, the server's name and version, and the algorithms served to the
    /// application named in the optional request object (none for another application).
    func v4ServerStatus(_ request: TransportRequest) throws(ActivationServerError) -> TransportResponse {
        var algorithms = [configuration.algorithm.rawValue]
        if !request.body.isEmpty {
            let body = try Self.v4Decode(request.body, V4ServerStatusRequest.self, enveloped: true)
            if let key = body.applicationKey, key != applicationKey { algorithms = [] }
        }
        return try Self.ok(
            ServerStatusResponse(
                serverTime: nowMilliseconds, application: configuration.serverApplication,
                supportedAlgorithms: algorithms))
    }

    /// The active V4 activation named by the `X-PowerAuth-Encryption` header, with its keys.
    func v4HeaderActivation(_ request: TransportRequest) throws(ActivationServerError) -> (
        ActivationRecord, V4ActivationKeys
    ) {
        guard let value = request.header(V4EncryptionHeader.name), let header = try? V4EncryptionHeader.parse(value),
            let activationId = header.activationId, let record = try store.fetch(activationId: activationId),
            record.state == .active, let state = record.v4, !state.upgradePending, let secret = state.activationSecret
        else { throw .encryptionFailed }
        let keys = try protocolStep { () throws(ProtocolError) in try V4ActivationKeys(activationSecret: secret) }
        return (record, keys)
    }

    /// `/pa/v4/user/info`: the user's claims (`sub`, `jti`, `iat`), the bare map encrypted in
    /// activation scope as upstream's `UserInfoProvider` answer.
    func v4UserInfo(_ request: TransportRequest) throws(ActivationServerError) -> TransportResponse {
        let (record, keys) = try v4HeaderActivation(request)
        defer { keys.destroy() }
        let opened = try v4Open(
            request, body: request.body, sharedInfo1: .genericActivation, activation: (record.activationId, keys))
        opened.plaintext?.destroy()
        let claims = UserInfoResponse(
            sub: record.userId, jti: UUID().uuidString.lowercased(), iat: nowMilliseconds / 1000)
        return try Self.v4Encrypted(try v4Seal(try Self.encodePlaintext(claims), opened))
    }

    /// `/pa/v4/activation/detail`: a V4 MAC token with two factors (`possession_knowledge` or
    /// `possession_biometry`), then the activation-scope body; the answer is the encrypted
    /// `{"status":"OK","responseObject":{activationId, activationName}}` as in V3.3.
    func v4ActivationDetail(_ request: TransportRequest) throws(ActivationServerError) -> TransportResponse {
        guard let value = request.header(TokenHeader.name) else { throw .tokenInvalid }
        let verified = try verifyV4Token(header: value)
        guard [.possessionKnowledge, .possessionBiometry].contains(verified.factorSet),
            let record = try store.fetch(activationId: verified.activationId), let state = record.v4,
            let secret = state.activationSecret
        else { throw .tokenInvalid }
        let keys = try protocolStep { () throws(ProtocolError) in try V4ActivationKeys(activationSecret: secret) }
        defer { keys.destroy() }
        let opened = try v4Open(
            request, body: request.body, sharedInfo1: .genericActivation, activation: (record.activationId, keys),
            signed: true)
        opened.plaintext?.destroy()
        let detail = ActivationDetailResponse(activationId: record.activationId, activationName: record.name)
        return try Self.v4Encrypted(
            try v4Seal(try Self.encodePlaintext(ResponseEnvelope(responseObject: detail)), opened))
    }
}
