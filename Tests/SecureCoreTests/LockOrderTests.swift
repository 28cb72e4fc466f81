import Dispatch
import SecureCore
import Synchronization
import TestSupport
import Testing

/// Where two secret objects meet, both locks are taken in one global order
/// (security review M4): before, `a.isEqual(b)` racing `b.isEqual(a)` took the
/// locks in opposite orders and trapped ("Recursive call to lock Mutex") or
/// hung, and an object given twice (a key sealing itself, a secret used as its
/// own pepper) locked its own non-re-entrant lock twice.
@Suite("Lock order where two secrets meet")
struct LockOrderTests {
    static let rounds = 20_000

    /// Runs `work(0)` and `work(1)` on two threads at once, `rounds` times each,
    /// and returns how many calls completed.
    static func race(rounds: Int, _ work: @Sendable @escaping (Int) throws -> Void) -> Int {
        let done = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 2) { side in
            for _ in 0..<rounds {
                if (try? work(side)) != nil { done.add(1, ordering: .relaxed) }
            }
        }
        return done.load(ordering: .relaxed)
    }

    @Test func secureBytesCompareBothWays() throws {
        let a = try SecureBytes.random(count: 32)
        let b = try [UInt8](repeating: 7, count: 32).withUnsafeBytes { try SecureBytes(copying: $0) }
        let completed = Self.race(rounds: Self.rounds) { side in
            _ = side == 0 ? try a.isEqual(to: b) : try b.isEqual(to: a)
        }
        #expect(completed == 2 * Self.rounds)
        #expect(try !a.isEqual(to: b))
    }

    @Test func passwordsCompareBothWays() throws {
        let a = try Self.password("correct horse")
        let b = try Self.password("battery staple")
        let completed = Self.race(rounds: Self.rounds) { side in
            _ = side == 0 ? try a.isEqual(to: b) : try b.isEqual(to: a)
        }
        #expect(completed == 2 * Self.rounds)
    }

    @Test func sealEachWithTheOther() throws {
        let x = try SecureBytes.random(count: 32)
        let y = try SecureBytes.random(count: 32)
        let completed = Self.race(rounds: Self.rounds / 4) { side in
            _ = side == 0 ? try AEAD.seal(x, using: y) : try AEAD.seal(y, using: x)
        }
        #expect(completed == Self.rounds / 2)
    }

    @Test func keySealsItself() throws {
        let key = try SecureBytes.random(count: 32)
        let box = try AEAD.seal(key, using: key)
        let opened = try #require(try AEAD.open(box, using: key))
        #expect(try opened.isEqual(to: key))
    }

    @Test func deriveEachWithTheOtherAsPepper() throws {
        let x = try SecureBytes.random(count: 32)
        let y = try SecureBytes.random(count: 32)
        let salt = [UInt8](repeating: 1, count: 16)
        let parameters = Argon2id.Parameters(memoryKiB: 8, iterations: 1)
        let rounds = 300
        let completed = Self.race(rounds: rounds) { side in
            _ =
                side == 0
                ? try Argon2id.deriveKey(from: x, salt: salt, parameters: parameters, pepper: y)
                : try Argon2id.deriveKey(from: y, salt: salt, parameters: parameters, pepper: x)
        }
        #expect(completed == 2 * rounds)
    }

    @Test func secretIsItsOwnPepper() throws {
        let x = try [UInt8](repeating: 9, count: 32).withUnsafeBytes { try SecureBytes(copying: $0) }
        let copy = try [UInt8](repeating: 9, count: 32).withUnsafeBytes { try SecureBytes(copying: $0) }
        let salt = [UInt8](repeating: 1, count: 16)
        let parameters = Argon2id.Parameters(memoryKiB: 8, iterations: 1)
        let same = try Argon2id.deriveKey(from: x, salt: salt, parameters: parameters, pepper: x)
        let separate = try Argon2id.deriveKey(from: x, salt: salt, parameters: parameters, pepper: copy)
        #expect(try same.isEqual(to: separate))
    }

    static func password(_ text: StaticString) throws -> Password {
        let bytes = try SecureBytes(
            copying: UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
        defer { bytes.destroy() }
        return try Password(utf8: bytes)
    }
}
