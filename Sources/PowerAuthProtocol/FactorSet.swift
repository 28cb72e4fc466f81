/// One authentication factor.
public enum Factor: String, Sendable, CaseIterable {
    /// Something the user has: the device's possession key.
    case possession
    /// Something the user knows: the key unwrapped with the PIN.
    case knowledge
    /// Something the user is: the key released by biometry.
    case biometry
}

/// The factors an authentication code combines (`pa_signature_type`). The
/// keys always enter the code in the order possession, knowledge, biometry.
public enum FactorSet: String, CaseIterable, Sendable {
    /// 1FA with the possession key (the usual 1FA).
    case possession
    /// 1FA with the knowledge key.
    case knowledge
    /// 1FA with the biometry key.
    case biometry
    /// 2FA: possession and knowledge (PIN).
    case possessionKnowledge = "possession_knowledge"
    /// 2FA: possession and biometry.
    case possessionBiometry = "possession_biometry"
    /// 3FA: possession, knowledge and biometry.
    case possessionKnowledgeBiometry = "possession_knowledge_biometry"

    /// Parses `pa_signature_type`.
    /// - Parameter text: for example `"possession_knowledge"`.
    /// - Throws: ``ProtocolError/unknownFactorSet(_:)``.
    public init(parsing text: some StringProtocol) throws(ProtocolError) {
        guard let set = FactorSet(rawValue: String(text)) else { throw .unknownFactorSet(ProtocolError.echo(text)) }
        self = set
    }

    /// The factors, in the order their keys enter the code.
    public var factors: [Factor] {
        switch self {
        case .possession: [.possession]
        case .knowledge: [.knowledge]
        case .biometry: [.biometry]
        case .possessionKnowledge: [.possession, .knowledge]
        case .possessionBiometry: [.possession, .biometry]
        case .possessionKnowledgeBiometry: [.possession, .knowledge, .biometry]
        }
    }

    /// Whether a failed verification counts against the user (PowerAuth
    /// servers count failures of every set except possession alone).
    public var countsFailedAttempts: Bool { self != .possession }
}
