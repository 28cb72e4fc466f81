/// A value SQLite stores: one of its five storage classes.
public enum SQLiteValue: Sendable, Equatable {
    /// A 64-bit signed integer.
    case integer(Int64)
    /// An IEEE 754 double.
    case real(Double)
    /// UTF-8 text.
    case text(String)
    /// Bytes.
    case blob([UInt8])
    /// SQL NULL.
    case null

    /// The integer, if this is one.
    public var int64: Int64? { if case .integer(let value) = self { value } else { nil } }
    /// The double, if this is one.
    public var double: Double? { if case .real(let value) = self { value } else { nil } }
    /// The text, if this is text.
    public var string: String? { if case .text(let value) = self { value } else { nil } }
    /// The bytes, if this is a blob.
    public var bytes: [UInt8]? { if case .blob(let value) = self { value } else { nil } }
    /// Whether this is NULL.
    public var isNull: Bool { self == .null }

    /// The storage class name SQLite uses (`INTEGER`, `REAL`, `TEXT`, `BLOB`, `NULL`).
    public var storageClass: String {
        switch self {
        case .integer: "INTEGER"
        case .real: "REAL"
        case .text: "TEXT"
        case .blob: "BLOB"
        case .null: "NULL"
        }
    }
}

// MARK: - Literals

extension SQLiteValue: ExpressibleByIntegerLiteral {
    /// An integer literal.
    /// - Parameter value: The literal.
    public init(integerLiteral value: Int64) { self = .integer(value) }
}

extension SQLiteValue: ExpressibleByFloatLiteral {
    /// A floating-point literal.
    /// - Parameter value: The literal.
    public init(floatLiteral value: Double) { self = .real(value) }
}

extension SQLiteValue: ExpressibleByStringLiteral {
    /// A string literal.
    /// - Parameter value: The literal.
    public init(stringLiteral value: String) { self = .text(value) }
}

extension SQLiteValue: ExpressibleByNilLiteral {
    /// `nil` as SQL NULL.
    /// - Parameter nilLiteral: The literal.
    public init(nilLiteral: ()) { self = .null }
}
