import DurableStorage
import Foundation
import SecureCore
import Synchronization
import TestSupport
import Testing

@testable import PinVault

#if canImport(Glibc)
    import Glibc
#endif

/// The real system calls, except that once armed, the first rename of the failure record after
/// the vault file was renamed into place fails (EIO): the state a crash leaves between the two.
final class FailingRecordAfterVault: DurableFileSystem, @unchecked Sendable {
    private let state = Mutex((armed: false, vaultReplaced: false, injected: 0))
    private let system = SystemFileSystem()

    func arm() { state.withLock { $0 = (true, false, 0) } }
    var injected: Int { state.withLock { $0.injected } }

    func rename(_ from: String, _ to: String) -> Int32 {
        let fail = state.withLock { s -> Bool in
            guard s.armed else { return false }
            if s.vaultReplaced && to.hasSuffix("/\(VaultDirectory.recordName)") {
                s.armed = false
                s.injected += 1
                return true
            }
            return false
        }
        if fail {
            errno = EIO
            return -1
        }
        let result = system.rename(from, to)
        state.withLock {
            if $0.armed && result == 0 && to.hasSuffix("/\(VaultDirectory.vaultName)") { $0.vaultReplaced = true }
        }
        return result
    }
}

@Suite("A pepper added to a vault (vault migrate-store): crash-safe, the old files made useless")
struct PepperTests {
    func opens(_ vault: PinVault, _ digits: String = "1234") -> Bool {
        (try? vault.unlock(pin: pin(digits)) { try text($0) }) == "refresh-token-42"
    }

    @Test func addPepperMovesTheSlotUnderThePepper() throws {
        let vault = try makeVault()
        let id = try vault.identifier()
        #expect(id.count == 32 && id.allSatisfy(\.isHexDigit))
        #expect(try vault.requiresPepper() == false)
        let before = try #require(fileBytes(vault, VaultDirectory.vaultName))
        let pepper = try SecureBytes.random(count: 32)
        defer { pepper.destroy() }
        try vault.addPepper(pepper, pin: pin("1234"))

        #expect(try vault.requiresPepper())
        #expect(try vault.identifier() == id)
        #expect(throws: VaultError.pepperRequired) { try vault.unlock(pin: pin("1234")) { _ in } }
        let peppered = PinVault(directory: vault.directory.path, options: options(pepper: pepper))
        #expect(opens(peppered))
        #expect(try peppered.status().failures == 0)
        // The old half is destroyed in place: the unpeppered file, put back, no longer opens.
        let file = try peppered.loadFile()
        #expect(try vault.directory.keyFile.isDestroyed(1 - file.keyHalf))
        try vault.directory.writeFile(VaultDirectory.vaultName, before)
        #expect(throws: VaultError.self) { try vault.unlock(pin: pin("1234")) { _ in } }
        #expect(!opens(peppered))
    }

    @Test func aWrongPINIsCountedAndChangesNothing() throws {
        let vault = try makeVault()
        let pepper = try SecureBytes.random(count: 32)
        defer { pepper.destroy() }
        #expect(throws: VaultError.wrongPIN(remainingAttempts: 19)) { try vault.addPepper(pepper, pin: pin("9999")) }
        #expect(try vault.requiresPepper() == false)
        #expect(try vault.status().failures == 1)
        #expect(opens(vault))
    }

    @Test func aPepperedOrBoundVaultIsRefused() throws {
        let pepper = try SecureBytes.random(count: 32)
        defer { pepper.destroy() }
        let vault = try makeVault()
        try vault.addPepper(pepper, pin: pin("1234"))
        #expect(throws: VaultError.pepperRequired) { try vault.addPepper(pepper, pin: pin("1234")) }
        let short = try SecureBytes.random(count: 16)
        defer { short.destroy() }
        #expect(throws: VaultError.pepperNotSupported(reason: "a pepper is 32 bytes")) {
            try makeVault().addPepper(short, pin: pin("1234"))
        }
    }

    /// The record rewrite fails after the peppered file is in place (a crash there leaves the
    /// same directory): the pepper's holder opens it, the record is rewritten under the pepper
    /// and the old half destroyed; without the pepper it does not open; and once the old half
    /// is gone, an unpeppered record is refused again.
    @Test func theStateBetweenTheFileAndTheRecordIsFinished() throws {
        let fileSystem = FailingRecordAfterVault()
        var opts = options()
        opts.fileSystem = fileSystem
        let vault = try PinVault.create(
            at: temporaryDirectory(), secret: secret("refresh-token-42"), pin: pin("1234"),
            parameters: testParameters, options: opts)
        let pepper = try SecureBytes.random(count: 32)
        defer { pepper.destroy() }
        fileSystem.arm()
        #expect(throws: VaultError.self) { try vault.addPepper(pepper, pin: pin("1234")) }
        #expect(fileSystem.injected == 1)
        #expect(try vault.requiresPepper())
        let file = try vault.loadFile()
        #expect(try vault.directory.keyFile.isDestroyed(1 - file.keyHalf) == false)
        #expect(throws: VaultError.pepperRequired) { try vault.unlock(pin: pin("1234")) { _ in } }

        let peppered = PinVault(directory: vault.directory.path, options: options(pepper: pepper))
        #expect(try peppered.status().failures == 0)
        #expect(opens(peppered))
        #expect(try vault.directory.keyFile.isDestroyed(1 - file.keyHalf))

        // An unpeppered record written now is not accepted: the window is closed.
        let base = try vault.directory.keyFile.recordKey()
        defer { base.destroy() }
        let unpeppered = try HMACSHA256.deriveKey(label: KeyFile.recordLabel, from: [base])
        defer { unpeppered.destroy() }
        let forged = try FailureRecord.fresh(vaultID: file.vaultID, clock: TestClock()).encode(key: unpeppered)
        try vault.directory.writeFile(VaultDirectory.recordName, forged)
        #expect(throws: VaultError.self) { try peppered.status() }
    }
}
