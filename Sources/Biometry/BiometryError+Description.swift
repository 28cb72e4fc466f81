extension BiometryError: CustomStringConvertible {
    /// What went wrong, in a sentence fragment a person can act on; it never names a key.
    public var description: String {
        switch self {
        case .cancelled: "the user cancelled the biometric prompt"
        case .failed(.available): "the biometric match failed"
        case .failed(let status): "biometric authentication is not possible now: \(status.phrase)"
        case .notConfigured: "no biometric key is stored under the account"
        case .secureCore(let error): "secure memory failed while copying the key: \(error)"
        case .unsupportedOption(let option): option.unsupportedPhrase
        }
    }
}

extension BiometricSystemStatus {
    /// The status in words, for the error descriptions of the modules that report it.
    package var phrase: String {
        switch self {
        case .notSupported: "this device has no biometric hardware"
        case .notAvailable: "the biometric hardware cannot be used at this moment"
        case .notEnrolled: "no biometry is enrolled"
        case .lockout: "locked out after too many failed matches"
        case .available: "the system reports it ready"
        }
    }
}

extension BiometricOption {
    /// Why this authenticator refused the option's value, for the error descriptions.
    package var unsupportedPhrase: String {
        switch self {
        case .invalidateBiometricFactorAfterChange:
            "this authenticator has no enrolled set to watch, so invalidateBiometricFactorAfterChange "
                + "cannot be honoured: set it to false"
        case .allowFallbackToDevicePasscode:
            "this authenticator has no device passcode to fall back to, so allowFallbackToDevicePasscode "
                + "cannot be honoured: set it to false"
        case .invalidateLocalAuthenticationContextAfterUse:
            "this authenticator releases the key to every evaluation while it is unlocked, so "
                + "invalidateLocalAuthenticationContextAfterUse cannot be honoured: set it to false"
        }
    }
}
