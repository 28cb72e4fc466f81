import Foundation
import SecureCore
import Synchronization
import TestSupport

@testable import PinVault

/// A clock the test moves by hand.
final class TestClock: VaultClock, @unchecked Sendable {
    private let state = Mutex(
        (boot: [UInt8](repeating: 7, count: 16), ns: UInt64(1_000_000_000), wall: UInt64(1_800_000_000)))
    func bootID() -> [UInt8] { state.withLock { $0.boot } }
    func nanosecondsSinceBoot() -> UInt64 { state.withLock { $0.ns } }
    func wallSeconds() -> UInt64 { state.withLock { $0.wall } }
    func advance(seconds: UInt64) {
        state.withLock {
            $0.ns += seconds * 1_000_000_000
            $0.wall += seconds
        }
    }
    /// Moves only the boot-time clock, as `unshare --time --boottime N` does
    /// for the processes in the new time namespace; the wall clock stays.
    func shiftBootClock(seconds: Int64) {
        state.withLock {
            $0.ns = UInt64(Int64($0.ns) + seconds * 1_000_000_000)
        }
    }
    /// Moves only the wall clock (someone set the time).
    func shiftWallClock(seconds: Int64) {
        state.withLock { $0.wall = UInt64(Int64($0.wall) + seconds) }
    }
    func reboot() {
        state.withLock {
            $0.boot = $0.boot.map { $0 &+ 1 }
            $0.ns = 5_000_000_000
        }
    }
}

/// Collects observer events.
final class EventLog: @unchecked Sendable {
    private let events = Mutex<[VaultEvent]>([])
    func record(_ e: VaultEvent) { events.withLock { $0.append(e) } }
    var all: [VaultEvent] { events.withLock { $0 } }
    func clear() { events.withLock { $0.removeAll() } }
}

/// Cheap parameters and a matching floor, so tests run fast.
let testParameters = Argon2id.Parameters(memoryKiB: 64, iterations: 1)
let testFloor = Argon2id.Parameters(memoryKiB: 8, iterations: 1)

func temporaryDirectory() -> String {
    let base = FileManager.default.temporaryDirectory.appendingPathComponent("spc-vault-\(UUID().uuidString)")
    return base.path
}

func options(
    clock: TestClock = TestClock(), log: EventLog? = nil, pepper: SecureBytes? = nil,
    authenticator: (any BiometricAuthenticator)? = nil,
    biometric: BiometricConfiguration = BiometricConfiguration()
) -> PinVault.Options {
    var observer: (@Sendable (VaultEvent) -> Void)?
    if let log { observer = { log.record($0) } }
    return PinVault.Options(
        floor: testFloor, clock: clock, pepper: pepper, biometricConfiguration: biometric,
        authenticator: authenticator, observer: observer)
}

func makeVault(
    policy: ThrottlePolicy = .soft(), options: PinVault.Options = options(), pinDigits: String = "1234"
) throws -> PinVault {
    try PinVault.create(
        at: temporaryDirectory(), secret: secret("refresh-token-42"), pin: pin(pinDigits), policy: policy,
        parameters: testParameters, options: options)
}

func fileBytes(_ vault: PinVault, _ name: String) -> [UInt8]? {
    FileManager.default.contents(atPath: vault.directory.file(name)).map { Array($0) }
}
