import Activation
import ActivationHTTP
import Dispatch
import Foundation
import PinVault
import PostgresStore
import PowerAuthProtocol
import ReferenceServer
import SecureCore
import Synchronization

/// `securepin-bench server`: authenticated requests per second and latency of
/// the reference server on loopback — SQLite with one instance, and, given a
/// PostgreSQL cluster, PostgreSQL with one and with two instances — with the
/// load generator (`clients` concurrent async clients over the real client
/// transport) in the same process, so both share this machine's cores.
///
/// Each client is its own activated device; before the clock starts it
/// computes `requests` signed `signature/validate` requests (possession and
/// knowledge, in counter order), so the figure is the server's and the HTTP
/// path's, not the client's key derivation. With two instances, the clients
/// alternate between them. Every request must answer 200: the failure counts
/// (non-200, transport errors, failed attempts on the server) are reported
/// exactly, and the audit check compares the audit table with the answers.
enum ServerBench {
    struct Outcome: Sendable {
        var latenciesNs: [UInt64] = []
        var statusFailures = 0
        var transportFailures = 0
    }

    /// One configuration's figures (the `--json` form).
    struct Scenario: Codable, Sendable {
        var store: String
        var instances: Int
        var clients: Int
        var requests: Int
        var seconds: Double
        var requestsPerSecond: Double
        var p50Milliseconds: Double
        var p99Milliseconds: Double
        var maxMilliseconds: Double
        var non200: Int
        var transportFailures: Int
        var acceptedAuditRows: Int
        var auditRows: Int
        var expectedAcceptedRows: Int
        var failedAttempts: Int
        /// Accepted audit rows = requests answered 200, and no other rows, no failed attempts.
        var auditCheck: Bool
        /// The server alone: one request at a time through `respond(to:)`, no HTTP.
        var serverAloneMicroseconds: Double
        /// Of which CPU time of the answering thread (the rest is waiting, mostly `fsync`).
        var serverAloneCPUMicroseconds: Double
        var storeFetchMicroseconds: Double
        var countedAttemptMicroseconds: Double
        /// CPU time of the whole process (server, HTTP on both sides, load generator) per request
        /// of the timed run: with 2 cores, 2,000,000 / this is the most requests per second.
        var processCPUMicrosecondsPerRequest: Double
    }

    struct Setup {
        var clients: Int
        var requests: Int
        var postgresDSNFile: String?
        var json: Bool
    }

    static func run(_ setup: Setup) throws {
        let semaphore = DispatchSemaphore(value: 0)
        let result = Mutex<Result<[Scenario], any Error>?>(nil)
        Task {
            do {
                var scenarios = [try await measure(setup, backend: nil, instances: 1)]
                if let file = setup.postgresDSNFile {
                    let dsn = try DSNFile.load(at: file)
                    scenarios.append(try await measure(setup, backend: dsn, instances: 1))
                    scenarios.append(try await measure(setup, backend: dsn, instances: 2))
                }
                result.withLock { $0 = .success(scenarios) }
            } catch {
                result.withLock { $0 = .failure(error) }
            }
            semaphore.signal()
        }
        semaphore.wait()
        guard let scenarios = try result.withLock({ $0 })?.get() else { return }
        if setup.json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(scenarios), as: UTF8.self))
        } else {
            printTable(scenarios)
        }
    }

    /// A fresh database in the cluster of `base`, and the connection string that names it (built
    /// in secure memory: the cluster's DSN never becomes a `String`).
    static func freshDatabase(_ base: SecureBytes) throws -> SecureBytes {
        let name = "bench_\(getpid())_\(UInt32.random(in: 0...UInt32.max))"
        let admin = try PostgresPool(connectionString: base)
        try admin.withConnection { (c) throws(PostgresError) in try c.execute("CREATE DATABASE \(name)") }
        let suffix = Array(" dbname=\(name)".utf8)
        let dsn = try SecureBytes(count: base.count + suffix.count)
        dsn.withUnsafeMutableBytes { out in
            base.withUnsafeBytes { out.copyMemory(from: $0) }
            UnsafeMutableRawBufferPointer(rebasing: out[base.count...]).copyBytes(from: suffix)
        }
        return dsn
    }

    static func measure(_ setup: Setup, backend: SecureBytes?, instances: Int) async throws -> Scenario {
        let clients = setup.clients
        let requests = setup.requests
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "securepin-bench-server-\(getpid())-\(backend == nil ? "sqlite" : "pg\(instances)")"
        )
        .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let databaseDSN = try backend.map { (base) throws in try freshDatabase(base) }
        var servers: [ReferenceServer] = []
        defer { for server in servers { server.stop() } }
        for _ in 0..<instances {
            var options = ReferenceServer.Options(
                databasePath: directory + "/server.sqlite", keyFilePath: directory + "/server.key",
                http: .init(maximumConnections: max(128, clients * 2)))
            if let databaseDSN {
                options.storage = .postgres(
                    connectionString: databaseDSN,
                    pool: PostgresPool.Configuration(maximumConnections: 16, acquireTimeoutSeconds: 30))
            }
            let server = try ReferenceServer(options: options)
            try server.start()
            servers.append(server)
        }
        let first = servers[0]
        let configurations = try servers.map { (server) throws in
            try ActivationConfiguration(
                instanceId: "bench", baseEndpointURL: "http://127.0.0.1:\(server.port ?? 0)",
                configuration: try server.configurationString(), algorithm: "LEGACY_P256",
                knowledgeKeyParameters: .testing)
        }
        let body = try WireCoding.encode(RequestEnvelope(requestObject: ValidateSignatureRequest(reason: "BENCH")))
        let label = backend == nil ? "SQLite" : "PostgreSQL, \(instances) instance\(instances == 1 ? "" : "s")"
        if !setup.json {
            print("\(label): \(clients) concurrent clients × \(requests) signed requests, loopback, same process")
            print("  preparing: activating \(clients) devices and signing \(clients * requests) requests (not timed)…")
        }
        var plans: [(HTTPActivationTransport, [String], String)] = []
        var direct: [String] = []
        for c in 0..<clients {
            let lane = c % instances
            let storage = try FileActivationStorage(directory: directory + "/device-\(c)")
            let transport = try HTTPActivationTransport(configuration: configurations[lane])
            let service = try ActivationService(
                configuration: configurations[lane], storage: storage, transport: transport)
            let prepared = try servers[lane].activationServer.initActivation(userId: "user-\(c)")
            let p = try MutablePassword()
            for s in "1234".unicodeScalars { try p.addCharacter(s) }
            let password = try p.copyToImmutable()
            p.destroy()
            _ = try await service.createActivation(
                activationCode: prepared.activationCode, name: "bench \(c)", password: password)
            try servers[lane].activationServer.commitActivation(prepared.activationId)
            if c == 0 {
                // A separate batch for the same device, answered without HTTP (see below);
                // signed first, so the server has moved past them when the HTTP batch starts.
                for _ in 0..<requests {
                    direct.append(
                        try await service.signRequest(
                            method: "POST", uriIdentifier: "/pa/signature/validate", body: body,
                            authentication: .possessionWithPassword(password)
                        ).value)
                }
            }
            var headers: [String] = []
            for _ in 0..<requests {
                let header = try await service.signRequest(
                    method: "POST", uriIdentifier: "/pa/signature/validate", body: body,
                    authentication: .possessionWithPassword(password))
                headers.append(header.value)
            }
            plans.append((transport, headers, prepared.activationId))
        }

        // The server alone: the same requests answered by respond(to:) in this thread, no HTTP,
        // one at a time, to show how much of a request's time is the server's own work, and how
        // much of that is CPU (the rest is waiting, mostly for the commit's fsync).
        if !setup.json {
            print("  measuring…")
            fflush(nil)  // every stream: a profiler waits for this line
        }
        var directFailures = 0
        let directStart = now()
        let directCPUStart = threadCPU()
        for header in direct {
            let response = first.activationServer.respond(
                to: TransportRequest(
                    path: ActivationAPI.validateSignature.path, headers: [AuthorizationHeader.name: header], body: body)
            )
            if response.statusCode != 200 { directFailures += 1 }
        }
        let directCPUNs = Double(threadCPU() - directCPUStart) / Double(max(1, direct.count))
        let directNs = Double(now() - directStart) / Double(max(1, direct.count))
        // Two parts of it: reading a record (SQL and opening its sealed key into secure memory),
        // and one counted attempt (a transaction with its audit row, durable on return).
        // A separate activation (state CREATED: its attempts are recorded as refused, nothing counts).
        let probe = try first.activationServer.initActivation(userId: "probe").activationId
        let fetchStart = now()
        for _ in 0..<requests { _ = try first.store.fetch(activationId: probe) }
        let fetchNs = Double(now() - fetchStart) / Double(requests)
        let attemptStart = now()
        for _ in 0..<requests {
            _ = try first.store.recordAttempt(
                activationId: probe, outcome: .rejected, now: Date(), failureBlockDuration: nil)
        }
        let attemptNs = Double(now() - attemptStart) / Double(requests)

        let start = now()
        let cpuStart = processCPU()
        let outcomes = await withTaskGroup(of: Outcome.self) { group in
            for (transport, headers, _) in plans {
                group.addTask {
                    var outcome = Outcome()
                    outcome.latenciesNs.reserveCapacity(headers.count)
                    for header in headers {
                        let sent = now()
                        do {
                            let response = try await transport.send(
                                TransportRequest(
                                    path: ActivationAPI.validateSignature.path,
                                    headers: [AuthorizationHeader.name: header, "Content-Type": "application/json"],
                                    body: body), timeout: .seconds(30))
                            if response.statusCode != 200 { outcome.statusFailures += 1 }
                        } catch {
                            outcome.transportFailures += 1
                        }
                        outcome.latenciesNs.append(now() - sent)
                    }
                    return outcome
                }
            }
            return await group.reduce(into: [Outcome]()) { $0.append($1) }
        }
        let elapsed = Double(now() - start) / 1e9
        let cpuNs = Double(processCPU() - cpuStart)

        var latencies = outcomes.flatMap(\.latenciesNs)
        latencies.sort()
        func percentile(_ p: Double) -> Double {
            Double(latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]) / 1e6
        }
        let total = latencies.count
        let non200 = outcomes.map(\.statusFailures).reduce(0, +)
        let transportFailures = outcomes.map(\.transportFailures).reduce(0, +)
        var failedAttempts = 0
        var accepted = 0
        var auditRows = 0
        for (_, _, id) in plans {
            failedAttempts += try first.activationServer.activationDetail(id).failedAttempts
            let trail = try first.store.auditTrail(activationId: id)
            auditRows += trail.count
            accepted += trail.filter { $0.outcome == .accepted }.count
        }
        let expected = total - non200 - transportFailures + direct.count - directFailures
        return Scenario(
            store: backend == nil ? "sqlite" : "postgres", instances: instances, clients: clients, requests: total,
            seconds: elapsed, requestsPerSecond: Double(total) / elapsed, p50Milliseconds: percentile(0.50),
            p99Milliseconds: percentile(0.99), maxMilliseconds: Double(latencies.last ?? 0) / 1e6, non200: non200,
            transportFailures: transportFailures, acceptedAuditRows: accepted, auditRows: auditRows,
            expectedAcceptedRows: expected, failedAttempts: failedAttempts,
            auditCheck: accepted == expected && auditRows == accepted && failedAttempts == 0,
            serverAloneMicroseconds: directNs / 1000, serverAloneCPUMicroseconds: directCPUNs / 1000,
            storeFetchMicroseconds: fetchNs / 1000, countedAttemptMicroseconds: attemptNs / 1000,
            processCPUMicrosecondsPerRequest: cpuNs / Double(max(1, total)) / 1000)
    }

    /// CPU nanoseconds of the whole process (user and system, every thread).
    static func processCPU() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// CPU nanoseconds of the calling thread.
    static func threadCPU() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    static func printTable(_ scenarios: [Scenario]) {
        func row(_ name: String, _ cell: (Scenario) -> String) {
            print(
                name.padding(toLength: 30, withPad: " ", startingAt: 0)
                    + scenarios.map { cell($0).padding(toLength: 22, withPad: " ", startingAt: 0) }.joined())
        }
        print("")
        row("") { $0.store == "sqlite" ? "SQLite" : "PostgreSQL ×\($0.instances)" }
        row("requests (clients)") { "\($0.requests) (\($0.clients))" }
        row("throughput req/s") { String(format: "%.0f", $0.requestsPerSecond) }
        row("latency p50 ms") { String(format: "%.2f", $0.p50Milliseconds) }
        row("latency p99 ms") { String(format: "%.2f", $0.p99Milliseconds) }
        row("latency max ms") { String(format: "%.2f", $0.maxMilliseconds) }
        row("process CPU µs/request") { String(format: "%.0f", $0.processCPUMicrosecondsPerRequest) }
        row("non-200 / transport failures") { "\($0.non200) / \($0.transportFailures)" }
        row("audit: accepted rows") { "\($0.acceptedAuditRows) of \($0.auditRows)" }
        row("failed attempts") { "\($0.failedAttempts)" }
        row("audit check") { $0.auditCheck ? "ok (\($0.expectedAcceptedRows) = 200s)" : "MISMATCH" }
        row("server alone µs/request") { String(format: "%.0f", $0.serverAloneMicroseconds) }
        row("  of which CPU µs") { String(format: "%.0f", $0.serverAloneCPUMicroseconds) }
        row("store fetch µs") { String(format: "%.0f", $0.storeFetchMicroseconds) }
        row("one counted attempt µs") { String(format: "%.0f", $0.countedAttemptMicroseconds) }
        print("")
        print("goal: SQLite ≥ 5000 req/s with p99 ≤ 20 ms; PostgreSQL ≥ 3000 req/s across two instances")
    }
}
