internal import CProtocolCrypto
internal import CSecureCore

/// A P-256 key pair: the private scalar in secure memory, the public key as
/// SEC1 uncompressed bytes. The description shows the public key only.
package struct P256KeyPair: Sendable {
    /// The 32-byte private scalar, big-endian.
    package let privateKey: SecureBytes
    /// The 65-byte uncompressed public key (`0x04 ‖ X ‖ Y`).
    package let publicKey: [UInt8]
}

/// ECDH and ECDSA on NIST P-256 (OpenSSL libcrypto through the C core).
package enum P256 {
    /// Private scalar size in bytes (a 33-byte form with a leading zero, as a
    /// Java `BigInteger` writes it, is accepted too).
    package static let scalarByteCount = Int(SPC_P256_SCALAR_BYTES)
    /// Uncompressed public key size in bytes.
    package static let publicKeyByteCount = Int(SPC_P256_PUBLIC_BYTES)
    /// Compressed public key size in bytes.
    package static let compressedPublicKeyByteCount = Int(SPC_P256_COMPRESSED_BYTES)

    /// Generates a key pair from the operating system's randomness.
    /// - Returns: the pair.
    /// - Throws: memory errors, ``SecureCoreError/internalFailure(status:)``.
    package static func generateKeyPair() throws(SecureCoreError) -> P256KeyPair {
        let privateKey = try SecureBytes(count: scalarByteCount)
        let publicKey = try privateKey.withHandle { (priv) throws(SecureCoreError) -> [UInt8] in
            try makePublicBytes(count: publicKeyByteCount) { (pub) throws(SecureCoreError) in
                try check(spc_p256_keypair_generate(priv, pub))
            }
        }
        return P256KeyPair(privateKey: privateKey, publicKey: publicKey)
    }

    /// Checks a SEC1 public key (33 or 65 bytes): on the curve, not infinity.
    /// - Parameter publicKey: the encoded point.
    /// - Throws: ``SecureCoreError/invalidKey``.
    package static func validate(publicKey: [UInt8]) throws(SecureCoreError) {
        try CoreRuntime.ensureReady()
        try withPublicBytes(publicKey) { (pub, len) throws(SecureCoreError) in
            try check(spc_p256_public_check(pub, len))
        }
    }

    /// ECDH: the 32-byte x-coordinate of `privateKey × publicKey`, in secure memory.
    /// - Parameters:
    ///   - privateKey: 32 bytes (or 33 with a leading zero).
    ///   - publicKey: the peer's SEC1 public key; fully validated.
    /// - Returns: the shared x-coordinate.
    /// - Throws: ``SecureCoreError/invalidKey`` for either key, memory errors.
    package static func sharedSecret(privateKey: SecureBytes, publicKey: [UInt8]) throws(SecureCoreError) -> SecureBytes
    {
        let shared = try SecureBytes(count: scalarByteCount)
        try withHandles(privateKey, shared) { (priv: OpaquePointer, out: OpaquePointer) throws(SecureCoreError) in
            try withPublicBytes(publicKey) { (pub, len) throws(SecureCoreError) in
                try check(spc_p256_ecdh(priv, pub, len, out))
            }
        }
        return shared
    }

    /// ECDSA-SHA256 signature, DER-encoded.
    /// - Parameters:
    ///   - message: the signed bytes (hashed with SHA-256 here).
    ///   - privateKey: 32 bytes (or 33 with a leading zero).
    /// - Returns: the DER signature (at most 72 bytes).
    /// - Throws: ``SecureCoreError/invalidKey``, memory errors.
    package static func sign(_ message: [UInt8], privateKey: SecureBytes) throws(SecureCoreError) -> [UInt8] {
        var length = 0
        let buffer = try privateKey.withHandle { (priv) throws(SecureCoreError) -> [UInt8] in
            try withPublicBytes(message) { (msg, len) throws(SecureCoreError) -> [UInt8] in
                try makePublicBytes(count: Int(SPC_P256_SIGNATURE_MAX)) { (sig) throws(SecureCoreError) in
                    try check(spc_p256_ecdsa_sign(priv, msg, len, sig, &length))
                }
            }
        }
        return Array(buffer.prefix(length))
    }

    /// Verifies an ECDSA-SHA256 DER signature. A malformed signature does not verify.
    /// - Parameters:
    ///   - signature: DER bytes.
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
                    try check(spc_p256_ecdsa_verify(pub, pubLen, msg, len, sig, sigLen, &valid))
                }
            }
        }
        return valid == 1
    }
}
