import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Turns SIGTERM and SIGINT into an awaitable event, so a server executable can stop
/// gracefully instead of dying mid-request.
///
/// While installed, the signals' default action is replaced (they no longer kill the
/// process); ``cancel()`` restores what was there before.
///
/// ```swift
/// let signals = ShutdownSignals()
/// try server.start()
/// let received = await signals.wait()   // SIGTERM or SIGINT
/// server.stop()
/// ```
public final class ShutdownSignals: Sendable {
    private struct State {
        var received: Int32?
        var waiters: [CheckedContinuation<Int32, Never>] = []
        var sources: [any DispatchSourceSignal] = []
        var previous: [(Int32, __sighandler_t?)] = []
    }

    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "ShutdownSignals")

    /// Installs the watch (`DispatchSource.makeSignalSource`, the signal set to ignored).
    /// - Parameter signals: The signals to watch; SIGTERM and SIGINT by default.
    public init(_ signals: [Int32] = [SIGTERM, SIGINT]) {
        state.withLock { state in
            for number in signals {
                state.previous.append((number, signal(number, SIG_IGN)))
                let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
                source.setEventHandler { [weak self] in self?.deliver(number) }
                source.resume()
                state.sources.append(source)
            }
        }
    }

    deinit { cancel() }

    /// Waits for the first watched signal; returns at once if one already arrived.
    /// - Returns: The signal number received.
    public func wait() async -> Int32 {
        await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
            let received = state.withLock { state -> Int32? in
                if state.received == nil { state.waiters.append(continuation) }
                return state.received
            }
            if let received { continuation.resume(returning: received) }
        }
    }

    /// The first watched signal received so far, if any.
    public var received: Int32? { state.withLock { $0.received } }

    /// Stops watching and restores the previous signal dispositions. Idempotent. A ``wait()``
    /// already pending keeps waiting (no signal will end it), so cancel only after the wait ended
    /// or from the task that would otherwise wait.
    public func cancel() {
        state.withLock { state in
            for source in state.sources { source.cancel() }
            state.sources.removeAll()
            for (number, handler) in state.previous { signal(number, handler) }
            state.previous.removeAll()
        }
    }

    private func deliver(_ number: Int32) {
        let waiters = state.withLock { state -> [CheckedContinuation<Int32, Never>] in
            if state.received == nil { state.received = number }
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: number) }
    }
}
