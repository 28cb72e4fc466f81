import Activation
import Biometry
import SecureCore

/// A `Biometry.BiometricAuthenticator` for a Linux desktop or server: the key of the biometry
/// factor lives in the Secret Service, and the gate is the login keyring's unlock, not a sensor.
///
/// There is no fingerprint reader or camera here, and this type does not pretend otherwise:
/// `biometryType` is `Biometry.BiometryType.loginKeyring`, and the key is released to any
/// evaluation while the default collection is unlocked (the user typed the login secret, or the
/// session unlocked it at login). The prompt text is not shown: the Secret Service raises no
/// prompt from here (a locked collection is reported, never unlocked). What the factor proves is
/// "a process of this user's unlocked session", which is weaker than a phone's biometry; it is
/// offered because the seed's configuration names a biometry item, and documented as such
/// (`docs/keychain.md`).
///
/// The item: `service` = `keychainInstanceName_Biometry`, `key` = the account the activation
/// service passes (its `biometryKeyAccount`, which the CLI sets to
/// `KeychainConfiguration.biometryKey(instanceId:)`), `instance` and `access-group` as every
/// other item.
///
/// | Status | When |
/// | --- | --- |
/// | `available` | the default collection is unlocked |
/// | `lockout` | it is locked: unlock the keyring (the login secret is the "passcode") |
/// | `notAvailable` | the Secret Service stopped answering |
public struct KeyringBiometricAuthenticator: BiometricAuthenticator {
    /// The item names.
    public let keychain: KeychainConfiguration
    /// The instance whose key this holds (the `instance` attribute).
    public let instanceId: String
    let connection: SecretServiceConnection

    /// Connects to the Secret Service on the session bus.
    /// - Parameters:
    ///   - keychain: the item names (the biometry service).
    ///   - instanceId: the instance.
    /// - Throws: `ActivationError.storageUnavailable(reason:)` without a Secret Service,
    ///   `ActivationError.wrongParameter(reason:)` for a bad instance id.
    public init(keychain: KeychainConfiguration, instanceId: String) throws(ActivationError) {
        try ActivationConfiguration.validate(instanceId: instanceId)
        connection = try SecretServiceConnection()
        self.keychain = keychain
        self.instanceId = instanceId
    }

    /// `available` while the default collection is unlocked, `lockout` while it is locked.
    public var systemStatus: BiometricSystemStatus {
        do throws(ActivationError) {
            try connection.requireUnlocked()
            return .available
        } catch {
            if case .storageLocked = error { return .lockout }
            return .notAvailable
        }
    }

    /// Always `loginKeyring`: no sensor, the keyring's unlock is the gate.
    public var biometryType: BiometryType { .loginKeyring }

    /// There is no enrolled set of fingers or faces: a constant (32 zero bytes), so a
    /// configuration that invalidates the factor "after a change" never sees one.
    public var enrolledSetFingerprint: [UInt8] { [UInt8](repeating: 0, count: 32) }

    /// The one configuration this authenticator honours: all three settings false. There is no
    /// enrolled set to watch (`invalidateBiometricFactorAfterChange`), no device passcode to fall
    /// back to (`allowFallbackToDevicePasscode`: the keyring is unlocked or not, and is never
    /// unlocked from here), and no evaluation context to spend after one use
    /// (`invalidateLocalAuthenticationContextAfterUse`: an unlocked keyring releases the key to
    /// every evaluation until it is locked). Pass it as the vault's or the activation's
    /// `BiometricConfiguration`; the default configuration (PowerAuth's, with the last setting
    /// true) is refused with `Biometry.BiometryError.unsupportedOption(_:)`.
    public static let supportedConfiguration = BiometricConfiguration(
        invalidateBiometricFactorAfterChange: false, allowFallbackToDevicePasscode: false,
        invalidateLocalAuthenticationContextAfterUse: false)

    /// Refuses each setting the keyring cannot honour (see ``supportedConfiguration``).
    /// - Parameter configuration: the settings to check.
    /// - Throws: `Biometry.BiometryError.unsupportedOption(_:)` naming the first such setting.
    public func checkConfiguration(_ configuration: BiometricConfiguration) throws(BiometryError) {
        if configuration.invalidateBiometricFactorAfterChange {
            throw .unsupportedOption(.invalidateBiometricFactorAfterChange)
        }
        if configuration.allowFallbackToDevicePasscode { throw .unsupportedOption(.allowFallbackToDevicePasscode) }
        if configuration.invalidateLocalAuthenticationContextAfterUse {
            throw .unsupportedOption(.invalidateLocalAuthenticationContextAfterUse)
        }
    }

    /// Where the key of `account` lives.
    func address(account: String) -> SecretItemAddress {
        SecretItemAddress(
            service: keychain.keychainInstanceName_Biometry, key: account, instance: instanceId,
            accessGroup: keychain.accessGroupAttribute)
    }

    /// Stores (or replaces) the key, straight from secure memory.
    /// - Throws: `Biometry.BiometryError.failed(_:)` with `lockout` when the collection is
    ///   locked, `notAvailable` when the service fails.
    public func storeKey(_ key: SecureBytes, account: String) throws(BiometryError) {
        let target = address(account: account)
        do throws(ActivationError) {
            try key.withUnsafeBytes { (buffer) throws(ActivationError) in
                try connection.store(
                    target, label: "SecurePIN \(instanceId) biometry key", contentType: "application/octet-stream",
                    secret: buffer)
            }
        } catch {
            throw Self.biometryError(error)
        }
    }

    /// Returns the key when the collection is unlocked; no prompt is shown (`prompt` is unused).
    /// - Throws: `Biometry.BiometryError.unsupportedOption(_:)` for a configuration other than
    ///   ``supportedConfiguration`` (nothing read), `Biometry.BiometryError.notConfigured` when no
    ///   key is stored, `Biometry.BiometryError.failed(_:)` with `lockout` when the collection is locked.
    public func evaluate(prompt: String, account: String, configuration: BiometricConfiguration)
        async throws(BiometryError) -> SecureBytes
    {
        try checkConfiguration(configuration)
        let found: SecureBytes?
        do throws(ActivationError) {
            found = try connection.read(address(account: account))
        } catch {
            throw Self.biometryError(error)
        }
        guard let found else { throw .notConfigured }
        return found
    }

    /// Deletes the item; a missing one, or a locked collection, changes nothing (the protocol
    /// gives this call no error: a locked collection keeps the item, which the next removal
    /// with the keyring unlocked deletes).
    public func deleteKey(account: String) {
        try? connection.remove(address(account: account))
    }

    /// Whether the key of `account` is stored (its secret not loaded).
    /// - Throws: `ActivationError.storageLocked(store:)`, `ActivationError.storageUnavailable(reason:)`.
    public func hasKey(account: String) throws(ActivationError) -> Bool {
        try connection.contains(address(account: account))
    }

    static func biometryError(_ error: ActivationError) -> BiometryError {
        switch error {
        case .storageLocked: .failed(.lockout)
        case .core(let core): .secureCore(core)
        default: .failed(.notAvailable)
        }
    }
}
