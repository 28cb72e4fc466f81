import Activation
import ActivationServer
import ActivationTestSupport
import Foundation
import PinVault
import PowerAuthProtocol
import SecureCore
import Testing

@Suite("The biometry factor")
struct BiometryFactorTests {
    @Test("add with the PIN, sign with biometry, remove", arguments: ProtocolAlgorithm.allCases)
    func addSignRemove(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let sensor = SimulatedBiometricAuthenticator()
        let service = try h.makeService(authenticator: sensor)
        let id = try await h.activate(service)
        #expect(await service.biometricStatus().isBiometricFactorConfigured == false)
        try await service.addBiometryFactor(password: try pin("1234"))
        #expect(await service.hasBiometryFactor())
        #expect(await service.biometricStatus().isAuthenticationWithBiometricsAvailable)
        #expect(try h.server.activationDetail(id).biometryEnabled)

        let header = try await service.signRequest(
            method: "POST", uriIdentifier: "/payment", body: Array("{\"amount\":1}".utf8),
            authentication: .possessionWithBiometry(prompt: "Approve the payment"))
        let verified = try h.server.verifyAuthorization(
            header: header.value, method: "POST", uriIdentifier: "/payment", body: Array("{\"amount\":1}".utf8))
        #expect(verified.factorSet == .possessionBiometry)
        #expect(sensor.promptsShown == ["Approve the payment"])

        try await service.removeBiometryFactor()
        #expect(await service.hasBiometryFactor() == false)
        await #expect(throws: ActivationError.biometryNotConfigured) {
            try await service.signRequest(
                method: "POST", uriIdentifier: "/payment", body: [],
                authentication: .possessionWithBiometry(prompt: "again"))
        }
    }

    @Test(
        "biometry at activation; removal is local on V3.3 (no server switch), on the server too on V4 (biometry/remove)",
        arguments: ProtocolAlgorithm.allCases)
    func biometryAtActivation(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let sensor = SimulatedBiometricAuthenticator()
        let service = try h.makeService(authenticator: sensor)
        let id = try await h.activate(service, biometry: true)
        #expect(await service.hasBiometryFactor())
        // V4's activation/confirm turns biometry on at the server; V3.3 has no server switch.
        #expect(try h.server.activationDetail(id).biometryEnabled == algorithm.isV4)
        let header = try await service.signRequest(
            method: "POST", uriIdentifier: "/a", body: [], authentication: .possessionWithBiometry(prompt: "p"))
        if algorithm.isV4 {
            // V4: the code verifies while the server holds the key; removal reaches the server.
            let verified = try h.server.verifyAuthorization(
                header: header.value, method: "POST", uriIdentifier: "/a", body: [])
            #expect(verified.factorSet == .possessionBiometry)
            try await service.removeBiometryFactor()
            #expect(await service.hasBiometryFactor() == false)
            #expect(try h.server.activationDetail(id).biometryEnabled == false)
        } else {
            try await service.removeBiometryFactor()
            #expect(await service.hasBiometryFactor() == false)
            // A code computed before the removal still verifies: only the device forgot the key.
            let verified = try h.server.verifyAuthorization(
                header: header.value, method: "POST", uriIdentifier: "/a", body: [])
            #expect(verified.factorSet == .possessionBiometry)
        }
        #expect(try h.server.activationDetail(id).failedAttempts == 0)
    }

    @Test("credentials fetched in advance sign several codes, then expire", arguments: ProtocolAlgorithm.allCases)
    func prefetchedCredentials(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let sensor = SimulatedBiometricAuthenticator()
        let service = try h.makeService(authenticator: sensor)
        try await h.activate(service, biometry: true)
        let credentials = try await service.authenticateUsingBiometry(prompt: "Sign in", validFor: .seconds(30))
        #expect(credentials.factorSet == .possessionBiometry)
        #expect("\(credentials)" == "ActivationAuthentication(possession_biometry, redacted)")
        for path in ["/one", "/two"] {
            let header = try await service.signRequest(
                method: "POST", uriIdentifier: path, body: [], authentication: credentials)
            _ = try h.server.verifyAuthorization(header: header.value, method: "POST", uriIdentifier: path, body: [])
        }
        #expect(sensor.promptsShown == ["Sign in"])
        h.clock.advance(seconds: 30)
        await #expect(throws: ActivationError.credentialsExpired) {
            try await service.signRequest(
                method: "POST", uriIdentifier: "/three", body: [], authentication: credentials)
        }
    }

    @Test("adding biometry with a wrong PIN counts a failure and adds nothing", arguments: ProtocolAlgorithm.allCases)
    func addWithWrongPin(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let sensor = SimulatedBiometricAuthenticator()
        let service = try h.makeService(authenticator: sensor)
        let id = try await h.activate(service)
        let wrong = try pin("0000")
        await #expect(throws: ActivationError.authentication) { try await service.addBiometryFactor(password: wrong) }
        #expect(await service.hasBiometryFactor() == false)
        #expect(try h.server.activationDetail(id).failedAttempts == 1)
        #expect(try h.server.activationDetail(id).biometryEnabled == false)
    }

    @Test("a cancelled prompt and an unavailable sensor are typed errors", arguments: ProtocolAlgorithm.allCases)
    func promptFailures(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let sensor = SimulatedBiometricAuthenticator()
        let service = try h.makeService(authenticator: sensor)
        try await h.activate(service, biometry: true)
        sensor.script(.cancel, .noMatch)
        await #expect(throws: ActivationError.cancelled) {
            try await service.authenticateUsingBiometry(prompt: "p")
        }
        await #expect(throws: ActivationError.biometryFailed) {
            try await service.authenticateUsingBiometry(prompt: "p")
        }
        sensor.setStatus(.lockout)
        #expect(await service.biometricStatus().isAuthenticationWithBiometricsAvailable == false)
        let p = try pin("1234")
        await #expect(throws: ActivationError.biometryNotAvailable(.lockout)) {
            try await service.addBiometryFactor(password: p)
        }
        let noSensor = try Harness(algorithm: algorithm).makeService()
        #expect(await noSensor.biometricStatus().systemStatus == .notSupported)
    }

    @Test(
        "a change of enrolled biometry invalidates the factor when configured to", arguments: ProtocolAlgorithm.allCases
    )
    func invalidatedAfterChange(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(
            algorithm: algorithm, biometric: BiometricConfiguration(invalidateBiometricFactorAfterChange: true))
        let sensor = SimulatedBiometricAuthenticator()
        let service = try h.makeService(authenticator: sensor)
        try await h.activate(service, biometry: true)
        sensor.changeEnrolledSet()
        await #expect(throws: ActivationError.biometryInvalidated) {
            try await service.authenticateUsingBiometry(prompt: "p")
        }
        #expect(await service.hasBiometryFactor() == false)
        try await service.addBiometryFactor(password: try pin("1234"))
        _ = try await service.authenticateUsingBiometry(prompt: "p")
    }
}

@Suite("Offline authentication codes")
struct OfflineCodeTests {
    @Test(
        "an offline code has the configured component length and verifies once", arguments: ProtocolAlgorithm.allCases)
    func offlineCode(algorithm: ProtocolAlgorithm) async throws {
        let base = try Harness(algorithm: algorithm)
        for length in [4, 6, 8] {
            let configuration = try ActivationConfiguration(
                instanceId: "offline-\(length)", baseEndpointURL: "https://bank.example/s",
                configuration: try base.serverConfiguration.configurationString(), algorithm: algorithm.rawValue,
                offlineAuthenticationCodeComponentLength: length, knowledgeKeyParameters: .testing)
            let service = try ActivationService(
                configuration: configuration, storage: base.storage, transport: base.transport, clock: base.clock)
            let id = try await base.activate(service)
            let nonce = [UInt8](repeating: 0x5A, count: 16)
            let body = Array("amount=100&to=CZ01".utf8)
            let code = try await service.offlineAuthenticationCode(
                uriIdentifier: "/operation/authorize/offline", nonce: nonce, body: body,
                authentication: .possessionWithPassword(try pin("1234")))
            let parts = code.split(separator: "-")
            #expect(parts.count == 2)
            #expect(parts.allSatisfy { $0.count == length && $0.allSatisfy(\.isNumber) })
            let verified = try base.server.verifyOfflineCode(
                code, activationId: id, factorSet: .possessionKnowledge, uriIdentifier: "/operation/authorize/offline",
                nonce: nonce, body: body, componentLength: length)
            #expect(verified.factorSet == .possessionKnowledge)
            #expect(throws: ActivationServerError.authenticationFailed) {
                try base.server.verifyOfflineCode(
                    code, activationId: id, factorSet: .possessionKnowledge,
                    uriIdentifier: "/operation/authorize/offline", nonce: nonce, body: body, componentLength: length)
            }
            #expect(try base.server.activationDetail(id).failedAttempts == 1)
        }
    }

    @Test("possession alone cannot make an offline code", arguments: ProtocolAlgorithm.allCases)
    func possessionRefused(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        try await h.activate(service)
        await #expect(throws: ActivationError.invalidActivationState(reason: "an offline code needs a second factor")) {
            try await service.offlineAuthenticationCode(
                uriIdentifier: "/x", nonce: [UInt8](repeating: 1, count: 16), body: [], authentication: .possession())
        }
    }
}
