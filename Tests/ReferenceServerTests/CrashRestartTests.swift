import Activation
import ActivationHTTP
import Foundation
import PowerAuthProtocol
import ReferenceServer
import SQLiteStore
import SecureCore
import TestSupport
import Testing

@Suite("kill -9 and restart of securepin server")
struct CrashRestartTests {
    @Test("counts and states survive kill -9 of the server process, twice", arguments: StoreBackend.available)
    func killNine(_ backend: StoreBackend) async throws {
        let directory = try temporaryDirectory()
        let store = try TestStore(backend, directory: directory)
        let tokenFile = directory + "/admin.token"
        let token = try AdminToken.random()
        try AdminToken.store(token, to: tokenFile)
        func backOffice(_ child: ReferenceServerProcess) throws -> BackOfficeClient {
            try BackOfficeClient(baseURL: URL(string: child.baseURL)!, token: token)
        }

        let first = try childServer(store: store, tokenFile: tokenFile)
        let configuration = first.configuration
        let device = try Device(
            baseURL: first.baseURL, configurationString: configuration, directory: directory + "/device")
        let prepared = try await backOffice(first).initActivation(userId: "bob")
        let id = try await device.activate(code: prepared.activationCode, pin: "2580")
        try await backOffice(first).commit(id)
        for _ in 1...3 {
            #expect(await failure { try await device.service.validatePassword(try pin("0000")) } == .authentication)
        }
        first.kill9()

        let second = try childServer(store: store, tokenFile: tokenFile)
        #expect(second.configuration == configuration)
        let afterFirstKill = try await backOffice(second).detail(id)
        #expect(afterFirstKill.state == "ACTIVE")
        #expect(afterFirstKill.failedAttempts == 3)
        // The device follows the server to its new port; its stored activation is unchanged.
        let moved = try Device(
            baseURL: second.baseURL, configurationString: second.configuration, directory: directory + "/device")
        try await moved.service.validatePassword(try pin("2580"))
        let counterAfterReset = try await backOffice(second).detail(id)
        #expect(counterAfterReset.failedAttempts == 0)
        for _ in 1...5 {
            #expect(await failure { try await moved.service.validatePassword(try pin("1111")) } == .authentication)
        }
        second.kill9()

        let third = try childServer(store: store, tokenFile: tokenFile)
        let afterSecondKill = try await backOffice(third).detail(id)
        #expect(afterSecondKill.state == "BLOCKED")
        #expect(afterSecondKill.failedAttempts == 5)
        // Wrong codes consume no server counter step. The device spent one step per code, so the
        // right code after three wrong ones matched 3 steps ahead and moved the server to index 4.
        #expect(afterSecondKill.counterIndex == counterAfterReset.counterIndex)
        #expect(counterAfterReset.counterIndex == afterFirstKill.counterIndex + 4)
        try await backOffice(third).unblock(id)
        let last = try Device(
            baseURL: third.baseURL, configurationString: third.configuration, directory: directory + "/device")
        try await last.service.validatePassword(try pin("2580"))
        #expect(third.stop() == .exited(0))
        try? FileManager.default.removeItem(atPath: directory)
    }

    @Test("kill -9 while wrong codes are in flight: the counter and the audit table agree, before and after restart")
    func killNineUnderLoad() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let database = directory + "/server.sqlite"
        let tokenFile = directory + "/admin.token"
        let token = try AdminToken.random()
        try AdminToken.store(token, to: tokenFile)
        let limit = ["--max-failures", "200"]
        let first = try childServer(database: database, tokenFile: tokenFile, extraArguments: limit)
        let office = try BackOfficeClient(baseURL: URL(string: first.baseURL)!, token: token)
        let device = try Device(
            baseURL: first.baseURL, configurationString: first.configuration, directory: directory + "/device")
        let prepared = try await office.initActivation(userId: "dave")
        let id = try await device.activate(code: prepared.activationCode, pin: "2580")
        try await office.commit(id)
        let body = try WireCoding.encode(RequestEnvelope(requestObject: ValidateSignatureRequest(reason: "LOAD")))
        var headers: [String] = []
        for _ in 0..<160 {
            headers.append(
                try await device.service.signRequest(
                    method: "POST", uriIdentifier: "/pa/signature/validate", body: body,
                    authentication: .possessionWithPassword(try pin("0000"))
                ).value)
        }
        let signed = headers
        let reader = try SQLiteDatabase(path: database)
        // Each lane counts the failures the server acknowledged (401) before it died: the group
        // commit answers none before its batch is durable, so none of them may be lost.
        let load = Task {
            await withTaskGroup(of: Int.self) { group in
                for lane in 0..<8 {
                    let transport = try? HTTPActivationTransport(configuration: device.configuration)
                    let mine = stride(from: lane, to: signed.count, by: 8).map { signed[$0] }
                    group.addTask {
                        var acknowledged = 0
                        for header in mine {
                            let response = try? await transport?.send(
                                TransportRequest(
                                    path: ActivationAPI.validateSignature.path,
                                    headers: [AuthorizationHeader.name: header], body: body), timeout: .seconds(30))
                            if response?.statusCode == 401 { acknowledged += 1 }
                        }
                        return acknowledged
                    }
                }
                return await group.reduce(0, +)
            }
        }
        // Kill once some attempts are committed (bounded wait: at most 2,000 polls).
        var seen: Int64 = 0
        for _ in 0..<2_000 where seen < 10 {
            seen = try reader.query("SELECT count(*) FROM attempt_audit").first?[0].int64 ?? 0
            try await Task.sleep(for: .milliseconds(5))
        }
        first.kill9()
        let acknowledged = await load.value
        #expect(seen >= 10)

        #expect(try reader.integrityCheck() == ["ok"])
        let failures = try #require(
            try reader.query("SELECT failed_attempts FROM activation WHERE id = ?", [.text(id)]).first?[0].int64)
        let audited = try #require(
            try reader.query(
                "SELECT count(*) FROM attempt_audit WHERE activation_id = ? AND outcome IN ('failure', 'failure-blocked')",
                [.text(id)]
            ).first?[0].int64)
        #expect(failures == audited)
        #expect(failures >= 10 && failures <= 160)
        #expect(Int64(acknowledged) <= failures)

        let second = try childServer(database: database, tokenFile: tokenFile, extraArguments: limit)
        let detail = try await BackOfficeClient(baseURL: URL(string: second.baseURL)!, token: token).detail(id)
        #expect(Int64(detail.failedAttempts) == failures)
        #expect(detail.state == "ACTIVE")
        #expect(second.stop() == .exited(0))
    }
}
