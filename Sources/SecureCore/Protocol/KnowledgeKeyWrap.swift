internal import CProtocolCrypto
internal import CSecureCore

/// Wraps the knowledge factor key under a key derived from the PIN with
/// Argon2id, with no way to tell a wrong PIN locally: no MAC, no padding, no
/// check value; unwrapping with a wrong PIN yields a different key.
///
/// Deliberately minimal and package-internal: it is the one place that turns
/// a PIN into a key for the protocol, so it can later call the shared KDF API
/// instead of its own Argon2id call without touching its callers.
package enum KnowledgeKeyWrap {
    /// Salt size in bytes.
    package static let saltByteCount = Int(SPC_KNOWLEDGE_SALT_BYTES)
    /// Size of the wrapped key (and of the key) in bytes.
    package static let keyByteCount = Int(SPC_FACTOR_KEY_BYTES)
    /// Accepted Argon2id memory, in KiB (the upper bound caps a stored parameter).
    package static let memoryKiBRange = UInt32(SPC_KNOWLEDGE_MEMORY_MIN_KIB)...UInt32(SPC_KNOWLEDGE_MEMORY_MAX_KIB)
    /// Accepted Argon2id iteration counts.
    package static let iterationsRange = UInt32(1)...UInt32(SPC_KNOWLEDGE_ITERATIONS_MAX)

    /// `AES-128(Argon2id(pin, salt, m, t, p = 1), key)`.
    /// - Parameters:
    ///   - key: the 16-byte knowledge key.
    ///   - pin: the PIN (non-empty).
    ///   - salt: 16 fresh random bytes.
    ///   - memoryKiB: Argon2id memory in KiB.
    ///   - iterations: Argon2id passes.
    /// - Returns: the 16 wrapped bytes (not secret by themselves).
    /// - Throws: ``SecureCoreError/invalidSize(_:)`` (empty PIN, parameters out
    ///   of range), ``SecureCoreError/sizeMismatch(expected:actual:)``, memory errors.
    package static func wrap(
        _ key: SecureBytes, pin: Password, salt: [UInt8], memoryKiB: UInt32, iterations: UInt32
    ) throws(SecureCoreError) -> [UInt8] {
        try key.require(count: keyByteCount)
        return try withPIN(pin, and: key, salt: salt) { (pinHandle, keyHandle, saltBytes) throws(SecureCoreError) in
            try makePublicBytes(count: keyByteCount) { (out) throws(SecureCoreError) in
                try check(spc_knowledge_key_wrap(pinHandle, saltBytes, memoryKiB, iterations, keyHandle, out))
            }
        }
    }

    /// The inverse of ``wrap(_:pin:salt:memoryKiB:iterations:)``; succeeds
    /// for any PIN.
    /// - Parameters:
    ///   - wrapped: the 16 wrapped bytes.
    ///   - pin: the PIN (non-empty).
    ///   - salt: the salt used at wrapping.
    ///   - memoryKiB: Argon2id memory in KiB.
    ///   - iterations: Argon2id passes.
    /// - Returns: the 16-byte key in secure memory: the right one only if the PIN was right.
    /// - Throws: as ``wrap(_:pin:salt:memoryKiB:iterations:)``, never because of a wrong PIN.
    package static func unwrap(
        _ wrapped: [UInt8], pin: Password, salt: [UInt8], memoryKiB: UInt32, iterations: UInt32
    ) throws(SecureCoreError) -> SecureBytes {
        guard wrapped.count == keyByteCount else { throw .sizeMismatch(expected: keyByteCount, actual: wrapped.count) }
        let key = try SecureBytes(count: keyByteCount)
        try withPIN(pin, and: key, salt: salt) { (pinHandle, keyHandle, saltBytes) throws(SecureCoreError) in
            try withPublicBytes(wrapped) { (input, _) throws(SecureCoreError) in
                try check(spc_knowledge_key_unwrap(pinHandle, saltBytes, memoryKiB, iterations, input, keyHandle))
            }
        }
        return key
    }

    /// Runs `body` with the handles of the PIN and the key (both locked, in
    /// the global order) and the salt's bytes. The PIN is revealed by the C
    /// side, into its own secure buffer, only for the derivation. `body`
    /// must not use `pin` or `key` themselves: their locks are held.
    private static func withPIN<R>(
        _ pin: Password, and key: SecureBytes, salt: [UInt8],
        _ body: (OpaquePointer, OpaquePointer, UnsafePointer<UInt8>) throws(SecureCoreError) -> R
    ) throws(SecureCoreError) -> R {
        guard salt.count == saltByteCount else { throw .sizeMismatch(expected: saltByteCount, actual: salt.count) }
        guard pin.length > 0 else { throw .invalidSize(0) }
        return try withHandles(pin, key) {
            (pinHandle: OpaquePointer, keyHandle: OpaquePointer) throws(SecureCoreError) -> R in
            try withPublicBytes(salt) { (saltBytes, _) throws(SecureCoreError) -> R in
                try body(pinHandle, keyHandle, saltBytes)
            }
        }
    }
}
