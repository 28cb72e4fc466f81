import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Telling a supervisor that the server is ready (and that it is stopping): a ready file
/// for any supervisor that can wait for a file, and the `sd_notify` datagram for systemd's
/// `Type=notify` services. No libsystemd: the datagram is a few lines of socket code.
public enum Readiness {
    /// Why a ready file could not be written.
    public struct WriteFailed: Error, Sendable, CustomStringConvertible {
        /// The path.
        public var path: String
        /// `errno`.
        public var code: Int32
        /// The path and the system's reason.
        public var description: String { "\(path): \(String(cString: strerror(code)))" }
    }

    /// Writes `port` and a newline to `path` atomically (a temporary file renamed into place),
    /// so a supervisor that sees the file sees all of it.
    /// - Parameters:
    ///   - path: the ready file.
    ///   - port: the port listened on.
    /// - Throws: ``WriteFailed``.
    public static func writeReadyFile(_ path: String, port: Int) throws(WriteFailed) {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw WriteFailed(path: temporary, code: errno) }
        var text = Array("\(port)\n".utf8)
        let written = write(fd, &text, text.count)
        let code = errno
        close(fd)
        guard written == text.count else {
            unlink(temporary)
            throw WriteFailed(path: temporary, code: written < 0 ? code : EIO)
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw WriteFailed(path: path, code: code)
        }
    }

    /// Removes the ready file (at a graceful stop); a missing file is no error.
    /// - Parameter path: the ready file.
    public static func removeReadyFile(_ path: String) {
        unlink(path)
    }

    /// Sends `state` (for example `READY=1`) to the socket named by `NOTIFY_SOCKET`, as
    /// `sd_notify(3)` does: a Unix datagram socket, a leading `@` naming the abstract namespace.
    /// - Parameters:
    ///   - state: newline-separated assignments, such as `"READY=1\nMAINPID=42"`.
    ///   - socketPath: the socket; by default `NOTIFY_SOCKET` from the environment.
    /// - Returns: whether a datagram was sent (false when no socket is named, or on failure).
    @discardableResult
    public static func notify(
        _ state: String, socketPath: String? = ProcessInfo.processInfo.environment["NOTIFY_SOCKET"]
    ) -> Bool {
        guard let socketPath, !socketPath.isEmpty else { return false }
        var name = Array(socketPath.utf8)
        let abstract = name.first == UInt8(ascii: "@")
        if abstract { name[0] = 0 }
        var address = sockaddr_un()
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard name.count < capacity, abstract || name.first == UInt8(ascii: "/") else { return false }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: name)
        }
        let length = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + name.count + (abstract ? 0 : 1)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let message = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                sendto(fd, message, message.count, Int32(MSG_NOSIGNAL), socketAddress, socklen_t(length))
            }
        }
        return sent == message.count
    }
}
