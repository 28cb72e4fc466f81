import SecureCore

/// The client's half of a V4 shared-secret exchange (`sharedSecretRequest`), as JSON:
/// `{"algorithm": "EC_P384", "encapsulationKeys": [Base64 of the 97-byte P-384 key]}`.
public struct V4SharedSecretRequest: Codable, Equatable, Sendable {
    /// The suite name (`EC_P384`).
    public let algorithm: String
    /// One encapsulation key per KEM of the suite, Base64.
    public let encapsulationKeys: [String]

    /// Wraps the fields.
    /// - Parameters:
    ///   - algorithm: the suite name.
    ///   - encapsulationKeys: Base64 encapsulation keys, in suite order.
    public init(algorithm: String, encapsulationKeys: [String]) {
        self.algorithm = algorithm
        self.encapsulationKeys = encapsulationKeys
    }
}

/// The server's half (`sharedSecretResponse`):
/// `{"salt": Base64 of 32 bytes, "encapsulatedKeys": [Base64 of the 97-byte DHKEM enc]}`.
public struct V4SharedSecretResponse: Codable, Equatable, Sendable {
    /// The random 32-byte salt, Base64.
    public let salt: String
    /// One encapsulated key (ciphertext) per KEM of the suite, Base64.
    public let encapsulatedKeys: [String]

    /// Wraps the fields.
    /// - Parameters:
    ///   - salt: Base64 of the 32-byte salt.
    ///   - encapsulatedKeys: Base64 encapsulated keys, in suite order.
    public init(salt: String, encapsulatedKeys: [String]) {
        self.salt = salt
        self.encapsulatedKeys = encapsulatedKeys
    }
}

/// What the client keeps between sending a ``V4SharedSecretRequest`` and reading the answer:
/// its ephemeral DHKEM key pair (private scalar in secure memory).
public struct V4SharedSecretClientContext: Sendable {
    /// The suite.
    public let algorithm: ProtocolAlgorithm
    /// The client's ephemeral P-384 key pair (the DHKEM recipient).
    public let keyPair: ECP384KeyPair
}

/// The final V4 shared-secret derivation (`powerauth-v4.md` §2) for `EC_P384`:
///
/// ```
/// ss     = DHKEM(P-384, HKDF-SHA384) secret, as an HPKE export (48 bytes, see DHKEMP384)
/// info   = LV("shared-secret/EC_P384") ‖ LV("4.0")
/// X      = u32be(1) ‖ LV(ss) ‖ info
/// SECRET = KMAC256(key = salt (32 bytes), data = X, L = 32, S = "KDF")
/// ```
///
/// The result becomes `KEY_ACTIVATION_SECRET` (activation), `KEY_TEMPORARY_SHARED_SECRET`
/// (temporary key) or a new factor key. **Specification only**: no upstream vector covers this
/// derivation (the `ECDHE_P384_Test_Vectors.json` file encodes an earlier design); the tests
/// assert the byte layout of `X`, agreement of both sides and every refusal.
public enum V4SharedSecret {
    /// The salt size.
    public static let saltByteCount = 32
    /// The size of the derived secret.
    public static let secretByteCount = 32
    /// The protocol version inside `info`.
    public static let version = "4.0"

    /// The KEM-combiner input `X` for one suite, built in secure memory.
    /// - Parameters:
    ///   - kemSecrets: the per-KEM secrets in suite order.
    ///   - algorithm: the suite (its upper-case name enters `info`).
    /// - Returns: `u32be(1) ‖ LV(ss_1) ‖ … ‖ LV("shared-secret/" + name) ‖ LV("4.0")`, in secure memory.
    /// - Throws: ``ProtocolError/core(_:)``.
    public static func combinerInput(kemSecrets: [SecureBytes], algorithm: ProtocolAlgorithm) throws(ProtocolError)
        -> SecureBytes
    {
        let info = lv(Array("shared-secret/\(algorithm.rawValue)".utf8)) + lv(Array(version.utf8))
        let total = 4 + kemSecrets.reduce(0) { $0 + 4 + $1.count } + info.count
        return try lift { () throws(SecureCoreError) -> SecureBytes in
            let x = try SecureBytes(count: total)
            x.withUnsafeMutableBytes { out in
                var at = 0
                func put(_ bytes: UnsafeRawBufferPointer) {
                    UnsafeMutableRawBufferPointer(rebasing: out[at..<(at + bytes.count)]).copyMemory(from: bytes)
                    at += bytes.count
                }
                u32be(1).withUnsafeBytes { put($0) }
                for secret in kemSecrets {
                    u32be(secret.count).withUnsafeBytes { put($0) }
                    secret.withUnsafeBytes { put($0) }
                }
                info.withUnsafeBytes { put($0) }
            }
            return x
        }
    }

    /// `SECRET = KMAC256(salt, X, 32, "KDF")`.
    /// - Parameters:
    ///   - kemSecrets: the per-KEM secrets in suite order.
    ///   - salt: exactly 32 bytes.
    ///   - algorithm: the suite.
    /// - Returns: the 32-byte secret, in secure memory.
    /// - Throws: ``ProtocolError/invalidLength(field:expected:actual:)`` (salt), ``ProtocolError/core(_:)``.
    public static func combine(kemSecrets: [SecureBytes], salt: [UInt8], algorithm: ProtocolAlgorithm)
        throws(ProtocolError) -> SecureBytes
    {
        guard salt.count == saltByteCount else {
            throw .invalidLength(field: "salt", expected: saltByteCount, actual: salt.count)
        }
        let x = try combinerInput(kemSecrets: kemSecrets, algorithm: algorithm)
        defer { x.destroy() }
        return try lift { () throws(SecureCoreError) -> SecureBytes in
            let key = try SecureBytes(count: salt.count)
            defer { key.destroy() }
            key.withUnsafeMutableBytes { $0.copyBytes(from: salt) }
            return try KMAC256.deriveSecret(
                key, prefix: [], data: x, customization: Array("KDF".utf8), count: secretByteCount)
        }
    }

    /// The client starts an exchange: a fresh ephemeral key pair and the request that carries
    /// its public key.
    /// - Parameter algorithm: the suite; only ``ProtocolAlgorithm/ecP384`` is implemented.
    /// - Returns: the context to keep and the request to send.
    /// - Throws: ``ProtocolError/unsupportedAlgorithm(name:missing:)``, ``ProtocolError/core(_:)``.
    public static func makeRequest(algorithm: ProtocolAlgorithm) throws(ProtocolError) -> (
        context: V4SharedSecretClientContext, request: V4SharedSecretRequest
    ) {
        try requireV4(algorithm)
        let pair = try ECP384KeyPair.generate()
        return (
            V4SharedSecretClientContext(algorithm: algorithm, keyPair: pair),
            V4SharedSecretRequest(algorithm: algorithm.rawValue, encapsulationKeys: [Base64.encode(pair.publicKey)])
        )
    }

    /// The server answers a request: checks the suite and the keys, encapsulates to each, draws
    /// the salt and derives the secret.
    /// - Parameters:
    ///   - request: the client's request.
    ///   - algorithm: the suite the server expects (the application's or the activation's).
    /// - Returns: the response to send and the secret, in secure memory.
    /// - Throws: ``ProtocolError/unsupportedAlgorithm(name:missing:)``,
    ///   ``ProtocolError/malformedMessage(reason:)`` (another suite, a wrong key count),
    ///   ``ProtocolError/malformedBase64(field:)``, ``ProtocolError/invalidKey(field:)``, ``ProtocolError/core(_:)``.
    public static func respond(to request: V4SharedSecretRequest, algorithm: ProtocolAlgorithm)
        throws(ProtocolError) -> (response: V4SharedSecretResponse, secret: SecureBytes)
    {
        try requireV4(algorithm)
        guard request.algorithm == algorithm.rawValue else {
            throw .malformedMessage(reason: "sharedSecretRequest names another algorithm")
        }
        guard request.encapsulationKeys.count == 1 else {
            throw .malformedMessage(reason: "sharedSecretRequest must carry one encapsulation key")
        }
        let key = try Base64.decode(request.encapsulationKeys[0], field: "encapsulationKeys")
        guard key.count == P384KeyPairSizes.publicKey else {
            throw .invalidLength(field: "encapsulationKeys", expected: P384KeyPairSizes.publicKey, actual: key.count)
        }
        let (encapsulation, kemSecret) = try DHKEMP384.encapsulate(to: key)
        defer { kemSecret.destroy() }
        let salt = try lift { () throws(SecureCoreError) in try SecureRandom.bytes(count: saltByteCount) }
        let secret = try combine(kemSecrets: [kemSecret], salt: salt, algorithm: algorithm)
        return (
            V4SharedSecretResponse(salt: Base64.encode(salt), encapsulatedKeys: [Base64.encode(encapsulation)]),
            secret
        )
    }

    /// The client finishes an exchange with the server's response.
    /// - Parameters:
    ///   - context: what ``makeRequest(algorithm:)`` returned.
    ///   - response: the server's response.
    /// - Returns: the 32-byte secret, in secure memory.
    /// - Throws: ``ProtocolError/malformedMessage(reason:)`` (a wrong key count),
    ///   ``ProtocolError/malformedBase64(field:)``, ``ProtocolError/invalidLength(field:expected:actual:)``
    ///   (a salt that is not 32 bytes), ``ProtocolError/invalidKey(field:)``, ``ProtocolError/core(_:)``.
    public static func finish(_ context: V4SharedSecretClientContext, response: V4SharedSecretResponse)
        throws(ProtocolError) -> SecureBytes
    {
        guard response.encapsulatedKeys.count == 1 else {
            throw .malformedMessage(reason: "sharedSecretResponse must carry one encapsulated key")
        }
        let salt = try Base64.decode(response.salt, field: "salt", count: saltByteCount)
        let encapsulation = try Base64.decode(
            response.encapsulatedKeys[0], field: "encapsulatedKeys", count: DHKEMP384.encapsulationByteCount)
        let kemSecret = try DHKEMP384.decapsulate(encapsulation, keyPair: context.keyPair)
        defer { kemSecret.destroy() }
        return try combine(kemSecrets: [kemSecret], salt: salt, algorithm: context.algorithm)
    }

    static func requireV4(_ algorithm: ProtocolAlgorithm) throws(ProtocolError) {
        guard algorithm == .ecP384 else {
            throw .unsupportedAlgorithm(
                name: algorithm.rawValue,
                missing: algorithm.missingPrimitives ?? "protocol V4 (this is a protocol V3.3 algorithm)")
        }
    }
}

/// Sizes of P-384 encodings used on the V4 wire.
enum P384KeyPairSizes {
    /// SEC1 uncompressed public key.
    static let publicKey = DHKEMP384.encapsulationByteCount
}

/// `u32be(n)`.
func u32be(_ n: Int) -> [UInt8] {
    let value = UInt32(truncatingIfNeeded: n)
    return [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
}

/// `LV(x) = u32be(|x|) ‖ x` (upstream's `concatWithSizes` element).
func lv(_ bytes: [UInt8]) -> [UInt8] { u32be(bytes.count) + bytes }
