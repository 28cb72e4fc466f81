/// PowerAuth's end-to-end encryption (ECIES on P-256) for protocol versions
/// 3.0 ... 3.3, as the upstream Java library (`powerauth-java-crypto`) and
/// the mobile SDK compute it. The types: ``ECIESConfiguration`` (who speaks,
/// under which ``SharedInfo1``), ``ECIESEncryptor`` (the client: encrypts a
/// request with the server's public key), ``ECIESDecryptor`` (the server:
/// decrypts it with its private key), ``ECIESEnvelope`` (the key of one
/// request/response pair) and ``ECIESCryptogram`` (what is sent).
public enum ECIES {
    /// Which secrets bind a message: the application only, or an activation too.
    public enum Scope: String, Sendable, CaseIterable {
        /// `SHARED_INFO_2` from the application secret; the server key is the
        /// master key (3.3: a temporary key signed by it).
        case application
        /// `SHARED_INFO_2` from the application secret and the activation's
        /// transport key; the server key is the activation's server key (3.3:
        /// a temporary key signed by it).
        case activation
    }

    /// The seven `SHARED_INFO_1` values upstream defines (`EncryptorId`):
    /// each names the purpose of a message and fixes its scope.
    public enum SharedInfo1: String, Sendable, CaseIterable {
        /// Generic application-scope encryption, and layer 1 of activation create.
        case applicationScopeGeneric = "/pa/generic/application"
        /// Generic activation-scope encryption (user info, activation detail, rename).
        case activationScopeGeneric = "/pa/generic/activation"
        /// Layer 2 of activation create (the device's public key), application scope.
        case activationLayer2 = "/pa/activation"
        /// Protocol upgrade start, activation scope.
        case upgrade = "/pa/upgrade"
        /// Vault unlock, activation scope.
        case vaultUnlock = "/pa/vault/unlock"
        /// Token create, activation scope.
        case createToken = "/pa/token/create"
        /// Recovery code confirmation, activation scope.
        case confirmRecoveryCode = "/pa/recovery/confirm"

        /// The scope this value belongs to.
        public var scope: Scope {
            switch self {
            case .applicationScopeGeneric, .activationLayer2: .application
            default: .activation
            }
        }

        /// The bytes that enter the KDF before the ephemeral key: the value's
        /// UTF-8 for 3.0 and 3.1, prefixed with the version text (`"3.2"`,
        /// `"3.3"`) from 3.2 on (`EncryptorId.getEciesSharedInfo1`).
        /// - Parameter version: the protocol version.
        /// - Returns: the bytes.
        public func bytes(for version: ProtocolVersion) -> [UInt8] {
            switch version {
            case .v3_0, .v3_1: Array(rawValue.utf8)
            case .v3_2, .v3_3: Array(version.rawValue.utf8) + Array(rawValue.utf8)
            }
        }
    }

    /// `concatWithSizes` (upstream `ByteUtils.concatWithSizes`): each item as
    /// `u32be(count) ‖ bytes`; an absent item as `u32be(0)`.
    /// - Parameter items: the items in order.
    /// - Returns: the joined bytes.
    static func concatWithSizes(_ items: [[UInt8]?]) -> [UInt8] {
        var out: [UInt8] = []
        for item in items {
            let count = UInt32(item?.count ?? 0)
            out += [
                UInt8(count >> 24 & 0xFF), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF), UInt8(count & 0xFF),
            ]
            out += item ?? []
        }
        return out
    }

    /// A timestamp as 8 big-endian bytes.
    static func bigEndian(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(value >> (56 - 8 * $0) & 0xFF) } }
}

extension ProtocolVersion {
    /// 3.1+: the IV comes from a nonce (3.0: zero IV, no nonce).
    var eciesUsesNonce: Bool { self != .v3_0 }
    /// 3.2+: timestamps, a fresh response nonce, and `concatWithSizes` shared info.
    var eciesUsesTimestamp: Bool { self == .v3_2 || self == .v3_3 }
    /// 3.3: a temporary server key, named in the request and the associated data.
    var eciesUsesTemporaryKey: Bool { self == .v3_3 }
}
