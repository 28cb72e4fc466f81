import Activation
import ActivationServer
import ActivationTestSupport
import Foundation
import PowerAuthProtocol
import SecureCore
import Testing

@Suite("Server verification and failure counting")
struct VerificationTests {
    /// Signs `count` requests without sending them.
    func headers(
        _ service: ActivationService, count: Int, authentication: ActivationAuthentication, path: String = "/r"
    )
        async throws -> [String]
    {
        var out: [String] = []
        for _ in 0..<count {
            out.append(
                try await service.signRequest(
                    method: "POST", uriIdentifier: path, body: [], authentication: authentication
                )
                .value)
        }
        return out
    }

    func verify(_ h: Harness, _ header: String, path: String = "/r", body: [UInt8] = []) -> Bool {
        (try? h.server.verifyAuthorization(header: header, method: "POST", uriIdentifier: path, body: body)) != nil
    }

    @Test("knowledge or biometry alone is refused before anything is verified, and not counted (upstream's lists)")
    func singleFactorSetsRefused() async throws {
        let h = try Harness()
        let service = try h.makeService()
        let id = try await h.activate(service)
        let signed = try AuthorizationHeader.parse(
            try await headers(service, count: 1, authentication: .possessionWithPassword(try pin("0000")))[0])
        for set in [FactorSet.knowledge, .biometry] {
            // One component: the first 16 bytes of the two-factor code (3.1+ Base64 format).
            let components = try #require(Base64.decode(signed.authenticationCode))
            let lone = try AuthorizationHeader(
                activationId: signed.activationId, applicationKey: signed.applicationKey, nonce: signed.nonce,
                factorSet: set, authenticationCode: Base64.encode(Array(components.prefix(16))),
                version: signed.version)
            #expect(!verify(h, lone.value), "\(set)")
        }
        #expect(try h.server.activationDetail(id).failedAttempts == 0)
        // The same wrong code as possession_knowledge counts.
        #expect(!verify(h, signed.value))
        #expect(try h.server.activationDetail(id).failedAttempts == 1)
    }

    @Test("concurrent wrong codes are counted exactly", arguments: ProtocolAlgorithm.allCases)
    func concurrentFailuresCountExactly(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm, maxFailedAttempts: 50)
        let service = try h.makeService()
        let id = try await h.activate(service)
        let wrong = try await headers(service, count: 16, authentication: .possessionWithPassword(try pin("0000")))
        let server = h.server
        let accepted = await withTaskGroup(of: Bool.self) { group in
            for header in wrong {
                group.addTask {
                    (try? server.verifyAuthorization(header: header, method: "POST", uriIdentifier: "/r", body: []))
                        != nil
                }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(accepted == 0)
        #expect(try h.server.activationDetail(id).failedAttempts == 16)
        #expect(try h.server.activationDetail(id).state == .active)
    }

    @Test("concurrent wrong codes past the limit block at exactly the limit", arguments: ProtocolAlgorithm.allCases)
    func concurrentFailuresBlock(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm, maxFailedAttempts: 5)
        let service = try h.makeService()
        let id = try await h.activate(service)
        let wrong = try await headers(service, count: 12, authentication: .possessionWithPassword(try pin("0000")))
        let server = h.server
        await withTaskGroup(of: Void.self) { group in
            for header in wrong {
                group.addTask {
                    _ = try? server.verifyAuthorization(header: header, method: "POST", uriIdentifier: "/r", body: [])
                }
            }
        }
        let detail = try h.server.activationDetail(id)
        #expect(detail.state == .blocked)
        #expect(detail.failedAttempts == 5)
    }

    @Test(
        "knowledge resets the count, possession alone does not; possession failures are not counted (V3.3 and V4)",
        arguments: ProtocolAlgorithm.allCases)
    func resetRules(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        let id = try await h.activate(service)
        for header in try await headers(service, count: 2, authentication: .possessionWithPassword(try pin("0000"))) {
            #expect(!verify(h, header))
        }
        let possession = try await headers(service, count: 1, authentication: .possession())
        #expect(verify(h, possession[0]))
        #expect(try h.server.activationDetail(id).failedAttempts == 2)
        // A possession code over other data fails, and PowerAuth V3 does not count it.
        let tampered = try await headers(service, count: 1, authentication: .possession())
        #expect(!verify(h, tampered[0], body: [1]))
        #expect(try h.server.activationDetail(id).failedAttempts == 2)
        // The same with a knowledge factor counts.
        let wrong = try await headers(service, count: 1, authentication: .possessionWithPassword(try pin("1234")))
        #expect(!verify(h, wrong[0], body: [1]))
        #expect(try h.server.activationDetail(id).failedAttempts == 3)
        let knowledge = try await headers(service, count: 1, authentication: .possessionWithPassword(try pin("1234")))
        #expect(verify(h, knowledge[0]))
        #expect(try h.server.activationDetail(id).failedAttempts == 0)
    }

    @Test("a replayed request fails; it counts when it claims a second factor", arguments: ProtocolAlgorithm.allCases)
    func replay(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        let id = try await h.activate(service)
        let header = try await headers(service, count: 1, authentication: .possession())[0]
        #expect(verify(h, header))
        #expect(!verify(h, header))
        #expect(try h.server.activationDetail(id).failedAttempts == 0)
        let twoFactor = try await headers(service, count: 1, authentication: .possessionWithPassword(try pin("1234")))[
            0]
        #expect(verify(h, twoFactor))
        #expect(!verify(h, twoFactor))
        #expect(try h.server.activationDetail(id).failedAttempts == 1)
    }

    @Test("a replayed wire request to the API is refused with 401")
    func replayOverTheAPI() async throws {
        let h = try Harness()
        let service = try h.makeService()
        let id = try await h.activate(service)
        try await service.validatePassword(try pin("1234"))
        let captured = try #require(h.transport.sent.last)
        let response = await h.server.handle(captured)
        #expect(response.statusCode == 401)
        #expect(ActivationFlows.isAuthenticationFailure(response))
        #expect(try h.server.activationDetail(id).failedAttempts == 1)
    }

    @Test(
        "requests delivered out of order: the later one wins, the earlier one fails",
        arguments: ProtocolAlgorithm.allCases)
    func reordered(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        try await h.activate(service)
        let pair = try await headers(service, count: 2, authentication: .possession())
        #expect(verify(h, pair[1]))
        #expect(!verify(h, pair[0]))
    }

    @Test("the look-ahead window is [counter, counter + 20)", arguments: ProtocolAlgorithm.allCases)
    func lookAheadWindow(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        let id = try await h.activate(service)
        // V4's activation/confirm used one counter already (the server is at 1); V3.3 is at 0.
        let start = try h.server.activationDetail(id).counterIndex
        let within = try await headers(service, count: 20, authentication: .possession())
        #expect(verify(h, within[19]))
        #expect(try h.server.activationDetail(id).counterIndex == start + 20)
        let beyond = try await headers(service, count: 21, authentication: .possession())
        // The server expects start + 20: start + 40 is outside the window, start + 39 inside.
        #expect(!verify(h, beyond[20]))
        #expect(verify(h, beyond[19]))
        // start + 38 is behind the counter now: consumed.
        #expect(!verify(h, beyond[18]))
        // Possession-only failures are not counted (V3 and V4).
        #expect(try h.server.activationDetail(id).failedAttempts == 0)
    }

    @Test("only an active activation verifies, and refusing it does not count", arguments: ProtocolAlgorithm.allCases)
    func inactiveStates(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        let id = try await h.activate(service, commit: false)
        let header = try await headers(service, count: 1, authentication: .possession())[0]
        #expect(!verify(h, header))
        try h.server.commitActivation(id)
        #expect(verify(h, header))
        try h.server.blockActivation(id)
        let blocked = try await headers(service, count: 1, authentication: .possession())[0]
        #expect(!verify(h, blocked))
        #expect(try h.server.activationDetail(id).failedAttempts == 0)
        try h.server.unblockActivation(id)
        #expect(verify(h, blocked))
    }

    @Test(
        "malformed headers and foreign applications are refused without counting", arguments: ProtocolAlgorithm.allCases
    )
    func malformedHeaders(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        let id = try await h.activate(service)
        let good = try await headers(service, count: 1, authentication: .possession())[0]
        let foreign = good.replacingOccurrences(
            of: "pa_application_key=\"", with: "pa_application_key=\"A")
        for header in ["", "PowerAuth", "Basic abc", String(repeating: "x", count: 10_000), foreign] {
            #expect(!verify(h, header))
        }
        #expect(try h.server.activationDetail(id).failedAttempts == 0)
        #expect(verify(h, good))
    }
}
