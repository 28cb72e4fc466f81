import Activation
import ActivationHTTP
import Foundation
import HTTPClient
import HTTPServer
import PinVault
import PostgresStore
import PowerAuthProtocol
import ReferenceServer
import SecureCore
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

func temporaryDirectory() throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("spc-refserver-\(UUID().uuidString)")
        .path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Expects `body` to fail with exactly `expected`.
func failure(_ body: () async throws -> Void) async -> ActivationError? {
    do {
        try await body()
        return nil
    } catch let error as ActivationError {
        return error
    } catch {
        return .invalidResponse(reason: "\(error)")
    }
}

/// A device: an activation service with its own storage directory, talking HTTP to `baseURL`.
struct Device {
    let service: ActivationService
    let flows: ActivationFlows
    let transport: HTTPActivationTransport
    let configuration: ActivationConfiguration
    /// The state directory (a second `Device` on it, at another address, is the same device).
    let directory: String

    init(baseURL: String, configurationString: String, directory: String, algorithm: String = "LEGACY_P256") throws {
        self.directory = directory
        configuration = try ActivationConfiguration(
            instanceId: "com.example.http", baseEndpointURL: baseURL, configuration: configurationString,
            algorithm: algorithm,
            clientConfiguration: ActivationClientConfiguration(requestTimeout: .seconds(30)),
            knowledgeKeyParameters: .testing)
        transport = try HTTPActivationTransport(configuration: configuration)
        service = try ActivationService(
            configuration: configuration, storage: try FileActivationStorage(directory: directory),
            transport: transport, authenticator: SimulatedBiometricAuthenticator())
        flows = ActivationFlows(service: service)
    }

    /// Activates with `code` and PIN `text`.
    func activate(code: String, pin text: String) async throws -> String {
        try await service.createActivation(activationCode: code, name: "test phone", password: try pin(text))
            .activationId
    }
}

/// The store a parameterised server test runs against. The same test body runs on each:
/// SQLite always, PostgreSQL when `make test` started a throw-away cluster and named it in
/// ``StoreBackend/dsnVariable``. Without it the PostgreSQL cases are left out of
/// ``StoreBackend/available``, and the suite `PostgresStorageTests` is reported as skipped with the reason.
enum StoreBackend: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// The environment variable with the test cluster's connection string (no password:
    /// trust authentication on a socket only the test user can reach).
    static let dsnVariable = "SECUREPIN_TEST_POSTGRES_DSN"

    /// The test cluster's connection string, if one is configured.
    static var clusterConnectionString: String? {
        ProcessInfo.processInfo.environment[dsnVariable].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The backends the parameterised server suites run on here.
    static var available: [StoreBackend] { clusterConnectionString == nil ? [.sqlite] : [.sqlite, .postgres] }

    /// Why the PostgreSQL variants do not run.
    static let skipReason: Comment =
        "no PostgreSQL test cluster: SECUREPIN_TEST_POSTGRES_DSN is not set (make test sets it)"

    /// The test cluster was not configured (see ``dsnVariable``).
    struct NoCluster: Error {}

    /// A fresh, empty database of the test cluster, as a connection string in secure memory.
    static func freshPostgresDatabase() throws -> SecureBytes {
        guard let base = clusterConnectionString else { throw NoCluster() }
        let name = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try adminPool().withConnection { (c) throws(PostgresError) in try c.execute("CREATE DATABASE \(name)") }
        return try secureCopy(base + " dbname=\(name)")
    }

    /// A pool on the test cluster's maintenance database, with a generous statement timeout: on
    /// a loaded 2-core machine, statements that wait for a checkpoint or for other backends to
    /// end (CREATE/ALTER DATABASE, `pg_terminate_backend`) can take longer than the store's 5 s.
    static func adminPool() throws -> PostgresPool {
        guard let base = clusterConnectionString else { throw NoCluster() }
        return try PostgresPool(
            connectionString: try secureCopy(base),
            configuration: PostgresPool.Configuration(
                maximumConnections: 1, acquireTimeoutSeconds: 60, statementTimeoutMilliseconds: 60_000))
    }

    static func secureCopy(_ text: String) throws -> SecureBytes {
        var copy = text
        return try copy.withUTF8 { bytes in try SecureBytes(copying: UnsafeRawBufferPointer(bytes)) }
    }
}

/// Where one test's server keeps its state: an SQLite file in `directory`, or a fresh
/// PostgreSQL database (its key file in `directory`).
struct TestStore: Sendable {
    let backend: StoreBackend
    let directory: String
    let storage: ReferenceServer.Options.Storage
    let connectionString: SecureBytes?

    init(_ backend: StoreBackend, directory: String) throws {
        self.backend = backend
        self.directory = directory
        switch backend {
        case .sqlite:
            storage = .sqlite
            connectionString = nil
        case .postgres:
            let dsn = try StoreBackend.freshPostgresDatabase()
            connectionString = dsn
            // Generous timeouts: a test on a loaded 2-core machine is slow, not down.
            storage = .postgres(
                connectionString: dsn,
                pool: PostgresPool.Configuration(acquireTimeoutSeconds: 30, statementTimeoutMilliseconds: 30_000))
            // The child servers read it from a 0600 file, never from an argument.
            let fd = open(directory + "/server.dsn", O_WRONLY | O_CREAT | O_EXCL, 0o600)
            guard fd >= 0 else { throw CocoaError(.fileWriteUnknown) }
            defer { close(fd) }
            let written = dsn.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) == $0.count }
            guard written else { throw CocoaError(.fileWriteUnknown) }
        }
    }

    /// The options of an in-process server on this store.
    func options(adminToken: SecureBytes, http: HTTPServer.Configuration) -> ReferenceServer.Options {
        var options = ReferenceServer.Options(
            databasePath: directory + "/server.sqlite", keyFilePath: directory + "/server.sqlite.key",
            adminToken: adminToken, http: http)
        options.storage = storage
        return options
    }

    /// The `securepin server` arguments that select this store.
    var serverArguments: [String] {
        switch backend {
        case .sqlite: return ["--db", directory + "/server.sqlite"]
        case .postgres:
            return [
                "--store", "postgres", "--dsn-file", directory + "/server.dsn", "--key-file",
                directory + "/server.sqlite.key", "--statement-timeout", "30000",
            ]
        }
    }
}

/// The reference server in this process on an ephemeral loopback port.
struct InProcessServer {
    let directory: String
    let store: TestStore
    let server: ReferenceServer
    let backOffice: BackOfficeClient
    var baseURL: String { "http://127.0.0.1:\(server.port ?? 0)" }

    init(
        directory: String? = nil, backend: StoreBackend = .sqlite, store reused: TestStore? = nil,
        maxConnections: Int = 256, adminToken: SecureBytes? = nil,
        adminRateLimit: AdminRateLimit = AdminRateLimit(), accessLog: AccessLog? = nil, metricsPort: UInt16? = nil,
        algorithm: ProtocolAlgorithm = .legacyP256, clock: any ActivationClock = SystemActivationClock()
    ) throws {
        let directory = try reused?.directory ?? directory ?? temporaryDirectory()
        self.directory = directory
        let store = try reused ?? TestStore(backend, directory: directory)
        self.store = store
        let token = try adminToken ?? AdminToken.random()
        var options = store.options(adminToken: token, http: .init(maximumConnections: maxConnections))
        options.adminRateLimit = adminRateLimit
        options.accessLog = accessLog
        options.metricsPort = metricsPort
        options.algorithm = algorithm
        options.clock = clock
        server = try ReferenceServer(options: options)
        try server.start()
        backOffice = try BackOfficeClient(baseURL: URL(string: "http://127.0.0.1:\(server.port ?? 0)")!, token: token)
    }

    func device() throws -> Device {
        try Device(
            baseURL: baseURL, configurationString: try server.configurationString(),
            directory: directory + "/device-\(UUID().uuidString)",
            algorithm: server.activationServer.configuration.algorithm.rawValue)
    }

    /// A device activated, committed (and on V4 confirmed) and ready.
    func activeDevice(pin text: String = "1234") async throws -> (Device, String) {
        let device = try device()
        let prepared = try await backOffice.initActivation(userId: "alice")
        let id = try await device.activate(code: prepared.activationCode, pin: text)
        try await backOffice.commit(id)
        // A V4 activation is confirmed after the commit, as an app does; V3.3 has no such step.
        if await device.service.needsConfirmation() {
            try await device.service.confirmActivation(password: try pin(text))
        }
        return (device, id)
    }

    /// A raw HTTP client for malformed requests.
    func rawClient() throws -> HTTPClient {
        try HTTPClient(configuration: .init(baseURL: URL(string: baseURL)!, timeout: .seconds(30)))
    }
}

/// The path of an executable built next to the test bundle.
func builtExecutable(_ name: String) throws -> String { try BuiltExecutable.path(name) }

/// `securepin server` as a child process, from the build next to the test bundle.
func childServer(database: String, tokenFile: String, extraArguments: [String] = []) throws
    -> ReferenceServerProcess
{
    try ReferenceServerProcess(
        executable: builtExecutable("securepin"), database: database, tokenFile: tokenFile,
        extraArguments: extraArguments)
}

/// `securepin server` as a child process on a test store (SQLite file or PostgreSQL database).
func childServer(store: TestStore, tokenFile: String, extraArguments: [String] = []) throws
    -> ReferenceServerProcess
{
    try ReferenceServerProcess(
        executable: builtExecutable("securepin"), storeArguments: store.serverArguments, tokenFile: tokenFile,
        extraArguments: extraArguments)
}
