import Foundation
import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The server's storage key: 32 random bytes that seal every private key the
/// database holds (XChaCha20-Poly1305, see `docs/reference-server.md`). It
/// lives in its own file, mode 0600, next to the database — never in it — so
/// a copy of the database alone reveals no key.
///
/// File format: `"SPSK"` ‖ `0x01` ‖ 32 key bytes (37 bytes). The key is read
/// straight into secure memory.
public enum ServerKeyFile {
    /// The file's magic bytes.
    static let magic: [UInt8] = Array("SPSK".utf8) + [1]
    /// The key length.
    public static let keyByteCount = 32

    /// The key file that belongs to a database: the database path plus `.key`.
    /// - Parameter databasePath: the database file.
    /// - Returns: the key file's path.
    public static func path(forDatabase databasePath: String) -> String { databasePath + ".key" }

    /// Loads the key, or creates the file (mode 0600, exclusive create, fsync'd
    /// with its directory) when it does not exist yet.
    /// - Parameter path: the key file.
    /// - Returns: the key, in secure memory.
    /// - Throws: ``ReferenceServerError/keyFile(reason:)``.
    public static func loadOrCreate(at path: String) throws(ReferenceServerError) -> SecureBytes {
        if access(path, F_OK) != 0 {
            do throws(ReferenceServerError) {
                return try create(at: path)
            } catch {
                // Another process created it first: read that one.
                guard errno == EEXIST || access(path, F_OK) == 0 else { throw error }
            }
        }
        return try load(at: path)
    }

    /// Reads an existing key file. It must be a regular file, not readable or
    /// writable by group or others, and exactly 37 bytes of the format above.
    /// - Parameter path: the key file.
    /// - Returns: the key, in secure memory.
    /// - Throws: ``ReferenceServerError/keyFile(reason:)``.
    public static func load(at path: String) throws(ReferenceServerError) -> SecureBytes {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw .keyFile(reason: "cannot open the key file (errno \(errno))") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw .keyFile(reason: "the key file is not a regular file")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw .keyFile(reason: "the key file is accessible to group or others; expected mode 0600")
        }
        guard info.st_size == off_t(magic.count + keyByteCount) else {
            throw .keyFile(reason: "the key file has the wrong size")
        }
        var header = [UInt8](repeating: 0, count: magic.count)
        guard readFully(fd, into: &header), header == magic else {
            throw .keyFile(reason: "the key file has the wrong format")
        }
        let key = try secureMemory(reporting: ReferenceServerError.keyFile(reason:)) { () throws(SecureCoreError) in
            try SecureBytes(count: keyByteCount)
        }
        guard key.withUnsafeMutableBytes({ readFully(fd, $0) }) else {
            key.destroy()
            throw .keyFile(reason: "the key file is truncated")
        }
        return key
    }

    /// Creates a new key file with a fresh random key.
    static func create(at path: String) throws(ReferenceServerError) -> SecureBytes {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .keyFile(reason: "cannot create the key file (errno \(errno))") }
        var ok = false
        defer {
            close(fd)
            if !ok { unlink(path) }
        }
        let key = try secureMemory(reporting: ReferenceServerError.keyFile(reason:)) { () throws(SecureCoreError) in
            try SecureBytes.random(count: keyByteCount)
        }
        let header = magic.withUnsafeBytes { writeFully(fd, $0) }
        let body = key.withUnsafeBytes { writeFully(fd, $0) }
        guard header, body, fsync(fd) == 0 else {
            let code = errno
            key.destroy()
            throw .keyFile(reason: "cannot write the key file (errno \(code))")
        }
        syncDirectory(of: path)
        ok = true
        return key
    }

    private static func readFully(_ fd: Int32, into bytes: inout [UInt8]) -> Bool {
        bytes.withUnsafeMutableBytes { readFully(fd, $0) }
    }

    private static func readFully(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Bool {
        var done = 0
        while done < buffer.count {
            let n = read(fd, buffer.baseAddress! + done, buffer.count - done)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            done += n
        }
        return true
    }

    private static func writeFully(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Bool {
        var done = 0
        while done < buffer.count {
            let n = write(fd, buffer.baseAddress! + done, buffer.count - done)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            done += n
        }
        return true
    }

    private static func syncDirectory(of path: String) {
        // Not NSString.deletingLastPathComponent: Foundation traps on a one-character name ("k").
        let directory: String
        if let slash = path.lastIndex(of: "/") {
            directory = slash == path.startIndex ? "/" : String(path[..<slash])
        } else {
            directory = "."
        }
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }
}
