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
