/// The state of an activation as the protocol carries it: the server's
/// record and the state byte of the status blob. The client's own
/// conclusion, which adds states the server never sends, is the client
/// module's `ClientActivationState`.
public enum ProtocolActivationState: UInt8, Sendable, CaseIterable {
    /// Created; the client has not yet sent its public key.
    case created = 1
    /// Keys exchanged; waiting for the server-side commit.
    case pendingCommit = 2
    /// Active: authentication codes are accepted.
    case active = 3
    /// Blocked (too many failed attempts, or by an administrator).
    case blocked = 4
    /// Removed; the client should forget the activation.
    case removed = 5
}

/// The decrypted 32-byte V3 activation status blob.
///
/// Layout (big-endian where it matters): bytes 0–3 magic `DE C0 DE D1`,
/// 4 state, 5 current version, 6 upgrade version, 7–11 reserved, 12 counter
/// byte, 13 failed attempts, 14 maximum failed attempts, 15 counter
/// look-ahead, 16–31 counter hash.
public struct ActivationStatusBlob: Sendable, Equatable {
    /// The activation's state.
    public var state: ProtocolActivationState
    /// Protocol major version the activation currently uses.
    public var currentVersion: UInt8
    /// Protocol major version the server could upgrade the activation to.
    public var upgradeVersion: UInt8
    /// Bytes 7–11, carried unchanged (servers may fill them with random bytes).
    public var reserved: [UInt8]
    /// Least significant byte of the server's numeric counter.
    public var counterByte: UInt8
    /// Failed attempts in a row.
    public var failedAttempts: UInt8
    /// Failed attempts that block the activation.
    public var maxFailedAttempts: UInt8
    /// The server's counter look-ahead window.
    public var counterLookAhead: UInt8
    /// `KDF_INTERNAL(KDF(KEY_TRANSPORT, 4000), CTR_DATA)` of the server's counter.
    public var counterDataHash: [UInt8]

    /// Creates a blob (the server side).
    /// - Parameters:
    ///   - state: the activation state.
    ///   - currentVersion: current protocol major version (3).
    ///   - upgradeVersion: upgrade protocol major version.
    ///   - reserved: five reserved bytes.
    ///   - counterByte: low byte of the numeric counter.
    ///   - failedAttempts: failed attempts in a row.
    ///   - maxFailedAttempts: the blocking limit.
    ///   - counterLookAhead: the look-ahead window.
    ///   - counterDataHash: 16 bytes, from ``ActivationCrypto/counterHash(_:transportKey:)``.
    /// - Throws: ``ProtocolError/invalidLength(field:expected:actual:)``.
    public init(
        state: ProtocolActivationState, currentVersion: UInt8 = 3, upgradeVersion: UInt8 = 3,
        reserved: [UInt8] = [0, 0, 0, 0, 0], counterByte: UInt8, failedAttempts: UInt8,
        maxFailedAttempts: UInt8, counterLookAhead: UInt8, counterDataHash: [UInt8]
    ) throws(ProtocolError) {
        guard reserved.count == 5 else { throw .invalidLength(field: "reserved", expected: 5, actual: reserved.count) }
        guard counterDataHash.count == 16 else {
            throw .invalidLength(field: "counterDataHash", expected: 16, actual: counterDataHash.count)
        }
        self.state = state
        self.currentVersion = currentVersion
        self.upgradeVersion = upgradeVersion
        self.reserved = reserved
        self.counterByte = counterByte
        self.failedAttempts = failedAttempts
        self.maxFailedAttempts = maxFailedAttempts
        self.counterLookAhead = counterLookAhead
        self.counterDataHash = counterDataHash
    }

    /// Parses decrypted blob bytes, checking the length, the magic and the state.
    /// - Parameter p: the decrypted blob, 32 bytes.
    /// - Throws: ``ProtocolError/invalidLength(field:expected:actual:)``,
    ///   ``ProtocolError/invalidStatusBlobMagic``, ``ProtocolError/unknownActivationState(_:)``.
    public init(plaintext p: [UInt8]) throws(ProtocolError) {
        let size = ProtocolConstants.statusBlobByteCount
        guard p.count == size else { throw .invalidLength(field: "status blob", expected: size, actual: p.count) }
        guard Array(p[0..<4]) == ProtocolConstants.statusBlobMagic else { throw .invalidStatusBlobMagic }
        guard let state = ProtocolActivationState(rawValue: p[4]) else { throw .unknownActivationState(p[4]) }
        try self.init(
            state: state, currentVersion: p[5], upgradeVersion: p[6], reserved: Array(p[7..<12]),
            counterByte: p[12], failedAttempts: p[13], maxFailedAttempts: p[14], counterLookAhead: p[15],
            counterDataHash: Array(p[16..<32]))
    }

    /// The 32 plaintext bytes in the layout above.
    public var plaintext: [UInt8] {
        ProtocolConstants.statusBlobMagic + [state.rawValue, currentVersion, upgradeVersion] + reserved
            + [counterByte, failedAttempts, maxFailedAttempts, counterLookAhead] + counterDataHash
    }

    /// Whether the server offers a protocol upgrade.
    public var isUpgradeAvailable: Bool { upgradeVersion > currentVersion }

    /// Attempts left before the activation blocks.
    public var remainingAttempts: Int { max(Int(maxFailedAttempts) - Int(failedAttempts), 0) }
}
