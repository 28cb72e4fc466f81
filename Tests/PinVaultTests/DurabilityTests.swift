import DurableStorage
import SecureCore
import Synchronization
import TestSupport
import Testing

@testable import PinVault

#if canImport(Glibc)
    import Glibc
#endif

/// The real system calls, except that the directory fsync right after the
/// vault file is renamed into place fails (EIO) `failures` times once armed.
final class FailingDirectorySync: DurableFileSystem, @unchecked Sendable {
    private let state = Mutex((armed: false, pending: false, failuresLeft: 0, injected: 0))
    private let system = SystemFileSystem()

    func arm(failures: Int) { state.withLock { $0 = (true, false, failures, 0) } }
    var injected: Int { state.withLock { $0.injected } }

    func fsync(_ fd: Int32, isDirectory: Bool) -> Int32 {
        let fail = state.withLock { s -> Bool in
            guard isDirectory, s.pending, s.failuresLeft > 0 else { return false }
            s.failuresLeft -= 1
            s.injected += 1
            if s.failuresLeft == 0 { s.pending = false }
            return true
        }
        if fail {
            errno = EIO
            return -1
        }
        return system.fsync(fd, isDirectory: isDirectory)
    }

    func rename(_ from: String, _ to: String) -> Int32 {
        let result = system.rename(from, to)
        state.withLock { if $0.armed && result == 0 && to.hasSuffix("/vault") { $0.pending = true } }
        return result
    }
}

@Suite("Durability of a replaced file")
struct DurabilityTests {
    func vault(_ fileSystem: FailingDirectorySync) throws -> PinVault {
        var opts = options()
        opts.fileSystem = fileSystem
        let created = try PinVault.create(
            at: temporaryDirectory(), secret: secret("refresh-token-42"), pin: pin("1234"),
            parameters: testParameters, options: opts)
        return created
    }

    func opens(_ vault: PinVault, _ digits: String) -> Bool {
        (try? vault.unlock(pin: pin(digits)) { try text($0) }) == "refresh-token-42"
    }

    /// A directory fsync that fails once after the rename: the change is
    /// finished (the fsync is retried) and reported as done.
    @Test func aTransientDirectorySyncFailureIsFinished() throws {
        let fileSystem = FailingDirectorySync()
        let vault = try vault(fileSystem)
        fileSystem.arm(failures: 1)
        try vault.changePIN(old: pin("1234"), new: pin("5678"))
        #expect(fileSystem.injected == 1)
        #expect(opens(vault, "5678"))
        #expect(!opens(vault, "1234"))
    }

    /// A directory fsync that keeps failing: the change is rolled back, and
    /// what the caller is told (failed) is what the directory holds: the old
    /// PIN opens, the new one does not.
    @Test func aPersistentDirectorySyncFailureIsRolledBack() throws {
        let fileSystem = FailingDirectorySync()
        let vault = try vault(fileSystem)
        fileSystem.arm(failures: 1000)
        #expect(throws: VaultError.self) { try vault.changePIN(old: pin("1234"), new: pin("5678")) }
        #expect(fileSystem.injected > 0)
        fileSystem.arm(failures: 0)
        #expect(opens(vault, "1234"), "the change was reported as failed, so the old PIN must still open")
        #expect(!opens(vault, "5678"), "the change was reported as failed, yet the new PIN opens")
    }
}
