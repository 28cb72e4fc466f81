import Foundation
import HTTPServer
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The reference server's access log: one JSON object per line, one line per answered request.
///
/// ```json
/// {"time":"2026-11-30T21:04:05.123Z","request_id":"5f0c9a1e2b7d4c36","client":"192.0.2.7","method":"POST","endpoint":"/pa/v3/activation/status","status":200,"duration_ms":3.412,"activation_id":"…"}
/// ```
///
/// A line holds only what ``Entry`` holds: the time, a request identifier, the client's address
/// (`HTTPRequest.clientAddress`: behind a trusted proxy the forwarded client's; written only
/// when it is an IP address), the method (or `other`), the endpoint (a known path or `other`, see
/// ``ServerMetrics/endpoint(for:)``), the status, the duration and, where known, the activation
/// identifier (written only when it has the form of one). Never a header value, a body, a PIN, an authentication code, a key or a
/// token: there is no way to hand the log one.
///
/// The log goes to standard error, or appends to a file that ``reopen()`` opens again by name,
/// for log rotation (`securepin server` calls it on SIGHUP). Each line is one `write(2)`, made
/// without holding a lock (every request writes one): the kernel keeps such a write whole in an
/// `O_APPEND` file and in a pipe (a line is far below `PIPE_BUF`), so lines from many threads do
/// not mix. Only a write cut short (a full disk) ends its line with a second write, which may
/// come after another thread's line.
public final class AccessLog: Sendable {
    /// One answered request.
    public struct Entry: Sendable, Equatable {
        /// When the request was answered.
        public var time: Date
        /// The identifier the response carried in `X-Request-Id`.
        public var requestId: String
        /// `GET`, `POST`, or `other`.
        public var method: String
        /// A known path or `other`.
        public var endpoint: String
        /// The HTTP status sent.
        public var status: Int
        /// From the complete request to the response, in seconds.
        public var seconds: Double
        /// The activation the request concerned, when known.
        public var activationId: String?
        /// The client's IP address, when known.
        public var clientAddress: String?

        /// Creates an entry.
        /// - Parameters:
        ///   - time: when the request was answered.
        ///   - requestId: the request identifier.
        ///   - method: the method (anything but `GET` and `POST` is written as `other`).
        ///   - endpoint: the endpoint label.
        ///   - status: the status.
        ///   - seconds: the duration.
        ///   - activationId: the activation identifier, if known.
        ///   - clientAddress: the client's IP address, if known.
        public init(
            time: Date, requestId: String, method: String, endpoint: String, status: Int, seconds: Double,
            activationId: String? = nil, clientAddress: String? = nil
        ) {
            self.clientAddress = clientAddress
            self.time = time
            self.requestId = requestId
            self.method = method
            self.endpoint = endpoint
            self.status = status
            self.seconds = seconds
            self.activationId = activationId
        }
    }

    /// Why the log file could not be opened.
    public struct OpenFailed: Error, Sendable, CustomStringConvertible {
        /// The path.
        public var path: String
        /// `errno`.
        public var code: Int32
        /// The path and the system's reason.
        public var description: String { "\(path): \(String(cString: strerror(code)))" }
    }

    /// An open descriptor, closed (if the log opened it) when its last user lets go of it: a
    /// ``reopen()`` swaps in a new one while writers may still be writing to the old.
    private final class Descriptor: Sendable {
        let fd: Int32
        let owned: Bool
        init(_ fd: Int32, owned: Bool) {
            self.fd = fd
            self.owned = owned
        }
        deinit { if owned { close(fd) } }
    }

    private let path: String?
    /// The lock is held only to take or swap the reference, never across a `write(2)`.
    private let descriptor: Mutex<Descriptor>

    /// A log on standard error.
    public init() {
        path = nil
        descriptor = Mutex(Descriptor(2, owned: false))
    }

    /// A log appended to `path` (created 0640 when missing).
    /// - Parameter path: the file.
    /// - Throws: ``OpenFailed``.
    public init(path: String) throws(OpenFailed) {
        self.path = path
        descriptor = Mutex(Descriptor(try Self.openFile(path), owned: true))
    }

    private static func openFile(_ path: String) throws(OpenFailed) -> Int32 {
        let fd = Glibc.open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o640)
        guard fd >= 0 else { throw OpenFailed(path: path, code: errno) }
        return fd
    }

    /// Opens the file again by name (after a rotation moved it away); a log on standard
    /// error does nothing. On failure the old file stays in use.
    /// - Throws: ``OpenFailed``.
    public func reopen() throws(OpenFailed) {
        guard let path else { return }
        let fresh = Descriptor(try Self.openFile(path), owned: true)
        // The old descriptor is closed when the last write still using it ends.
        let old = descriptor.withLock { current in
            defer { current = fresh }
            return current
        }
        _ = old
    }

    /// Writes one entry as one line.
    /// - Parameter entry: the entry.
    public func write(_ entry: Entry) {
        var line = Self.bytes(entry)
        line.append(0x0A)
        let target = descriptor.withLock { $0 }
        var offset = 0
        while offset < line.count {
            let n = line.withUnsafeBytes { Glibc.write(target.fd, $0.baseAddress! + offset, line.count - offset) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return }
            offset += n
        }
    }

    /// The JSON text of an entry (without the newline).
    /// - Parameter entry: the entry.
    /// - Returns: one JSON object.
    public static func line(_ entry: Entry) -> String { String(decoding: bytes(entry), as: UTF8.self) }

    /// The line as bytes, built without intermediate strings (it is written for every request).
    static func bytes(_ entry: Entry) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(224)
        func append(_ text: StaticString) {
            text.withUTF8Buffer { out.append(contentsOf: $0) }
        }
        func append(_ text: String) { out.append(contentsOf: text.utf8) }
        append("{\"time\":\"")
        timestamp(entry.time, into: &out)
        append("\",\"request_id\":\"")
        if isHex(entry.requestId) { append(entry.requestId) } else { append("invalid") }
        if let client = entry.clientAddress, IPNetwork.isAddress(client) {
            append("\",\"client\":\"")
            append(client)
        }
        append("\",\"method\":\"")
        if entry.method == "GET" || entry.method == "POST" { append(entry.method) } else { append("other") }
        append("\",\"endpoint\":\"")
        append(ServerMetrics.endpoint(for: entry.endpoint))
        append("\",\"status\":")
        decimal(entry.status, into: &out)
        append(",\"duration_ms\":")
        milliseconds(entry.seconds, into: &out)
        if let id = entry.activationId, isActivationId(id) {
            append(",\"activation_id\":\"")
            append(id)
            append("\"")
        }
        append("}")
        return out
    }

    /// `n` in decimal (the digits appended lowest first, then put in order in place: no
    /// array per number, as a line holds about ten of them).
    private static func decimal(_ n: Int, into out: inout [UInt8]) {
        if n < 0 { out.append(UInt8(ascii: "-")) }
        let first = out.count
        var magnitude = n.magnitude
        repeat {
            out.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        out[first...].reverse()
    }

    /// `n` with at least two digits.
    private static func twoDigits(_ n: Int32, into out: inout [UInt8]) {
        if n < 10 { out.append(UInt8(ascii: "0")) }
        decimal(Int(n), into: &out)
    }

    /// Seconds as milliseconds with up to three decimals and at least one (`3.412`, `3.4`,
    /// `3.0`): the text Swift prints for the `Double` `micros / 1000`, without making one.
    private static func milliseconds(_ seconds: Double, into out: inout [UInt8]) {
        let scaled = (seconds * 1_000_000).rounded()
        guard scaled.isFinite, scaled.magnitude < 1e15 else {
            // Over 31 years, or not a number: clamped, never a trap.
            let clamped = scaled.isFinite ? min(max(scaled, -1e18), 1e18) : 0
            out.append(contentsOf: "\(Double(Int(clamped)) / 1000)".utf8)
            return
        }
        let micros = Int(scaled)
        if micros < 0 { out.append(UInt8(ascii: "-")) }
        decimal(Int(micros.magnitude / 1000), into: &out)
        out.append(UInt8(ascii: "."))
        var fraction = Int(micros.magnitude % 1000)
        var width = 3
        while width > 1 && fraction % 10 == 0 {
            fraction /= 10
            width -= 1
        }
        if width == 3 && fraction < 100 { out.append(UInt8(ascii: "0")) }
        if width >= 2 && fraction < 10 { out.append(UInt8(ascii: "0")) }
        decimal(fraction, into: &out)
    }

    /// Whether `text` has the form of an activation identifier (a lower-case UUID).
    static func isActivationId(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (i, byte) in bytes.enumerated() {
            if [8, 13, 18, 23].contains(i) {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                guard (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte) else { return false }
            }
        }
        return true
    }

    /// Whether the identifier is 1 to 32 lower-case hex digits (as ``ReferenceServer`` makes
    /// them; any other is written as `invalid`).
    private static func isHex(_ text: String) -> Bool {
        (1...32).contains(text.utf8.count)
            && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// RFC 3339 in UTC with milliseconds.
    static func timestamp(_ date: Date) -> String {
        var out: [UInt8] = []
        timestamp(date, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private static func timestamp(_ date: Date, into out: inout [UInt8]) {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        let millis = Int((date.timeIntervalSince1970 - Double(seconds)) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        decimal(Int(parts.tm_year) + 1900, into: &out)
        out.append(UInt8(ascii: "-"))
        twoDigits(parts.tm_mon + 1, into: &out)
        out.append(UInt8(ascii: "-"))
        twoDigits(parts.tm_mday, into: &out)
        out.append(UInt8(ascii: "T"))
        twoDigits(parts.tm_hour, into: &out)
        out.append(UInt8(ascii: ":"))
        twoDigits(parts.tm_min, into: &out)
        out.append(UInt8(ascii: ":"))
        twoDigits(parts.tm_sec, into: &out)
        out.append(UInt8(ascii: "."))
        if millis < 100 { out.append(UInt8(ascii: "0")) }
        if millis < 10 { out.append(UInt8(ascii: "0")) }
        decimal(millis, into: &out)
        out.append(UInt8(ascii: "Z"))
    }
}
