import Activation
import ActivationTestSupport
import Biometry
import Foundation
import PowerAuthProtocol
import SecureCore
import Testing

@testable import ActivationServer

@Suite("ActivationService speaking protocol V4 (EC_P384)")
struct V4ServiceTests {
    struct Setup {
        let server: ActivationServer
        let configuration: ActivationConfiguration
        let storage: FileActivationStorage

        init(maxFailedAttempts: Int = 5) throws {
            var serverConfiguration = try ActivationServerConfiguration.generate(maxFailedAttempts: maxFailedAttempts)
            try serverConfiguration.serve(.ecP384)
            server = try ActivationServer(configuration: serverConfiguration)
            configuration = try ActivationConfiguration(
                instanceId: "v4", baseEndpointURL: "https://bank.example",
                configuration: try serverConfiguration.configurationString(), algorithm: "EC_P384",
                knowledgeKeyParameters: .testing)
            storage = try FileActivationStorage(directory: temporaryDirectory())
        }

        func service() throws -> ActivationService {
            try ActivationService(
                configuration: configuration, storage: storage, transport: InProcessTransport(server: server))
        }
    }

    @Test("activate, commit, status, validate, a counted wrong PIN, token, vault, reload, PIN change, remove")
    func lifecycle() async throws {
        let setup = try Setup()
        let service = try setup.service()
        let prepared = try setup.server.initActivation(userId: "ivan")
        let pinCode = try pin("2580")
        await #expect(throws: ActivationError.self) {
            try await service.createActivation(
                activationCode: prepared.activationCode, name: "v4 phone", password: pinCode, enableBiometry: true)
        }
        let result = try await service.createActivation(
            activationCode: prepared.activationCode, name: "v4 phone", password: pinCode)
        #expect(result.activationId == prepared.activationId)
        #expect(try setup.server.activationDetail(result.activationId).fingerprint == result.activationFingerprint)
        #expect(try await service.fetchActivationStatus().state == .pendingCommit)
        try setup.server.commitActivation(result.activationId)
        #expect(try await service.fetchActivationStatus().state == .active)

        try await service.validatePassword(pinCode)
        await #expect(throws: ActivationError.authentication) { try await service.validatePassword(try pin("0000")) }
        let status = try await service.fetchActivationStatus()
        #expect(status.failCount == 1 && status.state == .active)

        let token = try await service.createToken(authentication: .possessionWithPassword(pinCode))
        try await service.storeToken(token)
        let stored = try #require(try await service.storedToken(token.tokenId))
        #expect(stored.factorSet == .possessionKnowledge)
        let key = try await service.unlockVault(authentication: .possessionWithPassword(pinCode))
        #expect(key.count == 32)
        key.destroy()

        // A header the application sends to its own server, checked there.
        let body = Array(#"{"amount":5}"#.utf8)
        let header = try await service.signRequestV4(
            method: "POST", uriIdentifier: "/pa/payment", body: body, authentication: .possessionWithPassword(pinCode))
        let verified = try setup.server.verifyV4Authorization(
            header: header.value, method: "POST", uriIdentifier: "/pa/payment", body: body)
        #expect(verified.userId == "ivan")
        // A code computed and never sent: the server is behind, still within the window.
        _ = try await service.signRequestV4(
            method: "POST", uriIdentifier: "/x", body: [], authentication: .possession())
        #expect(try await service.fetchActivationStatus().state == .active)

        // A new service instance reads the stored V4 state and keys.
        let reloaded = try setup.service()
        #expect(await reloaded.activationIdentifier() == result.activationId)
        try await reloaded.validatePassword(pinCode)
        #expect(try await reloaded.fetchActivationStatus().failCount == 0)
        // A server-side PIN change: the old PIN stops working, the new one works, after a reload too.
        let current = try MutablePassword()
        for scalar in "2580".unicodeScalars { try current.addCharacter(scalar) }
        let change = try await reloaded.beginPasswordChange(currentPassword: current)
        let newPIN = try pin("36912")
        try await reloaded.finishPasswordChange(newPassword: newPIN, data: change)
        await #expect(throws: ActivationError.authentication) { try await reloaded.validatePassword(pinCode) }
        let afterChange = try setup.service()
        try await afterChange.validatePassword(newPIN)
        #expect(try await afterChange.fetchActivationStatus().failCount == 0)
        try await afterChange.removeActivation(authentication: .possessionWithPassword(newPIN))
        #expect(await afterChange.hasValidActivation() == false)
        #expect(try setup.server.activationDetail(result.activationId).state == .removed)
    }

    @Test("the configuration needs the P-384 master key for EC_P384; a wrong PIN blocks at the limit")
    func configurationAndBlocking() async throws {
        let legacy = try ActivationServerConfiguration.generate()
        #expect(throws: ActivationError.self) {
            try ActivationConfiguration(
                instanceId: "x", baseEndpointURL: "https://x.example", configuration: try legacy.configurationString(),
                algorithm: "EC_P384")
        }
        let setup = try Setup(maxFailedAttempts: 2)
        let service = try setup.service()
        let prepared = try setup.server.initActivation(userId: "judy")
        _ = try await service.createActivation(
            activationCode: prepared.activationCode, name: "p", password: try pin("1470"))
        try setup.server.commitActivation(prepared.activationId)
        for _ in 0..<2 {
            await #expect(throws: ActivationError.authentication) {
                try await service.validatePassword(try pin("9999"))
            }
        }
        #expect(try await service.fetchActivationStatus().state == .blocked)
    }

    @Test("biometry add with the PIN, a biometry code the server accepts, remove; biometry codes then fail")
    func biometry() async throws {
        let setup = try Setup()
        let sensor = SimulatedBiometricAuthenticator()
        let service = try ActivationService(
            configuration: setup.configuration, storage: setup.storage,
            transport: InProcessTransport(server: setup.server),
            authenticator: sensor)
        let prepared = try setup.server.initActivation(userId: "kate")
        let pinCode = try pin("8642")
        _ = try await service.createActivation(activationCode: prepared.activationCode, name: "b", password: pinCode)
        try setup.server.commitActivation(prepared.activationId)
        #expect(await service.hasBiometryFactor() == false)
        try await service.addBiometryFactor(password: pinCode)
        #expect(await service.hasBiometryFactor())
        #expect(try setup.server.activationDetail(prepared.activationId).biometryEnabled)
        let body = Array(#"{"amount":7}"#.utf8)
        let header = try await service.signRequestV4(
            method: "POST", uriIdentifier: "/pa/payment", body: body,
            authentication: .possessionWithBiometry(prompt: "Approve"))
        let verified = try setup.server.verifyV4Authorization(
            header: header.value, method: "POST", uriIdentifier: "/pa/payment", body: body)
        #expect(verified.factorSet == .possessionBiometry)
        #expect(sensor.promptsShown == ["Approve"])
        let prefetched = try await service.authenticateUsingBiometry(prompt: "Once")
        try await service.validateSignature(authentication: prefetched)
        try await service.removeBiometryFactor()
        #expect(await service.hasBiometryFactor() == false)
        #expect(try setup.server.activationDetail(prepared.activationId).biometryEnabled == false)
        await #expect(throws: ActivationError.biometryNotConfigured) {
            try await service.validateSignature(authentication: .possessionWithBiometry(prompt: "again"))
        }
    }
}
