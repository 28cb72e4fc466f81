import HTTPClient
import HTTPServer
import PostgresStore
import ReferenceServer
import SQLiteStore
import Spawn
import Testing
import VaultOPRFProtocol

/// Sample values of the errors of HTTP, the databases and the reference server.
enum ServerSamples {
    static let tlsFailures: [HTTPClientError.TLSFailure] = [
        .untrustedCertificate("certificate has expired"), .pinnedKeyMismatch, .unusableCAFile("/etc/ssl/none.pem"),
        .handshakeFailed("wrong version number"),
    ]

    static func name(_ failure: HTTPClientError.TLSFailure) -> String {
        switch failure {
        case .untrustedCertificate: "untrustedCertificate"
        case .pinnedKeyMismatch: "pinnedKeyMismatch"
        case .unusableCAFile: "unusableCAFile"
        case .handshakeFailed: "handshakeFailed"
        }
    }

    static let tlsFailureNames = ["untrustedCertificate", "pinnedKeyMismatch", "unusableCAFile", "handshakeFailed"]

    static let httpClient: [HTTPClientError] =
        [.connectionRefused, .timeout, .serverError(status: 503), .invalidResponse, .cancelled]
        + tlsFailures.map { .tls($0) }
        + [.invalidConfiguration("the base URL is not https"), .other("could not resolve host"), .other("")]

    static func name(_ error: HTTPClientError) -> String {
        switch error {
        case .connectionRefused: "connectionRefused"
        case .timeout: "timeout"
        case .serverError: "serverError"
        case .invalidResponse: "invalidResponse"
        case .cancelled: "cancelled"
        case .tls: "tls"
        case .invalidConfiguration: "invalidConfiguration"
        case .other: "other"
        }
    }

    static let httpClientNames = [
        "connectionRefused", "timeout", "serverError", "invalidResponse", "cancelled", "tls", "invalidConfiguration",
        "other",
    ]

    static let sqlite: [SQLiteError] = [
        .busy, .constraint(message: "UNIQUE constraint failed: activation.id"),
        .corrupt(message: "file is not a database"), .sqlite(code: 1, message: "no such table: activation"),
        .walUnavailable(journalMode: "memory"), .schemaTooNew(found: 9, supported: 4),
        .typeMismatch(column: 2, expected: "blob", found: "text"), .columnOutOfRange(7), .nestedTransaction,
        .aborted(reason: "the caller rolled back"),
    ]

    static func name(_ error: SQLiteError) -> String {
        switch error {
        case .busy: "busy"
        case .constraint: "constraint"
        case .corrupt: "corrupt"
        case .sqlite: "sqlite"
        case .walUnavailable: "walUnavailable"
        case .schemaTooNew: "schemaTooNew"
        case .typeMismatch: "typeMismatch"
        case .columnOutOfRange: "columnOutOfRange"
        case .nestedTransaction: "nestedTransaction"
        case .aborted: "aborted"
        }
    }

    static let sqliteNames = [
        "busy", "constraint", "corrupt", "sqlite", "walUnavailable", "schemaTooNew", "typeMismatch",
        "columnOutOfRange", "nestedTransaction", "aborted",
    ]

    static let postgres: [PostgresError] = [
        .unavailable(reason: "server closed the connection unexpectedly"), .timeout,
        .constraint(message: "duplicate key value violates unique constraint"),
        .server(sqlState: "42P01", message: "relation activation does not exist"),
        .schemaTooNew(found: 9, supported: 4), .typeMismatch(column: 3, expected: "bytea"), .invalidConnectionString,
        .aborted(reason: "the caller rolled back"),
    ]

    static func name(_ error: PostgresError) -> String {
        switch error {
        case .unavailable: "unavailable"
        case .timeout: "timeout"
        case .constraint: "constraint"
        case .server: "server"
        case .schemaTooNew: "schemaTooNew"
        case .typeMismatch: "typeMismatch"
        case .invalidConnectionString: "invalidConnectionString"
        case .aborted: "aborted"
        }
    }

    static let postgresNames = [
        "unavailable", "timeout", "constraint", "server", "schemaTooNew", "typeMismatch", "invalidConnectionString",
        "aborted",
    ]

    static let httpServer: [HTTPServerError] = [
        .invalidAddress("localhost"), .invalidConfiguration("the connection limit must be 1 to 4096"), .alreadyRunning,
        .startFailed(errno: 98), .outOfMemory,
    ]

    static func name(_ error: HTTPServerError) -> String {
        switch error {
        case .invalidAddress: "invalidAddress"
        case .invalidConfiguration: "invalidConfiguration"
        case .alreadyRunning: "alreadyRunning"
        case .startFailed: "startFailed"
        case .outOfMemory: "outOfMemory"
        }
    }

    static let httpServerNames = [
        "invalidAddress", "invalidConfiguration", "alreadyRunning", "startFailed", "outOfMemory",
    ]

    static let backOffice: [BackOfficeError] =
        httpClient.map { .transport($0) } + [.refused(status: 401, code: "ERR_AUTHENTICATION"), .invalidResponse]

    static func name(_ error: BackOfficeError) -> String {
        switch error {
        case .transport: "transport"
        case .refused: "refused"
        case .invalidResponse: "invalidResponse"
        }
    }

    static let backOfficeNames = ["transport", "refused", "invalidResponse"]

    static let counters: [VaultOPRFAPI.Counters] = [
        VaultOPRFAPI.Counters(state: .pending, failures: 0, maxFailures: 10),
        VaultOPRFAPI.Counters(state: .active, failures: 3, maxFailures: 10),
        VaultOPRFAPI.Counters(state: .blocked, failures: 10, maxFailures: 10),
    ]

    static let refusals: [OPRFVaultStore.Refusal] =
        [.unknownVault] + counters.map { .blocked($0) } + counters.map { .wrongState($0) }
        + counters.map { .proofRefused($0) } + [.storage("sealing failed")]

    static func name(_ refusal: OPRFVaultStore.Refusal) -> String {
        switch refusal {
        case .unknownVault: "unknownVault"
        case .blocked: "blocked"
        case .wrongState: "wrongState"
        case .proofRefused: "proofRefused"
        case .storage: "storage"
        }
    }

    static let refusalNames = ["unknownVault", "blocked", "wrongState", "proofRefused", "storage"]

    static let referenceServer: [ReferenceServerError] =
        [
            .keyFile(reason: "the file is readable by others"), .storage(reason: "disk I/O error"),
            .corruptRecord(reason: "a sealed key does not open"),
        ] + ProtocolSamples.activationServer.map { .activationServer($0) } + httpServer.map { .http($0) }
        + [.invalidConfiguration(reason: "the metrics port is taken")]

    static func name(_ error: ReferenceServerError) -> String {
        switch error {
        case .keyFile: "keyFile"
        case .storage: "storage"
        case .corruptRecord: "corruptRecord"
        case .activationServer: "activationServer"
        case .http: "http"
        case .invalidConfiguration: "invalidConfiguration"
        }
    }

    static let referenceServerNames = [
        "keyFile", "storage", "corruptRecord", "activationServer", "http", "invalidConfiguration",
    ]
}

@Suite("Descriptions of the HTTP, database and server errors")
struct ServerErrorDescriptionTests {
    @Test func tlsFailure() {
        DescriptionRules.check(
            "TLSFailure", ServerSamples.tlsFailures, caseName: ServerSamples.name,
            expected: ServerSamples.tlsFailureNames)
    }

    @Test func httpClientError() {
        DescriptionRules.check(
            "HTTPClientError", ServerSamples.httpClient, caseName: ServerSamples.name,
            expected: ServerSamples.httpClientNames)
    }

    @Test func sqliteError() {
        DescriptionRules.check(
            "SQLiteError", ServerSamples.sqlite, caseName: ServerSamples.name, expected: ServerSamples.sqliteNames)
    }

    @Test func postgresError() {
        DescriptionRules.check(
            "PostgresError", ServerSamples.postgres, caseName: ServerSamples.name,
            expected: ServerSamples.postgresNames)
    }

    @Test func httpServerError() {
        DescriptionRules.check(
            "HTTPServerError", ServerSamples.httpServer, caseName: ServerSamples.name,
            expected: ServerSamples.httpServerNames)
        #expect(!HTTPServerError.startFailed(errno: 98).description.contains("98"), "the system's words, not errno")
    }

    @Test func backOfficeError() {
        DescriptionRules.check(
            "BackOfficeError", ServerSamples.backOffice, caseName: ServerSamples.name,
            expected: ServerSamples.backOfficeNames)
    }

    @Test func oprfVaultStoreRefusal() {
        DescriptionRules.check(
            "Refusal", ServerSamples.refusals, caseName: ServerSamples.name, expected: ServerSamples.refusalNames)
    }

    @Test func referenceServerError() {
        DescriptionRules.check(
            "ReferenceServerError", ServerSamples.referenceServer, caseName: ServerSamples.name,
            expected: ServerSamples.referenceServerNames)
    }

    /// The public error structs, each made the way a caller meets it.
    @Test func errorStructs() throws {
        var networks: [IPNetwork.ParseError] = []
        for text in ["10.0.0.0/99", "example.org", ""] {
            do throws(IPNetwork.ParseError) { _ = try IPNetwork(parsing: text) } catch { networks.append(error) }
        }
        #expect(networks.count == 3)
        DescriptionRules.check("ParseError", structSamples: networks)

        var listeners: [HTTPServer.Listener.ParseError] = []
        for text in ["localhost:80", "::1:80", "0.0.0.0:99999"] {
            do throws(HTTPServer.Listener.ParseError) { _ = try HTTPServer.Listener(parsing: text) } catch {
                listeners.append(error)
            }
        }
        #expect(listeners.count == 3)
        DescriptionRules.check("ParseError", structSamples: listeners)

        var logs: [AccessLog.OpenFailed] = []
        do throws(AccessLog.OpenFailed) { _ = try AccessLog(path: "/nonexistent-directory/access.log") } catch {
            logs.append(error)
        }
        #expect(logs.count == 1)
        DescriptionRules.check("OpenFailed", structSamples: logs)

        var ready: [Readiness.WriteFailed] = []
        do throws(Readiness.WriteFailed) { try Readiness.writeReadyFile("/nonexistent-directory/ready", port: 1) } catch
        {
            ready.append(error)
        }
        #expect(ready.count == 1)
        DescriptionRules.check("WriteFailed", structSamples: ready)

        var started: [ReferenceServerProcess.StartFailed] = []
        do throws(ReferenceServerProcess.StartFailed) {
            _ = try ReferenceServerProcess(
                executable: "/nonexistent-directory/securepin", database: "/nonexistent-directory/db.sqlite",
                tokenFile: "/nonexistent-directory/token")
        } catch {
            started.append(error)
        }
        #expect(started.count == 1)
        DescriptionRules.check("StartFailed", structSamples: started)

        let spawns = [
            SpawnError(.spawn, code: 2, executable: "/usr/bin/missing"),
            SpawnError(.write, code: 32, executable: "cat"),
            SpawnError(.wait, code: 10, executable: "sleep"),
        ]
        DescriptionRules.check("SpawnError", structSamples: spawns)
    }
}
