import PowerAuthProtocol
import SecureCore

/// Where a server keeps its replay records when several server processes serve the same
/// activations (a database all of them reach): a request replayed to another instance is then
/// refused. A store that offers it returns it from ``ServerActivationStore/sharedEphemeralState``;
/// ``ECIESReplayCache`` then keeps nothing in process memory. (Temporary keys need no shared
/// state: they are stateless, see ``TemporaryKeyStore``.)
///
/// The implementation decides with its own clock (the database's), not the calling instance's:
/// the timestamp window, the takeover of a record whose time has passed, and the sweep. So an
/// instance whose clock runs fast or slow neither accepts a replay nor deletes a record the
/// others still count as live.
public protocol SharedEphemeralState: Sendable {
    /// Checks `timestamp` against the store's clock and remembers `replayKey` until the
    /// timestamp leaves the window, atomically across every instance.
    /// - Parameters:
    ///   - replayKey: bytes unique to the request (domain first).
    ///   - timestamp: the request's timestamp, ms since 1970.
    ///   - windowMilliseconds: the accepted distance between the timestamp and the store's clock.
    /// - Returns: ``ReplayVerdict/accepted`` the first time, ``ReplayVerdict/replayed`` for a key
    ///   still remembered, ``ReplayVerdict/expired`` for a timestamp outside the window.
    /// - Throws: ``ActivationServerError/storage(reason:)``, ``ActivationServerError/unavailable(reason:)``.
    func acceptOnce(replayKey: [UInt8], timestamp: Int64, windowMilliseconds: Int64) throws(ActivationServerError)
        -> ReplayVerdict
    /// Forgets every replay record whose time has passed, by the store's clock.
    /// - Throws: ``ActivationServerError/storage(reason:)``, ``ActivationServerError/unavailable(reason:)``.
    func removeExpired() throws(ActivationServerError)
}

/// What a replay check decided.
public enum ReplayVerdict: Sendable, Equatable {
    /// First use within the window: remembered now.
    case accepted
    /// The key was used before and is still remembered.
    case replayed
    /// The timestamp lies outside the window (or behind what the cache has had to forget).
    case expired
}
