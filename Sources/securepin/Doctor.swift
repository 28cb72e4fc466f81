import Activation
import ActivationKeyring
import Foundation
import SecureCore

/// `securepin doctor [--json]`: what protection this machine gives to secrets.
enum Doctor {
    struct Report: Codable {
        var machine: MachineReport
        var kernel: String
        var corePattern: String?
        var newPasswordProtection: [String]
        var newPasswordProtectionBits: UInt32
        /// Where `securepin client --store auto` keeps a new activation: `keyring` or `files`.
        var secretStore: String
        /// Why: the Secret Service's default collection, or why it cannot be used.
        var secretStoreReason: String
    }

    static func run(_ arguments: [String]) -> Int32 {
        var args = Arguments(arguments, command: "doctor", usage: Help.of("doctor"))
        let json = args.flag("--json")
        args.finish()
        do {
            let report = try gather()
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                encoder.keyEncodingStrategy = .convertToSnakeCase
                print(String(decoding: try encoder.encode(report), as: UTF8.self))
            } else {
                printHuman(report)
            }
            return 0
        } catch {
            CLI.printError("securepin: doctor: could not read this machine's facts: \(CLI.sentence(error))")
            return ExitCode.refused
        }
    }

    static func gather() throws -> Report {
        let machine = try SecureMemory.machineReport()
        let probe = try MutablePassword()
        defer { probe.destroy() }
        var uts = utsname()
        uname(&uts)
        let release = withUnsafeBytes(of: uts.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let pattern = CLI.readSmallFile("/proc/sys/kernel/core_pattern")?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let (store, reason) = secretStore()
        return Report(
            machine: machine, kernel: release, corePattern: pattern,
            newPasswordProtection: probe.protection.description.components(separatedBy: ", "),
            newPasswordProtectionBits: probe.protection.rawValue, secretStore: store, secretStoreReason: reason)
    }

    /// What `--store auto` chooses for a new activation, and why (no prompt is raised).
    static func secretStore() -> (String, String) {
        do throws(ActivationError) {
            let collection = try ActivationStore.secretServiceCollection()
            return ("keyring", "the session bus offers a Secret Service; collection \(collection)")
        } catch {
            if case .storageLocked = error {
                return ("keyring", "\(ActivationStore.describe(error)) (files are used only when asked)")
            }
            return ("files", ActivationStore.describe(error))
        }
    }

    static func kib(_ bytes: UInt64?) -> String {
        bytes.map { "\($0 / 1024) KiB" } ?? "unlimited"
    }

    static func printHuman(_ r: Report) {
        let m = r.machine
        func row(_ label: String, _ value: String) {
            print("  " + label.padding(toLength: 34, withPad: " ", startingAt: 0) + value)
        }
        func yes(_ flag: Bool) -> String { flag ? "yes" : "no" }
        print("SecurePIN doctor: what this machine gives to secrets")
        row(
            "secret memory (memfd_secret)",
            m.secretMemoryAvailable
                ? "available: pages unreadable even to the kernel"
                : "unavailable (\(String(cString: strerror(Int32(m.secretMemoryErrno))))): falling back to mlock")
        row("wipe-on-fork (MADV_WIPEONFORK)", yes(m.wipeOnForkAvailable))
        row("excluded from core dumps", yes(m.dontDumpAvailable))
        let enforced = m.memlockLimitEnforced ? "" : " (not enforced for root)"
        row(
            "locked-memory limit (ulimit -l)",
            "\(kib(m.memlockSoftLimit)) soft, \(kib(m.memlockHardLimit)) hard\(enforced)")
        row("core dumps (ulimit -c)", m.coreSoftLimit == 0 ? "disabled" : "allowed, \(kib(m.coreSoftLimit))")
        row("core pattern", r.corePattern ?? "unreadable")
        row("process dumpable", yes(m.dumpable))
        row("AES hardware (AES-NI + PCLMUL)", yes(m.aesHardware))
        row("libsodium", m.sodiumVersion)
        row("libargon2", "Argon2 version \(m.argon2Version >> 4).\(m.argon2Version & 0xF) (RFC 9106)")
        row("kernel", r.kernel)
        row("a new password gets", r.newPasswordProtection.joined(separator: ", "))
        row("client store (--store auto)", "\(r.secretStore): \(r.secretStoreReason)")
    }
}
