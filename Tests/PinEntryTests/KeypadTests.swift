import Testing

@testable import PinEntry
@testable import PinStrength

@Suite("Keypad")
struct KeypadTests {
    /// Chi-square test of the view order: over many keypads, how often each
    /// key lands in each slot of `keys`. Uniform shuffling fills the 12 × 12
    /// table evenly. The statistic is compared with a fixed critical value
    /// for (12 − 1)(12 − 1) = 121 degrees of freedom at significance
    /// α = 10⁻⁶ (Wilson–Hilferty: ≈ 210.1): a correct shuffle fails this
    /// test once in a million runs, a modulo-biased or off-by-one
    /// Fisher–Yates fails it every time at this sample size.
    static let keypads = 24_000
    static let criticalValue = 210.1

    @Test("the view order is uniform (chi-square, α = 1e-6, df = 121)")
    func shuffleUniformity() throws {
        var counts = [[Int]](repeating: [Int](repeating: 0, count: 12), count: 12)
        let source = SystemRandomSource()
        for _ in 0..<Self.keypads {
            let keypad = try Keypad(includesBiometry: true, randomSource: source)
            for (slot, key) in keypad.keys.enumerated() {
                counts[slot][Self.index(of: key.key)] += 1
            }
        }
        let expected = Double(Self.keypads) / 12
        var statistic = 0.0
        for row in counts {
            for observed in row {
                statistic += (Double(observed) - expected) * (Double(observed) - expected) / expected
            }
        }
        #expect(statistic < Self.criticalValue, "chi-square \(statistic) ≥ \(Self.criticalValue)")
    }

    @Test("the same test catches a biased shuffle")
    func chiSquareDetectsBias() {
        // A naive "swap with any index" shuffle is a classic bias; the test
        // statistic must reject it, or the uniformity test proves nothing.
        var counts = [[Int]](repeating: [Int](repeating: 0, count: 12), count: 12)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<Self.keypads {
            var keys = Array(0..<12)
            for i in 0..<12 { keys.swapAt(i, Int.random(in: 0..<12, using: &generator)) }
            for (slot, key) in keys.enumerated() { counts[slot][key] += 1 }
        }
        let expected = Double(Self.keypads) / 12
        var statistic = 0.0
        for row in counts {
            for observed in row {
                statistic += (Double(observed) - expected) * (Double(observed) - expected) / expected
            }
        }
        #expect(statistic > Self.criticalValue)
    }

    @Test("rejection sampling redraws words in the biased zone")
    func rejectionSampling() throws {
        // For bound 3, 2^64 mod 3 = 1: the word 0 would favour 0, so it is
        // drawn again; 5 then gives 5 mod 3 = 2.
        let source = ScriptedRandomSource([0, 5])
        #expect(try source.uniform(below: 3) == 2)
        #expect(source.drawn == 2)
        // For a power of two nothing is ever rejected.
        let exact = ScriptedRandomSource([0])
        #expect(try exact.uniform(below: 8) == 0)
        #expect(exact.drawn == 1)
        // For bound 10, 2^64 mod 10 = 6: words 0–5 are rejected.
        let ten = ScriptedRandomSource([5, 4, 6])
        #expect(try ten.uniform(below: 10) == 6)
        #expect(ten.drawn == 3)
    }

    @Test("the strength rules' keypad lines follow the keypad's standard layout")
    func strengthRulesShareTheLayout() {
        for digit in 0...9 {
            let key = PinKey.digit(UInt8(digit)).standardPosition
            let rule = DigitRules.position(digit)
            #expect(rule.row == key.row && rule.column == key.column, "digit \(digit)")
        }
    }

    @Test("positions are fixed by the key, whatever the view order")
    func positionsFixedByKey() throws {
        for _ in 0..<50 {
            let keypad = try Keypad(includesBiometry: true)
            for key in keypad.keys { #expect(key.position == key.key.standardPosition) }
            #expect(keypad.key(at: GridPosition(row: 0, column: 0))?.title == "1")
            #expect(keypad.key(at: GridPosition(row: 3, column: 1))?.title == "0")
            #expect(keypad.key(at: GridPosition(row: 3, column: 2))?.kind == .delete)
            #expect(Set(keypad.keys.map(\.position)).count == 12)
        }
    }

    @Test("a shuffled-digit layout permutes the digit cells only")
    func shuffledDigitLayout() throws {
        var layouts = Set<[String]>()
        for _ in 0..<20 {
            let keypad = try Keypad(layout: .shuffledDigits, includesBiometry: true)
            let digits = keypad.keys.filter { $0.kind == .digit }
            #expect(Set(digits.map(\.position)) == Set((0...9).map { PinKey.digit(UInt8($0)).standardPosition }))
            #expect(keypad.key(at: GridPosition(row: 3, column: 0))?.kind == .biometry)
            #expect(keypad.key(at: GridPosition(row: 3, column: 2))?.kind == .delete)
            layouts.insert((0..<12).compactMap { keypad.key(at: GridPosition(row: $0 / 3, column: $0 % 3))?.title })
        }
        #expect(layouts.count > 1)
    }

    @Test("no digit is reachable through an identifier")
    func identifiersRevealNothing() throws {
        var seen = Set<KeyIdentifier>()
        var identifiersOfOne = Set<String>()
        for _ in 0..<500 {
            let keypad = try Keypad(includesBiometry: true)
            for key in keypad.keys {
                // Fresh on every keypad: no identifier ever stands for a digit.
                #expect(seen.insert(key.id).inserted)
                // Only the random token is stored: two 64-bit words.
                let children = Mirror(reflecting: key.id).children
                #expect(children.count == 2 && children.allSatisfy { $0.value is UInt64 })
                let text = key.id.description
                #expect(text.hasPrefix("key-") && text.count == 36)
                let hexadecimal = text.dropFirst(4).allSatisfy { $0.isHexDigit }
                #expect(hexadecimal)
                if key.title == "1" { identifiersOfOne.insert(text) }
            }
            // Another keypad cannot resolve this keypad's identifiers.
            let other = try Keypad(includesBiometry: true)
            #expect(keypad.keys.count == 12 && keypad.keys.allSatisfy { other.key(withID: $0.id) == nil })
        }
        #expect(identifiersOfOne.count == 500)
        // The description names the size and layout only, never the mapping.
        #expect(String(describing: try Keypad(includesBiometry: true)) == "Keypad(12 keys, standard)")
    }

    @Test("accessibility labels and the haptic-only press feedback")
    func accessibility() throws {
        let keypad = try Keypad(includesBiometry: true)
        for digit in 0...9 { #expect(keypad.key(titled: "\(digit)")?.accessibilityLabel == "\(digit)") }
        #expect(keypad.keys.first { $0.kind == .biometry }?.accessibilityLabel == "Use biometry")
        #expect(keypad.keys.first { $0.kind == .delete }?.accessibilityLabel == "Delete")
        #expect(keypad.keys.count == 12 && keypad.keys.allSatisfy { $0.pressFeedback == .haptic })
    }
}

extension KeypadTests {
    static func index(of key: PinKey) -> Int {
        switch key {
        case .digit(let value): Int(value)
        case .biometry: 10
        case .delete: 11
        }
    }
}
