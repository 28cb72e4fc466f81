internal import CProtocolCrypto
internal import CSecureCore

/// HMAC-SHA256 (libsodium, any key length) for the protocol's public outputs:
/// tags that are sent, compared or used as IVs. Intermediate secret keys of
/// the authentication code never come through here; see
/// ``AuthenticationCodeChain``.
package enum HMACSHA256 {
    /// Tag size in bytes.
    package static let byteCount = Int(SPC_HMAC_SHA256_BYTES)

    /// `HMAC-SHA256(key, message)`.
    /// - Parameters:
    ///   - key: the key, any positive length, in secure memory.
    ///   - message: public bytes.
    /// - Returns: the 32-byte tag.
    /// - Throws: ``SecureCoreError/destroyed``, memory errors.
    package static func authenticate(_ message: [UInt8], key: SecureBytes) throws(SecureCoreError) -> [UInt8] {
        try key.withHandle { (keyHandle) throws(SecureCoreError) -> [UInt8] in
            try withPublicBytes(message) { (msg, len) throws(SecureCoreError) -> [UInt8] in
                try makePublicBytes(count: byteCount) { (out) throws(SecureCoreError) in
                    try check(spc_hmac_sha256(keyHandle, msg, len, out))
                }
            }
        }
    }

    /// A 32-byte key from secret parts: `HMAC-SHA256(key: parts[0] ‖ parts[1] ‖ …, label)`.
    /// The C side concatenates the parts in secure memory and writes the
    /// result into secure memory; only the label is public. The vault uses it
    /// to bind its keys to its key file.
    /// - Parameters:
    ///   - label: public domain-separation bytes.
    ///   - parts: one to eight secrets, concatenated in this order.
    /// - Returns: the derived key, in secure memory.
    /// - Throws: ``SecureCoreError/invalidSize(_:)`` (no parts, too many or too
    ///   large), ``SecureCoreError/destroyed``, memory errors.
    package static func deriveKey(label: [UInt8], from parts: [SecureBytes]) throws(SecureCoreError) -> SecureBytes {
        guard (1...Int(SPC_HMAC_KEY_PARTS_MAX)).contains(parts.count) else { throw .invalidSize(parts.count) }
        let out = try SecureBytes(count: byteCount)
        try withHandles(parts + [out]) { (handles) throws(SecureCoreError) in
            let partHandles: [OpaquePointer?] = handles.prefix(parts.count).map { $0 }
            try withPublicBytes(label) { (msg, len) throws(SecureCoreError) in
                let status = partHandles.withUnsafeBufferPointer { list -> spc_status in
                    guard let base = list.baseAddress else { return SPC_E_ARGUMENT }
                    return spc_hmac_sha256_derive(base, parts.count, msg, len, handles[parts.count])
                }
                try check(status, length: parts.count)
            }
        }
        return out
    }

    /// PowerAuth's `KDF_INTERNAL`: the HMAC tag folded to 16 bytes (the two
    /// halves XORed).
    /// - Parameters:
    ///   - message: public bytes.
    ///   - key: the key, in secure memory.
    /// - Returns: 16 bytes.
    /// - Throws: as ``authenticate(_:key:)``.
    package static func foldedTag(_ message: [UInt8], key: SecureBytes) throws(SecureCoreError) -> [UInt8] {
        fold(try authenticate(message, key: key))
    }
}

/// SHA-256 of public data (libsodium).
package enum SHA256 {
    /// `SHA-256(message)`.
    /// - Parameter message: public bytes.
    /// - Returns: the 32-byte digest.
    /// - Throws: ``SecureCoreError/initializationFailed``.
    package static func hash(_ message: [UInt8]) throws(SecureCoreError) -> [UInt8] {
        try CoreRuntime.ensureReady()
        return try withPublicBytes(message) { (msg, len) throws(SecureCoreError) -> [UInt8] in
            try makePublicBytes(count: Int(SPC_SHA256_BYTES)) { (out) throws(SecureCoreError) in
                try check(spc_sha256(msg, len, out))
            }
        }
    }
}

/// XORs the first half of `bytes` with the second (32 → 16 bytes): PowerAuth's
/// "convert 32 bytes to 16". For public values only; secrets use
/// ``SecureBytes/folded()``.
/// - Parameter bytes: an even number of bytes.
/// - Returns: half as many bytes.
package func fold(_ bytes: [UInt8]) -> [UInt8] {
    let half = bytes.count / 2
    return (0..<half).map { bytes[$0] ^ bytes[$0 + half] }
}
