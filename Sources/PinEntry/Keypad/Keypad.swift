/// The PIN keypad model: keys 0–9, delete, and biometry when it is available.
///
/// Every keypad is built fresh (one per appearance of a PIN screen) with
/// - ``keys`` in a random order, drawn by an unbiased Fisher–Yates shuffle
///   from a CSPRNG: add the key views to the view tree in exactly this order,
///   so the order of views does not reveal which key is which;
/// - a ``KeypadKey/position`` fixed by the key (or by the shuffled layout), so
///   the keypad looks the same as always;
/// - random ``KeyIdentifier``s that never encode the digit.
///
/// A press is reported to ``PinEntryController`` by identifier; the UI plays
/// the key's ``KeypadKey/pressFeedback`` (a haptic) and changes nothing else.
public struct Keypad: Sendable {
    /// The keys in the order a UI adds their views (shuffled on every keypad).
    public let keys: [KeypadKey]
    /// Where the digits sit on screen.
    public let layout: KeypadLayout

    /// Builds a keypad.
    /// - Parameters:
    ///   - layout: standard telephone layout, or shuffled digits.
    ///   - includesBiometry: whether to include the biometry key; pass `true`
    ///     only when biometric authentication is available.
    ///   - strings: titles and accessibility labels.
    ///   - randomSource: where the view order, layout and identifiers come
    ///     from (default: the system CSPRNG).
    /// - Throws: ``PinEntryError/randomSourceFailed``.
    public init(
        layout: KeypadLayout = .standard, includesBiometry: Bool,
        strings: PinEntryStrings = .english,
        randomSource: some RandomSource = SystemRandomSource()
    ) throws(PinEntryError) {
        var positions: [PinKey: GridPosition] = [:]
        for key in PinKey.all { positions[key] = key.standardPosition }
        if layout == .shuffledDigits {
            var cells = (0...9).map { PinKey.digit(UInt8($0)).standardPosition }
            try randomSource.shuffle(&cells)
            for digit in 0...9 { positions[.digit(UInt8(digit))] = cells[digit] }
        }
        var present = PinKey.all.filter { includesBiometry || $0 != .biometry }
        try randomSource.shuffle(&present)
        var built: [KeypadKey] = []
        var seen = Set<KeyIdentifier>()
        for key in present {
            var id = try KeyIdentifier(random: randomSource)
            while !seen.insert(id).inserted { id = try KeyIdentifier(random: randomSource) }
            built.append(Self.makeKey(key, id: id, position: positions[key]!, strings: strings))
        }
        self.keys = built
        self.layout = layout
    }

    /// The key with this identifier, if this keypad issued it.
    /// - Returns: the key, or `nil` for an identifier from another keypad.
    public func key(withID id: KeyIdentifier) -> KeypadKey? {
        keys.first { $0.id == id }
    }

    /// The key drawn in a grid cell.
    /// - Returns: the key, or `nil` for the empty biometry cell.
    public func key(at position: GridPosition) -> KeypadKey? {
        keys.first { $0.position == position }
    }

    /// Whether the keypad has a biometry key.
    public var hasBiometryKey: Bool { keys.contains { $0.kind == .biometry } }

    /// The key that enters `digit` (for a UI that maps a hardware key to the
    /// on-screen key, such as the terminal pad).
    func key(forDigit digit: UInt8) -> KeypadKey? {
        keys.first { $0.key == .digit(digit) }
    }

    private static func makeKey(
        _ key: PinKey, id: KeyIdentifier, position: GridPosition,
        strings: PinEntryStrings
    ) -> KeypadKey {
        switch key {
        case .digit(let value):
            KeypadKey(
                id: id, kind: .digit, position: position, title: strings.digitTitle(Int(value)),
                accessibilityLabel: strings.digitAccessibilityLabel(Int(value)), key: key)
        case .biometry:
            KeypadKey(
                id: id, kind: .biometry, position: position, title: strings.biometryTitle,
                accessibilityLabel: strings.biometryAccessibilityLabel, key: key)
        case .delete:
            KeypadKey(
                id: id, kind: .delete, position: position, title: strings.deleteTitle,
                accessibilityLabel: strings.deleteAccessibilityLabel, key: key)
        }
    }
}

// MARK: - Descriptions

extension Keypad: CustomStringConvertible {
    /// `Keypad(12 keys, standard)`: never the mapping of identifiers to digits.
    public var description: String { "Keypad(\(keys.count) keys, \(layout.rawValue))" }
}
