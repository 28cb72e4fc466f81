import Foundation
import PowerAuthProtocol
import SecureCore

/// A MAC token (`token/create`, powerauth-crypto `docs/MAC-Token-Based-Authentication.md`):
/// its identifier, the factors it was created with, and its 16-byte secret in secure
/// memory. It authenticates read-only requests with `X-PowerAuth-Token`, without the
/// counter and without a PIN. The description is redacted.
public final class ActivationToken: Sendable {
    /// The token identifier (UUID).
    public let tokenId: String
    /// The factors of the signature the token was created with.
    public let factorSet: FactorSet
    let secret: SecureBytes

    init(tokenId: String, factorSet: FactorSet, secret: SecureBytes) {
        self.tokenId = tokenId
        self.factorSet = factorSet
        self.secret = secret
    }

    /// Wipes the secret; the token cannot be used afterwards.
    public func destroy() { secret.destroy() }

    deinit { secret.destroy() }
}

extension ActivationToken: CustomStringConvertible {
    /// The identifier and factors; never the secret.
    public var description: String { "ActivationToken(\(tokenId), \(factorSet.rawValue), secret redacted)" }
}

extension ActivationService {
    /// Creates a MAC token (`token/create`: signed with `authentication`, ECIES in
    /// activation scope, encrypt-then-sign). A wrong PIN is counted like any other.
    /// - Parameter authentication: the factors to sign with (the token remembers them).
    /// - Returns: the token, its secret in secure memory.
    /// - Throws: ``ActivationError/authentication``, the network and server errors,
    ///   ``ActivationError/invalidResponse(reason:)``.
    public func createToken(authentication: ActivationAuthentication) async throws(ActivationError) -> ActivationToken {
        if isV4 { return try await v4CreateToken(authentication: authentication) }
        let factorSet = authentication.factorSet
        let request = try securePlaintext(EmptyMessage())
        defer { request.destroy() }
        let answer = try await sendEncrypted(
            ActivationAPI.createToken, plaintext: request, authentication: authentication)
        guard let answer else { throw .invalidResponse(reason: "token/create: empty response") }
        defer { answer.destroy() }
        let (tokenId, secret) = try protocolStep { () throws(ProtocolError) in try TokenPayload.decode(answer) }
        return ActivationToken(tokenId: tokenId, factorSet: factorSet, secret: secret)
    }

    /// The `X-PowerAuth-Token` header for one request, in the activation's generation: a fresh
    /// 16-byte nonce, the current time in milliseconds and the digest under the token's secret
    /// (HMAC-SHA256, version `3.3`, for `LEGACY_P256`; KMAC-256 `"PA4DIGEST"`, version `4.0`, for
    /// the `EC_P384` suites).
    /// - Parameter token: a token of this activation (from ``createToken(authentication:)``).
    /// - Returns: the header; send its `value` under `SignedTokenHeader.name`.
    /// - Throws: ``ActivationError/invalidActivationState(reason:)`` for a token created in V3.3
    ///   before an upgrade to V4 (its 16-byte secret makes no V4 digest: create a new token),
    ///   ``ActivationError/core(_:)``, ``ActivationError/protocolError(_:)``.
    public func tokenHeader(for token: ActivationToken) throws(ActivationError) -> SignedTokenHeader {
        if isV4 { return .v4(try v4TokenHeader(for: token)) }
        return .v3(try v3TokenHeader(for: token))
    }

    /// The V3.3 header of ``tokenHeader(for:)``.
    func v3TokenHeader(for token: ActivationToken) throws(ActivationError) -> TokenHeader {
        let nonce = try coreStep { () throws(SecureCoreError) in
            try SecureRandom.bytes(count: ProtocolConstants.nonceByteCount)
        }
        let milliseconds = Int64(max(0, (clock.now().timeIntervalSince1970 * 1000).rounded(.down)))
        let timestamp = String(milliseconds)
        let digest = try protocolStep { () throws(ProtocolError) in
            try TokenPayload.digest(secret: token.secret, nonce: nonce, timestamp: timestamp, version: .v3_3)
        }
        return TokenHeader(
            tokenId: token.tokenId, tokenDigest: digest, nonce: nonce, timestamp: timestamp, version: .v3_3)
    }

    /// The V4 header of ``tokenHeader(for:)``.
    func v4TokenHeader(for token: ActivationToken) throws(ActivationError) -> V4TokenHeader {
        guard isV4 else {
            throw .protocolError(
                .unsupportedAlgorithm(name: configuration.algorithm.rawValue, missing: "V4 token headers need V4"))
        }
        // A token created in V3.3 (16-byte secret) before an upgrade: the server refuses it in V4.
        guard token.secret.count == 32 else {
            throw .invalidActivationState(
                reason: "a V3.3 token does not work after the upgrade to V4: create a new token")
        }
        let nonce = try coreStep { () throws(SecureCoreError) in
            try SecureRandom.bytes(count: ProtocolConstants.nonceByteCount)
        }
        let milliseconds = UInt64(max(0, (clock.now().timeIntervalSince1970 * 1000).rounded(.down)))
        let digest = try protocolStep { () throws(ProtocolError) in
            try V4TokenDigest.compute(tokenSecret: token.secret, nonce: nonce, timestampMilliseconds: milliseconds)
        }
        return V4TokenHeader(tokenId: token.tokenId, digest: digest, nonce: nonce, timestampMilliseconds: milliseconds)
    }

    /// The `X-PowerAuth-Token` header value for one request: ``tokenHeader(for:)``'s `value`.
    /// - Parameter token: the token.
    /// - Returns: the header value.
    /// - Throws: as ``tokenHeader(for:)``.
    public func tokenHeaderValue(for token: ActivationToken) throws(ActivationError) -> String {
        try tokenHeader(for: token).value
    }

    /// Removes a token on the server (`token/remove`, signed with any factors).
    /// - Parameters:
    ///   - tokenId: the token.
    ///   - authentication: the factors to sign with.
    /// - Throws: ``ActivationError/authentication``, the network and server errors.
    public func removeToken(_ tokenId: String, authentication: ActivationAuthentication) async throws(ActivationError) {
        if isV4 {
            let body = try protocolStep { () throws(ProtocolError) in
                try WireCoding.encode(RequestEnvelope(requestObject: V4TokenRemoveRequest(tokenId: tokenId)))
            }
            return try await v4Send(V4API.tokenRemove, body: body, authentication: authentication)
        }
        _ = try await send(
            ActivationAPI.removeToken, TokenRemoveRequest(tokenId: tokenId), authentication: authentication)
    }

    /// The activation's name as the server has it (`activation/detail`: MAC token and
    /// ECIES in activation scope; in V4 the V4 token header and V4 encryption). The token must
    /// have been created with two factors.
    /// - Parameter token: the token.
    /// - Returns: the details.
    /// - Throws: ``ActivationError/authentication`` (token refused), the network and server errors.
    public func fetchActivationDetail(token: ActivationToken) async throws(ActivationError) -> ActivationDetailResponse
    {
        if isV4 { return try await v4FetchActivationDetail(token: token) }
        let endpoint = ActivationAPI.activationDetail
        let (encryptor, activationId) = try await encryptor(scope: .activation, sharedInfo1: endpoint.sharedInfo1)
        let request = try securePlaintext(EmptyMessage())
        defer { request.destroy() }
        let (cryptogram, envelope) = try eciesStep { () throws(ECIESError) in
            try encryptor.encryptRequest(request, now: clock.now())
        }
        let body = try protocolStep { () throws(ProtocolError) in
            try WireCoding.encode(EncryptedRequestBody(cryptogram))
        }
        let headers = [
            TokenHeader.name: try tokenHeader(for: token).value,
            EncryptionHeader.name: EncryptionHeader(
                version: .v3_3, applicationKey: configuration.sdkConfiguration.applicationKey,
                activationId: activationId
            ).value,
        ]
        let answer = try await exchange(path: endpoint.path, body: body, headers: headers, authentication: nil)
        let response = try decodePlaintext(
            try openResponse(answer, envelope: envelope, path: endpoint.path),
            ResponseEnvelope<ActivationDetailResponse>.self, path: endpoint.path)
        guard let detail = response.responseObject else {
            throw .invalidResponse(reason: "\(endpoint.path): no responseObject")
        }
        return detail
    }

    /// The user's claims (`user/info`, ECIES in activation scope, unsigned; in V4
    /// `/pa/v4/user/info` with V4 encryption).
    /// - Returns: the claims.
    /// - Throws: the network and server errors, ``ActivationError/invalidResponse(reason:)``.
    public func fetchUserInfo() async throws(ActivationError) -> UserInfoResponse {
        if isV4 {
            let answer = try await v4SendEncrypted(V4API.userInfo, plaintext: nil, authentication: nil)
            return try decodePlaintext(answer, UserInfoResponse.self, path: V4API.userInfo.path)
        }
        let request = try securePlaintext(EmptyMessage())
        defer { request.destroy() }
        let answer = try await sendEncrypted(ActivationAPI.userInfo, plaintext: request, authentication: nil)
        return try decodePlaintext(answer, UserInfoResponse.self, path: ActivationAPI.userInfo.path)
    }

    /// The server's time and name (`/pa/v3/status`; in V4 `/pa/v4/status`, which also lists the
    /// algorithms the server serves this application).
    /// - Returns: the status.
    /// - Throws: the network and server errors.
    public func fetchServerStatus() async throws(ActivationError) -> ServerStatusResponse {
        if isV4 {
            let request = RequestEnvelope(
                requestObject: V4ServerStatusRequest(applicationKey: configuration.sdkConfiguration.applicationKey))
            let body = try protocolStep { () throws(ProtocolError) in try WireCoding.encode(request) }
            let answer = try await exchange(
                path: V4API.serverStatus.path, body: body, headers: [:], authentication: nil)
            guard let envelope = try? WireCoding.decode(ResponseEnvelope<ServerStatusResponse>.self, answer),
                let status = envelope.responseObject
            else { throw .invalidResponse(reason: "\(V4API.serverStatus.path): the body does not follow the API") }
            return status
        }
        return try await send(ActivationAPI.serverStatus, EmptyMessage(), authentication: nil)
    }

    // MARK: - Tokens on the device

    /// Keeps a token in the device storage (a secret file next to the activation's), so
    /// a later process can use it.
    /// - Parameter token: the token.
    /// - Throws: storage errors.
    public func storeToken(_ token: ActivationToken) throws(ActivationError) {
        guard record != nil || v4 != nil else { throw .missingActivation }
        let factor = Array(token.factorSet.rawValue.utf8)
        // Format 1: a 16-byte V3.3 secret; format 2: a 32-byte V4 one.
        let blob = try coreStep { () throws(SecureCoreError) in
            try SecureBytes(count: Self.tokenMagic.count + 1 + token.secret.count + factor.count)
        }
        defer { blob.destroy() }
        token.secret.withUnsafeBytes { secret in
            blob.withUnsafeMutableBytes { out in
                for (i, byte) in Self.tokenMagic.enumerated() { out[i] = byte }
                out[Self.tokenMagic.count] = secret.count == 32 ? 2 : 1
                for i in 0..<secret.count { out[Self.tokenMagic.count + 1 + i] = secret[i] }
                let start = Self.tokenMagic.count + 1 + secret.count
                for (i, byte) in factor.enumerated() { out[start + i] = byte }
            }
        }
        try storage.writeSecret(tokenStorageName(token.tokenId), blob)
    }

    /// A token kept by ``storeToken(_:)``.
    /// - Parameter tokenId: the token.
    /// - Returns: the token, or `nil` when none is kept under that identifier.
    /// - Throws: ``ActivationError/invalidActivationData(reason:)``, storage errors.
    public func storedToken(_ tokenId: String) throws(ActivationError) -> ActivationToken? {
        guard (try? AuthorizationHeader.validateActivationId(tokenId)) != nil else {
            throw .wrongParameter(reason: "not a token identifier")
        }
        guard let blob = try storage.readSecret(tokenStorageName(tokenId)) else { return nil }
        defer { blob.destroy() }
        let header = Self.tokenMagic.count + 1
        guard blob.count > header else { throw .invalidActivationData(reason: "a token file is truncated") }
        let format = blob.withUnsafeBytes { $0[Self.tokenMagic.count] }
        let secretCount = format == 2 ? 32 : TokenPayload.secretByteCount
        guard blob.count > header + secretCount else {
            throw .invalidActivationData(reason: "a token file is truncated")
        }
        let parsed: (Bool, String) = blob.withUnsafeBytes { bytes in
            let magicOK =
                Array(bytes[0..<Self.tokenMagic.count]) == Self.tokenMagic && (format == 1 || format == 2)
            let factor = String(decoding: bytes[(header + secretCount)...], as: UTF8.self)
            return (magicOK, factor)
        }
        guard parsed.0, let factorSet = try? FactorSet(parsing: parsed.1) else {
            throw .invalidActivationData(reason: "a token file does not parse")
        }
        let secret = try coreStep { () throws(SecureCoreError) in
            try blob.withUnsafeBytes { (bytes) throws(SecureCoreError) in
                try SecureBytes(
                    copying: UnsafeRawBufferPointer(rebasing: bytes[header..<(header + secretCount)]))
            }
        }
        return ActivationToken(tokenId: tokenId, factorSet: factorSet, secret: secret)
    }

    /// Forgets a token kept on the device.
    /// - Parameter tokenId: the token.
    /// - Throws: storage errors.
    public func deleteStoredToken(_ tokenId: String) throws(ActivationError) {
        guard (try? AuthorizationHeader.validateActivationId(tokenId)) != nil else {
            throw .wrongParameter(reason: "not a token identifier")
        }
        try storage.remove(tokenStorageName(tokenId))
    }

    private static var tokenMagic: [UInt8] { Array("SPTK".utf8) }

    private func tokenStorageName(_ tokenId: String) -> String { "\(configuration.instanceId).token-\(tokenId)" }
}

extension ActivationService {
    /// Unlocks the secure vault (`vault/unlock`, signed with two factors, ECIES in
    /// activation scope): the server checks the factors (a wrong PIN counts) and returns
    /// `KEY_ENCRYPTION_VAULT` under the transport key. The key is checked against the
    /// biometry key sealed under it at activation before it is returned, so a key from a
    /// server that does not hold this activation is refused.
    /// - Parameters:
    ///   - authentication: two factors (PIN or biometry with possession).
    ///   - reason: one of `ActivationAPI.vaultUnlockReasons` (default `FETCH_ENCRYPTION_KEY`).
    /// - Returns: the 16-byte vault key in secure memory; the caller destroys it.
    /// - Throws: ``ActivationError/authentication``, the network and server errors,
    ///   ``ActivationError/invalidResponse(reason:)``, ``ActivationError/wrongParameter(reason:)``
    ///   for an unknown reason or a one-factor authentication.
    public func unlockVault(authentication: ActivationAuthentication, reason: String = "FETCH_ENCRYPTION_KEY")
        async throws(ActivationError) -> SecureBytes
    {
        guard ActivationAPI.vaultUnlockReasons.contains(reason) else {
            throw .wrongParameter(reason: "unknown vault unlock reason")
        }
        if isV4 { return try await v4UnlockVault(authentication: authentication, reason: reason) }
        guard authentication.factorSet != .possession else {
            throw .wrongParameter(reason: "the vault opens with two factors")
        }
        guard record != nil else { throw .missingActivation }
        let request = try securePlaintext(VaultUnlockRequest(reason: reason))
        defer { request.destroy() }
        let answer = try await sendEncrypted(
            ActivationAPI.unlockVault, plaintext: request, authentication: authentication)
        let response = try decodePlaintext(answer, VaultUnlockResponse.self, path: ActivationAPI.unlockVault.path)
        guard let current = record, let keys else { throw .missingActivation }
        guard let encrypted = Base64.decode(response.encryptedVaultEncryptionKey),
            let vaultKey = try? crypto.decryptVaultKey(encrypted, transportKey: keys.transport)
        else { throw .invalidResponse(reason: "vault/unlock: the vault key does not open") }
        let opens = try? protocolStep { () throws(ProtocolError) -> Bool in
            let seal = try crypto.aeadKey(from: vaultKey, index: ProtocolConstants.biometrySealKeyIndex)
            defer { seal.destroy() }
            let key = try? AEAD.open(
                current.sealedBiometryKey, using: seal, associatedData: Array(current.activationId.utf8))
            key?.destroy()
            return key != nil
        }
        guard opens == true else {
            vaultKey.destroy()
            throw .invalidResponse(reason: "vault/unlock: the vault key is not this activation's")
        }
        return vaultKey
    }
}
