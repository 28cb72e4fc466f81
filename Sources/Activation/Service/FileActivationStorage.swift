import DurableStorage
import PowerAuthProtocol
import SecureCore

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
        do throws(StorageError) { return try body() } catch { throw ActivationError(error) }
    }
}

extension ActivationError {
    /// The activation store's error for a storage failure: a blob too large,
    /// changed while it was read or not a regular file is damaged data; a
    /// refused directory is a wrong parameter.
    init(_ failure: StorageError) {
        switch failure {
        case .system(let operation, let errno), .notDurable(let operation, let errno):
            self = .storage(operation: operation, errno: errno)
        case .tooLarge(let name, _, _): self = .invalidActivationData(reason: "\(name) is larger than any valid blob")
        case .changedWhileRead(let name): self = .invalidActivationData(reason: "\(name) changed while it was read")
        case .notARegularFile(let name): self = .invalidActivationData(reason: "\(name) is not a regular file")
        case .unsuitableDirectory(let reason): self = .wrongParameter(reason: reason)
        }
    }
}
