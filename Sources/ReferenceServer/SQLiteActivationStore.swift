import ActivationServer
import Foundation
import PowerAuthProtocol
import SQLiteStore
import SecureCore

/// `ActivationServer.ServerActivationStore` in SQLite: WAL, `synchronous=FULL`, versioned schema.
///
/// - Every change runs in one `BEGIN IMMEDIATE` transaction, so a
///   read-modify-write never interleaves with another (in this process or
///   another one on the same file).
/// - ``recordAttempt(activationId:outcome:now:failureBlockDuration:)`` counts
///   and writes its audit row (activation id, time, outcome — never a code or
///   a key) in that same transaction: concurrent wrong codes count exactly.
/// - The server's per-activation private key, and the master private key of
///   the server configuration, are stored sealed with XChaCha20-Poly1305
///   under the storage key of ``ServerKeyFile`` (associated data: a label and
///   the row's identifier), never in plaintext. The factor keys are not
///   stored at all: they are derived per request (ECDH with the device key)
///   and destroyed after use.
public final class SQLiteActivationStore: ReferenceActivationStore {
    /// The schema, one migration step per version (never edit a released step).
    static let migrations: [String] = [
        """
        CREATE TABLE server_configuration(
            id INTEGER PRIMARY KEY CHECK (id = 1),
            application_key BLOB NOT NULL,
            application_secret BLOB NOT NULL,
            master_public_key BLOB NOT NULL,
            master_private_nonce BLOB NOT NULL,
            master_private_sealed BLOB NOT NULL);
        CREATE TABLE activation(
            id TEXT PRIMARY KEY,
            code TEXT NOT NULL UNIQUE,
            user_id TEXT NOT NULL,
            name TEXT NOT NULL,
            state INTEGER NOT NULL,
            server_public_key BLOB NOT NULL,
            server_private_nonce BLOB NOT NULL,
            server_private_sealed BLOB NOT NULL,
            device_public_key BLOB,
            counter BLOB NOT NULL,
            counter_index INTEGER NOT NULL,
            failed_attempts INTEGER NOT NULL,
            max_failed_attempts INTEGER NOT NULL,
            blocked_until REAL,
            biometry_enabled INTEGER NOT NULL);
        CREATE TABLE attempt_audit(
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            activation_id TEXT NOT NULL,
            at REAL NOT NULL,
            outcome TEXT NOT NULL);
        CREATE INDEX attempt_audit_activation ON attempt_audit(activation_id);
        """,
        // 2: MAC tokens (`token/create`); the secret is derived, never stored.
        """
        CREATE TABLE token(
            id TEXT PRIMARY KEY,
            activation_id TEXT NOT NULL,
            signature_type TEXT NOT NULL,
            created_at REAL NOT NULL);
        CREATE INDEX token_activation ON token(activation_id);
        """,
    ]

    /// The schema version this code writes.
    public static var schemaVersion: Int { migrations.count }

    /// The database.
    public let database: SQLiteDatabase
    private let storageKey: SecureBytes

    /// Opens (and creates or migrates) the database.
    /// - Parameters:
    ///   - path: the database file.
    ///   - storageKey: the 32-byte key from ``ServerKeyFile``.
    /// - Throws: ``ReferenceServerError/storage(reason:)`` (also for a schema newer than this code).
    public init(path: String, storageKey: SecureBytes) throws(ReferenceServerError) {
        guard storageKey.count == ServerKeyFile.keyByteCount else {
            throw .invalidConfiguration(reason: "the storage key must be 32 bytes")
        }
        do throws(SQLiteError) {
            database = try SQLiteDatabase(path: path)
            try database.migrate(Self.migrations)
        } catch {
            throw .storage(reason: "\(error)")
        }
        self.storageKey = storageKey
    }

    // MARK: - Server configuration

    /// Loads the stored server configuration, or stores `make()`'s on first use.
    /// - Parameters:
    ///   - make: creates fresh keys when none are stored.
    ///   - restore: rebuilds the configuration from the stored application key, application secret
    ///     and master key pair (look-ahead, limits and commit policy are not stored; they come from
    ///     the command line).
    /// - Returns: the configuration in force.
    /// - Throws: ``ReferenceServerError``.
    public func loadOrStoreConfiguration(
        _ make: () throws(ActivationServerError) -> ActivationServerConfiguration,
        restore: ([UInt8], [UInt8], KeyPair) throws(ActivationServerError) -> ActivationServerConfiguration
    ) throws(ReferenceServerError) -> ActivationServerConfiguration {
        let label = Array("SecurePIN server master key v1".utf8)
        var failure: ReferenceServerError?
        do throws(SQLiteError) {
            return try database.transaction { () throws(SQLiteError) -> ActivationServerConfiguration in
                do throws(ReferenceServerError) {
                    let rows = try sql { () throws(SQLiteError) in
                        try database.query(
                            """
                            SELECT application_key, application_secret, master_public_key, master_private_nonce,
                            master_private_sealed FROM server_configuration WHERE id = 1
                            """)
                    }
                    if let row = rows.first {
                        guard let key = row[0].bytes, let secret = row[1].bytes, let publicKey = row[2].bytes,
                            let nonce = row[3].bytes, let sealed = row[4].bytes
                        else { throw .corruptRecord(reason: "server configuration columns") }
                        let privateKey = try open(nonce: nonce, sealed: sealed, label: label)
                        return try lift { () throws(ActivationServerError) in
                            try restore(key, secret, KeyPair(privateKey: privateKey, publicKey: publicKey))
                        }
                    }
                    let fresh = try lift(make)
                    let box = try seal(fresh.masterKeyPair.privateKey, label: label)
                    _ = try sql { () throws(SQLiteError) in
                        try database.run(
                            "INSERT INTO server_configuration VALUES (1, ?, ?, ?, ?, ?)",
                            [
                                .blob(fresh.applicationKey), .blob(fresh.applicationSecret),
                                .blob(fresh.masterKeyPair.publicKey), .blob(box.nonce), .blob(box.ciphertext),
                            ])
                    }
                    return fresh
                } catch {
                    failure = error
                    throw .aborted(reason: "configuration")
                }
            }
        } catch {
            throw failure ?? .storage(reason: "\(error)")
        }
    }

    // MARK: - ServerActivationStore

    /// Adds a new record, its private key sealed.
    public func insert(_ record: ActivationRecord) throws(ActivationServerError) {
        let box: AEAD.SealedBox
        do throws(ReferenceServerError) {
            box = try seal(record.serverKeyPair.privateKey, label: Self.recordLabel(record.activationId))
        } catch {
            throw .storage(reason: "sealing the server key failed")
        }
        do throws(SQLiteError) {
            _ = try database.run(
                """
                INSERT INTO activation(id, code, user_id, name, state, server_public_key, server_private_nonce,
                server_private_sealed, device_public_key, counter, counter_index, failed_attempts,
                max_failed_attempts, blocked_until, biometry_enabled) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(record.activationId), .text(record.activationCode), .text(record.userId),
                    .text(record.name), .integer(Int64(record.state.rawValue)),
                    .blob(record.serverKeyPair.publicKey), .blob(box.nonce), .blob(box.ciphertext),
                ] + Self.mutableValues(record).dropFirst(2))
        } catch {
            if case .constraint = error { throw .duplicate }
            throw .storage(reason: "\(error)")
        }
    }

    /// Reads a record (its private key opened into secure memory).
    public func fetch(activationId: String) throws(ActivationServerError) -> ActivationRecord? {
        do throws(ReferenceServerError) {
            let rows = try sql { () throws(SQLiteError) in try database.query(Self.selectRecord, [.text(activationId)])
            }
            return try rows.first.map { (row) throws(ReferenceServerError) in try decode(row) }
        } catch {
            throw .storage(reason: "\(error)")
        }
    }

    /// Finds the activation of a code.
    public func activationId(forCode activationCode: String) throws(ActivationServerError) -> String? {
        do throws(SQLiteError) {
            return try database.query("SELECT id FROM activation WHERE code = ?", [.text(activationCode)]).first?[0]
                .string
        } catch {
            throw .storage(reason: "\(error)")
        }
    }

    /// Changes a record in one `BEGIN IMMEDIATE` transaction; nothing is stored when `body` throws.
    public func update<R: Sendable>(
        activationId: String, _ body: (inout ActivationRecord) throws(ActivationServerError) -> R
    ) throws(ActivationServerError) -> R {
        try inTransaction { () throws(ActivationServerError) -> R in
            var record = try load(activationId)
            let before = Self.mutableValues(record)
            let result = try body(&record)
            // A change that changes nothing (a status read that expires no block) writes nothing:
            // the commit then has no WAL frame to sync.
            if Self.mutableValues(record) != before { try write(record) }
            return result
        }
    }

    /// Counts one attempt and writes its audit row, in one `BEGIN IMMEDIATE` transaction.
    public func recordAttempt(
        activationId: String, outcome: AttemptOutcome, now: Date, failureBlockDuration: TimeInterval?
    ) throws(ActivationServerError) -> AttemptResult {
        try inTransaction { () throws(ActivationServerError) -> AttemptResult in
            var record = try load(activationId)
            let before = (record.state, record.failedAttempts)
            let accepted = record.apply(outcome, now: now, failureBlockDuration: failureBlockDuration)
            let label: String
            if accepted {
                label = AuditOutcome.accepted.rawValue
            } else if record.failedAttempts > before.1 || (record.state == .blocked && before.0 != .blocked) {
                label = record.state == .blocked ? AuditOutcome.failureBlocked.rawValue : AuditOutcome.failure.rawValue
            } else {
                label = AuditOutcome.refused.rawValue
            }
            try write(record)
            _ = try sqlStep { () throws(SQLiteError) in
                try database.run(
                    "INSERT INTO attempt_audit(activation_id, at, outcome) VALUES (?, ?, ?)",
                    [.text(activationId), .real(now.timeIntervalSince1970), .text(label)])
            }
            return AttemptResult(
                accepted: accepted, state: record.state, failedAttempts: record.failedAttempts,
                maxFailedAttempts: record.maxFailedAttempts)
        }
    }

    // MARK: - Tokens

    /// Stores a token row.
    public func insertToken(_ token: TokenRecord) throws(ActivationServerError) {
        do throws(SQLiteError) {
            _ = try database.run(
                "INSERT INTO token(id, activation_id, signature_type, created_at) VALUES (?, ?, ?, ?)",
                [
                    .text(token.tokenId), .text(token.activationId), .text(token.factorSet.rawValue),
                    .real(token.createdAt.timeIntervalSince1970),
                ])
        } catch {
            if case .constraint = error { throw .duplicate }
            throw .storage(reason: "\(error)")
        }
    }

    /// Reads a token row.
    public func token(tokenId: String) throws(ActivationServerError) -> TokenRecord? {
        let rows = try sqlStep { () throws(SQLiteError) in
            try database.query(
                "SELECT activation_id, signature_type, created_at FROM token WHERE id = ?", [.text(tokenId)])
        }
        guard let row = rows.first else { return nil }
        guard let activationId = row[0].string, let type = row[1].string,
            let factorSet = try? FactorSet(parsing: type), let at = row[2].double
        else { throw .storage(reason: "a token row does not parse") }
        return TokenRecord(
            tokenId: tokenId, activationId: activationId, factorSet: factorSet,
            createdAt: Date(timeIntervalSince1970: at))
    }

    /// Deletes a token row of an activation.
    public func removeToken(tokenId: String, activationId: String) throws(ActivationServerError) -> Bool {
        let changed = try sqlStep { () throws(SQLiteError) in
            try database.run(
                "DELETE FROM token WHERE id = ? AND activation_id = ?", [.text(tokenId), .text(activationId)])
        }
        return changed > 0
    }

    // MARK: - Back office and audit

    /// Every activation identifier, oldest first.
    /// - Returns: the identifiers.
    /// - Throws: `ActivationServer.ActivationServerError.storage(reason:)`.
    public func activationIds() throws(ActivationServerError) -> [String] {
        try sqlStep { () throws(SQLiteError) in try database.query("SELECT id FROM activation ORDER BY rowid") }
            .compactMap { $0[0].string }
    }

    /// The audit rows of one activation, oldest first.
    /// - Parameter activationId: the activation.
    /// - Returns: the time and outcome of every recorded attempt.
    /// - Throws: `ActivationServer.ActivationServerError.storage(reason:)`.
    public func auditTrail(activationId: String) throws(ActivationServerError) -> [AuditEntry] {
        try sqlStep { () throws(SQLiteError) in
            try database.query(
                "SELECT at, outcome FROM attempt_audit WHERE activation_id = ? ORDER BY seq", [.text(activationId)])
        }.compactMap { row in
            guard let at = row[0].double, let text = row[1].string, let outcome = AuditOutcome(rawValue: text) else {
                return nil
            }
            return AuditEntry(at: Date(timeIntervalSince1970: at), outcome: outcome)
        }
    }

    // MARK: - Rows

    static let selectRecord = """
        SELECT id, code, user_id, name, state, server_public_key, server_private_nonce, server_private_sealed,
        device_public_key, counter, counter_index, failed_attempts, max_failed_attempts, blocked_until,
        biometry_enabled FROM activation WHERE id = ?
        """

    static func recordLabel(_ activationId: String) -> [UInt8] {
        Array("SecurePIN activation server key v1|".utf8) + Array(activationId.utf8)
    }

    /// name, state, device key, counter, index, failures, limit, block end, biometry.
    static func mutableValues(_ r: ActivationRecord) -> [SQLiteValue] {
        [
            .text(r.name), .integer(Int64(r.state.rawValue)),
            r.devicePublicKey.map { .blob($0) } ?? .null, .blob(r.counter.bytes),
            .integer(Int64(bitPattern: r.counterIndex)), .integer(Int64(r.failedAttempts)),
            .integer(Int64(r.maxFailedAttempts)), r.blockedUntil.map { .real($0.timeIntervalSince1970) } ?? .null,
            .integer(r.biometryEnabled ? 1 : 0),
        ]
    }

    private func load(_ activationId: String) throws(ActivationServerError) -> ActivationRecord {
        guard let record = try fetch(activationId: activationId) else { throw .activationNotFound }
        return record
    }

    private func write(_ r: ActivationRecord) throws(ActivationServerError) {
        _ = try sqlStep { () throws(SQLiteError) in
            try database.run(
                """
                UPDATE activation SET name = ?, state = ?, device_public_key = ?, counter = ?, counter_index = ?,
                failed_attempts = ?, max_failed_attempts = ?, blocked_until = ?, biometry_enabled = ? WHERE id = ?
                """, Self.mutableValues(r) + [.text(r.activationId)])
        }
    }

    private func decode(_ row: SQLiteRow) throws(ReferenceServerError) -> ActivationRecord {
        guard let id = row[0].string, let code = row[1].string, let user = row[2].string, let name = row[3].string,
            let stateValue = row[4].int64, let state = ProtocolActivationState(rawValue: UInt8(clamping: stateValue)),
            let publicKey = row[5].bytes, let nonce = row[6].bytes, let sealed = row[7].bytes,
            let counterBytes = row[9].bytes, let index = row[10].int64, let failures = row[11].int64,
            let limit = row[12].int64, let biometry = row[14].int64
        else { throw .corruptRecord(reason: "activation columns") }
        let privateKey = try open(nonce: nonce, sealed: sealed, label: Self.recordLabel(id))
        let counter: HashCounter
        do throws(ProtocolError) {
            counter = try HashCounter(bytes: counterBytes)
        } catch {
            throw .corruptRecord(reason: "counter")
        }
        var record = ActivationRecord(
            activationId: id, activationCode: code, userId: user,
            serverKeyPair: KeyPair(privateKey: privateKey, publicKey: publicKey), counter: counter,
            maxFailedAttempts: Int(limit))
        record.name = name
        record.state = state
        record.devicePublicKey = row[8].bytes
        record.counterIndex = UInt64(bitPattern: index)
        record.failedAttempts = Int(failures)
        record.blockedUntil = row[13].double.map { Date(timeIntervalSince1970: $0) }
        record.biometryEnabled = biometry != 0
        return record
    }

    // MARK: - Sealing

    private func seal(_ secret: SecureBytes, label: [UInt8]) throws(ReferenceServerError) -> AEAD.SealedBox {
        do throws(SecureCoreError) {
            return try AEAD.seal(secret, using: storageKey, associatedData: label)
        } catch {
            throw .corruptRecord(reason: "sealing failed: \(error)")
        }
    }

    private func open(nonce: [UInt8], sealed: [UInt8], label: [UInt8]) throws(ReferenceServerError) -> SecureBytes {
        do throws(SecureCoreError) {
            let box = AEAD.SealedBox(algorithm: .xChaCha20Poly1305, nonce: nonce, ciphertext: sealed)
            guard let opened = try AEAD.open(box, using: storageKey, associatedData: label) else {
                throw .authenticationFailed
            }
            return opened
        } catch {
            throw .corruptRecord(reason: "a sealed key does not open under this key file")
        }
    }

    // MARK: - Error plumbing

    /// Runs `body` in one immediate transaction; `body`'s error rolls it back and is rethrown as is.
    private func inTransaction<R>(_ body: () throws(ActivationServerError) -> R) throws(ActivationServerError) -> R {
        var failure: ActivationServerError?
        do throws(SQLiteError) {
            return try database.transaction { () throws(SQLiteError) -> R in
                do throws(ActivationServerError) {
                    return try body()
                } catch {
                    failure = error
                    throw .aborted(reason: "rolled back")
                }
            }
        } catch {
            throw failure ?? .storage(reason: "\(error)")
        }
    }

    private func sqlStep<R>(_ body: () throws(SQLiteError) -> R) throws(ActivationServerError) -> R {
        do throws(SQLiteError) {
            return try body()
        } catch {
            throw .storage(reason: "\(error)")
        }
    }

    private func sql<R>(_ body: () throws(SQLiteError) -> R) throws(ReferenceServerError) -> R {
        do throws(SQLiteError) {
            return try body()
        } catch {
            throw .storage(reason: "\(error)")
        }
    }

    private func lift<R>(_ body: () throws(ActivationServerError) -> R) throws(ReferenceServerError) -> R {
        do throws(ActivationServerError) {
            return try body()
        } catch {
            throw .activationServer(error)
        }
    }
}

/// What one recorded attempt did, as the audit table keeps it.
public enum AuditOutcome: String, Sendable, Equatable, CaseIterable {
    /// The code verified and moved the counter.
    case accepted
    /// A failure was counted.
    case failure
    /// A failure was counted and it blocked the activation.
    case failureBlocked = "failure-blocked"
    /// Not counted: the activation was not active.
    case refused
}

/// One row of the audit table: when, and what happened. No code, no key.
public struct AuditEntry: Sendable, Equatable {
    /// When the attempt was recorded.
    public let at: Date
    /// What it did.
    public let outcome: AuditOutcome
}
