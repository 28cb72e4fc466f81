import ActivationTestSupport
import Biometry
import Foundation
import PowerAuthProtocol
import SecureCore
import Testing

@testable import Activation
@testable import ActivationServer

@Suite("ActivationService.upgradeToV4: V3.3 to V4, and a crash after each durable step")
struct V4UpgradeServiceTests {
    /// A V3.3 activation made while the application served `LEGACY_P256`, then the same
    /// application and store serving a V4 suite (`EC_P384` unless asked), and the device's
    /// configuration of that suite.
    struct Setup {
        let server: ActivationServer
        let configuration: ActivationConfiguration
        let directory: String
        let storage: FileActivationStorage
        let activationId: String
        let pinCode: Password
        let sensor: SimulatedBiometricAuthenticator?

        init(algorithm: ProtocolAlgorithm = .ecP384, biometry sensor: SimulatedBiometricAuthenticator? = nil)
            async throws
        {
            self.sensor = sensor
            let store = InMemoryServerActivationStore()
            let legacyConfiguration = try ActivationServerConfiguration.generate(autoCommit: true)
            let legacy = try ActivationServer(configuration: legacyConfiguration, store: store)
            directory = temporaryDirectory()
            storage = try FileActivationStorage(directory: directory)
            let v3 = try ActivationService(
                configuration: try ActivationConfiguration(
                    instanceId: "upgrade", baseEndpointURL: "https://bank.example",
                    configuration: try legacyConfiguration.configurationString(), algorithm: "LEGACY_P256",
                    knowledgeKeyParameters: .testing),
                storage: storage, transport: InProcessTransport(server: legacy), authenticator: sensor)
            let prepared = try legacy.initActivation(userId: "grace")
            pinCode = try pin("1357")
            activationId = try await v3.createActivation(
                activationCode: prepared.activationCode, name: "old phone", password: pinCode,
                enableBiometry: sensor != nil
            ).activationId
            try await v3.validatePassword(pinCode)
            var v4Configuration = legacyConfiguration
            try v4Configuration.serve(algorithm)
            server = try ActivationServer(configuration: v4Configuration, store: store)
            configuration = try ActivationConfiguration(
                instanceId: "upgrade", baseEndpointURL: "https://bank.example",
                configuration: try v4Configuration.configurationString(), algorithm: algorithm.rawValue,
                knowledgeKeyParameters: .testing)
        }

        /// A fresh service over `storage` (what a restarted process builds).
        func service(_ storage: FileActivationStorage? = nil) throws -> ActivationService {
            try ActivationService(
                configuration: configuration, storage: storage ?? self.storage,
                transport: InProcessTransport(server: server), authenticator: sensor)
        }

        /// Runs the upgrade, stopped after `checkpoint` as a crash there would stop it.
        func upgrade(interruptedAfter checkpoint: UpgradeCheckpoint) async throws {
            let service = try service()
            await service.interruptUpgrade(after: checkpoint)
            await #expect(throws: ActivationError.cancelled) { try await service.upgradeToV4(password: pinCode) }
        }

        var names: StorageNames { configuration.storageNames }

        func stored(_ name: String) throws -> Bool { try storage.read(name) != nil }

        /// The device speaks V4 only: the state file is V4, no upgrade file is left, the
        /// PIN checks out in V4, the status is active in V4 terms.
        func expectV4(_ service: ActivationService) async throws {
            #expect(LocalV4State.isV4State(try #require(try storage.read(names.state))))
            #expect(try !stored(names.upgradeState) && !stored(names.upgradeKeys))
            #expect(await !service.hasPendingUpgrade())
            #expect(await service.activationIdentifier() == activationId)
            try await service.validatePassword(pinCode)
            #expect(try await service.fetchActivationStatus().state == .active)
            #expect(try server.activationDetail(activationId).failedAttempts == 0)
            #expect(
                try server.activationDetail(activationId).fingerprint == (try await service.activationFingerprint()))
        }

        /// The device still speaks V3.3: the state file is V3.3 and the PIN checks out in V3.3.
        func expectV3(_ service: ActivationService) async throws {
            #expect(!LocalV4State.isV4State(try #require(try storage.read(names.state))))
            #expect(await service.activationIdentifier() == activationId)
            try await service.validatePassword(pinCode)
            #expect(try await service.fetchActivationStatus().state == .active)
        }
    }

    @Test(
        "the happy path: V3.3 works before, V4 after, the V3.3 state is gone and a restart loads V4",
        arguments: [ProtocolAlgorithm.ecP384, .ecP384MLL3, .ecP384MLL5])
    func happyPath(algorithm: ProtocolAlgorithm) async throws {
        let setup = try await Setup(algorithm: algorithm)
        let service = try setup.service()
        try await setup.expectV3(service)
        try await service.upgradeToV4(password: setup.pinCode)
        try await setup.expectV4(service)
        try await setup.expectV4(try setup.service())
        #expect(try setup.server.activationDetail(setup.activationId).fingerprint != nil)
        let state = try LocalV4State.decode(
            try #require(try setup.storage.read(setup.names.state)), instanceId: "upgrade")
        #expect(state.suite == algorithm && (state.serverPostQuantumKey == nil) == (algorithm == .ecP384))
        await #expect(throws: ActivationError.invalidActivationState(reason: "the activation speaks V4 already")) {
            try await service.upgradeToV4(password: setup.pinCode)
        }
    }

    @Test("biometry on: the V4 biometry key replaces the V3.3 one without a prompt, biometry codes work after")
    func biometryKept() async throws {
        let sensor = SimulatedBiometricAuthenticator()
        let setup = try await Setup(biometry: sensor)
        let service = try setup.service()
        try await service.validateSignature(authentication: .possessionWithBiometry(prompt: "V3"))
        let promptsBefore = sensor.promptsShown.count
        try await service.upgradeToV4(password: setup.pinCode)
        #expect(sensor.promptsShown.count == promptsBefore)
        try await setup.expectV4(service)
        #expect(await service.hasBiometryFactor())
        #expect(try setup.server.activationDetail(setup.activationId).biometryEnabled)
        try await service.validateSignature(authentication: .possessionWithBiometry(prompt: "V4"))
        #expect(try setup.server.activationDetail(setup.activationId).failedAttempts == 0)
        // The V3.3 key is gone from the authenticator; the V4 one sits under the upgrade account.
        let v3Key = try await sensorKey(sensor, account: setup.configuration.biometryKeyAccount)
        #expect(v3Key == nil)
        let v4Key = try await sensorKey(sensor, account: setup.configuration.upgradeBiometryKeyAccount)
        #expect(v4Key == 32)
        // A restarted process signs with it too; removing the activation deletes it.
        let restarted = try setup.service()
        try await restarted.validateSignature(authentication: .possessionWithBiometry(prompt: "again"))
        try await restarted.removeActivation(authentication: .possessionWithPassword(setup.pinCode))
        #expect(try await sensorKey(sensor, account: setup.configuration.upgradeBiometryKeyAccount) == nil)
    }

    @Test(
        "biometry on, an upgrade the server never confirmed: discarded with its new biometry key, V3.3 biometry works")
    func biometryAbandoned() async throws {
        let sensor = SimulatedBiometricAuthenticator()
        let setup = try await Setup(biometry: sensor)
        try await setup.upgrade(interruptedAfter: .pendingStateStored)
        #expect(try await sensorKey(sensor, account: setup.configuration.upgradeBiometryKeyAccount) == 32)
        // The server forgets the pending V4 state (an administrator's reset, or a restart without it).
        try setup.server.store.update(activationId: setup.activationId) { r in r.v4 = nil }
        let restarted = try setup.service()
        #expect(try await restarted.resolvePendingUpgrade() == .abandoned)
        #expect(try await sensorKey(sensor, account: setup.configuration.upgradeBiometryKeyAccount) == nil)
        try await setup.expectV3(restarted)
    }

    /// The size of the key the sensor releases for `account`, or `nil` when it holds none.
    func sensorKey(_ sensor: SimulatedBiometricAuthenticator, account: String) async throws -> Int? {
        do throws(BiometryError) {
            let key = try await sensor.evaluate(
                prompt: "inspect", account: account, configuration: BiometricConfiguration())
            defer { key.destroy() }
            return key.count
        } catch {
            return nil
        }
    }

    @Test("a V3.3 token kept on the device makes no V4 header after the upgrade: a typed error, a new token works")
    func tokenAfterUpgrade() async throws {
        let setup = try await Setup()
        let service = try setup.service()
        let old = try await service.createToken(authentication: .possessionWithPassword(setup.pinCode))
        try await service.storeToken(old)
        try await service.upgradeToV4(password: setup.pinCode)
        let kept = try #require(try await service.storedToken(old.tokenId))
        await #expect(
            throws: ActivationError.invalidActivationState(
                reason: "a V3.3 token does not work after the upgrade to V4: create a new token")
        ) { try await service.tokenHeaderValue(for: kept) }
        let fresh = try await service.createToken(authentication: .possessionWithPassword(setup.pinCode))
        let verified = try setup.server.verifyToken(header: try await service.tokenHeaderValue(for: fresh))
        #expect(verified.activationId == setup.activationId)
    }

    @Test("a wrong PIN starts nothing: counted by the server, nothing stored, V3.3 keeps working")
    func wrongPIN() async throws {
        let setup = try await Setup()
        let service = try setup.service()
        await #expect(throws: ActivationError.authentication) {
            try await service.upgradeToV4(password: try pin("0000"))
        }
        #expect(try setup.server.activationDetail(setup.activationId).failedAttempts == 1)
        #expect(try !setup.stored(setup.names.upgradeState) && !setup.stored(setup.names.upgradeKeys))
        try await setup.expectV3(try setup.service())
    }

    @Test(
        "a crash before the V4 state is stored: V3.3 works on restart, nothing pends, a new upgrade succeeds",
        arguments: [UpgradeCheckpoint.started, .pendingKeysStored])
    func crashBeforePendingState(_ checkpoint: UpgradeCheckpoint) async throws {
        let setup = try await Setup()
        try await setup.upgrade(interruptedAfter: checkpoint)
        #expect(try setup.stored(setup.names.upgradeKeys) == (checkpoint == .pendingKeysStored))
        let restarted = try setup.service()
        #expect(await !restarted.hasPendingUpgrade())
        #expect(try !setup.stored(setup.names.upgradeKeys))
        try await setup.expectV3(restarted)
        try await restarted.upgradeToV4(password: setup.pinCode)
        try await setup.expectV4(restarted)
    }

    @Test(
        "a crash with the V4 state stored, before or after the server confirmed: the restart resolves it to V4",
        arguments: [UpgradeCheckpoint.pendingStateStored, .confirmed], [ProtocolAlgorithm.ecP384, .ecP384MLL3])
    func crashWhilePending(_ checkpoint: UpgradeCheckpoint, algorithm: ProtocolAlgorithm) async throws {
        let setup = try await Setup(algorithm: algorithm)
        try await setup.upgrade(interruptedAfter: checkpoint)
        #expect(try setup.stored(setup.names.upgradeState) && setup.stored(setup.names.upgradeKeys))
        let restarted = try setup.service()
        #expect(await restarted.hasPendingUpgrade())
        #expect(try await restarted.resolvePendingUpgrade() == .upgraded)
        #expect(try await restarted.resolvePendingUpgrade() == nil)
        try await setup.expectV4(restarted)
        try await setup.expectV4(try setup.service())
    }

    @Test(
        "a crash during the local switch: the restart finishes it without the server",
        arguments: [UpgradeCheckpoint.stateSwitched, .keysSwitched])
    func crashDuringSwitch(_ checkpoint: UpgradeCheckpoint) async throws {
        let setup = try await Setup()
        try await setup.upgrade(interruptedAfter: checkpoint)
        let restarted = try setup.service()
        #expect(try await restarted.resolvePendingUpgrade() == nil)
        try await setup.expectV4(restarted)
    }

    @Test("a pending V4 state the server replaced is abandoned: V3.3 keeps working, a new upgrade succeeds")
    func abandoned() async throws {
        let setup = try await Setup()
        // A copy of the device, taken before the upgrade, starts an upgrade of its own later.
        let copy = temporaryDirectory()
        try FileManager.default.copyItem(atPath: setup.directory, toPath: copy)
        try await setup.upgrade(interruptedAfter: .pendingStateStored)
        let other = try setup.service(try FileActivationStorage(directory: copy))
        // The copy's counter is behind the server's by the first start: one refused check moves it.
        await #expect(throws: ActivationError.authentication) { try await other.validatePassword(setup.pinCode) }
        await other.interruptUpgrade(after: .started)
        await #expect(throws: ActivationError.cancelled) { try await other.upgradeToV4(password: setup.pinCode) }

        let restarted = try setup.service()
        #expect(await restarted.hasPendingUpgrade())
        #expect(try await restarted.resolvePendingUpgrade() == .abandoned)
        #expect(try !setup.stored(setup.names.upgradeState) && !setup.stored(setup.names.upgradeKeys))
        try await setup.expectV3(restarted)
        try await restarted.upgradeToV4(password: setup.pinCode)
        try await setup.expectV4(restarted)
    }
}
