import SecureCore

/// The PowerAuth V4 AEAD (`seal` / `open`), the cipher of V4 end-to-end encryption:
///
/// 1. `KEY_ENC = KDF(key, "aead/enc", KC)`, `KEY_MAC = KDF(key, "aead/mac", KC)`, KC the key context;
/// 2. `C = AES-256-CTR(KEY_ENC, nonce ‖ 00 00 00 00, plaintext)`;
/// 3. `T = KMAC256(KEY_MAC, nonce ‖ AD ‖ C, 32, "PA4MAC-AEAD")`;
/// 4. the sealed message is `nonce ‖ T ‖ C` (44 bytes more than the plaintext).
///
/// Opening checks the tag in constant time before it decrypts anything. The derived keys and
/// the plaintext never leave secure memory and the C target. Verified by upstream's
/// `E2ee_*_Scope_Test_Vectors_40.json` (see ``V4EncryptionContext``).
public enum V4AEAD {
    /// The nonce size in bytes.
    public static let nonceByteCount = V4AEADPrimitive.nonceByteCount
    /// What sealing adds: the nonce and the 32-byte tag.
    public static let overhead = V4AEADPrimitive.overhead

    /// Seals a message.
    /// - Parameters:
    ///   - plaintext: the message, in secure memory; `nil` for an empty one.
    ///   - key: the key (32 ... 512 bytes), in secure memory.
    ///   - keyContext: the public key context (diversifier of both derived keys).
    ///   - nonce: 12 bytes, never repeated under one key and key context.
    ///   - associatedData: public data bound to the message.
    /// - Returns: `nonce ‖ tag ‖ ciphertext`.
    /// - Throws: ``ProtocolError/invalidLength(field:expected:actual:)``, ``ProtocolError/core(_:)``.
    public static func seal(
        _ plaintext: SecureBytes?, key: SecureBytes, keyContext: [UInt8], nonce: [UInt8], associatedData: [UInt8]
    ) throws(ProtocolError) -> [UInt8] {
        guard nonce.count == nonceByteCount else {
            throw .invalidLength(field: "nonce", expected: nonceByteCount, actual: nonce.count)
        }
        try requireKey(key)
        return try lift { () throws(SecureCoreError) in
            try V4AEADPrimitive.seal(
                plaintext, key: key, keyContext: keyContext, nonce: nonce, associatedData: associatedData)
        }
    }

    /// Opens a sealed message.
    /// - Parameters:
    ///   - sealed: `nonce ‖ tag ‖ ciphertext`.
    ///   - key: as for ``seal(_:key:keyContext:nonce:associatedData:)``.
    ///   - keyContext: as for the seal.
    ///   - associatedData: as for the seal.
    /// - Returns: the plaintext in secure memory, `nil` when it is empty.
    /// - Throws: ``ProtocolError/core(_:)`` with `SecureCoreError.authenticationFailed` when the tag
    ///   does not verify (wrong key, key context, data or message);
    ///   ``ProtocolError/invalidLength(field:expected:actual:)`` (shorter than 44 bytes).
    public static func open(
        _ sealed: [UInt8], key: SecureBytes, keyContext: [UInt8], associatedData: [UInt8]
    ) throws(ProtocolError) -> SecureBytes? {
        guard sealed.count >= overhead else {
            throw .invalidLength(field: "encryptedData", expected: overhead, actual: sealed.count)
        }
        try requireKey(key)
        return try lift { () throws(SecureCoreError) in
            try V4AEADPrimitive.open(sealed, key: key, keyContext: keyContext, associatedData: associatedData)
        }
    }

    /// The nonce a sealed message starts with.
    /// - Parameter sealed: `nonce ‖ tag ‖ ciphertext`.
    /// - Returns: its first 12 bytes, or `nil` when it is too short to be sealed.
    public static func nonce(of sealed: [UInt8]) -> [UInt8]? {
        sealed.count >= overhead ? Array(sealed.prefix(nonceByteCount)) : nil
    }

    private static func requireKey(_ key: SecureBytes) throws(ProtocolError) {
        guard (32...KMAC256.keyByteCountRange.upperBound).contains(key.count) else {
            throw .invalidLength(field: "key", expected: 32, actual: key.count)
        }
    }
}
