/// When the biometric prompt starts.
public enum BiometryStart: String, Equatable, Sendable, Codable {
    /// The prompt starts automatically, once per appearance of the screen
    /// (so a cancelled prompt does not start again in a loop); the PIN keypad
    /// is the fallback. Fine for operations the user starts deliberately.
    case automatic
    /// The keypad comes first and biometry starts only when the user taps the
    /// biometry key. Use it for sensitive or irreversible actions, where an
    /// accidental tap plus a glance at the phone must not be enough.
    case onUserRequest
}

/// Everything that shapes one PIN screen. Not secret.
public struct PinEntryConfiguration: Sendable {
    /// The accepted characters and length.
    public var format: PinFormat
    /// Whether biometric authentication is available for this operation; the
    /// biometry key exists only when it is.
    public var isBiometryAvailable: Bool
    /// When the biometric prompt starts, if biometry is available.
    public var biometryStart: BiometryStart
    /// Where the digits sit on the keypad.
    public var keypadLayout: KeypadLayout
    /// The texts.
    public var strings: PinEntryStrings

    /// Creates a configuration.
    /// - Parameters:
    ///   - format: the accepted characters and length.
    ///   - isBiometryAvailable: whether biometry can be used (default `false`).
    ///   - biometryStart: automatic or on request (default on request).
    ///   - keypadLayout: standard (default) or shuffled digits.
    ///   - strings: texts (default English).
    public init(
        format: PinFormat, isBiometryAvailable: Bool = false,
        biometryStart: BiometryStart = .onUserRequest,
        keypadLayout: KeypadLayout = .standard, strings: PinEntryStrings = .english
    ) {
        self.format = format
        self.isBiometryAvailable = isBiometryAvailable
        self.biometryStart = biometryStart
        self.keypadLayout = keypadLayout
        self.strings = strings
    }

    /// Creates a configuration for a stored complexity choice.
    /// - Parameters:
    ///   - complexity: the stored format.
    ///   - isBiometryAvailable: whether biometry can be used (default `false`).
    ///   - biometryStart: automatic or on request (default on request).
    public init(
        complexity: PinComplexity, isBiometryAvailable: Bool = false,
        biometryStart: BiometryStart = .onUserRequest
    ) {
        self.init(
            format: PinFormat(complexity), isBiometryAvailable: isBiometryAvailable,
            biometryStart: biometryStart)
    }
}
