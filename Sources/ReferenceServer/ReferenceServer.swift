import ActivationServer
import Foundation
import HTTPServer
import PostgresStore
import PowerAuthProtocol
import SecureCore
import VaultOPRFProtocol

/// The deployable reference activation server, HTTP and SQLite around the
/// protocol logic: `ActivationServer` answers the API (it holds no socket
/// and no database of its own), ``SQLiteActivationStore`` keeps the
/// activations durably, libmicrohttpd (`HTTPServer`) listens on loopback,
/// and the back office of ``BackOfficeAPI`` sits behind an admin token.
///
/// **Threads.** libmicrohttpd calls the handler synchronously on a thread per
/// connection. The handler answers on that thread through
/// `ActivationServer.respond(to:)`, the synchronous form of
/// `ActivationServer.handle(_:)`: no semaphore parks a connection thread on
/// a task, and no thread of the Swift concurrency pool ever waits for SQLite's
/// lock. Concurrent requests meet at the store, whose changes each run in one
/// `BEGIN IMMEDIATE` transaction.
public final class ReferenceServer: Sendable {
    /// What the server needs.
    public struct Options: Sendable {
        /// Where the activations live.
        public enum Storage: Sendable {
            /// The SQLite file of ``Options/databasePath`` (the default): one process.
            case sqlite
            /// A PostgreSQL database that several server processes share (``PostgresActivationStore``).
            /// Needs ``Options/keyFilePath``: every instance must use the same key file.
            /// - Parameters:
            ///   - connectionString: the DSN in secure memory (``DSNFile``).
            ///   - pool: connections and timeouts.
            case postgres(connectionString: SecureBytes, pool: PostgresPool.Configuration)
        }

        /// Where the activations live (default ``Storage/sqlite``).
        public var storage: Storage = .sqlite
        /// The database file; created with its schema when missing (SQLite only).
        public var databasePath: String
        /// The storage key file; default the database path plus `.key` (created 0600 when missing).
        public var keyFilePath: String?
        /// The admin token in secure memory; `nil` turns the back office off (403).
        public var adminToken: SecureBytes?
        /// Address and limits of the HTTP server (loopback, 64 KiB bodies, 10 s timeouts by default).
        public var http: HTTPServer.Configuration
        /// Failed attempts that block an activation created from now on (default 5).
        public var maxFailedAttempts: Int
        /// The counter look-ahead window (default 20).
        public var lookAhead: Int
        /// How long a failure block lasts; `nil` (default) until unblocked.
        public var failureBlockDuration: TimeInterval?
        /// Failed back-office attempts allowed before every back-office request gets 429.
        public var adminRateLimit = AdminRateLimit()
        /// Per client address: how often `keystore/create` (V3.3, V4) and the vault's `register`
        /// may be called (``AddressRateLimit``); beyond it, 429 with the endpoint's error body.
        public var keyRequestRateLimit = AddressRateLimit()
        /// Where each answered request is logged (one JSON line, see ``AccessLog``); `nil`, the
        /// default, logs nothing.
        public var accessLog: AccessLog?
        /// A second loopback port that serves only `GET /metrics`, without the admin token
        /// (0 picks a free one); `nil`, the default, opens none. On the main port `/metrics`
        /// needs the admin token.
        public var metricsPort: UInt16?
        /// The algorithm the application serves: `LEGACY_P256` (V3.3, default), `EC_P384` (V4) or a
        /// hybrid V4 suite, `EC_P384_ML_L3` or `EC_P384_ML_L5` (with an ML-DSA master key).
        public var algorithm: ProtocolAlgorithm = .legacyP256
        /// The activation server's clock (temporary keys, blocks, the in-memory replay window); the
        /// system clock. A seam for tests inside this package only: no option or environment
        /// variable of the shipped server sets it.
        package var clock: any ActivationClock = SystemActivationClock()

        /// Creates the options.
        /// - Parameters:
        ///   - databasePath: the database file.
        ///   - keyFilePath: the key file, default next to the database.
        ///   - adminToken: the back-office token, or `nil`.
        ///   - http: address and limits.
        ///   - maxFailedAttempts: the blocking limit.
        ///   - lookAhead: the look-ahead window.
        ///   - failureBlockDuration: the length of a failure block.
        public init(
            databasePath: String, keyFilePath: String? = nil, adminToken: SecureBytes? = nil,
            http: HTTPServer.Configuration = HTTPServer.Configuration(),
            maxFailedAttempts: Int = ProtocolConstants.defaultMaxFailedAttempts,
            lookAhead: Int = ProtocolConstants.defaultLookAhead, failureBlockDuration: TimeInterval? = nil
        ) {
            self.databasePath = databasePath
            self.keyFilePath = keyFilePath
            self.adminToken = adminToken
            self.http = http
            self.maxFailedAttempts = maxFailedAttempts
            self.lookAhead = lookAhead
            self.failureBlockDuration = failureBlockDuration
        }
    }

    /// The activation server (its back-office methods work in process too).
    public let activationServer: ActivationServer
    /// The durable store (``SQLiteActivationStore`` or ``PostgresActivationStore``).
    public let store: any ReferenceActivationStore
    /// The counters served at `/metrics`.
    public let metrics: ServerMetrics
    /// The vault binding's endpoints and store (`/securepin/v1/vault/`), in the activation
    /// database (SQLite or PostgreSQL); `nil` only where a server is built without them (the
    /// endpoints then answer 501).
    public let vaults: VaultOPRFEndpoint?
    private let http: HTTPServer
    private let metricsHTTP: HTTPServer?

    /// Opens the key file and the database (creating them on first use) and
    /// prepares the HTTP server; nothing listens before ``start()``.
    /// - Parameter options: the options.
    /// - Throws: ``ReferenceServerError``.
    public init(options: Options) throws(ReferenceServerError) {
        let storageKey: SecureBytes
        let store: any ReferenceActivationStore
        var vaultStore: OPRFVaultStore?
        switch options.storage {
        case .sqlite:
            let keyPath = options.keyFilePath ?? ServerKeyFile.path(forDatabase: options.databasePath)
            storageKey = try ServerKeyFile.loadOrCreate(at: keyPath)
            let sqlite = try SQLiteActivationStore(path: options.databasePath, storageKey: storageKey)
            vaultStore = try OPRFVaultStore(database: sqlite.database, storageKey: storageKey)
            store = sqlite
        case .postgres(let connectionString, let pool):
            guard let keyPath = options.keyFilePath else {
                throw .invalidConfiguration(
                    reason: "a PostgreSQL store needs a key file (--key-file), the same for every instance")
            }
            storageKey = try ServerKeyFile.loadOrCreate(at: keyPath)
            let postgres = try PostgresActivationStore(
                connectionString: connectionString, storageKey: storageKey, pool: pool)
            vaultStore = OPRFVaultStore(pool: postgres.pool, storageKey: storageKey)
            store = postgres
        }
        let configuration = try store.loadOrStoreConfiguration(
            { () throws(ActivationServerError) in
                try ActivationServerConfiguration.generate(
                    lookAhead: options.lookAhead, maxFailedAttempts: options.maxFailedAttempts,
                    failureBlockDuration: options.failureBlockDuration)
            },
            restore: { (key, secret, master) throws(ActivationServerError) in
                try ActivationServerConfiguration(
                    restoring: key, applicationSecret: secret, masterKeyPair: master, lookAhead: options.lookAhead,
                    maxFailedAttempts: options.maxFailedAttempts, failureBlockDuration: options.failureBlockDuration)
            })
        var served = configuration
        let master: ECP384KeyPair? =
            options.algorithm.isV4
            ? try store.loadOrStoreV4MasterKey { () throws(ActivationServerError) in try protocolKeyPair() } : nil
        let postQuantumMaster = try options.algorithm.signatureParameterSet.map {
            (set) throws(ReferenceServerError) in try store.loadOrStoreV4PostQuantumMasterKey(set)
        }
        do throws(ActivationServerError) {
            try served.serve(options.algorithm, masterKeyPair: master, postQuantumMasterKeyPair: postQuantumMaster)
        } catch {
            throw .activationServer(error)
        }
        let metrics = ServerMetrics()
        let server: ActivationServer
        do throws(ActivationServerError) {
            server = try ActivationServer(
                configuration: served, store: ObservedStore(base: store, metrics: metrics), clock: options.clock)
        } catch {
            throw .activationServer(error)
        }
        self.activationServer = server
        self.store = store
        self.metrics = metrics
        // The vault binding's endpoints (VaultOPRFEndpoint.swift), beside PowerAuth's.
        let vaults = try vaultStore.map { (vaultStore) throws(ReferenceServerError) in
            try VaultOPRFEndpoint(store: vaultStore, server: server)
        }
        self.vaults = vaults
        let router = Router(
            server: server, store: store, gate: try AdminGate(token: options.adminToken, limit: options.adminRateLimit),
            metrics: metrics, log: options.accessLog, vaults: vaults,
            keyRequests: AddressRateLimiter(limit: options.keyRequestRateLimit))
        var http = options.http
        // The admin token goes from the request into secure memory, never into a String.
        http.secretHeaders.insert(HTTPHeader.adminToken.lowercased())
        let main = HTTPServer(configuration: http) { request in router.respond(to: request) }
        self.http = main
        metrics.readOpenConnections { main.openConnections }
        if let metricsPort = options.metricsPort {
            var configuration = options.http
            configuration.host = "127.0.0.1"
            configuration.port = metricsPort
            configuration.additionalListeners = []
            configuration.trustedProxies = []
            configuration.secretHeaders = []
            metricsHTTP = HTTPServer(configuration: configuration) { request in
                guard request.path == ServerMetrics.path else { return .text(status: 404, "not found\n") }
                guard request.method == "GET" else { return .text(status: 405, "method not allowed\n") }
                return Router.metricsPage(metrics)
            }
        } else {
            metricsHTTP = nil
        }
    }

    /// Starts listening.
    /// - Throws: ``ReferenceServerError/http(_:)``.
    public func start() throws(ReferenceServerError) {
        do throws(HTTPServerError) {
            try http.start()
            do throws(HTTPServerError) {
                try metricsHTTP?.start()
            } catch {
                http.stop()
                throw error
            }
        } catch {
            throw .http(error)
        }
    }

    /// The first listener's port (the ephemeral one when configured with 0), while running.
    public var port: Int? { http.port }

    /// Every listener's port, in `HTTPServer.Configuration.listeners` order, while running.
    public var ports: [Int] { http.ports }

    /// The metrics port (see ``Options/metricsPort``) while running, else `nil`.
    public var metricsPort: Int? { metricsHTTP?.port }

    /// Stops gracefully: no new connections, requests in flight finish (up to the drain timeout).
    /// - Returns: how many requests were cut short.
    @discardableResult
    public func stop() -> Int {
        metricsHTTP?.stop()
        return http.stop()
    }

    /// ``stop()`` from async code, on a thread of its own.
    /// - Returns: how many requests were cut short.
    @discardableResult
    public func shutdown() async -> Int {
        await metricsHTTP?.shutdown()
        return await http.shutdown()
    }

    /// The configuration string the application is given.
    /// - Returns: the string (public: every copy of the application carries it).
    /// - Throws: ``ReferenceServerError/activationServer(_:)``.
    public func configurationString() throws(ReferenceServerError) -> String {
        do throws(ActivationServerError) {
            return try activationServer.configuration.configurationString()
        } catch {
            throw .activationServer(error)
        }
    }
}

/// Turns HTTP requests into API or back-office calls, and counts and logs each.
struct Router: Sendable {
    let server: ActivationServer
    let store: any ReferenceActivationStore
    let gate: AdminGate
    let metrics: ServerMetrics
    let log: AccessLog?
    /// The vault binding (its own path prefix, its own file).
    var vaults: VaultOPRFEndpoint? = nil
    /// Per-address buckets for the unauthenticated endpoints that make the server generate keys.
    var keyRequests = AddressRateLimiter(limit: AddressRateLimit())

    /// The paths ``keyRequests`` limits.
    static let keyRequestPaths: Set<String> = [
        TemporaryKeyAPI.createKey.path, V4API.keystoreCreate.path, VaultOPRFAPI.Operation.register.path,
    ]

    static let adminPrefix = "/admin/"

    /// `X-PowerAuth-Authorization` lower-cased, as ``dispatch(_:authorization:)`` keys headers.
    static let authorizationName = AuthorizationHeader.name.lowercased()

    /// The endpoints whose requests carry a PowerAuth authorization header.
    static let signedPaths: Set<String> = [
        ActivationAPI.validateSignature.path, ActivationAPI.removeActivation.path, ActivationAPI.unlockVault.path,
        ActivationAPI.createToken.path, ActivationAPI.removeToken.path, ActivationAPI.commitUpgrade.path,
    ]

    /// Answers, then counts the request and writes its access-log line.
    func respond(to request: HTTPRequest) -> HTTPResponse {
        let started = ContinuousClock.now
        var authorization: AuthorizationHeader?
        var response = dispatch(request, authorization: &authorization)
        let elapsed = started.duration(to: .now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let endpoint = ServerMetrics.endpoint(for: request.path)
        metrics.recordRequest(endpoint: endpoint, status: response.status, seconds: seconds)
        var activationId: String?
        if let header = authorization {
            activationId = header.activationId
            if response.status == 200 || response.status == 401 {
                metrics.recordVerification(factors: header.factorSet, accepted: response.status == 200)
            }
        }
        if activationId == nil, let value = request.header(EncryptionHeader.name),
            let header = try? EncryptionHeader.parse(value)
        {
            activationId = header.activationId
        }
        if request.path == BackOfficeAPI.blockActivation, response.status == 200 { metrics.recordBackOfficeBlock() }
        let requestId = Self.requestId()
        response.headers.append(HTTPHeader(name: "X-Request-Id", value: requestId))
        if let log {
            if activationId == nil, endpoint != "other" { activationId = Self.activationId(in: request, response) }
            log.write(
                AccessLog.Entry(
                    time: Date(), requestId: requestId, method: request.method, endpoint: endpoint,
                    status: response.status, seconds: seconds, activationId: activationId,
                    clientAddress: request.clientAddress))
        }
        return response
    }

    /// 16 random hex digits.
    static func requestId() -> String {
        // Not a secret: it only has to be unique enough to find a request in the log.
        let hex = String(UInt64.random(in: .min ... .max), radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The `activationId` of the request's or the response's object, for the access log.
    static func activationId(in request: HTTPRequest, _ response: HTTPResponse) -> String? {
        struct Probe: Decodable {
            struct Object: Decodable { var activationId: String? }
            var requestObject: Object?
            var responseObject: Object?
        }
        let decoder = JSONDecoder()
        if let id = (try? decoder.decode(Probe.self, from: request.body))?.requestObject?.activationId { return id }
        guard response.status == 200 else { return nil }
        return (try? decoder.decode(Probe.self, from: response.body))?.responseObject?.activationId
    }

    /// The metrics page.
    static func metricsPage(_ metrics: ServerMetrics) -> HTTPResponse {
        HTTPResponse(
            status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: Data(metrics.render().utf8))
    }

    /// - Parameters:
    ///   - request: the request.
    ///   - authorization: set to the `X-PowerAuth-Authorization` header of a signed endpoint's
    ///     request when it parses (parsed once here, for the activation server, the log and the
    ///     metrics).
    func dispatch(_ request: HTTPRequest, authorization: inout AuthorizationHeader?) -> HTTPResponse {
        if Self.keyRequestPaths.contains(request.path), let seconds = keyRequests.take(request.clientAddress) {
            return Self.rateLimited(request.path, retryAfter: seconds)
        }
        if request.path.hasPrefix(VaultOPRFAPI.pathPrefix) {
            if let vaults { return vaults.respond(to: request) }
            let response = ActivationServer.error(
                501, ActivationAPI.ErrorCode.generic, "the vault binding needs the SQLite store")
            return HTTPResponse(status: response.statusCode, body: Data(response.body))
        }
        if request.path == ServerMetrics.path {
            let verdict = gate.check(request.secretHeaders[HTTPHeader.adminToken.lowercased()])
            if let refusal = Self.refusal(verdict) { return refusal }
            guard request.method == "GET" else { return .text(status: 405, "method not allowed\n") }
            return Self.metricsPage(metrics)
        }
        // One value per name, compared without case; the first occurrence wins, so a repeated
        // header cannot make the choice depend on dictionary order.
        var headers: [String: String] = [:]
        for header in request.headers {
            let name = header.name.lowercased()
            if headers[name] == nil { headers[name] = header.value }
        }
        var transport = TransportRequest(
            method: request.method, path: request.path, headers: headers, body: Array(request.body))
        if Self.signedPaths.contains(request.path), let value = headers[Self.authorizationName] {
            authorization = try? AuthorizationHeader.parse(value)
            transport.parsedAuthorization = authorization
        }
        guard request.path.hasPrefix(Self.adminPrefix) else {
            let response = server.respond(to: transport)
            return HTTPResponse(status: response.statusCode, body: Data(response.body))
        }
        let verdict = gate.check(request.secretHeaders[HTTPHeader.adminToken.lowercased()])
        if let refusal = Self.refusal(verdict) { return refusal }
        let response = backOffice(transport)
        return HTTPResponse(status: response.statusCode, body: Data(response.body))
    }

    /// 429 for a key request over its address's limit, in the endpoint's own error body
    /// (upstream's `ERR_TEMPORARY_KEY` envelope, or the vault binding's), with `Retry-After`.
    static func rateLimited(_ path: String, retryAfter seconds: Int) -> HTTPResponse {
        var answer: HTTPResponse
        if path.hasPrefix(VaultOPRFAPI.pathPrefix) {
            answer = VaultOPRFEndpoint.failure(429, "rate-limited")
        } else {
            let response = ActivationServer.error(429, TemporaryKeyAPI.errorCode, TemporaryKeyAPI.errorMessage)
            answer = HTTPResponse(status: response.statusCode, body: Data(response.body))
        }
        answer.headers.append(HTTPHeader(name: "Retry-After", value: String(seconds)))
        return answer
    }

    /// The answer to a request the admin gate did not let through, or `nil` when it did.
    static func refusal(_ verdict: AdminGate.Verdict) -> HTTPResponse? {
        let response: TransportResponse
        switch verdict {
        case .allowed: return nil
        case .missing:
            response = ActivationServer.error(401, ActivationAPI.ErrorCode.authentication, "admin token required")
        case .refused:
            response = ActivationServer.error(403, ActivationAPI.ErrorCode.authentication, "admin token refused")
        case .limited(let seconds):
            response = ActivationServer.error(
                429, ActivationAPI.ErrorCode.authentication,
                "too many failed admin token attempts; retry in \(seconds) s")
        }
        var answer = HTTPResponse(status: response.statusCode, body: Data(response.body))
        if case .limited(let seconds) = verdict {
            answer.headers.append(HTTPHeader(name: "Retry-After", value: String(seconds)))
        }
        return answer
    }

    // MARK: - Back office

    func backOffice(_ request: TransportRequest) -> TransportResponse {
        guard request.method == ActivationAPI.method else {
            return ActivationServer.error(405, ActivationAPI.ErrorCode.request, "method not allowed")
        }
        do throws(ActivationServerError) {
            switch request.path {
            case BackOfficeAPI.initActivation:
                let body = try Self.decode(request, InitActivationRequest.self)
                guard !body.userId.isEmpty, body.userId.utf8.count <= 255 else {
                    throw .malformedRequest(reason: "userId must be 1 ... 255 bytes")
                }
                let prepared = try server.initActivation(userId: body.userId)
                return try Self.ok(
                    InitActivationResponse(
                        activationId: prepared.activationId, activationCode: prepared.activationCode,
                        activationSignature: prepared.activationSignature))
            case BackOfficeAPI.commitActivation:
                try server.commitActivation(try Self.decode(request, BackOfficeActivationRequest.self).activationId)
                return try Self.ok(EmptyMessage())
            case BackOfficeAPI.blockActivation:
                let body = try Self.decode(request, BackOfficeActivationRequest.self)
                try server.blockActivation(
                    body.activationId, until: body.blockedUntil.map { Date(timeIntervalSince1970: TimeInterval($0)) })
                return try Self.ok(EmptyMessage())
            case BackOfficeAPI.unblockActivation:
                try server.unblockActivation(try Self.decode(request, BackOfficeActivationRequest.self).activationId)
                return try Self.ok(EmptyMessage())
            case BackOfficeAPI.removeActivation:
                try server.removeActivation(try Self.decode(request, BackOfficeActivationRequest.self).activationId)
                return try Self.ok(EmptyMessage())
            case BackOfficeAPI.activationDetail:
                let id = try Self.decode(request, BackOfficeActivationRequest.self).activationId
                return try Self.ok(BackOfficeActivation(try server.activationDetail(id)))
            case BackOfficeAPI.listActivations:
                _ = try Self.decode(request, EmptyMessage.self)
                let all = try store.activationIds().map { (id) throws(ActivationServerError) in
                    BackOfficeActivation(try server.activationDetail(id))
                }
                return try Self.ok(BackOfficeActivationList(activations: all))
            case BackOfficeAPI.configuration:
                _ = try Self.decode(request, EmptyMessage.self)
                return try Self.ok(
                    BackOfficeConfiguration(configuration: try server.configuration.configurationString()))
            case BackOfficeAPI.vaultDetail, BackOfficeAPI.unblockVault:
                return try vaultBackOffice(request)
            default:
                return ActivationServer.error(404, ActivationAPI.ErrorCode.request, "unknown endpoint")
            }
        } catch {
            if error == .activationNotFound {
                return ActivationServer.error(404, ActivationAPI.ErrorCode.activation, "unknown activation")
            }
            return ActivationServer.response(for: error)
        }
    }

    /// The back office of server-bound vaults (404 when the server runs without the vault binding).
    func vaultBackOffice(_ request: TransportRequest) throws(ActivationServerError) -> TransportResponse {
        guard let vaults else {
            return ActivationServer.error(404, ActivationAPI.ErrorCode.request, "the vault binding is not served")
        }
        let body = try Self.decode(request, BackOfficeVaultRequest.self)
        guard let id = body.bytes else { throw .malformedRequest(reason: "vaultId must be 32 hex digits") }
        let counters: VaultOPRFAPI.Counters
        do throws(OPRFVaultStore.Refusal) {
            counters =
                request.path == BackOfficeAPI.unblockVault
                ? try vaults.store.unblock(vaultId: id, now: Date()) : try vaults.store.detail(vaultId: id)
        } catch {
            switch error {
            case .unknownVault: return ActivationServer.error(404, ActivationAPI.ErrorCode.request, "unknown vault")
            case .wrongState:
                return ActivationServer.error(409, ActivationAPI.ErrorCode.request, "the vault is not enrolled yet")
            default: return ActivationServer.error(500, ActivationAPI.ErrorCode.generic, "storage failure")
            }
        }
        let state: String
        switch counters.state {
        case .pending: state = "PENDING"
        case .active: state = "ACTIVE"
        case .blocked: state = "BLOCKED"
        }
        return try Self.ok(
            BackOfficeVault(
                vaultId: body.vaultId.lowercased(), state: state, failures: counters.failures,
                maxFailures: counters.maxFailures))
    }

    static func decode<T: Codable & Sendable>(_ request: TransportRequest, _ type: T.Type)
        throws(ActivationServerError) -> T
    {
        do throws(ProtocolError) {
            return try WireCoding.decode(RequestEnvelope<T>.self, request.body).requestObject
        } catch {
            throw .malformedRequest(reason: "the body is not the expected JSON")
        }
    }

    static func ok<T: Codable & Sendable>(_ object: T) throws(ActivationServerError) -> TransportResponse {
        do throws(ProtocolError) {
            return TransportResponse(
                statusCode: 200, body: try WireCoding.encode(ResponseEnvelope(responseObject: object)))
        } catch {
            throw .protocolFailure(error)
        }
    }
}

/// A fresh V4 master key pair, its failure in the activation server's terms.
private func protocolKeyPair() throws(ActivationServerError) -> ECP384KeyPair {
    do throws(ProtocolError) {
        return try ECP384KeyPair.generate()
    } catch {
        throw .protocolFailure(error)
    }
}
