#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A terminal switched to raw mode for PIN entry: no echo, no canonical
/// line editing, no signal characters (Ctrl-C and Ctrl-Z arrive as bytes and
/// are handled as cancellations), no flow control or CR translation. One
/// byte per `read(2)`.
///
/// ``restore()`` puts the saved settings back with `TCSAFLUSH`, which also
/// discards anything typed but not read (keys pressed after an
/// auto-confirm must not reach the shell or the next reader).
final class TerminalSession {
    let descriptor: Int32
    private var original: termios
    private var restored = false

    /// Saves the settings and enters raw mode.
    /// - Throws: ``PinEntryTerminalError/notATerminal``, ``PinEntryTerminalError/terminalFailure(errno:)``.
    init(descriptor: Int32) throws(PinEntryTerminalError) {
        guard isatty(descriptor) == 1 else { throw .notATerminal }
        var settings = termios()
        guard tcgetattr(descriptor, &settings) == 0 else { throw .terminalFailure(errno: errno) }
        self.descriptor = descriptor
        self.original = settings
        var raw = settings
        raw.c_lflag &= ~tcflag_t(ECHO | ECHONL | ICANON | ISIG | IEXTEN)
        raw.c_iflag &= ~tcflag_t(IXON | ICRNL | INLCR | IGNCR | ISTRIP)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        guard Self.apply(&raw, to: descriptor) else { throw .terminalFailure(errno: errno) }
    }

    deinit { restore() }

    /// Restores the saved settings. Idempotent.
    func restore() {
        guard !restored else { return }
        restored = true
        _ = Self.apply(&original, to: descriptor)
    }

    private static func apply(_ settings: inout termios, to descriptor: Int32) -> Bool {
        while true {
            if tcsetattr(descriptor, TCSAFLUSH, &settings) == 0 { return true }
            if errno != EINTR { return false }
        }
    }
}
