import Foundation
import HTTPServer
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Slowloris (security review L1): before, 128 connections trickling one header line every few
/// seconds held every connection slot, and the inactivity timeout never fired because each
/// byte reset it. Now one address holds at most `maximumConnectionsPerAddress` slots, and a
/// connection that has not finished its headers by `headerDeadlineSeconds` is shut down.
@Suite("Slow clients", .serialized)
struct SlowClientTests {
    static func server(_ configure: (inout HTTPServer.Configuration) -> Void) throws -> (HTTPServer, Int) {
        var configuration = HTTPServer.Configuration()
        configure(&configuration)
        let server = HTTPServer(configuration: configuration) { _ in .text(status: 200, "ok") }
        try server.start()
        return (server, try #require(server.port))
    }

    @Test("a normal request succeeds while 200 slow connections from another address are open")
    func normalRequestWhileSlowlorisRuns() throws {
        let (server, port) = try Self.server { _ in }
        defer { server.stop() }
        var slow: [Int32] = []
        defer { for fd in slow { close(fd) } }
        for _ in 0..<200 {
            // Connections past the per-address limit are accepted and closed by the server;
            // the attacker's side does not notice until it writes.
            let fd = try RawHTTPClient.connect(port: port, source: "127.0.0.2")
            try? RawHTTPClient.send(fd, Array("POST /ping HTTP/1.1\r\nHost: x\r\n".utf8))
            slow.append(fd)
        }
        // Another header line on each, as a slowloris client would keep sending.
        for fd in slow { try? RawHTTPClient.send(fd, Array("X-Slow: 1\r\n".utf8)) }
        for _ in 0..<5 {
            let response = try RawHTTPClient.request(port: port, method: "GET", path: "/ping")
            #expect(response.status == 200)
        }
    }

    @Test("a connection still trickling its headers at the deadline is cut")
    func headerDeadline() throws {
        let (server, port) = try Self.server { $0.headerDeadlineSeconds = 1 }
        defer { server.stop() }
        let fd = try RawHTTPClient.connect(port: port, timeoutSeconds: 30)
        defer { close(fd) }
        // One header line every 200 ms (the 10 s inactivity timeout never fires) for up to 20 s.
        var cut = false
        try RawHTTPClient.send(fd, Array("GET /ping HTTP/1.1\r\nHost: x\r\n".utf8))
        for line in 0..<100 {
            usleep(200_000)
            do {
                try RawHTTPClient.send(fd, Array("X-Slow-\(line): 1\r\n".utf8))
            } catch {
                cut = true
                break
            }
            var probe: UInt8 = 0
            if recv(fd, &probe, 1, Int32(MSG_DONTWAIT)) == 0 {
                cut = true
                break
            }
        }
        #expect(cut, "the server kept a connection that never finished its headers")
        // A connection that sends its request at once is served, and its keep-alive wait counts anew.
        #expect(try RawHTTPClient.request(port: port, method: "GET", path: "/ping").status == 200)
    }

    /// Whether the server has shut `fd` down (end of stream, or a reset).
    static func isCut(_ fd: Int32) -> Bool {
        var probe: UInt8 = 0
        let got = recv(fd, &probe, 1, Int32(MSG_DONTWAIT))
        return got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    }

    @Test("a body trickled one byte at a time is cut at the deadline, which covers headers and body")
    func bodyDeadline() throws {
        let (server, port) = try Self.server { $0.headerDeadlineSeconds = 1 }
        defer { server.stop() }
        let fd = try RawHTTPClient.connect(port: port, timeoutSeconds: 30)
        defer { close(fd) }
        // Headers at once, then one body byte every 200 ms (the inactivity timeout never fires).
        try RawHTTPClient.send(fd, Array("POST /ping HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n".utf8))
        var cut = false
        for _ in 0..<100 {
            usleep(200_000)
            if (try? RawHTTPClient.send(fd, [0x41])) == nil || Self.isCut(fd) {
                cut = true
                break
            }
        }
        #expect(cut, "the server kept a connection that never finished its body")
        #expect(try RawHTTPClient.request(port: port, method: "GET", path: "/ping").status == 200)
    }

    @Test(
        "256 slow bodies and 256 slow headers from 32 addresses: a normal request is answered, the slow ones are cut"
    )
    func manyAddresses() throws {
        // Client and server share this process: room for 512 client and 256 server descriptors.
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        if limit.rlim_cur < 2048 {
            limit.rlim_cur = min(limit.rlim_max, 4096)
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        let deadline = 3
        let (server, port) = try Self.server { $0.headerDeadlineSeconds = deadline }
        defer { server.stop() }
        var slow: [Int32] = []
        defer { for fd in slow { close(fd) } }
        // 16 connections from each of 32 addresses (127.0.0.2 … 127.0.0.33), under the
        // per-address limit, so that limit alone does not stop them.
        for index in 0..<512 {
            let source = "127.0.0.\(2 + index % 32)"
            guard let fd = try? RawHTTPClient.connect(port: port, timeoutSeconds: 30, source: source) else { continue }
            slow.append(fd)
            let text =
                index % 2 == 0
                ? "POST /ping HTTP/1.1\r\nHost: x\r\nContent-Length: 4096\r\n\r\nA"  // a slow body
                : "POST /ping HTTP/1.1\r\nHost: x\r\n"  // slow headers
            try? RawHTTPClient.send(fd, Array(text.utf8))
        }
        #expect(slow.count >= 256)
        // They keep trickling; meanwhile the normal client asks, from 127.0.0.1.
        let started = ContinuousClock.now
        var answered = 0
        var retried = 0
        for round in 0..<5 {
            for (i, fd) in slow.enumerated() where i % 5 == round {
                try? RawHTTPClient.send(fd, Array((i % 2 == 0 ? "A" : "X-Slow: 1\r\n").utf8))
            }
            // A connection can meet the limit while an evicted one is still closing; a client that
            // is refused connects again (at most twice, 100 ms apart), as a browser or an SDK would.
            for attempt in 0..<3 {
                if let response = try? RawHTTPClient.request(port: port, method: "GET", path: "/ping"),
                    response.status == 200
                {
                    answered += 1
                    if attempt > 0 { retried += 1 }
                    break
                }
                usleep(100_000)
            }
        }
        let elapsed = ContinuousClock.now - started
        print(
            "manyAddresses: \(answered) of 5 normal requests answered (\(retried) on a later connection) in "
                + "\(elapsed) beside \(slow.count) slow ones")
        #expect(answered == 5)
        // Past the deadline (and a watchdog round), every slow connection is cut.
        usleep(UInt32(deadline) * 1_000_000 + 1_500_000)
        let stillOpen = slow.filter { !Self.isCut($0) }.count
        #expect(stillOpen == 0, "\(stillOpen) slow connections outlived the deadline")
        #expect(try RawHTTPClient.request(port: port, method: "GET", path: "/ping").status == 200)
    }

    @Test("the per-address limit and the deadline are validated")
    func validation() {
        for bad: (inout HTTPServer.Configuration) -> Void in [
            { $0.maximumConnectionsPerAddress = -1 }, { $0.headerDeadlineSeconds = -1 },
            { $0.headerDeadlineSeconds = 86_401 },
        ] {
            #expect(throws: HTTPServerError.self) { _ = try Self.server(bad) }
        }
    }
}
