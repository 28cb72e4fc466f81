import Foundation
import SecureCore
import Synchronization

/// The key of one request/response pair (`EciesEnvelopeKey`): 48 bytes in
/// secure memory (`KEY_ENC ‖ KEY_MAC ‖ KEY_IV`), with what the response
/// needs from its request (the ephemeral key, the request nonce).
///
/// The client gets it from ``ECIESEncryptor/encryptRequest(_:now:)`` and
/// decrypts the response with it; the server gets it from
/// ``ECIESDecryptor/decryptRequest(_:)`` and encrypts the response with it.
/// It serves exactly one response, after which the key is wiped; a later
/// use throws ``ECIESError/envelopeUsed``. The description is redacted.
public final class ECIESEnvelope: Sendable {
    /// The parameters of the exchange.
    public let configuration: ECIESConfiguration
    /// The client's ephemeral public key, as sent.
    public let ephemeralPublicKey: [UInt8]
    /// The request's nonce (3.1+), public.
    let requestNonce: [UInt8]?
    /// The envelope key (package-visible for the vector tests; wiped once used).
    package let key: SecureBytes
    private let used = Mutex(false)

    /// Wraps an envelope key (the tests give upstream's vectors' keys here).
    /// - Parameters:
    ///   - key: the 48-byte envelope key; the envelope owns and destroys it.
    ///   - configuration: the exchange's parameters.
    ///   - ephemeralPublicKey: the request's ephemeral key.
    ///   - requestNonce: the request's nonce.
    package init(
        key: SecureBytes, configuration: ECIESConfiguration, ephemeralPublicKey: [UInt8], requestNonce: [UInt8]?
    ) {
        self.key = key
        self.configuration = configuration
        self.ephemeralPublicKey = ephemeralPublicKey
        self.requestNonce = requestNonce
    }

    /// Whether the envelope has served its response.
    public var isUsed: Bool { used.withLock { $0 } }

    /// Decrypts the server's response (the client side). A response that
    /// fails to verify leaves the envelope usable; a verified one uses it up.
    /// - Parameter response: the received cryptogram.
    /// - Returns: the plaintext in secure memory, `nil` when empty.
    /// - Throws: ``ECIESError/authenticationFailed``,
    ///   ``ECIESError/malformedCryptogram(field:)`` (fields against the
    ///   version; a 3.2+ nonce equal to the request's), ``ECIESError/envelopeUsed``,
    ///   ``ECIESError/core(_:)``.
    public func decryptResponse(_ response: ECIESCryptogram) throws(ECIESError) -> SecureBytes? {
        guard !isUsed else { throw .envelopeUsed }
        let plaintext = try configuration.openResponse(response, key: key, requestNonce: requestNonce)
        do throws(ECIESError) {
            try claim()
        } catch {
            plaintext?.destroy()
            throw error
        }
        key.destroy()
        return plaintext
    }

    /// Encrypts the response (the server side): 3.0 under the zero IV, 3.1
    /// under the request's nonce, 3.2+ under a fresh nonce that differs from
    /// the request's, with the timestamp `now`.
    /// - Parameters:
    ///   - plaintext: the response body, `nil` when empty.
    ///   - now: the time sent as the timestamp (3.2+).
    /// - Returns: the response cryptogram.
    /// - Throws: ``ECIESError/envelopeUsed``, ``ECIESError/core(_:)``.
    public func encryptResponse(_ plaintext: SecureBytes?, now: Date = Date()) throws(ECIESError) -> ECIESCryptogram {
        var nonce: [UInt8]? = nil
        if configuration.version.eciesUsesTimestamp {
            // As upstream (`ServerEciesEncryptor.getResponseNonce`): redraw the
            // 2^-128 chance of the request's nonce, a bounded number of times.
            for _ in 0..<8 where nonce == nil || nonce == requestNonce {
                nonce = try eciesLift(keyField: "nonce") { () throws(SecureCoreError) in
                    try SecureRandom.bytes(count: ECIESPrimitives.nonceByteCount)
                }
            }
        }
        return try encryptResponse(plaintext, nonce: nonce, timestamp: ECIESEncryptor.milliseconds(now))
    }

    /// ``encryptResponse(_:now:)`` with a given nonce and timestamp (for vectors).
    /// - Parameters:
    ///   - plaintext: the response body.
    ///   - nonce: the response nonce (3.2+).
    ///   - timestamp: milliseconds (3.2+).
    /// - Returns: the response cryptogram.
    /// - Throws: as ``encryptResponse(_:now:)``.
    package func encryptResponse(_ plaintext: SecureBytes?, nonce: [UInt8]?, timestamp: UInt64) throws(ECIESError)
        -> ECIESCryptogram
    {
        try claim()
        defer { key.destroy() }
        return try configuration.sealResponse(
            plaintext, key: key, requestNonce: requestNonce, responseNonce: nonce, timestamp: timestamp)
    }

    /// Marks the envelope used; only the first call succeeds.
    private func claim() throws(ECIESError) {
        let first = used.withLock { (used) -> Bool in
            defer { used = true }
            return !used
        }
        guard first else { throw .envelopeUsed }
    }

    deinit { key.destroy() }
}

// MARK: - CustomStringConvertible

extension ECIESEnvelope: CustomStringConvertible {
    /// The configuration and whether the envelope is used; never the key.
    public var description: String { "ECIESEnvelope(\(configuration), key redacted, used: \(isUsed))" }
}
