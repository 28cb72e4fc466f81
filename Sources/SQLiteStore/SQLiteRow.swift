/// One result row, copied out of a statement.
public struct SQLiteRow: Sendable, Equatable {
    /// The column names, in result order.
    public let columnNames: [String]
    /// The values, in result order.
    public let values: [SQLiteValue]

    /// Creates a row.
    /// - Parameters:
    ///   - columnNames: The column names.
    ///   - values: The values, one per name.
    public init(columnNames: [String], values: [SQLiteValue]) {
        precondition(columnNames.count == values.count, "one value per column")
        self.columnNames = columnNames
        self.values = values
    }

    /// The value at a 0-based column index (traps when out of range, like an array).
    public subscript(index: Int) -> SQLiteValue { values[index] }

    /// The value of the first column with this name, or nil when there is none.
    public subscript(name: String) -> SQLiteValue? {
        columnNames.firstIndex(of: name).map { values[$0] }
    }
}
