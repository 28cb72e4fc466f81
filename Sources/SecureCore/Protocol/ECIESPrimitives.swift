internal import CProtocolCrypto
internal import CSecureCore

/// The secret-handling steps of PowerAuth's ECIES, done by the C core:
/// the envelope key (ECDH and the X9.63-SHA256 KDF), AES-128-CBC-PKCS7 and
/// the HMAC-SHA256 MAC. What differs between protocol versions (the bytes of
/// `SHARED_INFO_1` and `SHARED_INFO_2`, whether there is a nonce) is public
/// byte work left to the caller, the PowerAuth protocol module.
///
/// The envelope key (`KEY_ENC ‖ KEY_MAC ‖ KEY_IV`, 48 bytes), the ephemeral
/// private key, the ECDH secret and every plaintext stay in secure memory;
/// MACs are compared in constant time inside the core.
package enum ECIESPrimitives {
    /// Size of the envelope key `KEY_SECRET` in bytes.
    package static let envelopeKeyByteCount = Int(SPC_ECIES_ENVELOPE_KEY_BYTES)
    /// Size of a nonce in bytes.
    package static let nonceByteCount = Int(SPC_ECIES_NONCE_BYTES)
    /// Size of a MAC in bytes.
    package static let macByteCount = Int(SPC_ECIES_MAC_BYTES)
    /// Largest output of ``x963(secret:info:count:)``.
    package static let x963MaximumByteCount = Int(SPC_X963_MAX)

    /// The ciphertext size of `plaintextCount` bytes (PKCS#7 always adds 1 ... 16).
    /// - Parameter plaintextCount: the plaintext's size.
    /// - Returns: the next multiple of 16 above it.
    package static func ciphertextByteCount(_ plaintextCount: Int) -> Int { (plaintextCount / 16 + 1) * 16 }

    /// ANSI X9.63 KDF with SHA-256 (`spc_kdf_x963_sha256`).
    /// - Parameters:
    ///   - secret: the shared secret.
    ///   - info: public shared information.
    ///   - count: 1 ... ``x963MaximumByteCount`` output bytes.
    /// - Returns: the derived bytes in secure memory.
    /// - Throws: ``SecureCoreError/invalidSize(_:)``, ``SecureCoreError/destroyed``, memory errors.
    package static func x963(secret: SecureBytes, info: [UInt8], count: Int) throws(SecureCoreError) -> SecureBytes {
        guard (1...x963MaximumByteCount).contains(count) else { throw .invalidSize(count) }
        let out = try SecureBytes(count: count)
        try withHandles(secret, out) { (key: OpaquePointer, output: OpaquePointer) throws(SecureCoreError) in
            try withPublicBytes(info) { (bytes, len) throws(SecureCoreError) in
                try check(spc_kdf_x963_sha256(key, bytes, len, output), length: count)
            }
        }
        return out
    }

    /// The client's envelope key for one request (`spc_ecies_envelope_from_public`):
    /// a fresh ephemeral key pair, ECDH with the server's key, then
    /// `X9.63-SHA256(Z, sharedInfo1 ‖ ephemeralPublicKey, 48)`.
    /// - Parameters:
    ///   - serverPublicKey: SEC1, 33 or 65 bytes; fully validated.
    ///   - sharedInfo1: the version's `SHARED_INFO_1` bytes.
    /// - Returns: the envelope key and the compressed ephemeral public key (33
    ///   bytes), exactly as it entered the KDF.
    /// - Throws: ``SecureCoreError/invalidKey``, memory errors.
    package static func clientEnvelope(serverPublicKey: [UInt8], sharedInfo1: [UInt8]) throws(SecureCoreError) -> (
        key: SecureBytes, ephemeralPublicKey: [UInt8]
    ) {
        let key = try SecureBytes(count: envelopeKeyByteCount)
        let ephemeral = try key.withHandle { (envelope) throws(SecureCoreError) -> [UInt8] in
            try withPublicBytes(serverPublicKey) { (pub, pubLen) throws(SecureCoreError) -> [UInt8] in
                try withPublicBytes(sharedInfo1) { (info, infoLen) throws(SecureCoreError) -> [UInt8] in
                    try makePublicBytes(count: Int(SPC_P256_COMPRESSED_BYTES)) { (eph) throws(SecureCoreError) in
                        try check(spc_ecies_envelope_from_public(pub, pubLen, info, infoLen, envelope, eph))
                    }
                }
            }
        }
        return (key, ephemeral)
    }

    /// The server's envelope key for a received request
    /// (`spc_ecies_envelope_from_private`).
    /// - Parameters:
    ///   - privateKey: the P-256 scalar whose public key the client used.
    ///   - ephemeralPublicKey: the client's key exactly as received (33 or 65 bytes).
    ///   - sharedInfo1: the version's `SHARED_INFO_1` bytes.
    /// - Returns: the envelope key.
    /// - Throws: ``SecureCoreError/invalidKey`` (either key), memory errors.
    package static func serverEnvelope(
        privateKey: SecureBytes, ephemeralPublicKey: [UInt8], sharedInfo1: [UInt8]
    ) throws(SecureCoreError) -> SecureBytes {
        let key = try SecureBytes(count: envelopeKeyByteCount)
        try withHandles(privateKey, key) { (priv: OpaquePointer, envelope: OpaquePointer) throws(SecureCoreError) in
            try withPublicBytes(ephemeralPublicKey) { (eph, ephLen) throws(SecureCoreError) in
                try withPublicBytes(sharedInfo1) { (info, infoLen) throws(SecureCoreError) in
                    try check(spc_ecies_envelope_from_private(priv, eph, ephLen, info, infoLen, envelope))
                }
            }
        }
        return key
    }

    /// Encrypts one message under an envelope key (`spc_ecies_encrypt`).
    /// - Parameters:
    ///   - plaintext: the secret message; `nil` for an empty one.
    ///   - key: the 48-byte envelope key.
    ///   - nonce: 16 bytes (V3.1+: the IV is derived from it), or `nil` for the zero IV (V3.0).
    ///   - sharedInfo2: the bytes the MAC covers after the ciphertext.
    /// - Returns: the ciphertext and its 32-byte MAC.
    /// - Throws: ``SecureCoreError/sizeMismatch(expected:actual:)`` (key, nonce), memory errors.
    package static func encrypt(
        _ plaintext: SecureBytes?, key: SecureBytes, nonce: [UInt8]?, sharedInfo2: [UInt8]
    ) throws(SecureCoreError) -> (encryptedData: [UInt8], mac: [UInt8]) {
        try key.require(count: envelopeKeyByteCount)
        try requireNonce(nonce)
        let length = ciphertextByteCount(plaintext?.count ?? 0)
        var mac = [UInt8](repeating: 0, count: macByteCount)
        let data = try withHandles(key, plaintext) { (envelope, plain) throws(SecureCoreError) -> [UInt8] in
            try withOptionalBytes(nonce) { (iv) throws(SecureCoreError) -> [UInt8] in
                try withPublicBytes(sharedInfo2) { (sh2, sh2Len) throws(SecureCoreError) -> [UInt8] in
                    try makePublicBytes(count: length) { (out) throws(SecureCoreError) in
                        try check(spc_ecies_encrypt(envelope, iv, plain, sh2, sh2Len, out, length, &mac))
                    }
                }
            }
        }
        return (data, mac)
    }

    /// Verifies the MAC, then decrypts (`spc_ecies_decrypt`).
    /// - Parameters:
    ///   - encryptedData: a positive multiple of 16 bytes.
    ///   - mac: 32 bytes.
    ///   - key: the 48-byte envelope key.
    ///   - nonce: as for ``encrypt(_:key:nonce:sharedInfo2:)``.
    ///   - sharedInfo2: as for the encryption.
    /// - Returns: the plaintext in secure memory, or `nil` when it is empty.
    /// - Throws: ``SecureCoreError/authenticationFailed`` (MAC, or padding
    ///   under a valid MAC), ``SecureCoreError/invalidSize(_:)`` (data length),
    ///   ``SecureCoreError/sizeMismatch(expected:actual:)``, memory errors.
    package static func decrypt(
        _ encryptedData: [UInt8], mac: [UInt8], key: SecureBytes, nonce: [UInt8]?, sharedInfo2: [UInt8]
    ) throws(SecureCoreError) -> SecureBytes? {
        try key.require(count: envelopeKeyByteCount)
        try requireNonce(nonce)
        guard mac.count == macByteCount else { throw .sizeMismatch(expected: macByteCount, actual: mac.count) }
        guard !encryptedData.isEmpty, encryptedData.count % 16 == 0 else { throw .invalidSize(encryptedData.count) }
        let padded = try SecureBytes(count: encryptedData.count)
        defer { padded.destroy() }
        var length = 0
        try withHandles(key, padded) { (envelope: OpaquePointer, out: OpaquePointer) throws(SecureCoreError) in
            try withOptionalBytes(nonce) { (iv) throws(SecureCoreError) in
                try withPublicBytes(encryptedData) { (data, dataLen) throws(SecureCoreError) in
                    try withPublicBytes(sharedInfo2) { (sh2, sh2Len) throws(SecureCoreError) in
                        try withPublicBytes(mac) { (tag, _) throws(SecureCoreError) in
                            try check(spc_ecies_decrypt(envelope, iv, data, dataLen, sh2, sh2Len, tag, out, &length))
                        }
                    }
                }
            }
        }
        guard length > 0 else { return nil }
        let plaintext = try SecureBytes(count: length)
        try withOpenBytes(padded, nil) { (source, _) throws(SecureCoreError) in
            try plaintext.withOpenPointer { (destination) throws(SecureCoreError) in
                UnsafeMutableRawPointer(destination).copyMemory(from: source.baseAddress!, byteCount: length)
            }
        }
        return plaintext
    }

    private static func requireNonce(_ nonce: [UInt8]?) throws(SecureCoreError) {
        if let nonce, nonce.count != nonceByteCount {
            throw .sizeMismatch(expected: nonceByteCount, actual: nonce.count)
        }
    }

    /// A pointer to the nonce's bytes, or `nil` without one.
    private static func withOptionalBytes<R>(
        _ bytes: [UInt8]?, _ body: (UnsafePointer<UInt8>?) throws(SecureCoreError) -> R
    ) throws(SecureCoreError) -> R {
        guard let bytes else { return try body(nil) }
        return try withPublicBytes(bytes) { (pointer, _) throws(SecureCoreError) -> R in try body(pointer) }
    }
}
