import Foundation
import SQLiteStore
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A scratch directory per test, removed afterwards.
final class Scratch {
    let directory: URL
    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("sqlite-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }
    func path(_ name: String = "test.sqlite") -> String { directory.appendingPathComponent(name).path }
    deinit { try? FileManager.default.removeItem(at: directory) }
}

private let counterSchema = [
    "CREATE TABLE counter(id INTEGER PRIMARY KEY, value INTEGER NOT NULL); INSERT INTO counter VALUES (1, 0);"
]

@Suite("SQLite storage")
struct SQLiteTests {
    @Test("create, read, update and delete with every value type, through prepared statements")
    func crud() throws {
        let scratch = try Scratch()
        let db = try SQLiteDatabase(path: scratch.path())
        try db.execute("CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT, score REAL, data BLOB, note TEXT)")
        let insert = try db.prepare("INSERT INTO item(name, score, data, note) VALUES (?, ?, ?, ?)")
        try insert.bind("first é ✓", at: 1)
        try insert.bind(2.5, at: 2)
        try insert.bind([0, 1, 2, 255], at: 3)
        try insert.bindNull(at: 4)
        #expect(try insert.step() == false)
        let firstID = db.lastInsertRowID
        insert.reset()
        try insert.bind(["second", 7.0, .blob([]), "n"])
        try insert.step()

        let select = try db.prepare("SELECT id, name, score, data, note FROM item WHERE id = ?")
        try select.bind(firstID, at: 1)
        #expect(try select.step())
        #expect(try select.int64(at: 0) == firstID)
        #expect(try select.string(at: 1) == "first é ✓")
        #expect(try select.double(at: 2) == 2.5)
        #expect(try select.bytes(at: 3) == [0, 1, 2, 255])
        #expect(try select.isNull(at: 4))
        #expect(throws: SQLiteError.typeMismatch(column: 1, expected: "INTEGER", found: "TEXT")) {
            try select.int64(at: 1)
        }
        #expect(throws: SQLiteError.columnOutOfRange(9)) { try select.value(at: 9) }
        #expect(try select.step() == false)

        #expect(try db.run("UPDATE item SET score = score * 2 WHERE name = ?", ["second"]) == 1)
        let rows = try db.query("SELECT name, score, data FROM item ORDER BY id")
        #expect(rows.map { $0["name"]?.string } == ["first é ✓", "second"])
        #expect(rows[1]["score"] == .real(14))
        #expect(rows[1]["data"] == .blob([]))
        #expect(try db.run("DELETE FROM item WHERE id = ?", [.integer(firstID)]) == 1)
        #expect(try db.query("SELECT count(*) FROM item")[0][0] == 1)
        #expect {
            try db.run("INSERT INTO nowhere VALUES (1)")
        } throws: { error in
            if case .sqlite(_, let message) = error as? SQLiteError { message.contains("no such table") } else { false }
        }
    }

    @Test("a transaction that throws is rolled back, a returning one committed")
    func rollback() throws {
        let scratch = try Scratch()
        let db = try SQLiteDatabase(path: scratch.path())
        try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
        #expect(throws: SQLiteError.self) {
            try db.transaction { () throws(SQLiteError) in
                try db.run("INSERT INTO t VALUES (1, 'a')")
                try db.run("INSERT INTO t VALUES (1, 'duplicate')")
            }
        }
        #expect(try db.query("SELECT count(*) FROM t")[0][0] == 0)
        #expect(throws: SQLiteError.aborted(reason: "changed my mind")) {
            try db.transaction { () throws(SQLiteError) in
                try db.run("INSERT INTO t VALUES (2, 'b')")
                throw .aborted(reason: "changed my mind")
            }
        }
        #expect(try db.query("SELECT count(*) FROM t")[0][0] == 0)
        let inserted = try db.transaction { () throws(SQLiteError) -> Int in
            try db.run("INSERT INTO t VALUES (3, 'c')")
        }
        #expect(inserted == 1)
        #expect(throws: SQLiteError.nestedTransaction) {
            try db.transaction { () throws(SQLiteError) in try db.transaction { () throws(SQLiteError) in } }
        }
        #expect(try SQLiteDatabase(path: scratch.path()).query("SELECT v FROM t")[0][0] == "c")
    }

    @Test("migrations go from v0 to vN one step at a time, and a newer file is refused untouched")
    func migrations() throws {
        let scratch = try Scratch()
        let path = scratch.path()
        let v1 = ["CREATE TABLE a(x INTEGER)"]
        let v3 = v1 + ["ALTER TABLE a ADD COLUMN y TEXT", "CREATE TABLE b(z INTEGER); INSERT INTO b VALUES (42)"]
        do {
            let db = try SQLiteDatabase(path: path)
            #expect(try db.userVersion() == 0)
            #expect(try db.migrate(v1) == 0)
            #expect(try db.userVersion() == 1)
            try db.run("INSERT INTO a(x) VALUES (1)")
        }
        let db = try SQLiteDatabase(path: path)
        #expect(try db.migrate(v3) == 1)
        #expect(try db.userVersion() == 3)
        #expect(try db.query("SELECT x, y FROM a")[0].values == [1, nil])
        #expect(try db.query("SELECT z FROM b")[0][0] == 42)
        #expect(try db.migrate(v3) == 3, "an up-to-date schema is left alone")
        #expect(try db.query("SELECT count(*) FROM b")[0][0] == 1)

        #expect(throws: SQLiteError.schemaTooNew(found: 3, supported: 1)) { try db.migrate(v1) }
        #expect(try db.userVersion() == 3)

        // A failing step is rolled back whole: version and DDL stay where they were.
        let broken = v3 + ["CREATE TABLE c(q INTEGER); INSERT INTO missing VALUES (1)"]
        #expect(throws: SQLiteError.self) { try db.migrate(broken) }
        #expect(try db.userVersion() == 3)
        #expect(try db.query("SELECT name FROM sqlite_master WHERE name = 'c'").isEmpty)
    }

    @Test("the connection is in WAL mode with the expected pragmas")
    func walMode() throws {
        let scratch = try Scratch()
        let db = try SQLiteDatabase(path: scratch.path())
        #expect(try db.journalMode() == "wal")
        #expect(try db.query("PRAGMA synchronous")[0][0] == 2, "FULL")
        #expect(try db.query("PRAGMA foreign_keys")[0][0] == 1)
        #expect(try db.query("PRAGMA busy_timeout")[0][0] == 5000)
        try db.execute("CREATE TABLE t(x)")
        #expect(FileManager.default.fileExists(atPath: scratch.path() + "-wal"))
        #expect(throws: SQLiteError.walUnavailable(journalMode: "memory")) {
            try SQLiteDatabase(path: ":memory:")
        }
        let notADatabase = scratch.path("garbage.sqlite")
        try Data(repeating: 0x5A, count: 4096).write(to: URL(fileURLWithPath: notADatabase))
        #expect {
            try SQLiteDatabase(path: notADatabase)
        } throws: { error in
            if case .corrupt = error as? SQLiteError { true } else { false }
        }
    }

    @Test("8 threads × 200 immediate-transaction increments on separate connections count exactly")
    func concurrentIncrements() async throws {
        let scratch = try Scratch()
        let path = scratch.path()
        try SQLiteDatabase(path: path).migrate(counterSchema)
        let threads = 8
        let perThread = 200
        let started = ContinuousClock.now
        let seen = await onThreads(threads) { _ -> Result<[Int64], SQLiteError> in
            Result { () throws(SQLiteError) -> [Int64] in
                let db = try SQLiteDatabase(path: path, busyTimeout: .seconds(30))
                var values: [Int64] = []
                for _ in 0..<perThread {
                    let value = try db.transaction { () throws(SQLiteError) -> Int64 in
                        let rows = try db.query("UPDATE counter SET value = value + 1 WHERE id = 1 RETURNING value")
                        return rows[0][0].int64 ?? -1
                    }
                    values.append(value)
                }
                return values
            }
        }
        let elapsed = ContinuousClock.now - started
        let values = try seen.flatMap { try $0.get() }
        #expect(try SQLiteDatabase(path: path).query("SELECT value FROM counter")[0][0] == 1600)
        #expect(values.sorted() == Array(1...Int64(threads * perThread)), "each increment saw a distinct value")
        print("1600 concurrent increments (8 connections, synchronous=FULL): \(elapsed)")
    }

    @Test("one connection shared by threads: transactions never interleave")
    func sharedConnection() async throws {
        let scratch = try Scratch()
        let db = try SQLiteDatabase(path: scratch.path())
        try db.migrate(counterSchema)
        let results = await onThreads(4) { _ -> Bool in
            for _ in 0..<50 {
                do {
                    try db.transaction { () throws(SQLiteError) -> Void in
                        let before = try db.query("SELECT value FROM counter")[0][0].int64 ?? -1
                        usleep(100)
                        try db.run("UPDATE counter SET value = ?", [.integer(before + 1)])
                    }
                } catch {
                    return false
                }
            }
            return true
        }
        #expect(results.count == 4 && results.allSatisfy { $0 })
        #expect(try db.query("SELECT value FROM counter")[0][0] == 200)
    }

    @Test(
        "run and query reuse prepared statements: more texts than the cache holds, other bindings, other connections' writes seen"
    )
    func statementCache() throws {
        let scratch = try Scratch()
        let db = try SQLiteDatabase(path: scratch.path())
        try db.migrate(counterSchema)
        // More distinct texts than the cache keeps: the ones past the limit still run.
        for n in 0..<(SQLiteDatabase.statementCacheLimit + 20) {
            let rows = try db.query("SELECT ? + \(n)", [.integer(1)])
            #expect(rows.first?[0].int64 == Int64(n + 1))
        }
        // The same text with other bindings; a NULL binding leaves nothing behind for the next call.
        #expect(try db.query("SELECT ?", [.null]).first?[0] == .null)
        #expect(try db.query("SELECT ?", [.integer(7)]).first?[0].int64 == 7)
        // A cached statement is reset after use: it holds no read transaction, so this
        // connection sees another connection's commit, and a checkpoint finds no reader.
        let other = try SQLiteDatabase(path: scratch.path())
        #expect(try db.query("SELECT value FROM counter WHERE id = ?", [.integer(1)]).first?[0].int64 == 0)
        try other.run("UPDATE counter SET value = ? WHERE id = ?", [.integer(42), .integer(1)])
        #expect(try db.query("SELECT value FROM counter WHERE id = ?", [.integer(1)]).first?[0].int64 == 42)
        let checkpoint = try other.query("PRAGMA wal_checkpoint(TRUNCATE)")
        #expect(checkpoint.first?[0].int64 == 0)
        // A statement that failed is reset too: the next call with good values works.
        #expect(throws: SQLiteError.self) {
            try db.run("INSERT INTO counter(id, value) VALUES (?, ?)", [.integer(1), .integer(0)])
        }
        #expect(try db.run("INSERT INTO counter(id, value) VALUES (?, ?)", [.integer(2), .integer(5)]) == 1)
    }

    @Test("a reader connection reads beside an open write transaction, sees only what is committed, and cannot write")
    func readerBesideWriter() throws {
        let scratch = try Scratch()
        let db = try SQLiteDatabase(path: scratch.path())
        try db.migrate(counterSchema)
        let reader = try SQLiteDatabase.reader(path: scratch.path())
        let read = "SELECT value FROM counter WHERE id = ?"
        try db.transaction { () throws(SQLiteError) in
            try db.run("UPDATE counter SET value = ? WHERE id = ?", [.integer(5), .integer(1)])
            // The writer holds its transaction (and its lock); the reader neither waits nor sees it.
            #expect(try reader.query(read, [.integer(1)]).first?[0].int64 == 0)
        }
        #expect(try reader.query(read, [.integer(1)]).first?[0].int64 == 5)
        #expect(throws: SQLiteError.self) {
            try reader.run("UPDATE counter SET value = ? WHERE id = ?", [.integer(9), .integer(1)])
        }
        #expect(try db.query(read, [.integer(1)]).first?[0].int64 == 5)
        #expect(throws: SQLiteError.self) { try SQLiteDatabase.reader(path: scratch.path("absent.sqlite")) }
    }

    @Test("a connection with cached statements closes when released: the file can be deleted and recreated")
    func cachedStatementsDoNotKeepTheConnection() throws {
        let scratch = try Scratch()
        weak var released: SQLiteDatabase?
        do {
            let db = try SQLiteDatabase(path: scratch.path())
            try db.migrate(counterSchema)
            _ = try db.query("SELECT value FROM counter WHERE id = ?", [.integer(1)])
            released = db
        }
        #expect(released == nil)
    }
}
