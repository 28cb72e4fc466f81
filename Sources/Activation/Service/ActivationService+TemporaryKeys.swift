import Foundation
import PowerAuthProtocol
import SecureCore

extension ActivationService {
    /// A temporary encryption key for 3.3 ECIES in `scope`: the cached one while it is
    /// valid for more than ``TemporaryEncryptionKey/expiryMargin``, otherwise a new
    /// one from `POST /pa/v3/keystore/create` (mobile SDK `GetTemporaryKeyTask`).
    ///
    /// The request JWT is HS256 with the decoded application secret (application
    /// scope) or `KDF_INTERNAL(KEY_TRANSPORT, application secret)` (activation scope); the response JWT must carry an
    /// ES256 signature by the master server public key (application scope) or the
    /// activation's server public key (activation scope), echo the challenge,
    /// application key and activation, and not be expired.
    /// - Parameter scope: the ECIES scope.
    /// - Returns: the key.
    /// - Throws: ``ActivationError/missingActivation`` (activation scope without one),
    ///   ``ActivationError/invalidResponse(reason:)`` for a response that does not verify,
    ///   ``ActivationError/server(statusCode:code:)`` and the network errors.
    public func temporaryEncryptionKey(scope: ECIES.Scope) async throws(ActivationError) -> TemporaryEncryptionKey {
        if isV4 { throw v4Unsupported("V3.3 temporary keys") }
        let activationId = scope == .activation ? record?.activationId : nil
        if scope == .activation, activationId == nil { throw .missingActivation }
        if let cached = temporaryKeys[scope], cached.activationId == activationId,
            cached.expiresAt.timeIntervalSince(clock.now()) > TemporaryEncryptionKey.expiryMargin
        {
            return cached
        }
        let key = try await fetchTemporaryKey(scope: scope, activationId: activationId)
        temporaryKeys[scope] = key
        return key
    }

    /// Forgets the cached temporary keys (for example after the server refused one).
    public func resetTemporaryEncryptionKeys() {
        temporaryKeys = [:]
    }

    private func fetchTemporaryKey(scope: ECIES.Scope, activationId: String?) async throws(ActivationError)
        -> TemporaryEncryptionKey
    {
        let sdk = configuration.sdkConfiguration
        let challenge = try jwtStep { () throws(JWTError) in try TemporaryKeyJWT.makeChallenge() }
        let claims = TemporaryKeyRequestClaims(
            applicationKey: sdk.applicationKey, activationId: activationId, challenge: challenge)
        let verifyingKey: [UInt8]
        let jwt: String
        if scope == .activation {
            guard let record, let keys, let server = Base64.decode(record.serverPublicKey) else {
                throw .missingActivation
            }
            verifyingKey = server
            let key = try protocolStep { () throws(ProtocolError) in
                try TemporaryKeyJWT.activationSigningKey(
                    transportKey: keys.transport, applicationSecret: sdk.applicationSecret)
            }
            defer { key.destroy() }
            jwt = try jwtStep { () throws(JWTError) in try TemporaryKeyJWT.signRequest(claims, key: key) }
        } else {
            verifyingKey = sdk.masterServerPublicKey
            let key = try protocolStep { () throws(ProtocolError) in
                try TemporaryKeyJWT.applicationSigningKey(applicationSecret: sdk.applicationSecret)
            }
            defer { key.destroy() }
            jwt = try jwtStep { () throws(JWTError) in try TemporaryKeyJWT.signRequest(claims, key: key) }
        }
        let response = try await send(TemporaryKeyAPI.createKey, JWTMessage(jwt: jwt), authentication: nil)
        let verified: TemporaryKeyResponseClaims
        do throws(JWTError) {
            verified = try TemporaryKeyJWT.verifyResponse(
                response.jwt, publicKey: verifyingKey, request: claims, now: clock.now())
        } catch {
            throw .invalidResponse(reason: "keystore/create: \(error)")
        }
        guard let publicKey = Base64.decode(verified.publicKey) else {
            throw .invalidResponse(reason: "keystore/create: publicKey")
        }
        return TemporaryEncryptionKey(
            temporaryKeyId: verified.temporaryKeyId, publicKey: publicKey, scope: scope, activationId: activationId,
            expiresAt: Date(timeIntervalSince1970: Double(verified.expiresAtMilliseconds) / 1000))
    }

    private func jwtStep<R>(_ body: () throws(JWTError) -> R) throws(ActivationError) -> R {
        do throws(JWTError) {
            return try body()
        } catch {
            throw .protocolError(.jwt(error))
        }
    }
}
