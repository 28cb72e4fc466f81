#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Crash-safe files for the modules that persist state (the vault, the activation store):
/// a private directory, bounded reads, and replacement by a new file that is fsynced,
/// renamed over the old one, then made durable with an fsync of the directory. A crash at
/// any instant leaves the old or the new content, never a mixture.
///
/// This module holds no secret: bytes to store are passed as an `UnsafeRawBufferPointer`
/// (they may point into secure memory), and a secret is read into the caller's buffer
/// through ``withFile(_:_:limit:fileSystem:failure:_:)``.
package enum DurableFile {
    /// Replaces `directory/name` (mode 0600) with `bytes`, durably: a temporary file
    /// `.name.<pid>.tmp` is written and fsynced, renamed over `name`, and the directory is
    /// fsynced.
    /// - Throws: ``StorageError/system(operation:errno:)`` when the old file is untouched
    ///   (the temporary file is removed), ``StorageError/notDurable(operation:errno:)`` when
    ///   the rename happened and only the directory's fsync failed.
    package static func replace(
        _ name: String, in directory: String, with bytes: UnsafeRawBufferPointer,
        fileSystem: any DurableFileSystem = SystemFileSystem()
    ) throws(StorageError) {
        let temporary = directory + "/" + temporaryName(name)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .system(operation: "create \(name)", errno: errno) }
        func discard(_ failure: StorageError) -> StorageError {
            close(fd)
            unlink(temporary)
            return failure
        }
        var written = 0
        while written < bytes.count {
            let n = fileSystem.write(fd, UnsafeRawBufferPointer(rebasing: bytes[written...]))
            if n < 0 {
                if errno == EINTR { continue }
                throw discard(.system(operation: "write \(name)", errno: errno))
            }
            written += n
        }
        guard fileSystem.fsync(fd, isDirectory: false) == 0 else {
            throw discard(.system(operation: "fsync \(name)", errno: errno))
        }
        close(fd)
        guard fileSystem.rename(temporary, directory + "/" + name) == 0 else {
            let failure = StorageError.system(operation: "rename \(name)", errno: errno)
            unlink(temporary)
            throw failure
        }
        do throws(StorageError) { try syncDirectory(directory, fileSystem: fileSystem) } catch {
            throw .notDurable(operation: "\(error.operation) after replacing \(name)", errno: error.errno ?? EIO)
        }
    }

    /// The name of the temporary file ``replace(_:in:with:fileSystem:)`` writes for `name`
    /// in this process: what a crash may leave behind.
    package static func temporaryName(_ name: String) -> String { ".\(name).\(getpid()).tmp" }

    /// Whether `candidate` is a temporary file of ``replace(_:in:with:fileSystem:)`` for
    /// `name`, written by any process.
    package static func isTemporary(_ candidate: String, for name: String) -> Bool {
        candidate.hasPrefix(".\(name).") && candidate.hasSuffix(".tmp")
    }

    /// Makes the directory's entries (a rename, an unlink) durable.
    package static func syncDirectory(
        _ directory: String, fileSystem: any DurableFileSystem = SystemFileSystem()
    ) throws(StorageError) {
        let dfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dfd >= 0 else { throw .system(operation: "open directory", errno: errno) }
        defer { close(dfd) }
        guard fileSystem.fsync(dfd, isDirectory: true) == 0 else {
            throw .system(operation: "fsync directory", errno: errno)
        }
    }

    /// Reads a whole regular file of at most `limit` bytes, or nil when it does not exist.
    /// For public bytes only: a secret is read into secure memory through
    /// ``withFile(_:_:limit:fileSystem:failure:_:)``.
    /// - Throws: ``StorageError/tooLarge(name:size:limit:)`` before reading anything,
    ///   ``StorageError/changedWhileRead(name:)``, ``StorageError/notARegularFile(name:)``,
    ///   or ``StorageError/system(operation:errno:)``.
    package static func read(_ path: String, limit: Int) throws(StorageError) -> [UInt8]? {
        try withFile(path, .read, limit: limit, failure: { $0 }) { (file) throws(StorageError) in
            let bytes = try file.readBytes(count: file.size, at: 0)
            guard bytes.count == file.size, try file.isAtEnd(file.size) else {
                throw .changedWhileRead(name: file.name)
            }
            return bytes
        }
    }

    /// Creates an empty file `directory/name` (0600) and makes it durable, or leaves an
    /// existing one as it is.
    package static func createEmpty(_ name: String, in directory: String) throws(StorageError) {
        let fd = open(directory + "/" + name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .system(operation: "create \(name)", errno: errno) }
        close(fd)
        try syncDirectory(directory)
    }

    /// Removes `path`. Returns whether it existed.
    @discardableResult
    package static func remove(_ path: String) throws(StorageError) -> Bool {
        guard unlink(path) == 0 else {
            guard errno == ENOENT else { throw .system(operation: "unlink \(lastComponent(path))", errno: errno) }
            return false
        }
        return true
    }

    /// Overwrites `path` in place over its whole length, random bytes then zeros, each pass
    /// fsynced, so that its blocks no longer hold what it held; the caller then removes it.
    /// A missing file is no error.
    package static func overwriteInPlace(
        _ path: String, fileSystem: any DurableFileSystem = SystemFileSystem()
    ) throws(StorageError) {
        try withFile(path, .update, fileSystem: fileSystem, failure: { $0 }) { (file) throws(StorageError) in
            try file.overwrite(offset: 0, count: file.size)
        }
    }

    static func lastComponent(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }
}
