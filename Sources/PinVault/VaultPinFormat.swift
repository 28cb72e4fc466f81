import SecureCore

/// The PIN format a vault records: which characters and how many a PIN may
/// have. It is stored in the vault header and bound into every slot's
/// authentication (like the ``ThrottlePolicy``), so the program that asks
/// for the PIN at unlock applies the same rules as the one that asked at
/// creation. It says nothing about the PIN itself.
///
/// A caller that names no format gets ``unrecorded`` (any 1 to 256
/// printable characters).
public struct VaultPinFormat: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Which characters a PIN may contain.
    public enum Characters: UInt8, Sendable, Hashable, Codable {
        /// The digits 0–9 only.
        case digits = 1
        /// Any Unicode scalar except control characters (C0, DEL, C1).
        case printable = 2
    }

    /// The longest PIN or passphrase a vault can record.
    public static let maximumLengthLimit = 256

    /// The format of a vault created without one: 1 to 256 printable characters.
    public static let unrecorded = VaultPinFormat(checked: .printable, minimumLength: 1, maximumLength: 256)

    /// Which characters a PIN may contain.
    public let characters: Characters
    /// The fewest characters (code points).
    public let minimumLength: Int
    /// The most characters (code points).
    public let maximumLength: Int

    /// Creates a format; `nil` unless 1 ≤ `minimumLength` ≤ `maximumLength` ≤ ``maximumLengthLimit``.
    /// - Parameters:
    ///   - characters: digits or printable characters.
    ///   - minimumLength: the fewest characters.
    ///   - maximumLength: the most characters.
    public init?(characters: Characters, minimumLength: Int, maximumLength: Int) {
        guard minimumLength >= 1, minimumLength <= maximumLength, maximumLength <= Self.maximumLengthLimit else {
            return nil
        }
        self.init(checked: characters, minimumLength: minimumLength, maximumLength: maximumLength)
    }

    private init(checked characters: Characters, minimumLength: Int, maximumLength: Int) {
        self.characters = characters
        self.minimumLength = minimumLength
        self.maximumLength = maximumLength
    }

    /// Whether `pin` has an allowed length and only allowed characters. Only
    /// the count and the character classes are examined, and every byte is
    /// examined the same way: the time taken depends on the length alone.
    /// - Parameter pin: the PIN; only read.
    /// - Returns: `true` when the vault's format admits it.
    public func admits(_ pin: Password) -> Bool {
        guard (minimumLength...maximumLength).contains(pin.length) else { return false }
        let digitsOnly = characters == .digits
        let bad: Int32 = pin.withUnsafeUTF8Bytes { bytes in
            // Each test is -1 (all bits) when true, 0 when false: no branch on a PIN byte.
            let below = ConstantTimeEncoding.lessThan
            let equal = ConstantTimeEncoding.equal
            var bad: Int32 = 0
            for i in 0..<bytes.count {
                let byte = Int32(bytes[i])
                if digitsOnly {
                    bad |= below(byte, 0x30) | below(0x39, byte)
                } else {
                    // C0 and DEL are single bytes; C1 (U+0080–U+009F) is 0xC2 0x80–0x9F.
                    let next = Int32(i + 1 < bytes.count ? bytes[i + 1] : 0)
                    let c1 = equal(byte, 0xC2) & ~(below(next, 0x80) | below(0x9F, next))
                    bad |= below(byte, 0x20) | equal(byte, 0x7F) | c1
                }
            }
            return bad
        }
        return bad == 0
    }

    /// `digits 4...8` or `characters 8...64`.
    public var description: String {
        (characters == .digits ? "digits " : "characters ")
            + (minimumLength == maximumLength ? "\(minimumLength)" : "\(minimumLength)...\(maximumLength)")
    }
}
