internal import CSQLite

/// Everything that can go wrong with a SQLite database. Messages come from SQLite
/// (`sqlite3_errmsg`) and name tables and columns, never bound values.
public enum SQLiteError: Error, Equatable, Sendable {
    /// The database stayed locked by another connection for longer than the busy
    /// timeout (`SQLITE_BUSY`, `SQLITE_LOCKED`).
    case busy
    /// A constraint (`UNIQUE`, `NOT NULL`, `CHECK`, foreign key) was violated.
    case constraint(message: String)
    /// The file is not a database or is damaged (`SQLITE_CORRUPT`, `SQLITE_NOTADB`).
    case corrupt(message: String)
    /// Any other SQLite failure, with its extended result code and message.
    case sqlite(code: Int32, message: String)
    /// The database could not be switched to write-ahead logging; `journalMode` is the
    /// mode SQLite reported instead (for example `memory` for an in-memory database).
    case walUnavailable(journalMode: String)
    /// The schema version in the file (`PRAGMA user_version`) is newer than the
    /// migrations this code knows: it was written by a newer program and is left untouched.
    case schemaTooNew(found: Int, supported: Int)
    /// A column read with a typed getter holds another storage class.
    case typeMismatch(column: Int, expected: String, found: String)
    /// A column index outside the statement's result columns.
    case columnOutOfRange(Int)
    /// ``SQLiteDatabase/transaction(immediate:_:)`` was called inside a transaction.
    case nestedTransaction
    /// Thrown by a transaction body to roll the transaction back on purpose.
    case aborted(reason: String)
}

extension SQLiteError {
    /// Maps a SQLite result code, with the connection's message, to an error: the one place
    /// where SQLite statuses become ``SQLiteError``.
    init(code: Int32, connection: OpaquePointer?) {
        let message =
            connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
            ?? String(cString: sqlite3_errstr(code))
        switch code & 0xFF {
        case SQLITE_BUSY, SQLITE_LOCKED: self = .busy
        case SQLITE_CONSTRAINT: self = .constraint(message: message)
        case SQLITE_CORRUPT, SQLITE_NOTADB: self = .corrupt(message: message)
        default: self = .sqlite(code: code, message: message)
        }
    }
}

extension SQLiteError: CustomStringConvertible {
    /// What went wrong, in a sentence fragment a person can act on; it names tables and columns, never values.
    public var description: String {
        switch self {
        case .busy: "the database stayed locked by another connection for longer than the busy timeout"
        case .constraint(let message): "a constraint was violated: \(message)"
        case .corrupt(let message): "the file is not a database or is damaged: \(message)"
        case .sqlite(let code, let message): "SQLite failed with code \(code): \(message)"
        case .walUnavailable(let journalMode):
            "the database cannot use write-ahead logging; its journal mode is \(journalMode)"
        case .schemaTooNew(let found, let supported):
            "the database's schema version \(found) is newer than the \(supported) this program knows: "
                + "a newer program wrote it, and it is left untouched"
        case .typeMismatch(let column, let expected, let found): "column \(column) holds \(found), not \(expected)"
        case .columnOutOfRange(let column): "column \(column) is outside the statement's result columns"
        case .nestedTransaction: "a transaction was begun inside a transaction"
        case .aborted(let reason): "the transaction was rolled back: \(reason)"
        }
    }
}
