import Biometry
import Foundation
import PowerAuthProtocol

/// The state of the activation as the client concludes it: the five states
/// of `ProtocolActivationState` that the server reports, plus ``deadlock``,
/// a client-side conclusion.
public enum ClientActivationState: String, Sendable, Equatable, CaseIterable {
    /// Prepared on the server; the device has not exchanged keys yet.
    case created
    /// Keys exchanged; waiting for the commit (for example in the internet banking).
    case pendingCommit
    /// Ready to use.
    case active
    /// Blocked by the server (failed attempts) or by an administrator.
    case blocked
    /// Removed on the server; nothing brings it back.
    case removed
    /// The local counter cannot be matched with the server's inside the
    /// look-ahead window: no code this device computes can be accepted any
    /// more. Treat as ``removed``.
    case deadlock

    init(_ state: ProtocolActivationState) {
        switch state {
        case .created: self = .created
        case .pendingCommit: self = .pendingCommit
        case .active: self = .active
        case .blocked: self = .blocked
        case .removed: self = .removed
        }
    }
}

/// The result of ``ActivationService/fetchActivationStatus()``.
public struct ActivationStatus: Sendable, Equatable {
    /// The state.
    public let state: ClientActivationState
    /// Failed attempts in a row.
    public let failCount: Int
    /// Failed attempts that block the activation.
    public let maxFailCount: Int
    /// `maxFailCount - failCount` while active, otherwise 0.
    public let remainingAttempts: Int
    /// When a temporary block ends; `nil` for a permanent block or when not blocked.
    public let blockExpirationTime: Date?
    /// The server's counter look-ahead window.
    public let counterLookAhead: Int
    /// The status response's `customObject` as the server sent it: any JSON object its
    /// callbacks fill (strings, numbers, arrays, nested objects), `nil` when it sent none.
    /// Its content is never interpreted, except `blockExpirationTime` for
    /// ``blockExpirationTime``; its size is bounded (``ActivationStatus/customObjectLimits``).
    public let customObject: [String: JSONValue]?

    /// The most a `customObject` may hold: nesting depth and values (each member, array element
    /// and the object itself count one). More is answered with
    /// ``ActivationError/invalidResponse(reason:)`` instead of a status.
    public static let customObjectLimits = (depth: 16, values: 4096)

    /// Creates a status (tests and transports that cache one).
    /// - Parameters:
    ///   - state: the state.
    ///   - failCount: failed attempts.
    ///   - maxFailCount: the blocking limit.
    ///   - blockExpirationTime: end of a temporary block.
    ///   - counterLookAhead: the look-ahead window.
    ///   - customObject: the server's custom values.
    public init(
        state: ClientActivationState, failCount: Int, maxFailCount: Int, blockExpirationTime: Date?,
        counterLookAhead: Int = ProtocolConstants.defaultLookAhead, customObject: [String: JSONValue]? = nil
    ) {
        self.state = state
        self.failCount = failCount
        self.maxFailCount = maxFailCount
        self.remainingAttempts = state == .active ? max(maxFailCount - failCount, 0) : 0
        self.blockExpirationTime = state == .blocked ? blockExpirationTime : nil
        self.counterLookAhead = counterLookAhead
        self.customObject = customObject
    }

    /// Checks a received `customObject` against ``customObjectLimits`` and reads the temporary
    /// block's end from it (`blockExpirationTime`, seconds since 1970, when it is a whole number).
    /// - Parameters:
    ///   - customObject: the object, or `nil`.
    ///   - path: the endpoint, for the error.
    /// - Returns: the block's end, or `nil`.
    /// - Throws: ``ActivationError/invalidResponse(reason:)`` when the object is too deep or too large.
    static func readCustomObject(_ customObject: [String: JSONValue]?, path: String) throws(ActivationError)
        -> Date?
    {
        guard let customObject else { return nil }
        let whole = JSONValue.object(customObject)
        guard whole.nestingDepth <= customObjectLimits.depth, whole.valueCount <= customObjectLimits.values else {
            throw .invalidResponse(
                reason: "\(path): customObject nests deeper than \(customObjectLimits.depth) levels or holds more "
                    + "than \(customObjectLimits.values) values")
        }
        return customObject[ActivationStatusResponse.blockExpirationTimeKey]?.int64Value.map {
            Date(timeIntervalSince1970: TimeInterval($0))
        }
    }
}

/// Biometry on three levels (cf. `PowerAuthBiometricStatus`).
public struct ActivationBiometricStatus: Sendable, Equatable {
    /// System availability.
    public let systemStatus: BiometricSystemStatus
    /// The kind of biometry.
    public let biometryType: BiometryType
    /// Whether this activation has a biometry factor.
    public let isBiometricFactorConfigured: Bool

    /// Creates the status.
    /// - Parameters:
    ///   - systemStatus: the system status.
    ///   - biometryType: the biometry type.
    ///   - isBiometricFactorConfigured: whether the activation has the factor.
    public init(systemStatus: BiometricSystemStatus, biometryType: BiometryType, isBiometricFactorConfigured: Bool) {
        self.systemStatus = systemStatus
        self.biometryType = biometryType
        self.isBiometricFactorConfigured = isBiometricFactorConfigured
    }

    /// The system is available and the activation has the factor.
    public var isAuthenticationWithBiometricsAvailable: Bool {
        systemStatus == .available && isBiometricFactorConfigured
    }
}

/// What ``ActivationService/createActivation(activationCode:name:password:enableBiometry:)`` returns.
public struct ActivationResult: Sendable, Equatable {
    /// The activation identifier.
    public let activationId: String
    /// The fingerprint to show next to the one the server displays.
    public let activationFingerprint: String
}

/// How the stored activation's suite relates to the one the configuration asks for
/// (``ActivationService/algorithmCheck()``).
public enum ActivationAlgorithmCheck: Sendable, Equatable, CustomStringConvertible {
    /// No activation is stored.
    case noActivation
    /// The activation uses the configuration's suite.
    case matches(ProtocolAlgorithm)
    /// The configuration asks for a stronger suite: the activation works as it is, and the
    /// authenticated upgrade moves it to `to`.
    case upgradeAvailable(from: ProtocolAlgorithm, to: ProtocolAlgorithm)
    /// The configuration asks for a weaker suite than the activation's: no downgrade exists;
    /// the activation keeps its own suite.
    case configurationWeaker(activation: ProtocolAlgorithm, configuration: ProtocolAlgorithm)

    /// What a person reads, naming both suites.
    public var description: String {
        switch self {
        case .noActivation: "no activation is stored"
        case .matches(let suite): "the activation uses \(suite.rawValue), as the configuration asks"
        case .upgradeAvailable(let from, let to):
            "the activation uses \(from.rawValue), the configuration asks for \(to.rawValue): upgrade available"
        case .configurationWeaker(let activation, let configuration):
            "the activation uses \(activation.rawValue), the configuration asks for the weaker "
                + "\(configuration.rawValue): no downgrade; the activation keeps \(activation.rawValue)"
        }
    }
}
