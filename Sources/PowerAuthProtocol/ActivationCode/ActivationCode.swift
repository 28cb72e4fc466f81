import SecureCore

/// A PowerAuth V3 activation code, `XXXXX-XXXXX-XXXXX-XXXXX`: the RFC 4648 Base32 text
/// of 10 random bytes followed by their CRC-16/ARC, big-endian, split into four groups
/// of five (powerauth-crypto `docs/Activation-Code.md`). The QR form appends
/// `#` and the Base64 of an ECDSA-SHA256 (DER) signature of the code's UTF-8 text by the
/// master server private key; the client verifies it when present (mobile SDK
/// `src/PowerAuth/OtpUtil.cpp`, `protocol/ProtocolUtils.cpp`
/// `ValidateActivationCodeSignature`). Nothing here is secret: the code is an
/// identifier, the signature public.
public struct ActivationCode: Sendable, Equatable, CustomStringConvertible {
    /// Random bytes in a code.
    public static let randomByteCount = 10
    /// Characters in a code, dashes included.
    public static let textLength = 23
    /// Longest accepted QR text: the code, `#`, and the Base64 of a 104-byte DER signature (the
    /// longest P-384 one; P-256 ones have at most 72 bytes).
    public static let maximumQRTextLength = textLength + 1 + 140

    /// The code, `XXXXX-XXXXX-XXXXX-XXXXX`.
    public let code: String
    /// The master key's DER signature of ``code``, when the code came in its QR form.
    public let signature: [UInt8]?

    /// Parses a code or its QR form `CODE#SIGNATURE` and checks its checksum. Total:
    /// any text gives a code or a typed error. The signature is not verified here
    /// (see ``verifySignature(masterServerPublicKey:)``).
    /// - Parameter text: the typed or scanned text.
    /// - Throws: ``ProtocolError/invalidActivationCode(_:)``.
    public init(parsing text: String) throws(ProtocolError) {
        guard text.utf8.count <= Self.maximumQRTextLength else { throw .invalidActivationCode(.malformed) }
        let parts = text.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        let code = String(parts[0])
        try Self.validate(code)
        if parts.count == 2 {
            guard let signature = Base64.decode(parts[1]), !signature.isEmpty else {
                throw .invalidActivationCode(.malformedSignature)
            }
            self.signature = signature
        } else {
            self.signature = nil
        }
        self.code = code
    }

    /// Builds the code of 10 given bytes (the generator, and tests).
    /// - Parameters:
    ///   - randomBytes: exactly ``randomByteCount`` bytes.
    ///   - signature: an optional DER signature of the resulting code.
    /// - Throws: ``ProtocolError/invalidLength(field:expected:actual:)``.
    public init(randomBytes: [UInt8], signature: [UInt8]? = nil) throws(ProtocolError) {
        guard randomBytes.count == Self.randomByteCount else {
            throw .invalidLength(field: "randomBytes", expected: Self.randomByteCount, actual: randomBytes.count)
        }
        let crc = CRC16ARC.checksum(randomBytes)
        let text = Array(Base32.encode(randomBytes + [UInt8(crc >> 8), UInt8(crc & 0xFF)]).utf8)
        let groups = stride(from: 0, to: text.count, by: 5).map { String(decoding: text[$0..<($0 + 5)], as: UTF8.self) }
        self.code = groups.joined(separator: "-")
        self.signature = signature
    }

    /// A fresh code from the operating system's randomness, without a signature.
    /// - Returns: the code.
    /// - Throws: ``ProtocolError/core(_:)``.
    public static func generate() throws(ProtocolError) -> ActivationCode {
        let bytes = try lift { () throws(SecureCoreError) in try SecureRandom.bytes(count: randomByteCount) }
        return try ActivationCode(randomBytes: bytes)
    }

    /// Checks a code (without `#SIGNATURE`): shape, alphabet, canonical Base32, checksum,
    /// in the order of `docs/Activation-Code.md` "Code Validation".
    /// - Parameter code: the 23-character text.
    /// - Throws: ``ProtocolError/invalidActivationCode(_:)``.
    public static func validate(_ code: some StringProtocol) throws(ProtocolError) {
        let text = Array(code.utf8)
        guard text.count == textLength else { throw .invalidActivationCode(.malformed) }
        var values: [UInt8] = []
        for (index, character) in text.enumerated() {
            if index % 6 == 5 {
                guard character == UInt8(ascii: "-") else { throw .invalidActivationCode(.malformed) }
            } else {
                guard let value = Base32.value(character) else { throw .invalidActivationCode(.invalidCharacter) }
                values.append(value)
            }
        }
        guard let bytes = Base32.decode(values: values) else { throw .invalidActivationCode(.nonCanonical) }
        let crc = CRC16ARC.checksum(bytes.prefix(randomByteCount))
        guard bytes.count == randomByteCount + 2, UInt16(bytes[10]) << 8 | UInt16(bytes[11]) == crc else {
            throw .invalidActivationCode(.checksumMismatch)
        }
    }

    /// This code signed by the master server private key, as a PowerAuth server signs
    /// it for the QR code: ECDSA-SHA256 over the UTF-8 text of ``code``, DER.
    /// - Parameter masterPrivateKey: the master server private key.
    /// - Returns: the code with its signature.
    /// - Throws: ``ProtocolError/invalidKey(field:)``, ``ProtocolError/core(_:)``.
    public func signed(masterPrivateKey: SecureBytes) throws(ProtocolError) -> ActivationCode {
        let signature = try lift(keyField: "masterPrivateKey") { () throws(SecureCoreError) in
            try P256.sign(Array(code.utf8), privateKey: masterPrivateKey)
        }
        return try ActivationCode(validated: code, signature: signature)
    }

    /// Verifies the signature, if there is one; a code without one passes, as upstream
    /// (the SDK accepts a typed code, which carries no signature).
    /// - Parameter masterServerPublicKey: the configuration's master public key.
    /// - Throws: ``ProtocolError/invalidActivationCode(_:)`` with
    ///   ``ActivationCodeError/signatureMismatch``; ``ProtocolError/invalidKey(field:)``.
    public func verifySignature(masterServerPublicKey: [UInt8]) throws(ProtocolError) {
        guard let signature else { return }
        let valid = try lift(keyField: "masterServerPublicKey") { () throws(SecureCoreError) in
            try P256.verify(signature: signature, message: Array(code.utf8), publicKey: masterServerPublicKey)
        }
        guard valid else { throw .invalidActivationCode(.signatureMismatch) }
    }

    /// This code signed by the V4 P-384 master key (configuration key `0x02`), as upstream's
    /// protocol V4 signs it: ECDSA-SHA384 over the UTF-8 text of ``code``, DER. (Upstream's hybrid
    /// suites add an ML-DSA signature whose encoding in the QR form is not published; none is added.)
    /// - Parameter masterKeyPair: the P-384 master key pair.
    /// - Returns: the code with its signature.
    /// - Throws: ``ProtocolError/core(_:)``.
    public func signedV4(masterKeyPair: ECP384KeyPair) throws(ProtocolError) -> ActivationCode {
        let raw = try masterKeyPair.sign(Array(code.utf8))
        guard let der = ECDSASignatureFormat.der(fromJOSE: raw, componentByteCount: 48) else {
            throw .core(.internalFailure(status: -1))
        }
        return try ActivationCode(validated: code, signature: der)
    }

    /// Verifies a V4 signature (``signedV4(masterKeyPair:)``), if there is one; a code without one
    /// passes, as upstream.
    /// - Parameter masterPublicKey: the configuration's P-384 master key (key `0x02`).
    /// - Throws: ``ProtocolError/invalidActivationCode(_:)`` with
    ///   ``ActivationCodeError/signatureMismatch``; ``ProtocolError/invalidKey(field:)``.
    public func verifyV4Signature(masterPublicKey: [UInt8]) throws(ProtocolError) {
        guard let signature else { return }
        guard let raw = ECDSASignatureFormat.jose(fromDER: signature, componentByteCount: 48),
            try ECP384KeyPair.verify(signature: raw, message: Array(code.utf8), publicKey: masterPublicKey)
        else { throw .invalidActivationCode(.signatureMismatch) }
    }

    /// The QR text: ``code``, then `#` and the Base64 signature when there is one.
    public var qrText: String { signature.map { code + "#" + Base64.encode($0) } ?? code }

    /// Same as ``qrText``.
    public var description: String { qrText }

    private init(validated code: String, signature: [UInt8]?) throws(ProtocolError) {
        try Self.validate(code)
        self.code = code
        self.signature = signature
    }
}
