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
