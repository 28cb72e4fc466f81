import Foundation
import SecureCore
import TestSupport
import Testing

@testable import PinVault

/// A soft policy with the vault's own schedule (`--policy soft:5:30s,5m,30m`): parsed and
/// checked before anything happens, recorded in a version 6 header under the MAC, enforced.
@Suite("Lockout schedule")
struct LockoutScheduleTests {
    @Test func parsesTheSchemesSchedule() throws {
        let schedule = try LockoutSchedule(parsing: "5:30s,5m,30m")
        #expect(schedule.freeFailures == 5)
        #expect(schedule.delays == [30, 300, 1800])
        #expect(schedule.description == "5:30s,5m,30m")
        #expect(try LockoutSchedule(parsing: "1:90s,2h,1d").delays == [90, 7200, 86400])
        #expect(try LockoutSchedule(parsing: "1:90s,120m").description == "1:90s,2h", "largest whole unit")
        #expect(try LockoutSchedule(parsing: "3:30d").delays == [LockoutSchedule.maximumDelaySeconds])
    }

    /// Every malformed or out-of-range schedule is a typed refusal that names the problem.
    @Test func refusesBadSchedules() {
        let bad = [
            "", "5", "5:", ":30s", "0:30s", "1001:30s", "x:30s", "-1:30s", "5:30", "5:30x", "5:s", "5:0s",
            "5:31d", "5:30s,,5m", "5:30s,", "5:+3s", "5:-3s", "5:3.5s", "5:30s:7", "٥:30s", "5:٣s",
            "5:99999999999999999999d", "5:" + Array(repeating: "1s", count: 17).joined(separator: ","),
        ]
        for text in bad {
            do {
                _ = try LockoutSchedule(parsing: text)
                Issue.record("'\(text)' was accepted")
            } catch {
                guard case .invalidPolicy(let reason) = error else {
                    Issue.record("'\(text)': \(error)")
                    continue
                }
                #expect(!reason.isEmpty)
            }
        }
        #expect(throws: VaultError.self) { try LockoutSchedule(freeFailures: 5, delays: []) }
        #expect(throws: VaultError.self) { try LockoutSchedule(freeFailures: 0, delays: [30]) }
        #expect(throws: VaultError.self) { try LockoutSchedule(freeFailures: 5, delays: [30, 0]) }
        #expect(throws: VaultError.self) {
            try LockoutSchedule(freeFailures: 5, delays: [LockoutSchedule.maximumDelaySeconds + 1])
        }
    }

    @Test func delaysFollowTheScheduleAndTheLastRepeats() throws {
        let policy = ThrottlePolicy.softSchedule(try LockoutSchedule(parsing: "5:30s,5m,30m"))
        let delays = (1...10).map { policy.delaySeconds(afterFailures: $0) }
        #expect(delays == [0, 0, 0, 0, 30, 300, 1800, 1800, 1800, 1800])
        #expect(policy.maxFailures == 20, "the same limit as the default soft policy")
        #expect(policy.delaySeconds(afterFailures: 0) == 0)
    }

    /// A schedule whose first delay comes at or after the limit would never delay anything.
    @Test func aScheduleBeyondTheLimitIsRefusedBeforeAnythingIsWritten() throws {
        let policy = ThrottlePolicy.softSchedule(try LockoutSchedule(parsing: "5:30s"), maxFailures: 5)
        #expect(throws: VaultError.self) { try policy.validate() }
        let directory = temporaryDirectory()
        do {
            _ = try PinVault.create(
                at: directory, secret: secret("x"), pin: pin("1234"), policy: policy, parameters: testParameters,
                options: options())
            Issue.record("created")
        } catch let error as VaultError {
            guard case .invalidPolicy = error else {
                Issue.record("\(error)")
                return
            }
        }
        #expect(!FileManager.default.fileExists(atPath: directory), "nothing on disk")
        for limit in [0, 65_536] {
            #expect(throws: VaultError.self) {
                try PinVault.create(
                    at: directory, secret: secret("x"), pin: pin("1234"), policy: .soft(maxFailures: limit),
                    parameters: testParameters, options: options())
            }
        }
        #expect(!FileManager.default.fileExists(atPath: directory))
    }

    @Test func aVaultKeepsAndEnforcesItsSchedule() throws {
        let clock = TestClock()
        let log = EventLog()
        let policy = ThrottlePolicy.softSchedule(try LockoutSchedule(parsing: "2:30s,5m"), maxFailures: 6)
        let vault = try makeVault(policy: policy, options: options(clock: clock, log: log))
        let bytes = try #require(fileBytes(vault, "vault"))
        #expect(bytes[8] == 0 && bytes[9] == 6, "written as format version 6")
        #expect(try vault.status().policy == policy, "read back from the header")
        #expect(throws: VaultError.wrongPIN(remainingAttempts: 5)) { try vault.unlock(pin: pin("1111")) { _ in } }
        #expect(try vault.status().retryAfterSeconds == 0)
        #expect(throws: VaultError.wrongPIN(remainingAttempts: 4)) { try vault.unlock(pin: pin("1111")) { _ in } }
        #expect(try vault.status().retryAfterSeconds == 30)
        log.clear()
        #expect(throws: VaultError.throttled(retryAfterSeconds: 30)) { try vault.unlock(pin: pin("1234")) { _ in } }
        #expect(log.all.isEmpty, "a throttled attempt counts nothing and derives nothing")
        clock.advance(seconds: 30)
        #expect(throws: VaultError.wrongPIN(remainingAttempts: 3)) { try vault.unlock(pin: pin("1111")) { _ in } }
        #expect(try vault.status().retryAfterSeconds == 300)
        clock.advance(seconds: 300)
        #expect(throws: VaultError.wrongPIN(remainingAttempts: 2)) { try vault.unlock(pin: pin("1111")) { _ in } }
        #expect(try vault.status().retryAfterSeconds == 300, "the last delay repeats")
        clock.advance(seconds: 299)
        #expect(throws: VaultError.throttled(retryAfterSeconds: 1)) { try vault.unlock(pin: pin("1234")) { _ in } }
        clock.advance(seconds: 1)
        #expect(try vault.unlock(pin: pin("1234")) { try text($0) } == "refresh-token-42")
        #expect(try vault.status().failures == 0)
        // A PIN change rewrites the file: the schedule and the version stay.
        try vault.changePIN(old: pin("1234"), new: pin("5678"))
        #expect(try vault.status().policy == policy)
        #expect(try #require(fileBytes(vault, "vault"))[9] == 6)
    }

    @Test func theDefaultPolicyStaysVersion2WithTheSameTable() throws {
        let vault = try makeVault()
        #expect(try #require(fileBytes(vault, "vault"))[9] == 2)
        #expect(try vault.status().policy == .soft())
    }

    /// The schedule is in the bound header: a shorter delay written with a recomputed checksum
    /// does not authenticate under the key file, so the vault is damaged and nothing is counted.
    @Test func anEditedScheduleIsDamagedNotObeyed() throws {
        let log = EventLog()
        let policy = ThrottlePolicy.softSchedule(try LockoutSchedule(parsing: "2:30m"), maxFailures: 6)
        let vault = try makeVault(policy: policy, options: options(log: log))
        var bytes = try #require(fileBytes(vault, "vault"))
        // Bound header of a software version 6 file: 37 bytes, the binding byte, then free
        // failures (u16), the delay count (u8) and the delays (u32 each).
        #expect(Array(bytes[38..<41]) == [0, 2, 1])
        #expect(Array(bytes[41..<45]) == [0, 0, 0x07, 0x08], "1800 seconds")
        bytes[43] = 0
        bytes[44] = 1
        let body = Array(bytes.prefix(bytes.count - VaultFile.checksumSize))
        try Data(body + Digest.blake2b256(body)).write(to: URL(fileURLWithPath: vault.directory.file("vault")))
        log.clear()
        do {
            try vault.unlock(pin: pin("1234")) { _ in }
            Issue.record("opened")
        } catch let error as VaultError {
            guard case .damaged = error else {
                Issue.record("\(error)")
                return
            }
        }
        #expect(log.all.isEmpty, "nothing counted, no key derivation")
    }

    /// Kind 4 is a version 6 kind: in an older file it is unknown (checked before the MAC).
    @Test func aScheduleKindInAnOlderFileIsDamaged() throws {
        let vault = try makeVault()
        var bytes = try #require(fileBytes(vault, "vault"))
        #expect(bytes[28] == 1)
        bytes[28] = 4
        let body = Array(bytes.prefix(bytes.count - VaultFile.checksumSize))
        let edited = body + (try Digest.blake2b256(body))
        #expect(throws: VaultError.damaged(reason: "unknown throttle policy")) {
            try VaultFile.decode(edited, floor: testFloor, limits: .default)
        }
    }

    @Test func codableChecksTheSchedule() throws {
        let policy = ThrottlePolicy.softSchedule(try LockoutSchedule(parsing: "5:30s,5m,30m"), maxFailures: 20)
        let json = try JSONEncoder().encode(policy)
        #expect(try JSONDecoder().decode(ThrottlePolicy.self, from: json) == policy)
        let bad = Data(#"{"freeFailures":0,"delays":[30]}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(LockoutSchedule.self, from: bad) }
    }
}
