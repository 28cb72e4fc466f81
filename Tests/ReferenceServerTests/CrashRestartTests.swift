import Activation
import Foundation
import ReferenceServer
import SecureCore
import Testing

@Suite("kill -9 and restart of securepin server")
struct CrashRestartTests {
    @Test("counts and states survive kill -9 of the server process, twice")
    func killNine() async throws {
        let directory = try temporaryDirectory()
        let database = directory + "/server.sqlite"
        let tokenFile = directory + "/admin.token"
        let token = try AdminToken.random()
        try AdminToken.store(token, to: tokenFile)
        func backOffice(_ child: ChildServer) throws -> BackOfficeClient {
            try BackOfficeClient(baseURL: URL(string: child.baseURL)!, token: token)
        }

        let first = try ChildServer(database: database, tokenFile: tokenFile)
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

        let second = try ChildServer(database: database, tokenFile: tokenFile)
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

        let third = try ChildServer(database: database, tokenFile: tokenFile)
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
        #expect(third.terminate() == 0)
        try? FileManager.default.removeItem(atPath: directory)
    }
}
