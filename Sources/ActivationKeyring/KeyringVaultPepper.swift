import Activation
import SecureCore

/// The pepper of a PIN vault, kept in the Secret Service (`securepin vault --store keyring`).
///
/// The vault's files stay in its directory: its key file is what a destroy overwrites in place,
/// the one erasure that can be promised (a Secret Service rewrites its keyring file through a new
/// file and a rename, so a deleted item may survive in freed blocks of the disk). What goes to the
/// keyring is only a 32-byte pepper that the vault's PIN slot needs (Argon2id's secret input) and
/// its failure record's MAC key includes: a copy of the directory alone cannot be guessed offline,
/// and deleting the item is one more erasure on top of the destroyed key file.
///
/// The item: `service` (default ``defaultService``), `key` = the vault's identifier (`PinVault`'s
/// `identifier()`), `instance` = ``instance``, and `access-group`.
public struct KeyringVaultPepper: Sendable {
    /// The default `service` attribute.
    public static let defaultService = "io.securepin.VaultPepper"
    /// The `instance` attribute every vault's item carries.
    public static let instance = "securepin-vault"
    /// The pepper's length.
    public static let byteCount = 32
    /// The `service` attribute.
    public let service: String
    /// The `access-group` attribute.
    public let accessGroup: String
    let connection: SecretServiceConnection

    /// Connects to the Secret Service on the session bus.
    /// - Parameters:
    ///   - service: the `service` attribute (1 ... 255 bytes, no control characters).
    ///   - accessGroup: the `access-group` attribute; nil for this application's own (`private`).
    /// - Throws: `ActivationError.wrongParameter(reason:)` for a bad name,
    ///   `ActivationError.storageUnavailable(reason:)` without a Secret Service.
    public init(service: String = KeyringVaultPepper.defaultService, accessGroup: String? = nil)
        throws(ActivationError)
    {
        // The keychain configuration's rules for names.
        let names = try KeychainConfiguration(status: service, accessGroup: accessGroup)
        connection = try SecretServiceConnection()
        self.service = names.keychainInstanceName_Status
        self.accessGroup = names.accessGroupAttribute
    }

    func address(vaultId: String) -> SecretItemAddress {
        SecretItemAddress(service: service, key: vaultId, instance: Self.instance, accessGroup: accessGroup)
    }

    /// The default collection, after checking it is unlocked.
    /// - Returns: its label and path.
    /// - Throws: `ActivationError.storageLocked(store:)`, `ActivationError.storageUnavailable(reason:)`.
    public func collection() throws(ActivationError) -> String { try connection.requireUnlocked() }

    /// Stores (or replaces) the pepper of `vaultId`, then reads it back and compares.
    /// - Throws: `ActivationError.storageLocked(store:)`, `ActivationError.storageUnavailable(reason:)`,
    ///   `ActivationError.invalidActivationData(reason:)` when it does not read back the same.
    public func store(_ pepper: SecureBytes, vaultId: String) throws(ActivationError) {
        guard pepper.count == Self.byteCount else { throw .wrongParameter(reason: "a vault pepper is 32 bytes") }
        let target = address(vaultId: vaultId)
        try pepper.withUnsafeBytes { (buffer) throws(ActivationError) in
            try connection.store(
                target, label: "SecurePIN vault \(vaultId) pepper", contentType: "application/octet-stream",
                secret: buffer)
        }
        guard let back = try connection.read(target) else {
            throw .invalidActivationData(reason: "the vault pepper did not read back from the keyring")
        }
        defer { back.destroy() }
        guard try coreStep({ () throws(SecureCoreError) in try back.isEqual(to: pepper) }) else {
            throw .invalidActivationData(reason: "the vault pepper read back different from the keyring")
        }
    }

    /// The pepper of `vaultId`, in secure memory, or nil when the keyring holds none.
    /// - Throws: `ActivationError.storageLocked(store:)`, `ActivationError.storageUnavailable(reason:)`,
    ///   `ActivationError.invalidActivationData(reason:)` for an item that is not 32 bytes.
    public func read(vaultId: String) throws(ActivationError) -> SecureBytes? {
        guard let pepper = try connection.read(address(vaultId: vaultId)) else { return nil }
        guard pepper.count == Self.byteCount else {
            pepper.destroy()
            throw .invalidActivationData(reason: "the keyring's vault pepper is not 32 bytes")
        }
        return pepper
    }

    /// Deletes the item of `vaultId`; none is no error.
    /// - Throws: `ActivationError.storageLocked(store:)`, `ActivationError.storageUnavailable(reason:)`.
    public func remove(vaultId: String) throws(ActivationError) {
        try connection.remove(address(vaultId: vaultId))
    }

    /// Whether the keyring holds the item of `vaultId` (its secret not loaded).
    /// - Throws: `ActivationError.storageLocked(store:)`, `ActivationError.storageUnavailable(reason:)`.
    public func contains(vaultId: String) throws(ActivationError) -> Bool {
        try connection.contains(address(vaultId: vaultId))
    }
}
