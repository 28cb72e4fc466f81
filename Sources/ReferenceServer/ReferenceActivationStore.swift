import ActivationServer
import Foundation
import PowerAuthProtocol

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
}
