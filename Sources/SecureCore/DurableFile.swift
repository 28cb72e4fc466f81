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
    package static func replace(
        _ name: String, in directory: String, with bytes: UnsafeRawBufferPointer
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
        guard fsync(fd) == 0 else { throw fail("fsync \(name)") }
        close(fd)
        guard rename(temporary, directory + "/" + name) == 0 else {
            let failure = Failure(operation: "rename \(name)", errno: errno)
            unlink(temporary)
            throw failure
        }
        try syncDirectory(directory)
    }

    /// Makes the directory's entries (a rename, an unlink) durable.
    package static func syncDirectory(_ directory: String) throws(Failure) {
        let dfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dfd >= 0 else { throw Failure(operation: "open directory", errno: errno) }
        defer { close(dfd) }
        guard fsync(dfd) == 0 else { throw Failure(operation: "fsync directory", errno: errno) }
    }
}
