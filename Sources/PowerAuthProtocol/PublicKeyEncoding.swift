import SecureCore

/// The SEC1 encodings PowerAuth V3 puts on the wire: the device sends its public key
/// **compressed** (33 bytes, mobile SDK `src/PowerAuth/crypto/ECC.cpp`
/// `ECC_ExportPublicKey`), the server sends its keys **uncompressed** (65 bytes, Java
/// `KeyConvertor.convertPublicKeyToBytes`). Both sides read either form.
public enum PublicKeyEncoding {
    /// The 33-byte compressed form (`0x02`/`0x03` by the parity of Y, then X) of a
    /// valid P-256 public key; a compressed key comes back unchanged.
    /// - Parameter publicKey: a SEC1 P-256 public key, 33 or 65 bytes.
    /// - Returns: 33 bytes.
    /// - Throws: ``ProtocolError/invalidKey(field:)``.
    public static func compressed(_ publicKey: [UInt8]) throws(ProtocolError) -> [UInt8] {
        try lift(keyField: "publicKey") { () throws(SecureCoreError) in try P256.validate(publicKey: publicKey) }
        guard publicKey.count == P256.publicKeyByteCount else { return publicKey }
        return [0x02 | (publicKey[64] & 1)] + publicKey[1...32]
    }

    /// Whether a key is in the 65-byte uncompressed form (`0x04 ‖ X ‖ Y`); the form
    /// only, not the point.
    /// - Parameter publicKey: the key bytes.
    /// - Returns: `true` for 65 bytes starting `0x04`.
    public static func isUncompressed(_ publicKey: [UInt8]) -> Bool {
        publicKey.count == P256.publicKeyByteCount && publicKey.first == 0x04
    }
}
