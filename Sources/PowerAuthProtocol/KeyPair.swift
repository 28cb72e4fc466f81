import SecureCore

/// A P-256 key pair (device or server). The private scalar lives in secure
/// memory; the description shows the public key only.
public struct KeyPair: Sendable {
    /// The 32-byte private scalar, big-endian, in secure memory.
    public let privateKey: SecureBytes
    /// The 65-byte SEC1 uncompressed public key.
    public let publicKey: [UInt8]

    /// Pairs a private key with its public key (for example both loaded from storage).
    /// - Parameters:
    ///   - privateKey: 32 bytes, or 33 with a leading zero byte.
    ///   - publicKey: SEC1 bytes (65 uncompressed or 33 compressed).
    public init(privateKey: SecureBytes, publicKey: [UInt8]) {
        self.privateKey = privateKey
        self.publicKey = publicKey
    }
}

extension KeyPair: CustomStringConvertible, CustomDebugStringConvertible {
    /// `KeyPair(public: <Base64>, private: redacted)`.
    public var description: String { "KeyPair(public: \(Base64.encode(publicKey)), private: redacted)" }
    /// Same as ``description``.
    public var debugDescription: String { description }
}
