import Foundation
import PostQuantum
import PostgresStore
import SQLiteStore
import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Moves every value the activation database holds sealed under the storage key
/// (``ServerKeyFile``) to a new key: the server's master private keys (V3 and V4), each
/// activation's server private key and V4 state, the ML-DSA master seeds of the hybrid suites,
/// the vault binding's OPRF master secret and each vault's verifier.
///
/// The steps, each safe to interrupt:
/// 1. The new key file is created (mode 0600, exclusive, fsync'd with its directory) before the
///    database is touched; one that exists already is read instead, so a second run after a
///    failure or a crash goes on with the same new key.
/// 2. Every sealed value is opened under the old key and sealed again under the new one, with a
///    fresh nonce and the same associated data, in **one** transaction (SQLite `BEGIN IMMEDIATE`,
///    PostgreSQL with the rows taken `FOR UPDATE`). A value already under the new key is left as
///    it is; a value that opens under neither key stops the run and the transaction rolls back,
///    so the database is never half under one key and half under the other.
///
/// The temporary encryption keys are not stored (they are sealed in their identifiers under a
/// key derived from the master key), so they survive a rotation. Server instances hold the key
/// in memory: stop every instance before rotating and start them with the new key file after;
/// destroy the old key file only then. The new key file is never removed by a failed run: a
/// commit whose answer was lost would otherwise leave a database nobody can open.
public enum StorageKeyRotation {
    /// What a rotation did, per kind of sealed value.
    public struct Report: Sendable, Equatable, CustomStringConvertible {
        /// One kind of sealed value and its counts.
        public struct Count: Sendable, Equatable {
            /// What the values are, in words ("activation server keys").
            public let kind: String
            /// Values opened under the old key and sealed under the new one.
            public var resealed: Int
            /// Values that already opened under the new key, left as they are.
            public var alreadyUnderNewKey: Int
        }

        /// The counts, in the order of ``StorageKeyRotation``'s list of sealed columns.
        public var counts: [Count]
        /// Whether this run created the new key file (`false`: it existed and was used).
        public var createdNewKeyFile: Bool

        /// Values re-sealed in all.
        public var resealed: Int { counts.reduce(0) { $0 + $1.resealed } }
        /// Values found under the new key already, in all.
        public var alreadyUnderNewKey: Int { counts.reduce(0) { $0 + $1.alreadyUnderNewKey } }

        /// `"12 value(s) re-sealed, 0 already under the new key"`.
        public var description: String {
            "\(resealed) value(s) re-sealed, \(alreadyUnderNewKey) already under the new key"
        }
    }

    /// Rotates the storage key of a SQLite activation database.
    /// - Parameters:
    ///   - databasePath: the database file; it must exist (a rotation never creates one).
    ///   - keyFilePath: the key in force (`nil`: the database path plus `.key`).
    ///   - newKeyFilePath: the new key file: created when missing, read when present.
    /// - Returns: what was done.
    /// - Throws: ``ReferenceServerError``: `.keyFile` for a key file that cannot be used (or the
    ///   same key twice), `.corruptRecord` for a value that opens under neither key, `.storage`
    ///   for the database; in every case the database is as it was.
    public static func rotate(
        sqliteDatabase databasePath: String, keyFile keyFilePath: String? = nil, newKeyFile newKeyFilePath: String
    ) throws(ReferenceServerError) -> Report {
        try rotate(
            sqliteDatabase: databasePath, keyFile: keyFilePath, newKeyFile: newKeyFilePath, pageSize: defaultPageSize)
    }

    static func rotate(
        sqliteDatabase databasePath: String, keyFile keyFilePath: String?, newKeyFile newKeyFilePath: String,
        pageSize: Int
    ) throws(ReferenceServerError) -> Report {
        guard access(databasePath, F_OK) == 0 else {
            throw .invalidConfiguration(reason: "there is no database at \(databasePath)")
        }
        let (old, new, created) = try keys(
            old: keyFilePath ?? ServerKeyFile.path(forDatabase: databasePath), new: newKeyFilePath)
        defer {
            old.destroy()
            new.destroy()
        }
        // Opening the stores brings the schema up to date, as the server's next start would.
        let store = try SQLiteActivationStore(path: databasePath, storageKey: old)
        _ = try OPRFVaultStore(database: store.database, storageKey: old)
        var report = try reseal(SQLiteVaultTables(database: store.database), old: old, new: new, pageSize: pageSize)
        report.createdNewKeyFile = created
        return report
    }

    /// Rotates the storage key of a PostgreSQL activation database shared by server instances.
    /// - Parameters:
    ///   - connectionString: the DSN in secure memory (see ``DSNFile``); only read.
    ///   - keyFilePath: the key in force, the one every instance was started with.
    ///   - newKeyFilePath: the new key file: created when missing, read when present.
    /// - Returns: what was done.
    /// - Throws: ``ReferenceServerError``, as ``rotate(sqliteDatabase:keyFile:newKeyFile:)``.
    public static func rotate(
        postgres connectionString: SecureBytes, keyFile keyFilePath: String, newKeyFile newKeyFilePath: String
    ) throws(ReferenceServerError) -> Report {
        try rotate(
            postgres: connectionString, keyFile: keyFilePath, newKeyFile: newKeyFilePath, pageSize: defaultPageSize)
    }

    static func rotate(
        postgres connectionString: SecureBytes, keyFile keyFilePath: String, newKeyFile newKeyFilePath: String,
        pageSize: Int
    ) throws(ReferenceServerError) -> Report {
        let (old, new, created) = try keys(old: keyFilePath, new: newKeyFilePath)
        defer {
            old.destroy()
            new.destroy()
        }
        var configuration = PostgresPool.Configuration()
        configuration.maximumConnections = 1
        // A large database takes more than a request's statement budget.
        configuration.statementTimeoutMilliseconds = 600_000
        let store = try PostgresActivationStore(
            connectionString: connectionString, storageKey: old, pool: configuration)
        var report = try reseal(PostgresVaultTables(pool: store.pool), old: old, new: new, pageSize: pageSize)
        report.createdNewKeyFile = created
        return report
    }

    // MARK: - The sealed columns

    /// One column pair (nonce, ciphertext) sealed under the storage key, the row key it is found
    /// by, and the associated data it was sealed with.
    struct SealedColumn: Sendable {
        let kind: String
        let table: String
        let key: String
        let nonce: String
        let sealed: String
        /// The associated data of the row with this key, or `nil` for a key no store writes.
        let label: @Sendable (SQLiteValue) -> [UInt8]?
    }

    /// Every sealed value of both stores (their schemas have the same tables and columns).
    static let columns: [SealedColumn] = [
        SealedColumn(
            kind: "server master keys (V3)", table: "server_configuration", key: "id",
            nonce: "master_private_nonce", sealed: "master_private_sealed",
            label: { _ in Array("SecurePIN server master key v1".utf8) }),
        SealedColumn(
            kind: "server master keys (V4)", table: "server_configuration", key: "id",
            nonce: "v4_master_private_nonce", sealed: "v4_master_private_sealed",
            label: { _ in Array("SecurePIN server V4 master key v1".utf8) }),
        SealedColumn(
            kind: "ML-DSA master seeds", table: "v4_pq_master_key", key: "parameter_set", nonce: "seed_nonce",
            sealed: "seed_sealed",
            label: { key in
                guard case .text(let name) = key,
                    let set = MLDSA.ParameterSet.allCases.first(where: { V4PostQuantumMasterKey.name($0) == name })
                else { return nil }
                return V4PostQuantumMasterKey.label(set)
            }),
        SealedColumn(
            kind: "activation server keys", table: "activation", key: "id", nonce: "server_private_nonce",
            sealed: "server_private_sealed",
            label: { key in
                guard case .text(let id) = key else { return nil }
                return SQLiteActivationStore.recordLabel(id)
            }),
        SealedColumn(
            kind: "activation V4 states", table: "activation", key: "id", nonce: "v4_nonce", sealed: "v4_sealed",
            label: { key in
                guard case .text(let id) = key else { return nil }
                return SQLiteActivationStore.v4Label(id)
            }),
        SealedColumn(
            kind: "vault OPRF master secrets", table: "oprf_vault_master", key: "id", nonce: "nonce",
            sealed: "sealed", label: { _ in OPRFVaultStore.masterLabel }),
        SealedColumn(
            kind: "vault verifiers", table: "oprf_vault", key: "id", nonce: "verifier_nonce",
            sealed: "verifier_sealed",
            label: { key in
                guard case .blob(let id) = key else { return nil }
                return OPRFVaultStore.verifierLabel(id)
            }),
    ]

    /// Rows read per statement: memory stays flat however many activations there are.
    static let defaultPageSize = 512

    // MARK: - Steps

    /// Reads the old key and reads or creates the new one.
    static func keys(old oldPath: String, new newPath: String) throws(ReferenceServerError) -> (
        SecureBytes, SecureBytes, Bool
    ) {
        let old = try ServerKeyFile.load(at: oldPath)
        let new: SecureBytes
        let created: Bool
        do throws(ReferenceServerError) {
            if access(newPath, F_OK) == 0 {
                new = try ServerKeyFile.load(at: newPath)
                created = false
            } else {
                new = try ServerKeyFile.create(at: newPath)
                created = true
            }
        } catch {
            old.destroy()
            if case .keyFile(let reason) = error { throw .keyFile(reason: "the new key file: \(reason)") }
            throw error
        }
        let same: Bool
        do throws(SecureCoreError) {
            same = try old.isEqual(to: new)
        } catch {
            old.destroy()
            new.destroy()
            throw .keyFile(reason: "comparing the keys: \(error)")
        }
        if same {
            old.destroy()
            new.destroy()
            throw .keyFile(reason: "the new key file holds the key in force; name a new file")
        }
        return (old, new, created)
    }

    /// Re-seals every sealed column in one transaction.
    static func reseal(_ tables: some VaultTables, old: SecureBytes, new: SecureBytes, pageSize: Int)
        throws(ReferenceServerError) -> Report
    {
        var failure: ReferenceServerError?
        let result = tables.transaction { (tx) throws(OPRFVaultStore.Refusal) -> Report in
            var report = Report(counts: [], createdNewKeyFile: false)
            for column in columns {
                do throws(ReferenceServerError) {
                    report.counts.append(try reseal(column, tx, old: old, new: new, pageSize: pageSize))
                } catch {
                    failure = error
                    // A storage refusal rolls the whole transaction back.
                    throw .storage("\(error)")
                }
            }
            return report
        }
        switch result {
        case .success(let report): return report
        case .failure(let refusal): throw failure ?? .storage(reason: "\(refusal)")
        }
    }

    /// Re-seals one column, a page of rows at a time in key order.
    private static func reseal(
        _ column: SealedColumn, _ tx: VaultStatements, old: SecureBytes, new: SecureBytes, pageSize: Int
    ) throws(ReferenceServerError) -> Report.Count {
        var count = Report.Count(kind: column.kind, resealed: 0, alreadyUnderNewKey: 0)
        let select = """
            SELECT \(column.key), \(column.nonce), \(column.sealed) FROM \(column.table)
            WHERE \(column.sealed) IS NOT NULL
            """
        let order = " ORDER BY \(column.key) LIMIT \(pageSize)\(tx.lockSuffix)"
        let update = """
            UPDATE \(column.table) SET \(column.nonce) = ?, \(column.sealed) = ? WHERE \(column.key) = ?
            """
        var last: SQLiteValue?
        while true {
            let rows: [[SQLiteValue]]
            do throws(OPRFVaultStore.Refusal) {
                if let last {
                    rows = try tx.query(select + " AND \(column.key) > ?" + order, [last])
                } else {
                    rows = try tx.query(select + order)
                }
            } catch {
                throw .storage(reason: "reading \(column.table): \(error)")
            }
            for row in rows {
                let key = row[0]
                let name = "\(column.kind), row \(describe(key))"
                guard let label = column.label(key), let nonce = row[1].bytes, let sealed = row[2].bytes else {
                    throw .corruptRecord(reason: "\(name): not a sealed value this server writes")
                }
                let box = AEAD.SealedBox(algorithm: .xChaCha20Poly1305, nonce: nonce, ciphertext: sealed)
                guard let plain = try open(box, old, label, name) else {
                    guard try open(box, new, label, name).map({ $0.destroy() }) != nil else {
                        throw .corruptRecord(reason: "\(name): opens under neither the old nor the new key file")
                    }
                    count.alreadyUnderNewKey += 1
                    continue
                }
                defer { plain.destroy() }
                let fresh: AEAD.SealedBox
                do throws(SecureCoreError) {
                    fresh = try AEAD.seal(plain, using: new, associatedData: label)
                } catch {
                    throw .corruptRecord(reason: "\(name): sealing failed: \(error)")
                }
                do throws(OPRFVaultStore.Refusal) {
                    try tx.run(update, [.blob(fresh.nonce), .blob(fresh.ciphertext), key])
                } catch {
                    throw .storage(reason: "writing \(column.table): \(error)")
                }
                count.resealed += 1
            }
            guard rows.count == pageSize, let next = rows.last?[0] else { break }
            last = next
        }
        return count
    }

    /// The value opened under `key`, or `nil` when it does not open under it (another key, or
    /// altered). No stored value is empty: an empty one is damaged data.
    private static func open(_ box: AEAD.SealedBox, _ key: SecureBytes, _ label: [UInt8], _ name: String)
        throws(ReferenceServerError) -> SecureBytes?
    {
        let opened: SecureBytes?
        do throws(SecureCoreError) {
            opened = try AEAD.open(box, using: key, associatedData: label)
        } catch .authenticationFailed {
            return nil
        } catch {
            throw .corruptRecord(reason: "\(name): \(error)")
        }
        guard let opened else { throw .corruptRecord(reason: "\(name): the sealed value is empty") }
        return opened
    }

    /// A row key for a message: ids are not secret (they are in the access log).
    private static func describe(_ key: SQLiteValue) -> String {
        switch key {
        case .integer(let x): "\(x)"
        case .text(let x): "'\(x)'"
        case .blob(let x): x.map { String(format: "%02x", $0) }.joined()
        case .real(let x): "\(x)"
        case .null: "NULL"
        }
    }
}
