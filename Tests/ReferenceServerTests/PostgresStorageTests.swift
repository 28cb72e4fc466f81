import Activation
import ActivationHTTP
import ActivationServer
import Foundation
import PostQuantum
import PostgresStore
import PowerAuthProtocol
import SecureCore
import TestSupport
import Testing

@testable import ReferenceServer

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What only the PostgreSQL store has: its schema table, keys sealed in shared rows, several
/// processes creating one schema and one configuration at once, and the database gone (503).
/// The server suites themselves run on it through ``StoreBackend/available``.
@Suite(
    "PostgreSQL storage: schema, sealed keys, concurrent start, database down",
    .enabled(if: StoreBackend.clusterConnectionString != nil, StoreBackend.skipReason))
struct PostgresStorageTests {
    /// A query on the test database, through a pool of its own.
    static func query(_ dsn: SecureBytes, _ sql: String) throws -> [PostgresRow] {
        try PostgresPool(connectionString: dsn).withConnection { (c) throws(PostgresError) in try c.query(sql) }
    }

    @Test("private keys are sealed: another key file cannot open the database's records")
    func sealedAtRest() async throws {
        let s = try InProcessServer(backend: .postgres)
        let (_, id) = try await s.activeDevice()
        s.server.stop()
        let dsn = try #require(s.store.connectionString)
        let row = try #require(
            try Self.query(dsn, "SELECT server_private_sealed, server_private_nonce FROM activation").first)
        let sealed = try #require(row[0].bytes)
        let nonce = try #require(row[1].bytes)
        #expect(sealed.count == 32 + 16)  // a P-256 scalar plus the Poly1305 tag
        #expect(nonce.count == 24)
        let stranger = try PostgresActivationStore(
            connectionString: dsn, storageKey: try SecureBytes.random(count: 32))
        // The record's plain columns read (they are not secret); its key does not open.
        let read = try #require(try stranger.fetch(activationId: id))
        #expect(throws: ActivationServerError.self) { try read.serverPrivateKey.key() }
        let owner = try PostgresActivationStore(
            connectionString: dsn, storageKey: try ServerKeyFile.load(at: s.directory + "/server.sqlite.key"))
        let owned = try #require(try owner.fetch(activationId: id))
        #expect(owned.state == .active)
        #expect(try owned.serverPrivateKey.key().count == 32)
    }

    @Test("a database from a newer schema is refused and left untouched")
    func newerSchema() throws {
        let dsn = try StoreBackend.freshPostgresDatabase()
        let key = try SecureBytes.random(count: 32)
        _ = try PostgresActivationStore(connectionString: dsn, storageKey: key)
        let newer = PostgresActivationStore.schemaVersion + 1
        _ = try Self.query(dsn, "INSERT INTO schema_version(version) VALUES (\(newer))")
        #expect(throws: ReferenceServerError.self) {
            try PostgresActivationStore(connectionString: dsn, storageKey: key)
        }
        #expect(try Self.query(dsn, "SELECT max(version) FROM schema_version").first?[0].int64 == Int64(newer))
    }

    @Test(
        "four processes' stores opening one empty database at once: one schema, one configuration, one V4 key, one ML-DSA key"
    )
    func concurrentFirstStart() async throws {
        let dsn = try StoreBackend.freshPostgresDatabase()
        let key = try SecureBytes.random(count: 32)
        let strings = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    let store = try PostgresActivationStore(connectionString: dsn, storageKey: key)
                    let configuration = try store.loadOrStoreConfiguration(
                        { () throws(ActivationServerError) in try ActivationServerConfiguration.generate() },
                        restore: { (key, secret, master) throws(ActivationServerError) in
                            try ActivationServerConfiguration(
                                restoring: key, applicationSecret: secret, masterKeyPair: master)
                        })
                    // The V4 master key too: one pair, whichever store asks first.
                    let v4 = try store.loadOrStoreV4MasterKey { () throws(ActivationServerError) in
                        do throws(ProtocolError) { return try ECP384KeyPair.generate() } catch {
                            throw .protocolFailure(error)
                        }
                    }
                    // And the ML-DSA master key of a hybrid suite: insert-or-ignore, then read back.
                    let postQuantum = try store.loadOrStoreV4PostQuantumMasterKey(.mldsa65)
                    return try configuration.configurationString() + Data(v4.publicKey).base64EncodedString()
                        + Data(postQuantum.publicKey).base64EncodedString()
                }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(strings.count == 4)
        #expect(Set(strings).count == 1)
        #expect(
            try Self.query(dsn, "SELECT count(*) FROM schema_version").first?[0].int64
                == Int64(PostgresActivationStore.schemaVersion))
        #expect(try Self.query(dsn, "SELECT count(*) FROM server_configuration").first?[0].int64 == 1)
        #expect(try Self.query(dsn, "SELECT count(*) FROM v4_pq_master_key").first?[0].int64 == 1)
    }

    @Test("replay records on the database's clock: accepted once, the window and the sweep by the database")
    func replayRecords() throws {
        let dsn = try StoreBackend.freshPostgresDatabase()
        let store = try PostgresActivationStore(connectionString: dsn, storageKey: try SecureBytes.random(count: 32))
        let shared = try #require(store.sharedEphemeralState)
        let pair: [UInt8] = [3, 1, 2, 3, 9, 9]
        func databaseClock() throws -> Int64 {
            try #require(
                try Self.query(dsn, "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint").first?[0].int64)
        }
        let databaseNow = try databaseClock()
        #expect(try shared.acceptOnce(replayKey: pair, timestamp: databaseNow, windowMilliseconds: 60_000) == .accepted)
        #expect(try shared.acceptOnce(replayKey: pair, timestamp: databaseNow, windowMilliseconds: 60_000) == .replayed)
        // The window is the database's: whatever the caller's clock says, these are outside it.
        for timestamp in [databaseNow - 120_000, databaseNow + 120_000, Int64.max - 10, Int64.min] {
            #expect(
                try shared.acceptOnce(replayKey: [7] + pair, timestamp: timestamp, windowMilliseconds: 60_000)
                    == .expired)
        }
        #expect(try Self.query(dsn, "SELECT count(*) FROM ecies_replay").first?[0].int64 == 1)
        // A record whose window has passed (by the database's clock) is swept; a live one stays.
        #expect(
            try shared.acceptOnce(replayKey: [8], timestamp: try databaseClock(), windowMilliseconds: 300) == .accepted)
        Thread.sleep(forTimeInterval: 0.8)
        try shared.removeExpired()
        #expect(try Self.query(dsn, "SELECT count(*) FROM ecies_replay").first?[0].int64 == 1)
        // Every sweep interval-th check sweeps on its own.
        #expect(
            try shared.acceptOnce(replayKey: [9], timestamp: try databaseClock(), windowMilliseconds: 300) == .accepted)
        Thread.sleep(forTimeInterval: 0.8)
        for index in 0..<PostgresActivationStore.sweepInterval {
            _ = try shared.acceptOnce(
                replayKey: [1, UInt8(index & 0xFF), UInt8(index >> 8)], timestamp: databaseNow,
                windowMilliseconds: 600_000)
        }
        #expect(
            try Self.query(dsn, "SELECT count(*) FROM ecies_replay WHERE replay_key = '\\x09'").first?[0].int64 == 0)
        #expect(
            try Self.query(dsn, "SELECT count(*) FROM ecies_replay").first?[0].int64
                == Int64(1 + PostgresActivationStore.sweepInterval))
    }

    @Test("the database gone: every signed request gets 503 with the PowerAuth error body")
    func databaseDown() async throws {
        let s = try InProcessServer(backend: .postgres)
        defer { s.server.stop() }
        let (device, _) = try await s.activeDevice()
        let body = try WireCoding.encode(RequestEnvelope(requestObject: ValidateSignatureRequest(reason: "DOWN")))
        let header = try await device.service.signRequest(
            method: "POST", uriIdentifier: "/pa/signature/validate", body: body,
            authentication: .possessionWithPassword(try pin("9999")))
        // Close the test's database under the running server: no new connection is allowed and
        // every open one ends, as when the database server is down. (Not DROP DATABASE: it waits
        // for a checkpoint, which on a loaded machine outlasted the statement timeout.)
        let dsn = try #require(s.store.connectionString)
        let names = try Self.query(dsn, "SELECT current_database()")
        let name = try #require(names.first?[0].string)
        try StoreBackend.adminPool().withConnection { (c) throws(PostgresError) in
            try c.execute("ALTER DATABASE \(name) WITH ALLOW_CONNECTIONS false")
            // Waits (up to 30 s) until each backend has ended, so no request can still use one.
            let ended = try c.query(
                "SELECT bool_and(pg_terminate_backend(pid, 30000)) FROM pg_stat_activity WHERE datname = $1",
                [.text(name)])
            guard ended.first?[0].bool != false else { throw PostgresError.timeout }
        }
        // URLSession itself: the project's clients turn any 5xx into an error without its body.
        var request = URLRequest(url: URL(string: s.baseURL + ActivationAPI.validateSignature.path)!)
        request.httpMethod = "POST"
        request.httpBody = Data(body)
        request.setValue(header.value, forHTTPHeaderField: AuthorizationHeader.name)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        for _ in 0..<2 {
            let (answer, response) = try await URLSession.shared.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == 503)
            let error = try WireCoding.decode(ResponseEnvelope<ErrorResponse>.self, Array(answer))
            #expect(error.status == "ERROR")
            #expect(error.responseObject?.code == ActivationAPI.ErrorCode.generic)
        }
    }
}

@Suite(
    "Prepared statements on a PostgreSQL connection",
    .enabled(if: StoreBackend.clusterConnectionString != nil, StoreBackend.skipReason))
struct PostgresPreparedStatementTests {
    @Test("more texts than a connection keeps prepared, the same text with other parameter types, after a rollback")
    func preparedCache() throws {
        let dsn = try StoreBackend.freshPostgresDatabase()
        let pool = try PostgresPool(
            connectionString: dsn, configuration: PostgresPool.Configuration(maximumConnections: 1))
        try pool.withConnection { (c) throws(PostgresError) in
            try c.execute("CREATE TABLE item(id bigint PRIMARY KEY, value double precision)")
            for n in 0..<(PostgresConnection.preparedStatementLimit + 20) {
                let rows = try c.query("SELECT $1::bigint + \(n)", [.integer(1)])
                #expect(rows.first?[0].int64 == Int64(n + 1))
            }
            // One text, a NULL then a value: each type list is its own statement.
            try c.query("INSERT INTO item(id, value) VALUES ($1, $2)", [.integer(1), .null])
            try c.query("INSERT INTO item(id, value) VALUES ($1, $2)", [.integer(2), .double(2.5)])
            let rows = try c.query("SELECT value FROM item WHERE id = $1", [.integer(2)])
            #expect(rows.first?[0].double == 2.5)
        }
        // A statement prepared in a transaction that rolled back is still there (and still right).
        #expect(throws: PostgresError.self) {
            try pool.transaction { (c) throws(PostgresError) in
                try c.query("INSERT INTO item(id, value) VALUES ($1, $2)", [.integer(3), .double(3)])
                try c.query("INSERT INTO item(id, value) VALUES ($1, $2)", [.integer(3), .double(3)])
            }
        }
        try pool.withConnection { (c) throws(PostgresError) in
            try c.query("INSERT INTO item(id, value) VALUES ($1, $2)", [.integer(3), .double(3)])
            #expect(try c.query("SELECT count(*) FROM item").first?[0].int64 == 3)
        }
    }
}

extension PostgresPreparedStatementTests {
    @Test("the batch attempt statement of every size is valid and prepared once per size, whichever values are NULL")
    func batchAttemptStatements() async throws {
        let s = try InProcessServer(backend: .postgres)
        defer { s.server.stop() }
        let (_, id) = try await s.activeDevice()
        let store = try #require(s.server.store as? PostgresActivationStore)
        let observed = try #require(try store.fetch(activationId: id))
        let dsn = try #require(s.store.connectionString)
        // Observations the row does not match (99 failures), with and without a block end and a
        // device key, and results with and without a block end.
        func write(_ variant: Int) -> ConditionalWrite {
            var seen = observed
            seen.failedAttempts = 99
            if variant & 1 != 0 { seen.blockedUntil = Date(timeIntervalSince1970: 1_000.5) }
            if variant & 2 != 0 { seen.devicePublicKey = nil }
            var after = seen
            after.failedAttempts = 100
            if variant & 4 != 0 { after.blockedUntil = Date(timeIntervalSince1970: 2_000.25) }
            return ConditionalWrite(observed: seen, after: after, accepted: false, label: .failure, now: Date())
        }
        let pool = try PostgresPool(
            connectionString: dsn, configuration: PostgresPool.Configuration(maximumConnections: 1))
        try pool.withConnection { (c) throws(PostgresError) in
            for n in 2...PostgresActivationStore.batchLimit {
                for round in 0..<3 {
                    let values = (0..<n).flatMap { PostgresActivationStore.batchValues(write($0 + round)) }
                    #expect(try c.query(PostgresActivationStore.batchStatements[n], values).isEmpty)
                }
            }
            let prepared = try c.query(
                "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE 'WITH input%'")
            #expect(prepared.first?[0].int64 == Int64(PostgresActivationStore.batchLimit - 1))
        }
        #expect(try store.fetch(activationId: id)?.failedAttempts == 0)
        #expect(try store.auditTrail(activationId: id).isEmpty)
    }
}

@Suite(
    "Connections of the PostgreSQL pool",
    .enabled(if: StoreBackend.clusterConnectionString != nil, StoreBackend.skipReason))
struct PostgresPoolTests {
    @Test("an idle connection whose backend ended is dropped before a statement is sent on it")
    func deadIdleConnectionIsDropped() throws {
        let dsn = try StoreBackend.freshPostgresDatabase()
        let pool = try PostgresPool(
            connectionString: dsn, configuration: PostgresPool.Configuration(maximumConnections: 1))
        let pid = try pool.withConnection { (c) throws(PostgresError) in
            try c.query("SELECT pg_backend_pid()::bigint").first?[0].int64
        }
        let first = try #require(pid)
        try StoreBackend.adminPool().withConnection { (c) throws(PostgresError) in
            try c.query("SELECT pg_terminate_backend($1::int, 30000)", [.integer(first)])
        }
        // Not `idempotent`: without the check it would be sent on the dead connection and fail.
        let next = try pool.withConnection { (c) throws(PostgresError) in
            try c.query("SELECT pg_backend_pid()::bigint").first?[0].int64
        }
        #expect(next != nil)
        #expect(next != first)
    }
}

@Suite("The DSN file of securepin server --store postgres")
struct DSNFileTests {
    @Test("read into secure memory without trailing blanks; a file others can read is refused")
    func modeAndContent() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/dsn"
        let text = "host=/run/postgresql dbname=securepin"
        FileManager.default.createFile(
            atPath: path, contents: Data((text + " \n").utf8), attributes: [.posixPermissions: 0o600])
        let dsn = try DSNFile.load(at: path)
        #expect(dsn.withUnsafeBytes { Array($0) } == Array(text.utf8))
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        #expect(throws: ReferenceServerError.self) { try DSNFile.load(at: path) }
        FileManager.default.createFile(
            atPath: directory + "/empty", contents: Data("\n".utf8), attributes: [.posixPermissions: 0o600])
        #expect(throws: ReferenceServerError.self) { try DSNFile.load(at: directory + "/empty") }
    }
}
