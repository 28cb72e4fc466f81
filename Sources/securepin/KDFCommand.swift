import Foundation
import SecureCore

/// `securepin kdf hash|tune` (the benchmark grid is `securepin-bench kdf`, not shipped).
enum KDFCommand {
    static func run(_ arguments: [String]) -> Int32 {
        guard let sub = arguments.first else { CLI.fail("kdf: missing command", usage: Help.briefGroup("kdf")) }
        if ["-h", "--help", "help"].contains(sub) {
            print(Help.group("kdf"))
            return ExitCode.ok
        }
        let rest = Arguments(Array(arguments.dropFirst()), command: "kdf \(sub)", usage: Help.of("kdf \(sub)"))
        switch sub {
        case "hash": return hash(rest)
        case "tune": return tune(rest)
        default: CLI.unknownSubcommand("kdf", sub)
        }
    }

    /// `parameters`, with memory and iterations raised to the vault's floor.
    static func raisedToFloor(_ parameters: Argon2id.Parameters) -> Argon2id.Parameters {
        Argon2id.Parameters(
            memoryKiB: max(parameters.memoryKiB, Help.floor.memoryKiB),
            iterations: max(parameters.iterations, Help.floor.iterations), parallelism: parameters.parallelism)
    }

    static func hash(_ parsed: Arguments) -> Int32 {
        var args = parsed
        let saltText = args.value("--salt-hex")
        let tValue = args.integer("-t", range: UInt32(1)...UInt32.max)
        let kValue = args.integer("-k", range: UInt32(1)...UInt32.max)
        let p = args.integer("-p", range: UInt32(1)...UInt32(0xFF_FFFF)) ?? 1
        let length = args.integer("-l", range: 1...1024) ?? 32
        let encoded = args.flag("--encoded")
        let allowEmpty = args.flag("--allow-empty")
        args.finish()
        guard let saltText else { args.usageError("--salt-hex is required") }
        guard let salt = parseHex(saltText) else { args.fail("--salt-hex is not valid hex (pairs of 0-9, a-f)") }
        guard let t = tValue else { args.usageError("-t is required") }
        guard let k = kValue else { args.usageError("-k is required") }
        let parameters = Argon2id.Parameters(memoryKiB: k, iterations: t, parallelism: p)
        do {
            // Every check runs before the password is read or memory allocated.
            try Argon2id.validate(parameters, saltByteCount: salt.count, outputByteCount: length)
            let (input, count) = try SecureIO.readAll(from: 0)
            defer { input.destroy() }
            if count == 0 && !allowEmpty { args.fail("empty password on standard input (use --allow-empty)") }
            let password = try Password(utf8: input, count: count)
            defer { password.destroy() }
            let key = try Argon2id.deriveKey(
                from: password, salt: salt, parameters: parameters, outputByteCount: length)
            defer { key.destroy() }
            if encoded {
                let prefix = "$argon2id$v=19$m=\(k),t=\(t),p=\(p)$\(base64NoPadding(salt))$"
                FileHandle.standardOutput.write(Data(prefix.utf8))
                try SecureIO.writeEncoded(key, as: .base64NoPadding)
            } else {
                try SecureIO.writeEncoded(key, as: .hex)
            }
            return 0
        } catch let error as SecureCoreError {
            args.fail(describe(error))
        } catch SecureIO.Failure.tooLong {
            args.fail("the password on standard input is longer than \(SecureIO.maximumSecretBytes) bytes")
        } catch SecureIO.Failure.readFailed(let code) {
            args.fail("could not read standard input: \(String(cString: strerror(code)))")
        } catch {
            CLI.printError("securepin: kdf hash: failed: \(CLI.sentence(error))")
            return ExitCode.refused
        }
    }

    static func tune(_ parsed: Arguments) -> Int32 {
        var args = parsed
        let targetValue = args.integer("--target-ms", range: 1...600_000)
        let maxMemory: UInt64
        if let text = args.value("--max-memory") {
            guard let kib = parseSizeKiB(text), kib >= 8, kib <= UInt64(UInt32.max) else {
                args.fail("--max-memory must be a size such as 256M, 1G or 65536 (KiB), not '\(text)'")
            }
            maxMemory = kib
        } else {
            maxMemory = min(Argon2id.Limits.default.maxMemoryKiB, 1024 * 1024)
        }
        let maxParallelism = args.integer("--max-parallelism", range: UInt32(1)...UInt32(64)) ?? 1
        let json = args.flag("--json")
        args.finish()
        guard let target = targetValue else { args.usageError("--target-ms is required") }
        let showProgress = isatty(1) == 1 && isatty(2) == 1 && !json
        do {
            let result = try KDFCalibrator.calibrateBest(
                targetMilliseconds: Double(target), maxMemoryKiB: UInt32(maxMemory), maxParallelism: maxParallelism
            ) { fraction in
                if showProgress { drawProgress(fraction) }
            }
            if showProgress { CLI.printError("") }
            if json {
                let fields: [String: Any] = [
                    "memory_kib": Int(result.parameters.memoryKiB), "iterations": Int(result.parameters.iterations),
                    "parallelism": Int(result.parameters.parallelism), "backend": result.backend.rawValue,
                    "measured_ms": (result.measuredMilliseconds * 10).rounded() / 10, "target_ms": target,
                    "runs": result.runs, "vault_init": initLine(raisedToFloor(result.parameters)),
                    "below_vault_floor": raisedToFloor(result.parameters) != result.parameters,
                ]
                let data = try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])
                print(String(decoding: data, as: UTF8.self))
            } else {
                let p = result.parameters
                print("Argon2id for a \(target) ms target on this machine:")
                print("  memory       \(p.memoryKiB) KiB (\(p.memoryKiB / 1024) MiB)")
                print("  iterations   \(p.iterations)")
                print("  parallelism  \(p.parallelism)")
                print("  backend      \(result.backend.rawValue)")
                print(
                    "  measured     \(String(format: "%.1f", result.measuredMilliseconds)) ms "
                        + "(\(String(format: "%.0f", result.measuredMilliseconds / Double(target) * 100)) % of target, \(result.runs) runs)"
                )
                let raised = raisedToFloor(p)
                if raised != p {
                    print("  below the vault's floor of \(Help.floorText): a vault uses \(raised) instead")
                }
                print("for a vault:")
                print("  " + initLine(raised))
            }
            return 0
        } catch let error as SecureCoreError {
            args.fail(describe(error))
        } catch {
            CLI.printError("securepin: kdf tune: failed: \(CLI.sentence(error))")
            return ExitCode.refused
        }
    }

    /// A ready-to-paste `vault init` line with these parameters.
    static func initLine(_ p: Argon2id.Parameters) -> String {
        "securepin vault init --vault DIR -t \(p.iterations) -k \(p.memoryKiB)"
            + (p.parallelism == 1 ? "" : " -p \(p.parallelism)")
    }

    static func drawProgress(_ fraction: Double) {
        let width = 30
        let filled = Int((fraction * Double(width)).rounded())
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        FileHandle.standardError.write(Data("\r  calibrating [\(bar)] \(Int(fraction * 100)) %".utf8))
    }

    /// One line saying what is wrong with the input.
    static func describe(_ error: SecureCoreError) -> String {
        switch error {
        case .invalidIterations:
            "iterations (-t) must be at least 1 and at most \(Argon2id.Limits.default.maxIterations)"
        case .invalidMemory: "memory (-k) must be at least 8 KiB per lane"
        case .invalidParallelism: "parallelism (-p) must be 1 ... 16777215"
        case .saltTooShort(let minimum): "salt must be at least \(minimum) bytes"
        case .invalidOutputLength(let n): "output length \(n) is outside \(Argon2id.outputByteCountRange)"
        case .memoryAboveCeiling:
            "memory (-k) is above this machine's ceiling of \(Argon2id.Limits.default.maxMemoryKiB) KiB (half of RAM)"
        case .malformedUTF8: "the password on standard input is not UTF-8"
        case .outOfMemory: "out of memory: try less memory (-k) or securepin doctor"
        case .keyDerivationFailed, .unsupported, .initializationFailed, .internalFailure:
            "\(error.description); securepin doctor tells more"
        // The library's own sentences, case by case: a new case does not compile until it is placed.
        case .destroyed, .indexOutOfRange, .invalidCodePoint, .tooLong, .invalidSize, .sizeMismatch,
            .authenticationFailed, .invalidKeyOrNonceSize, .invalidKey, .inheritedAcrossFork:
            error.description
        }
    }
}
