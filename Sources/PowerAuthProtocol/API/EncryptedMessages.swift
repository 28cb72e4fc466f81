import Foundation

/// An ECIES-encrypted request body, sent bare (restful-model `EciesEncryptedRequest`):
/// `{"temporaryKeyId"(3.3), "ephemeralPublicKey", "encryptedData", "mac", "nonce"(3.1+),
/// "timestamp"(3.2+, a number)}`. Absent fields are left out.
public struct EncryptedRequestBody: Codable, Sendable, Equatable {
    /// The temporary key the request is encrypted to (3.3).
    public var temporaryKeyId: String?
    /// The client's ephemeral public key, Base64, exactly as it entered the KDF.
    public var ephemeralPublicKey: String
    /// The AES-128-CBC ciphertext, Base64.
    public var encryptedData: String
    /// The HMAC-SHA256 tag, Base64.
    public var mac: String
    /// The 16-byte nonce, Base64 (3.1+).
    public var nonce: String?
    /// Milliseconds since 1970 (3.2+).
    public var timestamp: Int64?

    /// The wire form of a request cryptogram.
    /// - Parameter cryptogram: the cryptogram.
    public init(_ cryptogram: ECIESCryptogram) {
        temporaryKeyId = cryptogram.temporaryKeyId
        ephemeralPublicKey = Base64.encode(cryptogram.ephemeralPublicKey ?? [])
        encryptedData = Base64.encode(cryptogram.encryptedData)
        mac = Base64.encode(cryptogram.mac)
        nonce = cryptogram.nonce.map(Base64.encode)
        timestamp = cryptogram.timestamp.map { Int64(clamping: $0) }
    }

    /// The cryptogram this body carries.
    /// - Returns: the cryptogram.
    /// - Throws: ``ProtocolError/malformedBase64(field:)`` for a field that is not
    ///   canonical Base64, ``ProtocolError/malformedMessage(reason:)`` for a negative timestamp.
    public func cryptogram() throws(ProtocolError) -> ECIESCryptogram {
        if let timestamp, timestamp < 0 { throw .malformedMessage(reason: "timestamp is negative") }
        return ECIESCryptogram(
            temporaryKeyId: temporaryKeyId,
            ephemeralPublicKey: try Base64.decode(ephemeralPublicKey, field: "ephemeralPublicKey"),
            encryptedData: try Base64.decode(encryptedData, field: "encryptedData"),
            mac: try Base64.decode(mac, field: "mac"),
            nonce: try nonce.map { (text) throws(ProtocolError) in try Base64.decode(text, field: "nonce") },
            timestamp: timestamp.map { UInt64($0) })
    }
}

/// An ECIES-encrypted response body, sent bare (restful-model `EciesEncryptedResponse`):
/// `{"encryptedData", "mac", "nonce"(3.2+), "timestamp"(3.2+)}`.
public struct EncryptedResponseBody: Codable, Sendable, Equatable {
    /// The AES-128-CBC ciphertext, Base64.
    public var encryptedData: String
    /// The HMAC-SHA256 tag, Base64.
    public var mac: String
    /// The response's own 16-byte nonce, Base64 (3.2+).
    public var nonce: String?
    /// Milliseconds since 1970 (3.2+).
    public var timestamp: Int64?

    /// The wire form of a response cryptogram.
    /// - Parameter cryptogram: the cryptogram.
    public init(_ cryptogram: ECIESCryptogram) {
        encryptedData = Base64.encode(cryptogram.encryptedData)
        mac = Base64.encode(cryptogram.mac)
        nonce = cryptogram.nonce.map(Base64.encode)
        timestamp = cryptogram.timestamp.map { Int64(clamping: $0) }
    }

    /// The cryptogram this body carries.
    /// - Returns: the cryptogram.
    /// - Throws: ``ProtocolError/malformedBase64(field:)``, ``ProtocolError/malformedMessage(reason:)``.
    public func cryptogram() throws(ProtocolError) -> ECIESCryptogram {
        if let timestamp, timestamp < 0 { throw .malformedMessage(reason: "timestamp is negative") }
        return ECIESCryptogram(
            encryptedData: try Base64.decode(encryptedData, field: "encryptedData"),
            mac: try Base64.decode(mac, field: "mac"),
            nonce: try nonce.map { (text) throws(ProtocolError) in try Base64.decode(text, field: "nonce") },
            timestamp: timestamp.map { UInt64($0) })
    }
}

/// Any JSON value, for the maps upstream types as `Map<String, Object>`
/// (`customAttributes`, `userInfo`, the status's `customObject`): read and written back
/// unchanged, never interpreted.
public indirect enum JSONValue: Codable, Sendable, Equatable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number.
    case number(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object.
    case object([String: JSONValue])

    /// Reads any JSON value.
    /// - Parameter decoder: the decoder.
    /// - Throws: `DecodingError` for input that is not JSON.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// How deeply the value nests: 1 for a scalar, one more for each array or object level.
    public var nestingDepth: Int {
        switch self {
        case .array(let values): 1 + (values.map(\.nestingDepth).max() ?? 0)
        case .object(let members): 1 + (members.values.map(\.nestingDepth).max() ?? 0)
        default: 1
        }
    }

    /// How many values the value holds, itself included (keys are not counted).
    public var valueCount: Int {
        switch self {
        case .array(let values): 1 + values.reduce(0) { $0 + $1.valueCount }
        case .object(let members): 1 + members.values.reduce(0) { $0 + $1.valueCount }
        default: 1
        }
    }

    /// The value as a whole number, when it is one that an `Int64` holds exactly.
    public var int64Value: Int64? {
        guard case .number(let value) = self, value.isFinite, value == value.rounded(.towardZero),
            abs(value) < 9.2e18
        else { return nil }
        return Int64(value)
    }

    /// Writes the value back.
    /// - Parameter encoder: the encoder.
    /// - Throws: `EncodingError`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

/// `X-PowerAuth-Encryption: PowerAuth version="3.3", application_key="…"[, activation_id="…"]`:
/// the header of an encrypted request that is not also signed (a signed request takes
/// these values from its `X-PowerAuth-Authorization`).
public struct EncryptionHeader: Sendable, Equatable {
    /// The header name.
    public static let name = "X-PowerAuth-Encryption"
    /// The protocol version.
    public let version: ProtocolVersion
    /// The application key, Base64.
    public let applicationKey: String
    /// The activation, in activation scope.
    public let activationId: String?

    /// Creates a header value.
    /// - Parameters:
    ///   - version: the version.
    ///   - applicationKey: the application key.
    ///   - activationId: the activation (activation scope), or `nil`.
    public init(version: ProtocolVersion, applicationKey: String, activationId: String?) {
        self.version = version
        self.applicationKey = applicationKey
        self.activationId = activationId
    }

    /// The header value, in the SDK's field order.
    public var value: String {
        var fields = [("version", version.rawValue), ("application_key", applicationKey)]
        if let activationId { fields.append(("activation_id", activationId)) }
        return ProtocolConstants.authorizationScheme + " "
            + fields.map { "\($0.0)=\"\($0.1)\"" }.joined(separator: ", ")
    }

    /// Parses a header value (any order of fields, no unknown or repeated field).
    /// - Parameter value: the header value.
    /// - Returns: the header.
    /// - Throws: ``ProtocolError/malformedHeader(reason:)``, ``ProtocolError/missingHeaderField(_:)``,
    ///   ``ProtocolError/unknownHeaderField(_:)``, ``ProtocolError/unsupportedProtocolVersion(_:)``,
    ///   ``ProtocolError/invalidActivationId``.
    public static func parse(_ value: String) throws(ProtocolError) -> EncryptionHeader {
        var parser = HeaderParser(Array(value.utf8), keys: ["version", "application_key", "activation_id"])
        let fields = try parser.parse()
        guard let version = fields["version"] else { throw .missingHeaderField("version") }
        guard let applicationKey = fields["application_key"] else { throw .missingHeaderField("application_key") }
        if let activationId = fields["activation_id"] { try AuthorizationHeader.validateActivationId(activationId) }
        return EncryptionHeader(
            version: try ProtocolVersion(parsing: version), applicationKey: applicationKey,
            activationId: fields["activation_id"])
    }
}

/// `X-PowerAuth-Token: PowerAuth token_id="…", token_digest="…", nonce="…", timestamp="…", version="3.3"`
/// (powerauth-crypto `docs/MAC-Token-Based-Authentication.md`).
public struct TokenHeader: Sendable, Equatable {
    /// The header name.
    public static let name = "X-PowerAuth-Token"
    /// The token identifier (UUID).
    public let tokenId: String
    /// The digest, Base64 of 32 bytes.
    public let tokenDigest: String
    /// The 16-byte nonce.
    public let nonce: [UInt8]
    /// Milliseconds since 1970, as sent (ASCII digits).
    public let timestamp: String
    /// The protocol version.
    public let version: ProtocolVersion

    /// Creates a header from its fields.
    /// - Parameters:
    ///   - tokenId: the token.
    ///   - tokenDigest: Base64 of the digest.
    ///   - nonce: the nonce.
    ///   - timestamp: the timestamp's decimal digits.
    ///   - version: the version.
    public init(tokenId: String, tokenDigest: String, nonce: [UInt8], timestamp: String, version: ProtocolVersion) {
        self.tokenId = tokenId
        self.tokenDigest = tokenDigest
        self.nonce = nonce
        self.timestamp = timestamp
        self.version = version
    }

    /// The bytes the digest covers: `nonce ‖ "&" ‖ timestamp ‖ "&" ‖ version` for 3.2+,
    /// `nonce ‖ "&" ‖ timestamp` for 3.0 and 3.1 (powerauth-java-crypto `TokenUtils`).
    /// - Parameters:
    ///   - nonce: the nonce.
    ///   - timestamp: the timestamp's digits.
    ///   - version: the version.
    /// - Returns: the digested bytes.
    public static func digestedData(nonce: [UInt8], timestamp: String, version: ProtocolVersion) -> [UInt8] {
        var data = nonce + Array("&".utf8) + Array(timestamp.utf8)
        if version.eciesUsesTimestamp { data += Array("&".utf8) + Array(version.rawValue.utf8) }
        return data
    }

    /// The header value.
    public var value: String {
        let fields = [
            ("token_id", tokenId), ("token_digest", tokenDigest), ("nonce", Base64.encode(nonce)),
            ("timestamp", timestamp), ("version", version.rawValue),
        ]
        return ProtocolConstants.authorizationScheme + " "
            + fields.map { "\($0.0)=\"\($0.1)\"" }.joined(separator: ", ")
    }

    /// The timestamp as milliseconds, or `nil` when it is not a decimal number.
    public var timestampMilliseconds: Int64? {
        guard !timestamp.isEmpty, timestamp.utf8.count <= 18, timestamp.utf8.allSatisfy({ (0x30...0x39).contains($0) })
        else { return nil }
        return Int64(timestamp)
    }

    /// Parses a header value.
    /// - Parameter value: the header value.
    /// - Returns: the header.
    /// - Throws: the ``ProtocolError`` header cases, ``ProtocolError/malformedBase64(field:)``,
    ///   ``ProtocolError/invalidLength(field:expected:actual:)``.
    public static func parse(_ value: String) throws(ProtocolError) -> TokenHeader {
        var parser = HeaderParser(
            Array(value.utf8), keys: ["token_id", "token_digest", "nonce", "timestamp", "version"])
        let fields = try parser.parse()
        func field(_ key: String) throws(ProtocolError) -> String {
            guard let found = fields[key] else { throw .missingHeaderField(key) }
            return found
        }
        let tokenId = try field("token_id")
        try AuthorizationHeader.validateActivationId(tokenId)
        return TokenHeader(
            tokenId: tokenId, tokenDigest: try field("token_digest"),
            nonce: try Base64.decode(try field("nonce"), field: "nonce", count: ProtocolConstants.nonceByteCount),
            timestamp: try field("timestamp"), version: try ProtocolVersion(parsing: try field("version")))
    }
}
