import Activation
import ActivationTestSupport
import Biometry
import Foundation
import PowerAuthProtocol
import SecureCore
import Testing

@testable import ActivationServer

@Suite("ActivationService speaking protocol V4 (EC_P384 and the hybrid suites)")
struct V4ServiceTests {
    struct Setup {
        let server: ActivationServer
        let configuration: ActivationConfiguration
        let storage: FileActivationStorage

        init(maxFailedAttempts: Int = 5, algorithm: ProtocolAlgorithm = .ecP384) throws {
            var serverConfiguration = try ActivationServerConfiguration.generate(maxFailedAttempts: maxFailedAttempts)
            try serverConfiguration.serve(algorithm)
            server = try ActivationServer(configuration: serverConfiguration)
            configuration = try ActivationConfiguration(
                instanceId: "v4", baseEndpointURL: "https://bank.example",
                configuration: try serverConfiguration.configurationString(), algorithm: algorithm.rawValue,
                knowledgeKeyParameters: .testing)
            storage = try FileActivationStorage(directory: temporaryDirectory())
        }

        func service() throws -> ActivationService {
            try ActivationService(
                configuration: configuration, storage: storage, transport: InProcessTransport(server: server))
        }
    }

    @Test(
        "activate, commit, status, validate, a counted wrong PIN, token, vault, reload, PIN change, remove",
        arguments: [ProtocolAlgorithm.ecP384, .ecP384MLL3, .ecP384MLL5])
    func lifecycle(algorithm: ProtocolAlgorithm) async throws {
        let setup = try Setup(algorithm: algorithm)
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
        #expect(setup.configuration.algorithm == algorithm)
        // A hybrid device sent its ML-DSA key (devicePublicKeys.mldsa); it is part of the fingerprint.
        let devicePostQuantum = try setup.server.store.fetch(activationId: result.activationId)?.v4?
            .devicePostQuantumPublicKey
        #expect(devicePostQuantum?.count == algorithm.signatureParameterSet?.publicKeyByteCount)
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
        let header = try await service.signRequest(
            method: "POST", uriIdentifier: "/pa/payment", body: body, authentication: .possessionWithPassword(pinCode))
        let verified = try setup.server.verifyAuthorization(
            header: header.value, method: "POST", uriIdentifier: "/pa/payment", body: body)
        #expect(verified.userId == "ivan")
        // A code computed and never sent: the server is behind, still within the window.
        _ = try await service.signRequest(
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
        let header = try await service.signRequest(
            method: "POST", uriIdentifier: "/pa/payment", body: body,
            authentication: .possessionWithBiometry(prompt: "Approve"))
        let verified = try setup.server.verifyAuthorization(
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

    /// Hands requests to the server and flips one byte of the ML-DSA signature in every
    /// `keystore/create` answer (the ES384 one is left intact).
    struct TamperingTransport: ActivationTransport {
        let server: ActivationServer

        func send(_ request: TransportRequest, timeout: Duration) async throws(TransportError) -> TransportResponse {
            let response = try await InProcessTransport(server: server).send(request, timeout: timeout)
            guard request.path == V4API.keystoreCreate.path,
                let message = try? WireCoding.decode(ResponseEnvelope<JWTMessage>.self, response.body).responseObject,
                var jws = (try? JSONSerialization.jsonObject(with: Data(message.jwt.utf8))) as? [String: Any],
                var signatures = jws["signatures"] as? [[String: Any]], signatures.count == 2,
                let text = signatures[1]["signature"] as? String
            else { return response }
            var characters = Array(text)
            characters[10] = characters[10] == "A" ? "B" : "A"
            signatures[1]["signature"] = String(characters)
            jws["signatures"] = signatures
            guard let tampered = try? JSONSerialization.data(withJSONObject: jws),
                let body = try? WireCoding.encode(
                    ResponseEnvelope(responseObject: JWTMessage(jwt: String(decoding: tampered, as: UTF8.self))))
            else { return response }
            return TransportResponse(statusCode: response.statusCode, body: body)
        }
    }

    @Test(
        "a hybrid client refuses a temporary key whose ML-DSA signature was altered",
        arguments: [
            ProtocolAlgorithm.ecP384MLL3, .ecP384MLL5,
        ])
    func tamperedPostQuantumSignature(algorithm: ProtocolAlgorithm) async throws {
        let setup = try Setup(algorithm: algorithm)
        let prepared = try setup.server.initActivation(userId: "mallory")
        let tampered = try ActivationService(
            configuration: setup.configuration, storage: setup.storage,
            transport: TamperingTransport(server: setup.server))
        await #expect(throws: ActivationError.invalidResponse(reason: "keystore/create: the response does not verify"))
        {
            try await tampered.createActivation(
                activationCode: prepared.activationCode, name: "p", password: try pin("1470"))
        }
        #expect(await tampered.hasValidActivation() == false)
        #expect(try setup.server.activationDetail(prepared.activationId).state == .created)
        // The same request through an honest transport goes through.
        _ = try await setup.service().createActivation(
            activationCode: prepared.activationCode, name: "p", password: try pin("1470"))
        // And an activation-scope key of the activation's own ML-DSA key is refused when altered.
        let activated = try ActivationService(
            configuration: setup.configuration, storage: setup.storage,
            transport: TamperingTransport(server: setup.server))
        await #expect(throws: ActivationError.invalidResponse(reason: "keystore/create: the response does not verify"))
        {
            try await activated.fetchActivationStatus()
        }
    }

    @Test("a configuration string without the suite's ML-DSA master key refuses the hybrid suite")
    func hybridNeedsItsMasterKey() throws {
        var p384 = try ActivationServerConfiguration.generate()
        try p384.serve(.ecP384)
        var level3 = try ActivationServerConfiguration.generate()
        try level3.serve(.ecP384MLL3)
        let cases: [(String, String, String)] = [
            (try p384.configurationString(), "EC_P384_ML_L3", "0x03"),
            (try p384.configurationString(), "EC_P384_ML_L5", "0x04"),
            (try level3.configurationString(), "EC_P384_ML_L5", "0x04"),
        ]
        for (text, name, key) in cases {
            #expect(
                throws: ActivationError.wrongParameter(
                    reason: "\(name) needs the ML-DSA master key (key \(key)) in the configuration string")
            ) {
                try ActivationConfiguration(
                    instanceId: "x", baseEndpointURL: "https://x.example", configuration: text, algorithm: name)
            }
        }
        // The level-3 string offers EC_P384_ML_L3 (the default), EC_P384 and LEGACY_P256.
        for name in ["EC_P384_ML_L3", "EC_P384", "LEGACY_P256"] {
            #expect(
                try ActivationConfiguration(
                    instanceId: "x", baseEndpointURL: "https://x.example",
                    configuration: try level3.configurationString(),
                    algorithm: name
                ).algorithm.rawValue == name)
        }
        #expect(
            try ActivationConfiguration(
                instanceId: "x", baseEndpointURL: "https://x.example", configuration: try level3.configurationString()
            ).algorithm == .ecP384MLL3)
        let keys = try SDKConfiguration(parsing: try level3.configurationString()).keys.map(\.id)
        #expect(keys.contains(0x02) && keys.contains(0x03) && !keys.contains(0x04))
    }

    @Test("a server serving EC_P384_ML_L3 refuses an EC_P384 key exchange as the client's error (400)")
    func otherSuiteRefused() async throws {
        let setup = try Setup(algorithm: .ecP384MLL3)
        let p384 = try ActivationService(
            configuration: try ActivationConfiguration(
                instanceId: "v4", baseEndpointURL: "https://bank.example",
                configuration: setup.configuration.sdkConfiguration.encoded, algorithm: "EC_P384",
                knowledgeKeyParameters: .testing),
            storage: setup.storage, transport: InProcessTransport(server: setup.server))
        let prepared = try setup.server.initActivation(userId: "peggy")
        await #expect(throws: ActivationError.server(statusCode: 400, code: TemporaryKeyAPI.errorCode)) {
            try await p384.createActivation(
                activationCode: prepared.activationCode, name: "p", password: try pin("1470"))
        }
        #expect(try setup.server.activationDetail(prepared.activationId).state == .created)
    }

    @Test("an activation keeps its suite: an EC_P384 device state still works when the server serves EC_P384_ML_L3")
    func activationKeepsItsSuite() async throws {
        var serverConfiguration = try ActivationServerConfiguration.generate()
        try serverConfiguration.serve(.ecP384)
        let store = InMemoryServerActivationStore()
        let first = try ActivationServer(configuration: serverConfiguration, store: store)
        let storage = try FileActivationStorage(directory: temporaryDirectory())
        let p384 = try ActivationService(
            configuration: try ActivationConfiguration(
                instanceId: "v4", baseEndpointURL: "https://bank.example",
                configuration: try serverConfiguration.configurationString(), algorithm: "EC_P384",
                knowledgeKeyParameters: .testing),
            storage: storage, transport: InProcessTransport(server: first))
        let prepared = try first.initActivation(userId: "olga")
        _ = try await p384.createActivation(
            activationCode: prepared.activationCode, name: "p", password: try pin("2468"))
        try first.commitActivation(prepared.activationId)
        // The same application now serves the hybrid suite; the store is the same.
        try serverConfiguration.serve(.ecP384MLL3)
        let second = try ActivationServer(configuration: serverConfiguration, store: store)
        let hybrid = try ActivationService(
            configuration: try ActivationConfiguration(
                instanceId: "v4", baseEndpointURL: "https://bank.example",
                configuration: try serverConfiguration.configurationString(), knowledgeKeyParameters: .testing),
            storage: storage, transport: InProcessTransport(server: second))
        try await hybrid.validatePassword(try pin("2468"))
        #expect(try await hybrid.fetchActivationStatus().state == .active)
    }
}
