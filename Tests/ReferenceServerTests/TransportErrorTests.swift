import Activation
import ActivationHTTP
import Foundation
import HTTPServer
import PowerAuthProtocol
import TestSupport
import Testing

@Suite("HTTP transport errors")
struct TransportErrorTests {
    /// A failing server (5xx) and an absent one (connection refused) are both
    /// network errors, never a response the client could act on.
    @Test(arguments: [500, 502, 503])
    func serverFailuresAreNetworkErrors(status: Int) async throws {
        let server = HTTPServer { _ in HTTPResponse.text(status: status, "down for maintenance") }
        try server.start()
        let port = try #require(server.port)
        let transport = try HTTPActivationTransport(
            baseEndpointURL: "http://127.0.0.1:\(port)/enrollment-server", client: ActivationClientConfiguration())
        await #expect(throws: TransportError.network(reason: "the server failed (HTTP \(status))")) {
            try await transport.send(TransportRequest(path: "/pa/v3/activation/status", body: []), timeout: .seconds(5))
        }
        await server.shutdown()
        await #expect {
            try await transport.send(TransportRequest(path: "/pa/v3/activation/status", body: []), timeout: .seconds(5))
        } throws: { error in
            guard case TransportError.network = error else { return false }
            return true
        }
    }
}
