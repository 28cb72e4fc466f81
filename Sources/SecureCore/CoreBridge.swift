// The one place where SecureCore talks to the C core.
internal import CSecureCore

/// Process-wide initialisation of the C core (libsodium and the secure-page
/// pool), run once, lazily and thread-safely, by the first secure object.
enum CoreRuntime {
    /// Whether `spc_init()` succeeded.
    static let isReady: Bool = spc_init() == SPC_OK

    /// Throws ``SecureCoreError/initializationFailed`` when the core cannot start.
    static func ensureReady() throws(SecureCoreError) {
        guard isReady else { throw .initializationFailed }
    }
}

extension SecureCoreError {
    /// Maps a C status code to the Swift error. The only place C statuses are read.
    /// - Parameters:
    ///   - index: the index of a range error, or the minimum of a salt error.
    ///   - length: the object's length, the size asked for, or the output length.
    ///   - argument: the error an `SPC_E_ARGUMENT` stands for in this call.
    init(status: spc_status, index: Int = 0, length: Int = 0, argument: SecureCoreError? = nil) {
        switch status {
        case SPC_E_INIT: self = .initializationFailed
        case SPC_E_NOMEM: self = .outOfMemory
        case SPC_E_RANGE: self = .indexOutOfRange(index: index, length: length)
        case SPC_E_CODEPOINT: self = .invalidCodePoint
        case SPC_E_TOO_LONG: self = .tooLong(maximum: Int(SPC_PASSWORD_MAX))
        case SPC_E_UTF8: self = .malformedUTF8
        case SPC_E_ARGUMENT: self = argument ?? .invalidSize(length)
        case SPC_E_KDF_ITERATIONS: self = .invalidIterations
        case SPC_E_KDF_MEMORY: self = .invalidMemory
        case SPC_E_KDF_PARALLELISM: self = .invalidParallelism
        case SPC_E_KDF_SALT: self = .saltTooShort(minimum: index)
        case SPC_E_KDF_OUTPUT: self = .invalidOutputLength(length)
        case SPC_E_KDF_CEILING: self = .memoryAboveCeiling
        case SPC_E_KDF_FAILED: self = .keyDerivationFailed
        case SPC_E_AEAD_AUTH: self = .authenticationFailed
        case SPC_E_UNSUPPORTED: self = .unsupported
        case SPC_E_KEY: self = .invalidKey
        case SPC_E_FORKED: self = .inheritedAcrossFork
        case SPC_E_CRYPTO: self = .internalFailure(status: Int(status.rawValue))
        default: self = .internalFailure(status: Int(status.rawValue))
        }
    }
}

/// Runs a C call and throws its status as a ``SecureCoreError``.
@inline(__always)
func check(
    _ status: spc_status, index: Int = 0, length: Int = 0, argument: SecureCoreError? = nil
) throws(SecureCoreError) {
    if status != SPC_OK { throw SecureCoreError(status: status, index: index, length: length, argument: argument) }
}

/// A C object pointer stored inside a `Mutex`. Only the owning Swift object
/// touches it, and only while holding that mutex; this is what makes the
/// `@unchecked Sendable` true.
struct LockedHandle: @unchecked Sendable {
    var pointer: OpaquePointer?
}
