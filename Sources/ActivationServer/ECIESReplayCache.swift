import Synchronization

/// Replay protection for ECIES requests (3.2+), as powerauth-server's
/// `ReplayVerificationService` and `EciesRequestResponseValidator`: a request's
/// timestamp must lie within ``windowMilliseconds`` of the server's clock, and each
/// (ephemeral public key, nonce) pair is accepted once.
///
/// A pair is remembered until its timestamp leaves the window: after that the
/// timestamp check alone refuses it (the MAC covers the timestamp, so a replay
/// cannot change it). Memory is bounded by ``capacity``; when full after dropping
/// expired pairs, new requests are refused rather than remembered partially.
public final class ECIESReplayCache: Sendable {
    /// The timestamp window (powerauth-server `requestExpirationInMilliseconds`, default 60000).
    public static let defaultWindowMilliseconds: Int64 = 60_000

    /// The accepted distance between a request's timestamp and the server's clock.
    public let windowMilliseconds: Int64
    /// Most pairs remembered at once.
    public let capacity: Int
    private let seen = Mutex([[UInt8]: Int64]())
    private let shared: (any SharedEphemeralState)?

    /// Creates an empty cache.
    /// - Parameters:
    ///   - windowMilliseconds: the timestamp window (default 60 s).
    ///   - capacity: most pairs remembered at once (in process memory).
    ///   - shared: where the pairs are remembered instead of process memory (every instance
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

    /// Accepts a request once: checks its timestamp and remembers its pair.
    /// Call it only after the request's MAC verified, so forged requests cannot
    /// fill the cache or burn a genuine pair.
    /// - Parameters:
    ///   - ephemeralPublicKey: the request's ephemeral key bytes, exactly as sent.
    ///   - nonce: the request's nonce.
    ///   - timestamp: the request's timestamp, ms since 1970.
    ///   - now: the server's time, ms since 1970.
    /// - Throws: ``ActivationServerError/requestExpired`` for a timestamp outside the window,
    ///   ``ActivationServerError/replayedRequest`` for a pair seen before (or a full cache); with a
    ///   shared store also its ``ActivationServerError/storage(reason:)`` and
    ///   ``ActivationServerError/unavailable(reason:)``.
    public func accept(ephemeralPublicKey: [UInt8], nonce: [UInt8], timestamp: Int64, now: Int64)
        throws(ActivationServerError)
    {
        let (low, lowOverflow) = now.subtractingReportingOverflow(windowMilliseconds)
        let (high, highOverflow) = now.addingReportingOverflow(windowMilliseconds)
        guard !lowOverflow, !highOverflow, timestamp >= low, timestamp <= high else { throw .requestExpired }
        // Length-prefixed so two different splits of the same bytes never collide.
        let key = [UInt8(truncatingIfNeeded: ephemeralPublicKey.count)] + ephemeralPublicKey + nonce
        let forgetAt = timestamp + windowMilliseconds
        if let shared {
            guard try shared.acceptOnce(replayKey: key, forgetAt: forgetAt, now: now) else { throw .replayedRequest }
            return
        }
        let accepted = seen.withLock { table -> Bool in
            if let until = table[key], until >= now { return false }
            if table.count >= capacity { table = table.filter { $0.value >= now } }
            guard table.count < capacity else { return false }
            table[key] = forgetAt
            return true
        }
        guard accepted else { throw .replayedRequest }
    }

    /// How many pairs are remembered.
    public var count: Int { seen.withLock { $0.count } }
}
