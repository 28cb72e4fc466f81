import PinEntry
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The signal the handler saw last, for the reader to collect.
private let trappedSignal = Atomic<Int32>(0)
/// The write end of the self-pipe, or -1 while no trap is installed.
private let wakeDescriptor = Atomic<Int32>(-1)

/// The handler: async-signal-safe (two atomic operations and `write(2)`),
/// and it preserves `errno`.
private func recordSignal(_ signal: Int32) {
    let savedErrno = errno
    trappedSignal.store(signal, ordering: .relaxed)
    let fd = wakeDescriptor.load(ordering: .relaxed)
    if fd >= 0 {
        var byte: UInt8 = 1
        _ = write(fd, &byte, 1)
    }
    errno = savedErrno
}

/// Catches the signals that must end a PIN entry while the terminal is in
/// raw mode — `SIGINT`, `SIGTERM`, `SIGQUIT`, `SIGHUP`, `SIGTSTP` — and
/// ignores `SIGPIPE`, so that instead of dying or stopping with the terminal
/// in raw mode and a half-typed PIN in memory, the reader wipes, restores the
/// terminal and reports a cancellation. The handler only writes a byte to a
/// self-pipe that the reader polls beside the terminal, so no signal can slip
/// in between a check and a blocking `read(2)`.
///
/// One trap at a time per process; ``restore()`` puts the previous handlers back.
final class SignalTrap {
    static let caught: [Int32] = [SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGTSTP]

    /// Poll this descriptor for readability: a signal arrived.
    let readDescriptor: Int32
    private let writeDescriptor: Int32
    private var saved: [(signal: Int32, action: sigaction)] = []
    private var savedMask = sigset_t()
    private var maskSaved = false
    private var restored = false

    /// Installs the handlers.
    /// - Throws: ``PinEntryTerminalError/terminalFailure(errno:)`` if the pipe or a
    ///   handler cannot be set up, or another trap is active (`EBUSY`).
    init() throws(PinEntryTerminalError) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw .terminalFailure(errno: errno) }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        readDescriptor = fds[0]
        writeDescriptor = fds[1]
        guard wakeDescriptor.compareExchange(expected: -1, desired: fds[1], ordering: .sequentiallyConsistent).exchanged
        else {
            // Another trap is active: leave it untouched. Mark this one
            // restored first, so deinit neither closes twice nor clears
            // the active trap's descriptor.
            restored = true
            close(fds[0]); close(fds[1])
            throw .terminalFailure(errno: EBUSY)
        }
        trappedSignal.store(0, ordering: .sequentiallyConsistent)
        do throws(PinEntryTerminalError) {
            for signal in Self.caught { try install(signal, handler: recordSignal) }
            try install(SIGPIPE, handler: nil)
            // A process may inherit these signals blocked (a parent's mask
            // survives exec): unblock them for the entry, or a hang-up could
            // never cancel it.
            var unblock = sigset_t()
            sigemptyset(&unblock)
            for signal in Self.caught { sigaddset(&unblock, signal) }
            let status = pthread_sigmask(SIG_UNBLOCK, &unblock, &savedMask)
            guard status == 0 else { throw PinEntryTerminalError.terminalFailure(errno: status) }
            maskSaved = true
        } catch {
            restore()
            throw error
        }
    }

    deinit { restore() }

    /// The signal that arrived, if any; drains the self-pipe.
    func takeSignal() -> Int32? {
        var byte: UInt8 = 0
        while read(readDescriptor, &byte, 1) > 0 {}
        let signal = trappedSignal.exchange(0, ordering: .sequentiallyConsistent)
        return signal == 0 ? nil : signal
    }

    /// Puts the previous handlers back and closes the pipe. Idempotent.
    func restore() {
        guard !restored else { return }
        restored = true
        if maskSaved { _ = pthread_sigmask(SIG_SETMASK, &savedMask, nil) }
        for (signal, action) in saved.reversed() {
            var previous = action
            _ = sigaction(signal, &previous, nil)
        }
        saved.removeAll()
        _ = wakeDescriptor.compareExchange(expected: writeDescriptor, desired: -1, ordering: .sequentiallyConsistent)
        close(readDescriptor)
        close(writeDescriptor)
    }

    private func install(_ signal: Int32, handler: (@convention(c) (Int32) -> Void)?) throws(PinEntryTerminalError) {
        var action = sigaction()
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0  // no SA_RESTART: a blocked call returns EINTR
        #if canImport(Glibc)
            action.__sigaction_handler.sa_handler = handler ?? SIG_IGN
        #else
            action.__sigaction_u.__sa_handler = handler ?? SIG_IGN
        #endif
        var previous = sigaction()
        guard sigaction(signal, &action, &previous) == 0 else { throw .terminalFailure(errno: errno) }
        saved.append((signal, previous))
    }

    /// The cancellation a signal stands for.
    static func reason(for signal: Int32) -> CancellationReason {
        switch signal {
        case SIGTSTP: .suspended
        case SIGHUP: .terminalClosed
        default: .interrupted
        }
    }
}
