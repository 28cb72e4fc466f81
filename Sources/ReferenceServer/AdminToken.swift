import Foundation
import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The back office's admin token, kept in secure memory. A token travels in
/// the `X-SecurePIN-Admin-Token` header, so it is printable: 32 ... 256 bytes
/// of visible ASCII (at least 128 bits as hex digits).
public enum AdminToken {
    /// The longest token accepted.
    public static let maximumByteCount = 256
    /// The shortest token accepted: 32 characters, 128 bits as hex digits.
    public static let minimumByteCount = 32

    /// A fresh token: 32 random bytes as 64 lower-case hex digits, made in secure memory.
    /// - Returns: the token.
    /// - Throws: ``ReferenceServerError/invalidConfiguration(reason:)`` when secure memory fails.
    public static func random() throws(ReferenceServerError) -> SecureBytes {
        let raw = try secureMemory { () throws(SecureCoreError) in try SecureBytes.random(count: 32) }
        defer { raw.destroy() }
        let token = try secureMemory { () throws(SecureCoreError) in try SecureBytes(count: 64) }
        raw.withUnsafeBytes { source in
            token.withUnsafeMutableBytes { target in
                for (i, byte) in source.enumerated() {
                    target[2 * i] = ConstantTimeEncoding.hexDigit(byte >> 4)
                    target[2 * i + 1] = ConstantTimeEncoding.hexDigit(byte & 0x0f)
                }
            }
        }
        return token
    }

    /// Copies a token given as text (a command-line argument) into secure memory.
    /// - Parameter text: the token.
    /// - Returns: the token.
    /// - Throws: ``ReferenceServerError/invalidConfiguration(reason:)`` for an empty, too long or unprintable token.
    public static func copying(_ text: String) throws(ReferenceServerError) -> SecureBytes {
        var copy = text
        let token: SecureBytes? = copy.withUTF8 { bytes in try? SecureBytes(copying: UnsafeRawBufferPointer(bytes)) }
        guard let token else { throw .invalidConfiguration(reason: "the admin token must not be empty") }
        try validate(token)
        return token
    }

    /// Reads a token from a file (one line; a final newline is dropped). The
    /// file must not be accessible to group or others.
    /// - Parameter path: the file.
    /// - Returns: the token.
    /// - Throws: ``ReferenceServerError/invalidConfiguration(reason:)``.
    public static func load(at path: String) throws(ReferenceServerError) -> SecureBytes {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            throw .invalidConfiguration(
                reason: "cannot open the admin token file \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_mode & 0o077 == 0 else {
            throw .invalidConfiguration(reason: "the admin token file must be a regular file with mode 0600")
        }
        let size = Int(info.st_size)
        guard (1...maximumByteCount + 1).contains(size) else {
            throw .invalidConfiguration(reason: "the admin token file must hold 1 ... 256 bytes")
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
            return target[size - 1] == 0x0a ? size - 1 : size
        }
        guard length > 0 else { throw .invalidConfiguration(reason: "the token file is empty") }
        let token = try secureMemory { () throws(SecureCoreError) in
            try buffer.withUnsafeBytes { (bytes) throws(SecureCoreError) in
                try SecureBytes(copying: UnsafeRawBufferPointer(rebasing: bytes[0..<length]))
            }
        }
        try validate(token)
        return token
    }

    /// Writes a token to a new file with mode 0600.
    /// - Parameters:
    ///   - token: the token.
    ///   - path: the file (must not exist).
    /// - Throws: ``ReferenceServerError/invalidConfiguration(reason:)``.
    public static func store(_ token: SecureBytes, to path: String) throws(ReferenceServerError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .invalidConfiguration(reason: "cannot create the token file (errno \(errno))") }
        defer { close(fd) }
        let written = token.withUnsafeBytes { bytes in write(fd, bytes.baseAddress, bytes.count) == bytes.count }
        guard written, fsync(fd) == 0 else {
            throw .invalidConfiguration(reason: "cannot write the token file")
        }
    }

    private static func validate(_ token: SecureBytes) throws(ReferenceServerError) {
        // Not a secret-dependent exit: each byte's class is folded in, every byte is read.
        let printable = token.withUnsafeBytes { bytes in
            var bad: UInt8 = 0
            for byte in bytes { bad |= (byte &- 0x21) & 0x80 | (0x7e &- byte) & 0x80 }
            return bad == 0
        }
        guard printable, (minimumByteCount...maximumByteCount).contains(token.count) else {
            throw .invalidConfiguration(
                reason: "the admin token must be \(minimumByteCount) ... \(maximumByteCount) visible ASCII characters"
                    + " (at least 128 bits; `securepin server` makes a good one when given none)")
        }
    }
}

/// Runs a secure-memory call and reports its failure as `failure` says (by default a
/// configuration error), with the core's error in the reason.
func secureMemory<R>(
    reporting failure: (String) -> ReferenceServerError = ReferenceServerError.invalidConfiguration(reason:),
    _ body: () throws(SecureCoreError) -> R
) throws(ReferenceServerError) -> R {
    do throws(SecureCoreError) {
        return try body()
    } catch {
        throw failure("secure memory: \(error)")
    }
}
