import SecureCore
import TestSupport
import Testing

@testable import PinEntry

@Suite("Text-field edits")
struct TextFieldEditTests {
    func mutable(_ text: String) throws -> MutablePassword {
        let pin = try MutablePassword()
        for scalar in text.unicodeScalars { try pin.addCharacter(scalar) }
        return pin
    }

    struct Edit: Sendable, CustomTestStringConvertible {
        let start: String, range: Range<Int>, replacement: String, result: String, caret: Int
        var testDescription: String { "\(start) \(range) → \(result)" }
    }

    @Test(
        "edits as a secure text field delivers them",
        arguments: [
            Edit(start: "", range: 0..<0, replacement: "a", result: "a", caret: 1),  // typing
            Edit(start: "abc", range: 3..<3, replacement: "d", result: "abcd", caret: 4),  // typing at the end
            Edit(start: "abc", range: 1..<1, replacement: "XY", result: "aXYbc", caret: 3),  // paste in the middle
            Edit(start: "abc", range: 2..<3, replacement: "", result: "ab", caret: 2),  // backspace
            Edit(start: "abcdef", range: 1..<4, replacement: "Z", result: "aZef", caret: 2),  // replace a selection
            Edit(start: "abc", range: 0..<3, replacement: "xyz€😀", result: "xyz€😀", caret: 5),  // non-ASCII paste
        ])
    func edits(_ edit: Edit) throws {
        let (start, range, replacement, result, caret) = (
            edit.start, edit.range, edit.replacement, edit.result, edit.caret
        )
        let pin = try mutable(start)
        defer { pin.destroy() }
        #expect(try pin.applyTextFieldEdit(replacing: range, with: replacement.unicodeScalars) == caret)
        #expect(try holds(pin, result))
    }

    @Test("a range outside the password throws and changes nothing")
    func outOfRange() throws {
        let pin = try mutable("abc")
        defer { pin.destroy() }
        #expect(throws: PinEntryError.editOutOfRange(location: 2, length: 3, passwordLength: 3)) {
            try pin.applyTextFieldEdit(replacing: 2..<5, with: "x".unicodeScalars)
        }
        #expect(try holds(pin, "abc"))
    }

    @Test("the controller refuses a whole paste with a non-digit, and nothing is stored")
    func numericPasteRefused() throws {
        let controller = PinEntryController(configuration: PinEntryConfiguration(complexity: .fourToEightDigits))
        _ = try controller.handle(.appear)
        #expect(kinds(try controller.applyEdit(replacing: 0..<0, with: "12".unicodeScalars)) == [.updateIndicator])
        #expect(
            kinds(try controller.applyEdit(replacing: 2..<2, with: "3x4".unicodeScalars))
                == [.ignored(.characterNotAllowed)])
        #expect(controller.state.enteredLength == 2)
        #expect(
            kinds(try controller.applyEdit(replacing: 2..<2, with: "1234567".unicodeScalars))
                == [.ignored(.maximumLengthReached)])
        #expect(controller.state.enteredLength == 2)
        // Two digits are below the minimum of four: confirm stays refused.
        #expect(kinds(try controller.handle(.confirm)) == [.ignored(.tooShort)])
    }

    @Test("a fixed-length paste of all digits auto-confirms")
    func pasteAutoConfirms() throws {
        let controller = PinEntryController(configuration: PinEntryConfiguration(complexity: .sixDigits))
        _ = try controller.handle(.appear)
        let effects = try controller.applyEdit(replacing: 0..<0, with: "482916".unicodeScalars)
        let copy = try #require(submitted(effects))
        defer { copy.destroy() }
        #expect(try holds(copy, "482916"))
        #expect(controller.state.phase == .submitted)
        #expect(kinds(try controller.applyEdit(replacing: 0..<0, with: "1".unicodeScalars)) == [.ignored(.busy)])
    }

    @Test("an alphanumeric field accepts printable text and refuses control characters")
    func alphanumeric() throws {
        let controller = PinEntryController(configuration: PinEntryConfiguration(complexity: .alphanumeric))
        _ = try controller.handle(.appear)
        _ = try controller.applyEdit(replacing: 0..<0, with: "Pa ss".unicodeScalars)
        #expect(
            kinds(try controller.applyEdit(replacing: 5..<5, with: "\u{7}".unicodeScalars))
                == [.ignored(.characterNotAllowed)])
        _ = try controller.applyEdit(replacing: 2..<3, with: "š".unicodeScalars)
        #expect(controller.state.enteredLength == 5)
        _ = try controller.applyEdit(replacing: 5..<5, with: "word!".unicodeScalars)
        let copy = try #require(submitted(try controller.handle(.confirm)))
        defer { copy.destroy() }
        #expect(try holds(copy, "Pašssword!"))
    }
}
