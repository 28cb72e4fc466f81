import Biometry
import PinEntry
import PinVault
import SecureCore
import Testing

/// Sample values of the vault's errors.
enum VaultSamples {
    static let tpm: [VaultTPMError] = [
        .unavailable(reason: "nothing listens at the TCTI"), .differentTPM, .authorizationFailed, .lockedOut,
        .lockoutAuthorizationRefused, .pcrMismatch, .failed(responseCode: 0x921),
    ]

    static func name(_ error: VaultTPMError) -> String {
        switch error {
        case .unavailable: "unavailable"
        case .differentTPM: "differentTPM"
        case .authorizationFailed: "authorizationFailed"
        case .lockedOut: "lockedOut"
        case .lockoutAuthorizationRefused: "lockoutAuthorizationRefused"
        case .pcrMismatch: "pcrMismatch"
        case .failed: "failed"
        }
    }

    static let tpmNames = [
        "unavailable", "differentTPM", "authorizationFailed", "lockedOut", "lockoutAuthorizationRefused",
        "pcrMismatch", "failed",
    ]

    static let server: [VaultServerError] = [
        .network(reason: "connection refused"), .tls(reason: "the certificate has expired"),
        .blocked(VaultServerCounters(failures: 10, maxFailures: 10, blocked: true)), .unknownVault,
        .refused(reason: "the proof did not verify"),
    ]

    static func name(_ error: VaultServerError) -> String {
        switch error {
        case .network: "network"
        case .tls: "tls"
        case .blocked: "blocked"
        case .unknownVault: "unknownVault"
        case .refused: "refused"
        }
    }

    static let serverNames = ["network", "tls", "blocked", "unknownVault", "refused"]

    static let formats: [VaultPinFormat] = [
        VaultPinFormat(characters: .digits, minimumLength: 4, maximumLength: 8)!,
        VaultPinFormat(characters: .digits, minimumLength: 6, maximumLength: 6)!, .unrecorded,
    ]

    static let vault: [VaultError] =
        [
            .wrongPIN(remainingAttempts: 19), .wrongPIN(remainingAttempts: 1), .wrongPIN(remainingAttempts: 0),
            .wrongPIN(remainingAttempts: nil), .throttled(retryAfterSeconds: 60), .locked, .wiped, .notFound,
            .alreadyExists, .notAVault, .newerFormat(version: 9), .unsupportedFormat(version: 1),
            .unsuitableDirectory(reason: "it is open to the group or others"),
            .damaged(reason: "the header MAC does not verify"), .invalidPolicy(reason: "the limit must be 1 to 100"),
            .parametersBelowFloor, .parametersAboveCeiling,
        ] + formats.map { .pinOutsideFormat($0) }
        + [
            .pepperRequired, .pepperNotSupported(reason: "a TPM-bound vault takes no pepper"),
            .invalidSecretSize(0), .biometryNotConfigured, .biometryInvalidated,
        ] + CoreSamples.systemStatuses.map { .biometryFailed($0) }
        + BiometricOption.allCases.map { .biometryOptionNotSupported($0) }
        + [.cancelled, .io(operation: "fsync", errno: 28)] + CoreSamples.secureCore.map { .secureCore($0) }
        + [
            .tpmRequired, .tpmUnavailable(reason: "no TPM device"), .tpmMismatch,
            .tpmLockedOut(retryAfterSeconds: 7200), .tpmLockedOut(retryAfterSeconds: 0),
            .tpmPCRsChanged(pcrs: TPMPCRSelection(parsing: "0,7")!), .tpmLockoutAuthorizationNotSet,
        ] + tpm.map { .tpmFailed($0) }
        + [
            .serverRequired, .network(reason: "timed out"), .serverTLS(reason: "the pinned key does not match"),
            .serverBlocked, .serverRefused(reason: "a malformed answer"),
        ]

    static func name(_ error: VaultError) -> String {
        switch error {
        case .wrongPIN: "wrongPIN"
        case .throttled: "throttled"
        case .locked: "locked"
        case .wiped: "wiped"
        case .notFound: "notFound"
        case .alreadyExists: "alreadyExists"
        case .notAVault: "notAVault"
        case .newerFormat: "newerFormat"
        case .unsupportedFormat: "unsupportedFormat"
        case .unsuitableDirectory: "unsuitableDirectory"
        case .damaged: "damaged"
        case .invalidPolicy: "invalidPolicy"
        case .parametersBelowFloor: "parametersBelowFloor"
        case .parametersAboveCeiling: "parametersAboveCeiling"
        case .pinOutsideFormat: "pinOutsideFormat"
        case .pepperRequired: "pepperRequired"
        case .pepperNotSupported: "pepperNotSupported"
        case .invalidSecretSize: "invalidSecretSize"
        case .biometryNotConfigured: "biometryNotConfigured"
        case .biometryInvalidated: "biometryInvalidated"
        case .biometryFailed: "biometryFailed"
        case .biometryOptionNotSupported: "biometryOptionNotSupported"
        case .cancelled: "cancelled"
        case .io: "io"
        case .secureCore: "secureCore"
        case .tpmRequired: "tpmRequired"
        case .tpmUnavailable: "tpmUnavailable"
        case .tpmMismatch: "tpmMismatch"
        case .tpmLockedOut: "tpmLockedOut"
        case .tpmPCRsChanged: "tpmPCRsChanged"
        case .tpmLockoutAuthorizationNotSet: "tpmLockoutAuthorizationNotSet"
        case .tpmFailed: "tpmFailed"
        case .serverRequired: "serverRequired"
        case .network: "network"
        case .serverTLS: "serverTLS"
        case .serverBlocked: "serverBlocked"
        case .serverRefused: "serverRefused"
        }
    }

    static let vaultNames = [
        "wrongPIN", "throttled", "locked", "wiped", "notFound", "alreadyExists", "notAVault", "newerFormat",
        "unsupportedFormat", "unsuitableDirectory", "damaged", "invalidPolicy", "parametersBelowFloor",
        "parametersAboveCeiling", "pinOutsideFormat", "pepperRequired", "pepperNotSupported", "invalidSecretSize",
        "biometryNotConfigured", "biometryInvalidated", "biometryFailed", "biometryOptionNotSupported", "cancelled",
        "io", "secureCore", "tpmRequired", "tpmUnavailable", "tpmMismatch", "tpmLockedOut", "tpmPCRsChanged",
        "tpmLockoutAuthorizationNotSet", "tpmFailed", "serverRequired", "network", "serverTLS", "serverBlocked",
        "serverRefused",
    ]

    static let unlock: [VaultUnlockError<PinEntryError>] =
        vault.map { .vault($0) } + CoreSamples.pinEntry.map { .body($0) }

    static func name(_ error: VaultUnlockError<PinEntryError>) -> String {
        switch error {
        case .vault: "vault"
        case .body: "body"
        }
    }

    static let unlockNames = ["vault", "body"]
}

@Suite("Descriptions of the vault errors")
struct VaultErrorDescriptionTests {
    @Test func vaultError() {
        DescriptionRules.check(
            "VaultError", VaultSamples.vault, caseName: VaultSamples.name, expected: VaultSamples.vaultNames)
    }

    /// The example of the issue: a count printed plainly, an absent one left out.
    @Test func wrongPINReadsAsASentence() {
        #expect(VaultError.wrongPIN(remainingAttempts: 19).description == "the PIN is wrong; 19 attempts remain")
        #expect(VaultError.wrongPIN(remainingAttempts: 1).description == "the PIN is wrong; 1 attempt remains")
        #expect(VaultError.wrongPIN(remainingAttempts: nil).description == "the PIN is wrong")
    }

    @Test func vaultTPMError() {
        DescriptionRules.check(
            "VaultTPMError", VaultSamples.tpm, caseName: VaultSamples.name, expected: VaultSamples.tpmNames)
        #expect(VaultTPMError.failed(responseCode: 0x921).description.hasSuffix("0x921"))
    }

    @Test func vaultServerError() {
        DescriptionRules.check(
            "VaultServerError", VaultSamples.server, caseName: VaultSamples.name, expected: VaultSamples.serverNames)
    }

    @Test func vaultUnlockError() {
        DescriptionRules.check(
            "VaultUnlockError", VaultSamples.unlock, caseName: VaultSamples.name, expected: VaultSamples.unlockNames)
        // Both sides forward to the wrapped error's own description.
        for error in VaultSamples.vault {
            #expect(VaultUnlockError<PinEntryError>.vault(error).description == error.description)
        }
        for error in CoreSamples.pinEntry {
            #expect(VaultUnlockError<PinEntryError>.body(error).description == error.description)
        }
    }
}
