import Biometry
import Foundation
import SecureCore
import Testing

@testable import Activation
@testable import ActivationKeyring
@testable import ActivationTestSupport

@Suite("The keyring's biometry factor: the key in the Secret Service, the unlocked login keyring its gate")
struct KeyringBiometryTests {
    /// What a failed evaluation threw, or nil when it released a key.
    static func evaluationError(_ authenticator: KeyringBiometricAuthenticator, account: String) async -> BiometryError?
    {
        do throws(BiometryError) {
            let key = try await authenticator.evaluate(
                prompt: "unused", account: account, configuration: KeyringBiometricAuthenticator.supportedConfiguration)
            key.destroy()
            return nil
        } catch {
            return error
        }
    }

    @Test("the item carries the biometry names; stored, released, deleted", .enabled(if: StoreUnderTest.keyringIsUp))
    func item() async throws {
        let instance = freshInstance()
        let keychain = try KeychainConfiguration(
            biometry: "test.Biometry", biometryKey: "test.BiometryKey", accessGroup: "test.group")
        let authenticator = try KeyringBiometricAuthenticator(keychain: keychain, instanceId: instance)
        // The truth: no sensor, the keyring's unlock is the gate.
        #expect(authenticator.biometryType == .loginKeyring)
        #expect(authenticator.systemStatus == .available)
        let account = keychain.biometryKey(instanceId: instance)
        #expect(account == "test.BiometryKey")
        #expect(await Self.evaluationError(authenticator, account: account) == .notConfigured)

        let key = try SecureBytes.random(count: 32)
        defer { key.destroy() }
        try authenticator.storeKey(key, account: account)
        let address = SecretItemAddress(
            service: "test.Biometry", key: "test.BiometryKey", instance: instance, accessGroup: "test.group")
        #expect(try authenticator.connection.contains(address))
        // Another access group does not see it.
        var elsewhere = address
        elsewhere.accessGroup = KeychainConfiguration.privateAccessGroup
        #expect(try authenticator.connection.contains(elsewhere) == false)

        let released = try await authenticator.evaluate(
            prompt: "unused", account: account, configuration: KeyringBiometricAuthenticator.supportedConfiguration)
        defer { released.destroy() }
        #expect(try released.isEqual(to: key))

        authenticator.deleteKey(account: account)
        #expect(try authenticator.hasKey(account: account) == false)
        authenticator.deleteKey(account: account)  // a missing key is no error
        #expect(await Self.evaluationError(authenticator, account: account) == .notConfigured)
    }

    @Test(
        "V3.3: biometry-add keeps the key in the keyring; a possession_biometry signature; remove",
        .enabled(if: StoreUnderTest.keyringIsUp))
    func activation() async throws {
        let instance = freshInstance()
        let store = try StoreUnderTest.keyring.open(instanceId: instance)
        let setup = try ServerSetup(instanceId: instance)
        let authenticator = try KeyringBiometricAuthenticator(keychain: KeychainConfiguration(), instanceId: instance)
        let service = try ActivationService(
            configuration: setup.configuration, storage: store, transport: setup.transport,
            authenticator: authenticator, clock: setup.clock)
        _ = try await setup.activate(service)
        let account = setup.configuration.biometryKeyAccount
        #expect(account == instance)
        #expect(await service.biometricStatus().isAuthenticationWithBiometricsAvailable == false)

        try await service.addBiometryFactor(password: try pin("1234"))
        #expect(try authenticator.hasKey(account: account))
        let status = await service.biometricStatus()
        #expect(status.biometryType == .loginKeyring)
        #expect(status.isAuthenticationWithBiometricsAvailable)
        try await service.validateSignature(authentication: .possessionWithBiometry(prompt: "sign"))

        // A new service on the same stores: the key is still in the keyring and still signs.
        let reopened = try ActivationService(
            configuration: setup.configuration, storage: store, transport: setup.transport,
            authenticator: authenticator, clock: setup.clock)
        try await reopened.validateSignature(authentication: .possessionWithBiometry(prompt: "sign"))

        try await reopened.removeBiometryFactor()
        #expect(try authenticator.hasKey(account: account) == false)
        #expect(await reopened.biometricStatus().isBiometricFactorConfigured == false)
        try await reopened.removeActivationLocal()
    }

    /// Nothing is silently ignored: each setting the keyring cannot honour is refused by name,
    /// by the authenticator, by the activation service when it is created, and by the vault
    /// before anything is counted or written.
    @Test("settings the keyring cannot honour are refused by name", .enabled(if: StoreUnderTest.keyringIsUp))
    func unsupportedSettings() async throws {
        let instance = freshInstance()
        let authenticator = try KeyringBiometricAuthenticator(keychain: KeychainConfiguration(), instanceId: instance)
        let cases: [(BiometricConfiguration, BiometricOption)] = [
            (BiometricConfiguration(), .invalidateLocalAuthenticationContextAfterUse),
            (
                BiometricConfiguration(
                    invalidateBiometricFactorAfterChange: true, invalidateLocalAuthenticationContextAfterUse: false),
                .invalidateBiometricFactorAfterChange
            ),
            (
                BiometricConfiguration(
                    allowFallbackToDevicePasscode: true, invalidateLocalAuthenticationContextAfterUse: false),
                .allowFallbackToDevicePasscode
            ),
        ]
        try authenticator.checkConfiguration(KeyringBiometricAuthenticator.supportedConfiguration)
        let key = try SecureBytes.random(count: 32)
        defer { key.destroy() }
        try authenticator.storeKey(key, account: instance)
        defer { authenticator.deleteKey(account: instance) }
        for (configuration, option) in cases {
            #expect(throws: BiometryError.unsupportedOption(option)) {
                try authenticator.checkConfiguration(configuration)
            }
            await #expect(throws: BiometryError.unsupportedOption(option)) {
                _ = try await authenticator.evaluate(prompt: "unused", account: instance, configuration: configuration)
            }
            let setup = try ServerSetup(instanceId: instance, biometric: configuration)
            let store = try StoreUnderTest.keyring.open(instanceId: instance)
            #expect(throws: ActivationError.biometryOptionNotSupported(option)) {
                _ = try ActivationService(
                    configuration: setup.configuration, storage: store, transport: setup.transport,
                    authenticator: authenticator, clock: setup.clock)
            }
            // Without an authenticator there is nothing to honour it: the service opens.
            _ = try setup.service(store)
            #expect(!"\(ActivationError.biometryOptionNotSupported(option))".contains("("))
        }
    }
}
