#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Crash-safe files for the modules that persist state (the vault, the
/// activation store): a private directory, and replacement by a new file
/// that is fsynced, renamed over the old one, then made durable with an
/// fsync of the directory. A crash at any instant leaves the old or the new
/// content, never a mixture. The bytes may come straight from secure memory.
package enum DurableFile {
    /// A system call that failed, and its `errno`.
    package struct Failure: Error, Equatable, Sendable {
        /// The step that failed, for example `"fsync"`.
        package let operation: String
        /// The `errno` it left.
        package let errno: Int32
        /// Whether the new file had already replaced the old one (the rename
        /// happened) when the step failed: the new content is visible but
        /// not yet durable, and a crash may bring back either file.
        package let replaced: Bool

        /// A failure; `replaced` as above (default: the old file is untouched).
        package init(operation: String, errno: Int32, replaced: Bool = false) {
            self.operation = operation
            self.errno = errno
            self.replaced = replaced
        }
    }

    /// Creates `directory` with mode 0700 when missing, and takes away the
    /// group's and others' access when it has any.
    package static func prepareDirectory(_ directory: String) throws(Failure) {
        if mkdir(directory, 0o700) != 0 && errno != EEXIST { throw Failure(operation: "mkdir", errno: errno) }
        var st = stat()
        guard stat(directory, &st) == 0 else { throw Failure(operation: "stat", errno: errno) }
        if st.st_mode & 0o077 != 0 && chmod(directory, 0o700) != 0 { throw Failure(operation: "chmod", errno: errno) }
    }

    /// Replaces `directory/name` (mode 0600) with `bytes`, durably.
    /// - Throws: a ``Failure``; when its ``Failure/replaced`` is true the new
    ///   file is in place and only the directory's fsync failed.
    package static func replace(
        _ name: String, in directory: String, with bytes: UnsafeRawBufferPointer,
        fileSystem: any DurableFileSystem = SystemFileSystem()
    ) throws(Failure) {
        let temporary = directory + "/.\(name).\(getpid()).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(operation: "create \(name)", errno: errno) }
        func fail(_ operation: String) -> Failure {
            let failure = Failure(operation: operation, errno: errno)
            close(fd)
            unlink(temporary)
            return failure
        }
        var written = 0
        while written < bytes.count {
            let n = write(fd, bytes.baseAddress! + written, bytes.count - written)
            if n < 0 {
                if errno == EINTR { continue }
                throw fail("write \(name)")
            }
            written += n
        }
        guard fileSystem.fsync(fd, isDirectory: false) == 0 else { throw fail("fsync \(name)") }
        close(fd)
        guard fileSystem.rename(temporary, directory + "/" + name) == 0 else {
            let failure = Failure(operation: "rename \(name)", errno: errno)
            unlink(temporary)
            throw failure
        }
        do throws(Failure) { try syncDirectory(directory, fileSystem: fileSystem) } catch {
            throw Failure(operation: error.operation, errno: error.errno, replaced: true)
        }
    }

    /// Makes the directory's entries (a rename, an unlink) durable.
    package static func syncDirectory(
        _ directory: String, fileSystem: any DurableFileSystem = SystemFileSystem()
    ) throws(Failure) {
        let dfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dfd >= 0 else { throw Failure(operation: "open directory", errno: errno) }
        defer { close(dfd) }
        guard fileSystem.fsync(dfd, isDirectory: true) == 0 else {
            throw Failure(operation: "fsync directory", errno: errno)
        }
    }
}

/// The system calls of a durable replacement that can fail after the data is
/// written: a seam through which tests make `fsync` or `rename` fail. A
/// failing call returns -1 and sets `errno`, as the system call does.
package protocol DurableFileSystem: Sendable {
    /// `fsync(2)` of a file, or of a directory when `isDirectory`.
    func fsync(_ fd: Int32, isDirectory: Bool) -> Int32
    /// `rename(2)`.
    func rename(_ from: String, _ to: String) -> Int32
}

/// The real system calls.
package struct SystemFileSystem: DurableFileSystem {
    /// The system.
    package init() {}
    /// `fsync(2)`.
    package func fsync(_ fd: Int32, isDirectory: Bool) -> Int32 {
        #if canImport(Glibc)
            Glibc.fsync(fd)
        #else
            Darwin.fsync(fd)
        #endif
    }
    /// `rename(2)`.
    package func rename(_ from: String, _ to: String) -> Int32 {
        #if canImport(Glibc)
            Glibc.rename(from, to)
        #else
            Darwin.rename(from, to)
        #endif
    }
}
