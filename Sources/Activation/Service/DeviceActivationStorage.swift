import PowerAuthProtocol
import SecureCore

/// Where the client, on the device, keeps its activation (not the server's
/// registry): named blobs, each replaced
/// atomically (a crash leaves the old or the new content, never a mix).
/// Public blobs are ordinary bytes; secret blobs travel only in
/// `SecureCore.SecureBytes`.
public protocol DeviceActivationStorage: Sendable {
    /// Reads a public blob.
    /// - Parameter name: the blob's name.
    /// - Returns: the bytes, or `nil` when absent.
    /// - Throws: ``ActivationError/storage(operation:errno:)``, ``ActivationError/invalidActivationData(reason:)``.
    func read(_ name: String) throws(ActivationError) -> [UInt8]?
    /// Replaces a public blob atomically.
    /// - Parameters:
    ///   - name: the blob's name.
    ///   - bytes: the new content.
    /// - Throws: ``ActivationError/storage(operation:errno:)``.
    func write(_ name: String, _ bytes: [UInt8]) throws(ActivationError)
    /// Reads a secret blob into secure memory.
    /// - Parameter name: the blob's name.
    /// - Returns: the bytes, or `nil` when absent.
    /// - Throws: ``ActivationError/storage(operation:errno:)``, ``ActivationError/invalidActivationData(reason:)``.
    func readSecret(_ name: String) throws(ActivationError) -> SecureBytes?
    /// Replaces a secret blob atomically, writing straight from secure memory.
    /// - Parameters:
    ///   - name: the blob's name.
    ///   - bytes: the new content.
    /// - Throws: ``ActivationError/storage(operation:errno:)``.
    func writeSecret(_ name: String, _ bytes: SecureBytes) throws(ActivationError)
    /// Overwrites a blob with zeros and deletes it; no error when absent.
    /// - Parameter name: the blob's name.
    /// - Throws: ``ActivationError/storage(operation:errno:)``.
    func remove(_ name: String) throws(ActivationError)

    /// The names of the tokens kept for an instance (`<instanceId>.token-<tokenId>`), so that
    /// forgetting an activation forgets its tokens too.
    /// - Parameter instanceId: the activation's instance.
    /// - Returns: the blob names, in no particular order.
    func tokenNames(instanceId: String) throws(ActivationError) -> [String]
    /// Runs `body` holding an exclusive lock on the storage, so services in
    /// several processes (an application and its extension) serialise their
    /// read-modify-write of the counter. `body` does not call back into the lock.
    /// - Parameter body: the critical section.
    /// - Returns: what `body` returned.
    /// - Throws: ``ActivationError/storage(operation:errno:)`` and what `body` throws.
    func withExclusiveAccess<R>(_ body: () throws(ActivationError) -> R) throws(ActivationError) -> R
}
