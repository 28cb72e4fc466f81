import Activation
import ActivationHTTP
import Dispatch
import Foundation
import PinVault
import PowerAuthProtocol
import ReferenceServer
import SecureCore
import Synchronization

/// `securepin-bench server`: authenticated requests per second and latency of
/// the reference server (HTTP, SQLite) on loopback, with the load generator —
/// `clients` concurrent async clients over the real client transport — in the
/// same process, so both share this machine's cores.
///
/// Each client is its own activated device; before the clock starts it
/// computes `requests` signed `signature/validate` requests (possession and
/// knowledge, in counter order), so the figure is the server's and the HTTP
/// path's, not the client's key derivation. Every request must answer 200:
/// the failure counts (non-200, transport errors, and failed attempts and
/// audit rows on the server) are reported exactly.
enum ServerBench {
    struct Outcome: Sendable {
        var latenciesNs: [UInt64] = []
        var statusFailures = 0
        var transportFailures = 0
    }

    static func run(clients: Int, requests: Int) throws {
        let semaphore = DispatchSemaphore(value: 0)
        let result = Mutex<Result<Void, any Error>?>(nil)
        Task {
            do {
                try await measure(clients: clients, requests: requests)
                result.withLock { $0 = .success(()) }
            } catch {
                result.withLock { $0 = .failure(error) }
            }
            semaphore.signal()
        }
        semaphore.wait()
        try result.withLock { $0 }?.get()
    }

    static func measure(clients: Int, requests: Int) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "securepin-bench-server-\(getpid())"
        )
        .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try ReferenceServer(
            options: ReferenceServer.Options(
                databasePath: directory + "/server.sqlite", http: .init(maximumConnections: max(128, clients * 2))))
        try server.start()
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port ?? 0)"
        let configuration = try ActivationConfiguration(
            instanceId: "bench", baseEndpointURL: base, configuration: try server.configurationString(),
            algorithm: "LEGACY_P256",
            knowledgeKeyParameters: .testing)
        let body = try WireCoding.encode(RequestEnvelope(requestObject: ValidateSignatureRequest(reason: "BENCH")))

        print("server suite: \(clients) concurrent clients × \(requests) signed requests, loopback, same process")
        print("preparing: activating \(clients) devices and signing \(clients * requests) requests (not timed)…")
        var plans: [(HTTPActivationTransport, [String], String)] = []
        var direct: [String] = []
        for c in 0..<clients {
            let storage = try FileActivationStorage(directory: directory + "/device-\(c)")
            let transport = try HTTPActivationTransport(configuration: configuration)
            let service = try ActivationService(configuration: configuration, storage: storage, transport: transport)
            let prepared = try server.activationServer.initActivation(userId: "user-\(c)")
            let p = try MutablePassword()
            for s in "1234".unicodeScalars { try p.addCharacter(s) }
            let password = try p.copyToImmutable()
            p.destroy()
            _ = try await service.createActivation(
                activationCode: prepared.activationCode, name: "bench \(c)", password: password)
            try server.activationServer.commitActivation(prepared.activationId)
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
        // one at a time, to show how much of a request's time is the server's own work.
        var directFailures = 0
        let directStart = now()
        for header in direct {
            let response = server.activationServer.respond(
                to: TransportRequest(
                    path: ActivationAPI.validateSignature.path, headers: [AuthorizationHeader.name: header], body: body)
            )
            if response.statusCode != 200 { directFailures += 1 }
        }
        let directNs = Double(now() - directStart) / Double(max(1, direct.count))
        // Two parts of it: reading a record (SQL and opening its sealed key into secure memory),
        // and one counted attempt (a BEGIN IMMEDIATE transaction with its audit row, fsync'd).
        // A separate activation (state CREATED: its attempts are recorded as refused, nothing counts).
        let probe = try server.activationServer.initActivation(userId: "probe").activationId
        let fetchStart = now()
        for _ in 0..<requests { _ = try server.store.fetch(activationId: probe) }
        let fetchNs = Double(now() - fetchStart) / Double(requests)
        let attemptStart = now()
        for _ in 0..<requests {
            _ = try server.store.recordAttempt(
                activationId: probe, outcome: .rejected, now: Date(), failureBlockDuration: nil)
        }
        let attemptNs = Double(now() - attemptStart) / Double(requests)

        let start = now()
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

        var latencies = outcomes.flatMap(\.latenciesNs)
        latencies.sort()
        func percentile(_ p: Double) -> Double {
            Double(latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]) / 1e6
        }
        let total = latencies.count
        var serverFailures = 0
        var accepted = 0
        var auditRows = 0
        for (_, _, id) in plans {
            serverFailures += try server.activationServer.activationDetail(id).failedAttempts
            let trail = try server.store.auditTrail(activationId: id)
            auditRows += trail.count
            accepted += trail.filter { $0.outcome == .accepted }.count
        }
        let rate = Double(total) / elapsed
        let p50 = percentile(0.50)
        let p99 = percentile(0.99)
        print(String(format: "requests            %d in %.2f s", total, elapsed))
        print(
            String(format: "throughput          %.0f req/s   (goal ≥ 5000)%@", rate, rate >= 5000 ? "" : "  below goal")
        )
        print(String(format: "latency p50         %.2f ms", p50))
        print(String(format: "latency p99         %.2f ms   (goal ≤ 20)%@", p99, p99 <= 20 ? "" : "  above goal"))
        print(String(format: "latency max         %.2f ms", Double(latencies.last ?? 0) / 1e6))
        print(
            String(
                format: "server alone        %.0f µs per request, one at a time without HTTP (%d requests, %d not 200)",
                directNs / 1000, direct.count, directFailures))
        print(
            String(
                format: "  of which           store fetch %.0f µs, one counted attempt %.0f µs", fetchNs / 1000,
                attemptNs / 1000))
        print("non-200 answers     \(outcomes.map(\.statusFailures).reduce(0, +))")
        print("transport failures  \(outcomes.map(\.transportFailures).reduce(0, +))")
        print(
            "server: accepted attempts in the audit table \(accepted) of \(auditRows) rows, failed attempts \(serverFailures)"
        )
    }
}
