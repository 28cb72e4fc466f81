import DurableStorage
import SecureCore

/// The vault's directory: mode 0700, files 0600, every write a new file,
/// fsync, rename over the old one and fsync of the directory, and an
/// advisory lock that serialises processes.
struct VaultDirectory: Sendable {
    static let vaultName = "vault"
    static let recordName = "failures"
    static let lockName = "lock"

    let path: String
    /// The system calls behind every durable write (tests inject failures).
    var fileSystem: any DurableFileSystem = SystemFileSystem()

    func file(_ name: String) -> String { path + "/" + name }

    var exists: Bool { DurableFile.exists(file(VaultDirectory.vaultName)) }

    /// The empty file that records that the vault created its directory, so
    /// that destroying the vault removes the directory only then.
    static let createdMarkerName = "created-directory"

    /// Every name a vault may leave in its directory, lock last.
    static var ownedNames: [String] {
        [KeyFile.name, vaultName, recordName, createdMarkerName, lockName]
    }

    /// Whether `name` is one of the vault's files, or a temporary file of its writer.
    static func isOwned(_ name: String) -> Bool {
        ownedNames.contains(name)
            || [vaultName, recordName].contains { DurableFile.isTemporary(name, for: $0) }
    }

    /// Checks, without changing anything, that a vault can be created here:
    /// the directory is missing, or an existing directory owned by this user,
    /// closed to the group and others, and empty (or holding only what an
    /// interrupted create of a vault leaves).
    func checkCanCreate() throws(VaultError) {
        let names = try storage { () throws(StorageError) -> [String] in
            guard let status = try DurableFile.status(path) else { return [] }
            try DurableFile.checkOwnDirectory(path, status, forbidding: 0o077)
            return try DurableFile.entries(in: path)
        }
        if let name = names.first(where: { !VaultDirectory.isOwned($0) }) {
            throw .unsuitableDirectory(reason: "\(path) is not empty (it holds \(name)); use a new or empty directory")
        }
    }

    /// Creates the directory (0700) when missing and records that the vault
    /// created it; an existing directory is used only if
    /// ``checkCanCreate()`` accepts it, and its mode is never changed.
    func prepare() throws(VaultError) {
        if try storage({ () throws(StorageError) in try DurableFile.makeDirectory(path) }) {
            try storage { () throws(StorageError) in
                try DurableFile.createEmpty(VaultDirectory.createdMarkerName, in: path)
            }
            return
        }
        try checkCanCreate()
    }

    /// Runs `body` holding the exclusive advisory lock
    /// (``DurableStorage/DurableFile/withExclusiveLock(_:failure:_:)``).
    ///
    /// Destroying a vault unlinks its lock file while holding it; a process
    /// that waited on the old file locks the current one instead, or gets
    /// ``VaultError/notFound`` when the directory is gone.
    ///
    /// On a read-only file system without a lock file `body` runs unlocked,
    /// since nobody can change the files. Writes in `body` then fail.
    func locked<R>(_ body: () throws(VaultError) -> R) throws(VaultError) -> R {
        try DurableFile.withExclusiveLock(
            file(VaultDirectory.lockName),
            failure: { $0.isMissing ? .notFound : VaultError($0) }
        ) { (held) throws(VaultError) in
            guard held || DurableFile.exists(path) else { throw .notFound }
            return try body()
        }
    }

    /// ``locked(_:)`` for a create: when a destroy removed the directory
    /// while this process waited, the directory is made again and locked anew.
    func lockedCreatingDirectory<R>(_ body: () throws(VaultError) -> R) throws(VaultError) -> R {
        while true {
            do {
                return try locked(body)
            } catch .notFound where !DurableFile.exists(path) {
                try prepare()
            }
        }
    }

    /// Reads a whole file, or nil when it does not exist; a file larger than
    /// `limit` is damaged, and is refused before it is read.
    func readFile(_ name: String, limit: Int = 1 << 20) throws(VaultError) -> [UInt8]? {
        try storage { () throws(StorageError) in try DurableFile.read(file(name), limit: limit) }
    }

    /// Why a replacement failed, and whether the new file is already in
    /// place (the rename happened but could not be made durable).
    struct ReplaceFailure: Error {
        let error: VaultError
        let replaced: Bool
    }

    /// How often the directory fsync is retried after a rename before the
    /// replacement is reported as not durable.
    static let syncRetries = 3

    /// Replaces `name` atomically: a crash leaves either the old or the new
    /// file. When the rename happened but the directory fsync failed, the
    /// fsync is retried (the replacement is finished); if it still fails, the
    /// failure says `replaced`, so the caller can roll back.
    func replace(_ name: String, _ bytes: [UInt8]) throws(ReplaceFailure) {
        let result: Result<Void, StorageError> = bytes.withUnsafeBytes { buffer in
            do throws(StorageError) {
                return .success(try DurableFile.replace(name, in: path, with: buffer, fileSystem: fileSystem))
            } catch { return .failure(error) }
        }
        guard case .failure(let failure) = result else { return }
        guard case .notDurable(_, var lastErrno) = failure else {
            throw ReplaceFailure(error: VaultError(failure), replaced: false)
        }
        var lastOperation = "fsync directory"
        for _ in 0..<VaultDirectory.syncRetries {
            do throws(StorageError) {
                try DurableFile.syncDirectory(path, fileSystem: fileSystem)
                return
            } catch {
                lastOperation = error.operation
                lastErrno = error.errno ?? lastErrno
            }
        }
        throw ReplaceFailure(
            error: .io(operation: "\(lastOperation) after replacing \(name) (not durable)", errno: lastErrno),
            replaced: true)
    }

    /// ``replace(_:_:)`` for callers that treat both failures alike.
    func writeFile(_ name: String, _ bytes: [UInt8]) throws(VaultError) {
        do throws(ReplaceFailure) { try replace(name, bytes) } catch { throw error.error }
    }

    func syncDirectory() throws(VaultError) {
        try storage { () throws(StorageError) in try DurableFile.syncDirectory(path, fileSystem: fileSystem) }
    }

    /// The key file.
    var keyFile: KeyFile { KeyFile(path: file(KeyFile.name), fileSystem: fileSystem) }

    /// Destroys the vault so that no copy of it can be opened again: the key
    /// file first, overwritten in place (every slot key and the file MAC
    /// depend on it, so this alone makes every old copy of the vault file
    /// useless), then the vault file and the failure record, overwritten in
    /// place too (older versions of them, left in freed blocks by earlier
    /// renames, are beyond reach: the key file is what protects those), then
    /// the vault's own names, and the directory only if the vault created it.
    /// - Returns: what was removed.
    @discardableResult
    func removeAll() throws(VaultError) -> VaultDestruction {
        try storage { () throws(StorageError) in
            for name in [KeyFile.name, VaultDirectory.vaultName, VaultDirectory.recordName] {
                try DurableFile.overwriteInPlace(file(name), fileSystem: fileSystem)
            }
        }
        let createdDirectory = DurableFile.exists(file(VaultDirectory.createdMarkerName))
        let leftovers = ((try? DurableFile.entries(in: path)) ?? []).filter {
            $0.hasPrefix(".") && VaultDirectory.isOwned($0)
        }
        var removed: [String] = []
        for name in leftovers.sorted() + VaultDirectory.ownedNames
        where try storage({ () throws(StorageError) in try DurableFile.remove(file(name)) }) {
            removed.append(name)
        }
        try syncDirectory()
        var removedDirectory = false
        if createdDirectory {
            removedDirectory = try storage { () throws(StorageError) in try DurableFile.removeDirectory(path) }
        }
        return VaultDestruction(removedFiles: removed, removedDirectory: removedDirectory, directory: path)
    }
}

/// What destroying a vault removed (``PinVault/destroy()``).
public struct VaultDestruction: Sendable, Equatable {
    /// The vault's own files that were removed, by name, after the key file,
    /// the vault file and the failure record were overwritten in place.
    public var removedFiles: [String]
    /// Whether the directory was removed: only when the vault created it and
    /// nothing else was left in it.
    public var removedDirectory: Bool
    /// The directory.
    public var directory: String
    /// Whether the vault's record at its server was removed (``PinVault/destroy(pin:)`` of a
    /// server-bound vault); `false` for every other destruction.
    public var removedServerRecord: Bool = false
}

/// A failed system call is ``VaultError/io(operation:errno:)``, a file that is not what the
/// vault writes is ``VaultError/damaged(reason:)``.
extension VaultError: StorageErrorConvertible {
    package static func storageFailed(operation: String, errno: Int32) -> VaultError {
        .io(operation: operation, errno: errno)
    }
    package static func storageDamaged(reason: String) -> VaultError { .damaged(reason: reason) }
    package static func storageRefused(reason: String) -> VaultError { .unsuitableDirectory(reason: reason) }
}

/// Runs a storage step, its failure as a ``VaultError``.
func storage<R>(_ body: () throws(StorageError) -> R) throws(VaultError) -> R { try VaultError.converting(body) }
