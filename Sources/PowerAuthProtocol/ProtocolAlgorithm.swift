/// The algorithm names of the PowerAuth mobile SDK configuration. ``legacyP256``
/// (protocol V3.3 on P-256) is what `ActivationCrypto` computes; ``ecP384`` (protocol V4)
/// is implemented by the V4 types of this module (``V4SharedSecret`` and the rest), by the
/// server and by the activation service's V4 path. The hybrid suites are refused with
/// ``ProtocolError/unsupportedAlgorithm(name:missing:)`` instead of quietly running another.
public enum ProtocolAlgorithm: String, CaseIterable, Sendable {
    /// P-256, fully compatible with protocol V3.3. Implemented.
    case legacyP256 = "LEGACY_P256"
    /// Protocol V4 on P-384 without post-quantum parts (not by `ActivationCrypto`, which is V3.3).
    case ecP384 = "EC_P384"
    /// Protocol V4 hybrid: P-384 with ML-KEM-768 and ML-DSA-65. Not implemented.
    case ecP384MLL3 = "EC_P384_ML_L3"
    /// Protocol V4 hybrid: P-384 with ML-KEM-1024 and ML-DSA-87. Not implemented.
    case ecP384MLL5 = "EC_P384_ML_L5"

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
            return "the hybrid suite's wiring into the protocol V4 flows (ML-DSA-65 master-key signatures, key ids "
                + "0x03/0x04); its ML-KEM-768 and ML-DSA-65 primitives (PostQuantum) and shared secret "
                + "(V4SharedSecret) are built"
        case .ecP384MLL5:
            return "the hybrid suite's wiring into the protocol V4 flows (ML-DSA-87 master-key signatures, key ids "
                + "0x03/0x04); its ML-KEM-1024 and ML-DSA-87 primitives (PostQuantum) and shared secret "
                + "(V4SharedSecret) are built"
        }
    }

    /// Throws unless the algorithm is implemented.
    /// - Throws: ``ProtocolError/unsupportedAlgorithm(name:missing:)``.
    public func requireSupported() throws(ProtocolError) {
        if let missing = missingPrimitives { throw .unsupportedAlgorithm(name: rawValue, missing: missing) }
    }
}
