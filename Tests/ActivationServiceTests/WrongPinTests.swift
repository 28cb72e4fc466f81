import Activation
import ActivationServer
import ActivationTestSupport
import Foundation
import PinStrength
import PowerAuthProtocol
import SecureCore
import Testing

@Suite("Wrong PIN, blocking and the PIN change")
struct WrongPinTests {
    @Test("four wrong PINs then the right one: the count resets", arguments: ProtocolAlgorithm.allCases)
    func wrongFourThenRight(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        let id = try await h.activate(service)
        let flows = ActivationFlows(service: service, clock: h.clock)
        for attempt in 1...4 {
            let wrong = try pin("9999")
            let authentication = ActivationAuthentication.possessionWithPassword(wrong)
            await #expect(throws: ActivationError.authentication) {
                try await service.removeActivation(authentication: authentication)
            }
            #expect(authentication.isRejected)
            let outcome = await flows.handleAuthenticationFailure(password: wrong, authentication: authentication)
            #expect(outcome == .wrongPassword(remainingAttempts: 5 - attempt, maximumAttempts: 5))
            #expect(wrong.length == 0)
        }
        #expect(try h.server.activationDetail(id).failedAttempts == 4)
        try await service.validatePassword(try pin("1234"))
        let status = try await service.fetchActivationStatus()
        #expect(status.failCount == 0)
        #expect(status.remainingAttempts == 5)
    }

    @Test("credentials rejected once are never sent again", arguments: ProtocolAlgorithm.allCases)
    func noSecondRequestAfter401(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        let id = try await h.activate(service)
        let authentication = ActivationAuthentication.possessionWithPassword(try pin("0000"))
        await #expect(throws: ActivationError.authentication) {
            try await service.removeActivation(authentication: authentication)
        }
        let sentBefore = h.transport.sent.count
        await #expect(throws: ActivationError.credentialsRejected) {
            try await service.removeActivation(authentication: authentication)
        }
        await #expect(throws: ActivationError.credentialsRejected) {
            try await h.sign(service, method: "POST", uriIdentifier: "/x", body: [], authentication: authentication)
        }
        #expect(h.transport.sent.count == sentBefore)
        #expect(try h.server.activationDetail(id).failedAttempts == 1)
    }

    @Test("five wrong PINs block the activation; the router says blocked", arguments: ProtocolAlgorithm.allCases)
    func wrongFiveBlocks(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        let id = try await h.activate(service)
        for _ in 1...5 {
            let wrong = try pin("1111")
            await #expect(throws: ActivationError.authentication) { try await service.validatePassword(wrong) }
        }
        let status = try await service.fetchActivationStatus()
        #expect(status.state == .blocked)
        #expect(status.failCount == 5)
        #expect(status.remainingAttempts == 0)
        #expect(status.blockExpirationTime == nil)
        let flows = ActivationFlows(service: service, clock: h.clock)
        #expect(await flows.refresh(trigger: .authenticationFailure) == .blocked(until: nil))
        #expect(await flows.handleAuthenticationFailure(password: nil, authentication: nil) == .blocked(until: nil))
        // Blocked: even the right PIN is refused, and the activation stays on the device.
        let right = try pin("1234")
        await #expect(throws: ActivationError.authentication) { try await service.validatePassword(right) }
        #expect(await service.hasValidActivation())
        try h.server.unblockActivation(id)
        try await service.validatePassword(right)
    }

    @Test("a temporary block expires with the server's clock", arguments: ProtocolAlgorithm.allCases)
    func temporaryBlockExpires(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm, failureBlockDuration: 300)
        let service = try h.makeService()
        try await h.activate(service)
        for _ in 1...5 {
            let wrong = try pin("4321")
            await #expect(throws: ActivationError.authentication) { try await service.validatePassword(wrong) }
        }
        let expected = Date(timeIntervalSince1970: (h.clock.now().timeIntervalSince1970 + 300).rounded(.down))
        let blocked = try await service.fetchActivationStatus()
        #expect(blocked.state == .blocked)
        #expect(blocked.blockExpirationTime == expected)
        let flows = ActivationFlows(service: service, clock: h.clock)
        #expect(await flows.refresh(trigger: .returnToForeground) == .blocked(until: expected))
        h.clock.advance(seconds: 299)
        #expect(try await service.fetchActivationStatus().state == .blocked)
        h.clock.advance(seconds: 1)
        let active = try await service.fetchActivationStatus()
        #expect(active.state == .active)
        #expect(active.failCount == 0)
        try await service.validatePassword(try pin("1234"))
    }

    @Test("an administrator's temporary block shows its end and lifts on time", arguments: ProtocolAlgorithm.allCases)
    func administratorTemporaryBlock(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        let id = try await h.activate(service)
        let until = h.clock.now().addingTimeInterval(3600)
        try h.server.blockActivation(id, until: until)
        #expect(try await service.fetchActivationStatus().blockExpirationTime == until)
        h.clock.advance(seconds: 3600)
        #expect(try await service.fetchActivationStatus().state == .active)
    }

    @Test(
        "counter skew beyond the look-ahead is a deadlock; the router removes locally",
        arguments: ProtocolAlgorithm.allCases)
    func deadlock(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        let id = try await h.activate(service)
        // Codes computed and never sent: within the window the status stays active.
        for _ in 0..<19 {
            _ = try await h.sign(service, method: "GET", uriIdentifier: "/x", body: [], authentication: .possession())
        }
        #expect(try await service.fetchActivationStatus().state == .active)
        // One more makes the next code fall outside the server's window.
        _ = try await h.sign(service, method: "GET", uriIdentifier: "/x", body: [], authentication: .possession())
        let status = try await service.fetchActivationStatus()
        #expect(status.state == .deadlock)
        #expect(status.remainingAttempts == 0)
        // The server agrees: the next code is refused.
        let header = try await h.sign(
            service, method: "GET", uriIdentifier: "/x", body: [], authentication: .possession())
        #expect(throws: ActivationServerError.authenticationFailed) {
            try h.verify(header: header, method: "GET", uriIdentifier: "/x", body: [])
        }
        let flows = ActivationFlows(service: service, clock: h.clock)
        #expect(await flows.route(for: status) == .reEnroll(.deadlock))
        #expect(await service.hasValidActivation() == false)
        #expect(try h.server.activationDetail(id).state == .active)
    }

    @Test("a device behind the server catches up from the status", arguments: ProtocolAlgorithm.allCases)
    func serverAheadCatchesUp(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        try await h.activate(service)
        let copy = try h.makeService()  // the same activation, opened before the next requests
        for _ in 0..<3 { try await service.validatePassword(try pin("1234")) }
        #expect(try await copy.fetchActivationStatus().state == .active)
        try await copy.validatePassword(try pin("1234"))
    }

    @Test(
        "PIN change with a wrong current PIN counts a failure and changes nothing",
        arguments: ProtocolAlgorithm.allCases)
    func pinChangeWrongCurrent(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        let id = try await h.activate(service)
        let stateBefore = try h.storage.read(h.configuration.storageNames.state)
        await #expect(throws: ActivationError.authentication) {
            _ = try await service.beginPasswordChange(currentPassword: try mutablePin("7777"))
        }
        #expect(try h.server.activationDetail(id).failedAttempts == 1)
        let stateAfter = try h.storage.read(h.configuration.storageNames.state)
        #expect(
            try LocalStateView(stateBefore).knowledgeKey == LocalStateView(stateAfter).knowledgeKey)
        try await service.validatePassword(try pin("1234"))
    }

    @Test("PIN change: the new PIN works, the old one stops working", arguments: ProtocolAlgorithm.allCases)
    func pinChangeHappyPath(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        try await h.activate(service)
        let data = try await service.beginPasswordChange(currentPassword: try mutablePin("1234"))
        #expect("\(data)" == "PasswordChangeData(redacted)")
        try await service.finishPasswordChange(newPassword: try pin("86420"), data: data)
        try await service.validatePassword(try pin("86420"))
        let old = try pin("1234")
        await #expect(throws: ActivationError.authentication) { try await service.validatePassword(old) }
        // The change is on disk.
        let reopened = try h.makeService()
        try await reopened.validatePassword(try pin("86420"))
        // The data is spent.
        let again = try pin("5555")
        await #expect(throws: ActivationError.invalidActivationState(reason: "the change data was cleared")) {
            try await service.finishPasswordChange(newPassword: again, data: data)
        }
    }

    @Test(
        "PIN change with the strength check: a rejected new PIN sends nothing; a weak one under warn goes on",
        arguments: ProtocolAlgorithm.allCases)
    func pinChangeStrength(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        let id = try await h.activate(service)
        // Rejected before anything is sent: even a wrong current PIN is not counted.
        await #expect {
            _ = try await service.beginPasswordChange(
                currentPassword: try mutablePin("7777"), newPassword: try pin("1111"),
                strength: PinWarningPolicy(action: .reject))
        } throws: { error in
            guard case ActivationError.weakPassword(let weaknesses) = error else { return false }
            return weaknesses.contains("frequently-used")
        }
        #expect(try h.server.activationDetail(id).failedAttempts == 0)
        // A strong one passes the same policy.
        let strong = try await service.beginPasswordChange(
            currentPassword: try mutablePin("1234"), newPassword: try pin("86420"),
            strength: PinWarningPolicy(action: .reject))
        #expect(strong.strength == .acceptable)
        strong.data.secureClear()
        // Under warn, a weak PIN is reported and the change goes on.
        let (data, found) = try await service.beginPasswordChange(
            currentPassword: try mutablePin("1234"), newPassword: try pin("1111"))
        guard case .weak(let names) = found else {
            Issue.record("a weak PIN was not reported: \(found)")
            return
        }
        #expect(names.contains("frequently-used"))
        try await service.finishPasswordChange(newPassword: try pin("1111"), data: data)
        try await service.validatePassword(try pin("1111"))
    }

    @Test(
        "PIN change: cleared data cannot finish, and a failed write changes nothing",
        arguments: ProtocolAlgorithm.allCases)
    func pinChangeClearedAndFailedWrite(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        try await h.activate(service)
        let cleared = try await service.beginPasswordChange(currentPassword: try mutablePin("1234"))
        cleared.secureClear()
        let newPin = try pin("2468")
        await #expect(throws: ActivationError.invalidActivationState(reason: "the change data was cleared")) {
            try await service.finishPasswordChange(newPassword: newPin, data: cleared)
        }
        let data = try await service.beginPasswordChange(currentPassword: try mutablePin("1234"))
        h.storage.setFailing(true)
        await #expect(throws: ActivationError.storage(operation: "write", errno: 28)) {
            try await service.finishPasswordChange(newPassword: newPin, data: data)
        }
        h.storage.setFailing(false)
        try await service.validatePassword(try pin("1234"))
        try await h.makeService().validatePassword(try pin("1234"))
    }
}

/// Reads the wrapped knowledge key out of the public state file.
/// The wrapped knowledge key of a stored activation, whichever generation wrote it (V3.3 keeps one
/// wrapped key, V4 its two halves).
struct LocalStateView: Decodable {
    let knowledgeKey: [WrappedKnowledgeKey]

    enum CodingKeys: String, CodingKey { case knowledgeKey }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let halves = try? container.decode([WrappedKnowledgeKey].self, forKey: .knowledgeKey) {
            knowledgeKey = halves
        } else {
            knowledgeKey = [try container.decode(WrappedKnowledgeKey.self, forKey: .knowledgeKey)]
        }
    }

    init(_ bytes: [UInt8]?) throws {
        self = try JSONDecoder().decode(LocalStateView.self, from: Data(try #require(bytes)))
    }
}

extension Harness {
    /// Signs an application request (on the activation's own generation) and returns the header value.
    func sign(
        _ service: ActivationService, method: String, uriIdentifier: String, body: [UInt8],
        authentication: ActivationAuthentication
    ) async throws(ActivationError) -> String {
        return try await service.signRequest(
            method: method, uriIdentifier: uriIdentifier, body: body, authentication: authentication
        ).value
    }

    /// The server's check of such a header (the header names its generation).
    func verify(header: String, method: String, uriIdentifier: String, body: [UInt8]) throws(ActivationServerError) {
        _ = try server.verifyAuthorization(header: header, method: method, uriIdentifier: uriIdentifier, body: body)
    }
}
