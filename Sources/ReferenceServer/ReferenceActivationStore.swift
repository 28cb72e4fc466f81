import ActivationServer
import Foundation
import PostQuantum
import PowerAuthProtocol
import SecureCore

/// What the reference server needs of its durable store beyond
/// `ActivationServer.ServerActivationStore`: the server configuration kept beside the
/// activations, the back office's list, and the audit table. ``SQLiteActivationStore`` (one
/// process, the default) and ``PostgresActivationStore`` (several processes on one database)
/// provide it.
public protocol ReferenceActivationStore: ServerActivationStore {
    /// Loads the stored server configuration, or stores `make()`'s on first use (exactly once,
    /// however many processes start at the same time).
    /// - Parameters:
    ///   - make: creates fresh keys when none are stored.
    ///   - restore: rebuilds the configuration from the stored application key, application
    ///     secret and master key pair.
    /// - Returns: the configuration in force.
    /// - Throws: ``ReferenceServerError``.
    func loadOrStoreConfiguration(
        _ make: () throws(ActivationServerError) -> ActivationServerConfiguration,
        restore: ([UInt8], [UInt8], KeyPair) throws(ActivationServerError) -> ActivationServerConfiguration
    ) throws(ReferenceServerError) -> ActivationServerConfiguration
    /// Every activation identifier, oldest first.
    /// - Returns: the identifiers.
    /// - Throws: `ActivationServer.ActivationServerError.storage(reason:)`.
    func activationIds() throws(ActivationServerError) -> [String]
    /// The audit rows of one activation, oldest first.
    /// - Parameter activationId: the activation.
    /// - Returns: the time and outcome of every recorded attempt.
    /// - Throws: `ActivationServer.ActivationServerError.storage(reason:)`.
    func auditTrail(activationId: String) throws(ActivationServerError) -> [AuditEntry]
    /// Loads the stored protocol V4 master key pair (`EC_P384`), or stores `make()`'s on first
    /// use (exactly once, however many processes start at the same time).
    /// - Parameter make: creates a fresh pair.
    /// - Returns: the pair in force.
    /// - Throws: ``ReferenceServerError``.
    func loadOrStoreV4MasterKey(_ make: () throws(ActivationServerError) -> ECP384KeyPair)
        throws(ReferenceServerError) -> ECP384KeyPair
    /// Loads the stored ML-DSA master key pair of a hybrid suite (one per parameter set: ML-DSA-65
    /// for `EC_P384_ML_L3`, ML-DSA-87 for `EC_P384_ML_L5`), or stores a fresh one on first use
    /// (exactly once, however many processes start at the same time). The store keeps the 32-byte
    /// seed, sealed under the storage key, and the public key.
    /// - Parameter parameterSet: the parameter set.
    /// - Returns: the pair in force.
    /// - Throws: ``ReferenceServerError``.
    func loadOrStoreV4PostQuantumMasterKey(_ parameterSet: MLDSA.ParameterSet) throws(ReferenceServerError)
        -> MLDSA.KeyPair
}

/// What both stores share about the ML-DSA master keys of the hybrid suites: the row key, the
/// sealing label, a fresh seed and the expansion of a stored one (checked against the stored
/// public key).
enum V4PostQuantumMasterKey {
    /// The row key: `ML-DSA-65` or `ML-DSA-87`.
    static func name(_ set: MLDSA.ParameterSet) -> String { V4TemporaryKeyJWT.algorithmName(set) }

    /// The associated data the seed is sealed under.
    static func label(_ set: MLDSA.ParameterSet) -> [UInt8] {
        Array("SecurePIN server V4 \(name(set)) master key v1".utf8)
    }

    /// A fresh seed and its key pair.
    static func generate(_ set: MLDSA.ParameterSet) throws(ReferenceServerError) -> (SecureBytes, MLDSA.KeyPair) {
        let seed: SecureBytes
        do throws(SecureCoreError) {
            seed = try SecureBytes.random(count: MLDSA.seedByteCount)
        } catch {
            throw .corruptRecord(reason: "memory")
        }
        do throws(ReferenceServerError) {
            return (seed, try expand(set, seed: seed, publicKey: nil))
        } catch {
            seed.destroy()
            throw error
        }
    }

    /// The key pair of a stored seed; its public key must be the stored one.
    static func expand(_ set: MLDSA.ParameterSet, seed: SecureBytes, publicKey: [UInt8]?)
        throws(ReferenceServerError) -> MLDSA.KeyPair
    {
        let pair: MLDSA.KeyPair
        do throws(PostQuantumError) {
            pair = try MLDSA.KeyPair(set, seed: seed)
        } catch {
            throw .corruptRecord(reason: "the \(name(set)) master key")
        }
        if let publicKey, publicKey != pair.publicKey {
            pair.destroy()
            throw .corruptRecord(reason: "the \(name(set)) master key")
        }
        return pair
    }
}
