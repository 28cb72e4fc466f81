/// Where a PIN screen is in its life.
public enum PinEntryPhase: Equatable, Sendable {
    /// Not on screen: no password exists.
    case notPresented
    /// Accepting keys.
    case entering
    /// The biometric prompt is showing; keys are ignored, resign-active does
    /// not dismiss.
    case biometryInProgress
    /// A PIN was submitted; every key is ignored until the operation finishes.
    case submitted
    /// The operation or biometry succeeded; the password is wiped.
    case finished
    /// The entry was cancelled; the password is wiped.
    case cancelled(CancellationReason)
}

/// What the screen shows, as values that reveal nothing but counts.
public struct PinEntryState: Equatable, Sendable {
    /// The phase.
    public var phase: PinEntryPhase
    /// How many characters are entered (one dot each).
    public var enteredLength: Int
    /// The length policy (the number of dots for a fixed length).
    public var lengthPolicy: PinLengthPolicy
    /// Whether the confirm button is enabled (variable length only, from the minimum).
    public var isConfirmEnabled: Bool
    /// Whether a confirm button exists at all (variable length only).
    public var showsConfirmButton: Bool
    /// Whether delete would cancel (the PIN is empty); label the key accordingly.
    public var deleteCancels: Bool
    /// Remaining attempts after a wrong PIN, if the server reported them.
    public var remainingAttempts: RemainingAttempts?

    /// Creates a state (for comparisons in tests).
    /// - Parameters: one per property, see each property.
    public init(
        phase: PinEntryPhase, enteredLength: Int, lengthPolicy: PinLengthPolicy,
        isConfirmEnabled: Bool, showsConfirmButton: Bool, deleteCancels: Bool,
        remainingAttempts: RemainingAttempts?
    ) {
        self.phase = phase
        self.enteredLength = enteredLength
        self.lengthPolicy = lengthPolicy
        self.isConfirmEnabled = isConfirmEnabled
        self.showsConfirmButton = showsConfirmButton
        self.deleteCancels = deleteCancels
        self.remainingAttempts = remainingAttempts
    }
}

/// Attempts left after a wrong PIN, as the server reports them.
public struct RemainingAttempts: Equatable, Sendable {
    /// Attempts left.
    public var remaining: Int
    /// The server's limit.
    public var maximum: Int

    /// Creates the value.
    /// - Parameters:
    ///   - remaining: attempts left.
    ///   - maximum: the limit.
    public init(remaining: Int, maximum: Int) {
        self.remaining = remaining
        self.maximum = maximum
    }
}
