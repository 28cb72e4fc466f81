import Foundation
import PowerAuthProtocol
import SecureCore

extension ActivationServer {
    /// The server's clock in milliseconds since 1970 (temporary keys, ECIES timestamps).
    var nowMilliseconds: Int64 {
        let value = clock.now().timeIntervalSince1970 * 1000
        guard value.isFinite, value > 0 else { return 0 }
        return value >= Double(Int64.max / 2) ? Int64.max / 2 : Int64(value.rounded(.down))
    }

    /// `POST /pa/v3/keystore/create`, as powerauth-server `TemporaryKeyBehavior.requestTemporaryKey`:
    /// reads the request claims, verifies the HS256 signature with the decoded
    /// application secret (application scope) or the activation's `KEY_TRANSPORT`
    /// (activation scope: `KDF_INTERNAL(KEY_TRANSPORT, decoded secret)`; the activation must be active or blocked), issues a key pair and
    /// answers with an ES256 JWT signed by the master key or the activation's server key.
    /// - Parameter message: `{"jwt": …}`.
    /// - Returns: `{"jwt": …}`.
    /// - Throws: ``ActivationServerError/temporaryKeyFailure`` for every refusal.
    func createTemporaryKey(_ message: JWTMessage) throws(ActivationServerError) -> JWTMessage {
        let claims = try temporaryKeyStep { () throws(JWTError) in try TemporaryKeyJWT.requestClaims(message.jwt) }
        guard claims.applicationKey == applicationKey, !claims.challenge.isEmpty, claims.challenge.utf8.count <= 256,
            TemporaryKeyClaimTimes.check(
                issuedAt: claims.iat, expiresAt: claims.exp, nowSeconds: nowMilliseconds / 1000)
        else { throw .temporaryKeyFailure }
        let signingKey: SecureBytes
        let verificationKey: SecureBytes
        var activationKeys: FactorKeys?
        defer { activationKeys?.destroy() }
        if let activationId = claims.activationId {
            // As upstream's TemporaryKeyBehavior: an ACTIVE or BLOCKED activation.
            guard let record = try store.fetch(activationId: activationId),
                record.state == .active || record.state == .blocked, let device = record.devicePublicKey
            else { throw .temporaryKeyFailure }
            let keys = try self.factorKeys(record, devicePublicKey: device)
            activationKeys = keys
            let secret = applicationSecret
            verificationKey = try protocolStep { () throws(ProtocolError) in
                try TemporaryKeyJWT.activationSigningKey(transportKey: keys.transport, applicationSecret: secret)
            }
            signingKey = try record.serverPrivateKey.key()
        } else {
            verificationKey = try protocolStep { () throws(ProtocolError) in
                try TemporaryKeyJWT.applicationSigningKey(applicationSecret: applicationSecret)
            }
            signingKey = configuration.masterKeyPair.privateKey
        }
        defer { verificationKey.destroy() }
        _ = try temporaryKeyStep { () throws(JWTError) in
            try TemporaryKeyJWT.verifyRequest(message.jwt, key: verificationKey)
        }
        let now = nowMilliseconds
        let created = try temporaryKeys.create(
            applicationKey: claims.applicationKey, activationId: claims.activationId, now: now)
        let response = TemporaryKeyResponseClaims(
            temporaryKeyId: created.temporaryKeyId, request: claims, publicKey: Base64.encode(created.publicKey),
            issuedAtMilliseconds: now, expiresAtMilliseconds: created.expiresAtMilliseconds)
        let jwt = try protocolStep { () throws(ProtocolError) -> String in
            do throws(JWTError) {
                return try TemporaryKeyJWT.signResponse(response, privateKey: signingKey)
            } catch {
                throw .jwt(error)
            }
        }
        return JWTMessage(jwt: jwt)
    }

    /// Runs a JWT check; any failure is the one refusal upstream gives.
    private func temporaryKeyStep<R>(_ body: () throws(JWTError) -> R) throws(ActivationServerError) -> R {
        do throws(JWTError) {
            return try body()
        } catch {
            throw .temporaryKeyFailure
        }
    }
}
