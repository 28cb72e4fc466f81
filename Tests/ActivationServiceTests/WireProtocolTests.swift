import Activation
import ActivationTestSupport
import Foundation
import PinVault
import PowerAuthProtocol
import SecureCore
import Synchronization
import Testing

@testable import ActivationServer

/// Delivers to the in-process server, except one request it is told to catch: that one
/// is kept undelivered (the client sees a network error), for the test to send later,
/// changed or not.
final class CatchingTransport: ActivationTransport, @unchecked Sendable {
    let inner: InProcessTransport
    private let state = Mutex((path: String?.none, caught: TransportRequest?.none))

    init(server: ActivationServer) { inner = InProcessTransport(server: server) }

    func catchNext(_ path: String) { state.withLock { $0 = (path, nil) } }
    var caught: TransportRequest? { state.withLock { $0.caught } }

    func send(_ request: TransportRequest, timeout: Duration) async throws(TransportError) -> TransportResponse {
        let held = state.withLock { s -> Bool in
            guard s.path == request.path else { return false }
            s = (nil, request)
            return true
        }
        if held { throw .network(reason: "caught by the test") }
        return try await inner.send(request, timeout: timeout)
    }
}

@Suite("PowerAuth endpoints between the client and the server (V3.3, and every suite where a test says so)")
struct WireProtocolTests {
    struct Setup {
        let h: Harness
        let transport: CatchingTransport
        let service: ActivationService
        let sensor: SimulatedBiometricAuthenticator
    }

    func setup(_ algorithm: ProtocolAlgorithm = .legacyP256) async throws -> (Setup, String) {
        let h = try Harness(algorithm: algorithm)
        let transport = CatchingTransport(server: h.server)
        let sensor = SimulatedBiometricAuthenticator()
        let service = try ActivationService(
            configuration: h.configuration, storage: h.storage, transport: transport, authenticator: sensor,
            clock: h.clock)
        let id = try await h.activate(service)
        return (Setup(h: h, transport: transport, service: service, sensor: sensor), id)
    }

    static func errorCode(_ response: TransportResponse) -> String {
        (try? WireCoding.decode(ResponseEnvelope<ErrorResponse>.self, response.body))?.responseObject?.code ?? ""
    }

    @Test(
        "a token created with the PIN reads the activation detail; it is refused when replayed, one-factor or removed")
    func tokens() async throws {
        let (s, id) = try await setup()
        let token = try await s.service.createToken(authentication: .possessionWithPassword(try pin("1234")))
        #expect(token.factorSet == .possessionKnowledge)
        #expect("\(token)".contains("redacted"))
        let detail = try await s.service.fetchActivationDetail(token: token)
        #expect(detail == ActivationDetailResponse(activationId: id, activationName: "test phone"))

        // The same request again: its cryptogram (checked before the token's nonce) was used.
        s.transport.catchNext(ActivationAPI.activationDetail.path)
        await #expect(throws: ActivationError.network(reason: "caught by the test")) {
            try await s.service.fetchActivationDetail(token: token)
        }
        let request = try #require(s.transport.caught)
        #expect(request.header(TokenHeader.name)?.contains("version=\"3.3\"") == true)
        #expect(await s.h.server.handle(request).statusCode == 200)
        let again = await s.h.server.handle(request)
        #expect(again.statusCode == 400)
        #expect(Self.errorCode(again) == "ERR_ENCRYPTION")

        // Kept on the device and read back by another process: the secret survives.
        try await s.service.storeToken(token)
        let reloaded = try #require(try await s.service.storedToken(token.tokenId))
        #expect(try await s.service.fetchActivationDetail(token: reloaded).activationId == id)

        // A possession-only token may not read the detail (upstream: 2FA types only).
        let weak = try await s.service.createToken(authentication: .possession())
        await #expect(throws: ActivationError.authentication) {
            try await s.service.fetchActivationDetail(token: weak)
        }

        try await s.service.removeToken(token.tokenId, authentication: .possession())
        await #expect(throws: ActivationError.authentication) {
            try await s.service.fetchActivationDetail(token: reloaded)
        }
        try await s.service.deleteStoredToken(token.tokenId)
        #expect(try await s.service.storedToken(token.tokenId) == nil)
        #expect(try s.h.server.activationDetail(id).failedAttempts == 0)
    }

    @Test(
        "activation/remove takes two factors: possession alone is refused, uncounted, and nothing is removed",
        arguments: ProtocolAlgorithm.allCases)
    func removeNeedsTwoFactors(algorithm: ProtocolAlgorithm) async throws {
        let (s, id) = try await setup(algorithm)
        await #expect(throws: ActivationError.authentication) {
            try await s.service.removeActivation(authentication: .possession())
        }
        #expect(await s.service.hasValidActivation())
        #expect(try s.h.server.activationDetail(id).state == .active)
        #expect(try s.h.server.activationDetail(id).failedAttempts == 0)
        try await s.service.removeActivation(authentication: .possessionWithPassword(try pin("1234")))
        #expect(try s.h.server.activationDetail(id).state == .removed)
        #expect(await s.service.hasValidActivation() == false)
    }

    @Test("a blocked activation still gets an activation-scope temporary key, as upstream")
    func temporaryKeyWhileBlocked() async throws {
        let (s, id) = try await setup()
        try s.h.server.blockActivation(id)
        await s.service.resetTemporaryEncryptionKeys()
        let key = try await s.service.temporaryEncryptionKey(scope: .activation)
        #expect(key.activationId == id)
        try s.h.server.removeActivation(id)
        await s.service.resetTemporaryEncryptionKeys()
        await #expect(throws: ActivationError.server(statusCode: 400, code: "ERR_TEMPORARY_KEY")) {
            try await s.service.temporaryEncryptionKey(scope: .activation)
        }
    }

    @Test("a token cannot be created with a wrong PIN, and the attempt counts", arguments: ProtocolAlgorithm.allCases)
    func tokenWrongPin(algorithm: ProtocolAlgorithm) async throws {
        let (s, id) = try await setup(algorithm)
        await #expect(throws: ActivationError.authentication) {
            try await s.service.createToken(authentication: .possessionWithPassword(try pin("9999")))
        }
        #expect(try s.h.server.activationDetail(id).failedAttempts == 1)
    }

    @Test(
        "a token's header verifies once, in the activation's generation; a replay and another token's digest are refused",
        arguments: ProtocolAlgorithm.allCases)
    func tokenHeaderVerifiesOnce(algorithm: ProtocolAlgorithm) async throws {
        let (s, id) = try await setup(algorithm)
        let token = try await s.service.createToken(authentication: .possessionWithPassword(try pin("1234")))
        defer { token.destroy() }
        let header = try await s.service.tokenHeader(for: token)
        switch header {
        case .v3(let v3): #expect(v3.version == .v3_3 && !algorithm.isV4)
        case .v4: #expect(algorithm.isV4)
        }
        #expect(header.tokenId == token.tokenId)
        let verified = try s.h.server.verifyToken(header: header.value)
        #expect(verified.activationId == id && verified.factorSet == .possessionKnowledge)
        #expect(throws: ActivationServerError.tokenInvalid) { try s.h.server.verifyToken(header: header.value) }
        // A fresh header of the same token verifies; one of another token's id does not.
        let fresh = try await s.service.tokenHeaderValue(for: token)
        _ = try s.h.server.verifyToken(header: fresh)
        let other = try await s.service.createToken(authentication: .possession())
        defer { other.destroy() }
        let swapped = try await s.service.tokenHeaderValue(for: other).replacingOccurrences(
            of: other.tokenId, with: token.tokenId)
        #expect(throws: ActivationServerError.tokenInvalid) { try s.h.server.verifyToken(header: swapped) }
        #expect(try s.h.server.activationDetail(id).failedAttempts == 0)
    }

    @Test(
        "the vault key: the same key at each unlock; a wrong PIN counted, possession alone and unknown reasons refused",
        arguments: ProtocolAlgorithm.allCases)
    func vaultOnEverySuite(algorithm: ProtocolAlgorithm) async throws {
        let (s, id) = try await setup(algorithm)
        let first = try await s.service.unlockVault(authentication: .possessionWithPassword(try pin("1234")))
        defer { first.destroy() }
        let second = try await s.service.unlockVault(authentication: .possessionWithPassword(try pin("1234")))
        defer { second.destroy() }
        // KEY_ENCRYPTION_VAULT is 16 bytes in V3.3, KDK_APP_VAULT_2FA 32 in V4.
        #expect(first.count == (algorithm.isV4 ? 32 : 16))
        #expect(first.withUnsafeBytes { a in second.withUnsafeBytes { b in a.elementsEqual(b) } })
        await #expect(throws: ActivationError.authentication) {
            try await s.service.unlockVault(authentication: .possessionWithPassword(try pin("9999")))
        }
        #expect(try s.h.server.activationDetail(id).failedAttempts == 1)
        await #expect(throws: ActivationError.wrongParameter(reason: "the vault opens with two factors")) {
            try await s.service.unlockVault(authentication: .possession())
        }
        await #expect(throws: ActivationError.wrongParameter(reason: "unknown vault unlock reason")) {
            try await s.service.unlockVault(authentication: .possessionWithPassword(try pin("1234")), reason: "OTHER")
        }
        // Another of upstream's reasons is sent as given and answered.
        let signing = try await s.service.unlockVault(
            authentication: .possessionWithPassword(try pin("1234")), reason: "SIGN_WITH_DEVICE_PRIVATE_KEY")
        signing.destroy()
        #expect(try s.h.server.activationDetail(id).failedAttempts == 0)
        #expect(await s.service.hasValidActivation())
    }

    @Test("user info, server status, and the upgrade endpoints refuse as upstream does for a V3 activation")
    func userInfoStatusUpgrade() async throws {
        let (s, _) = try await setup()
        let claims = try await s.service.fetchUserInfo()
        #expect(claims.sub == "alice")
        #expect(claims.iat == Int64(s.h.clock.now().timeIntervalSince1970))
        let status = try await s.service.fetchServerStatus()
        #expect(status.serverTime == Int64(s.h.clock.now().timeIntervalSince1970 * 1000))
        #expect(status.application.name == "SecurePIN reference server")
        // upgrade/start decrypts, then refuses: every activation here already speaks 3.
        let start = await s.h.server.handle(try await encryptedRequest(s, ActivationAPI.startUpgrade))
        #expect(start.statusCode == 400)
        #expect(Self.errorCode(start) == "ERR_UPGRADE")
    }

    @Test("the back office shows the fingerprint the device shows, before the commit")
    func fingerprintBeforeCommit() async throws {
        let h = try Harness()
        let service = try h.makeService()
        let id = try await h.activate(service, commit: false)
        let detail = try h.server.activationDetail(id)
        #expect(detail.state == .pendingCommit)
        #expect(detail.fingerprint == (try await service.activationFingerprint()))
        #expect(
            try h.server.activationDetail(try h.server.initActivation(userId: "bob").activationId).fingerprint == nil)
    }

    /// Builds (and does not send) an unsigned encrypted request the way the client does.
    func encryptedRequest(_ s: Setup, _ endpoint: ActivationAPI.EncryptedEndpoint) async throws -> TransportRequest {
        s.transport.catchNext(endpoint.path)
        switch endpoint.path {
        case ActivationAPI.userInfo.path:
            _ = try? await s.service.fetchUserInfo()
        default:
            // No client call for upgrade/start: encrypt a user/info body under upgrade's SHARED_INFO_1.
            let temporary = try await s.service.temporaryEncryptionKey(scope: .activation)
            let activationId = try #require(await s.service.activationIdentifier())
            let record = try #require(try s.h.server.store.fetch(activationId: activationId))
            let device = try #require(record.devicePublicKey)
            let keys = try s.h.server.factorKeys(record, devicePublicKey: device)
            defer { keys.destroy() }
            let configuration = try ECIESConfiguration(
                version: .v3_3, sharedInfo1: endpoint.sharedInfo1,
                applicationKey: s.h.configuration.sdkConfiguration.applicationKey,
                applicationSecret: s.h.configuration.sdkConfiguration.applicationSecret,
                activationId: record.activationId, transportKey: keys.transport,
                temporaryKeyId: temporary.temporaryKeyId)
            let (cryptogram, _) = try ECIESEncryptor(configuration: configuration, serverPublicKey: temporary.publicKey)
                .encryptRequest(nil, now: s.h.clock.now())
            return TransportRequest(
                path: endpoint.path,
                headers: [
                    "Content-Type": "application/json",
                    EncryptionHeader.name: EncryptionHeader(
                        version: .v3_3, applicationKey: configuration.applicationKey, activationId: record.activationId
                    ).value,
                ], body: try WireCoding.encode(EncryptedRequestBody(cryptogram)))
        }
        return try #require(s.transport.caught)
    }

    @Test(
        "each encrypted endpoint refuses a tampered, an expired and a replayed cryptogram, counts nothing, keeps serving",
        arguments: [
            ActivationAPI.createActivation.path, ActivationAPI.createToken.path, ActivationAPI.unlockVault.path,
            ActivationAPI.userInfo.path, ActivationAPI.activationDetail.path,
        ])
    func refusedCryptograms(_ path: String) async throws {
        let (s, id) = try await setup()
        let token = try await s.service.createToken(authentication: .possessionWithPassword(try pin("1234")))
        let prepared = try s.h.server.initActivation(userId: "carol")
        let fresh = try ActivationService(
            configuration: try ActivationConfiguration(
                instanceId: "fresh", baseEndpointURL: "https://x.example",
                configuration: try s.h.serverConfiguration.configurationString(), algorithm: "LEGACY_P256",
                knowledgeKeyParameters: .testing),
            storage: s.h.storage, transport: s.transport, clock: s.h.clock)
        s.transport.catchNext(path)
        switch path {
        case ActivationAPI.createActivation.path:
            _ = try? await fresh.createActivation(
                activationCode: prepared.activationCode, name: "x", password: try pin("1234"))
        case ActivationAPI.createToken.path:
            _ = try? await s.service.createToken(authentication: .possessionWithPassword(try pin("1234")))
        case ActivationAPI.unlockVault.path:
            _ = try? await s.service.addBiometryFactor(password: try pin("1234"))
        case ActivationAPI.userInfo.path:
            _ = try? await s.service.fetchUserInfo()
        default:
            _ = try? await s.service.fetchActivationDetail(token: token)
        }
        let request = try #require(s.transport.caught)
        let before = try s.h.server.activationDetail(id)

        var tampered = request
        var wire = try WireCoding.decode(EncryptedRequestBody.self, request.body)
        var mac = try #require(Base64.decode(wire.mac))
        mac[0] ^= 1
        wire.mac = Base64.encode(mac)
        tampered.body = try WireCoding.encode(wire)
        let refusedTampered = await s.h.server.handle(tampered)
        #expect((400..<402).contains(refusedTampered.statusCode), "\(path)")

        s.h.clock.advance(seconds: 61)
        let refusedExpired = await s.h.server.handle(request)
        s.h.clock.advance(seconds: -61)
        #expect((400..<402).contains(refusedExpired.statusCode), "\(path)")

        #expect(await s.h.server.handle(request).statusCode == 200, "\(path): the untouched request is valid")
        let replayed = await s.h.server.handle(request)
        #expect((400..<402).contains(replayed.statusCode), "\(path)")
        #expect(Self.errorCode(replayed) != "", "\(path): PowerAuth's error body")

        let after = try s.h.server.activationDetail(id)
        #expect(after.failedAttempts == 0, "\(path): nothing counted")
        if path == ActivationAPI.createToken.path || path == ActivationAPI.unlockVault.path {
            // Only the valid delivery moved the counter.
            #expect(after.counterIndex == before.counterIndex + 1, "\(path)")
        } else {
            #expect(after.counterIndex == before.counterIndex, "\(path)")
        }
        // The server keeps serving.
        try await s.service.validatePassword(try pin("1234"))
    }

    @Test("ECIES 3.2 (no temporary key) is accepted; 3.0 and 3.1 are refused: no timestamp, no replay window")
    func versions() async throws {
        let (s, id) = try await setup()
        let record = try #require(try s.h.server.store.fetch(activationId: id))
        let device = try #require(record.devicePublicKey)
        let keys = try s.h.server.factorKeys(record, devicePublicKey: device)
        defer { keys.destroy() }
        let sdk = s.h.configuration.sdkConfiguration
        for version in ProtocolVersion.allCases where version != .v3_3 {
            let configuration = try ECIESConfiguration(
                version: version, sharedInfo1: .activationScopeGeneric, applicationKey: sdk.applicationKey,
                applicationSecret: sdk.applicationSecret, activationId: id, transportKey: keys.transport)
            let (cryptogram, envelope) = try ECIESEncryptor(
                configuration: configuration, serverPublicKey: record.serverPublicKey
            ).encryptRequest(nil, now: s.h.clock.now())
            let request = TransportRequest(
                path: ActivationAPI.userInfo.path,
                headers: [
                    EncryptionHeader.name: EncryptionHeader(
                        version: version, applicationKey: sdk.applicationKey, activationId: id
                    ).value
                ], body: try WireCoding.encode(EncryptedRequestBody(cryptogram)))
            let response = await s.h.server.handle(request)
            if version == .v3_2 {
                #expect(response.statusCode == 200)
                let body = try WireCoding.decode(EncryptedResponseBody.self, response.body)
                let plaintext = try #require(try envelope.decryptResponse(try body.cryptogram()))
                defer { plaintext.destroy() }
                let claims = try WireCoding.decode(UserInfoResponse.self, plaintext.withUnsafeBytes { Array($0) })
                #expect(claims.sub == "alice")
            } else {
                #expect(response.statusCode == 400, "\(version)")
                #expect(Self.errorCode(response) == "ERR_ENCRYPTION", "\(version)")
            }
        }
    }
}
