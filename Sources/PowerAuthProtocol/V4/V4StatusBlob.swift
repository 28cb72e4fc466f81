import SecureCore

/// The V4 activation status blob (`powerauth-v4.md` §10): 48 bytes of `STATUS_DATA` followed by
/// `STATUS_MAC = KMAC256(KEY_MAC_STATUS, STATUS_DATA, 32, "PA4MAC-STATUS")`, sent Base64 in the
/// (end-to-end encrypted) status response. Not encrypted by itself, authenticated instead.
///
/// ```
/// offset  0  DE C0 DE D4          magic
///         4  status               1 CREATED ... 5 REMOVED
///         5  currentVersion       3 or 4
///         6  upgradeVersion       4 when an upgrade to V4 is possible
///         7  flags                bit 0 activation confirmation pending, bit 1 upgrade
///                                 confirmation pending, bit 2 unsupported algorithm,
///                                 bit 3 biometry enabled on the server
///         8  reserved (4 bytes)
///        12  ctrByte              low byte of the numeric counter
///        13  failCount, 14 maxFailCount, 15 lookAhead
///        16  CTR_DATA_HASH (32)   KMAC256(KEY_MAC_CTR_DATA, CTR_DATA, 32, "PA4MAC-CTR")
/// ```
///
/// **Specification only**: no upstream V4 status-blob vector exists; the tests assert this layout.
public struct V4StatusBlob: Sendable, Equatable {
    /// `DE C0 DE D4`.
    public static let magic: [UInt8] = [0xDE, 0xC0, 0xDE, 0xD4]
    /// The size of `STATUS_DATA`.
    public static let dataByteCount = 48
    /// The size of the whole blob (data and MAC).
    public static let byteCount = 80

    /// Flag: the activation waits for `activation/confirm`.
    public static let flagConfirmationPending: UInt8 = 1 << 0
    /// Flag: an upgrade waits for `upgrade/confirm`.
    public static let flagUpgradeConfirmationPending: UInt8 = 1 << 1
    /// Flag: the activation's algorithm is not supported by the server.
    public static let flagUnsupportedAlgorithm: UInt8 = 1 << 2
    /// Flag: biometry is enabled on the server.
    public static let flagBiometryEnabled: UInt8 = 1 << 3

    /// The activation state.
    public var state: ProtocolActivationState
    /// The activation's protocol major version (3 or 4).
    public var currentVersion: UInt8
    /// The version it may be upgraded to.
    public var upgradeVersion: UInt8
    /// The flag bits.
    public var flags: UInt8
    /// The low byte of the numeric counter.
    public var counterByte: UInt8
    /// Failed attempts so far.
    public var failedAttempts: UInt8
    /// The attempts allowed.
    public var maxFailedAttempts: UInt8
    /// The counter look-ahead window.
    public var counterLookAhead: UInt8
    /// `KMAC256(KEY_MAC_CTR_DATA, CTR_DATA, 32, "PA4MAC-CTR")` (32 bytes).
    public var counterDataHash: [UInt8]

    /// Wraps the fields.
    /// - Parameters:
    ///   - state: the state.
    ///   - currentVersion: 3 or 4.
    ///   - upgradeVersion: the upgrade version.
    ///   - flags: the flag bits.
    ///   - counterByte: the counter's low byte.
    ///   - failedAttempts: failed attempts.
    ///   - maxFailedAttempts: allowed attempts.
    ///   - counterLookAhead: the look-ahead.
    ///   - counterDataHash: 32 bytes.
    /// - Throws: ``ProtocolError/invalidLength(field:expected:actual:)``.
    public init(
        state: ProtocolActivationState, currentVersion: UInt8 = 4, upgradeVersion: UInt8 = 4, flags: UInt8 = 0,
        counterByte: UInt8, failedAttempts: UInt8, maxFailedAttempts: UInt8, counterLookAhead: UInt8,
        counterDataHash: [UInt8]
    ) throws(ProtocolError) {
        guard counterDataHash.count == 32 else {
            throw .invalidLength(field: "counterDataHash", expected: 32, actual: counterDataHash.count)
        }
        self.state = state
        self.currentVersion = currentVersion
        self.upgradeVersion = upgradeVersion
        self.flags = flags
        self.counterByte = counterByte
        self.failedAttempts = failedAttempts
        self.maxFailedAttempts = maxFailedAttempts
        self.counterLookAhead = counterLookAhead
        self.counterDataHash = counterDataHash
    }

    /// `STATUS_DATA`, 48 bytes in the layout above (reserved bytes zero).
    public var data: [UInt8] {
        Self.magic + [state.rawValue, currentVersion, upgradeVersion, flags, 0, 0, 0, 0]
            + [counterByte, failedAttempts, maxFailedAttempts, counterLookAhead] + counterDataHash
    }

    /// The blob to send: `STATUS_DATA ‖ STATUS_MAC`.
    /// - Parameter statusMACKey: `KEY_MAC_STATUS`.
    /// - Returns: 80 bytes.
    /// - Throws: ``ProtocolError/core(_:)``.
    public func seal(statusMACKey: SecureBytes) throws(ProtocolError) -> [UInt8] {
        let data = self.data
        return data + (try Self.mac(data, key: statusMACKey))
    }

    /// Opens a received blob: checks the size, the MAC (constant time, before anything is
    /// read), the magic and the state.
    /// - Parameters:
    ///   - blob: 80 bytes.
    ///   - statusMACKey: `KEY_MAC_STATUS`.
    /// - Throws: ``ProtocolError/invalidLength(field:expected:actual:)``,
    ///   ``ProtocolError/malformedMessage(reason:)`` (the MAC does not verify),
    ///   ``ProtocolError/invalidStatusBlobMagic``, ``ProtocolError/unknownActivationState(_:)``,
    ///   ``ProtocolError/core(_:)``.
    public init(opening blob: [UInt8], statusMACKey: SecureBytes) throws(ProtocolError) {
        guard blob.count == Self.byteCount else {
            throw .invalidLength(field: "activationStatus", expected: Self.byteCount, actual: blob.count)
        }
        let data = Array(blob[0..<Self.dataByteCount])
        let expected = try Self.mac(data, key: statusMACKey)
        guard constantTimeEqual(expected, Array(blob[Self.dataByteCount...])) else {
            throw .malformedMessage(reason: "the status blob's MAC does not verify")
        }
        guard Array(data[0..<4]) == Self.magic else { throw .invalidStatusBlobMagic }
        guard let state = ProtocolActivationState(rawValue: data[4]) else { throw .unknownActivationState(data[4]) }
        try self.init(
            state: state, currentVersion: data[5], upgradeVersion: data[6], flags: data[7], counterByte: data[12],
            failedAttempts: data[13], maxFailedAttempts: data[14], counterLookAhead: data[15],
            counterDataHash: Array(data[16..<48]))
    }

    /// `CTR_DATA_HASH = KMAC256(KEY_MAC_CTR_DATA, CTR_DATA, 32, "PA4MAC-CTR")`.
    /// - Parameters:
    ///   - counter: `CTR_DATA`.
    ///   - counterDataMACKey: `KEY_MAC_CTR_DATA`.
    /// - Returns: 32 bytes.
    /// - Throws: ``ProtocolError/core(_:)``.
    public static func counterDataHash(_ counter: V4HashCounter, counterDataMACKey: SecureBytes) throws(ProtocolError)
        -> [UInt8]
    {
        try lift { () throws(SecureCoreError) in
            try KMAC256.authenticate(
                counter.bytes, key: counterDataMACKey, customization: Array("PA4MAC-CTR".utf8), count: 32)
        }
    }

    /// How far the server's counter is ahead of `local` (the client's counter sync): the number
    /// of `SHA3-256` steps, 0 ..< `lookAhead`, after which `local` hashes to ``counterDataHash``.
    /// - Parameters:
    ///   - local: the client's `CTR_DATA`.
    ///   - counterDataMACKey: `KEY_MAC_CTR_DATA`.
    /// - Returns: the distance, or `nil` when the server is not within the look-ahead ahead.
    /// - Throws: ``ProtocolError/core(_:)``.
    public func serverDistance(from local: V4HashCounter, counterDataMACKey: SecureBytes) throws(ProtocolError)
        -> Int?
    {
        var value = local
        for step in 0..<max(Int(counterLookAhead), 1) {
            if constantTimeEqual(try Self.counterDataHash(value, counterDataMACKey: counterDataMACKey), counterDataHash)
            {
                return step
            }
            value = try value.next()
        }
        return nil
    }

    /// Whether activation confirmation is pending.
    public var isConfirmationPending: Bool { flags & Self.flagConfirmationPending != 0 }
    /// Whether biometry is enabled on the server.
    public var isBiometryEnabled: Bool { flags & Self.flagBiometryEnabled != 0 }
    /// Attempts left before the activation blocks.
    public var remainingAttempts: Int { max(Int(maxFailedAttempts) - Int(failedAttempts), 0) }

    private static func mac(_ data: [UInt8], key: SecureBytes) throws(ProtocolError) -> [UInt8] {
        try lift { () throws(SecureCoreError) in
            try KMAC256.authenticate(data, key: key, customization: Array("PA4MAC-STATUS".utf8), count: 32)
        }
    }
}
