import SecureCore

/// The decoded configuration string, PowerAuth's `MOBILE_SDK_CONFIG`: what the server
/// issues for one application and what a PowerAuth mobile SDK takes as its
/// `configuration`. Nothing in it is secret — every copy of the application carries it.
///
/// Format (mobile SDK `src/PowerAuth/PublicTypes.cpp` `SessionSetup::loadFromConfiguration`
/// and `saveConfiguration`, with `utils/DataReader.cpp`; powerauth-crypto
/// `docs/SDK-Configuration.md`): canonical Base64 of
/// `0x01 ‖ Data(applicationKey) ‖ Data(applicationSecret) ‖ Count(n) ‖ n × (keyId(1) ‖ Data(key))`,
/// where `Data(x) = Count(len x) ‖ x` and `Count` is one byte below `0x80` (two or four
/// bytes with the top bits `10` / `11` above). The application key and secret are 16
/// bytes; key `0x01` is the P-256 master server public key and is required; other key
/// identifiers (`0x02`–`0x04` are the protocol 4 master keys) are kept and written back
/// unchanged. The parser is total.
public struct SDKConfiguration: Sendable, Equatable {
    /// The format version this library writes and reads.
    public static let formatVersion: UInt8 = 0x01
    /// Key identifier of `KEY_MASTER_P256_PUBLIC`.
    public static let masterP256KeyId: UInt8 = 0x01
    /// Longest accepted configuration string (room for the protocol 4 keys).
    public static let maximumTextLength = 8192

    /// One key of the configuration: its identifier and bytes, as carried.
    public struct Key: Sendable, Equatable {
        /// The key identifier (`0x01` P-256 master key).
        public let id: UInt8
        /// The key bytes.
        public let bytes: [UInt8]
        /// Pairs an identifier with key bytes.
        /// - Parameters:
        ///   - id: the identifier.
        ///   - bytes: the key.
        public init(id: UInt8, bytes: [UInt8]) {
            self.id = id
            self.bytes = bytes
        }
    }

    /// The application key (`pa_application_key`), canonical Base64 of 16 bytes.
    public let applicationKey: String
    /// The application secret that ends the normalised request data, canonical Base64 of 16 bytes.
    public let applicationSecret: String
    /// The P-256 master server public key (key `0x01`, SEC1), which signs activation codes.
    public let masterServerPublicKey: [UInt8]
    /// Every key, in the order of the string (key `0x01` among them).
    public let keys: [Key]

    /// Builds a configuration from its parts (the server side, and tests).
    /// - Parameters:
    ///   - applicationKey: 16 bytes.
    ///   - applicationSecret: 16 bytes.
    ///   - masterServerPublicKey: a valid SEC1 P-256 public key (a PowerAuth server
    ///     writes the 65-byte uncompressed form).
    ///   - otherKeys: further keys to carry after key `0x01`, none with identifier `0x01`.
    /// - Throws: ``ProtocolError/invalidConfiguration(_:)``.
    public init(
        applicationKey: [UInt8], applicationSecret: [UInt8], masterServerPublicKey: [UInt8], otherKeys: [Key] = []
    ) throws(ProtocolError) {
        try self.init(
            applicationKey: applicationKey, applicationSecret: applicationSecret,
            keys: [Key(id: Self.masterP256KeyId, bytes: masterServerPublicKey)] + otherKeys)
    }

    /// Parses a configuration string. Total: any text gives a configuration or a
    /// ``ProtocolError/invalidConfiguration(_:)``; it never traps.
    /// - Parameter text: the configuration string.
    /// - Throws: ``ProtocolError/invalidConfiguration(_:)``.
    public init(parsing text: String) throws(ProtocolError) {
        guard text.utf8.count <= Self.maximumTextLength else { throw .invalidConfiguration(.tooLong) }
        guard let bytes = Base64.decode(text) else { throw .invalidConfiguration(.malformedBase64) }
        var reader = ByteReader(bytes)
        guard let version = reader.byte() else { throw .invalidConfiguration(.truncated(field: "version")) }
        guard version == Self.formatVersion else { throw .invalidConfiguration(.unsupportedVersion(version)) }
        guard let key = reader.data() else { throw .invalidConfiguration(.truncated(field: "applicationKey")) }
        guard let secret = reader.data() else { throw .invalidConfiguration(.truncated(field: "applicationSecret")) }
        guard let count = reader.count() else { throw .invalidConfiguration(.truncated(field: "keyCount")) }
        var keys: [Key] = []
        for _ in 0..<count {
            guard let id = reader.byte() else { throw .invalidConfiguration(.truncated(field: "keyId")) }
            guard let bytes = reader.data() else { throw .invalidConfiguration(.truncated(field: "key")) }
            keys.append(Key(id: id, bytes: bytes))
        }
        guard reader.isAtEnd else { throw .invalidConfiguration(.trailingBytes) }
        try self.init(applicationKey: key, applicationSecret: secret, keys: keys)
    }

    /// The configuration string of this configuration: what a PowerAuth mobile SDK accepts.
    public var encoded: String {
        var writer = ByteWriter()
        writer.byte(Self.formatVersion)
        writer.data(Base64.decode(applicationKey) ?? [])
        writer.data(Base64.decode(applicationSecret) ?? [])
        writer.count(keys.count)
        for key in keys {
            writer.byte(key.id)
            writer.data(key.bytes)
        }
        return Base64.encode(writer.bytes)
    }

    private init(applicationKey: [UInt8], applicationSecret: [UInt8], keys: [Key]) throws(ProtocolError) {
        let size = ProtocolConstants.applicationKeyByteCount
        guard applicationKey.count == size else {
            throw .invalidConfiguration(
                .invalidLength(field: "applicationKey", expected: size, actual: applicationKey.count))
        }
        guard applicationSecret.count == size else {
            throw .invalidConfiguration(
                .invalidLength(field: "applicationSecret", expected: size, actual: applicationSecret.count))
        }
        var seen = Set<UInt8>()
        for key in keys where !seen.insert(key.id).inserted { throw .invalidConfiguration(.duplicateKey(id: key.id)) }
        guard let master = keys.first(where: { $0.id == Self.masterP256KeyId }) else {
            throw .invalidConfiguration(.missingMasterKey)
        }
        do throws(SecureCoreError) {
            try P256.validate(publicKey: master.bytes)
        } catch {
            throw .invalidConfiguration(.invalidMasterKey)
        }
        self.applicationKey = Base64.encode(applicationKey)
        self.applicationSecret = Base64.encode(applicationSecret)
        self.masterServerPublicKey = master.bytes
        self.keys = keys
    }
}
