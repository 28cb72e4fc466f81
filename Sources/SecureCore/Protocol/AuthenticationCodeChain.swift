internal import CProtocolCrypto
internal import CSecureCore

/// The PowerAuth V3 authentication-code key chain over 1–3 factor keys. The
/// chained intermediate keys exist only inside the C core (wiped stack
/// locals); what comes back is the public code material.
package enum AuthenticationCodeChain {
    /// Most factor keys in one code.
    package static let maximumFactors = Int(SPC_AUTHCODE_MAX_FACTORS)
    /// Size of one factor key.
    package static let keyByteCount = Int(SPC_FACTOR_KEY_BYTES)
    /// Size of the hash-based counter.
    package static let counterByteCount = Int(SPC_COUNTER_BYTES)

    /// One 32-byte HMAC component per key, in the order of `keys`.
    /// - Parameters:
    ///   - keys: 1–3 keys of 16 bytes (possession, knowledge, biometry order).
    ///   - counter: the 16-byte `CTR_DATA`.
    ///   - data: the normalised request data.
    /// - Returns: `32 × keys.count` bytes.
    /// - Throws: ``SecureCoreError/invalidSize(_:)`` (key count),
    ///   ``SecureCoreError/sizeMismatch(expected:actual:)`` (key or counter size),
    ///   ``SecureCoreError/destroyed``, memory errors.
    package static func components(keys: [SecureBytes], counter: [UInt8], data: [UInt8]) throws(SecureCoreError)
        -> [UInt8]
    {
        guard (1...maximumFactors).contains(keys.count) else { throw .invalidSize(keys.count) }
        for key in keys { try key.require(count: keyByteCount) }
        guard counter.count == counterByteCount else {
            throw .sizeMismatch(expected: counterByteCount, actual: counter.count)
        }
        return try withHandles(keys) { (handles) throws(SecureCoreError) -> [UInt8] in
            let pointers: [OpaquePointer?] = handles
            return try withPublicBytes(counter) { (ctr, _) throws(SecureCoreError) -> [UInt8] in
                try withPublicBytes(data) { (msg, len) throws(SecureCoreError) -> [UInt8] in
                    let total = HMACSHA256.byteCount * keys.count
                    return try makePublicBytes(count: total) { (out) throws(SecureCoreError) in
                        let status = pointers.withUnsafeBufferPointer { list -> spc_status in
                            guard let base = list.baseAddress else { return SPC_E_ARGUMENT }
                            return spc_authcode_compute(base, keys.count, ctr, msg, len, out, total)
                        }
                        try check(status)
                    }
                }
            }
        }
    }
}
