/// Why a configuration string (`MOBILE_SDK_CONFIG`) was refused. Nothing in a
/// configuration is secret; no case echoes the input.
public enum ConfigurationError: Error, Equatable, Sendable {
    /// Longer than ``SDKConfiguration/maximumTextLength`` characters.
    case tooLong
    /// Not canonical Base64 (padded, no whitespace, no stray bits).
    case malformedBase64
    /// A version byte other than `0x01`.
    case unsupportedVersion(UInt8)
    /// The bytes end inside `field` (`version`, `applicationKey`, `applicationSecret`,
    /// `keyCount`, `keyId`, `key`).
    case truncated(field: String)
    /// The application key or secret is not 16 bytes.
    case invalidLength(field: String, expected: Int, actual: Int)
    /// Two keys with the same identifier (upstream keeps the last; we refuse).
    case duplicateKey(id: UInt8)
    /// No key `0x01` (`KEY_MASTER_P256_PUBLIC`).
    case missingMasterKey
    /// Key `0x01` is not a SEC1 P-256 public key on the curve.
    case invalidMasterKey
    /// Bytes after the last key (upstream ignores them; we refuse).
    case trailingBytes
}

extension ConfigurationError: CustomStringConvertible {
    /// What is wrong with the configuration string, in a sentence fragment a person can act on.
    public var description: String {
        switch self {
        case .tooLong: "the configuration string is longer than \(SDKConfiguration.maximumTextLength) characters"
        case .malformedBase64: "the configuration string is not canonical Base64"
        case .unsupportedVersion(let version): "configuration version \(version) is not supported: only 1 is"
        case .truncated(let field): "the configuration ends inside \(field)"
        case .invalidLength(let field, let expected, let actual):
            "the field \(field) has \(actual) bytes, not \(expected)"
        case .duplicateKey(let id): "key \(id) appears twice"
        case .missingMasterKey: "the master public key, key 1, is missing"
        case .invalidMasterKey: "the master public key, key 1, is not a P-256 public key on the curve"
        case .trailingBytes: "bytes follow the last key"
        }
    }
}
