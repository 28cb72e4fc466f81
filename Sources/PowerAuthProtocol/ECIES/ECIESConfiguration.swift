import SecureCore

/// The parameters both ends of one ECIES exchange agree on: the protocol
/// version, the ``ECIES/SharedInfo1`` value (which fixes the scope), the
/// application's key and secret, and for the activation scope the
/// activation's identifier and transport key. For 3.3, the identifier of
/// the temporary server key.
///
/// At creation it derives what the exchange binds into every MAC:
/// `SHARED_INFO_2_BASE` (application scope `SHA256(applicationSecret)`,
/// activation scope `HMAC-SHA256(transportKey, applicationSecret)`, over the
/// secret's Base64 text as upstream does) and, for 3.2+, the associated data
/// `concatWithSizes(version, applicationKey[, activationId][, temporaryKeyId])`.
/// The transport key itself is not kept. The description names the version
/// and purpose only.
public struct ECIESConfiguration: Sendable {
    /// The protocol version.
    public let version: ProtocolVersion
    /// The purpose; its ``ECIES/SharedInfo1/scope`` is the scope.
    public let sharedInfo1: ECIES.SharedInfo1
    /// The application key as issued (Base64 text), bound into the associated data.
    public let applicationKey: String
    /// The activation (activation scope only).
    public let activationId: String?
    /// The temporary server key's identifier (3.3; ignored before).
    public let temporaryKeyId: String?
    /// `SHARED_INFO_2_BASE`.
    let sharedInfo2Base: [UInt8]
    /// The associated data (3.2+), `nil` before.
    let associatedData: [UInt8]?

    /// Creates the configuration and derives `SHARED_INFO_2_BASE` and the associated data.
    /// - Parameters:
    ///   - version: 3.0 ... 3.3.
    ///   - sharedInfo1: the purpose.
    ///   - applicationKey: the application key's Base64 text.
    ///   - applicationSecret: the application secret's Base64 text.
    ///   - activationId: required in the activation scope from 3.2 on.
    ///   - transportKey: the 16-byte transport key, required in the activation scope.
    ///   - temporaryKeyId: required for 3.3.
    /// - Throws: ``ECIESError/missingParameter(_:)``; ``ECIESError/core(_:)``
    ///   for a transport key of the wrong size or a destroyed one.
    public init(
        version: ProtocolVersion, sharedInfo1: ECIES.SharedInfo1, applicationKey: String, applicationSecret: String,
        activationId: String? = nil, transportKey: SecureBytes? = nil, temporaryKeyId: String? = nil
    ) throws(ECIESError) {
        let activationScope = sharedInfo1.scope == .activation
        if activationScope, version.eciesUsesTimestamp, activationId == nil {
            throw .missingParameter("activationId")
        }
        if version.eciesUsesTemporaryKey, temporaryKeyId == nil { throw .missingParameter("temporaryKeyId") }
        let secret = Array(applicationSecret.utf8)
        if activationScope {
            guard let transportKey else { throw .missingParameter("transportKey") }
            sharedInfo2Base = try eciesLift(keyField: "transportKey") { () throws(SecureCoreError) -> [UInt8] in
                guard transportKey.count == AES128.keyByteCount else {
                    throw .sizeMismatch(expected: AES128.keyByteCount, actual: transportKey.count)
                }
                return try HMACSHA256.authenticate(secret, key: transportKey)
            }
        } else {
            sharedInfo2Base = try eciesLift(keyField: "applicationSecret") { () throws(SecureCoreError) in
                try SHA256.hash(secret)
            }
        }
        self.version = version
        self.sharedInfo1 = sharedInfo1
        self.applicationKey = applicationKey
        self.activationId = activationScope ? activationId : nil
        self.temporaryKeyId = version.eciesUsesTemporaryKey ? temporaryKeyId : nil
        if version.eciesUsesTimestamp {
            let texts = [version.rawValue, applicationKey, self.activationId, self.temporaryKeyId].compactMap { $0 }
            associatedData = ECIES.concatWithSizes(texts.map { Array($0.utf8) })
        } else {
            associatedData = nil
        }
    }

    /// The scope, from ``sharedInfo1``.
    public var scope: ECIES.Scope { sharedInfo1.scope }

    /// `SHARED_INFO_2` of one message: the base alone before 3.2; from 3.2
    /// `concatWithSizes(base, nonce, u64be(timestamp), ephemeralPublicKey or
    /// nothing, associatedData)` (`EciesUtils.deriveSharedInfo2`).
    func sharedInfo2(ephemeralPublicKey: [UInt8]?, nonce: [UInt8]?, timestamp: UInt64?) -> [UInt8] {
        guard version.eciesUsesTimestamp else { return sharedInfo2Base }
        return ECIES.concatWithSizes([
            sharedInfo2Base, nonce, timestamp.map(ECIES.bigEndian), ephemeralPublicKey, associatedData,
        ])
    }
}

// MARK: - CustomStringConvertible

extension ECIESConfiguration: CustomStringConvertible {
    /// The version, purpose and scope; no key material, no derived value.
    public var description: String {
        "ECIESConfiguration(\(version.rawValue), \(sharedInfo1.rawValue), \(scope.rawValue) scope)"
    }
}

// MARK: - Derived values, for the vector tests

extension ECIESConfiguration {
    /// `SHARED_INFO_2_BASE` (compared with upstream's vectors).
    package var sharedInfo2BaseForTesting: [UInt8] { sharedInfo2Base }
    /// The associated data, empty before 3.2 (compared with upstream's vectors).
    package var associatedDataForTesting: [UInt8] { associatedData ?? [] }
}
