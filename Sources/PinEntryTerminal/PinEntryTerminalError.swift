import PinEntry
import PinStrength
import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Errors raised by the terminal driver: the terminal pad, the descriptor
/// reader and ``PinCheck``. None of them carries secret content: a rejected
/// character, for instance, is reported without its value.
public enum PinEntryTerminalError: Error, Equatable, Sendable {
    /// The entry was cancelled by the user or the system; nothing was kept.
    case cancelled(CancellationReason)
    /// A character the format does not allow, for example a letter in a
    /// numeric PIN. The input was not stored.
    case characterNotAllowed
    /// The input is longer than the format allows; the input was not stored.
    case tooLong(maximum: Int)
    /// The input is shorter than the format requires.
    case tooShort(minimum: Int)
    /// Bytes that are not well-formed UTF-8 (from a descriptor); nothing was kept.
    case malformedInput
    /// The descriptor given for terminal entry is not a terminal.
    case notATerminal
    /// A terminal call (`tcgetattr`, `tcsetattr`, `poll`, signal set-up)
    /// failed with this `errno`.
    case terminalFailure(errno: Int32)
    /// Reading a descriptor failed with this `errno`; nothing was kept.
    case readFailed(errno: Int32)
    /// Secure memory failed under the descriptor reader's password; the
    /// wrapped SecureCore error says why.
    case secureMemory(SecureCoreError)
    /// The entry model under the terminal pad failed: its password could not
    /// be created or edited (`PinEntry.PinEntryError.secureMemory(_:)`), or its
    /// keypad could not be shuffled (`PinEntry.PinEntryError.randomSourceFailed`).
    case entry(PinEntryError)
    /// The strength rules failed while ``PinCheck`` judged what was read.
    case strength(PinStrengthError)
}

extension PinEntryTerminalError {
    /// Wraps a SecureCore error (the one place that mapping happens).
    init(_ error: SecureCoreError) { self = .secureMemory(error) }
}

extension PinEntryTerminalError: CustomStringConvertible {
    /// What went wrong, in a sentence fragment a person can act on; it never names the PIN.
    public var description: String {
        switch self {
        case .cancelled(let reason): "\(Self.phrase(reason)); nothing was entered"
        case .characterNotAllowed: "a character the PIN format does not allow; it was not stored"
        case .tooLong(let maximum): "the PIN is longer than \(maximum) characters; it was not stored"
        case .tooShort(let minimum): "the PIN is shorter than \(minimum) characters"
        case .malformedInput: "the input is not valid UTF-8; nothing was kept"
        case .notATerminal: "no terminal to ask for the PIN: the descriptor is not a terminal"
        case .terminalFailure(let code): "could not set up the terminal: \(String(cString: strerror(code)))"
        case .readFailed(let code): "could not read the PIN: \(String(cString: strerror(code))); nothing was kept"
        case .secureMemory(let error): "secure memory failed: \(error)"
        case .entry(let error): "the PIN entry failed: \(error)"
        case .strength(let error): "the strength check failed: \(error)"
        }
    }

    /// Why an entry was cancelled, in words.
    private static func phrase(_ reason: CancellationReason) -> String {
        switch reason {
        case .userCancelled: "cancelled by the user"
        case .interrupted: "interrupted"
        case .suspended: "suspended: the entry was dropped rather than left waiting"
        case .terminalClosed: "the terminal went away"
        case .resignedActive: "cancelled: the application resigned active"
        case .enteredBackground: "cancelled: the application entered the background"
        case .blocked: "cancelled: the activation is blocked"
        }
    }
}
