#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A regular file open for the length of a ``DurableFile/withFile(_:_:limit:fileSystem:failure:_:)``
/// call: reads into the caller's buffer, writes in place, fsync. It must not be kept after
/// the call returns (its descriptor is closed then).
package struct OpenFile {
    /// The file's name (its last path component), for messages.
    package let name: String
    /// Its size when it was opened.
    package let size: Int
    let descriptor: Int32
    let fileSystem: any DurableFileSystem

    /// Reads into `buffer` from `offset` until it is full or the file ends.
    /// - Returns: how many bytes were read (fewer than `buffer.count` at the end of the file).
    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(StorageError) -> Int {
        var done = 0
        while done < buffer.count {
            let n = Platform.readBytes(
                descriptor, UnsafeMutableRawBufferPointer(rebasing: buffer[done...]), at: offset + done)
            if n < 0 {
                if errno == EINTR { continue }
                throw .system(operation: "read \(name)", errno: errno)
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Reads up to `count` public bytes from `offset` (fewer at the end of the file).
    package func readBytes(count: Int, at offset: Int) throws(StorageError) -> [UInt8] {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 1)
        defer { buffer.deallocate() }
        let n = try read(into: buffer, at: offset)
        return [UInt8](buffer[0..<n])
    }

    /// Whether the file ends at `offset` (nothing can be read there).
    package func isAtEnd(_ offset: Int) throws(StorageError) -> Bool {
        var byte: UInt8 = 0
        let n = try withUnsafeMutableBytes(of: &byte) { (buffer) throws(StorageError) in
            try read(into: buffer, at: offset)
        }
        return n == 0
    }

    /// Writes all of `bytes` at `offset`, in place (the same inode, no rename). Not durable
    /// before ``sync()``.
    package func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(StorageError) {
        var done = 0
        while done < bytes.count {
            let n = fileSystem.pwrite(descriptor, UnsafeRawBufferPointer(rebasing: bytes[done...]), at: offset + done)
            if n < 0 {
                if errno == EINTR { continue }
                throw .system(operation: "write \(name) in place", errno: errno)
            }
            done += n
        }
    }

    /// Writes public `bytes` at `offset`, in place.
    package func write(_ bytes: [UInt8], at offset: Int) throws(StorageError) {
        let result: Result<Void, StorageError> = bytes.withUnsafeBytes { buffer in
            do throws(StorageError) { return .success(try write(buffer, at: offset)) } catch { return .failure(error) }
        }
        try result.get()
    }

    /// Writes `count` copies of `byte` at `offset`, in place.
    package func fill(_ byte: UInt8, count: Int, at offset: Int) throws(StorageError) {
        try fill(count: count, at: offset) { $0.initializeMemory(as: UInt8.self, repeating: byte) }
    }

    /// `fsync(2)`: what was written is on disk.
    package func sync() throws(StorageError) {
        guard fileSystem.fsync(descriptor, isDirectory: false) == 0 else {
            throw .system(operation: "fsync \(name)", errno: errno)
        }
    }

    /// Overwrites `count` bytes at `offset` in place: random bytes, fsync, zeros, fsync.
    package func overwrite(offset: Int, count: Int) throws(StorageError) {
        guard count > 0 else { return }
        var random = SystemRandomNumberGenerator()
        try fill(count: count, at: offset) { chunk in
            for i in chunk.indices { chunk[i] = UInt8.random(in: .min ... .max, using: &random) }
        }
        try sync()
        try fill(0, count: count, at: offset)
        try sync()
    }

    /// Writes `count` bytes at `offset` in chunks that `pattern` fills.
    private func fill(
        count: Int, at offset: Int, _ pattern: (UnsafeMutableRawBufferPointer) -> Void
    ) throws(StorageError) {
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: min(count, 1 << 16), alignment: 1)
        defer { chunk.deallocate() }
        var done = 0
        while done < count {
            let part = UnsafeMutableRawBufferPointer(rebasing: chunk[0..<min(chunk.count, count - done)])
            pattern(part)
            try write(UnsafeRawBufferPointer(part), at: offset + done)
            done += part.count
        }
    }
}

extension DurableFile {
    /// How ``withFile(_:_:limit:fileSystem:failure:_:)`` opens a file. A symbolic link is
    /// never followed.
    package enum OpenMode: Sendable {
        /// Read only.
        case read
        /// Read and write in place; the file must exist.
        case update
        /// Create a new file (mode 0600), read and write; it must not exist.
        case createNew
    }

    /// Opens the regular file `path`, checks its size against `limit`, and runs `body` with
    /// it; the descriptor is closed when `body` returns.
    /// - Parameters:
    ///   - failure: turns a ``StorageError`` into the caller's error.
    /// - Returns: what `body` returns, or nil when the file does not exist (``OpenMode/read``
    ///   and ``OpenMode/update`` only; ``OpenMode/createNew`` throws when it does).
    package static func withFile<R, E: Error>(
        _ path: String, _ mode: OpenMode, limit: Int? = nil,
        fileSystem: any DurableFileSystem = SystemFileSystem(),
        failure: (StorageError) -> E, _ body: (OpenFile) throws(E) -> R
    ) throws(E) -> R? {
        let name = lastComponent(path)
        let flags: Int32 =
            switch mode {
            case .read: O_RDONLY
            case .update: O_RDWR
            case .createNew: O_RDWR | O_CREAT | O_EXCL
            }
        // O_NONBLOCK: opening a pipe planted under the name returns at once, and is refused below.
        let fd = Platform.openFile(path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            if errno == ENOENT && mode != .createNew { return nil }
            throw failure(.system(operation: mode == .createNew ? "create \(name)" : "open \(name)", errno: errno))
        }
        defer { close(fd) }
        guard let status = Platform.status(of: fd) else {
            throw failure(.system(operation: "fstat \(name)", errno: errno))
        }
        guard status.isRegularFile else { throw failure(.notARegularFile(name: name)) }
        if let limit, status.size > limit {
            throw failure(.tooLarge(name: name, size: status.size, limit: limit))
        }
        return try body(OpenFile(name: name, size: status.size, descriptor: fd, fileSystem: fileSystem))
    }
}
