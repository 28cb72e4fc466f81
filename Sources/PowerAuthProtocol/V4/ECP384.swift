import SecureCore

/// A P-384 key pair for PowerAuth V4 (device and server signing keys, DHKEM recipients).
/// The private scalar lives in secure memory; the description shows the public key only.
public struct ECP384KeyPair: Sendable {
    /// The 48-byte private scalar, big-endian, in secure memory.
    public let privateKey: SecureBytes
    /// The 97-byte SEC1 uncompressed public key.
    public let publicKey: [UInt8]

    /// Generates a key pair from the operating system's randomness.
    /// - Returns: the pair.
    /// - Throws: ``ProtocolError/core(_:)``.
    public static func generate() throws(ProtocolError) -> ECP384KeyPair {
        let pair = try lift { () throws(SecureCoreError) in try P384.generateKeyPair() }
        return ECP384KeyPair(checked: pair.privateKey, publicKey: pair.publicKey)
    }

    /// The pair of a stored private key; the public key is recomputed from it.
    /// - Parameter privateKey: 48 bytes (or 49 with a leading zero byte), 0 < d < n.
    /// - Throws: ``ProtocolError/invalidKey(field:)``, ``ProtocolError/core(_:)``.
    public init(privateKey: SecureBytes) throws(ProtocolError) {
        let publicKey = try lift(keyField: "privateKey") { () throws(SecureCoreError) in
            try P384.publicKey(of: privateKey)
        }
        self.init(checked: privateKey, publicKey: publicKey)
    }

    /// The pair of a stored private key and the public key stored with it, for storage that
    /// authenticates both together (a sealed row): nothing is recomputed, only the shapes are
    /// checked. A server reads its activations' keys this way on every request, where deriving
    /// the public key again (a P-384 scalar multiplication) would be most of the request's work.
    /// - Parameters:
    ///   - privateKey: 48 bytes.
    ///   - storedPublicKey: the 97-byte SEC1 uncompressed key written with it.
    /// - Throws: ``ProtocolError/invalidKey(field:)`` for a wrong size or prefix.
    package init(privateKey: SecureBytes, storedPublicKey: [UInt8]) throws(ProtocolError) {
        guard privateKey.count == 48 else { throw .invalidKey(field: "privateKey") }
        guard storedPublicKey.count == 97, storedPublicKey.first == 0x04 else {
            throw .invalidKey(field: "publicKey")
        }
        self.init(checked: privateKey, publicKey: storedPublicKey)
    }

    private init(checked privateKey: SecureBytes, publicKey: [UInt8]) {
        self.privateKey = privateKey
        self.publicKey = publicKey
    }

    /// ECDH: the 48-byte x-coordinate of `privateKey × publicKey`.
    /// - Parameter publicKey: the peer's SEC1 key (49 or 97 bytes), fully validated.
    /// - Returns: the shared secret, in secure memory.
    /// - Throws: ``ProtocolError/invalidKey(field:)``, ``ProtocolError/core(_:)``.
    public func sharedSecret(with publicKey: [UInt8]) throws(ProtocolError) -> SecureBytes {
        try lift(keyField: "publicKey") { () throws(SecureCoreError) in
            try P384.sharedSecret(privateKey: privateKey, publicKey: publicKey)
        }
    }

    /// ECDSA-SHA384 signature, `r ‖ s` (96 bytes, the JWS "ES384" form).
    /// - Parameter message: the signed bytes.
    /// - Returns: the signature.
    /// - Throws: ``ProtocolError/core(_:)``.
    public func sign(_ message: [UInt8]) throws(ProtocolError) -> [UInt8] {
        try lift(keyField: "privateKey") { () throws(SecureCoreError) in
            try P384.sign(message, privateKey: privateKey)
        }
    }

    /// Verifies an ECDSA-SHA384 `r ‖ s` signature; a malformed one does not verify.
    /// - Parameters:
    ///   - signature: 96 bytes.
    ///   - message: the signed bytes.
    ///   - publicKey: the signer's SEC1 key.
    /// - Returns: whether the signature is valid.
    /// - Throws: ``ProtocolError/invalidKey(field:)`` for an invalid public key.
    public static func verify(signature: [UInt8], message: [UInt8], publicKey: [UInt8]) throws(ProtocolError)
        -> Bool
    {
        try lift(keyField: "publicKey") { () throws(SecureCoreError) in
            try P384.verify(signature: signature, message: message, publicKey: publicKey)
        }
    }

    /// Checks a SEC1 P-384 public key (49 or 97 bytes).
    /// - Parameter publicKey: the encoded point.
    /// - Throws: ``ProtocolError/invalidKey(field:)``.
    public static func validate(publicKey: [UInt8]) throws(ProtocolError) {
        try lift(keyField: "publicKey") { () throws(SecureCoreError) in try P384.validate(publicKey: publicKey) }
    }
}

extension ECP384KeyPair: CustomStringConvertible, CustomDebugStringConvertible {
    /// `ECP384KeyPair(public: <Base64>, private: redacted)`.
    public var description: String { "ECP384KeyPair(public: \(Base64.encode(publicKey)), private: redacted)" }
    /// Same as ``description``.
    public var debugDescription: String { description }
}

/// The DHKEM(P-384, HKDF-SHA384) step of the V4 shared secret, as upstream's Java runs it
/// (RFC 9180): an HPKE base-mode setup with KEM 0x0011, KDF 0x0002, the export-only AEAD and
/// `info = "DHKEM-P384"`, then `Export("DHKEM-P384", 48)`. The encapsulation key is the
/// recipient's uncompressed public key, the encapsulated key the sender's ephemeral one (97 bytes).
///
/// Specification only: no upstream vector covers this step (see `docs/powerauth-crypto.md`);
/// the tests check agreement and the refusals.
public enum DHKEMP384 {
    /// The size of the secret.
    public static let secretByteCount = P384.kemSecretByteCount
    /// The size of the encapsulated key.
    public static let encapsulationByteCount = P384.publicKeyByteCount

    /// The sender's side.
    /// - Parameter publicKey: the recipient's SEC1 key (49 or 97 bytes), fully validated.
    /// - Returns: the encapsulated key to send and the 48-byte secret, in secure memory.
    /// - Throws: ``ProtocolError/invalidKey(field:)``, ``ProtocolError/core(_:)``.
    public static func encapsulate(to publicKey: [UInt8]) throws(ProtocolError) -> (
        encapsulation: [UInt8], secret: SecureBytes
    ) {
        try lift(keyField: "encapsulationKey") { () throws(SecureCoreError) in try P384.encapsulate(to: publicKey) }
    }

    /// The recipient's side.
    /// - Parameters:
    ///   - encapsulation: the sender's 97-byte encapsulated key.
    ///   - keyPair: the recipient's key pair.
    /// - Returns: the 48-byte secret, in secure memory.
    /// - Throws: ``ProtocolError/invalidKey(field:)``, ``ProtocolError/core(_:)``.
    public static func decapsulate(_ encapsulation: [UInt8], keyPair: ECP384KeyPair) throws(ProtocolError)
        -> SecureBytes
    {
        try lift(keyField: "encapsulatedKey") { () throws(SecureCoreError) in
            try P384.decapsulate(encapsulation, privateKey: keyPair.privateKey)
        }
    }
}
