extension SQLiteDatabase {
    /// The schema version stored in the file (`PRAGMA user_version`; 0 for a new file).
    /// - Returns: The version.
    /// - Throws: ``SQLiteError``.
    public func userVersion() throws(SQLiteError) -> Int {
        Int(try query("PRAGMA user_version").first?[0].int64 ?? 0)
    }

    /// Brings the schema up to date. Step *i* (0-based) takes the schema from version *i* to
    /// *i* + 1; each step runs in its own immediate transaction together with the
    /// `user_version` update, so a crash leaves the file at a whole version, and two processes
    /// migrating at once apply each step exactly once (the version is re-read under the lock).
    ///
    /// Steps must never change once released: add a new step instead.
    /// - Parameter steps: The SQL of every step, in order; the code's version is `steps.count`.
    /// - Returns: The version before migrating.
    /// - Throws: ``SQLiteError/schemaTooNew(found:supported:)`` when the file is newer than
    ///   `steps.count` (nothing is changed), or the ``SQLiteError`` of a failing step (that
    ///   step is rolled back; earlier steps stay applied).
    @discardableResult
    public func migrate(_ steps: [String]) throws(SQLiteError) -> Int {
        let initial = try userVersion()
        guard initial <= steps.count else { throw .schemaTooNew(found: initial, supported: steps.count) }
        var applied = true
        while applied {
            applied = try transaction { () throws(SQLiteError) -> Bool in
                let current = try userVersion()
                guard current <= steps.count else { throw .schemaTooNew(found: current, supported: steps.count) }
                guard current < steps.count else { return false }
                try execute(steps[current])
                try execute("PRAGMA user_version = \(current + 1)")
                return true
            }
        }
        return initial
    }
}
