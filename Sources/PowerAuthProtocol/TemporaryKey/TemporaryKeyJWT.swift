import Foundation
import SecureCore

/// The JWTs of PowerAuth 3.3 temporary keys (`POST /pa/v3/keystore/create`):
/// the client's HS256 request and the server's ES256 response, compact JWS with
/// base64url segments without padding.
///
/// HS256 keys: the decoded application secret (application scope) or
/// `KDF_INTERNAL(KEY_TRANSPORT, decoded application secret)` (activation scope,
/// ``activationSigningKey(transportKey:applicationSecret:)``), as powerauth-server
/// `TemporaryKeyBehavior` verifies them. ES256 keys: the
/// master server key pair (application scope) or the activation's server key pair
/// (activation scope); the signature is JOSE `r ‖ s`.
public enum TemporaryKeyJWT {
    /// `{"alg":"HS256","typ":"JWT"}`, the header the mobile SDK sends (its base64url
    /// form `eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9` is a constant there).
    public static let requestHeader = #"{"alg":"HS256","typ":"JWT"}"#
    /// `{"alg":"ES256","typ":"JWT"}`, the response header.
    public static let responseHeader = #"{"alg":"ES256","typ":"JWT"}"#
    /// Random bytes in a challenge.
    public static let challengeByteCount = 18

    /// A fresh challenge: Base64 of 18 random bytes.
    /// - Returns: the challenge text.
    /// - Throws: ``JWTError/core(_:)`` if randomness fails.
    public static func makeChallenge() throws(JWTError) -> String {
        Base64.encode(try jwtLift { () throws(SecureCoreError) in try SecureRandom.bytes(count: challengeByteCount) })
    }

    /// The application-scope HS256 key: the decoded application secret, in secure memory.
    /// - Parameter applicationSecret: Base64 of the 16-byte secret.
    /// - Returns: the key.
    /// - Throws: ``ProtocolError/malformedBase64(field:)``, ``ProtocolError/invalidLength(field:expected:actual:)``,
    ///   ``ProtocolError/core(_:)``.
    public static func applicationSigningKey(applicationSecret: String) throws(ProtocolError) -> SecureBytes {
        let bytes = try Base64.decode(
            applicationSecret, field: "applicationSecret", count: ProtocolConstants.applicationKeyByteCount)
        return try lift { () throws(SecureCoreError) -> SecureBytes in
            let key = try SecureBytes(count: bytes.count)
            key.withUnsafeMutableBytes { $0.copyBytes(from: bytes) }
            return key
        }
    }

    /// The HS256 key of an activation-scope request:
    /// `KDF_INTERNAL(KEY_TRANSPORT, decoded application secret)` =
    /// `fold(HMAC-SHA256(key: KEY_TRANSPORT, data: the 16 secret bytes))`, in secure memory
    /// (powerauth-server `TemporaryKeyBehavior`: `deriveSecretKeyHmac(transportKey,
    /// applicationSecretBytes)`; mobile SDK `Session.cpp` `signDataWithHmacKey`).
    /// - Parameters:
    ///   - transportKey: the activation's 16-byte transport key.
    ///   - applicationSecret: the application secret, Base64 of 16 bytes.
    /// - Returns: the 16-byte key.
    /// - Throws: ``ProtocolError/malformedBase64(field:)``, ``ProtocolError/invalidLength(field:expected:actual:)``,
    ///   ``ProtocolError/core(_:)``.
    public static func activationSigningKey(transportKey: SecureBytes, applicationSecret: String) throws(ProtocolError)
        -> SecureBytes
    {
        let bytes = try Base64.decode(
            applicationSecret, field: "applicationSecret", count: ProtocolConstants.applicationKeyByteCount)
        return try lift { () throws(SecureCoreError) -> SecureBytes in
            let full = try HMACSHA256.deriveKey(label: bytes, from: [transportKey])
            defer { full.destroy() }
            return try full.folded()
        }
    }

    // MARK: - Request (HS256)

    /// Builds the signed request JWT.
    /// - Parameters:
    ///   - claims: the claims.
    ///   - key: the HS256 key (``applicationSigningKey(applicationSecret:)`` or ``activationSigningKey(transportKey:applicationSecret:)``).
    /// - Returns: the compact JWS.
    /// - Throws: ``JWTError/malformed(reason:)`` if the claims cannot be encoded, ``JWTError/core(_:)``.
    public static func signRequest(_ claims: TemporaryKeyRequestClaims, key: SecureBytes) throws(JWTError) -> String {
        let input = CompactJWS.signingInput(header: Array(requestHeader.utf8), payload: try encode(claims))
        let tag = try jwtLift { () throws(SecureCoreError) in try HMACSHA256.authenticate(Array(input.utf8), key: key) }
        return input + "." + Base64URL.encode(tag)
    }

    /// Reads a request JWT's claims without verifying it, so the server can pick the key
    /// the claims' scope calls for; then ``verifyRequest(_:key:)``.
    /// - Parameter token: the compact JWS.
    /// - Returns: the claims.
    /// - Throws: ``JWTError/malformed(reason:)``, ``JWTError/unsupportedAlgorithm(_:)``.
    public static func requestClaims(_ token: String) throws(JWTError) -> TemporaryKeyRequestClaims {
        let jws = try CompactJWS(token)
        guard jws.algorithm == "HS256" else { throw .unsupportedAlgorithm(ProtocolError.echo(jws.algorithm)) }
        return try decode(TemporaryKeyRequestClaims.self, jws.payload)
    }

    /// Verifies a request JWT's HS256 signature (constant-time comparison) and returns its claims.
    /// - Parameters:
    ///   - token: the compact JWS.
    ///   - key: the HS256 key of the scope the claims name.
    /// - Returns: the claims.
    /// - Throws: ``JWTError/malformed(reason:)``, ``JWTError/unsupportedAlgorithm(_:)``,
    ///   ``JWTError/signatureInvalid``, ``JWTError/core(_:)``.
    public static func verifyRequest(_ token: String, key: SecureBytes) throws(JWTError) -> TemporaryKeyRequestClaims {
        let jws = try CompactJWS(token)
        guard jws.algorithm == "HS256" else { throw .unsupportedAlgorithm(ProtocolError.echo(jws.algorithm)) }
        let tag = try jwtLift { () throws(SecureCoreError) in try HMACSHA256.authenticate(jws.signingInput, key: key) }
        guard ConstantTime.isEqual(tag, jws.signature) else { throw .signatureInvalid }
        return try decode(TemporaryKeyRequestClaims.self, jws.payload)
    }

    // MARK: - Response (ES256)

    /// Builds the signed response JWT (ECDSA-SHA256, JOSE `r ‖ s`).
    /// - Parameters:
    ///   - claims: the claims.
    ///   - privateKey: the master server private key or the activation's server private key.
    /// - Returns: the compact JWS.
    /// - Throws: ``JWTError/malformed(reason:)``, ``JWTError/core(_:)`` (an invalid key is
    ///   `SecureCoreError.invalidKey`).
    public static func signResponse(_ claims: TemporaryKeyResponseClaims, privateKey: SecureBytes) throws(JWTError)
        -> String
    {
        let input = CompactJWS.signingInput(header: Array(responseHeader.utf8), payload: try encode(claims))
        let der = try jwtLift { () throws(SecureCoreError) in try P256.sign(Array(input.utf8), privateKey: privateKey) }
        guard let jose = ECDSASignatureFormat.jose(fromDER: der) else { throw .core(.internalFailure(status: -1)) }
        return input + "." + Base64URL.encode(jose)
    }

    /// Verifies a response JWT as the mobile SDK does (`GetTemporaryKeyTask.processResponseJwt`
    /// and `validateResponse`): header `ES256`/`JWT`, the signature with `publicKey`, the
    /// challenge, application key and (activation scope) activation identifier echoed; and,
    /// beyond the SDK, an `exp_ms` after `now` and a public key that is a valid P-256 point.
    /// - Parameters:
    ///   - token: the compact JWS.
    ///   - publicKey: the master server public key or the activation's server public key.
    ///   - request: the claims that were sent.
    ///   - now: the current time.
    /// - Returns: the claims.
    /// - Throws: ``JWTError``.
    public static func verifyResponse(
        _ token: String, publicKey: [UInt8], request: TemporaryKeyRequestClaims, now: Date
    ) throws(JWTError) -> TemporaryKeyResponseClaims {
        let jws = try CompactJWS(token)
        guard jws.type == "JWT" else { throw .unsupportedAlgorithm(ProtocolError.echo(jws.type ?? "")) }
        guard jws.algorithm == "ES256" else { throw .unsupportedAlgorithm(ProtocolError.echo(jws.algorithm)) }
        guard let der = ECDSASignatureFormat.der(fromJOSE: jws.signature) else { throw .signatureInvalid }
        let valid = try jwtLift { () throws(SecureCoreError) in
            try P256.verify(signature: der, message: jws.signingInput, publicKey: publicKey)
        }
        guard valid else { throw .signatureInvalid }
        let claims = try decode(TemporaryKeyResponseClaims.self, jws.payload)
        guard claims.challenge == request.challenge else { throw .claimMismatch(claim: "challenge") }
        guard claims.applicationKey == request.applicationKey else { throw .claimMismatch(claim: "applicationKey") }
        if request.activationId != nil, claims.activationId != request.activationId {
            throw .claimMismatch(claim: "activationId")
        }
        guard let key = Base64.decode(claims.publicKey), (try? P256.validate(publicKey: key)) != nil else {
            throw .malformed(reason: "publicKey")
        }
        guard claims.expiresAtMilliseconds > Int64((now.timeIntervalSince1970 * 1000).rounded(.down)) else {
            throw .expired
        }
        return claims
    }

    // MARK: - JSON

    private static func encode(_ value: some Encodable) throws(JWTError) -> [UInt8] {
        do throws(ProtocolError) {
            return try WireCoding.encode(value)
        } catch {
            throw .malformed(reason: "claims could not be encoded")
        }
    }

    private static func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) throws(JWTError) -> T {
        do {
            return try JSONDecoder().decode(type, from: Data(bytes))
        } catch {
            throw .malformed(reason: "payload claims")
        }
    }
}
