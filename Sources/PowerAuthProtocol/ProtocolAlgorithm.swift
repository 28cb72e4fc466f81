import PostQuantum

/// The algorithm names of the PowerAuth mobile SDK configuration. ``legacyP256``
/// (protocol V3.3 on P-256) is what `ActivationCrypto` computes; ``ecP384`` (protocol V4)
/// and the hybrid suites ``ecP384MLL3`` / ``ecP384MLL5`` (protocol V4 with ML-KEM and ML-DSA)
/// are implemented by the V4 types of this module (``V4SharedSecret`` and the rest), by the
/// server and by the activation service's V4 path; `ActivationCrypto` refuses them with
/// ``ProtocolError/unsupportedAlgorithm(name:missing:)`` instead of quietly running V3.3.
public enum ProtocolAlgorithm: String, CaseIterable, Sendable {
    /// P-256, fully compatible with protocol V3.3. Implemented.
    case legacyP256 = "LEGACY_P256"
    /// Protocol V4 on P-384 without post-quantum parts (not by `ActivationCrypto`, which is V3.3).
    case ecP384 = "EC_P384"
    /// Protocol V4 hybrid: P-384 with ML-KEM-768 and ML-DSA-65 (not by `ActivationCrypto`, which is V3.3).
    case ecP384MLL3 = "EC_P384_ML_L3"
    /// Protocol V4 hybrid: P-384 with ML-KEM-1024 and ML-DSA-87 (not by `ActivationCrypto`, which is V3.3).
    case ecP384MLL5 = "EC_P384_ML_L5"

    /// Whether the suite is protocol V4 (every suite but `LEGACY_P256`).
    public var isV4: Bool { self != .legacyP256 }

    /// The suites ordered by strength: `LEGACY_P256` < `EC_P384` < `EC_P384_ML_L3` <
    /// `EC_P384_ML_L5` (the order of `allCases`). An activation is upgraded only to a
    /// stronger suite.
    /// - Parameter other: another suite.
    /// - Returns: whether this suite is the stronger one.
    public func isStronger(than other: ProtocolAlgorithm) -> Bool {
        let order = Self.allCases
        return order.firstIndex(of: self)! > order.firstIndex(of: other)!
    }

    /// The ML-DSA parameter set of a hybrid suite's signatures (`nil` for the others).
    public var signatureParameterSet: MLDSA.ParameterSet? {
        switch self {
        case .ecP384MLL3: .mldsa65
        case .ecP384MLL5: .mldsa87
        case .legacyP256, .ecP384: nil
        }
    }

    /// The configuration-string key id of a hybrid suite's ML-DSA master public key: `0x03`
    /// (ML-DSA-65) or `0x04` (ML-DSA-87); `nil` for the others.
    public var postQuantumMasterKeyId: UInt8? {
        switch self {
        case .ecP384MLL3: 0x03
        case .ecP384MLL5: 0x04
        case .legacyP256, .ecP384: nil
        }
    }

    /// The configuration-string key id of the P-384 master public key of protocol V4.
    public static let ecdsaMasterKeyId: UInt8 = 0x02

    /// Parses a configuration name (exact, case-sensitive, as the SDK spells it).
    /// - Parameter name: for example `"LEGACY_P256"`.
    /// - Throws: ``ProtocolError/unknownAlgorithm(_:)`` for any other text.
    public init(name: String) throws(ProtocolError) {
        guard let algorithm = ProtocolAlgorithm(rawValue: name) else {
            throw .unknownAlgorithm(ProtocolError.echo(name))
        }
        self = algorithm
    }

    /// `nil` when `ActivationCrypto` implements the algorithm; otherwise what it would need.
    public var missingPrimitives: String? {
        switch self {
        case .legacyP256:
            return nil
        case .ecP384:
            return "protocol V4, which ActivationCrypto (the V3.3 crypto) does not compute: use the V4 types "
                + "(V4SharedSecret, V4ActivationKeys, ...) or ActivationService configured with EC_P384"
        case .ecP384MLL3:
            return "protocol V4 with ML-KEM-768 and ML-DSA-65, which ActivationCrypto (the V3.3 crypto) does not "
                + "compute: use the V4 types or ActivationService configured with EC_P384_ML_L3"
        case .ecP384MLL5:
            return "protocol V4 with ML-KEM-1024 and ML-DSA-87, which ActivationCrypto (the V3.3 crypto) does not "
                + "compute: use the V4 types or ActivationService configured with EC_P384_ML_L5"
        }
    }

    /// Throws unless the algorithm is implemented.
    /// - Throws: ``ProtocolError/unsupportedAlgorithm(name:missing:)``.
    public func requireSupported() throws(ProtocolError) {
        if let missing = missingPrimitives { throw .unsupportedAlgorithm(name: rawValue, missing: missing) }
    }
}
