/// How many characters a PIN or password has: a fixed length (the entry
/// confirms itself on the last digit) or a range (the user confirms, enabled
/// from the minimum). The maximum is always enforced.
public struct PinLengthPolicy: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// The longest policy this module accepts: room for long passphrases, and
    /// well below SecureCore's per-password capacity, so a policy can never
    /// ask the secure buffer for more than it holds.
    public static let absoluteMaximum = 256

    /// The fewest characters that can be confirmed.
    public let minimum: Int
    /// The most characters that can be entered; more are ignored.
    public let maximum: Int

    /// Creates a policy.
    /// - Parameters:
    ///   - minimum: at least 1.
    ///   - maximum: at least `minimum`, at most ``absoluteMaximum``.
    /// - Throws: ``PinEntryError/invalidLengthPolicy(minimum:maximum:)``.
    public init(minimum: Int, maximum: Int) throws(PinEntryError) {
        guard minimum >= 1, minimum <= maximum, maximum <= Self.absoluteMaximum else {
            throw .invalidLengthPolicy(minimum: minimum, maximum: maximum)
        }
        self.minimum = minimum
        self.maximum = maximum
    }

    /// A fixed length.
    /// - Parameter length: 1 to ``absoluteMaximum``.
    /// - Returns: the policy.
    /// - Throws: ``PinEntryError/invalidLengthPolicy(minimum:maximum:)``.
    public static func fixed(_ length: Int) throws(PinEntryError) -> PinLengthPolicy {
        try PinLengthPolicy(minimum: length, maximum: length)
    }

    /// Whether the length is fixed (the entry then confirms itself).
    public var isFixed: Bool { minimum == maximum }

    /// `4` or `4...8`.
    public var description: String { isFixed ? "\(minimum)" : "\(minimum)...\(maximum)" }

    init(uncheckedMinimum minimum: Int, maximum: Int) {
        self.minimum = minimum
        self.maximum = maximum
    }
}
