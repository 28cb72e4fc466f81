internal import CSecureCore

/// PBKDF2-HMAC-SHA256 (RFC 8018), for compatibility with schemes that
/// require it. It is not memory-hard: prefer ``Argon2id`` for anything new.
public enum PBKDF2 {
    /// Derives a key from a password with PBKDF2-HMAC-SHA256.
    /// - Parameters:
    ///   - password: revealed only for the duration of the call.
    ///   - salt: at least 1 byte; NIST SP 800-132 asks for 16 random bytes.
    ///   - iterations: at least 1 (OWASP suggests 600,000 for SHA-256).
    ///   - outputByteCount: 16 ... 64 bytes (default 32).
    /// - Returns: the key, in secure memory.
    /// - Throws: ``SecureCoreError/invalidIterations``, ``SecureCoreError/saltTooShort(minimum:)``,
    ///   ``SecureCoreError/invalidOutputLength(_:)``, ``SecureCoreError/destroyed``.
    public static func deriveKey(
        from password: Password, salt: [UInt8], iterations: UInt32, outputByteCount: Int = 32
    ) throws(SecureCoreError) -> SecureBytes {
        guard Argon2id.outputByteCountRange.contains(outputByteCount) else {
            throw .invalidOutputLength(outputByteCount)
        }
        let key = try SecureBytes(count: outputByteCount)
        try password.withUnsafeUTF8Bytes { (pw) throws(SecureCoreError) in
            try salt.withUnsafeBufferPointer { (saltBytes) throws(SecureCoreError) in
                try key.withHandle { (out) throws(SecureCoreError) in
                    try check(
                        spc_kdf_pbkdf2_sha256(
                            pw.baseAddress?.assumingMemoryBound(to: UInt8.self), pw.count,
                            saltBytes.baseAddress, saltBytes.count,
                            iterations, out), index: 1, length: outputByteCount)
                }
            }
        }
        return key
    }
}
