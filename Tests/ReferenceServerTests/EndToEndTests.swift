import Activation
import ActivationHTTP
import Foundation
import PowerAuthProtocol
import ReferenceServer
import SecureCore
import TestSupport
import Testing

@Suite("The client against the reference server over real HTTP")
struct EndToEndTests {
    @Test(
        "activation, fingerprint, commit, signed request, wrong PIN counting, blocking, unblocking",
        arguments: StoreBackend.available, ProtocolAlgorithm.allCases)
    func lifecycle(_ backend: StoreBackend, _ algorithm: ProtocolAlgorithm) async throws {
        let s = try InProcessServer(backend: backend, algorithm: algorithm)
        defer { s.server.stop() }
        let device = try s.device()
        let prepared = try await s.backOffice.initActivation(userId: "alice")
        #expect(try await s.backOffice.detail(prepared.activationId).state == "CREATED")
        let id = try await device.activate(code: prepared.activationCode, pin: "1234")
        #expect(id == prepared.activationId)
        let fingerprint = try await device.service.activationFingerprint()
        #expect(await device.flows.refresh(trigger: .applicationStart) == .pendingCommit(fingerprint: fingerprint))
        try await s.backOffice.commit(id)
        #expect(await device.flows.refresh(trigger: .applicationStart) == .dashboard)

        try await device.service.validatePassword(try pin("1234"))
        for attempt in 1...4 {
            let wrong = try pin("9999")
            #expect(await failure { try await device.service.validatePassword(wrong) } == .authentication)
            let outcome = await device.flows.handleAuthenticationFailure(password: wrong, authentication: nil)
            #expect(outcome == .wrongPassword(remainingAttempts: 5 - attempt, maximumAttempts: 5))
        }
        try await device.service.validatePassword(try pin("1234"))
        #expect(try await s.backOffice.detail(id).failedAttempts == 0)

        for _ in 1...5 {
            #expect(await failure { try await device.service.validatePassword(try pin("0000")) } == .authentication)
        }
        let status = try await device.service.fetchActivationStatus()
        #expect(status.state == .blocked)
        #expect(status.failCount == 5)
        #expect(await device.flows.refresh(trigger: .authenticationFailure) == .blocked(until: nil))
        #expect(await failure { try await device.service.validatePassword(try pin("1234")) } == .authentication)
        #expect(try await s.backOffice.detail(id).state == "BLOCKED")

        try await s.backOffice.unblock(id)
        try await device.service.validatePassword(try pin("1234"))
        let trail = try s.server.store.auditTrail(activationId: id)
        #expect(trail.filter { $0.outcome == .failureBlocked }.count == 1)
        #expect(trail.filter { $0.outcome == .failure }.count == 8)
    }

    @Test(
        "the back office blocks until a time, and removal sends the device to re-enrollment",
        arguments: StoreBackend.available, ProtocolAlgorithm.allCases)
    func temporaryBlockAndRemoval(_ backend: StoreBackend, _ algorithm: ProtocolAlgorithm) async throws {
        let s = try InProcessServer(backend: backend, algorithm: algorithm)
        defer { s.server.stop() }
        let (device, id) = try await s.activeDevice()
        let until = Date().addingTimeInterval(3600)
        try await s.backOffice.block(id, until: until)
        let status = try await device.service.fetchActivationStatus()
        #expect(status.state == .blocked)
        #expect(
            status.blockExpirationTime.map { Int64($0.timeIntervalSince1970) } == Int64(until.timeIntervalSince1970))
        try await s.backOffice.unblock(id)
        try await s.backOffice.remove(id)
        #expect(await device.flows.refresh(trigger: .returnToForeground) == .reEnroll(.removed))
        #expect(await !device.service.hasValidActivation())
        let listed = try await s.backOffice.list()
        #expect(listed.map(\.activationId) == [id])
        #expect(listed.first?.state == "REMOVED")
    }

    @Test(
        "biometry: enable with the PIN over HTTP, then a biometry code verifies",
        arguments: StoreBackend.available, ProtocolAlgorithm.allCases)
    func biometry(_ backend: StoreBackend, _ algorithm: ProtocolAlgorithm) async throws {
        let s = try InProcessServer(backend: backend, algorithm: algorithm)
        defer { s.server.stop() }
        let (device, id) = try await s.activeDevice()
        try await device.service.addBiometryFactor(password: try pin("1234"))
        #expect(try await s.backOffice.detail(id).biometryEnabled)
        // Each generation's validate endpoint, with the body its SDK sends.
        let (path, uriIdentifier) =
            algorithm.isV4
            ? (V4API.validate.path, V4API.validate.uriIdentifier)
            : (ActivationAPI.validateSignature.path, ActivationAPI.validateSignature.uriIdentifier)
        let body =
            algorithm.isV4
            ? Array("{}".utf8)
            : try WireCoding.encode(RequestEnvelope(requestObject: ValidateSignatureRequest(reason: "TEST")))
        let header = try await device.service.signRequest(
            method: "POST", uriIdentifier: try #require(uriIdentifier), body: body,
            authentication: .possessionWithBiometry(prompt: "p"))
        let response = try await device.transport.send(
            TransportRequest(
                path: path, headers: [SignedRequestHeader.name: header.value, "Content-Type": "application/json"],
                body: body), timeout: .seconds(30))
        #expect(response.statusCode == 200)
    }

    @Test("no server listening: a typed network error, and the activation stays")
    func connectionRefused() async throws {
        let s = try InProcessServer()
        let (device, _) = try await s.activeDevice()
        s.server.stop()
        let error = await failure { _ = try await device.service.fetchActivationStatus() }
        guard case .network = error else {
            Issue.record("expected a network error, got \(String(describing: error))")
            return
        }
        #expect(await device.flows.refresh(trigger: .applicationStart) == .connectionError(error!))
        #expect(await device.service.hasValidActivation())
    }

    @Test(
        "state survives a graceful restart on the same database",
        arguments: StoreBackend.available, ProtocolAlgorithm.allCases)
    func restart(_ backend: StoreBackend, _ algorithm: ProtocolAlgorithm) async throws {
        let s = try InProcessServer(backend: backend, algorithm: algorithm)
        let (device, id) = try await s.activeDevice()
        #expect(await failure { try await device.service.validatePassword(try pin("0000")) } == .authentication)
        let configuration = try s.server.configurationString()
        s.server.stop()
        let again = try InProcessServer(store: s.store, algorithm: algorithm)
        defer { again.server.stop() }
        #expect(try again.server.configurationString() == configuration)
        let detail = try await again.backOffice.detail(id)
        #expect(detail.state == "ACTIVE")
        #expect(detail.failedAttempts == 1)
    }

    @Test("the transport takes every TLS strategy and refuses settings that cannot work, before sending")
    func transportSettings() throws {
        let pinned = ActivationClientConfiguration(tlsValidation: .pinnedPublicKeys([[UInt8](repeating: 1, count: 32)]))
        _ = try HTTPActivationTransport(baseEndpointURL: "https://bank.example", client: pinned)
        let short = ActivationClientConfiguration(tlsValidation: .pinnedPublicKeys([[UInt8](repeating: 1, count: 20)]))
        #expect(
            throws: ActivationError.wrongParameter(
                reason: "a pinned key must be the 32-byte SHA-256 of a SubjectPublicKeyInfo")
        ) {
            try HTTPActivationTransport(baseEndpointURL: "https://bank.example", client: short)
        }
        #expect(
            throws: ActivationError.wrongParameter(
                reason: "plain http to bank.example, which is not loopback, is refused: use https (or allow insecure "
                    + "http for a network you control)")
        ) {
            try HTTPActivationTransport(baseEndpointURL: "http://bank.example", client: ActivationClientConfiguration())
        }
        var insecure = ActivationClientConfiguration()
        insecure.allowInsecureHTTP = true
        _ = try HTTPActivationTransport(baseEndpointURL: "http://bank.example", client: insecure)
        let missingCA = ActivationClientConfiguration(tlsValidation: .customCA(file: "/nonexistent/ca.pem"))
        #expect {
            try HTTPActivationTransport(baseEndpointURL: "https://bank.example", client: missingCA)
        } throws: { error in
            guard case .wrongParameter(let reason) = error as? ActivationError else { return false }
            return reason.contains("the CA file /nonexistent/ca.pem cannot be used")
        }
    }
}
