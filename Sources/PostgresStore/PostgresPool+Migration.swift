extension PostgresPool {
    /// Brings the schema up to `migrations.count`: each step not yet applied runs, and its
    /// number is recorded in `schema_version`, in one transaction under an advisory lock, so
    /// several instances starting at once migrate exactly once.
    /// - Parameter migrations: one SQL script per version, oldest first (never edit a released one).
    /// - Throws: ``PostgresError/schemaTooNew(found:supported:)`` for a database written by newer
    ///   code (left untouched), other ``PostgresError``s.
    public func migrate(_ migrations: [String]) throws(PostgresError) {
        try transaction { (connection) throws(PostgresError) in
            // An arbitrary constant: the lock every SecurePIN migration takes.
            try connection.execute("SELECT pg_advisory_xact_lock(7291003)")
            try connection.execute("CREATE TABLE IF NOT EXISTS schema_version(version bigint NOT NULL)")
            let found = Int(
                try connection.query("SELECT coalesce(max(version), 0) FROM schema_version").first?[0].int64 ?? 0)
            guard found <= migrations.count else {
                throw .schemaTooNew(found: found, supported: migrations.count)
            }
            for (index, step) in migrations.enumerated() where index >= found {
                try connection.execute(step)
                try connection.query("INSERT INTO schema_version(version) VALUES ($1)", [.integer(Int64(index + 1))])
            }
        }
    }

    /// The schema version recorded in the database (0 before the first migration).
    /// - Returns: the version.
    /// - Throws: ``PostgresError``.
    public func schemaVersion() throws(PostgresError) -> Int {
        try withConnection(idempotent: true) { (connection) throws(PostgresError) -> Int in
            let exists = try connection.query("SELECT to_regclass('schema_version') IS NOT NULL").first?[0].bool
            guard exists == true else { return 0 }
            return Int(
                try connection.query("SELECT coalesce(max(version), 0) FROM schema_version").first?[0].int64 ?? 0)
        }
    }
}
