import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The terminal's settings to put back if a signal ends the process while echo is off.
/// Written once before the handlers are installed, read only by the handler.
nonisolated(unsafe) private var settingsToRestore = termios()

/// Puts the terminal's settings back, ends the hidden line and exits with the
/// cancellation code. Async-signal-safe: `tcsetattr(3)`, `write(2)`, `_exit(2)`.
private func restoreTerminalAndExit(_ signal: Int32) {
    _ = tcsetattr(0, TCSANOW, &settingsToRestore)
    var newline: UInt8 = 0x0A
    _ = write(2, &newline, 1)
    _exit(130)
}

/// A secret typed on the terminal (`vault init` with a terminal on standard
/// input): read with echo off, so it never shows on the screen or in the
/// terminal's scrollback.
enum TerminalSecret {
    /// What the user is told before typing.
    static let prompt = "Type the secret (it is not shown), then Enter and Ctrl-D; the last newline is not kept:"

    /// Reads standard input, a terminal, with echo off until end of input
    /// (Ctrl-D), into secure memory. One trailing newline (the Enter before
    /// Ctrl-D) is not part of the secret. Ctrl-C, or the terminal closing,
    /// puts echo back before the process ends with exit code 130.
    /// - Parameter maximum: the longest secret, in bytes.
    /// - Returns: the buffer and how many of its bytes are the secret.
    /// - Throws: ``SecureIO/Failure`` as ``SecureIO/readAll(from:maximum:)``.
    static func read(maximum: Int) throws -> (buffer: SecureBytes, count: Int) {
        var saved = termios()
        guard tcgetattr(0, &saved) == 0 else { return try SecureIO.readAll(from: 0, maximum: maximum) }
        settingsToRestore = saved
        var hidden = saved
        hidden.c_lflag &= ~tcflag_t(ECHO | ECHONL)
        let signals: [Int32] = [SIGINT, SIGTERM, SIGQUIT, SIGHUP]
        var previous: [sigaction] = []
        for signal in signals {
            var action = sigaction()
            sigemptyset(&action.sa_mask)
            #if canImport(Glibc)
                action.__sigaction_handler.sa_handler = restoreTerminalAndExit
            #else
                action.__sigaction_u.__sa_handler = restoreTerminalAndExit
            #endif
            var old = sigaction()
            _ = sigaction(signal, &action, &old)
            previous.append(old)
        }
        _ = tcsetattr(0, TCSAFLUSH, &hidden)
        defer {
            _ = tcsetattr(0, TCSANOW, &saved)
            for (signal, old) in zip(signals, previous) {
                var action = old
                _ = sigaction(signal, &action, nil)
            }
            CLI.printError("")  // the Enter the user typed was not echoed either
        }
        CLI.printError(prompt)
        let (buffer, read) = try SecureIO.readAll(from: 0, maximum: maximum)
        let endsWithNewline = read > 0 && buffer.withUnsafeBytes { $0[read - 1] == 0x0A }
        return (buffer, endsWithNewline ? read - 1 : read)
    }
}
