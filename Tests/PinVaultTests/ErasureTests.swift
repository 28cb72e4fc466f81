import Foundation
import SecureCore
import Spawn
import TestSupport
import Testing

@testable import PinVault

#if canImport(Glibc)
    import Glibc
#endif

/// Runs a command found on PATH; returns its exit status and output.
@discardableResult
func runTool(_ arguments: [String]) throws -> (status: Int32, output: String) {
    let finished = try ChildProcess.run(
        "/usr/bin/env", arguments, standardInput: .inherit, standardError: .standardOutput)
    // A signal counts as a failure (never 0), as it did with Foundation's status.
    let status = finished.termination.exitStatus ?? 128 + (finished.termination.signal ?? 0)
    return (status, String(decoding: finished.output, as: UTF8.self))
}

/// A fresh ext4 file system in an image file, loop-mounted. `nil` (with the
/// reason printed) when not root or when loop devices are unavailable.
final class Ext4Image {
    let base: String
    let image: String
    let mountPoint: String
    private(set) var mounted = false

    init?(megabytes: Int = 16) throws {
        guard geteuid() == 0 else {
            print("skipped: the ext4 erasure tests need root (mount -o loop)")
            return nil
        }
        base = temporaryDirectory()
        image = base + "/fs.img"
        mountPoint = base + "/mnt"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: image, contents: nil))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: image))
        try handle.truncate(atOffset: UInt64(megabytes) << 20)
        try handle.close()
        let mkfs = try runTool(["mkfs.ext4", "-q", "-F", image])
        guard mkfs.status == 0 else {
            print("skipped: mkfs.ext4 is unavailable: \(mkfs.output)")
            try? FileManager.default.removeItem(atPath: base)
            return nil
        }
        do {
            try mount()
        } catch {
            print("skipped: loop devices are unavailable: \(error)")
            try? FileManager.default.removeItem(atPath: base)
            return nil
        }
    }

    struct ToolFailure: Error, CustomStringConvertible {
        let description: String
    }

    func mount(readOnly: Bool = false) throws {
        let result = try runTool(["mount", "-o", readOnly ? "loop,ro" : "loop", image, mountPoint])
        guard result.status == 0 else { throw ToolFailure(description: "mount: \(result.output)") }
        mounted = true
    }

    /// Unmounts, so that every write has reached the image file.
    func unmount() throws {
        guard mounted else { return }
        let result = try runTool(["umount", mountPoint])
        guard result.status == 0 else { throw ToolFailure(description: "umount: \(result.output)") }
        mounted = false
        detach()
    }

    /// Detaches any loop device still bound to the image (mount -o loop normally does it on unmount).
    func detach() {
        guard let listing = try? runTool(["losetup", "-j", image]) else { return }
        for line in listing.output.split(separator: "\n") {
            if let device = line.split(separator: ":").first { _ = try? runTool(["losetup", "-d", String(device)]) }
        }
    }

    /// Always: unmount, detach, remove the files (the tests' trap).
    func cleanUp() {
        if mounted { _ = try? runTool(["umount", "-l", mountPoint]) }
        detach()
        try? FileManager.default.removeItem(atPath: base)
    }

    func raw() throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: image))) }
}

/// Every offset of `needle` in `haystack`.
func occurrences(of needle: [UInt8], in haystack: [UInt8]) -> [Int] {
    guard let first = needle.first, haystack.count >= needle.count else { return [] }
    var found: [Int] = []
    var i = 0
    while i <= haystack.count - needle.count {
        if haystack[i] == first && Array(haystack[i..<i + needle.count]) == needle { found.append(i) }
        i += 1
    }
    return found
}

/// What an attacker carves from a raw image: every vault file (found by its
/// magic, its length read from its own header) and every key file.
struct Carved {
    var vaults: [[UInt8]] = []
    var keyFiles: [[UInt8]] = []

    init(_ raw: [UInt8]) {
        for offset in occurrences(of: VaultFile.magic, in: raw) {
            let slotsAt = offset + VaultFile.fixedHeaderSize - 1
            guard slotsAt < raw.count else { continue }
            let n = Int(raw[slotsAt])
            let lengthAt = offset + VaultFile.fixedHeaderSize + n * VaultFile.slotSize + 1 + VaultFile.nonceSize
            guard (1...VaultFile.maxSlots).contains(n), lengthAt + 4 <= raw.count else { continue }
            let length = raw[lengthAt..<lengthAt + 4].reduce(0) { $0 << 8 | Int($1) }
            let end = lengthAt + 4 + length + VaultFile.macSize + VaultFile.checksumSize
            guard length <= VaultFile.maxSecretSize + 16, end <= raw.count else { continue }
            vaults.append(Array(raw[offset..<end]))
        }
        for offset in occurrences(of: KeyFile.magic, in: raw) where offset + KeyFile.size <= raw.count {
            keyFiles.append(Array(raw[offset..<offset + KeyFile.size]))
        }
    }
}

/// An offline attacker with the right PIN: every carved vault file against
/// every carved key file (both halves), ignoring the MAC and the counter.
/// Returns the secrets that opened, and the data keys behind them.
func offlineOpen(_ carved: Carved, pin digits: String) throws -> [(secret: String, dataKey: [UInt8])] {
    let attacker = PinVault(directory: temporaryDirectory(), options: options())
    var opened: [(String, [UInt8])] = []
    for bytes in carved.vaults {
        guard let (file, _) = try? VaultFile.decode(bytes, floor: testFloor, limits: .default) else { continue }
        for keyFile in carved.keyFiles {
            for halfIndex: UInt8 in [0, 1] {
                let offset = KeyFile.halfOffset(halfIndex)
                let half = try Array(keyFile[offset..<offset + KeyFile.partSize]).withUnsafeBytes {
                    try SecureBytes(copying: $0)
                }
                for slot in file.slots where slot.type == .pin {
                    guard let dataKey = try? attacker.openPINSlot(slot, pin: pin(digits), file: file, half: half),
                        let secret = try? attacker.openPayload(file, dataKey: dataKey)
                    else { continue }
                    opened.append((try text(secret), dataKey.withUnsafeBytes { Array($0) }))
                }
            }
        }
    }
    return opened
}

/// The key file's bytes as the test saw them before destruction (test-only copy).
func keyFileBytes(_ vault: PinVault) -> [UInt8] { fileBytes(vault, KeyFile.name) ?? [] }

@Suite("Erasure on a real ext4 file system", .serialized)
struct ErasureTests {
    static let marker = "MARKER-7f3c9e1a-erasure-secret"

    /// Creates a vault on the image, leaves a deleted copy of its file in the
    /// free blocks (what an earlier rename or a user's `cp` leaves), unmounts
    /// and checks the attacker's carving opens it: the positive control.
    /// Returns the vault and the copies of its file carved now, which an
    /// attacker may have kept (a backup, an earlier image).
    func prepare(_ fs: Ext4Image, policy: ThrottlePolicy, pin digits: String) throws -> (PinVault, [[UInt8]]) {
        let vault = try PinVault.create(
            at: fs.mountPoint + "/vault", secret: secret(Self.marker), pin: pin(digits), policy: policy,
            parameters: testParameters, options: options())
        let stale = fs.mountPoint + "/stale-copy"
        try FileManager.default.copyItem(atPath: vault.directory.file("vault"), toPath: stale)
        sync()
        try FileManager.default.removeItem(atPath: stale)
        try fs.unmount()
        let carved = Carved(try fs.raw())
        #expect(carved.vaults.count >= 2, "the vault file and its deleted copy are carved")
        #expect(
            try offlineOpen(carved, pin: digits).contains { $0.secret == Self.marker },
            "control: before destruction, carving plus the right PIN opens the vault")
        try fs.mount()
        return (vault, carved.vaults)
    }

    /// After destruction: no copy of the vault file — those carved now, and
    /// those carved before destruction — opens with the right PIN under any
    /// key file carved now; the destroyed key bytes are nowhere in the image,
    /// and the secret never was.
    func expectUnrecoverable(
        _ fs: Ext4Image, earlierCopies: [[UInt8]], pins: [String], destroyedKeyParts: [[UInt8]],
        file: String = #fileID, line: Int = #line
    ) throws {
        try fs.unmount()
        let raw = try fs.raw()
        var carved = Carved(raw)
        print(
            "erasure: \(carved.vaults.count) vault file copies left in the image, \(earlierCopies.count) kept from before"
        )
        carved.vaults += earlierCopies
        let location = SourceLocation(fileID: file, filePath: file, line: line, column: 1)
        #expect(!earlierCopies.isEmpty, "no copy to try: the test proves nothing", sourceLocation: location)
        for digits in pins {
            #expect(
                try offlineOpen(carved, pin: digits).isEmpty, "PIN \(digits) opens a carved copy",
                sourceLocation: location)
        }
        for part in destroyedKeyParts {
            #expect(
                occurrences(of: part, in: raw).isEmpty, "destroyed key bytes found in the image",
                sourceLocation: location)
        }
        #expect(occurrences(of: Array(Self.marker.utf8), in: raw).isEmpty, "plaintext secret in the image")
    }

    /// The key file's three parts, as they were.
    func keyParts(_ vault: PinVault) -> [[UInt8]] {
        let bytes = keyFileBytes(vault)
        return (0..<3).map { i in
            Array(
                bytes[
                    KeyFile.recordKeyOffset + i * KeyFile.partSize..<KeyFile.recordKeyOffset + (i + 1)
                        * KeyFile.partSize])
        }.filter { $0.contains { $0 != 0 } }
    }

    @Test func wrongPINWipeLeavesNothingThatOpens() throws {
        guard let fs = try Ext4Image() else { return }
        defer { fs.cleanUp() }
        let (vault, copies) = try prepare(fs, policy: .wipe(maxFailures: 3), pin: "2580")
        let parts = keyParts(vault)
        for _ in 0..<2 { #expect(throws: VaultError.self) { try vault.unlock(pin: pin("0000")) { _ in } } }
        #expect(throws: VaultError.wiped) { try vault.unlock(pin: pin("0000")) { _ in } }
        try expectUnrecoverable(fs, earlierCopies: copies, pins: ["2580"], destroyedKeyParts: parts)
    }

    @Test func destroyLeavesNothingThatOpens() throws {
        guard let fs = try Ext4Image() else { return }
        defer { fs.cleanUp() }
        let (vault, copies) = try prepare(fs, policy: .soft(), pin: "2580")
        let parts = keyParts(vault)
        try vault.destroy()
        try expectUnrecoverable(fs, earlierCopies: copies, pins: ["2580"], destroyedKeyParts: parts)
    }

    @Test func changePINLeavesNoOldSlotOrDataKeyThatOpens() throws {
        guard let fs = try Ext4Image() else { return }
        defer { fs.cleanUp() }
        let (vault, copies) = try prepare(fs, policy: .soft(), pin: "1111")
        let oldHalf = keyParts(vault)[1]
        try fs.unmount()
        let oldDataKeys = Set(try offlineOpen(Carved(try fs.raw()), pin: "1111").map(\.dataKey))
        try fs.mount()
        try vault.changePIN(old: pin("1111"), new: pin("2222"))
        #expect(try vault.unlock(pin: pin("2222")) { try text($0) } == Self.marker)
        try expectUnrecoverable(fs, earlierCopies: copies, pins: ["1111"], destroyedKeyParts: [oldHalf])
        // Control: the current copy still carves and opens with the new PIN, under a new data key.
        let now = try offlineOpen(Carved(try fs.raw()), pin: "2222")
        #expect(now.contains { $0.secret == Self.marker })
        #expect(!oldDataKeys.isEmpty && now.allSatisfy { !oldDataKeys.contains($0.dataKey) }, "the data key changed")
    }
}

@Suite("Read-only file system", .serialized)
struct ReadOnlyTests {
    /// `status` works on a read-only file system (the lock file used to be
    /// opened with O_CREAT for writing, which failed with EROFS); an unlock
    /// is refused before any key derivation, since its failure cannot be recorded.
    @Test func statusWorksReadOnlyAndAnUnlockIsRefused() throws {
        guard let fs = try Ext4Image() else { return }
        defer { fs.cleanUp() }
        let clock = TestClock()
        let log = EventLog()
        let path = fs.mountPoint + "/vault"
        let vault = try PinVault.create(
            at: path, secret: secret("s"), pin: pin("2580"), parameters: testParameters,
            options: options(clock: clock, log: log))
        for _ in 0..<5 { #expect(throws: VaultError.self) { try vault.unlock(pin: pin("0000")) { _ in } } }
        try fs.unmount()
        try fs.mount(readOnly: true)
        let status = try vault.status()
        #expect(status.failures == 5 && status.state == .throttled && status.retryAfterSeconds == 60)
        clock.reboot()
        #expect(try vault.status().retryAfterSeconds == 60, "the re-stamp after a reboot is reported, not written")
        clock.advance(seconds: 60)
        log.clear()
        #expect(throws: VaultError.self) { try vault.unlock(pin: pin("2580")) { _ in } }
        #expect(!log.all.contains(.derivingKey), "no key derivation without a recorded attempt")
    }
}
