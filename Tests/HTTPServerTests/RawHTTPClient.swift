import Foundation
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A socket failure in the test client, with the step and errno.
struct SocketFailure: Error, CustomStringConvertible {
    let step: String
    let code: Int32
    var description: String { "\(step): errno \(code)" }
}

/// A parsed response from ``RawHTTPClient``.
struct RawResponse {
    let status: Int
    let headers: [String: String]
    let body: [UInt8]
}

/// A deliberately dumb HTTP client on a blocking loopback socket, so tests can send exactly
/// the bytes they mean (garbage, chunked bodies, oversized declarations). Every read is
/// bounded by a receive timeout.
enum RawHTTPClient {
    /// Connects to 127.0.0.1:port, from `source` (another loopback address stands for another client).
    static func connect(port: Int, timeoutSeconds: Int = 10, source: String = "127.0.0.1") throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SocketFailure(step: "socket", code: errno) }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let code = errno
            close(fd)
            throw SocketFailure(step: "bind", code: code)
        }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw SocketFailure(step: "connect", code: code)
        }
        return fd
    }

    /// Sends bytes, reads until the server closes, returns what arrived.
    static func exchange(port: Int, _ bytes: [UInt8]) throws -> [UInt8] {
        let fd = try connect(port: port)
        defer { close(fd) }
        try send(fd, bytes)
        return try readToEnd(fd)
    }

    static func send(_ fd: Int32, _ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { throw SocketFailure(step: "send", code: errno) }
            offset += sent
        }
    }

    static func readToEnd(_ fd: Int32) throws -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { return received }
            guard count > 0 else { throw SocketFailure(step: "recv", code: errno) }
            received += buffer[0..<count]
        }
    }

    /// One request with `Connection: close`.
    static func request(
        port: Int, method: String, path: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) throws -> RawResponse {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        return try parse(exchange(port: port, Array(head.utf8) + body))
    }

    static func parse(_ bytes: [UInt8]) throws -> RawResponse {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = bytes.indices.first(where: { bytes[$0...].starts(with: separator) }) else {
            throw SocketFailure(step: "parse: no header end in \(bytes.count) bytes", code: 0)
        }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw SocketFailure(step: "parse: status line \(lines[0])", code: 0)
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        return RawResponse(status: status, headers: headers, body: Array(bytes[(end + 4)...]))
    }
}

/// A thread-safe counter for handlers.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var current = 0
    private(set) var maximum = 0
    func increment() -> Int {
        lock.withLock {
            current += 1
            maximum = max(maximum, current)
            return current
        }
    }
    func decrement() { lock.withLock { current -= 1 } }
    var value: Int { lock.withLock { current } }
    var peak: Int { lock.withLock { maximum } }
}
