import ActivationServer
import Foundation
import PowerAuthProtocol

/// The back-office endpoints of the reference server. All are `POST` with
/// the PowerAuth envelopes (`{"requestObject": …}` in,
/// `{"status": "OK", "responseObject": …}` out) and need the admin token in
/// the `X-SecurePIN-Admin-Token` header: without it the answer is 401, with a
/// wrong one (or when the server has no token) 403, both `ERR_AUTHENTICATION`.
public enum BackOfficeAPI {
    /// `userId` → `activationId`, `activationCode`, `activationSignature` (state `CREATED`).
    public static let initActivation = "/admin/activation/init"
    /// `activationId`: `PENDING_COMMIT` → `ACTIVE`.
    public static let commitActivation = "/admin/activation/commit"
    /// `activationId`, optional `blockedUntil` (seconds since 1970): `ACTIVE` → `BLOCKED`.
    public static let blockActivation = "/admin/activation/block"
    /// `activationId`: `BLOCKED` → `ACTIVE`, failures reset.
    public static let unblockActivation = "/admin/activation/unblock"
    /// `activationId`: any state → `REMOVED`.
    public static let removeActivation = "/admin/activation/remove"
    /// `activationId` → the activation's details.
    public static let activationDetail = "/admin/activation/detail"
    /// `{}` → every activation's details.
    public static let listActivations = "/admin/activation/list"
    /// `{}` → the configuration string the application is given (public).
    public static let configuration = "/admin/configuration"
    /// `vaultId` (hex, as `securepin vault status` prints it) → the server-bound vault's counters.
    public static let vaultDetail = "/admin/vault/detail"
    /// `vaultId`: failures reset and a blocked vault active again (gives whoever holds a copy of the
    /// vault directory another `maxFailures` guesses: unblock only after checking who asks).
    public static let unblockVault = "/admin/vault/unblock"
}

/// `{"vaultId": …}`: a server-bound PIN vault's identifier, 32 lower-case hex digits.
public struct BackOfficeVaultRequest: Codable, Sendable, Equatable {
    /// The identifier in hex.
    public var vaultId: String
    /// Creates the message.
    /// - Parameter vaultId: the identifier in hex.
    public init(vaultId: String) { self.vaultId = vaultId }

    /// The 16 bytes, or `nil` when `vaultId` is not 32 hex digits.
    public var bytes: [UInt8]? {
        let digits = Array(vaultId.utf8)
        guard digits.count == 32 else { return nil }
        var out: [UInt8] = []
        for i in stride(from: 0, to: 32, by: 2) {
            guard let byte = UInt8(String(decoding: digits[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
            out.append(byte)
        }
        return out
    }
}

/// A server-bound vault's counters: `{"vaultId", "state", "failures", "maxFailures"}`, state one of
/// `PENDING`, `ACTIVE`, `BLOCKED`.
public struct BackOfficeVault: Codable, Sendable, Equatable {
    /// The identifier in hex.
    public var vaultId: String
    /// `PENDING`, `ACTIVE` or `BLOCKED`.
    public var state: String
    /// Attempts counted since the last confirmed unlock.
    public var failures: Int
    /// The limit.
    public var maxFailures: Int
    /// Creates the message.
    public init(vaultId: String, state: String, failures: Int, maxFailures: Int) {
        self.vaultId = vaultId
        self.state = state
        self.failures = failures
        self.maxFailures = maxFailures
    }
}

/// `{"userId": …}`.
public struct InitActivationRequest: Codable, Sendable, Equatable {
    /// The user.
    public var userId: String
    /// Creates the message.
    /// - Parameter userId: the user.
    public init(userId: String) { self.userId = userId }
}

/// `{"activationId": …, "activationCode": …, "activationSignature": …}`, the fields of
/// upstream's `InitActivationResponse`; the QR code carries `activationCode#activationSignature`.
public struct InitActivationResponse: Codable, Sendable, Equatable {
    /// The identifier.
    public var activationId: String
    /// The code the device activates with, `XXXXX-XXXXX-XXXXX-XXXXX`.
    public var activationCode: String
    /// Base64 of the master key's ECDSA-SHA256 (DER) signature of the code.
    public var activationSignature: String
    /// Creates the message.
    /// - Parameters:
    ///   - activationId: the identifier.
    ///   - activationCode: the code.
    ///   - activationSignature: the Base64 signature of the code.
    public init(activationId: String, activationCode: String, activationSignature: String) {
        self.activationId = activationId
        self.activationCode = activationCode
        self.activationSignature = activationSignature
    }
}

/// `{"activationId": …, "blockedUntil": …}`; `blockedUntil` only for a temporary block.
public struct BackOfficeActivationRequest: Codable, Sendable, Equatable {
    /// The activation.
    public var activationId: String
    /// The end of a temporary block, seconds since 1970 (block only).
    public var blockedUntil: Int64?
    /// Creates the message.
    /// - Parameters:
    ///   - activationId: the activation.
    ///   - blockedUntil: the end of a temporary block.
    public init(activationId: String, blockedUntil: Int64? = nil) {
        self.activationId = activationId
        self.blockedUntil = blockedUntil
    }
}

/// The public facts of one activation, as the back office sees them.
public struct BackOfficeActivation: Codable, Sendable, Equatable {
    /// The identifier.
    public var activationId: String
    /// The user.
    public var userId: String
    /// `CREATED`, `PENDING_COMMIT`, `ACTIVE`, `BLOCKED` or `REMOVED`.
    public var state: String
    /// Failed attempts in a row.
    public var failedAttempts: Int
    /// The blocking limit.
    public var maxFailedAttempts: Int
    /// The end of a temporary block, seconds since 1970.
    public var blockedUntil: Int64?
    /// Whether the device fetched the vault key to add biometry (`vault/unlock` with
    /// `ADD_BIOMETRY`, or any other way to know it enrolled a finger); informational, as
    /// upstream V3 accepts biometry codes from every activation.
    public var biometryEnabled: Bool
    /// Consumed counter steps.
    public var counterIndex: UInt64
    /// The activation fingerprint, 8 decimal digits as the device shows them, once the
    /// device sent its key (from `PENDING_COMMIT` on): compare before committing.
    public var fingerprint: String?

    /// Converts the server's details.
    /// - Parameter detail: the details.
    public init(_ detail: ActivationDetail) {
        activationId = detail.activationId
        userId = detail.userId
        state = Self.name(detail.state)
        failedAttempts = detail.failedAttempts
        maxFailedAttempts = detail.maxFailedAttempts
        blockedUntil = detail.blockedUntil.map { UnixTime.seconds($0) }
        biometryEnabled = detail.biometryEnabled
        counterIndex = detail.counterIndex
        fingerprint = detail.fingerprint
    }

    /// The wire name of a state.
    /// - Parameter state: the state.
    /// - Returns: for example `PENDING_COMMIT`.
    public static func name(_ state: ProtocolActivationState) -> String {
        switch state {
        case .created: "CREATED"
        case .pendingCommit: "PENDING_COMMIT"
        case .active: "ACTIVE"
        case .blocked: "BLOCKED"
        case .removed: "REMOVED"
        }
    }
}

/// `{"activations": […]}`.
public struct BackOfficeActivationList: Codable, Sendable, Equatable {
    /// Every activation, oldest first.
    public var activations: [BackOfficeActivation]
    /// Creates the message.
    /// - Parameter activations: the activations.
    public init(activations: [BackOfficeActivation]) { self.activations = activations }
}

/// `{"configuration": …}`: the application's configuration string.
public struct BackOfficeConfiguration: Codable, Sendable, Equatable {
    /// The configuration string (public).
    public var configuration: String
    /// Creates the message.
    /// - Parameter configuration: the string.
    public init(configuration: String) { self.configuration = configuration }
}
