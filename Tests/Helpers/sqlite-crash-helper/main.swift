// Test helper for SQLiteTests: increments a counter in one transaction after another,
// forever, and reports each value on stdout only after its COMMIT returned. The test
// kills it with SIGKILL at a random instant and checks the file.
//
// Usage: sqlite-crash-helper <database-path>
import SQLiteStore

#if canImport(Glibc)
    import Glibc
#endif

/// Writes one whole line with a single write(2), so a kill never leaves half a number.
func report(_ line: String) {
    var bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeMutableBytes { write(1, $0.baseAddress, $0.count) }
}

guard CommandLine.arguments.count == 2 else {
    report("usage: sqlite-crash-helper <database-path>")
    exit(2)
}
do {
    let database = try SQLiteDatabase(path: CommandLine.arguments[1])
    try database.migrate([
        "CREATE TABLE counter(id INTEGER PRIMARY KEY, value INTEGER NOT NULL); INSERT INTO counter VALUES (1, 0);",
        "CREATE TABLE log(value INTEGER PRIMARY KEY, payload BLOB NOT NULL);",
    ])
    report("ready")
    var payload = [UInt8](repeating: 0, count: 512)
    while true {
        let value = try database.transaction { () throws(SQLiteError) -> Int64 in
            let value = try database.query("UPDATE counter SET value = value + 1 WHERE id = 1 RETURNING value")
            guard let number = value.first?[0].int64 else { throw .aborted(reason: "no counter row") }
            // A second write in the same transaction: a torn transaction would show as a mismatch.
            payload[0] = UInt8(truncatingIfNeeded: number)
            try database.run("INSERT INTO log(value, payload) VALUES (?, ?)", [.integer(number), .blob(payload)])
            return number
        }
        report("\(value)")
    }
} catch {
    report("error: \(error)")
    exit(1)
}
