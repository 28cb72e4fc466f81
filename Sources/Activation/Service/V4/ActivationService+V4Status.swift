import Biometry
import Foundation
import PostQuantum
import PowerAuthProtocol
import SecureCore

// V4 status, tokens and vault on the client.
extension ActivationService {
    // MARK: - Status, tokens, vault

    func v4FetchStatus() async throws(ActivationError) -> ActivationStatus {
        guard let before = v4 else { throw .missingActivation }
        let request = try securePlaintext(EmptyMessage())
        defer { request.destroy() }
        let answer = try await v4SendEncrypted(V4API.activationStatus, plaintext: request, authentication: nil)
        let response = try decodePlaintext(answer, V4StatusResponse.self, path: V4API.activationStatus.path)
        guard let bytes = Base64.decode(response.activationStatus) else {
            throw .invalidResponse(reason: "activation/status: malformed field")
        }
        let blob: V4StatusBlob
        do throws(ProtocolError) {
            blob = try V4StatusBlob(opening: bytes, statusMACKey: before.keys.statusMAC)
        } catch {
            if case .unknownActivationState = error { throw .protocolError(error) }
            throw .invalidResponse(reason: "activation/status: the status blob does not verify")
        }
        let expiry = try ActivationStatus.readCustomObject(response.customObject, path: V4API.activationStatus.path)
        var state = ClientActivationState(blob.state)
        if blob.state == .active { state = try v4SynchroniseCounter(blob) ? .active : .deadlock }
        return ActivationStatus(
            state: state, failCount: Int(blob.failedAttempts), maxFailCount: Int(blob.maxFailedAttempts),
            blockExpirationTime: expiry, counterLookAhead: Int(blob.counterLookAhead),
            customObject: response.customObject)
    }

    /// As V3: the server ahead (within the look-ahead) moves the device forward; the server behind
    /// by less than the look-ahead is fine; anything else is a deadlock.
    func v4SynchroniseCounter(_ blob: V4StatusBlob) throws(ActivationError) -> Bool {
        guard let current = v4 else { throw .missingActivation }
        let counter = try current.state.currentCounter
        let distance = try protocolStep { () throws(ProtocolError) in
            try blob.serverDistance(from: counter, counterDataMACKey: current.keys.counterDataMAC)
        }
        if let distance {
            if distance > 0 {
                let target = current.state.counterIndex + UInt64(distance)
                try v4Mutate { (a) throws(ActivationError) in
                    while a.state.counterIndex < target { try a.state.advanceCounter() }
                }
            }
            return true
        }
        let lookAhead = max(1, Int(blob.counterLookAhead))
        for (index, text) in current.state.counterHistory.enumerated() where index + 1 < lookAhead {
            let hash = try protocolStep { () throws(ProtocolError) in
                try V4StatusBlob.counterDataHash(
                    try V4HashCounter(base64: text), counterDataMACKey: current.keys.counterDataMAC)
            }
            if constantTimeEqual(hash, blob.counterDataHash) { return true }
        }
        return false
    }

    func v4CreateToken(authentication: ActivationAuthentication) async throws(ActivationError) -> ActivationToken {
        let request = try securePlaintext(EmptyMessage())
        defer { request.destroy() }
        let answer = try await v4SendEncrypted(V4API.tokenCreate, plaintext: request, authentication: authentication)
        guard let answer else { throw .invalidResponse(reason: "token/create: empty response") }
        defer { answer.destroy() }
        let tokenId: String? = answer.withUnsafeBytes { json in
            TokenPayload.stringValue(of: "tokenId", in: json).map { String(decoding: json[$0], as: UTF8.self) }
        }
        guard let tokenId, (try? AuthorizationHeader.validateActivationId(tokenId)) != nil else {
            throw .invalidResponse(reason: "token/create: no token id")
        }
        let secret = try protocolStep { () throws(ProtocolError) in
            try V4SecretJSON.decodeSecret(answer, secretName: "tokenSecret", count: 32)
        }
        return ActivationToken(tokenId: tokenId, factorSet: authentication.factorSet, secret: secret)
    }

    func v4UnlockVault(authentication: ActivationAuthentication, reason: String) async throws(ActivationError)
        -> SecureBytes
    {
        guard authentication.factorSet != .possession else {
            throw .wrongParameter(reason: "the vault opens with two factors")
        }
        let request = try securePlaintext(
            V4VaultUnlockRequest(keyIdentifier: "KDK_APP_VAULT_2FA", reason: reason))
        defer { request.destroy() }
        let answer = try await v4SendEncrypted(V4API.vaultUnlock, plaintext: request, authentication: authentication)
        guard let answer, let current = v4 else { throw .invalidResponse(reason: "vault/unlock: empty response") }
        defer { answer.destroy() }
        let key = try protocolStep { () throws(ProtocolError) in
            try V4SecretJSON.decodeSecret(answer, secretName: "vaultEncryptionKey", count: 32)
        }
        let check = try coreStep { () throws(SecureCoreError) in
            try HMACSHA256.foldedTag(LocalV4Keys.keyCheckLabel, key: key)
        }
        guard Base64.encode(check) == current.state.vaultCheck else {
            key.destroy()
            throw .invalidResponse(reason: "vault/unlock: the vault key is not this activation's")
        }
        return key
    }

    /// The server-side password change of V4 (dynamic factor keys): `password/change` with the
    /// current PIN gives a new knowledge key, wrapped here under the new PIN and stored; then one
    /// `auth/validate` with the new PIN makes the server promote it, so the old PIN stops working
    /// (an old copy of this state is then no PIN oracle). A crash before the new key is stored
    /// leaves the old PIN working: the server drops the unused key at the next success.
    func v4FinishPasswordChange(newPassword: Password, data: PasswordChangeData) async throws(ActivationError) {
        defer { data.secureClear() }
        guard let current = v4 else { throw .missingActivation }
        guard data.activationId == current.state.activationId else {
            throw .invalidActivationState(reason: "the change data belongs to another activation")
        }
        guard let old = try data.currentPassword() else {
            throw .invalidActivationState(reason: "the change data was cleared")
        }
        defer { old.destroy() }
        guard newPassword.length > 0 else { throw .protocolError(.emptyPIN) }
        let suite = current.state.suite
        let (kem, shared) = try protocolStep { () throws(ProtocolError) in
            try V4SharedSecret.makeRequest(algorithm: suite)
        }
        defer {
            kem.keyPair.privateKey.destroy()
            kem.destroy()
        }
        let request = try securePlaintext(shared)
        defer { request.destroy() }
        let answer = try await v4SendEncrypted(
            V4API.passwordChange, plaintext: request, authentication: .possessionWithPassword(old))
        let response = try decodePlaintext(answer, V4SharedSecretResponse.self, path: V4API.passwordChange.path)
        let key: SecureBytes
        do throws(ProtocolError) {
            key = try V4SharedSecret.finish(kem, response: response)
        } catch {
            throw .invalidResponse(reason: "password/change: the shared secret does not complete")
        }
        defer { key.destroy() }
        let wrapped = try v4Wrap(key, password: newPassword)
        try v4Mutate { (a) throws(ActivationError) in a.state.knowledgeKey = wrapped }
        try await v4Send(V4API.validate, body: Array("{}".utf8), authentication: .possessionWithPassword(newPassword))
    }
}
