/// What travels on the wire for one ECIES message: the request
/// (`EciesEncryptedRequest`) or the response (`EciesEncryptedResponse`).
/// Every field is public: the ciphertext, its MAC, and the parameters that
/// bound them.
///
/// Which optional fields are present depends on the version and direction:
///
/// | | 3.0 | 3.1 | 3.2 | 3.3 |
/// |---|---|---|---|---|
/// | request `ephemeralPublicKey` | yes | yes | yes | yes |
/// | request `nonce` | – | yes | yes | yes |
/// | request `timestamp` | – | – | yes | yes |
/// | request `temporaryKeyId` | – | – | – | yes |
/// | response `nonce`, `timestamp` | – | – | yes | yes |
public struct ECIESCryptogram: Sendable, Hashable {
    /// The temporary server key the request was encrypted to (3.3 requests only).
    public var temporaryKeyId: String?
    /// The client's ephemeral public key exactly as it entered the KDF
    /// (requests only; this implementation sends 33 compressed bytes and
    /// accepts 33 or 65).
    public var ephemeralPublicKey: [UInt8]?
    /// AES-128-CBC-PKCS7 ciphertext.
    public var encryptedData: [UInt8]
    /// HMAC-SHA256 over `encryptedData ‖ SHARED_INFO_2`, 32 bytes.
    public var mac: [UInt8]
    /// The 16-byte nonce the IV was derived from (requests from 3.1,
    /// responses from 3.2; a 3.1 response reuses the request's and does not send it).
    public var nonce: [UInt8]?
    /// Milliseconds since 1970 (3.2+), bound into `SHARED_INFO_2`.
    public var timestamp: UInt64?

    /// Creates a cryptogram from its fields (for example, as parsed from JSON).
    /// - Parameters:
    ///   - temporaryKeyId: 3.3 requests only.
    ///   - ephemeralPublicKey: requests only.
    ///   - encryptedData: the ciphertext.
    ///   - mac: the MAC.
    ///   - nonce: see ``nonce``.
    ///   - timestamp: see ``timestamp``.
    public init(
        temporaryKeyId: String? = nil, ephemeralPublicKey: [UInt8]? = nil, encryptedData: [UInt8], mac: [UInt8],
        nonce: [UInt8]? = nil, timestamp: UInt64? = nil
    ) {
        self.temporaryKeyId = temporaryKeyId
        self.ephemeralPublicKey = ephemeralPublicKey
        self.encryptedData = encryptedData
        self.mac = mac
        self.nonce = nonce
        self.timestamp = timestamp
    }
}
