import SecureCore
import Synchronization
import TestSupport

@testable import PinEntry

/// Whether a mutable password holds exactly `text`.
func holds(_ candidate: MutablePassword, _ text: String) throws -> Bool {
    let expected = try password(text)
    defer { expected.destroy() }
    return try candidate.isEqual(to: expected)
}

/// A deterministic random source replaying fixed words, then a counter.
final class ScriptedRandomSource: RandomSource {
    private let state: Mutex<(words: [UInt64], next: Int, drawn: Int)>

    init(_ words: [UInt64]) { state = Mutex((words, 0, 0)) }

    var drawn: Int { state.withLock { $0.drawn } }

    func nextWord() throws(PinEntryError) -> UInt64 {
        state.withLock { s in
            s.drawn += 1
            if s.next < s.words.count {
                defer { s.next += 1 }
                return s.words[s.next]
            }
            // SplitMix64 after the script, so shuffles stay valid.
            s.next += 1
            var z = UInt64(s.next) &* 0x9E37_79B9_7F4A_7C15
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}

/// A source that always fails.
struct FailingRandomSource: RandomSource {
    func nextWord() throws(PinEntryError) -> UInt64 { throw .randomSourceFailed }
}

extension Keypad {
    /// The key whose drawn title is `title` (what a user sees; tests find
    /// keys the way a user does).
    func key(titled title: String) -> KeypadKey? { keys.first { $0.title == title } }
}

extension PinEntryController {
    /// Presses the on-screen key titled `title`.
    @discardableResult
    func press(_ title: String) throws -> [PinEntryEffect] {
        guard let key = keypad?.key(titled: title) else { return try handle(.keyPressed(foreignKeyID)) }
        return try handle(.keyPressed(key.id))
    }

    /// Presses digit keys for every character of `digits`.
    @discardableResult
    func press(digits: String) throws -> [PinEntryEffect] {
        var last: [PinEntryEffect] = []
        for character in digits { last = try press(String(character)) }
        return last
    }
}

/// An identifier issued by a different keypad.
let foreignKeyID: KeyIdentifier = {
    let keypad = try! Keypad(includesBiometry: true)
    return keypad.keys[0].id
}()

/// A comparable summary of effects (Password is not Equatable).
enum EffectKind: Equatable {
    case haptic, submit, startBiometry, cancelled(CancellationReason), finished, updateIndicator
    case ignored(IgnoredInput)

    init(_ effect: PinEntryEffect) {
        switch effect {
        case .haptic: self = .haptic
        case .submit: self = .submit
        case .startBiometry: self = .startBiometry
        case .cancelled(let reason): self = .cancelled(reason)
        case .finished: self = .finished
        case .updateIndicator: self = .updateIndicator
        case .ignored(let reason): self = .ignored(reason)
        }
    }
}

func kinds(_ effects: [PinEntryEffect]) -> [EffectKind] { effects.map(EffectKind.init) }

func submitted(_ effects: [PinEntryEffect]) -> Password? {
    for effect in effects { if case .submit(let password) = effect { return password } }
    return nil
}
