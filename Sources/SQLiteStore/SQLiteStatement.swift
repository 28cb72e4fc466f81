internal import CSQLite

/// SQLite's "copy the bytes now" destructor (`SQLITE_TRANSIENT`), a macro Swift cannot import.
private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A prepared statement (`sqlite3_prepare_v2`) with typed bind and column access.
///
/// Not `Sendable`: a statement belongs to the thread that prepared it. Every call takes the
/// database's lock, so a statement and other work on the same ``SQLiteDatabase`` never interleave
/// inside SQLite. Parameter indexes are 1-based (as in SQL `?1`), column indexes 0-based.
public final class SQLiteStatement {
    /// Keeps the database open while a caller holds the statement; `nil` for the statements
    /// the database caches itself (it finalizes them before it closes, and a strong reference
    /// back would keep it open for ever).
    private let owner: SQLiteDatabase?
    private unowned(unsafe) let database: SQLiteDatabase
    private let handle: OpaquePointer
    /// The result column names, read once (the same for every row of a prepared statement).
    private var names: [String]?

    init(database: SQLiteDatabase, handle: OpaquePointer, retainsDatabase: Bool = true) {
        self.owner = retainsDatabase ? database : nil
        self.database = database
        self.handle = handle
    }

    deinit { database.locked { _ = sqlite3_finalize(handle) } }

    // MARK: Binding

    /// Binds a value to a parameter.
    /// - Parameters:
    ///   - value: The value.
    ///   - index: The 1-based parameter index.
    /// - Throws: ``SQLiteError/sqlite(code:message:)`` (`SQLITE_RANGE`) for a bad index.
    public func bind(_ value: SQLiteValue, at index: Int) throws(SQLiteError) {
        try database.locked { () throws(SQLiteError) in
            let position = Int32(clamping: index)
            let code: Int32
            switch value {
            case .integer(let number): code = sqlite3_bind_int64(handle, position, number)
            case .real(let number): code = sqlite3_bind_double(handle, position, number)
            case .text(let text): code = sqlite3_bind_text(handle, position, text, -1, transient)
            case .blob(let bytes):
                code = bytes.withUnsafeBytes { raw in
                    // A zero-length blob needs a non-null pointer to stay a blob rather than NULL.
                    raw.count == 0
                        ? sqlite3_bind_zeroblob(handle, position, 0)
                        : sqlite3_bind_blob(handle, position, raw.baseAddress, Int32(raw.count), transient)
                }
            case .null: code = sqlite3_bind_null(handle, position)
            }
            try database.check(code)
        }
    }

    /// Binds values to parameters 1, 2, … in order.
    /// - Parameter values: One value per parameter.
    /// - Throws: ``SQLiteError`` when a value cannot be bound.
    public func bind(_ values: [SQLiteValue]) throws(SQLiteError) {
        for (offset, value) in values.enumerated() { try bind(value, at: offset + 1) }
    }

    /// Binds a 64-bit integer.
    /// - Parameters:
    ///   - value: The integer.
    ///   - index: The 1-based parameter index.
    /// - Throws: ``SQLiteError`` for a bad index.
    public func bind(_ value: Int64, at index: Int) throws(SQLiteError) { try bind(.integer(value), at: index) }

    /// Binds a double.
    /// - Parameters:
    ///   - value: The double.
    ///   - index: The 1-based parameter index.
    /// - Throws: ``SQLiteError`` for a bad index.
    public func bind(_ value: Double, at index: Int) throws(SQLiteError) { try bind(.real(value), at: index) }

    /// Binds text.
    /// - Parameters:
    ///   - value: The text.
    ///   - index: The 1-based parameter index.
    /// - Throws: ``SQLiteError`` for a bad index.
    public func bind(_ value: String, at index: Int) throws(SQLiteError) { try bind(.text(value), at: index) }

    /// Binds bytes as a blob.
    /// - Parameters:
    ///   - value: The bytes.
    ///   - index: The 1-based parameter index.
    /// - Throws: ``SQLiteError`` for a bad index.
    public func bind(_ value: [UInt8], at index: Int) throws(SQLiteError) { try bind(.blob(value), at: index) }

    /// Binds NULL.
    /// - Parameter index: The 1-based parameter index.
    /// - Throws: ``SQLiteError`` for a bad index.
    public func bindNull(at index: Int) throws(SQLiteError) { try bind(.null, at: index) }

    // MARK: Stepping

    /// Runs the statement to its next row (`sqlite3_step`).
    /// - Returns: true when a row is available to read, false when the statement is done.
    /// - Throws: ``SQLiteError`` from SQLite (constraint, busy, …).
    @discardableResult
    public func step() throws(SQLiteError) -> Bool {
        try database.locked { () throws(SQLiteError) -> Bool in
            let code = sqlite3_step(handle)
            switch code {
            case SQLITE_ROW: return true
            case SQLITE_DONE: return false
            default: throw SQLiteError(code: code, connection: sqlite3_db_handle(handle))
            }
        }
    }

    /// Rewinds the statement and clears its bindings, ready to run again.
    public func reset() {
        database.locked {
            _ = sqlite3_reset(handle)
            _ = sqlite3_clear_bindings(handle)
        }
    }

    // MARK: Columns

    /// The number of result columns.
    public var columnCount: Int { database.locked { Int(sqlite3_column_count(handle)) } }

    /// The name of a result column.
    /// - Parameter index: The 0-based column index.
    /// - Returns: The name (empty when out of range).
    public func columnName(at index: Int) -> String {
        database.locked { sqlite3_column_name(handle, Int32(clamping: index)).map { String(cString: $0) } ?? "" }
    }

    /// The value of a column of the current row, whatever its storage class.
    /// - Parameter index: The 0-based column index.
    /// - Returns: The value.
    /// - Throws: ``SQLiteError/columnOutOfRange(_:)``.
    public func value(at index: Int) throws(SQLiteError) -> SQLiteValue {
        try database.locked { () throws(SQLiteError) -> SQLiteValue in
            guard index >= 0, index < Int(sqlite3_column_count(handle)) else { throw .columnOutOfRange(index) }
            let column = Int32(index)
            switch sqlite3_column_type(handle, column) {
            case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, column))
            case SQLITE_FLOAT: return .real(sqlite3_column_double(handle, column))
            case SQLITE_TEXT:
                let count = Int(sqlite3_column_bytes(handle, column))
                guard let text = sqlite3_column_text(handle, column) else { return .text("") }
                return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
            case SQLITE_BLOB:
                let count = Int(sqlite3_column_bytes(handle, column))
                guard count > 0, let blob = sqlite3_column_blob(handle, column) else { return .blob([]) }
                return .blob(Array(UnsafeRawBufferPointer(start: blob, count: count)))
            default: return .null
            }
        }
    }

    /// Whether a column of the current row is NULL.
    /// - Parameter index: The 0-based column index.
    /// - Returns: true for NULL.
    /// - Throws: ``SQLiteError/columnOutOfRange(_:)``.
    public func isNull(at index: Int) throws(SQLiteError) -> Bool { try value(at: index) == .null }

    /// An `INTEGER` column.
    /// - Parameter index: The 0-based column index.
    /// - Returns: The integer.
    /// - Throws: ``SQLiteError/typeMismatch(column:expected:found:)`` for another storage class.
    public func int64(at index: Int) throws(SQLiteError) -> Int64 {
        let value = try value(at: index)
        guard let number = value.int64 else { throw mismatch(index, "INTEGER", value) }
        return number
    }

    /// A `REAL` column.
    /// - Parameter index: The 0-based column index.
    /// - Returns: The double.
    /// - Throws: ``SQLiteError/typeMismatch(column:expected:found:)`` for another storage class.
    public func double(at index: Int) throws(SQLiteError) -> Double {
        let value = try value(at: index)
        guard let number = value.double else { throw mismatch(index, "REAL", value) }
        return number
    }

    /// A `TEXT` column.
    /// - Parameter index: The 0-based column index.
    /// - Returns: The text.
    /// - Throws: ``SQLiteError/typeMismatch(column:expected:found:)`` for another storage class.
    public func string(at index: Int) throws(SQLiteError) -> String {
        let value = try value(at: index)
        guard let text = value.string else { throw mismatch(index, "TEXT", value) }
        return text
    }

    /// A `BLOB` column.
    /// - Parameter index: The 0-based column index.
    /// - Returns: The bytes.
    /// - Throws: ``SQLiteError/typeMismatch(column:expected:found:)`` for another storage class.
    public func bytes(at index: Int) throws(SQLiteError) -> [UInt8] {
        let value = try value(at: index)
        guard let bytes = value.bytes else { throw mismatch(index, "BLOB", value) }
        return bytes
    }

    /// The current row, copied.
    /// - Returns: Every column's name and value.
    /// - Throws: ``SQLiteError`` (not expected for a row just stepped to).
    public func row() throws(SQLiteError) -> SQLiteRow {
        let count = columnCount
        let columnNames: [String]
        if let names, names.count == count {
            columnNames = names
        } else {
            columnNames = (0..<count).map { columnName(at: $0) }
            names = columnNames
        }
        var values: [SQLiteValue] = []
        values.reserveCapacity(count)
        for index in 0..<count { values.append(try value(at: index)) }
        return SQLiteRow(columnNames: columnNames, values: values)
    }

    private func mismatch(_ index: Int, _ expected: String, _ found: SQLiteValue) -> SQLiteError {
        .typeMismatch(column: index, expected: expected, found: found.storageClass)
    }
}
