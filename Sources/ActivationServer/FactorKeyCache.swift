import Dispatch
import Foundation
import PowerAuthProtocol
import SecureCore
import Synchronization

/// The factor keys of recently used activations, kept in secure memory for a bounded time, so a
/// burst of signed requests from one device pays the key derivation (P-256 ECDH and five KDF
/// derivations, the largest part of a request's CPU time) once per `lifetime`, not per request.
///
/// - An entry lives `lifetime` seconds from its derivation (not from its last use) and is wiped
///   then, by the next lookup or by a sweep that runs while any entry is held (so an idle server
///   holds none for longer than about twice `lifetime`); `remove(_:)` wipes one at once.
/// - At most `capacity` entries; a full cache drops the entry closest to its end.
/// - An entry answers only for the same server and device public keys it was derived from.
/// - Callers get a copy and destroy it as before: the cache's
///   own keys never leave it.
///
/// `lifetime` 0 turns the cache off. See `docs/security.md` for what the cache trades.
public final class FactorKeyCache: Sendable {
    private struct Entry {
        let keys: FactorKeys
        let serverPublicKey: [UInt8]
        let devicePublicKey: [UInt8]
        let expires: Date
        /// The activation as the last conditional write left it (see ``snapshot(_:now:)``).
        var snapshot: ActivationRecord?
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var sweepScheduled = false
    }

    /// How long an entry lives, in seconds (0: no caching).
    public let lifetime: TimeInterval
    /// The most entries held.
    public let capacity: Int
    private let clock: @Sendable () -> Date
    private let state = Mutex(State())

    /// Creates an empty cache.
    /// - Parameters:
    ///   - lifetime: seconds an entry lives (default 60; 0 turns the cache off).
    ///   - capacity: the most entries (default 4096).
    ///   - clock: the time source of the sweeps (the lookups are given their time).
    public init(
        lifetime: TimeInterval = 60, capacity: Int = 4096, clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.lifetime = lifetime.isFinite ? max(0, lifetime) : 0
        self.capacity = max(1, capacity)
        self.clock = clock
    }

    deinit {
        state.withLock { s in
            for entry in s.entries.values { entry.keys.destroy() }
            s.entries = [:]
        }
    }

    /// Entries held now (expired ones not yet swept included).
    public var count: Int { state.withLock { $0.entries.count } }

    /// A copy of the cached keys of `record`, or `nil` (none, expired, or derived from other keys).
    /// - Parameters:
    ///   - record: the activation (its identifier and server public key).
    ///   - devicePublicKey: the device public key the request is verified with.
    ///   - now: the time.
    /// - Returns: keys the caller owns and destroys, or `nil`.
    /// - Throws: `SecureCoreError.outOfMemory`.
    func get(_ record: ActivationRecord, devicePublicKey: [UInt8], now: Date) throws(SecureCoreError) -> FactorKeys? {
        guard lifetime > 0 else { return nil }
        let held: FactorKeys? = state.withLock { s in
            guard let entry = s.entries[record.activationId] else { return nil }
            guard entry.expires > now, entry.devicePublicKey == devicePublicKey,
                entry.serverPublicKey == record.serverPublicKey
            else {
                entry.keys.destroy()
                s.entries[record.activationId] = nil
                return nil
            }
            return entry.keys
        }
        return try Self.copyOutside(held)
    }

    /// A copy of keys looked up under the lock, made after it was released: the copy opens five
    /// secure buffers (their pages' protection changes each time), too long to hold every other
    /// request's lookup for. Keys wiped in between (expired, replaced or removed by another
    /// thread) make the copy fail with `destroyed`: that is a miss, as if the lookup had come a
    /// moment later.
    private static func copyOutside(_ keys: FactorKeys?) throws(SecureCoreError) -> FactorKeys? {
        guard let keys else { return nil }
        do throws(SecureCoreError) {
            return try keys.copy()
        } catch {
            if case .destroyed = error { return nil }
            throw error
        }
    }

    /// Keeps a copy of `keys` for `record` (the caller keeps and destroys its own).
    /// - Parameters:
    ///   - keys: the keys just derived.
    ///   - record: the activation.
    ///   - devicePublicKey: the device public key they were derived with.
    ///   - now: the time of the derivation.
    /// - Throws: `SecureCoreError.outOfMemory`.
    func put(_ keys: FactorKeys, record: ActivationRecord, devicePublicKey: [UInt8], now: Date)
        throws(SecureCoreError)
    {
        guard lifetime > 0 else { return }
        let kept = try keys.copy()
        let scheduleSweep: Bool = state.withLock { s in
            Self.drop(expiredAt: now, from: &s)
            if s.entries[record.activationId] == nil, s.entries.count >= capacity,
                let oldest = s.entries.min(by: { $0.value.expires < $1.value.expires })?.key
            {
                s.entries.removeValue(forKey: oldest)?.keys.destroy()
            }
            s.entries.removeValue(forKey: record.activationId)?.keys.destroy()
            s.entries[record.activationId] = Entry(
                keys: kept, serverPublicKey: record.serverPublicKey, devicePublicKey: devicePublicKey,
                expires: now.addingTimeInterval(lifetime))
            defer { s.sweepScheduled = true }
            return !s.sweepScheduled
        }
        if scheduleSweep { self.scheduleSweep() }
    }

    /// The activation's record as this server's last conditional write left it, with a copy of
    /// its keys; `nil` when there is none (or its entry expired). The record is a hint, not the
    /// truth: it is used only to verify a code whose attempt is then written *on condition that
    /// the stored row is still exactly this record*, so a stale snapshot costs a fresh read, never
    /// a wrong count. Its private-key holder is never opened (it has no key).
    /// - Parameters:
    ///   - activationId: the activation.
    ///   - now: the time.
    /// - Returns: the record and keys the caller owns and destroys, or `nil`.
    /// - Throws: `SecureCoreError.outOfMemory`.
    func snapshot(_ activationId: String, now: Date) throws(SecureCoreError) -> (ActivationRecord, FactorKeys)? {
        guard lifetime > 0 else { return nil }
        let held: (ActivationRecord, FactorKeys)? = state.withLock { s in
            guard let entry = s.entries[activationId], let snapshot = entry.snapshot, entry.expires > now,
                snapshot.devicePublicKey == entry.devicePublicKey, snapshot.serverPublicKey == entry.serverPublicKey
            else { return nil }
            return (snapshot, entry.keys)
        }
        guard let (record, keys) = held, let copy = try Self.copyOutside(keys) else { return nil }
        return (record, copy)
    }

    /// Keeps `record` as the activation's snapshot, if its keys are held for the same server and
    /// device keys and it is an active V3.3 record; otherwise forgets any snapshot.
    /// - Parameter record: the record as a conditional write just stored it.
    func keep(snapshot record: ActivationRecord) {
        let sealedForever = ServerPrivateKey { () throws(ActivationServerError) -> SecureBytes in
            throw .storage(reason: "a kept snapshot holds no private key")
        }
        let kept = record.replacingPrivateKey(sealedForever)
        state.withLock { s in
            guard let entry = s.entries[record.activationId] else { return }
            let usable =
                record.state == .active && record.v4 == nil && record.devicePublicKey == entry.devicePublicKey
                && record.serverPublicKey == entry.serverPublicKey
            s.entries[record.activationId]?.snapshot = usable ? kept : nil
        }
    }

    /// Forgets the activation's snapshot (its keys stay).
    /// - Parameter activationId: the activation.
    func forgetSnapshot(_ activationId: String) {
        state.withLock { s in s.entries[activationId]?.snapshot = nil }
    }

    /// Wipes the entry of an activation now (removal).
    /// - Parameter activationId: the activation.
    public func remove(_ activationId: String) {
        state.withLock { $0.entries.removeValue(forKey: activationId)?.keys.destroy() }
    }

    /// Wipes every entry whose time is up at `now`.
    /// - Parameter now: the time.
    public func sweep(now: Date) {
        state.withLock { Self.drop(expiredAt: now, from: &$0) }
    }

    private static func drop(expiredAt now: Date, from s: inout State) {
        for (id, entry) in s.entries where entry.expires <= now {
            entry.keys.destroy()
            s.entries[id] = nil
        }
    }

    /// One sweep `lifetime` from now, then another while entries remain.
    private func scheduleSweep() {
        DispatchQueue.global().asyncAfter(deadline: .now() + lifetime) { [weak self] in
            guard let self else { return }
            let again: Bool = self.state.withLock { s in
                Self.drop(expiredAt: self.clock(), from: &s)
                s.sweepScheduled = !s.entries.isEmpty
                return s.sweepScheduled
            }
            if again { self.scheduleSweep() }
        }
    }
}
