import Foundation
import PostQuantum
import SecureCore

/// The claims of a V4 temporary-key request (`POST /pa/v4/keystore/create`).
public struct V4TemporaryKeyRequestClaims: Codable, Equatable, Sendable {
    /// The application key.
    public let applicationKey: String
    /// The activation identifier (activation scope only).
    public let activationId: String?
    /// Base64 of 32 random bytes, echoed by the server.
    public let challenge: String
    /// The client's half of the shared-secret exchange.
    public let sharedSecretRequest: V4SharedSecretRequest
    /// Issued at, seconds since 1970. Not in upstream's request model (powerauth-crypto
    /// `GetTemporaryKeyRequest`: `applicationKey`, `activationId`, `challenge`,
    /// `sharedSecretRequest`), so never required; a server checks it only when present
    /// (``TemporaryKeyClaimTimes/check(issuedAt:expiresAt:nowSeconds:)``).
    public let iat: Int64?
    /// Expires at, seconds since 1970; optional as ``iat``.
    public let exp: Int64?

    /// Wraps the claims.
    /// - Parameters:
    ///   - applicationKey: the application key.
    ///   - activationId: the activation (activation scope), or `nil`.
    ///   - challenge: the challenge.
    ///   - sharedSecretRequest: the shared-secret request.
    ///   - iat: issued at (seconds), or `nil` (upstream's SDK sends none).
    ///   - exp: expiry (seconds), or `nil`.
    public init(
        applicationKey: String, activationId: String?, challenge: String, sharedSecretRequest: V4SharedSecretRequest,
        iat: Int64? = nil, exp: Int64? = nil
    ) {
        self.applicationKey = applicationKey
        self.activationId = activationId
        self.challenge = challenge
        self.sharedSecretRequest = sharedSecretRequest
        self.iat = iat
        self.exp = exp
    }
}

/// The claims of a V4 temporary-key response.
public struct V4TemporaryKeyResponseClaims: Codable, Equatable, Sendable {
    /// `TEMPORARY_KEY_ID` (`sub`).
    public let temporaryKeyId: String
    /// The echoed application key.
    public let applicationKey: String
    /// The echoed activation identifier (activation scope).
    public let activationId: String?
    /// The echoed challenge.
    public let challenge: String
    /// The server's half of the shared-secret exchange.
    public let sharedSecretResponse: V4SharedSecretResponse
    /// Issued at, seconds.
    public let issuedAt: Int64
    /// Expiry, seconds.
    public let expiresAt: Int64
    /// Issued at, milliseconds (the SDK's server clock).
    public let issuedAtMilliseconds: Int64
    /// Expiry, milliseconds.
    public let expiresAtMilliseconds: Int64

    enum CodingKeys: String, CodingKey {
        case temporaryKeyId = "sub"
        case applicationKey, activationId, challenge, sharedSecretResponse
        case issuedAt = "iat"
        case expiresAt = "exp"
        case issuedAtMilliseconds = "iat_ms"
        case expiresAtMilliseconds = "exp_ms"
    }

    /// Wraps the claims.
    /// - Parameters:
    ///   - temporaryKeyId: the key identifier.
    ///   - request: the request claims (application key, activation, challenge are echoed).
    ///   - sharedSecretResponse: the shared-secret response.
    ///   - issuedAtMilliseconds: issue time in milliseconds.
    ///   - expiresAtMilliseconds: expiry in milliseconds.
    public init(
        temporaryKeyId: String, request: V4TemporaryKeyRequestClaims, sharedSecretResponse: V4SharedSecretResponse,
        issuedAtMilliseconds: Int64, expiresAtMilliseconds: Int64
    ) {
        self.temporaryKeyId = temporaryKeyId
        self.applicationKey = request.applicationKey
        self.activationId = request.activationId
        self.challenge = request.challenge
        self.sharedSecretResponse = sharedSecretResponse
        self.issuedAt = issuedAtMilliseconds / 1000
        self.expiresAt = expiresAtMilliseconds / 1000
        self.issuedAtMilliseconds = issuedAtMilliseconds
        self.expiresAtMilliseconds = expiresAtMilliseconds
    }
}

/// A JWS in JSON general serialization with one `ES384` signature, the V4 temporary-key
/// response: `{"payload": B64URL(claims), "signatures": [{"protected": B64URL({"alg":"ES384"}),
/// "signature": B64URL(r ‖ s)}]}`. The hybrid suites add a second entry, `{"alg":"ML-DSA-65"}` or
/// `{"alg":"ML-DSA-87"}` over the same signing input; a hybrid response is valid only when both are.
struct V4GeneralJWS: Codable, Equatable {
    struct Signature: Codable, Equatable {
        let protected: String
        let signature: String
    }
    let payload: String
    let signatures: [Signature]
}

/// The JWTs of V4 temporary keys (`powerauth-v4.md` §6): the client's compact `HS384` request
/// keyed with `KEY_MAC_GET_APP_TEMP_KEY` (application scope) or `KEY_MAC_GET_ACT_TEMP_KEY`
/// (activation scope), and the server's `ES384` response in JWS JSON serialization, signed by
/// the master server key (application scope) or the activation's server key.
///
/// Verified where vectors exist: the ES384 JSON-serialized response signatures of upstream's
/// `TemporaryKeyTest` (their payloads are of an earlier design, so only the signatures). The
/// request MAC follows the specification: the SDK sends `HS384`; the servers accept `HS256`
/// (the June-2025 Java test vectors) and `HS384`.
public enum V4TemporaryKeyJWT {
    /// `{"alg":"HS384"}`.
    public static let requestHeader = #"{"alg":"HS384"}"#
    /// `{"alg":"ES384"}`.
    public static let responseHeader = #"{"alg":"ES384"}"#
    /// Random bytes in a challenge.
    public static let challengeByteCount = 32

    /// A fresh challenge: Base64 of 32 random bytes.
    /// - Returns: the challenge text.
    /// - Throws: ``JWTError/core(_:)``.
    public static func makeChallenge() throws(JWTError) -> String {
        Base64.encode(try jwtLift { () throws(SecureCoreError) in try SecureRandom.bytes(count: challengeByteCount) })
    }

    /// Builds the signed request (compact JWS, `HS384`).
    /// - Parameters:
    ///   - claims: the claims.
    ///   - key: `KEY_MAC_GET_APP_TEMP_KEY` or `KEY_MAC_GET_ACT_TEMP_KEY`.
    /// - Returns: the compact JWS.
    /// - Throws: ``JWTError/malformed(reason:)``, ``JWTError/core(_:)``.
    public static func signRequest(_ claims: V4TemporaryKeyRequestClaims, key: SecureBytes) throws(JWTError)
        -> String
    {
        let input = CompactJWS.signingInput(header: Array(requestHeader.utf8), payload: try encode(claims))
        let tag = try jwtLift { () throws(SecureCoreError) in try HMACSHA384.authenticate(Array(input.utf8), key: key) }
        return input + "." + Base64URL.encode(tag)
    }

    /// Reads a request's claims without verifying it (the server picks the key by scope).
    /// - Parameter token: the compact JWS.
    /// - Returns: the claims.
    /// - Throws: ``JWTError/malformed(reason:)``, ``JWTError/unsupportedAlgorithm(_:)``.
    public static func requestClaims(_ token: String) throws(JWTError) -> V4TemporaryKeyRequestClaims {
        let jws = try CompactJWS(token)
        guard ["HS256", "HS384"].contains(jws.algorithm) else {
            throw .unsupportedAlgorithm(ProtocolError.echo(jws.algorithm))
        }
        return try decode(V4TemporaryKeyRequestClaims.self, jws.payload)
    }

    /// Verifies a request's MAC (`HS256` or `HS384`, constant-time comparison) and returns its
    /// payload bytes.
    /// - Parameters:
    ///   - token: the compact JWS.
    ///   - key: the scope's MAC key.
    /// - Returns: the payload JSON.
    /// - Throws: ``JWTError/malformed(reason:)``, ``JWTError/unsupportedAlgorithm(_:)``,
    ///   ``JWTError/signatureInvalid``, ``JWTError/core(_:)``.
    public static func verifyRequestMAC(_ token: String, key: SecureBytes) throws(JWTError) -> [UInt8] {
        let jws = try CompactJWS(token)
        let tag: [UInt8]
        switch jws.algorithm {
        case "HS256":
            tag = try jwtLift { () throws(SecureCoreError) in try HMACSHA256.authenticate(jws.signingInput, key: key) }
        case "HS384":
            tag = try jwtLift { () throws(SecureCoreError) in try HMACSHA384.authenticate(jws.signingInput, key: key) }
        default:
            throw .unsupportedAlgorithm(ProtocolError.echo(jws.algorithm))
        }
        guard ConstantTime.isEqual(tag, jws.signature) else { throw .signatureInvalid }
        return jws.payload
    }

    /// Verifies a request and decodes its claims.
    /// - Parameters:
    ///   - token: the compact JWS.
    ///   - key: the scope's MAC key.
    /// - Returns: the claims.
    /// - Throws: as ``verifyRequestMAC(_:key:)``.
    public static func verifyRequest(_ token: String, key: SecureBytes) throws(JWTError) -> V4TemporaryKeyRequestClaims
    {
        try decode(V4TemporaryKeyRequestClaims.self, try verifyRequestMAC(token, key: key))
    }

    /// Builds the signed response: the JWS JSON serialization as text (the value of the
    /// response body's `jwt`).
    /// - Parameters:
    ///   - claims: the claims.
    ///   - keyPair: the master server key pair or the activation's server key pair (P-384).
    /// - Returns: the JWS JSON text.
    /// - Throws: ``JWTError/malformed(reason:)``, ``JWTError/core(_:)``.
    public static func signResponse(_ claims: V4TemporaryKeyResponseClaims, keyPair: ECP384KeyPair) throws(JWTError)
        -> String
    {
        try signResponse(claims, keyPair: keyPair, postQuantum: nil)
    }

    /// As ``signResponse(_:keyPair:)``, adding for a hybrid suite the ML-DSA signature of the master
    /// key's post-quantum half (`{"alg":"ML-DSA-65"}` or `{"alg":"ML-DSA-87"}`, hedged, empty context).
    /// - Parameters:
    ///   - claims: the claims.
    ///   - keyPair: the P-384 key pair.
    ///   - postQuantum: the ML-DSA key pair of a hybrid suite, or `nil`.
    /// - Returns: the JWS JSON text.
    /// - Throws: ``JWTError/malformed(reason:)``, ``JWTError/core(_:)``.
    public static func signResponse(
        _ claims: V4TemporaryKeyResponseClaims, keyPair: ECP384KeyPair, postQuantum: MLDSA.KeyPair?
    ) throws(JWTError) -> String {
        let protected = Base64URL.encode(Array(responseHeader.utf8))
        let payload = Base64URL.encode(try encode(claims))
        let signature: [UInt8]
        do throws(ProtocolError) {
            signature = try keyPair.sign(Array("\(protected).\(payload)".utf8))
        } catch {
            throw .core(.internalFailure(status: -1))
        }
        var signatures = [V4GeneralJWS.Signature(protected: protected, signature: Base64URL.encode(signature))]
        if let postQuantum {
            let header = Base64URL.encode(Array(#"{"alg":"\#(algorithmName(postQuantum.parameterSet))"}"#.utf8))
            let input = Array("\(header).\(payload)".utf8)
            do throws(PostQuantumError) {
                signatures.append(
                    V4GeneralJWS.Signature(protected: header, signature: Base64URL.encode(try postQuantum.sign(input))))
            } catch {
                throw .core(.internalFailure(status: -1))
            }
        }
        let jws = V4GeneralJWS(payload: payload, signatures: signatures)
        return String(decoding: try encode(jws), as: UTF8.self)
    }

    /// The JWS `alg` of an ML-DSA parameter set.
    public static func algorithmName(_ set: MLDSA.ParameterSet) -> String {
        set == .mldsa65 ? "ML-DSA-65" : "ML-DSA-87"
    }

    /// Verifies the `ES384` signature of a JWS JSON serialization and returns the payload
    /// bytes. Exactly one signature, `ES384`, is accepted (`EC_P384`).
    /// - Parameters:
    ///   - json: the JWS JSON text.
    ///   - publicKey: the signer's P-384 public key.
    /// - Returns: the payload JSON.
    /// - Throws: ``JWTError/malformed(reason:)``, ``JWTError/unsupportedAlgorithm(_:)``, ``JWTError/signatureInvalid``.
    public static func verifyResponseSignature(_ json: String, publicKey: [UInt8]) throws(JWTError) -> [UInt8] {
        try verifyResponseSignature(json, publicKey: publicKey, postQuantum: nil)
    }

    /// Verifies a response's signatures and returns the payload bytes. Without `postQuantum`
    /// exactly one `ES384` signature is accepted (`EC_P384`); with it exactly two, `ES384` and the
    /// parameter set's ML-DSA, and both must verify (a hybrid signature is only as strong as
    /// both halves together: neither alone is accepted).
    /// - Parameters:
    ///   - json: the JWS JSON text.
    ///   - publicKey: the signer's P-384 public key.
    ///   - postQuantum: the signer's raw ML-DSA public key and its parameter set, for a hybrid suite.
    /// - Returns: the payload JSON.
    /// - Throws: ``JWTError/malformed(reason:)``, ``JWTError/unsupportedAlgorithm(_:)``, ``JWTError/signatureInvalid``.
    public static func verifyResponseSignature(
        _ json: String, publicKey: [UInt8], postQuantum: (publicKey: [UInt8], parameterSet: MLDSA.ParameterSet)?
    ) throws(JWTError) -> [UInt8] {
        guard json.utf8.count <= 1 << 16 else { throw .malformed(reason: "the response is too long") }
        let jws = try decode(V4GeneralJWS.self, Array(json.utf8))
        let expected = ["ES384"] + (postQuantum.map { [algorithmName($0.parameterSet)] } ?? [])
        guard jws.signatures.count == expected.count else {
            throw .unsupportedAlgorithm("signatures: \(jws.signatures.count)")
        }
        guard let payload = Base64URL.decode(jws.payload) else { throw .malformed(reason: "payload encoding") }
        var seen: Set<String> = []
        for entry in jws.signatures {
            guard let header = Base64URL.decode(entry.protected),
                let object = try? JSONSerialization.jsonObject(with: Data(header)) as? [String: Any],
                let algorithm = object["alg"] as? String
            else { throw .malformed(reason: "protected header") }
            guard expected.contains(algorithm), seen.insert(algorithm).inserted else {
                throw .unsupportedAlgorithm(ProtocolError.echo(algorithm))
            }
            guard let signature = Base64URL.decode(entry.signature) else {
                throw .malformed(reason: "signature encoding")
            }
            let input = Array("\(entry.protected).\(jws.payload)".utf8)
            let valid: Bool
            if algorithm == "ES384" {
                do throws(ProtocolError) {
                    valid = try ECP384KeyPair.verify(signature: signature, message: input, publicKey: publicKey)
                } catch {
                    throw .signatureInvalid
                }
            } else if let postQuantum {
                valid = MLDSA.isValid(
                    signature: signature, of: input, publicKey: postQuantum.publicKey, postQuantum.parameterSet)
            } else {
                valid = false
            }
            guard valid else { throw .signatureInvalid }
        }
        return payload
    }

    /// Verifies a response as a client: the signature, the echoed challenge, application key and
    /// activation, and an expiry after `now`.
    /// - Parameters:
    ///   - json: the JWS JSON text.
    ///   - publicKey: the master server public key or the activation's server public key.
    ///   - request: the claims that were sent.
    ///   - now: the current time.
    /// - Returns: the claims.
    /// - Throws: ``JWTError``.
    public static func verifyResponse(
        _ json: String, publicKey: [UInt8], request: V4TemporaryKeyRequestClaims, now: Date
    ) throws(JWTError) -> V4TemporaryKeyResponseClaims {
        try verifyResponse(json, publicKey: publicKey, postQuantum: nil, request: request, now: now)
    }

    /// As ``verifyResponse(_:publicKey:request:now:)``, requiring for a hybrid suite the ML-DSA
    /// signature as well (``verifyResponseSignature(_:publicKey:postQuantum:)``).
    /// - Parameters:
    ///   - json: the JWS JSON text.
    ///   - publicKey: the master server public key or the activation's server public key (P-384).
    ///   - postQuantum: the matching raw ML-DSA public key and its parameter set, for a hybrid suite.
    ///   - request: the claims that were sent.
    ///   - now: the current time.
    /// - Returns: the claims.
    /// - Throws: ``JWTError``.
    public static func verifyResponse(
        _ json: String, publicKey: [UInt8], postQuantum: (publicKey: [UInt8], parameterSet: MLDSA.ParameterSet)?,
        request: V4TemporaryKeyRequestClaims, now: Date
    ) throws(JWTError) -> V4TemporaryKeyResponseClaims {
        let claims = try decode(
            V4TemporaryKeyResponseClaims.self,
            try verifyResponseSignature(json, publicKey: publicKey, postQuantum: postQuantum))
        guard claims.challenge == request.challenge else { throw .claimMismatch(claim: "challenge") }
        guard claims.applicationKey == request.applicationKey else { throw .claimMismatch(claim: "applicationKey") }
        guard claims.activationId == request.activationId else { throw .claimMismatch(claim: "activationId") }
        guard claims.expiresAtMilliseconds > Int64((now.timeIntervalSince1970 * 1000).rounded(.down)) else {
            throw .expired
        }
        return claims
    }

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
