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

    /// Creates a status (tests and transports that cache one).
    /// - Parameters:
    ///   - state: the state.
    ///   - failCount: failed attempts.
    ///   - maxFailCount: the blocking limit.
    ///   - blockExpirationTime: end of a temporary block.
    ///   - counterLookAhead: the look-ahead window.
    public init(
        state: ClientActivationState, failCount: Int, maxFailCount: Int, blockExpirationTime: Date?,
        counterLookAhead: Int = ProtocolConstants.defaultLookAhead
    ) {
        self.state = state
        self.failCount = failCount
        self.maxFailCount = maxFailCount
        self.remainingAttempts = state == .active ? max(maxFailCount - failCount, 0) : 0
        self.blockExpirationTime = state == .blocked ? blockExpirationTime : nil
        self.counterLookAhead = counterLookAhead
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
