import Activation
import ActivationTestSupport
import Foundation
import PowerAuthProtocol
import SecureCore
import Testing

@testable import ActivationServer

@Suite("Upgrade of a V3.3 activation to V4 (server side)")
struct V4UpgradeTests {
    @Test("V3.3 activation, the application moves to EC_P384, upgrade/start with a V3 code, confirm with a V4 one")
    func upgrade() async throws {
        // A V3.3 activation made while the application served LEGACY_P256.
        let store = InMemoryServerActivationStore()
        let legacyConfiguration = try ActivationServerConfiguration.generate(autoCommit: true)
        let legacy = try ActivationServer(configuration: legacyConfiguration, store: store)
        let directory = temporaryDirectory()
        let configuration = try ActivationConfiguration(
            instanceId: "upgrade", baseEndpointURL: "https://bank.example",
            configuration: try legacyConfiguration.configurationString(), algorithm: "LEGACY_P256",
            knowledgeKeyParameters: .testing)
        let storage = try FileActivationStorage(directory: directory)
        let v3 = try ActivationService(
            configuration: configuration, storage: storage, transport: InProcessTransport(server: legacy))
        let prepared = try legacy.initActivation(userId: "grace")
        let pinCode = try pin("1357")
        _ = try await v3.createActivation(activationCode: prepared.activationCode, name: "old phone", password: pinCode)
        try await v3.validatePassword(pinCode)

        // The same application and store, now serving EC_P384.
        var v4Configuration = legacyConfiguration
        try v4Configuration.serve(.ecP384)
        let server = try ActivationServer(configuration: v4Configuration, store: store)
        let service = try ActivationService(
            configuration: configuration, storage: storage, transport: InProcessTransport(server: server))
        #expect(try await service.fetchActivationStatus().state == .active)
        try await service.validatePassword(pinCode)

        // upgrade/start: V4 encryption (application scope) and a V3.3 code over the encrypted body.
        let device = try V4TestDevice(server: server)
        let key = try await device.temporaryKey(activation: false)
        let context = try device.context(key, .upgradeStart, activation: false)
        let (exchange, sharedRequest) = try V4SharedSecret.makeRequest(algorithm: .ecP384)
        let start = V4UpgradeStartRequest(
            sharedSecretRequest: sharedRequest,
            devicePublicKeys: V4PublicKeys(ecdsa: Data(device.deviceKeyPair.publicKey).base64EncodedString()))
        let (sealed, nonce) = try context.encryptRequest(
            try V4TestDevice.secure(try WireCoding.encode(start)), timestampMilliseconds: device.now)
        let body = try WireCoding.encode(sealed)
        let v3Header = try await service.signRequest(
            method: "POST", uriIdentifier: "/pa/upgrade/start", body: body,
            authentication: .possessionWithPassword(pinCode))
        let response = await device.send(
            V4API.upgradeStart.path,
            headers: [
                AuthorizationHeader.name: v3Header.value,
                V4EncryptionHeader.name: V4EncryptionHeader(applicationKey: device.applicationKey, activationId: nil)
                    .value,
            ], body: body)
        #expect(response.statusCode == 200)
        let plain = try context.decryptResponse(
            try WireCoding.decode(V4EncryptedResponse.self, response.body), nonce: nonce)
        let started = try WireCoding.decode(V4UpgradeStartResponse.self, V4TestDevice.reveal(plain))
        let secret = try V4SharedSecret.finish(exchange, response: started.sharedSecretResponse)
        device.keys = try V4ActivationKeys(activationSecret: secret)
        device.activationId = try #require(await service.activationIdentifier())
        device.counter = try V4HashCounter(base64: started.ctrData)
        device.serverPublicKey = [UInt8](try #require(Data(base64Encoded: started.serverPublicKeys.ecdsa)))

        // Before the confirmation: V3.3 still works, V4 only confirms (and says the upgrade waits).
        try await service.validatePassword(pinCode)
        let early = try await device.call(V4API.validate, body: [], factorSet: .possessionKnowledge)
        #expect(early.statusCode == 401)
        #expect(try server.activationDetail(device.activationId).failedAttempts == 0)
        let pending = try await device.status()
        #expect(pending.currentVersion == 3 && pending.flags & V4StatusBlob.flagUpgradeConfirmationPending != 0)

        let confirmed = try await device.call(V4API.upgradeConfirm, body: Array("{}".utf8), factorSet: .possession)
        #expect(confirmed.statusCode == 200)

        // After: V4 only.
        let after = try await device.call(V4API.validate, body: [], factorSet: .possessionKnowledge)
        #expect(after.statusCode == 200)
        let status = try await device.status()
        #expect(status.currentVersion == 4 && status.flags & V4StatusBlob.flagUpgradeConfirmationPending == 0)
        await #expect(throws: ActivationError.self) { try await service.validatePassword(pinCode) }
        #expect(try server.activationDetail(device.activationId).state == .active)
    }
}
