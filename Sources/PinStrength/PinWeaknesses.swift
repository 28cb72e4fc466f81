/// Weaknesses the strength meter found in a numeric PIN (the flags of the
/// Wultra passphrase meter, with SecurePIN's own documented rules; see
/// `docs/pin-strength.md`).
public struct PinWeaknesses: OptionSet, Hashable, Sendable, CustomStringConvertible {
    /// The raw bits.
    public let rawValue: UInt8

    /// Creates a set from raw bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Too few distinct digits: fewer than 3 up to 7 digits, fewer than 4 from 8.
    public static let notUnique = PinWeaknesses(rawValue: 1 << 0)
    /// A repeated block (1212, 123123), a mirrored block (123321), or a run of
    /// three or more equal digits (1000).
    public static let repeating = PinWeaknesses(rawValue: 1 << 1)
    /// A constant-step run (1234, 3579, 7890) or straight lines on the keypad
    /// (2580, 147258, the four corners 1397).
    public static let pattern = PinWeaknesses(rawValue: 1 << 2)
    /// Could be a date: DDMM, MMDD or a year (4 digits); DDMMYY, MMDDYY,
    /// YYMMDD, MMYYYY, YYYYMM (6); DDMMYYYY, MMDDYYYY, YYYYMMDD (8), with
    /// four-digit years inside the meter's window around today.
    public static let possiblyDate = PinWeaknesses(rawValue: 1 << 3)
    /// On the blocklist of the most popular 4- or 6-digit PINs.
    public static let frequentlyUsed = PinWeaknesses(rawValue: 1 << 4)

    /// Every flag with its stable name, in a fixed order.
    public static let named: [(flag: PinWeaknesses, name: String)] = [
        (.notUnique, "not-unique"), (.repeating, "repeating"), (.pattern, "pattern"),
        (.possiblyDate, "possibly-date"), (.frequentlyUsed, "frequently-used"),
    ]

    /// The stable names of the flags in this set, in a fixed order.
    public var names: [String] { Self.named.filter { contains($0.flag) }.map(\.name) }

    /// The names joined by commas, or `none`.
    public var description: String { isEmpty ? "none" : names.joined(separator: ", ") }
}

/// What the strength meter reports about a PIN: its length (public anyway:
/// one dot per digit) and its weaknesses. It holds no digit of the PIN.
public struct PinStrengthReport: Equatable, Sendable, CustomStringConvertible {
    /// Number of digits.
    public let length: Int
    /// The weaknesses found.
    public let weaknesses: PinWeaknesses

    /// Creates a report.
    /// - Parameters:
    ///   - length: number of digits.
    ///   - weaknesses: the weaknesses found.
    public init(length: Int, weaknesses: PinWeaknesses) {
        self.length = length
        self.weaknesses = weaknesses
    }

    /// `4 digits: pattern, frequently-used`.
    public var description: String { "\(length) digits: \(weaknesses)" }
}
