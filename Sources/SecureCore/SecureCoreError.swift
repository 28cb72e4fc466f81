/// Errors raised by SecureCore. None of them carries secret content: a
/// rejected code point, for instance, is reported without its value.
public enum SecureCoreError: Error, Equatable, Sendable {
    /// The object was destroyed; create a new one.
    case destroyed
    /// An index outside `0 ... length` (insert) or `0 ..< length` (remove).
    case indexOutOfRange(index: Int, length: Int)
    /// A UTF-16 surrogate or a value above U+10FFFF was given as a character.
    case invalidCodePoint
    /// The password would exceed the maximum number of code points.
    case tooLong(maximum: Int)
    /// Bytes given as UTF-8 are not well-formed UTF-8.
    case malformedUTF8
    /// The operating system refused memory.
    case outOfMemory
    /// A size outside what the object accepts (for example zero bytes).
    case invalidSize(Int)
    /// The two objects have different sizes where equal sizes are required.
    case sizeMismatch(expected: Int, actual: Int)
    /// Argon2 iterations below 1 or above the ceiling in force.
    case invalidIterations
    /// Argon2 memory below 8 KiB per lane.
    case invalidMemory
    /// Argon2 parallelism outside 1 ... 2^24-1.
    case invalidParallelism
    /// A salt shorter than the minimum (16 bytes for Argon2id, 1 for PBKDF2).
    case saltTooShort(minimum: Int)
    /// A derived-key length outside 16 ... 64 bytes.
    case invalidOutputLength(Int)
    /// Argon2 memory above the configured ceiling (a guard against parameters
    /// that would exhaust the machine).
    case memoryAboveCeiling
    /// The key derivation backend failed (typically: memory refused).
    case keyDerivationFailed
    /// Authenticated decryption failed: wrong key, nonce, associated data,
    /// or tampered ciphertext. Deliberately says nothing more.
    case authenticationFailed
    /// A key or nonce of the wrong size for the algorithm.
    case invalidKeyOrNonceSize
    /// The operation is not available here (for example AES-256-GCM on a CPU
    /// without AES-NI, or libsodium's Argon2id asked for p > 1).
    case unsupported
    /// A public or private key that is not a valid P-256 key: a point off
    /// the curve or of the wrong encoding length, a scalar outside 1 ... n-1.
    case invalidKey
    /// The C core could not initialise (libsodium found no entropy source).
    case initializationFailed
    /// The object was inherited from the parent across `fork()` without `exec`: its pages are
    /// absent or zeroed in this process, so it can only be destroyed (which touches nothing).
    case inheritedAcrossFork
    /// A status the C core documents but this layer did not expect.
    case internalFailure(status: Int)
}

extension SecureCoreError: CustomStringConvertible {
    /// What went wrong, in a sentence fragment a person can act on; it never names a secret.
    public var description: String {
        switch self {
        case .destroyed: "the object was destroyed; create a new one"
        case .indexOutOfRange(let index, let length): "index \(index) is out of range for a length of \(length)"
        case .invalidCodePoint: "the character is not a Unicode scalar: a UTF-16 surrogate or a value above U+10FFFF"
        case .tooLong(let maximum): "the password would be longer than \(maximum) characters"
        case .malformedUTF8: "the bytes are not well-formed UTF-8"
        case .outOfMemory: "out of memory: the operating system refused memory"
        case .invalidSize(let size): "a size of \(size) bytes is not accepted here"
        case .sizeMismatch(let expected, let actual): "the sizes differ: \(expected) bytes expected, \(actual) given"
        case .invalidIterations: "the Argon2 iterations must be at least 1 and at most the ceiling in force"
        case .invalidMemory: "the Argon2 memory must be at least 8 KiB per lane"
        case .invalidParallelism: "the Argon2 parallelism must be 1 ... 16777215"
        case .saltTooShort(let minimum): "the salt must be at least \(minimum) bytes"
        case .invalidOutputLength(let length): "a derived key of \(length) bytes is outside 16 ... 64 bytes"
        case .memoryAboveCeiling: "the Argon2 memory is above the configured ceiling"
        case .keyDerivationFailed: "the key derivation failed, typically because memory was refused"
        case .authenticationFailed:
            "authenticated decryption failed: a wrong key, nonce or associated data, or altered data"
        case .invalidKeyOrNonceSize: "a key or nonce has the wrong size for the algorithm"
        case .unsupported: "the operation is not available on this machine"
        case .invalidKey: "the key is not a valid P-256 key"
        case .initializationFailed: "the cryptographic library could not initialise: it found no entropy source"
        case .inheritedAcrossFork: "the object was inherited across fork without exec: it can only be destroyed"
        case .internalFailure(let status): "the secure core failed with the unexpected status \(status)"
        }
    }
}
