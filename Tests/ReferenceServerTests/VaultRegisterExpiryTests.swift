import Foundation
import SecureCore
import Testing

@testable import ReferenceServer

@Suite("The vault binding's pending registrations expire")
struct VaultRegisterExpiryTests {
    /// Rows of `oprf_vault` and of its audit, in the store's own tables.
    static func rows(_ store: OPRFVaultStore) throws -> (vaults: Int64, audit: Int64) {
        let counted = store.tables.transaction { (tx) throws(OPRFVaultStore.Refusal) -> (Int64, Int64) in
            let vaults = try tx.query("SELECT count(*) FROM oprf_vault").first?.first?.int64 ?? -1
            let audit = try tx.query("SELECT count(*) FROM oprf_vault_audit").first?.first?.int64 ?? -1
            return (vaults, audit)
        }
        return try counted.get()
    }

    @Test(
        "a register flood leaves at most the last ten minutes of pending rows, audit rows included",
        arguments: StoreBackend.available)
    func registerFloodIsBounded(_ backend: StoreBackend) throws {
        let s = try InProcessServer(backend: backend)
        defer { s.server.stop() }
        let store = try #require(s.server.vaults?.store)
        let start = Date()
        func register(at offset: TimeInterval) throws {
            _ = try store.register(
                vaultId: try SecureRandom.bytes(count: 16), challenge: try SecureRandom.bytes(count: 16),
                maxFailures: 5, now: start.addingTimeInterval(offset)
            )
        }
        // A flood of 300 registrations that never enrol, over five minutes.
        for index in 0..<300 { try register(at: Double(index)) }
        #expect(try Self.rows(store).vaults == 300)
        // Eleven minutes after the first: its first minute is forgotten, with its audit rows.
        try register(at: OPRFVaultStore.pendingLifetime + 60)
        let after = try Self.rows(store)
        #expect(after.vaults == 300 - 60 + 1)
        #expect(after.audit == after.vaults)
        // Long after: only the newest is left.
        try register(at: 10 * OPRFVaultStore.pendingLifetime)
        #expect(try Self.rows(store).vaults == 1)
    }
}
