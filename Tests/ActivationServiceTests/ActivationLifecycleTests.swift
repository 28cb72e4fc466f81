import Activation
import ActivationTestSupport
import Foundation
import PinVault
import PowerAuthProtocol
import SecureCore
import Synchronization
import Testing

@testable import ActivationServer

@Suite("Activation lifecycle against the in-process server")
struct ActivationLifecycleTests {
    @Test("create, pending commit with a fingerprint, commit, active")
    func activationAndCommit() async throws {
        let h = try Harness()
        let service = try h.makeService()
        #expect(await service.hasValidActivation() == false)
        let id = try await h.activate(service, commit: false)
        #expect(await service.hasValidActivation())
        #expect(await service.activationIdentifier() == id)
        let fingerprint = try await service.activationFingerprint()
        #expect(fingerprint.count == 8 && fingerprint.allSatisfy(\.isNumber))

        let pending = try await service.fetchActivationStatus()
        #expect(pending.state == .pendingCommit)
        #expect(pending.remainingAttempts == 0)
        let flows = ActivationFlows(service: service, clock: h.clock)
        #expect(await flows.refresh(trigger: .applicationStart) == .pendingCommit(fingerprint: fingerprint))

        try h.server.commitActivation(id)
        let active = try await service.fetchActivationStatus()
        #expect(active.state == .active)
        #expect(active.failCount == 0)
        #expect(active.maxFailCount == 5)
        #expect(active.remainingAttempts == 5)
        #expect(active.blockExpirationTime == nil)
        #expect(await flows.refresh(trigger: .returnToForeground) == .dashboard)

        // The same activation opens from disk in a new service.
        let reopened = try h.makeService()
        #expect(await reopened.activationIdentifier() == id)
        #expect(try await reopened.activationFingerprint() == fingerprint)
        try await reopened.validatePassword(try pin("1234"))
    }

    @Test("the wire carries PowerAuth's envelopes and no PIN")
    func wireFormat() async throws {
        let h = try Harness()
        let service = try h.makeService()
        try await h.activate(service, pin: "2580")
        try await service.validatePassword(try pin("2580"))
        let requests = h.transport.sent
        #expect(
            requests.map(\.path) == [
                "/pa/v3/keystore/create", "/pa/v3/activation/create", "/pa/v3/signature/validate",
            ])
        for request in requests {
            let text = String(decoding: request.body, as: UTF8.self)
            #expect(!text.contains("2580"))
            #expect(request.header("content-type") == "application/json")
            #expect(request.header("accept") == "application/json")
            #expect(request.header("User-Agent") == ActivationClientConfiguration.defaultUserAgent)
        }
        // Plain requests are wrapped; the encrypted one is the bare cryptogram.
        #expect(String(decoding: requests[0].body, as: UTF8.self).hasPrefix("{\"requestObject\":{"))
        #expect(
            String(decoding: requests[2].body, as: UTF8.self) == #"{"requestObject":{"reason":"VALIDATE_PASSWORD"}}"#)
        #expect((try? WireCoding.decode(EncryptedRequestBody.self, requests[1].body)) != nil)
        #expect(requests[1].header(AuthorizationHeader.name) == nil)
        let header = try #require(requests[2].header(AuthorizationHeader.name))
        let parsed = try AuthorizationHeader.parse(header)
        #expect(parsed.factorSet == .possessionKnowledge)
        #expect(parsed.version == .v3_3)
        #expect(requests[2].header(EncryptionHeader.name) == nil)
    }

    @Test("a second activation is refused while one exists, and nothing changes")
    func secondActivationRefused() async throws {
        let h = try Harness()
        let service = try h.makeService()
        let id = try await h.activate(service)
        let prepared = try h.server.initActivation(userId: "bob")
        let p = try pin("1111")
        await #expect(throws: ActivationError.invalidActivationState(reason: "an activation already exists")) {
            try await service.createActivation(activationCode: prepared.activationCode, name: "x", password: p)
        }
        #expect(await service.activationIdentifier() == id)
    }

    @Test("an empty PIN is the protocol's emptyPIN, before anything is sent")
    func emptyPINRefused() async throws {
        let h = try Harness()
        let service = try h.makeService()
        let prepared = try h.server.initActivation(userId: "carol")
        let empty = try pin("")
        await #expect(throws: ActivationError.protocolError(.emptyPIN)) {
            try await service.createActivation(activationCode: prepared.activationCode, name: "x", password: empty)
        }
        #expect(h.transport.sent.isEmpty)
        #expect(await !service.hasValidActivation())
    }

    @Test("an unknown or used activation code is a server error and stores nothing")
    func badActivationCode() async throws {
        let h = try Harness()
        let service = try h.makeService()
        let p = try pin("1234")
        await #expect(throws: ActivationError.server(statusCode: 400, code: "ERR_ACTIVATION")) {
            try await service.createActivation(activationCode: "AAAAA-AAAAA-AAAAA-AAAAA", name: "x", password: p)
        }
        #expect(await service.hasValidActivation() == false)
        #expect(try h.storage.read(h.configuration.storageNames.state) == nil)
        #expect(try h.storage.readSecret(h.configuration.storageNames.keys) == nil)
    }

    @Test("a mistyped code is refused on the client, before anything is sent")
    func mistypedCodeRefusedLocally() async throws {
        let h = try Harness()
        let service = try h.makeService()
        let prepared = try h.server.initActivation(userId: "dave")
        let p = try pin("1234")
        var typo = Array(prepared.activationCode)
        typo[0] = typo[0] == "A" ? "B" : "A"
        await #expect(throws: ActivationError.protocolError(.invalidActivationCode(.checksumMismatch))) {
            try await service.createActivation(activationCode: String(typo), name: "x", password: p)
        }
        await #expect(throws: ActivationError.protocolError(.invalidActivationCode(.malformed))) {
            try await service.createActivation(activationCode: "ABCDE", name: "x", password: p)
        }
        #expect(h.transport.sent.isEmpty)
    }

    @Test("the QR form CODE#SIGNATURE activates; a signature by another master key is refused before sending")
    func signedCode() async throws {
        let h = try Harness()
        let service = try h.makeService()
        let prepared = try h.server.initActivation(userId: "erin")
        let p = try pin("1234")
        let impostor = try ActivationServerConfiguration.generate()
        let forged = try ActivationCode(parsing: prepared.activationCode).signed(
            masterPrivateKey: impostor.masterKeyPair.privateKey)
        await #expect(throws: ActivationError.protocolError(.invalidActivationCode(.signatureMismatch))) {
            try await service.createActivation(activationCode: forged.qrText, name: "x", password: p)
        }
        #expect(h.transport.sent.isEmpty)
        _ = try await service.createActivation(activationCode: prepared.qrText, name: "x", password: p)
        #expect(await service.hasValidActivation())
        // A temporary key first, then the two ECIES layers: nothing of the code or the
        // device key in the clear; the code went without its signature (the server found
        // it), the device key compressed (33 bytes).
        let paths = h.transport.sent.map(\.path)
        #expect(paths == [TemporaryKeyAPI.createKey.path, ActivationAPI.createActivation.path])
        let create = try #require(h.transport.sent.last)
        #expect(create.header(EncryptionHeader.name)?.hasPrefix("PowerAuth version=\"3.3\"") == true)
        let wire = try WireCoding.decode(EncryptedRequestBody.self, create.body)
        #expect(wire.temporaryKeyId != nil && wire.nonce != nil && wire.timestamp != nil)
        #expect(!String(decoding: create.body, as: UTF8.self).contains(prepared.activationCode))
        let id = try #require(await service.activationIdentifier())
        #expect(try h.server.activationDetail(id).state == .pendingCommit)
        #expect(try h.server.store.fetch(activationId: id)?.devicePublicKey?.count == 33)
    }

    @Test("removed on the server: the router removes the activation locally")
    func removedOnServer() async throws {
        let h = try Harness()
        let service = try h.makeService()
        let id = try await h.activate(service)
        try h.server.removeActivation(id)
        let flows = ActivationFlows(service: service, clock: h.clock)
        #expect(await flows.refresh(trigger: .applicationStart) == .reEnroll(.removed))
        #expect(await service.hasValidActivation() == false)
        #expect(try h.storage.read(h.configuration.storageNames.state) == nil)
        #expect(try h.storage.readSecret(h.configuration.storageNames.keys) == nil)
        #expect(await flows.refresh(trigger: .applicationStart) == .enrollment)
    }

    @Test("an activation used after removal fails with a typed error")
    func usedAfterRemoval() async throws {
        let h = try Harness()
        let service = try h.makeService()
        let id = try await h.activate(service)
        // Removed on the server, still on the device: the server refuses.
        try h.server.removeActivation(id)
        let p = try pin("1234")
        await #expect(throws: ActivationError.authentication) { try await service.validatePassword(p) }
        #expect(await service.hasValidActivation())
        // Removed locally: nothing to sign with.
        try await service.removeActivationLocal()
        await #expect(throws: ActivationError.missingActivation) {
            try await service.signRequest(
                method: "POST", uriIdentifier: "/x", body: [], authentication: .possession())
        }
        await #expect(throws: ActivationError.missingActivation) { try await service.fetchActivationStatus() }
        await #expect(throws: ActivationError.missingActivation) { try await service.activationFingerprint() }
    }

    @Test("removing on the server with the PIN removes locally too")
    func removeWithServer() async throws {
        let h = try Harness()
        let service = try h.makeService()
        let id = try await h.activate(service)
        try await service.removeActivation(authentication: .possessionWithPassword(try pin("1234")))
        #expect(await service.hasValidActivation() == false)
        #expect(try h.server.activationDetail(id).state == .removed)
    }

    @Test("a network failure during the status fetch keeps the activation")
    func networkFailureKeepsActivation() async throws {
        let h = try Harness()
        let service = try h.makeService()
        let id = try await h.activate(service)
        h.transport.setOffline(true)
        await #expect(throws: ActivationError.network(reason: "the test network is down")) {
            try await service.fetchActivationStatus()
        }
        let flows = ActivationFlows(service: service, clock: h.clock)
        #expect(
            await flows.refresh(trigger: .returnToForeground)
                == .connectionError(.network(reason: "the test network is down")))
        let outcome = await flows.handleAuthenticationFailure(password: nil, authentication: nil)
        #expect(outcome == .error(.network(reason: "the test network is down")))
        #expect(await service.activationIdentifier() == id)
        #expect(try h.storage.read(h.configuration.storageNames.state) != nil)
        h.transport.setOffline(false)
        #expect(try await service.fetchActivationStatus().state == .active)
    }

    @Test("a server error (not a 401) never removes the activation")
    func serverErrorKeepsActivation() async throws {
        let h = try Harness()
        let service = try h.makeService()
        try await h.activate(service)
        // A second service instance with another id would get ERR_ACTIVATION; emulate
        // it by asking for the status of a prepared activation the device never created.
        let other = try h.server.initActivation(userId: "bob")
        let response = await h.server.handle(
            TransportRequest(
                path: ActivationAPI.activationStatus.path,
                body: try WireCoding.encode(
                    RequestEnvelope(
                        requestObject: ActivationStatusRequest(
                            activationId: other.activationId, challenge: "AAAAAAAAAAAAAAAAAAAAAA==")))))
        #expect(response.statusCode == 400)
        #expect(await service.hasValidActivation())
    }

    @Test("pending commit: poll every 5 s until committed; errors keep the poll going")
    func pendingCommitPoll() async throws {
        let h = try Harness()
        let service = try h.makeService()
        let id = try await h.activate(service, commit: false)
        h.transport.failNext(1)
        let server = h.server
        h.clock.onSleep { count in
            if count == 3 { try? server.commitActivation(id) }
        }
        let flows = ActivationFlows(service: service, clock: h.clock)
        #expect(try await flows.waitForCommit() == .dashboard)
        #expect(h.clock.sleeps == [.seconds(5), .seconds(5), .seconds(5)])
    }

    @Test("pending commit: the poll stops when its task is cancelled")
    func pendingCommitCancelled() async throws {
        let h = try Harness()
        let service = try h.makeService()
        try await h.activate(service, commit: false)
        let flows = ActivationFlows(service: service, clock: h.clock)
        let task = Task { try await flows.waitForCommit() }
        task.cancel()
        let result = await task.result
        #expect(throws: ActivationError.cancelled) { try result.get() }
        #expect(await service.hasValidActivation())
        try await flows.cancelEnrollment()
        #expect(await service.hasValidActivation() == false)
    }
}

/// Answers every status request after the first with the first answer.
final class ReplayingTransport: ActivationTransport, @unchecked Sendable {
    let inner: any ActivationTransport
    private let saved = Mutex<TransportResponse?>(nil)

    init(inner: any ActivationTransport) { self.inner = inner }

    func send(_ request: TransportRequest, timeout: Duration) async throws(TransportError) -> TransportResponse {
        guard request.path == ActivationAPI.activationStatus.path else {
            return try await inner.send(request, timeout: timeout)
        }
        if let old = saved.withLock({ $0 }) { return old }
        let response = try await inner.send(request, timeout: timeout)
        saved.withLock { $0 = response }
        return response
    }
}

@Suite("Replayed answers")
struct ReplayedAnswerTests {
    @Test("a replayed status answer does not open under a new challenge; the activation stays")
    func replayedStatus() async throws {
        let h = try Harness()
        try await h.activate(try h.makeService())
        let service = try ActivationService(
            configuration: h.configuration, storage: h.storage, transport: ReplayingTransport(inner: h.transport),
            clock: h.clock)
        #expect(try await service.fetchActivationStatus().state == .active)
        await #expect(
            throws: ActivationError.invalidResponse(reason: "activation/status: the status blob does not open")
        ) {
            try await service.fetchActivationStatus()
        }
        #expect(await service.hasValidActivation())
        let flows = ActivationFlows(service: service, clock: h.clock)
        #expect(
            await flows.refresh(trigger: .applicationStart)
                == .connectionError(.invalidResponse(reason: "activation/status: the status blob does not open")))
        #expect(await service.hasValidActivation())
    }
}
