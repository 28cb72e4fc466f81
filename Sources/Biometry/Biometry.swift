import SecureCore

/// Whether the system can do biometric authentication right now.
public enum BiometricSystemStatus: String, Sendable, Codable, Equatable {
    /// No biometric hardware.
    case notSupported
    /// Hardware present but unusable at this moment.
    case notAvailable
    /// Supported, but nothing enrolled.
    case notEnrolled
    /// Locked out after too many failed matches; the system wants its passcode.
    case lockout
    /// Ready.
    case available
}

/// The kind of biometry, for the UI's wording and icon.
public enum BiometryType: String, Sendable, Codable, Equatable {
    /// None.
    case none
    /// A fingerprint sensor (Touch ID).
    case touchID
    /// Face recognition (Face ID).
    case faceID
    /// No sensor at all: the key is kept in the desktop keyring (the Secret Service) and
    /// released while the user's login keyring is unlocked. The gate is the login secret that
    /// unlocked it, not a finger or a face; a UI must not show a biometric icon for it.
    case loginKeyring
}

/// How the biometric factor behaves (the settings of PowerAuth's `PowerAuthBiometricConfiguration`).
public struct BiometricConfiguration: Sendable, Equatable {
    /// When the enrolled fingers or faces change, the biometric slot is
    /// removed and the PIN is required (default false).
    public var invalidateBiometricFactorAfterChange: Bool
    /// The system may fall back to its own device passcode (default false).
    public var allowFallbackToDevicePasscode: Bool
    /// A successful evaluation is good for one use only (default true).
    public var invalidateLocalAuthenticationContextAfterUse: Bool

    /// Creates a configuration; the defaults are PowerAuth's.
    public init(
        invalidateBiometricFactorAfterChange: Bool = false, allowFallbackToDevicePasscode: Bool = false,
        invalidateLocalAuthenticationContextAfterUse: Bool = true
    ) {
        self.invalidateBiometricFactorAfterChange = invalidateBiometricFactorAfterChange
        self.allowFallbackToDevicePasscode = allowFallbackToDevicePasscode
        self.invalidateLocalAuthenticationContextAfterUse = invalidateLocalAuthenticationContextAfterUse
    }
}

/// A setting of ``BiometricConfiguration``, named in
/// ``BiometryError/unsupportedOption(_:)`` when an authenticator cannot honour its value.
public enum BiometricOption: String, Sendable, Equatable, CaseIterable {
    /// ``BiometricConfiguration/invalidateBiometricFactorAfterChange``.
    case invalidateBiometricFactorAfterChange
    /// ``BiometricConfiguration/allowFallbackToDevicePasscode``.
    case allowFallbackToDevicePasscode
    /// ``BiometricConfiguration/invalidateLocalAuthenticationContextAfterUse``.
    case invalidateLocalAuthenticationContextAfterUse
}

/// The platform's biometric key store: a key is stored behind biometry and
/// released only after a successful evaluation (Keychain with
/// `.biometryCurrentSet`, Android Keystore with user authentication).
public protocol BiometricAuthenticator: Sendable {
    /// System availability.
    var systemStatus: BiometricSystemStatus { get }
    /// The kind of biometry.
    var biometryType: BiometryType { get }
    /// A value that changes whenever the enrolled set changes (32 bytes; not secret).
    var enrolledSetFingerprint: [UInt8] { get }
    /// Stores `key` under `account`, protected by biometry.
    func storeKey(_ key: SecureBytes, account: String) throws(BiometryError)
    /// Prompts the user and returns the key stored under `account`.
    /// - Throws: ``BiometryError/cancelled``, ``BiometryError/failed(_:)``,
    ///   ``BiometryError/notConfigured`` (no key stored).
    func evaluate(prompt: String, account: String, configuration: BiometricConfiguration) async throws(BiometryError)
        -> SecureBytes
    /// Deletes the key stored under `account` (no error when absent).
    func deleteKey(account: String)
    /// Checks that this authenticator honours every setting of `configuration` as set, so that
    /// none is silently ignored. The vault and the activation service call it before they
    /// use the authenticator (the service when it is created), and ``evaluate(prompt:account:configuration:)``
    /// refuses such a configuration too.
    /// - Parameter configuration: the settings the caller will evaluate with.
    /// - Throws: ``BiometryError/unsupportedOption(_:)`` naming the first setting whose value
    ///   this authenticator cannot honour.
    func checkConfiguration(_ configuration: BiometricConfiguration) throws(BiometryError)
}
