import SecureCore

/// Errors raised by the strength rules. None of them carries secret content:
/// a rejected character, for instance, is reported without its value.
public enum PinStrengthError: Error, Equatable, Sendable {
    /// Secure memory failed underneath (the short-lived copy of a PIN still
    /// being edited); the wrapped SecureCore error says why.
    case secureMemory(SecureCoreError)
    /// The numeric meter was given something other than the ASCII digits 0–9.
    case characterNotAllowed
    /// The numeric meter was given an empty PIN.
    case empty
}

extension PinStrengthError {
    /// Wraps a SecureCore error (the one place that mapping happens).
    init(_ error: SecureCoreError) { self = .secureMemory(error) }
}

extension PinStrengthError: CustomStringConvertible {
    /// What went wrong, in a sentence fragment a person can act on; it never names the PIN.
    public var description: String {
        switch self {
        case .secureMemory(let error): "secure memory failed: \(error)"
        case .characterNotAllowed: "the PIN has a character other than the digits 0-9"
        case .empty: "the PIN is empty"
        }
    }
}
