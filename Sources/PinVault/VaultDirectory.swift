import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

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

    var exists: Bool { access(file(VaultDirectory.vaultName), F_OK) == 0 }

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
            || [vaultName, recordName].contains { name.hasPrefix(".\($0).") && name.hasSuffix(".tmp") }
    }

    /// Checks, without changing anything, that a vault can be created here:
    /// the directory is missing, or an existing directory owned by this user,
    /// closed to the group and others, and empty (or holding only what an
    /// interrupted create of a vault leaves).
    func checkCanCreate() throws(VaultError) {
        var st = stat()
        guard lstat(path, &st) == 0 else {
            if errno == ENOENT { return }
            throw .io(operation: "stat directory", errno: errno)
        }
        guard st.st_mode & S_IFMT == S_IFDIR else {
            throw .unsuitableDirectory(reason: "\(path) exists and is not a directory")
        }
        guard st.st_uid == geteuid() else {
            throw .unsuitableDirectory(reason: "\(path) belongs to another user")
        }
        guard st.st_mode & 0o077 == 0 else {
            throw .unsuitableDirectory(
                reason: "\(path) is open to the group or others (mode \(String(st.st_mode & 0o777, radix: 8)));"
                    + " use a new directory, or one with mode 0700")
        }
        guard let dir = opendir(path) else { throw .io(operation: "open directory", errno: errno) }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name == "." || name == ".." || VaultDirectory.isOwned(name) { continue }
            throw .unsuitableDirectory(reason: "\(path) is not empty (it holds \(name)); use a new or empty directory")
        }
    }

    /// Creates the directory (0700) when missing and records that the vault
    /// created it; an existing directory is used only if
    /// ``checkCanCreate()`` accepts it, and its mode is never changed.
    func prepare() throws(VaultError) {
        if mkdir(path, 0o700) == 0 {
            let fd = open(file(VaultDirectory.createdMarkerName), O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw .io(operation: "create \(VaultDirectory.createdMarkerName)", errno: errno) }
            close(fd)
            try syncDirectory()
            return
        }
        guard errno == EEXIST else { throw .io(operation: "mkdir", errno: errno) }
        try checkCanCreate()
    }

    /// Runs `body` holding the exclusive advisory lock.
    ///
    /// Destroying a vault unlinks its lock file while holding it, so a
    /// process that waited on the old file would otherwise "hold" a lock no
    /// newcomer sees. After `flock` returns, the lock is therefore valid only
    /// if the name still refers to the locked inode; otherwise it is dropped
    /// and taken again on the current file (or ``VaultError/notFound`` when
    /// the directory is gone).
    ///
    /// On a read-only file system the lock file cannot be created or opened
    /// for writing: it is then opened read-only (`flock` works on such a
    /// descriptor), and when it does not exist there, `body` runs unlocked,
    /// since nobody can change the files. Writes in `body` then fail.
    func locked<R>(_ body: () throws(VaultError) -> R) throws(VaultError) -> R {
        let lockPath = file(VaultDirectory.lockName)
        while true {
            var fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            if fd < 0 && (errno == EROFS || errno == EACCES) {
                let refused = errno
                fd = open(lockPath, O_RDONLY | O_CLOEXEC)
                if fd < 0 && errno == ENOENT && refused == EROFS && access(path, F_OK) == 0 { return try body() }
            }
            guard fd >= 0 else { throw errno == ENOENT ? .notFound : .io(operation: "open lock", errno: errno) }
            while flock(fd, LOCK_EX) != 0 {
                guard errno == EINTR else {
                    let failure = errno
                    close(fd)
                    throw .io(operation: "flock", errno: failure)
                }
            }
            var held = stat()
            var named = stat()
            guard fstat(fd, &held) == 0 else {
                let failure = errno
                close(fd)
                throw .io(operation: "fstat lock", errno: failure)
            }
            guard stat(lockPath, &named) == 0, named.st_ino == held.st_ino, named.st_dev == held.st_dev else {
                close(fd)  // unlinked or replaced while we waited: lock the file that is there now
                continue
            }
            defer { close(fd) }
            return try body()
        }
    }

    /// ``locked(_:)`` for a create: when a destroy removed the directory
    /// while this process waited, the directory is made again and locked anew.
    func lockedCreatingDirectory<R>(_ body: () throws(VaultError) -> R) throws(VaultError) -> R {
        while true {
            do {
                return try locked(body)
            } catch .notFound where access(path, F_OK) != 0 {
                try prepare()
            }
        }
    }

    /// Reads a whole file, or nil when it does not exist.
    func readFile(_ name: String, limit: Int = 1 << 20) throws(VaultError) -> [UInt8]? {
        let fd = open(file(name), O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw .io(operation: "open \(name)", errno: errno)
        }
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(fd, &chunk, chunk.count)
            if n < 0 {
                if errno == EINTR { continue }
                throw .io(operation: "read \(name)", errno: errno)
            }
            if n == 0 { break }
            out += chunk[0..<n]
            if out.count > limit { throw .damaged(reason: "\(name) is larger than any valid file") }
        }
        return out
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
        let result: Result<Void, DurableFile.Failure> = bytes.withUnsafeBytes { buffer in
            do throws(DurableFile.Failure) {
                return .success(try DurableFile.replace(name, in: path, with: buffer, fileSystem: fileSystem))
            } catch { return .failure(error) }
        }
        guard case .failure(let failure) = result else { return }
        guard failure.replaced else {
            throw ReplaceFailure(error: .io(operation: failure.operation, errno: failure.errno), replaced: false)
        }
        var last = failure
        for _ in 0..<VaultDirectory.syncRetries {
            do throws(DurableFile.Failure) {
                try DurableFile.syncDirectory(path, fileSystem: fileSystem)
                return
            } catch { last = error }
        }
        throw ReplaceFailure(
            error: .io(operation: "\(last.operation) after replacing \(name) (not durable)", errno: last.errno),
            replaced: true)
    }

    /// ``replace(_:_:)`` for callers that treat both failures alike.
    func writeFile(_ name: String, _ bytes: [UInt8]) throws(VaultError) {
        do throws(ReplaceFailure) { try replace(name, bytes) } catch { throw error.error }
    }

    func syncDirectory() throws(VaultError) {
        do throws(DurableFile.Failure) { try DurableFile.syncDirectory(path, fileSystem: fileSystem) } catch {
            throw .io(operation: error.operation, errno: error.errno)
        }
    }

    /// The key file.
    var keyFile: KeyFile { KeyFile(path: file(KeyFile.name)) }

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
        try KeyFile.overwriteInPlace(file(KeyFile.name), name: "key file")
        for name in [VaultDirectory.vaultName, VaultDirectory.recordName] {
            try KeyFile.overwriteInPlace(file(name), name: name)
        }
        let createdDirectory = access(file(VaultDirectory.createdMarkerName), F_OK) == 0
        var removed: [String] = []
        var leftovers: [String] = []
        if let dir = opendir(path) {
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
                }
                if name.hasPrefix(".") && VaultDirectory.isOwned(name) { leftovers.append(name) }
            }
            closedir(dir)
        }
        for name in leftovers.sorted() + VaultDirectory.ownedNames {
            if unlink(file(name)) == 0 {
                removed.append(name)
            } else if errno != ENOENT {
                throw .io(operation: "unlink \(name)", errno: errno)
            }
        }
        try syncDirectory()
        var removedDirectory = false
        if createdDirectory {
            // By absolute name: rmdir(".") fails with EINVAL even when "." is empty.
            let absolute = realpath(path, nil).map { pointer in
                defer { free(pointer) }
                return String(cString: pointer)
            }
            if rmdir(absolute ?? path) == 0 {
                removedDirectory = true
            } else if errno != ENOENT && errno != ENOTEMPTY {
                throw .io(operation: "rmdir", errno: errno)
            }
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
}
