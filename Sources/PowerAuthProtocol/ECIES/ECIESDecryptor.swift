import SecureCore

/// The server side of PowerAuth's ECIES (`ServerEciesEncryptor`): decrypts a
/// request with the private key whose public key the client used, and
/// returns the ``ECIESEnvelope`` that encrypts the response.
///
/// It checks the request's fields against the version first (as upstream's
/// `EciesRequestResponseValidator`), then derives the envelope key from the
/// ephemeral key exactly as received, then verifies the MAC before any
/// decryption. Timestamp windows and replay tracking of ephemeral key and
/// nonce are the server's policy, not this type's.
public struct ECIESDecryptor: Sendable {
    /// The parameters of the exchange.
    public let configuration: ECIESConfiguration
    private let privateKey: SecureBytes

    /// Creates a decryptor.
    /// - Parameters:
    ///   - configuration: the exchange's parameters; for 3.3 its
    ///     ``ECIESConfiguration/temporaryKeyId`` must be the one the request names.
    ///   - privateKey: the P-256 scalar (32 bytes, or 33 with a leading zero), in secure memory.
    public init(configuration: ECIESConfiguration, privateKey: SecureBytes) {
        self.configuration = configuration
        self.privateKey = privateKey
    }

    /// Verifies and decrypts one request.
    /// - Parameter request: the received cryptogram.
    /// - Returns: the plaintext in secure memory (`nil` when empty) and the
    ///   envelope for the response.
    /// - Throws: ``ECIESError/malformedCryptogram(field:)``,
    ///   ``ECIESError/temporaryKeyMismatch``, ``ECIESError/invalidKey(field:)``
    ///   (`ephemeralPublicKey` or `privateKey`), ``ECIESError/authenticationFailed``,
    ///   ``ECIESError/core(_:)``.
    public func decryptRequest(_ request: ECIESCryptogram) throws(ECIESError) -> (
        plaintext: SecureBytes?, envelope: ECIESEnvelope
    ) {
        try configuration.validateRequest(request)
        let ephemeral = request.ephemeralPublicKey ?? []
        let key = try eciesLift(keyField: "ephemeralPublicKey") { () throws(SecureCoreError) in
            try P256.validate(publicKey: ephemeral)
            return try ECIESPrimitives.serverEnvelope(
                privateKey: privateKey, ephemeralPublicKey: ephemeral,
                sharedInfo1: configuration.sharedInfo1.bytes(for: configuration.version))
        }
        let envelope = ECIESEnvelope(
            key: key, configuration: configuration, ephemeralPublicKey: ephemeral, requestNonce: request.nonce)
        let plaintext = try configuration.openRequest(request, key: key)
        return (plaintext, envelope)
    }
}
