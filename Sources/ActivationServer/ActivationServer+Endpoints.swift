import Foundation
import PowerAuthProtocol
import SecureCore

extension ActivationServer {
    /// Handles one API request (`docs/activation-api.md`). Never throws:
    /// every failure becomes an error response — 401 `ERR_AUTHENTICATION`,
    /// 400 `ERR_ACTIVATION` or `ERR_REQUEST`, 404 for an unknown path, 500 `ERR_GENERIC`.
    /// - Parameter request: the request.
    /// - Returns: the response.
    public func handle(_ request: TransportRequest) async -> TransportResponse {
        respond(to: request)
    }

    /// The synchronous form of ``handle(_:)``, for front ends that answer on
    /// their own threads (an HTTP server's connection threads): it may block
    /// on the store (for example SQLite's busy timeout) and never suspends.
    /// - Parameter request: the request.
    /// - Returns: the response.
    public func respond(to request: TransportRequest) -> TransportResponse {
        guard request.method == ActivationAPI.method else {
            return Self.error(405, ActivationAPI.requestErrorCode, "method not allowed")
        }
        do throws(ActivationServerError) {
            switch request.path {
            case ActivationAPI.createActivation.path:
                return try Self.ok(try create(try Self.decode(request, CreateActivationRequest.self)))
            case ActivationAPI.activationStatus.path:
                return try Self.ok(try status(try Self.decode(request, ActivationStatusRequest.self)))
            case ActivationAPI.validateSignature.path:
                _ = try Self.decode(request, ValidateSignatureRequest.self)
                let (_, keys, _) = try authenticate(
                    request, ActivationAPI.validateSignature.uriIdentifier, allowed: nil)
                keys.destroy()
                return try Self.ok(EmptyMessage())
            case ActivationAPI.removeActivation.path:
                _ = try Self.decode(request, EmptyMessage.self)
                let (record, keys, _) = try authenticate(
                    request, ActivationAPI.removeActivation.uriIdentifier,
                    allowed: [.possessionKnowledge, .possessionBiometry, .possessionKnowledgeBiometry])
                keys.destroy()
                try removeActivation(record.activationId)
                return try Self.ok(EmptyMessage())
            case ActivationAPI.unlockVault.path:
                return try Self.ok(try unlockVault(request))
            case TemporaryKeyAPI.createKey.path:
                return try Self.ok(try createTemporaryKey(try Self.decode(request, JWTMessage.self)))
            case ActivationAPI.removeBiometry.path:
                _ = try Self.decode(request, EmptyMessage.self)
                let (record, keys, _) = try authenticate(
                    request, ActivationAPI.removeBiometry.uriIdentifier, allowed: nil)
                keys.destroy()
                try store.update(activationId: record.activationId) { $0.biometryEnabled = false }
                return try Self.ok(EmptyMessage())
            default:
                return Self.error(404, ActivationAPI.requestErrorCode, "unknown endpoint")
            }
        } catch {
            return Self.response(for: error)
        }
    }

    // MARK: - Endpoints

    func create(_ request: CreateActivationRequest) throws(ActivationServerError) -> CreateActivationResponse {
        guard request.applicationKey == applicationKey else {
            throw .malformedRequest(reason: "unknown application key")
        }
        guard let device = Base64.decode(request.devicePublicKey),
            (try? P256.validate(publicKey: device)) != nil
        else { throw .malformedRequest(reason: "devicePublicKey is not a P-256 key") }
        guard request.activationName.utf8.count <= 255 else {
            throw .malformedRequest(reason: "activationName is too long")
        }
        guard let activationId = try store.activationId(forCode: request.activationCode) else {
            throw .invalidActivationCode
        }
        let autoCommit = configuration.autoCommit
        let record = try store.update(activationId: activationId) { (r) throws(ActivationServerError) in
            // Only once: a used code cannot re-key an activation.
            guard r.state == .created else { throw .invalidActivationCode }
            r.devicePublicKey = device
            r.name = request.activationName
            r.biometryEnabled = request.biometryEnabled
            r.state = autoCommit ? .active : .pendingCommit
            return r
        }
        let signed = CreateActivationResponse.signedBytes(
            activationId: record.activationId, serverPublicKey: record.serverKeyPair.publicKey,
            devicePublicKey: device, ctrData: record.counter.bytes)
        let signature = try protocolStep { () throws(ProtocolError) in
            try crypto.sign(signed, privateKey: configuration.masterKeyPair.privateKey)
        }
        return CreateActivationResponse(
            activationId: record.activationId, serverPublicKey: Base64.encode(record.serverKeyPair.publicKey),
            ctrData: record.counter.base64, signature: Base64.encode(signature))
    }

    func status(_ request: ActivationStatusRequest) throws(ActivationServerError) -> ActivationStatusResponse {
        guard let challenge = Base64.decode(request.challenge), challenge.count == ProtocolConstants.challengeByteCount
        else { throw .malformedRequest(reason: "challenge must be 16 bytes") }
        let now = clock.now()
        let record = try store.update(activationId: request.activationId) { r in
            r.expireBlock(now: now)
            return r
        }
        guard let device = record.devicePublicKey else { throw .invalidState(record.state) }
        let keys = try factorKeys(record, devicePublicKey: device)
        defer { keys.destroy() }
        let lookAhead = configuration.lookAhead
        return try protocolStep { () throws(ProtocolError) in
            let blob = try ActivationStatusBlob(
                state: record.state, counterByte: UInt8(truncatingIfNeeded: record.counterIndex),
                failedAttempts: UInt8(clamping: record.failedAttempts),
                maxFailedAttempts: UInt8(clamping: record.maxFailedAttempts), counterLookAhead: UInt8(lookAhead),
                counterDataHash: try crypto.counterHash(record.counter, transportKey: keys.transport))
            let nonce = try lift { () throws(SecureCoreError) in
                try SecureRandom.bytes(count: ProtocolConstants.challengeByteCount)
            }
            let encrypted = try crypto.encryptStatusBlob(
                blob, transportKey: keys.transport, challenge: challenge, nonce: nonce)
            let expiry = record.state == .blocked ? record.blockedUntil.map { UnixTime.seconds($0) } : nil
            return ActivationStatusResponse(
                activationId: record.activationId, encryptedStatusBlob: Base64.encode(encrypted),
                nonce: Base64.encode(nonce), blockExpirationTime: expiry)
        }
    }

    func unlockVault(_ request: TransportRequest) throws(ActivationServerError) -> VaultUnlockResponse {
        let body = try Self.decode(request, VaultUnlockRequest.self)
        guard body.reason == ActivationAPI.addBiometryReason else {
            throw .malformedRequest(reason: "unsupported vault unlock reason")
        }
        let (record, keys, _) = try authenticate(
            request, ActivationAPI.unlockVault.uriIdentifier, allowed: [.possessionKnowledge])
        defer { keys.destroy() }
        try store.update(activationId: record.activationId) { $0.biometryEnabled = true }
        return try protocolStep { () throws(ProtocolError) in
            let seal = try crypto.aeadKey(from: keys.transport, index: ProtocolConstants.vaultTransportKeyIndex)
            defer { seal.destroy() }
            let box = try lift { () throws(SecureCoreError) in
                try AEAD.seal(keys.vault, using: seal, associatedData: Array(record.activationId.utf8))
            }
            return VaultUnlockResponse(
                nonce: Base64.encode(box.nonce), encryptedVaultKey: Base64.encode(box.ciphertext))
        }
    }

    // MARK: - Authentication

    func authenticate(_ request: TransportRequest, _ uriIdentifier: String?, allowed: Set<FactorSet>?)
        throws(ActivationServerError) -> (ActivationRecord, FactorKeys, FactorSet)
    {
        guard let value = request.header(AuthorizationHeader.name), let uriIdentifier else {
            throw .authenticationFailed
        }
        return try verify(
            headerValue: value, method: request.method, uriIdentifier: uriIdentifier, body: request.body,
            allowed: allowed)
    }

    /// Verifies a header and records the attempt. A header that does not
    /// parse, names another application, an unknown or inactive activation
    /// or a disallowed factor set is refused without counting; a code that
    /// does not verify (wrong, replayed, reordered, biometry while biometry
    /// is off) counts as a failure.
    func verify(
        headerValue: String, method: String, uriIdentifier: String, body: [UInt8], allowed: Set<FactorSet>?
    ) throws(ActivationServerError) -> (ActivationRecord, FactorKeys, FactorSet) {
        guard let header = try? AuthorizationHeader.parse(headerValue), header.applicationKey == applicationKey else {
            throw .authenticationFailed
        }
        if let allowed, !allowed.contains(header.factorSet) { throw .authenticationFailed }
        let data = try? RequestData(method: method, uriIdentifier: uriIdentifier, nonce: header.nonce, body: body)
            .normalized(applicationSecret: applicationSecret)
        let (record, keys) = try verifyCode(
            header.authenticationCode, activationId: header.activationId, factorSet: header.factorSet, data: data,
            format: header.version.authenticationCodeFormat)
        return (record, keys, header.factorSet)
    }

    /// The common part: refuses an unknown or inactive activation without
    /// counting, verifies with the look-ahead, records the attempt atomically.
    /// `data` is `nil` when the request could not be normalised (counted as a failure).
    func verifyCode(
        _ code: String, activationId: String, factorSet: FactorSet, data: [UInt8]?, format: AuthenticationCodeFormat
    ) throws(ActivationServerError) -> (ActivationRecord, FactorKeys) {
        let now = clock.now()
        let record: ActivationRecord
        do throws(ActivationServerError) {
            record = try store.update(activationId: activationId) { r in
                r.expireBlock(now: now)
                return r
            }
        } catch {
            throw error == .activationNotFound ? .authenticationFailed : error
        }
        guard record.state == .active, let device = record.devicePublicKey else { throw .authenticationFailed }
        let keys = try factorKeys(record, devicePublicKey: device)
        var outcome = AttemptOutcome.rejected
        if let data, !factorSet.factors.contains(.biometry) || record.biometryEnabled {
            let lookAhead = configuration.lookAhead
            let match = try? protocolStep { () throws(ProtocolError) in
                try crypto.verifyAuthenticationCode(
                    code, data: data, factors: factorSet, keys: keys.signingKeys, counter: record.counter,
                    format: format, lookAhead: lookAhead)
            }
            if let match {
                outcome = .accepted(
                    codeIndex: record.counterIndex + UInt64(match.distance), nextCounter: match.nextCounter,
                    resetsFailures: factorSet != .possession)
            }
        }
        let result: AttemptResult
        do throws(ActivationServerError) {
            result = try store.recordAttempt(
                activationId: record.activationId, outcome: outcome, now: now,
                failureBlockDuration: configuration.failureBlockDuration)
        } catch {
            keys.destroy()
            throw error
        }
        guard result.accepted else {
            keys.destroy()
            throw .authenticationFailed
        }
        return (record, keys)
    }

    func factorKeys(_ record: ActivationRecord, devicePublicKey: [UInt8]) throws(ActivationServerError) -> FactorKeys {
        try protocolStep { () throws(ProtocolError) in
            let master = try crypto.masterSecret(
                privateKey: record.serverKeyPair.privateKey, peerPublicKey: devicePublicKey)
            defer { master.destroy() }
            return try crypto.factorKeys(masterSecret: master)
        }
    }

    // MARK: - Wire helpers

    static func decode<T: Codable & Sendable>(_ request: TransportRequest, _ type: T.Type) throws(ActivationServerError)
        -> T
    {
        do throws(ProtocolError) {
            return try WireCoding.decode(RequestEnvelope<T>.self, request.body).requestObject
        } catch {
            throw .malformedRequest(reason: "the body is not a \(T.self) request")
        }
    }

    static func ok<T: Codable & Sendable>(_ object: T) throws(ActivationServerError) -> TransportResponse {
        let body = try protocolStep { () throws(ProtocolError) in
            try WireCoding.encode(ResponseEnvelope(responseObject: object))
        }
        return TransportResponse(statusCode: 200, body: body)
    }

    /// A PowerAuth error body, `{"status":"ERROR","responseObject":{"code":…,"message":…}}`.
    /// - Parameters:
    ///   - statusCode: the HTTP status.
    ///   - code: the error code, for example `ERR_REQUEST`.
    ///   - message: a message without any secret.
    /// - Returns: the response.
    public static func error(_ statusCode: Int, _ code: String, _ message: String) -> TransportResponse {
        let body =
            (try? WireCoding.encode(
                ResponseEnvelope(status: "ERROR", responseObject: ErrorResponse(code: code, message: message)))) ?? []
        return TransportResponse(statusCode: statusCode, body: body)
    }

    /// The error response the API gives for `error` (table in `docs/activation-api.md`).
    /// - Parameter error: the error.
    /// - Returns: the response.
    public static func response(for error: ActivationServerError) -> TransportResponse {
        switch error {
        case .authenticationFailed:
            return Self.error(401, ActivationAPI.authenticationErrorCode, "authentication failed")
        case .activationNotFound, .invalidState, .invalidActivationCode:
            return Self.error(400, ActivationAPI.activationErrorCode, "the activation cannot do this")
        case .malformedRequest(let reason):
            return Self.error(400, ActivationAPI.requestErrorCode, reason)
        case .duplicate, .storage, .invalidConfiguration, .protocolFailure:
            return Self.error(500, ActivationAPI.genericErrorCode, "internal error")
        case .temporaryKeyFailure:
            return Self.error(400, TemporaryKeyAPI.errorCode, TemporaryKeyAPI.errorMessage)
        case .requestExpired, .replayedRequest:
            return Self.error(400, ActivationAPI.encryptionErrorCode, "the encrypted request is not accepted")
        }
    }
}
