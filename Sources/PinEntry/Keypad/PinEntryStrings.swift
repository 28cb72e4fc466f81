/// Every user-visible and spoken text of the PIN entry, so an app can
/// localise them. None of them ever receives an entered digit: the indicator
/// gets counts only.
public struct PinEntryStrings: Sendable {
    /// The title drawn on a digit key.
    public var digitTitle: @Sendable (_ digit: Int) -> String
    /// What a screen reader says for a digit key.
    public var digitAccessibilityLabel: @Sendable (_ digit: Int) -> String
    /// The title of the biometry key.
    public var biometryTitle: String
    /// What a screen reader says for the biometry key.
    public var biometryAccessibilityLabel: String
    /// The title of the delete key.
    public var deleteTitle: String
    /// What a screen reader says for the delete key while the PIN is not empty.
    public var deleteAccessibilityLabel: String
    /// What a screen reader says for the delete key while the PIN is empty
    /// (it then cancels the entry).
    public var cancelAccessibilityLabel: String
    /// The progress indicator for a PIN, e.g. "2 of 4 digits entered".
    public var digitsEntered: @Sendable (_ entered: Int, _ total: Int) -> String
    /// The progress indicator for an alphanumeric password, e.g. "5 characters entered".
    public var charactersEntered: @Sendable (_ entered: Int) -> String
    /// The wrong-PIN message, e.g. "4 out of 5 attempts remaining".
    public var attemptsRemaining: @Sendable (_ remaining: Int, _ maximum: Int) -> String
    /// Why a key was refused ("digits only", "at most 8 digits", "at least 4
    /// digits"), shown beside the dots (PinEntryTerminal's pad also rings the bell); `nil` for a
    /// refusal that needs no words. Default: ``englishRefusal(_:_:)``.
    public var refusal: @Sendable (_ reason: IgnoredInput, _ format: PinFormat) -> String? = englishRefusal

    /// Creates a set of strings.
    /// - Parameters: one per property, see each property.
    public init(
        digitTitle: @escaping @Sendable (Int) -> String,
        digitAccessibilityLabel: @escaping @Sendable (Int) -> String,
        biometryTitle: String, biometryAccessibilityLabel: String,
        deleteTitle: String, deleteAccessibilityLabel: String, cancelAccessibilityLabel: String,
        digitsEntered: @escaping @Sendable (Int, Int) -> String,
        charactersEntered: @escaping @Sendable (Int) -> String,
        attemptsRemaining: @escaping @Sendable (Int, Int) -> String
    ) {
        self.digitTitle = digitTitle
        self.digitAccessibilityLabel = digitAccessibilityLabel
        self.biometryTitle = biometryTitle
        self.biometryAccessibilityLabel = biometryAccessibilityLabel
        self.deleteTitle = deleteTitle
        self.deleteAccessibilityLabel = deleteAccessibilityLabel
        self.cancelAccessibilityLabel = cancelAccessibilityLabel
        self.digitsEntered = digitsEntered
        self.charactersEntered = charactersEntered
        self.attemptsRemaining = attemptsRemaining
    }

    /// The English refusal texts: they name the rule, never the refused key.
    /// - Parameters:
    ///   - reason: why the key was refused.
    ///   - format: the entry's format.
    /// - Returns: the text, or `nil`.
    public static func englishRefusal(_ reason: IgnoredInput, _ format: PinFormat) -> String? {
        let unit = format.isNumeric ? "digits" : "characters"
        let policy = format.lengthPolicy
        switch reason {
        case .characterNotAllowed: return format.isNumeric ? "digits only" : "no control characters"
        case .maximumLengthReached: return "at most \(policy.maximum) \(unit)"
        case .tooShort:
            return policy.isFixed ? "exactly \(policy.minimum) \(unit)" : "at least \(policy.minimum) \(unit)"
        default: return nil
        }
    }

    /// English texts.
    public static let english = PinEntryStrings(
        digitTitle: { "\($0)" },
        digitAccessibilityLabel: { "\($0)" },
        biometryTitle: "Bio", biometryAccessibilityLabel: "Use biometry",
        deleteTitle: "⌫", deleteAccessibilityLabel: "Delete", cancelAccessibilityLabel: "Cancel",
        digitsEntered: { "\($0) of \($1) digits entered" },
        charactersEntered: { $0 == 1 ? "1 character entered" : "\($0) characters entered" },
        attemptsRemaining: { "\($0) out of \($1) attempts remaining" })
}
