import SecureCore

extension ActivationCrypto {
    /// Wraps the knowledge key under the PIN with a fresh random salt.
    /// - Parameters:
    ///   - key: the 16-byte knowledge key (``FactorKeys/knowledge``).
    ///   - pin: the user's PIN (non-empty).
    ///   - parameters: the Argon2id cost (default 64 MiB, 3 passes).
    /// - Returns: the storable wrapped form.
    /// - Throws: ``ProtocolError/emptyPIN``, ``ProtocolError/invalidKDFParameters(memoryKiB:iterations:)``,
    ///   ``ProtocolError/invalidLength(field:expected:actual:)``, ``ProtocolError/core(_:)``.
    public func wrapKnowledgeKey(
        _ key: SecureBytes, pin: Password, parameters: PINKeyDerivationParameters = .default
    ) throws(ProtocolError) -> WrappedKnowledgeKey {
        guard key.count == KnowledgeKeyWrap.keyByteCount else {
            throw .invalidLength(field: "knowledge key", expected: KnowledgeKeyWrap.keyByteCount, actual: key.count)
        }
        try parameters.validate()
        guard pin.length > 0 else { throw .emptyPIN }
        var generator = SystemRandomNumberGenerator()
        let salt: [UInt8] = (0..<KnowledgeKeyWrap.saltByteCount).map { _ in generator.next() }
        let wrapped = try lift { () throws(SecureCoreError) in
            try KnowledgeKeyWrap.wrap(
                key, pin: pin, salt: salt, memoryKiB: parameters.memoryKiB, iterations: parameters.iterations)
        }
        return WrappedKnowledgeKey(salt: salt, parameters: parameters, wrapped: wrapped)
    }

    /// Unwraps the knowledge key. Any PIN succeeds: a wrong one gives a wrong
    /// key, which only the server can detect.
    /// - Parameters:
    ///   - wrapped: the stored wrapped form.
    ///   - pin: the PIN as entered (non-empty).
    /// - Returns: a 16-byte key in secure memory.
    /// - Throws: ``ProtocolError/emptyPIN``, ``ProtocolError/invalidKDFParameters(memoryKiB:iterations:)``,
    ///   ``ProtocolError/invalidLength(field:expected:actual:)``, ``ProtocolError/core(_:)`` —
    ///   never because the PIN is wrong.
    public func unwrapKnowledgeKey(_ wrapped: WrappedKnowledgeKey, pin: Password) throws(ProtocolError) -> SecureBytes {
        try wrapped.validate()
        guard pin.length > 0 else { throw .emptyPIN }
        return try lift { () throws(SecureCoreError) in
            try KnowledgeKeyWrap.unwrap(
                wrapped.wrapped, pin: pin, salt: wrapped.salt, memoryKiB: wrapped.parameters.memoryKiB,
                iterations: wrapped.parameters.iterations)
        }
    }
}
