import Dispatch
import Foundation
import HTTPClient
import HTTPServer
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// The loopback server the client talks to: echoes selected headers and the body, and
/// offers routes that fail or stall on purpose.
private func testServer() throws -> (HTTPServer, URL) {
    let server = HTTPServer { request in
        switch request.path {
        case "/echo":
            var text = ["User-Agent", "X-Trace", "X-Body-Length", "Content-Type", "X-Extra"]
                .map { "\($0)=\(request.header($0) ?? "-")" }.joined(separator: "\n")
            text += "\n" + request.method + "\n" + String(decoding: request.body, as: UTF8.self)
            return .text(status: 200, text)
        case "/status/401":
            let body = #"{"status":"ERROR","responseObject":{"code":"ERR_AUTHENTICATION","message":"failed"}}"#
            return HTTPResponse(status: 401, body: Data(body.utf8))
        case "/status/500": return .text(status: 500, "boom")
        case "/status/503": return .text(status: 503, "later")
        case "/slow":
            usleep(3_000_000)
            return .text(status: 200, "late")
        default: return .text(status: 404, "")
        }
    }
    try server.start()
    return (server, URL(string: "http://127.0.0.1:\(try #require(server.port))")!)
}

/// Signs nothing, but shows an interceptor sees the finished request (body included).
private struct BodyLengthInterceptor: HTTPRequestInterceptor {
    func intercept(_ request: inout URLRequest) {
        request.setValue("\(request.httpBody?.count ?? -1)", forHTTPHeaderField: "X-Body-Length")
    }
}

private func lines(_ body: Data) -> [String] {
    String(decoding: body, as: UTF8.self).components(separatedBy: "\n")
}

@Suite("HTTP client against the loopback server")
struct HTTPClientTests {
    @Test("a POST succeeds and carries body, content type, extra headers and the default user agent")
    func success() async throws {
        let (server, url) = try testServer()
        defer { server.stop() }
        let client = try HTTPClient(configuration: .init(baseURL: url))
        let (status, body) = try await client.post(
            path: "/echo", body: Data(#"{"a":1}"#.utf8), headers: ["X-Extra": "yes"])
        #expect(status == 200)
        #expect(
            lines(body) == [
                "User-Agent=\(HTTPClient.executableName) SecurePIN/\(HTTPClient.version) (Linux)", "X-Trace=-",
                "X-Body-Length=-", "Content-Type=application/json", "X-Extra=yes", "POST", #"{"a":1}"#,
            ])
        // The executable's name, then the library's version.
        let executable = CommandLine.arguments[0].split(separator: "/").last.map(String.init) ?? ""
        #expect(HTTPClient.defaultUserAgent == "\(executable) SecurePIN/0.1.0 (Linux)")
        #expect(
            HTTPClient.userAgent(application: "Demo App", version: "2.4 beta")
                == "Demo-App/2.4-beta SecurePIN/0.1.0 (Linux)")
    }

    @Test("a nil user agent sends no User-Agent header at all")
    func noUserAgent() async throws {
        let (server, url) = try testServer()
        defer { server.stop() }
        let client = try HTTPClient(configuration: .init(baseURL: url, userAgent: nil))
        let (_, body) = try await client.post(path: "/echo", body: Data())
        #expect(lines(body).first == "User-Agent=-")
    }

    @Test("interceptors run in order and their headers arrive; a custom user agent arrives")
    func interceptorsAndUserAgent() async throws {
        let (server, url) = try testServer()
        defer { server.stop() }
        let client = try HTTPClient(
            configuration: .init(
                baseURL: url.appendingPathComponent("/"), userAgent: "DemoApp/2.0",
                interceptors: [
                    HeaderInterceptor(["X-Trace": "first"]), BodyLengthInterceptor(),
                    HeaderInterceptor(["X-Trace": "second"]),
                ]))
        let (status, body) = try await client.post(path: "echo", body: Data(repeating: 0x41, count: 5))
        #expect(status == 200)
        #expect(Array(lines(body).prefix(3)) == ["User-Agent=DemoApp/2.0", "X-Trace=second", "X-Body-Length=5"])
    }

    @Test("a 4xx comes back as status and body (PowerAuth's error body)")
    func clientError() async throws {
        let (server, url) = try testServer()
        defer { server.stop() }
        let client = try HTTPClient(configuration: .init(baseURL: url))
        let (status, body) = try await client.post(path: "/status/401", body: Data("{}".utf8))
        #expect(status == 401)
        #expect(String(decoding: body, as: UTF8.self).contains(#""code":"ERR_AUTHENTICATION""#))
        #expect(try await client.send(method: "GET", path: "/missing").status == 404)
    }

    @Test("500 and 503 are serverError")
    func serverErrors() async throws {
        let (server, url) = try testServer()
        defer { server.stop() }
        let client = try HTTPClient(configuration: .init(baseURL: url))
        for code in [500, 503] {
            await #expect(throws: HTTPClientError.serverError(status: code)) {
                try await client.post(path: "/status/\(code)", body: Data())
            }
        }
    }

    @Test("a server slower than the client's sub-second timeout gives .timeout, never early")
    func timeout() async throws {
        let (server, url) = try testServer()
        let client = try HTTPClient(configuration: .init(baseURL: url, timeout: .milliseconds(300)))
        let started = ContinuousClock.now
        await #expect(throws: HTTPClientError.timeout) { try await client.post(path: "/slow", body: Data()) }
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .milliseconds(290), "not before the timeout: \(elapsed)")
        // No upper bound: on a loaded machine the timer may fire late, and the
        // `.timeout` itself already proves the client did not wait for the answer.
        print("timeout of 300 ms reported after \(elapsed)")
        await server.shutdown()
    }

    @Test("a port nobody listens on gives .connectionRefused")
    func connectionRefused() async throws {
        // Bound but not listening: the port stays ours, and connecting to it is refused.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        #expect(bound)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let client = try HTTPClient(configuration: .init(baseURL: URL(string: "http://127.0.0.1:\(port)")!))
        await #expect(throws: HTTPClientError.connectionRefused) { try await client.post(path: "/x", body: Data()) }
    }

    @Test("cancelling the task gives .cancelled")
    func cancelled() async throws {
        // The handler holds the request until the test lets it go, so the cancellation always
        // comes while the request is in flight, however late a loaded machine runs the test.
        let arrived = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let server = HTTPServer { _ in
            arrived.signal()
            _ = release.wait(timeout: .now() + 60)
            return .text(status: 200, "late")
        }
        try server.start()
        let client = try HTTPClient(
            configuration: .init(baseURL: URL(string: "http://127.0.0.1:\(try #require(server.port))")!))
        let task = Task { () async throws(HTTPClientError) -> Int in
            try await client.post(path: "/held", body: Data()).status
        }
        let reached = try await offPool { arrived.wait(timeout: .now() + 60) == .success }
        #expect(reached, "the request reached the server")
        task.cancel()
        await #expect(throws: HTTPClientError.cancelled) { try await task.value }
        release.signal()
        await server.shutdown()
    }

    @Test("configurations that cannot work are refused before anything is sent")
    func invalidConfigurations() throws {
        #expect(throws: HTTPClientError.invalidConfiguration("the base URL must be http or https")) {
            try HTTPClient(configuration: .init(baseURL: URL(string: "ftp://127.0.0.1/")!))
        }
        // Plain http only to loopback, unless allowed.
        let refusal = HTTPClientError.invalidConfiguration(
            "plain http to example.com, which is not loopback, is refused: use https (or allow insecure http "
                + "for a network you control)")
        #expect(throws: refusal) { try HTTPClient(configuration: .init(baseURL: URL(string: "http://example.com")!)) }
        for loopback in ["http://127.0.0.1:8080", "http://127.9.9.9", "http://localhost:1", "http://[::1]:8080"] {
            _ = try HTTPClient(configuration: .init(baseURL: URL(string: loopback)!))
        }
        _ = try HTTPClient(configuration: .init(baseURL: URL(string: "http://192.0.2.1")!, allowInsecureHTTP: true))
        _ = try HTTPClient(configuration: .init(baseURL: URL(string: "https://example.com")!))
        #expect(throws: HTTPClientError.invalidConfiguration("the timeout must be positive")) {
            try HTTPClient(configuration: .init(baseURL: URL(string: "http://127.0.0.1")!, timeout: .zero))
        }
        let https = URL(string: "https://127.0.0.1:8443")!
        #expect(throws: HTTPClientError.invalidConfiguration("no public key to pin")) {
            try HTTPClient(configuration: .init(baseURL: https, tlsValidation: .pinnedPublicKeys([])))
        }
        #expect(
            throws: HTTPClientError.invalidConfiguration(
                "a pinned key must be the 32-byte SHA-256 of a SubjectPublicKeyInfo")
        ) {
            try HTTPClient(
                configuration: .init(
                    baseURL: https, tlsValidation: .pinnedPublicKeys([Data(count: 32), Data(count: 31)])))
        }
        let missing = "/nonexistent/ca.pem"
        #expect(throws: HTTPClientError.tls(.unusableCAFile(missing))) {
            try HTTPClient(configuration: .init(baseURL: https, tlsValidation: .customCA(file: missing)))
        }
        // A file without a PEM certificate is no CA file either (here: this source file).
        #expect(throws: HTTPClientError.tls(.unusableCAFile(#filePath))) {
            try HTTPClient(
                configuration: .init(
                    baseURL: https, tlsValidation: .pinnedPublicKeys([Data(count: 32)], customCA: #filePath)))
        }
        #expect(
            "\(HTTPClientError.tls(.pinnedKeyMismatch))" == "TLS: the server's public key is not one of the pinned keys"
        )
    }

    @Test("https to a server that speaks plain HTTP is a TLS failure, not an unreachable server")
    func httpsToPlainServer() async throws {
        let (server, url) = try testServer()
        defer { server.stop() }
        let https = URL(string: url.absoluteString.replacingOccurrences(of: "http://", with: "https://"))!
        let client = try HTTPClient(configuration: .init(baseURL: https))
        await #expect {
            try await client.post(path: "/echo", body: Data())
        } throws: { error in
            guard case .tls(.handshakeFailed) = error as? HTTPClientError else { return false }
            return true
        }
    }
}
