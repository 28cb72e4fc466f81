import Activation
import ActivationHTTP
import Foundation
import PowerAuthProtocol
import ReferenceServer
import SecureCore
import Spawn
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The shell command that restarts the multi-instance tests' cluster (an immediate stop, as a
/// crash, then a start); set by `Tests/postgres/multi-instance.sh`.
let postgresRestartVariable = "SECUREPIN_TEST_POSTGRES_RESTART"

/// Three `securepin server` processes on one PostgreSQL database, wrong codes for one
/// activation spread over all three. Run by `Tests/postgres/multi-instance.sh` (part of
/// `make test`), which starts a cluster of its own and names the command that restarts it;
/// elsewhere the suite is skipped with that reason.
@Suite(
    "Three securepin server instances on one PostgreSQL database", .serialized,
    .enabled(
        if: ProcessInfo.processInfo.environment[postgresRestartVariable] != nil,
        "needs Tests/postgres/multi-instance.sh: its own cluster, which one test restarts"))
struct MultiInstanceTests {
    /// Three instances on one fresh database, the key file and admin token shared.
    struct Cluster {
        let store: TestStore
        let token: SecureBytes
        let instances: [ReferenceServerProcess]
        let reader: PostgresActivationStore

        init(maxFailures: Int) throws {
            let directory = try temporaryDirectory()
            let store = try TestStore(.postgres, directory: directory)
            self.store = store
            token = try AdminToken.random()
            let tokenFile = directory + "/admin.token"
            try AdminToken.store(token, to: tokenFile)
            let limit = ["--max-failures", String(maxFailures)]
            instances = try (0..<3).map { _ in
                try childServer(store: store, tokenFile: tokenFile, extraArguments: limit)
            }
            reader = try PostgresActivationStore(
                connectionString: try #require(store.connectionString),
                storageKey: try ServerKeyFile.loadOrCreate(at: directory + "/server.sqlite.key"))
        }

        func office(_ index: Int) throws -> BackOfficeClient {
            try BackOfficeClient(baseURL: URL(string: instances[index].baseURL)!, token: token)
        }

        /// A transport to instance `index` with the device's configuration.
        func transport(_ index: Int) throws -> HTTPActivationTransport {
            try HTTPActivationTransport(
                configuration: try ActivationConfiguration(
                    instanceId: "com.example.multi", baseEndpointURL: instances[index].baseURL,
                    configuration: instances[index].configuration, algorithm: "LEGACY_P256",
                    clientConfiguration: ActivationClientConfiguration(requestTimeout: .seconds(30)),
                    knowledgeKeyParameters: .testing))
        }

        /// An activation created on instance 0, activated through instance 1, committed on
        /// instance 2, and `count` wrong-PIN headers for it.
        func activationWithWrongCodes(_ count: Int) async throws -> (id: String, headers: [String]) {
            let device = try Device(
                baseURL: instances[1].baseURL, configurationString: instances[1].configuration,
                directory: store.directory + "/device")
            let prepared = try await office(0).initActivation(userId: "multi")
            let id = try await device.activate(code: prepared.activationCode, pin: "2580")
            try await office(2).commit(id)
            var headers: [String] = []
            for _ in 0..<count {
                headers.append(
                    try await device.service.signRequest(
                        method: "POST", uriIdentifier: "/pa/signature/validate", body: MultiInstanceTests.body,
                        authentication: .possessionWithPassword(try pin("0000"))
                    ).value)
            }
            return (id, headers)
        }

        /// The counted failures in the audit table.
        func countedFailures(_ id: String) throws -> Int {
            try reader.auditTrail(activationId: id).filter { $0.outcome == .failure || $0.outcome == .failureBlocked }
                .count
        }

        func stop() {
            for instance in instances { instance.kill9() }
            try? FileManager.default.removeItem(atPath: store.directory)
        }
    }

    /// What one request got: an HTTP status, or a network error (`nil` status, and its description).
    struct Outcome: Sendable {
        let instance: Int
        let status: Int?
        var error: String? = nil
    }

    static let body =
        (try? WireCoding.encode(RequestEnvelope(requestObject: ValidateSignatureRequest(reason: "MULTI"))))
        ?? []

    /// Sends every header, `lanes` at a time, header `i` to instance `i % 3`.
    static func send(_ headers: [String], lanes: Int, transports: [HTTPActivationTransport]) async -> [Outcome] {
        await withTaskGroup(of: [Outcome].self) { group in
            for lane in 0..<lanes {
                let mine = stride(from: lane, to: headers.count, by: lanes).map { ($0 % 3, headers[$0]) }
                group.addTask {
                    var outcomes: [Outcome] = []
                    for (instance, header) in mine {
                        outcomes.append(await sendOne(header, to: instance, transports: transports))
                    }
                    return outcomes
                }
            }
            return await group.reduce(into: [Outcome]()) { $0 += $1 }
        }
    }

    /// Sends one signed request to one instance.
    static func sendOne(_ header: String, to instance: Int, transports: [HTTPActivationTransport]) async -> Outcome {
        do {
            let status = try await transports[instance].send(
                TransportRequest(
                    path: ActivationAPI.validateSignature.path,
                    headers: [AuthorizationHeader.name: header], body: body), timeout: .seconds(30)
            ).statusCode
            return Outcome(instance: instance, status: status)
        } catch {
            return Outcome(instance: instance, status: nil, error: "\(error)")
        }
    }

    /// Runs a shell command, its descriptors on `/dev/null`, and waits for it (`ChildProcess`: the
    /// restarted server outlives the command, which `Process.waitUntilExit` did not always return from).
    /// - Returns: how it ended, or `nil` if it could not be started or waited for.
    static func runShell(_ command: String) -> ChildProcess.Termination? {
        try? ChildProcess.run(
            "/bin/sh", ["-c", command], standardInput: .nullDevice, standardOutput: .nullDevice,
            standardError: .nullDevice
        ).termination
    }

    /// Waits (a bounded number of polls) until at least `count` failures are counted.
    static func waitForCounted(_ count: Int, _ id: String, cluster: Cluster) async throws -> Int {
        var seen = 0
        for _ in 0..<4_000 where seen < count {
            seen = (try? cluster.countedFailures(id)) ?? seen
            try await Task.sleep(for: .milliseconds(5))
        }
        return seen
    }

    @Test("64 clients over three instances: blocked at exactly the maximum, audit rows equal to the count")
    func sixtyFourClientsThreeInstances() async throws {
        let cluster = try Cluster(maxFailures: 5)
        defer { cluster.stop() }
        #expect(Set(cluster.instances.map(\.configuration)).count == 1)
        let (id, headers) = try await cluster.activationWithWrongCodes(64)
        let transports = try (0..<3).map { try cluster.transport($0) }
        let outcomes = await Self.send(headers, lanes: 64, transports: transports)
        #expect(outcomes.count == 64)
        #expect(outcomes.allSatisfy { $0.status == 401 })
        for index in 0..<3 {
            let detail = try await cluster.office(index).detail(id)
            #expect(detail.state == "BLOCKED")
            #expect(detail.failedAttempts == 5)
        }
        let trail = try cluster.reader.auditTrail(activationId: id)
        #expect(trail.filter { $0.outcome == .failure }.count == 4)
        #expect(trail.filter { $0.outcome == .failureBlocked }.count == 1)
        #expect(trail.filter { $0.outcome == .accepted }.isEmpty)
        #expect(trail.count <= 64)
    }

    @Test("kill -9 of one instance mid-load: the others keep serving, no count lost or doubled")
    func killOneInstance() async throws {
        let cluster = try Cluster(maxFailures: 200)
        defer { cluster.stop() }
        let (id, headers) = try await cluster.activationWithWrongCodes(150)
        let transports = try (0..<3).map { try cluster.transport($0) }
        let load = Task { await Self.send(headers, lanes: 9, transports: transports) }
        let seen = try await Self.waitForCounted(10, id, cluster: cluster)
        cluster.instances[0].kill9()
        let outcomes = await load.value
        #expect(seen >= 10)
        // The survivors answered every request sent to them; the killed one answered or failed.
        #expect(outcomes.filter { $0.instance != 0 }.allSatisfy { $0.status == 401 })
        #expect(outcomes.allSatisfy { $0.status == nil || $0.status == 401 })
        let acknowledged = outcomes.filter { $0.status == 401 }.count
        let unanswered = outcomes.filter { $0.status == nil }.count
        let failures = try await cluster.office(1).detail(id).failedAttempts
        #expect(try cluster.countedFailures(id) == failures)
        #expect(failures >= acknowledged)
        #expect(failures <= acknowledged + unanswered)
        #expect(try await cluster.office(2).detail(id).state == "ACTIVE")
    }

    @Test("PostgreSQL restarted mid-load: network errors or 503, never a wrong answer; counts exact afterwards")
    func databaseRestart() async throws {
        let restart = try #require(ProcessInfo.processInfo.environment[postgresRestartVariable])
        let cluster = try Cluster(maxFailures: 200)
        defer { cluster.stop() }
        let (id, headers) = try await cluster.activationWithWrongCodes(159)
        let transports = try (0..<3).map { try cluster.transport($0) }
        let first = Array(headers.prefix(150))
        let load = Task { await Self.send(first, lanes: 9, transports: transports) }
        let seen = try await Self.waitForCounted(10, id, cluster: cluster)
        #expect(Self.runShell(restart) == .exited(0))
        let outcomes = await load.value
        #expect(seen >= 10)
        #expect(outcomes.allSatisfy { $0.status == nil || $0.status == 401 || $0.status == 503 })
        let acknowledged = outcomes.filter { $0.status == 401 }.count
        let unsure = outcomes.filter { $0.status != 401 }.count
        // Every instance reconnects: one more wrong code through each is counted. A keep-alive
        // connection the outage left behind may still fail once on the client's side (a network
        // error, never a wrong answer): that request is unsure, and the next wrong code is tried,
        // at most three per instance.
        var spare = Array(headers.suffix(9)).makeIterator()
        var tailUnsure = 0
        var tailErrors: [String] = []
        for instance in 0..<3 {
            var answered: Int?
            for _ in 0..<3 where answered == nil {
                guard let header = spare.next() else { break }
                let outcome = await Self.sendOne(header, to: instance, transports: transports)
                #expect(outcome.status == nil || outcome.status == 401 || outcome.status == 503)
                if outcome.status == 401 {
                    answered = 401
                } else {
                    tailUnsure += 1
                    tailErrors.append(
                        "instance \(instance): \(outcome.status.map { "HTTP \($0)" } ?? outcome.error ?? "?")")
                }
            }
            #expect(answered == 401, "instance \(instance) after the restart: \(tailErrors)")
        }
        if !tailErrors.isEmpty { print("after the restart, before each instance answered 401: \(tailErrors)") }
        let failures = try await cluster.office(0).detail(id).failedAttempts
        #expect(try cluster.countedFailures(id) == failures)
        #expect(failures >= acknowledged + 3)
        #expect(failures <= acknowledged + unsure + 3 + tailUnsure)
    }
}
