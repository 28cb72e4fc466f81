/// The PIN or password format a user chose. This is the only thing an app
/// stores about the PIN (so it can show the right keyboard and dots next
/// time): the format, never anything derived from the PIN itself.
public enum PinComplexity: String, Equatable, Hashable, Sendable, Codable, CaseIterable {
    /// Exactly 4 digits, confirmed automatically on the last one.
    case fourDigits = "digits-4"
    /// Exactly 6 digits, confirmed automatically on the last one.
    case sixDigits = "digits-6"
    /// 4 to 8 digits; the user confirms.
    case fourToEightDigits = "digits-4-8"
    /// An alphanumeric password entered on the system keyboard, 8 to 64
    /// characters (NIST SP 800-63B: at least 8, and allow at least 64).
    case alphanumeric = "alphanumeric"

    /// Whether only the digits 0–9 are accepted.
    public var isNumeric: Bool { self != .alphanumeric }

    /// The length policy of the format.
    public var lengthPolicy: PinLengthPolicy {
        switch self {
        case .fourDigits: PinLengthPolicy(uncheckedMinimum: 4, maximum: 4)
        case .sixDigits: PinLengthPolicy(uncheckedMinimum: 6, maximum: 6)
        case .fourToEightDigits: PinLengthPolicy(uncheckedMinimum: 4, maximum: 8)
        case .alphanumeric: PinLengthPolicy(uncheckedMinimum: 8, maximum: 64)
        }
    }
}

/// The character set and length an entry accepts: a ``PinComplexity`` or a
/// custom numeric length.
public struct PinFormat: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// Whether only the digits 0–9 are accepted.
    public let isNumeric: Bool
    /// The length policy.
    public let lengthPolicy: PinLengthPolicy

    /// Creates a format.
    /// - Parameters:
    ///   - isNumeric: digits only, or any printable character.
    ///   - lengthPolicy: the length policy.
    public init(isNumeric: Bool, lengthPolicy: PinLengthPolicy) {
        self.isNumeric = isNumeric
        self.lengthPolicy = lengthPolicy
    }

    /// The format of a stored complexity choice.
    /// - Parameter complexity: the choice.
    public init(_ complexity: PinComplexity) {
        self.init(isNumeric: complexity.isNumeric, lengthPolicy: complexity.lengthPolicy)
    }

    /// Whether the format accepts this character: a digit for a numeric
    /// format; otherwise any scalar except control characters (C0, DEL, C1).
    /// - Parameter scalar: the character.
    /// - Returns: `true` when it may be stored.
    public func accepts(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        if isNumeric { return value >= 0x30 && value <= 0x39 }
        return value >= 0x20 && !(0x7F...0x9F).contains(value)
    }

    /// `digits 4` or `characters 8...64`.
    public var description: String { (isNumeric ? "digits " : "characters ") + lengthPolicy.description }
}
