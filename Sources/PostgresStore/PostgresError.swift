/// Everything that can go wrong with PostgreSQL. Messages come from libpq and the server
/// (`PQerrorMessage`, `PG_DIAG_MESSAGE_PRIMARY`) and name tables and columns, never bound
/// values: every value travels as a separate parameter of `PQexecParams`.
public enum PostgresError: Error, Equatable, Sendable {
    /// The database cannot be reached, or the connection broke mid-statement (the server
    /// restarted, the network dropped). Whether a `COMMIT` in flight took effect is unknown;
    /// the caller must not repeat it.
    case unavailable(reason: String)
    /// The statement ran into `statement_timeout` or `lock_timeout` (SQLSTATE 57014, 55P03).
    case timeout
    /// A unique or other constraint was violated (SQLSTATE class 23).
    case constraint(message: String)
    /// Any other server error, with its SQLSTATE and primary message.
    case server(sqlState: String, message: String)
    /// The schema version in the database is newer than the migrations this code knows.
    case schemaTooNew(found: Int, supported: Int)
    /// A column of a result does not hold what its reader expects.
    case typeMismatch(column: Int, expected: String)
    /// The connection string is empty or holds a NUL byte.
    case invalidConnectionString
    /// Thrown by a transaction body to roll the transaction back on purpose.
    case aborted(reason: String)
}

extension PostgresError: CustomStringConvertible {
    /// What went wrong, in a sentence fragment a person can act on; it names tables and columns, never values.
    public var description: String {
        switch self {
        case .unavailable(let reason): "the database cannot be reached: \(reason)"
        case .timeout: "the statement ran into the statement or lock timeout"
        case .constraint(let message): "a constraint was violated: \(message)"
        case .server(let sqlState, let message): "the database failed with SQLSTATE \(sqlState): \(message)"
        case .schemaTooNew(let found, let supported):
            "the database's schema version \(found) is newer than the \(supported) this program knows: "
                + "a newer program wrote it, and it is left untouched"
        case .typeMismatch(let column, let expected): "column \(column) does not hold \(expected)"
        case .invalidConnectionString: "the connection string is empty or holds a NUL byte"
        case .aborted(let reason): "the transaction was rolled back: \(reason)"
        }
    }
}
