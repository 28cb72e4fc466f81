import ActivationKeyring
import ActivationServer
import Biometry
import Foundation
import PowerAuthProtocol
import SecureCore
import Testing

@testable import Activation
@testable import ActivationTestSupport

/// The stores the suite runs against: files always; the Secret Service when
/// `SECUREPIN_TEST_KEYRING=1` says a throw-away gnome-keyring is on the session bus
/// (`make test-keyring` starts one).
enum StoreUnderTest: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case files
    case keyring

    static var keyringIsUp: Bool { ProcessInfo.processInfo.environment["SECUREPIN_TEST_KEYRING"] == "1" }

    static var available: [StoreUnderTest] { keyringIsUp ? [.files, .keyring] : [.files] }

    var testDescription: String { rawValue }

    /// A new store for a new instance, its state directory fresh.
    func open(instanceId: String, keychain: KeychainConfiguration? = nil) throws -> any DeviceActivationStorage {
        let directory = temporaryDirectory()
        switch self {
        case .files: return try FileActivationStorage(directory: directory)
        case .keyring:
            return try KeyringActivationStorage(
                keychain: keychain ?? KeychainConfiguration(), instanceId: instanceId, lockDirectory: directory)
        }
    }
}

/// A unique instance id per test, so tests share one keyring without meeting.
func freshInstance() -> String { "test.\(UUID().uuidString.prefix(12))" }

func secret(_ bytes: [UInt8]) throws -> SecureBytes {
    try bytes.withUnsafeBytes { try SecureBytes(copying: $0) }
}

/// A server in process, and a client configuration for `instanceId`.
struct ServerSetup {
    let clock = TestClock()
    let server: ActivationServer
    let transport: TestTransport
    let configuration: ActivationConfiguration

    /// The keyring's authenticator honours only its ``KeyringBiometricAuthenticator/supportedConfiguration``.
    init(instanceId: String, biometric: BiometricConfiguration = KeyringBiometricAuthenticator.supportedConfiguration)
        throws
    {
        let serverConfiguration = try ActivationServerConfiguration.generate(
            lookAhead: 20, maxFailedAttempts: 5, failureBlockDuration: nil)
        server = try ActivationServer(configuration: serverConfiguration, clock: clock)
        transport = TestTransport(server: server)
        configuration = try ActivationConfiguration(
            instanceId: instanceId, baseEndpointURL: "https://bank.example/enrollment-server",
            configuration: try serverConfiguration.configurationString(), algorithm: "LEGACY_P256",
            biometricConfiguration: biometric, knowledgeKeyParameters: .testing)
    }

    func service(_ storage: any DeviceActivationStorage) throws -> ActivationService {
        try ActivationService(configuration: configuration, storage: storage, transport: transport, clock: clock)
    }

    func activate(_ service: ActivationService, pin text: String = "1234") async throws -> String {
        let prepared = try server.initActivation(userId: "alice")
        let result = try await service.createActivation(
            activationCode: prepared.activationCode, name: "test desktop", password: try pin(text))
        try server.commitActivation(result.activationId)
        return result.activationId
    }
}

@Suite("Activation storage: one suite, every store")
struct ActivationStorageSuite {
    @Test("blobs: public and secret round trips, replace, remove, missing is nil", arguments: StoreUnderTest.available)
    func blobs(_ kind: StoreUnderTest) throws {
        let instance = freshInstance()
        let store = try kind.open(instanceId: instance)
        let names = StorageNames(instanceId: instance)
        #expect(try store.read(names.state) == nil)
        #expect(try store.readSecret(names.keys) == nil)
        try store.write(names.state, Array("{\"v\":1}".utf8))
        try store.write(names.state, Array("{\"v\":2}".utf8))
        #expect(try store.read(names.state) == Array("{\"v\":2}".utf8))
        let key = try secret((0..<37).map { UInt8($0 * 7 & 0xFF) })
        defer { key.destroy() }
        try store.writeSecret(names.keys, key)
        let back = try #require(try store.readSecret(names.keys))
        defer { back.destroy() }
        #expect(try back.isEqual(to: key))
        try store.remove(names.keys)
        try store.remove(names.state)
        try store.remove(names.state)  // a missing blob is no error
        #expect(try store.read(names.state) == nil)
        #expect(try store.readSecret(names.keys) == nil)
    }

    @Test(
        "an activation is created, signs, reopens from the store and is forgotten", arguments: StoreUnderTest.available)
    func lifecycle(_ kind: StoreUnderTest) async throws {
        let instance = freshInstance()
        let store = try kind.open(instanceId: instance)
        let setup = try ServerSetup(instanceId: instance)
        let service = try setup.service(store)
        let id = try await setup.activate(service)
        let fingerprint = try await service.activationFingerprint()
        try await service.validatePassword(try pin("1234"))

        let reopened = try setup.service(store)
        #expect(await reopened.activationIdentifier() == id)
        #expect(try await reopened.activationFingerprint() == fingerprint)
        try await reopened.validatePassword(try pin("1234"))  // the counter moved and was stored
        let token = try await reopened.createToken(authentication: .possession())
        defer { token.destroy() }
        try await reopened.storeToken(token)
        let kept = try #require(try await setup.service(store).storedToken(token.tokenId))
        defer { kept.destroy() }
        #expect(try kept.secret.isEqual(to: token.secret))

        try await reopened.removeActivationLocal()
        try await reopened.deleteStoredToken(token.tokenId)
        let names = StorageNames(instanceId: instance)
        #expect(try store.read(names.state) == nil)
        #expect(try store.readSecret(names.keys) == nil)
        #expect(await (try setup.service(store)).hasValidActivation() == false)
    }

    @Test(
        "a crash between the keys and the state: the keys alone are removed on open",
        arguments: StoreUnderTest.available)
    func interruptedCreate(_ kind: StoreUnderTest) async throws {
        let instance = freshInstance()
        let store = try kind.open(instanceId: instance)
        let names = StorageNames(instanceId: instance)
        let orphan = try secret(Array(repeating: 0x5A, count: 37))
        defer { orphan.destroy() }
        try store.writeSecret(names.keys, orphan)
        let service = try ServerSetup(instanceId: instance).service(store)
        #expect(await service.hasValidActivation() == false)
        #expect(try store.readSecret(names.keys) == nil)
    }

    @Test("a state whose keys belong to another activation is damaged data", arguments: StoreUnderTest.available)
    func mismatchedKeys(_ kind: StoreUnderTest) async throws {
        let instance = freshInstance()
        let store = try kind.open(instanceId: instance)
        let names = StorageNames(instanceId: instance)
        let setup = try ServerSetup(instanceId: instance)
        _ = try await setup.activate(try setup.service(store))
        let other = try secret(Array("SPCK".utf8) + [1] + Array(repeating: 0x11, count: 32))
        defer { other.destroy() }
        try store.writeSecret(names.keys, other)
        #expect {
            try setup.service(store)
        } throws: { error in
            if case .invalidActivationData = error as? ActivationError { return true }
            return false
        }
        try ActivationService.cleanupInstanceData(configuration: setup.configuration, storage: store)
        #expect(try store.read(names.state) == nil)
    }
}
