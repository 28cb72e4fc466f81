internal import CSecureCore

/// Random bytes for public values (salts, nonces, identifiers) from the
/// operating system's CSPRNG. For secret random bytes use
/// ``SecureBytes/random(count:)``, which never leaves secure memory.
public enum SecureRandom {
    /// `count` random bytes.
    /// - Throws: ``SecureCoreError/initializationFailed``, ``SecureCoreError/invalidSize(_:)``.
    public static func bytes(count: Int) throws(SecureCoreError) -> [UInt8] {
        try CoreRuntime.ensureReady()
        guard count >= 0 else { throw .invalidSize(count) }
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { raw in
            if let base = raw.baseAddress { spc_random_fill(base, raw.count) }
        }
        return bytes
    }
}
