import PowerAuthProtocol
import SecureCore

/// Where a server keeps its temporary ECIES keys and replay records when several server
/// processes serve the same activations (a database all of them reach): any instance can then
/// open a request encrypted to a key another instance issued, and a request replayed to another
/// instance is refused. A store that offers it returns it from
/// ``ServerActivationStore/sharedEphemeralState``; ``TemporaryKeyStore`` and
/// ``ECIESReplayCache`` then keep nothing in process memory.
public protocol SharedEphemeralState: Sendable {
    /// Stores a freshly generated temporary key (the private key sealed by the implementation).
    /// - Parameter key: the key and what it is bound to.
    /// - Throws: ``ActivationServerError/storage(reason:)``, ``ActivationServerError/unavailable(reason:)``.
    func storeTemporaryKey(_ key: SharedTemporaryKey) throws(ActivationServerError)
    /// The temporary key with that identifier, if it exists and has not expired.
    /// - Parameters:
    ///   - temporaryKeyId: the identifier.
    ///   - now: the current time, ms since 1970.
    /// - Returns: the key, its private half in fresh secure memory, or `nil`.
    /// - Throws: ``ActivationServerError/storage(reason:)``, ``ActivationServerError/unavailable(reason:)``.
    func temporaryKey(_ temporaryKeyId: String, now: Int64) throws(ActivationServerError) -> SharedTemporaryKey?
    /// How many temporary keys are stored (expired ones included until removed).
    /// - Returns: the number.
    /// - Throws: ``ActivationServerError/storage(reason:)``, ``ActivationServerError/unavailable(reason:)``.
    func temporaryKeyCount() throws(ActivationServerError) -> Int
    /// Forgets every expired temporary key and replay record.
    /// - Parameter now: the current time, ms since 1970.
    /// - Throws: ``ActivationServerError/storage(reason:)``, ``ActivationServerError/unavailable(reason:)``.
    func removeExpired(now: Int64) throws(ActivationServerError)
    /// Remembers a replay key until `forgetAt`, atomically across every instance.
    /// - Parameters:
    ///   - replayKey: the length-prefixed (ephemeral key, nonce) bytes.
    ///   - forgetAt: when the record may be dropped, ms since 1970.
    ///   - now: the current time, ms since 1970.
    /// - Returns: `true` the first time, `false` for a key still remembered.
    /// - Throws: ``ActivationServerError/storage(reason:)``, ``ActivationServerError/unavailable(reason:)``.
    func acceptOnce(replayKey: [UInt8], forgetAt: Int64, now: Int64) throws(ActivationServerError) -> Bool
    /// Stores a freshly agreed protocol V4 temporary key (`KEY_TEMPORARY_SHARED_SECRET` sealed by
    /// the implementation); ``removeExpired(now:)`` forgets it after its expiry.
    /// - Parameter key: the secret and what it is bound to.
    /// - Throws: ``ActivationServerError/storage(reason:)``, ``ActivationServerError/unavailable(reason:)``.
    func storeV4TemporaryKey(_ key: SharedV4TemporaryKey) throws(ActivationServerError)
    /// The protocol V4 temporary key with that identifier, if it exists and has not expired.
    /// - Parameters:
    ///   - temporaryKeyId: the identifier.
    ///   - now: the current time, ms since 1970.
    /// - Returns: the key, its secret in fresh secure memory, or `nil`.
    /// - Throws: ``ActivationServerError/storage(reason:)``, ``ActivationServerError/unavailable(reason:)``.
    func v4TemporaryKey(_ temporaryKeyId: String, now: Int64) throws(ActivationServerError) -> SharedV4TemporaryKey?
}

/// A protocol V4 temporary key as ``SharedEphemeralState`` keeps it.
public struct SharedV4TemporaryKey: Sendable {
    /// The identifier (UUID).
    public let temporaryKeyId: String
    /// `KEY_TEMPORARY_SHARED_SECRET`.
    public let secret: SecureBytes
    /// The application it serves.
    public let applicationKey: String
    /// The activation it serves, `nil` in application scope.
    public let activationId: String?
    /// Expiry, ms since 1970.
    public let expiresAtMilliseconds: Int64

    /// Creates the value.
    /// - Parameters:
    ///   - temporaryKeyId: the identifier.
    ///   - secret: the shared secret.
    ///   - applicationKey: the application.
    ///   - activationId: the activation, or `nil`.
    ///   - expiresAtMilliseconds: the expiry.
    public init(
        temporaryKeyId: String, secret: SecureBytes, applicationKey: String, activationId: String?,
        expiresAtMilliseconds: Int64
    ) {
        self.temporaryKeyId = temporaryKeyId
        self.secret = secret
        self.applicationKey = applicationKey
        self.activationId = activationId
        self.expiresAtMilliseconds = expiresAtMilliseconds
    }
}

/// A temporary key as ``SharedEphemeralState`` keeps it.
public struct SharedTemporaryKey: Sendable {
    /// The identifier (UUID).
    public let temporaryKeyId: String
    /// The key pair.
    public let keyPair: KeyPair
    /// The application it serves.
    public let applicationKey: String
    /// The activation it serves, `nil` in application scope.
    public let activationId: String?
    /// Expiry, ms since 1970.
    public let expiresAtMilliseconds: Int64

    /// Creates the value.
    /// - Parameters:
    ///   - temporaryKeyId: the identifier.
    ///   - keyPair: the key pair.
    ///   - applicationKey: the application.
    ///   - activationId: the activation, or `nil`.
    ///   - expiresAtMilliseconds: the expiry.
    public init(
        temporaryKeyId: String, keyPair: KeyPair, applicationKey: String, activationId: String?,
        expiresAtMilliseconds: Int64
    ) {
        self.temporaryKeyId = temporaryKeyId
        self.keyPair = keyPair
        self.applicationKey = applicationKey
        self.activationId = activationId
        self.expiresAtMilliseconds = expiresAtMilliseconds
    }
}
