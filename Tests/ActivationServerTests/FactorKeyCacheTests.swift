import Activation
import ActivationTestSupport
import Dispatch
import Foundation
import PowerAuthProtocol
import SecureCore
import Synchronization
import Testing

@testable import ActivationServer

@Suite("Factor key cache")
struct FactorKeyCacheTests {
    /// Five random 16-byte keys.
    static func randomKeys() throws -> FactorKeys {
        let crypto = try ActivationCrypto()
        let master = try SecureBytes.random(count: 16)
        defer { master.destroy() }
        return try crypto.factorKeys(masterSecret: master)
    }

    static func record(_ id: String) throws -> ActivationRecord {
        let pair = KeyPair(
            privateKey: try SecureBytes.random(count: 32), publicKey: [4] + (0..<64).map { _ in .random(in: 0...255) })
        return ActivationRecord(
            activationId: id, activationCode: "AAAAA-AAAAA-AAAAA-AAAAA", userId: "u", serverKeyPair: pair,
            counter: .random(), maxFailedAttempts: 5)
    }

    @Test("lookups lend the cache's keys, for the same keys only, until the lifetime ends")
    func lifetimeAndLending() throws {
        let cache = FactorKeyCache(lifetime: 60)
        let record = try Self.record("a")
        let device: [UInt8] = [4] + Array(repeating: 7, count: 64)
        let keys = try Self.randomKeys()
        let start = Date(timeIntervalSince1970: 1_000_000)
        try cache.put(keys, record: record, devicePublicKey: device, now: start)
        #expect(cache.count == 1)
        let lent = try #require(cache.get(record, devicePublicKey: device, now: start.addingTimeInterval(59)))
        #expect(lent.isLent && !keys.isLent)
        #expect(lent.possession !== keys.possession)  // the cache keeps a copy of what it was given
        #expect(try lent.possession.isEqual(to: keys.possession))
        #expect(try lent.vault.isEqual(to: keys.vault))
        lent.destroy()  // a borrower's destroy leaves the cache's keys alone
        let again = try #require(cache.get(record, devicePublicKey: device, now: start.addingTimeInterval(1)))
        #expect(again.possession === lent.possession)  // the same keys, not a copy per lookup
        #expect(try again.transport.isEqual(to: keys.transport))
        again.destroy()
        keys.destroy()  // and the caller's original does not touch the cache either
        #expect(cache.get(record, devicePublicKey: [4] + Array(repeating: 8, count: 64), now: start) == nil)
        #expect(cache.count == 0)  // a mismatch drops the entry
        try cache.put(try Self.randomKeys(), record: record, devicePublicKey: device, now: start)
        #expect(cache.get(record, devicePublicKey: device, now: start.addingTimeInterval(60)) == nil)
        #expect(cache.count == 0)
        try cache.put(try Self.randomKeys(), record: record, devicePublicKey: device, now: start)
        cache.sweep(now: start.addingTimeInterval(61))
        #expect(cache.count == 0)
    }

    @Test("keys dropped while lent stay whole for the borrower, and are wiped when it lets go")
    func droppedWhileLent() throws {
        let cache = FactorKeyCache(lifetime: 60)
        let record = try Self.record("a")
        let device: [UInt8] = [4] + Array(repeating: 5, count: 64)
        let start = Date(timeIntervalSince1970: 1_000_000)
        let keys = try Self.randomKeys()
        defer { keys.destroy() }
        try cache.put(keys, record: record, devicePublicKey: device, now: start)
        weak var held: SecureBytes?
        do {
            let lent = try #require(cache.get(record, devicePublicKey: device, now: start))
            held = lent.knowledge
            cache.remove("a")  // removal, replacement, expiry and the cache's end all drop
            #expect(cache.count == 0)
            lent.destroy()
            #expect(try lent.knowledge.isEqual(to: keys.knowledge))  // still whole for the request
            #expect(held != nil)
        }
        // The borrower let go: the dropped keys were deinitialised, and SecureBytes wipes in deinit.
        #expect(held == nil)
        // Not on loan: dropping deinitialises at once.
        try cache.put(keys, record: record, devicePublicKey: device, now: start)
        do {
            let lent = try #require(cache.get(record, devicePublicKey: device, now: start))
            held = lent.vault
        }
        #expect(held != nil)
        cache.remove("a")
        #expect(held == nil)
    }

    @Test("lookups racing replacement and removal get a whole set of keys or a miss, never an error")
    func lookupsRaceReplacementAndRemoval() throws {
        let cache = FactorKeyCache(lifetime: 60)
        let record = try Self.record("a")
        let device: [UInt8] = [4] + Array(repeating: 3, count: 64)
        let start = Date(timeIntervalSince1970: 1_000_000)
        try cache.put(try Self.randomKeys(), record: record, devicePublicKey: device, now: start)
        let changing = Atomic<Bool>(true)
        let failures = Atomic<Int>(0)
        let copies = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        // One thread keeps replacing and removing the entry (each drops the keys it had); its
        // last step puts keys back, so lookups after it find them.
        Thread {
            for round in 0..<400 {
                if round % 3 == 1 {
                    cache.remove("a")
                } else if (try? cache.put(try Self.randomKeys(), record: record, devicePublicKey: device, now: start))
                    == nil
                {
                    failures.add(1, ordering: .relaxed)
                }
            }
            changing.store(false, ordering: .releasing)
            done.signal()
        }.start()
        // Three threads look it up while it changes, and 100 times more after: each lookup is a
        // whole, readable set of keys, or nil.
        for _ in 0..<3 {
            Thread {
                var after = 0
                while after < 100 {
                    if !changing.load(ordering: .acquiring) { after += 1 }
                    do throws(SecureCoreError) {
                        if let keys = cache.get(record, devicePublicKey: device, now: start) {
                            let distinct = try !keys.knowledge.isEqual(to: keys.possession)
                            if keys.possession.count != 16 || keys.vault.count != 16 || !distinct {
                                failures.add(1, ordering: .relaxed)
                            }
                            keys.destroy()
                            copies.add(1, ordering: .relaxed)
                        }
                    } catch {
                        failures.add(1, ordering: .relaxed)
                    }
                }
                done.signal()
            }.start()
        }
        for _ in 0..<4 { done.wait() }
        #expect(failures.load(ordering: .relaxed) == 0)
        // The 100 lookups of each thread after the last put all find the keys.
        #expect(copies.load(ordering: .relaxed) >= 300)
    }

    @Test("capacity: the entry closest to its end goes; lifetime 0 keeps nothing; remove drops at once")
    func capacityOffAndRemove() throws {
        let cache = FactorKeyCache(lifetime: 60, capacity: 2, shards: 1)  // one shard: the rule is exact
        let device: [UInt8] = [4] + Array(repeating: 1, count: 64)
        let records = try ["a", "b", "c"].map { try Self.record($0) }
        let start = Date(timeIntervalSince1970: 1_000_000)
        for (i, record) in records.enumerated() {
            try cache.put(try Self.randomKeys(), record: record, devicePublicKey: device, now: start + Double(i))
        }
        #expect(cache.count == 2)
        #expect(cache.get(records[0], devicePublicKey: device, now: start + 3) == nil)
        try #require(cache.get(records[2], devicePublicKey: device, now: start + 3)).destroy()
        cache.remove("c")
        #expect(cache.get(records[2], devicePublicKey: device, now: start + 3) == nil)
        // Sharded (the default): never more than `capacity`, every shard holding its share.
        let sharded = FactorKeyCache(lifetime: 60, capacity: 32)
        let many = try (0..<100).map { try Self.record("s\($0)") }
        for (i, record) in many.enumerated() {
            try sharded.put(try Self.randomKeys(), record: record, devicePublicKey: device, now: start + Double(i))
        }
        #expect(sharded.count <= 32 && sharded.count >= 16)
        #expect(sharded.get(many[99], devicePublicKey: device, now: start + 100) != nil)  // the newest stays
        let off = FactorKeyCache(lifetime: 0)
        try off.put(try Self.randomKeys(), record: records[0], devicePublicKey: device, now: start)
        #expect(off.count == 0)
        #expect(off.get(records[0], devicePublicKey: device, now: start) == nil)
    }

    @Test("the server derives once, verifies from the cache, and forgets a removed activation")
    func serverUsesTheCache() async throws {
        let h = try Harness(maxFailedAttempts: 5)
        let service = try h.makeService()
        let id = try await h.activate(service)
        for _ in 0..<3 {
            let header = try await service.signRequest(
                method: "POST", uriIdentifier: "/r", body: [], authentication: .possessionWithPassword(try pin("1234")))
            _ = try h.server.verifyAuthorization(header: header.value, method: "POST", uriIdentifier: "/r", body: [])
        }
        #expect(h.server.factorKeyCache.count == 1)
        // A wrong PIN still fails and counts, with cached keys.
        let wrong = try await service.signRequest(
            method: "POST", uriIdentifier: "/r", body: [], authentication: .possessionWithPassword(try pin("0000")))
        #expect(throws: ActivationServerError.authenticationFailed) {
            try h.server.verifyAuthorization(header: wrong.value, method: "POST", uriIdentifier: "/r", body: [])
        }
        #expect(try h.server.activationDetail(id).failedAttempts == 1)
        try h.server.removeActivation(id)
        #expect(h.server.factorKeyCache.count == 0)
    }
}
