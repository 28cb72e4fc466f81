import SecureCore

/// Errors raised by the PIN entry model (controller, keypad, length policy).
/// None of them carries secret content. The terminal driver and the
/// strength rules have their own error types (`PinEntryTerminalError` in
/// PinEntryTerminal, `PinStrengthError` in PinStrength).
public enum PinEntryError: Error, Equatable, Sendable {
    /// Secure memory failed underneath (creating, editing or revealing a
    /// password); the wrapped SecureCore error says why.
    case secureMemory(SecureCoreError)
    /// The random source could not deliver bytes (the operating system's
    /// CSPRNG failed, or an injected source ran dry).
    case randomSourceFailed
    /// A text-field edit whose range lies outside the current password.
    case editOutOfRange(location: Int, length: Int, passwordLength: Int)
    /// A length policy outside `1 ... PinLengthPolicy.absoluteMaximum`, or
    /// with the minimum above the maximum.
    case invalidLengthPolicy(minimum: Int, maximum: Int)
}

/// Why an entry ended without a PIN. Reported to the flow that asked for it,
/// which treats every case as a cancellation. The controller reports the
/// user's and the application's reasons; PinEntryTerminal's pad reports the
/// terminal's (keys, signals, a closed terminal) with the same type.
public enum CancellationReason: String, Equatable, Sendable {
    /// The user cancelled: delete on an empty PIN, or Escape on a terminal.
    case userCancelled
    /// Ctrl-C on a terminal, or `SIGINT`/`SIGTERM`.
    case interrupted
    /// Ctrl-Z on a terminal, or `SIGTSTP`: the entry is dropped rather than
    /// left waiting in a suspended process.
    case suspended
    /// The terminal went away: `SIGHUP`, end of file, or a read error.
    case terminalClosed
    /// The application resigned active while no biometric prompt was showing.
    case resignedActive
    /// The application entered the background.
    case enteredBackground
    /// The server reported no remaining attempts (the activation is blocked).
    case blocked
}

extension PinEntryError {
    /// Wraps a SecureCore error (the one place that mapping happens).
    init(_ error: SecureCoreError) { self = .secureMemory(error) }
}

extension PinEntryError: CustomStringConvertible {
    /// What went wrong, in a sentence fragment a person can act on; it never names the PIN.
    public var description: String {
        switch self {
        case .secureMemory(let error): "secure memory failed: \(error)"
        case .randomSourceFailed: "the system random source failed"
        case .editOutOfRange(let location, let length, let passwordLength):
            "an edit of \(length) characters at \(location) lies outside the password of \(passwordLength) characters"
        case .invalidLengthPolicy(let minimum, let maximum):
            "a length policy of \(minimum) to \(maximum) characters is not valid: the minimum must be at least 1 "
                + "and at most the maximum, the maximum at most \(PinLengthPolicy.absoluteMaximum)"
        }
    }
}
