import SecureCore

extension ActivationCrypto {
    /// The status-blob IV: `KDF_INTERNAL(KDF(KEY_TRANSPORT, 3000), challenge ‖ nonce)`.
    /// - Parameters:
    ///   - transportKey: the 16-byte transport key.
    ///   - challenge: the client's 16-byte challenge.
    ///   - nonce: the server's 16-byte nonce.
    /// - Returns: 16 bytes.
    /// - Throws: ``ProtocolError/invalidLength(field:expected:actual:)``, ``ProtocolError/core(_:)``.
    public func statusBlobIV(transportKey: SecureBytes, challenge: [UInt8], nonce: [UInt8]) throws(ProtocolError)
        -> [UInt8]
    {
        let size = ProtocolConstants.challengeByteCount
        guard challenge.count == size else {
            throw .invalidLength(field: "challenge", expected: size, actual: challenge.count)
        }
        guard nonce.count == size else { throw .invalidLength(field: "nonce", expected: size, actual: nonce.count) }
        return try internalDigest(key: transportKey, index: ProtocolConstants.statusIVKeyIndex, data: challenge + nonce)
    }

    /// Decrypts (AES-128-CBC, no padding, under `KEY_TRANSPORT`) and parses a status blob.
    /// - Parameters:
    ///   - encrypted: the 32 encrypted bytes.
    ///   - transportKey: the 16-byte transport key.
    ///   - challenge: the client's 16-byte challenge.
    ///   - nonce: the server's 16-byte nonce.
    /// - Returns: the parsed blob.
    /// - Throws: ``ProtocolError/invalidLength(field:expected:actual:)``,
    ///   ``ProtocolError/invalidStatusBlobMagic`` (also the usual result of a wrong key),
    ///   ``ProtocolError/unknownActivationState(_:)``, ``ProtocolError/core(_:)``.
    public func decryptStatusBlob(
        _ encrypted: [UInt8], transportKey: SecureBytes, challenge: [UInt8], nonce: [UInt8]
    ) throws(ProtocolError) -> ActivationStatusBlob {
        let size = ProtocolConstants.statusBlobByteCount
        guard encrypted.count == size else {
            throw .invalidLength(field: "status blob", expected: size, actual: encrypted.count)
        }
        let iv = try statusBlobIV(transportKey: transportKey, challenge: challenge, nonce: nonce)
        let plain = try lift { () throws(SecureCoreError) in
            try AES128.cbcDecrypt(key: transportKey, iv: iv, ciphertext: encrypted)
        }
        return try ActivationStatusBlob(plaintext: plain)
    }

    /// Encrypts a status blob (the server side).
    /// - Parameters:
    ///   - blob: the status.
    ///   - transportKey: the 16-byte transport key.
    ///   - challenge: the client's 16-byte challenge.
    ///   - nonce: a fresh 16-byte nonce.
    /// - Returns: 32 encrypted bytes.
    /// - Throws: as ``decryptStatusBlob(_:transportKey:challenge:nonce:)``.
    public func encryptStatusBlob(
        _ blob: ActivationStatusBlob, transportKey: SecureBytes, challenge: [UInt8], nonce: [UInt8]
    ) throws(ProtocolError) -> [UInt8] {
        let iv = try statusBlobIV(transportKey: transportKey, challenge: challenge, nonce: nonce)
        return try lift { () throws(SecureCoreError) in
            try AES128.cbcEncrypt(key: transportKey, iv: iv, plaintext: blob.plaintext)
        }
    }

    /// The counter hash the blob carries: `KDF_INTERNAL(KDF(KEY_TRANSPORT, 4000), CTR_DATA)`.
    /// - Parameters:
    ///   - counter: the counter.
    ///   - transportKey: the 16-byte transport key.
    /// - Returns: 16 bytes.
    /// - Throws: ``ProtocolError/invalidLength(field:expected:actual:)``, ``ProtocolError/core(_:)``.
    public func counterHash(_ counter: HashCounter, transportKey: SecureBytes) throws(ProtocolError) -> [UInt8] {
        try internalDigest(key: transportKey, index: ProtocolConstants.counterHashKeyIndex, data: counter.bytes)
    }

    /// How far the server's counter is ahead of `local`: the smallest `d` in
    /// `0 ..< lookAhead` with `counterHash(local advanced by d) == serverHash`.
    /// `nil` means the counters cannot be matched inside the window — the
    /// client-side "deadlock" conclusion.
    /// - Parameters:
    ///   - local: the client's counter.
    ///   - serverHash: ``ActivationStatusBlob/counterDataHash``.
    ///   - transportKey: the 16-byte transport key.
    ///   - lookAhead: window size, 1 ... 255 (usually the blob's ``ActivationStatusBlob/counterLookAhead``).
    /// - Returns: the distance, or `nil`.
    /// - Throws: ``ProtocolError/invalidLookAhead(_:)``, ``ProtocolError/invalidLength(field:expected:actual:)``,
    ///   ``ProtocolError/core(_:)``.
    public func counterDistance(
        from local: HashCounter, toServerHash serverHash: [UInt8], transportKey: SecureBytes, lookAhead: Int
    ) throws(ProtocolError) -> Int? {
        guard (1...ProtocolConstants.maximumLookAhead).contains(lookAhead) else { throw .invalidLookAhead(lookAhead) }
        guard serverHash.count == 16 else {
            throw .invalidLength(field: "serverHash", expected: 16, actual: serverHash.count)
        }
        let key = try deriveKey(transportKey, index: ProtocolConstants.counterHashKeyIndex)
        defer { key.destroy() }
        var counter = local
        for distance in 0..<lookAhead {
            let hash = try lift { () throws(SecureCoreError) in try HMACSHA256.foldedTag(counter.bytes, key: key) }
            if constantTimeEqual(hash, serverHash) { return distance }
            counter = try counter.next()
        }
        return nil
    }
}
