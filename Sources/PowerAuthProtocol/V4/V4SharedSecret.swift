import PostQuantum
import SecureCore

/// The client's half of a V4 shared-secret exchange (`sharedSecretRequest`), as JSON:
/// `{"algorithm": "EC_P384", "encapsulationKeys": [Base64 of the 97-byte P-384 key]}`; the hybrid
/// suites add the ML-KEM encapsulation key as a SubjectPublicKeyInfo (`"MIIEsj…"` for ML-KEM-768).
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
/// `{"salt": Base64 of 32 bytes, "encapsulatedKeys": [Base64 of the 97-byte DHKEM enc]}`; the
/// hybrid suites add the raw ML-KEM ciphertext.
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
/// its ephemeral DHKEM key pair and, for a hybrid suite, its ephemeral ML-KEM key pair (private
/// parts in secure memory).
public struct V4SharedSecretClientContext: Sendable {
    /// The suite.
    public let algorithm: ProtocolAlgorithm
    /// The client's ephemeral P-384 key pair (the DHKEM recipient).
    public let keyPair: ECP384KeyPair
    /// The client's ephemeral ML-KEM key pair (hybrid suites only).
    public let mlkem: MLKEM.KeyPair?

    /// Destroys the ephemeral ML-KEM decapsulation key (the P-384 scalar goes with ``keyPair``).
    public func destroy() { mlkem?.destroy() }
}

/// The final V4 shared-secret derivation (`powerauth-v4.md` §2) for `EC_P384` and the hybrid
/// suites `EC_P384_ML_L3` (+ ML-KEM-768) and `EC_P384_ML_L5` (+ ML-KEM-1024):
///
/// ```
/// ss_1   = DHKEM(P-384, HKDF-SHA384) secret, as an HPKE export (48 bytes, see DHKEMP384)
/// ss_2   = ML-KEM shared secret (32 bytes; hybrid suites only)
/// info   = LV("shared-secret/" + SUITE) ‖ LV("4.0")
/// X      = u32be(1) ‖ LV(ss_1) [‖ LV(ss_2)] ‖ info
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
    /// - Parameter algorithm: a V4 suite: ``ProtocolAlgorithm/ecP384`` or a hybrid one.
    /// - Returns: the context to keep and the request to send.
    /// - Throws: ``ProtocolError/unsupportedAlgorithm(name:missing:)``, ``ProtocolError/core(_:)``.
    public static func makeRequest(algorithm: ProtocolAlgorithm) throws(ProtocolError) -> (
        context: V4SharedSecretClientContext, request: V4SharedSecretRequest
    ) {
        try requireV4(algorithm)
        let pair = try ECP384KeyPair.generate()
        var keys = [Base64.encode(pair.publicKey)]
        var mlkem: MLKEM.KeyPair?
        if let set = mlkemParameterSet(algorithm) {
            let generated = try postQuantum { () throws(PostQuantumError) in try MLKEM.KeyPair.generate(set) }
            keys.append(Base64.encode(generated.encapsulationKeyInfo))
            mlkem = generated
        }
        return (
            V4SharedSecretClientContext(algorithm: algorithm, keyPair: pair, mlkem: mlkem),
            V4SharedSecretRequest(algorithm: algorithm.rawValue, encapsulationKeys: keys)
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
        let set = mlkemParameterSet(algorithm)
        let count = set == nil ? 1 : 2
        guard request.encapsulationKeys.count == count else {
            throw .malformedMessage(reason: "sharedSecretRequest must carry \(count) encapsulation key(s)")
        }
        let key = try Base64.decode(request.encapsulationKeys[0], field: "encapsulationKeys")
        guard key.count == P384KeyPairSizes.publicKey else {
            throw .invalidLength(field: "encapsulationKeys", expected: P384KeyPairSizes.publicKey, actual: key.count)
        }
        // Every input is checked before anything is encapsulated.
        var mlkemKey: [UInt8]?
        if let set {
            let info = try Base64.decode(request.encapsulationKeys[1], field: "encapsulationKeys")
            mlkemKey = try postQuantum { () throws(PostQuantumError) in
                try MLKEM.encapsulationKey(set, fromPublicKeyInfo: info)
            }
        }
        let (encapsulation, kemSecret) = try DHKEMP384.encapsulate(to: key)
        defer { kemSecret.destroy() }
        var secrets = [kemSecret]
        var encapsulated = [Base64.encode(encapsulation)]
        if let set, let mlkemKey {
            let (ciphertext, shared) = try postQuantum { () throws(PostQuantumError) in
                try MLKEM.encapsulate(set, to: mlkemKey)
            }
            secrets.append(shared)
            encapsulated.append(Base64.encode(ciphertext))
        }
        defer { for secret in secrets.dropFirst() { secret.destroy() } }
        let salt = try lift { () throws(SecureCoreError) in try SecureRandom.bytes(count: saltByteCount) }
        let secret = try combine(kemSecrets: secrets, salt: salt, algorithm: algorithm)
        return (V4SharedSecretResponse(salt: Base64.encode(salt), encapsulatedKeys: encapsulated), secret)
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
        let set = mlkemParameterSet(context.algorithm)
        let count = set == nil ? 1 : 2
        guard response.encapsulatedKeys.count == count else {
            throw .malformedMessage(reason: "sharedSecretResponse must carry \(count) encapsulated key(s)")
        }
        let salt = try Base64.decode(response.salt, field: "salt", count: saltByteCount)
        let encapsulation = try Base64.decode(
            response.encapsulatedKeys[0], field: "encapsulatedKeys", count: DHKEMP384.encapsulationByteCount)
        var ciphertext: [UInt8]?
        if let set {
            ciphertext = try Base64.decode(
                response.encapsulatedKeys[1], field: "encapsulatedKeys", count: set.ciphertextByteCount)
        }
        let kemSecret = try DHKEMP384.decapsulate(encapsulation, keyPair: context.keyPair)
        defer { kemSecret.destroy() }
        var secrets = [kemSecret]
        if let ciphertext {
            guard let mlkem = context.mlkem else { throw .malformedMessage(reason: "no ML-KEM key for a hybrid suite") }
            secrets.append(try postQuantum { () throws(PostQuantumError) in try mlkem.decapsulate(ciphertext) })
        }
        defer { for secret in secrets.dropFirst() { secret.destroy() } }
        return try combine(kemSecrets: secrets, salt: salt, algorithm: context.algorithm)
    }

    /// The ML-KEM parameter set of a hybrid suite; `nil` for `EC_P384`.
    static func mlkemParameterSet(_ algorithm: ProtocolAlgorithm) -> MLKEM.ParameterSet? {
        switch algorithm {
        case .ecP384MLL3: .mlkem768
        case .ecP384MLL5: .mlkem1024
        case .ecP384, .legacyP256: nil
        }
    }

    /// Runs a post-quantum step and reports its error as a protocol error.
    static func postQuantum<R>(_ body: () throws(PostQuantumError) -> R) throws(ProtocolError) -> R {
        do throws(PostQuantumError) {
            return try body()
        } catch {
            switch error {
            case .invalidSize(let expected, let actual):
                throw .invalidLength(field: "encapsulationKeys", expected: expected, actual: actual)
            case .invalidKey, .malformedPublicKeyInfo: throw .invalidKey(field: "encapsulationKeys")
            case .secureMemory(let core): throw .core(core)
            }
        }
    }

    static func requireV4(_ algorithm: ProtocolAlgorithm) throws(ProtocolError) {
        guard algorithm != .legacyP256 else {
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
