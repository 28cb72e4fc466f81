import Biometry
import PostQuantum
import PowerAuthProtocol

/// Everything an ``ActivationService`` needs to know about its application
/// and server (cf. `PowerAuthConfiguration`), validated when made.
public struct ActivationConfiguration: Sendable {
    /// Default length of an offline authentication-code component.
    public static let defaultOfflineComponentLength = 8
    /// The default algorithm, as in the upstream SDK: `EC_P384_ML_L3` (protocol V4, hybrid level 3),
    /// which needs keys `0x02` and `0x03` in the configuration string. Pass `LEGACY_P256`
    /// explicitly for a protocol V3.3 server.
    public static let defaultAlgorithm = ProtocolAlgorithm.ecP384MLL3

    /// Distinguishes several service instances in one application; every
    /// storage name is scoped by it. 1 ... 128 letters, digits, `.`, `_` or `-`.
    public let instanceId: String
    /// Everything that goes before the `/pa/` prefix of the endpoints.
    public let baseEndpointURL: String
    /// The parsed configuration string.
    public let sdkConfiguration: SDKConfiguration
    /// The protocol algorithm: `LEGACY_P256` (V3.3), `EC_P384` (V4), or a hybrid V4 suite
    /// `EC_P384_ML_L3` (the default) or `EC_P384_ML_L5`.
    public let algorithm: ProtocolAlgorithm
    /// Digits of an offline authentication-code component, 4 ... 8 (default 8).
    public let offlineAuthenticationCodeComponentLength: Int
    /// The account under which the biometry key is stored (default: the instance id).
    public let biometryKeyAccount: String
    /// Where an upgrade from V3.3 keeps the V4 biometry key until the server confirmed the
    /// upgrade: ``biometryKeyAccount`` followed by `.v4-upgrade`.
    public var upgradeBiometryKeyAccount: String { biometryKeyAccount + ".v4-upgrade" }
    /// How the biometry factor behaves.
    public let biometricConfiguration: BiometricConfiguration
    /// The HTTP client settings.
    public let clientConfiguration: ActivationClientConfiguration
    /// Argon2id cost of the PIN wrap of the knowledge key.
    public let knowledgeKeyParameters: PINKeyDerivationParameters

    /// Validates and stores a configuration.
    /// - Parameters:
    ///   - instanceId: 1 ... 128 letters, digits, `.`, `_` or `-` (a bundle id fits).
    ///   - baseEndpointURL: an `http://` or `https://` URL without query or fragment.
    ///   - configuration: the configuration string issued by the server.
    ///   - algorithm: the algorithm name; default ``defaultAlgorithm`` (`EC_P384_ML_L3`). A V4 suite
    ///     needs the P-384 master key (`0x02`) in the configuration string, a hybrid suite also its
    ///     ML-DSA master key (`0x03` for `EC_P384_ML_L3`, `0x04` for `EC_P384_ML_L5`).
    ///   - offlineAuthenticationCodeComponentLength: 4 ... 8, default 8.
    ///   - biometryKeyAccount: the biometry key's account; default the instance id.
    ///   - biometricConfiguration: the biometry behaviour.
    ///   - clientConfiguration: the HTTP client settings.
    ///   - knowledgeKeyParameters: Argon2id cost of the PIN wrap (default 64 MiB, 3 passes).
    /// - Throws: ``ActivationError/wrongParameter(reason:)`` for a client setting or a master key
    ///   the algorithm needs and the configuration string lacks (or carries malformed);
    ///   ``ActivationError/protocolError(_:)`` with `PowerAuthProtocol.ProtocolError.invalidConfiguration(reason:)`
    ///   for a configuration string that does not parse,
    ///   `PowerAuthProtocol.ProtocolError.invalidKDFParameters(memoryKiB:iterations:)`,
    ///   `PowerAuthProtocol.ProtocolError.unknownAlgorithm(_:)` or
    ///   `PowerAuthProtocol.ProtocolError.unsupportedAlgorithm(name:missing:)`.
    public init(
        instanceId: String, baseEndpointURL: String, configuration: String,
        algorithm: String = ActivationConfiguration.defaultAlgorithm.rawValue,
        offlineAuthenticationCodeComponentLength: Int = ActivationConfiguration.defaultOfflineComponentLength,
        biometryKeyAccount: String? = nil, biometricConfiguration: BiometricConfiguration = BiometricConfiguration(),
        clientConfiguration: ActivationClientConfiguration = ActivationClientConfiguration(),
        knowledgeKeyParameters: PINKeyDerivationParameters = .default
    ) throws(ActivationError) {
        try Self.validate(instanceId: instanceId)
        guard Self.isValidBaseURL(baseEndpointURL) else {
            throw .wrongParameter(reason: "base endpoint URL must be http(s) without query or fragment")
        }
        guard ProtocolConstants.offlineComponentLengths.contains(offlineAuthenticationCodeComponentLength) else {
            throw .wrongParameter(reason: "offline component length must be 4 ... 8")
        }
        let account = biometryKeyAccount ?? instanceId
        guard Self.isValidName(account) else { throw .wrongParameter(reason: "biometry key account is not valid") }
        let parsedAlgorithm = try protocolStep { () throws(ProtocolError) in
            try knowledgeKeyParameters.validate()
            // Every name is served: LEGACY_P256 by ActivationCrypto, the V4 suites by ActivationService+V4.
            return try ProtocolAlgorithm(name: algorithm)
        }
        self.instanceId = instanceId
        self.baseEndpointURL = baseEndpointURL.hasSuffix("/") ? String(baseEndpointURL.dropLast()) : baseEndpointURL
        self.sdkConfiguration = try protocolStep { () throws(ProtocolError) in
            try SDKConfiguration(parsing: configuration)
        }
        try Self.checkMasterKeys(for: parsedAlgorithm, in: sdkConfiguration)
        self.algorithm = parsedAlgorithm
        self.offlineAuthenticationCodeComponentLength = offlineAuthenticationCodeComponentLength
        self.biometryKeyAccount = account
        self.biometricConfiguration = biometricConfiguration
        self.clientConfiguration = clientConfiguration
        self.knowledgeKeyParameters = knowledgeKeyParameters
    }

    /// Checks that a configuration string carries the master keys `algorithm` needs: key `0x02`
    /// (P-384) for a V4 suite, and key `0x03` (ML-DSA-65) or `0x04` (ML-DSA-87) for a hybrid one,
    /// a SubjectPublicKeyInfo of its parameter set.
    /// - Parameters:
    ///   - algorithm: the algorithm.
    ///   - sdkConfiguration: the parsed configuration string.
    /// - Throws: ``ActivationError/wrongParameter(reason:)`` naming the missing or malformed key.
    public static func checkMasterKeys(for algorithm: ProtocolAlgorithm, in sdkConfiguration: SDKConfiguration)
        throws(ActivationError)
    {
        guard algorithm.isV4 else { return }
        let name = algorithm.rawValue
        guard sdkConfiguration.keys.contains(where: { $0.id == ProtocolAlgorithm.ecdsaMasterKeyId }) else {
            throw .wrongParameter(reason: "\(name) needs the P-384 master key (key 0x02) in the configuration string")
        }
        guard let set = algorithm.signatureParameterSet, let id = algorithm.postQuantumMasterKeyId else { return }
        let hex = "0x0\(id)"
        guard let der = sdkConfiguration.keys.first(where: { $0.id == id })?.bytes else {
            throw .wrongParameter(
                reason: "\(name) needs the ML-DSA master key (key \(hex)) in the configuration string")
        }
        guard (try? MLDSA.publicKey(set, fromPublicKeyInfo: der)) != nil else {
            throw .wrongParameter(reason: "key \(hex) of the configuration string is not an ML-DSA public key")
        }
    }

    /// Whether a configuration string carries the master keys `algorithm` needs (what
    /// ``checkMasterKeys(for:in:)`` checks).
    /// - Parameters:
    ///   - algorithm: the algorithm.
    ///   - configuration: the configuration string.
    /// - Returns: `false` also for a string that does not parse.
    public static func offers(_ algorithm: ProtocolAlgorithm, configuration: String) -> Bool {
        guard let parsed = try? SDKConfiguration(parsing: configuration) else { return false }
        return (try? checkMasterKeys(for: algorithm, in: parsed)) != nil
    }

    /// The storage names of this instance, scoped by ``instanceId``.
    public var storageNames: StorageNames { StorageNames(instanceId: instanceId) }

    /// Checks an instance id as the initialiser does, for a store that scopes its names by it.
    /// - Parameter instanceId: the instance id.
    /// - Throws: ``ActivationError/wrongParameter(reason:)`` unless it is 1 ... 128 letters,
    ///   digits, `.`, `_` or `-` (and not `.` or `..`).
    public static func validate(instanceId: String) throws(ActivationError) {
        guard isValidName(instanceId) else {
            throw .wrongParameter(reason: "instance id must be 1 ... 128 letters, digits, '.', '_' or '-'")
        }
    }

    static func isValidName(_ text: String) -> Bool {
        let bytes = text.utf8
        return !bytes.isEmpty && bytes.count <= 128
            && bytes.allSatisfy { c in
                (0x30...0x39).contains(c) || (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c)
                    || c == UInt8(ascii: ".") || c == UInt8(ascii: "_") || c == UInt8(ascii: "-")
            } && text != "." && text != ".."
    }

    static func isValidBaseURL(_ text: String) -> Bool {
        let lower = text.lowercased()
        let rest: Substring
        if lower.hasPrefix("https://") {
            rest = lower.dropFirst(8)
        } else if lower.hasPrefix("http://") {
            rest = lower.dropFirst(7)
        } else {
            return false
        }
        guard text.utf8.count <= 2048, let host = rest.split(separator: "/", omittingEmptySubsequences: false).first,
            !host.isEmpty
        else { return false }
        return !text.contains("?") && !text.contains("#") && !text.utf8.contains { $0 <= 0x20 || $0 >= 0x7F }
    }
}

/// The names under which one instance keeps its data. Two instances with
/// different ids never share a file or a biometry account.
public struct StorageNames: Sendable, Equatable {
    /// The public state file (identifiers, counter, wrapped knowledge key).
    public let state: String
    /// The secret key file (possession and transport keys).
    public let keys: String
    /// The V4 state of an upgrade from V3.3 that the server has not confirmed yet (public).
    public let upgradeState: String
    /// The V4 keys of that pending upgrade (secret).
    public let upgradeKeys: String

    /// Derives the names from an instance id.
    /// - Parameter instanceId: a validated instance id.
    public init(instanceId: String) {
        state = "\(instanceId).activation"
        keys = "\(instanceId).keys"
        upgradeState = "\(instanceId).upgrade-activation"
        upgradeKeys = "\(instanceId).upgrade-keys"
    }
}
