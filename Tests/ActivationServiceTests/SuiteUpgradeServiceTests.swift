import ActivationTestSupport
import Biometry
import Foundation
import PowerAuthProtocol
import SecureCore
import Testing

@testable import Activation
@testable import ActivationServer

@Suite("ActivationService.upgrade: a V4 suite to a stronger one, and a crash after each durable step")
struct SuiteUpgradeServiceTests {
    /// A V4 activation made and confirmed while the application served `from`, then the same
    /// application and store serving `to`, and the device's configuration asking for `to`.
    struct Setup {
        let from: ProtocolAlgorithm
        let to: ProtocolAlgorithm
        let server: ActivationServer
        let configuration: ActivationConfiguration
        let storage: FileActivationStorage
        let activationId: String
        let pinCode: Password
        let sensor: SimulatedBiometricAuthenticator?

        init(
            from: ProtocolAlgorithm = .ecP384, to: ProtocolAlgorithm = .ecP384MLL3,
            biometry sensor: SimulatedBiometricAuthenticator? = nil
        ) async throws {
            self.from = from
            self.to = to
            self.sensor = sensor
            let store = InMemoryServerActivationStore()
            var before = try ActivationServerConfiguration.generate(autoCommit: true)
            try before.serve(from)
            let old = try ActivationServer(configuration: before, store: store)
            storage = try FileActivationStorage(directory: temporaryDirectory())
            let device = try ActivationService(
                configuration: try ActivationConfiguration(
                    instanceId: "suite", baseEndpointURL: "https://bank.example",
                    configuration: try before.configurationString(), algorithm: from.rawValue,
                    knowledgeKeyParameters: .testing),
                storage: storage, transport: InProcessTransport(server: old), authenticator: sensor)
            let prepared = try old.initActivation(userId: "ivan")
            pinCode = try pin("8642")
            activationId = try await device.createActivation(
                activationCode: prepared.activationCode, name: "phone", password: pinCode,
                enableBiometry: sensor != nil
            ).activationId
            try await device.confirmActivation(password: pinCode)
            var after = before
            try after.serve(to)
            server = try ActivationServer(configuration: after, store: store)
            configuration = try ActivationConfiguration(
                instanceId: "suite", baseEndpointURL: "https://bank.example",
                configuration: try after.configurationString(), algorithm: to.rawValue,
                knowledgeKeyParameters: .testing)
        }

        func service() throws -> ActivationService {
            try ActivationService(
                configuration: configuration, storage: storage, transport: InProcessTransport(server: server),
                authenticator: sensor)
        }

        func upgrade(interruptedAfter checkpoint: UpgradeCheckpoint) async throws {
            let service = try service()
            await service.interruptUpgrade(after: checkpoint)
            await #expect(throws: ActivationError.cancelled) { try await service.upgrade(password: pinCode) }
        }

        var names: StorageNames { configuration.storageNames }

        func stored(_ name: String) throws -> Bool { try storage.read(name) != nil }

        /// The stored activation's suite, from its state file.
        func storedSuite() throws -> ProtocolAlgorithm? {
            try ActivationService.storedAlgorithm(configuration: configuration, storage: storage)
        }

        /// The device works in `suite`: the state file says so, the PIN checks out, the status is
        /// active, the fingerprint is the back office's, no failure is left.
        func expect(_ service: ActivationService, in suite: ProtocolAlgorithm) async throws {
            #expect(try storedSuite() == suite)
            #expect(await service.activationIdentifier() == activationId)
            try await service.validatePassword(pinCode)
            #expect(try await service.fetchActivationStatus().state == .active)
            #expect(try server.activationDetail(activationId).failedAttempts == 0)
            #expect(
                try server.activationDetail(activationId).fingerprint == (try await service.activationFingerprint()))
            #expect(try server.store.fetch(activationId: activationId)?.v4?.algorithm == suite)
        }
    }

    @Test(
        "the happy path: the weaker suite works before, the stronger one after, a restart loads it",
        arguments: [
            (ProtocolAlgorithm.ecP384, ProtocolAlgorithm.ecP384MLL3), (.ecP384, .ecP384MLL5),
            (.ecP384MLL3, .ecP384MLL5),
        ])
    func happyPath(from: ProtocolAlgorithm, to: ProtocolAlgorithm) async throws {
        let setup = try await Setup(from: from, to: to)
        let service = try setup.service()
        #expect(await service.algorithmCheck() == .upgradeAvailable(from: from, to: to))
        try await setup.expect(service, in: from)
        try await service.upgrade(password: setup.pinCode)
        try await setup.expect(service, in: to)
        #expect(try !setup.stored(setup.names.upgradeState) && !setup.stored(setup.names.upgradeKeys))
        #expect(await service.algorithmCheck() == .matches(to))
        let restarted = try setup.service()
        try await setup.expect(restarted, in: to)
        await #expect(throws: ActivationError.self) { try await restarted.upgrade(password: setup.pinCode) }
        #expect(try setup.server.store.fetch(activationId: setup.activationId)?.v4Upgrade == nil)
    }

    @Test("a wrong PIN starts nothing: counted by the server, nothing stored, the old suite keeps working")
    func wrongPIN() async throws {
        let setup = try await Setup()
        let service = try setup.service()
        await #expect(throws: ActivationError.authentication) { try await service.upgrade(password: try pin("0000")) }
        #expect(try setup.server.activationDetail(setup.activationId).failedAttempts == 1)
        #expect(try !setup.stored(setup.names.upgradeState) && !setup.stored(setup.names.upgradeKeys))
        try await setup.expect(try setup.service(), in: .ecP384)
    }

    @Test(
        "a crash before the new state is stored: the old suite works on restart, a new upgrade succeeds",
        arguments: [UpgradeCheckpoint.started, .pendingKeysStored])
    func crashBeforePendingState(_ checkpoint: UpgradeCheckpoint) async throws {
        let setup = try await Setup()
        try await setup.upgrade(interruptedAfter: checkpoint)
        let restarted = try setup.service()
        #expect(await !restarted.hasPendingUpgrade())
        try await setup.expect(restarted, in: .ecP384)
        try await restarted.upgrade(password: setup.pinCode)
        try await setup.expect(restarted, in: .ecP384MLL3)
    }

    @Test(
        "a crash with the new state stored, before or after the server confirmed: the restart resolves it",
        arguments: [UpgradeCheckpoint.pendingStateStored, .confirmed])
    func crashWhilePending(_ checkpoint: UpgradeCheckpoint) async throws {
        let setup = try await Setup()
        try await setup.upgrade(interruptedAfter: checkpoint)
        #expect(try setup.stored(setup.names.upgradeState) && setup.stored(setup.names.upgradeKeys))
        let restarted = try setup.service()
        #expect(await restarted.hasPendingUpgrade())
        // Until it is resolved, the old suite still signs.
        if checkpoint == .pendingStateStored { try await restarted.validatePassword(setup.pinCode) }
        #expect(try await restarted.resolvePendingUpgrade() == .upgraded)
        try await setup.expect(restarted, in: .ecP384MLL3)
        try await setup.expect(try setup.service(), in: .ecP384MLL3)
    }

    @Test(
        "a crash during the local switch: the restart finishes it without the server",
        arguments: [UpgradeCheckpoint.stateSwitched, .keysSwitched])
    func crashDuringSwitch(_ checkpoint: UpgradeCheckpoint) async throws {
        let setup = try await Setup()
        try await setup.upgrade(interruptedAfter: checkpoint)
        let restarted = try setup.service()
        #expect(try await restarted.resolvePendingUpgrade() == nil)
        try await setup.expect(restarted, in: .ecP384MLL3)
    }

    @Test("a pending state the server forgot is abandoned: the old suite keeps working, a new upgrade succeeds")
    func abandoned() async throws {
        let setup = try await Setup()
        try await setup.upgrade(interruptedAfter: .pendingStateStored)
        try setup.server.store.update(activationId: setup.activationId) { r in r.v4Upgrade = nil }
        let restarted = try setup.service()
        #expect(try await restarted.resolvePendingUpgrade() == .abandoned)
        #expect(try !setup.stored(setup.names.upgradeState) && !setup.stored(setup.names.upgradeKeys))
        try await setup.expect(restarted, in: .ecP384)
        try await restarted.upgrade(password: setup.pinCode)
        try await setup.expect(restarted, in: .ecP384MLL3)
    }

    @Test("biometry on: carried across without a prompt, the old key deleted, biometry codes work after")
    func biometryKept() async throws {
        let sensor = SimulatedBiometricAuthenticator()
        let setup = try await Setup(biometry: sensor)
        let service = try setup.service()
        try await service.validateSignature(authentication: .possessionWithBiometry(prompt: "before"))
        let prompts = sensor.promptsShown.count
        try await service.upgrade(password: setup.pinCode)
        #expect(sensor.promptsShown.count == prompts)
        try await setup.expect(service, in: .ecP384MLL3)
        try await service.validateSignature(authentication: .possessionWithBiometry(prompt: "after"))
        try await setup.service().validateSignature(authentication: .possessionWithBiometry(prompt: "restart"))
        #expect(try setup.server.activationDetail(setup.activationId).failedAttempts == 0)
    }

    @Test("no downgrade: a weaker configuration refuses the upgrade and names both suites")
    func noDowngrade() async throws {
        let setup = try await Setup(from: .ecP384MLL5, to: .ecP384MLL3)
        let service = try setup.service()
        #expect(
            await service.algorithmCheck() == .configurationWeaker(activation: .ecP384MLL5, configuration: .ecP384MLL3))
        do {
            try await service.upgrade(password: setup.pinCode)
            Issue.record("a downgrade ran")
        } catch {
            guard case .invalidActivationState(let reason) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(reason.contains("EC_P384_ML_L5") && reason.contains("EC_P384_ML_L3"))
        }
        try await setup.expect(service, in: .ecP384MLL5)
    }
}
