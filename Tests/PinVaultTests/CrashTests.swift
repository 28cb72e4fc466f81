import Foundation
import SecureCore
import Spawn
import TestSupport
import Testing

@testable import PinVault

#if canImport(Glibc)
    import Glibc
#endif

/// The helper executable built beside this test bundle.
func vaultHelperPath() throws -> String { try BuiltExecutable.path("spc-test-helper") }

/// Starts the helper on a vault operation; the PIN lines go to its stdin.
func startHelper(_ command: String, _ directory: String, input: String) throws -> (ChildProcess, PipeReader) {
    try startHelper(executable: try vaultHelperPath(), [command, directory], input: input)
}

/// Trials per harness: 100 in `make test` (200 in all), more with SECUREPIN_KILL_TRIALS.
let killTrials = ProcessInfo.processInfo.environment["SECUREPIN_KILL_TRIALS"].flatMap { Int($0) } ?? 100

/// Parameters large enough that a kill often lands inside the key derivation.
let harnessParameters = Argon2id.Parameters(memoryKiB: 4096, iterations: 1)

@Suite("Vault crash and concurrency harness", .serialized)
struct CrashTests {
    /// A kill window for `command`: 1.5 × how long one run of it takes to finish on this machine
    /// now (at least `floor` µs), measured by running it once to the end. A fixed window proved
    /// nothing on a loaded machine, where no run finished inside it.
    func killWindow(_ command: String, _ vault: PinVault, input: String, floor: UInt32) throws -> UInt32 {
        let started = ContinuousClock.now
        let (process, stdout) = try startHelper(command, vault.directory.path, input: input)
        _ = try stdout.readToEnd()
        try process.wait()
        let whole = started.duration(to: .now)
        let micros = whole.components.seconds * 1_000_000 + whole.components.attoseconds / 1_000_000_000_000
        return UInt32(clamping: max(Int64(floor), micros * 3 / 2))
    }

    func harnessVault(pin digits: String) throws -> PinVault {
        let vault = try PinVault.create(
            at: temporaryDirectory(), secret: secret("refresh-token-42"), pin: pin(digits),
            policy: .hard(maxFailures: 60_000), parameters: harnessParameters,
            options: PinVault.Options(floor: testFloor))
        return PinVault(directory: vault.directory.path, options: PinVault.Options(floor: testFloor))
    }

    /// kill -9 at random instants of wrong-PIN unlocks: every attempt that
    /// reached the key derivation is counted; none is counted twice.
    @Test func killDuringUnlockLosesNoCountedFailure() throws {
        let vault = try harnessVault(pin: "2468")
        let window = try killWindow("vault-unlock", vault, input: "1357\n", floor: 25_000)
        var reachedKDF = 0
        for trial in 0..<killTrials {
            let before = try vault.status().failures
            let (process, stdout) = try startHelper("vault-unlock", vault.directory.path, input: "1357\n")
            usleep(UInt32.random(in: 0...window))
            try process.kill(SIGKILL)
            let output = String(decoding: try stdout.readToEnd(), as: UTF8.self)
            try process.wait()
            let after = try vault.status().failures
            if output.contains("event failureRecorded") {
                reachedKDF += 1
                #expect(after == before + 1, "trial \(trial): a recorded failure was lost")
            } else {
                #expect(after == before || after == before + 1, "trial \(trial): \(before) -> \(after)")
            }
        }
        #expect(reachedKDF > 0, "no kill landed after the failure was recorded: the harness proves nothing")
        #expect(try vault.unlock(pin: pin("2468")) { try text($0) } == "refresh-token-42")
    }

    /// kill -9 at random instants of PIN changes: afterwards the vault opens
    /// with the old or the new PIN, never neither.
    @Test func killDuringPINChangeKeepsOldOrNew() throws {
        var current = "1111"
        var other = "2222"
        let vault = try harnessVault(pin: current)
        let window = try killWindow("vault-change", vault, input: "\(current)\n\(other)\n", floor: 40_000)
        swap(&current, &other)  // the measured change went through
        #expect((try? vault.unlock(pin: pin(current)) { _ in 0 }) != nil, "the measured change did not complete")
        var completed = 0
        for trial in 0..<killTrials {
            let (process, stdout) = try startHelper(
                "vault-change", vault.directory.path, input: "\(current)\n\(other)\n")
            usleep(UInt32.random(in: 0...window))
            try process.kill(SIGKILL)
            _ = try stdout.readToEnd()
            try process.wait()
            if (try? vault.unlock(pin: pin(current)) { _ in 0 }) != nil { continue }
            do {
                _ = try vault.unlock(pin: pin(other)) { _ in 0 }
                swap(&current, &other)
                completed += 1
            } catch {
                Issue.record("trial \(trial): neither the old nor the new PIN opens the vault: \(error)")
                return
            }
        }
        #expect(completed > 0, "no PIN change completed before its kill: the harness proves nothing")
    }

    /// Eight processes with wrong PINs at once: exactly eight failures.
    @Test func concurrentWrongPINsCountExactly() throws {
        let vault = try harnessVault(pin: "2468")
        let helpers = try (0..<8).map { _ in try startHelper("vault-unlock", vault.directory.path, input: "0000\n") }
        for (process, stdout) in helpers {
            _ = try stdout.readToEnd()
            #expect(try process.wait() == .exited(1))
        }
        #expect(try vault.status().failures == 8)
    }
}
