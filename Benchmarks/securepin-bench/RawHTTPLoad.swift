import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The bench's load generator: each client is one keep-alive HTTP/1.1 connection to
/// 127.0.0.1 on a thread of its own, blocking POSIX socket calls, writing pre-built request
/// bytes and reading each response just far enough to know its status and where it ends.
///
/// Why not the real client transport (URLSession, over libcurl): in the same process it cost
/// about as much CPU per request as the server itself, so on 2 cores it capped the figure at
/// half of what the server can answer. This client costs one `write` and one or two `read`
/// calls per request, so the figure is the server's.
///
/// What it parses: the status line, `Content-Length`, `Connection: close`, `Transfer-Encoding:
/// chunked`; a response without a length ends when the server closes. When the server
/// closes a kept-alive connection before any byte of the answer arrived, the client connects
/// again and sends the request once more (counted in ``Lane/reconnects``): a request the
/// server had counted would then be a replay, answered 401 and visible in the audit check.
enum RawHTTPLoad {
    /// One client's work: where to connect and the requests, ready to write.
    struct Lane: Sendable {
        var port: UInt16
        var requests: [[UInt8]]
    }

    /// What one client saw.
    struct Result: Sendable {
        var latenciesNs: [UInt64] = []
        var statusFailures = 0
        var transportFailures = 0
        /// Connections opened again after the server closed one (the first is not counted).
        var reconnects = 0
        /// The first transport failure, for the report.
        var firstError: String?
    }

    /// The bytes of one `POST` with a JSON body and one extra header.
    static func request(path: String, port: UInt16, header: String, value: String, body: [UInt8]) -> [UInt8] {
        let head =
            "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\(header): \(value)\r\n"
            + "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"
        return Array(head.utf8) + body
    }

    /// Runs every lane on its own thread. Each connects first; then `go` runs (the caller
    /// starts its clocks there) and every lane starts sending, one request at a time.
    /// - Returns: each lane's result, in lane order, once all are done.
    static func run(_ lanes: [Lane], go: () -> Void) -> [Result] {
        let results = Results(count: lanes.count)
        let connected = DispatchSemaphore(value: 0)
        let start = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        for (index, lane) in lanes.enumerated() {
            done.enter()
            let thread = Thread {
                let client = Client(port: lane.port)
                var result = Result()
                // A failure here is not counted: the first request connects again, and fails if that fails.
                _ = client.openConnection()
                connected.signal()
                start.wait()
                result.latenciesNs.reserveCapacity(lane.requests.count)
                for request in lane.requests {
                    let sent = now()
                    switch client.exchange(request) {
                    case .answered(let status):
                        if status != 200 { result.statusFailures += 1 }
                    case .failed(let reason):
                        result.transportFailures += 1
                        if result.firstError == nil { result.firstError = reason }
                    }
                    result.latenciesNs.append(now() - sent)
                }
                result.reconnects = client.reconnects
                client.closeConnection()
                results.slots.withLock { $0[index] = result }
                done.leave()
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        for _ in lanes { connected.wait() }
        go()
        for _ in lanes { start.signal() }
        done.wait()
        return results.slots.withLock { $0.map { $0 ?? Result() } }
    }

    /// Where the lanes' threads leave their results.
    final class Results: Sendable {
        let slots: Mutex<[Result?]>
        init(count: Int) { slots = Mutex(Array(repeating: nil, count: count)) }
    }

    /// One keep-alive connection and its read buffer.
    final class Client {
        enum Answer {
            case answered(Int)
            case failed(String)
        }

        let port: UInt16
        private var fd: Int32 = -1
        private var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        /// The unread bytes are `buffer[head..<tail]`.
        private var head = 0
        private var tail = 0
        private(set) var reconnects = 0
        private var opened = 0

        init(port: UInt16) { self.port = port }

        /// Opens the connection; returns why it failed, or `nil`.
        func openConnection() -> String? {
            closeConnection()
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard descriptor >= 0 else { return "socket: \(String(cString: strerror(errno)))" }
            var one: Int32 = 1
            setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            // A server that stops answering fails the request after 30 s instead of hanging the bench.
            var timeout = timeval(tv_sec: 30, tv_usec: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
            let status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard status == 0 else {
                let reason = "connect to 127.0.0.1:\(port): \(String(cString: strerror(errno)))"
                close(descriptor)
                return reason
            }
            fd = descriptor
            head = 0
            tail = 0
            if opened > 0 { reconnects += 1 }
            opened += 1
            return nil
        }

        func closeConnection() {
            if fd >= 0 { close(fd) }
            fd = -1
        }

        /// Sends one request and reads its response. A connection the server closed before
        /// answering is opened again and the request sent once more.
        func exchange(_ request: [UInt8]) -> Answer {
            var retried = false
            while true {
                if fd < 0, let error = openConnection() { return .failed(error) }
                var answered = false
                let outcome = attempt(request, answered: &answered)
                if case .failed = outcome, !answered, !retried {
                    retried = true
                    closeConnection()
                    continue
                }
                return outcome
            }
        }

        private func attempt(_ request: [UInt8], answered: inout Bool) -> Answer {
            let sent = request.withUnsafeBytes { bytes -> Bool in
                var offset = 0
                while offset < bytes.count {
                    let n = send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                    if n < 0 && errno == EINTR { continue }
                    guard n > 0 else { return false }
                    offset += n
                }
                return true
            }
            guard sent else {
                let reason = "send: \(String(cString: strerror(errno)))"
                closeConnection()
                return .failed(reason)
            }
            // The header block.
            var end: Int?
            while true {
                end = headerEnd()
                if end != nil { break }
                switch fill() {
                case .some(let reason):
                    closeConnection()
                    return .failed(reason)
                case .none:
                    answered = true
                }
            }
            guard let end else { return .failed("unreachable") }
            let header = parseHeader(from: head, to: end)
            head = end
            guard let status = header.status else {
                closeConnection()
                return .failed("malformed status line")
            }
            // The body.
            if header.chunked {
                if let reason = skipChunkedBody() {
                    closeConnection()
                    return .failed(reason)
                }
            } else if let length = header.contentLength {
                while tail - head < length {
                    if let reason = fill() {
                        closeConnection()
                        return .failed(reason)
                    }
                }
                head += length
            } else {
                // No length: the body ends when the server closes.
                while fill() == nil { head = tail }
                closeConnection()
                return .answered(status)
            }
            if header.close { closeConnection() }
            return .answered(status)
        }

        /// Reads more bytes after `tail`; returns why it could not, or `nil`.
        private func fill() -> String? {
            if head == tail {
                head = 0
                tail = 0
            } else if tail == buffer.count {
                if head > 0 {
                    buffer.withUnsafeMutableBufferPointer { b in
                        let count = tail - head
                        UnsafeMutableRawPointer(b.baseAddress!).copyMemory(
                            from: UnsafeRawPointer(b.baseAddress! + head), byteCount: count)
                    }
                    tail -= head
                    head = 0
                } else {
                    buffer.append(contentsOf: repeatElement(0, count: buffer.count))
                }
            }
            while true {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + tail, $0.count - tail, 0) }
                if n < 0 && errno == EINTR { continue }
                if n < 0 { return "recv: \(String(cString: strerror(errno)))" }
                if n == 0 { return "the server closed the connection" }
                tail += n
                return nil
            }
        }

        /// The index after `\r\n\r\n` in the unread bytes, if they hold it.
        private func headerEnd() -> Int? {
            guard tail - head >= 4 else { return nil }
            let (from, to) = (head, tail)
            return buffer.withUnsafeBufferPointer { b -> Int? in
                var i = from
                while i + 3 < to {
                    if b[i] == 13 && b[i + 1] == 10 && b[i + 2] == 13 && b[i + 3] == 10 { return i + 4 }
                    i += 1
                }
                return nil
            }
        }

        private struct Header {
            var status: Int?
            var contentLength: Int?
            var close = false
            var chunked = false
        }

        /// Reads the status code and the three headers that say where the body ends, byte by
        /// byte: no `String`s, whose decoding and splitting cost the load generator (which shares
        /// the two cores with the server) about as much CPU as the socket calls.
        private func parseHeader(from start: Int, to end: Int) -> Header {
            buffer.withUnsafeBufferPointer { b -> Header in
                var header = Header()
                var lineStart = start
                var first = true
                var i = start
                while i + 1 < end {
                    guard b[i] == 13 && b[i + 1] == 10 else {
                        i += 1
                        continue
                    }
                    if i > lineStart {
                        if first {
                            Self.statusLine(b, lineStart, i, into: &header)
                            first = false
                        } else {
                            Self.headerLine(b, lineStart, i, into: &header)
                        }
                    }
                    lineStart = i + 2
                    i += 2
                }
                return header
            }
        }

        /// "HTTP/1.x NNN ...": the status code.
        private static func statusLine(
            _ b: UnsafeBufferPointer<UInt8>, _ from: Int, _ to: Int, into header: inout Header
        ) {
            guard to - from >= 12, named(b, from, from + 7, "http/1."), b[from + 8] == 32 else { return }
            header.status = decimal(b, from + 9, from + 12)
        }

        /// One `name: value` line: the three headers that say where the body ends.
        private static func headerLine(
            _ b: UnsafeBufferPointer<UInt8>, _ from: Int, _ to: Int, into header: inout Header
        ) {
            guard let colon = (from..<to).first(where: { b[$0] == 58 }) else { return }
            var valueStart = colon + 1
            while valueStart < to && (b[valueStart] == 32 || b[valueStart] == 9) { valueStart += 1 }
            var valueEnd = to
            while valueEnd > valueStart && (b[valueEnd - 1] == 32 || b[valueEnd - 1] == 9) { valueEnd -= 1 }
            if named(b, from, colon, "content-length") {
                header.contentLength = decimal(b, valueStart, valueEnd)
            } else if named(b, from, colon, "connection") {
                header.close = contains(b, valueStart, valueEnd, "close")
            } else if named(b, from, colon, "transfer-encoding") {
                header.chunked = contains(b, valueStart, valueEnd, "chunked")
            }
        }

        /// ASCII lower case of a byte.
        private static func lower(_ byte: UInt8) -> UInt8 { byte >= 65 && byte <= 90 ? byte + 32 : byte }

        /// Whether `b[from..<to]` is `name` (lower case), ignoring case.
        private static func named(_ b: UnsafeBufferPointer<UInt8>, _ from: Int, _ to: Int, _ name: StaticString)
            -> Bool
        {
            guard to - from == name.utf8CodeUnitCount else { return false }
            let expected = name.utf8Start
            return (0..<(to - from)).allSatisfy { lower(b[from + $0]) == expected[$0] }
        }

        /// Whether `b[from..<to]` contains `word` (lower case), ignoring case.
        private static func contains(_ b: UnsafeBufferPointer<UInt8>, _ from: Int, _ to: Int, _ word: StaticString)
            -> Bool
        {
            let count = word.utf8CodeUnitCount
            let expected = word.utf8Start
            guard to - from >= count else { return false }
            return (from...(to - count)).contains { at in (0..<count).allSatisfy { lower(b[at + $0]) == expected[$0] } }
        }

        /// The decimal number `b[from..<to]`, or `nil` (empty, a non-digit, or too long).
        private static func decimal(_ b: UnsafeBufferPointer<UInt8>, _ from: Int, _ to: Int) -> Int? {
            guard to > from, to - from <= 18 else { return nil }
            var value = 0
            for i in from..<to {
                guard b[i] >= 48 && b[i] <= 57 else { return nil }
                value = value * 10 + Int(b[i] - 48)
            }
            return value
        }

        /// Skips a chunked body and its trailer; returns why it could not, or `nil`.
        private func skipChunkedBody() -> String? {
            while true {
                var lineEnd: Int?
                while true {
                    lineEnd = lineEndIndex()
                    if lineEnd != nil { break }
                    if let reason = fill() { return reason }
                }
                guard let lineEnd else { return "unreachable" }
                let sizeText =
                    String(decoding: buffer[head..<lineEnd], as: UTF8.self)
                    .split(separator: ";").first.map(String.init) ?? ""
                guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else {
                    return "malformed chunk size"
                }
                head = lineEnd + 2
                if size == 0 {
                    // Trailer lines up to the empty line.
                    while true {
                        var end: Int?
                        while true {
                            end = lineEndIndex()
                            if end != nil { break }
                            if let reason = fill() { return reason }
                        }
                        guard let end else { return "unreachable" }
                        let empty = end == head
                        head = end + 2
                        if empty { return nil }
                    }
                }
                while tail - head < size + 2 {
                    if let reason = fill() { return reason }
                }
                head += size + 2
            }
        }

        /// The index of the next `\r\n` in the unread bytes.
        private func lineEndIndex() -> Int? {
            var i = head
            while i + 1 < tail {
                if buffer[i] == 13 && buffer[i + 1] == 10 { return i }
                i += 1
            }
            return nil
        }
    }
}
