import SecureCore

/// What the UI layer must do after an event. The controller never calls the
/// UI; it returns these, in order.
public enum PinEntryEffect: Sendable {
    /// Acknowledge the key press with a short haptic. Do not highlight,
    /// animate or otherwise change the key.
    case haptic
    /// Start the operation with this immutable copy of the PIN; destroy it
    /// when the operation is done, and report ``PinEntryEvent/operationFinished(_:)``.
    /// Until then every key is ignored.
    case submit(Password)
    /// Show the biometric prompt; report ``PinEntryEvent/biometryFinished(_:)``.
    case startBiometry
    /// The entry ended without a PIN: report the cancellation to the flow
    /// that asked for the PIN and dismiss the screen. The PIN is already wiped.
    case cancelled(CancellationReason)
    /// The operation or biometry succeeded: dismiss the screen.
    case finished
    /// Update the progress indicator, confirm button and delete label from
    /// ``PinEntryController/state``.
    case updateIndicator
    /// The input was ignored, for the documented reason; nothing was stored.
    case ignored(IgnoredInput)
}

/// Why an input was ignored. Nothing is stored in any of these cases.
public enum IgnoredInput: Equatable, Sendable {
    /// The screen is not showing (before ``PinEntryEvent/appear`` or after a dismissal).
    case notPresented
    /// A PIN was submitted and its operation is still running, or the
    /// biometric prompt is showing.
    case busy
    /// An identifier this keypad did not issue.
    case unknownKey
    /// A character the format does not allow (a non-digit in a numeric PIN,
    /// or a control character).
    case characterNotAllowed
    /// The maximum length is reached.
    case maximumLengthReached
    /// Confirm before the minimum length.
    case tooShort
    /// The biometry key or prompt without biometry being available, or a
    /// biometry result without a prompt.
    case biometryUnavailable
    /// Resign-active while the biometric prompt is showing (the prompt itself
    /// makes the application inactive).
    case biometryInProgress
    /// An event that does not apply in the current phase (for example an
    /// operation result while nothing was submitted, or a second appear).
    case notApplicable
}
