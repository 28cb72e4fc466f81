import PinVault
import PinVaultTPM
import SecureCore
import TestSupport

// spc-test-helper: a small process that the process-level tests drive.
//
//   spc-test-helper dump SEED [--no-secretmem]
//       Enters a 16-character marker password derived from SEED through the
//       public API and stops at three moments (entered; after copyToImmutable
//       and a reveal; after destroy), printing "phase N" and waiting for a
//       line on stdin, so the test can read this process's memory. It also
//       keeps a control marker in an ordinary array, which the scan must find.
//   spc-test-helper vault-unlock DIR      (PIN on standard input)
//   spc-test-helper vault-change DIR      (old and new PIN on standard input, one per line)
//       Vault operations for the crash and concurrency harnesses: every
//       step is printed ("event failureRecorded 3", ...) as it happens.
//       Exit 0 success, 1 wrong PIN, 3 throttled or locked, 2 other errors.
//   spc-test-helper many COUNT
//       Creates COUNT live 8-character passwords, checks each one, and prints
//       "created=N ok=N locked=L unlocked=U locked_bytes=B".
//
// The marker's characters are computed here at run time from SEED; the
// marker never appears as a literal in any binary.
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

func say(_ line: String) {
    print(line)
    fflush(nil)
}

func waitForTest() {
    _ = readLine()
}

func dump(seed: UInt64) throws {
    let password = try MutablePassword()
    for i in 0..<16 { try password.addCharacter(markerScalar(seed: seed, index: i)) }
    // Positive control: the same kind of marker (from seed+1) in a plain
    // array, which the scanner must find to prove it reads this memory.
    var control = [UInt8](repeating: 0, count: 16)
    for i in 0..<16 { control[i] = UInt8(markerScalar(seed: seed &+ 1, index: i)) }
    say("phase 1 protection=\(password.protection.rawValue)")
    waitForTest()

    let immutable = try password.copyToImmutable()
    let revealedCount = immutable.withUnsafeUTF8Bytes { bytes in bytes.count }
    say("phase 2 revealed=\(revealedCount)")
    waitForTest()

    password.destroy()
    immutable.destroy()
    say("phase 3 destroyed")
    waitForTest()
    withExtendedLifetime(control) {}
}

func many(count: Int) throws {
    var passwords: [MutablePassword] = []
    let reference = try MutablePassword()
    for digit in "13572468".unicodeScalars { try reference.addCharacter(digit) }
    var ok = 0
    var locked = 0
    for _ in 0..<count {
        let pw = try MutablePassword()
        for digit in "13572468".unicodeScalars { try pw.addCharacter(digit) }
        if try pw.isEqual(to: reference) { ok += 1 }
        if pw.protection.contains(.locked) { locked += 1 }
        passwords.append(pw)
    }
    let stats = try SecureMemory.statistics()
    say(
        "created=\(passwords.count) ok=\(ok) locked=\(locked) unlocked=\(passwords.count - locked) locked_bytes=\(stats.lockedBytes)"
    )
}

/// Reads one line of standard input into a password, digit by digit.
func readPIN() throws -> Password {
    let pin = try MutablePassword()
    defer { pin.destroy() }
    var byte: UInt8 = 0
    while read(0, &byte, 1) == 1 && byte != 0x0A { try pin.addCharacter(UInt32(byte)) }
    byte = 0
    return try pin.copyToImmutable()
}

/// The vault options; with `SPC_TPM_TCTI` set, the TPM there serves a TPM-bound vault.
func vaultOptions() -> PinVault.Options {
    var options = PinVault.Options(floor: .init(memoryKiB: 8, iterations: 1)) { event in
        switch event {
        case .failureRecorded(let n): say("event failureRecorded \(n)")
        case .derivingKey: say("event derivingKey")
        case .unlocked: say("event unlocked")
        case .pinChangeNewSlotWritten: say("event newSlotWritten")
        case .pinChangeOldSlotRemoved: say("event oldSlotRemoved")
        }
    }
    if let tcti = getenv("SPC_TPM_TCTI") { options.tpm = SoftwareStackTPM(tcti: String(cString: tcti)) }
    return options
}

func vaultCommand(_ command: String, directory: String) -> Int32 {
    let vault = PinVault(directory: directory, options: vaultOptions())
    do {
        if command == "vault-unlock" {
            let pin = try readPIN()
            try vault.unlock(pin: pin) { _ in }
        } else {
            let old = try readPIN()
            let new = try readPIN()
            try vault.changePIN(old: old, new: new)
        }
        say("done")
        return 0
    } catch VaultError.wrongPIN {
        say("wrong")
        return 1
    } catch VaultError.throttled, VaultError.locked {
        return 3
    } catch {
        say("error: \(error)")
        return 2
    }
}

let args = CommandLine.arguments
do {
    if args.contains("--no-secretmem") { try SecureMemory.setSecretMemoryEnabled(false) }
    switch args.count > 1 ? args[1] : "" {
    case "dump" where args.count > 2:
        guard let seed = UInt64(args[2]) else { throw SecureCoreError.invalidSize(0) }
        try dump(seed: seed)
    case "vault-unlock" where args.count > 2, "vault-change" where args.count > 2:
        exit(vaultCommand(args[1], directory: args[2]))
    case "many" where args.count > 2:
        try many(count: Int(args[2]) ?? 0)
    default:
        say("usage: spc-test-helper dump SEED [--no-secretmem] | many COUNT")
        exit(2)
    }
} catch {
    say("error: \(error)")
    exit(1)
}
