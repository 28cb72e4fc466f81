import Foundation
import PostQuantum
import PowerAuthProtocol
import SecureCore
import Synchronization

/// A decrypted V4 request and what is needed to encrypt its response.
struct V4OpenedRequest {
    let context: V4EncryptionContext
    let request: V4EncryptedRequest
    let plaintext: SecureBytes?
}

extension ActivationServer {
    /// Every V4 path.
    static let v4Paths: Set<String> = Set(V4API.all.map(\.path))

    /// Answers one V4 request (`docs/protocol-v4.md`); only for an application that serves a
    /// protocol V4 suite (`EC_P384`, `EC_P384_ML_L3`, `EC_P384_ML_L5`).
    func respondV4(to request: TransportRequest) -> TransportResponse {
        let methods: Set<String> = request.path == V4API.validate.path ? ["GET", "POST", "PUT", "DELETE"] : ["POST"]
        guard methods.contains(request.method) else {
            return Self.error(405, ActivationAPI.ErrorCode.request, "method not allowed")
        }
        do throws(ActivationServerError) {
            guard configuration.algorithm.isV4, let master = configuration.v4MasterKeyPair,
                configuration.algorithm.signatureParameterSet == configuration.v4PostQuantumMasterKeyPair?.parameterSet
            else {
                throw .malformedRequest(reason: "this application serves LEGACY_P256 (protocol V3.3) only")
            }
            switch request.path {
            case V4API.keystoreCreate.path:
                return try v4CreateTemporaryKey(request, master: master)
            case V4API.serverStatus.path:
                return try v4ServerStatus(request)
            case V4API.userInfo.path:
                return try v4UserInfo(request)
            case V4API.activationDetail.path:
                return try v4ActivationDetail(request)
            case V4API.activationCreate.path:
                return try v4CreateActivation(request)
            case V4API.activationConfirm.path:
                let (record, keys, _) = try v4Authenticate(
                    request, V4API.activationConfirm, allowed: [.possessionKnowledge])
                keys.destroy()
                let body = try Self.v4Decode(request.body, V4ConfirmRequest.self, enveloped: true)
                // As upstream's confirmActivation: only while the confirmation is pending (a
                // second confirm cannot turn biometry back on past biometry/remove): 400 ERR_ACTIVATION.
                try store.update(activationId: record.activationId) { (r) throws(ActivationServerError) in
                    guard r.v4?.confirmationPending == true else { throw .invalidState(r.state) }
                    r.v4?.confirmationPending = false
                    r.biometryEnabled = body.enableBiometry
                }
                return try Self.ok(EmptyMessage?.none)
            case V4API.activationStatus.path:
                return try v4Status(request)
            case V4API.activationRemove.path:
                // As upstream's V4 controller: not possession_knowledge_biometry.
                let (record, keys, _) = try v4Authenticate(
                    request, V4API.activationRemove, allowed: [.possessionKnowledge, .possessionBiometry])
                keys.destroy()
                try removeActivation(record.activationId)
                return try Self.ok(ActivationRemoveResponse(activationId: record.activationId))
            case V4API.validate.path:
                let (_, keys, _) = try v4Authenticate(request, V4API.validate, allowed: nil)
                keys.destroy()
                return try Self.ok(EmptyMessage?.none)
            case V4API.tokenCreate.path:
                return try v4CreateToken(request)
            case V4API.tokenRemove.path:
                let (record, keys, _) = try v4Authenticate(
                    request, V4API.tokenRemove, allowed: [.possession, .possessionKnowledge, .possessionBiometry])
                keys.destroy()
                let body = try Self.v4Decode(request.body, V4TokenRemoveRequest.self, enveloped: true)
                _ = try store.removeToken(tokenId: body.tokenId, activationId: record.activationId)
                return try Self.ok(TokenRemoveResponse(tokenId: body.tokenId))
            case V4API.passwordChange.path, V4API.biometryAdd.path:
                return try v4RotateFactorKey(request, biometry: request.path == V4API.biometryAdd.path)
            case V4API.upgradeStart.path:
                return try v4StartUpgrade(request)
            case V4API.upgradeConfirm.path:
                if let value = request.header(AuthorizationHeader.name),
                    let header = try? V4AuthorizationHeader.parse(value),
                    let found = try store.fetch(activationId: header.activationId), let pending = found.v4Upgrade
                {
                    return try v4ConfirmSuiteUpgrade(request, found, pending: pending)
                }
                let (record, keys, _) = try v4Authenticate(request, V4API.upgradeConfirm, allowed: [.possession])
                keys.destroy()
                try store.update(activationId: record.activationId) { r in r.v4?.upgradePending = false }
                return try Self.ok(EmptyMessage?.none)
            case V4API.biometryRemove.path:
                let (record, keys, _) = try v4Authenticate(request, V4API.biometryRemove, allowed: [.possession])
                keys.destroy()
                try store.update(activationId: record.activationId) { r in
                    r.biometryEnabled = false
                    r.v4?.biometryKey = nil
                    r.v4?.biometryNext = nil
                    r.v4?.keyGeneration &+= 1
                }
                return try Self.ok(EmptyMessage?.none)
            default:
                return try v4UnlockVault(request)
            }
        } catch {
            return Self.response(for: error, path: request.path)
        }
    }

    // MARK: - keystore/create

    func v4CreateTemporaryKey(_ request: TransportRequest, master: ECP384KeyPair) throws(ActivationServerError)
        -> TransportResponse
    {
        // Upstream wraps both ways (`ObjectRequest<TemporaryKeyRequest>`); the bare `{"jwt"}` is accepted too.
        let message = try Self.v4Decode(request.body, JWTMessage.self, enveloped: true)
        guard let claims = try? V4TemporaryKeyJWT.requestClaims(message.jwt), claims.applicationKey == applicationKey,
            !claims.challenge.isEmpty, claims.challenge.utf8.count <= 256,
            TemporaryKeyClaimTimes.check(
                issuedAt: claims.iat, expiresAt: claims.exp, nowSeconds: nowMilliseconds / 1000)
        else { throw .temporaryKeyFailure }
        let macKey: SecureBytes
        let signer: ECP384KeyPair
        let postQuantumSigner: MLDSA.KeyPair?
        // The activation's own suite in activation scope (an activation keeps the suite it was
        // created with), the application's in application scope.
        let suite: ProtocolAlgorithm
        if let activationId = claims.activationId {
            // Also while the commit is pending, blocked or removed: the device reads its status
            // with such a key, and a status is the only way a V4 device learns that its
            // activation was removed (every other endpoint checks the state and refuses).
            guard let record = try store.fetch(activationId: activationId),
                [.pendingCommit, .active, .blocked, .removed].contains(record.state), let state = record.v4,
                let secret = state.activationSecret
            else { throw .temporaryKeyFailure }
            let keys = try protocolStep { () throws(ProtocolError) in try V4ActivationKeys(activationSecret: secret) }
            defer { keys.destroy() }
            macKey = try protocolStep { () throws(ProtocolError) in
                try lift { () throws(SecureCoreError) in try keys.activationTemporaryKeyMAC.copy() }
            }
            signer = state.serverKeyPair
            postQuantumSigner = try state.postQuantumKeyPair()
            suite = state.algorithm
        } else {
            let secret = applicationSecret
            macKey = try protocolStep { () throws(ProtocolError) in
                try V4ActivationKeys.applicationTemporaryKeyMAC(applicationSecret: secret)
            }
            signer = master
            postQuantumSigner = configuration.v4PostQuantumMasterKeyPair
            suite = configuration.algorithm
        }
        defer {
            macKey.destroy()
            if claims.activationId != nil { postQuantumSigner?.destroy() }
        }
        guard (try? V4TemporaryKeyJWT.verifyRequest(message.jwt, key: macKey)) != nil else {
            throw .temporaryKeyFailure
        }
        let (shared, secret): (V4SharedSecretResponse, SecureBytes)
        do throws(ActivationServerError) {
            (shared, secret) = try Self.v4Respond(to: claims.sharedSecretRequest, suite: suite)
        } catch {
            throw .temporaryKeyFailure
        }
        defer { secret.destroy() }
        let now = nowMilliseconds
        let (id, expires) = try temporaryKeys.issue(
            secret, generation: .v4, applicationKey: claims.applicationKey, activationId: claims.activationId, now: now)
        let response = V4TemporaryKeyResponseClaims(
            temporaryKeyId: id, request: claims, sharedSecretResponse: shared, issuedAtMilliseconds: now,
            expiresAtMilliseconds: expires)
        let json = try protocolStep { () throws(ProtocolError) -> String in
            do throws(JWTError) {
                return try V4TemporaryKeyJWT.signResponse(response, keyPair: signer, postQuantum: postQuantumSigner)
            } catch {
                throw .jwt(error)
            }
        }
        return try Self.ok(JWTMessage(jwt: json))
    }

    // MARK: - Encryption

    /// Opens a V4 encrypted request: the `X-PowerAuth-Encryption` header's scope, the temporary
    /// key (this application, this scope, not expired), the timestamp window, the AEAD, then
    /// the nonce's first use under the key.
    /// A signed request (`signed`) may leave the header out, as upstream's SDK does (its
    /// authorization header names the application and the activation); when present it must match.
    func v4Open(
        _ request: TransportRequest, body: [UInt8], sharedInfo1: V4SharedInfo1,
        activation: (id: String, keys: V4ActivationKeys)?, signed: Bool = false
    ) throws(ActivationServerError) -> V4OpenedRequest {
        if let value = request.header(V4EncryptionHeader.name) {
            guard let header = try? V4EncryptionHeader.parse(value), header.applicationKey == applicationKey,
                header.activationId == activation?.id
            else { throw .encryptionFailed }
        } else if !signed {
            throw .encryptionFailed
        }
        let encrypted = try Self.v4Decode(body, V4EncryptedRequest.self, enveloped: false)
        return try v4Open(encrypted, sharedInfo1: sharedInfo1, activation: activation)
    }

    func v4Open(
        _ encrypted: V4EncryptedRequest, sharedInfo1: V4SharedInfo1, activation: (id: String, keys: V4ActivationKeys)?
    ) throws(ActivationServerError) -> V4OpenedRequest {
        let now = nowMilliseconds
        let sharedSecret: SecureBytes
        do throws(ActivationServerError) {
            // The request's own copy of the key: nothing can destroy it while the request runs.
            sharedSecret = try temporaryKeys.open(
                encrypted.temporaryKeyId, generation: .v4, applicationKey: applicationKey, activationId: activation?.id,
                now: now)
        } catch {
            throw .encryptionFailed
        }
        // The context keeps the secret to seal the response; it is wiped when the request's
        // context is let go.
        let scope: V4EncryptionScope =
            activation.map { .activation(activationId: $0.id, sharedInfo2Key: $0.keys.sharedInfo2) } ?? .application
        let secret = applicationSecret
        let appKey = applicationKey
        let context = try protocolStep { () throws(ProtocolError) in
            try V4EncryptionContext(
                sharedSecret: sharedSecret, temporaryKeyId: encrypted.temporaryKeyId, applicationKey: appKey,
                applicationSecret: secret, sharedInfo1: sharedInfo1.rawValue, scope: scope)
        }
        let plaintext: SecureBytes?
        do throws(ProtocolError) {
            plaintext = try context.decryptRequest(encrypted)
        } catch {
            throw .encryptionFailed
        }
        do throws(ActivationServerError) {
            // After the tag, as V3: the window (V4's five minutes) and the nonce's first use under
            // this key. A shared store decides both by its own clock.
            guard let nonce = Base64.decode(encrypted.nonce) else { throw .replayedRequest }
            try replayCache.accept(
                replayKey: Array("V4|".utf8) + Array(encrypted.temporaryKeyId.utf8) + [0] + nonce,
                timestamp: encrypted.timestamp, windowMilliseconds: V4EncryptionContext.timestampWindowMilliseconds,
                now: now)
        } catch {
            plaintext?.destroy()
            throw error
        }
        return V4OpenedRequest(context: context, request: encrypted, plaintext: plaintext)
    }

    func v4Seal(_ body: SecureBytes?, _ opened: V4OpenedRequest) throws(ActivationServerError) -> V4EncryptedResponse {
        let now = nowMilliseconds
        return try protocolStep { () throws(ProtocolError) in
            try opened.context.encryptResponse(body, to: opened.request, timestampMilliseconds: now)
        }
    }

    static func v4Encrypted(_ response: V4EncryptedResponse) throws(ActivationServerError) -> TransportResponse {
        TransportResponse(
            statusCode: 200, body: try protocolStep { () throws(ProtocolError) in try WireCoding.encode(response) })
    }

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

    // MARK: - token/create, vault/unlock

    func v4CreateToken(_ request: TransportRequest) throws(ActivationServerError) -> TransportResponse {
        // As upstream's controller: not possession_knowledge_biometry.
        let (record, keys, factors) = try v4Authenticate(
            request, V4API.tokenCreate, allowed: [.possession, .possessionKnowledge, .possessionBiometry])
        defer { keys.destroy() }
        let opened = try v4Open(
            request, body: request.body, sharedInfo1: .tokenCreate, activation: (record.activationId, keys),
            signed: true)
        opened.plaintext?.destroy()
        guard let secret = record.v4?.activationSecret else { throw .encryptionFailed }
        let tokenId = UUID().uuidString.lowercased()
        try store.insertToken(
            TokenRecord(tokenId: tokenId, activationId: record.activationId, factorSet: factors, createdAt: clock.now())
        )
        let plaintext = try protocolStep { () throws(ProtocolError) in
            let tokenSecret = try Self.v4TokenSecret(activationSecret: secret, tokenId: tokenId)
            defer { tokenSecret.destroy() }
            return try V4SecretJSON.encode(
                fields: [("tokenId", tokenId)], secretName: "tokenSecret", secret: tokenSecret)
        }
        defer { plaintext.destroy() }
        return try Self.v4Encrypted(try v4Seal(plaintext, opened))
    }

    /// The secret of a V4 token: `KDF(KEY_ACTIVATION_SECRET, "util/token-secret", tokenId)`, 32
    /// bytes. Upstream draws it at random and stores it; this server derives it (as its V3 path
    /// does from the transport key) so that the store keeps no token secret. The client only
    /// ever receives it, so the wire is the same.
    static func v4TokenSecret(activationSecret: SecureBytes, tokenId: String) throws(ProtocolError) -> SecureBytes {
        try V4KDF.derive(activationSecret, label: "util/token-secret", custom: Array(tokenId.utf8))
    }

    /// Verifies a V4 `X-PowerAuth-Token` for an application request (what an application
    /// server asks): the token, its active V4 activation, the digest (constant time), the
    /// timestamp within ±60 s of the server clock (the replay cache's window; upstream allows ±5
    /// minutes, `docs/protocol-v4.md`) and the nonce used once.
    /// The V4 half of ``verifyToken(header:)``.
    func verifyV4Token(header value: String) throws(ActivationServerError) -> VerifiedAuthorization {
        guard let header = try? V4TokenHeader.parse(value), let token = try store.token(tokenId: header.tokenId),
            let record = try store.fetch(activationId: token.activationId), record.state == .active,
            let secret = record.v4?.activationSecret
        else { throw .tokenInvalid }
        let valid = try? protocolStep { () throws(ProtocolError) -> Bool in
            let tokenSecret = try Self.v4TokenSecret(activationSecret: secret, tokenId: token.tokenId)
            defer { tokenSecret.destroy() }
            return try V4TokenDigest.verify(
                header.digest, tokenSecret: tokenSecret, nonce: header.nonce,
                timestampMilliseconds: header.timestampMilliseconds)
        }
        guard valid == true else { throw .tokenInvalid }
        do throws(ActivationServerError) {
            try replayCache.accept(
                ephemeralPublicKey: Array("v4|\(header.tokenId)".utf8), nonce: header.nonce,
                timestamp: Int64(clamping: header.timestampMilliseconds), now: nowMilliseconds)
        } catch {
            throw .tokenInvalid
        }
        return VerifiedAuthorization(
            activationId: record.activationId, userId: record.userId, factorSet: token.factorSet)
    }

    /// Verifies a V4 `X-PowerAuth-Authorization` of an application request and counts the
    /// attempt: the V4 half of ``verifyAuthorization(header:method:uriIdentifier:body:)``.
    func verifyV4Authorization(header: String, method: String, uriIdentifier: String, body: [UInt8])
        throws(ActivationServerError) -> VerifiedAuthorization
    {
        let request = TransportRequest(
            method: method, path: uriIdentifier, headers: [AuthorizationHeader.name: header], body: body)
        let endpoint = V4API.Endpoint(path: uriIdentifier, uriIdentifier: uriIdentifier, sharedInfo1: nil)
        let (record, keys, factors) = try v4Authenticate(request, endpoint, allowed: nil)
        keys.destroy()
        return VerifiedAuthorization(activationId: record.activationId, userId: record.userId, factorSet: factors)
    }

    /// The factor sets upstream's server admits for each vault key (powerauth-server
    /// `v4/VaultUnlockServiceBehavior.checkKeyIdentifier`), checked before any code is verified.
    static let v4VaultFactorSets: [String: Set<FactorSet>] = [
        "KEK_DEVICE_PRIVATE": [.possessionKnowledge, .possessionBiometry],
        "KDK_APP_VAULT_KNOWLEDGE": [.possessionKnowledge],
        "KDK_APP_VAULT_2FA": [.possessionKnowledge, .possessionBiometry],
    ]

    /// `vault/unlock`, in upstream's order: the request is opened first, the key it names and
    /// the code's factor set are checked against ``v4VaultFactorSets`` (a refusal is 400
    /// `ERR_SECURE_VAULT`, nothing counted), and only then is the code verified and counted (a
    /// wrong code is 401 `ERR_AUTHENTICATION`, as on every signed endpoint here).
    func v4UnlockVault(_ request: TransportRequest) throws(ActivationServerError) -> TransportResponse {
        // Every refusal before the code is verified is 400 ERR_SECURE_VAULT (upstream's V4 service
        // wraps them so), uncounted; only a code that is verified and wrong is 401.
        guard let value = request.header(AuthorizationHeader.name),
            let header = try? V4AuthorizationHeader.parse(value), header.applicationKey == applicationKey
        else { throw .malformedRequest(reason: "no valid X-PowerAuth-Authorization") }
        guard let found = try store.fetch(activationId: header.activationId) else { throw .activationNotFound }
        guard found.state == .active, let secret = found.v4?.activationSecret else {
            throw .invalidState(found.state)
        }
        if header.factorSet.factors.contains(.biometry), !found.biometryEnabled {
            throw .malformedRequest(reason: "the activation has no biometry factor")
        }
        let openingKeys = try protocolStep { () throws(ProtocolError) in
            try V4ActivationKeys(activationSecret: secret)
        }
        defer { openingKeys.destroy() }
        let opened = try v4Open(
            request, body: request.body, sharedInfo1: .vaultUnlock, activation: (found.activationId, openingKeys),
            signed: true)
        let body = try Self.decodePlaintext(opened.plaintext, V4VaultUnlockRequest.self)
        opened.plaintext?.destroy()
        guard let allowed = Self.v4VaultFactorSets[body.keyIdentifier] else {
            throw .malformedRequest(reason: "unknown keyIdentifier")
        }
        guard allowed.contains(header.factorSet) else {
            throw .malformedRequest(reason: "\(header.factorSet.rawValue) does not unlock \(body.keyIdentifier)")
        }
        let (_, keys, _) = try v4Authenticate(request, V4API.vaultUnlock, allowed: allowed)
        defer { keys.destroy() }
        guard let key = keys.vaultKey(named: body.keyIdentifier) else {
            throw .malformedRequest(reason: "unknown keyIdentifier")
        }
        let plaintext = try protocolStep { () throws(ProtocolError) in
            try V4SecretJSON.encode(fields: [], secretName: "vaultEncryptionKey", secret: key)
        }
        defer { plaintext.destroy() }
        return try Self.v4Encrypted(try v4Seal(plaintext, opened))
    }

    // MARK: - Upgrade from V3.3

    /// `upgrade/start`: a V3.3 code over the V4-encrypted body (application scope), then a new
    /// activation secret by the V4 shared-secret exchange, a new P-384 server key and a fresh
    /// `CTR_DATA` (the numeric counter continues from V3.3). The activation keeps answering V3.3
    /// until `upgrade/confirm`; a repeated start (a lost response) replaces the pending V4 state.
    func v4StartUpgrade(_ request: TransportRequest) throws(ActivationServerError) -> TransportResponse {
        // A V4 code: the upgrade of a V4 activation to a stronger suite.
        if let value = request.header(AuthorizationHeader.name), (try? V4AuthorizationHeader.parse(value)) != nil {
            return try v4StartSuiteUpgrade(request)
        }
        let (record, keys, _) = try authenticate(
            request, V4API.upgradeStart.uriIdentifier, allowed: [.possessionKnowledge])
        keys.destroy()
        guard record.v4 == nil || record.v4?.upgradePending == true else { throw .upgradeNotAvailable }
        let opened = try v4Open(request, body: request.body, sharedInfo1: .upgradeStart, activation: nil)
        let body = try Self.decodePlaintext(opened.plaintext, V4UpgradeStartRequest.self)
        opened.plaintext?.destroy()
        var (state, shared) = try Self.v4UpgradedState(body, suite: configuration.algorithm)
        state.upgradePending = true
        let fresh = state
        try store.update(activationId: record.activationId) { (r) throws(ActivationServerError) in
            guard r.state == .active, r.v4 == nil || r.v4?.upgradePending == true else {
                throw .upgradeNotAvailable
            }
            r.v4 = fresh
            if let enable = body.enableBiometry { r.biometryEnabled = enable }
        }
        let response = V4UpgradeStartResponse(
            sharedSecretResponse: shared,
            serverPublicKeys: try Self.v4PublicKeys(fresh), ctrData: fresh.counter.base64)
        return try Self.v4Encrypted(try v4Seal(try Self.encodePlaintext(response), opened))
    }

    /// The new state an `upgrade/start` body asks for, in `suite`: the device's P-384 key (and
    /// ML-DSA key for a hybrid suite) checked, the shared-secret exchange answered, a fresh server
    /// key and counter; confirmed, nothing pending yet.
    static func v4UpgradedState(_ body: V4UpgradeStartRequest, suite: ProtocolAlgorithm)
        throws(ActivationServerError) -> (V4ActivationState, V4SharedSecretResponse)
    {
        guard let device = Base64.decode(body.devicePublicKeys.ecdsa), device.count == 97,
            (try? ECP384KeyPair.validate(publicKey: device)) != nil
        else { throw .malformedRequest(reason: "devicePublicKeys.ecdsa is not a P-384 key") }
        let devicePostQuantum = try v4DevicePostQuantumKey(body.devicePublicKeys, suite: suite)
        let (shared, secret) = try v4Respond(to: body.sharedSecretRequest, suite: suite)
        var state = try V4ActivationState(algorithm: suite)
        state.activationSecret = secret
        state.devicePublicKey = device
        state.devicePostQuantumPublicKey = devicePostQuantum
        state.confirmationPending = false
        return (state, shared)
    }

    /// `upgrade/start` for a V4 activation whose suite is weaker than the one this application
    /// serves: a V4 `possession_knowledge` code of the current state (counted), the request
    /// encrypted in application scope in the new suite, and a new state in that suite kept as
    /// ``ActivationRecord/v4Upgrade`` beside the current one, which keeps working until
    /// `upgrade/confirm` (a V4 possession code of the new state) makes the new one current.
    /// Starting again replaces a pending state the device never confirmed.
    func v4StartSuiteUpgrade(_ request: TransportRequest) throws(ActivationServerError) -> TransportResponse {
        let (record, keys, _) = try v4Authenticate(request, V4API.upgradeStart, allowed: [.possessionKnowledge])
        keys.destroy()
        let suite = configuration.algorithm
        guard let current = record.v4, !current.upgradePending, suite.isStronger(than: current.algorithm) else {
            throw .upgradeNotAvailable
        }
        let opened = try v4Open(request, body: request.body, sharedInfo1: .upgradeStart, activation: nil, signed: true)
        let body = try Self.decodePlaintext(opened.plaintext, V4UpgradeStartRequest.self)
        opened.plaintext?.destroy()
        let (fresh, shared) = try Self.v4UpgradedState(body, suite: suite)
        let previous = current.algorithm
        try store.update(activationId: record.activationId) { (r) throws(ActivationServerError) in
            guard r.state == .active, r.v4?.algorithm == previous else { throw .upgradeNotAvailable }
            r.v4Upgrade = fresh
            // The sealed state changes with it (stores write what changed).
            r.v4?.keyGeneration &+= 1
            // A device that cannot carry its biometry key across turns the factor off now; the
            // upgrade never turns it on (biometry/add does).
            if body.enableBiometry == false { r.biometryEnabled = false }
        }
        let response = V4UpgradeStartResponse(
            sharedSecretResponse: shared, serverPublicKeys: try Self.v4PublicKeys(fresh),
            ctrData: fresh.counter.base64)
        return try Self.v4Encrypted(try v4Seal(try Self.encodePlaintext(response), opened))
    }

    /// `upgrade/confirm` of a suite upgrade: a V4 possession code of the pending state (its own
    /// keys and counter, the look-ahead window), then the pending state becomes the current one,
    /// carrying the factor flags over; a failure is possession-only and so never counted. With no
    /// pending state, a repeated confirmation is checked against the current state (the device
    /// resends one whose answer it lost).
    func v4ConfirmSuiteUpgrade(_ request: TransportRequest, _ record: ActivationRecord, pending: V4ActivationState)
        throws(ActivationServerError) -> TransportResponse
    {
        guard let value = request.header(AuthorizationHeader.name),
            let header = try? V4AuthorizationHeader.parse(value), header.factorSet == .possession,
            header.applicationKey == applicationKey, let secret = pending.activationSecret,
            let uriIdentifier = V4API.upgradeConfirm.uriIdentifier
        else { throw .authenticationFailed }
        let keys = try protocolStep { () throws(ProtocolError) in try V4ActivationKeys(activationSecret: secret) }
        defer { keys.destroy() }
        let appSecret = applicationSecret
        let lookAhead = configuration.lookAhead
        let match = try? protocolStep { () throws(ProtocolError) -> V4AuthenticationCodeMatch? in
            try V4AuthenticationCode.validate(
                header.authenticationCode, factorSet: .possession, format: .online, possession: keys.possession,
                knowledgeCandidates: [], biometryCandidates: [], counter: pending.counter, lookAhead: lookAhead,
                data: try RequestData(
                    method: request.method, uriIdentifier: uriIdentifier, nonce: header.nonce, body: request.body
                ).normalized(applicationSecret: appSecret))
        }
        guard let found = match ?? nil else { throw .authenticationFailed }
        let moved = try protocolStep { () throws(ProtocolError) in try pending.counter.advanced(by: found.steps + 1) }
        try store.update(activationId: record.activationId) { (r) throws(ActivationServerError) in
            guard r.state == .active, let waiting = r.v4Upgrade, waiting.changeMarker == pending.changeMarker else {
                throw .authenticationFailed
            }
            var next = waiting
            next.counter = moved
            next.keyGeneration = (r.v4?.keyGeneration ?? 0) &+ 1
            // The new key tree's knowledge and biometry keys (the device wrapped the new tree's
            // knowledge key under the PIN) replace any rotated ones of the old suite.
            r.v4 = next
            r.v4Upgrade = nil
        }
        return try Self.ok(EmptyMessage?.none)
    }

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
