import SecureCore

extension ActivationCrypto {
    /// The V3 activation fingerprint both sides show so the user can confirm
    /// the key exchange was not tampered with:
    /// `decimal8(SHA-256(x(device) ‖ UTF-8(activationId) ‖ x(server)))`, each
    /// x-coordinate as minimal unsigned big-endian bytes (leading zero bytes dropped).
    /// - Parameters:
    ///   - devicePublicKey: the device's SEC1 public key (validated).
    ///   - serverPublicKey: the server's SEC1 public key (validated).
    ///   - activationId: the activation identifier.
    /// - Returns: 8 decimal digits.
    /// - Throws: ``ProtocolError/invalidKey(field:)``, ``ProtocolError/core(_:)``.
    public func fingerprint(devicePublicKey: [UInt8], serverPublicKey: [UInt8], activationId: String)
        throws(ProtocolError) -> String
    {
        try lift(keyField: "devicePublicKey") { () throws(SecureCoreError) in
            try P256.validate(publicKey: devicePublicKey)
        }
        try lift(keyField: "serverPublicKey") { () throws(SecureCoreError) in
            try P256.validate(publicKey: serverPublicKey)
        }
        let message = Self.minimalX(devicePublicKey) + Array(activationId.utf8) + Self.minimalX(serverPublicKey)
        let digest = try lift { () throws(SecureCoreError) in try SHA256.hash(message) }
        return AuthenticationCodeFormat.decimalise(digest[...], digits: ProtocolConstants.decimalComponentLength)
    }

    /// The x-coordinate of a validated SEC1 key (bytes 1 ... 32 in both
    /// encodings), without leading zero bytes.
    static func minimalX(_ publicKey: [UInt8]) -> [UInt8] {
        Array(publicKey.dropFirst().prefix(32).drop { $0 == 0 })
    }
}
