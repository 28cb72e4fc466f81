import Foundation
import PinEntry
import PinVault
import SecureCore

/// `securepin vault init|unlock|change-pin|status|destroy --vault DIR`.
enum VaultCommand {
    static let usage = """
        usage: securepin vault init --vault DIR [--pin-fd N] [--complexity C] [--policy P]
                                    [--target-ms N | -t N -k KiB -p N]      (secret on standard input)
               securepin vault unlock --vault DIR [--pin-fd N]              (secret to standard output)
               securepin vault change-pin --vault DIR [--pin-fd N --new-pin-fd N]
               securepin vault status --vault DIR [--json]
               securepin vault destroy --vault DIR [--yes]
        C: digits-4, digits-6, digits-4-8 (default) or alphanumeric.
        P: soft (default: delays, locked after 20), hard:N (locked after N), wipe:N (destroyed after N).
        PINs come from the terminal (no echo) unless --pin-fd/--new-pin-fd name descriptors, one PIN each.
        init creates DIR, or uses an existing empty directory of yours with mode 0700 (never changing its mode).
        destroy removes the vault's own files, and DIR only if init created it; it asks for confirmation
        on a terminal, and needs --yes otherwise.
        Exit codes: 0 success, 1 wrong PIN, 3 locked or throttled, 2 usage error or damaged vault.
        """

    static func run(_ arguments: [String]) -> Int32 {
        guard let sub = arguments.first else { CLI.fail("vault: missing subcommand", usage: usage) }
        var args = Arguments(Array(arguments.dropFirst()), command: "vault \(sub)", usage: usage)
        guard let directory = args.value("--vault") else { args.fail("--vault DIR is required") }
        let vault = PinVault(directory: directory)
        do {
            switch sub {
            case "init": return try initialize(&args, directory: directory)
            case "unlock": return try unlock(&args, vault: vault)
            case "change-pin": return try changePIN(&args, vault: vault)
            case "status": return try status(&args, vault: vault)
            case "destroy": return try destroy(&args, vault: vault, directory: directory)
            default: CLI.fail("vault: unknown subcommand '\(sub)'", usage: usage)
            }
        } catch let error as VaultError {
            return report(error, command: "vault \(sub)")
        } catch {
            CLI.printError("securepin: vault \(sub): \(error)")
            return 2
        }
    }

    static func pinInput(_ args: inout Arguments, option: String, prompt: String) -> PinInput {
        if let fd = args.integer(option, range: Int32(0)...Int32(65535)) { return .descriptor(fd) }
        return .terminal(prompt: prompt)
    }

    static func initialize(_ args: inout Arguments, directory: String) throws -> Int32 {
        let format = parseComplexity(&args, default: .fourToEightDigits)
        let input = pinInput(&args, option: "--pin-fd", prompt: "New PIN")
        let policy = parsePolicy(args.value("--policy"), &args)
        let target = args.integer("--target-ms", range: 1...60_000)
        let t = args.integer("-t", range: UInt32(1)...UInt32(64))
        let k = args.integer("-k", range: UInt32(8)...UInt32.max)
        let p = args.integer("-p", range: UInt32(1)...UInt32(64)) ?? 1
        args.finish()
        try PinVault.checkCanCreate(at: directory)  // before the secret and the PIN are asked for
        let (buffer, count) = try SecureIO.readAll(from: 0, maximum: PinVault.maximumSecretByteCount)
        defer { buffer.destroy() }
        guard count > 0 else { args.fail("the secret on standard input is empty") }
        let secret = try SecureBytes(count: count)
        try buffer.withUnsafeBytes { source in
            try secret.withUnsafeMutableBytes {
                $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: source.prefix(count)))
            }
        }
        defer { secret.destroy() }
        let pin = input.read(format: format, command: "vault init")
        defer { pin.destroy() }
        if case .terminal = input {
            let again = PinInput.terminal(prompt: "Repeat PIN").read(format: format, command: "vault init")
            defer { again.destroy() }
            guard try pin.isEqual(to: again) else { args.fail("the two PINs differ; nothing was created") }
        }
        let parameters: Argon2id.Parameters
        if let t, let k {
            parameters = Argon2id.Parameters(memoryKiB: k, iterations: t, parallelism: p)
        } else if let target {
            parameters = try KDFCalibrator(targetMilliseconds: Double(target)).calibrate().parameters
        } else {
            parameters = .interactive
        }
        _ = try PinVault.create(at: directory, secret: secret, pin: pin, policy: policy, parameters: parameters)
        print("vault created: \(directory) (Argon2id \(parameters), policy \(describe(policy)))")
        return 0
    }

    /// Destroys after a confirmation (a terminal) or `--yes`, and says exactly what it removed.
    static func destroy(_ args: inout Arguments, vault: PinVault, directory: String) throws -> Int32 {
        let yes = args.flag("--yes")
        args.finish()
        // Only a missing vault stops here: a damaged one (say, a destroy interrupted after its key
        // file was overwritten) must still be destroyable.
        guard vault.exists else { throw VaultError.notFound }
        if !yes {
            guard isatty(0) == 1 else {
                CLI.printError(
                    "securepin: vault destroy: refusing to destroy without confirmation: standard input is not a"
                        + " terminal; pass --yes")
                return 2
            }
            FileHandle.standardError.write(
                Data("Destroy the vault in \(directory)? It cannot be recovered. Type 'yes' to confirm: ".utf8))
            guard readLine(strippingNewline: true) == "yes" else {
                CLI.printError("securepin: vault destroy: not confirmed; nothing was destroyed")
                return 2
            }
        }
        let report = try vault.destroy()
        print("vault destroyed: \(directory)")
        print("overwritten in place and removed: \(report.removedFiles.joined(separator: ", "))")
        print(
            report.removedDirectory
                ? "removed directory: \(directory) (created by vault init)"
                : "kept directory: \(directory) (the vault did not create it, or it is not empty)")
        return 0
    }

    static func unlock(_ args: inout Arguments, vault: PinVault) throws -> Int32 {
        let input = pinInput(&args, option: "--pin-fd", prompt: "PIN")
        args.finish()
        _ = try vault.status()  // a missing or damaged vault fails before the PIN is asked for
        let pin = input.read(format: anyPINFormat, command: "vault unlock")
        defer { pin.destroy() }
        try vault.unlock(pin: pin) { secret in try SecureIO.writeRaw(secret, to: 1) }
        return 0
    }

    static func changePIN(_ args: inout Arguments, vault: PinVault) throws -> Int32 {
        let format = parseComplexity(&args, default: .fourToEightDigits)
        let old = pinInput(&args, option: "--pin-fd", prompt: "Current PIN")
        let new = pinInput(&args, option: "--new-pin-fd", prompt: "New PIN")
        args.finish()
        _ = try vault.status()
        let oldPIN = old.read(format: anyPINFormat, command: "vault change-pin")
        defer { oldPIN.destroy() }
        let newPIN = new.read(format: format, command: "vault change-pin")
        defer { newPIN.destroy() }
        if case .terminal = new {
            let again = PinInput.terminal(prompt: "Repeat new PIN").read(format: format, command: "vault change-pin")
            defer { again.destroy() }
            guard try newPIN.isEqual(to: again) else { args.fail("the two new PINs differ; nothing was changed") }
        }
        try vault.changePIN(old: oldPIN, new: newPIN)
        print("PIN changed")
        return 0
    }

    static func status(_ args: inout Arguments, vault: PinVault) throws -> Int32 {
        let json = args.flag("--json")
        args.finish()
        let s = try vault.status()
        if json {
            var fields: [String: Any] = [
                "state": s.state.rawValue, "failures": s.failures, "max_failures": s.maxFailures,
                "remaining_attempts": s.remainingAttempts, "retry_after_seconds": s.retryAfterSeconds,
                "biometric_slot": s.hasBiometricSlot,
            ]
            fields["next_attempt_at"] = s.nextAttemptAt.map { iso8601($0) as Any } ?? NSNull()
            let data = try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])
            print(String(decoding: data, as: UTF8.self))
        } else {
            print("state:              \(s.state.rawValue)")
            print("failures:           \(s.failures) of \(s.maxFailures)")
            print("remaining attempts: \(s.remainingAttempts)")
            print("next attempt at:    \(s.nextAttemptAt.map(iso8601) ?? "never (locked)")")
        }
        return 0
    }

    static func iso8601(_ seconds: UInt64) -> String {
        let formatter = ISO8601DateFormatter()
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    static func parsePolicy(_ text: String?, _ args: inout Arguments) -> ThrottlePolicy {
        guard let text else { return .soft() }
        let parts = text.split(separator: ":")
        let limit = parts.count == 2 ? Int(parts[1]) : nil
        switch (parts.first, limit) {
        case ("soft", nil) where parts.count == 1: return .soft()
        case ("soft", let n?) where (1...1000).contains(n): return .soft(maxFailures: n)
        case ("hard", let n?) where (1...1000).contains(n): return .hard(maxFailures: n)
        case ("wipe", let n?) where (1...1000).contains(n): return .wipe(maxFailures: n)
        default: args.fail("--policy must be soft, soft:N, hard:N or wipe:N (N in 1...1000), not '\(text)'")
        }
    }

    static func describe(_ policy: ThrottlePolicy) -> String {
        switch policy {
        case .soft(let n): "soft, locked after \(n)"
        case .hard(let n): "hard, locked after \(n)"
        case .wipe(let n): "wipe after \(n)"
        }
    }

    /// One line for the error, and the exit code the README documents.
    static func report(_ error: VaultError, command: String) -> Int32 {
        let (message, code): (String, Int32) =
            switch error {
            case .wrongPIN(let remaining?): ("wrong PIN (\(remaining) attempts remaining)", 1)
            case .wrongPIN(nil): ("wrong PIN", 1)
            case .throttled(let seconds): ("too many failures: try again in \(seconds) s", 3)
            case .locked: ("locked after too many failures: only destroy and re-enrolment help", 3)
            case .wiped: ("too many failures: the vault was destroyed", 3)
            case .notFound: ("no vault here", 2)
            case .alreadyExists: ("a vault already exists here", 2)
            case .notAVault: ("not a SecurePIN vault file", 2)
            case .newerFormat(let v): ("the vault was written by a newer version (format \(v)); upgrade SecurePIN", 2)
            case .unsupportedFormat(let v):
                ("the vault has format \(v), which this version no longer reads; destroy it and create it anew", 2)
            case .unsuitableDirectory(let reason): ("refused: \(reason)", 2)
            case .damaged(let reason): ("damaged vault: \(reason)", 2)
            case .parametersBelowFloor:
                ("refused: the vault's key derivation is weaker than the floor (a downgrade?)", 2)
            case .parametersAboveCeiling: ("refused: the vault's key derivation exceeds this machine's ceiling", 2)
            case .pepperRequired: ("this vault needs its pepper", 2)
            case .invalidSecretSize(let n):
                ("the secret must be 1 to \(PinVault.maximumSecretByteCount) bytes, not \(n)", 2)
            case .io(let operation, let errno): ("\(operation) failed: \(String(cString: strerror(errno)))", 2)
            default: ("\(error)", 2)
            }
        CLI.printError("securepin: \(command): \(message)")
        return code
    }
}
