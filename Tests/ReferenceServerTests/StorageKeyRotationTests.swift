import Activation
import ActivationHTTP
import ActivationServer
import Foundation
import PostgresStore
import PowerAuthProtocol
import SQLiteStore
import SecureCore
import TestSupport
import Testing
import VaultOPRFProtocol

@testable import ReferenceServer

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite("Storage key rotation")
struct StorageKeyRotationTests {
    /// The tables of a test store, opened beside any server (no key needed: only raw rows).
    static func tables(_ store: TestStore) throws -> any VaultTables {
        switch store.backend {
        case .sqlite: return SQLiteVaultTables(database: try SQLiteDatabase(path: store.directory + "/server.sqlite"))
        case .postgres:
            return PostgresVaultTables(
                pool: try PostgresPool(
                    connectionString: try #require(store.connectionString),
                    configuration: PostgresPool.Configuration(
                        maximumConnections: 1, statementTimeoutMilliseconds: 30_000)))
        }
    }

    /// Every sealed column's rows as stored (nonce and ciphertext), for comparing before and after.
    static func snapshot(_ store: TestStore) throws -> [String] {
        let tables = try tables(store)
        return try tables.transaction { (tx) throws(OPRFVaultStore.Refusal) -> [String] in
            var lines: [String] = []
            for column in StorageKeyRotation.columns {
                let rows = try tx.query(
                    "SELECT \(column.key), \(column.nonce), \(column.sealed) FROM \(column.table) ORDER BY \(column.key)"
                )
                for row in rows { lines.append("\(column.table).\(column.sealed) \(row)") }
            }
            return lines
        }.get()
    }

    /// Runs the rotation on a test store.
    static func rotate(_ store: TestStore, keyFile: String, newKeyFile: String, pageSize: Int = 512)
        throws(ReferenceServerError) -> StorageKeyRotation.Report
    {
        switch store.backend {
        case .sqlite:
            return try StorageKeyRotation.rotate(
                sqliteDatabase: store.directory + "/server.sqlite", keyFile: keyFile, newKeyFile: newKeyFile,
                pageSize: pageSize)
        case .postgres:
            return try StorageKeyRotation.rotate(
                postgres: store.connectionString!, keyFile: keyFile, newKeyFile: newKeyFile, pageSize: pageSize)
        }
    }

    static func counts(_ report: StorageKeyRotation.Report) -> [String: Int] {
        Dictionary(uniqueKeysWithValues: report.counts.map { ($0.kind, $0.resealed) })
    }

    @Test(
        "every sealed value moves to the new key: V3 and V4 activations, ML-DSA seed and vaults work after",
        arguments: StoreBackend.available)
    func rotationKeepsEveryKeyWorking(_ backend: StoreBackend) async throws {
        // A V3.3 activation, then a hybrid V4 one on the same store, and an enrolled vault.
        let legacy = try InProcessServer(backend: backend, algorithm: .legacyP256)
        let store = legacy.store
        let directory = store.directory
        let legacyConfiguration = try legacy.server.configurationString()
        let (v3, _) = try await legacy.activeDevice(pin: "2580")
        legacy.server.stop()
        let hybrid = try InProcessServer(store: store, algorithm: .ecP384MLL3)
        let configuration = try hybrid.server.configurationString()
        let (v4, _) = try await hybrid.activeDevice(pin: "1357")
        let vaults = try #require(hybrid.server.vaults?.store)
        let vaultId = try SecureRandom.bytes(count: 16)
        let verifier = try SecureBytes.random(count: 32)
        defer { verifier.destroy() }
        _ = try vaults.register(
            vaultId: vaultId, challenge: try SecureRandom.bytes(count: 16), maxFailures: 5, now: Date())
        _ = try vaults.enroll(vaultId: vaultId, verifier: verifier, now: Date())
        let oprfMaster = try vaults.masterSecret()
        defer { oprfMaster.destroy() }
        hybrid.server.stop()

        let old = directory + "/server.sqlite.key"
        let new = directory + "/rotated.key"
        let report = try Self.rotate(store, keyFile: old, newKeyFile: new)
        print("StorageKeyRotationTests (\(backend)): \(report); \(report.counts.map { "\($0.kind) \($0.resealed)" })")
        #expect(report.createdNewKeyFile)
        #expect(
            Self.counts(report) == [
                "server master keys (V3)": 1, "server master keys (V4)": 1, "ML-DSA master seeds": 1,
                "activation server keys": 2, "activation V4 states": 1, "vault OPRF master secrets": 1,
                "vault verifiers": 1,
            ])
        #expect(report.alreadyUnderNewKey == 0)
        var info = stat()
        #expect(stat(new, &info) == 0 && info.st_mode & 0o777 == 0o600 && info.st_size == 37)

        // A second run finds everything under the new key and changes nothing.
        let before = try Self.snapshot(store)
        let again = try Self.rotate(store, keyFile: old, newKeyFile: new)
        #expect(again.resealed == 0 && again.alreadyUnderNewKey == report.resealed && !again.createdNewKeyFile)
        #expect(try Self.snapshot(store) == before)

        // The old key opens nothing any more: a server started with it refuses to start.
        #expect(throws: ReferenceServerError.self) { _ = try InProcessServer(store: store, algorithm: .legacyP256) }

        // Under the new key (moved into the default place), each activation and the vault work.
        #expect(rename(old, directory + "/retired.key") == 0 && rename(new, old) == 0)
        let v3Server = try InProcessServer(store: store, algorithm: .legacyP256)
        #expect(try v3Server.server.configurationString() == legacyConfiguration)
        let v3Again = try Device(
            baseURL: v3Server.baseURL, configurationString: legacyConfiguration, directory: v3.directory,
            algorithm: "LEGACY_P256")
        try await v3Again.service.validatePassword(try TestSupport.pin("2580"))
        v3Server.server.stop()
        let v4Server = try InProcessServer(store: store, algorithm: .ecP384MLL3)
        defer { v4Server.server.stop() }
        #expect(try v4Server.server.configurationString() == configuration)
        let v4Again = try Device(
            baseURL: v4Server.baseURL, configurationString: configuration, directory: v4.directory,
            algorithm: "EC_P384_ML_L3")
        try await v4Again.service.validatePassword(try TestSupport.pin("1357"))
        await #expect(throws: ActivationError.authentication) {
            try await v4Again.service.validatePassword(try TestSupport.pin("0000"))
        }
        #expect(try await v4Again.service.fetchActivationStatus().failCount == 1)
        let rotatedVaults = try #require(v4Server.server.vaults?.store)
        let sameMaster = try rotatedVaults.masterSecret()
        defer { sameMaster.destroy() }
        #expect(try sameMaster.isEqual(to: oprfMaster))
        let challenge = try SecureRandom.bytes(count: 16)
        _ = try rotatedVaults.beginAttempt(vaultId: vaultId, challenge: challenge, now: Date())
        let proof = try VaultOPRFAPI.proof(verifier: verifier, vaultId: vaultId, challenge: challenge)
        #expect(try rotatedVaults.confirm(vaultId: vaultId, proof: proof, now: Date()).failures == 0)
    }

    @Test(
        "a value that opens under neither key stops the run and the database stays as it was",
        arguments: StoreBackend.available)
    func aValueUnderNeitherKeyRollsEverythingBack(_ backend: StoreBackend) async throws {
        let s = try InProcessServer(backend: backend, algorithm: .ecP384)
        _ = try await s.activeDevice()
        _ = try await s.activeDevice()
        s.server.stop()
        // One activation's V4 state damaged: one bit of its ciphertext flipped.
        let tables = try Self.tables(s.store)
        try tables.transaction { (tx) throws(OPRFVaultStore.Refusal) in
            let row = try tx.query("SELECT id, v4_sealed FROM activation ORDER BY id DESC LIMIT 1")[0]
            var sealed = row[1].bytes ?? []
            sealed[3] ^= 0x01
            try tx.run("UPDATE activation SET v4_sealed = ? WHERE id = ?", [.blob(sealed), row[0]])
        }.get()
        let before = try Self.snapshot(s.store)
        let old = s.directory + "/server.sqlite.key"
        let new = s.directory + "/rotated.key"
        #expect {
            try Self.rotate(s.store, keyFile: old, newKeyFile: new)
        } throws: { error in
            guard case ReferenceServerError.corruptRecord(let reason) = error else { return false }
            return reason.contains("activation V4 states") && reason.contains("opens under neither")
        }
        #expect(try Self.snapshot(s.store) == before)
        // The new key file stays (a commit whose answer is lost must not lose its key).
        #expect(access(new, F_OK) == 0)
    }

    @Test("the key in force as the new key, a missing database or key file: refused, nothing written")
    func badFilesAreRefused() async throws {
        let s = try InProcessServer(backend: .sqlite)
        _ = try await s.activeDevice()
        s.server.stop()
        let old = s.directory + "/server.sqlite.key"
        let copy = s.directory + "/copy.key"
        #expect(Self.copyFile(old, copy))
        let before = try Self.snapshot(s.store)
        #expect {
            try Self.rotate(s.store, keyFile: old, newKeyFile: copy)
        } throws: { error in
            guard case ReferenceServerError.keyFile(let reason) = error else { return false }
            return reason.contains("key in force")
        }
        #expect {
            try Self.rotate(s.store, keyFile: s.directory + "/absent.key", newKeyFile: s.directory + "/n1.key")
        } throws: { error in
            if case ReferenceServerError.keyFile = error { true } else { false }
        }
        #expect(access(s.directory + "/n1.key", F_OK) != 0)
        #expect(throws: ReferenceServerError.self) {
            try StorageKeyRotation.rotate(
                sqliteDatabase: s.directory + "/absent.sqlite", keyFile: old, newKeyFile: s.directory + "/n2.key")
        }
        #expect(access(s.directory + "/absent.sqlite", F_OK) != 0 && access(s.directory + "/n2.key", F_OK) != 0)
        // A group-readable new key file is refused like any key file.
        let loose = s.directory + "/loose.key"
        #expect(Self.copyFile(old, loose) && chmod(loose, 0o640) == 0)
        #expect(throws: ReferenceServerError.self) { try Self.rotate(s.store, keyFile: old, newKeyFile: loose) }
        #expect(try Self.snapshot(s.store) == before)
    }

    @Test(
        "rows are read a page at a time: more vaults than a page are all re-sealed", arguments: StoreBackend.available)
    func pagesCoverEveryRow(_ backend: StoreBackend) async throws {
        let s = try InProcessServer(backend: backend)
        let vaults = try #require(s.server.vaults?.store)
        var enrolled: [([UInt8], SecureBytes)] = []
        for _ in 0..<23 {
            let id = try SecureRandom.bytes(count: 16)
            let verifier = try SecureBytes.random(count: 32)
            _ = try vaults.register(
                vaultId: id, challenge: try SecureRandom.bytes(count: 16), maxFailures: 5, now: Date())
            _ = try vaults.enroll(vaultId: id, verifier: verifier, now: Date())
            enrolled.append((id, verifier))
        }
        s.server.stop()
        let old = s.directory + "/server.sqlite.key"
        let new = s.directory + "/rotated.key"
        let report = try Self.rotate(s.store, keyFile: old, newKeyFile: new, pageSize: 5)
        #expect(Self.counts(report)["vault verifiers"] == 23)
        #expect(rename(new, old) == 0)
        let after = try InProcessServer(store: s.store)
        defer { after.server.stop() }
        let store = try #require(after.server.vaults?.store)
        for (id, verifier) in enrolled {
            let challenge = try SecureRandom.bytes(count: 16)
            _ = try store.beginAttempt(vaultId: id, challenge: challenge, now: Date())
            let proof = try VaultOPRFAPI.proof(verifier: verifier, vaultId: id, challenge: challenge)
            #expect(try store.confirm(vaultId: id, proof: proof, now: Date()).failures == 0)
            verifier.destroy()
        }
    }

    static func copyFile(_ from: String, _ to: String) -> Bool {
        guard let data = FileManager.default.contents(atPath: from) else { return false }
        return FileManager.default.createFile(atPath: to, contents: data, attributes: [.posixPermissions: 0o600])
    }
}
