import Foundation
import PinVault
import SecureCore

/// `securepin demo`: the story a person can follow, one line per step. Exits
/// 0 only if every step behaved as expected.
enum DemoCommand {
    struct StepFailed: Error, CustomStringConvertible {
        var description: String
    }

    final class Story {
        var steps = 0
        func step(_ text: String, _ body: () async throws -> String?) async throws {
            steps += 1
            do {
                let detail = try await body()
                print(String(format: "%2d. ", steps) + text + (detail.map { ": " + $0 } ?? "") + "  ✓")
            } catch {
                print(String(format: "%2d. ", steps) + text + "  ✗ (\(error))")
                throw error
            }
        }
    }

    static func run(_ arguments: [String]) async -> Int32 {
        var args = Arguments(arguments, command: "demo", usage: Help.of("demo"))
        let interactive = args.flag("--interactive")
        args.finish()
        let pins: DemoPINs
        do {
            pins = interactive ? try DemoPINs(interactive: ()) : DemoPINs()
        } catch {
            CLI.printError("securepin: demo: \(error)")
            return 1
        }
        let story = Story()
        // A fresh 0700 directory nobody else can have prepared (mkdtemp), removed on every exit,
        // Ctrl-C and SIGTERM included.
        let base: String
        do {
            base = try DemoDirectory.make()
        } catch {
            CLI.printError("securepin: demo: \(error)")
            return 2
        }
        let cleanup = DemoDirectory.removeOnSignal(base)
        defer {
            cleanup.cancel()
            try? FileManager.default.removeItem(atPath: base)
        }
        do {
            print("SecurePIN demo, part 1: activation against the reference server over HTTP")
            try await serverStory(story, directory: base + "/server", pins: pins)
            print("SecurePIN demo, part 2: a secret sealed under a PIN on this machine")
            try await localVaultStory(story, directory: base + "/vault", pins: pins)
            print("SecurePIN demo, part 3: what a copy of the vault directory is worth, per binding")
            try await bindingStory(story, directory: base + "/binding")
            print(
                "SecurePIN demo, part 4: the activation again on PowerAuth V4 (EC_P384_ML_L3), against a second server")
            try await v4Story(story, directory: base + "/v4", pins: pins)
            print("All \(story.steps) steps behaved as expected.")
            return 0
        } catch {
            CLI.printError("securepin: demo: a step did not behave as expected")
            return 1
        }
    }

    /// Builds a PIN from digits the demo script chooses (a person would type them).
    static func pin(_ digits: [UInt32]) throws -> Password {
        let p = try MutablePassword()
        defer { p.destroy() }
        for d in digits { try p.addCharacter(0x30 + d) }
        return try p.copyToImmutable()
    }

    static func expect(_ condition: Bool, _ message: String) throws {
        if !condition { throw StepFailed(description: message) }
    }

    static func localVaultStory(_ story: Story, directory: String, pins: DemoPINs) async throws {
        let sensor = SimulatedBiometricAuthenticator(type: .touchID)
        let options = PinVault.Options(authenticator: sensor)
        let first = try pins.password(.first)
        let second = try pins.password(.second)
        let wrong = try pins.password(.wrong)
        let token = try SecureBytes.random(count: 32)
        var vault = PinVault(directory: directory, options: options)
        var parameters = Argon2id.Parameters.interactive
        try await story.step("calibrate Argon2id for 250 ms on this machine") {
            let result = try await KDFCalibrator(targetMilliseconds: 250, maxMemoryKiB: 256 * 1024).calibrate()
            parameters = result.parameters
            return "\(parameters), measured \(Int(result.measuredMilliseconds)) ms"
        }
        try await story.step("create a vault holding a refresh token under \(pins.label(.first))") {
            vault = try PinVault.create(
                at: directory, secret: token, pin: first, parameters: parameters, options: options)
            return "policy: delays after 5 failures, locked after 20"
        }
        try await story.step("unlock with the right PIN") {
            let same = try await vault.unlock(pin: first) { try $0.isEqual(to: token) }
            try expect(same, "the secret came back different")
            return "the token is back"
        }
        try await story.step("a wrong PIN is refused and counted before the key derivation") {
            do {
                _ = try await vault.unlock(pin: wrong) { _ in 0 }
                throw StepFailed(description: "the wrong PIN opened the vault")
            } catch VaultError.wrongPIN(let remaining?) {
                try expect(try vault.status().failures == 1, "the failure was not counted")
                return "\(remaining) of 20 attempts remaining"
            }
        }
        try await story.step("the right PIN resets the counter") {
            _ = try await vault.unlock(pin: first) { _ in 0 }
            try expect(try vault.status().failures == 0, "the counter was not reset")
            return "failures: 0"
        }
        try await story.step("change to \(pins.label(.second)) (new slot written and verified before the old one goes)")
        {
            try vault.changePIN(old: first, new: second)
            do {
                _ = try await vault.unlock(pin: first) { _ in 0 }
                throw StepFailed(description: "the old PIN still works")
            } catch VaultError.wrongPIN {}
            _ = try await vault.unlock(pin: second) { _ in 0 }
            return "the old PIN is refused, the new one opens"
        }
        try await story.step("enable biometry (simulated Touch ID) and unlock with it") {
            try vault.addBiometricSlot(pin: second)
            let same = try await vault.unlockWithBiometry(prompt: "Unlock the vault") { try $0.isEqual(to: token) }
            try expect(same, "biometry returned another secret")
            return "prompt shown: \"Unlock the vault\""
        }
        try await story.step("the user cancels biometry: LocalAuthService falls back to the PIN") {
            sensor.script(.cancel)
            let (method, _) = try await LocalAuthService(vault: vault).unlock(
                prompt: "Unlock", pinProvider: { try? pins.password(.second) }
            ) { _ in 0 }
            try expect(method == .pin, "no fallback to the PIN")
            return "opened with the PIN"
        }
        try await story.step("five wrong PINs: the vault throttles") {
            for _ in 0..<5 { _ = try? await vault.unlock(pin: wrong) { _ in 0 } }
            let status = try vault.status()
            try expect(status.state == .throttled, "not throttled after 5 failures")
            return "wait \(status.retryAfterSeconds) s; \(status.remainingAttempts) attempts remain"
        }
        try await story.step("during the delay even the right PIN is refused, without counting or deriving") {
            do {
                _ = try await vault.unlock(pin: second) { _ in 0 }
                throw StepFailed(description: "an attempt was allowed during the delay")
            } catch VaultError.throttled(let seconds) {
                try expect(try vault.status().failures == 5, "the refused attempt was counted")
                return "throttled for \(seconds) s more"
            }
        }
        try await story.step("destroy the vault (files overwritten, then removed)") {
            try vault.destroy()
            try expect(!vault.exists, "the vault is still there")
            return nil
        }
        for p in [first, second, wrong] { p.destroy() }
        token.destroy()
    }
}
