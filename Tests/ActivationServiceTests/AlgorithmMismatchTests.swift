import Activation
import ActivationServer
import ActivationTestSupport
import Foundation
import PowerAuthProtocol
import Testing

@Suite("A configuration that asks for another suite than the stored activation's")
struct AlgorithmMismatchTests {
    /// A configuration of the harness's instance asking for `algorithm`, over `configurationString`.
    static func configuration(_ h: Harness, _ algorithm: ProtocolAlgorithm, _ configurationString: String) throws
        -> ActivationConfiguration
    {
        try ActivationConfiguration(
            instanceId: h.configuration.instanceId, baseEndpointURL: "https://bank.example/enrollment-server",
            configuration: configurationString, algorithm: algorithm.rawValue, knowledgeKeyParameters: .testing)
    }

    @Test(
        "LEGACY_P256 over a V4 activation: a typed answer naming both suites, nothing changed",
        arguments: [ProtocolAlgorithm.ecP384, .ecP384MLL3, .ecP384MLL5])
    func legacyOverV4(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        try await h.activate(service)
        let before = try h.storage.read(h.configuration.storageNames.state)
        let legacy = try Self.configuration(h, .legacyP256, try h.serverConfiguration.configurationString())
        #expect(throws: ActivationError.algorithmMismatch(activation: algorithm, configuration: .legacyP256)) {
            try ActivationService(configuration: legacy, storage: h.storage, transport: h.transport, clock: h.clock)
        }
        #expect(try ActivationService.storedAlgorithm(configuration: legacy, storage: h.storage) == algorithm)
        #expect(try h.storage.read(h.configuration.storageNames.state) == before)
        // Its own suite still opens it.
        try await h.makeService().validatePassword(try pin("1234"))
    }

    @Test("EC_P384 under an EC_P384_ML_L3 configuration: upgrade available, and the activation keeps working")
    func weakerV4UnderStrongerConfiguration() async throws {
        let h = try Harness(algorithm: .ecP384)
        let service = try h.makeService()
        try await h.activate(service)
        var stronger = h.serverConfiguration
        try stronger.serve(.ecP384MLL3)
        let asksL3 = try Self.configuration(h, .ecP384MLL3, try stronger.configurationString())
        let opened = try ActivationService(
            configuration: asksL3, storage: h.storage, transport: h.transport, clock: h.clock)
        let check = await opened.algorithmCheck()
        #expect(check == .upgradeAvailable(from: .ecP384, to: .ecP384MLL3))
        #expect(
            "\(check)" == "the activation uses EC_P384, the configuration asks for EC_P384_ML_L3: upgrade available")
        let flows = ActivationFlows(service: opened, clock: h.clock)
        #expect(await flows.refresh(trigger: .applicationStart) == .upgradeAvailable(from: .ecP384, to: .ecP384MLL3))
        try await opened.validatePassword(try pin("1234"))
        #expect(await service.algorithmCheck() == .matches(.ecP384))
    }

    @Test("a weaker V4 configuration over a stronger activation: no downgrade, the activation keeps its suite")
    func strongerV4UnderWeakerConfiguration() async throws {
        let h = try Harness(algorithm: .ecP384MLL5)
        let service = try h.makeService()
        try await h.activate(service)
        let asksP384 = try Self.configuration(h, .ecP384, try h.serverConfiguration.configurationString())
        let opened = try ActivationService(
            configuration: asksP384, storage: h.storage, transport: h.transport, clock: h.clock)
        #expect(await opened.algorithmCheck() == .configurationWeaker(activation: .ecP384MLL5, configuration: .ecP384))
        try await opened.validatePassword(try pin("1234"))
        #expect(
            await ActivationFlows(service: opened, clock: h.clock).refresh(trigger: .applicationStart) == .dashboard)
    }

    @Test("a V3.3 activation under a V4 configuration: upgrade available")
    func legacyUnderV4Configuration() async throws {
        let h = try Harness(algorithm: .legacyP256)
        let service = try h.makeService()
        try await h.activate(service)
        var v4 = h.serverConfiguration
        try v4.serve(.ecP384)
        let asksV4 = try Self.configuration(h, .ecP384, try v4.configurationString())
        let opened = try ActivationService(
            configuration: asksV4, storage: h.storage, transport: h.transport, clock: h.clock)
        #expect(await opened.algorithmCheck() == .upgradeAvailable(from: .legacyP256, to: .ecP384))
        #expect(await service.algorithmCheck() == .matches(.legacyP256))
        let empty = try Harness()
        #expect(await (try empty.makeService()).algorithmCheck() == .noActivation)
    }
}
