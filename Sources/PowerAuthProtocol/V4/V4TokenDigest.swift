import SecureCore

/// The V4 MAC-token digest (`X-PowerAuth-Token`):
/// `KMAC256(tokenSecret, nonce ‖ "&" ‖ timestamp ‖ "&" ‖ "4.0", 32, "PA4DIGEST")`, the
/// timestamp in decimal ASCII milliseconds. Verified by upstream's
/// `Token_Digest_Test_Vectors.json` (100 cases).
public enum V4TokenDigest {
    /// The nonce size in bytes.
    public static let nonceByteCount = 16
    /// The digest size in bytes.
    public static let byteCount = 32

    /// Computes a digest.
    /// - Parameters:
    ///   - tokenSecret: the token's secret (at least 4 bytes; the protocol's have 32), in secure memory.
    ///   - nonce: 16 random bytes, fresh for every request.
    ///   - timestampMilliseconds: the request time in milliseconds since 1970.
    /// - Returns: the 32-byte digest (sent Base64-encoded).
    /// - Throws: ``ProtocolError/invalidLength(field:expected:actual:)``, ``ProtocolError/core(_:)``.
    public static func compute(tokenSecret: SecureBytes, nonce: [UInt8], timestampMilliseconds: UInt64)
        throws(ProtocolError) -> [UInt8]
    {
        guard nonce.count == nonceByteCount else {
            throw .invalidLength(field: "nonce", expected: nonceByteCount, actual: nonce.count)
        }
        guard KMAC256.keyByteCountRange.contains(tokenSecret.count) else {
            throw .invalidLength(field: "tokenSecret", expected: 32, actual: tokenSecret.count)
        }
        let message = nonce + Array("&\(timestampMilliseconds)&4.0".utf8)
        return try lift { () throws(SecureCoreError) in
            try KMAC256.authenticate(
                message, key: tokenSecret, customization: Array("PA4DIGEST".utf8), count: byteCount)
        }
    }

    /// Checks a presented digest in constant time.
    /// - Parameters:
    ///   - digest: the presented digest.
    ///   - tokenSecret: as for ``compute(tokenSecret:nonce:timestampMilliseconds:)``.
    ///   - nonce: the presented nonce.
    ///   - timestampMilliseconds: the presented timestamp (its window is the caller's to check).
    /// - Returns: whether the digest matches.
    /// - Throws: as ``compute(tokenSecret:nonce:timestampMilliseconds:)``.
    public static func verify(
        _ digest: [UInt8], tokenSecret: SecureBytes, nonce: [UInt8], timestampMilliseconds: UInt64
    ) throws(ProtocolError) -> Bool {
        let expected = try compute(tokenSecret: tokenSecret, nonce: nonce, timestampMilliseconds: timestampMilliseconds)
        return constantTimeEqual(expected, digest)
    }
}
