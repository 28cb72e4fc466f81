import Foundation
import SecureCore
import Testing

@testable import PinVault

@Suite("PinVault")
struct PinVaultTests {
    @Test func roundTrip() throws {
        let vault = try makeVault()
        let opened = try vault.unlock(pin: pin("1234")) { try text($0) }
        #expect(opened == "refresh-token-42")
        let status = try vault.status()
        #expect(status.state == .ready && status.failures == 0 && status.maxFailures == 20)
        #expect(throws: VaultError.alreadyExists) {
            try PinVault.create(
                at: vault.directory.path, secret: secret("x"), pin: pin("1"), parameters: testParameters,
                options: options())
        }
        try vault.destroy()
    }

    @Test func filesArePrivate() throws {
        let vault = try makeVault()
        let attributes = try FileManager.default.attributesOfItem(atPath: vault.directory.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o700)
        for name in ["vault", "failures"] {
            let a = try FileManager.default.attributesOfItem(atPath: vault.directory.file(name))
            #expect((a[.posixPermissions] as? Int) == 0o600)
        }
        try vault.destroy()
        #expect(!FileManager.default.fileExists(atPath: vault.directory.path))
    }

    @Test func wrongPINIsCountedBeforeTheKDFAndResetBySuccess() throws {
        let log = EventLog()
        let vault = try makeVault(options: options(log: log))
        #expect(throws: VaultError.wrongPIN(remainingAttempts: 19)) { try vault.unlock(pin: pin("0000")) { _ in } }
        #expect(log.all == [.failureRecorded(1), .derivingKey])
        #expect(throws: VaultError.wrongPIN(remainingAttempts: 18)) { try vault.unlock(pin: pin("1235")) { _ in } }
        #expect(try vault.status().failures == 2)
        log.clear()
        _ = try vault.unlock(pin: pin("1234")) { _ in 0 }
        #expect(log.all == [.failureRecorded(3), .derivingKey, .unlocked])
        #expect(try vault.status().failures == 0)
    }

    @Test func softScheduleWithAnInjectedClock() throws {
        let clock = TestClock()
        let log = EventLog()
        let vault = try makeVault(options: options(clock: clock, log: log))
        for _ in 0..<5 { #expect(throws: VaultError.self) { try vault.unlock(pin: pin("9999")) { _ in } } }
        var status = try vault.status()
        #expect(status.state == .throttled && status.retryAfterSeconds == 60 && status.failures == 5)
        #expect(status.nextAttemptAt == clock.wallSeconds() + 60)
        // During the delay: refused, not counted, no KDF.
        log.clear()
        #expect(throws: VaultError.throttled(retryAfterSeconds: 60)) { try vault.unlock(pin: pin("1234")) { _ in } }
        #expect(log.all.isEmpty)
        #expect(try vault.status().failures == 5)
        clock.advance(seconds: 59)
        #expect(throws: VaultError.throttled(retryAfterSeconds: 1)) { try vault.unlock(pin: pin("1234")) { _ in } }
        clock.advance(seconds: 1)
        #expect(throws: VaultError.wrongPIN(remainingAttempts: 14)) { try vault.unlock(pin: pin("0000")) { _ in } }
        #expect(try vault.status().retryAfterSeconds == 300)
        // A reboot restarts the current delay from the beginning.
        clock.advance(seconds: 200)
        #expect(try vault.status().retryAfterSeconds == 100)
        clock.reboot()
        status = try vault.status()
        #expect(status.retryAfterSeconds == 300)
        clock.advance(seconds: 300)
        #expect(try vault.unlock(pin: pin("1234")) { try text($0) } == "refresh-token-42")
        #expect(try vault.status().failures == 0)
    }

    @Test func scheduleTable() {
        let soft = ThrottlePolicy.soft()
        let delays = (1...11).map { soft.delaySeconds(afterFailures: $0) }
        #expect(delays == [0, 0, 0, 0, 60, 300, 900, 1800, 5400, 243 * 60, 729 * 60])
        #expect(ThrottlePolicy.hard(maxFailures: 5).delaySeconds(afterFailures: 4) == 0)
    }

    @Test func hardPolicyLocks() throws {
        let log = EventLog()
        let vault = try makeVault(policy: .hard(maxFailures: 3), options: options(log: log))
        #expect(throws: VaultError.wrongPIN(remainingAttempts: 2)) { try vault.unlock(pin: pin("1")) { _ in } }
        #expect(throws: VaultError.wrongPIN(remainingAttempts: 1)) { try vault.unlock(pin: pin("2")) { _ in } }
        #expect(throws: VaultError.wrongPIN(remainingAttempts: 0)) { try vault.unlock(pin: pin("3")) { _ in } }
        log.clear()
        #expect(throws: VaultError.locked) { try vault.unlock(pin: pin("1234")) { _ in } }
        #expect(log.all.isEmpty)
        #expect(try vault.status().state == .locked)
        #expect(try vault.status().nextAttemptAt == nil)
    }

    @Test func wipePolicyDestroysTheVault() throws {
        let vault = try makeVault(policy: .wipe(maxFailures: 2))
        #expect(throws: VaultError.wrongPIN(remainingAttempts: 1)) { try vault.unlock(pin: pin("1")) { _ in } }
        #expect(throws: VaultError.wiped) { try vault.unlock(pin: pin("2")) { _ in } }
        #expect(!vault.exists)
        #expect(throws: VaultError.notFound) { try vault.unlock(pin: pin("1234")) { _ in } }
    }

    @Test func changePIN() throws {
        let log = EventLog()
        let vault = try makeVault(options: options(log: log))
        let before = fileBytes(vault, "vault")
        #expect(throws: VaultError.wrongPIN(remainingAttempts: 19)) {
            try vault.changePIN(old: pin("1111"), new: pin("5678"))
        }
        #expect(fileBytes(vault, "vault") == before, "a wrong old PIN changes nothing")
        log.clear()
        try vault.changePIN(old: pin("1234"), new: pin("5678"))
        #expect(log.all.suffix(2) == [.pinChangeNewSlotWritten, .pinChangeOldSlotRemoved])
        #expect(throws: VaultError.wrongPIN(remainingAttempts: 19)) { try vault.unlock(pin: pin("1234")) { _ in } }
        #expect(try vault.unlock(pin: pin("5678")) { try text($0) } == "refresh-token-42")
        let file = try vault.loadFile()
        #expect(file.slots.count == 1, "the old slot is gone")
    }

    @Test func pepperIsRequiredAndBound() throws {
        let pepper = try SecureBytes.random(count: 32)
        let dir = temporaryDirectory()
        _ = try PinVault.create(
            at: dir, secret: secret("s"), pin: pin("1234"), parameters: testParameters,
            options: options(pepper: pepper))
        #expect(throws: VaultError.pepperRequired) {
            try PinVault(directory: dir, options: options()).unlock(pin: pin("1234")) { _ in }
        }
        #expect(throws: VaultError.wrongPIN(remainingAttempts: 18)) {
            try PinVault(directory: dir, options: options(pepper: SecureBytes.random(count: 32))).unlock(
                pin: pin("1234")
            ) { _ in }
        }
        #expect(
            try PinVault(directory: dir, options: options(pepper: pepper)).unlock(pin: pin("1234")) { try text($0) }
                == "s")
    }

    @Test func badSecretSizes() throws {
        #expect(throws: VaultError.invalidSecretSize(65537)) {
            try PinVault.create(
                at: temporaryDirectory(), secret: SecureBytes(count: 65537), pin: pin("1"), parameters: testParameters,
                options: options())
        }
    }

    @Test func asyncUnlock() async throws {
        let vault = try makeVault()
        let value = try await vault.unlock(pin: pin("1234")) { try text($0) }
        #expect(value == "refresh-token-42")
    }
}

@Suite("Vault file")
struct VaultFileTests {
    /// Each byte of the file flipped in turn: a typed error, and neither the
    /// vault file nor the failure record changes.
    @Test func everyFlippedByteIsATypedErrorAndChangesNothing() throws {
        let vault = try makeVault()
        let original = try #require(fileBytes(vault, "vault"))
        let record = fileBytes(vault, "failures")
        for i in 0..<original.count {
            var tampered = original
            tampered[i] ^= 0x40
            try Data(tampered).write(to: URL(fileURLWithPath: vault.directory.file("vault")))
            do {
                _ = try vault.unlock(pin: pin("1234")) { _ in 0 }
                Issue.record("byte \(i) flipped but the vault opened")
            } catch let error as VaultError {
                switch error {
                case .damaged, .notAVault, .newerFormat, .parametersBelowFloor, .parametersAboveCeiling: break
                default: Issue.record("byte \(i): unexpected \(error)")
                }
            }
            #expect(fileBytes(vault, "vault") == tampered)
            #expect(fileBytes(vault, "failures") == record, "byte \(i): the failure record changed")
        }
        try Data(original).write(to: URL(fileURLWithPath: vault.directory.file("vault")))
        #expect(try vault.unlock(pin: pin("1234")) { try text($0) } == "refresh-token-42")
    }

    @Test func truncatedGarbageAndNewerFiles() throws {
        let vault = try makeVault()
        let original = try #require(fileBytes(vault, "vault"))
        func attempt(_ bytes: [UInt8]) throws -> VaultError? {
            try Data(bytes).write(to: URL(fileURLWithPath: vault.directory.file("vault")))
            do {
                _ = try vault.unlock(pin: pin("1234")) { _ in 0 }
                return nil
            } catch let error as VaultError {
                return error
            }
        }
        for length in [0, 4, 8, 10, 40, 100, original.count - 33, original.count - 1] {
            let error = try attempt(Array(original.prefix(length)))
            #expect(
                error == .notAVault || { if case .damaged = error { true } else { false } }(),
                "length \(length): \(String(describing: error))")
        }
        #expect(try attempt([UInt8](repeating: 0xAB, count: 300)) == .notAVault)
        var newer = original
        newer[9] = UInt8(VaultFile.version + 1)
        #expect(try attempt(newer) == .newerFormat(version: Int(VaultFile.version + 1)))
        #expect(try attempt(original + [0]) != nil)
        try Data(original).write(to: URL(fileURLWithPath: vault.directory.file("vault")))
        #expect(try vault.status().failures == 0, "no attempt on a bad file was counted")
    }

    @Test func downgradeAndCeilingAreRefusedBeforeTheKDF() throws {
        let dir = temporaryDirectory()
        _ = try PinVault.create(
            at: dir, secret: secret("s"), pin: pin("1234"), parameters: testParameters, options: options())
        let strict = PinVault(directory: dir, options: PinVault.Options(floor: .owaspMinimum, clock: TestClock()))
        #expect(throws: VaultError.parametersBelowFloor) { try strict.unlock(pin: pin("1234")) { _ in } }
        let tight = PinVault(
            directory: dir,
            options: PinVault.Options(
                floor: testFloor, limits: .init(maxMemoryKiB: 32, maxIterations: 4), clock: TestClock()))
        #expect(throws: VaultError.parametersAboveCeiling) { try tight.unlock(pin: pin("1234")) { _ in } }
        #expect(try PinVault(directory: dir, options: options()).status().failures == 0)
        #expect(throws: VaultError.parametersBelowFloor) {
            try PinVault.create(
                at: temporaryDirectory(), secret: secret("s"), pin: pin("1"), parameters: testParameters,
                options: PinVault.Options(clock: TestClock()))
        }
    }

    @Test func missingOrForeignFailureRecord() throws {
        let a = try makeVault()
        let b = try makeVault()
        try FileManager.default.removeItem(atPath: a.directory.file("failures"))
        #expect(throws: VaultError.damaged(reason: "the failure record is missing")) { try a.status() }
        try FileManager.default.copyItem(atPath: b.directory.file("failures"), toPath: a.directory.file("failures"))
        #expect(throws: VaultError.damaged(reason: "failure record belongs to another vault")) { try a.status() }
    }
}
