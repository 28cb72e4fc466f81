import SecureCore

/// PowerAuth V4's hash-based counter `CTR_DATA`: 32 bytes that move forward by
/// `CTR_DATA' = SHA3-256(CTR_DATA)` after every authentication code computed.
/// Not a key (as in V3, ``HashCounter``): the server sends it at activation.
/// Verified by upstream's `Hash_Based_Counter_Test_Vectors.json` (10 chains × 20 steps).
public struct V4HashCounter: Sendable, Equatable {
    /// The counter's size in bytes.
    public static let byteCount = 32

    /// The 32 counter bytes.
    public let bytes: [UInt8]

    /// Wraps existing counter bytes.
    /// - Parameter bytes: exactly 32 bytes.
    /// - Throws: ``ProtocolError/invalidLength(field:expected:actual:)``.
    public init(bytes: [UInt8]) throws(ProtocolError) {
        guard bytes.count == Self.byteCount else {
            throw .invalidLength(field: "ctrData", expected: Self.byteCount, actual: bytes.count)
        }
        self.bytes = bytes
    }

    /// Parses the counter's Base64 form (the `ctrData` of the activation response).
    /// - Parameter base64: canonical Base64 of 32 bytes.
    /// - Throws: ``ProtocolError/malformedBase64(field:)``, ``ProtocolError/invalidLength(field:expected:actual:)``.
    public init(base64: String) throws(ProtocolError) {
        try self.init(bytes: try Base64.decode(base64, field: "ctrData", count: Self.byteCount))
    }

    /// A fresh counter from the system's cryptographic random generator (the server's).
    /// - Returns: a new counter.
    public static func random() -> V4HashCounter {
        var generator = SystemRandomNumberGenerator()
        return V4HashCounter(unchecked: (0..<byteCount).map { _ in generator.next() })
    }

    private init(unchecked bytes: [UInt8]) { self.bytes = bytes }

    /// The counter's Base64 form.
    public var base64: String { Base64.encode(bytes) }

    /// The next counter value.
    /// - Returns: `SHA3-256(bytes)`.
    /// - Throws: ``ProtocolError/core(_:)`` if the core cannot initialise.
    public func next() throws(ProtocolError) -> V4HashCounter {
        V4HashCounter(unchecked: try lift { () throws(SecureCoreError) in try SHA3.hash256(bytes) })
    }

    /// The value `steps` moves ahead.
    /// - Parameter steps: 0 or more.
    /// - Returns: the advanced counter (`self` for 0).
    /// - Throws: as ``next()``.
    public func advanced(by steps: Int) throws(ProtocolError) -> V4HashCounter {
        var counter = self
        for _ in 0..<max(steps, 0) { counter = try counter.next() }
        return counter
    }
}
