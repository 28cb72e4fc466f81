import SecureCore

extension ActivationCrypto {
    /// Generates a P-256 key pair (device or server).
    /// - Returns: the pair; the private key is in secure memory.
    /// - Throws: ``ProtocolError/core(_:)``.
    public func generateKeyPair() throws(ProtocolError) -> KeyPair {
        let pair = try lift { () throws(SecureCoreError) in try P256.generateKeyPair() }
        return KeyPair(privateKey: pair.privateKey, publicKey: pair.publicKey)
    }

    /// `KEY_MASTER_SECRET = fold(ECDH(privateKey, peerPublicKey).x)`. The
    /// device computes it with its private key and the server's public key,
    /// the server with its private key and the device's public key.
    /// - Parameters:
    ///   - privateKey: 32 bytes (or 33 with a leading zero byte).
    ///   - peerPublicKey: the other side's SEC1 public key; fully validated.
    /// - Returns: the 16-byte master secret in secure memory.
    /// - Throws: ``ProtocolError/invalidKey(field:)``, ``ProtocolError/core(_:)``.
    public func masterSecret(privateKey: SecureBytes, peerPublicKey: [UInt8]) throws(ProtocolError) -> SecureBytes {
        // Checked first so an invalid key error names the right key.
        try lift(keyField: "peerPublicKey") { () throws(SecureCoreError) in try P256.validate(publicKey: peerPublicKey)
        }
        return try lift(keyField: "privateKey") { () throws(SecureCoreError) -> SecureBytes in
            let shared = try P256.sharedSecret(privateKey: privateKey, publicKey: peerPublicKey)
            defer { shared.destroy() }
            return try shared.folded()
        }
    }

    /// `KDF(key, index) = AES-128(key, 0x00 × 8 ‖ u64be(index))`.
    /// - Parameters:
    ///   - key: a 16-byte key.
    ///   - index: the key index (see ``ProtocolConstants``).
    /// - Returns: the 16-byte derived key in secure memory.
    /// - Throws: ``ProtocolError/invalidLength(field:expected:actual:)``, ``ProtocolError/core(_:)``.
    public func deriveKey(_ key: SecureBytes, index: UInt64) throws(ProtocolError) -> SecureBytes {
        guard key.count == ProtocolConstants.keyByteCount else {
            throw .invalidLength(field: "key", expected: ProtocolConstants.keyByteCount, actual: key.count)
        }
        let block = [UInt8](repeating: 0, count: 8) + (0..<8).map { UInt8(truncatingIfNeeded: index >> (56 - 8 * $0)) }
        return try lift { () throws(SecureCoreError) in try AES128.deriveBlock(key: key, block: block) }
    }

    /// The five factor keys of an activation.
    /// - Parameter masterSecret: the 16-byte master secret.
    /// - Returns: possession (1), knowledge (2), biometry (3), transport (1000), vault (2000).
    /// - Throws: as ``deriveKey(_:index:)``.
    public func factorKeys(masterSecret: SecureBytes) throws(ProtocolError) -> FactorKeys {
        FactorKeys(
            possession: try deriveKey(masterSecret, index: ProtocolConstants.possessionKeyIndex),
            knowledge: try deriveKey(masterSecret, index: ProtocolConstants.knowledgeKeyIndex),
            biometry: try deriveKey(masterSecret, index: ProtocolConstants.biometryKeyIndex),
            transport: try deriveKey(masterSecret, index: ProtocolConstants.transportKeyIndex),
            vault: try deriveKey(masterSecret, index: ProtocolConstants.vaultKeyIndex))
    }

    /// `KDF_INTERNAL(KDF(key, index), data) = fold(HMAC-SHA256(KDF(key, index), data))`,
    /// for public outputs (IVs, counter hashes).
    func internalDigest(key: SecureBytes, index: UInt64, data: [UInt8]) throws(ProtocolError) -> [UInt8] {
        let derived = try deriveKey(key, index: index)
        defer { derived.destroy() }
        return try lift { () throws(SecureCoreError) in try HMACSHA256.foldedTag(data, key: derived) }
    }

    /// ECDSA-SHA256 signature (DER), as PowerAuth servers sign activation data.
    /// - Parameters:
    ///   - message: the bytes to sign.
    ///   - privateKey: 32 bytes (or 33 with a leading zero byte).
    /// - Returns: the DER signature.
    /// - Throws: ``ProtocolError/invalidKey(field:)``, ``ProtocolError/core(_:)``.
    public func sign(_ message: [UInt8], privateKey: SecureBytes) throws(ProtocolError) -> [UInt8] {
        try lift(keyField: "privateKey") { () throws(SecureCoreError) in try P256.sign(message, privateKey: privateKey)
        }
    }

    /// Verifies an ECDSA-SHA256 DER signature; a malformed one does not verify.
    /// - Parameters:
    ///   - signature: DER bytes.
    ///   - message: the signed bytes.
    ///   - publicKey: SEC1 public key.
    /// - Returns: whether it verifies.
    /// - Throws: ``ProtocolError/invalidKey(field:)`` for an invalid public key.
    public func verifySignature(_ signature: [UInt8], message: [UInt8], publicKey: [UInt8]) throws(ProtocolError)
        -> Bool
    {
        try lift(keyField: "publicKey") { () throws(SecureCoreError) in
            try P256.verify(signature: signature, message: message, publicKey: publicKey)
        }
    }
}
