import Biometry
import SecureCore

/// Errors raised by the PowerAuth protocol (this module) and, for now, by the
/// activation client built on it, whose cases are marked below. None carries secret content: a
/// rejected field is named, and echoed input is public protocol text,
/// shortened to at most 64 characters.
public enum ActivationError: Error, Equatable, Sendable {
    /// A field that must be canonical Base64 (padded, no whitespace, no
    /// stray bits) is not.
    case malformedBase64(field: String)
    /// A field has the wrong number of bytes.
    case invalidLength(field: String, expected: Int, actual: Int)
    /// A key that is not a valid P-256 key (off the curve, wrong encoding,
    /// scalar out of range); `field` names which one.
    case invalidKey(field: String)
    /// An authentication-code type (`pa_signature_type`) that is not one of
    /// the six PowerAuth factor sets.
    case unknownFactorSet(String)
    /// A factor key the requested factor set needs was not supplied.
    case missingFactorKey(Factor)
    /// A decimal component length outside 4 ... 8.
    case invalidComponentLength(Int)
    /// An authentication code whose shape does not match its format and factor set.
    case malformedAuthenticationCode
    /// A look-ahead window outside 1 ... 255 (the status blob's byte range).
    case invalidLookAhead(Int)
    /// An `X-PowerAuth-Authorization` value that does not follow the grammar;
    /// `reason` says where it broke.
    case malformedHeader(reason: String)
    /// A required header parameter is absent.
    case missingHeaderField(String)
    /// A header parameter appears twice.
    case duplicateHeaderField(String)
    /// A header parameter this implementation does not define.
    case unknownHeaderField(String)
    /// An activation identifier that is empty, too long, or not made of
    /// letters, digits and dashes.
    case invalidActivationId
    /// A protocol version (`pa_version`) other than 3.0 ... 3.3.
    case unsupportedProtocolVersion(String)
    /// An HTTP method that is not a token of letters.
    case invalidHTTPMethod(String)
    /// An algorithm name that PowerAuth does not define.
    case unknownAlgorithm(String)
    /// A PowerAuth algorithm that needs primitives this implementation lacks;
    /// `missing` says which. Never silently replaced by another algorithm.
    case unsupportedAlgorithm(name: String, missing: String)
    /// A status blob whose first four bytes are not the V3 magic `DE C0 DE D1`.
    case invalidStatusBlobMagic
    /// A status blob whose state byte is not 1 ... 5.
    case unknownActivationState(UInt8)
    /// Argon2id parameters outside the accepted bounds (memory 8 KiB ... 1 GiB,
    /// iterations 1 ... 32).
    case invalidKDFParameters(memoryKiB: UInt32, iterations: UInt32)
    /// An empty PIN was given for the knowledge factor.
    case emptyPIN
    /// A failure of the secure core (memory, a destroyed key, an internal error).
    case core(SecureCoreError)

    // MARK: Configuration and local data (the service)

    /// A configuration value or an argument is invalid: a malformed configuration string, an instance
    /// identifier with forbidden characters, an offline component length
    /// outside 4 ... 8. `reason` names the value, never a secret.
    case wrongParameter(reason: String)
    /// The stored activation data is damaged or inconsistent.
    /// `ActivationService.cleanupInstanceData(configuration:storage:authenticator:)`
    /// (in the client module) removes it so a new activation can be created.
    case invalidActivationData(reason: String)
    /// The stored activation data was written by a newer format this
    /// library does not read; nothing was changed.
    case upgradeSDK(foundVersion: Int)
    /// There is no activation on this device.
    case missingActivation
    /// The operation does not fit the activation's local or server state;
    /// `reason` says which (for example "an activation already exists").
    case invalidActivationState(reason: String)
    /// The storage refused an operation (`errno`), with the step that failed.
    case storage(operation: String, errno: Int32)

    // MARK: Network and server

    /// The request did not reach the server or no answer came back (no
    /// connection, time-out). The activation is never removed because of it.
    case network(reason: String)
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

    // MARK: Flow

    /// The user or the caller cancelled (a biometric prompt, a cancelled task).
    case cancelled
}

extension ActivationError {
    /// Echoed text, shortened so an error never carries a large input.
    static func echo(_ text: some StringProtocol) -> String {
        text.count <= 64 ? String(text) : String(text.prefix(61)) + "..."
    }

    /// Maps a secure-core error; an invalid key is attributed to `keyField`.
    init(_ error: SecureCoreError, keyField: String) {
        self = error == .invalidKey ? .invalidKey(field: keyField) : .core(error)
    }
}

/// Runs a secure-core operation and lifts its error into ``ActivationError``.
@inline(__always)
package func lift<R>(keyField: String = "key", _ body: () throws(SecureCoreError) -> R) throws(ActivationError) -> R {
    do throws(SecureCoreError) {
        return try body()
    } catch {
        throw ActivationError(error, keyField: keyField)
    }
}
