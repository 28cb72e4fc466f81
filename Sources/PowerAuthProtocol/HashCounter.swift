import SecureCore

/// PowerAuth's hash-based counter `CTR_DATA`: 16 bytes that move forward by
/// `CTR_DATA' = fold(SHA-256(CTR_DATA))` after every authentication code
/// computed, accepted or not. Not a key: it is exchanged at activation and
/// its hash travels in the status blob.
public struct HashCounter: Sendable, Equatable {
    /// The 16 counter bytes.
    public let bytes: [UInt8]

    /// Wraps existing counter bytes.
    /// - Parameter bytes: exactly 16 bytes.
    /// - Throws: ``ProtocolError/invalidLength(field:expected:actual:)``.
    public init(bytes: [UInt8]) throws(ProtocolError) {
        guard bytes.count == ProtocolConstants.counterByteCount else {
            throw .invalidLength(field: "counter", expected: ProtocolConstants.counterByteCount, actual: bytes.count)
        }
        self.bytes = bytes
    }

    /// Parses the counter's Base64 form.
    /// - Parameter base64: canonical Base64 of 16 bytes.
    /// - Throws: ``ProtocolError/malformedBase64(field:)``, ``ProtocolError/invalidLength(field:expected:actual:)``.
    public init(base64: String) throws(ProtocolError) {
        try self.init(bytes: try Base64.decode(base64, field: "counter", count: ProtocolConstants.counterByteCount))
    }

    /// A fresh counter from the system's cryptographic random generator.
    /// - Returns: a new counter.
    public static func random() -> HashCounter {
        var generator = SystemRandomNumberGenerator()
        return HashCounter(unchecked: (0..<ProtocolConstants.counterByteCount).map { _ in generator.next() })
    }

    private init(unchecked bytes: [UInt8]) { self.bytes = bytes }

    /// The counter's Base64 form.
    public var base64: String { Base64.encode(bytes) }

    /// The next counter value.
    /// - Returns: `fold(SHA-256(bytes))`.
    /// - Throws: ``ProtocolError/core(_:)`` if the core cannot initialise.
    public func next() throws(ProtocolError) -> HashCounter {
        HashCounter(unchecked: fold(try lift { () throws(SecureCoreError) in try SHA256.hash(bytes) }))
    }

    /// The value `steps` moves ahead.
    /// - Parameter steps: 0 or more.
    /// - Returns: the advanced counter (`self` for 0).
    /// - Throws: as ``next()``.
    public func advanced(by steps: Int) throws(ProtocolError) -> HashCounter {
        var counter = self
        for _ in 0..<max(steps, 0) { counter = try counter.next() }
        return counter
    }
}
