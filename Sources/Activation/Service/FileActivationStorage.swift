import DurableStorage
import PowerAuthProtocol
import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// ``DeviceActivationStorage`` in a directory: mode 0700, files 0600; every write
/// goes to a temporary file that is fsynced, renamed over the old one, and
/// followed by an fsync of the directory. Secret blobs are read into and
/// written from secure memory directly.
public struct FileActivationStorage: DeviceActivationStorage {
    /// Largest blob accepted; anything larger is damaged data.
    public static let maximumBlobSize = 1 << 16
    /// The name of the lock file.
    static let lockName = ".lock"

    /// The directory.
    public let directory: String

    /// Uses `directory`, creating it (0700) when it is missing.
    ///
    /// An existing directory must be one this user owns (not a symbolic link)
    /// that neither the group nor others can write. If they can read or search
    /// it, that access is taken away (nothing was exposed: every file is 0600).
    /// One they can write is refused and left unchanged: another user may
    /// already have put files or links in it.
    /// - Parameter directory: an absolute path.
    /// - Throws: ``ActivationError/wrongParameter(reason:)`` for a directory
    ///   that is refused, ``ActivationError/storage(operation:errno:)``.
    public init(directory: String) throws(ActivationError) {
        self.directory = directory
        try storage { () throws(StorageError) in try DurableFile.preparePrivateDirectory(directory) }
    }

    private func path(_ name: String) -> String { directory + "/" + name }

    /// The `<instanceId>.token-*` files of the directory.
    public func tokenNames(instanceId: String) throws(ActivationError) -> [String] {
        guard let handle = opendir(directory) else { throw .storage(operation: "opendir", errno: errno) }
        defer { closedir(handle) }
        let prefix = instanceId + ".token-"
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            // A temporary file of an interrupted write ends in ".tmp" or similar: its name still
            // starts with the prefix, and it goes too.
            if name.hasPrefix(prefix) { names.append(name) }
        }
        return names
    }

    /// Reads a public blob.
    public func read(_ name: String) throws(ActivationError) -> [UInt8]? {
        try storage { () throws(StorageError) in try DurableFile.read(path(name), limit: Self.maximumBlobSize) }
    }

    /// Replaces a public blob atomically.
    public func write(_ name: String, _ bytes: [UInt8]) throws(ActivationError) {
        var failure: ActivationError?
        bytes.withUnsafeBytes { buffer in
            do throws(ActivationError) { try replace(name, buffer) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// Reads a secret blob into secure memory.
    public func readSecret(_ name: String) throws(ActivationError) -> SecureBytes? {
        try DurableFile.withFile(path(name), .read, limit: Self.maximumBlobSize, failure: ActivationError.init) {
            (file) throws(ActivationError) -> SecureBytes in
            let size = file.size
            let out = try coreStep { () throws(SecureCoreError) in try SecureBytes(count: max(size, 1)) }
            let complete: Bool
            do throws(StorageError) {
                complete = try out.withUnsafeMutableBytes { (buffer) throws(StorageError) in
                    let n = try file.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<size]), at: 0)
                    return try n == size ? file.isAtEnd(size) : false
                }
            } catch {
                out.destroy()
                throw ActivationError(error)
            }
            guard complete, size > 0 else {
                out.destroy()
                throw .invalidActivationData(reason: "\(name) is empty or changed while it was read")
            }
            return out
        }
    }

    /// Replaces a secret blob atomically from secure memory.
    public func writeSecret(_ name: String, _ bytes: SecureBytes) throws(ActivationError) {
        try bytes.withUnsafeBytes { (buffer) throws(ActivationError) in try replace(name, buffer) }
    }

    /// Overwrites in place (random bytes, then zeros, each fsynced), deletes,
    /// and syncs the directory. A missing blob is no error.
    public func remove(_ name: String) throws(ActivationError) {
        try storage { () throws(StorageError) in
            try DurableFile.overwriteInPlace(path(name))
            try DurableFile.remove(path(name))
            try DurableFile.syncDirectory(directory)
        }
    }

    /// Holds `flock(LOCK_EX)` on the directory's lock file while `body` runs;
    /// processes and descriptors exclude each other.
    public func withExclusiveAccess<R>(_ body: () throws(ActivationError) -> R) throws(ActivationError) -> R {
        try DurableFile.withExclusiveLock(path(Self.lockName), failure: ActivationError.init) {
            (_) throws(ActivationError) in
            // On a read-only file system without a lock file it runs unlocked: nobody can write.
            try body()
        }
    }

    private func replace(_ name: String, _ buffer: UnsafeRawBufferPointer) throws(ActivationError) {
        try storage { () throws(StorageError) in try DurableFile.replace(name, in: directory, with: buffer) }
    }

    /// Runs a storage step, its failure as an ``ActivationError``.
    private func storage<R>(_ body: () throws(StorageError) -> R) throws(ActivationError) -> R {
        try ActivationError.converting(body)
    }
}

/// A failed system call is ``ActivationError/storage(operation:errno:)``, a blob that is not
/// what the store writes is ``ActivationError/invalidActivationData(reason:)``, and a refused
/// directory is ``ActivationError/wrongParameter(reason:)``.
extension ActivationError: StorageErrorConvertible {
    package static func storageFailed(operation: String, errno: Int32) -> ActivationError {
        .storage(operation: operation, errno: errno)
    }
    package static func storageDamaged(reason: String) -> ActivationError { .invalidActivationData(reason: reason) }
    package static func storageRefused(reason: String) -> ActivationError { .wrongParameter(reason: reason) }
}
