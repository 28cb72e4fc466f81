#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension DurableFile {
    /// What is at `path`, a symbolic link described and not followed, or nil when nothing is.
    package static func status(_ path: String) throws(StorageError) -> FileStatus? {
        guard let status = Platform.linkStatus(path) else {
            guard errno == ENOENT else { throw .system(operation: "stat \(lastComponent(path))", errno: errno) }
            return nil
        }
        return status
    }

    /// The names in a directory, except `.` and `..`, in no particular order.
    package static func entries(in directory: String) throws(StorageError) -> [String] {
        guard let names = Platform.entries(directory) else { throw .system(operation: "open directory", errno: errno) }
        return names
    }

    /// Creates `directory` with mode 0700. Returns false when it already exists (whatever
    /// it is: the caller checks it).
    package static func makeDirectory(_ directory: String) throws(StorageError) -> Bool {
        if Platform.makeDirectory(directory, 0o700) == 0 { return true }
        guard errno == EEXIST else { throw .system(operation: "mkdir", errno: errno) }
        return false
    }

    /// Makes `directory` private storage: creates it with mode 0700 when it is missing; an
    /// existing one must be a directory (a symbolic link is not followed) that this user
    /// owns and that neither the group nor others can write.
    ///
    /// An existing directory that the group or others can only read or search is closed to
    /// them (its mode loses `0o077`, through the opened directory, so a name swapped in the
    /// meantime cannot redirect the change): nothing in it was exposed, since every file
    /// this module writes is 0600. One that they can write is refused and left as it is:
    /// another user may already have put files or links in it, and taking the access away
    /// now would not undo that.
    /// - Throws: ``StorageError/unsuitableDirectory(reason:)`` (nothing changed) or
    ///   ``StorageError/system(operation:errno:)``.
    package static func preparePrivateDirectory(_ directory: String) throws(StorageError) {
        if try makeDirectory(directory) { return }
        let fd = Platform.openFile(directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0)
        guard fd >= 0 else {
            guard errno == ENOTDIR || errno == ELOOP else { throw .system(operation: "open directory", errno: errno) }
            throw .unsuitableDirectory(reason: "\(directory) exists and is not a directory (a link is not followed)")
        }
        defer { close(fd) }
        guard let status = Platform.status(of: fd) else { throw .system(operation: "fstat directory", errno: errno) }
        try checkOwnDirectory(directory, status, forbidding: 0o022)
        if status.permissions & 0o077 != 0 && Platform.changeMode(fd, status.permissions & ~0o077) != 0 {
            throw .system(operation: "chmod directory", errno: errno)
        }
    }

    /// Checks that `status` (of `directory`) is a directory that this user owns and whose mode
    /// has none of the `forbidden` bits.
    /// - Throws: ``StorageError/unsuitableDirectory(reason:)``, its reason naming the directory.
    package static func checkOwnDirectory(
        _ directory: String, _ status: FileStatus, forbidding forbidden: UInt32
    ) throws(StorageError) {
        guard status.isDirectory else {
            throw .unsuitableDirectory(reason: "\(directory) exists and is not a directory")
        }
        guard status.isOwnedByCurrentUser else {
            throw .unsuitableDirectory(reason: "\(directory) belongs to another user")
        }
        guard status.permissions & forbidden == 0 else {
            let access = forbidden & 0o055 == 0 ? "writable by" : "open to"
            throw .unsuitableDirectory(
                reason: "\(directory) is \(access) the group or others (mode "
                    + "\(String(status.permissions & 0o777, radix: 8))); use a new directory, or one with mode 0700")
        }
    }

    /// Removes the empty directory `directory`. Returns false when it is gone or not empty.
    package static func removeDirectory(_ directory: String) throws(StorageError) -> Bool {
        // By absolute name: rmdir(".") fails with EINVAL even when "." is empty.
        guard rmdir(Platform.resolvedPath(directory) ?? directory) == 0 else {
            guard errno == ENOENT || errno == ENOTEMPTY || errno == EEXIST else {
                throw .system(operation: "rmdir", errno: errno)
            }
            return false
        }
        return true
    }

    /// Runs `body` holding the exclusive advisory lock (`flock(LOCK_EX)`) on the file
    /// `path`, created 0600 when missing; waits for the lock. Processes and descriptors
    /// exclude each other.
    ///
    /// A process that waited while another removed the lock file would otherwise "hold" a
    /// lock no newcomer sees. After `flock` returns, the lock is therefore valid only if the
    /// name still refers to the locked file; otherwise it is dropped and taken again on the
    /// file that is there now.
    ///
    /// On a read-only file system the lock file cannot be created or opened for writing: it
    /// is then opened read-only (`flock` works on such a descriptor); when it does not exist
    /// there, `body` runs with `held` false (nobody can change the files).
    /// - Parameters:
    ///   - failure: turns a ``StorageError`` into the caller's error (`open lock`, `flock`).
    ///   - body: runs with the lock held (`held` true), or on a read-only file system without
    ///     a lock file (`held` false).
    package static func withExclusiveLock<R, E: Error>(
        _ path: String, failure: (StorageError) -> E, _ body: (_ held: Bool) throws(E) -> R
    ) throws(E) -> R {
        while true {
            var fd = Platform.openFile(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if fd < 0 && (errno == EROFS || errno == EACCES) {
                let refused = errno
                fd = Platform.openFile(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0)
                if fd < 0 && errno == ENOENT && refused == EROFS { return try body(false) }
            }
            guard fd >= 0 else { throw failure(.system(operation: "open lock", errno: errno)) }
            while flock(fd, LOCK_EX) != 0 {
                guard errno == EINTR else {
                    let error = StorageError.system(operation: "flock", errno: errno)
                    close(fd)
                    throw failure(error)
                }
            }
            guard let held = Platform.status(of: fd) else {
                let error = StorageError.system(operation: "fstat lock", errno: errno)
                close(fd)
                throw failure(error)
            }
            guard let named = Platform.status(path), named.identity == held.identity else {
                close(fd)  // removed or replaced while this process waited: lock the file that is there now
                continue
            }
            defer { close(fd) }
            return try body(true)
        }
    }
}

extension DurableFile {
    /// Whether anything (a link included, not followed) is at `path`.
    package static func exists(_ path: String) -> Bool { Platform.linkStatus(path) != nil }
}
