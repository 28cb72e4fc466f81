import Activation
import Dispatch
import Foundation
import HTTPClient
import PowerAuthProtocol
import ReferenceServer
import SecureCore
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What an operator sees: `/metrics`, the access log, readiness, log reopening.
@Suite("Operating the reference server: metrics, access log, readiness")
struct OperationsTests {
    static let token = "op-token-0123456789abcdef0123456789abcdef"
    static let rightPIN = "730185"
    static let wrongPIN = "268413"

    /// Every line of the file, parsed as a JSON object.
    static func lines(_ path: String) throws -> [(text: String, object: [String: Any])] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return try text.split(separator: "\n").map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            return (String(line), try #require(object))
        }
    }

    @Test(
        "a scripted session: every access-log line is one JSON object without any secret the session used",
        arguments: StoreBackend.available)
    func accessLogHoldsNoSecret(_ backend: StoreBackend) async throws {
        let directory = try temporaryDirectory()
        let logPath = directory + "/access.log"
        let s = try InProcessServer(
            directory: directory, backend: backend, adminToken: try AdminToken.copying(Self.token),
            accessLog: try AccessLog(path: logPath))
        defer { s.server.stop() }
        let device = try s.device()
        let prepared = try await s.backOffice.initActivation(userId: "alice")
        let id = try await device.activate(code: prepared.activationCode, pin: Self.rightPIN)
        try await s.backOffice.commit(id)
        try await device.service.validatePassword(try pin(Self.rightPIN))
        for _ in 1...2 {
            #expect(
                await failure { try await device.service.validatePassword(try pin(Self.wrongPIN)) } == .authentication)
        }
        _ = try await device.service.fetchActivationStatus()
        let (status, _) = try await s.rawClient().send(
            method: "GET", path: "/metrics", headers: ["X-SecurePIN-Admin-Token": Self.token])
        #expect(status == 200)
        s.server.stop()

        let configuration = s.server.activationServer.configuration
        let secrets: [String] = [
            Self.rightPIN, Self.wrongPIN, Self.token, prepared.activationCode,
            prepared.activationCode.replacingOccurrences(of: "-", with: ""),
            try s.server.configurationString(),
            Base64.encode(configuration.applicationKey), Base64.encode(configuration.applicationSecret),
            Base64.encode(configuration.masterKeyPair.publicKey),
            // Header names and body fields: no header and no body is ever logged.
            "X-PowerAuth", "pa_", "requestObject", "responseObject", "devicePublicKey", "activationCode",
            "challenge", "alice", "test phone",
        ]
        let lines = try Self.lines(logPath)
        #expect(lines.count >= 8)
        let allowed: Set<String> = [
            "time", "request_id", "client", "method", "endpoint", "status", "duration_ms", "activation_id",
        ]
        for line in lines {
            #expect(Set(line.object.keys).isSubset(of: allowed), "\(line.text)")
            // The client's address (loopback here: no trusted proxy, so the connection's).
            #expect(line.object["client"] as? String == "127.0.0.1", "\(line.text)")
            for key in ["time", "request_id", "method", "endpoint", "status", "duration_ms"] {
                #expect(line.object[key] != nil, "\(key) missing: \(line.text)")
            }
            for secret in secrets { #expect(!line.text.contains(secret), "the log holds '\(secret)': \(line.text)") }
        }
        let signed = lines.filter { $0.object["endpoint"] as? String == ActivationAPI.validateSignature.path }
        #expect(signed.map { $0.object["status"] as? Int } == [200, 401, 401])
        #expect(signed.allSatisfy { $0.object["activation_id"] as? String == id })
        // The new activation's identifier travels inside ECIES: the log cannot see it.
        let created = lines.first { $0.object["endpoint"] as? String == ActivationAPI.createActivation.path }
        #expect(created != nil)
        #expect(created?.object["activation_id"] == nil)
        #expect(Set(lines.compactMap { $0.object["request_id"] as? String }).count == lines.count)
    }

    @Test(
        "/metrics: counters by endpoint, status, factor set; the token on the main port, none on the metrics port",
        arguments: StoreBackend.available)
    func metrics(_ backend: StoreBackend) async throws {
        let s = try InProcessServer(
            backend: backend, adminToken: try AdminToken.copying(Self.token), metricsPort: 0)
        defer { s.server.stop() }
        let (device, _) = try await s.activeDevice(pin: Self.rightPIN)
        try await device.service.validatePassword(try pin(Self.rightPIN))
        for _ in 1...5 {
            #expect(
                await failure { try await device.service.validatePassword(try pin(Self.wrongPIN)) } == .authentication)
        }
        let client = try s.rawClient()
        #expect(try await client.send(method: "GET", path: "/metrics").status == 401)
        #expect(
            try await client.send(
                method: "GET", path: "/metrics", headers: ["X-SecurePIN-Admin-Token": "x" + Self.token]
            )
            .status == 403)
        let (status, body) = try await client.send(
            method: "GET", path: "/metrics", headers: ["X-SecurePIN-Admin-Token": Self.token])
        #expect(status == 200)
        let port = try #require(s.server.metricsPort)
        let side = try HTTPClient(configuration: .init(baseURL: URL(string: "http://127.0.0.1:\(port)")!))
        let (sideStatus, sideBody) = try await side.send(method: "GET", path: "/metrics")
        #expect(sideStatus == 200)
        #expect(try await side.send(method: "POST", path: "/admin/activation/list").status == 404)
        for page in [String(decoding: body, as: UTF8.self), String(decoding: sideBody, as: UTF8.self)] {
            let validate = ActivationAPI.validateSignature.path
            for expected in [
                "securepin_http_requests_total{endpoint=\"\(validate)\",status=\"200\"} 1",
                "securepin_http_requests_total{endpoint=\"\(validate)\",status=\"401\"} 5",
                "securepin_verifications_total{factors=\"possession_knowledge\",outcome=\"accepted\"} 1",
                "securepin_verifications_total{factors=\"possession_knowledge\",outcome=\"rejected\"} 5",
                "securepin_verification_failures_total 5",
                "securepin_activation_blocks_total{cause=\"failures\"} 1",
                "securepin_store_errors_total 0",
                "securepin_http_request_duration_seconds_count{endpoint=\"\(validate)\"} 6",
                "securepin_http_request_duration_seconds_bucket{endpoint=\"\(validate)\",le=\"+Inf\"} 6",
                "# TYPE securepin_http_open_connections gauge",
            ] {
                #expect(page.contains(expected + "\n"), "missing: \(expected)\n\(page)")
            }
            // Every sample line: a name, optional labels, a number.
            for line in page.split(separator: "\n") where !line.hasPrefix("#") {
                #expect(
                    line.wholeMatch(of: /[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? [0-9.e+-]+/) != nil, "\(line)"
                )
            }
        }
    }

    @Test("metrics counted from many threads (their shards) add up on the page")
    func metricsFromManyThreads() {
        let metrics = ServerMetrics()
        let path = ActivationAPI.validateSignature.path
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for i in 0..<250 {
                metrics.recordRequest(endpoint: path, status: i % 5 == 0 ? 401 : 200, seconds: 0.002)
                metrics.recordVerification(factors: .possessionKnowledge, accepted: i % 5 != 0)
            }
        }
        let page = metrics.render()
        let lines = Set(page.split(separator: "\n").map(String.init))
        #expect(lines.contains("securepin_http_requests_total{endpoint=\"\(path)\",status=\"200\"} 1600"))
        #expect(lines.contains("securepin_http_requests_total{endpoint=\"\(path)\",status=\"401\"} 400"))
        #expect(
            lines.contains("securepin_http_request_duration_seconds_bucket{endpoint=\"\(path)\",le=\"0.005\"} 2000"))
        #expect(lines.contains("securepin_http_request_duration_seconds_count{endpoint=\"\(path)\"} 2000"))
        #expect(
            lines.contains("securepin_verifications_total{factors=\"possession_knowledge\",outcome=\"accepted\"} 1600"))
        #expect(
            lines.contains("securepin_verifications_total{factors=\"possession_knowledge\",outcome=\"rejected\"} 400"))
    }

    @Test("access log line: exact text, and the duration as Swift prints micros / 1000")
    func accessLogLineText() throws {
        let time = Date(timeIntervalSince1970: 1_764_633_845.0071)  // 2025-12-02T00:04:05.007Z
        let id = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
        let entry = AccessLog.Entry(
            time: time, requestId: "5f0c9a1e2b7d4c36", method: "POST", endpoint: ActivationAPI.validateSignature.path,
            status: 401, seconds: 0.003412, activationId: id, clientAddress: "2001:db8::7")
        #expect(
            AccessLog.line(entry)
                == "{\"time\":\"2025-12-02T00:04:05.007Z\",\"request_id\":\"5f0c9a1e2b7d4c36\",\"client\":\"2001:db8::7\","
                + "\"method\":\"POST\",\"endpoint\":\"\(ActivationAPI.validateSignature.path)\",\"status\":401,"
                + "\"duration_ms\":3.412,\"activation_id\":\"\(id)\"}")
        // What the log never echoes: a request id that is not hex, a method it does not know, an
        // activation identifier that is not one, an unknown path, a client that is no IP address.
        let odd = AccessLog.Entry(
            time: Date(timeIntervalSince1970: 0), requestId: "<script>", method: "DELETE", endpoint: "/x?pin=1234",
            status: 404, seconds: 0, activationId: "1234", clientAddress: "\"},\"x\":\"1")
        #expect(
            AccessLog.line(odd)
                == "{\"time\":\"1970-01-01T00:00:00.000Z\",\"request_id\":\"invalid\",\"method\":\"other\","
                + "\"endpoint\":\"other\",\"status\":404,\"duration_ms\":0.0}")
        var checked = 0
        for micros in [0, 1, 9, 10, 99, 100, 999, 1000, 1001, 1010, 1100, 3050, 3412, 12_345_678, 86_400_000_000] {
            for seconds in [Double(micros) / 1_000_000, -Double(micros) / 1_000_000] {
                var e = entry
                e.seconds = seconds
                let expected = "\"duration_ms\":\(Double(Int((seconds * 1_000_000).rounded())) / 1000),"
                #expect(AccessLog.line(e).contains(expected), "\(micros) µs: \(AccessLog.line(e))")
                checked += 1
            }
        }
        #expect(checked == 30)
    }

    @Test("sd_notify: READY=1 reaches a datagram socket by path and in the abstract namespace")
    func notify() throws {
        let directory = try temporaryDirectory()
        for name in [directory + "/notify.sock", "@securepin-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"] {
            let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            #expect(fd >= 0)
            defer { close(fd) }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            var bytes = Array(name.utf8)
            if bytes[0] == UInt8(ascii: "@") { bytes[0] = 0 }
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
            let length = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + (bytes[0] == 0 ? 0 : 1)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(length)) }
            }
            #expect(bound == 0)
            #expect(Readiness.notify("READY=1\nMAINPID=\(getpid())", socketPath: name))
            var buffer = [UInt8](repeating: 0, count: 256)
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            #expect(n > 0)
            #expect(String(decoding: buffer.prefix(max(0, n)), as: UTF8.self) == "READY=1\nMAINPID=\(getpid())")
        }
        #expect(!Readiness.notify("READY=1", socketPath: nil))
        #expect(!Readiness.notify("READY=1", socketPath: "relative/path"))
    }

    @Test("securepin server: the ready file holds the port; SIGHUP reopens a rotated log file")
    func readyFileAndLogRotation() async throws {
        let directory = try temporaryDirectory()
        let tokenFile = directory + "/admin.token"
        #expect(
            FileManager.default.createFile(
                atPath: tokenFile, contents: Data(Self.token.utf8), attributes: [.posixPermissions: 0o600]))
        let ready = directory + "/ready"
        let log = directory + "/access.log"
        let child = try ReferenceServerProcess(
            executable: try builtExecutable("securepin"), database: directory + "/server.sqlite", tokenFile: tokenFile,
            logFile: log, extraArguments: ["--ready-file", ready])
        defer { child.kill9() }
        var text: String?
        for _ in 0..<100 where text == nil {
            text = try? String(contentsOfFile: ready, encoding: .utf8)
            if text == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(text == "\(child.port)\n")
        let client = try HTTPClient(configuration: .init(baseURL: URL(string: child.baseURL)!))
        _ = try await client.send(method: "GET", path: "/metrics")
        #expect(try Self.lines(log).count == 1)
        try FileManager.default.moveItem(atPath: log, toPath: log + ".1")
        child.signal(SIGHUP)
        var reopened = false
        for _ in 0..<100 where !reopened {
            _ = try await client.send(method: "GET", path: "/metrics")
            reopened = FileManager.default.fileExists(atPath: log)
            if !reopened { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(reopened)
        #expect(try Self.lines(log + ".1").count >= 1)
        #expect(try Self.lines(log).count >= 1)
        #expect(child.stop() == .exited(0))
        #expect(!FileManager.default.fileExists(atPath: ready))
    }
}
