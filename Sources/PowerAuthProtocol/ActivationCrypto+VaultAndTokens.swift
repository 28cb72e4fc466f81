import SecureCore

extension ActivationCrypto {
    /// `vault/unlock`'s `encryptedVaultEncryptionKey`:
    /// `AES-128-CBC-PKCS7(KEY_TRANSPORT, IV = 0¹⁶, KEY_ENCRYPTION_VAULT)`, 32 bytes
    /// (powerauth-crypto `PowerAuthServerVault.encryptVaultEncryptionKey`).
    /// - Parameters:
    ///   - vaultKey: the 16-byte vault key `KDF(master, 2000)`.
    ///   - transportKey: the 16-byte transport key.
    /// - Returns: the 32 encrypted bytes.
    /// - Throws: ``ProtocolError/core(_:)``.
    public func encryptVaultKey(_ vaultKey: SecureBytes, transportKey: SecureBytes) throws(ProtocolError) -> [UInt8] {
        try lift { () throws(SecureCoreError) in
            try AES128.cbcPKCS7EncryptSecret(
                key: transportKey, iv: [UInt8](repeating: 0, count: 16), plaintext: vaultKey)
        }
    }

    /// Opens ``encryptVaultKey(_:transportKey:)`` (the client side).
    /// - Parameters:
    ///   - encrypted: the 32 bytes.
    ///   - transportKey: the 16-byte transport key.
    /// - Returns: the vault key in secure memory.
    /// - Throws: ``ProtocolError/invalidLength(field:expected:actual:)``, ``ProtocolError/core(_:)``
    ///   (`authenticationFailed` for a padding that is wrong).
    public func decryptVaultKey(_ encrypted: [UInt8], transportKey: SecureBytes) throws(ProtocolError) -> SecureBytes {
        guard encrypted.count == 32 else {
            throw .invalidLength(field: "encryptedVaultEncryptionKey", expected: 32, actual: encrypted.count)
        }
        return try lift { () throws(SecureCoreError) in
            try AES128.cbcPKCS7DecryptSecret(
                key: transportKey, iv: [UInt8](repeating: 0, count: 16), ciphertext: encrypted,
                plaintextCount: ProtocolConstants.keyByteCount)
        }
    }

    /// The secret of a MAC token, as this server issues it: 16 bytes derived from the
    /// activation's transport key and the token identifier,
    /// `fold(HMAC-SHA256(KDF(KEY_TRANSPORT, 7000), "SecurePIN token secret v1|" ‖ tokenId))`.
    /// Upstream draws it at random and stores it; deriving it means the server stores no
    /// token secret (the client cannot tell the difference: it receives 16 bytes either way).
    /// - Parameters:
    ///   - transportKey: the activation's transport key.
    ///   - tokenId: the token identifier.
    /// - Returns: the 16-byte secret in secure memory.
    /// - Throws: ``ProtocolError/core(_:)``, ``ProtocolError/invalidLength(field:expected:actual:)``.
    public func tokenSecret(transportKey: SecureBytes, tokenId: String) throws(ProtocolError) -> SecureBytes {
        let base = try deriveKey(transportKey, index: ProtocolConstants.tokenSecretKeyIndex)
        defer { base.destroy() }
        return try lift { () throws(SecureCoreError) in
            let full = try HMACSHA256.deriveKey(
                label: Array("SecurePIN token secret v1|\(tokenId)".utf8), from: [base])
            defer { full.destroy() }
            return try full.folded()
        }
    }
}
