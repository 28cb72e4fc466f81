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
    /// A public or private key that is not a valid P-256 key: a point off
    /// the curve or of the wrong encoding length, a scalar outside 1 ... n-1.
    case invalidKey
    /// The C core could not initialise (libsodium found no entropy source).
    case initializationFailed
    /// A status the C core documents but this layer did not expect.
    case internalFailure(status: Int)
}
