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
    init(status: Int32, index: Int = 0, length: Int = 0) {
        switch status {
        case SPC_E_INIT: self = .initializationFailed
        case SPC_E_NOMEM: self = .outOfMemory
        case SPC_E_RANGE: self = .indexOutOfRange(index: index, length: length)
        case SPC_E_CODEPOINT: self = .invalidCodePoint
        case SPC_E_TOO_LONG: self = .tooLong(maximum: Int(SPC_PASSWORD_MAX))
        case SPC_E_UTF8: self = .malformedUTF8
        case SPC_E_ARGUMENT: self = .invalidSize(length)
        case SPC_E_KEY: self = .invalidKey
        case SPC_E_CRYPTO: self = .internalFailure(status: Int(status))
        default: self = .internalFailure(status: Int(status))
        }
    }
}

/// Runs a C call and throws its status as a ``SecureCoreError``.
@inline(__always)
func check(_ status: Int32, index: Int = 0, length: Int = 0) throws(SecureCoreError) {
    if status != SPC_OK { throw SecureCoreError(status: status, index: index, length: length) }
}

/// A C object pointer stored inside a `Mutex`. Only the owning Swift object
/// touches it, and only while holding that mutex; this is what makes the
/// `@unchecked Sendable` true.
struct LockedHandle: @unchecked Sendable {
    var pointer: OpaquePointer?
}
