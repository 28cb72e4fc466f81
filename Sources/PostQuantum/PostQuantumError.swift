import SecureCore

/// How a post-quantum operation failed. Nothing here carries secret data.
public enum PostQuantumError: Error, Equatable, Sendable {
    /// A key, ciphertext, seed or signature of the wrong size for its parameter set, or a context
    /// string longer than 255 bytes.
    case invalidSize(expected: Int, actual: Int)
    /// An encapsulation key that fails FIPS 203's input check (a coefficient not below q), or a
    /// decapsulation key whose stored hash of the encapsulation key does not match.
    case invalidKey
    /// A SubjectPublicKeyInfo that is not the DER this parameter set's key travels in.
    case malformedPublicKeyInfo
    /// Secure memory could not be had (see `SecureCore.SecureCoreError`).
    case secureMemory(SecureCoreError)
}

extension PostQuantumError: CustomStringConvertible {
    /// What went wrong, in a sentence fragment a person can act on; it never names a key.
    public var description: String {
        switch self {
        case .invalidSize(let expected, let actual): "the input has \(actual) bytes, not the \(expected) it needs"
        case .invalidKey: "the key fails its FIPS 203 check"
        case .malformedPublicKeyInfo: "the SubjectPublicKeyInfo is not the DER this parameter set's key travels in"
        case .secureMemory(let error): "secure memory failed: \(error)"
        }
    }
}
