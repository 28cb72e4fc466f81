import Testing

@testable import PinEntryTerminal

#if canImport(Glibc)
    import Glibc
#endif

@Suite("SignalTrap", .serialized)
struct SignalTrapTests {
    /// The current disposition of `signal` is "ignore".
    func isIgnored(_ signal: Int32) -> Bool {
        var current = sigaction()
        sigaction(signal, nil, &current)
        return unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self) == 1  // SIG_IGN
    }

    func isBlocked(_ signal: Int32) -> Bool {
        var mask = sigset_t()
        pthread_sigmask(SIG_BLOCK, nil, &mask)
        return sigismember(&mask, signal) == 1
    }

    @Test("a caught signal is reported, and handlers and mask are restored afterwards")
    func catchesAndRestores() throws {
        // Start from "ignored and blocked", which the trap must override and then put back.
        var ignore = sigaction()
        ignore.__sigaction_handler.sa_handler = SIG_IGN
        var original = sigaction()
        sigaction(SIGHUP, &ignore, &original)
        var hangUp = sigset_t()
        sigemptyset(&hangUp)
        sigaddset(&hangUp, SIGHUP)
        var originalMask = sigset_t()
        pthread_sigmask(SIG_BLOCK, &hangUp, &originalMask)
        defer {
            pthread_sigmask(SIG_SETMASK, &originalMask, nil)
            sigaction(SIGHUP, &original, nil)
        }

        let trap = try SignalTrap()
        #expect(!isBlocked(SIGHUP))
        #expect(!isIgnored(SIGHUP))
        #expect(trap.takeSignal() == nil)
        raise(SIGHUP)
        var ready = [pollfd(fd: trap.readDescriptor, events: Int16(POLLIN), revents: 0)]
        #expect(poll(&ready, 1, 1_000) == 1)
        #expect(trap.takeSignal() == SIGHUP)
        #expect(SignalTrap.reason(for: SIGHUP) == .terminalClosed)
        #expect(throws: PinEntryTerminalError.terminalFailure(errno: EBUSY)) { try SignalTrap() }
        // The refused second trap must not have disturbed the active one.
        raise(SIGHUP)
        #expect(poll(&ready, 1, 1_000) == 1)
        #expect(trap.takeSignal() == SIGHUP)
        trap.restore()
        #expect(isIgnored(SIGHUP))
        #expect(isBlocked(SIGHUP))
        // A second trap can be installed once the first is gone.
        let second = try SignalTrap()
        second.restore()
    }

    @Test("signals map to cancellation reasons")
    func reasons() {
        #expect(SignalTrap.reason(for: SIGINT) == .interrupted)
        #expect(SignalTrap.reason(for: SIGTERM) == .interrupted)
        #expect(SignalTrap.reason(for: SIGQUIT) == .interrupted)
        #expect(SignalTrap.reason(for: SIGTSTP) == .suspended)
        #expect(SignalTrap.reason(for: SIGHUP) == .terminalClosed)
    }
}
