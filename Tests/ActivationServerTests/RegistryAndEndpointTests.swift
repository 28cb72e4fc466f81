import Activation
import ActivationTestSupport
import Foundation
import PowerAuthProtocol
import SecureCore
import Testing

@testable import ActivationServer

@Suite("Registry, state machine and endpoints")
struct RegistryAndEndpointTests {
    func request(_ path: String, _ body: String, method: String = "POST", headers: [String: String] = [:])
        -> TransportRequest
    {
        TransportRequest(method: method, path: path, headers: headers, body: Array(body.utf8))
    }

    func code(_ response: TransportResponse) throws -> String {
        try WireCoding.decode(ResponseEnvelope<ErrorResponse>.self, response.body).responseObject?.code ?? ""
    }

    @Test("state transitions are checked", arguments: ProtocolAlgorithm.allCases)
    func transitions(algorithm: ProtocolAlgorithm) throws {
        let h = try Harness(algorithm: algorithm)
        let prepared = try h.server.initActivation(userId: "u")
        #expect(prepared.activationCode.count == 23)
        #expect(try h.server.activationDetail(prepared.activationId).state == .created)
        #expect(throws: ActivationServerError.invalidState(.created)) {
            try h.server.commitActivation(prepared.activationId)
        }
        #expect(throws: ActivationServerError.invalidState(.created)) {
            try h.server.blockActivation(prepared.activationId)
        }
        #expect(throws: ActivationServerError.invalidState(.created)) {
            try h.server.unblockActivation(prepared.activationId)
        }
        #expect(throws: ActivationServerError.activationNotFound) { try h.server.commitActivation("nope") }
        try h.server.removeActivation(prepared.activationId)
        #expect(try h.server.activationDetail(prepared.activationId).state == .removed)
    }

    @Test(
        "a temporary block ends with the injected clock and resets the failures", arguments: ProtocolAlgorithm.allCases)
    func temporaryBlock(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        let id = try await h.activate(service)
        try h.server.blockActivation(id, until: h.clock.now().addingTimeInterval(60))
        #expect(try h.server.activationDetail(id).blockedUntil == h.clock.now().addingTimeInterval(60))
        h.clock.advance(seconds: 59)
        #expect(try h.server.activationDetail(id).state == .blocked)
        h.clock.advance(seconds: 1)
        let detail = try h.server.activationDetail(id)
        #expect(detail.state == .active)
        #expect(detail.blockedUntil == nil)
    }

    @Test("an activation code works once", arguments: ProtocolAlgorithm.allCases)
    func codeWorksOnce(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let prepared = try h.server.initActivation(userId: "u")
        let first = try h.makeService()
        let p = try pin("1234")
        _ = try await first.createActivation(activationCode: prepared.activationCode, name: "a", password: p)
        let other = try ActivationService(
            configuration: try ActivationConfiguration(
                instanceId: "second", baseEndpointURL: "https://x.example",
                configuration: try h.serverConfiguration.configurationString(), algorithm: "LEGACY_P256",
                knowledgeKeyParameters: .testing),
            storage: h.storage, transport: h.transport, clock: h.clock)
        await #expect(throws: ActivationError.server(statusCode: 400, code: "ERR_ACTIVATION")) {
            try await other.createActivation(activationCode: prepared.activationCode, name: "b", password: p)
        }
        #expect(await other.hasValidActivation() == false)
    }

    @Test(
        "a client with another server's configuration refuses its temporary key, and sends nothing else",
        arguments: ProtocolAlgorithm.allCases)
    func masterKeySignatureChecked(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let impostor = try ActivationServerConfiguration.generate()
        let mixed = try ActivationConfiguration(
            instanceId: "mixed", baseEndpointURL: "https://x.example",
            configuration: try SDKConfiguration(
                applicationKey: h.serverConfiguration.applicationKey,
                applicationSecret: h.serverConfiguration.applicationSecret,
                masterServerPublicKey: impostor.masterKeyPair.publicKey
            ).encoded, algorithm: "LEGACY_P256", knowledgeKeyParameters: .testing)
        let service = try ActivationService(
            configuration: mixed, storage: h.storage, transport: h.transport, clock: h.clock)
        let prepared = try h.server.initActivation(userId: "u")
        let p = try pin("1234")
        var reason = ""
        do throws(ActivationError) {
            _ = try await service.createActivation(activationCode: prepared.activationCode, name: "a", password: p)
        } catch {
            if case .invalidResponse(let text) = error { reason = text }
        }
        #expect(reason.hasPrefix("keystore/create"), "\(reason)")
        #expect(await service.hasValidActivation() == false)
        // The code was never sent: the activation still waits for its device.
        #expect(try h.server.activationDetail(prepared.activationId).state == .created)
    }

    @Test("bad requests get typed error responses")
    func badRequests() async throws {
        let h = try Harness()
        let status = ActivationAPI.activationStatus.path
        let cases: [(TransportRequest, Int, String)] = [
            (request(status, "{"), 400, "ERR_REQUEST"),
            (request(status, "{}"), 400, "ERR_REQUEST"),
            (request(status, #"{"requestObject":{"activationId":"x","challenge":"AAAA"}}"#), 400, "ERR_REQUEST"),
            (request("/pa/v3/unknown", "{}"), 404, "ERR_REQUEST"),
            (request(status, "{}", method: "GET"), 405, "ERR_REQUEST"),
            (
                request(ActivationAPI.validateSignature.path, #"{"requestObject":{"reason":"x"}}"#), 401,
                "ERR_AUTHENTICATION"
            ),
            (
                request(
                    ActivationAPI.validateSignature.path, #"{"requestObject":{"reason":"x"}}"#,
                    headers: ["X-PowerAuth-Authorization": "PowerAuth garbage"]), 401, "ERR_AUTHENTICATION"
            ),
            (request(ActivationAPI.unlockVault.path, #"{"reason":"OTHER"}"#), 401, "ERR_AUTHENTICATION"),
            (
                request(
                    ActivationAPI.createActivation.path,
                    #"{"requestObject":{"activationCode":"A","applicationKey":"B","devicePublicKey":"C"}}"#
                ), 400, "ERR_ENCRYPTION"
            ),
            (request(ActivationAPI.userInfo.path, "{}"), 400, "ERR_ENCRYPTION"),
            (request(ActivationAPI.activationDetail.path, "{}"), 401, "ERR_AUTHENTICATION"),
            (request(ActivationAPI.createToken.path, "{}"), 401, "ERR_AUTHENTICATION"),
            (request(ActivationAPI.startUpgrade.path, "{}"), 400, "ERR_ENCRYPTION"),
            (request(ActivationAPI.commitUpgrade.path, "{}"), 401, "ERR_AUTHENTICATION"),
        ]
        for (request, statusCode, errorCode) in cases {
            let response = await h.server.handle(request)
            #expect(response.statusCode == statusCode, "\(request.path)")
            #expect(try code(response) == errorCode, "\(request.path)")
        }
    }

    @Test("status of an unknown or a CREATED activation: 200 with 32 random bytes, as powerauth-server")
    func statusOfUnknown() async throws {
        let h = try Harness()
        let created = try h.server.initActivation(userId: "u")
        var blobs: Set<String> = []
        for id in ["no-such-activation", created.activationId, created.activationId] {
            let response = await h.server.handle(
                request(
                    ActivationAPI.activationStatus.path,
                    #"{"requestObject":{"activationId":"\#(id)","challenge":"AAAAAAAAAAAAAAAAAAAAAA=="}}"#))
            #expect(response.statusCode == 200)
            let answer = try #require(
                try WireCoding.decode(ResponseEnvelope<ActivationStatusResponse>.self, response.body).responseObject)
            #expect(answer.activationId == id)
            #expect(Base64.decode(answer.encryptedStatusBlob)?.count == 32)
            #expect(Base64.decode(answer.nonce ?? "")?.count == 16)
            blobs.insert(answer.encryptedStatusBlob)
        }
        #expect(blobs.count == 3)
    }

    @Test(
        "the status endpoint answers for every state, and the client reads each", arguments: ProtocolAlgorithm.allCases)
    func statusForEveryState(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        let id = try await h.activate(service, commit: false)
        #expect(try await service.fetchActivationStatus().state == .pendingCommit)
        try h.server.commitActivation(id)
        #expect(try await service.fetchActivationStatus().state == .active)
        try h.server.blockActivation(id)
        #expect(try await service.fetchActivationStatus().state == .blocked)
        try h.server.removeActivation(id)
        #expect(try await service.fetchActivationStatus().state == .removed)
    }

    @Test("a status blob with an unknown state number is a typed error, and the activation stays")
    func unknownStateNumber() async throws {
        let h = try Harness()
        let service = try h.makeService()
        try await h.activate(service)
        let tampering = StateRewritingTransport(inner: h.transport, server: h.server)
        let victim = try ActivationService(
            configuration: h.configuration, storage: h.storage, transport: tampering, clock: h.clock)
        await #expect(throws: ActivationError.protocolError(.unknownActivationState(9))) {
            try await victim.fetchActivationStatus()
        }
        #expect(await victim.hasValidActivation())
    }

    @Test("the in-memory store stores nothing when an update throws")
    func storeUpdateIsAtomic() throws {
        let store = InMemoryServerActivationStore()
        let crypto = try ActivationCrypto()
        let record = ActivationRecord(
            activationId: "a-1", activationCode: "C", userId: "u", serverKeyPair: try crypto.generateKeyPair(),
            counter: HashCounter.random(), maxFailedAttempts: 5)
        try store.insert(record)
        #expect(throws: ActivationServerError.duplicate) { try store.insert(record) }
        #expect(throws: ActivationServerError.invalidState(.created)) {
            try store.update(activationId: "a-1") { (r) throws(ActivationServerError) in
                r.failedAttempts = 99
                throw .invalidState(r.state)
            }
        }
        #expect(try store.fetch(activationId: "a-1")?.failedAttempts == 0)
        #expect("\(try #require(try store.fetch(activationId: "a-1")))".contains("redacted"))
    }

    @Test("recordAttempt counts concurrent failures exactly")
    func recordAttemptConcurrent() async throws {
        let store = InMemoryServerActivationStore()
        let crypto = try ActivationCrypto()
        var record = ActivationRecord(
            activationId: "a-2", activationCode: "D", userId: "u", serverKeyPair: try crypto.generateKeyPair(),
            counter: HashCounter.random(), maxFailedAttempts: 255)
        record.state = .active
        try store.insert(record)
        let now = Date(timeIntervalSince1970: 0)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<200 {
                group.addTask {
                    _ = try? store.recordAttempt(
                        activationId: "a-2", outcome: .rejected, now: now, failureBlockDuration: nil)
                }
            }
        }
        #expect(try store.fetch(activationId: "a-2")?.failedAttempts == 200)
    }
}

/// Answers status requests with a blob whose state byte is 9, encrypted
/// under the right transport key (derived here from the server's record).
struct StateRewritingTransport: ActivationTransport {
    let inner: any ActivationTransport
    let server: ActivationServer

    func send(_ request: TransportRequest, timeout: Duration) async throws(TransportError) -> TransportResponse {
        var response = try await inner.send(request, timeout: timeout)
        guard request.path == ActivationAPI.activationStatus.path else { return response }
        do {
            let sent = try WireCoding.decode(RequestEnvelope<ActivationStatusRequest>.self, request.body).requestObject
            let envelope = try WireCoding.decode(ResponseEnvelope<ActivationStatusResponse>.self, response.body)
            guard var answer = envelope.responseObject, let sentChallenge = sent.challenge,
                let sentNonce = answer.nonce,
                let record = try server.store.fetch(activationId: sent.activationId),
                let device = record.devicePublicKey
            else { return response }
            let keys = try server.factorKeys(record, devicePublicKey: device)
            defer { keys.destroy() }
            let transport = keys.transport
            let crypto = try ActivationCrypto()
            let challenge = Array(Data(base64Encoded: sentChallenge)!)
            let nonce = Array(Data(base64Encoded: sentNonce)!)
            var plain = try crypto.decryptStatusBlob(
                Array(Data(base64Encoded: answer.encryptedStatusBlob)!), transportKey: transport,
                challenge: challenge, nonce: nonce
            ).plaintext
            plain[4] = 9
            let iv = try crypto.statusBlobIV(transportKey: transport, challenge: challenge, nonce: nonce)
            let encrypted = try AES128.cbcEncrypt(key: transport, iv: iv, plaintext: plain)
            answer.encryptedStatusBlob = Data(encrypted).base64EncodedString()
            response.body = try WireCoding.encode(ResponseEnvelope(responseObject: answer))
        } catch {
            throw .network(reason: "test tampering failed")
        }
        return response
    }
}
