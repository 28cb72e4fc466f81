import PinEntry
import PinEntryTerminal
import PinStrength
import SecureCore
import Testing

// snippet.begin entering-a-pin
/// Drives the PIN screen's model the way a UI does: appear, keys, confirm.
func enterPIN(_ digits: [UInt32]) throws -> Password? {
    let controller = PinEntryController(configuration: PinEntryConfiguration(complexity: .fourDigits))
    _ = try controller.handle(.appear)  // a freshly shuffled keypad
    guard let keypad = controller.keypad else { return nil }
    var submitted: Password?
    for digit in digits {
        // The UI knows a key by its opaque identifier; its title is what the user sees.
        guard let key = keypad.keys.first(where: { $0.title == String(digit) }) else { return nil }
        for effect in try controller.handle(.keyPressed(key.id)) {
            if case .submit(let pin) = effect { submitted = pin }  // four digits: confirmed on its own
        }
    }
    return submitted
}
// snippet.end

// snippet.begin pin-strength
/// Flags a weak PIN before it is accepted, from the secure buffer alone.
func judge(_ pin: Password) throws(PinStrengthError) -> PinVerdict {
    let report = try PinStrengthMeter().evaluate(pin)  // length and weaknesses, no copy of the PIN
    return PinWarningPolicy().verdict(for: report)
}
// snippet.end

// snippet.begin terminal-pad
/// Asks for a PIN on the terminal: raw mode, dots only, the terminal restored on every exit.
func askOnTerminal() throws(PinEntryTerminalError) -> Password {
    let pad = TerminalPinPad(
        format: PinFormat(.fourToEightDigits), options: TerminalPinPad.Options(prompt: "PIN"))
    return try pad.readPassword()
}
// snippet.end

@Test("article: entering a PIN") func enteringAPIN() throws {
    let pin = try #require(try enterPIN([1, 9, 9, 0]))
    defer { pin.destroy() }
    #expect(pin.length == 4)
    #expect(try judge(pin) != .acceptable)
    _ = askOnTerminal  // compiled; reading needs a terminal
}
