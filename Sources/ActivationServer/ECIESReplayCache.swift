import Synchronization

/// Replay protection for encrypted requests and tokens, as powerauth-server's
/// `ReplayVerificationService` and `EciesRequestResponseValidator`: a request's
/// timestamp must lie within a window of the server's clock (``windowMilliseconds``, or the
/// caller's for V4's 5-minute window), and each replay key (an ECIES ephemeral key and nonce, a
/// V4 temporary key and nonce, a token and nonce) is accepted once.
///
/// A key is remembered until its timestamp leaves the window: after that the
/// timestamp check alone refuses it (the MAC covers the timestamp, so a replay
/// cannot change it).
///
/// In process memory at most ``capacity`` keys are held. When full, the cache drops the keys
/// that leave the window first and raises a floor to the latest such end: a request whose
/// window would end at or before the floor is refused as expired, so a dropped key can never be
/// replayed, and a legitimate request (timestamp near now) still passes while the floor stays
/// behind it. Memory stays bounded whatever arrives.
///
/// Given a ``SharedEphemeralState`` (several instances on one database) the keys live there, and
/// the window, the takeover of a key whose time has passed and the sweep all use the database's
/// clock, so instances whose clocks disagree still agree on every replay.
public final class ECIESReplayCache: Sendable {
    /// The timestamp window (powerauth-server `requestExpirationInMilliseconds`, default 60000).
    public static let defaultWindowMilliseconds: Int64 = 60_000

    /// The accepted distance between a request's timestamp and the server's clock.
    public let windowMilliseconds: Int64
    /// Most keys remembered at once in process memory.
    public let capacity: Int
    private struct State {
        var seen: [[UInt8]: Int64] = [:]
        /// No key whose window ends at or before this is accepted (ms since 1970).
        var floor = Int64.min
    }
    private let state = Mutex(State())
    private let shared: (any SharedEphemeralState)?

    /// Creates an empty cache.
    /// - Parameters:
    ///   - windowMilliseconds: the timestamp window (default 60 s).
    ///   - capacity: most keys remembered at once (in process memory).
    ///   - shared: where the keys are remembered instead of process memory (every instance
    ///     of a server on one database), or `nil`.
    public init(
        windowMilliseconds: Int64 = defaultWindowMilliseconds, capacity: Int = 100_000,
        shared: (any SharedEphemeralState)? = nil
    ) {
        precondition(windowMilliseconds > 0 && capacity > 0, "a replay cache needs a window and room")
        self.windowMilliseconds = windowMilliseconds
        self.capacity = capacity
        self.shared = shared
    }

    /// Accepts an ECIES request once: checks its timestamp and remembers its (ephemeral key,
    /// nonce) pair. Call it only after the request's MAC verified, so forged requests cannot
    /// fill the cache or burn a genuine pair.
    /// - Parameters:
    ///   - ephemeralPublicKey: the request's ephemeral key bytes, exactly as sent.
    ///   - nonce: the request's nonce.
    ///   - timestamp: the request's timestamp, ms since 1970.
    ///   - now: the server's time, ms since 1970 (unused with a shared store: its clock decides).
    /// - Throws: ``ActivationServerError/requestExpired`` for a timestamp outside the window,
    ///   ``ActivationServerError/replayedRequest`` for a pair seen before; with a shared store also
    ///   its ``ActivationServerError/storage(reason:)`` and ``ActivationServerError/unavailable(reason:)``.
    public func accept(ephemeralPublicKey: [UInt8], nonce: [UInt8], timestamp: Int64, now: Int64)
        throws(ActivationServerError)
    {
        // Length-prefixed so two different splits of the same bytes never collide.
        let key = [UInt8(truncatingIfNeeded: ephemeralPublicKey.count)] + ephemeralPublicKey + nonce
        try accept(replayKey: key, timestamp: timestamp, windowMilliseconds: windowMilliseconds, now: now)
    }

    /// Accepts a replay key once within a window (the general form of
    /// ``accept(ephemeralPublicKey:nonce:timestamp:now:)``).
    /// - Parameters:
    ///   - replayKey: bytes unique to the request (its domain first, so domains never collide).
    ///   - timestamp: the request's timestamp, ms since 1970.
    ///   - windowMilliseconds: the accepted distance from the clock.
    ///   - now: the server's time, ms since 1970 (unused with a shared store).
    /// - Throws: as ``accept(ephemeralPublicKey:nonce:timestamp:now:)``.
    public func accept(replayKey: [UInt8], timestamp: Int64, windowMilliseconds: Int64, now: Int64)
        throws(ActivationServerError)
    {
        if let shared {
            switch try shared.acceptOnce(
                replayKey: replayKey, timestamp: timestamp, windowMilliseconds: windowMilliseconds)
            {
            case .accepted: return
            case .replayed: throw .replayedRequest
            case .expired: throw .requestExpired
            }
        }
        guard Self.within(timestamp, windowMilliseconds, of: now) else { throw .requestExpired }
        let forgetAt = timestamp + windowMilliseconds
        let verdict = state.withLock { s -> ReplayVerdict in
            guard forgetAt > s.floor else { return .expired }
            if let until = s.seen[replayKey], until >= now { return .replayed }
            if s.seen.count >= capacity { Self.makeRoom(&s, now: now, capacity: capacity) }
            guard forgetAt > s.floor else { return .expired }
            s.seen[replayKey] = forgetAt
            return .accepted
        }
        switch verdict {
        case .accepted: return
        case .replayed: throw .replayedRequest
        case .expired: throw .requestExpired
        }
    }

    /// Whether `timestamp` is within `window` of `now` (false on overflow).
    package static func within(_ timestamp: Int64, _ window: Int64, of now: Int64) -> Bool {
        let (low, lowOverflow) = now.subtractingReportingOverflow(window)
        let (high, highOverflow) = now.addingReportingOverflow(window)
        return !lowOverflow && !highOverflow && timestamp >= low && timestamp <= high
    }

    /// Drops expired keys; if still above seven eighths full, drops the keys whose windows end
    /// first down to that mark and raises the floor to the last end dropped.
    private static func makeRoom(_ s: inout State, now: Int64, capacity: Int) {
        s.seen = s.seen.filter { $0.value >= now }
        let mark = capacity - max(1, capacity / 8)
        guard s.seen.count > mark else { return }
        let ends = s.seen.values.sorted()
        let cut = ends[s.seen.count - mark - 1]
        s.seen = s.seen.filter { $0.value > cut }
        s.floor = max(s.floor, cut)
    }

    /// How many keys are remembered in process memory.
    public var count: Int { state.withLock { $0.seen.count } }
}
