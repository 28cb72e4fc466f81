import Foundation
import PostgresStore
import SQLiteStore
import SecureCore
import VaultOPRFProtocol

/// The server's side of the vault binding in the activation database (tables of its own, in SQLite
/// or in PostgreSQL):
/// the OPRF master secret, sealed under the storage key of ``ServerKeyFile`` like every other
/// private key the database holds, and one row per server-bound vault with its attempt counter,
/// its current challenge and its verifier (sealed likewise).
///
/// In SQLite the tables are created when missing, outside the activation schema's numbered
/// migrations; in PostgreSQL they are a step of those migrations (instances start concurrently).
/// Every change runs in one transaction (SQLite `BEGIN IMMEDIATE`; PostgreSQL with the vault's row
/// taken `FOR UPDATE`, so instances racing on one vault serialise on it), and an
/// attempt is counted, with its audit row, before anything is evaluated: a process killed after
/// the evaluation has already counted it (`docs/vault-format.md`, "Server binding").
public final class OPRFVaultStore: Sendable {
    /// What a stored vault does not allow.
    public enum Refusal: Error, Equatable, Sendable {
        /// No such vault.
        case unknownVault
        /// The failures reached the maximum.
        case blocked(VaultOPRFAPI.Counters)
        /// The operation needs another state (enroll twice, evaluate before enroll).
        case wrongState(VaultOPRFAPI.Counters)
        /// The proof did not verify, or there was no challenge to prove.
        case proofRefused(VaultOPRFAPI.Counters)
        /// SQLite or the sealing failed.
        case storage(String)
    }

    static let schema = """
        CREATE TABLE IF NOT EXISTS oprf_vault_master(
            id INTEGER PRIMARY KEY CHECK (id = 1),
            nonce BLOB NOT NULL,
            sealed BLOB NOT NULL);
        CREATE TABLE IF NOT EXISTS oprf_vault(
            id BLOB PRIMARY KEY,
            state INTEGER NOT NULL,
            failures INTEGER NOT NULL,
            max_failures INTEGER NOT NULL,
            challenge BLOB,
            verifier_nonce BLOB,
            verifier_sealed BLOB,
            created REAL NOT NULL);
        CREATE TABLE IF NOT EXISTS oprf_vault_audit(
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            vault_id BLOB NOT NULL,
            at REAL NOT NULL,
            outcome TEXT NOT NULL);
        CREATE INDEX IF NOT EXISTS oprf_vault_pending ON oprf_vault(state, created);
        CREATE INDEX IF NOT EXISTS oprf_vault_audit_vault ON oprf_vault_audit(vault_id);
        """
    static let masterLabel = Array("SecurePIN vault OPRF master v1".utf8)

    let tables: any VaultTables
    private let storageKey: SecureBytes

    /// Opens the tables (creating them when missing).
    /// - Parameters:
    ///   - database: the activation database.
    ///   - storageKey: the 32-byte key of ``ServerKeyFile``.
    /// - Throws: ``ReferenceServerError/storage(reason:)``.
    public init(database: SQLiteDatabase, storageKey: SecureBytes) throws(ReferenceServerError) {
        do throws(SQLiteError) {
            try database.execute(Self.schema)
        } catch {
            throw .storage(reason: "\(error)")
        }
        self.tables = SQLiteVaultTables(database: database)
        self.storageKey = storageKey
    }

    /// Opens the tables in a PostgreSQL database whose schema has them (``PostgresActivationStore``'s
    /// migrations create them), for any number of server instances on that database.
    /// - Parameters:
    ///   - pool: the activation store's connection pool.
    ///   - storageKey: the 32-byte key of ``ServerKeyFile``, the same on every instance.
    public init(pool: PostgresPool, storageKey: SecureBytes) {
        self.tables = PostgresVaultTables(pool: pool)
        self.storageKey = storageKey
    }

    /// The OPRF master secret (32 bytes), created and stored sealed on first use.
    /// - Returns: the secret, in secure memory.
    /// - Throws: ``ReferenceServerError``.
    public func masterSecret() throws(ReferenceServerError) -> SecureBytes {
        let result = tables.transaction { (tx) throws(Refusal) -> SecureBytes in
            let select = "SELECT nonce, sealed FROM oprf_vault_master WHERE id = 1"
            if try tx.query(select).isEmpty {
                // Several instances may start at once: the first insert wins, the others read it.
                let fresh = try secure { () throws(SecureCoreError) in try SecureBytes.random(count: 32) }
                defer { fresh.destroy() }
                let box = try seal(fresh, label: Self.masterLabel)
                try tx.run(
                    "INSERT INTO oprf_vault_master VALUES (1, ?, ?) ON CONFLICT (id) DO NOTHING",
                    [.blob(box.nonce), .blob(box.ciphertext)])
            }
            guard let row = try tx.query(select).first, let nonce = row[0].bytes, let sealed = row[1].bytes else {
                throw .storage("master columns")
            }
            return try open(nonce: nonce, sealed: sealed, label: Self.masterLabel)
        }
        switch result {
        case .success(let secret): return secret
        case .failure(let refusal): throw .storage(reason: "OPRF master secret: \(refusal)")
        }
    }

    /// How long a registered vault may wait for its enrolment before it is forgotten (seconds): a
    /// client enrols within one unlock's time, so ten minutes is generous, and an unauthenticated
    /// `register` flood leaves at most that many minutes of rows (at the rate limit).
    static let pendingLifetime: TimeInterval = 600

    /// Creates a pending record with its first challenge, after forgetting pending records (and
    /// their audit rows) older than ``pendingLifetime``.
    /// - Returns: the counters.
    func register(vaultId: [UInt8], challenge: [UInt8], maxFailures: Int, now: Date) throws(Refusal)
        -> VaultOPRFAPI.Counters
    {
        try tables.transaction { (tx) throws(Refusal) -> VaultOPRFAPI.Counters in
            let pending = Int64(VaultOPRFAPI.State.pending.rawValue)
            let before = now.timeIntervalSince1970 - Self.pendingLifetime
            try tx.run(
                "DELETE FROM oprf_vault_audit WHERE vault_id IN (SELECT id FROM oprf_vault WHERE state = ? AND created < ?)",
                [.integer(pending), .real(before)])
            try tx.run("DELETE FROM oprf_vault WHERE state = ? AND created < ?", [.integer(pending), .real(before)])
            try tx.run(
                "INSERT INTO oprf_vault(id, state, failures, max_failures, challenge, created) VALUES (?, ?, 0, ?, ?, ?)",
                [
                    .blob(vaultId), .integer(Int64(VaultOPRFAPI.State.pending.rawValue)),
                    .integer(Int64(maxFailures)), .blob(challenge), .real(now.timeIntervalSince1970),
                ])
            try audit(tx, vaultId, "registered", now)
            return VaultOPRFAPI.Counters(state: .pending, failures: 0, maxFailures: maxFailures)
        }.get()
    }

    /// Stores the verifier of a pending record; the record becomes active.
    func enroll(vaultId: [UInt8], verifier: SecureBytes, now: Date) throws(Refusal) -> VaultOPRFAPI.Counters {
        try tables.transaction { (tx) throws(Refusal) -> VaultOPRFAPI.Counters in
            var row = try load(tx, vaultId)
            guard row.counters.state == .pending else { throw .wrongState(row.counters) }
            let box = try seal(verifier, label: Self.verifierLabel(vaultId))
            row.counters.state = .active
            try tx.run(
                """
                UPDATE oprf_vault SET state = ?, failures = 0, challenge = NULL, verifier_nonce = ?,
                verifier_sealed = ? WHERE id = ?
                """,
                [
                    .integer(Int64(VaultOPRFAPI.State.active.rawValue)), .blob(box.nonce), .blob(box.ciphertext),
                    .blob(vaultId),
                ])
            try audit(tx, vaultId, "enrolled", now)
            return VaultOPRFAPI.Counters(state: .active, failures: 0, maxFailures: row.counters.maxFailures)
        }.get()
    }

    /// Counts one attempt and stores its challenge, before the caller evaluates anything. At the
    /// maximum the record is blocked and nothing is counted.
    /// - Returns: the counters after counting.
    func beginAttempt(vaultId: [UInt8], challenge: [UInt8], now: Date) throws(Refusal) -> VaultOPRFAPI.Counters {
        try tables.transaction { (tx) throws(Refusal) -> VaultOPRFAPI.Counters in
            var row = try load(tx, vaultId)
            guard row.counters.state != .pending else { throw .wrongState(row.counters) }
            guard row.counters.failures < row.counters.maxFailures else {
                if row.counters.state != .blocked {
                    row.counters.state = .blocked
                    try write(tx, vaultId, row.counters, challenge: nil)
                }
                try audit(tx, vaultId, "refused-blocked", now)
                throw .blocked(row.counters)
            }
            row.counters.failures += 1
            try write(tx, vaultId, row.counters, challenge: challenge)
            try audit(tx, vaultId, "attempt", now)
            return row.counters
        }.get()
    }

    /// Checks a proof over the current challenge; on success the counter returns to zero. Either
    /// way the challenge is spent.
    func confirm(vaultId: [UInt8], proof: [UInt8], now: Date) throws(Refusal) -> VaultOPRFAPI.Counters {
        try prove(vaultId: vaultId, proof: proof, removing: false, now: now)
    }

    /// Checks a removal proof over the current challenge; on success the record is deleted (its
    /// audit rows stay, the last one `removed`). Either way the challenge is spent.
    /// - Returns: the counters the record had, failures back to zero.
    func remove(vaultId: [UInt8], proof: [UInt8], now: Date) throws(Refusal) -> VaultOPRFAPI.Counters {
        try prove(vaultId: vaultId, proof: proof, removing: true, now: now)
    }

    private func prove(vaultId: [UInt8], proof: [UInt8], removing: Bool, now: Date) throws(Refusal)
        -> VaultOPRFAPI.Counters
    {
        try tables.transaction { (tx) throws(Refusal) -> VaultOPRFAPI.Counters in
            var row = try load(tx, vaultId)
            guard let challenge = row.challenge, let nonce = row.verifierNonce, let sealed = row.verifierSealed,
                row.counters.state == .active
            else {
                try audit(tx, vaultId, "proof-refused", now)
                throw .proofRefused(row.counters)
            }
            let verifier = try open(nonce: nonce, sealed: sealed, label: Self.verifierLabel(vaultId))
            defer { verifier.destroy() }
            let expected = try secure { () throws(SecureCoreError) in
                removing
                    ? try VaultOPRFAPI.removalProof(verifier: verifier, vaultId: vaultId, challenge: challenge)
                    : try VaultOPRFAPI.proof(verifier: verifier, vaultId: vaultId, challenge: challenge)
            }
            let equal = try secure { () throws(SecureCoreError) in try Self.equal(expected, proof) }
            if equal { row.counters.failures = 0 }
            if equal && removing {
                try tx.run("DELETE FROM oprf_vault WHERE id = ?", [.blob(vaultId)])
            } else {
                try write(tx, vaultId, row.counters, challenge: nil)
            }
            try audit(tx, vaultId, equal ? (removing ? "removed" : "confirmed") : "proof-refused", now)
            guard equal else { throw .proofRefused(row.counters) }
            return row.counters
        }.get()
    }

    /// The back office's unblock: the counter returns to zero and a blocked record is active again.
    /// It gives whoever holds a copy of the vault directory another `maxFailures` guesses, so it is
    /// meant for after the user proved who they are by other means (`docs/vault-format.md`).
    /// - Parameters:
    ///   - vaultId: the vault.
    ///   - now: the time of the audit row.
    /// - Returns: the counters after the unblock.
    /// - Throws: ``Refusal/unknownVault``, ``Refusal/wrongState(_:)`` (not enrolled yet), ``Refusal/storage(_:)``.
    public func unblock(vaultId: [UInt8], now: Date) throws(Refusal) -> VaultOPRFAPI.Counters {
        try tables.transaction { (tx) throws(Refusal) -> VaultOPRFAPI.Counters in
            var row = try load(tx, vaultId)
            guard row.counters.state != .pending else { throw .wrongState(row.counters) }
            row.counters.state = .active
            row.counters.failures = 0
            try write(tx, vaultId, row.counters, challenge: nil)
            try audit(tx, vaultId, "unblocked", now)
            return row.counters
        }.get()
    }

    /// The counters of one vault for the back office, changing nothing.
    /// - Parameter vaultId: the vault.
    /// - Returns: the counters.
    /// - Throws: ``Refusal/unknownVault``, ``Refusal/storage(_:)``.
    public func detail(vaultId: [UInt8]) throws(Refusal) -> VaultOPRFAPI.Counters {
        try counters(vaultId: vaultId)
    }

    /// The counters, changing nothing.
    func counters(vaultId: [UInt8]) throws(Refusal) -> VaultOPRFAPI.Counters {
        try tables.transaction { (tx) throws(Refusal) -> VaultOPRFAPI.Counters in try load(tx, vaultId).counters }.get()
    }

    /// The audit rows of one vault (outcomes only), oldest first.
    /// - Parameter vaultId: the vault.
    /// - Returns: the outcomes.
    public func auditTrail(vaultId: [UInt8]) -> [String] {
        let rows = try? tables.transaction { (tx) throws(Refusal) in
            try tx.query("SELECT outcome FROM oprf_vault_audit WHERE vault_id = ? ORDER BY seq", [.blob(vaultId)])
        }.get()
        return (rows ?? []).compactMap { $0[0].string }
    }

    // MARK: - Rows

    struct Row {
        var counters: VaultOPRFAPI.Counters
        var challenge: [UInt8]?
        var verifierNonce: [UInt8]?
        var verifierSealed: [UInt8]?
    }

    static func verifierLabel(_ vaultId: [UInt8]) -> [UInt8] { Array("SecurePIN vault verifier v1|".utf8) + vaultId }

    /// Two public byte strings of equal length, compared without an early exit.
    static func equal(_ a: [UInt8], _ b: [UInt8]) throws(SecureCoreError) -> Bool {
        guard a.count == b.count else { return false }
        let left = try secureCopy(a)
        let right = try secureCopy(b)
        defer {
            left.destroy()
            right.destroy()
        }
        return try left.isEqual(to: right)
    }

    /// Public bytes copied into secure memory (for the core's constant-time comparison).
    static func secureCopy(_ bytes: [UInt8]) throws(SecureCoreError) -> SecureBytes {
        let copy = try SecureBytes(count: bytes.count)
        copy.withUnsafeMutableBytes { out in
            for (i, byte) in bytes.enumerated() { out[i] = byte }
        }
        return copy
    }

    private func load(_ tx: VaultStatements, _ vaultId: [UInt8]) throws(Refusal) -> Row {
        let rows = try tx.query(
            "SELECT state, failures, max_failures, challenge, verifier_nonce, verifier_sealed FROM oprf_vault WHERE id = ?"
                + tx.lockSuffix, [.blob(vaultId)])
        guard let row = rows.first else { throw .unknownVault }
        guard let stateValue = row[0].int64, let state = VaultOPRFAPI.State(rawValue: UInt8(clamping: stateValue)),
            let failures = row[1].int64, let limit = row[2].int64
        else { throw .storage("vault columns") }
        return Row(
            counters: VaultOPRFAPI.Counters(state: state, failures: Int(failures), maxFailures: Int(limit)),
            challenge: row[3].bytes, verifierNonce: row[4].bytes, verifierSealed: row[5].bytes)
    }

    private func write(
        _ tx: VaultStatements, _ vaultId: [UInt8], _ counters: VaultOPRFAPI.Counters, challenge: [UInt8]?
    ) throws(Refusal) {
        try tx.run(
            "UPDATE oprf_vault SET state = ?, failures = ?, challenge = ? WHERE id = ?",
            [
                .integer(Int64(counters.state.rawValue)), .integer(Int64(counters.failures)),
                challenge.map { .blob($0) } ?? .null, .blob(vaultId),
            ])
    }

    private func audit(_ tx: VaultStatements, _ vaultId: [UInt8], _ outcome: String, _ now: Date) throws(Refusal) {
        try tx.run(
            "INSERT INTO oprf_vault_audit(vault_id, at, outcome) VALUES (?, ?, ?)",
            [.blob(vaultId), .real(now.timeIntervalSince1970), .text(outcome)])
    }

    private func seal(_ secret: SecureBytes, label: [UInt8]) throws(Refusal) -> AEAD.SealedBox {
        try secure { () throws(SecureCoreError) in try AEAD.seal(secret, using: storageKey, associatedData: label) }
    }

    private func open(nonce: [UInt8], sealed: [UInt8], label: [UInt8]) throws(Refusal) -> SecureBytes {
        let box = AEAD.SealedBox(algorithm: .xChaCha20Poly1305, nonce: nonce, ciphertext: sealed)
        let opened = try secure { () throws(SecureCoreError) in
            try AEAD.open(box, using: storageKey, associatedData: label)
        }
        guard let opened else { throw .storage("a sealed value does not open under this key file") }
        return opened
    }

    private func secure<R>(_ body: () throws(SecureCoreError) -> R) throws(Refusal) -> R {
        do throws(SecureCoreError) {
            return try body()
        } catch {
            throw .storage("secure memory: \(error)")
        }
    }
}

extension OPRFVaultStore.Refusal: CustomStringConvertible {
    /// What the stored vault does not allow, in a sentence fragment a person can act on.
    public var description: String {
        switch self {
        case .unknownVault: "no such vault"
        case .blocked(let counters): "the vault is blocked: \(Self.count(counters))"
        case .wrongState(let counters):
            "the operation needs another state of the vault, which is \(Self.name(counters.state)); "
                + Self.count(counters)
        case .proofRefused(let counters):
            "the proof did not verify, or there was no challenge to prove; \(Self.count(counters))"
        case .storage(let reason): "the vault store failed: \(reason)"
        }
    }

    /// `3 of 10 failures`.
    private static func count(_ counters: VaultOPRFAPI.Counters) -> String {
        "\(counters.failures) of \(counters.maxFailures) failures"
    }

    /// The record's state in words.
    private static func name(_ state: VaultOPRFAPI.State) -> String {
        switch state {
        case .pending: "pending enrolment"
        case .active: "active"
        case .blocked: "blocked"
        }
    }
}
