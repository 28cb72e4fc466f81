import ActivationServer
import Foundation
import PostQuantum
import PowerAuthProtocol
import SQLiteStore
import SecureCore
import Synchronization

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
    /// Attempts written by the one-statement path (the row as the verifier read it); for tests.
    let shortPathAttempts = Atomic<Int>(0)
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
        // 3: protocol V4 (EC_P384). An activation's V4 state (server P-384 key, KEY_ACTIVATION_SECRET,
        // device key, SHA3 counter) is one sealed blob; the V4 master key pair is sealed beside the V3 one.
        """
        ALTER TABLE activation ADD COLUMN v4_nonce BLOB;
        ALTER TABLE activation ADD COLUMN v4_sealed BLOB;
        ALTER TABLE server_configuration ADD COLUMN v4_master_public_key BLOB;
        ALTER TABLE server_configuration ADD COLUMN v4_master_private_nonce BLOB;
        ALTER TABLE server_configuration ADD COLUMN v4_master_private_sealed BLOB;
        """,
        // 4: the ML-DSA master keys of the hybrid V4 suites, one row per parameter set; the 32-byte
        // seed is sealed, the public key beside it.
        """
        CREATE TABLE v4_pq_master_key(
            parameter_set TEXT PRIMARY KEY,
            public_key BLOB NOT NULL,
            seed_nonce BLOB NOT NULL,
            seed_sealed BLOB NOT NULL);
        """,
        // 5: a V4 activation's SHA3 counter (CTR_DATA) beside its sealed state, as the V3 counter is,
        // so that counting an attempt is one conditional UPDATE; when set it is newer than the copy
        // in the sealed state (null on rows written before this step).
        """
        ALTER TABLE activation ADD COLUMN v4_counter BLOB;
        """,
    ]

    /// The schema version this code writes.
    public static var schemaVersion: Int { migrations.count }

    /// The database.
    public let database: SQLiteDatabase
    /// A read-only connection for ``fetch(activationId:)``: a signed request reads its record
    /// without waiting for the writer's lock, which a committing batch holds through its `fsync`.
    /// Reads inside a write transaction (``update(activationId:_:)``, a counted attempt's
    /// fallback) stay on ``database``, where they see the transaction's own changes.
    private let reader: SQLiteDatabase
    private let storageKey: SecureBytes
    /// Concurrent attempts, committed together (see ``recordAttempt(activationId:outcome:now:failureBlockDuration:)``).
    private let attempts = GroupCommit<PendingAttempt, Result<AttemptResult?, ActivationServerError>>(limit: 256)

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
            reader = try SQLiteDatabase.reader(path: path)
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
                            """
                            INSERT INTO server_configuration(id, application_key, application_secret, master_public_key,
                            master_private_nonce, master_private_sealed) VALUES (1, ?, ?, ?, ?, ?)
                            """,
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
        let privateKey = try record.serverPrivateKey.key()
        let box: AEAD.SealedBox
        do throws(ReferenceServerError) {
            box = try seal(privateKey, label: Self.recordLabel(record.activationId))
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
                    .blob(record.serverPublicKey), .blob(box.nonce), .blob(box.ciphertext),
                ] + Self.mutableValues(record).dropFirst(2))
        } catch {
            if case .constraint = error { throw .duplicate }
            throw .storage(reason: "\(error)")
        }
        try writeV4(record)
    }

    /// Reads a record (its private key opened into secure memory).
    public func fetch(activationId: String) throws(ActivationServerError) -> ActivationRecord? {
        try read(activationId, on: reader)
    }

    /// Reads a record on one of the two connections.
    private func read(_ activationId: String, on connection: SQLiteDatabase) throws(ActivationServerError)
        -> ActivationRecord?
    {
        do throws(ReferenceServerError) {
            let rows = try sql { () throws(SQLiteError) in
                try connection.query(Self.selectRecord, [.text(activationId)])
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
            let beforeV4 = record.v4?.changeMarker
            let result = try body(&record)
            // A change that changes nothing (a status read that expires no block) writes nothing:
            // the commit then has no WAL frame to sync.
            if Self.mutableValues(record) != before || record.v4?.changeMarker != beforeV4 { try write(record) }
            return result
        }
    }

    /// Counts one attempt and writes its audit row, in one `BEGIN IMMEDIATE` transaction.
    ///
    /// Group commit: attempts that arrive while another batch is being committed share the next
    /// transaction (each in its own savepoint, applied in arrival order, so counts stay exact and
    /// one attempt's error leaves the others), and one `fsync` makes the whole batch durable.
    /// No attempt returns before its batch has committed; when the commit fails, all of its
    /// attempts fail and none was counted.
    public func recordAttempt(
        activationId: String, outcome: AttemptOutcome, now: Date, failureBlockDuration: TimeInterval?
    ) throws(ActivationServerError) -> AttemptResult {
        let result = try submit(
            PendingAttempt(
                activationId: activationId, outcome: outcome, now: now, failureBlockDuration: failureBlockDuration,
                observed: nil))
        guard let result else { throw .storage(reason: "an attempt was not recorded") }
        return result
    }

    /// This store writes conditionally (`applyIfUnchanged`).
    public var writesConditionally: Bool { true }

    /// The conditional `UPDATE` alone, in the group commit like any attempt: `nil` when the row
    /// changed since `observed` was read (nothing written).
    public func recordAttemptIfUnchanged(
        activationId: String, outcome: AttemptOutcome, now: Date, failureBlockDuration: TimeInterval?,
        observed: ActivationRecord
    ) throws(ActivationServerError) -> AttemptResult? {
        guard observed.activationId == activationId, ObservedRow.eligible(observed) else { return nil }
        return try submit(
            PendingAttempt(
                activationId: activationId, outcome: outcome, now: now, failureBlockDuration: failureBlockDuration,
                observed: observed))
    }

    private func submit(_ attempt: PendingAttempt) throws(ActivationServerError) -> AttemptResult? {
        try attempts.submit(attempt) { batch in commitAttempts(batch) }.get()
    }

    /// One transaction for a batch of attempts, one savepoint per attempt.
    private func commitAttempts(_ batch: [PendingAttempt]) -> [Result<AttemptResult?, ActivationServerError>] {
        var results: [Result<AttemptResult?, ActivationServerError>] = []
        do throws(ActivationServerError) {
            try inTransaction { () throws(ActivationServerError) in
                results = []
                for attempt in batch {
                    _ = try sqlStep { () throws(SQLiteError) in try database.run("SAVEPOINT attempt") }
                    do throws(ActivationServerError) {
                        let result = try applyAttempt(attempt)
                        _ = try sqlStep { () throws(SQLiteError) in try database.run("RELEASE attempt") }
                        results.append(.success(result))
                    } catch {
                        // This attempt changes nothing; the batch goes on.
                        try sqlStep { () throws(SQLiteError) in
                            try database.run("ROLLBACK TO attempt")
                            try database.run("RELEASE attempt")
                        }
                        results.append(.failure(error))
                    }
                }
            }
        } catch {
            return batch.map { _ in .failure(error) }
        }
        return results
    }

    /// Counts one attempt and writes its audit row; the caller holds the transaction.
    private func applyAttempt(_ attempt: PendingAttempt) throws(ActivationServerError) -> AttemptResult? {
        // A conditional attempt writes only if the row is as observed (`nil` otherwise).
        if let observed = attempt.observed { return try applyIfUnchanged(attempt, observed: observed) }
        var record = try load(attempt.activationId)
        let before = record
        let accepted = record.apply(
            attempt.outcome, now: attempt.now, failureBlockDuration: attempt.failureBlockDuration)
        // The rule moves only plain columns and the V4 counter: the sealed V4 state stays as it is.
        try write(record, resealing: false)
        try audit(attempt, AuditOutcome.of(accepted: accepted, before: before, after: record, now: attempt.now))
        return AttemptResult(
            accepted: accepted, state: record.state, failedAttempts: record.failedAttempts,
            maxFailedAttempts: record.maxFailedAttempts)
    }

    /// The short path of a counted attempt: the rule applied to the record the verifier read,
    /// written by one `UPDATE` whose condition is that the row still holds every value the
    /// verifier saw (`ObservedRow`); `nil` when it does not (then the caller reads the row and
    /// applies the rule to it, as without `observed`). Saves reading the row and opening its
    /// sealed key a second time.
    private func applyIfUnchanged(_ attempt: PendingAttempt, observed: ActivationRecord)
        throws(ActivationServerError) -> AttemptResult?
    {
        var record = observed
        let accepted = record.apply(
            attempt.outcome, now: attempt.now, failureBlockDuration: attempt.failureBlockDuration)
        let changed = try sqlStep { () throws(SQLiteError) in
            try database.run(
                """
                UPDATE activation SET state = ?, counter = ?, counter_index = ?, failed_attempts = ?, blocked_until = ?,
                v4_counter = COALESCE(?, v4_counter)
                WHERE id = ? AND state = ? AND counter = ? AND counter_index = ? AND failed_attempts = ?
                AND max_failed_attempts = ? AND blocked_until IS ? AND device_public_key IS ? AND biometry_enabled = ?
                AND v4_nonce IS ?
                """,
                [
                    .integer(Int64(record.state.rawValue)), .blob(record.counter.bytes),
                    .integer(Int64(bitPattern: record.counterIndex)), .integer(Int64(record.failedAttempts)),
                    record.blockedUntil.map { .real($0.timeIntervalSince1970) } ?? .null,
                    record.v4.map { .blob($0.counter.bytes) } ?? .null,
                    .text(observed.activationId), .integer(Int64(observed.state.rawValue)),
                    .blob(observed.counter.bytes), .integer(Int64(bitPattern: observed.counterIndex)),
                    .integer(Int64(observed.failedAttempts)), .integer(Int64(observed.maxFailedAttempts)),
                    observed.blockedUntil.map { .real($0.timeIntervalSince1970) } ?? .null,
                    observed.devicePublicKey.map { .blob($0) } ?? .null, .integer(observed.biometryEnabled ? 1 : 0),
                    observed.sealedStateMark.map { .blob($0) } ?? .null,
                ])
        }
        guard changed == 1 else { return nil }
        try audit(attempt, AuditOutcome.of(accepted: accepted, before: observed, after: record, now: attempt.now))
        shortPathAttempts.add(1, ordering: .relaxed)
        return AttemptResult(
            accepted: accepted, state: record.state, failedAttempts: record.failedAttempts,
            maxFailedAttempts: record.maxFailedAttempts)
    }

    private func audit(_ attempt: PendingAttempt, _ outcome: AuditOutcome) throws(ActivationServerError) {
        _ = try sqlStep { () throws(SQLiteError) in
            try database.run(
                "INSERT INTO attempt_audit(activation_id, at, outcome) VALUES (?, ?, ?)",
                [.text(attempt.activationId), .real(attempt.now.timeIntervalSince1970), .text(outcome.rawValue)])
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
        biometry_enabled, v4_nonce, v4_sealed, v4_counter FROM activation WHERE id = ?
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
        guard let record = try read(activationId, on: database) else { throw .activationNotFound }
        return record
    }

    /// Writes the row; `resealing` also seals and stores its V4 state again (a fresh nonce),
    /// else only the V4 counter moves.
    private func write(_ r: ActivationRecord, resealing: Bool = true) throws(ActivationServerError) {
        _ = try sqlStep { () throws(SQLiteError) in
            try database.run(
                """
                UPDATE activation SET name = ?, state = ?, device_public_key = ?, counter = ?, counter_index = ?,
                failed_attempts = ?, max_failed_attempts = ?, blocked_until = ?, biometry_enabled = ?,
                v4_counter = COALESCE(?, v4_counter) WHERE id = ?
                """, Self.mutableValues(r) + [r.v4.map { .blob($0.counter.bytes) } ?? .null, .text(r.activationId)])
        }
        if resealing { try writeV4(r) }
    }

    static func v4Label(_ activationId: String) -> [UInt8] {
        Array("SecurePIN activation V4 state v1|".utf8) + Array(activationId.utf8)
    }

    /// Seals and stores the record's V4 state and its counter (nothing for a V3.3 record).
    private func writeV4(_ r: ActivationRecord) throws(ActivationServerError) {
        guard let state = r.v4 else { return }
        let box: AEAD.SealedBox
        do throws(ReferenceServerError) {
            let plain = try V4StateCoding.encode(state, upgrade: r.v4Upgrade)
            defer { plain.destroy() }
            box = try seal(plain, label: Self.v4Label(r.activationId))
        } catch {
            throw .storage(reason: "sealing the V4 state failed")
        }
        _ = try sqlStep { () throws(SQLiteError) in
            try database.run(
                "UPDATE activation SET v4_nonce = ?, v4_sealed = ?, v4_counter = ? WHERE id = ?",
                [.blob(box.nonce), .blob(box.ciphertext), .blob(state.counter.bytes), .text(r.activationId)])
        }
    }

    private func decode(_ row: SQLiteRow) throws(ReferenceServerError) -> ActivationRecord {
        guard let id = row[0].string, let code = row[1].string, let user = row[2].string, let name = row[3].string,
            let stateValue = row[4].int64, let state = ProtocolActivationState(rawValue: UInt8(clamping: stateValue)),
            let publicKey = row[5].bytes, let nonce = row[6].bytes, let sealed = row[7].bytes,
            let counterBytes = row[9].bytes, let index = row[10].int64, let failures = row[11].int64,
            let limit = row[12].int64, let biometry = row[14].int64
        else { throw .corruptRecord(reason: "activation columns") }
        // Opened only when a request needs it (not when the factor keys are cached).
        let privateKey = ServerPrivateKey { [self] () throws(ActivationServerError) -> SecureBytes in
            do throws(ReferenceServerError) {
                return try open(nonce: nonce, sealed: sealed, label: Self.recordLabel(id))
            } catch {
                throw .storage(reason: "a sealed key does not open under this key file")
            }
        }
        let counter: HashCounter
        do throws(ProtocolError) {
            counter = try HashCounter(bytes: counterBytes)
        } catch {
            throw .corruptRecord(reason: "counter")
        }
        var record = ActivationRecord(
            activationId: id, activationCode: code, userId: user, serverPublicKey: publicKey,
            serverPrivateKey: privateKey, counter: counter, maxFailedAttempts: Int(limit))
        record.name = name
        record.state = state
        record.devicePublicKey = row[8].bytes
        record.counterIndex = UInt64(bitPattern: index)
        record.failedAttempts = Int(failures)
        record.blockedUntil = row[13].double.map { Date(timeIntervalSince1970: $0) }
        record.biometryEnabled = biometry != 0
        if let v4Nonce = row[15].bytes, let v4Sealed = row[16].bytes {
            let plain = try open(nonce: v4Nonce, sealed: v4Sealed, label: Self.v4Label(id))
            defer { plain.destroy() }
            (record.v4, record.v4Upgrade) = try V4StateCoding.decodeWithUpgrade(plain)
            if let column = row[17].bytes { record.v4?.counter = try V4StateCoding.counter(column) }
            record.sealedStateMark = v4Nonce
        }
        return record
    }

    // MARK: - Sealing

    func seal(_ secret: SecureBytes, label: [UInt8]) throws(ReferenceServerError) -> AEAD.SealedBox {
        do throws(SecureCoreError) {
            return try AEAD.seal(secret, using: storageKey, associatedData: label)
        } catch {
            throw .corruptRecord(reason: "sealing failed: \(error)")
        }
    }

    func open(nonce: [UInt8], sealed: [UInt8], label: [UInt8]) throws(ReferenceServerError) -> SecureBytes {
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

    /// What applying one attempt did, from the record before and after
    /// ``ActivationRecord/apply(_:now:failureBlockDuration:)`` at `now` and its answer. A
    /// temporary block whose time was up ends before the attempt is judged (as `apply` does),
    /// so the failure counted after it is a `failure` (or `failureBlocked`), not `refused`.
    static func of(accepted: Bool, before: ActivationRecord, after: ActivationRecord, now: Date) -> AuditOutcome {
        if accepted { return .accepted }
        var judged = before
        judged.expireBlock(now: now)
        if after.failedAttempts > judged.failedAttempts || (after.state == .blocked && judged.state != .blocked) {
            return after.state == .blocked ? .failureBlocked : .failure
        }
        return .refused
    }
}

/// The fields of an activation row that the counting rule reads or writes, or that a
/// verification used (all but the name and the V4 blob): a row whose values are still these
/// is one no other attempt or change touched since it was read.
enum ObservedRow {
    /// Whether the one-statement path may serve this record: every record whose V4 state, if
    /// any, came from a store (its `sealedStateMark` says which sealing the write expects; the
    /// V4 counter is a plain column, so the sealed state is not rewritten).
    static func eligible(_ record: ActivationRecord) -> Bool { record.v4 == nil || record.sealedStateMark != nil }
}

/// One row of the audit table: when, and what happened. No code, no key.
public struct AuditEntry: Sendable, Equatable {
    /// When the attempt was recorded.
    public let at: Date
    /// What it did.
    public let outcome: AuditOutcome
}

extension SQLiteActivationStore {
    /// Loads the stored V4 master key pair, or stores `make()`'s on first use (sealed under the
    /// storage key, as the V3 master key).
    /// - Parameter make: creates a fresh pair.
    /// - Returns: the pair in force.
    /// - Throws: ``ReferenceServerError``.
    public func loadOrStoreV4MasterKey(_ make: () throws(ActivationServerError) -> ECP384KeyPair)
        throws(ReferenceServerError) -> ECP384KeyPair
    {
        let label = Array("SecurePIN server V4 master key v1".utf8)
        if let stored = try storedV4MasterKey(label: label) { return stored }
        let fresh: ECP384KeyPair
        do throws(ActivationServerError) {
            fresh = try make()
        } catch {
            throw .activationServer(error)
        }
        let box = try seal(fresh.privateKey, label: label)
        let changed: Int
        do throws(SQLiteError) {
            // Only where no key is stored yet: a second process starting on the same file at the
            // same moment keeps the first one's key instead of replacing it under its feet.
            changed = try database.run(
                """
                UPDATE server_configuration SET v4_master_public_key = ?, v4_master_private_nonce = ?,
                v4_master_private_sealed = ? WHERE id = 1 AND v4_master_private_sealed IS NULL
                """, [.blob(fresh.publicKey), .blob(box.nonce), .blob(box.ciphertext)])
        } catch {
            throw .storage(reason: "\(error)")
        }
        if changed == 1 { return fresh }
        guard let stored = try storedV4MasterKey(label: label) else {
            throw .corruptRecord(reason: "the V4 master key")
        }
        return stored
    }

    /// The stored V4 master key, or `nil` when none is stored yet.
    private func storedV4MasterKey(label: [UInt8]) throws(ReferenceServerError) -> ECP384KeyPair? {
        let rows: [SQLiteRow]
        do throws(SQLiteError) {
            rows = try database.query(
                "SELECT v4_master_private_nonce, v4_master_private_sealed FROM server_configuration WHERE id = 1")
        } catch {
            throw .storage(reason: "\(error)")
        }
        guard let row = rows.first else { throw .corruptRecord(reason: "no server configuration") }
        guard let nonce = row[0].bytes, let sealed = row[1].bytes else { return nil }
        let privateKey = try open(nonce: nonce, sealed: sealed, label: label)
        do throws(ProtocolError) {
            return try ECP384KeyPair(privateKey: privateKey)
        } catch {
            throw .corruptRecord(reason: "the V4 master key")
        }
    }
}

extension SQLiteActivationStore {
    /// Loads the stored ML-DSA master key pair of `parameterSet`, or stores a fresh one on first
    /// use: insert-or-ignore, then read back, so that a second process starting on the same file
    /// at the same moment ends with the first one's key.
    /// - Parameter parameterSet: ML-DSA-65 (`EC_P384_ML_L3`) or ML-DSA-87 (`EC_P384_ML_L5`).
    /// - Returns: the pair in force.
    /// - Throws: ``ReferenceServerError``.
    public func loadOrStoreV4PostQuantumMasterKey(_ parameterSet: MLDSA.ParameterSet) throws(ReferenceServerError)
        -> MLDSA.KeyPair
    {
        let name = V4PostQuantumMasterKey.name(parameterSet)
        let label = V4PostQuantumMasterKey.label(parameterSet)
        if let stored = try storedV4PostQuantumMasterKey(parameterSet) { return stored }
        let (seed, fresh) = try V4PostQuantumMasterKey.generate(parameterSet)
        defer {
            seed.destroy()
            fresh.destroy()
        }
        let box = try seal(seed, label: label)
        _ = try sqlV4 { () throws(SQLiteError) in
            try database.run(
                """
                INSERT OR IGNORE INTO v4_pq_master_key(parameter_set, public_key, seed_nonce, seed_sealed)
                VALUES (?, ?, ?, ?)
                """, [.text(name), .blob(fresh.publicKey), .blob(box.nonce), .blob(box.ciphertext)])
        }
        guard let stored = try storedV4PostQuantumMasterKey(parameterSet) else {
            throw .corruptRecord(reason: "the \(name) master key")
        }
        return stored
    }

    private func storedV4PostQuantumMasterKey(_ parameterSet: MLDSA.ParameterSet) throws(ReferenceServerError)
        -> MLDSA.KeyPair?
    {
        let rows = try sqlV4 { () throws(SQLiteError) in
            try database.query(
                "SELECT public_key, seed_nonce, seed_sealed FROM v4_pq_master_key WHERE parameter_set = ?",
                [.text(V4PostQuantumMasterKey.name(parameterSet))])
        }
        guard let row = rows.first else { return nil }
        guard let publicKey = row[0].bytes, let nonce = row[1].bytes, let sealed = row[2].bytes else {
            throw .corruptRecord(reason: "the \(V4PostQuantumMasterKey.name(parameterSet)) master key")
        }
        let seed = try open(nonce: nonce, sealed: sealed, label: V4PostQuantumMasterKey.label(parameterSet))
        defer { seed.destroy() }
        return try V4PostQuantumMasterKey.expand(parameterSet, seed: seed, publicKey: publicKey)
    }

    private func sqlV4<R>(_ body: () throws(SQLiteError) -> R) throws(ReferenceServerError) -> R {
        do throws(SQLiteError) {
            return try body()
        } catch {
            throw .storage(reason: "\(error)")
        }
    }
}

/// The binary form of `ActivationServer.V4ActivationState` inside its sealed column:
/// `01 ‖ flags(1) ‖ server private (48) ‖ CTR_DATA (32) ‖ u32be(keyGeneration) ‖ then, when their flag
/// is set, KEY_ACTIVATION_SECRET, knowledge key, next knowledge key, biometry key, next biometry key
/// (32 bytes each) and the device public key (97)`, then for a hybrid suite the 32-byte seed of the
/// activation's ML-DSA key and, when the device sent one, its raw ML-DSA public key (1,952 or
/// 2,592 bytes; rows written before devices sent it end at the seed). Flags: bit0 confirmation pending, bit1 secret, bit2 device key, bit3 ... bit6
/// the four factor keys, bit7 upgrade from V3.3 pending. The first byte names the suite of this one
/// layout: `01` `EC_P384` (all rows written before the hybrid suites), `02` `EC_P384_ML_L3`, `03`
/// `EC_P384_ML_L5`. Built and read in secure memory.
///
/// Bit 6 (`0x40`) of the first byte says that the server's 97-byte public key ends the layout, so
/// reading a row needs no scalar multiplication; every row written now has it, rows written before
/// it recompute the key from the private one (and gain it on their next write).
///
/// A state with a pending upgrade to a stronger suite (`ActivationRecord.v4Upgrade`) sets the
/// first byte's top bit and is followed by the pending state's own encoding and its length
/// (`u32be`), so rows without one read as before.
enum V4StateCoding {
    /// The V4 counter of a row's plain column, which when set is newer than the copy in the
    /// sealed state (a row written before the column has only that copy).
    static func counter(_ column: [UInt8]) throws(ReferenceServerError) -> V4HashCounter {
        do throws(ProtocolError) {
            return try V4HashCounter(bytes: column)
        } catch {
            throw .corruptRecord(reason: "the V4 counter")
        }
    }

    static let fixed = 86
    /// The first byte's flag for the stored server public key at the end.
    static let storedPublicKeyFlag: UInt8 = 0x40
    static let publicKeyCount = 97
    /// The suites by their first byte (index + 1); never reorder.
    static let suites: [ProtocolAlgorithm] = [.ecP384, .ecP384MLL3, .ecP384MLL5]

    static func encode(_ state: V4ActivationState) throws(ReferenceServerError) -> SecureBytes {
        let secrets = [
            state.activationSecret, state.knowledgeKey, state.knowledgeNext, state.biometryKey, state.biometryNext,
        ]
        let device = state.devicePublicKey ?? []
        var flags: UInt8 =
            (state.confirmationPending ? 1 : 0) | (device.isEmpty ? 0 : 4) | (state.upgradePending ? 0x80 : 0)
        for (bit, secret) in zip([1, 3, 4, 5, 6], secrets) where secret != nil { flags |= 1 << bit }
        let present = secrets.compactMap { $0 }
        guard present.allSatisfy({ $0.count == 32 }) else { throw .corruptRecord(reason: "a V4 key size") }
        guard let version = suites.firstIndex(of: state.algorithm) else {
            throw .corruptRecord(reason: "a V4 state of \(state.algorithm.rawValue)")
        }
        let seed = state.algorithm.signatureParameterSet == nil ? nil : state.postQuantumSeed
        guard (state.algorithm.signatureParameterSet == nil) == (seed == nil), seed.map({ $0.count == 32 }) ?? true
        else { throw .corruptRecord(reason: "the V4 ML-DSA seed") }
        let devicePostQuantum = seed == nil ? [] : (state.devicePostQuantumPublicKey ?? [])
        guard
            devicePostQuantum.isEmpty
                || devicePostQuantum.count == state.algorithm.signatureParameterSet?.publicKeyByteCount
        else { throw .corruptRecord(reason: "the device's ML-DSA key") }
        let serverPublic = state.serverKeyPair.publicKey
        guard serverPublic.count == publicKeyCount else { throw .corruptRecord(reason: "the server's P-384 key") }
        let count =
            fixed + 32 * present.count + device.count + (seed == nil ? 0 : 32) + devicePostQuantum.count
            + publicKeyCount
        let out: SecureBytes
        do throws(SecureCoreError) {
            out = try SecureBytes(count: count)
        } catch {
            throw .corruptRecord(reason: "memory")
        }
        let generation = withUnsafeBytes(of: state.keyGeneration.bigEndian) { Array($0) }
        out.withUnsafeMutableBytes { target in
            target[0] = UInt8(version + 1) | storedPublicKeyFlag
            target[1] = flags
            state.serverKeyPair.privateKey.withUnsafeBytes { key in
                for i in 0..<48 { target[2 + i] = key[key.count - 48 + i] }
            }
            for (i, byte) in (state.counter.bytes + generation).enumerated() { target[50 + i] = byte }
            var at = fixed
            for secret in present {
                secret.withUnsafeBytes { bytes in
                    for i in 0..<32 { target[at + i] = bytes[i] }
                }
                at += 32
            }
            for (i, byte) in device.enumerated() { target[at + i] = byte }
            at += device.count
            seed?.withUnsafeBytes { bytes in
                for i in 0..<32 { target[at + i] = bytes[i] }
            }
            at += seed == nil ? 0 : 32
            for (i, byte) in devicePostQuantum.enumerated() { target[at + i] = byte }
            at += devicePostQuantum.count
            for (i, byte) in serverPublic.enumerated() { target[at + i] = byte }
        }
        return out
    }

    /// The current state and, when the top bit of its first byte says so, the pending one.
    static func encode(_ state: V4ActivationState, upgrade: V4ActivationState?) throws(ReferenceServerError)
        -> SecureBytes
    {
        let current = try encode(state)
        guard let upgrade else { return current }
        defer { current.destroy() }
        let pending = try encode(upgrade)
        defer { pending.destroy() }
        let out: SecureBytes
        do throws(SecureCoreError) {
            out = try SecureBytes(count: current.count + pending.count + 4)
        } catch {
            throw .corruptRecord(reason: "memory")
        }
        let length = withUnsafeBytes(of: UInt32(pending.count).bigEndian) { Array($0) }
        out.withUnsafeMutableBytes { target in
            current.withUnsafeBytes { for i in 0..<$0.count { target[i] = $0[i] } }
            target[0] |= 0x80
            pending.withUnsafeBytes { for i in 0..<$0.count { target[current.count + i] = $0[i] } }
            for i in 0..<4 { target[current.count + pending.count + i] = length[i] }
        }
        return out
    }

    /// Reads what ``encode(_:upgrade:)`` wrote.
    static func decodeWithUpgrade(_ plain: SecureBytes) throws(ReferenceServerError) -> (
        V4ActivationState, V4ActivationState?
    ) {
        let bad = ReferenceServerError.corruptRecord(reason: "the V4 state")
        guard plain.count >= fixed else { throw bad }
        let first = plain.withUnsafeBytes { $0[0] }
        guard first & 0x80 != 0 else { return (try decode(plain), nil) }
        let length = plain.withUnsafeBytes { bytes in
            bytes[(bytes.count - 4)...].reduce(0) { $0 << 8 | Int($1) }
        }
        guard length >= fixed, length + fixed + 4 <= plain.count else { throw bad }
        let currentCount = plain.count - 4 - length
        do {
            let current = try SecureBytes(count: currentCount)
            defer { current.destroy() }
            let pending = try SecureBytes(count: length)
            defer { pending.destroy() }
            plain.withUnsafeBytes { source in
                current.withUnsafeMutableBytes { for i in 0..<currentCount { $0[i] = source[i] } }
                pending.withUnsafeMutableBytes { for i in 0..<length { $0[i] = source[currentCount + i] } }
            }
            current.withUnsafeMutableBytes { $0[0] &= 0x7F }
            return (try decode(current), try decode(pending))
        } catch {
            throw bad
        }
    }

    static func decode(_ plain: SecureBytes) throws(ReferenceServerError) -> V4ActivationState {
        let bad = ReferenceServerError.corruptRecord(reason: "the V4 state")
        guard plain.count >= fixed else { throw bad }
        let header: (UInt8, UInt8, [UInt8], [UInt8]) = plain.withUnsafeBytes {
            ($0[0] & ~storedPublicKeyFlag, $0[1], Array($0[50..<82]), Array($0[82..<86]))
        }
        let hasStoredPublic = plain.withUnsafeBytes { $0[0] & storedPublicKeyFlag != 0 }
        guard !hasStoredPublic || plain.count >= fixed + publicKeyCount else { throw bad }
        let storedPublic: [UInt8]? =
            hasStoredPublic ? plain.withUnsafeBytes { Array($0[($0.count - publicKeyCount)...]) } : nil
        // The layout before the stored public key (the bytes the older form had).
        let length = plain.count - (storedPublic == nil ? 0 : publicKeyCount)
        let flags = header.1
        let present = [1, 3, 4, 5, 6].map { flags & (1 << $0) != 0 }
        let hasDevice = flags & 4 != 0
        let secretCount = present.filter { $0 }.count
        guard (1...suites.count).contains(Int(header.0)) else { throw bad }
        let algorithm = suites[Int(header.0) - 1]
        let hybrid = algorithm.signatureParameterSet != nil
        let base = fixed + 32 * secretCount + (hasDevice ? 97 : 0) + (hybrid ? 32 : 0)
        let devicePostQuantumCount = algorithm.signatureParameterSet?.publicKeyByteCount ?? 0
        guard length == base || (hybrid && length == base + devicePostQuantumCount) else { throw bad }
        do {
            let privateKey = try SecureBytes(count: 48)
            var secrets: [SecureBytes?] = []
            for flag in present { secrets.append(flag ? try SecureBytes(count: 32) : nil) }
            let seed = hybrid ? try SecureBytes(count: 32) : nil
            let device: [UInt8]? = plain.withUnsafeBytes { source in
                privateKey.withUnsafeMutableBytes { target in
                    for i in 0..<48 { target[i] = source[2 + i] }
                }
                var at = fixed
                for secret in secrets.compactMap({ $0 }) {
                    let start = at
                    secret.withUnsafeMutableBytes { target in
                        for i in 0..<32 { target[i] = source[start + i] }
                    }
                    at += 32
                }
                let device = hasDevice ? Array(source[at..<(at + 97)]) : nil
                at += hasDevice ? 97 : 0
                let start = at
                seed?.withUnsafeMutableBytes { target in
                    for i in 0..<32 { target[i] = source[start + i] }
                }
                return device
            }
            let devicePostQuantum: [UInt8]? =
                length == base ? nil : plain.withUnsafeBytes { Array($0[base..<length]) }
            let serverKeyPair =
                try storedPublic.map { (key) throws(ProtocolError) in
                    try ECP384KeyPair(privateKey: privateKey, storedPublicKey: key)
                } ?? ECP384KeyPair(privateKey: privateKey)
            var state = V4ActivationState(
                algorithm: algorithm, serverKeyPair: serverKeyPair,
                activationSecret: secrets[0], devicePublicKey: device,
                counter: try V4HashCounter(bytes: header.2), confirmationPending: flags & 1 != 0)
            state.knowledgeKey = secrets[1]
            state.knowledgeNext = secrets[2]
            state.biometryKey = secrets[3]
            state.biometryNext = secrets[4]
            state.keyGeneration = header.3.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            state.upgradePending = flags & 0x80 != 0
            state.postQuantumSeed = seed
            state.devicePostQuantumPublicKey = devicePostQuantum
            return state
        } catch {
            throw bad
        }
    }
}

/// One attempt waiting for its group commit.
struct PendingAttempt: Sendable {
    let activationId: String
    let outcome: AttemptOutcome
    let now: Date
    let failureBlockDuration: TimeInterval?
    /// For a conditional attempt, the record the verifier read: written only if the row is still
    /// exactly this (see `applyIfUnchanged`); otherwise nothing, and the answer is `nil`.
    let observed: ActivationRecord?
}
