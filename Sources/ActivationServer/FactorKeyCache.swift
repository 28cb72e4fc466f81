import Dispatch
import Foundation
import PowerAuthProtocol
import SecureCore
import Synchronization

/// The factor keys of recently used activations, kept in secure memory for a bounded time, so a
/// burst of signed requests from one device pays the key derivation (P-256 ECDH and five KDF
/// derivations, the largest part of a request's CPU time) once per `lifetime`, not per request.
///
/// - An entry lives `lifetime` seconds from its derivation (not from its last use) and is
///   dropped then, by the next lookup or by a sweep that runs while any entry is held (so an idle
///   server holds none for longer than about twice `lifetime`); `remove(_:)` drops one at once.
/// - At most `capacity` entries, spread over 16 shards by activation (each with its own lock, so
///   requests of different activations do not wait for each other, and at most its share of
///   `capacity`); a full shard drops its entry closest to its end.
/// - An entry answers only for the same server and device public keys it was derived from.
/// - Lookups lend the cache's own keys (`FactorKeys.lent()`): no copy per request, and the
///   caller's `destroy()` leaves them alone. A dropped entry's keys are wiped at once when no
///   request holds them, else when the last request that looked them up ends (a request's
///   length, not the cache's lifetime).
///
/// `lifetime` 0 turns the cache off. See `docs/security.md` for what the cache trades.
public final class FactorKeyCache: Sendable {
    /// The keys of one generation: V3.3's five factor keys, or V4's key tree.
    private enum Keys {
        case v3(FactorKeys)
        case v4(V4ActivationKeys)
    }

    private struct Entry {
        let keys: Keys
        let serverPublicKey: [UInt8]
        let devicePublicKey: [UInt8]
        let expires: Date
        /// The activation as the last conditional write left it (see ``snapshot(_:now:)``).
        var snapshot: ActivationRecord?
    }

    private struct State {
        var entries: [String: Entry] = [:]
    }

    /// One lock and the entries of the activations that hash to it.
    private final class Shard: Sendable {
        let state = Mutex(State())
    }

    /// How long an entry lives, in seconds (0: no caching).
    public let lifetime: TimeInterval
    /// The most entries held.
    public let capacity: Int
    private let clock: @Sendable () -> Date
    private let shards: [Shard]
    /// The most entries one shard holds.
    private let shardCapacity: Int
    private let sweepScheduled = Atomic<Bool>(false)

    /// Creates an empty cache.
    /// - Parameters:
    ///   - lifetime: seconds an entry lives (default 60; 0 turns the cache off).
    ///   - capacity: the most entries (default 4096).
    ///   - clock: the time source of the sweeps (the lookups are given their time).
    public convenience init(
        lifetime: TimeInterval = 60, capacity: Int = 4096, clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.init(lifetime: lifetime, capacity: capacity, shards: 16, clock: clock)
    }

    /// A cache with `shards` locks (at most `capacity`; 1 makes the capacity rule exact).
    init(lifetime: TimeInterval, capacity: Int, shards: Int, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.lifetime = lifetime.isFinite ? max(0, lifetime) : 0
        self.capacity = max(1, capacity)
        self.clock = clock
        let count = min(max(1, shards), self.capacity)
        self.shards = (0..<count).map { _ in Shard() }
        self.shardCapacity = self.capacity / count
    }

    deinit {
        // Dropped, not destroyed: keys still lent to a request are wiped when it ends.
        for shard in shards { shard.state.withLock { $0.entries = [:] } }
    }

    /// Entries held now (expired ones not yet swept included).
    public var count: Int { shards.reduce(0) { sum, shard in sum + shard.state.withLock { $0.entries.count } } }

    private func shard(_ activationId: String) -> Shard {
        shards[Int(UInt(bitPattern: activationId.hashValue) % UInt(shards.count))]
    }

    /// The cached keys of `record`, lent (`FactorKeys.lent()`), or `nil` (none, expired, or
    /// derived from other keys).
    /// - Parameters:
    ///   - record: the activation (its identifier and server public key).
    ///   - devicePublicKey: the device public key the request is verified with.
    ///   - now: the time.
    /// - Returns: lent keys (the caller may `destroy()` them: that does nothing), or `nil`.
    func get(_ record: ActivationRecord, devicePublicKey: [UInt8], now: Date) -> FactorKeys? {
        lookUp(record.activationId, serverPublicKey: record.serverPublicKey, devicePublicKey: devicePublicKey, now: now)
        {
            if case .v3(let keys) = $0 { keys.lent() } else { nil }
        }
    }

    /// The entry's keys as `lend` gives them, when it answers for these public keys and is not
    /// expired; an entry that does not (or whose keys are of the other generation) is dropped.
    private func lookUp<K>(
        _ activationId: String, serverPublicKey: [UInt8], devicePublicKey: [UInt8], now: Date,
        lend: (Keys) -> K?
    ) -> K? {
        guard lifetime > 0 else { return nil }
        // A dropped entry is let go after the lock: its keys' wipe and free run outside it.
        let (found, dropped): (K?, Entry?) = shard(activationId).state.withLock { s in
            guard let entry = s.entries[activationId] else { return (nil, nil) }
            guard entry.expires > now, entry.devicePublicKey == devicePublicKey,
                entry.serverPublicKey == serverPublicKey, let keys = lend(entry.keys)
            else { return (nil, s.entries.removeValue(forKey: activationId)) }
            return (keys, nil)
        }
        _ = dropped
        return found
    }

    /// The public keys a V4 entry answers for: the activation's V4 server key and device key.
    private static func v4Identity(_ state: V4ActivationState) -> (server: [UInt8], device: [UInt8]) {
        (state.serverKeyPair.publicKey, state.devicePublicKey ?? [])
    }

    /// The cached V4 key tree of `record`'s V4 state, lent, or `nil` (none, expired, or derived
    /// for other keys: another suite's state after an upgrade, another device key).
    /// - Parameters:
    ///   - record: the activation, with its V4 state.
    ///   - now: the time.
    /// - Returns: lent keys, or `nil`.
    func v4Keys(_ record: ActivationRecord, now: Date) -> V4ActivationKeys? {
        guard let state = record.v4 else { return nil }
        let identity = Self.v4Identity(state)
        return lookUp(
            record.activationId, serverPublicKey: identity.server, devicePublicKey: identity.device, now: now
        ) { if case .v4(let keys) = $0 { keys.lent() } else { nil } }
    }

    /// Keeps a copy of a V4 key tree for `record`'s V4 state (the caller keeps and destroys its own).
    /// - Parameters:
    ///   - keys: the tree just derived.
    ///   - record: the activation, with its V4 state.
    ///   - now: the time of the derivation.
    /// - Throws: `SecureCoreError.outOfMemory`.
    func putV4(_ keys: V4ActivationKeys, record: ActivationRecord, now: Date) throws(SecureCoreError) {
        guard lifetime > 0, let state = record.v4 else { return }
        let identity = Self.v4Identity(state)
        try insert(
            .v4(try keys.copy(lasting: true)), activationId: record.activationId, serverPublicKey: identity.server,
            devicePublicKey: identity.device, now: now)
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
        // Made inside the request's scope but kept for `lifetime`: off the scratch slabs.
        try insert(
            .v3(try keys.copy(lasting: true)), activationId: record.activationId,
            serverPublicKey: record.serverPublicKey, devicePublicKey: devicePublicKey, now: now)
    }

    /// Stores an entry (replacing the activation's, or evicting the shard's oldest when full).
    private func insert(
        _ kept: Keys, activationId: String, serverPublicKey: [UInt8], devicePublicKey: [UInt8], now: Date
    ) throws(SecureCoreError) {
        let dropped: [Entry] = shard(activationId).state.withLock { s in
            var dropped = Self.drop(expiredAt: now, from: &s)
            if s.entries[activationId] == nil, s.entries.count >= shardCapacity,
                let oldest = s.entries.min(by: { $0.value.expires < $1.value.expires })?.key,
                let evicted = s.entries.removeValue(forKey: oldest)
            {
                dropped.append(evicted)
            }
            if let replaced = s.entries.updateValue(
                Entry(
                    keys: kept, serverPublicKey: serverPublicKey, devicePublicKey: devicePublicKey,
                    expires: now.addingTimeInterval(lifetime)), forKey: activationId)
            {
                dropped.append(replaced)
            }
            return dropped
        }
        _ = dropped
        if !sweepScheduled.exchange(true, ordering: .acquiringAndReleasing) { scheduleSweep() }
    }

    /// The activation's record as this server's last conditional write left it, with its keys
    /// (lent); `nil` when there is none (or its entry expired). The record is a hint, not the
    /// truth: it is used only to verify a code whose attempt is then written *on condition that
    /// the stored row is still exactly this record*, so a stale snapshot costs a fresh read, never
    /// a wrong count. Its private-key holder is never opened (it has no key).
    /// - Parameters:
    ///   - activationId: the activation.
    ///   - now: the time.
    /// - Returns: the record and the lent keys, or `nil`.
    func snapshot(_ activationId: String, now: Date) -> (ActivationRecord, FactorKeys)? {
        lentSnapshot(activationId, now: now) { record, keys in
            guard case .v3(let lent) = keys, let device = record.devicePublicKey else { return nil }
            return ((record.serverPublicKey, device), lent.lent())
        }
    }

    /// The entry's snapshot and its keys as `lend` gives them, with the public keys the snapshot
    /// names, when those are the entry's and it is not expired.
    private func lentSnapshot<K>(
        _ activationId: String, now: Date, lend: (ActivationRecord, Keys) -> (([UInt8], [UInt8]), K)?
    ) -> (ActivationRecord, K)? {
        guard lifetime > 0 else { return nil }
        return shard(activationId).state.withLock { s in
            guard let entry = s.entries[activationId], let snapshot = entry.snapshot, entry.expires > now,
                let (identity, keys) = lend(snapshot, entry.keys),
                identity == (entry.serverPublicKey, entry.devicePublicKey)
            else { return nil }
            return (snapshot, keys)
        }
    }

    /// The V4 counterpart of ``snapshot(_:now:)``: the activation's record as this server's last
    /// conditional write left it, its V4 state's secrets in lasting secure memory, with its key
    /// tree (lent); `nil` when there is none.
    /// - Parameters:
    ///   - activationId: the activation.
    ///   - now: the time.
    /// - Returns: the record and the lent keys, or `nil`.
    func v4Snapshot(_ activationId: String, now: Date) -> (ActivationRecord, V4ActivationKeys)? {
        lentSnapshot(activationId, now: now) { record, keys in
            guard case .v4(let lent) = keys, let state = record.v4 else { return nil }
            return (Self.v4Identity(state), lent.lent())
        }
    }

    /// Keeps `record` as the activation's snapshot, if its keys are held for the same server and
    /// device keys (of its generation) and it is active (a V4 one settled: confirmed, no upgrade
    /// waiting); otherwise forgets any snapshot.
    /// - Parameter record: the record as a conditional write just stored it.
    func keep(snapshot record: ActivationRecord) {
        let sealedForever = ServerPrivateKey { () throws(ActivationServerError) -> SecureBytes in
            throw .storage(reason: "a kept snapshot holds no private key")
        }
        var kept = record.replacingPrivateKey(sealedForever)
        if let state = record.v4 {
            // A V4 snapshot keeps its state's secrets: made lasting once, then shared by the
            // snapshots that follow from it (the same objects).
            let current = shard(record.activationId).state.withLock { $0.entries[record.activationId]?.snapshot?.v4 }
            if current?.activationSecret == nil || current?.activationSecret !== state.activationSecret {
                guard let lasting = try? state.lastingCopy() else { return forgetSnapshot(record.activationId) }
                kept.v4 = lasting
            }
        }
        // The snapshot it replaces is released after the lock (its storage freed outside it).
        let replaced: ActivationRecord? = shard(record.activationId).state.withLock { s in
            guard let entry = s.entries[record.activationId] else { return nil }
            let usable: Bool
            switch (entry.keys, kept.v4) {
            case (.v3, nil):
                usable =
                    record.state == .active && record.devicePublicKey == entry.devicePublicKey
                    && record.serverPublicKey == entry.serverPublicKey
            case (.v4, let state?):
                // Only a settled V4 activation: no upgrade waiting, confirmed, from a store.
                usable =
                    record.state == .active && !state.upgradePending && !state.confirmationPending
                    && record.v4Upgrade == nil && record.sealedStateMark != nil
                    && Self.v4Identity(state) == (entry.serverPublicKey, entry.devicePublicKey)
            default:
                usable = false
            }
            defer { s.entries[record.activationId]?.snapshot = usable ? kept : nil }
            return entry.snapshot
        }
        _ = replaced
    }

    /// Forgets the activation's snapshot (its keys stay).
    /// - Parameter activationId: the activation.
    func forgetSnapshot(_ activationId: String) {
        shard(activationId).state.withLock { s in s.entries[activationId]?.snapshot = nil }
    }

    /// Drops the entry of an activation now (removal): its keys are wiped at once, or when the
    /// last request that looked them up ends.
    /// - Parameter activationId: the activation.
    public func remove(_ activationId: String) {
        let dropped = shard(activationId).state.withLock { $0.entries.removeValue(forKey: activationId) }
        _ = dropped
    }

    /// Drops every entry whose time is up at `now` (wiped as ``remove(_:)`` says).
    /// - Parameter now: the time.
    public func sweep(now: Date) {
        for shard in shards {
            let dropped = shard.state.withLock { Self.drop(expiredAt: now, from: &$0) }
            _ = dropped
        }
    }

    /// Removes the entries whose time is up and returns them, for the caller to let go of after
    /// the lock (their keys' wipe and free then run outside it).
    private static func drop(expiredAt now: Date, from s: inout State) -> [Entry] {
        var dropped: [Entry] = []
        for (id, entry) in s.entries where entry.expires <= now {
            s.entries[id] = nil
            dropped.append(entry)
        }
        return dropped
    }

    /// One sweep `lifetime` from now, then another while entries remain. A `put` racing the end
    /// of a sweep either finds the flag still set and its entry is counted below, or finds it
    /// cleared and schedules the next sweep itself.
    private func scheduleSweep() {
        DispatchQueue.global().asyncAfter(deadline: .now() + lifetime) { [weak self] in
            guard let self else { return }
            self.sweep(now: self.clock())
            self.sweepScheduled.store(false, ordering: .releasing)
            if self.count > 0, !self.sweepScheduled.exchange(true, ordering: .acquiringAndReleasing) {
                self.scheduleSweep()
            }
        }
    }
}
