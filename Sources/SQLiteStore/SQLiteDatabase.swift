internal import CSQLite
import Foundation

/// A connection to a SQLite database file, opened for durable concurrent use:
/// write-ahead logging (`journal_mode=WAL`), `synchronous=FULL` (a transaction that returned
/// from commit survives a power cut), a busy timeout, and foreign keys enforced.
///
/// **Threads.** A connection is `Sendable`: a recursive lock serialises every use of it, and
/// ``transaction(immediate:_:)`` holds the lock for its whole body, so another thread's
/// statements on the same connection run before or after the transaction, never inside it.
/// For parallelism, open one connection per thread (or per request): SQLite then arbitrates
/// between connections and processes with file locks, and the busy timeout waits for a writer
/// to finish instead of failing at once.
///
/// ```swift
/// let db = try SQLiteDatabase(path: "server.sqlite")
/// try db.migrate(["CREATE TABLE counter(id INTEGER PRIMARY KEY, n INTEGER NOT NULL)"])
/// let n = try db.transaction {
///     try db.query("UPDATE counter SET n = n + 1 WHERE id = ? RETURNING n", [1]).first?[0].int64
/// }
/// ```
public final class SQLiteDatabase: @unchecked Sendable {
    /// The path the database was opened at.
    public let path: String
    private let handle: OpaquePointer
    private let lock = NSRecursiveLock()
    /// Statements ``run(_:_:)`` and ``query(_:_:)`` prepared once and keep for the next call
    /// with the same text (under `lock`; reset and unbound after every use, so none holds a
    /// read transaction open or a bound value). Bounded: past ``statementCacheLimit`` texts a
    /// statement is prepared for one use as before.
    private var statementCache: [String: SQLiteStatement] = [:]
    /// How many statement texts the connection keeps prepared.
    public static let statementCacheLimit = 64

    /// Opens (creating if needed) a database file and configures the connection.
    /// - Parameters:
    ///   - path: The file path.
    ///   - busyTimeout: How long a statement waits for another connection's lock before
    ///     failing with ``SQLiteError/busy`` (default 5 s).
    /// - Throws: ``SQLiteError`` when the file cannot be opened or is not a database, and
    ///   ``SQLiteError/walUnavailable(journalMode:)`` when WAL cannot be enabled.
    public convenience init(path: String, busyTimeout: Duration = .seconds(5)) throws(SQLiteError) {
        try self.init(path: path, busyTimeout: busyTimeout, readOnly: false)
    }

    /// Opens an existing database in write-ahead-log mode for reading only: a second
    /// connection beside a writer, whose reads see the last committed state and do not wait
    /// for the writer's transaction or its `fsync`.
    /// - Parameters:
    ///   - path: The file path (the database must exist, in WAL mode).
    ///   - busyTimeout: As for the writer.
    /// - Returns: The connection; any write on it fails with `SQLITE_READONLY`.
    /// - Throws: ``SQLiteError``, and ``SQLiteError/walUnavailable(journalMode:)`` when the file
    ///   is not in WAL mode.
    public static func reader(path: String, busyTimeout: Duration = .seconds(5)) throws(SQLiteError) -> SQLiteDatabase {
        try SQLiteDatabase(path: path, busyTimeout: busyTimeout, readOnly: true)
    }

    private init(path: String, busyTimeout: Duration, readOnly: Bool) throws(SQLiteError) {
        var connection: OpaquePointer?
        let flags =
            (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_FULLMUTEX
        let code = sqlite3_open_v2(path, &connection, flags, nil)
        guard code == SQLITE_OK, let connection else {
            let error = SQLiteError(code: code, connection: connection)
            sqlite3_close_v2(connection)
            throw error
        }
        self.path = path
        self.handle = connection
        sqlite3_extended_result_codes(connection, 1)
        let (seconds, attoseconds) = busyTimeout.components
        let milliseconds = max(0, min(Int64(Int32.max), seconds * 1000 + attoseconds / 1_000_000_000_000_000))
        sqlite3_busy_timeout(connection, Int32(milliseconds))
        try execute("PRAGMA foreign_keys = ON")
        let mode =
            try query(readOnly ? "PRAGMA journal_mode" : "PRAGMA journal_mode = WAL").first?[0].string?
            .lowercased() ?? ""
        guard mode == "wal" else { throw .walUnavailable(journalMode: mode) }
        if !readOnly { try execute("PRAGMA synchronous = FULL") }
    }

    deinit {
        // Finalized first: the cached statements do not keep the connection alive.
        statementCache.removeAll()
        sqlite3_close_v2(handle)
    }

    // MARK: Statements

    /// Runs one or more SQL statements without parameters (`sqlite3_exec`), for schema and pragmas.
    /// - Parameter sql: The statements, separated by semicolons.
    /// - Throws: ``SQLiteError`` from the first statement that fails.
    public func execute(_ sql: String) throws(SQLiteError) {
        try locked { () throws(SQLiteError) in try check(sqlite3_exec(handle, sql, nil, nil, nil)) }
    }

    /// Prepares a statement (`sqlite3_prepare_v2`).
    /// - Parameter sql: One SQL statement, with `?` parameters.
    /// - Returns: The statement, ready to bind and step.
    /// - Throws: ``SQLiteError`` for invalid SQL.
    public func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        try locked { () throws(SQLiteError) -> SQLiteStatement in
            var statement: OpaquePointer?
            try check(sqlite3_prepare_v2(handle, sql, -1, &statement, nil))
            guard let statement else { throw .sqlite(code: SQLITE_MISUSE, message: "empty statement") }
            return SQLiteStatement(database: self, handle: statement)
        }
    }

    /// Runs one statement that returns no rows worth reading (`INSERT`, `UPDATE`, `DELETE`, DDL).
    /// - Parameters:
    ///   - sql: One SQL statement with `?` parameters.
    ///   - bindings: The parameter values in order.
    /// - Returns: The number of rows changed (`sqlite3_changes`).
    /// - Throws: ``SQLiteError`` (constraint, busy, …).
    @discardableResult
    public func run(_ sql: String, _ bindings: [SQLiteValue] = []) throws(SQLiteError) -> Int {
        try locked { () throws(SQLiteError) -> Int in
            let statement = try cachedStatement(sql)
            defer { statement.reset() }
            try statement.bind(bindings)
            while try statement.step() {}
            return Int(sqlite3_changes(handle))
        }
    }

    /// Runs one statement and returns every row it produces.
    /// - Parameters:
    ///   - sql: One SQL statement with `?` parameters (`SELECT`, or a write with `RETURNING`).
    ///   - bindings: The parameter values in order.
    /// - Returns: The rows, copied.
    /// - Throws: ``SQLiteError``.
    public func query(_ sql: String, _ bindings: [SQLiteValue] = []) throws(SQLiteError) -> [SQLiteRow] {
        try locked { () throws(SQLiteError) -> [SQLiteRow] in
            let statement = try cachedStatement(sql)
            defer { statement.reset() }
            try statement.bind(bindings)
            var rows: [SQLiteRow] = []
            while try statement.step() { rows.append(try statement.row()) }
            return rows
        }
    }

    /// The prepared statement for `sql` from the cache, or prepared now (and kept while the
    /// cache has room). The caller holds the lock and resets the statement after use.
    private func cachedStatement(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        if let statement = statementCache[sql] { return statement }
        var prepared: OpaquePointer?
        try check(sqlite3_prepare_v2(handle, sql, -1, &prepared, nil))
        guard let prepared else { throw .sqlite(code: SQLITE_MISUSE, message: "empty statement") }
        let statement = SQLiteStatement(database: self, handle: prepared, retainsDatabase: false)
        if statementCache.count < Self.statementCacheLimit { statementCache[sql] = statement }
        return statement
    }

    /// The row id of the last successful `INSERT` on this connection.
    public var lastInsertRowID: Int64 { locked { sqlite3_last_insert_rowid(handle) } }

    // MARK: Transactions

    /// Runs a body in one transaction: committed if the body returns, rolled back if it throws.
    ///
    /// With `immediate` (the default) the transaction starts with `BEGIN IMMEDIATE`, taking the
    /// write lock at once: a read-modify-write such as a failure counter then cannot interleave
    /// with another connection's, and waiting for the lock happens at `BEGIN` (bounded by the
    /// busy timeout), never half-way. Use `immediate: false` (`BEGIN DEFERRED`) for read-only work.
    /// - Parameters:
    ///   - immediate: Whether to take the write lock at the start.
    ///   - body: The work; run statements on this same connection inside it.
    /// - Returns: What the body returns.
    /// - Throws: The body's error (after rollback), ``SQLiteError/nestedTransaction``, or
    ///   ``SQLiteError/busy`` when the lock could not be had within the busy timeout.
    public func transaction<T>(immediate: Bool = true, _ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        try locked { () throws(SQLiteError) -> T in
            guard sqlite3_get_autocommit(handle) != 0 else { throw .nestedTransaction }
            try run(immediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED")
            let result: T
            do throws(SQLiteError) {
                result = try body()
                try run("COMMIT")
            } catch {
                // SQLite may already have rolled back (for example after SQLITE_FULL).
                if sqlite3_get_autocommit(handle) == 0 { _ = sqlite3_exec(handle, "ROLLBACK", nil, nil, nil) }
                throw error
            }
            return result
        }
    }

    // MARK: Inspection

    /// The journal mode now in force (`PRAGMA journal_mode`), lower-cased: `wal` after a successful open.
    /// - Returns: The mode.
    /// - Throws: ``SQLiteError``.
    public func journalMode() throws(SQLiteError) -> String {
        try query("PRAGMA journal_mode").first?[0].string?.lowercased() ?? ""
    }

    /// Runs `PRAGMA integrity_check`.
    /// - Returns: `["ok"]` for a sound database, otherwise SQLite's list of problems.
    /// - Throws: ``SQLiteError`` when the check itself cannot run.
    public func integrityCheck() throws(SQLiteError) -> [String] {
        try query("PRAGMA integrity_check").compactMap { $0[0].string }
    }

    // MARK: Internals

    func locked<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    func check(_ code: Int32) throws(SQLiteError) {
        guard code == SQLITE_OK else { throw SQLiteError(code: code, connection: handle) }
    }
}
