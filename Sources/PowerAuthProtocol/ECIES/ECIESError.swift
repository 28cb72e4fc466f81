import SecureCore

/// Errors of PowerAuth's ECIES (``ECIESEncryptor``, ``ECIESDecryptor``,
/// ``ECIESEnvelope``). None carries secret content: a field is named, never
/// its value. ``ProtocolError/ecies(_:)`` carries it where protocol code
/// reports one error type.
public enum ECIESError: Error, Equatable, Sendable {
    /// The MAC does not verify (wrong key, shared info, nonce, timestamp or
    /// associated data, or altered data), or a verified message has invalid
    /// padding. Nothing is decrypted.
    case authenticationFailed
    /// A key that is not a valid P-256 key: `field` names which one
    /// (`serverPublicKey`, `ephemeralPublicKey`, `privateKey`).
    case invalidKey(field: String)
    /// A value the scope or version requires is absent from the
    /// configuration: `activationId` or `transportKey` (activation scope),
    /// `temporaryKeyId` (3.3).
    case missingParameter(String)
    /// A cryptogram field is present where the version forbids it, absent
    /// where it requires it, or of the wrong size; `field` names it.
    case malformedCryptogram(field: String)
    /// The request names a temporary key other than the one this decryptor
    /// was configured with (3.3).
    case temporaryKeyMismatch
    /// The envelope key has served its one response already (or was destroyed).
    case envelopeUsed
    /// A failure of the secure core (memory, randomness, a destroyed key).
    case core(SecureCoreError)
}

/// Runs a secure-core step and maps its error into ``ECIESError`` (the one place).
/// - Parameters:
///   - keyField: the name an invalid key is reported under.
///   - body: the step.
/// - Returns: what `body` returns.
/// - Throws: ``ECIESError``.
func eciesLift<R>(keyField: String, _ body: () throws(SecureCoreError) -> R) throws(ECIESError) -> R {
    do throws(SecureCoreError) {
        return try body()
    } catch {
        switch error {
        case .invalidKey: throw .invalidKey(field: keyField)
        case .authenticationFailed: throw .authenticationFailed
        case .destroyed: throw .envelopeUsed
        default: throw .core(error)
        }
    }
}

extension ECIESError: CustomStringConvertible {
    /// What went wrong, in a sentence fragment a person can act on; it never names a key.
    public var description: String {
        switch self {
        case .authenticationFailed:
            "the encrypted message does not verify: a wrong key or parameter, or altered data; nothing was decrypted"
        case .invalidKey(let field): "the key \(field) is not a valid P-256 key"
        case .missingParameter(let name): "the encryption configuration lacks \(name)"
        case .malformedCryptogram(let field):
            "the cryptogram's \(field) is missing, not allowed in this version, or of the wrong size"
        case .temporaryKeyMismatch: "the request names another temporary key than the one configured"
        case .envelopeUsed: "the envelope key has served its one response already"
        case .core(let error): "secure memory or cryptography failed: \(error)"
        }
    }
}
