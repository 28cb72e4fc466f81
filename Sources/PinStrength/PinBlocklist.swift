/// The blocklists of the most popular 4- and 6-digit PINs, generated on
/// first use from the rules in `docs/pin-strength.md` and held as bitsets
/// over the 10^4 and 10^6 possible PINs (1.25 KB and 125 KB). Markert et al.
/// (IEEE S&P 2020) found blocklists of about 1,000 (4-digit) and 2,000
/// (6-digit) PINs help most against a throttled attacker; the rules below are
/// chosen to land near those sizes.
///
/// The lists are public knowledge, not secrets: only the lookup of a user's
/// PIN happens on the revealed buffer.
enum PinBlocklist {
    /// One rule family: a name for the documentation and a generator.
    struct Family: Sendable {
        let name: String
        let generate: @Sendable (_ insert: (_ digits: [Int]) -> Void) -> Void
    }

    static let fourDigit: PinBitset = PinBitset(length: 4, families: fourDigitFamilies)
    static let sixDigit: PinBitset = PinBitset(length: 6, families: sixDigitFamilies)

    /// Whether a PIN of `length` digits with this value is on a blocklist.
    static func contains(_ value: Int, length: Int) -> Bool {
        switch length {
        case 4: fourDigit.contains(value)
        case 6: sixDigit.contains(value)
        default: false
        }
    }

    // MARK: - 4 digits

    /// The most common 4-digit PINs in the DataGenetics study (3.4 million
    /// PINs), as listed in SecurePIN's design anchors.
    static let dataGeneticsTop: [Int] = [
        1234, 1111, 0000, 2580, 1212, 7777, 1004, 2000, 4444, 2222, 6969,
        9999, 3333, 5555, 6666, 1122, 1313, 8888, 4321, 2001, 1010,
    ]

    static let fourDigitFamilies: [Family] = [
        Family(name: "repeats: aaaa, abab, aabb, abba") { insert in
            for a in 0...9 {
                for b in 0...9 {
                    insert([a, b, a, b]); insert([a, a, b, b]); insert([a, b, b, a])
                }
            }
        },
        Family(name: "constant steps modulo 10 (1234, 3579, 7890, 9630)") { insert in
            constantSteps(length: 4, insert)
        },
        Family(name: "keypad: a straight line of 4 (2580) and the corner square (1397)") { insert in
            insert([2, 5, 8, 0]); insert([0, 8, 5, 2])
            let cycle = [1, 3, 9, 7]
            for start in 0..<4 {
                insert((0..<4).map { cycle[(start + $0) % 4] })
                insert((0..<4).map { cycle[(start - $0 + 4) % 4] })
            }
        },
        Family(name: "dates DDMM and MMDD (29 February included)") { insert in
            for month in 1...12 {
                for day in 1...DigitRules.daysIn(month: month, year: nil) {
                    insert([day / 10, day % 10, month / 10, month % 10])
                    insert([month / 10, month % 10, day / 10, day % 10])
                }
            }
        },
        Family(name: "years 1900-2030") { insert in
            for year in 1900...2030 { insert(digits(of: year, length: 4)) }
        },
        Family(name: "DataGenetics most common 4-digit PINs") { insert in
            for pin in dataGeneticsTop { insert(digits(of: pin, length: 4)) }
        },
    ]

    // MARK: - 6 digits

    /// 3-key straight lines on the keypad, both directions: rows, columns
    /// (with 5-8-0), and the two diagonals.
    static let keypadLinesOfThree: [[Int]] = {
        var lines: [[Int]] = []
        for a in 0...9 {
            for b in 0...9 {
                for c in 0...9 {
                    let candidate = [a, b, c]
                    if DigitRules.isStraightLine(Digits(count: 3) { candidate[$0] }, from: 0, to: 3) {
                        lines.append(candidate)
                    }
                }
            }
        }
        return lines
    }()

    static let sixDigitFamilies: [Family] = [
        Family(name: "repeats: aaaaaa, ababab, abcabc, aaabbb") { insert in
            for a in 0...9 {
                for b in 0...9 {
                    insert([a, b, a, b, a, b]); insert([a, a, a, b, b, b])
                    for c in 0...9 { insert([a, b, c, a, b, c]) }
                }
            }
        },
        Family(name: "constant steps modulo 10 (123456, 987654, 135791)") { insert in
            constantSteps(length: 6, insert)
        },
        Family(name: "doubled and mirrored 3-step runs (112233, 123321)") { insert in
            for start in 0...9 {
                for step in 1...9 {
                    let run = (0..<3).map { (start + $0 * step) % 10 }
                    insert([run[0], run[0], run[1], run[1], run[2], run[2]])
                    insert([run[0], run[1], run[2], run[2], run[1], run[0]])
                }
            }
        },
        Family(name: "keypad: two straight 3-key lines (147258, 159357, 789456)") { insert in
            for first in keypadLinesOfThree { for second in keypadLinesOfThree { insert(first + second) } }
        },
        Family(name: "counting in two-digit numbers by 1 or 10 (101112, 010203, 102030)") { insert in
            for step in [1, -1, 10, -10] {
                for first in 0...99 {
                    let last = first + 2 * step
                    guard (0...99).contains(last) else { continue }
                    insert(
                        digits(of: first, length: 2) + digits(of: first + step, length: 2) + digits(of: last, length: 2)
                    )
                }
            }
        },
    ]

    // MARK: - Helpers

    static func constantSteps(length: Int, _ insert: ([Int]) -> Void) {
        for start in 0...9 {
            for step in 1...9 {
                insert((0..<length).map { (start + $0 * step) % 10 })
            }
        }
    }

    static func digits(of value: Int, length: Int) -> [Int] {
        var result = [Int](repeating: 0, count: length)
        var rest = value
        for i in stride(from: length - 1, through: 0, by: -1) {
            result[i] = rest % 10
            rest /= 10
        }
        return result
    }
}

/// A set of `length`-digit PINs as one bit per possible value.
struct PinBitset: Sendable {
    let length: Int
    let words: [UInt64]
    /// How many PINs each family contributed that earlier families had not.
    let familySizes: [(name: String, added: Int)]

    init(length: Int, families: [PinBlocklist.Family]) {
        self.length = length
        var space = 1
        for _ in 0..<length { space *= 10 }
        var bits = [UInt64](repeating: 0, count: (space + 63) / 64)
        var sizes: [(name: String, added: Int)] = []
        for family in families {
            var added = 0
            family.generate { digits in
                precondition(digits.count == length, "a blocklist rule produced a PIN of the wrong length")
                let value = digits.reduce(0) { $0 * 10 + $1 }
                let mask: UInt64 = 1 << UInt64(value % 64)
                if bits[value / 64] & mask == 0 { added += 1 }
                bits[value / 64] |= mask
            }
            sizes.append((family.name, added))
        }
        words = bits
        familySizes = sizes
    }

    func contains(_ value: Int) -> Bool {
        guard value >= 0, value / 64 < words.count else { return false }
        return words[value / 64] & (1 << UInt64(value % 64)) != 0
    }

    var count: Int { words.reduce(0) { $0 + $1.nonzeroBitCount } }
}
