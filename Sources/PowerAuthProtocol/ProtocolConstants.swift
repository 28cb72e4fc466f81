/// Every constant of the PowerAuth V3.x computations, in one place. The
/// specification (`docs/powerauth-crypto.md`) lists the same values.
public enum ProtocolConstants {
    /// `KDF` index of the possession factor key.
    public static let possessionKeyIndex: UInt64 = 1
    /// `KDF` index of the knowledge factor key.
    public static let knowledgeKeyIndex: UInt64 = 2
    /// `KDF` index of the biometry factor key.
    public static let biometryKeyIndex: UInt64 = 3
    /// `KDF` index of the transport key.
    public static let transportKeyIndex: UInt64 = 1000
    /// `KDF` index of the vault encryption key.
    public static let vaultKeyIndex: UInt64 = 2000
    /// `KDF` index, under the transport key, of the status-blob IV key.
    public static let statusIVKeyIndex: UInt64 = 3000
    /// `KDF` index, under the transport key, of the counter-hash key.
    public static let counterHashKeyIndex: UInt64 = 4000

    /// Size of every symmetric protocol key (master secret, factor keys).
    public static let keyByteCount = 16
    /// Size of the hash-based counter `CTR_DATA`.
    public static let counterByteCount = 16
    /// Size of the status challenge and nonce.
    public static let challengeByteCount = 16
    /// Size of the request nonce (`pa_nonce`).
    public static let nonceByteCount = 16
    /// Size of the application key and application secret.
    public static let applicationKeyByteCount = 16
    /// Size of one authentication-code component in the Base64 format.
    public static let base64ComponentByteCount = 16

    /// Size of the V3 status blob, plain or encrypted.
    public static let statusBlobByteCount = 32
    /// First four bytes of a V3 status blob.
    public static let statusBlobMagic: [UInt8] = [0xDE, 0xC0, 0xDE, 0xD1]

    /// Digits of an online V3.0 authentication-code component and of the fingerprint.
    public static let decimalComponentLength = 8
    /// Accepted digits of an offline authentication-code component.
    public static let offlineComponentLengths = 4...8

    /// Largest accepted counter look-ahead (one byte in the status blob).
    public static let maximumLookAhead = 255
    /// Look-ahead a PowerAuth server uses by default.
    public static let defaultLookAhead = 20

    /// Name of the HTTP header carrying the authentication code.
    public static let authorizationHeaderName = "X-PowerAuth-Authorization"
    /// Scheme word that opens the header value.
    public static let authorizationScheme = "PowerAuth"
    /// Application secret of offline authentication codes.
    public static let offlineApplicationSecret = "offline"
    /// HTTP method of offline normalised data.
    public static let offlineMethod = "POST"
    /// Longest activation identifier accepted.
    public static let maximumActivationIdLength = 64
    /// Longest header value the parser reads.
    public static let maximumHeaderLength = 4096

    /// SecurePIN's server: the `KDF` index under the transport key of the key its
    /// MAC-token secrets derive from (``ActivationCrypto/tokenSecret(transportKey:tokenId:)``).
    public static let tokenSecretKeyIndex: UInt64 = 7000
    /// SecurePIN extension: `KDF` indices (n, n + 1) under the vault key of the
    /// 32-byte AEAD key that seals the biometry key on the device.
    public static let biometrySealKeyIndex: UInt64 = 6000
    /// Maximum failed attempts a server allows by default.
    public static let defaultMaxFailedAttempts = 5
}
