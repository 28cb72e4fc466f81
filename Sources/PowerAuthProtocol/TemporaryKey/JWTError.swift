import SecureCore

/// Errors of the temporary-key JWTs (``TemporaryKeyJWT``): compact JWS parsing,
/// HS256 request and ES256 response checks. None carries a key or a signature;
/// a claim or field is named, never its value. ``ProtocolError/jwt(_:)`` carries
/// it where protocol code reports one error type.
public enum JWTError: Error, Equatable, Sendable {
    /// The token is not three base64url segments (no padding) with JSON header
    /// and payload objects, or a required claim is absent or of the wrong type;
    /// `reason` names the part.
    case malformed(reason: String)
    /// The header names an algorithm or type other than the one expected
    /// (`HS256`/`JWT` for a request, `ES256`/`JWT` for a response).
    case unsupportedAlgorithm(String)
    /// The signature does not verify (or has the wrong size).
    case signatureInvalid
    /// A response claim does not echo the request (`challenge`,
    /// `applicationKey`, `activationId`), or a request names a scope the
    /// verifier does not serve; `claim` names it.
    case claimMismatch(claim: String)
    /// The key's `exp_ms` is not after the current time.
    case expired
    /// A failure of the secure core (memory, randomness, a destroyed key).
    case core(SecureCoreError)
}

/// Runs a secure-core step and maps its error into ``JWTError`` (the one place).
/// - Parameter body: the step.
/// - Returns: what `body` returns.
/// - Throws: ``JWTError/core(_:)``.
func jwtLift<R>(_ body: () throws(SecureCoreError) -> R) throws(JWTError) -> R {
    do throws(SecureCoreError) {
        return try body()
    } catch {
        throw .core(error)
    }
}

extension JWTError: CustomStringConvertible {
    /// What went wrong, in a sentence fragment a person can act on; it never names a key or a signature.
    public var description: String {
        switch self {
        case .malformed(let reason): "the JWT is malformed: \(reason)"
        case .unsupportedAlgorithm(let name): "the JWT names the algorithm or type \(name), not the one expected"
        case .signatureInvalid: "the JWT's signature does not verify"
        case .claimMismatch(let claim): "the JWT's claim \(claim) does not match the request"
        case .expired: "the temporary key has expired"
        case .core(let error): "secure memory or cryptography failed: \(error)"
        }
    }
}
