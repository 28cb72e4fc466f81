import Dispatch
import Foundation
import SecureCore
import Synchronization
import TestSupport
import Testing

@testable import PinVault

#if canImport(Glibc)
    import Glibc
#endif

/// Counts how many threads are inside a critical section at once.
final class Occupancy: @unchecked Sendable {
    private let state = Mutex((current: 0, maximum: 0, entries: 0))
    func inside(for microseconds: UInt32) {
        state.withLock {
            $0.current += 1
            $0.entries += 1
            $0.maximum = max($0.maximum, $0.current)
        }
        usleep(microseconds)
        state.withLock { $0.current -= 1 }
    }
    var maximum: Int { state.withLock { $0.maximum } }
    var entries: Int { state.withLock { $0.entries } }
}

@Suite("Vault lock", .serialized)
struct LockTests {
    /// A destroy unlinks the lock file while holding it. A waiter blocked on
    /// the old lock file and a newcomer that comes after the destroy must not
    /// both be inside at once.
    @Test func aWaiterAndANewcomerAfterADestroyNeverHoldTheLockTogether() throws {
        for round in 0..<3 {
            let vault = try makeVault()
            let directory = vault.directory
            let occupancy = Occupancy()
            let destroyerHolds = DispatchSemaphore(value: 0)
            let releaseDestroyer = DispatchSemaphore(value: 0)
            let destroyed = DispatchSemaphore(value: 0)
            let group = DispatchGroup()
            DispatchQueue.global().async(group: group) {
                try? directory.locked { () throws(VaultError) in
                    destroyerHolds.signal()
                    releaseDestroyer.wait()
                    try directory.removeAll()
                }
                destroyed.signal()
            }
            destroyerHolds.wait()
            DispatchQueue.global().async(group: group) {  // the waiter
                try? directory.locked { () throws(VaultError) in occupancy.inside(for: 300_000) }
            }
            usleep(150_000)  // the waiter is now blocked in flock on the old lock file
            DispatchQueue.global().async(group: group) {  // the newcomer: a create after the destroy
                destroyed.wait()
                try? directory.lockedCreatingDirectory { () throws(VaultError) in occupancy.inside(for: 300_000) }
            }
            releaseDestroyer.signal()
            group.wait()
            #expect(occupancy.entries >= 1, "round \(round): nobody got the lock after the destroy")
            #expect(occupancy.maximum == 1, "round \(round): two holders of the vault lock at once")
            _ = try? directory.locked { () throws(VaultError) in try directory.removeAll() }
        }
    }

    /// Two creates racing after a destroy: exactly one vault, which opens.
    @Test func createsAfterADestroyDoNotInterleave() throws {
        let vault = try makeVault()
        let path = vault.directory.path
        try vault.destroy()
        let results = Mutex<[Bool]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { i in
            let created =
                (try? PinVault.create(
                    at: path, secret: secret("s\(i)"), pin: pin("1234"), parameters: testParameters, options: options()))
                != nil
            results.withLock { $0.append(created) }
        }
        #expect(results.withLock { $0.filter { $0 }.count } == 1)
        let opened = try PinVault(directory: path, options: options()).unlock(pin: pin("1234")) { try text($0) }
        #expect(opened.hasPrefix("s"))
    }
}
