internal import CProtocolCrypto
internal import CSecureCore

/// SHA3-256 and SHA3-384 of public data (PowerAuth V4: the hash-based
/// counter, the application-scope SH2).
package enum SHA3 {
    /// `SHA3-256(message)`.
    /// - Parameter message: public bytes.
    /// - Returns: the 32-byte digest.
    /// - Throws: ``SecureCoreError/initializationFailed``.
    package static func hash256(_ message: [UInt8]) throws(SecureCoreError) -> [UInt8] {
        try CoreRuntime.ensureReady()
        return try withPublicBytes(message) { (msg, len) throws(SecureCoreError) -> [UInt8] in
            try makePublicBytes(count: Int(SPC_SHA3_256_BYTES)) { (out) throws(SecureCoreError) in
                try check(spc_sha3_256(msg, len, out))
            }
        }
    }

    /// `SHA3-384(message)`.
    /// - Parameter message: public bytes.
    /// - Returns: the 48-byte digest.
    /// - Throws: ``SecureCoreError/initializationFailed``.
    package static func hash384(_ message: [UInt8]) throws(SecureCoreError) -> [UInt8] {
        try CoreRuntime.ensureReady()
        return try withPublicBytes(message) { (msg, len) throws(SecureCoreError) -> [UInt8] in
            try makePublicBytes(count: Int(SPC_SHA3_384_BYTES)) { (out) throws(SecureCoreError) in
                try check(spc_sha3_384(msg, len, out))
            }
        }
    }
}

/// KMAC-256 (NIST SP 800-185) and the PowerAuth V4 key derivations built on it.
/// Keys and derived keys stay in secure memory; only tags come out as bytes.
package enum KMAC256 {
    /// Accepted key sizes (OpenSSL 3.0's KMAC limits).
    package static let keyByteCountRange = Int(SPC_KMAC_KEY_MIN)...Int(SPC_KMAC_KEY_MAX)
    /// Accepted output sizes.
    package static let outputByteCountRange = 1...Int(SPC_KMAC_OUT_MAX)
    /// The longest label of ``deriveKey(_:label:data:count:)``.
    package static let labelMaximum = Int(SPC_V4_KDF_LABEL_MAX)
    /// The shortest salt of ``derivePasswordKey(_:salt:count:)``.
    package static let passwordSaltMinimum = Int(SPC_V4_PBKDF_SALT_MIN)

    /// `KMAC256(key, message, L = count, S = customization)`, a public tag.
    /// - Parameters:
    ///   - message: public bytes.
    ///   - key: the key, in secure memory (4 ... 512 bytes).
    ///   - customization: S, 1 ... 256 bytes.
    ///   - count: L in bytes, 1 ... 64.
    /// - Returns: the tag.
    /// - Throws: ``SecureCoreError/invalidSize(_:)`` (a size), ``SecureCoreError/destroyed``, memory errors.
    package static func authenticate(
        _ message: [UInt8], key: SecureBytes, customization: [UInt8], count: Int
    ) throws(SecureCoreError) -> [UInt8] {
        guard outputByteCountRange.contains(count) else { throw .invalidSize(count) }
        guard keyByteCountRange.contains(key.count) else { throw .invalidSize(key.count) }
        return try key.withHandle { (keyHandle) throws(SecureCoreError) -> [UInt8] in
            try withPublicBytes(message) { (msg, len) throws(SecureCoreError) -> [UInt8] in
                try withPublicBytes(customization) { (custom, customLen) throws(SecureCoreError) -> [UInt8] in
                    try makePublicBytes(count: count) { (out) throws(SecureCoreError) in
                        try check(spc_kmac256(keyHandle, msg, len, custom, customLen, out, count), length: customLen)
                    }
                }
            }
        }
    }

    /// `KMAC256(key, prefix ‖ data, L = count, S = customization)` with a secret result:
    /// the V4 authentication-code chain and the final shared-secret step.
    /// - Parameters:
    ///   - key: the key, in secure memory (4 ... 512 bytes).
    ///   - prefix: public bytes that come first.
    ///   - data: secret bytes that follow, in secure memory; `nil` for none.
    ///   - customization: S, 1 ... 256 bytes.
    ///   - count: L in bytes, 1 ... 64.
    /// - Returns: the result, in secure memory.
    /// - Throws: ``SecureCoreError/invalidSize(_:)`` (a size, `data` is `key`), ``SecureCoreError/destroyed``,
    ///   memory errors.
    package static func deriveSecret(
        _ key: SecureBytes, prefix: [UInt8], data: SecureBytes?, customization: [UInt8], count: Int
    ) throws(SecureCoreError) -> SecureBytes {
        guard outputByteCountRange.contains(count) else { throw .invalidSize(count) }
        guard keyByteCountRange.contains(key.count) else { throw .invalidSize(key.count) }
        guard data !== key else { throw .invalidSize(key.count) }
        let out = try SecureBytes(count: count)
        let parts = [key, out] + (data.map { [$0] } ?? [])
        try withHandles(parts) { (handles) throws(SecureCoreError) in
            try withPublicBytes(prefix) { (pre, preLen) throws(SecureCoreError) in
                try withPublicBytes(customization) { (custom, customLen) throws(SecureCoreError) in
                    try check(
                        spc_kmac256_secret(
                            handles[0], pre, preLen, handles.count > 2 ? handles[2] : nil, custom, customLen,
                            handles[1]),
                        length: customLen)
                }
            }
        }
        return out
    }

    /// The V4 KDF: `KMAC256(key, data, L = count, S = "PA4KDF:" ‖ label)`.
    /// - Parameters:
    ///   - key: the parent key, in secure memory (4 ... 512 bytes).
    ///   - label: the key's label, 1 ... 128 bytes of UTF-8.
    ///   - data: the public diversifier (empty for most keys).
    ///   - count: the derived key's size, 1 ... 64.
    /// - Returns: the derived key, in secure memory.
    /// - Throws: ``SecureCoreError/invalidSize(_:)`` (a size), ``SecureCoreError/destroyed``, memory errors.
    package static func deriveKey(
        _ key: SecureBytes, label: [UInt8], data: [UInt8], count: Int
    ) throws(SecureCoreError) -> SecureBytes {
        guard outputByteCountRange.contains(count) else { throw .invalidSize(count) }
        guard (1...labelMaximum).contains(label.count) else { throw .invalidSize(label.count) }
        guard keyByteCountRange.contains(key.count) else { throw .invalidSize(key.count) }
        let out = try SecureBytes(count: count)
        try withHandles(key, out) { (keyHandle: OpaquePointer, outHandle: OpaquePointer) throws(SecureCoreError) in
            try withPublicBytes(label) { (lab, labLen) throws(SecureCoreError) in
                try withPublicBytes(data) { (dat, datLen) throws(SecureCoreError) in
                    try check(spc_v4_kdf(keyHandle, lab, labLen, dat, datLen, outHandle), length: count)
                }
            }
        }
        return out
    }

    /// The V4 password KDF: `KMAC256(UTF-8 of password, salt, L = count, S = "PA4PBKDF")`.
    /// The password's UTF-8 is revealed by the C side, into its own secure buffer.
    /// - Parameters:
    ///   - password: 4 ... 512 bytes of UTF-8 (OpenSSL 3.0's KMAC key limits).
    ///   - salt: at least 32 public bytes.
    ///   - count: the key's size, 1 ... 64.
    /// - Returns: the derived key, in secure memory.
    /// - Throws: ``SecureCoreError/invalidSize(_:)`` (a size, a password too short),
    ///   ``SecureCoreError/saltTooShort(minimum:)``, memory errors.
    package static func derivePasswordKey(
        _ password: Password, salt: [UInt8], count: Int
    ) throws(SecureCoreError) -> SecureBytes {
        guard outputByteCountRange.contains(count) else { throw .invalidSize(count) }
        guard salt.count >= passwordSaltMinimum else { throw .saltTooShort(minimum: passwordSaltMinimum) }
        let out = try SecureBytes(count: count)
        let length = password.length  // read before the password's lock is taken below
        try withHandles(password, out) { (pw: OpaquePointer, outHandle: OpaquePointer) throws(SecureCoreError) in
            try withPublicBytes(salt) { (saltBytes, saltLen) throws(SecureCoreError) in
                try check(spc_v4_password_kdf(pw, saltBytes, saltLen, outHandle), length: length)
            }
        }
        return out
    }
}

/// HMAC-SHA384 for public tags: the `HS384` of V4 temporary-key request JWTs.
package enum HMACSHA384 {
    /// Tag size in bytes.
    package static let byteCount = Int(SPC_HMAC_SHA384_BYTES)

    /// `HMAC-SHA384(key, message)`.
    /// - Parameters:
    ///   - message: public bytes.
    ///   - key: the key (at least one byte), in secure memory.
    /// - Returns: the 48-byte tag.
    /// - Throws: ``SecureCoreError/destroyed``, memory errors.
    package static func authenticate(_ message: [UInt8], key: SecureBytes) throws(SecureCoreError) -> [UInt8] {
        try CoreRuntime.ensureReady()
        return try key.withHandle { (keyHandle) throws(SecureCoreError) -> [UInt8] in
            try withPublicBytes(message) { (msg, len) throws(SecureCoreError) -> [UInt8] in
                try makePublicBytes(count: byteCount) { (out) throws(SecureCoreError) in
                    try check(spc_hmac_sha384(keyHandle, msg, len, out))
                }
            }
        }
    }
}

/// AES-256-CTR over public data (a 128-bit big-endian counter block from `iv`).
package enum AES256CTR {
    /// Key size in bytes.
    package static let keyByteCount = Int(SPC_AES256_KEY_BYTES)

    /// Encrypts or decrypts (the same operation).
    /// - Parameters:
    ///   - data: public bytes.
    ///   - key: 32 bytes, in secure memory.
    ///   - iv: the 16-byte initial counter block.
    /// - Returns: as many bytes as `data`.
    /// - Throws: ``SecureCoreError/sizeMismatch(expected:actual:)``, memory errors.
    package static func apply(_ data: [UInt8], key: SecureBytes, iv: [UInt8]) throws(SecureCoreError) -> [UInt8] {
        try key.require(count: keyByteCount)
        guard iv.count == 16 else { throw .sizeMismatch(expected: 16, actual: iv.count) }
        guard !data.isEmpty else { return [] }
        return try key.withHandle { (keyHandle) throws(SecureCoreError) -> [UInt8] in
            try withPublicBytes(iv) { (ivBytes, _) throws(SecureCoreError) -> [UInt8] in
                try withPublicBytes(data) { (input, len) throws(SecureCoreError) -> [UInt8] in
                    try makePublicBytes(count: len) { (out) throws(SecureCoreError) in
                        try check(spc_aes256_ctr(keyHandle, ivBytes, input, len, out))
                    }
                }
            }
        }
    }
}

/// The PowerAuth V4 AEAD: AES-256-CTR and a KMAC-256 tag, both keys derived
/// from one key and a key context; the sealed form is `nonce ‖ tag ‖ ciphertext`.
package enum V4AEADPrimitive {
    /// Nonce size in bytes.
    package static let nonceByteCount = Int(SPC_V4_AEAD_NONCE_BYTES)
    /// What sealing adds to the plaintext: nonce and tag.
    package static let overhead = Int(SPC_V4_AEAD_OVERHEAD)

    /// Seals a secret plaintext.
    /// - Parameters:
    ///   - plaintext: the message, in secure memory; `nil` for an empty one.
    ///   - key: the key, in secure memory (32 ... 512 bytes).
    ///   - keyContext: the public key context.
    ///   - nonce: 12 bytes, never repeated under one key and key context.
    ///   - associatedData: public bytes bound to the message.
    /// - Returns: `nonce ‖ tag ‖ ciphertext`.
    /// - Throws: ``SecureCoreError/sizeMismatch(expected:actual:)`` (nonce),
    ///   ``SecureCoreError/invalidSize(_:)`` (key), memory errors.
    package static func seal(
        _ plaintext: SecureBytes?, key: SecureBytes, keyContext: [UInt8], nonce: [UInt8], associatedData: [UInt8]
    ) throws(SecureCoreError) -> [UInt8] {
        guard nonce.count == nonceByteCount else { throw .sizeMismatch(expected: nonceByteCount, actual: nonce.count) }
        guard (32...KMAC256.keyByteCountRange.upperBound).contains(key.count) else { throw .invalidSize(key.count) }
        let length = (plaintext?.count ?? 0) + overhead
        return try withHandles(key, plaintext) { (keyHandle, plain) throws(SecureCoreError) -> [UInt8] in
            try withPublicBytes(keyContext) { (kc, kcLen) throws(SecureCoreError) -> [UInt8] in
                try withPublicBytes(nonce) { (iv, _) throws(SecureCoreError) -> [UInt8] in
                    try withPublicBytes(associatedData) { (ad, adLen) throws(SecureCoreError) -> [UInt8] in
                        try makePublicBytes(count: length) { (out) throws(SecureCoreError) in
                            try check(spc_v4_aead_seal(keyHandle, kc, kcLen, iv, ad, adLen, plain, out, length))
                        }
                    }
                }
            }
        }
    }

    /// Opens a sealed message: the tag is checked before anything is decrypted.
    /// - Parameters:
    ///   - sealed: `nonce ‖ tag ‖ ciphertext`.
    ///   - key: as for the seal.
    ///   - keyContext: as for the seal.
    ///   - associatedData: as for the seal.
    /// - Returns: the plaintext in secure memory, or `nil` when it is empty.
    /// - Throws: ``SecureCoreError/authenticationFailed`` (wrong key, key context,
    ///   data or tag), ``SecureCoreError/invalidSize(_:)`` (too short), memory errors.
    package static func open(
        _ sealed: [UInt8], key: SecureBytes, keyContext: [UInt8], associatedData: [UInt8]
    ) throws(SecureCoreError) -> SecureBytes? {
        guard sealed.count >= overhead else { throw .invalidSize(sealed.count) }
        guard (32...KMAC256.keyByteCountRange.upperBound).contains(key.count) else { throw .invalidSize(key.count) }
        let plaintext = sealed.count > overhead ? try SecureBytes(count: sealed.count - overhead) : nil
        try withHandles(key, plaintext) { (keyHandle, plain) throws(SecureCoreError) in
            try withPublicBytes(keyContext) { (kc, kcLen) throws(SecureCoreError) in
                try withPublicBytes(associatedData) { (ad, adLen) throws(SecureCoreError) in
                    try withPublicBytes(sealed) { (input, len) throws(SecureCoreError) in
                        try check(spc_v4_aead_open(keyHandle, kc, kcLen, ad, adLen, input, len, plain))
                    }
                }
            }
        }
        return plaintext
    }
}

/// A P-384 key pair: the private scalar in secure memory, the public key as
/// SEC1 uncompressed bytes.
package struct P384KeyPair: Sendable {
    /// The 48-byte private scalar, big-endian.
    package let privateKey: SecureBytes
    /// The 97-byte uncompressed public key (`0x04 ‖ X ‖ Y`).
    package let publicKey: [UInt8]
}

/// ECDH, ECDSA-SHA384 and the DHKEM step on NIST P-384 (OpenSSL libcrypto through the C target).
package enum P384 {
    /// Private scalar size (a 49-byte form with a leading zero is accepted too).
    package static let scalarByteCount = Int(SPC_P384_SCALAR_BYTES)
    /// Uncompressed public key size.
    package static let publicKeyByteCount = Int(SPC_P384_PUBLIC_BYTES)
    /// Compressed public key size.
    package static let compressedPublicKeyByteCount = Int(SPC_P384_COMPRESSED_BYTES)
    /// Signature size, `r ‖ s`.
    package static let signatureByteCount = Int(SPC_P384_SIGNATURE_BYTES)
    /// Size of the DHKEM secret.
    package static let kemSecretByteCount = Int(SPC_DHKEM_P384_SECRET_BYTES)

    /// Generates a key pair from the operating system's randomness.
    /// - Returns: the pair.
    /// - Throws: memory errors, ``SecureCoreError/internalFailure(status:)``.
    package static func generateKeyPair() throws(SecureCoreError) -> P384KeyPair {
        let privateKey = try SecureBytes(count: scalarByteCount)
        let publicKey = try privateKey.withHandle { (priv) throws(SecureCoreError) -> [UInt8] in
            try makePublicBytes(count: publicKeyByteCount) { (pub) throws(SecureCoreError) in
                try check(spc_p384_keypair_generate(priv, pub))
            }
        }
        return P384KeyPair(privateKey: privateKey, publicKey: publicKey)
    }

    /// The public key of a private scalar.
    /// - Parameter privateKey: 48 bytes (or 49 with a leading zero), 0 < d < n.
    /// - Returns: the uncompressed public key.
    /// - Throws: ``SecureCoreError/invalidKey``, memory errors.
    package static func publicKey(of privateKey: SecureBytes) throws(SecureCoreError) -> [UInt8] {
        try privateKey.withHandle { (priv) throws(SecureCoreError) -> [UInt8] in
            try makePublicBytes(count: publicKeyByteCount) { (pub) throws(SecureCoreError) in
                try check(spc_p384_public_from_private(priv, pub))
            }
        }
    }

    /// Checks a SEC1 public key (49 or 97 bytes): on the curve, not infinity.
    /// - Parameter publicKey: the encoded point.
    /// - Throws: ``SecureCoreError/invalidKey``.
    package static func validate(publicKey: [UInt8]) throws(SecureCoreError) {
        try CoreRuntime.ensureReady()
        try withPublicBytes(publicKey) { (pub, len) throws(SecureCoreError) in
            try check(spc_p384_public_check(pub, len))
        }
    }

    /// ECDH: the 48-byte x-coordinate of `privateKey × publicKey`, in secure memory.
    /// - Parameters:
    ///   - privateKey: 48 bytes (or 49 with a leading zero).
    ///   - publicKey: the peer's SEC1 key; fully validated.
    /// - Returns: the shared x-coordinate.
    /// - Throws: ``SecureCoreError/invalidKey`` for either key, memory errors.
    package static func sharedSecret(privateKey: SecureBytes, publicKey: [UInt8]) throws(SecureCoreError) -> SecureBytes
    {
        let shared = try SecureBytes(count: scalarByteCount)
        try withHandles(privateKey, shared) { (priv: OpaquePointer, out: OpaquePointer) throws(SecureCoreError) in
            try withPublicBytes(publicKey) { (pub, len) throws(SecureCoreError) in
                try check(spc_p384_ecdh(priv, pub, len, out))
            }
        }
        return shared
    }

    /// ECDSA-SHA384 signature as `r ‖ s` (96 bytes, JOSE ES384).
    /// - Parameters:
    ///   - message: the signed bytes (hashed with SHA-384 here).
    ///   - privateKey: 48 bytes (or 49 with a leading zero).
    /// - Returns: the signature.
    /// - Throws: ``SecureCoreError/invalidKey``, memory errors.
    package static func sign(_ message: [UInt8], privateKey: SecureBytes) throws(SecureCoreError) -> [UInt8] {
        try privateKey.withHandle { (priv) throws(SecureCoreError) -> [UInt8] in
            try withPublicBytes(message) { (msg, len) throws(SecureCoreError) -> [UInt8] in
                try makePublicBytes(count: signatureByteCount) { (sig) throws(SecureCoreError) in
                    try check(spc_p384_ecdsa_sign(priv, msg, len, sig))
                }
            }
        }
    }

    /// Verifies an ECDSA-SHA384 `r ‖ s` signature; any malformed one does not verify.
    /// - Parameters:
    ///   - signature: 96 bytes.
    ///   - message: the signed bytes.
    ///   - publicKey: SEC1 public key.
    /// - Returns: whether the signature is valid.
    /// - Throws: ``SecureCoreError/invalidKey`` for an invalid public key.
    package static func verify(signature: [UInt8], message: [UInt8], publicKey: [UInt8]) throws(SecureCoreError) -> Bool
    {
        try CoreRuntime.ensureReady()
        var valid: Int32 = 0
        try withPublicBytes(publicKey) { (pub, pubLen) throws(SecureCoreError) in
            try withPublicBytes(message) { (msg, len) throws(SecureCoreError) in
                try withPublicBytes(signature) { (sig, sigLen) throws(SecureCoreError) in
                    try check(spc_p384_ecdsa_verify(pub, pubLen, msg, len, sig, sigLen, &valid))
                }
            }
        }
        return valid == 1
    }

    /// The sender's DHKEM(P-384, HKDF-SHA384) step with the HPKE export PowerAuth V4 uses.
    /// - Parameter publicKey: the recipient's SEC1 key; fully validated.
    /// - Returns: `enc` (the 97-byte ephemeral key to send) and the 48-byte secret.
    /// - Throws: ``SecureCoreError/invalidKey``, memory errors.
    package static func encapsulate(to publicKey: [UInt8]) throws(SecureCoreError) -> (
        encapsulation: [UInt8], secret: SecureBytes
    ) {
        let secret = try SecureBytes(count: kemSecretByteCount)
        let enc = try secret.withHandle { (out) throws(SecureCoreError) -> [UInt8] in
            try withPublicBytes(publicKey) { (pub, len) throws(SecureCoreError) -> [UInt8] in
                try makePublicBytes(count: Int(SPC_DHKEM_P384_ENC_BYTES)) { (enc) throws(SecureCoreError) in
                    try check(spc_dhkem_p384_encap(pub, len, enc, out))
                }
            }
        }
        return (enc, secret)
    }

    /// The recipient's side of ``encapsulate(to:)``.
    /// - Parameters:
    ///   - encapsulation: the sender's 97-byte `enc`.
    ///   - privateKey: the recipient's scalar.
    /// - Returns: the 48-byte secret, in secure memory.
    /// - Throws: ``SecureCoreError/invalidKey`` for either key, memory errors.
    package static func decapsulate(_ encapsulation: [UInt8], privateKey: SecureBytes) throws(SecureCoreError)
        -> SecureBytes
    {
        let secret = try SecureBytes(count: kemSecretByteCount)
        try withHandles(privateKey, secret) { (priv: OpaquePointer, out: OpaquePointer) throws(SecureCoreError) in
            try withPublicBytes(encapsulation) { (enc, len) throws(SecureCoreError) in
                try check(spc_dhkem_p384_decap(priv, enc, len, out))
            }
        }
        return secret
    }
}
