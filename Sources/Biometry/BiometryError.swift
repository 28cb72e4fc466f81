import SecureCore

/// What a ``BiometricAuthenticator`` can report. The vault and the activation
/// service each map it into their own error; nothing about it is secret.
public enum BiometryError: Error, Equatable, Sendable {
    /// The user cancelled the prompt.
    case cancelled
    /// Evaluation failed (no match, when the status is ``BiometricSystemStatus/available``)
    /// or is not possible now (any other status).
    case failed(BiometricSystemStatus)
    /// No key is stored under the account.
    case notConfigured
    /// Secure memory failed while copying the key.
    case secureCore(SecureCoreError)
    /// This authenticator cannot honour the option's value in the configuration (for example
    /// the login keyring has no enrolled set to watch and no passcode to fall back to); nothing
    /// was evaluated, stored or changed. Choose a configuration it supports.
    case unsupportedOption(BiometricOption)
}
