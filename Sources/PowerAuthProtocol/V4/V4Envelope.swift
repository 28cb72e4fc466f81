import SecureCore

/// A V4 end-to-end encrypted request body:
/// `{"temporaryKeyId", "encryptedData": Base64, "nonce": Base64 of 24 bytes, "timestamp": ms}`.
public struct V4EncryptedRequest: Codable, Equatable, Sendable {
    /// `TEMPORARY_KEY_ID`.
    public let temporaryKeyId: String
    /// `REQ_NONCE ‖ tag ‖ ciphertext`, Base64.
    public let encryptedData: String
    /// The 24-byte `NONCE`, Base64.
    public let nonce: String
    /// The request's timestamp, milliseconds since 1970.
    public let timestamp: Int64

    /// Wraps the fields.
    /// - Parameters:
    ///   - temporaryKeyId: the key identifier.
    ///   - encryptedData: Base64 of the sealed body.
    ///   - nonce: Base64 of the 24-byte nonce.
    ///   - timestamp: milliseconds.
    public init(temporaryKeyId: String, encryptedData: String, nonce: String, timestamp: Int64) {
        self.temporaryKeyId = temporaryKeyId
        self.encryptedData = encryptedData
        self.nonce = nonce
        self.timestamp = timestamp
    }
}

/// A V4 end-to-end encrypted response body: `{"encryptedData": Base64, "timestamp": ms}`.
public struct V4EncryptedResponse: Codable, Equatable, Sendable {
    /// `RESP_NONCE ‖ tag ‖ ciphertext`, Base64.
    public let encryptedData: String
    /// The response's timestamp, milliseconds since 1970.
    public let timestamp: Int64

    /// Wraps the fields.
    /// - Parameters:
    ///   - encryptedData: Base64 of the sealed body.
    ///   - timestamp: milliseconds.
    public init(encryptedData: String, timestamp: Int64) {
        self.encryptedData = encryptedData
        self.timestamp = timestamp
    }
}

/// The `X-PowerAuth-Encryption` header of a V4 encrypted request:
/// `PowerAuth version="4.0", application_key="…"[, activation_id="…"]`.
public struct V4EncryptionHeader: Sendable, Equatable {
    /// The header name.
    public static let name = "X-PowerAuth-Encryption"
    /// The application key.
    public let applicationKey: String
    /// The activation identifier (activation scope).
    public let activationId: String?

    /// Wraps the fields.
    /// - Parameters:
    ///   - applicationKey: the application key.
    ///   - activationId: the activation (activation scope), or `nil`.
    public init(applicationKey: String, activationId: String?) {
        self.applicationKey = applicationKey
        self.activationId = activationId
    }

    /// The header value.
    public var value: String {
        var text = #"PowerAuth version="4.0", application_key="\#(applicationKey)""#
        if let activationId { text += #", activation_id="\#(activationId)""# }
        return text
    }

    /// Parses a header value; the version must be `4.0`.
    /// - Parameter value: the header value.
    /// - Returns: the header.
    /// - Throws: ``ProtocolError/malformedHeader(reason:)``, ``ProtocolError/missingHeaderField(_:)``,
    ///   ``ProtocolError/duplicateHeaderField(_:)``, ``ProtocolError/unknownHeaderField(_:)``,
    ///   ``ProtocolError/unsupportedProtocolVersion(_:)``.
    public static func parse(_ value: String) throws(ProtocolError) -> V4EncryptionHeader {
        var parser = HeaderParser(Array(value.utf8), keys: ["version", "application_key", "activation_id"])
        let fields = try parser.parse()
        guard let version = fields["version"] else { throw .missingHeaderField("version") }
        guard version == V4EncryptionContext.version else {
            throw .unsupportedProtocolVersion(ProtocolError.echo(version))
        }
        guard let applicationKey = fields["application_key"] else { throw .missingHeaderField("application_key") }
        return V4EncryptionHeader(applicationKey: applicationKey, activationId: fields["activation_id"])
    }
}

extension V4EncryptionContext {
    /// The replay window for request timestamps (± 5 minutes, as upstream's server).
    public static let timestampWindowMilliseconds: Int64 = 5 * 60 * 1000

    /// Whether a request timestamp is inside the window around `now`.
    /// - Parameters:
    ///   - timestamp: the request's timestamp (ms).
    ///   - now: the server's time (ms).
    /// - Returns: whether it is acceptable.
    public static func isFresh(timestamp: Int64, now: Int64) -> Bool {
        abs(timestamp - now) <= timestampWindowMilliseconds
    }

    /// The client encrypts a request body.
    /// - Parameters:
    ///   - body: the JSON body, in secure memory; `nil` for an empty one.
    ///   - timestampMilliseconds: the current time.
    /// - Returns: the request object and the nonce to keep for the response.
    /// - Throws: ``ProtocolError/core(_:)``.
    public func encryptRequest(_ body: SecureBytes?, timestampMilliseconds: Int64) throws(ProtocolError) -> (
        request: V4EncryptedRequest, nonce: [UInt8]
    ) {
        let nonce = try Self.randomNonce()
        let sealed = try sealRequest(body, nonce: nonce, timestampMilliseconds: UInt64(max(timestampMilliseconds, 0)))
        return (
            V4EncryptedRequest(
                temporaryKeyId: temporaryKeyId, encryptedData: Base64.encode(sealed), nonce: Base64.encode(nonce),
                timestamp: timestampMilliseconds),
            nonce
        )
    }

    /// The server decrypts a request body (the timestamp window and the nonce's uniqueness are
    /// the caller's to check).
    /// - Parameter request: the request object.
    /// - Returns: the body in secure memory, `nil` when empty.
    /// - Throws: ``ProtocolError/malformedMessage(reason:)`` (another temporary key, a negative
    ///   timestamp), ``ProtocolError/malformedBase64(field:)``, ``ProtocolError/core(_:)``
    ///   (`SecureCoreError.authenticationFailed`).
    public func decryptRequest(_ request: V4EncryptedRequest) throws(ProtocolError) -> SecureBytes? {
        guard request.temporaryKeyId == temporaryKeyId else {
            throw .malformedMessage(reason: "the request names another temporary key")
        }
        guard request.timestamp >= 0 else { throw .malformedMessage(reason: "negative timestamp") }
        let nonce = try Base64.decode(request.nonce, field: "nonce", count: Self.nonceByteCount)
        let sealed = try Base64.decode(request.encryptedData, field: "encryptedData")
        return try openRequest(sealed, nonce: nonce, timestampMilliseconds: UInt64(request.timestamp))
    }

    /// The server encrypts the response to a request.
    /// - Parameters:
    ///   - body: the JSON body, in secure memory; `nil` for an empty one.
    ///   - request: the request answered.
    ///   - timestampMilliseconds: the current time.
    /// - Returns: the response object.
    /// - Throws: ``ProtocolError/malformedBase64(field:)``, ``ProtocolError/core(_:)``.
    public func encryptResponse(_ body: SecureBytes?, to request: V4EncryptedRequest, timestampMilliseconds: Int64)
        throws(ProtocolError) -> V4EncryptedResponse
    {
        let nonce = try Base64.decode(request.nonce, field: "nonce", count: Self.nonceByteCount)
        let sealed = try sealResponse(body, nonce: nonce, timestampMilliseconds: UInt64(max(timestampMilliseconds, 0)))
        return V4EncryptedResponse(encryptedData: Base64.encode(sealed), timestamp: timestampMilliseconds)
    }

    /// The client decrypts the response to its request.
    /// - Parameters:
    ///   - response: the response object.
    ///   - nonce: the nonce ``encryptRequest(_:timestampMilliseconds:)`` returned.
    /// - Returns: the body in secure memory, `nil` when empty.
    /// - Throws: ``ProtocolError/malformedBase64(field:)``, ``ProtocolError/malformedMessage(reason:)``,
    ///   ``ProtocolError/core(_:)``.
    public func decryptResponse(_ response: V4EncryptedResponse, nonce: [UInt8]) throws(ProtocolError) -> SecureBytes? {
        guard response.timestamp >= 0 else { throw .malformedMessage(reason: "negative timestamp") }
        let sealed = try Base64.decode(response.encryptedData, field: "encryptedData")
        return try openResponse(sealed, nonce: nonce, timestampMilliseconds: UInt64(response.timestamp))
    }
}

/// The V4 activation fingerprint, as upstream computes it (powerauth-java-crypto
/// `lib/util/HybridPublicKeyFingerprint`, and the mobile SDK's `ActivationServiceV4`): 8 decimal
/// digits of `SHA3-256(UTF-8(suite name) ‖ X(device key) [‖ device ML-DSA key] ‖
/// UTF-8(activationId) ‖ X(server key) [‖ server ML-DSA key])`, a plain concatenation without
/// lengths or separators, decimalised as V3 does (last four bytes, top bit cleared, modulo 10^8).
/// `X(key)` is the P-384 key's affine X coordinate in minimal unsigned big-endian form (fewer
/// than 48 bytes when it starts with zero bytes); the ML-DSA keys (hybrid suites) enter as
/// SubjectPublicKeyInfo DER. Checked against the 134 cases upstream's own code computed
/// (`Tests/Vectors/powerauth/v4/Fingerprint_V4_Upstream_Java.json`).
public enum V4Fingerprint {
    /// Computes the fingerprint.
    /// - Parameters:
    ///   - algorithm: the suite (its name is hashed).
    ///   - devicePublicKey: the device's P-384 signing key, 97 bytes uncompressed.
    ///   - activationId: the activation identifier.
    ///   - serverPublicKey: the server's P-384 signing key.
    ///   - devicePostQuantumKey: the device's ML-DSA public key as SubjectPublicKeyInfo (hybrid suites),
    ///     if it sent one.
    ///   - serverPostQuantumKey: the server's ML-DSA public key for the activation as
    ///     SubjectPublicKeyInfo (hybrid suites).
    /// - Returns: 8 decimal digits.
    /// - Throws: ``ProtocolError/invalidKey(field:)``, ``ProtocolError/invalidLength(field:expected:actual:)``,
    ///   ``ProtocolError/core(_:)``.
    public static func compute(
        algorithm: ProtocolAlgorithm, devicePublicKey: [UInt8], activationId: String, serverPublicKey: [UInt8],
        devicePostQuantumKey: [UInt8]? = nil, serverPostQuantumKey: [UInt8]? = nil
    ) throws(ProtocolError) -> String {
        for (field, key) in [("devicePublicKey", devicePublicKey), ("serverPublicKey", serverPublicKey)] {
            guard key.count == P384KeyPairSizes.publicKey else {
                throw .invalidLength(field: field, expected: P384KeyPairSizes.publicKey, actual: key.count)
            }
            try lift(keyField: field) { () throws(SecureCoreError) in try P384.validate(publicKey: key) }
        }
        let message =
            Array(algorithm.rawValue.utf8) + affineX(devicePublicKey) + (devicePostQuantumKey ?? [])
            + Array(activationId.utf8) + affineX(serverPublicKey) + (serverPostQuantumKey ?? [])
        let digest = try lift { () throws(SecureCoreError) in try SHA3.hash256(message) }
        return AuthenticationCodeFormat.decimalise(digest[...], digits: ProtocolConstants.decimalComponentLength)
    }

    /// A P-384 key as upstream hashes it: the affine X coordinate of the 97-byte SEC1 point in
    /// minimal unsigned big-endian form (Java's `BigInteger.toByteArray()` without a sign
    /// byte), so 47 bytes or fewer when X starts with zero bytes. Public data only.
    /// - Parameter point: a validated uncompressed point.
    /// - Returns: X without leading zero bytes.
    static func affineX(_ point: [UInt8]) -> [UInt8] {
        let x = point[1..<49]
        return Array(x.drop { $0 == 0 })
    }
}
