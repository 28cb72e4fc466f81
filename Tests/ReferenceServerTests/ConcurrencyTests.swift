import Activation
import ActivationHTTP
import Foundation
import PowerAuthProtocol
import ReferenceServer
import TestSupport
import Testing

@Suite("Concurrent wrong codes")
struct ConcurrencyTests {
    @Test(
        "64 clients send wrong codes for one activation at once: blocked at exactly the maximum",
        arguments: StoreBackend.available)
    func sixtyFourClients(_ backend: StoreBackend) async throws {
        let s = try InProcessServer(backend: backend)
        defer { s.server.stop() }
        let (device, id) = try await s.activeDevice()
        let body = try WireCoding.encode(RequestEnvelope(requestObject: ValidateSignatureRequest(reason: "RACE")))
        // 64 distinct, well-formed headers computed with a wrong PIN (each moves the device's counter).
        var headers: [String] = []
        for _ in 0..<64 {
            let header = try await device.service.signRequest(
                method: "POST", uriIdentifier: "/pa/signature/validate", body: body,
                authentication: .possessionWithPassword(try pin("9999")))
            headers.append(header.value)
        }
        let transports = try (0..<64).map { _ in try HTTPActivationTransport(configuration: device.configuration) }
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for (header, transport) in zip(headers, transports) {
                group.addTask {
                    try await transport.send(
                        TransportRequest(
                            path: ActivationAPI.validateSignature.path, headers: [AuthorizationHeader.name: header],
                            body: body), timeout: .seconds(60)
                    ).statusCode
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.count == 64)
        #expect(statuses.allSatisfy { $0 == 401 })
        let detail = try await s.backOffice.detail(id)
        #expect(detail.state == "BLOCKED")
        #expect(detail.failedAttempts == 5)
        let trail = try s.server.store.auditTrail(activationId: id)
        #expect(trail.filter { $0.outcome == .failure }.count == 4)
        #expect(trail.filter { $0.outcome == .failureBlocked }.count == 1)
        #expect(trail.filter { $0.outcome == .accepted }.isEmpty)
        // Every attempt that reached the counting step is in the audit table, counted or refused.
        #expect(trail.count <= 64)
        #expect(trail.count == trail.filter { $0.outcome != .accepted }.count)
    }
}
