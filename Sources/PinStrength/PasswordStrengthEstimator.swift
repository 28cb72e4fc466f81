import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Penalties the estimator applied to an alphanumeric password.
public struct PasswordPenalties: OptionSet, Hashable, Sendable, CustomStringConvertible {
    /// The raw bits.
    public let rawValue: UInt8

    /// Creates a set from raw bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Contains one of the most common passwords or words of breach lists
    /// (compared case-insensitively).
    public static let commonPassword = PasswordPenalties(rawValue: 1 << 0)
    /// Three or more equal characters in a row.
    public static let repeatedCharacters = PasswordPenalties(rawValue: 1 << 1)
    /// Three or more consecutive characters in alphabetical or numerical order (abc, 987).
    public static let sequence = PasswordPenalties(rawValue: 1 << 2)
    /// Three or more neighbouring keys of a QWERTY row (qwe, asdf).
    public static let keyboardPattern = PasswordPenalties(rawValue: 1 << 3)
    /// Contains a year from 1900 to 2099.
    public static let containsYear = PasswordPenalties(rawValue: 1 << 4)
    /// Uses only one character class (only lower case, only digits, …).
    public static let singleCharacterClass = PasswordPenalties(rawValue: 1 << 5)

    /// Every penalty with its stable name, in a fixed order.
    public static let named: [(penalty: PasswordPenalties, name: String)] = [
        (.commonPassword, "common-password"), (.repeatedCharacters, "repeated-characters"),
        (.sequence, "sequence"), (.keyboardPattern, "keyboard-pattern"),
        (.containsYear, "contains-year"), (.singleCharacterClass, "single-character-class"),
    ]

    /// The stable names of the penalties in this set.
    public var names: [String] { Self.named.filter { contains($0.penalty) }.map(\.name) }

    /// The names joined by commas, or `none`.
    public var description: String { isEmpty ? "none" : names.joined(separator: ", ") }
}

/// An *estimate* of an alphanumeric password's guessing entropy, with the
/// penalties applied. It is a heuristic in the spirit of zxcvbn, far simpler:
/// good at catching obviously weak passwords, not a proof of strength.
public struct PasswordStrengthEstimate: Equatable, Sendable, CustomStringConvertible {
    /// A coarse rating of the estimate.
    public enum Rating: String, Equatable, Sendable, Comparable {
        /// Below 28 bits: falls to online guessing.
        case veryWeak = "very-weak"
        /// 28 to 35 bits.
        case weak
        /// 36 to 59 bits.
        case fair
        /// 60 bits or more.
        case strong

        /// Orders from very weak to strong.
        public static func < (lhs: Rating, rhs: Rating) -> Bool { lhs.order < rhs.order }

        private var order: Int {
            switch self {
            case .veryWeak: 0
            case .weak: 1
            case .fair: 2
            case .strong: 3
            }
        }
    }

    /// Number of characters.
    public let length: Int
    /// The estimated entropy in bits, after penalties.
    public let estimatedBits: Double
    /// The penalties applied.
    public let penalties: PasswordPenalties

    /// Creates an estimate.
    /// - Parameters:
    ///   - length: number of characters.
    ///   - estimatedBits: estimated bits.
    ///   - penalties: penalties applied.
    public init(length: Int, estimatedBits: Double, penalties: PasswordPenalties) {
        self.length = length
        self.estimatedBits = estimatedBits
        self.penalties = penalties
    }

    /// The rating of ``estimatedBits``.
    public var rating: Rating {
        switch estimatedBits {
        case ..<28: .veryWeak
        case ..<36: .weak
        case ..<60: .fair
        default: .strong
        }
    }

    /// `12 characters, ~41.2 bits (fair): sequence`.
    public var description: String {
        let bits = (estimatedBits * 10).rounded() / 10
        return "\(length) characters, ~\(bits) bits (\(rating.rawValue)): \(penalties)"
    }
}

/// Estimates the strength of an alphanumeric password on the secure buffer.
///
/// Each character starts with `log2(pool)` bits, where the pool is the sum of
/// the character classes present (26 lower, 26 upper, 10 digits, 33 ASCII
/// symbols, 100 for anything beyond ASCII). A character that repeats the
/// previous one, continues an alphabetical or numerical sequence, or
/// continues a QWERTY row adds only 1 bit; a common password or word adds
/// `log2(list size)` bits for the whole word; a year adds `log2(200)` bits
/// for its four digits. The result is an estimate, not a measurement.
public struct PasswordStrengthEstimator: Sendable {
    /// Creates an estimator.
    public init() {}

    /// Estimates an immutable password.
    /// - Parameter password: the password; it is only read.
    /// - Returns: the estimate.
    public func estimate(_ password: Password) -> PasswordStrengthEstimate {
        password.withUnsafeUTF8Bytes { buffer in Self.estimate(buffer: buffer) }
    }

    /// The most common passwords and password words of public breach lists
    /// (lower case, ASCII). Public data, compared in place against the buffer.
    static let commonWords: [StaticString] = [
        "password", "passw0rd", "qwerty", "letmein", "welcome", "monkey", "dragon", "football",
        "baseball", "iloveyou", "admin", "login", "master", "sunshine", "princess", "shadow",
        "superman", "trustno1", "starwars", "whatever", "freedom", "hello", "charlie", "michael",
        "jennifer", "jordan", "hunter", "ranger", "buster", "soccer", "hockey", "killer",
        "george", "andrew", "thomas", "daniel", "maggie", "ashley", "bailey", "secret",
        "summer", "winter", "spring", "autumn", "flower", "cookie", "pepper", "ginger",
        "batman", "pokemon", "computer", "internet", "access", "matrix", "mustang", "corvette",
        "liverpool", "chelsea", "arsenal", "banana", "orange", "purple", "silver", "golden",
    ]

    static func estimate(buffer: UnsafeRawBufferPointer) -> PasswordStrengthEstimate {
        let count = buffer.count
        guard count > 0 else { return PasswordStrengthEstimate(length: 0, estimatedBits: 0, penalties: []) }
        return withUnsafeTemporaryAllocation(of: Double.self, capacity: count) { bits in
            bits.initialize(repeating: 0)
            defer { bits.update(repeating: 0) }
            var penalties: PasswordPenalties = []
            let classes = characterClasses(buffer)
            let perCharacter = log2(Double(classes.pool))
            if classes.count == 1 { penalties.insert(.singleCharacterClass) }

            var characters = 0
            var runRepeat = 1, runSequence = 1, runKeyboard = 1
            var previous: UInt8 = 0
            for i in 0..<count {
                let byte = buffer[i]
                guard byte & 0xC0 != 0x80 else { continue }  // continuation byte: same character
                characters += 1
                var cheap = false
                if i > 0 {
                    runRepeat = byte == previous ? runRepeat + 1 : 1
                    runSequence = isSequenceStep(previous, byte) ? runSequence + 1 : 1
                    runKeyboard = isKeyboardStep(previous, byte) ? runKeyboard + 1 : 1
                    cheap = runRepeat > 1 || runSequence > 1 || runKeyboard > 1
                }
                if runRepeat >= 3 { penalties.insert(.repeatedCharacters) }
                if runSequence >= 3 { penalties.insert(.sequence) }
                if runKeyboard >= 3 && runSequence < 3 { penalties.insert(.keyboardPattern) }
                bits[i] = cheap ? 1 : perCharacter
                previous = byte
            }
            previous = 0
            if markCommonWords(buffer, bits) { penalties.insert(.commonPassword) }
            if markYears(buffer, bits) { penalties.insert(.containsYear) }
            let total = bits.reduce(0, +)
            return PasswordStrengthEstimate(length: characters, estimatedBits: total, penalties: penalties)
        }
    }

    private static func characterClasses(_ buffer: UnsafeRawBufferPointer) -> (pool: Int, count: Int) {
        var lower = false, upper = false, digit = false, symbol = false, other = false
        for byte in buffer {
            switch byte {
            case 0x61...0x7A: lower = true
            case 0x41...0x5A: upper = true
            case 0x30...0x39: digit = true
            case 0x20...0x7E: symbol = true
            default: other = true
            }
        }
        // Plain arithmetic, no collection: even which classes occur is
        // derived from the password and stays in locals.
        var pool = 0, count = 0
        if lower { pool += 26; count += 1 }
        if upper { pool += 26; count += 1 }
        if digit { pool += 10; count += 1 }
        if symbol { pool += 33; count += 1 }
        if other { pool += 100; count += 1 }
        return (max(pool, 2), count)
    }

    private static func lowered(_ byte: UInt8) -> UInt8 {
        (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x61...0x7A).contains(lowered(byte))
    }

    private static func isSequenceStep(_ a: UInt8, _ b: UInt8) -> Bool {
        let x = lowered(a), y = lowered(b)
        guard isAlphanumeric(x), isAlphanumeric(y), (x <= 0x39) == (y <= 0x39) else { return false }
        return Int(y) - Int(x) == 1 || Int(x) - Int(y) == 1
    }

    private static let keyboardRows: [StaticString] = ["1234567890", "qwertyuiop", "asdfghjkl", "zxcvbnm"]

    private static func isKeyboardStep(_ a: UInt8, _ b: UInt8) -> Bool {
        let x = lowered(a), y = lowered(b)
        for row in keyboardRows {
            let keys = UnsafeRawBufferPointer(start: row.utf8Start, count: row.utf8CodeUnitCount)
            guard let i = keys.firstIndex(of: x), let j = keys.firstIndex(of: y) else { continue }
            return j - i == 1 || i - j == 1
        }
        return false
    }

    /// Gives each occurrence of a common word `log2(list size)` bits in total.
    private static func markCommonWords(
        _ buffer: UnsafeRawBufferPointer,
        _ bits: UnsafeMutableBufferPointer<Double>
    ) -> Bool {
        let wordBits = log2(Double(commonWords.count))
        var found = false
        for word in commonWords {
            let w = UnsafeRawBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
            guard w.count <= buffer.count else { continue }
            for start in 0...buffer.count - w.count {
                var match = true
                for k in 0..<w.count where lowered(buffer[start + k]) != w[k] { match = false; break }
                guard match else { continue }
                found = true
                for k in 0..<w.count { bits[start + k] = min(bits[start + k], wordBits / Double(w.count)) }
            }
        }
        return found
    }

    /// Gives each year 1900–2099 `log2(200)` bits for its four digits.
    private static func markYears(
        _ buffer: UnsafeRawBufferPointer,
        _ bits: UnsafeMutableBufferPointer<Double>
    ) -> Bool {
        guard buffer.count >= 4 else { return false }
        var found = false
        for start in 0...buffer.count - 4 {
            guard (0..<4).allSatisfy({ (0x30...0x39).contains(buffer[start + $0]) }) else { continue }
            let century = (Int(buffer[start]) - 0x30) * 10 + Int(buffer[start + 1]) - 0x30
            guard century == 19 || century == 20 else { continue }
            found = true
            for k in 0..<4 { bits[start + k] = min(bits[start + k], log2(200.0) / 4) }
        }
        return found
    }
}
