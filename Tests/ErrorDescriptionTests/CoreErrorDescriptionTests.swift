import Biometry
import PinEntry
import PinEntryTerminal
import PinStrength
import PostQuantum
import SecureCore
import Testing

/// Sample values of the errors of the secure core, the PIN entry modules, biometry and the
/// post-quantum module: every case, and every case of a wrapped error under each wrapping case.
enum CoreSamples {
    static let secureCore: [SecureCoreError] = [
        .destroyed, .indexOutOfRange(index: 9, length: 4), .invalidCodePoint, .tooLong(maximum: 256), .malformedUTF8,
        .outOfMemory, .invalidSize(0), .sizeMismatch(expected: 32, actual: 16), .invalidIterations, .invalidMemory,
        .invalidParallelism, .saltTooShort(minimum: 16), .invalidOutputLength(8), .memoryAboveCeiling,
        .keyDerivationFailed, .authenticationFailed, .invalidKeyOrNonceSize, .unsupported, .invalidKey,
        .initializationFailed, .inheritedAcrossFork, .internalFailure(status: -7),
    ]

    static func name(_ error: SecureCoreError) -> String {
        switch error {
        case .destroyed: "destroyed"
        case .indexOutOfRange: "indexOutOfRange"
        case .invalidCodePoint: "invalidCodePoint"
        case .tooLong: "tooLong"
        case .malformedUTF8: "malformedUTF8"
        case .outOfMemory: "outOfMemory"
        case .invalidSize: "invalidSize"
        case .sizeMismatch: "sizeMismatch"
        case .invalidIterations: "invalidIterations"
        case .invalidMemory: "invalidMemory"
        case .invalidParallelism: "invalidParallelism"
        case .saltTooShort: "saltTooShort"
        case .invalidOutputLength: "invalidOutputLength"
        case .memoryAboveCeiling: "memoryAboveCeiling"
        case .keyDerivationFailed: "keyDerivationFailed"
        case .authenticationFailed: "authenticationFailed"
        case .invalidKeyOrNonceSize: "invalidKeyOrNonceSize"
        case .unsupported: "unsupported"
        case .invalidKey: "invalidKey"
        case .initializationFailed: "initializationFailed"
        case .inheritedAcrossFork: "inheritedAcrossFork"
        case .internalFailure: "internalFailure"
        }
    }

    static let secureCoreNames = [
        "destroyed", "indexOutOfRange", "invalidCodePoint", "tooLong", "malformedUTF8", "outOfMemory", "invalidSize",
        "sizeMismatch", "invalidIterations", "invalidMemory", "invalidParallelism", "saltTooShort",
        "invalidOutputLength", "memoryAboveCeiling", "keyDerivationFailed", "authenticationFailed",
        "invalidKeyOrNonceSize", "unsupported", "invalidKey", "initializationFailed", "inheritedAcrossFork",
        "internalFailure",
    ]

    static let pinStrength: [PinStrengthError] =
        secureCore.map { .secureMemory($0) } + [.characterNotAllowed, .empty]

    static func name(_ error: PinStrengthError) -> String {
        switch error {
        case .secureMemory: "secureMemory"
        case .characterNotAllowed: "characterNotAllowed"
        case .empty: "empty"
        }
    }

    static let pinStrengthNames = ["secureMemory", "characterNotAllowed", "empty"]

    static let pinEntry: [PinEntryError] =
        secureCore.map { .secureMemory($0) } + [
            .randomSourceFailed, .editOutOfRange(location: 5, length: 2, passwordLength: 4),
            .invalidLengthPolicy(minimum: 8, maximum: 4),
        ]

    static func name(_ error: PinEntryError) -> String {
        switch error {
        case .secureMemory: "secureMemory"
        case .randomSourceFailed: "randomSourceFailed"
        case .editOutOfRange: "editOutOfRange"
        case .invalidLengthPolicy: "invalidLengthPolicy"
        }
    }

    static let pinEntryNames = ["secureMemory", "randomSourceFailed", "editOutOfRange", "invalidLengthPolicy"]

    static let cancellationReasons: [CancellationReason] = [
        .userCancelled, .interrupted, .suspended, .terminalClosed, .resignedActive, .enteredBackground, .blocked,
    ]

    static let pinEntryTerminal: [PinEntryTerminalError] =
        cancellationReasons.map { .cancelled($0) }
        + [
            .characterNotAllowed, .tooLong(maximum: 8), .tooShort(minimum: 4), .malformedInput, .notATerminal,
            .terminalFailure(errno: 25), .readFailed(errno: 5),
        ]
        + secureCore.map { .secureMemory($0) } + pinEntry.map { .entry($0) } + pinStrength.map { .strength($0) }

    static func name(_ error: PinEntryTerminalError) -> String {
        switch error {
        case .cancelled: "cancelled"
        case .characterNotAllowed: "characterNotAllowed"
        case .tooLong: "tooLong"
        case .tooShort: "tooShort"
        case .malformedInput: "malformedInput"
        case .notATerminal: "notATerminal"
        case .terminalFailure: "terminalFailure"
        case .readFailed: "readFailed"
        case .secureMemory: "secureMemory"
        case .entry: "entry"
        case .strength: "strength"
        }
    }

    static let pinEntryTerminalNames = [
        "cancelled", "characterNotAllowed", "tooLong", "tooShort", "malformedInput", "notATerminal",
        "terminalFailure", "readFailed", "secureMemory", "entry", "strength",
    ]

    static let systemStatuses: [BiometricSystemStatus] = [
        .notSupported, .notAvailable, .notEnrolled, .lockout, .available,
    ]

    static let biometry: [BiometryError] =
        [.cancelled] + systemStatuses.map { .failed($0) } + [.notConfigured]
        + secureCore.map { .secureCore($0) } + BiometricOption.allCases.map { .unsupportedOption($0) }

    static func name(_ error: BiometryError) -> String {
        switch error {
        case .cancelled: "cancelled"
        case .failed: "failed"
        case .notConfigured: "notConfigured"
        case .secureCore: "secureCore"
        case .unsupportedOption: "unsupportedOption"
        }
    }

    static let biometryNames = ["cancelled", "failed", "notConfigured", "secureCore", "unsupportedOption"]

    static let postQuantum: [PostQuantumError] =
        [.invalidSize(expected: 1184, actual: 1183), .invalidKey, .malformedPublicKeyInfo]
        + secureCore.map { .secureMemory($0) }

    static func name(_ error: PostQuantumError) -> String {
        switch error {
        case .invalidSize: "invalidSize"
        case .invalidKey: "invalidKey"
        case .malformedPublicKeyInfo: "malformedPublicKeyInfo"
        case .secureMemory: "secureMemory"
        }
    }

    static let postQuantumNames = ["invalidSize", "invalidKey", "malformedPublicKeyInfo", "secureMemory"]
}

@Suite("Descriptions of the core and PIN entry errors")
struct CoreErrorDescriptionTests {
    @Test func secureCoreError() {
        DescriptionRules.check(
            "SecureCoreError", CoreSamples.secureCore, caseName: CoreSamples.name, expected: CoreSamples.secureCoreNames
        )
    }

    @Test func pinStrengthError() {
        DescriptionRules.check(
            "PinStrengthError", CoreSamples.pinStrength, caseName: CoreSamples.name,
            expected: CoreSamples.pinStrengthNames)
    }

    @Test func pinEntryError() {
        DescriptionRules.check(
            "PinEntryError", CoreSamples.pinEntry, caseName: CoreSamples.name, expected: CoreSamples.pinEntryNames)
    }

    @Test func pinEntryTerminalError() {
        DescriptionRules.check(
            "PinEntryTerminalError", CoreSamples.pinEntryTerminal, caseName: CoreSamples.name,
            expected: CoreSamples.pinEntryTerminalNames)
        // A wrapped error is printed through its own description.
        #expect(
            PinEntryTerminalError.entry(.randomSourceFailed).description
                == "the PIN entry failed: \(PinEntryError.randomSourceFailed)")
    }

    @Test func biometryError() {
        DescriptionRules.check(
            "BiometryError", CoreSamples.biometry, caseName: CoreSamples.name, expected: CoreSamples.biometryNames)
    }

    @Test func postQuantumError() {
        DescriptionRules.check(
            "PostQuantumError", CoreSamples.postQuantum, caseName: CoreSamples.name,
            expected: CoreSamples.postQuantumNames)
    }
}
