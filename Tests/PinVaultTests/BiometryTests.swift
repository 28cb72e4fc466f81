import SecureCore
import TestSupport
import Testing

@testable import PinVault

@Suite("Biometry and LocalAuthService")
struct BiometryTests {
    @Test func addUnlockRemove() async throws {
        let sensor = SimulatedBiometricAuthenticator()
        let vault = try makeVault(options: options(authenticator: sensor))
        #expect(!vault.canUnlockWithBiometry)
        await #expect(throws: VaultError.biometryNotConfigured) {
            try await vault.unlockWithBiometry(prompt: "p") { _ in }
        }
        try vault.addBiometricSlot(pin: pin("1234"))
        #expect(vault.canUnlockWithBiometry)
        let value = try await vault.unlockWithBiometry(prompt: "Unlock the vault") { try text($0) }
        #expect(value == "refresh-token-42")
        #expect(sensor.promptsShown == ["Unlock the vault"])
        try vault.removeBiometricSlot()
        await #expect(throws: VaultError.biometryNotConfigured) {
            try await vault.unlockWithBiometry(prompt: "p") { _ in }
        }
        #expect(try await vault.unlock(pin: pin("1234")) { try text($0) } == "refresh-token-42")
    }

    @Test func biometricSuccessResetsFailuresButNotALock() async throws {
        let sensor = SimulatedBiometricAuthenticator()
        let vault = try makeVault(policy: .hard(maxFailures: 3), options: options(authenticator: sensor))
        try vault.addBiometricSlot(pin: pin("1234"))
        #expect(throws: VaultError.self) { try vault.unlock(pin: pin("0")) { _ in } }
        _ = try await vault.unlockWithBiometry(prompt: "p") { _ in 0 }
        #expect(try vault.status().failures == 0)
        for _ in 0..<3 { #expect(throws: VaultError.self) { try vault.unlock(pin: pin("0")) { _ in } } }
        await #expect(throws: VaultError.locked) { try await vault.unlockWithBiometry(prompt: "p") { _ in } }
    }

    @Test func enrolledSetChangeInvalidatesWhenConfigured() async throws {
        let sensor = SimulatedBiometricAuthenticator()
        let strict = BiometricConfiguration(invalidateBiometricFactorAfterChange: true)
        let vault = try makeVault(options: options(authenticator: sensor, biometric: strict))
        try vault.addBiometricSlot(pin: pin("1234"))
        sensor.changeEnrolledSet()
        await #expect(throws: VaultError.biometryInvalidated) {
            try await vault.unlockWithBiometry(prompt: "p") { _ in }
        }
        #expect(try !vault.status().hasBiometricSlot)
        // With the default configuration, a change keeps the factor.
        let lenientSensor = SimulatedBiometricAuthenticator()
        let lenient = try makeVault(options: options(authenticator: lenientSensor))
        try lenient.addBiometricSlot(pin: pin("1234"))
        lenientSensor.changeEnrolledSet()
        #expect(try await lenient.unlockWithBiometry(prompt: "p") { try text($0) } == "refresh-token-42")
    }

    @Test func contextReuseFollowsTheConfiguration() async throws {
        let sensor = SimulatedBiometricAuthenticator()
        let reuse = BiometricConfiguration(invalidateLocalAuthenticationContextAfterUse: false)
        let vault = try makeVault(options: options(authenticator: sensor, biometric: reuse))
        try vault.addBiometricSlot(pin: pin("1234"))
        _ = try await vault.unlockWithBiometry(prompt: "first") { _ in 0 }
        _ = try await vault.unlockWithBiometry(prompt: "second") { _ in 0 }
        #expect(sensor.promptsShown == ["first"], "a reusable context does not prompt again")
        let oneShot = SimulatedBiometricAuthenticator()
        let vault2 = try makeVault(options: options(authenticator: oneShot))
        try vault2.addBiometricSlot(pin: pin("1234"))
        _ = try await vault2.unlockWithBiometry(prompt: "first") { _ in 0 }
        _ = try await vault2.unlockWithBiometry(prompt: "second") { _ in 0 }
        #expect(oneShot.promptsShown == ["first", "second"])
    }

    /// An authenticator that honours everything but `allowFallbackToDevicePasscode`, as a
    /// platform without a passcode would: the vault must ask it, and obey its refusal.
    final class NoPasscodeAuthenticator: BiometricAuthenticator, @unchecked Sendable {
        let inner = SimulatedBiometricAuthenticator()
        var systemStatus: BiometricSystemStatus { inner.systemStatus }
        var biometryType: BiometryType { inner.biometryType }
        var enrolledSetFingerprint: [UInt8] { inner.enrolledSetFingerprint }
        func storeKey(_ key: SecureBytes, account: String) throws(BiometryError) {
            try inner.storeKey(key, account: account)
        }
        func evaluate(prompt: String, account: String, configuration: BiometricConfiguration)
            async throws(BiometryError) -> SecureBytes
        {
            try checkConfiguration(configuration)
            return try await inner.evaluate(prompt: prompt, account: account, configuration: configuration)
        }
        func deleteKey(account: String) { inner.deleteKey(account: account) }
        func checkConfiguration(_ configuration: BiometricConfiguration) throws(BiometryError) {
            if configuration.allowFallbackToDevicePasscode { throw .unsupportedOption(.allowFallbackToDevicePasscode) }
        }
    }

    /// A setting the authenticator cannot honour is refused before the PIN is counted or
    /// anything is written, and biometric unlock is not offered; nothing is silently ignored.
    @Test func aSettingTheAuthenticatorCannotHonourIsRefused() async throws {
        let sensor = NoPasscodeAuthenticator()
        let fallback = BiometricConfiguration(allowFallbackToDevicePasscode: true)
        let log = EventLog()
        let vault = try makeVault(options: options(log: log, authenticator: sensor, biometric: fallback))
        let before = fileBytes(vault, "vault")
        log.clear()
        #expect(throws: VaultError.biometryOptionNotSupported(.allowFallbackToDevicePasscode)) {
            try vault.addBiometricSlot(pin: pin("1234"))
        }
        #expect(log.all.isEmpty, "nothing counted, no key derivation")
        #expect(fileBytes(vault, "vault") == before)
        #expect(try vault.status().failures == 0)
        #expect(!vault.canUnlockWithBiometry)
        await #expect(throws: VaultError.biometryOptionNotSupported(.allowFallbackToDevicePasscode)) {
            try await vault.unlockWithBiometry(prompt: "p") { _ in }
        }
        #expect(sensor.inner.promptsShown.isEmpty)
        // With a setting it honours, the same authenticator works.
        let plain = try makeVault(options: options(authenticator: sensor))
        try plain.addBiometricSlot(pin: pin("1234"))
        #expect(try await plain.unlockWithBiometry(prompt: "p") { try text($0) } == "refresh-token-42")
    }

    /// `allowFallbackToDevicePasscode` works with the simulated sensor: a locked-out sensor asks
    /// for the device passcode instead, and (as in PowerAuth's SDKs) a factor that may fall back
    /// is not bound to the enrolled set, so a change does not invalidate it.
    @Test func passcodeFallback() async throws {
        let sensor = SimulatedBiometricAuthenticator()
        let configuration = BiometricConfiguration(
            invalidateBiometricFactorAfterChange: true, allowFallbackToDevicePasscode: true)
        let vault = try makeVault(options: options(authenticator: sensor, biometric: configuration))
        try vault.addBiometricSlot(pin: pin("1234"))
        sensor.setStatus(.lockout)
        #expect(vault.canUnlockWithBiometry)
        #expect(try await vault.unlockWithBiometry(prompt: "passcode") { try text($0) } == "refresh-token-42")
        sensor.setStatus(.available)
        sensor.changeEnrolledSet()
        #expect(try await vault.unlockWithBiometry(prompt: "p") { try text($0) } == "refresh-token-42")
        #expect(try vault.status().hasBiometricSlot)
        // Without the fallback, a lockout refuses and a change invalidates.
        let strictSensor = SimulatedBiometricAuthenticator()
        let strict = try makeVault(
            options: options(
                authenticator: strictSensor,
                biometric: BiometricConfiguration(invalidateBiometricFactorAfterChange: true)
            ))
        try strict.addBiometricSlot(pin: pin("1234"))
        strictSensor.setStatus(.lockout)
        #expect(!strict.canUnlockWithBiometry)
        await #expect(throws: VaultError.biometryFailed(.lockout)) {
            try await strict.unlockWithBiometry(prompt: "p") { _ in }
        }
        strictSensor.setStatus(.available)
        strictSensor.changeEnrolledSet()
        await #expect(throws: VaultError.biometryInvalidated) {
            try await strict.unlockWithBiometry(prompt: "p") { _ in }
        }
    }

    @Test func localAuthServiceFallsBackToThePIN() async throws {
        let sensor = SimulatedBiometricAuthenticator()
        let vault = try makeVault(options: options(authenticator: sensor))
        try vault.addBiometricSlot(pin: pin("1234"))
        let service = LocalAuthService(vault: vault)
        // Biometry first.
        let (method1, v1) = try await service.unlock(prompt: "p", pinProvider: { nil }) { try text($0) }
        #expect(method1 == .biometry && v1 == "refresh-token-42")
        // Cancelled prompt: the PIN.
        sensor.script(.cancel)
        let (method2, _) = try await service.unlock(prompt: "p", pinProvider: { try? pin("1234") }) { _ in 0 }
        #expect(method2 == .pin)
        // System lockout: the app PIN still works.
        sensor.setStatus(.lockout)
        let (method3, _) = try await service.unlock(prompt: "p", pinProvider: { try? pin("1234") }) { _ in 0 }
        #expect(method3 == .pin)
        // Cancelled PIN entry.
        await #expect(throws: VaultError.cancelled) {
            try await service.unlock(prompt: "p", pinProvider: { nil }) { _ in 0 }
        }
        // PIN only.
        sensor.setStatus(.available)
        let pinOnly = LocalAuthService(vault: vault, order: .pinOnly)
        let (method4, _) = try await pinOnly.unlock(prompt: "p", pinProvider: { try? pin("1234") }) { _ in 0 }
        #expect(method4 == .pin)
    }

    @Test func addingBiometryNeedsAnAvailableSensor() throws {
        let sensor = SimulatedBiometricAuthenticator(status: .notEnrolled)
        let vault = try makeVault(options: options(authenticator: sensor))
        #expect(throws: VaultError.biometryFailed(.notEnrolled)) { try vault.addBiometricSlot(pin: pin("1234")) }
        let none = try makeVault()
        #expect(throws: VaultError.biometryNotConfigured) { try none.addBiometricSlot(pin: pin("1234")) }
    }
}
