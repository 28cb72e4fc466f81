import Foundation
import PowerAuthProtocol
import SecureCore
import Synchronization

/// The server's temporary ECIES key pairs (protocol 3.3), each valid
/// `TemporaryKeyAPI.validityMilliseconds` (300000 ms) and bound to one application key and,
/// in activation scope, one activation.
///
/// Private keys live only in secure memory (`SecureBytes`) and are never written
/// to disk: a restart forgets them, and a client whose key is unknown fetches a new
/// one (it must do so every 5 minutes anyway). Upstream stores them in its
/// database, optionally sealed (powerauth-server `TemporaryKeyBehavior`). Given a
/// ``SharedEphemeralState`` (several server processes on one database), the keys live there
/// instead, sealed, so any instance can open a request encrypted to a key another issued.
public final class TemporaryKeyStore: Sendable {
    /// A stored key.
    struct Entry: Sendable {
        let keyPair: KeyPair
        let applicationKey: String
        let activationId: String?
        let expiresAtMilliseconds: Int64
    }

    /// A freshly created key's public facts.
    public struct Created: Sendable, Equatable {
        /// The key identifier (UUID), the `temporaryKeyId` of 3.3 ECIES.
        public let temporaryKeyId: String
        /// The 65-byte uncompressed public key.
        public let publicKey: [UInt8]
        /// Expiry, milliseconds since 1970.
        public let expiresAtMilliseconds: Int64
    }

    /// Most keys held at once; creating one more when full (after dropping expired
    /// keys) is refused, so a flood of requests cannot exhaust secure memory.
    public let capacity: Int
    /// Validity of a new key, in milliseconds.
    public let validityMilliseconds: Int64
    private let entries = Mutex([String: Entry]())
    private let shared: (any SharedEphemeralState)?

    /// Creates an empty store.
    /// - Parameters:
    ///   - validityMilliseconds: validity of each key (default 300000, as upstream).
    ///   - capacity: most keys held at once (in process memory).
    ///   - shared: where the keys live instead of process memory, or `nil`.
    public init(
        validityMilliseconds: Int64 = TemporaryKeyAPI.validityMilliseconds, capacity: Int = 4096,
        shared: (any SharedEphemeralState)? = nil
    ) {
        precondition(validityMilliseconds > 0 && capacity > 0, "a temporary key store needs room and time")
        self.validityMilliseconds = validityMilliseconds
        self.capacity = capacity
        self.shared = shared
    }

    /// Generates and remembers a key pair.
    /// - Parameters:
    ///   - applicationKey: the application it serves.
    ///   - activationId: the activation it serves, `nil` in application scope.
    ///   - now: the current time, ms since 1970.
    /// - Returns: the key's identifier, public key and expiry.
    /// - Throws: ``ActivationServerError/temporaryKeyFailure`` when full,
    ///   ``ActivationServerError/protocolFailure(_:)`` if key generation fails.
    public func create(applicationKey: String, activationId: String?, now: Int64) throws(ActivationServerError)
        -> Created
    {
        let keyPair = try protocolStep { () throws(ProtocolError) -> KeyPair in
            let pair = try lift { () throws(SecureCoreError) in try P256.generateKeyPair() }
            return KeyPair(privateKey: pair.privateKey, publicKey: pair.publicKey)
        }
        let entry = Entry(
            keyPair: keyPair, applicationKey: applicationKey, activationId: activationId,
            expiresAtMilliseconds: now + validityMilliseconds)
        let id = UUID().uuidString.lowercased()
        if let shared {
            defer { keyPair.privateKey.destroy() }
            try shared.storeTemporaryKey(
                SharedTemporaryKey(
                    temporaryKeyId: id, keyPair: keyPair, applicationKey: applicationKey, activationId: activationId,
                    expiresAtMilliseconds: entry.expiresAtMilliseconds))
            return Created(
                temporaryKeyId: id, publicKey: keyPair.publicKey, expiresAtMilliseconds: entry.expiresAtMilliseconds)
        }
        let stored = entries.withLock { table -> Bool in
            if table.count >= capacity { table = table.filter { $0.value.expiresAtMilliseconds > now } }
            guard table.count < capacity else { return false }
            table[id] = entry
            return true
        }
        guard stored else {
            keyPair.privateKey.destroy()
            throw .temporaryKeyFailure
        }
        return Created(
            temporaryKeyId: id, publicKey: keyPair.publicKey, expiresAtMilliseconds: entry.expiresAtMilliseconds)
    }

    /// The key pair for an ECIES request naming `temporaryKeyId`, as upstream's
    /// `temporaryPrivateKey`: unknown, expired, or bound to another application or
    /// activation is one refusal.
    /// - Parameters:
    ///   - temporaryKeyId: the identifier from the request.
    ///   - applicationKey: the request's application key.
    ///   - activationId: the request's activation, `nil` in application scope.
    ///   - now: the current time, ms since 1970.
    /// - Returns: the key pair (the store keeps it; do not destroy it).
    /// - Throws: ``ActivationServerError/temporaryKeyFailure``; with a shared store also its
    ///   ``ActivationServerError/storage(reason:)`` and ``ActivationServerError/unavailable(reason:)``.
    public func keyPair(temporaryKeyId: String, applicationKey: String, activationId: String?, now: Int64)
        throws(ActivationServerError) -> KeyPair
    {
        if let shared {
            guard let key = try shared.temporaryKey(temporaryKeyId, now: now), key.expiresAtMilliseconds > now,
                key.applicationKey == applicationKey, key.activationId == activationId
            else { throw .temporaryKeyFailure }
            return key.keyPair
        }
        let entry = entries.withLock { table -> Entry? in
            guard let entry = table[temporaryKeyId] else { return nil }
            guard entry.expiresAtMilliseconds > now else {
                table[temporaryKeyId] = nil
                entry.keyPair.privateKey.destroy()
                return nil
            }
            return entry
        }
        guard let entry, entry.applicationKey == applicationKey, entry.activationId == activationId else {
            throw .temporaryKeyFailure
        }
        return entry.keyPair
    }

    /// Forgets and wipes every expired key.
    /// - Parameter now: the current time, ms since 1970.
    public func removeExpired(now: Int64) {
        try? shared?.removeExpired(now: now)
        entries.withLock { table in
            for (id, entry) in table where entry.expiresAtMilliseconds <= now {
                entry.keyPair.privateKey.destroy()
                table[id] = nil
            }
        }
    }

    /// How many keys are held (expired ones included until removed); with a shared store, how
    /// many it holds (0 when it cannot be read).
    public var count: Int {
        if let shared { return (try? shared.temporaryKeyCount()) ?? 0 }
        return entries.withLock { $0.count }
    }
}
