internal import CProtocolCrypto
internal import CSecureCore

/// AES-128 as the PowerAuth V3 protocol uses it: a single block (the index
/// key derivation) and CBC without padding (the activation status blob).
/// Backed by OpenSSL libcrypto through the C core.
///
/// Package-internal on purpose: raw ECB and unauthenticated CBC are protocol
/// compatibility tools, not something to offer to every library user.
package enum AES128 {
    /// Key and block size in bytes.
    package static let keyByteCount = Int(SPC_AES128_KEY_BYTES)
    /// Block size in bytes.
    package static let blockByteCount = Int(SPC_AES_BLOCK_BYTES)

    /// Encrypts one block whose result is a secret key: `AES-128(key, block)`
    /// written straight into new secure memory.
    /// - Parameters:
    ///   - key: a 16-byte key.
    ///   - block: 16 public bytes (for the KDF, `0x00 × 8 ‖ u64be(index)`).
    /// - Returns: the 16-byte derived key in secure memory.
    /// - Throws: ``SecureCoreError/sizeMismatch(expected:actual:)`` for a wrong
    ///   key or block size, ``SecureCoreError/destroyed``, memory errors.
    package static func deriveBlock(key: SecureBytes, block: [UInt8]) throws(SecureCoreError) -> SecureBytes {
        try key.require(count: keyByteCount)
        guard block.count == blockByteCount else { throw .sizeMismatch(expected: blockByteCount, actual: block.count) }
        let derived = try SecureBytes(count: blockByteCount)
        try withHandles(key, derived) { (keyHandle: OpaquePointer, out: OpaquePointer) throws(SecureCoreError) in
            try withPublicBytes(block) { (input, _) throws(SecureCoreError) in
                try check(spc_aes128_encrypt_block(keyHandle, input, out))
            }
        }
        return derived
    }

    /// AES-128-CBC without padding, encrypting public data.
    /// - Parameters:
    ///   - key: a 16-byte key.
    ///   - iv: 16 bytes.
    ///   - plaintext: a positive multiple of 16 bytes.
    /// - Returns: the ciphertext, as long as the plaintext.
    /// - Throws: ``SecureCoreError/sizeMismatch(expected:actual:)`` (key, IV),
    ///   ``SecureCoreError/invalidSize(_:)`` (plaintext length), memory errors.
    package static func cbcEncrypt(key: SecureBytes, iv: [UInt8], plaintext: [UInt8]) throws(SecureCoreError) -> [UInt8]
    {
        try cbc(key: key, iv: iv, input: plaintext, encrypt: true)
    }

    /// AES-128-CBC decryption without padding (no padding check, so no padding oracle).
    /// - Parameters:
    ///   - key: a 16-byte key.
    ///   - iv: 16 bytes.
    ///   - ciphertext: a positive multiple of 16 bytes.
    /// - Returns: the unauthenticated plaintext, as long as the ciphertext.
    /// - Throws: as ``cbcEncrypt(key:iv:plaintext:)``.
    package static func cbcDecrypt(key: SecureBytes, iv: [UInt8], ciphertext: [UInt8]) throws(SecureCoreError)
        -> [UInt8]
    {
        try cbc(key: key, iv: iv, input: ciphertext, encrypt: false)
    }

    private static func cbc(key: SecureBytes, iv: [UInt8], input: [UInt8], encrypt: Bool) throws(SecureCoreError)
        -> [UInt8]
    {
        try key.require(count: keyByteCount)
        guard iv.count == blockByteCount else { throw .sizeMismatch(expected: blockByteCount, actual: iv.count) }
        guard !input.isEmpty, input.count % blockByteCount == 0 else { throw .invalidSize(input.count) }
        return try key.withHandle { (keyHandle) throws(SecureCoreError) -> [UInt8] in
            try withPublicBytes(iv) { (ivBytes, _) throws(SecureCoreError) -> [UInt8] in
                try withPublicBytes(input) { (inBytes, count) throws(SecureCoreError) -> [UInt8] in
                    try makePublicBytes(count: count) { (out) throws(SecureCoreError) in
                        let status =
                            encrypt
                            ? spc_aes128_cbc_nopad_encrypt(keyHandle, ivBytes, inBytes, count, out)
                            : spc_aes128_cbc_nopad_decrypt(keyHandle, ivBytes, inBytes, count, out)
                        try check(status, length: count)
                    }
                }
            }
        }
    }
}
