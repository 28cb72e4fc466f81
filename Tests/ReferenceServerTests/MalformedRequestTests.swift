import Activation
import Foundation
import HTTPClient
import PowerAuthProtocol
import ReferenceServer
import Testing

@Suite("Malformed requests get a 4xx and the server keeps serving")
struct MalformedRequestTests {
    struct Case: Sendable, CustomStringConvertible {
        var description: String
        var path: String
        var body: String
        var headers: [String: String] = [:]
        var status: Int
        var code: String
    }

    static let cases: [Case] = [
        Case(
            description: "bad JSON", path: "/pa/v3/activation/status", body: "{\"requestObject\":", status: 400,
            code: "ERR_REQUEST"),
        Case(
            description: "wrong types", path: "/pa/v3/activation/status",
            body: "{\"requestObject\":{\"activationId\":5,\"challenge\":true}}", status: 400, code: "ERR_REQUEST"),
        Case(
            description: "not a cryptogram", path: "/pa/v3/activation/create", body: "[1,2,3]",
            headers: [
                "X-PowerAuth-Encryption": "PowerAuth version=\"3.3\", application_key=\"AAAAAAAAAAAAAAAAAAAAAA==\""
            ],
            status: 400, code: "ERR_ENCRYPTION"),
        Case(
            description: "encrypted endpoint without its header", path: "/pa/v3/user/info", body: "{}", status: 400,
            code: "ERR_ENCRYPTION"),
        Case(
            description: "missing authorization header", path: "/pa/v3/signature/validate",
            body: "{\"requestObject\":{\"reason\":\"x\"}}", status: 401, code: "ERR_AUTHENTICATION"),
        Case(
            description: "garbage authorization header", path: "/pa/v3/signature/validate",
            body: "{\"requestObject\":{\"reason\":\"x\"}}",
            headers: ["X-PowerAuth-Authorization": "PowerAuth pa_activation_id=\"\u{7f}\", nonsense"], status: 401,
            code: "ERR_AUTHENTICATION"),
        Case(description: "unknown path", path: "/pa/v3/nothing-here", body: "{}", status: 404, code: "ERR_REQUEST"),
        Case(
            description: "admin without token", path: "/admin/activation/list", body: "{\"requestObject\":{}}",
            status: 401, code: "ERR_AUTHENTICATION"),
        Case(
            description: "admin with a wrong token", path: "/admin/activation/list", body: "{\"requestObject\":{}}",
            headers: ["X-SecurePIN-Admin-Token": "guess"], status: 403, code: "ERR_AUTHENTICATION"),
    ]

    @Test(
        "each malformed request gets its status and the PowerAuth error body", arguments: cases,
        StoreBackend.available)
    func malformed(_ c: Case, _ backend: StoreBackend) async throws {
        let s = try InProcessServer(backend: backend)
        defer { s.server.stop() }
        let client = try s.rawClient()
        let (status, body) = try await client.post(path: c.path, body: Data(c.body.utf8), headers: c.headers)
        #expect(status == c.status)
        let decoded = try WireCoding.decode(ResponseEnvelope<ErrorResponse>.self, Array(body))
        #expect(decoded.status == "ERROR")
        #expect(decoded.responseObject?.code == c.code)
        try await stillServes(s)
    }

    @Test("a method other than POST is 405 with the error body")
    func wrongMethod() async throws {
        let s = try InProcessServer()
        defer { s.server.stop() }
        let (status, body) = try await s.rawClient().send(method: "GET", path: "/pa/v3/activation/status")
        #expect(status == 405)
        #expect(
            try WireCoding.decode(ResponseEnvelope<ErrorResponse>.self, Array(body)).responseObject?.code
                == "ERR_REQUEST")
        try await stillServes(s)
    }

    @Test("a body over 64 KiB is refused with 413 before it is read")
    func hugeBody() async throws {
        let s = try InProcessServer()
        defer { s.server.stop() }
        let huge = Data(repeating: 0x7b, count: 200 * 1024)
        let (status, _) = try await s.rawClient().post(path: "/pa/v3/activation/create", body: huge)
        #expect(status == 413)
        try await stillServes(s)
    }

    /// A real exchange still works: the back office answers and a device activates.
    func stillServes(_ s: InProcessServer) async throws {
        let device = try s.device()
        let prepared = try await s.backOffice.initActivation(userId: "carol")
        _ = try await device.activate(code: prepared.activationCode, pin: "1357")
        #expect(try await s.backOffice.detail(prepared.activationId).state == "PENDING_COMMIT")
    }
}
