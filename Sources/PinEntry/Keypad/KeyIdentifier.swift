/// An opaque identifier for one key of one keypad: 128 random bits drawn when
/// the keypad is built. It never encodes the digit, differs on every keypad,
/// and only the keypad that issued it can resolve it. Use it for view IDs,
/// tags and test identifiers instead of anything derived from the digit.
public struct KeyIdentifier: Hashable, Sendable, CustomStringConvertible {
    private let high: UInt64
    private let low: UInt64

    init(random source: some RandomSource) throws(PinEntryError) {
        high = try source.nextWord()
        low = try source.nextWord()
    }

    /// `key-` followed by 32 hexadecimal digits of the random token.
    public var description: String {
        "key-" + Self.hex(high) + Self.hex(low)
    }

    private static func hex(_ word: UInt64) -> String {
        let digits = String(word, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
