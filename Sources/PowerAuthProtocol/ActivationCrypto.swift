import SecureCore

/// The protocol cryptography of one algorithm: the entry point of this
/// module, shared by the client and the server. Every operation goes through
/// a value of this type, so the algorithm check in ``init(algorithm:)``
/// cannot be bypassed.
///
/// ```swift
/// let crypto = try ActivationCrypto(algorithm: .legacyP256)
/// let master = try crypto.masterSecret(privateKey: device.privateKey, peerPublicKey: serverPublicKey)
/// let keys = try crypto.factorKeys(masterSecret: master)
/// let code = try crypto.authenticationCode(
///     data: request.normalized(applicationSecret: appSecret), factors: .possessionKnowledge,
///     keys: keys.signingKeys, counter: counter, format: .base64)
/// counter = try counter.next()
/// ```
public struct ActivationCrypto: Sendable {
    /// The algorithm this instance implements.
    public let algorithm: ProtocolAlgorithm

    /// Selects an algorithm.
    /// - Parameter algorithm: only ``ProtocolAlgorithm/legacyP256`` is implemented.
    /// - Throws: ``ProtocolError/unsupportedAlgorithm(name:missing:)`` for the V4 algorithms.
    public init(algorithm: ProtocolAlgorithm = .legacyP256) throws(ProtocolError) {
        try algorithm.requireSupported()
        self.algorithm = algorithm
    }

    /// Selects an algorithm by its configuration name.
    /// - Parameter algorithmName: for example `"LEGACY_P256"`.
    /// - Throws: ``ProtocolError/unknownAlgorithm(_:)``, ``ProtocolError/unsupportedAlgorithm(name:missing:)``.
    public init(algorithmName: String) throws(ProtocolError) {
        try self.init(algorithm: try ProtocolAlgorithm(name: algorithmName))
    }
}
