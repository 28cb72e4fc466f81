/// What an app does with a weak PIN: which weaknesses matter at which length
/// (modelled on the Wultra passphrase meter's warning rules), and whether a
/// weak PIN is only warned about or rejected. That choice is the app's.
public struct PinWarningPolicy: Equatable, Sendable {
    /// What happens when a relevant weakness is found.
    public enum Action: String, Equatable, Sendable, Codable {
        /// Tell the user and let them keep the PIN.
        case warn
        /// Refuse the PIN; the user must choose another.
        case reject
    }

    /// Warn or reject.
    public var action: Action
    /// Weaknesses that matter for PINs of up to 4 digits.
    public var upToFourDigits: PinWeaknesses
    /// Weaknesses that matter for 5 and 6 digits.
    public var fiveOrSixDigits: PinWeaknesses
    /// Weaknesses that matter from 7 digits on.
    public var sevenOrMoreDigits: PinWeaknesses

    /// Creates a policy; the defaults are the Wultra rules: frequently used
    /// or not unique up to 4 digits; also repeating for 5–6; also pattern
    /// from 7. A possible date alone never warns by default (too many PINs
    /// read as a date), but an app can add it.
    /// - Parameters:
    ///   - action: warn (default) or reject.
    ///   - upToFourDigits: weaknesses that matter up to 4 digits.
    ///   - fiveOrSixDigits: weaknesses that matter for 5–6 digits.
    ///   - sevenOrMoreDigits: weaknesses that matter from 7 digits.
    public init(
        action: Action = .warn,
        upToFourDigits: PinWeaknesses = [.frequentlyUsed, .notUnique],
        fiveOrSixDigits: PinWeaknesses = [.frequentlyUsed, .notUnique, .repeating],
        sevenOrMoreDigits: PinWeaknesses = [.frequentlyUsed, .notUnique, .repeating, .pattern]
    ) {
        self.action = action
        self.upToFourDigits = upToFourDigits
        self.fiveOrSixDigits = fiveOrSixDigits
        self.sevenOrMoreDigits = sevenOrMoreDigits
    }

    /// The weaknesses that matter for a PIN of this length.
    /// - Parameter length: number of digits.
    /// - Returns: the relevant weaknesses.
    public func relevantWeaknesses(forLength length: Int) -> PinWeaknesses {
        switch length {
        case ...4: upToFourDigits
        case 5...6: fiveOrSixDigits
        default: sevenOrMoreDigits
        }
    }

    /// The verdict for a report.
    /// - Parameter report: what the meter found.
    /// - Returns: acceptable, or warn/reject with the relevant weaknesses.
    public func verdict(for report: PinStrengthReport) -> PinVerdict {
        let relevant = report.weaknesses.intersection(relevantWeaknesses(forLength: report.length))
        if relevant.isEmpty { return .acceptable }
        return action == .warn ? .warn(relevant) : .reject(relevant)
    }
}

/// The outcome of applying a ``PinWarningPolicy``.
public enum PinVerdict: Equatable, Sendable, CustomStringConvertible {
    /// No relevant weakness.
    case acceptable
    /// Tell the user about these weaknesses; the PIN may be kept.
    case warn(PinWeaknesses)
    /// Refuse the PIN because of these weaknesses.
    case reject(PinWeaknesses)

    /// `acceptable`, `warn` or `reject`.
    public var name: String {
        switch self {
        case .acceptable: "acceptable"
        case .warn: "warn"
        case .reject: "reject"
        }
    }

    /// The name and the weaknesses.
    public var description: String {
        switch self {
        case .acceptable: name
        case .warn(let weaknesses), .reject(let weaknesses): "\(name) (\(weaknesses))"
        }
    }
}
