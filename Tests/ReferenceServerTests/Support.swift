import Activation
import ActivationHTTP
import Foundation
import HTTPClient
import PinVault
import PowerAuthProtocol
import ReferenceServer
import SecureCore
import TestSupport

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

    init(baseURL: String, configurationString: String, directory: String) throws {
        configuration = try ActivationConfiguration(
            instanceId: "com.example.http", baseEndpointURL: baseURL, configuration: configurationString,
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

/// The reference server in this process on an ephemeral loopback port.
struct InProcessServer {
    let directory: String
    let server: ReferenceServer
    let backOffice: BackOfficeClient
    var baseURL: String { "http://127.0.0.1:\(server.port ?? 0)" }

    init(
        directory: String? = nil, maxConnections: Int = 256, adminToken: SecureBytes? = nil,
        adminRateLimit: AdminRateLimit = AdminRateLimit(), accessLog: AccessLog? = nil, metricsPort: UInt16? = nil,
        algorithm: ProtocolAlgorithm = .legacyP256
    ) throws {
        let directory = try directory ?? temporaryDirectory()
        self.directory = directory
        let token = try adminToken ?? AdminToken.random()
        var options = ReferenceServer.Options(
            databasePath: directory + "/server.sqlite", adminToken: token,
            http: .init(maximumConnections: maxConnections))
        options.adminRateLimit = adminRateLimit
        options.accessLog = accessLog
        options.metricsPort = metricsPort
        options.algorithm = algorithm
        server = try ReferenceServer(options: options)
        try server.start()
        backOffice = try BackOfficeClient(baseURL: URL(string: "http://127.0.0.1:\(server.port ?? 0)")!, token: token)
    }

    func device() throws -> Device {
        try Device(
            baseURL: baseURL, configurationString: try server.configurationString(),
            directory: directory + "/device-\(UUID().uuidString)")
    }

    /// A device activated, committed and ready.
    func activeDevice(pin text: String = "1234") async throws -> (Device, String) {
        let device = try device()
        let prepared = try await backOffice.initActivation(userId: "alice")
        let id = try await device.activate(code: prepared.activationCode, pin: text)
        try await backOffice.commit(id)
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
