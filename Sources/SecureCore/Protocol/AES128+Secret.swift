internal import CProtocolCrypto
internal import CSecureCore

extension AES128 {
    /// AES-128-CBC with PKCS#7 padding of a secret whose length is public (the
    /// PowerAuth vault key): the padded plaintext exists only in secure memory.
    /// - Parameters:
    ///   - key: a 16-byte key.
    ///   - iv: 16 bytes.
    ///   - plaintext: the secret.
    /// - Returns: the ciphertext (public), `plaintext.count` rounded up to the next block.
    /// - Throws: ``SecureCoreError/sizeMismatch(expected:actual:)`` (key, IV), memory errors.
    package static func cbcPKCS7EncryptSecret(key: SecureBytes, iv: [UInt8], plaintext: SecureBytes)
        throws(SecureCoreError) -> [UInt8]
    {
        try key.require(count: keyByteCount)
        guard iv.count == blockByteCount else { throw .sizeMismatch(expected: blockByteCount, actual: iv.count) }
        let pad = blockByteCount - plaintext.count % blockByteCount
        let padded = try SecureBytes(count: plaintext.count + pad)
        defer { padded.destroy() }
        try withOpenBytes(plaintext, nil) { (source, _) throws(SecureCoreError) in
            try padded.withOpenPointer { (target) throws(SecureCoreError) in
                UnsafeMutableRawPointer(target).copyMemory(from: source.baseAddress!, byteCount: source.count)
                for i in source.count..<(source.count + pad) { target[i] = UInt8(pad) }
            }
        }
        return try withHandles(key, padded) {
            (keyHandle: OpaquePointer, input: OpaquePointer) throws(SecureCoreError) in
            let bytes = try openForReading(input)
            defer { spc_buffer_close(input) }
            return try withPublicBytes(iv) { (ivBytes, _) throws(SecureCoreError) -> [UInt8] in
                try makePublicBytes(count: padded.count) { (out) throws(SecureCoreError) in
                    try check(
                        spc_aes128_cbc_nopad_encrypt(keyHandle, ivBytes, bytes, padded.count, out), length: padded.count
                    )
                }
            }
        }
    }

    /// Decrypts ``cbcPKCS7EncryptSecret(key:iv:plaintext:)`` when the plaintext's
    /// length is known: the padding is checked without a branch on its bytes.
    /// - Parameters:
    ///   - key: a 16-byte key.
    ///   - iv: 16 bytes.
    ///   - ciphertext: the ciphertext.
    ///   - plaintextCount: the expected plaintext length.
    /// - Returns: the plaintext in secure memory.
    /// - Throws: ``SecureCoreError/invalidSize(_:)`` when the ciphertext does not have the
    ///   length `plaintextCount` gives, ``SecureCoreError/authenticationFailed`` when the
    ///   padding is wrong (under the wrong key, for example), memory errors.
    package static func cbcPKCS7DecryptSecret(
        key: SecureBytes, iv: [UInt8], ciphertext: [UInt8], plaintextCount: Int
    ) throws(SecureCoreError) -> SecureBytes {
        try key.require(count: keyByteCount)
        guard iv.count == blockByteCount else { throw .sizeMismatch(expected: blockByteCount, actual: iv.count) }
        let pad = blockByteCount - plaintextCount % blockByteCount
        guard plaintextCount > 0, ciphertext.count == plaintextCount + pad else { throw .invalidSize(ciphertext.count) }
        let padded = try SecureBytes(count: ciphertext.count)
        defer { padded.destroy() }
        try withHandles(key, padded) { (keyHandle: OpaquePointer, output: OpaquePointer) throws(SecureCoreError) in
            let out = try openForReading(output)
            defer { spc_buffer_close(output) }
            try withPublicBytes(iv) { (ivBytes, _) throws(SecureCoreError) in
                try withPublicBytes(ciphertext) { (input, count) throws(SecureCoreError) in
                    try check(spc_aes128_cbc_nopad_decrypt(keyHandle, ivBytes, input, count, out), length: count)
                }
            }
        }
        let plaintext = try SecureBytes(count: plaintextCount)
        let valid = try withOpenBytes(padded, nil) { (source, _) throws(SecureCoreError) -> Bool in
            var difference: UInt8 = 0
            for i in plaintextCount..<source.count { difference |= source[i] ^ UInt8(pad) }
            try plaintext.withOpenPointer { (target) throws(SecureCoreError) in
                UnsafeMutableRawPointer(target).copyMemory(from: source.baseAddress!, byteCount: plaintextCount)
            }
            return difference == 0
        }
        guard valid else {
            plaintext.destroy()
            throw .authenticationFailed
        }
        return plaintext
    }
}
