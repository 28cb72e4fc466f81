import SecureCore
import TestSupport
import Testing

@testable import PinEntry

/// One step a test drives: an event, or a key pressed by its drawn title.
enum Step: Sendable, CustomStringConvertible {
    case event(PinEntryEvent)
    case keys(String)  // on-screen keys, one character title each: digits and "⌫"
    case key(String)  // one on-screen key by its whole title, e.g. "Bio"
    case typed(String)  // hardware keyboard characters
    case foreignKey

    var description: String {
        switch self {
        case .event(let event): "\(event)"
        case .keys(let titles): "keys \(titles)"
        case .key(let title): "key \(title)"
        case .typed(let text): "typed \(text)"
        case .foreignKey: "foreign key"
        }
    }
}

struct ControllerCase: Sendable, CustomTestStringConvertible {
    let name: String
    let configuration: PinEntryConfiguration
    let steps: [Step]
    let phase: PinEntryPhase
    let length: Int
    let confirmEnabled: Bool
    let attempts: RemainingAttempts?
    let lastEffects: [EffectKind]

    var testDescription: String { name }

    init(
        _ name: String, _ steps: [Step],
        phase: PinEntryPhase, length: Int, confirmEnabled: Bool = false, attempts: RemainingAttempts? = nil,
        last: [EffectKind]
    ) {
        self.init(
            name, fixedFour, steps, phase: phase, length: length, confirmEnabled: confirmEnabled,
            attempts: attempts, last: last)
    }

    init(
        _ name: String, _ configuration: PinEntryConfiguration, _ steps: [Step],
        phase: PinEntryPhase, length: Int, confirmEnabled: Bool = false, attempts: RemainingAttempts? = nil,
        last: [EffectKind]
    ) {
        self.name = name
        self.configuration = configuration
        self.steps = steps
        self.phase = phase
        self.length = length
        self.confirmEnabled = confirmEnabled
        self.attempts = attempts
        self.lastEffects = last
    }
}

extension EffectKind: @unchecked Sendable {}

let fixedFour = PinEntryConfiguration(complexity: .fourDigits)
let variable = PinEntryConfiguration(complexity: .fourToEightDigits)
let autoBiometry = PinEntryConfiguration(complexity: .fourDigits, isBiometryAvailable: true, biometryStart: .automatic)
let onRequest = PinEntryConfiguration(complexity: .fourDigits, isBiometryAvailable: true, biometryStart: .onUserRequest)

let controllerCases: [ControllerCase] = [
    // Entering, fixed length
    .init(
        "fixed: three digits", [.event(.appear), .keys("123")], phase: .entering, length: 3,
        last: [.haptic, .updateIndicator]),
    .init(
        "fixed: the last digit auto-confirms", [.event(.appear), .keys("1234")], phase: .submitted, length: 4,
        last: [.haptic, .updateIndicator, .submit]),
    .init(
        "fixed: digits after auto-confirm are ignored", [.event(.appear), .keys("12345")], phase: .submitted,
        length: 4, last: [.ignored(.busy)]),
    .init(
        "fixed: delete after auto-confirm is ignored", [.event(.appear), .keys("1234⌫")], phase: .submitted,
        length: 4, last: [.ignored(.busy)]),
    .init(
        "fixed: confirm after auto-confirm is ignored", [.event(.appear), .keys("1234"), .event(.confirm)],
        phase: .submitted, length: 4, last: [.ignored(.busy)]),
    .init(
        "delete removes the last digit", [.event(.appear), .keys("12⌫")], phase: .entering, length: 1,
        last: [.haptic, .updateIndicator]),
    .init(
        "delete on empty cancels", [.event(.appear), .keys("⌫")], phase: .cancelled(.userCancelled), length: 0,
        last: [.haptic, .cancelled(.userCancelled)]),
    .init(
        "keys after a cancel are ignored", [.event(.appear), .keys("⌫1")], phase: .cancelled(.userCancelled),
        length: 0, last: [.ignored(.notPresented)]),
    .init(
        "hardware backspace on empty does not cancel", [.event(.appear), .event(.deleteBackward)],
        phase: .entering, length: 0, last: [.ignored(.notApplicable)]),
    .init(
        "typed digits fill and auto-confirm", [.event(.appear), .typed("9876")], phase: .submitted, length: 4,
        last: [.updateIndicator, .submit]),
    .init(
        "typed non-digit is ignored", [.event(.appear), .typed("1a")], phase: .entering, length: 1,
        last: [.ignored(.characterNotAllowed)]),
    .init(
        "explicit cancel wipes", [.event(.appear), .keys("12"), .event(.cancel)],
        phase: .cancelled(.userCancelled), length: 0, last: [.cancelled(.userCancelled)]),
    // Variable length
    .init(
        "variable: confirm before the minimum is ignored", variable, [.event(.appear), .keys("123"), .event(.confirm)],
        phase: .entering, length: 3, last: [.ignored(.tooShort)]),
    .init(
        "variable: confirm enabled at the minimum", variable, [.event(.appear), .keys("1234")],
        phase: .entering, length: 4, confirmEnabled: true, last: [.haptic, .updateIndicator]),
    .init(
        "variable: confirm submits", variable, [.event(.appear), .keys("123456"), .event(.confirm)],
        phase: .submitted, length: 6, last: [.updateIndicator, .submit]),
    .init(
        "variable: the maximum is enforced", variable, [.event(.appear), .keys("123456789")],
        phase: .entering, length: 8, confirmEnabled: true, last: [.ignored(.maximumLengthReached)]),
    // Lifecycle
    .init(
        "resign-active dismisses and wipes", [.event(.appear), .keys("12"), .event(.resignActive)],
        phase: .cancelled(.resignedActive), length: 0, last: [.cancelled(.resignedActive)]),
    .init(
        "background dismisses and wipes", [.event(.appear), .keys("12"), .event(.enterBackground)],
        phase: .cancelled(.enteredBackground), length: 0, last: [.cancelled(.enteredBackground)]),
    .init(
        "resign-active during the biometric prompt is ignored", autoBiometry,
        [.event(.appear), .event(.resignActive)], phase: .biometryInProgress, length: 0,
        last: [.ignored(.biometryInProgress)]),
    .init(
        "background during the biometric prompt dismisses", autoBiometry,
        [.event(.appear), .event(.enterBackground)], phase: .cancelled(.enteredBackground), length: 0,
        last: [.cancelled(.enteredBackground)]),
    .init(
        "background while not presented is ignored", [.event(.enterBackground)], phase: .notPresented,
        length: 0, last: [.ignored(.notPresented)]),
    .init(
        "disappear wipes", [.event(.appear), .keys("12"), .event(.disappear)], phase: .notPresented,
        length: 0, last: []),
    .init(
        "keys before appear are ignored", [.foreignKey], phase: .notPresented, length: 0,
        last: [.ignored(.notPresented)]),
    .init(
        "a key from another keypad is ignored", [.event(.appear), .foreignKey], phase: .entering, length: 0,
        last: [.ignored(.unknownKey)]),
    // Biometry
    .init(
        "automatic biometry starts on appear", autoBiometry, [.event(.appear)], phase: .biometryInProgress,
        length: 0, last: [.updateIndicator, .startBiometry]),
    .init(
        "keys during the biometric prompt are ignored", autoBiometry, [.event(.appear), .keys("1")],
        phase: .biometryInProgress, length: 0, last: [.ignored(.busy)]),
    .init(
        "a cancelled prompt returns to the keypad", autoBiometry,
        [.event(.appear), .event(.biometryFinished(.cancelled))], phase: .entering, length: 0,
        last: [.updateIndicator]),
    .init(
        "a cancelled prompt does not restart on a repeated appear", autoBiometry,
        [.event(.appear), .event(.biometryFinished(.cancelled)), .event(.appear)], phase: .entering, length: 0,
        last: [.ignored(.notApplicable)]),
    .init(
        "a new appearance starts automatic biometry again", autoBiometry,
        [.event(.appear), .event(.biometryFinished(.cancelled)), .event(.disappear), .event(.appear)],
        phase: .biometryInProgress, length: 0, last: [.updateIndicator, .startBiometry]),
    .init(
        "biometry success finishes", autoBiometry, [.event(.appear), .event(.biometryFinished(.succeeded))],
        phase: .finished, length: 0, last: [.finished]),
    .init(
        "on request: appear shows the keypad only", onRequest, [.event(.appear)], phase: .entering, length: 0,
        last: [.updateIndicator]),
    .init(
        "on request: the biometry key starts the prompt", onRequest, [.event(.appear), .keys("12"), .key("Bio")],
        phase: .biometryInProgress, length: 2, last: [.haptic, .startBiometry]),
    .init(
        "a biometry result without a prompt is ignored", onRequest,
        [.event(.appear), .event(.biometryFinished(.succeeded))], phase: .entering, length: 0,
        last: [.ignored(.biometryUnavailable)]),
    // Operation results and the wrong-PIN hook
    .init(
        "wrong PIN clears and shows the remaining attempts",
        [
            .event(.appear), .keys("1234"),
            .event(.operationFinished(.wrongPin(remainingAttempts: 4, maximumAttempts: 5))),
        ],
        phase: .entering, length: 0, attempts: RemainingAttempts(remaining: 4, maximum: 5), last: [.updateIndicator]),
    .init(
        "no attempts left cancels as blocked",
        [
            .event(.appear), .keys("1234"),
            .event(.operationFinished(.wrongPin(remainingAttempts: 0, maximumAttempts: 5))),
        ],
        phase: .cancelled(.blocked), length: 0, attempts: RemainingAttempts(remaining: 0, maximum: 5),
        last: [.cancelled(.blocked)]),
    .init(
        "an operation failure clears for a retry",
        [.event(.appear), .keys("1234"), .event(.operationFinished(.failed)), .keys("5")],
        phase: .entering, length: 1, last: [.haptic, .updateIndicator]),
    .init(
        "an operation success finishes", [.event(.appear), .keys("1234"), .event(.operationFinished(.succeeded))],
        phase: .finished, length: 0, last: [.finished]),
    .init(
        "a success without a submission is ignored", [.event(.appear), .event(.operationFinished(.succeeded))],
        phase: .entering, length: 0, last: [.ignored(.notApplicable)]),
]

@Suite("PinEntryController")
struct PinEntryControllerTests {
    @Test("events → states", arguments: controllerCases)
    func eventsToStates(_ row: ControllerCase) throws {
        let controller = PinEntryController(configuration: row.configuration)
        var last: [PinEntryEffect] = []
        for step in row.steps {
            switch step {
            case .event(let event): last = try controller.handle(event)
            case .keys(let titles): for title in titles { last = try controller.press(String(title)) }
            case .key(let title): last = try controller.press(title)
            case .typed(let text): for scalar in text.unicodeScalars { last = try controller.handle(.typed(scalar)) }
            case .foreignKey: last = try controller.handle(.keyPressed(foreignKeyID))
            }
        }
        let state = controller.state
        #expect(state.phase == row.phase)
        #expect(state.enteredLength == row.length)
        #expect(state.isConfirmEnabled == row.confirmEnabled)
        #expect(state.remainingAttempts == row.attempts)
        #expect(kinds(last) == row.lastEffects)
        submitted(last)?.destroy()
    }

    @Test("the submitted copy holds the digits and the screen's own PIN is cleared")
    func submittedCopy() throws {
        let controller = PinEntryController(configuration: variable)
        _ = try controller.handle(.appear)
        try controller.press(digits: "90210")
        let copy = try #require(submitted(try controller.handle(.confirm)))
        defer { copy.destroy() }
        #expect(try holds(copy, "90210"))
        // The wrong-PIN hook must not touch the copy the operation holds.
        _ = try controller.handle(.operationFinished(.wrongPin(remainingAttempts: 2, maximumAttempts: 5)))
        #expect(try holds(copy, "90210"))
        #expect(controller.state.enteredLength == 0)
        #expect(controller.attemptsText == "2 out of 5 attempts remaining")
    }

    @Test("indicator text counts digits and never shows them")
    func indicator() throws {
        let controller = PinEntryController(configuration: fixedFour)
        _ = try controller.handle(.appear)
        #expect(controller.indicatorText == "0 of 4 digits entered")
        #expect(controller.deleteKeyAccessibilityLabel == "Cancel")
        try controller.press(digits: "79")
        #expect(controller.indicatorText == "2 of 4 digits entered")
        #expect(controller.deleteKeyAccessibilityLabel == "Delete")
        #expect(!String(describing: controller).contains("79"))
        let alphanumeric = PinEntryController(configuration: PinEntryConfiguration(complexity: .alphanumeric))
        _ = try alphanumeric.handle(.appear)
        _ = try alphanumeric.handle(.typed("x"))
        #expect(alphanumeric.indicatorText == "1 character entered")
    }

    @Test("localised strings reach the indicator and the keys")
    func localisedStrings() throws {
        var strings = PinEntryStrings.english
        strings.digitsEntered = { "\($0) / \($1)" }
        strings.deleteAccessibilityLabel = "Smazat"
        var configuration = fixedFour
        configuration.strings = strings
        let controller = PinEntryController(configuration: configuration)
        _ = try controller.handle(.appear)
        try controller.press("3")
        #expect(controller.indicatorText == "1 / 4")
        #expect(controller.keypad?.keys.first { $0.kind == .delete }?.accessibilityLabel == "Smazat")
    }

    @Test("every appearance gets a freshly shuffled keypad with new identifiers")
    func freshKeypadPerAppearance() throws {
        let controller = PinEntryController(configuration: fixedFour)
        _ = try controller.handle(.appear)
        let first = try #require(controller.keypad).keys.map(\.id)
        _ = try controller.handle(.disappear)
        #expect(controller.keypad == nil)
        _ = try controller.handle(.appear)
        let second = try #require(controller.keypad).keys.map(\.id)
        #expect(Set(first).isDisjoint(with: second))
    }

    @Test("the biometry key exists only when biometry is available")
    func biometryKeyOnlyWhenAvailable() throws {
        let without = PinEntryController(configuration: fixedFour)
        _ = try without.handle(.appear)
        #expect(without.keypad?.keys.count == 11)
        #expect(without.keypad?.hasBiometryKey == false)
        #expect(without.keypad?.key(at: GridPosition(row: 3, column: 0)) == nil)
        let with = PinEntryController(configuration: onRequest)
        _ = try with.handle(.appear)
        #expect(with.keypad?.keys.count == 12)
        #expect(with.keypad?.key(at: GridPosition(row: 3, column: 0))?.kind == .biometry)
    }

    @Test("a failing random source cancels the appearance and stores nothing")
    func failingRandomSource() throws {
        let controller = PinEntryController(configuration: fixedFour, randomSource: FailingRandomSource())
        #expect(throws: PinEntryError.randomSourceFailed) { try controller.handle(.appear) }
        #expect(controller.state.phase == .notPresented)
        #expect(controller.keypad == nil)
    }

    @Test("complexity settings store the format only")
    func complexityCodable() throws {
        #expect(PinComplexity.allCases.map(\.rawValue) == ["digits-4", "digits-6", "digits-4-8", "alphanumeric"])
        #expect(PinComplexity.fourDigits.lengthPolicy.isFixed)
        #expect(PinComplexity.sixDigits.lengthPolicy == (try PinLengthPolicy.fixed(6)))
        #expect(PinComplexity.fourToEightDigits.lengthPolicy == (try PinLengthPolicy(minimum: 4, maximum: 8)))
        #expect(!PinComplexity.alphanumeric.isNumeric)
        #expect(PinComplexity(rawValue: "digits-6") == .sixDigits)
        #expect(throws: PinEntryError.invalidLengthPolicy(minimum: 5, maximum: 4)) {
            try PinLengthPolicy(minimum: 5, maximum: 4)
        }
        #expect(throws: PinEntryError.invalidLengthPolicy(minimum: 0, maximum: 0)) { try PinLengthPolicy.fixed(0) }
        #expect(throws: PinEntryError.self) { try PinLengthPolicy.fixed(PinLengthPolicy.absoluteMaximum + 1) }
    }
}
