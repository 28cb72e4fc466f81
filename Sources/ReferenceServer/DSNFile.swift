import Foundation
import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The PostgreSQL connection string of `securepin server --store postgres --dsn-file FILE`:
/// never on the command line (where `ps` shows it), read from a file straight into secure
/// memory, because it may hold a password.
///
/// The file holds one libpq connection string, key/value (`host=… dbname=… user=…
/// password=…`) or URI (`postgresql://…`); trailing whitespace is dropped. It must be a regular
/// file that neither group nor others can read (mode 0600 or 0400).
public enum DSNFile {
    /// The longest file accepted.
    public static let maximumByteCount = 4096

    /// Reads the connection string.
    /// - Parameter path: the file.
    /// - Returns: the connection string, in secure memory.
    /// - Throws: ``ReferenceServerError/invalidConfiguration(reason:)``.
    public static func load(at path: String) throws(ReferenceServerError) -> SecureBytes {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            throw .invalidConfiguration(reason: "cannot open the DSN file \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_mode & 0o077 == 0 else {
            throw .invalidConfiguration(reason: "the DSN file must be a regular file with mode 0600 or 0400")
        }
        let size = Int(info.st_size)
        guard (1...maximumByteCount).contains(size) else {
            throw .invalidConfiguration(reason: "the DSN file must hold 1 ... \(maximumByteCount) bytes")
        }
        let buffer = try secureMemory { () throws(SecureCoreError) in try SecureBytes(count: size) }
        defer { buffer.destroy() }
        let length = buffer.withUnsafeMutableBytes { target -> Int in
            var done = 0
            while done < size {
                let n = read(fd, target.baseAddress! + done, size - done)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { break }
                done += n
            }
            guard done == size else { return -1 }
            // Trailing blanks and line ends are not part of the string (a length, not a secret branch
            // on the password: whitespace can only end the file).
            var end = size
            while end > 0, [0x20, 0x09, 0x0a, 0x0d].contains(target[end - 1]) { end -= 1 }
            return end
        }
        guard length > 0 else { throw .invalidConfiguration(reason: "the DSN file is empty") }
        return try secureMemory { () throws(SecureCoreError) in
            try buffer.withUnsafeBytes { (bytes) throws(SecureCoreError) in
                try SecureBytes(copying: UnsafeRawBufferPointer(rebasing: bytes[0..<length]))
            }
        }
    }
}
