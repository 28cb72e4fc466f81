internal import CSecureCore

/// BLAKE2b-256 over public bytes: file checksums, identifiers. Secrets go
/// through ``Argon2id`` or ``AEAD``, never through a plain hash.
public enum Digest {
    /// Digest size in bytes.
    public static let byteCount = Int(SPC_DIGEST_BYTES)

    /// BLAKE2b-256 of `bytes`.
    /// - Returns: 32 bytes.
    /// - Throws: ``SecureCoreError/initializationFailed``.
    public static func blake2b256(_ bytes: some Collection<UInt8>) throws(SecureCoreError) -> [UInt8] {
        try CoreRuntime.ensureReady()
        let input = Array(bytes)
        var out = [UInt8](repeating: 0, count: byteCount)
        let status = input.withUnsafeBufferPointer { i in
            out.withUnsafeMutableBufferPointer { o in spc_digest(i.baseAddress, i.count, o.baseAddress!) }
        }
        try check(status)
        return out
    }
}
