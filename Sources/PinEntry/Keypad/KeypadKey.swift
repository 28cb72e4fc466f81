/// One key as a UI draws it: where it sits, what it shows, what a screen
/// reader says, and how a press is acknowledged. The digit it enters is not
/// a property: the UI reports a press by ``id`` and the controller resolves it.
public struct KeypadKey: Identifiable, Sendable {
    /// What kind of key this is (without the digit).
    public enum Kind: Equatable, Sendable {
        /// A digit key.
        case digit
        /// Starts biometric authentication; present only when biometry is available.
        case biometry
        /// Deletes the last digit; on an empty PIN it cancels the entry.
        case delete
    }

    /// The opaque, per-keypad random identifier; use it as the view's ID.
    public let id: KeyIdentifier
    /// The kind of key.
    public let kind: Kind
    /// The cell of the 3 × 4 grid where the UI places the key. It depends on
    /// the key (and the keypad's layout), never on the order of ``Keypad/keys``.
    public let position: GridPosition
    /// The text drawn on the key (use icons for the special keys if you can).
    public let title: String
    /// The label a screen reader announces for the key.
    public let accessibilityLabel: String
    /// How the UI acknowledges a press: always ``KeyPressFeedback/haptic``.
    /// There is deliberately no highlight: a key that changes its appearance
    /// when pressed shows the PIN to anyone watching the screen or a recording.
    public var pressFeedback: KeyPressFeedback { .haptic }

    let key: PinKey
}

/// The acknowledgement a UI gives for a key press. The type has no visual
/// case on purpose: a pressed key must look exactly like an idle one, and the
/// entered digit is never displayed, not even briefly.
public enum KeyPressFeedback: Equatable, Sendable {
    /// A short vibration (a keyboard-tap haptic, or nothing where the device
    /// has no haptics). The only change on screen is the number of dots.
    case haptic
}

/// Where the digit keys sit on screen.
public enum KeypadLayout: String, Equatable, Sendable, Codable, CaseIterable {
    /// The usual telephone layout, so muscle memory works (recommended for
    /// touch screens). Only the order of views is shuffled.
    case standard
    /// Digits placed in a random permutation of the ten digit cells, drawn for
    /// every keypad, so an observer of cursor movements (arrow keys on a
    /// terminal) learns nothing. Biometry and delete stay in place.
    case shuffledDigits
}
