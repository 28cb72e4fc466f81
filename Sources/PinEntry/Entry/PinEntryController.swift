import SecureCore

/// The controller of one PIN screen: it owns the screen's `MutablePassword`
/// and keypad, turns UI events into edits of the password, and tells the UI
/// what to do next as ``PinEntryEffect``s.
///
/// - The password is created on ``PinEntryEvent/appear`` and destroyed on
///   ``PinEntryEvent/disappear``, on a dismissal and in `deinit`; digits go
///   straight into it, and it is never copied except into the immutable
///   ``PinEntryEffect/submit(_:)`` copy.
/// - Fixed length: the last digit submits the PIN and every key is then
///   ignored until ``PinEntryEvent/operationFinished(_:)``. Variable length:
///   ``PinEntryEvent/confirm`` works from the minimum; the maximum is enforced.
/// - Delete removes the last character; the delete key on an empty PIN
///   cancels (a hardware Backspace on an empty PIN is ignored).
/// - Resign-active dismisses unless the biometric prompt is showing;
///   enter-background always dismisses. Both wipe and report a cancellation.
/// - Automatic biometry starts once per appearance; the biometry key exists
///   only when biometry is available.
///
/// Concurrency: not `Sendable`; it belongs to the UI's isolation domain, like
/// the password it owns.
public final class PinEntryController {
    /// The screen's configuration.
    public let configuration: PinEntryConfiguration
    /// The current phase.
    public private(set) var phase: PinEntryPhase = .notPresented
    /// The keypad of the current appearance (a new shuffle for each), or
    /// `nil` while the screen is not presented.
    public private(set) var keypad: Keypad?

    private let randomSource: any RandomSource
    private var pin: MutablePassword?
    private var biometryStartedThisAppearance = false
    private var remainingAttempts: RemainingAttempts?
    private var submittedLength = 0

    /// Creates the controller of one PIN screen. Nothing secret exists until
    /// ``PinEntryEvent/appear``.
    /// - Parameters:
    ///   - configuration: format, biometry and texts.
    ///   - randomSource: for the keypad shuffle and identifiers (default: CSPRNG).
    public init(configuration: PinEntryConfiguration, randomSource: any RandomSource = SystemRandomSource()) {
        self.configuration = configuration
        self.randomSource = randomSource
    }

    deinit { pin?.destroy() }

    /// What the screen shows now.
    public var state: PinEntryState {
        let policy = configuration.format.lengthPolicy
        let length = phase == .submitted ? submittedLength : (pin?.length ?? 0)
        return PinEntryState(
            phase: phase, enteredLength: length, lengthPolicy: policy,
            isConfirmEnabled: phase == .entering && !policy.isFixed && length >= policy.minimum,
            showsConfirmButton: !policy.isFixed, deleteCancels: length == 0,
            remainingAttempts: remainingAttempts)
    }

    /// The progress text for the indicator and screen readers, e.g.
    /// "2 of 4 digits entered". Counts only, never a digit of the PIN.
    public var indicatorText: String {
        let strings = configuration.strings
        let length = state.enteredLength
        return configuration.format.isNumeric
            ? strings.digitsEntered(length, configuration.format.lengthPolicy.maximum)
            : strings.charactersEntered(length)
    }

    /// The wrong-PIN message ("4 out of 5 attempts remaining"), if any.
    public var attemptsText: String? {
        remainingAttempts.map { configuration.strings.attemptsRemaining($0.remaining, $0.maximum) }
    }

    /// The accessibility label of the delete key now ("Delete", or "Cancel"
    /// when the PIN is empty).
    public var deleteKeyAccessibilityLabel: String {
        state.deleteCancels
            ? configuration.strings.cancelAccessibilityLabel
            : configuration.strings.deleteAccessibilityLabel
    }

    /// Handles one event.
    /// - Parameter event: what happened.
    /// - Returns: what the UI must do, in order.
    /// - Throws: ``PinEntryError/secureMemory(_:)`` if the password cannot be
    ///   created or edited (the entry is then cancelled and wiped),
    ///   ``PinEntryError/randomSourceFailed`` if no keypad can be shuffled.
    public func handle(_ event: PinEntryEvent) throws(PinEntryError) -> [PinEntryEffect] {
        do {
            return try dispatch(event)
        } catch {
            wipe()
            if phase != .notPresented { phase = .cancelled(.userCancelled) }
            throw error
        }
    }

    /// Applies a text-field edit (the system keyboard's delta: a range of
    /// characters replaced by new ones) to the password, as a secure text
    /// field's delegate does. Pasting several characters works; a paste that
    /// contains a character the format rejects, or that would exceed the
    /// maximum, is refused as a whole and nothing is stored.
    /// - Parameters:
    ///   - range: the replaced characters, in `0 ... length`.
    ///   - replacement: the new characters (for example `string.unicodeScalars`).
    /// - Returns: the effects, ``PinEntryEffect/ignored(_:)`` with the reason
    ///   when the edit was refused.
    /// - Throws: ``PinEntryError/editOutOfRange(location:length:passwordLength:)``
    ///   for a range outside the password, ``PinEntryError/secureMemory(_:)``.
    public func applyEdit<C: Collection>(replacing range: Range<Int>, with replacement: C)
        throws(PinEntryError) -> [PinEntryEffect] where C.Element == Unicode.Scalar
    {
        guard let pin, phase == .entering else { return [.ignored(phase == .notPresented ? .notPresented : .busy)] }
        let format = configuration.format
        guard replacement.allSatisfy(format.accepts) else { return [.ignored(.characterNotAllowed)] }
        guard range.lowerBound >= 0, range.upperBound <= pin.length else {
            throw .editOutOfRange(location: range.lowerBound, length: range.count, passwordLength: pin.length)
        }
        guard pin.length - range.count + replacement.count <= format.lengthPolicy.maximum else {
            return [.ignored(.maximumLengthReached)]
        }
        _ = try pin.applyTextFieldEdit(replacing: range, with: replacement)
        return try afterCharacterAdded(feedback: false)
    }

    // MARK: - Event handling

    private func dispatch(_ event: PinEntryEvent) throws(PinEntryError) -> [PinEntryEffect] {
        switch event {
        case .appear: return try appear()
        case .disappear:
            wipe()
            keypad = nil
            phase = .notPresented
            return []
        case .keyPressed(let id): return try keyPressed(id)
        case .typed(let scalar): return try typed(scalar)
        case .deleteBackward: return try delete(feedback: false)
        case .confirm: return try confirm()
        case .cancel:
            guard isPresented else { return [.ignored(.notPresented)] }
            return dismiss(.userCancelled)
        case .resignActive:
            guard isPresented else { return [.ignored(.notPresented)] }
            if phase == .biometryInProgress { return [.ignored(.biometryInProgress)] }
            return dismiss(.resignedActive)
        case .enterBackground:
            guard isPresented else { return [.ignored(.notPresented)] }
            return dismiss(.enteredBackground)
        case .biometryFinished(let outcome): return biometryFinished(outcome)
        case .operationFinished(let outcome): return try operationFinished(outcome)
        }
    }

    /// Presented and not yet ended: a password exists.
    private var isPresented: Bool {
        switch phase {
        case .entering, .biometryInProgress, .submitted: true
        case .notPresented, .finished, .cancelled: false
        }
    }

    private func appear() throws(PinEntryError) -> [PinEntryEffect] {
        guard !isPresented else { return [.ignored(.notApplicable)] }
        wipe()
        keypad = try Keypad(
            layout: configuration.keypadLayout,
            includesBiometry: configuration.isBiometryAvailable,
            strings: configuration.strings, randomSource: randomSource)
        do { pin = try MutablePassword() } catch { throw PinEntryError(error) }
        remainingAttempts = nil
        biometryStartedThisAppearance = false
        phase = .entering
        var effects: [PinEntryEffect] = [.updateIndicator]
        if configuration.isBiometryAvailable && configuration.biometryStart == .automatic {
            biometryStartedThisAppearance = true
            phase = .biometryInProgress
            effects.append(.startBiometry)
        }
        return effects
    }

    private func keyPressed(_ id: KeyIdentifier) throws(PinEntryError) -> [PinEntryEffect] {
        guard let ignored = notAccepting() else {
            guard let key = keypad?.key(withID: id) else { return [.ignored(.unknownKey)] }
            switch key.key {
            case .digit(let digit): return try add(Unicode.Scalar(0x30 + digit), feedback: true)
            case .delete: return try delete(feedback: true)
            case .biometry:
                guard configuration.isBiometryAvailable else { return [.ignored(.biometryUnavailable)] }
                biometryStartedThisAppearance = true
                phase = .biometryInProgress
                return [.haptic, .startBiometry]
            }
        }
        return [.ignored(ignored)]
    }

    private func typed(_ scalar: Unicode.Scalar) throws(PinEntryError) -> [PinEntryEffect] {
        if let ignored = notAccepting() { return [.ignored(ignored)] }
        return try add(scalar, feedback: false)
    }

    /// Why keys are not accepted now, or `nil` when they are.
    private func notAccepting() -> IgnoredInput? {
        switch phase {
        case .entering: nil
        case .biometryInProgress, .submitted: .busy
        case .notPresented, .finished, .cancelled: .notPresented
        }
    }

    private func add(_ scalar: Unicode.Scalar, feedback: Bool) throws(PinEntryError) -> [PinEntryEffect] {
        guard let pin else { return [.ignored(.notPresented)] }
        guard configuration.format.accepts(scalar) else { return [.ignored(.characterNotAllowed)] }
        guard pin.length < configuration.format.lengthPolicy.maximum else { return [.ignored(.maximumLengthReached)] }
        do { try pin.addCharacter(scalar) } catch { throw PinEntryError(error) }
        return try afterCharacterAdded(feedback: feedback)
    }

    private func afterCharacterAdded(feedback: Bool) throws(PinEntryError) -> [PinEntryEffect] {
        let policy = configuration.format.lengthPolicy
        var effects: [PinEntryEffect] = feedback ? [.haptic] : []
        if policy.isFixed, let pin, pin.length == policy.maximum {
            effects.append(contentsOf: try submit())
        } else {
            effects.append(.updateIndicator)
        }
        return effects
    }

    private func delete(feedback: Bool) throws(PinEntryError) -> [PinEntryEffect] {
        if let ignored = notAccepting() { return [.ignored(ignored)] }
        guard let pin else { return [.ignored(.notPresented)] }
        if pin.length == 0 {
            // The on-screen delete key doubles as cancel on an empty PIN; a
            // hardware Backspace held down one press too long must not.
            return feedback ? [.haptic] + dismiss(.userCancelled) : [.ignored(.notApplicable)]
        }
        do { try pin.removeLastCharacter() } catch { throw PinEntryError(error) }
        return (feedback ? [.haptic] : []) + [.updateIndicator]
    }

    private func confirm() throws(PinEntryError) -> [PinEntryEffect] {
        if let ignored = notAccepting() { return [.ignored(ignored)] }
        guard let pin else { return [.ignored(.notPresented)] }
        guard pin.length >= configuration.format.lengthPolicy.minimum else { return [.ignored(.tooShort)] }
        return try submit()
    }

    private func submit() throws(PinEntryError) -> [PinEntryEffect] {
        guard let pin else { return [.ignored(.notPresented)] }
        let copy: Password
        do {
            copy = try pin.copyToImmutable()
            submittedLength = pin.length
            try pin.clear()
        } catch { throw PinEntryError(error) }
        phase = .submitted
        return [.updateIndicator, .submit(copy)]
    }

    private func biometryFinished(_ outcome: BiometryOutcome) -> [PinEntryEffect] {
        guard phase == .biometryInProgress else { return [.ignored(.biometryUnavailable)] }
        switch outcome {
        case .succeeded:
            wipe()
            phase = .finished
            return [.finished]
        case .cancelled, .failed:
            // Back to the keypad; automatic start already happened for this
            // appearance, so a cancelled prompt does not come back by itself.
            phase = .entering
            return [.updateIndicator]
        }
    }

    private func operationFinished(_ outcome: OperationOutcome) throws(PinEntryError) -> [PinEntryEffect] {
        guard phase == .submitted || (phase == .entering && outcome != .succeeded) else {
            return [.ignored(.notApplicable)]
        }
        submittedLength = 0
        switch outcome {
        case .succeeded:
            wipe()
            phase = .finished
            return [.finished]
        case .wrongPin(let remaining, let maximum):
            do { try pin?.clear() } catch { throw PinEntryError(error) }
            remainingAttempts = RemainingAttempts(remaining: max(0, remaining), maximum: maximum)
            if remaining <= 0 { return dismiss(.blocked) }
            phase = .entering
            return [.updateIndicator]
        case .failed:
            do { try pin?.clear() } catch { throw PinEntryError(error) }
            phase = .entering
            return [.updateIndicator]
        }
    }

    private func dismiss(_ reason: CancellationReason) -> [PinEntryEffect] {
        wipe()
        keypad = nil
        submittedLength = 0
        phase = .cancelled(reason)
        return [.cancelled(reason)]
    }

    /// Wipes and destroys the password now.
    private func wipe() {
        pin?.destroy()
        pin = nil
    }
}

// MARK: - Redacted description

extension PinEntryController: CustomStringConvertible {
    /// The phase and the number of characters entered; never their values.
    public var description: String { "PinEntryController(\(phase), \(state.enteredLength) entered)" }
}
