import SecureCore
import TestSupport
import Testing

@testable import PinStrength

struct StrengthCase: Sendable, CustomTestStringConvertible {
    let pin: String
    let flags: PinWeaknesses
    let verdict: PinVerdict
    var testDescription: String { pin }
}

/// Today for the date rule: the year window is 1926–2036.
let today = FixedToday(CalendarDay(year: 2026, month: 11, day: 30))

let strengthCases: [StrengthCase] = [
    .init(pin: "1234", flags: [.pattern, .frequentlyUsed], verdict: .warn(.frequentlyUsed)),
    .init(
        pin: "1111", flags: [.notUnique, .repeating, .possiblyDate, .frequentlyUsed],
        verdict: .warn([.notUnique, .frequentlyUsed])),
    .init(
        pin: "0000", flags: [.notUnique, .repeating, .frequentlyUsed], verdict: .warn([.notUnique, .frequentlyUsed])),
    .init(pin: "2580", flags: [.pattern, .frequentlyUsed], verdict: .warn(.frequentlyUsed)),
    .init(pin: "1990", flags: [.possiblyDate, .frequentlyUsed], verdict: .warn(.frequentlyUsed)),
    .init(
        pin: "0101", flags: [.notUnique, .repeating, .possiblyDate, .frequentlyUsed],
        verdict: .warn([.notUnique, .frequentlyUsed])),
    .init(pin: "3579", flags: [.pattern, .frequentlyUsed], verdict: .warn(.frequentlyUsed)),
    .init(pin: "7890", flags: [.pattern, .frequentlyUsed], verdict: .warn(.frequentlyUsed)),
    .init(pin: "1397", flags: [.pattern, .frequentlyUsed], verdict: .warn(.frequentlyUsed)),
    .init(pin: "1000", flags: [.notUnique, .repeating], verdict: .warn(.notUnique)),
    .init(
        pin: "6969", flags: [.notUnique, .repeating, .frequentlyUsed], verdict: .warn([.notUnique, .frequentlyUsed])),
    .init(pin: "5813", flags: [], verdict: .acceptable),
    .init(
        pin: "123123", flags: [.repeating, .pattern, .possiblyDate, .frequentlyUsed],
        verdict: .warn([.repeating, .frequentlyUsed])),
    .init(pin: "147258", flags: [.pattern, .frequentlyUsed], verdict: .warn(.frequentlyUsed)),
    .init(pin: "123456", flags: [.pattern, .frequentlyUsed], verdict: .warn(.frequentlyUsed)),
    .init(
        pin: "111222", flags: [.notUnique, .repeating, .possiblyDate, .frequentlyUsed],
        verdict: .warn([.notUnique, .repeating, .frequentlyUsed])),
    .init(
        pin: "123321", flags: [.repeating, .pattern, .frequentlyUsed], verdict: .warn([.repeating, .frequentlyUsed])),
    .init(pin: "250389", flags: [.possiblyDate], verdict: .acceptable),
    .init(pin: "583920", flags: [], verdict: .acceptable),
    .init(pin: "19071990", flags: [.possiblyDate], verdict: .acceptable),
    .init(pin: "12345678", flags: [.pattern], verdict: .warn(.pattern)),
    .init(pin: "14725836", flags: [.pattern], verdict: .warn(.pattern)),
    .init(pin: "73920584", flags: [], verdict: .acceptable),
    .init(pin: "11112222", flags: [.notUnique, .repeating], verdict: .warn([.notUnique, .repeating])),
    .init(pin: "73150", flags: [], verdict: .acceptable),
]

@Suite("PinStrengthMeter")
struct PinStrengthMeterTests {
    let meter = PinStrengthMeter(today: today)

    @Test("flags and Wultra verdicts", arguments: strengthCases)
    func flags(_ row: StrengthCase) throws {
        let pin = try password(row.pin)
        defer { pin.destroy() }
        let report = try meter.evaluate(pin)
        #expect(report.length == row.pin.count)
        #expect(report.weaknesses == row.flags, "\(row.pin): \(report.weaknesses)")
        #expect(PinWarningPolicy().verdict(for: report) == row.verdict)
    }

    @Test("the year window follows the injected today")
    func yearWindow() throws {
        let pin = try password("1990")
        defer { pin.destroy() }
        #expect(try meter.evaluate(pin).weaknesses.contains(.possiblyDate))
        let earlier = PinStrengthMeter(today: FixedToday(CalendarDay(year: 1950, month: 1, day: 1)))
        #expect(earlier.yearWindow == 1850...1960)
        #expect(!(try earlier.evaluate(pin).weaknesses.contains(.possiblyDate)))
        let eightDigits = try password("19071990")
        defer { eightDigits.destroy() }
        #expect(!(try earlier.evaluate(eightDigits).weaknesses.contains(.possiblyDate)))
    }

    @Test("29 February needs a leap year when the year is known")
    func leapYears() throws {
        for (pin, isDate) in [("29022024", true), ("29022023", false), ("290296", true), ("290299", false)] {
            let candidate = try password(pin)
            defer { candidate.destroy() }
            #expect(try meter.evaluate(candidate).weaknesses.contains(.possiblyDate) == isDate, "\(pin)")
        }
    }

    @Test("reject mode rejects the same weaknesses")
    func rejectMode() throws {
        let pin = try password("2580")
        defer { pin.destroy() }
        #expect(PinWarningPolicy(action: .reject).verdict(for: try meter.evaluate(pin)) == .reject(.frequentlyUsed))
    }

    @Test("non-digits and empty PINs are refused")
    func badInput() throws {
        let letters = try password("12a4")
        defer { letters.destroy() }
        #expect(throws: PinStrengthError.characterNotAllowed) { try meter.evaluate(letters) }
        let wide = try password("12٣4")  // an Arabic-Indic digit is not an ASCII digit
        defer { wide.destroy() }
        #expect(throws: PinStrengthError.characterNotAllowed) { try meter.evaluate(wide) }
        let empty = try password("")
        defer { empty.destroy() }
        #expect(throws: PinStrengthError.empty) { try meter.evaluate(empty) }
    }

    @Test("a mutable PIN is measured through a short-lived copy")
    func mutablePin() throws {
        let pin = try MutablePassword()
        defer { pin.destroy() }
        for scalar in "2580".unicodeScalars { try pin.addCharacter(scalar) }
        #expect(try meter.evaluate(pin).weaknesses == [.pattern, .frequentlyUsed])
        #expect(pin.length == 4)
    }

    @Test("blocklists are near the sizes research suggests and stored as bitsets")
    func blocklistSizes() {
        let four = PinBlocklist.fourDigit, six = PinBlocklist.sixDigit
        #expect((900...1_100).contains(four.count), "4-digit blocklist: \(four.count)")
        #expect((1_800...2_200).contains(six.count), "6-digit blocklist: \(six.count)")
        #expect(four.words.count == 157 && six.words.count == 15_625)
        for pin in PinBlocklist.dataGeneticsTop { #expect(four.contains(pin)) }
        // Every rule adds PINs the earlier rules missed; the DataGenetics
        // list, last, adds none: the rules already cover the measured top list.
        #expect(four.familySizes.count > 1 && four.familySizes.dropLast().allSatisfy { $0.added > 0 })
        #expect(four.familySizes.last?.added == 0)
        #expect(!six.familySizes.isEmpty && six.familySizes.allSatisfy { $0.added > 0 })
        // The sizes docs/pin-strength.md states; a rule change must update both.
        #expect(four.familySizes.map(\.added) == [280, 80, 10, 562, 103, 0] && four.count == 1_035)
        #expect(six.familySizes.map(\.added) == [1_180, 80, 170, 282, 356] && six.count == 2_068)
        for pin in [123456, 654321, 111111, 0, 123123, 121212, 112233, 789456, 159753, 147258, 101112, 123321] {
            #expect(six.contains(pin), "\(pin)")
        }
        #expect(!six.contains(583_920))
        #expect(!four.contains(5813))
    }

    @Test("reports and verdicts describe flags, never digits")
    func descriptions() throws {
        let pin = try password("2580")
        defer { pin.destroy() }
        let report = try meter.evaluate(pin)
        #expect(report.description == "4 digits: pattern, frequently-used")
        #expect(PinWarningPolicy().verdict(for: report).description == "warn (frequently-used)")
    }
}
