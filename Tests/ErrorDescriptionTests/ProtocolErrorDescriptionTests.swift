import Activation
import ActivationServer
import Biometry
import PowerAuthProtocol
import SecureCore
import Testing

/// Sample values of the PowerAuth protocol's errors, the client's and the server's.
enum ProtocolSamples {
    static let jwt: [JWTError] =
        [
            .malformed(reason: "the payload is not a JSON object"), .unsupportedAlgorithm("none"), .signatureInvalid,
            .claimMismatch(claim: "challenge"), .expired,
        ] + CoreSamples.secureCore.map { .core($0) }

    static func name(_ error: JWTError) -> String {
        switch error {
        case .malformed: "malformed"
        case .unsupportedAlgorithm: "unsupportedAlgorithm"
        case .signatureInvalid: "signatureInvalid"
        case .claimMismatch: "claimMismatch"
        case .expired: "expired"
        case .core: "core"
        }
    }

    static let jwtNames = ["malformed", "unsupportedAlgorithm", "signatureInvalid", "claimMismatch", "expired", "core"]

    static let activationCode: [ActivationCodeError] = [
        .malformed, .invalidCharacter, .nonCanonical, .checksumMismatch, .malformedSignature, .signatureMismatch,
    ]

    static func name(_ error: ActivationCodeError) -> String {
        switch error {
        case .malformed: "malformed"
        case .invalidCharacter: "invalidCharacter"
        case .nonCanonical: "nonCanonical"
        case .checksumMismatch: "checksumMismatch"
        case .malformedSignature: "malformedSignature"
        case .signatureMismatch: "signatureMismatch"
        }
    }

    static let activationCodeNames = [
        "malformed", "invalidCharacter", "nonCanonical", "checksumMismatch", "malformedSignature", "signatureMismatch",
    ]

    static let transport: [TransportError] = [
        .network(reason: "connection refused"), .cancelled, .tls(reason: "the certificate has expired"),
        .invalidConfiguration(reason: "the base URL is not https"),
    ]

    static func name(_ error: TransportError) -> String {
        switch error {
        case .network: "network"
        case .cancelled: "cancelled"
        case .tls: "tls"
        case .invalidConfiguration: "invalidConfiguration"
        }
    }

    static let transportNames = ["network", "cancelled", "tls", "invalidConfiguration"]

    static let configuration: [ConfigurationError] = [
        .tooLong, .malformedBase64, .unsupportedVersion(2), .truncated(field: "applicationSecret"),
        .invalidLength(field: "applicationKey", expected: 16, actual: 15), .duplicateKey(id: 1), .missingMasterKey,
        .invalidMasterKey, .trailingBytes,
    ]

    static func name(_ error: ConfigurationError) -> String {
        switch error {
        case .tooLong: "tooLong"
        case .malformedBase64: "malformedBase64"
        case .unsupportedVersion: "unsupportedVersion"
        case .truncated: "truncated"
        case .invalidLength: "invalidLength"
        case .duplicateKey: "duplicateKey"
        case .missingMasterKey: "missingMasterKey"
        case .invalidMasterKey: "invalidMasterKey"
        case .trailingBytes: "trailingBytes"
        }
    }

    static let configurationNames = [
        "tooLong", "malformedBase64", "unsupportedVersion", "truncated", "invalidLength", "duplicateKey",
        "missingMasterKey", "invalidMasterKey", "trailingBytes",
    ]

    static let ecies: [ECIESError] =
        [
            .authenticationFailed, .invalidKey(field: "ephemeralPublicKey"), .missingParameter("temporaryKeyId"),
            .malformedCryptogram(field: "nonce"), .temporaryKeyMismatch, .envelopeUsed,
        ] + CoreSamples.secureCore.map { .core($0) }

    static func name(_ error: ECIESError) -> String {
        switch error {
        case .authenticationFailed: "authenticationFailed"
        case .invalidKey: "invalidKey"
        case .missingParameter: "missingParameter"
        case .malformedCryptogram: "malformedCryptogram"
        case .temporaryKeyMismatch: "temporaryKeyMismatch"
        case .envelopeUsed: "envelopeUsed"
        case .core: "core"
        }
    }

    static let eciesNames = [
        "authenticationFailed", "invalidKey", "missingParameter", "malformedCryptogram", "temporaryKeyMismatch",
        "envelopeUsed", "core",
    ]

    static let protocolErrors: [ProtocolError] =
        [
            .malformedBase64(field: "ephemeralPublicKey"),
            .invalidLength(field: "nonce", expected: 16, actual: 12), .invalidKey(field: "devicePublicKey"),
            .unknownFactorSet("possession_everything"),
        ] + Factor.allCases.map { .missingFactorKey($0) }
        + [
            .invalidComponentLength(9), .malformedAuthenticationCode, .invalidLookAhead(0),
            .malformedHeader(reason: "a value without quotes"), .missingHeaderField("pa_nonce"),
            .duplicateHeaderField("pa_version"), .unknownHeaderField("pa_extra"), .invalidActivationId,
            .unsupportedProtocolVersion("2.1"), .invalidHTTPMethod("G3T"), .unknownAlgorithm("EC_P521"),
            .unsupportedAlgorithm(name: "EC_P384", missing: "protocol V4 in this type"), .invalidStatusBlobMagic,
            .unknownActivationState(9), .invalidKDFParameters(memoryKiB: 4, iterations: 99), .emptyPIN,
        ] + configuration.map { .invalidConfiguration($0) } + activationCode.map { .invalidActivationCode($0) }
        + [.malformedMessage(reason: "no responseObject")] + ecies.map { .ecies($0) } + jwt.map { .jwt($0) }
        + CoreSamples.secureCore.map { .core($0) }

    static func name(_ error: ProtocolError) -> String {
        switch error {
        case .malformedBase64: "malformedBase64"
        case .invalidLength: "invalidLength"
        case .invalidKey: "invalidKey"
        case .unknownFactorSet: "unknownFactorSet"
        case .missingFactorKey: "missingFactorKey"
        case .invalidComponentLength: "invalidComponentLength"
        case .malformedAuthenticationCode: "malformedAuthenticationCode"
        case .invalidLookAhead: "invalidLookAhead"
        case .malformedHeader: "malformedHeader"
        case .missingHeaderField: "missingHeaderField"
        case .duplicateHeaderField: "duplicateHeaderField"
        case .unknownHeaderField: "unknownHeaderField"
        case .invalidActivationId: "invalidActivationId"
        case .unsupportedProtocolVersion: "unsupportedProtocolVersion"
        case .invalidHTTPMethod: "invalidHTTPMethod"
        case .unknownAlgorithm: "unknownAlgorithm"
        case .unsupportedAlgorithm: "unsupportedAlgorithm"
        case .invalidStatusBlobMagic: "invalidStatusBlobMagic"
        case .unknownActivationState: "unknownActivationState"
        case .invalidKDFParameters: "invalidKDFParameters"
        case .emptyPIN: "emptyPIN"
        case .invalidConfiguration: "invalidConfiguration"
        case .invalidActivationCode: "invalidActivationCode"
        case .malformedMessage: "malformedMessage"
        case .ecies: "ecies"
        case .jwt: "jwt"
        case .core: "core"
        }
    }

    static let protocolNames = [
        "malformedBase64", "invalidLength", "invalidKey", "unknownFactorSet", "missingFactorKey",
        "invalidComponentLength", "malformedAuthenticationCode", "invalidLookAhead", "malformedHeader",
        "missingHeaderField", "duplicateHeaderField", "unknownHeaderField", "invalidActivationId",
        "unsupportedProtocolVersion", "invalidHTTPMethod", "unknownAlgorithm", "unsupportedAlgorithm",
        "invalidStatusBlobMagic", "unknownActivationState", "invalidKDFParameters", "emptyPIN",
        "invalidConfiguration", "invalidActivationCode", "malformedMessage", "ecies", "jwt", "core",
    ]

    static let activation: [ActivationError] =
        protocolErrors.map { .protocolError($0) } + CoreSamples.secureCore.map { .core($0) }
        + [
            .wrongParameter(reason: "the instance identifier has a slash"),
            .invalidActivationData(reason: "the activation state is not readable"), .upgradeSDK(foundVersion: 7),
            .missingActivation,
        ]
        + ProtocolAlgorithm.allCases.flatMap { activation in
            ProtocolAlgorithm.allCases.map { .algorithmMismatch(activation: activation, configuration: $0) }
        }
        + [
            .invalidActivationState(reason: "an activation already exists"),
            .weakPassword(weaknesses: ["frequently-used", "pattern"]), .weakPassword(weaknesses: []),
            .storage(operation: "opendir", errno: 2), .storageLocked(store: "Login"),
            .storageUnavailable(reason: "no Secret Service on the session bus"), .network(reason: "timed out"),
            .tls(reason: "the server's public key is not one of the pinned keys"), .authentication,
            .server(statusCode: 400, code: "ERR_ACTIVATION"), .invalidResponse(reason: "the signature does not verify"),
            .credentialsRejected, .credentialsExpired,
        ] + CoreSamples.systemStatuses.map { .biometryNotAvailable($0) }
        + [.biometryNotConfigured, .biometryInvalidated, .biometryFailed]
        + BiometricOption.allCases.map { .biometryOptionNotSupported($0) } + [.cancelled]

    static func name(_ error: ActivationError) -> String {
        switch error {
        case .protocolError: "protocolError"
        case .core: "core"
        case .wrongParameter: "wrongParameter"
        case .invalidActivationData: "invalidActivationData"
        case .upgradeSDK: "upgradeSDK"
        case .missingActivation: "missingActivation"
        case .algorithmMismatch: "algorithmMismatch"
        case .invalidActivationState: "invalidActivationState"
        case .weakPassword: "weakPassword"
        case .storage: "storage"
        case .storageLocked: "storageLocked"
        case .storageUnavailable: "storageUnavailable"
        case .network: "network"
        case .tls: "tls"
        case .authentication: "authentication"
        case .server: "server"
        case .invalidResponse: "invalidResponse"
        case .credentialsRejected: "credentialsRejected"
        case .credentialsExpired: "credentialsExpired"
        case .biometryNotAvailable: "biometryNotAvailable"
        case .biometryNotConfigured: "biometryNotConfigured"
        case .biometryInvalidated: "biometryInvalidated"
        case .biometryFailed: "biometryFailed"
        case .biometryOptionNotSupported: "biometryOptionNotSupported"
        case .cancelled: "cancelled"
        }
    }

    static let activationNames = [
        "protocolError", "core", "wrongParameter", "invalidActivationData", "upgradeSDK", "missingActivation",
        "algorithmMismatch", "invalidActivationState", "weakPassword", "storage", "storageLocked",
        "storageUnavailable", "network", "tls", "authentication", "server", "invalidResponse", "credentialsRejected",
        "credentialsExpired", "biometryNotAvailable", "biometryNotConfigured", "biometryInvalidated",
        "biometryFailed", "biometryOptionNotSupported", "cancelled",
    ]

    static let activationServer: [ActivationServerError] =
        [.activationNotFound] + ProtocolActivationState.allCases.map { .invalidState($0) }
        + [
            .invalidActivationCode, .authenticationFailed, .malformedRequest(reason: "no activationId"), .duplicate,
            .storage(reason: "disk I/O error"), .unavailable(reason: "the database is restarting"),
            .invalidConfiguration(reason: "maxFailedAttempts must be 1 to 100"),
        ] + protocolErrors.map { .protocolFailure($0) }
        + [
            .temporaryKeyFailure, .requestExpired, .replayedRequest, .encryptionFailed, .tokenInvalid,
            .upgradeNotAvailable,
        ]

    static func name(_ error: ActivationServerError) -> String {
        switch error {
        case .activationNotFound: "activationNotFound"
        case .invalidState: "invalidState"
        case .invalidActivationCode: "invalidActivationCode"
        case .authenticationFailed: "authenticationFailed"
        case .malformedRequest: "malformedRequest"
        case .duplicate: "duplicate"
        case .storage: "storage"
        case .unavailable: "unavailable"
        case .invalidConfiguration: "invalidConfiguration"
        case .protocolFailure: "protocolFailure"
        case .temporaryKeyFailure: "temporaryKeyFailure"
        case .requestExpired: "requestExpired"
        case .replayedRequest: "replayedRequest"
        case .encryptionFailed: "encryptionFailed"
        case .tokenInvalid: "tokenInvalid"
        case .upgradeNotAvailable: "upgradeNotAvailable"
        }
    }

    static let activationServerNames = [
        "activationNotFound", "invalidState", "invalidActivationCode", "authenticationFailed", "malformedRequest",
        "duplicate", "storage", "unavailable", "invalidConfiguration", "protocolFailure", "temporaryKeyFailure",
        "requestExpired", "replayedRequest", "encryptionFailed", "tokenInvalid", "upgradeNotAvailable",
    ]
}

@Suite("Descriptions of the protocol, client and server errors")
struct ProtocolErrorDescriptionTests {
    @Test func jwtError() {
        DescriptionRules.check(
            "JWTError", ProtocolSamples.jwt, caseName: ProtocolSamples.name, expected: ProtocolSamples.jwtNames)
    }

    @Test func activationCodeError() {
        DescriptionRules.check(
            "ActivationCodeError", ProtocolSamples.activationCode, caseName: ProtocolSamples.name,
            expected: ProtocolSamples.activationCodeNames)
    }

    @Test func transportError() {
        DescriptionRules.check(
            "TransportError", ProtocolSamples.transport, caseName: ProtocolSamples.name,
            expected: ProtocolSamples.transportNames)
    }

    @Test func configurationError() {
        DescriptionRules.check(
            "ConfigurationError", ProtocolSamples.configuration, caseName: ProtocolSamples.name,
            expected: ProtocolSamples.configurationNames)
    }

    @Test func eciesError() {
        DescriptionRules.check(
            "ECIESError", ProtocolSamples.ecies, caseName: ProtocolSamples.name, expected: ProtocolSamples.eciesNames)
    }

    @Test func protocolError() {
        DescriptionRules.check(
            "ProtocolError", ProtocolSamples.protocolErrors, caseName: ProtocolSamples.name,
            expected: ProtocolSamples.protocolNames)
    }

    @Test func activationError() {
        DescriptionRules.check(
            "ActivationError", ProtocolSamples.activation, caseName: ProtocolSamples.name,
            expected: ProtocolSamples.activationNames)
        // The example of the issue: a reason is printed as it is, inside a sentence.
        let damaged = ActivationError.invalidActivationData(reason: "the activation state is not readable")
        #expect(damaged.description.contains(": the activation state is not readable"))
        #expect(
            ActivationError.protocolError(.emptyPIN).description == ProtocolError.emptyPIN.description,
            "a wrapped protocol error reads as itself")
    }

    @Test func activationServerError() {
        DescriptionRules.check(
            "ActivationServerError", ProtocolSamples.activationServer, caseName: ProtocolSamples.name,
            expected: ProtocolSamples.activationServerNames)
    }
}
