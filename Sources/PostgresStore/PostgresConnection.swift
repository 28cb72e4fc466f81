internal import CLibPQ
import Foundation
import SecureCore

/// One libpq connection (`PGconn`). Not safe for concurrent use: ``PostgresPool`` hands each
/// connection to one thread at a time, and that is the only way the store uses it.
public final class PostgresConnection: @unchecked Sendable {
    private let handle: OpaquePointer
    /// Statements ``query(_:_:)`` prepared on this connection (`PQprepare`), by text and parameter
    /// types, with their names: the server parses and plans each once per connection instead of
    /// on every call. Bounded by ``preparedStatementLimit``; past it a statement runs unnamed.
    private var prepared: [PreparedKey: String] = [:]
    /// How many statements one connection keeps prepared.
    public static let preparedStatementLimit = 128

    private struct PreparedKey: Hashable {
        var sql: String
        var types: [Oid]
    }

    /// Connects with a connection string (key/value or URI form) held in secure memory, and
    /// sets the session's statement and lock timeouts.
    /// - Parameters:
    ///   - connectionString: the DSN, NUL-terminated, in secure memory (it may hold a password);
    ///     libpq keeps its own copy of the parsed password for the life of the connection.
    ///   - connectTimeoutSeconds: the `connect_timeout` of libpq.
    ///   - statementTimeoutMilliseconds: `statement_timeout` and `lock_timeout` of the session.
    /// - Throws: ``PostgresError/unavailable(reason:)``, ``PostgresError/invalidConnectionString``.
    init(connectionString: SecureBytes, connectTimeoutSeconds: Int, statementTimeoutMilliseconds: Int)
        throws(PostgresError)
    {
        let connection = connectionString.withUnsafeBytes { (dsn) -> OpaquePointer? in
            guard let base = dsn.baseAddress, dsn.count > 1, dsn[dsn.count - 1] == 0 else { return nil }
            // After the DSN, so they win over it: a database host that vanished without closing
            // the connection (no RST) fails the statement in bounded time instead of hanging a
            // request thread until the kernel gives up (TCP only; ignored on a Unix socket).
            let keywords = [
                "dbname", "connect_timeout", "application_name", "keepalives", "keepalives_idle",
                "keepalives_interval", "keepalives_count", "tcp_user_timeout",
            ]
            let settings = [
                String(connectTimeoutSeconds), "securepin", "1", "10", "5", "3",
                String(statementTimeoutMilliseconds + 5000),
            ]
            return keywords.withCStringArray { keys in
                settings.withCStringArray { tail in
                    var values: [UnsafePointer<CChar>?] = [base.assumingMemoryBound(to: CChar.self)]
                    values += tail.dropLast()
                    values.append(nil)
                    return PQconnectdbParams(keys, values, 1)
                }
            }
        }
        guard let connection else { throw .invalidConnectionString }
        guard PQstatus(connection) == CONNECTION_OK else {
            let reason = Self.message(connection)
            PQfinish(connection)
            throw .unavailable(reason: reason)
        }
        handle = connection
        do throws(PostgresError) {
            // Notices (CREATE … IF NOT EXISTS) would go to standard error through libpq's default
            // notice processor: only warnings and errors are sent.
            try execute(
                "SET statement_timeout = \(statementTimeoutMilliseconds); SET lock_timeout = \(statementTimeoutMilliseconds);"
                    + " SET client_min_messages = warning")
        } catch {
            PQfinish(connection)
            throw error
        }
    }

    deinit { PQfinish(handle) }

    /// Whether the connection can take another statement outside a transaction: connected,
    /// and no transaction left open or failed.
    public var isReusable: Bool {
        PQstatus(handle) == CONNECTION_OK && PQtransactionStatus(handle) == PQTRANS_IDLE
    }

    /// Whether the connection still looks alive before a statement is sent on it. An idle
    /// connection has nothing to read; if its socket is readable, the server sent something
    /// unasked — in practice the notice of its end (a restart, `pg_terminate_backend`) followed
    /// by the close — so the connection is not used (`poll` with no wait). A dead connection is
    /// thus found before a statement was sent on it, when dropping it is unambiguous; a statement
    /// that fails after it was sent may have committed.
    public var isAlive: Bool {
        guard PQstatus(handle) == CONNECTION_OK, PQtransactionStatus(handle) == PQTRANS_IDLE else { return false }
        let socket = PQsocket(handle)
        guard socket >= 0 else { return false }
        var entry = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 0
    }

    /// Runs one or more statements without parameters or results (`PQexec`).
    /// - Parameter sql: the statements.
    /// - Throws: ``PostgresError``.
    public func execute(_ sql: String) throws(PostgresError) {
        guard let result = PQexec(handle, sql) else { throw .unavailable(reason: Self.message(handle)) }
        defer { PQclear(result) }
        try check(result)
    }

    /// Runs one statement with parameters (`$1`, `$2`, …), binary in and out.
    /// - Parameters:
    ///   - sql: the statement.
    ///   - parameters: the values of `$1` …, in order.
    /// - Returns: the result rows (none for a statement without a result).
    /// - Throws: ``PostgresError``.
    @discardableResult
    public func query(_ sql: String, _ parameters: [PostgresValue] = []) throws(PostgresError) -> [PostgresRow] {
        let encoded = parameters.map(PostgresType.encode)
        let types = encoded.map { $0.oid }
        let lengths = encoded.map { Int32($0.bytes?.count ?? 0) }
        let formats = [Int32](repeating: 1, count: encoded.count)
        let buffers = encoded.map {
            $0.bytes.map { bytes -> UnsafeMutablePointer<CChar> in
                let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: max(bytes.count, 1))
                bytes.withUnsafeBytes { source in
                    UnsafeMutableRawPointer(buffer).copyMemory(
                        from: source.baseAddress ?? UnsafeRawPointer(buffer), byteCount: source.count)
                }
                return buffer
            }
        }
        defer { for buffer in buffers { buffer?.deallocate() } }
        let values = buffers.map { $0.map { UnsafePointer($0) } }
        let result: OpaquePointer?
        if let name = try preparedName(sql, types: types) {
            result = PQexecPrepared(handle, name, Int32(encoded.count), values, lengths, formats, 1)
        } else {
            result = PQexecParams(handle, sql, Int32(encoded.count), types, values, lengths, formats, 1)
        }
        guard let result else { throw .unavailable(reason: Self.message(handle)) }
        defer { PQclear(result) }
        try check(result)
        let rows = Int(PQntuples(result))
        let columns = Int(PQnfields(result))
        var out: [PostgresRow] = []
        out.reserveCapacity(rows)
        for row in 0..<rows {
            var values: [PostgresValue] = []
            values.reserveCapacity(columns)
            for column in 0..<columns {
                if PQgetisnull(result, Int32(row), Int32(column)) != 0 {
                    values.append(.null)
                    continue
                }
                let length = Int(PQgetlength(result, Int32(row), Int32(column)))
                let pointer = UnsafeRawPointer(PQgetvalue(result, Int32(row), Int32(column)))
                values.append(
                    try PostgresType.decode(
                        oid: PQftype(result, Int32(column)),
                        bytes: UnsafeRawBufferPointer(start: pointer, count: length),
                        column: column))
            }
            out.append(PostgresRow(values: values))
        }
        return out
    }

    /// The name of `sql` prepared with these parameter types, preparing it now when the
    /// connection has room for one more; `nil` when it has not (run it unnamed). A prepared
    /// statement outlives a rolled-back transaction (protocol-level statements are not
    /// transactional), so the cache stays true; it ends with the connection.
    private func preparedName(_ sql: String, types: [Oid]) throws(PostgresError) -> String? {
        let key = PreparedKey(sql: sql, types: types)
        if let name = prepared[key] { return name }
        guard prepared.count < Self.preparedStatementLimit else { return nil }
        let name = "securepin_\(prepared.count)"
        guard let result = PQprepare(handle, name, sql, Int32(types.count), types) else {
            throw .unavailable(reason: Self.message(handle))
        }
        defer { PQclear(result) }
        try check(result)
        prepared[key] = name
        return name
    }

    /// Maps a result's status to an error: the one place where libpq statuses become ``PostgresError``.
    private func check(_ result: OpaquePointer) throws(PostgresError) {
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY: return
        default: break
        }
        let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
        let primary = PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) }
        let message = primary ?? Self.message(handle)
        // No SQLSTATE: libpq's own failure (the server closed the connection, a read failed).
        if PQstatus(handle) != CONNECTION_OK || state.isEmpty || state.hasPrefix("08")
            || ["57P01", "57P02", "57P03"].contains(state)
        {
            throw .unavailable(reason: message)
        }
        if state == "57014" || state == "55P03" { throw .timeout }
        if state.hasPrefix("23") { throw .constraint(message: message) }
        throw .server(sqlState: state, message: message)
    }

    private static func message(_ connection: OpaquePointer) -> String {
        PQerrorMessage(connection).map { String(cString: $0) }?.trimmingCharacters(in: .whitespacesAndNewlines)
            ?? "no message"
    }
}

extension Array where Element == String {
    /// Calls `body` with a NUL-terminated array of C strings (the last element `nil`).
    fileprivate func withCStringArray<R>(_ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        var pointers: [UnsafeMutablePointer<CChar>?] = map { strdup($0) }
        defer { for pointer in pointers { free(pointer) } }
        pointers.append(nil)
        return body(pointers.map { $0.map { UnsafePointer($0) } })
    }
}
