import Activation
import DurableStorage
import SecureCore

/// `Activation.DeviceActivationStorage` in the Secret Service: the same blobs the file store
/// keeps, as items whose attributes are the keychain configuration's names.
///
/// | Blob | `service` | `key` |
/// | --- | --- | --- |
/// | `<instance>.activation` (state) | `keychainInstanceName_Status` | the instance id |
/// | `<instance>.keys` (possession and transport keys) | `keychainInstanceName_Possession` | `keychainKey_Possession` |
/// | `<instance>.token-<id>` (a token's secret) | `keychainInstanceName_TokenStore` | the token id |
///
/// Every item also carries `instance` (the instance id) and `access-group`. Each item is
/// replaced atomically by the service. Related items (the keys, then the state that names them
/// by a check value) are written in the order the activation service chooses, so that a crash
/// between them leaves keys without a state, which the next `Activation.ActivationService`
/// removes; a state whose keys do not match is reported as damaged data, as in files.
///
/// The Secret Service has no lock: ``withExclusiveAccess(_:)`` holds `flock` on a lock file in
/// a private directory (the client's state directory), the same one the file store uses, so
/// processes serialise their counter updates whichever store they use. No secret is in it.
public struct KeyringActivationStorage: DeviceActivationStorage {
    /// The names the items carry.
    public let keychain: KeychainConfiguration
    /// The instance whose blobs this store holds.
    public let instanceId: String
    /// The private directory of the lock file.
    public let lockDirectory: String
    let connection: SecretServiceConnection

    /// Connects to the Secret Service on the session bus.
    /// - Parameters:
    ///   - keychain: the item names.
    ///   - instanceId: the instance (the `instance` attribute, and the blob names' prefix).
    ///   - lockDirectory: a private directory for the lock file, created 0700 when missing.
    /// - Throws: `ActivationError.storageUnavailable(reason:)` without a Secret Service,
    ///   `ActivationError.wrongParameter(reason:)` for a bad instance id or a refused directory,
    ///   `ActivationError.storage(operation:errno:)`.
    public init(keychain: KeychainConfiguration, instanceId: String, lockDirectory: String) throws(ActivationError) {
        try self.init(keychain: keychain, instanceId: instanceId, lockDirectory: lockDirectory, prepare: true)
    }

    /// As the public initialiser; without `prepare` the lock directory is left alone (a store
    /// that is only read, and never locked).
    init(keychain: KeychainConfiguration, instanceId: String, lockDirectory: String, prepare: Bool)
        throws(ActivationError)
    {
        try ActivationConfiguration.validate(instanceId: instanceId)
        // The service first: without one, nothing is created on disk.
        connection = try SecretServiceConnection()
        if prepare {
            try ActivationError.converting { () throws(StorageError) in
                try DurableFile.preparePrivateDirectory(lockDirectory)
            }
        }
        self.keychain = keychain
        self.instanceId = instanceId
        self.lockDirectory = lockDirectory
    }

    /// The default collection, e.g. `Login (/org/freedesktop/secrets/collection/login)`.
    /// - Returns: its label and path.
    /// - Throws: `ActivationError.storageLocked(store:)` when it is locked,
    ///   `ActivationError.storageUnavailable(reason:)`.
    public func collection() throws(ActivationError) -> String { try connection.requireUnlocked() }

    /// Where the blob `name` lives.
    func address(_ name: String) throws(ActivationError) -> SecretItemAddress {
        let prefix = instanceId + "."
        guard name.hasPrefix(prefix) else {
            throw .wrongParameter(reason: "\(name) is not a blob of instance \(instanceId)")
        }
        let rest = name.dropFirst(prefix.count)
        let (service, key): (String, String)
        if rest == "activation" {
            (service, key) = (keychain.keychainInstanceName_Status, instanceId)
        } else if rest == "keys" {
            (service, key) = (keychain.keychainInstanceName_Possession, keychain.keychainKey_Possession)
        } else if rest == "upgrade-activation" {
            (service, key) = (keychain.keychainInstanceName_Status, instanceId + "-upgrade")
        } else if rest == "upgrade-keys" {
            (service, key) = (keychain.keychainInstanceName_Possession, keychain.keychainKey_Possession + "-upgrade")
        } else if rest.hasPrefix("token-"), rest.count > 6 {
            (service, key) = (keychain.keychainInstanceName_TokenStore, String(rest.dropFirst(6)))
        } else {
            throw .wrongParameter(reason: "\(name) is not a blob the keyring store knows")
        }
        return SecretItemAddress(
            service: service, key: key, instance: instanceId, accessGroup: keychain.accessGroupAttribute)
    }

    private func label(_ name: String) -> String { "SecurePIN \(name)" }

    /// Reads a public blob (the state).
    public func read(_ name: String) throws(ActivationError) -> [UInt8]? {
        guard let secret = try connection.read(try address(name)) else { return nil }
        defer { secret.destroy() }
        return secret.withUnsafeBytes { Array($0) }
    }

    /// Replaces a public blob.
    public func write(_ name: String, _ bytes: [UInt8]) throws(ActivationError) {
        let target = try address(name)
        var failure: ActivationError?
        bytes.withUnsafeBytes { buffer in
            do throws(ActivationError) {
                try connection.store(target, label: label(name), contentType: "application/json", secret: buffer)
            } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// Reads a secret blob into secure memory.
    public func readSecret(_ name: String) throws(ActivationError) -> SecureBytes? {
        try connection.read(try address(name))
    }

    /// Replaces a secret blob, straight from secure memory.
    public func writeSecret(_ name: String, _ bytes: SecureBytes) throws(ActivationError) {
        let target = try address(name)
        try bytes.withUnsafeBytes { (buffer) throws(ActivationError) in
            try connection.store(target, label: label(name), contentType: "application/octet-stream", secret: buffer)
        }
    }

    /// Deletes the blob's item; a missing one is no error.
    public func remove(_ name: String) throws(ActivationError) {
        try connection.remove(try address(name))
    }

    /// Holds `flock(LOCK_EX)` on the lock file while `body` runs.
    public func withExclusiveAccess<R>(_ body: () throws(ActivationError) -> R) throws(ActivationError) -> R {
        try DurableFile.withExclusiveLock(lockDirectory + "/.lock", failure: ActivationError.init) {
            (_) throws(ActivationError) in try body()
        }
    }

    /// The blob names of an instance's tokens in the keyring (none for an instance other than
    /// this storage's).
    /// - Parameter instanceId: the instance.
    /// - Returns: `<instance>.token-<id>` for each token item.
    /// - Throws: `ActivationError.storageLocked(store:)`, `ActivationError.storageUnavailable(reason:)`.
    public func tokenNames(instanceId: String) throws(ActivationError) -> [String] {
        instanceId == self.instanceId ? try tokenNames() : []
    }

    /// The blob names of this instance's tokens in the keyring.
    /// - Returns: `<instance>.token-<id>` for each token item.
    /// - Throws: `ActivationError.storageLocked(store:)`, `ActivationError.storageUnavailable(reason:)`.
    public func tokenNames() throws(ActivationError) -> [String] {
        try connection.keys(
            service: keychain.keychainInstanceName_TokenStore, instance: instanceId,
            accessGroup: keychain.accessGroupAttribute
        ).map { "\(instanceId).token-\($0)" }
    }
}
