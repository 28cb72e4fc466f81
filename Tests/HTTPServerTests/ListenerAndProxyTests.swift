import Foundation
import HTTPServer
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Whether this machine can bind the IPv6 loopback address (some containers have no IPv6).
private let ipv6LoopbackWorks: Bool = {
    let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    address.sin6_addr = in6addr_loopback
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
        }
    } == 0
}()

/// One `GET` over IPv6 loopback with `Connection: close`; the status and body.
private func getOverIPv6(port: Int, path: String) throws -> (Int, String) {
    let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw SocketFailure(step: "socket", code: errno) }
    defer { close(fd) }
    var timeout = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    address.sin6_port = in_port_t(UInt16(port).bigEndian)
    address.sin6_addr = in6addr_loopback
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
        }
    }
    guard connected == 0 else { throw SocketFailure(step: "connect", code: errno) }
    try RawHTTPClient.send(fd, Array("GET \(path) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8))
    let response = try RawHTTPClient.parse(try RawHTTPClient.readToEnd(fd))
    return (response.status, String(decoding: response.body, as: UTF8.self))
}

/// Answers with the connection's peer and the client the server settled on.
private func whoAmI(_ request: HTTPRequest) -> HTTPResponse {
    .text(status: 200, "\(request.peerAddress ?? "-") \(request.clientAddress ?? "-")")
}

@Suite("Listeners and trusted proxies", .serialized)
struct ListenerAndProxyTests {
    @Test("CIDR networks parse strictly and match by prefix, one family each")
    func networks() throws {
        let eight = try IPNetwork(parsing: "10.0.0.0/8")
        #expect(eight.contains("10.255.1.2"))
        #expect(!eight.contains("11.0.0.1"))
        #expect(!eight.contains("::ffff:10.0.0.1"), "an IPv4 network holds no IPv6 address, mapped or not")
        let host = try IPNetwork(parsing: "192.0.2.7")
        #expect(host.prefixLength == 32 && host.contains("192.0.2.7") && !host.contains("192.0.2.8"))
        let odd = try IPNetwork(parsing: "192.0.2.128/25")
        #expect(odd.contains("192.0.2.200") && !odd.contains("192.0.2.127"))
        let six = try IPNetwork(parsing: "2001:db8::/33")
        #expect(six.isIPv6 && six.contains("2001:db8:7fff::1") && !six.contains("2001:db8:8000::1"))
        #expect(!six.contains("10.0.0.1"))
        #expect(try IPNetwork(parsing: "0.0.0.0/0").contains("203.0.113.1"))
        #expect(try IPNetwork(parsing: "::1").description == "::1/128")
        #expect(eight.description == "10.0.0.0/8")
        for bad in [
            "", "10.0.0.0/", "10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/+8", "10.0.0.0/08", "::/129", "10.0.0/8",
            "example.org", " 10.0.0.1", "10.0.0.1 ", "10.0.0.0/8/8", "[::1]", "fe80::1%lo", "10.0.0.1:80",
        ] {
            #expect(throws: IPNetwork.ParseError.self, "\(bad)") { try IPNetwork(parsing: bad) }
        }
        let error = #expect(throws: IPNetwork.ParseError.self) { try IPNetwork(parsing: "10.0.0.0/99") }
        #expect(error.map { "\($0)" }?.hasPrefix("\"10.0.0.0/99\" is not an IP network") == true)
    }

    @Test("listen addresses are IPV4:PORT or [IPV6]:PORT, numeric only")
    func listenAddresses() throws {
        let four = try HTTPServer.Listener(parsing: "0.0.0.0:8080")
        #expect(four.host == "0.0.0.0" && four.port == 8080 && !four.isLoopback)
        let six = try HTTPServer.Listener(parsing: "[::1]:0")
        #expect(six.host == "::1" && six.port == 0 && six.isLoopback)
        #expect(six.description == "[::1]:0" && four.description == "0.0.0.0:8080")
        #expect(try HTTPServer.Listener(parsing: "127.3.4.5:1").isLoopback)
        #expect(!(try HTTPServer.Listener(parsing: "[::]:443").isLoopback))
        for bad in [
            "", "8080", ":8080", "0.0.0.0", "0.0.0.0:", "0.0.0.0:65536", "0.0.0.0:-1", "0.0.0.0:80x",
            "localhost:80", "::1:80", "[::1]80", "[::1]:", "[127.0.0.1]:80", "[::1", "0.0.0.0:000080",
        ] {
            #expect(throws: HTTPServer.Listener.ParseError.self, "\(bad)") {
                try HTTPServer.Listener(parsing: bad)
            }
        }
    }

    @Test(
        "one server answers on an IPv4 and an IPv6 listener, each with its own port",
        .enabled(if: ipv6LoopbackWorks, "this machine cannot bind ::1"))
    func twoListeners() throws {
        var configuration = HTTPServer.Configuration()
        configuration.additionalListeners = [HTTPServer.Listener(host: "::1", port: 0)]
        let server = HTTPServer(configuration: configuration, handler: whoAmI)
        try server.start()
        defer { server.stop() }
        let ports = server.ports
        #expect(ports.count == 2 && server.port == ports[0])
        let overFour = try RawHTTPClient.request(port: ports[0], method: "GET", path: "/")
        #expect(String(decoding: overFour.body, as: UTF8.self) == "127.0.0.1 127.0.0.1")
        let (status, body) = try getOverIPv6(port: ports[1], path: "/")
        #expect(status == 200 && body == "::1 ::1")
        server.stop()
        #expect(server.ports.isEmpty && !server.isRunning)
    }

    @Test("a listener that cannot bind stops the ones already started, and nothing is left running")
    func failingListener() throws {
        let holder = HTTPServer(configuration: .init(), handler: whoAmI)
        try holder.start()
        defer { holder.stop() }
        let taken = try #require(holder.port)
        var configuration = HTTPServer.Configuration()
        configuration.additionalListeners = [HTTPServer.Listener(host: "127.0.0.1", port: UInt16(taken))]
        let server = HTTPServer(configuration: configuration, handler: whoAmI)
        #expect(throws: HTTPServerError.startFailed(errno: EADDRINUSE)) { try server.start() }
        #expect(!server.isRunning && server.ports.isEmpty)
        // Started afterwards on free ports it works: nothing of the failed start lingers.
        configuration.additionalListeners = [HTTPServer.Listener(host: "127.0.0.1", port: 0)]
        let again = HTTPServer(configuration: configuration, handler: whoAmI)
        try again.start()
        defer { again.stop() }
        #expect(again.ports.count == 2)
        var bad = HTTPServer.Configuration()
        bad.additionalListeners = [HTTPServer.Listener(host: "localhost", port: 0)]
        #expect(throws: HTTPServerError.invalidAddress("localhost")) {
            try HTTPServer(configuration: bad, handler: whoAmI).start()
        }
    }

    @Test("X-Forwarded-For names the client only for a trusted proxy, right-most untrusted entry first")
    func forwardedFor() throws {
        func ask(_ port: Int, from source: String, _ forwarded: [String]) throws -> String {
            var head = "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            for value in forwarded { head += "X-Forwarded-For: \(value)\r\n" }
            let fd = try RawHTTPClient.connect(port: port, source: source)
            defer { close(fd) }
            try RawHTTPClient.send(fd, Array((head + "\r\n").utf8))
            return String(decoding: try RawHTTPClient.parse(try RawHTTPClient.readToEnd(fd)).body, as: UTF8.self)
        }
        // No trusted proxy: a forged header changes nothing.
        let plain = HTTPServer(configuration: .init(), handler: whoAmI)
        try plain.start()
        defer { plain.stop() }
        let plainPort = try #require(plain.port)
        #expect(try ask(plainPort, from: "127.0.0.1", ["203.0.113.9"]) == "127.0.0.1 127.0.0.1")

        var configuration = HTTPServer.Configuration()
        configuration.trustedProxies = [try IPNetwork(parsing: "127.0.0.1/32"), try IPNetwork(parsing: "10.0.0.0/8")]
        let server = HTTPServer(configuration: configuration, handler: whoAmI)
        try server.start()
        defer { server.stop() }
        let port = try #require(server.port)
        // The proxy appended the address it saw; what the client put left of it is not believed.
        #expect(try ask(port, from: "127.0.0.1", ["198.51.100.1, 203.0.113.9"]) == "127.0.0.1 203.0.113.9")
        // Trusted hops are skipped, across repeated header fields, in order.
        #expect(
            try ask(port, from: "127.0.0.1", ["198.51.100.1", "203.0.113.9,10.1.2.3", " 10.9.9.9 "])
                == "127.0.0.1 203.0.113.9")
        // IPv6 entries, bracketed or not.
        #expect(try ask(port, from: "127.0.0.1", ["[2001:db8::7]"]) == "127.0.0.1 2001:db8::7")
        // Every entry trusted: the left-most, the farthest hop vouched for.
        #expect(try ask(port, from: "127.0.0.1", ["10.0.0.5, 10.0.0.6"]) == "127.0.0.1 10.0.0.5")
        // A malformed entry stops the walk at the last trusted address.
        #expect(try ask(port, from: "127.0.0.1", ["203.0.113.9, unknown, 10.0.0.6"]) == "127.0.0.1 10.0.0.6")
        #expect(try ask(port, from: "127.0.0.1", ["203.0.113.9, unknown"]) == "127.0.0.1 127.0.0.1")
        // No header from the proxy: the proxy itself.
        #expect(try ask(port, from: "127.0.0.1", []) == "127.0.0.1 127.0.0.1")
        // From an address that is not a trusted proxy the header is ignored.
        #expect(try ask(port, from: "127.0.0.2", ["203.0.113.9"]) == "127.0.0.2 127.0.0.2")
    }

    @Test("a trusted proxy is exempt from the per-address connection limit; its clients are limited per client")
    func proxyLimits() throws {
        let release = Mutex(false)
        let entered = Counter()
        var configuration = HTTPServer.Configuration()
        configuration.maximumConnectionsPerAddress = 3
        configuration.trustedProxies = [try IPNetwork(parsing: "127.0.0.3/32")]
        let server = HTTPServer(configuration: configuration) { request in
            if request.path == "/hold" {
                _ = entered.increment()
                while !release.withLock({ $0 }) { usleep(5_000) }
            }
            return .text(status: 200, request.clientAddress ?? "-")
        }
        try server.start()
        defer { server.stop() }
        let port = try #require(server.port)
        func open(_ source: String, count: Int) throws -> [Int32] {
            try (0..<count).map { _ in try RawHTTPClient.connect(port: port, source: source) }
        }
        @Sendable func served(_ fd: Int32, forwarded: String? = nil, path: String = "/") -> Bool {
            let header = forwarded.map { "X-Forwarded-For: \($0)\r\n" } ?? ""
            guard
                (try? RawHTTPClient.send(
                    fd, Array("GET \(path) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\(header)\r\n".utf8))) != nil,
                let bytes = try? RawHTTPClient.readToEnd(fd), let response = try? RawHTTPClient.parse(bytes)
            else { return false }
            return response.status == 200
        }
        // From an ordinary address, connections past the limit are closed at once.
        let direct = try open("127.0.0.2", count: 6)
        usleep(200_000)
        let directServed = direct.map { fd -> Bool in
            defer { close(fd) }
            var head = "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            _ = head.withUTF8 { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard let bytes = try? RawHTTPClient.readToEnd(fd), let response = try? RawHTTPClient.parse(bytes) else {
                return false
            }
            return response.status == 200
        }
        #expect(directServed.filter { $0 }.count == 3, "\(directServed)")
        // From the trusted proxy, all of them: it carries many clients.
        let proxied = try open("127.0.0.3", count: 8)
        defer { for fd in proxied { close(fd) } }
        usleep(200_000)
        // Three requests of one forwarded client are held in the handler; its fourth is refused
        // with 429 while another forwarded client is served.
        var holders: [Thread] = []
        let holdResults = Mutex([Bool]())
        for index in 0..<3 {
            let fd = proxied[index]
            let thread = Thread {
                let ok = served(fd, forwarded: "198.51.100.4", path: "/hold")
                holdResults.withLock { $0.append(ok) }
            }
            thread.start()
            holders.append(thread)
        }
        for _ in 0..<400 where entered.value < 3 { usleep(5_000) }
        #expect(entered.value == 3)
        let fourth = proxied[3]
        try RawHTTPClient.send(
            fourth,
            Array("GET / HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 198.51.100.4\r\nConnection: close\r\n\r\n".utf8))
        let refused = try RawHTTPClient.parse(try RawHTTPClient.readToEnd(fourth))
        #expect(refused.status == 429)
        let other = proxied[4]
        try RawHTTPClient.send(
            other, Array("GET / HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 198.51.100.5\r\nConnection: close\r\n\r\n".utf8)
        )
        let answer = try RawHTTPClient.parse(try RawHTTPClient.readToEnd(other))
        #expect(answer.status == 200 && String(decoding: answer.body, as: UTF8.self) == "198.51.100.5")
        release.withLock { $0 = true }
        for _ in 0..<400 where holdResults.withLock({ $0.count }) < 3 { usleep(5_000) }
        #expect(holdResults.withLock { $0 } == [true, true, true])
        // Once they finished, the client is below its limit again.
        let fifth = proxied[5]
        try RawHTTPClient.send(
            fifth, Array("GET / HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 198.51.100.4\r\nConnection: close\r\n\r\n".utf8)
        )
        #expect(try RawHTTPClient.parse(try RawHTTPClient.readToEnd(fifth)).status == 200)
    }
}
