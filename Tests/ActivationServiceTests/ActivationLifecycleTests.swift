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
    @Test("create, pending commit with a fingerprint, commit, active", arguments: ProtocolAlgorithm.allCases)
    func activationAndCommit(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
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

    @Test("a second activation is refused while one exists, and nothing changes", arguments: ProtocolAlgorithm.allCases)
    func secondActivationRefused(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        let id = try await h.activate(service)
        let prepared = try h.server.initActivation(userId: "bob")
        let p = try pin("1111")
        await #expect(throws: ActivationError.invalidActivationState(reason: "an activation already exists")) {
            try await service.createActivation(activationCode: prepared.activationCode, name: "x", password: p)
        }
        #expect(await service.activationIdentifier() == id)
    }

    @Test("an empty PIN is the protocol's emptyPIN, before anything is sent", arguments: ProtocolAlgorithm.allCases)
    func emptyPINRefused(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        let prepared = try h.server.initActivation(userId: "carol")
        let empty = try pin("")
        await #expect(throws: ActivationError.protocolError(.emptyPIN)) {
            try await service.createActivation(activationCode: prepared.activationCode, name: "x", password: empty)
        }
        #expect(h.transport.sent.isEmpty)
        #expect(await !service.hasValidActivation())
    }

    @Test(
        "an unknown or used activation code is a server error and stores nothing", arguments: ProtocolAlgorithm.allCases
    )
    func badActivationCode(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        let p = try pin("1234")
        await #expect(throws: ActivationError.server(statusCode: 400, code: "ERR_ACTIVATION")) {
            try await service.createActivation(activationCode: "AAAAA-AAAAA-AAAAA-AAAAA", name: "x", password: p)
        }
        #expect(await service.hasValidActivation() == false)
        #expect(try h.storage.read(h.configuration.storageNames.state) == nil)
        #expect(try h.storage.readSecret(h.configuration.storageNames.keys) == nil)
    }

    @Test("a mistyped code is refused on the client, before anything is sent", arguments: ProtocolAlgorithm.allCases)
    func mistypedCodeRefusedLocally(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
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

    @Test(
        "the QR form CODE#SIGNATURE activates; a signature by another master key is refused before sending",
        arguments: ProtocolAlgorithm.allCases)
    func signedCode(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
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
        let create = try #require(h.transport.sent.last)
        #expect(!String(decoding: create.body, as: UTF8.self).contains(prepared.activationCode))
        let id = try #require(await service.activationIdentifier())
        #expect(try h.server.activationDetail(id).state == .pendingCommit)
        if algorithm.isV4 {
            // V4: the same two steps under /pa/v4, AEAD envelopes, an uncompressed P-384 key (97 bytes).
            #expect(paths == [V4API.keystoreCreate.path, V4API.activationCreate.path])
            #expect(create.header(V4EncryptionHeader.name)?.contains("version=\"4.0\"") == true)
            let wire = try WireCoding.decode(V4EncryptedRequest.self, create.body)
            #expect(!wire.temporaryKeyId.isEmpty && !wire.nonce.isEmpty)
            #expect(try h.server.store.fetch(activationId: id)?.v4?.devicePublicKey?.count == 97)
        } else {
            #expect(paths == [TemporaryKeyAPI.createKey.path, ActivationAPI.createActivation.path])
            #expect(create.header(EncryptionHeader.name)?.hasPrefix("PowerAuth version=\"3.3\"") == true)
            let wire = try WireCoding.decode(EncryptedRequestBody.self, create.body)
            #expect(wire.temporaryKeyId != nil && wire.nonce != nil && wire.timestamp != nil)
            #expect(try h.server.store.fetch(activationId: id)?.devicePublicKey?.count == 33)
        }
    }

    @Test("removed on the server: the router removes the activation locally", arguments: ProtocolAlgorithm.allCases)
    func removedOnServer(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
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

    @Test("an activation used after removal fails with a typed error", arguments: ProtocolAlgorithm.allCases)
    func usedAfterRemoval(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
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

    @Test("removing on the server with the PIN removes locally too", arguments: ProtocolAlgorithm.allCases)
    func removeWithServer(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        let id = try await h.activate(service)
        try await service.removeActivation(authentication: .possessionWithPassword(try pin("1234")))
        #expect(await service.hasValidActivation() == false)
        #expect(try h.server.activationDetail(id).state == .removed)
    }

    @Test("a network failure during the status fetch keeps the activation", arguments: ProtocolAlgorithm.allCases)
    func networkFailureKeepsActivation(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
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

    @Test("a server error (not a 401) never removes the activation", arguments: ProtocolAlgorithm.allCases)
    func serverErrorKeepsActivation(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        try await h.activate(service)
        /// Answers every status request with 400 ERR_ACTIVATION.
        struct Refusing: ActivationTransport {
            let inner: any ActivationTransport
            func send(_ request: TransportRequest, timeout: Duration) async throws(TransportError)
                -> TransportResponse
            {
                guard request.path == ActivationAPI.activationStatus.path || request.path == V4API.activationStatus.path
                else {
                    return try await inner.send(request, timeout: timeout)
                }
                return ActivationServer.error(400, "ERR_ACTIVATION", "POWER_AUTH_ACTIVATION_INVALID")
            }
        }
        let refused = try ActivationService(
            configuration: h.configuration, storage: h.storage, transport: Refusing(inner: h.transport),
            clock: h.clock)
        await #expect(throws: ActivationError.server(statusCode: 400, code: "ERR_ACTIVATION")) {
            try await refused.fetchActivationStatus()
        }
        let flows = ActivationFlows(service: refused, clock: h.clock)
        _ = await flows.refresh(trigger: .applicationStart)
        #expect(await refused.hasValidActivation())
        #expect(await service.hasValidActivation())
    }

    @Test(
        "pending commit: poll every 5 s until committed; errors keep the poll going",
        arguments: ProtocolAlgorithm.allCases)
    func pendingCommitPoll(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
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

    @Test("pending commit: the poll stops when its task is cancelled", arguments: ProtocolAlgorithm.allCases)
    func pendingCommitCancelled(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
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
        guard request.path == ActivationAPI.activationStatus.path || request.path == V4API.activationStatus.path else {
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
    @Test(
        "a replayed status answer does not open under a new challenge; the activation stays",
        arguments: ProtocolAlgorithm.allCases)
    func replayedStatus(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        try await h.activate(try h.makeService())
        let service = try ActivationService(
            configuration: h.configuration, storage: h.storage, transport: ReplayingTransport(inner: h.transport),
            clock: h.clock)
        #expect(try await service.fetchActivationStatus().state == .active)
        // V3.3: the blob is encrypted under the request's challenge; V4: the whole answer is
        // sealed to the request's own key and nonce. Either way the old answer does not open.
        let error = try #require(
            await #expect(throws: ActivationError.self) { try await service.fetchActivationStatus() })
        guard case .invalidResponse = error else {
            Issue.record("expected invalidResponse, got \(error)")
            return
        }
        if !algorithm.isV4 {
            #expect(error == .invalidResponse(reason: "activation/status: the status blob does not open"))
        }
        #expect(await service.hasValidActivation())
        let flows = ActivationFlows(service: service, clock: h.clock)
        #expect(await flows.refresh(trigger: .applicationStart) == .connectionError(error))
        #expect(await service.hasValidActivation())
    }
}
