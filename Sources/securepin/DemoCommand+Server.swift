import Activation
import ActivationHTTP
import Foundation
import PinVault
import PowerAuthProtocol
import ReferenceServer
import SecureCore

extension DemoCommand {
    /// The activation story against the reference server in a child process,
    /// over HTTP, state in a temporary SQLite database.
    static func serverStory(_ story: Story, directory: String, pins: DemoPINs) async throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let tokenFile = directory + "/admin.token"
        let token = try AdminToken.random()
        try AdminToken.store(token, to: tokenFile)
        var child: ReferenceServerProcess?
        defer { child?.stop() }
        try await story.step("start the reference server on a free loopback port, SQLite in a temporary directory") {
            let executable =
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                ?? CommandLine.arguments[0]
            let server = try ReferenceServerProcess(
                executable: executable, database: directory + "/server.sqlite", tokenFile: tokenFile)
            child = server
            DemoDirectory.children.withLock { $0.append(server.pid) }
            return "pid \(server.pid), http://127.0.0.1:\(server.port)"
        }
        guard let server = child else { throw StepFailed(description: "no server") }
        let base = "http://127.0.0.1:\(server.port)"
        let backOffice = try BackOfficeClient(baseURL: URL(string: base)!, token: token)
        let sensor = SimulatedBiometricAuthenticator(type: .touchID)
        let configuration = try ActivationConfiguration(
            instanceId: "com.example.demo", baseEndpointURL: base, configuration: server.configuration,
            algorithm: ProtocolAlgorithm.legacyP256.rawValue,
            knowledgeKeyParameters: PINKeyDerivationParameters(memoryKiB: 16 * 1024, iterations: 2))
        let storage = try FileActivationStorage(directory: directory + "/device")
        let transport = try HTTPActivationTransport(configuration: configuration)
        var service = try ActivationService(
            configuration: configuration, storage: storage, transport: transport, authenticator: sensor)
        var flows = ActivationFlows(service: service)
        var activationId = ""

        try await story.step(
            "activate this device with the signed QR code (CODE#SIGNATURE) from the back office, \(pins.label(.first))"
        ) {
            let prepared = try await backOffice.initActivation(userId: "alice")
            let qr = prepared.activationCode + "#" + prepared.activationSignature
            let result = try await service.createActivation(
                activationCode: qr, name: "demo phone", password: try pins.password(.first))
            activationId = result.activationId
            let status = try await service.fetchActivationStatus()
            try expect(status.state == .pendingCommit, "expected pending commit, got \(status.state)")
            return "checksum and master-key signature verified, pending commit"
        }
        try await story.step(
            "the device shows the activation fingerprint for the user to compare; the app waits for the commit"
        ) {
            let fingerprint = try await service.activationFingerprint()
            let route = await flows.refresh(trigger: .applicationStart)
            try expect(route == .pendingCommit(fingerprint: fingerprint), "the router did not wait for the commit")
            return fingerprint
        }
        try await story.step("the back office commits the activation") {
            try await backOffice.commit(activationId)
            let route = await flows.refresh(trigger: .applicationStart)
            try expect(route == .dashboard, "expected the dashboard, got \(route)")
            return "active"
        }
        try await story.step("a signed request with \(pins.label(.first)) is accepted") {
            try await service.validatePassword(try pins.password(.first))
            return "HTTP 200"
        }
        try await story.step("a wrong PIN is refused") {
            let wrong = try pins.password(.otherWrong)
            try await expectAuthenticationFailure { try await service.validatePassword(wrong) }
            let outcome = await flows.handleAuthenticationFailure(password: wrong, authentication: nil)
            guard case .wrongPassword(let left, let maximum) = outcome else {
                throw StepFailed(description: "unexpected outcome \(outcome)")
            }
            try expect(left == 4 && maximum == 5, "expected 4 of 5, got \(left) of \(maximum)")
            return "\(left) of \(maximum) attempts remaining"
        }
        try await story.step("the right PIN resets the count") {
            try await service.validatePassword(try pins.password(.first))
            let status = try await service.fetchActivationStatus()
            try expect(status.failCount == 0, "the count is \(status.failCount)")
            return "\(status.remainingAttempts) of \(status.maxFailCount) attempts remaining"
        }
        try await story.step("change to \(pins.label(.second)) in two steps") {
            let current = try pins.mutable(.first)
            let data = try await service.beginPasswordChange(currentPassword: current)
            try await service.finishPasswordChange(newPassword: try pins.password(.second), data: data)
            try await service.validatePassword(try pins.password(.second))
            try await expectAuthenticationFailure { try await service.validatePassword(try pins.password(.first)) }
            try await service.validatePassword(try pins.password(.second))
            return "checked by the server, the old PIN refused"
        }
        try await story.step("enable biometry with \(pins.label(.second)) and sign a request with the finger") {
            try await service.addBiometryFactor(password: try pins.password(.second))
            let body = try WireCoding.encode(
                RequestEnvelope(requestObject: ValidateSignatureRequest(reason: "DEMO_BIOMETRY")))
            let header = try await service.signRequest(
                method: "POST", uriIdentifier: ActivationAPI.validateSignature.uriIdentifier ?? "", body: body,
                authentication: .possessionWithBiometry(prompt: "Sign in to the demo"))
            let response = try await transport.send(
                TransportRequest(
                    path: ActivationAPI.validateSignature.path,
                    headers: [AuthorizationHeader.name: header.value, "Content-Type": "application/json"],
                    body: body),
                timeout: .seconds(10))
            try expect(response.statusCode == 200, "the server answered \(response.statusCode)")
            return "\(header.factorSet.rawValue), HTTP 200"
        }
        try await story.step("five wrong PINs block the activation") {
            for _ in 1...5 {
                try await expectAuthenticationFailure { try await service.validatePassword(try pins.password(.wrong)) }
            }
            let route = await flows.refresh(trigger: .authenticationFailure)
            try expect(route == .blocked(until: nil), "expected blocked, got \(route)")
            try await expectAuthenticationFailure { try await service.validatePassword(try pins.password(.second)) }
            let detail = try await backOffice.detail(activationId)
            return "server: \(detail.state), \(detail.failedAttempts) failures; even the right PIN is refused"
        }
        try await story.step("the back office unblocks; the right PIN works again") {
            try await backOffice.unblock(activationId)
            try await service.validatePassword(try pins.password(.second))
            return "active"
        }
        try await story.step("removed on the server: the device removes it locally and would re-enroll") {
            try await backOffice.remove(activationId)
            let route = await flows.refresh(trigger: .returnToForeground)
            try expect(route == .reEnroll(.removed), "expected re-enrollment, got \(route)")
            try expect(await !service.hasValidActivation(), "the activation is still on the device")
            service = try ActivationService(
                configuration: configuration, storage: storage, transport: transport, authenticator: sensor)
            flows = ActivationFlows(service: service)
            try expect(await !service.hasValidActivation(), "the activation came back from storage")
            return "route: enrollment"
        }
        try await story.step("stop the server with SIGTERM") {
            child = nil
            let status = server.stop()
            try expect(status == .exited(0), "the server ended with \(status.map { "\($0)" } ?? "an unknown status")")
            return "graceful, exit 0"
        }
    }

    /// Expects `body` to fail with `ActivationError.authentication` (HTTP 401).
    static func expectAuthenticationFailure(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let error as ActivationError where error == .authentication {
            return
        }
        throw StepFailed(description: "the server accepted what it should have refused")
    }
}
