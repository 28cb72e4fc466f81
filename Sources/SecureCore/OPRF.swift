internal import CSecureCore

/// The oblivious pseudorandom function of RFC 9497 in its OPRF mode
/// (`modeOPRF = 0x00`), suite ristretto255-SHA512, over the audited C core.
///
/// A client holding a secret input (a value derived from a PIN) and a server
/// holding a key compute `output = F(key, input)` together: the client learns
/// the output and nothing about the key, the server learns nothing about the
/// input or the output. The client's input, its blind, the server's key and
/// the output stay in ``SecureBytes``; the blinded and evaluated elements are
/// public by design (they cross the network and are uniformly distributed).
///
/// ```swift
/// let blind = try OPRF.randomBlind()
/// let blinded = try OPRF.blind(input, with: blind)          // client → server
/// let evaluated = try OPRF.blindEvaluate(blinded, key: key) // server → client
/// let output = try OPRF.finalize(input, blind: blind, evaluated: evaluated)
/// ```
public enum OPRF {
    /// Size of a serialized group element (blinded and evaluated elements).
    public static let elementByteCount = Int(SPC_OPRF_ELEMENT_BYTES)
    /// Size of a serialized scalar (the server's key, a blind).
    public static let scalarByteCount = Int(SPC_OPRF_SCALAR_BYTES)
    /// Size of Finalize's output.
    public static let outputByteCount = Int(SPC_OPRF_OUTPUT_BYTES)

    /// DeriveKeyPair (RFC 9497 §3.2.1): the server's private key from a secret seed.
    /// - Parameters:
    ///   - seed: 32 secret bytes.
    ///   - info: public domain-separation bytes (at most 65,535), e.g. a vault identifier.
    /// - Returns: the 32-byte private key, in secure memory.
    /// - Throws: ``SecureCoreError/invalidSize(_:)`` (seed not 32 bytes, info too long),
    ///   ``SecureCoreError/destroyed``, memory errors.
    public static func deriveKey(seed: SecureBytes, info: [UInt8]) throws(SecureCoreError) -> SecureBytes {
        try seed.require(count: 32)
        let key = try SecureBytes(count: scalarByteCount)
        try withHandles(seed, key) { (seedHandle: OpaquePointer, keyHandle: OpaquePointer) throws(SecureCoreError) in
            try withPublicBytes(info) { (bytes, count) throws(SecureCoreError) in
                try check(spc_oprf_derive_key(seedHandle, bytes, count, keyHandle), length: count)
            }
        }
        return key
    }

    /// A fresh uniformly random nonzero blind.
    /// - Returns: 32 bytes in secure memory; use it for one evaluation only.
    /// - Throws: memory errors, ``SecureCoreError/initializationFailed``.
    public static func randomBlind() throws(SecureCoreError) -> SecureBytes {
        let blind = try SecureBytes(count: scalarByteCount)
        try blind.withHandle { (handle) throws(SecureCoreError) in try check(spc_oprf_random_scalar(handle)) }
        return blind
    }

    /// Blind (RFC 9497 §3.3.1): `blind · HashToGroup(input)`.
    /// - Parameters:
    ///   - input: the secret input, 1 to 65,535 bytes.
    ///   - blind: a blind from ``randomBlind()`` (or a test vector's).
    /// - Returns: the blinded element (public: it reveals nothing about the input).
    /// - Throws: ``SecureCoreError/invalidSize(_:)``, ``SecureCoreError/destroyed``, memory errors.
    public static func blind(_ input: SecureBytes, with blind: SecureBytes) throws(SecureCoreError) -> [UInt8] {
        try blind.require(count: scalarByteCount)
        return try withHandles(input, blind) {
            (inputHandle: OpaquePointer, blindHandle: OpaquePointer) throws(SecureCoreError) -> [UInt8] in
            try makePublicBytes(count: elementByteCount) { (out) throws(SecureCoreError) in
                try check(spc_oprf_blind(inputHandle, blindHandle, out), length: input.count)
            }
        }
    }

    /// BlindEvaluate (RFC 9497 §3.3.1), on the server: `key · blinded`.
    /// - Parameters:
    ///   - blinded: the client's blinded element (untrusted input).
    ///   - key: the server's private key from ``deriveKey(seed:info:)``.
    /// - Returns: the evaluated element.
    /// - Throws: ``SecureCoreError/invalidKey`` for an element that is not a
    ///   canonical encoding of a non-identity point (or of the wrong size),
    ///   ``SecureCoreError/destroyed``, memory errors.
    public static func blindEvaluate(_ blinded: [UInt8], key: SecureBytes) throws(SecureCoreError) -> [UInt8] {
        guard blinded.count == elementByteCount else { throw .invalidKey }
        try key.require(count: scalarByteCount)
        return try key.withHandle { (keyHandle) throws(SecureCoreError) -> [UInt8] in
            try withPublicBytes(blinded) { (element, _) throws(SecureCoreError) -> [UInt8] in
                try makePublicBytes(count: elementByteCount) { (out) throws(SecureCoreError) in
                    try check(spc_oprf_blind_evaluate(keyHandle, element, out), argument: .invalidKey)
                }
            }
        }
    }

    /// Finalize (RFC 9497 §3.3.1): unblinds the server's answer and hashes it with the input.
    /// - Parameters:
    ///   - input: the same secret input as given to ``blind(_:with:)``.
    ///   - blind: the same blind.
    ///   - evaluated: the server's evaluated element (untrusted input).
    /// - Returns: the 64-byte output, in secure memory.
    /// - Throws: ``SecureCoreError/invalidKey`` for an invalid element,
    ///   ``SecureCoreError/destroyed``, memory errors.
    public static func finalize(
        _ input: SecureBytes, blind: SecureBytes, evaluated: [UInt8]
    ) throws(SecureCoreError) -> SecureBytes {
        guard evaluated.count == elementByteCount else { throw .invalidKey }
        try blind.require(count: scalarByteCount)
        let output = try SecureBytes(count: outputByteCount)
        try withHandles([input, blind, output]) { (handles) throws(SecureCoreError) in
            try withPublicBytes(evaluated) { (element, _) throws(SecureCoreError) in
                try check(spc_oprf_finalize(handles[0], handles[1], element, handles[2]), argument: .invalidKey)
            }
        }
        return output
    }
}
