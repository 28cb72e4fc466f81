import SecureCore

/// The five keys derived from the master secret. Each lives in secure
/// memory; the description is redacted. Call ``destroy()`` when done.
public struct FactorKeys: Sendable {
    /// `KEY_SIGNATURE_POSSESSION` (index 1).
    public let possession: SecureBytes
    /// `KEY_SIGNATURE_KNOWLEDGE` (index 2): wrap it under the PIN before storing.
    public let knowledge: SecureBytes
    /// `KEY_SIGNATURE_BIOMETRY` (index 3).
    public let biometry: SecureBytes
    /// `KEY_TRANSPORT` (index 1000): status blob and counter hash.
    public let transport: SecureBytes
    /// `KEY_ENCRYPTION_VAULT` (index 2000).
    public let vault: SecureBytes
    /// `true` for keys lent by their owner (``lent()``): ``destroy()`` leaves them to the owner.
    public private(set) var isLent = false

    /// The three signing keys, for ``ActivationCrypto/authenticationCode(data:factors:keys:counter:format:)``.
    public var signingKeys: SigningKeys {
        SigningKeys(possession: possession, knowledge: knowledge, biometry: biometry)
    }

    /// Wipes all five keys now; does nothing for lent keys (``lent()``), which are their owner's.
    public func destroy() {
        guard !isLent else { return }
        for key in [possession, knowledge, biometry, transport, vault] { key.destroy() }
    }

    /// The same five keys, lent out: no copy is made, and ``destroy()`` on the result does
    /// nothing, so a borrower can treat lent and owned keys alike.
    ///
    /// The keys stay readable while any holder holds them. An owner that lends must therefore
    /// *drop* keys that may be on loan rather than destroy them (a borrower's next use would fail
    /// with `SecureCoreError.destroyed`): each key wipes itself when its last holder lets go of
    /// it, so dropped keys are wiped when the owner's drop or the last borrower's end comes,
    /// whichever is later.
    /// - Returns: the lent keys.
    public func lent() -> FactorKeys {
        var keys = self
        keys.isLent = true
        return keys
    }

    /// The five keys copied into new secure memory: the copy is the caller's to destroy, and
    /// destroying it leaves these keys as they are (and the other way round).
    /// - Returns: the copy.
    /// - Throws: `SecureCoreError.outOfMemory`; `SecureCoreError.destroyed` once these were destroyed.
    public func copy() throws(SecureCoreError) -> FactorKeys {
        try copy(lasting: false)
    }

    /// The five keys copied into secure memory that may outlive the current request scope (a
    /// cache entry): never on a scratch slab another thread's request holds readable.
    /// - Parameter lasting: `true` to keep the copy out of the scratch pool.
    /// - Returns: the copy.
    /// - Throws: as ``copy()``.
    package func copy(lasting: Bool) throws(SecureCoreError) -> FactorKeys {
        FactorKeys(
            possession: try possession.copy(lasting: lasting), knowledge: try knowledge.copy(lasting: lasting),
            biometry: try biometry.copy(lasting: lasting), transport: try transport.copy(lasting: lasting),
            vault: try vault.copy(lasting: lasting))
    }
}

extension FactorKeys: CustomStringConvertible, CustomDebugStringConvertible {
    /// `FactorKeys(redacted)`.
    public var description: String { "FactorKeys(redacted)" }
    /// Same as ``description``.
    public var debugDescription: String { description }
}

/// The factor keys an authentication code may use. A client usually holds
/// the possession key, the knowledge key only right after unwrapping it with
/// the PIN, and the biometry key only after a biometric prompt; absent keys
/// are `nil`. The description is redacted.
public struct SigningKeys: Sendable {
    /// The possession key, 16 bytes.
    public var possession: SecureBytes?
    /// The knowledge key, 16 bytes.
    public var knowledge: SecureBytes?
    /// The biometry key, 16 bytes.
    public var biometry: SecureBytes?

    /// Collects the keys at hand.
    /// - Parameters:
    ///   - possession: the possession key, if available.
    ///   - knowledge: the knowledge key, if available.
    ///   - biometry: the biometry key, if available.
    public init(possession: SecureBytes? = nil, knowledge: SecureBytes? = nil, biometry: SecureBytes? = nil) {
        self.possession = possession
        self.knowledge = knowledge
        self.biometry = biometry
    }

    /// The keys of `set`, in code order.
    /// - Throws: ``ProtocolError/missingFactorKey(_:)``, ``ProtocolError/invalidLength(field:expected:actual:)``.
    func keys(for set: FactorSet) throws(ProtocolError) -> [SecureBytes] {
        var result: [SecureBytes] = []
        for factor in set.factors {
            let key: SecureBytes?
            switch factor {
            case .possession: key = possession
            case .knowledge: key = knowledge
            case .biometry: key = biometry
            }
            guard let key else { throw .missingFactorKey(factor) }
            guard key.count == ProtocolConstants.keyByteCount else {
                throw .invalidLength(
                    field: "\(factor.rawValue) key", expected: ProtocolConstants.keyByteCount, actual: key.count)
            }
            result.append(key)
        }
        return result
    }
}

extension SigningKeys: CustomStringConvertible, CustomDebugStringConvertible {
    /// Which keys are present, never their bytes.
    public var description: String {
        let present = [("possession", possession), ("knowledge", knowledge), ("biometry", biometry)]
            .filter { $0.1 != nil }.map(\.0)
        return "SigningKeys(\(present.joined(separator: ", ")); redacted)"
    }
    /// Same as ``description``.
    public var debugDescription: String { description }
}
