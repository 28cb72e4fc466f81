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
}
