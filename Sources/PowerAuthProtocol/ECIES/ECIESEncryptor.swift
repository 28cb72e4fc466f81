import Foundation
import SecureCore

/// The client side of PowerAuth's ECIES (`ClientEciesEncryptor`): encrypts a
/// request to the server's public key and returns the ``ECIESEnvelope`` that
/// decrypts its response.
///
/// Which key to give: up to 3.2 the master server public key (application
/// scope) or the activation's server public key (activation scope); for 3.3
/// the temporary key named by ``ECIESConfiguration/temporaryKeyId``.
public struct ECIESEncryptor: Sendable {
    /// The parameters of the exchange.
    public let configuration: ECIESConfiguration
    /// The server's P-256 public key (SEC1, 33 or 65 bytes).
    public let serverPublicKey: [UInt8]

    /// Creates an encryptor after validating the server's key.
    /// - Parameters:
    ///   - configuration: the exchange's parameters.
    ///   - serverPublicKey: SEC1 bytes.
    /// - Throws: ``ECIESError/invalidKey(field:)`` (`serverPublicKey`), ``ECIESError/core(_:)``.
    public init(configuration: ECIESConfiguration, serverPublicKey: [UInt8]) throws(ECIESError) {
        try eciesLift(keyField: "serverPublicKey") { () throws(SecureCoreError) in
            try P256.validate(publicKey: serverPublicKey)
        }
        self.configuration = configuration
        self.serverPublicKey = serverPublicKey
    }

    /// Encrypts one request: a fresh ephemeral key and envelope key, a fresh
    /// 16-byte nonce (3.1+), the timestamp `now` (3.2+).
    /// - Parameters:
    ///   - plaintext: the request body in secure memory, `nil` when empty.
    ///   - now: the time sent as the timestamp (3.2+).
    /// - Returns: the cryptogram to send and the envelope for the response.
    /// - Throws: ``ECIESError/core(_:)`` (memory, randomness).
    public func encryptRequest(_ plaintext: SecureBytes?, now: Date = Date()) throws(ECIESError) -> (
        cryptogram: ECIESCryptogram, envelope: ECIESEnvelope
    ) {
        let derived = try eciesLift(keyField: "serverPublicKey") { () throws(SecureCoreError) in
            try ECIESPrimitives.clientEnvelope(
                serverPublicKey: serverPublicKey,
                sharedInfo1: configuration.sharedInfo1.bytes(for: configuration.version))
        }
        let nonce: [UInt8]? =
            configuration.version.eciesUsesNonce
            ? try eciesLift(keyField: "nonce") { () throws(SecureCoreError) in
                try SecureRandom.bytes(count: ECIESPrimitives.nonceByteCount)
            } : nil
        let envelope = ECIESEnvelope(
            key: derived.key, configuration: configuration, ephemeralPublicKey: derived.ephemeralPublicKey,
            requestNonce: nonce)
        let cryptogram = try configuration.sealRequest(
            plaintext, key: derived.key, ephemeralPublicKey: derived.ephemeralPublicKey, nonce: nonce,
            timestamp: Self.milliseconds(now))
        return (cryptogram, envelope)
    }

    /// Milliseconds since 1970 (what upstream's `System.currentTimeMillis()` sends).
    static func milliseconds(_ date: Date) -> UInt64 {
        UInt64(max(0, (date.timeIntervalSince1970 * 1000).rounded(.down)))
    }
}
