/// Something that happened to a PIN screen, reported by the UI layer to
/// ``PinEntryController/handle(_:)``.
public enum PinEntryEvent: Equatable, Sendable {
    /// The screen appeared: a fresh password and a freshly shuffled keypad
    /// are created.
    case appear
    /// The screen disappeared: the password is wiped and destroyed.
    case disappear
    /// The user tapped the key with this identifier.
    case keyPressed(KeyIdentifier)
    /// The user typed a character on a hardware keyboard (terminal, external
    /// keyboard). For a numeric format anything but a digit is ignored.
    case typed(Unicode.Scalar)
    /// Backspace on a hardware keyboard: removes the last character, but on
    /// an empty PIN it is ignored rather than cancelling.
    case deleteBackward
    /// The user asked to confirm (the confirm button, or Enter).
    case confirm
    /// The user cancelled explicitly (a Cancel button, Escape).
    case cancel
    /// The application resigned active (incoming call, Control Center, or the
    /// system biometric prompt itself).
    case resignActive
    /// The application entered the background.
    case enterBackground
    /// The biometric prompt finished.
    case biometryFinished(BiometryOutcome)
    /// The operation that received the submitted PIN finished.
    case operationFinished(OperationOutcome)
}

/// How a biometric prompt ended.
public enum BiometryOutcome: Equatable, Sendable {
    /// The user was authenticated; the screen is done.
    case succeeded
    /// The user cancelled the prompt; the keypad stays.
    case cancelled
    /// Biometric authentication failed; the keypad stays.
    case failed
}

/// How the operation that used the submitted PIN ended.
public enum OperationOutcome: Equatable, Sendable {
    /// The operation succeeded; the screen is done.
    case succeeded
    /// The server rejected the PIN (the wrong-PIN hook): the PIN is cleared
    /// and the remaining attempts are shown. With no attempts left the entry
    /// is cancelled as ``CancellationReason/blocked``.
    case wrongPin(remainingAttempts: Int, maximumAttempts: Int)
    /// The operation failed for another reason (network, server); the PIN is
    /// cleared and the user may try again.
    case failed
}
