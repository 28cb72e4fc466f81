import Foundation
import Spawn
import TestSupport
import Testing

@testable import SecureCore

func secureBytes(_ bytes: [UInt8]) throws -> SecureBytes {
    try bytes.withUnsafeBytes { try SecureBytes(copying: $0) }
}

func hex(_ key: SecureBytes) throws -> String {
    key.withUnsafeBytes { $0.map { String(format: "%02x", $0) }.joined() }
}

@Suite("Argon2id")
struct Argon2idTests {
    let salt = Array("0123456789abcdef".utf8)

    @Test func rfc9106VectorWithPepperAndAssociatedData() throws {
        let key = try Argon2id.deriveKey(
            from: secureBytes([UInt8](repeating: 1, count: 32)), salt: [UInt8](repeating: 2, count: 16),
            parameters: .init(memoryKiB: 32, iterations: 3, parallelism: 4),
            pepper: secureBytes([UInt8](repeating: 3, count: 8)), associatedData: [UInt8](repeating: 4, count: 12))
        #expect(try hex(key) == "0d640df58d78766c08c037a34a8b53c9d01ef0452d75b65eb52520e96b01e659")
    }

    @Test(arguments: [
        Argon2id.Parameters(memoryKiB: 8, iterations: 1), .init(memoryKiB: 256, iterations: 2),
        .init(memoryKiB: 4096, iterations: 3), .init(memoryKiB: 1024, iterations: 5),
    ])
    func backendsAgreeForOneLane(parameters: Argon2id.Parameters) throws {
        let pw = try password("correct horse")
        let fast = try Argon2id.derive(
            from: .password(pw), salt: salt, parameters: parameters, outputByteCount: 32, pepper: nil,
            associatedData: [], limits: .default, backend: .libsodium)
        let reference = try Argon2id.derive(
            from: .password(pw), salt: salt, parameters: parameters, outputByteCount: 32, pepper: nil,
            associatedData: [], limits: .default, backend: .reference)
        #expect(fast.backend == .libsodium)
        #expect(reference.backend == .reference)
        #expect(try fast.key.isEqual(to: reference.key))
        let automatic = try Argon2id.derive(
            from: .password(pw), salt: salt, parameters: parameters, outputByteCount: 32, pepper: nil,
            associatedData: [], limits: .default, backend: .automatic)
        #expect(automatic.backend == .libsodium, "p = 1 must take the fast backend")
    }

    @Test func passwordAndItsBytesGiveTheSameKey() throws {
        let text = "pässwörd-ü"
        let a = try Argon2id.deriveKey(
            from: password(text), salt: salt, parameters: .init(memoryKiB: 64, iterations: 1))
        let b = try Argon2id.deriveKey(
            from: secureBytes(Array(text.utf8)), salt: salt, parameters: .init(memoryKiB: 64, iterations: 1))
        #expect(try a.isEqual(to: b))
        #expect(a.protection.contains(.guardPages))
    }

    /// Debian's `argon2` command-line tool is an independent front end to the
    /// reference code: our output must match it byte for byte.
    @Test(arguments: [(1, 64, 1, 32), (2, 1024, 1, 16), (3, 4096, 2, 64), (2, 2048, 4, 32)])
    func matchesTheArgon2CommandLineTool(t: Int, kib: Int, p: Int, length: Int) throws {
        let tool = "/usr/bin/argon2"
        try #require(FileManager.default.isExecutableFile(atPath: tool), "argon2 tool missing: make deps installs it")
        let process = try ChildProcess(
            executable: tool,
            arguments: [
                "0123456789abcdef", "-id", "-t", "\(t)", "-k", "\(kib)", "-p", "\(p)", "-l", "\(length)", "-r",
            ], standardInput: .pipe, standardOutput: .pipe)
        let input = try #require(process.standardInput)
        try input.write("tool test password")
        input.close()
        let printed = String(decoding: try #require(process.standardOutput).readToEnd(), as: UTF8.self)
        #expect(try process.wait() == .exited(0))
        let ours = try Argon2id.deriveKey(
            from: password("tool test password"), salt: salt,
            parameters: .init(memoryKiB: UInt32(kib), iterations: UInt32(t), parallelism: UInt32(p)),
            outputByteCount: length)
        #expect(try hex(ours) == printed.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test func badParametersAreTypedErrors() throws {
        let pw = try password("x")
        let limits = Argon2id.Limits(maxMemoryKiB: 1024, maxIterations: 8)
        let cases: [(Argon2id.Parameters, [UInt8], Int, SecureCoreError)] = [
            (.init(memoryKiB: 64, iterations: 0), salt, 32, .invalidIterations),
            (.init(memoryKiB: 64, iterations: 9), salt, 32, .invalidIterations),
            (.init(memoryKiB: 64, iterations: 1, parallelism: 0), salt, 32, .invalidParallelism),
            (.init(memoryKiB: 31, iterations: 1, parallelism: 4), salt, 32, .invalidMemory),
            (.init(memoryKiB: 64, iterations: 1), Array(salt.prefix(15)), 32, .saltTooShort(minimum: 16)),
            (.init(memoryKiB: 64, iterations: 1), salt, 15, .invalidOutputLength(15)),
            (.init(memoryKiB: 64, iterations: 1), salt, 65, .invalidOutputLength(65)),
            (.init(memoryKiB: 1025, iterations: 1), salt, 32, .memoryAboveCeiling),
            (.init(memoryKiB: .max, iterations: 1), salt, 32, .memoryAboveCeiling),
        ]
        // (That no memory is touched first is checked at the C level, where the
        // pool is not shared with tests running in parallel.)
        for (parameters, salt, length, expected) in cases {
            #expect(throws: expected) {
                try Argon2id.deriveKey(
                    from: pw, salt: salt, parameters: parameters, outputByteCount: length, limits: limits)
            }
        }
    }

    @Test func libsodiumCannotTakeAPepperAndSaysSo() throws {
        #expect(throws: SecureCoreError.unsupported) {
            try Argon2id.deriveKey(
                from: password("x"), salt: salt, parameters: .init(memoryKiB: 64, iterations: 1),
                pepper: SecureBytes.random(count: 16), backend: .libsodium)
        }
    }

    @Test func pepperChangesTheKey() throws {
        let pw = try password("1234")
        let p = Argon2id.Parameters(memoryKiB: 64, iterations: 1)
        let plain = try Argon2id.deriveKey(from: pw, salt: salt, parameters: p)
        let peppered = try Argon2id.deriveKey(
            from: pw, salt: salt, parameters: p, pepper: SecureBytes.random(count: 32))
        #expect(try !plain.isEqual(to: peppered))
    }

    @Test func asyncDerivationRunsOffTheCaller() async throws {
        let pw = try password("async")
        let p = Argon2id.Parameters(memoryKiB: 256, iterations: 1)
        let key = try await Argon2id.deriveKey(from: pw, salt: salt, parameters: p)
        let again = try await Argon2id.deriveKey(from: pw, salt: salt, parameters: p)
        #expect(try key.isEqual(to: again))
    }

    /// The derivation blocks on the pepper's lock, which this test holds: if the blocking part
    /// ran on Swift's cooperative pool, more blocked derivations than the pool has threads would
    /// leave no thread for any other task.
    @Test func blockedDerivationsLeaveTheCooperativePoolFree() async throws {
        let pepper = try SecureBytes.random(count: 32)
        let secret = try password("blocked")
        let salt = self.salt
        let p = Argon2id.Parameters(memoryKiB: 64, iterations: 1)
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holder = Thread {
            pepper.withUnsafeBytes { _ in
                holding.signal()
                release.wait()
            }
        }
        holder.start()
        holding.wait()
        let free = await CooperativePool.staysFree(whileBlocking: CooperativePool.oversubscribed) {
            _ = try? await Argon2id.deriveKey(from: secret, salt: salt, parameters: p, pepper: pepper)
        } release: {
            release.signal()
        }
        #expect(free, "a blocked derivation held a thread of the cooperative pool")
    }
}

@Suite("PBKDF2")
struct PBKDF2Tests {
    @Test func rfc7914Vector() throws {
        let key = try PBKDF2.deriveKey(
            from: password("passwd"), salt: Array("salt".utf8), iterations: 1, outputByteCount: 64)
        #expect(
            try hex(key)
                == "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"
                + "49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783")
    }

    @Test func badInput() throws {
        #expect(throws: SecureCoreError.invalidIterations) {
            try PBKDF2.deriveKey(from: password("p"), salt: [1], iterations: 0)
        }
        #expect(throws: SecureCoreError.saltTooShort(minimum: 1)) {
            try PBKDF2.deriveKey(from: password("p"), salt: [], iterations: 1)
        }
        #expect(throws: SecureCoreError.invalidOutputLength(8)) {
            try PBKDF2.deriveKey(from: password("p"), salt: [1], iterations: 1, outputByteCount: 8)
        }
    }
}
