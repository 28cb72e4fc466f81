import Foundation
import SecureCore
import Synchronization
import TestSupport
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
        for name in ["vault", "failures", "key"] {
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

    /// A time namespace moves CLOCK_BOOTTIME forward (`unshare -Ur --time
    /// --boottime N`): the wall clock disagrees, so the delay restarts from
    /// now instead of being skipped.
    @Test func aBootClockMovedForwardDoesNotSkipTheDelay() throws {
        let clock = TestClock()
        let vault = try makeVault(options: options(clock: clock))
        for _ in 0..<5 { #expect(throws: VaultError.self) { try vault.unlock(pin: pin("9999")) { _ in } } }
        clock.shiftBootClock(seconds: 86_400)
        #expect(throws: VaultError.throttled(retryAfterSeconds: 60)) { try vault.unlock(pin: pin("1234")) { _ in } }
        #expect(try vault.status().failures == 5, "nothing counted")
        clock.advance(seconds: 60)
        #expect(try vault.unlock(pin: pin("1234")) { try text($0) } == "refresh-token-42")
        // Within the tolerance, the smaller elapsed time counts.
        for _ in 0..<5 { #expect(throws: VaultError.self) { try vault.unlock(pin: pin("9999")) { _ in } } }
        clock.shiftBootClock(seconds: 50)
        #expect(try vault.status().retryAfterSeconds == 60)
    }

    /// Failures stamped under a boot clock far ahead (inside a namespace),
    /// then read with the real one: `now < stamp` is a clock anomaly that
    /// restarts the delay from now, so the countdown runs instead of freezing.
    @Test func aBootClockBehindTheStampRestartsTheDelayInsteadOfFreezingIt() throws {
        let clock = TestClock()
        let vault = try makeVault(options: options(clock: clock))
        clock.shiftBootClock(seconds: 100_000)
        for _ in 0..<5 { #expect(throws: VaultError.self) { try vault.unlock(pin: pin("9999")) { _ in } } }
        clock.shiftBootClock(seconds: -100_000)
        #expect(try vault.status().retryAfterSeconds == 60)
        clock.advance(seconds: 30)
        #expect(try vault.status().retryAfterSeconds == 30)
        clock.advance(seconds: 30)
        #expect(try vault.unlock(pin: pin("1234")) { try text($0) } == "refresh-token-42")
    }

    /// The wall clock set back (or forward) during a delay: the delay restarts, it never shortens.
    @Test func aWallClockThatJumpsRestartsTheDelay() throws {
        let clock = TestClock()
        let vault = try makeVault(options: options(clock: clock))
        for _ in 0..<5 { #expect(throws: VaultError.self) { try vault.unlock(pin: pin("9999")) { _ in } } }
        clock.advance(seconds: 40)
        #expect(try vault.status().retryAfterSeconds == 20)
        clock.shiftWallClock(seconds: 3_600)
        #expect(try vault.status().retryAfterSeconds == 60)
        clock.shiftWallClock(seconds: -7_200)
        #expect(try vault.status().retryAfterSeconds == 60)
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

    /// A PIN change killed after its new file was in place left the old
    /// half intact; the next successful unlock destroys it.
    @Test func anInterruptedPINChangeIsFinishedByTheNextUnlock() throws {
        let vault = try makeVault()
        try vault.changePIN(old: pin("1234"), new: pin("5678"))
        let current = try vault.loadFile().keyHalf
        #expect(try vault.directory.keyFile.isDestroyed(1 - current))
        try vault.directory.keyFile.renewHalf(1 - current).destroy()  // what the interrupted change left
        #expect(try !vault.directory.keyFile.isDestroyed(1 - current))
        #expect(try vault.unlock(pin: pin("5678")) { try text($0) } == "refresh-token-42")
        #expect(try vault.directory.keyFile.isDestroyed(1 - current))
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
        // Another pepper: the failure record does not authenticate, and nothing is counted.
        #expect(
            throws: VaultError.damaged(
                reason: "the failure record does not authenticate (edited, or opened with another pepper)")
        ) {
            try PinVault(directory: dir, options: options(pepper: SecureBytes.random(count: 32))).unlock(
                pin: pin("1234")
            ) { _ in }
        }
        #expect(try PinVault(directory: dir, options: options(pepper: pepper)).status().failures == 0)
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

    /// The unlock blocks on the vault's lock file, which this test holds with `flock`: if the
    /// blocking part ran on Swift's cooperative pool, more blocked unlocks than the pool has
    /// threads would leave no thread for any other task.
    @Test func blockedUnlocksLeaveTheCooperativePoolFree() async throws {
        let vault = try makeVault()
        let fd = open(vault.directory.file("lock"), O_RDWR | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        try #require(flock(fd, LOCK_EX) == 0)
        let right = try pin("1234")
        let opened = Atomic<Int>(0)
        let free = await CooperativePool.staysFree(whileBlocking: CooperativePool.oversubscribed) {
            if (try? await vault.unlock(pin: right) { try text($0) }) == "refresh-token-42" {
                opened.add(1, ordering: .relaxed)
            }
        } release: {
            _ = flock(fd, LOCK_UN)
        }
        #expect(free, "a blocked unlock held a thread of the cooperative pool")
        #expect(opened.load(ordering: .relaxed) == CooperativePool.oversubscribed)
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
        var older = original
        older[9] = 1
        #expect(try attempt(older) == .unsupportedFormat(version: 1), "version 1 (no key file) is refused")
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

@Suite("Tampered parameters")
struct TamperedParameterTests {
    /// Offset of the first slot's parallelism (big-endian u32) in the file.
    static let parallelismOffset = VaultFile.fixedHeaderSize + 2 + 4 + 4

    /// Rewrites the first slot's memory and parallelism and recomputes the
    /// (unkeyed) checksum, as anyone with write access can.
    func tamper(_ vault: PinVault, memoryKiB: UInt32, parallelism: UInt32) throws {
        var bytes = try #require(fileBytes(vault, "vault"))
        let m = VaultFile.fixedHeaderSize + 2
        for i in 0..<4 {
            bytes[m + i] = UInt8(truncatingIfNeeded: memoryKiB >> (24 - 8 * UInt32(i)))
            bytes[Self.parallelismOffset + i] = UInt8(truncatingIfNeeded: parallelism >> (24 - 8 * UInt32(i)))
        }
        let body = Array(bytes.prefix(bytes.count - VaultFile.checksumSize))
        try Data(body + Digest.blake2b256(body)).write(to: URL(fileURLWithPath: vault.directory.file("vault")))
    }

    /// p = 4096 (with memory to match): refused before any work and before
    /// counting, and the right PIN is not counted as wrong.
    @Test func hugeParallelismIsRefusedBeforeCountingOrWork() throws {
        let log = EventLog()
        let vault = try makeVault(options: options(log: log))
        try tamper(vault, memoryKiB: 8 * 4096, parallelism: 4096)
        log.clear()
        #expect(throws: VaultError.parametersAboveCeiling) { try vault.unlock(pin: pin("1234")) { _ in } }
        #expect(log.all.isEmpty, "nothing counted, no key derivation")
        #expect(throws: VaultError.parametersAboveCeiling) { try vault.status() }
    }

    /// Parameters edited within the bounds: the file no longer authenticates
    /// under its key file, so it is a damaged vault, never a counted wrong PIN.
    @Test func editedParametersAreDamagedNotAWrongPIN() throws {
        let log = EventLog()
        let vault = try makeVault(options: options(log: log))
        try tamper(vault, memoryKiB: 128, parallelism: 2)
        log.clear()
        do {
            try vault.unlock(pin: pin("1234")) { _ in }
            Issue.record("an edited file opened")
        } catch let error as VaultError {
            guard case .damaged = error else {
                Issue.record("expected a damaged vault, got \(error)")
                return
            }
        }
        #expect(log.all.isEmpty, "nothing counted, no key derivation")
    }
}

@Suite("Failure record")
struct FailureRecordTests {
    /// Offset of the consecutive-failure count in the record.
    static let failuresOffset = 8 + 16

    /// The record with its count set to `count` and the trailer recomputed
    /// by `seal` (what a forger can compute).
    func forge(_ vault: PinVault, count: UInt32, seal: ([UInt8]) throws -> [UInt8]) throws {
        var bytes = try #require(fileBytes(vault, "failures"))
        for i in 0..<4 { bytes[Self.failuresOffset + i] = UInt8(truncatingIfNeeded: count >> (24 - 8 * UInt32(i))) }
        let body = Array(bytes.prefix(FailureRecord.size - 32))
        try Data(body + seal(body)).write(to: URL(fileURLWithPath: vault.directory.file("failures")))
    }

    /// The MAC a forger computes from the key file alone (no pepper).
    func keyFileOnlyMAC(_ vault: PinVault) -> ([UInt8]) throws -> [UInt8] {
        { body in
            let recordKey = try vault.directory.keyFile.recordKey()
            let key = try HMACSHA256.deriveKey(label: KeyFile.recordLabel, from: [recordKey])
            return try HMACSHA256.authenticate(body, key: key)
        }
    }

    /// Resetting the counter with a recomputed plain checksum (all the
    /// record used to have) is refused, and so is every flipped byte.
    @Test func aCounterResetWithARecomputedChecksumIsRefused() throws {
        let vault = try makeVault(policy: .hard(maxFailures: 3))
        for _ in 0..<3 { #expect(throws: VaultError.self) { try vault.unlock(pin: pin("0000")) { _ in } } }
        #expect(throws: VaultError.locked) { try vault.unlock(pin: pin("1234")) { _ in } }
        let locked = try #require(fileBytes(vault, "failures"))
        try forge(vault, count: 0) { try Digest.blake2b256($0) }
        #expect(throws: VaultError.self) { try vault.status() }
        #expect(throws: VaultError.self) { try vault.unlock(pin: pin("1234")) { _ in } }
        for i in 0..<locked.count {
            var flipped = locked
            flipped[i] ^= 0x01
            try Data(flipped).write(to: URL(fileURLWithPath: vault.directory.file("failures")))
            #expect(throws: VaultError.self, "byte \(i)") { try vault.status() }
        }
        try Data(locked).write(to: URL(fileURLWithPath: vault.directory.file("failures")))
        #expect(throws: VaultError.locked) { try vault.unlock(pin: pin("1234")) { _ in } }
    }

    /// With a pepper, even someone who reads the key file cannot forge the
    /// record. Without one, whoever reads the key file can: the documented limit.
    @Test func forgingNeedsThePepperWhereThereIsOne() throws {
        let pepper = try SecureBytes.random(count: 32)
        let peppered = try makeVault(policy: .hard(maxFailures: 3), options: options(pepper: pepper))
        for _ in 0..<3 { #expect(throws: VaultError.self) { try peppered.unlock(pin: pin("0000")) { _ in } } }
        try forge(peppered, count: 0, seal: keyFileOnlyMAC(peppered))
        #expect(throws: VaultError.self) { try peppered.status() }

        let plain = try makeVault(policy: .hard(maxFailures: 3))
        for _ in 0..<3 { #expect(throws: VaultError.self) { try plain.unlock(pin: pin("0000")) { _ in } } }
        try forge(plain, count: 0, seal: keyFileOnlyMAC(plain))
        #expect(try plain.status().failures == 0, "without a pepper, the key file's reader can reset the counter")
    }
}
