import Activation
import ActivationHTTP
import Foundation
import PowerAuthProtocol
import ReferenceServer
import SecureCore

extension DemoCommand {
    /// Part 4: the same device story on PowerAuth V4 with the hybrid suite `EC_P384_ML_L3` (the
    /// library's default: P-384 with ML-KEM-768 and ML-DSA-65) against a second reference server
    /// started with `--algorithm EC_P384_ML_L3`: activation, status, a V4 code, the server-side
    /// PIN change, a counted wrong PIN and the block at the maximum; then `EC_P384` (V4 without the
    /// post-quantum keys) against a third server, activated, confirmed and used once.
    static func v4Story(_ story: Story, directory: String, pins: DemoPINs) async throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let tokenFile = directory + "/admin.token"
        let token = try AdminToken.random()
        try AdminToken.store(token, to: tokenFile)
        var child: ReferenceServerProcess?
        defer { child?.stop() }
        try await story.step("start a second reference server with --algorithm EC_P384_ML_L3") {
            let executable =
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                ?? CommandLine.arguments[0]
            let server = try ReferenceServerProcess(
                executable: executable, database: directory + "/server.sqlite", tokenFile: tokenFile,
                extraArguments: ["--algorithm", ProtocolAlgorithm.ecP384MLL3.rawValue])
            child = server
            DemoDirectory.children.withLock { $0.append(server.pid) }
            let keys = try SDKConfiguration(parsing: server.configuration).keys
            guard let p384 = keys.first(where: { $0.id == 0x02 }), let mldsa = keys.first(where: { $0.id == 0x03 })
            else {
                throw StepFailed(description: "the configuration string lacks the P-384 or the ML-DSA-65 master key")
            }
            return "http://127.0.0.1:\(server.port), configuration string with the P-384 and ML-DSA-65 master keys "
                + "(key 02, \(p384.bytes.count) bytes; key 03, \(mldsa.bytes.count) bytes)"
        }
        guard let server = child else { throw StepFailed(description: "no server") }
        let backOffice = try BackOfficeClient(baseURL: URL(string: server.baseURL)!, token: token)
        let configuration = try ActivationConfiguration(
            instanceId: "com.example.demo.v4", baseEndpointURL: server.baseURL, configuration: server.configuration,
            knowledgeKeyParameters: PINKeyDerivationParameters(memoryKiB: 16 * 1024, iterations: 2))
        let storage = try FileActivationStorage(directory: directory + "/device")
        let transport = try HTTPActivationTransport(configuration: configuration)
        let service = try ActivationService(configuration: configuration, storage: storage, transport: transport)
        var activationId = ""

        try await story.step(
            "activate with EC_P384_ML_L3, the default (V4: DHKEM P-384 + ML-KEM-768, ML-DSA-65 signed keys), "
                + pins.label(.first)
        ) {
            let prepared = try await backOffice.initActivation(userId: "bob")
            let result = try await service.createActivation(
                activationCode: prepared.activationCode + "#" + prepared.activationSignature, name: "demo phone V4",
                password: try pins.password(.first))
            activationId = result.activationId
            let detail = try await backOffice.detail(activationId)
            try expect(detail.state == "PENDING_COMMIT", "expected PENDING_COMMIT, got \(detail.state)")
            try expect(
                detail.fingerprint == result.activationFingerprint,
                "the back office shows another fingerprint than the device")
            return "fingerprint \(result.activationFingerprint) on the device and in the back office, pending commit"
        }
        try await story.step("the back office commits; the device reads its status (V4 status blob)") {
            try await backOffice.commit(activationId)
            let status = try await service.fetchActivationStatus()
            try expect(status.state == .active, "expected active, got \(status.state)")
            try expect(status.failCount == 0, "the count is \(status.failCount)")
            return "active, \(status.remainingAttempts) of \(status.maxFailCount) attempts remaining"
        }
        try await story.step("the device confirms with \(pins.label(.first)) (activation/confirm)") {
            try expect(await service.needsConfirmation(), "the device did not wait for its confirmation")
            try await service.confirmActivation(password: try pins.password(.first))
            try expect(!(await service.needsConfirmation()), "the confirmation was not stored")
            return "the server cleared its confirmation flag"
        }
        try await story.step("a request signed with \(pins.label(.first)) is accepted") {
            let body = Array("{}".utf8)
            let header = try await service.signRequest(
                method: "POST", uriIdentifier: V4API.validate.uriIdentifier ?? "", body: body,
                authentication: .possessionWithPassword(try pins.password(.first)))
            let response = try await transport.send(
                TransportRequest(
                    path: V4API.validate.path,
                    headers: [AuthorizationHeader.name: header.value, "Content-Type": "application/json"],
                    body: body),
                timeout: .seconds(10))
            try expect(response.statusCode == 200, "the server answered \(response.statusCode)")
            let bytes = Data(base64Encoded: header.authenticationCode)?.count ?? 0
            try expect(bytes == 64, "expected two 32-byte KMAC components, got \(bytes) bytes")
            return "pa_version 4.0, \(header.factorSet.rawValue), two 32-byte KMAC components, HTTP 200"
        }
        try await story.step("change to \(pins.label(.second)) on the server (it rotates the knowledge key)") {
            let data = try await service.beginPasswordChange(currentPassword: try pins.mutable(.first))
            try await service.finishPasswordChange(newPassword: try pins.password(.second), data: data)
            try await expectAuthenticationFailure { try await service.validatePassword(try pins.password(.first)) }
            try await service.validatePassword(try pins.password(.second))
            return "the old PIN is refused, the new one accepted"
        }
        try await story.step("a wrong PIN is refused and counted") {
            try await expectAuthenticationFailure {
                try await service.validatePassword(try pins.password(.otherWrong))
            }
            let status = try await service.fetchActivationStatus()
            try expect(status.failCount == 1, "the count is \(status.failCount)")
            return "\(status.remainingAttempts) of \(status.maxFailCount) attempts remaining"
        }
        try await story.step("wrong PINs up to the maximum block the activation") {
            let before = try await service.fetchActivationStatus()
            for _ in 0..<before.remainingAttempts {
                try await expectAuthenticationFailure { try await service.validatePassword(try pins.password(.wrong)) }
            }
            let status = try await service.fetchActivationStatus()
            try expect(status.state == .blocked, "expected blocked, got \(status.state)")
            try await expectAuthenticationFailure { try await service.validatePassword(try pins.password(.second)) }
            let detail = try await backOffice.detail(activationId)
            try expect(detail.state == "BLOCKED", "the server shows \(detail.state)")
            return "server: \(detail.state), \(detail.failedAttempts) failures; even the right PIN is refused"
        }
        try await story.step("stop the EC_P384_ML_L3 server with SIGTERM") {
            child = nil
            let status = server.stop()
            try expect(status == .exited(0), "the server ended with \(status.map { "\($0)" } ?? "an unknown status")")
            return "graceful, exit 0"
        }
        try await story.step("EC_P384 (V4 without post-quantum keys) against a third server, \(pins.label(.first))") {
            try await ecP384Round(directory: directory + "/ec-p384", pins: pins)
        }
    }

    /// A third server with `--algorithm EC_P384`: activate (the QR form, signed by the P-384 master
    /// key), commit, confirm, one V4 request; the server stopped either way.
    static func ecP384Round(directory: String, pins: DemoPINs) async throws -> String {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let tokenFile = directory + "/admin.token"
        let token = try AdminToken.random()
        try AdminToken.store(token, to: tokenFile)
        let executable =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let server = try ReferenceServerProcess(
            executable: executable, database: directory + "/server.sqlite", tokenFile: tokenFile,
            extraArguments: ["--algorithm", ProtocolAlgorithm.ecP384.rawValue])
        DemoDirectory.children.withLock { $0.append(server.pid) }
        var stopped = false
        defer { if !stopped { _ = server.stop() } }
        let keys = try SDKConfiguration(parsing: server.configuration).keys.map(\.id)
        try expect(keys.contains(0x02) && !keys.contains(0x03), "expected key 02 and no ML-DSA key, got \(keys)")
        let backOffice = try BackOfficeClient(baseURL: URL(string: server.baseURL)!, token: token)
        let configuration = try ActivationConfiguration(
            instanceId: "com.example.demo.p384", baseEndpointURL: server.baseURL, configuration: server.configuration,
            algorithm: ProtocolAlgorithm.ecP384.rawValue,
            knowledgeKeyParameters: PINKeyDerivationParameters(memoryKiB: 16 * 1024, iterations: 2))
        let service = try ActivationService(
            configuration: configuration, storage: try FileActivationStorage(directory: directory + "/device"),
            transport: try HTTPActivationTransport(configuration: configuration))
        let prepared = try await backOffice.initActivation(userId: "carol")
        let result = try await service.createActivation(
            activationCode: prepared.activationCode + "#" + prepared.activationSignature, name: "demo phone P-384",
            password: try pins.password(.first))
        try await backOffice.commit(result.activationId)
        try await service.confirmActivation(password: try pins.password(.first))
        try await service.validatePassword(try pins.password(.first))
        let status = try await service.fetchActivationStatus()
        try expect(status.state == .active && status.failCount == 0, "expected active without failures")
        stopped = true
        try expect(server.stop() == .exited(0), "the third server did not exit cleanly")
        return "activated (code signed by the P-384 master key), confirmed, PIN accepted, server stopped"
    }
}
