/// The algorithm names of the PowerAuth mobile SDK configuration. The client
/// (`ActivationCrypto`, the activation service) implements ``legacyP256``
/// (protocol V3.3 on P-256) only; ``ecP384`` (protocol V4) is implemented by the
/// V4 protocol types of this module and by the server, not yet by the client.
/// Asking the client for a V4 name fails loudly with
/// ``ProtocolError/unsupportedAlgorithm(name:missing:)`` instead of quietly running V3.
public enum ProtocolAlgorithm: String, CaseIterable, Sendable {
    /// P-256, fully compatible with protocol V3.3. Implemented.
    case legacyP256 = "LEGACY_P256"
    /// Protocol V4 on P-384 without post-quantum parts: protocol layer and server; no client yet.
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

    /// `nil` when the client implements the algorithm; otherwise what it would need.
    public var missingPrimitives: String? {
        let v4 = "protocol V4 (its KDF key schedule, KMAC-256 status authentication and V4 end-to-end encryption)"
        switch self {
        case .legacyP256:
            return nil
        case .ecP384:
            return "a protocol V4 client: the activation service does not speak V4 yet (the server does, "
                + "with --algorithm EC_P384); only LEGACY_P256 (protocol V3.3) is available here"
        case .ecP384MLL3:
            return "ML-KEM-768 and ML-DSA-65, which neither libsodium nor OpenSSL 3.0 provides, and \(v4)"
        case .ecP384MLL5:
            return "ML-KEM-1024 and ML-DSA-87, which neither libsodium nor OpenSSL 3.0 provides, and \(v4)"
        }
    }

    /// Throws unless the algorithm is implemented.
    /// - Throws: ``ProtocolError/unsupportedAlgorithm(name:missing:)``.
    public func requireSupported() throws(ProtocolError) {
        if let missing = missingPrimitives { throw .unsupportedAlgorithm(name: rawValue, missing: missing) }
    }
}
