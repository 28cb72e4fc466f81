import PinEntry
import PinStrength
import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where ``PinCheck`` reads the PIN from.
public enum PinSource: Sendable {
    /// The terminal pad on standard input, drawing on standard error.
    case terminal(TerminalPinPad.Options)
    /// A descriptor, one line (`--pin-fd N`).
    case descriptor(Int32)
}

/// What to check and how to judge it.
public struct PinCheckRequest: Sendable {
    /// The accepted characters and length.
    public var format: PinFormat
    /// Where the PIN comes from.
    public var source: PinSource
    /// The per-length warning policy for numeric PINs (warn or reject).
    public var policy: PinWarningPolicy
    /// For alphanumeric passwords: ratings below this are weak.
    public var minimumPasswordRating: PasswordStrengthEstimate.Rating
    /// What day it is, for the date rule.
    public var today: any TodayProvider

    /// Creates a request.
    /// - Parameters:
    ///   - format: the accepted characters and length.
    ///   - source: terminal or descriptor.
    ///   - policy: the warning policy (default: Wultra rules, warn).
    ///   - minimumPasswordRating: for passwords (default `PinStrength.PasswordStrengthEstimate.Rating.fair`).
    ///   - today: the day (default: system clock).
    public init(
        format: PinFormat, source: PinSource, policy: PinWarningPolicy = PinWarningPolicy(),
        minimumPasswordRating: PasswordStrengthEstimate.Rating = .fair,
        today: any TodayProvider = SystemToday()
    ) {
        self.format = format
        self.source = source
        self.policy = policy
        self.minimumPasswordRating = minimumPasswordRating
        self.today = today
    }
}

/// The result of a check: the length, the weaknesses by name, and the
/// verdict. It holds nothing of the PIN itself.
public struct PinCheckOutcome: Equatable, Sendable {
    /// The verdict.
    public enum Verdict: String, Equatable, Sendable {
        /// Nothing relevant was found.
        case acceptable
        /// Weak; the app may let the user keep it.
        case warn
        /// Weak; the app refuses it.
        case reject
    }

    /// The checked format.
    public let format: PinFormat
    /// Number of characters.
    public let length: Int
    /// Every weakness (PIN) or penalty (password) found, by stable name.
    public let flags: [String]
    /// The names that decided the verdict.
    public let relevantFlags: [String]
    /// The verdict.
    public let verdict: Verdict
    /// For passwords: the estimated entropy in bits.
    public let estimatedBits: Double?
    /// For passwords: the rating.
    public let rating: PasswordStrengthEstimate.Rating?

    /// The process exit status for this verdict: 0 acceptable, 3 warn, 4 reject.
    public var exitStatus: Int32 {
        switch verdict {
        case .acceptable: 0
        case .warn: 3
        case .reject: 4
        }
    }

    /// Human-readable lines.
    public var text: String {
        var lines = ["length: \(length)", "flags: " + (flags.isEmpty ? "none" : flags.joined(separator: ", "))]
        if let estimatedBits, let rating {
            lines.append("estimate: ~\(Self.oneDecimal(estimatedBits)) bits (\(rating.rawValue))")
        }
        lines.append(
            "verdict: \(verdict.rawValue)"
                + (relevantFlags.isEmpty ? "" : " (" + relevantFlags.joined(separator: ", ") + ")"))
        return lines.joined(separator: "\n")
    }

    /// One JSON object (stable key order, snake_case keys as in every securepin JSON).
    public var json: String {
        var fields = [
            "\"format\":\"\(format.isNumeric ? "numeric" : "alphanumeric")\"",
            "\"length\":\(length)",
            "\"flags\":[" + flags.map { "\"\($0)\"" }.joined(separator: ",") + "]",
            "\"relevant_flags\":[" + relevantFlags.map { "\"\($0)\"" }.joined(separator: ",") + "]",
        ]
        if let estimatedBits, let rating {
            fields.append("\"estimated_bits\":\(Self.oneDecimal(estimatedBits))")
            fields.append("\"rating\":\"\(rating.rawValue)\"")
        }
        fields.append("\"verdict\":\"\(verdict.rawValue)\"")
        return "{" + fields.joined(separator: ",") + "}"
    }

    private static func oneDecimal(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(abs(tenths % 10))"
    }
}

/// Reads a PIN (terminal pad or descriptor), measures it and judges it: the
/// code path behind `pinpad-demo` and `securepin pin check`. The PIN exists
/// only in secure memory and is destroyed before this returns.
public enum PinCheck {
    /// Exit status for a cancelled entry (as for `SIGINT`).
    public static let cancelledExitStatus: Int32 = 130
    /// Exit status for bad input or a failure.
    public static let failureExitStatus: Int32 = 1

    /// Runs a check.
    /// - Parameter request: what to read and how to judge it.
    /// - Returns: the outcome.
    /// - Throws: what ``TerminalPinPad/readPassword()`` or
    ///   ``DescriptorPasswordReader/readPassword()`` throws, and the meters'
    ///   errors as ``PinEntryTerminalError/strength(_:)``.
    public static func run(_ request: PinCheckRequest) throws(PinEntryTerminalError) -> PinCheckOutcome {
        let password: Password
        switch request.source {
        case .terminal(let options):
            password = try TerminalPinPad(format: request.format, options: options).readPassword()
        case .descriptor(let descriptor):
            password = try DescriptorPasswordReader(descriptor: descriptor, format: request.format).readPassword()
        }
        defer { password.destroy() }
        do { return try judge(password, request: request) } catch { throw .strength(error) }
    }

    /// Measures and judges a password already read.
    /// - Parameters:
    ///   - password: the PIN or password; only read.
    ///   - request: the format and policies (the source is not used).
    /// - Returns: the outcome.
    /// - Throws: the meters' errors.
    public static func judge(_ password: Password, request: PinCheckRequest) throws(PinStrengthError)
        -> PinCheckOutcome
    {
        if request.format.isNumeric {
            let report = try PinStrengthMeter(today: request.today).evaluate(password)
            let verdict = request.policy.verdict(for: report)
            let relevant: PinWeaknesses
            let outcome: PinCheckOutcome.Verdict
            switch verdict {
            case .acceptable: (relevant, outcome) = ([], .acceptable)
            case .warn(let flags): (relevant, outcome) = (flags, .warn)
            case .reject(let flags): (relevant, outcome) = (flags, .reject)
            }
            return PinCheckOutcome(
                format: request.format, length: report.length, flags: report.weaknesses.names,
                relevantFlags: relevant.names, verdict: outcome, estimatedBits: nil, rating: nil)
        }
        let estimate = PasswordStrengthEstimator().estimate(password)
        let weak = estimate.rating < request.minimumPasswordRating
        let outcome: PinCheckOutcome.Verdict = weak ? (request.policy.action == .warn ? .warn : .reject) : .acceptable
        return PinCheckOutcome(
            format: request.format, length: estimate.length, flags: estimate.penalties.names,
            relevantFlags: weak ? estimate.penalties.names : [], verdict: outcome,
            estimatedBits: estimate.estimatedBits, rating: estimate.rating)
    }

    /// The exit status for an error.
    /// - Parameter error: what ``run(_:)`` threw.
    /// - Returns: ``cancelledExitStatus`` for a cancellation, else ``failureExitStatus``.
    public static func exitStatus(for error: PinEntryTerminalError) -> Int32 {
        if case .cancelled = error { return cancelledExitStatus }
        return failureExitStatus
    }

    /// A one-line message for an error, without any secret.
    /// - Parameter error: what ``run(_:)`` threw.
    /// - Returns: the message.
    public static func message(for error: PinEntryTerminalError) -> String {
        switch error {
        case .cancelled: "cancelled; nothing was entered"
        case .characterNotAllowed, .strength(.characterNotAllowed):
            "rejected: a character the format does not allow; nothing was kept"
        case .tooLong(let maximum): "rejected: longer than \(maximum) characters; nothing was kept"
        case .tooShort(let minimum): "rejected: shorter than \(minimum) characters; nothing was kept"
        case .strength(.empty): "rejected: nothing was entered"
        case .malformedInput: "rejected: input is not valid UTF-8; nothing was kept"
        case .notATerminal: "standard input is not a terminal (use --pin-fd N)"
        case .readFailed(let code): "could not read the PIN's descriptor: \(describe(errno: code))"
        case .terminalFailure(let code): "could not set up the terminal: \(describe(errno: code))"
        case .secureMemory, .entry(.secureMemory), .strength(.secureMemory):
            "secure memory failed (securepin doctor tells what this machine allows)"
        case .entry(.randomSourceFailed): "the system random source failed"
        case .entry(.editOutOfRange), .entry(.invalidLengthPolicy): "invalid request to the PIN pad"
        }
    }

    /// The system's text for an `errno` value.
    static func describe(errno code: Int32) -> String { String(cString: strerror(code)) }
}
