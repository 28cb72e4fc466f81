import SecureCore

extension ActivationCrypto {
    /// A 32-byte AEAD key from a 16-byte protocol key:
    /// `KDF(key, index) ‖ KDF(key, index + 1)`, built in secure memory.
    /// - Parameters:
    ///   - key: a 16-byte key.
    ///   - index: the first `KDF` index (see ``ProtocolConstants``).
    /// - Returns: 32 bytes in secure memory.
    /// - Throws: as ``deriveKey(_:index:)``.
    package func aeadKey(from key: SecureBytes, index: UInt64) throws(ProtocolError) -> SecureBytes {
        let first = try deriveKey(key, index: index)
        defer { first.destroy() }
        let second = try deriveKey(key, index: index + 1)
        defer { second.destroy() }
        let out = try lift { () throws(SecureCoreError) in try SecureBytes(count: 2 * ProtocolConstants.keyByteCount) }
        out.withUnsafeMutableBytes { destination in
            first.withUnsafeBytes { destination.copyMemory(from: $0) }
            second.withUnsafeBytes {
                UnsafeMutableRawBufferPointer(rebasing: destination[ProtocolConstants.keyByteCount...])
                    .copyMemory(from: $0)
            }
        }
        return out
    }
}
