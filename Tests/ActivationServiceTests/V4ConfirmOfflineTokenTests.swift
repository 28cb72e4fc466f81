import Activation
import ActivationTestSupport
import Biometry
import Foundation
import PowerAuthProtocol
import SecureCore
import Testing

@testable import ActivationServer

@Suite("V4 client: activation/confirm with biometry, offline codes, token headers, status, user info, detail")
struct V4ConfirmOfflineTokenTests {
    struct Setup {
        let server: ActivationServer
        let serverConfiguration: ActivationServerConfiguration
        let configuration: ActivationConfiguration
        let storage: FileActivationStorage
        let sensor = SimulatedBiometricAuthenticator()

        init(offlineDigits: Int = 8) throws {
            var serverConfiguration = try ActivationServerConfiguration.generate()
            try serverConfiguration.serve(.ecP384)
            self.serverConfiguration = serverConfiguration
            server = try ActivationServer(configuration: serverConfiguration)
            configuration = try ActivationConfiguration(
                instanceId: "v4c", baseEndpointURL: "https://bank.example",
                configuration: try serverConfiguration.configurationString(), algorithm: "EC_P384",
                offlineAuthenticationCodeComponentLength: offlineDigits, knowledgeKeyParameters: .testing)
            storage = try FileActivationStorage(directory: temporaryDirectory())
        }

        func service() throws -> ActivationService {
            try ActivationService(
                configuration: configuration, storage: storage, transport: InProcessTransport(server: server),
                authenticator: sensor)
        }
    }

    @Test("biometry at activation: the key tree's biometry key works once activation/confirm turned it on")
    func biometryAtActivation() async throws {
        let setup = try Setup()
        let service = try setup.service()
        let prepared = try setup.server.initActivation(userId: "lena")
        let pinCode = try pin("2468")
        _ = try await service.createActivation(
            activationCode: prepared.activationCode, name: "with finger", password: pinCode, enableBiometry: true)
        #expect(await service.hasBiometryFactor())
        #expect(await service.needsConfirmation())
        try setup.server.commitActivation(prepared.activationId)
        // Before the confirmation the server has biometry off: a biometry code is refused before
        // any key is tried, and not counted (upstream's checkBiometryAvailable).
        await #expect(throws: ActivationError.authentication) {
            try await service.validateSignature(authentication: .possessionWithBiometry(prompt: "early"))
        }
        #expect(try setup.server.activationDetail(prepared.activationId).failedAttempts == 0)
        // A wrong PIN confirms nothing and is counted.
        await #expect(throws: ActivationError.authentication) {
            try await service.confirmActivation(password: try pin("0000"))
        }
        #expect(try setup.server.activationDetail(prepared.activationId).failedAttempts == 1)
        #expect(await service.needsConfirmation())
        try await service.confirmActivation(password: pinCode)
        #expect(await !service.needsConfirmation())
        #expect(try setup.server.activationDetail(prepared.activationId).biometryEnabled)
        #expect(try setup.server.activationDetail(prepared.activationId).failedAttempts == 0)
        try await service.validateSignature(authentication: .possessionWithBiometry(prompt: "Approve"))
        #expect(setup.sensor.promptsShown.last == "Approve")
        // Confirming again is harmless; a reloaded service keeps the confirmed state.
        try await service.confirmActivation(password: pinCode)
        #expect(await !(try setup.service()).needsConfirmation())
    }

    @Test("biometry at activation is refused before anything is sent when the sensor is unavailable")
    func biometryUnavailable() async throws {
        let setup = try Setup()
        setup.sensor.setStatus(.notEnrolled)
        let service = try setup.service()
        let prepared = try setup.server.initActivation(userId: "mia")
        await #expect(throws: ActivationError.biometryNotAvailable(.notEnrolled)) {
            try await service.createActivation(
                activationCode: prepared.activationCode, name: "x", password: try pin("1357"), enableBiometry: true)
        }
        #expect(try setup.server.activationDetail(prepared.activationId).state == .created)
        #expect(await !service.hasValidActivation())
    }

    @Test("V4 offline codes: 4, 6 and 8 digits per component, verified once by the server, a replay counted")
    func offlineCodes() async throws {
        for digits in [4, 6, 8] {
            let setup = try Setup(offlineDigits: digits)
            let service = try setup.service()
            let prepared = try setup.server.initActivation(userId: "olga")
            let pinCode = try pin("9753")
            _ = try await service.createActivation(
                activationCode: prepared.activationCode, name: "offline", password: pinCode)
            try setup.server.commitActivation(prepared.activationId)
            let nonce = [UInt8](repeating: 0x3C, count: 16)
            let body = Array("amount=250&to=CZ02".utf8)
            let code = try await service.offlineAuthenticationCode(
                uriIdentifier: "/operation/authorize/offline", nonce: nonce, body: body,
                authentication: .possessionWithPassword(pinCode))
            let parts = code.split(separator: "-")
            #expect(parts.count == 2)
            #expect(parts.allSatisfy { $0.count == digits && $0.allSatisfy(\.isNumber) })
            // The V3.3 form of the same operation is a different code: the server checks V4.
            let verified = try setup.server.verifyOfflineCode(
                code, activationId: prepared.activationId, factorSet: .possessionKnowledge,
                uriIdentifier: "/operation/authorize/offline", nonce: nonce, body: body, componentLength: digits)
            #expect(verified.userId == "olga" && verified.factorSet == .possessionKnowledge)
            #expect(throws: ActivationServerError.authenticationFailed) {
                try setup.server.verifyOfflineCode(
                    code, activationId: prepared.activationId, factorSet: .possessionKnowledge,
                    uriIdentifier: "/operation/authorize/offline", nonce: nonce, body: body, componentLength: digits)
            }
            #expect(try setup.server.activationDetail(prepared.activationId).failedAttempts == 1)
            // Another body: the code no longer matches.
            let other = try await service.offlineAuthenticationCode(
                uriIdentifier: "/operation/authorize/offline", nonce: nonce, body: body,
                authentication: .possessionWithPassword(pinCode))
            #expect(throws: ActivationServerError.authenticationFailed) {
                try setup.server.verifyOfflineCode(
                    other, activationId: prepared.activationId, factorSet: .possessionKnowledge,
                    uriIdentifier: "/operation/authorize/offline", nonce: nonce, body: Array("amount=9999".utf8),
                    componentLength: digits)
            }
            #expect(try setup.server.activationDetail(prepared.activationId).failedAttempts == 2)
        }
    }

    @Test("the V4 token header: a fresh digest per request, accepted once by verifyToken")
    func tokenHeader() async throws {
        let setup = try Setup()
        let service = try setup.service()
        let prepared = try setup.server.initActivation(userId: "petr")
        let pinCode = try pin("1593")
        _ = try await service.createActivation(activationCode: prepared.activationCode, name: "t", password: pinCode)
        try setup.server.commitActivation(prepared.activationId)
        let token = try await service.createToken(authentication: .possessionWithPassword(pinCode))
        defer { token.destroy() }
        let first = try await service.tokenHeader(for: token)
        guard case .v4 = first else {
            Issue.record("a V4 activation made a V3.3 token header")
            return
        }
        let second = try await service.tokenHeaderValue(for: token)
        #expect(first.value != second)
        #expect(first.value.contains("version=\"4.0\""))
        let verified = try setup.server.verifyToken(header: first.value)
        #expect(verified.userId == "petr" && verified.factorSet == .possessionKnowledge)
        #expect(try setup.server.verifyToken(header: second).activationId == prepared.activationId)
        #expect(throws: ActivationServerError.tokenInvalid) { try setup.server.verifyToken(header: first.value) }
    }

    @Test("/pa/v4/status, /pa/v4/user/info and /pa/v4/activation/detail (V4 token), and token/remove")
    func statusUserInfoDetail() async throws {
        let setup = try Setup()
        let service = try setup.service()
        let status = try await service.fetchServerStatus()
        #expect(status.supportedAlgorithms == ["EC_P384"])
        #expect(abs(Double(status.serverTime) / 1000 - Date().timeIntervalSince1970) < 60)
        let prepared = try setup.server.initActivation(userId: "radek")
        let pinCode = try pin("7531")
        _ = try await service.createActivation(
            activationCode: prepared.activationCode, name: "radek's phone", password: pinCode)
        // Not active yet: no claims.
        await #expect(throws: ActivationError.self) { try await service.fetchUserInfo() }
        try setup.server.commitActivation(prepared.activationId)
        let claims = try await service.fetchUserInfo()
        #expect(claims.sub == "radek")
        let token = try await service.createToken(authentication: .possessionWithPassword(pinCode))
        defer { token.destroy() }
        let detail = try await service.fetchActivationDetail(token: token)
        #expect(detail.activationId == prepared.activationId && detail.activationName == "radek's phone")
        // A possession-only token is not enough for the detail.
        let weak = try await service.createToken(authentication: .possession())
        defer { weak.destroy() }
        await #expect(throws: ActivationError.self) { try await service.fetchActivationDetail(token: weak) }
        // token/remove (upstream's {"requestObject":{"tokenId"}}): the token no longer opens anything.
        try await service.removeToken(token.tokenId, authentication: .possession())
        await #expect(throws: ActivationError.self) { try await service.fetchActivationDetail(token: token) }
    }

    @Test("the QR form of a V4 code carries an ECDSA-SHA384 signature by key 0x02; a broken one is refused")
    func activationCodeSignature() async throws {
        let setup = try Setup()
        let prepared = try setup.server.initActivation(userId: "stan")
        let signature = try #require(Base64.decode(prepared.activationSignature))
        #expect(signature.first == 0x30 && signature.count > 72)  // DER, longer than any P-256 one
        var broken = signature
        broken[broken.count - 1] ^= 0x01
        let service = try setup.service()
        await #expect(throws: ActivationError.protocolError(.invalidActivationCode(.signatureMismatch))) {
            try await service.createActivation(
                activationCode: prepared.activationCode + "#" + Base64.encode(broken), name: "q",
                password: try pin("8520"))
        }
        #expect(try setup.server.activationDetail(prepared.activationId).state == .created)
        let result = try await service.createActivation(
            activationCode: prepared.qrText, name: "q", password: try pin("8520"))
        #expect(result.activationId == prepared.activationId)
    }

    @Test("protocol V3.3 has no activation/confirm: a typed refusal, nothing sent")
    func confirmOnV3() async throws {
        let h = try Harness()
        let service = try h.makeService()
        try await h.activate(service)
        await #expect(
            throws: ActivationError.invalidActivationState(
                reason: "protocol V3.3 has no activation/confirm: the activation works once the server committed it")
        ) { try await service.confirmActivation(password: try pin("1234")) }
        #expect(await !service.needsConfirmation())
    }
}
