/// A value bound to a statement or read from a result, in PostgreSQL's binary format.
public enum PostgresValue: Sendable, Equatable {
    /// SQL `NULL`.
    case null
    /// `text`.
    case text(String)
    /// `bytea`.
    case bytes([UInt8])
    /// `bigint`.
    case integer(Int64)
    /// `double precision`.
    case double(Double)
    /// `boolean`.
    case bool(Bool)

    /// The text, or `nil` for another kind.
    public var string: String? {
        if case .text(let value) = self { return value }
        return nil
    }

    /// The bytes, or `nil` for another kind.
    public var bytes: [UInt8]? {
        if case .bytes(let value) = self { return value }
        return nil
    }

    /// The integer, or `nil` for another kind.
    public var int64: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// The floating-point number, or `nil` for another kind.
    public var double: Double? {
        if case .double(let value) = self { return value }
        return nil
    }

    /// The truth value, or `nil` for another kind.
    public var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }
}

/// One row of a result.
public struct PostgresRow: Sendable, Equatable {
    /// The columns, in the order of the `SELECT` list.
    public let values: [PostgresValue]

    /// The column at `index` (``PostgresValue/null`` when out of range).
    public subscript(index: Int) -> PostgresValue {
        values.indices.contains(index) ? values[index] : .null
    }
}

/// Type OIDs of the built-in types this module reads and writes (`pg_type.oid`).
enum PostgresType {
    static let bool: UInt32 = 16
    static let bytea: UInt32 = 17
    static let name: UInt32 = 19
    static let int8: UInt32 = 20
    static let int2: UInt32 = 21
    static let int4: UInt32 = 23
    static let text: UInt32 = 25
    static let float8: UInt32 = 701
    static let varchar: UInt32 = 1043

    /// The binary wire form of a parameter and its type OID (`nil` bytes for `NULL`).
    static func encode(_ value: PostgresValue) -> (oid: UInt32, bytes: [UInt8]?) {
        switch value {
        case .null: return (0, nil)
        case .text(let text): return (Self.text, Array(text.utf8))
        case .bytes(let bytes): return (bytea, bytes)
        case .integer(let number): return (int8, bigEndianBytes(UInt64(bitPattern: number)))
        case .double(let number): return (float8, bigEndianBytes(number.bitPattern))
        case .bool(let truth): return (bool, [truth ? 1 : 0])
        }
    }

    /// Reads a binary column value of type `oid`.
    static func decode(oid: UInt32, bytes: UnsafeRawBufferPointer, column: Int) throws(PostgresError)
        -> PostgresValue
    {
        switch oid {
        case text, varchar, name: return .text(String(decoding: bytes, as: UTF8.self))
        case bytea: return .bytes(Array(bytes))
        case bool:
            guard bytes.count == 1 else { throw .typeMismatch(column: column, expected: "boolean") }
            return .bool(bytes[0] != 0)
        case int2, int4, int8:
            guard [2, 4, 8].contains(bytes.count) else { throw .typeMismatch(column: column, expected: "integer") }
            var unsigned: UInt64 = 0
            for byte in bytes { unsigned = unsigned << 8 | UInt64(byte) }
            // Sign-extend the narrower integer types.
            let shift = UInt64(64 - 8 * bytes.count)
            return .integer(Int64(bitPattern: unsigned << shift) >> Int64(shift))
        case float8:
            guard bytes.count == 8 else { throw .typeMismatch(column: column, expected: "double precision") }
            var bits: UInt64 = 0
            for byte in bytes { bits = bits << 8 | UInt64(byte) }
            return .double(Double(bitPattern: bits))
        default:
            throw .typeMismatch(column: column, expected: "a supported type (found OID \(oid))")
        }
    }

    private static func bigEndianBytes(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * UInt64($0))) }
    }
}
