import ActivationServer
import Foundation
import PostQuantum
import PostgresStore
import PowerAuthProtocol
import SecureCore
import Synchronization

/// `ActivationServer.ServerActivationStore` in PostgreSQL, for several `securepin server`
/// processes serving the same activations (see `docs/postgres.md`).
///
/// - Every counted attempt, state change and replay record is one transaction. A change
///   locks its activation's row first (`SELECT … FOR UPDATE`), runs the same
///   `ActivationServer.ActivationRecord` logic as every other store, and writes the row and
///   its audit row before `COMMIT`: two instances racing on one activation queue on that row
///   lock, so neither a failure is lost nor a success counted twice.
/// - Temporary keys and ECIES replay records live in the database too
///   (``sharedEphemeralState``), so any instance can serve any request.
/// - Private keys are sealed with XChaCha20-Poly1305 under the storage key of
///   ``ServerKeyFile`` (associated data: a label and the row's identifier), exactly as in
///   ``SQLiteActivationStore``; every instance needs the same key file.
/// - When the database is down, every operation throws
///   `ActivationServer.ActivationServerError.unavailable(reason:)` (HTTP 503); a statement
///   that failed is never repeated.
public final class PostgresActivationStore: ReferenceActivationStore {
    /// Attempts written by the one-statement path (the row as the verifier read it); for tests.
    let shortPathAttempts = Atomic<Int>(0)
    /// Conditional attempts sent in a statement that carried more than one (group commit); for tests.
    let batchedAttempts = Atomic<Int>(0)
    /// Conditional attempts answered `nil` unsent, because an earlier attempt of their batch named
    /// the same activation; for tests.
    let duplicateAttempts = Atomic<Int>(0)
    /// Concurrent conditional attempts, written by one statement per batch
    /// (see ``recordAttemptIfUnchanged(activationId:outcome:now:failureBlockDuration:observed:)``).
    let conditionalWrites = GroupCommit<ConditionalWrite, Result<AttemptResult?, ActivationServerError>>(
        limit: PostgresActivationStore.batchLimit)
    /// The schema, one migration step per version (never edit a released step).
    static let migrations: [String] = [
        """
        CREATE TABLE server_configuration(
            id integer PRIMARY KEY CHECK (id = 1),
            application_key bytea NOT NULL,
            application_secret bytea NOT NULL,
            master_public_key bytea NOT NULL,
            master_private_nonce bytea NOT NULL,
            master_private_sealed bytea NOT NULL);
        CREATE TABLE activation(
            id text PRIMARY KEY,
            seq bigserial UNIQUE,
            code text NOT NULL UNIQUE,
            user_id text NOT NULL,
            name text NOT NULL,
            state bigint NOT NULL,
            server_public_key bytea NOT NULL,
            server_private_nonce bytea NOT NULL,
            server_private_sealed bytea NOT NULL,
            device_public_key bytea,
            counter bytea NOT NULL,
            counter_index bigint NOT NULL,
            failed_attempts bigint NOT NULL,
            max_failed_attempts bigint NOT NULL,
            blocked_until double precision,
            biometry_enabled boolean NOT NULL);
        CREATE TABLE attempt_audit(
            seq bigserial PRIMARY KEY,
            activation_id text NOT NULL,
            at double precision NOT NULL,
            outcome text NOT NULL);
        CREATE INDEX attempt_audit_activation ON attempt_audit(activation_id);
        CREATE TABLE token(
            id text PRIMARY KEY,
            activation_id text NOT NULL,
            signature_type text NOT NULL,
            created_at double precision NOT NULL);
        CREATE INDEX token_activation ON token(activation_id);
        CREATE TABLE temporary_key(
            id text PRIMARY KEY,
            application_key text NOT NULL,
            activation_id text,
            public_key bytea NOT NULL,
            private_nonce bytea NOT NULL,
            private_sealed bytea NOT NULL,
            expires_at bigint NOT NULL);
        CREATE INDEX temporary_key_expiry ON temporary_key(expires_at);
        CREATE TABLE ecies_replay(
            replay_key bytea PRIMARY KEY,
            forget_at bigint NOT NULL);
        CREATE INDEX ecies_replay_expiry ON ecies_replay(forget_at);
        """,
        // 2: the PIN vault's OPRF binding (OPRFVaultStore), as in the SQLite file.
        """
        CREATE TABLE oprf_vault_master(
            id bigint PRIMARY KEY CHECK (id = 1),
            nonce bytea NOT NULL,
            sealed bytea NOT NULL);
        CREATE TABLE oprf_vault(
            id bytea PRIMARY KEY,
            state bigint NOT NULL,
            failures bigint NOT NULL,
            max_failures bigint NOT NULL,
            challenge bytea,
            verifier_nonce bytea,
            verifier_sealed bytea,
            created double precision NOT NULL);
        CREATE TABLE oprf_vault_audit(
            seq bigserial PRIMARY KEY,
            vault_id bytea NOT NULL,
            at double precision NOT NULL,
            outcome text NOT NULL);
        """,
        // 3: protocol V4 (EC_P384), as SQLite's step 3: an activation's V4 state is one sealed blob, the V4
        // master key pair is sealed beside the V3 one; V4 temporary keys are shared like the V3 ones.
        """
        ALTER TABLE activation ADD COLUMN v4_nonce bytea;
        ALTER TABLE activation ADD COLUMN v4_sealed bytea;
        ALTER TABLE server_configuration ADD COLUMN v4_master_public_key bytea;
        ALTER TABLE server_configuration ADD COLUMN v4_master_private_nonce bytea;
        ALTER TABLE server_configuration ADD COLUMN v4_master_private_sealed bytea;
        CREATE TABLE v4_temporary_key(
            id text PRIMARY KEY,
            application_key text NOT NULL,
            activation_id text,
            secret_nonce bytea NOT NULL,
            secret_sealed bytea NOT NULL,
            expires_at bigint NOT NULL);
        CREATE INDEX v4_temporary_key_expiry ON v4_temporary_key(expires_at);
        """,
        // 4: the ML-DSA master keys of the hybrid V4 suites, as SQLite's step 4: one row per
        // parameter set, the 32-byte seed sealed, the public key beside it.
        """
        CREATE TABLE v4_pq_master_key(
            parameter_set text PRIMARY KEY,
            public_key bytea NOT NULL,
            seed_nonce bytea NOT NULL,
            seed_sealed bytea NOT NULL);
        """,
        // 5: temporary keys are stateless (sealed in their identifiers): their tables go.
        """
        DROP TABLE temporary_key;
        DROP TABLE v4_temporary_key;
        """,
        // 6: pending vault registrations expire (OPRFVaultStore.register), found by state and age.
        """
        CREATE INDEX oprf_vault_pending ON oprf_vault(state, created);
        CREATE INDEX oprf_vault_audit_vault ON oprf_vault_audit(vault_id);
        """,
        // 7: a V4 activation's SHA3 counter beside its sealed state, as SQLite's step 5 (one
        // conditional UPDATE counts an attempt; when set it is newer than the sealed copy).
        """
        ALTER TABLE activation ADD COLUMN v4_counter bytea;
        """,
    ]

    /// The schema version this code writes.
    public static var schemaVersion: Int { migrations.count }

    /// The connection pool.
    public let pool: PostgresPool
    private let storageKey: SecureBytes
    /// Replay checks made by this process; every ``sweepInterval``-th one also deletes the
    /// expired records, so the table stays bounded.
    private let accepted = Atomic<Int>(0)
    static let sweepInterval = 1024

    /// Connects (lazily, through the pool) and creates or migrates the schema.
    /// - Parameters:
    ///   - connectionString: the DSN in secure memory (see ``DSNFile``).
    ///   - storageKey: the 32-byte key from ``ServerKeyFile``, the same for every instance.
    ///   - pool: the pool's limits (connections, timeouts).
    /// - Throws: ``ReferenceServerError/storage(reason:)`` (also for a schema newer than this
    ///   code, or a database that cannot be reached).
    public init(
        connectionString: SecureBytes, storageKey: SecureBytes,
        pool: PostgresPool.Configuration = PostgresPool.Configuration()
    ) throws(ReferenceServerError) {
        guard storageKey.count == ServerKeyFile.keyByteCount else {
            throw .invalidConfiguration(reason: "the storage key must be 32 bytes")
        }
        do throws(PostgresError) {
            self.pool = try PostgresPool(connectionString: connectionString, configuration: pool)
            try self.pool.migrate(Self.migrations)
        } catch {
            throw .storage(reason: Self.describe(error))
        }
        self.storageKey = storageKey
    }

    // MARK: - Server configuration

    /// Loads the stored server configuration, or stores `make()`'s on first use, under an
    /// advisory lock so that instances starting together agree on one.
    public func loadOrStoreConfiguration(
        _ make: () throws(ActivationServerError) -> ActivationServerConfiguration,
        restore: ([UInt8], [UInt8], KeyPair) throws(ActivationServerError) -> ActivationServerConfiguration
    ) throws(ReferenceServerError) -> ActivationServerConfiguration {
        let label = Array("SecurePIN server master key v1".utf8)
        var failure: ReferenceServerError?
        do throws(PostgresError) {
            return try pool.transaction { (c) throws(PostgresError) -> ActivationServerConfiguration in
                do throws(ReferenceServerError) {
                    try sql { () throws(PostgresError) in try c.execute("SELECT pg_advisory_xact_lock(7291004)") }
                    let rows = try sql { () throws(PostgresError) in
                        try c.query(
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
                    try sql { () throws(PostgresError) in
                        try c.query(
                            "INSERT INTO server_configuration VALUES (1, $1, $2, $3, $4, $5)",
                            [
                                .bytes(fresh.applicationKey), .bytes(fresh.applicationSecret),
                                .bytes(fresh.masterKeyPair.publicKey), .bytes(box.nonce), .bytes(box.ciphertext),
                            ])
                    }
                    return fresh
                } catch {
                    failure = error
                    throw .aborted(reason: "configuration")
                }
            }
        } catch {
            throw failure ?? .storage(reason: Self.describe(error))
        }
    }

    /// Loads the stored protocol V4 master key pair, or stores `make()`'s on first use (sealed
    /// under the storage key, as the V3 master key), under the configuration's advisory lock so
    /// that instances starting together agree on one.
    /// - Parameter make: creates a fresh pair.
    /// - Returns: the pair in force.
    /// - Throws: ``ReferenceServerError``.
    public func loadOrStoreV4MasterKey(_ make: () throws(ActivationServerError) -> ECP384KeyPair)
        throws(ReferenceServerError) -> ECP384KeyPair
    {
        let label = Array("SecurePIN server V4 master key v1".utf8)
        var failure: ReferenceServerError?
        do throws(PostgresError) {
            return try pool.transaction { (c) throws(PostgresError) -> ECP384KeyPair in
                do throws(ReferenceServerError) {
                    try sql { () throws(PostgresError) in try c.execute("SELECT pg_advisory_xact_lock(7291004)") }
                    let rows = try sql { () throws(PostgresError) in
                        try c.query(
                            """
                            SELECT v4_master_private_nonce, v4_master_private_sealed FROM server_configuration
                            WHERE id = 1
                            """)
                    }
                    guard let row = rows.first else { throw .corruptRecord(reason: "no server configuration") }
                    if let nonce = row[0].bytes, let sealed = row[1].bytes {
                        let privateKey = try open(nonce: nonce, sealed: sealed, label: label)
                        do throws(ProtocolError) {
                            return try ECP384KeyPair(privateKey: privateKey)
                        } catch {
                            throw .corruptRecord(reason: "the V4 master key")
                        }
                    }
                    let fresh = try lift(make)
                    let box = try seal(fresh.privateKey, label: label)
                    try sql { () throws(PostgresError) in
                        try c.query(
                            """
                            UPDATE server_configuration SET v4_master_public_key = $1, v4_master_private_nonce = $2,
                            v4_master_private_sealed = $3 WHERE id = 1
                            """, [.bytes(fresh.publicKey), .bytes(box.nonce), .bytes(box.ciphertext)])
                    }
                    return fresh
                } catch {
                    failure = error
                    throw .aborted(reason: "V4 master key")
                }
            }
        } catch {
            throw failure ?? .storage(reason: Self.describe(error))
        }
    }

    // MARK: - ServerActivationStore

    /// Temporary keys and replay records, in the database.
    public var sharedEphemeralState: (any SharedEphemeralState)? { PostgresEphemeralState(store: self) }

    /// Adds a new record, its private key sealed.
    public func insert(_ record: ActivationRecord) throws(ActivationServerError) {
        let privateKey = try record.serverPrivateKey.key()
        let box: AEAD.SealedBox
        do throws(ReferenceServerError) {
            box = try seal(privateKey, label: SQLiteActivationStore.recordLabel(record.activationId))
        } catch {
            throw .storage(reason: "sealing the server key failed")
        }
        let v4 = try v4Values(record)
        try run { () throws(PostgresError) in
            try pool.withConnection { (c) throws(PostgresError) in
                try c.query(
                    """
                    INSERT INTO activation(id, code, user_id, name, state, server_public_key, server_private_nonce,
                    server_private_sealed, device_public_key, counter, counter_index, failed_attempts,
                    max_failed_attempts, blocked_until, biometry_enabled, v4_nonce, v4_sealed, v4_counter)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
                    """,
                    [
                        .text(record.activationId), .text(record.activationCode), .text(record.userId),
                        .text(record.name), .integer(Int64(record.state.rawValue)),
                        .bytes(record.serverPublicKey), .bytes(box.nonce), .bytes(box.ciphertext),
                    ] + Self.mutableValues(record).dropFirst(2) + v4)
            }
        }
    }

    /// Reads a record (its private key opened into secure memory).
    public func fetch(activationId: String) throws(ActivationServerError) -> ActivationRecord? {
        let rows = try run { () throws(PostgresError) in
            try pool.withConnection(idempotent: true) { (c) throws(PostgresError) in
                try c.query(Self.selectRecord, [.text(activationId)])
            }
        }
        return try rows.first.map { (row) throws(ActivationServerError) in try decodeRecord(row) }
    }

    /// Finds the activation of a code.
    public func activationId(forCode activationCode: String) throws(ActivationServerError) -> String? {
        try run { () throws(PostgresError) in
            try pool.withConnection(idempotent: true) { (c) throws(PostgresError) in
                try c.query("SELECT id FROM activation WHERE code = $1", [.text(activationCode)]).first?[0].string
            }
        }
    }

    /// Changes a record in one transaction, its row locked (`FOR UPDATE`); nothing is stored
    /// when `body` throws.
    public func update<R: Sendable>(
        activationId: String, _ body: (inout ActivationRecord) throws(ActivationServerError) -> R
    ) throws(ActivationServerError) -> R {
        try inTransaction { (c) throws(ActivationServerError) -> R in
            var record = try lockedRecord(activationId, on: c)
            let before = Self.mutableValues(record)
            let beforeV4 = record.v4?.changeMarker
            let result = try body(&record)
            // A change that changes nothing (a status read that expires no block) writes nothing.
            if Self.mutableValues(record) != before || record.v4?.changeMarker != beforeV4 {
                try write(record, on: c)
            }
            return result
        }
    }

    /// Counts one attempt and writes its audit row in one transaction, the activation's row
    /// locked first: instances racing on one activation take turns.
    public func recordAttempt(
        activationId: String, outcome: AttemptOutcome, now: Date, failureBlockDuration: TimeInterval?
    ) throws(ActivationServerError) -> AttemptResult {
        try inTransaction { (c) throws(ActivationServerError) -> AttemptResult in
            try lockedAttempt(
                activationId: activationId, outcome: outcome, now: now, failureBlockDuration: failureBlockDuration,
                on: c)
        }
    }

    /// This store writes conditionally (the one statement below).
    public var writesConditionally: Bool { true }

    /// The one-statement attempt: when the row still holds every value the verifier saw
    /// (`ObservedRow`), the rule's result on `observed` is written by one statement — a
    /// conditional `UPDATE` and its audit row, atomic as any single statement — in one round trip,
    /// instead of five (`BEGIN`, `SELECT … FOR UPDATE`, `UPDATE`, `INSERT`, `COMMIT`) and a second
    /// opening of the sealed key; `nil` when another instance or request changed the row in
    /// between (nothing written; the caller takes the locked path).
    ///
    /// Group commit: attempts that arrive while this instance's previous statement is in flight
    /// go together in the next one (`writeConditionally`), so one commit — one WAL flush —
    /// answers all of them. Each attempt of it is written with its audit row, or not at all
    /// (`nil`); a statement carries at most one attempt per activation.
    ///
    /// The statement is never repeated: the pool hands out only connections that still look
    /// alive (`PostgresConnection.isAlive`), and a failure after it was sent is reported
    /// (`unavailable`, a 503) to every attempt it carried because it may have committed, as a
    /// failed `COMMIT` is.
    public func recordAttemptIfUnchanged(
        activationId: String, outcome: AttemptOutcome, now: Date, failureBlockDuration: TimeInterval?,
        observed: ActivationRecord
    ) throws(ActivationServerError) -> AttemptResult? {
        guard observed.activationId == activationId, ObservedRow.eligible(observed) else { return nil }
        // The rule runs on the caller's thread; the batch's leader only sends the results.
        var after = observed
        let accepted = after.apply(outcome, now: now, failureBlockDuration: failureBlockDuration)
        let write = ConditionalWrite(
            observed: observed, after: after, accepted: accepted,
            label: AuditOutcome.of(accepted: accepted, before: observed, after: after, now: now), now: now)
        return try conditionalWrites.submit(write) { batch in writeConditionally(batch) }.get()
    }

    /// One statement for a batch of conditional attempts (the leader of ``conditionalWrites``
    /// runs it): each attempt's answer, in order. An attempt whose activation an earlier one of
    /// the batch already names is not sent and gets `nil` (the caller takes the locked path):
    /// PostgreSQL updates a row at most once per `UPDATE … FROM`, and which of two inputs for it
    /// would win is unspecified. A failed statement fails every attempt it carried with the same
    /// error, and none of them was counted unless it committed before the failure was seen (the
    /// one case a single attempt's statement has too: a 503, never repeated).
    private func writeConditionally(_ batch: [ConditionalWrite]) -> [Result<AttemptResult?, ActivationServerError>] {
        var results = [Result<AttemptResult?, ActivationServerError>](repeating: .success(nil), count: batch.count)
        var named = Set<String>()
        var sent: [Int] = []
        for (index, write) in batch.enumerated() {
            if named.insert(write.observed.activationId).inserted {
                sent.append(index)
            } else {
                duplicateAttempts.add(1, ordering: .relaxed)
            }
        }
        let writes = sent.map { batch[$0] }
        if writes.count > 1 { batchedAttempts.add(writes.count, ordering: .relaxed) }
        let written: Set<String>
        do throws(ActivationServerError) {
            written = try run { () throws(PostgresError) in
                try pool.withConnection { (c) throws(PostgresError) in
                    let rows =
                        writes.count == 1
                        ? try c.query(Self.conditionalStatement, Self.conditionalValues(writes[0]))
                        : try c.query(
                            Self.batchStatements[writes.count], writes.flatMap(Self.batchValues))
                    return Set(rows.compactMap { $0[0].string })
                }
            }
        } catch {
            for index in sent { results[index] = .failure(error) }
            return results
        }
        for index in sent where written.contains(batch[index].observed.activationId) {
            shortPathAttempts.add(1, ordering: .relaxed)
            results[index] = .success(batch[index].result)
        }
        return results
    }

    /// The conditional write of one attempt: the row updated only if it still holds every value
    /// of the observation, and its audit row inserted from the updated row (so with it or not at all).
    static let conditionalStatement = """
        WITH changed AS (
        UPDATE activation SET state = $1, counter = $2, counter_index = $3, failed_attempts = $4,
        blocked_until = $5, v4_counter = COALESCE($17::bytea, v4_counter)
        WHERE id = $6 AND state = $7 AND counter = $8 AND counter_index = $9
        AND failed_attempts = $10 AND max_failed_attempts = $11
        AND blocked_until IS NOT DISTINCT FROM $12 AND device_public_key IS NOT DISTINCT FROM $13
        AND biometry_enabled = $14 AND v4_nonce IS NOT DISTINCT FROM $18::bytea RETURNING id)
        INSERT INTO attempt_audit(activation_id, at, outcome) SELECT id, $15, $16 FROM changed
        RETURNING activation_id
        """

    static func conditionalValues(_ w: ConditionalWrite) -> [PostgresValue] {
        let (record, observed) = (w.after, w.observed)
        return [
            .integer(Int64(record.state.rawValue)), .bytes(record.counter.bytes),
            .integer(Int64(bitPattern: record.counterIndex)), .integer(Int64(record.failedAttempts)),
            record.blockedUntil.map { .double($0.timeIntervalSince1970) } ?? .null,
            .text(observed.activationId), .integer(Int64(observed.state.rawValue)),
            .bytes(observed.counter.bytes), .integer(Int64(bitPattern: observed.counterIndex)),
            .integer(Int64(observed.failedAttempts)), .integer(Int64(observed.maxFailedAttempts)),
            observed.blockedUntil.map { .double($0.timeIntervalSince1970) } ?? .null,
            observed.devicePublicKey.map { .bytes($0) } ?? .null, .bool(observed.biometryEnabled),
            .double(w.now.timeIntervalSince1970), .text(w.label.rawValue),
            record.v4.map { .bytes($0.counter.bytes) } ?? .null, observed.sealedStateMark.map { .bytes($0) } ?? .null,
        ]
    }

    /// The most attempts one statement carries (the batch statement's text depends on it: one
    /// prepared statement per size and connection).
    static let batchLimit = 32

    /// One input row of the batch statement: its columns and their types. A nullable value is a
    /// flag and a value, never a `NULL` parameter, so every call of one size has the same
    /// parameter types and reuses one prepared statement.
    static let batchColumns: [(name: String, type: String)] = [
        ("id", "text"), ("new_state", "bigint"), ("new_counter", "bytea"), ("new_index", "bigint"),
        ("new_failed", "bigint"), ("new_blocked_set", "boolean"), ("new_blocked", "double precision"),
        ("old_state", "bigint"), ("old_counter", "bytea"), ("old_index", "bigint"), ("old_failed", "bigint"),
        ("old_max", "bigint"), ("old_blocked_set", "boolean"), ("old_blocked", "double precision"),
        ("old_device_set", "boolean"), ("old_device", "bytea"), ("old_biometry", "boolean"),
        ("at", "double precision"), ("outcome", "text"), ("new_v4_counter_set", "boolean"),
        ("new_v4_counter", "bytea"), ("old_v4_mark_set", "boolean"), ("old_v4_mark", "bytea"),
    ]

    /// The batch statement for each size 2 … ``batchLimit`` (index = size): the conditional write
    /// of every input row (distinct activations), in one statement. Its rows are first locked in
    /// the order of their identifiers (`locked`): two instances' statements that name the same
    /// activations then take their row locks in the same order and never deadlock. The `UPDATE`
    /// re-checks each row's condition on the row as committed (`READ COMMITTED`), as the
    /// one-attempt statement does; the audit rows come from the rows it updated.
    static let batchStatements: [String] = (0...batchLimit).map { n in
        guard n > 1 else { return "" }
        let width = batchColumns.count
        let rows = (0..<n).map { row in
            "("
                + batchColumns.enumerated().map { column, entry in "$\(row * width + column + 1)::\(entry.type)" }
                .joined(separator: ", ") + ")"
        }
        return """
            WITH input(\(batchColumns.map(\.name).joined(separator: ", "))) AS (VALUES
            \(rows.joined(separator: ",\n"))),
            locked AS MATERIALIZED (
            SELECT a.id FROM activation a JOIN input i ON a.id = i.id ORDER BY a.id FOR UPDATE OF a),
            changed AS (
            UPDATE activation a SET state = i.new_state, counter = i.new_counter, counter_index = i.new_index,
            failed_attempts = i.new_failed, blocked_until = CASE WHEN i.new_blocked_set THEN i.new_blocked END,
            v4_counter = CASE WHEN i.new_v4_counter_set THEN i.new_v4_counter ELSE a.v4_counter END
            FROM input i JOIN locked l ON l.id = i.id
            WHERE a.id = i.id AND a.state = i.old_state AND a.counter = i.old_counter
            AND a.counter_index = i.old_index AND a.failed_attempts = i.old_failed AND a.max_failed_attempts = i.old_max
            AND a.blocked_until IS NOT DISTINCT FROM (CASE WHEN i.old_blocked_set THEN i.old_blocked END)
            AND a.device_public_key IS NOT DISTINCT FROM (CASE WHEN i.old_device_set THEN i.old_device END)
            AND a.biometry_enabled = i.old_biometry
            AND a.v4_nonce IS NOT DISTINCT FROM (CASE WHEN i.old_v4_mark_set THEN i.old_v4_mark END)
            RETURNING a.id, i.at, i.outcome)
            INSERT INTO attempt_audit(activation_id, at, outcome) SELECT id, at, outcome FROM changed ORDER BY id
            RETURNING activation_id
            """
    }

    /// One input row of the batch statement, in the order of ``batchColumns``.
    static func batchValues(_ w: ConditionalWrite) -> [PostgresValue] {
        let (record, observed) = (w.after, w.observed)
        return [
            .text(observed.activationId), .integer(Int64(record.state.rawValue)), .bytes(record.counter.bytes),
            .integer(Int64(bitPattern: record.counterIndex)), .integer(Int64(record.failedAttempts)),
            .bool(record.blockedUntil != nil), .double(record.blockedUntil?.timeIntervalSince1970 ?? 0),
            .integer(Int64(observed.state.rawValue)), .bytes(observed.counter.bytes),
            .integer(Int64(bitPattern: observed.counterIndex)), .integer(Int64(observed.failedAttempts)),
            .integer(Int64(observed.maxFailedAttempts)), .bool(observed.blockedUntil != nil),
            .double(observed.blockedUntil?.timeIntervalSince1970 ?? 0), .bool(observed.devicePublicKey != nil),
            .bytes(observed.devicePublicKey ?? []), .bool(observed.biometryEnabled),
            .double(w.now.timeIntervalSince1970), .text(w.label.rawValue), .bool(record.v4 != nil),
            .bytes(record.v4?.counter.bytes ?? []), .bool(observed.sealedStateMark != nil),
            .bytes(observed.sealedStateMark ?? []),
        ]
    }

    /// The counting rule on the row read under its lock, the row written back and the audit
    /// row inserted; the caller holds the transaction.
    private func lockedAttempt(
        activationId: String, outcome: AttemptOutcome, now: Date, failureBlockDuration: TimeInterval?,
        on c: PostgresConnection
    ) throws(ActivationServerError) -> AttemptResult {
        var record = try lockedRecord(activationId, on: c)
        let before = record
        let accepted = record.apply(outcome, now: now, failureBlockDuration: failureBlockDuration)
        let label = AuditOutcome.of(accepted: accepted, before: before, after: record, now: now)
        // The rule moves only plain columns and the V4 counter: the sealed V4 state stays as it is.
        try write(record, on: c, resealing: false)
        try run { () throws(PostgresError) in
            try c.query(
                "INSERT INTO attempt_audit(activation_id, at, outcome) VALUES ($1, $2, $3)",
                [.text(activationId), .double(now.timeIntervalSince1970), .text(label.rawValue)])
        }
        return AttemptResult(
            accepted: accepted, state: record.state, failedAttempts: record.failedAttempts,
            maxFailedAttempts: record.maxFailedAttempts)
    }

    // MARK: - Tokens

    /// Stores a token row.
    public func insertToken(_ token: TokenRecord) throws(ActivationServerError) {
        try run { () throws(PostgresError) in
            try pool.withConnection { (c) throws(PostgresError) in
                try c.query(
                    "INSERT INTO token(id, activation_id, signature_type, created_at) VALUES ($1, $2, $3, $4)",
                    [
                        .text(token.tokenId), .text(token.activationId), .text(token.factorSet.rawValue),
                        .double(token.createdAt.timeIntervalSince1970),
                    ])
            }
        }
    }

    /// Reads a token row.
    public func token(tokenId: String) throws(ActivationServerError) -> TokenRecord? {
        let rows = try run { () throws(PostgresError) in
            try pool.withConnection(idempotent: true) { (c) throws(PostgresError) in
                try c.query(
                    "SELECT activation_id, signature_type, created_at FROM token WHERE id = $1", [.text(tokenId)])
            }
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
        try run { () throws(PostgresError) in
            try pool.withConnection { (c) throws(PostgresError) in
                !(try c.query(
                    "DELETE FROM token WHERE id = $1 AND activation_id = $2 RETURNING id",
                    [.text(tokenId), .text(activationId)]
                ).isEmpty)
            }
        }
    }

    // MARK: - Back office and audit

    /// Every activation identifier, oldest first.
    public func activationIds() throws(ActivationServerError) -> [String] {
        try run { () throws(PostgresError) in
            try pool.withConnection(idempotent: true) { (c) throws(PostgresError) in
                try c.query("SELECT id FROM activation ORDER BY seq").compactMap { $0[0].string }
            }
        }
    }

    /// The audit rows of one activation, oldest first.
    public func auditTrail(activationId: String) throws(ActivationServerError) -> [AuditEntry] {
        try run { () throws(PostgresError) in
            try pool.withConnection(idempotent: true) { (c) throws(PostgresError) in
                try c.query(
                    "SELECT at, outcome FROM attempt_audit WHERE activation_id = $1 ORDER BY seq",
                    [.text(activationId)])
            }
        }.compactMap { row in
            guard let at = row[0].double, let text = row[1].string, let outcome = AuditOutcome(rawValue: text) else {
                return nil
            }
            return AuditEntry(at: Date(timeIntervalSince1970: at), outcome: outcome)
        }
    }

    // MARK: - Replay records

    /// The database's clock in ms since 1970, the one clock every instance shares.
    static let databaseMilliseconds = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"

    func removeExpired() throws(ActivationServerError) {
        try run { () throws(PostgresError) in
            try pool.withConnection { (c) throws(PostgresError) in
                try c.query("DELETE FROM ecies_replay WHERE forget_at < \(Self.databaseMilliseconds)")
            }
        }
    }

    /// Every ``sweepInterval``-th call deletes what expired (a failure is left to the next sweep).
    private func sweepNow() {
        if accepted.add(1, ordering: .relaxed).newValue % Self.sweepInterval == 0 { try? removeExpired() }
    }

    /// One statement, on the database's clock: the window, then the insert of the key or the
    /// takeover of a row whose time has passed; it answers the clock it used and whether a row was
    /// taken. The primary key makes two instances' inserts of one key meet.
    func acceptOnce(replayKey: [UInt8], timestamp: Int64, windowMilliseconds: Int64) throws(ActivationServerError)
        -> ReplayVerdict
    {
        sweepNow()
        let (forgetAt, overflow) = timestamp.addingReportingOverflow(windowMilliseconds)
        guard !overflow, windowMilliseconds > 0 else { return .expired }
        let rows = try run { () throws(PostgresError) in
            try pool.withConnection { (c) throws(PostgresError) in
                try c.query(
                    """
                    WITH clock AS MATERIALIZED (SELECT \(Self.databaseMilliseconds) AS ms),
                    taken AS (
                        INSERT INTO ecies_replay(replay_key, forget_at)
                        SELECT $1, $2::bigint FROM clock WHERE $3::bigint BETWEEN ms - $4::bigint AND ms + $4::bigint
                        ON CONFLICT (replay_key) DO UPDATE SET forget_at = EXCLUDED.forget_at
                        WHERE ecies_replay.forget_at < (SELECT ms FROM clock)
                        RETURNING 1)
                    SELECT ms, (SELECT count(*) FROM taken) FROM clock
                    """,
                    [.bytes(replayKey), .integer(forgetAt), .integer(timestamp), .integer(windowMilliseconds)])
            }
        }
        guard let row = rows.first, let now = row[0].int64, let taken = row[1].int64 else {
            throw .storage(reason: "the replay check answered no row")
        }
        if taken > 0 { return .accepted }
        return ECIESReplayCache.within(timestamp, windowMilliseconds, of: now) ? .replayed : .expired
    }

    // MARK: - Rows

    static let selectRecord = """
        SELECT id, code, user_id, name, state, server_public_key, server_private_nonce, server_private_sealed,
        device_public_key, counter, counter_index, failed_attempts, max_failed_attempts, blocked_until,
        biometry_enabled, v4_nonce, v4_sealed, v4_counter FROM activation WHERE id = $1
        """

    /// name, state, device key, counter, index, failures, limit, block end, biometry.
    static func mutableValues(_ r: ActivationRecord) -> [PostgresValue] {
        [
            .text(r.name), .integer(Int64(r.state.rawValue)),
            r.devicePublicKey.map { .bytes($0) } ?? .null, .bytes(r.counter.bytes),
            .integer(Int64(bitPattern: r.counterIndex)), .integer(Int64(r.failedAttempts)),
            .integer(Int64(r.maxFailedAttempts)), r.blockedUntil.map { .double($0.timeIntervalSince1970) } ?? .null,
            .bool(r.biometryEnabled),
        ]
    }

    private func lockedRecord(_ activationId: String, on c: PostgresConnection) throws(ActivationServerError)
        -> ActivationRecord
    {
        let rows = try run { () throws(PostgresError) in
            try c.query(Self.selectRecord + " FOR UPDATE", [.text(activationId)])
        }
        guard let row = rows.first else { throw .activationNotFound }
        return try decodeRecord(row)
    }

    /// The row and its V4 blob in one statement (a V3.3 record keeps its null V4 columns);
    /// without `resealing` the sealed V4 state stays and only the V4 counter moves.
    private func write(_ r: ActivationRecord, on c: PostgresConnection, resealing: Bool = true)
        throws(ActivationServerError)
    {
        let v4 = resealing ? try v4Values(r) : [.null, .null, r.v4.map { .bytes($0.counter.bytes) } ?? .null]
        try run { () throws(PostgresError) in
            try c.query(
                """
                UPDATE activation SET name = $1, state = $2, device_public_key = $3, counter = $4, counter_index = $5,
                failed_attempts = $6, max_failed_attempts = $7, blocked_until = $8, biometry_enabled = $9,
                v4_nonce = COALESCE($11::bytea, v4_nonce), v4_sealed = COALESCE($12::bytea, v4_sealed),
                v4_counter = COALESCE($13::bytea, v4_counter) WHERE id = $10
                """, Self.mutableValues(r) + [.text(r.activationId)] + v4)
        }
    }

    /// The record's V4 state sealed as SQLite seals it (`V4StateCoding`, same label): nonce and
    /// ciphertext and the plain V4 counter, or three nulls for a V3.3 record.
    private func v4Values(_ r: ActivationRecord) throws(ActivationServerError) -> [PostgresValue] {
        guard let state = r.v4 else { return [.null, .null, .null] }
        do throws(ReferenceServerError) {
            let plain = try V4StateCoding.encode(state, upgrade: r.v4Upgrade)
            defer { plain.destroy() }
            let box = try seal(plain, label: SQLiteActivationStore.v4Label(r.activationId))
            return [.bytes(box.nonce), .bytes(box.ciphertext), .bytes(state.counter.bytes)]
        } catch {
            throw .storage(reason: "sealing the V4 state failed")
        }
    }

    private func decodeRecord(_ row: PostgresRow) throws(ActivationServerError) -> ActivationRecord {
        guard let id = row[0].string, let code = row[1].string, let user = row[2].string, let name = row[3].string,
            let stateValue = row[4].int64, let state = ProtocolActivationState(rawValue: UInt8(clamping: stateValue)),
            let publicKey = row[5].bytes, let nonce = row[6].bytes, let sealed = row[7].bytes,
            let counterBytes = row[9].bytes, let index = row[10].int64, let failures = row[11].int64,
            let limit = row[12].int64, let biometry = row[14].bool,
            let counter = try? HashCounter(bytes: counterBytes)
        else { throw .storage(reason: "activation columns") }
        // Opened only when a request needs it (not when the factor keys are cached).
        let privateKey = ServerPrivateKey { [self] () throws(ActivationServerError) -> SecureBytes in
            do throws(ReferenceServerError) {
                return try open(nonce: nonce, sealed: sealed, label: SQLiteActivationStore.recordLabel(id))
            } catch {
                throw .storage(reason: "a sealed key does not open under this key file")
            }
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
        record.biometryEnabled = biometry
        if let v4Nonce = row[15].bytes, let v4Sealed = row[16].bytes {
            do throws(ReferenceServerError) {
                let plain = try open(nonce: v4Nonce, sealed: v4Sealed, label: SQLiteActivationStore.v4Label(id))
                defer { plain.destroy() }
                (record.v4, record.v4Upgrade) = try V4StateCoding.decodeWithUpgrade(plain)
                if let column = row[17].bytes { record.v4?.counter = try V4StateCoding.counter(column) }
                record.sealedStateMark = v4Nonce
            } catch {
                throw .storage(reason: "the V4 state does not open under this key file")
            }
        }
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

    /// A libpq failure as the activation server sees it: the database out of reach (or too slow)
    /// is `unavailable` (503), a unique key met is `duplicate`, anything else `storage`.
    static func map(_ error: PostgresError) -> ActivationServerError {
        switch error {
        case .unavailable, .timeout: return .unavailable(reason: describe(error))
        case .constraint: return .duplicate
        default: return .storage(reason: describe(error))
        }
    }

    static func describe(_ error: PostgresError) -> String {
        switch error {
        case .unavailable(let reason): return "database unavailable: \(reason)"
        case .timeout: return "statement or lock timeout"
        case .constraint(let message): return "constraint: \(message)"
        case .server(let state, let message): return "SQLSTATE \(state): \(message)"
        case .schemaTooNew(let found, let supported):
            return "schema version \(found) is newer than this program's \(supported)"
        case .typeMismatch(let column, let expected): return "column \(column) is not \(expected)"
        case .invalidConnectionString: return "the connection string is empty or holds a NUL byte"
        case .aborted(let reason): return "rolled back: \(reason)"
        }
    }

    /// Runs `body` in one transaction on one pooled connection; `body`'s error rolls it back and
    /// is rethrown as is.
    private func inTransaction<R>(_ body: (PostgresConnection) throws(ActivationServerError) -> R)
        throws(ActivationServerError) -> R
    {
        var failure: ActivationServerError?
        do throws(PostgresError) {
            return try pool.transaction { (c) throws(PostgresError) -> R in
                do throws(ActivationServerError) {
                    return try body(c)
                } catch {
                    failure = error
                    throw .aborted(reason: "rolled back")
                }
            }
        } catch {
            throw failure ?? Self.map(error)
        }
    }

    @discardableResult
    private func run<R>(_ body: () throws(PostgresError) -> R) throws(ActivationServerError) -> R {
        do throws(PostgresError) {
            return try body()
        } catch {
            throw Self.map(error)
        }
    }

    @discardableResult
    private func sql<R>(_ body: () throws(PostgresError) -> R) throws(ReferenceServerError) -> R {
        do throws(PostgresError) {
            return try body()
        } catch {
            throw .storage(reason: Self.describe(error))
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

extension PostgresActivationStore {
    /// Loads the stored ML-DSA master key pair of `parameterSet`, or stores a fresh one on first
    /// use: `INSERT ... ON CONFLICT DO NOTHING`, then read back, so that instances starting
    /// together agree on the first one's key.
    /// - Parameter parameterSet: ML-DSA-65 (`EC_P384_ML_L3`) or ML-DSA-87 (`EC_P384_ML_L5`).
    /// - Returns: the pair in force.
    /// - Throws: ``ReferenceServerError``.
    public func loadOrStoreV4PostQuantumMasterKey(_ parameterSet: MLDSA.ParameterSet) throws(ReferenceServerError)
        -> MLDSA.KeyPair
    {
        let name = V4PostQuantumMasterKey.name(parameterSet)
        let label = V4PostQuantumMasterKey.label(parameterSet)
        let select = "SELECT public_key, seed_nonce, seed_sealed FROM v4_pq_master_key WHERE parameter_set = $1"
        var rows = try sql { () throws(PostgresError) in
            try pool.withConnection(idempotent: true) { (c) throws(PostgresError) in try c.query(select, [.text(name)])
            }
        }
        if rows.isEmpty {
            let (seed, fresh) = try V4PostQuantumMasterKey.generate(parameterSet)
            defer {
                seed.destroy()
                fresh.destroy()
            }
            let box = try seal(seed, label: label)
            rows = try sql { () throws(PostgresError) in
                try pool.withConnection { (c) throws(PostgresError) in
                    _ = try c.query(
                        """
                        INSERT INTO v4_pq_master_key(parameter_set, public_key, seed_nonce, seed_sealed)
                        VALUES ($1, $2, $3, $4) ON CONFLICT (parameter_set) DO NOTHING
                        """, [.text(name), .bytes(fresh.publicKey), .bytes(box.nonce), .bytes(box.ciphertext)])
                    return try c.query(select, [.text(name)])
                }
            }
        }
        guard let row = rows.first, let publicKey = row[0].bytes, let nonce = row[1].bytes,
            let sealed = row[2].bytes
        else { throw .corruptRecord(reason: "the \(name) master key") }
        let seed = try open(nonce: nonce, sealed: sealed, label: label)
        defer { seed.destroy() }
        return try V4PostQuantumMasterKey.expand(parameterSet, seed: seed, publicKey: publicKey)
    }
}

/// One conditional attempt waiting for its statement: the record the verifier read, the counting
/// rule's result on it, and the audit row's time and outcome.
struct ConditionalWrite: Sendable {
    let observed: ActivationRecord
    let after: ActivationRecord
    let accepted: Bool
    let label: AuditOutcome
    let now: Date

    /// The answer when the row was written.
    var result: AttemptResult {
        AttemptResult(
            accepted: accepted, state: after.state, failedAttempts: after.failedAttempts,
            maxFailedAttempts: after.maxFailedAttempts)
    }
}

/// ``PostgresActivationStore``'s replay records as `ActivationServer.SharedEphemeralState`.
struct PostgresEphemeralState: SharedEphemeralState {
    let store: PostgresActivationStore

    func acceptOnce(replayKey: [UInt8], timestamp: Int64, windowMilliseconds: Int64) throws(ActivationServerError)
        -> ReplayVerdict
    {
        try store.acceptOnce(replayKey: replayKey, timestamp: timestamp, windowMilliseconds: windowMilliseconds)
    }

    func removeExpired() throws(ActivationServerError) {
        try store.removeExpired()
    }
}
