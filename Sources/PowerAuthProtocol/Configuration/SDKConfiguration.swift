import SecureCore

/// The decoded configuration string (cf. `MOBILE_SDK_CONFIG`): what
/// the server issues for one application. Nothing in it is secret — every
/// copy of the application carries it.
///
/// Format (see `docs/activation-api.md`): canonical Base64 of
/// `version(1) ‖ len(1) ‖ applicationKey ‖ len(1) ‖ applicationSecret ‖ len(1) ‖ masterServerPublicKey`,
/// version `0x01`, the application key and secret 16 bytes each, the master
/// public key a SEC1 P-256 key (33 or 65 bytes). The parser is total.
public struct SDKConfiguration: Sendable, Equatable {
    /// Format version this library writes and reads.
    public static let formatVersion: UInt8 = 1

    /// The application key (`pa_application_key`), canonical Base64 of 16 bytes.
    public let applicationKey: String
    /// The application secret that ends the normalised request data, canonical Base64 of 16 bytes.
    public let applicationSecret: String
    /// The server's master public key (SEC1), which signs the activation data.
    public let masterServerPublicKey: [UInt8]

    /// Builds a configuration from its parts (the server side, and tests).
    /// - Parameters:
    ///   - applicationKey: 16 bytes.
    ///   - applicationSecret: 16 bytes.
    ///   - masterServerPublicKey: a valid SEC1 P-256 public key.
    /// - Throws: ``ProtocolError/invalidConfiguration(reason:)``.
    public init(applicationKey: [UInt8], applicationSecret: [UInt8], masterServerPublicKey: [UInt8])
        throws(ProtocolError)
    {
        let size = ProtocolConstants.applicationKeyByteCount
        guard applicationKey.count == size else {
            throw .invalidConfiguration(reason: "application key is not 16 bytes")
        }
        guard applicationSecret.count == size else {
            throw .invalidConfiguration(reason: "application secret is not 16 bytes")
        }
        do throws(SecureCoreError) {
            try P256.validate(publicKey: masterServerPublicKey)
        } catch {
            throw .invalidConfiguration(reason: "master server public key is not a valid P-256 key")
        }
        self.applicationKey = Base64.encode(applicationKey)
        self.applicationSecret = Base64.encode(applicationSecret)
        self.masterServerPublicKey = masterServerPublicKey
    }

    /// Parses a configuration string. Total: any text gives a configuration
    /// or ``ProtocolError/invalidConfiguration(reason:)``; it never traps.
    /// - Parameter text: the configuration string.
    /// - Throws: ``ProtocolError/invalidConfiguration(reason:)``.
    public init(parsing text: String) throws(ProtocolError) {
        guard text.utf8.count <= 1024 else { throw .invalidConfiguration(reason: "configuration string is too long") }
        guard let bytes = Base64.decode(text) else {
            throw .invalidConfiguration(reason: "configuration string is not canonical Base64")
        }
        var reader = ByteReader(bytes)
        guard let version = reader.byte() else { throw .invalidConfiguration(reason: "configuration string is empty") }
        guard version == Self.formatVersion else {
            throw .invalidConfiguration(reason: "configuration string version \(version) is not supported")
        }
        guard let key = reader.lengthPrefixed(), let secret = reader.lengthPrefixed(),
            let master = reader.lengthPrefixed()
        else { throw .invalidConfiguration(reason: "configuration string is truncated") }
        guard reader.isAtEnd else { throw .invalidConfiguration(reason: "configuration string has trailing bytes") }
        try self.init(applicationKey: key, applicationSecret: secret, masterServerPublicKey: master)
    }

    /// The configuration string of this configuration.
    public var encoded: String {
        let key = Base64.decode(applicationKey) ?? []
        let secret = Base64.decode(applicationSecret) ?? []
        var bytes: [UInt8] = [Self.formatVersion]
        for part in [key, secret, masterServerPublicKey] { bytes += [UInt8(part.count)] + part }
        return Base64.encode(bytes)
    }
}

/// A bounds-checked reader over public bytes; every read returns `nil`
/// instead of trapping.
struct ByteReader {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { index == bytes.count }

    mutating func byte() -> UInt8? {
        guard index < bytes.count else { return nil }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func take(_ count: Int) -> [UInt8]? {
        guard count >= 0, bytes.count - index >= count else { return nil }
        defer { index += count }
        return Array(bytes[index..<(index + count)])
    }

    mutating func lengthPrefixed() -> [UInt8]? {
        guard let length = byte() else { return nil }
        return take(Int(length))
    }
}
