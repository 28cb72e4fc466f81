import SecureCore

/// Argon2id cost of the PIN-derived wrapping key (p is fixed to 1).
public struct PINKeyDerivationParameters: Sendable, Equatable, Codable {
    /// Memory in KiB (8 ... 1,048,576).
    public var memoryKiB: UInt32
    /// Passes over the memory (1 ... 32).
    public var iterations: UInt32

    /// Sets both costs (validated when used).
    /// - Parameters:
    ///   - memoryKiB: memory in KiB.
    ///   - iterations: passes.
    public init(memoryKiB: UInt32, iterations: UInt32) {
        self.memoryKiB = memoryKiB
        self.iterations = iterations
    }

    /// 64 MiB, 3 passes (RFC 9106's second recommendation with p = 1;
    /// libsodium's MODERATE time cost at its INTERACTIVE memory).
    public static let `default` = PINKeyDerivationParameters(memoryKiB: 65_536, iterations: 3)

    /// 64 KiB, 1 pass: for tests only, it gives an offline guesser no work.
    public static let testing = PINKeyDerivationParameters(memoryKiB: 64, iterations: 1)

    /// Checks the bounds.
    /// - Throws: ``ProtocolError/invalidKDFParameters(memoryKiB:iterations:)``.
    package func validate() throws(ProtocolError) {
        guard KnowledgeKeyWrap.memoryKiBRange.contains(memoryKiB), KnowledgeKeyWrap.iterationsRange.contains(iterations)
        else { throw .invalidKDFParameters(memoryKiB: memoryKiB, iterations: iterations) }
    }
}

/// The knowledge key wrapped under the PIN: what a client stores. Nothing in
/// it is secret by itself and nothing in it can confirm a PIN guess: it is
/// `AES-128(Argon2id(PIN, salt), knowledgeKey)` with no MAC or check value,
/// so every PIN unwraps to some key and only the server, verifying a code
/// made with that key, can tell a wrong one (and count it).
public struct WrappedKnowledgeKey: Sendable, Equatable, Codable {
    /// The 16-byte random salt, new at every wrap.
    public let salt: [UInt8]
    /// The Argon2id cost used.
    public let parameters: PINKeyDerivationParameters
    /// The 16 wrapped key bytes.
    public let wrapped: [UInt8]

    /// Reassembles a stored value (validated when unwrapped).
    /// - Parameters:
    ///   - salt: 16 bytes.
    ///   - parameters: the Argon2id cost.
    ///   - wrapped: 16 bytes.
    public init(salt: [UInt8], parameters: PINKeyDerivationParameters, wrapped: [UInt8]) {
        self.salt = salt
        self.parameters = parameters
        self.wrapped = wrapped
    }

    /// Checks sizes and parameters before any work is done.
    package func validate() throws(ProtocolError) {
        guard salt.count == KnowledgeKeyWrap.saltByteCount else {
            throw .invalidLength(field: "salt", expected: KnowledgeKeyWrap.saltByteCount, actual: salt.count)
        }
        guard wrapped.count == KnowledgeKeyWrap.keyByteCount else {
            throw .invalidLength(field: "wrapped", expected: KnowledgeKeyWrap.keyByteCount, actual: wrapped.count)
        }
        try parameters.validate()
    }
}
