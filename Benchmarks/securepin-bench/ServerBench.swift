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
/// PostgreSQL cluster, PostgreSQL with one and with two instances.
///
/// Every instance is a `securepin server` child process (the release binary), started as an
/// operator starts it; this process is only the load generator: `clients` keep-alive
/// connections, one thread each, writing pre-built requests (``RawHTTPLoad``), or with
/// `--urlsession` the real client transport as before. Both share this machine's cores, so
/// the figure is "load generator included"; the CPU time of each side is reported.
///
/// Each client is its own activated device (prepared through the back office and the
/// activation endpoints over HTTP); before the clock starts it computes `requests` signed
/// `signature/validate` requests (possession and knowledge, in counter order), so the figure
/// is the server's and the HTTP path's, not the client's key derivation. With two instances,
/// the clients alternate between them. Every request must answer 200: the failure counts
/// (non-200, transport errors, failed attempts on the server) are reported exactly, and the
/// audit check compares the audit table with the answers.
///
/// After the children have stopped, this process opens the same database and key file as an
/// in-process ``ReferenceServer`` (never listening) for the "server alone" figures and the
/// audit check.
enum ServerBench {
    struct Outcome: Sendable {
        var latenciesNs: [UInt64] = []
        var statusFailures = 0
        var transportFailures = 0
        var reconnects = 0
        var firstError: String?
    }

    /// One configuration's figures (the `--json` form).
    struct Scenario: Codable, Sendable {
        /// The suite the server serves and every device activated with.
        var algorithm: String
        var store: String
        var instances: Int
        /// `raw-http` (``RawHTTPLoad``) or `urlsession` (the client transport).
        var loadGenerator: String
        var clients: Int
        var requests: Int
        var seconds: Double
        var requestsPerSecond: Double
        var p50Milliseconds: Double
        var p99Milliseconds: Double
        var maxMilliseconds: Double
        var non200: Int
        var transportFailures: Int
        /// Connections the load generator opened again after the server closed one.
        var reconnects: Int
        var acceptedAuditRows: Int
        var auditRows: Int
        var expectedAcceptedRows: Int
        var failedAttempts: Int
        /// Accepted audit rows = requests answered 200, and no other rows, no failed attempts.
        var auditCheck: Bool
        /// Activations per second while preparing, one device at a time over HTTP: keystore/create
        /// and activation/create with the device's key generation and the server's (ML-KEM and
        /// ML-DSA in a hybrid suite), plus the commit (and V4's activation/confirm).
        var activationsPerSecond: Double
        /// The server alone: one request at a time through `respond(to:)`, no HTTP.
        var serverAloneMicroseconds: Double
        /// Of which CPU time of the answering thread (the rest is waiting, mostly `fsync`).
        var serverAloneCPUMicroseconds: Double
        var storeFetchMicroseconds: Double
        var countedAttemptMicroseconds: Double
        /// CPU time per request of the timed run, of the bench process (the load generator only).
        var loadGeneratorCPUMicrosecondsPerRequest: Double
        /// Of the `securepin server` processes together.
        var serverCPUMicrosecondsPerRequest: Double
        /// Of the PostgreSQL cluster's processes (its backends and background workers), when measured.
        var postgresCPUMicrosecondsPerRequest: Double?
        /// The sum of the three: with 2 cores, 2,000,000 / this is the most requests per second.
        var totalCPUMicrosecondsPerRequest: Double
        /// CPU time of everything else on the machine per request (`/proc/stat` minus the three
        /// above and the steal): the kernel's own threads (writeback, `fsync`), exited processes,
        /// other users.
        var otherCPUMicrosecondsPerRequest: Double
        /// The machine's idle share of the timed run (0 … 1, `/proc/stat`, waiting for I/O included):
        /// above zero, the run was not short of CPU.
        var machineIdle: Double
        /// The share of the timed run the hypervisor gave the machine's virtual CPUs to someone
        /// else (`steal` in `/proc/stat`, 0 … 1): time no process here could use, a run with much
        /// of it is not comparable with one without.
        var machineSteal: Double
    }

    struct Setup {
        var clients: Int
        var requests: Int
        var postgresDSNFile: String?
        /// The `securepin` binary the instances run.
        var securepin: String
        /// The client transport (URLSession) instead of ``RawHTTPLoad``.
        var urlSession: Bool
        var json: Bool
        /// The suites measured, each over every store configuration.
        var algorithms: [ProtocolAlgorithm]
    }

    /// What `make bench-server` compares by default: the V3.3 suite and the library's default.
    static let defaultAlgorithms: [ProtocolAlgorithm] = [.legacyP256, .ecP384MLL3]

    static func run(_ setup: Setup) throws {
        let signals = ServerProcess.stopChildrenOnSignals()
        defer { for source in signals { source.cancel() } }
        let semaphore = DispatchSemaphore(value: 0)
        let result = Mutex<Result<[Scenario], any Error>?>(nil)
        Task {
            do {
                var scenarios: [Scenario] = []
                let dsn = try setup.postgresDSNFile.map { (file) throws in try DSNFile.load(at: file) }
                // Store by store, each suite in turn, so the suites of one store run close in time.
                for algorithm in setup.algorithms {
                    scenarios.append(try await measure(setup, backend: nil, instances: 1, algorithm: algorithm))
                }
                if let dsn {
                    for instances in [1, 2] {
                        for algorithm in setup.algorithms {
                            scenarios.append(
                                try await measure(setup, backend: dsn, instances: instances, algorithm: algorithm))
                        }
                    }
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

    /// Writes a secret (a connection string) to a new 0600 file, straight from secure memory.
    static func writeSecretFile(_ secret: SecureBytes, to path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ServerProcess.Failed(description: "cannot create \(path) (errno \(errno))") }
        defer { close(fd) }
        let written = secret.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) == $0.count }
        guard written else { throw ServerProcess.Failed(description: "cannot write \(path)") }
    }

    /// CPU time of the PostgreSQL cluster's processes: every backend and background process
    /// `pg_stat_activity` lists (the postmaster itself only forks and is left out).
    struct PostgresProcesses {
        let pool: PostgresPool

        /// CPU nanoseconds so far of each process the cluster lists now.
        func snapshot() throws -> [Int32: UInt64] {
            let rows = try pool.withConnection { (c) throws(PostgresError) in
                try c.query("SELECT pid::int8 FROM pg_stat_activity")
            }
            var out: [Int32: UInt64] = [:]
            for row in rows {
                guard case .integer(let pid) = row[0], let cpu = ServerProcess.cpuNanoseconds(pid: Int32(pid)) else {
                    continue
                }
                out[Int32(pid)] = cpu
            }
            return out
        }

        /// CPU nanoseconds between two snapshots (a process started in between counts in full).
        static func spent(_ before: [Int32: UInt64], _ after: [Int32: UInt64]) -> UInt64 {
            after.reduce(0) { sum, entry in sum + (entry.value - min(entry.value, before[entry.key] ?? 0)) }
        }
    }

    static func measure(_ setup: Setup, backend: SecureBytes?, instances: Int, algorithm: ProtocolAlgorithm)
        async throws -> Scenario
    {
        let clients = setup.clients
        let requests = setup.requests
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "securepin-bench-server-\(getpid())-\(backend == nil ? "sqlite" : "pg\(instances)")-\(algorithm.rawValue)"
        )
        .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        ServerProcess.scratch.withLock { _ = $0.insert(directory) }
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            ServerProcess.scratch.withLock { _ = $0.remove(directory) }
        }
        let databaseDSN = try backend.map { (base) throws in try freshDatabase(base) }
        let postgres = try backend.map { (base) throws in
            PostgresProcesses(pool: try PostgresPool(connectionString: base))
        }
        let keyFile = directory + "/server.key"
        let databaseFile = directory + "/server.sqlite"
        var storeArguments = ["--db", databaseFile, "--key-file", keyFile]
        if let databaseDSN {
            try writeSecretFile(databaseDSN, to: directory + "/server.dsn")
            storeArguments = ["--store", "postgres", "--dsn-file", directory + "/server.dsn", "--key-file", keyFile]
        }
        storeArguments += ["--algorithm", algorithm.rawValue]
        let token = try AdminToken.random()
        defer { token.destroy() }
        try AdminToken.store(token, to: directory + "/admin.token")

        // The instances, one after the other: the first creates the key file and the tables,
        // the next opens them once the first is ready.
        var children: [ServerProcess] = []
        defer { for child in children { child.stop() } }
        for index in 0..<instances {
            children.append(
                try ServerProcess(
                    executable: setup.securepin, storeArguments: storeArguments, tokenFile: directory + "/admin.token",
                    readyFile: directory + "/ready-\(index)"))
        }
        let offices = try children.map { (child) throws in
            try BackOfficeClient(baseURL: URL(string: "http://127.0.0.1:\(child.port)")!, token: token)
        }
        var configurations: [ActivationConfiguration] = []
        for (child, office) in zip(children, offices) {
            configurations.append(
                try ActivationConfiguration(
                    instanceId: "bench", baseEndpointURL: "http://127.0.0.1:\(child.port)",
                    configuration: try await office.configurationString(), algorithm: algorithm.rawValue,
                    knowledgeKeyParameters: .testing))
        }
        // Each generation's validate endpoint with the body its SDK sends (V4: `{}`).
        let (path, uriIdentifier) =
            algorithm.isV4
            ? (V4API.validate.path, V4API.validate.uriIdentifier ?? "")
            : (ActivationAPI.validateSignature.path, ActivationAPI.validateSignature.uriIdentifier ?? "")
        let body =
            algorithm.isV4
            ? Array("{}".utf8)
            : try WireCoding.encode(RequestEnvelope(requestObject: ValidateSignatureRequest(reason: "BENCH")))
        let label =
            (backend == nil ? "SQLite" : "PostgreSQL, \(instances) instance\(instances == 1 ? "" : "s")")
            + ", \(algorithm.rawValue)"
        let generator = setup.urlSession ? "urlsession" : "raw-http"
        if !setup.json {
            print(
                "\(label): \(clients) concurrent clients × \(requests) signed requests, loopback, "
                    + "\(instances) securepin server process\(instances == 1 ? "" : "es"), load generator \(generator)")
            print("  preparing: activating \(clients) devices and signing \(clients * requests) requests (not timed)…")
        }
        // A device's transport is kept only when it sends the timed requests (--urlsession): each
        // holds a kept-alive connection, and the server allows 128 per client address.
        var plans: [(lane: Int, transport: HTTPActivationTransport?, headers: [String], id: String)] = []
        var direct: [String] = []
        var activationNs: UInt64 = 0
        var confirmations = 0
        for c in 0..<clients {
            let lane = c % instances
            let storage = try FileActivationStorage(directory: directory + "/device-\(c)")
            let transport = try HTTPActivationTransport(configuration: configurations[lane])
            let service = try ActivationService(
                configuration: configurations[lane], storage: storage, transport: transport)
            let prepared = try await offices[lane].initActivation(userId: "user-\(c)")
            let p = try MutablePassword()
            for s in "1234".unicodeScalars { try p.addCharacter(s) }
            let password = try p.copyToImmutable()
            p.destroy()
            let activationStart = now()
            _ = try await service.createActivation(
                activationCode: prepared.activationCode, name: "bench \(c)", password: password)
            try await offices[lane].commit(prepared.activationId)
            // V4: the app confirms after the commit (one code, counted as any other).
            if await service.needsConfirmation() {
                try await service.confirmActivation(password: password)
                confirmations += 1
            }
            activationNs += now() - activationStart
            var headers: [String] = []
            for _ in 0..<requests {
                let header = try await service.signRequest(
                    method: "POST", uriIdentifier: uriIdentifier, body: body,
                    authentication: .possessionWithPassword(password))
                headers.append(header.value)
            }
            if c == 0 {
                // A separate batch for the same device, answered without HTTP after the timed run
                // (see below); signed after the HTTP batch, in the order the server sees them.
                for _ in 0..<requests {
                    direct.append(
                        try await service.signRequest(
                            method: "POST", uriIdentifier: uriIdentifier, body: body,
                            authentication: .possessionWithPassword(password)
                        ).value)
                }
            }
            plans.append((lane, setup.urlSession ? transport : nil, headers, prepared.activationId))
        }
        let lanes = plans.map { plan in
            RawHTTPLoad.Lane(
                port: children[plan.lane].port,
                requests: plan.headers.map {
                    RawHTTPLoad.request(
                        path: path, port: children[plan.lane].port, header: AuthorizationHeader.name, value: $0,
                        body: body)
                })
        }

        if !setup.json {
            print("  measuring…")
            fflush(nil)  // every stream: a profiler waits for this line
        }
        struct Clocks {
            var wall: UInt64 = 0
            var bench: UInt64 = 0
            var servers: [UInt64] = []
            var postgres: [Int32: UInt64] = [:]
            var machine = MachineCPU()
        }
        // The wall clock is read last at the start and first at the end, so the other readings
        // (a query to PostgreSQL among them) stay outside the timed span.
        func clocks(wall: UInt64? = nil) throws -> Clocks {
            var readings = Clocks(
                bench: processCPU(), servers: children.map { $0.cpuNanoseconds() ?? 0 },
                postgres: try postgres?.snapshot() ?? [:], machine: MachineCPU.now())
            readings.wall = wall ?? now()
            return readings
        }
        var before = Clocks()
        let outcomes: [Outcome]
        if setup.urlSession {
            before = try clocks()
            outcomes = await urlSessionLoad(
                plans.compactMap { plan in plan.transport.map { ($0, plan.headers) } }, body: body)
        } else {
            var failure: (any Error)?
            outcomes = RawHTTPLoad.run(lanes) {
                do { before = try clocks() } catch { failure = error }
            }
            .map {
                Outcome(
                    latenciesNs: $0.latenciesNs, statusFailures: $0.statusFailures,
                    transportFailures: $0.transportFailures, reconnects: $0.reconnects, firstError: $0.firstError)
            }
            if let failure { throw failure }
        }
        let after = try clocks(wall: now())
        let elapsed = Double(after.wall - before.wall) / 1e9
        let benchCPU = Double(after.bench - before.bench)
        let serverCPU = Double(zip(after.servers, before.servers).map { $0 - min($0, $1) }.reduce(0, +))
        let postgresCPU = postgres.map { _ in Double(PostgresProcesses.spent(before.postgres, after.postgres)) }
        let machineBusy = Double(after.machine.busy - min(after.machine.busy, before.machine.busy))
        let machineAll = Double(after.machine.all - min(after.machine.all, before.machine.all))
        let machineSteal = Double(after.machine.steal - min(after.machine.steal, before.machine.steal))
        for child in children { child.stop() }
        for (index, child) in children.enumerated() where child.termination != .exited(0) {
            FileHandle.standardError.write(
                Data(
                    "securepin-bench: instance \(index) ended with \(child.termination.map { "\($0)" } ?? "unknown")\n"
                        .utf8))
        }
        if let error = outcomes.compactMap(\.firstError).first {
            FileHandle.standardError.write(Data("securepin-bench: first transport failure: \(error)\n".utf8))
        }

        // The same database and key file, opened in this process (never listening) once the
        // instances are gone: the server alone, and the audit check.
        var options = ReferenceServer.Options(databasePath: databaseFile, keyFilePath: keyFile)
        if let databaseDSN {
            options.storage = .postgres(
                connectionString: databaseDSN,
                pool: PostgresPool.Configuration(maximumConnections: 4, acquireTimeoutSeconds: 30))
        }
        options.algorithm = algorithm
        let first = try ReferenceServer(options: options)

        // The server alone: the same requests answered by respond(to:) in this thread, no HTTP,
        // one at a time, to show how much of a request's time is the server's own work, and how
        // much of that is CPU (the rest is waiting, mostly for the commit's fsync).
        var directFailures = 0
        let directStart = now()
        let directCPUStart = threadCPU()
        for header in direct {
            let response = first.activationServer.respond(
                to: TransportRequest(path: path, headers: [AuthorizationHeader.name: header], body: body))
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
        for plan in plans {
            failedAttempts += try first.activationServer.activationDetail(plan.id).failedAttempts
            let trail = try first.store.auditTrail(activationId: plan.id)
            auditRows += trail.count
            accepted += trail.filter { $0.outcome == .accepted }.count
        }
        // Every 200, every direct answer, and each V4 device's activation/confirm code.
        let expected = total - non200 - transportFailures + direct.count - directFailures + confirmations
        let perRequest = { (ns: Double) in ns / Double(max(1, total)) / 1000 }
        return Scenario(
            algorithm: algorithm.rawValue, store: backend == nil ? "sqlite" : "postgres", instances: instances,
            loadGenerator: generator,
            clients: clients, requests: total, seconds: elapsed, requestsPerSecond: Double(total) / elapsed,
            p50Milliseconds: percentile(0.50), p99Milliseconds: percentile(0.99),
            maxMilliseconds: Double(latencies.last ?? 0) / 1e6, non200: non200, transportFailures: transportFailures,
            reconnects: outcomes.map(\.reconnects).reduce(0, +), acceptedAuditRows: accepted, auditRows: auditRows,
            expectedAcceptedRows: expected, failedAttempts: failedAttempts,
            auditCheck: accepted == expected && auditRows == accepted && failedAttempts == 0,
            activationsPerSecond: Double(clients) / (Double(max(1, activationNs)) / 1e9),
            serverAloneMicroseconds: directNs / 1000, serverAloneCPUMicroseconds: directCPUNs / 1000,
            storeFetchMicroseconds: fetchNs / 1000, countedAttemptMicroseconds: attemptNs / 1000,
            loadGeneratorCPUMicrosecondsPerRequest: perRequest(benchCPU),
            serverCPUMicrosecondsPerRequest: perRequest(serverCPU),
            postgresCPUMicrosecondsPerRequest: postgresCPU.map(perRequest),
            totalCPUMicrosecondsPerRequest: perRequest(benchCPU + serverCPU + (postgresCPU ?? 0)),
            otherCPUMicrosecondsPerRequest: perRequest(
                max(0, machineBusy - machineSteal - benchCPU - serverCPU - (postgresCPU ?? 0))),
            machineIdle: machineAll > 0 ? 1 - machineBusy / machineAll : 0,
            machineSteal: machineAll > 0 ? machineSteal / machineAll : 0)
    }

    /// The whole machine's CPU time from the first line of `/proc/stat`, in nanoseconds.
    struct MachineCPU {
        /// user, nice, system, irq, softirq and steal.
        var busy: UInt64 = 0
        /// busy, idle and iowait.
        var all: UInt64 = 0
        /// steal alone.
        var steal: UInt64 = 0

        static func now() -> MachineCPU {
            guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
                let line = text.split(separator: "\n").first, line.hasPrefix("cpu ")
            else { return MachineCPU() }
            let ticks = line.split(separator: " ").dropFirst().compactMap { UInt64($0) }
            guard ticks.count >= 8 else { return MachineCPU() }
            let perTick = 1_000_000_000 / UInt64(max(1, sysconf(Int32(_SC_CLK_TCK))))
            let busy = ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + ticks[7]
            return MachineCPU(
                busy: busy * perTick, all: (busy + ticks[3] + ticks[4]) * perTick, steal: ticks[7] * perTick)
        }
    }

    /// The earlier load generator (`--urlsession`): one task per client over the client
    /// transport (URLSession), the same requests.
    static func urlSessionLoad(_ plans: [(HTTPActivationTransport, [String])], body: [UInt8]) async -> [Outcome] {
        await withTaskGroup(of: Outcome.self) { group in
            for (transport, headers) in plans {
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
                            if outcome.firstError == nil { outcome.firstError = "\(error)" }
                        }
                        outcome.latenciesNs.append(now() - sent)
                    }
                    return outcome
                }
            }
            return await group.reduce(into: [Outcome]()) { $0.append($1) }
        }
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
        row("suite") { $0.algorithm }
        row("requests (clients)") { "\($0.requests) (\($0.clients))" }
        row("throughput req/s") { String(format: "%.0f", $0.requestsPerSecond) }
        row("latency p50 ms") { String(format: "%.2f", $0.p50Milliseconds) }
        row("latency p99 ms") { String(format: "%.2f", $0.p99Milliseconds) }
        row("latency max ms") { String(format: "%.2f", $0.maxMilliseconds) }
        row("CPU µs/request: total") { String(format: "%.0f", $0.totalCPUMicrosecondsPerRequest) }
        row("  load generator (bench)") { String(format: "%.0f", $0.loadGeneratorCPUMicrosecondsPerRequest) }
        row("  securepin server(s)") { String(format: "%.0f", $0.serverCPUMicrosecondsPerRequest) }
        row("  PostgreSQL processes") { $0.postgresCPUMicrosecondsPerRequest.map { String(format: "%.0f", $0) } ?? "-" }
        row("  rest of the machine") { String(format: "%.0f", $0.otherCPUMicrosecondsPerRequest) }
        row("machine idle during the run") { String(format: "%.0f%%", $0.machineIdle * 100) }
        row("hypervisor steal (not ours)") { String(format: "%.0f%%", $0.machineSteal * 100) }
        row("non-200 / transport failures") { "\($0.non200) / \($0.transportFailures)" }
        row("reconnects") { "\($0.reconnects)" }
        row("audit: accepted rows") { "\($0.acceptedAuditRows) of \($0.auditRows)" }
        row("failed attempts") { "\($0.failedAttempts)" }
        row("audit check") { $0.auditCheck ? "ok (\($0.expectedAcceptedRows) = 200s)" : "MISMATCH" }
        row("server alone µs/request") { String(format: "%.0f", $0.serverAloneMicroseconds) }
        row("  of which CPU µs") { String(format: "%.0f", $0.serverAloneCPUMicroseconds) }
        row("store fetch µs") { String(format: "%.0f", $0.storeFetchMicroseconds) }
        row("one counted attempt µs") { String(format: "%.0f", $0.countedAttemptMicroseconds) }
        row("activations/s (one at a time)") { String(format: "%.1f", $0.activationsPerSecond) }
        print("")
        // Each suite against LEGACY_P256 on the same store, measured in this run.
        for scenario in scenarios where scenario.algorithm != ProtocolAlgorithm.legacyP256.rawValue {
            guard
                let reference = scenarios.first(where: {
                    $0.algorithm == ProtocolAlgorithm.legacyP256.rawValue && $0.store == scenario.store
                        && $0.instances == scenario.instances
                })
            else { continue }
            let where_ = scenario.store == "sqlite" ? "SQLite" : "PostgreSQL ×\(scenario.instances)"
            print(
                "\(where_): \(scenario.algorithm) / LEGACY_P256 request rate "
                    + String(format: "%.2f", scenario.requestsPerSecond / max(1, reference.requestsPerSecond))
                    + String(format: ", p99 %.2f ms vs %.2f ms", scenario.p99Milliseconds, reference.p99Milliseconds)
                    + String(
                        format: ", activations/s %.2f×",
                        scenario.activationsPerSecond / max(0.001, reference.activationsPerSecond)))
        }
        print(
            "load generator: \(scenarios.first?.loadGenerator ?? "") in the bench process; servers: securepin server processes"
        )
        print("goal: SQLite ≥ 5000 req/s with p99 ≤ 20 ms; PostgreSQL ≥ 3000 req/s across two instances")
        print("goal: EC_P384_ML_L3 signed requests ≥ 0.9× the LEGACY_P256 rate, p99 ≤ 20 ms on SQLite")
    }
}
