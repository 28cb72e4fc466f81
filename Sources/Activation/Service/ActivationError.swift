import Biometry
import PowerAuthProtocol
import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Errors of the activation client (``ActivationService``, ``ActivationFlows``, the
/// storage and the configuration). A failure of the protocol layer below arrives
/// wrapped in ``protocolError(_:)``; a failure of the transport is mapped to
/// ``network(reason:)``, ``cancelled`` or ``wrongParameter(reason:)``.
///
/// None carries secret content: a rejected value is named, never echoed.
public enum ActivationError: Error, Equatable, Sendable {
    /// A protocol computation or protocol data failed: a configuration string that does
    /// not parse, an unknown or unsupported algorithm, an empty PIN, a status blob with a
    /// state this library does not know, a secure-core failure inside the cryptography.
    case protocolError(ProtocolError)
    /// A failure of the secure core in the client's own work (memory, a destroyed key,
    /// an internal error); failures inside protocol computations are ``protocolError(_:)``.
    case core(SecureCoreError)

    // MARK: Configuration and local data

    /// A client setting or an argument is invalid: an instance identifier with forbidden
    /// characters, a bad base URL, an offline component length outside 4 ... 8, a TLS
    /// strategy the transport cannot use. `reason` names the value, never a secret.
    case wrongParameter(reason: String)
    /// The stored activation data is damaged or inconsistent.
    /// ``ActivationService/cleanupInstanceData(configuration:storage:authenticator:)``
    /// removes it so a new activation can be created.
    case invalidActivationData(reason: String)
    /// The stored activation data was written by a newer format this
    /// library does not read; nothing was changed.
    case upgradeSDK(foundVersion: Int)
    /// There is no activation on this device.
    case missingActivation
    /// The stored activation was made with another suite than the configuration asks for,
    /// and this configuration cannot run it (a `LEGACY_P256` configuration over a V4
    /// activation). Nothing was read further or changed: the activation is valid. Open it
    /// with a configuration of its own suite; when `configuration` is the stronger one,
    /// upgrade it (``ActivationService/upgrade(password:)``). Never a reason to remove it.
    case algorithmMismatch(activation: ProtocolAlgorithm, configuration: ProtocolAlgorithm)
    /// The operation does not fit the activation's local or server state;
    /// `reason` says which (for example "an activation already exists").
    case invalidActivationState(reason: String)
    /// The new PIN is weak in the ways named, and the strength policy rejects such PINs. Nothing
    /// was sent or changed; ask the user for another.
    case weakPassword(weaknesses: [String])
    /// The storage refused an operation (`errno`), with the step that failed.
    case storage(operation: String, errno: Int32)
    /// The secret store is locked (a Secret Service collection locked with the session):
    /// nothing was read or changed, and the data may well be there. Ask the user to unlock
    /// it (log in, or unlock the keyring) and try again; `store` names it.
    case storageLocked(store: String)
    /// The secret store cannot be used (no Secret Service on the session bus, no default
    /// collection, a D-Bus failure); `reason` says which. Nothing was changed.
    case storageUnavailable(reason: String)

    // MARK: Network and server

    /// The request did not reach the server or no answer came back (no
    /// connection, time-out, HTTP 5xx). The activation is never removed because of it.
    case network(reason: String)
    /// The server's TLS could not be trusted or spoken (see
    /// `PowerAuthProtocol.TransportError.tls(reason:)`): its own case, not ``network(reason:)``.
    /// Nothing was sent that could count an attempt, and the activation is never removed because of it.
    case tls(reason: String)
    /// The server rejected the authentication (HTTP 401 with
    /// `ERR_AUTHENTICATION`): a wrong PIN, a changed activation state or a
    /// counter out of step. Fetch the status to tell which.
    case authentication
    /// The server answered with an error other than an authentication
    /// failure; `code` is its error code (for example `ERR_ACTIVATION`).
    case server(statusCode: Int, code: String)
    /// The server's answer does not follow the protocol (bad JSON, a bad
    /// signature over the activation data, a status blob that does not open).
    case invalidResponse(reason: String)
    /// The credentials were already used for a request the server rejected
    /// with HTTP 401; sending another request with them could block the
    /// activation. Ask the user again.
    case credentialsRejected
    /// Biometry credentials fetched in advance are past their lifetime, or
    /// were destroyed.
    case credentialsExpired

    // MARK: Biometry

    /// The system cannot do biometric authentication now; see the status.
    case biometryNotAvailable(BiometricSystemStatus)
    /// The activation has no biometry factor.
    case biometryNotConfigured
    /// The enrolled biometry changed and the configuration invalidates the
    /// factor after a change: the factor was removed locally.
    case biometryInvalidated
    /// The biometric match failed.
    case biometryFailed
    /// The biometric authenticator cannot honour this setting of the configuration's
    /// `biometricConfiguration` (found when the service is created, before anything is read).
    case biometryOptionNotSupported(BiometricOption)

    // MARK: Flow

    /// The user or the caller cancelled (a biometric prompt, a cancelled task).
    case cancelled
}

extension ActivationError {
    /// Maps a transport's error: a failure to deliver is ``network(reason:)``, a
    /// cancelled task ``cancelled``, unusable transport settings ``wrongParameter(reason:)``.
    /// - Parameter error: the transport's error.
    public init(_ error: TransportError) {
        switch error {
        case .network(let reason): self = .network(reason: reason)
        case .tls(let reason): self = .tls(reason: reason)
        case .cancelled: self = .cancelled
        case .invalidConfiguration(let reason): self = .wrongParameter(reason: reason)
        }
    }

    /// Maps an authenticator's error.
    init(biometry error: BiometryError) {
        switch error {
        case .cancelled: self = .cancelled
        case .failed(let status): self = status == .available ? .biometryFailed : .biometryNotAvailable(status)
        case .notConfigured: self = .biometryNotConfigured
        case .secureCore(let core): self = .core(core)
        case .unsupportedOption(let option): self = .biometryOptionNotSupported(option)
        }
    }
}

/// Runs protocol code and wraps its error in ``ActivationError/protocolError(_:)``.
@inline(__always)
func protocolStep<R>(_ body: () throws(ProtocolError) -> R) throws(ActivationError) -> R {
    do throws(ProtocolError) {
        return try body()
    } catch {
        throw .protocolError(error)
    }
}

/// Runs a secure-core operation of the client's own and lifts its error into
/// ``ActivationError/core(_:)``.
@inline(__always)
func coreStep<R>(_ body: () throws(SecureCoreError) -> R) throws(ActivationError) -> R {
    do throws(SecureCoreError) {
        return try body()
    } catch {
        throw .core(error)
    }
}

/// Maps an authenticator's error into ``ActivationError``.
func mapBiometry<R>(_ body: () throws(BiometryError) -> R) throws(ActivationError) -> R {
    do throws(BiometryError) {
        return try body()
    } catch {
        throw ActivationError(biometry: error)
    }
}

extension ActivationError: CustomStringConvertible {
    /// What went wrong, in a sentence fragment a person can act on; it never names a PIN, key or token.
    public var description: String {
        switch self {
        case .protocolError(let error): "\(error)"
        case .core(let error): "secure memory or cryptography failed: \(error)"
        case .wrongParameter(let reason): reason
        case .invalidActivationData(let reason):
            "the stored activation data is damaged: \(reason); remove it to create a new activation"
        case .upgradeSDK(let version):
            "the stored activation has format \(version), newer than this library reads: upgrade; nothing was changed"
        case .missingActivation: "there is no activation on this device"
        case .algorithmMismatch(let activation, let configuration):
            "the activation uses \(activation.rawValue), the configuration asks for \(configuration.rawValue)"
                + (configuration.isStronger(than: activation)
                    ? ": upgrade available" : ": no downgrade exists; open it with a configuration of its own suite")
        case .invalidActivationState(let reason): reason
        case .weakPassword(let weaknesses):
            weaknesses.isEmpty
                ? "the new PIN is weak; choose another"
                : "the new PIN is weak: \(weaknesses.joined(separator: ", ")); choose another"
        case .storage(let operation, let code):
            "the storage refused \(operation): \(String(cString: strerror(code)))"
        case .storageLocked(let store):
            "the keyring \(store) is locked: unlock it by logging in or unlocking the keyring, and try again"
        case .storageUnavailable(let reason): "the secret store cannot be used: \(reason); nothing was changed"
        case .network(let reason): "the server cannot be reached: \(reason)"
        case .tls(let reason): "the server is not trusted: \(reason); nothing was sent that counts"
        case .authentication:
            "the server rejected the authentication: a wrong PIN, a changed activation state or a counter out "
                + "of step; fetch the status to tell which"
        case .server(let statusCode, let code): "the server answered HTTP \(statusCode) \(code)"
        case .invalidResponse(let reason): "the server's answer is not valid: \(reason)"
        case .credentialsRejected:
            "the server already rejected these credentials, and another request with them could block the "
                + "activation: ask the user again"
        case .credentialsExpired: "the biometry credentials are past their lifetime or were destroyed"
        case .biometryNotAvailable(let status): "the biometry factor is not available: \(status.phrase)"
        case .biometryNotConfigured: "the activation has no biometry factor"
        case .biometryInvalidated: "the enrolled biometry changed, so the biometry factor was removed on this device"
        case .biometryFailed: "the biometric match failed"
        case .biometryOptionNotSupported(let option): option.unsupportedPhrase
        case .cancelled: "cancelled by the user or the caller"
        }
    }
}
