import PinEntry
import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads a PIN or password from a terminal, safely: raw mode without echo,
/// `read(2)` one byte at a time through an incremental UTF-8 decoder straight
/// into a `MutablePassword` (through `PinEntry.PinEntryController`), and only dots on
/// screen.
///
/// - Backspace deletes the last character; Enter confirms a variable length;
///   a fixed length confirms itself on the last digit and every later key is
///   discarded.
/// - Nothing typed is dropped silently: a refused key (a non-digit in a
///   numeric PIN, a key past the maximum, Enter before the minimum) rings the
///   terminal bell and the prompt says why ("digits only", "at most 8
///   digits", "at least 4 digits") until Backspace or the next refusal, so
///   a refusal inside a paste is seen too; editing goes on.
/// - Ctrl-C, Ctrl-Z, Escape, Ctrl-D, `SIGINT`, `SIGTERM`, `SIGQUIT`,
///   `SIGHUP` and `SIGTSTP` wipe the input and throw
///   ``PinEntryTerminalError/cancelled(_:)``; end of file or a read error on the
///   terminal counts as `PinEntry.CancellationReason.terminalClosed`.
/// - Non-digits in a numeric PIN, other control characters, unknown escape
///   sequences and ill-formed UTF-8 are refused that way; nothing of them is
///   stored.
/// - The terminal settings and signal handlers are restored on every exit
///   path, and unread type-ahead is discarded.
/// - Optionally an on-screen keypad drawn from `PinEntry.Keypad`: digits can be typed
///   or chosen with the arrow keys and Space. With
///   `PinEntry.KeypadLayout.shuffledDigits` the same arrow movements mean different
///   digits on every keypad, so a recording of the keystrokes alone does not
///   reveal the PIN (the screen itself still shows the cursor).
public final class TerminalPinPad {
    /// How the pad looks.
    public struct Options: Sendable {
        /// The prompt before the dots.
        public var prompt: String
        /// Whether to draw the on-screen keypad.
        public var showsKeypad: Bool
        /// The keypad's layout.
        public var keypadLayout: KeypadLayout
        /// Whether to print the progress text ("2 of 4 digits entered") next
        /// to the dots, for screen-reader users. Counts only, never digits.
        public var showsProgressText: Bool
        /// The texts.
        public var strings: PinEntryStrings

        /// Creates options.
        /// - Parameters:
        ///   - prompt: the prompt (default "Enter PIN").
        ///   - showsKeypad: draw the keypad (default `false`).
        ///   - keypadLayout: its layout (default standard).
        ///   - showsProgressText: print the progress text (default `false`).
        ///   - strings: texts (default English).
        public init(
            prompt: String = "Enter PIN", showsKeypad: Bool = false,
            keypadLayout: KeypadLayout = .standard, showsProgressText: Bool = false,
            strings: PinEntryStrings = .english
        ) {
            self.prompt = prompt
            self.showsKeypad = showsKeypad
            self.keypadLayout = keypadLayout
            self.showsProgressText = showsProgressText
            self.strings = strings
        }
    }

    /// The accepted characters and length.
    public let format: PinFormat
    /// How the pad looks.
    public let options: Options
    private let input: Int32
    private let output: Int32
    private let randomSource: any RandomSource

    /// Creates a pad; nothing happens until ``readPassword()``.
    /// - Parameters:
    ///   - format: the accepted characters and length.
    ///   - input: the terminal to read (default standard input).
    ///   - output: where to draw (default standard error, so standard output
    ///     stays free for results).
    ///   - options: how the pad looks.
    ///   - randomSource: for the keypad (default: CSPRNG).
    public init(
        format: PinFormat, input: Int32 = STDIN_FILENO, output: Int32 = STDERR_FILENO,
        options: Options = Options(), randomSource: any RandomSource = SystemRandomSource()
    ) {
        self.format = format
        self.options = options
        self.input = input
        self.output = output
        self.randomSource = randomSource
    }

    /// Reads one PIN or password.
    /// - Returns: an immutable copy of what was entered; destroy it when done.
    /// - Throws: ``PinEntryTerminalError/cancelled(_:)``, ``PinEntryTerminalError/notATerminal``,
    ///   ``PinEntryTerminalError/terminalFailure(errno:)``, ``PinEntryTerminalError/entry(_:)``
    ///   (the controller's secure memory or random source failed).
    public func readPassword() throws(PinEntryTerminalError) -> Password {
        guard isatty(input) == 1 else { throw .notATerminal }
        let controller = PinEntryController(
            configuration: PinEntryConfiguration(
                format: format, keypadLayout: options.keypadLayout,
                strings: options.strings),
            randomSource: randomSource)
        defer { _ = try? controller.handle(.disappear) }
        let trap = try SignalTrap()
        defer { trap.restore() }
        let session = try TerminalSession(descriptor: input)
        defer { session.restore() }
        let screen = TerminalScreen(output: output, options: options)
        defer { screen.finish() }
        do { _ = try controller.handle(.appear) } catch { throw .entry(error) }
        var loop = ReadLoop(input: input, trap: trap, controller: controller, screen: screen)
        defer { loop.decoder.wipe() }
        return try loop.run()
    }
}

/// The read loop of one entry, separated so every exit goes through the
/// pad's `defer`s.
private struct ReadLoop {
    let input: Int32
    let trap: SignalTrap
    let controller: PinEntryController
    let screen: TerminalScreen
    var decoder = TerminalInputDecoder()
    var selected = GridPosition(row: 1, column: 1)

    /// How long a lone Escape waits for the rest of a sequence.
    static let escapeTimeoutMilliseconds: Int32 = 50

    mutating func run() throws(PinEntryTerminalError) -> Password {
        screen.draw(controller, selected: selected)
        while true {
            var fds = [
                pollfd(fd: input, events: Int16(POLLIN), revents: 0),
                pollfd(fd: trap.readDescriptor, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&fds, 2, decoder.isInEscape ? Self.escapeTimeoutMilliseconds : -1)
            if let signal = trap.takeSignal() { return try cancel(SignalTrap.reason(for: signal)) }
            if ready < 0 {
                if errno == EINTR { continue }
                return try cancel(.terminalClosed)
            }
            if ready == 0 {
                if let key = decoder.flushEscape(), let result = try act(on: key) { return result }
                continue
            }
            let events = Int32(fds[0].revents)
            if events & Int32(POLLIN) == 0 {
                if events & Int32(POLLHUP | POLLERR | POLLNVAL) != 0 { return try cancel(.terminalClosed) }
                continue
            }
            var byte: UInt8 = 0
            let count = read(input, &byte, 1)
            if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            guard count == 1 else { return try cancel(.terminalClosed) }
            var next: UInt8? = byte
            byte = 0
            while let current = next {
                next = nil
                if let key = decoder.feed(current), let result = try act(on: key) { return result }
                next = decoder.takeReprocess()
            }
        }
    }

    /// Acts on a key; returns the password once submitted.
    private mutating func act(on key: TerminalKey) throws(PinEntryTerminalError) -> Password? {
        let effects: [PinEntryEffect]
        switch key {
        case .character(let scalar): effects = try handle(.typed(scalar))
        case .backspace: effects = try handle(.deleteBackward)
        case .enter: effects = try handle(.confirm)
        case .space:
            if screen.options.showsKeypad, format.isNumeric, let key = controller.keypad?.key(at: selected) {
                effects = try handle(.keyPressed(key.id))
            } else {
                effects = try handle(.typed(" "))
            }
        case .interrupt: return try cancel(.interrupted)
        case .suspend: return try cancel(.suspended)
        case .cancel: return try cancel(.userCancelled)
        case .arrow(let direction):
            move(direction)
            effects = [.updateIndicator]
        case .ignored: effects = [.ignored(.characterNotAllowed)]
        }
        let refused = effects.compactMap { effect -> IgnoredInput? in
            if case .ignored(let reason) = effect { return reason }
            return nil
        }.first
        // The reason stays until Backspace or another refusal: a pasted "24 68" shows it too.
        if let refused, let text = controller.configuration.strings.refusal(refused, format) {
            screen.notice = text
            screen.ringsBell = true
        } else if key == .backspace {
            screen.notice = nil
        }
        for effect in effects {
            switch effect {
            case .submit(let password):
                screen.draw(controller, selected: selected)
                return password
            case .cancelled(let reason):
                throw .cancelled(reason)
            case .updateIndicator, .haptic, .startBiometry, .finished, .ignored:
                continue
            }
        }
        screen.draw(controller, selected: selected)
        return nil
    }

    private var format: PinFormat { controller.configuration.format }

    /// Hands an event to the controller; its failures are the entry model's.
    private func handle(_ event: PinEntryEvent) throws(PinEntryTerminalError) -> [PinEntryEffect] {
        do { return try controller.handle(event) } catch { throw .entry(error) }
    }

    private func cancel(_ reason: CancellationReason) throws(PinEntryTerminalError) -> Password {
        _ = try? controller.handle(.cancel)
        throw .cancelled(reason)
    }

    /// Moves the selection, skipping the empty biometry cell.
    private mutating func move(_ direction: ArrowDirection) {
        guard screen.options.showsKeypad, let keypad = controller.keypad else { return }
        var row = selected.row, column = selected.column
        while true {
            switch direction {
            case .up: row -= 1
            case .down: row += 1
            case .left: column -= 1
            case .right: column += 1
            }
            guard (0..<GridPosition.rows).contains(row), (0..<GridPosition.columns).contains(column) else { return }
            let candidate = GridPosition(row: row, column: column)
            if keypad.key(at: candidate) != nil {
                selected = candidate
                return
            }
        }
    }
}
