extension SecureBytes {
    /// The two halves XORed into new secure memory (32 → 16 bytes): how
    /// PowerAuth turns the ECDH x-coordinate into the master secret.
    /// - Returns: a buffer of half the size.
    /// - Throws: ``SecureCoreError/invalidSize(_:)`` for an odd or zero size,
    ///   ``SecureCoreError/destroyed``, memory errors.
    package func folded() throws(SecureCoreError) -> SecureBytes {
        guard count >= 2, count % 2 == 0 else { throw .invalidSize(count) }
        let half = count / 2
        let result = try SecureBytes(count: half)
        // `result` is new and nobody else's yet: opening it inside `self`'s
        // open cannot take part in a lock-order cycle.
        try withOpenPointer { (source) throws(SecureCoreError) in
            try result.withOpenPointer { (target) throws(SecureCoreError) in
                for i in 0..<half { target[i] = source[i] ^ source[i + half] }
            }
        }
        return result
    }
}
