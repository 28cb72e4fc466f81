import PostgresStore
import SQLiteStore

/// Where ``OPRFVaultStore`` keeps its rows: one transaction at a time, statements written with `?`
/// placeholders and SQLite's value type, rows as arrays of values. SQLite runs them as they are,
/// PostgreSQL with `$n` placeholders, `bytea`/`bigint`/`double precision`, and the loaded vault row
/// taken `FOR UPDATE` (``VaultStatements/lockSuffix``).
protocol VaultTables: Sendable {
    /// Runs `body` in one transaction. A refusal `body` throws is returned, and what it wrote
    /// before is committed (a refusal that counts wrote its audit row on purpose); a storage
    /// failure rolls everything back.
    func transaction<R>(_ body: (VaultStatements) throws(OPRFVaultStore.Refusal) -> R) -> Result<
        R, OPRFVaultStore.Refusal
    >
}

/// The statements of one transaction.
struct VaultStatements {
    /// Appended to the `SELECT` that loads a vault row to lock it for the transaction.
    let lockSuffix: String
    let queryBody: (String, [SQLiteValue]) throws(OPRFVaultStore.Refusal) -> [[SQLiteValue]]

    /// The rows of a query.
    func query(_ sql: String, _ bindings: [SQLiteValue] = []) throws(OPRFVaultStore.Refusal) -> [[SQLiteValue]] {
        try queryBody(sql, bindings)
    }

    /// Runs a statement that returns nothing.
    func run(_ sql: String, _ bindings: [SQLiteValue] = []) throws(OPRFVaultStore.Refusal) {
        _ = try queryBody(sql, bindings)
    }
}

/// The tables in the SQLite activation database; every transaction `BEGIN IMMEDIATE`.
struct SQLiteVaultTables: VaultTables {
    let database: SQLiteDatabase

    func transaction<R>(_ body: (VaultStatements) throws(OPRFVaultStore.Refusal) -> R) -> Result<
        R, OPRFVaultStore.Refusal
    > {
        let database = self.database
        let statements = VaultStatements(lockSuffix: "") { (sql, bindings) throws(OPRFVaultStore.Refusal) in
            do throws(SQLiteError) {
                return try database.query(sql, bindings).map(\.values)
            } catch {
                throw .storage("\(error)")
            }
        }
        var refusal: OPRFVaultStore.Refusal?
        do throws(SQLiteError) {
            let value = try database.transaction { () throws(SQLiteError) -> R? in
                do throws(OPRFVaultStore.Refusal) {
                    return try body(statements)
                } catch {
                    refusal = error
                    if case .storage = error { throw SQLiteError.aborted(reason: "rolled back") }
                    return nil
                }
            }
            if let value { return .success(value) }
            return .failure(refusal ?? .storage("no value"))
        } catch {
            return .failure(refusal ?? .storage("\(error)"))
        }
    }
}

/// The tables in the PostgreSQL activation database (``PostgresActivationStore``'s pool).
struct PostgresVaultTables: VaultTables {
    let pool: PostgresPool

    func transaction<R>(_ body: (VaultStatements) throws(OPRFVaultStore.Refusal) -> R) -> Result<
        R, OPRFVaultStore.Refusal
    > {
        var refusal: OPRFVaultStore.Refusal?
        do throws(PostgresError) {
            let value = try pool.transaction { (connection) throws(PostgresError) -> R? in
                let statements = VaultStatements(lockSuffix: " FOR UPDATE") {
                    (sql, bindings) throws(OPRFVaultStore.Refusal) in
                    do throws(PostgresError) {
                        return try connection.query(Self.numbered(sql), bindings.map(Self.value)).map {
                            $0.values.map(Self.value)
                        }
                    } catch {
                        throw .storage("\(error)")
                    }
                }
                do throws(OPRFVaultStore.Refusal) {
                    return try body(statements)
                } catch {
                    refusal = error
                    if case .storage = error { throw PostgresError.aborted(reason: "rolled back") }
                    return nil
                }
            }
            if let value { return .success(value) }
            return .failure(refusal ?? .storage("no value"))
        } catch {
            return .failure(refusal ?? .storage("\(error)"))
        }
    }

    /// `?` placeholders as `$1`, `$2`, … (the statements here have no `?` inside literals).
    static func numbered(_ sql: String) -> String {
        var out = ""
        var n = 0
        for character in sql {
            if character == "?" {
                n += 1
                out += "$\(n)"
            } else {
                out.append(character)
            }
        }
        return out
    }

    static func value(_ v: SQLiteValue) -> PostgresValue {
        switch v {
        case .integer(let x): .integer(x)
        case .real(let x): .double(x)
        case .text(let x): .text(x)
        case .blob(let x): .bytes(x)
        case .null: .null
        }
    }

    static func value(_ v: PostgresValue) -> SQLiteValue {
        switch v {
        case .integer(let x): .integer(x)
        case .double(let x): .real(x)
        case .text(let x): .text(x)
        case .bytes(let x): .blob(x)
        case .bool(let x): .integer(x ? 1 : 0)
        case .null: .null
        }
    }
}
