import Biometry
import Foundation
import SecureCore
import Testing

@testable import Activation
@testable import ActivationKeyring
@testable import ActivationTestSupport

@Suite("The Secret Service store: names, migration, selection")
struct KeyringStoreTests {
    @Test(
        "items carry the configured service, key, instance and access group", .enabled(if: StoreUnderTest.keyringIsUp))
    func configuredNames() throws {
        let instance = freshInstance()
        let keychain = try KeychainConfiguration(
            status: "test.Status", possession: "test.Possession", tokenStore: "test.Tokens",
            possessionKey: "test.PossessionKey", accessGroup: "test.group")
        let store = try #require(
            try StoreUnderTest.keyring.open(instanceId: instance, keychain: keychain) as? KeyringActivationStorage)
        let names = StorageNames(instanceId: instance)
        let key = try secret(Array(repeating: 0x42, count: 37))
        defer { key.destroy() }
        try store.writeSecret(names.keys, key)
        try store.write(names.state, Array("{}".utf8))
        try store.writeSecret("\(instance).token-T1", key)
        let connection = store.connection
        let expected = [
            SecretItemAddress(
                service: "test.Possession", key: "test.PossessionKey", instance: instance, accessGroup: "test.group"),
            SecretItemAddress(service: "test.Status", key: instance, instance: instance, accessGroup: "test.group"),
            SecretItemAddress(service: "test.Tokens", key: "T1", instance: instance, accessGroup: "test.group"),
        ]
        for address in expected { #expect(try connection.contains(address)) }
        // Another access group does not see them.
        var elsewhere = expected[0]
        elsewhere.accessGroup = KeychainConfiguration.privateAccessGroup
        #expect(try connection.contains(elsewhere) == false)
        #expect(try store.tokenNames() == ["\(instance).token-T1"])
        for name in [names.keys, names.state, "\(instance).token-T1"] { try store.remove(name) }
        for address in expected { #expect(try connection.contains(address) == false) }
    }

    @Test("the seed's names are the defaults; the biometry key defaults to the instance id")
    func defaults() throws {
        let keychain = try KeychainConfiguration()
        #expect(keychain.keychainInstanceName_Status == "io.getlime.PowerAuthKeychain.StatusKeychain")
        #expect(keychain.keychainInstanceName_Possession == "io.getlime.PowerAuthKeychain.PossessionKeychain")
        #expect(keychain.keychainInstanceName_Biometry == "io.getlime.PowerAuthKeychain.BiometryKeychain")
        #expect(keychain.keychainInstanceName_TokenStore == "io.getlime.PowerAuthKeychain.TokenStore")
        #expect(keychain.keychainKey_Possession == "PA2KeychainKey_Possession")
        #expect(keychain.biometryKey(instanceId: "app.one") == "app.one")
        #expect(try KeychainConfiguration(biometryKey: "bio").biometryKey(instanceId: "app.one") == "bio")
        #expect(keychain.accessGroupAttribute == "private")
        #expect(throws: ActivationError.self) { try KeychainConfiguration(status: "") }
        #expect(throws: ActivationError.self) { try KeychainConfiguration(accessGroup: "a\nb") }
    }

    @Test("files are chosen when asked, and when the state directory holds the activation")
    func selectionOfFiles() async throws {
        let instance = freshInstance()
        let directory = temporaryDirectory()
        let forced = try ActivationStore.open(
            .files, instanceId: instance, directory: directory, keychain: KeychainConfiguration())
        #expect(forced.kind == .files)
        let setup = try ServerSetup(instanceId: instance)
        _ = try await setup.activate(try setup.service(forced.storage))
        let auto = try ActivationStore.open(
            .auto, instanceId: instance, directory: directory, keychain: KeychainConfiguration())
        #expect(auto.kind == .files)
        #expect(auto.reason.contains("holds this activation in files"))
    }

    @Test(
        "migrate-store: files to keyring, checked before the files go; a rerun finishes",
        .enabled(if: StoreUnderTest.keyringIsUp))
    func migration() async throws {
        let instance = freshInstance()
        let directory = temporaryDirectory()
        let keychain = try KeychainConfiguration()
        let files = try FileActivationStorage(directory: directory)
        let setup = try ServerSetup(instanceId: instance)
        let service = try setup.service(files)
        let id = try await setup.activate(service)
        let token = try await service.createToken(authentication: .possession())
        defer { token.destroy() }
        try await service.storeToken(token)
        let names = StorageNames(instanceId: instance)

        // An interrupted earlier run: the state already copied, the files still there.
        let keyring = try KeyringActivationStorage(keychain: keychain, instanceId: instance, lockDirectory: directory)
        try keyring.write(names.state, try #require(try files.read(names.state)))
        let migration = try ActivationStore.migrateToKeyring(
            instanceId: instance, directory: directory, keychain: keychain)
        #expect(migration.wasAlreadyInKeyring)
        #expect(Set(migration.moved) == [names.state, names.keys, "\(instance).token-\(token.tokenId)"])
        #expect(try files.read(names.state) == nil)
        #expect(try files.readSecret(names.keys) == nil)
        #expect(try files.readSecret("\(instance).token-\(token.tokenId)") == nil)

        let moved = try setup.service(keyring)
        #expect(await moved.activationIdentifier() == id)
        try await moved.validatePassword(try pin("1234"))
        let kept = try #require(try await moved.storedToken(token.tokenId))
        defer { kept.destroy() }
        #expect(try kept.secret.isEqual(to: token.secret))
        let auto = try ActivationStore.open(.auto, instanceId: instance, directory: directory, keychain: keychain)
        #expect(auto.kind == .keyring)

        // A rerun has nothing left to move.
        let again = try ActivationStore.migrateToKeyring(instanceId: instance, directory: directory, keychain: keychain)
        #expect(again == .init(moved: [], wasAlreadyInKeyring: true))
        try ActivationService.cleanupInstanceData(configuration: setup.configuration, storage: keyring)
        try keyring.remove("\(instance).token-\(token.tokenId)")
    }

    @Test(
        "migrate-store refuses when the keyring holds another activation, and changes nothing",
        .enabled(if: StoreUnderTest.keyringIsUp))
    func migrationConflict() async throws {
        let instance = freshInstance()
        let directory = temporaryDirectory()
        let keychain = try KeychainConfiguration()
        let files = try FileActivationStorage(directory: directory)
        let setup = try ServerSetup(instanceId: instance)
        _ = try await setup.activate(try setup.service(files))
        let keyring = try KeyringActivationStorage(keychain: keychain, instanceId: instance, lockDirectory: directory)
        let names = StorageNames(instanceId: instance)
        try keyring.write(names.state, Array("{\"another\":true}".utf8))
        #expect {
            try ActivationStore.migrateToKeyring(instanceId: instance, directory: directory, keychain: keychain)
        } throws: { error in
            if case .invalidActivationState = error as? ActivationError { return true }
            return false
        }
        #expect(try files.read(names.state) != nil)
        #expect(try keyring.readSecret(names.keys) == nil)
        try keyring.remove(names.state)
    }

    /// Without a session bus (a server, a container, plain `make test-swift`) the answer is
    /// files and why; inside `make test-keyring` it is the throw-away keyring. (In a desktop
    /// session that is not the test's own, the answer depends on the desktop: not run.)
    static var busIsKnown: Bool {
        StoreUnderTest.keyringIsUp || ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"] == nil
    }

    @Test(
        "the Secret Service is found on the test's bus, and a session without a bus says why", .enabled(if: busIsKnown))
    func probe() throws {
        let problem = ActivationStore.secretServiceProblem()
        if StoreUnderTest.keyringIsUp {
            #expect(problem == nil)
        } else {
            #expect(problem?.contains("no session bus") == true)
            // Asked for by name, the keyring is a typed error, and nothing is created on disk.
            let directory = temporaryDirectory()
            #expect {
                try KeyringActivationStorage(
                    keychain: KeychainConfiguration(), instanceId: freshInstance(), lockDirectory: directory)
            } throws: { error in
                if case .storageUnavailable(let reason) = error as? ActivationError {
                    return reason.contains("no session bus")
                }
                return false
            }
            #expect(!FileManager.default.fileExists(atPath: directory))
            let auto = try ActivationStore.open(
                .auto, instanceId: freshInstance(), directory: directory, keychain: KeychainConfiguration())
            #expect(auto.kind == .files && auto.reason.contains("no session bus"))
        }
    }
}

/// Runs only in the second pass of `make test-keyring`, after it locked the login collection.
@Suite("The Secret Service store: a locked collection")
struct LockedKeyringTests {
    static var locked: Bool { ProcessInfo.processInfo.environment["SECUREPIN_TEST_KEYRING_LOCKED"] == "1" }

    @Test("every operation says locked, never missing", .enabled(if: LockedKeyringTests.locked))
    func lockedIsTyped() throws {
        let instance = freshInstance()
        let store = try StoreUnderTest.keyring.open(instanceId: instance)
        let names = StorageNames(instanceId: instance)
        let key = try secret(Array(repeating: 1, count: 37))
        defer { key.destroy() }
        func isLocked(_ body: () throws -> Void) -> Bool {
            do {
                try body()
                return false
            } catch {
                if case .storageLocked = error as? ActivationError { return true }
                return false
            }
        }
        #expect(isLocked { _ = try store.read(names.state) })
        #expect(isLocked { _ = try store.readSecret(names.keys) })
        #expect(isLocked { try store.writeSecret(names.keys, key) })
        #expect(isLocked { try store.remove(names.state) })
        let setup = try ServerSetup(instanceId: instance)
        #expect(isLocked { _ = try setup.service(store) })
        // The keyring's biometry factor on a locked collection: lockout, the key not released.
        let authenticator = try KeyringBiometricAuthenticator(keychain: KeychainConfiguration(), instanceId: instance)
        #expect(authenticator.systemStatus == .lockout)
        #expect(throws: BiometryError.failed(.lockout)) { try authenticator.storeKey(key, account: instance) }
        #expect(isLocked { _ = try authenticator.hasKey(account: instance) })
    }
}
