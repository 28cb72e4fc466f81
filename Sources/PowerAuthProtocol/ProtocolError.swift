import SecureCore

/// Errors of the PowerAuth protocol layer, shared by the client and the server: the
/// cryptography, the wire data, the authorization header, the status blob and the
/// configuration string. A client sees them wrapped in its own error type; the
/// server in ``ProtocolError`` carried by its own.
///
/// None carries secret content: a rejected field is named, and echoed input is public
/// protocol text, shortened to at most 64 characters.
public enum ProtocolError: Error, Equatable, Sendable {
    /// A field that must be canonical Base64 (padded, no whitespace, no
    /// stray bits) is not; `field` names it.
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
    /// A status blob whose first four bytes are not the V3 magic `DE C0 DE D1`
    /// (also the usual result of decrypting with a wrong key).
    case invalidStatusBlobMagic
    /// A status blob whose state byte is not 1 ... 5.
    case unknownActivationState(UInt8)
    /// Argon2id parameters outside the accepted bounds (memory 8 KiB ... 1 GiB,
    /// iterations 1 ... 32).
    case invalidKDFParameters(memoryKiB: UInt32, iterations: UInt32)
    /// An empty PIN was given for the knowledge factor.
    case emptyPIN
    /// A configuration string (`MOBILE_SDK_CONFIG`), or a part that goes into one, is
    /// invalid; the ``ConfigurationError`` says which rule it broke.
    case invalidConfiguration(ConfigurationError)
    /// An activation code, or its QR form `CODE#SIGNATURE`, is invalid; the
    /// ``ActivationCodeError`` says which rule it broke.
    case invalidActivationCode(ActivationCodeError)
    /// A message body does not follow the API: it cannot be encoded, is too large,
    /// or is not the expected JSON. `reason` says which.
    case malformedMessage(reason: String)
    /// A failure of PowerAuth's end-to-end encryption (``ECIESEncryptor``,
    /// ``ECIESDecryptor``, ``ECIESEnvelope``), which throw ``ECIESError`` directly.
    case ecies(ECIESError)
    /// A failure of a temporary-key JWT (``TemporaryKeyJWT``), which throws
    /// ``JWTError`` directly.
    case jwt(JWTError)
    /// A failure of the secure core inside a protocol computation (memory, a
    /// destroyed key, an internal error).
    case core(SecureCoreError)
}

extension ProtocolError {
    /// Echoed text, shortened so an error never carries a large input.
    static func echo(_ text: some StringProtocol) -> String {
        text.count <= 64 ? String(text) : String(text.prefix(61)) + "..."
    }

    /// Maps a secure-core error; an invalid key is attributed to `keyField`.
    init(_ error: SecureCoreError, keyField: String) {
        self = error == .invalidKey ? .invalidKey(field: keyField) : .core(error)
    }
}

/// Runs a secure-core operation and lifts its error into ``ProtocolError``.
@inline(__always)
package func lift<R>(keyField: String = "key", _ body: () throws(SecureCoreError) -> R) throws(ProtocolError) -> R {
    do throws(SecureCoreError) {
        return try body()
    } catch {
        throw ProtocolError(error, keyField: keyField)
    }
}

extension ProtocolError: CustomStringConvertible {
    /// What went wrong, in a sentence fragment a person can act on; it names a field, never a secret.
    public var description: String {
        switch self {
        case .malformedBase64(let field): "the field \(field) is not canonical Base64"
        case .invalidLength(let field, let expected, let actual):
            "the field \(field) has \(actual) bytes, not \(expected)"
        case .invalidKey(let field): "the key \(field) is not a valid P-256 key"
        case .unknownFactorSet(let text): "the factor set \(text) is not one PowerAuth defines"
        case .missingFactorKey(let factor): "the \(factor.rawValue) factor key is missing"
        case .invalidComponentLength(let length): "a component length of \(length) digits is outside 4 ... 8"
        case .malformedAuthenticationCode: "the authentication code does not match its format and factor set"
        case .invalidLookAhead(let window): "a look-ahead window of \(window) is outside 1 ... 255"
        case .malformedHeader(let reason): "the X-PowerAuth-Authorization header is malformed: \(reason)"
        case .missingHeaderField(let name): "the authorization header lacks \(name)"
        case .duplicateHeaderField(let name): "the authorization header has \(name) twice"
        case .unknownHeaderField(let name): "the authorization header has the unknown parameter \(name)"
        case .invalidActivationId:
            "the activation identifier is empty, too long, or not made of letters, digits and dashes"
        case .unsupportedProtocolVersion(let version): "protocol version \(version) is not supported: 3.0 ... 3.3 are"
        case .invalidHTTPMethod(let method): "the HTTP method \(method) is not a token of letters"
        case .unknownAlgorithm(let name): "the algorithm \(name) is not one PowerAuth defines"
        case .unsupportedAlgorithm(let name, let missing):
            "the algorithm \(name) needs \(missing), which this implementation lacks"
        case .invalidStatusBlobMagic: "the status blob does not open: its magic is wrong, usually from a wrong key"
        case .unknownActivationState(let state): "the status blob has the unknown activation state \(state)"
        case .invalidKDFParameters(let memoryKiB, let iterations):
            "the Argon2id parameters, \(memoryKiB) KiB and \(iterations) iterations, are outside the accepted "
                + "bounds: memory 8 KiB ... 1 GiB, iterations 1 ... 32"
        case .emptyPIN: "the PIN is empty"
        case .invalidConfiguration(let error): "the configuration string is not valid: \(error)"
        case .invalidActivationCode(let error): "the activation code is not valid: \(error)"
        case .malformedMessage(let reason): "the message does not follow the API: \(reason)"
        case .ecies(let error): "end-to-end encryption failed: \(error)"
        case .jwt(let error): "the temporary key's JWT is not valid: \(error)"
        case .core(let error): "secure memory or cryptography failed: \(error)"
        }
    }
}
