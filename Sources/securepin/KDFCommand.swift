import BenchmarkKit
import Foundation
import SecureCore

/// `securepin kdf hash|tune|bench`.
enum KDFCommand {
    static let usage = """
        usage: securepin kdf hash --salt-hex HEX -t N -k KiB -p N [-l BYTES] [--encoded] [--allow-empty]
                                  (password bytes on standard input, like Debian's argon2 tool)
               securepin kdf tune --target-ms N [--max-memory SIZE] [--max-parallelism N] [--json]
               securepin kdf bench [--json] [--plot FILE.svg] [--target-ms N]
        SIZE: KiB, or with a suffix K, M or G (for example 512M).
        """

    static func run(_ arguments: [String]) -> Int32 {
        guard let sub = arguments.first else { CLI.fail("kdf: missing subcommand", usage: usage) }
        let rest = Arguments(Array(arguments.dropFirst()), command: "kdf \(sub)", usage: usage)
        switch sub {
        case "hash": return hash(rest)
        case "tune": return tune(rest)
        case "bench": return bench(rest)
        default: CLI.fail("kdf: unknown subcommand '\(sub)'", usage: usage)
        }
    }

    static func hash(_ parsed: Arguments) -> Int32 {
        var args = parsed
        guard let saltText = args.value("--salt-hex") else { args.fail("--salt-hex is required") }
        guard let salt = parseHex(saltText) else { args.fail("--salt-hex is not valid hex") }
        guard let t = args.integer("-t", range: UInt32(1)...UInt32.max) else { args.fail("-t is required") }
        guard let k = args.integer("-k", range: UInt32(1)...UInt32.max) else { args.fail("-k is required") }
        let p = args.integer("-p", range: UInt32(1)...UInt32(0xFF_FFFF)) ?? 1
        let length = args.integer("-l", range: 1...1024) ?? 32
        let encoded = args.flag("--encoded")
        let allowEmpty = args.flag("--allow-empty")
        args.finish()
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
            args.fail("password longer than \(SecureIO.maximumSecretBytes) bytes")
        } catch {
            CLI.printError("securepin: kdf hash: \(error)")
            return 1
        }
    }

    static func tune(_ parsed: Arguments) -> Int32 {
        var args = parsed
        guard let target = args.integer("--target-ms", range: 1...600_000) else { args.fail("--target-ms is required") }
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
                    "runs": result.runs,
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
            }
            return 0
        } catch let error as SecureCoreError {
            args.fail(describe(error))
        } catch {
            CLI.printError("securepin: kdf tune: \(error)")
            return 1
        }
    }

    static func drawProgress(_ fraction: Double) {
        let width = 30
        let filled = Int((fraction * Double(width)).rounded())
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        FileHandle.standardError.write(Data("\r  calibrating [\(bar)] \(Int(fraction * 100)) %".utf8))
    }

    static func bench(_ parsed: Arguments) -> Int32 {
        var args = parsed
        let json = args.flag("--json")
        let plot = args.value("--plot")
        let target = args.integer("--target-ms", range: 1...600_000) ?? 500
        args.finish()
        do {
            let (rows, bandwidth) = try KDFBenchmark.quick.run { row in
                if !json {
                    CLI.printError("  measured m=\(row.memoryMiB) MiB t=\(row.iterations) p=\(row.parallelism)")
                }
            }
            print(json ? try kdfJSON(rows, memcpyGiBps: bandwidth) : kdfTable(rows, memcpyGiBps: bandwidth))
            if let plot {
                try kdfSVG(rows, targetMs: Double(target)).write(toFile: plot, atomically: true, encoding: .utf8)
                if !json { print("plot written to \(plot)") }
            }
            return 0
        } catch {
            CLI.printError("securepin: kdf bench: \(error)")
            return 1
        }
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
        case .memoryAboveCeiling: "memory is above the ceiling of \(Argon2id.Limits.default.maxMemoryKiB) KiB"
        case .malformedUTF8: "the password on standard input is not UTF-8"
        default: "\(error)"
        }
    }
}
