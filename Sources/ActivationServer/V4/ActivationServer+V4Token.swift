import Foundation
import PostQuantum
import PowerAuthProtocol
import SecureCore
import Synchronization

// V4 tokens and vault unlocking.
extension ActivationServer {
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
}
