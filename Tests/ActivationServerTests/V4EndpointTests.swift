import ActivationTestSupport
import Foundation
import PostQuantum
import PowerAuthProtocol
import SecureCore
import Testing

@testable import ActivationServer

@Suite("Protocol V4 (EC_P384) endpoints of the activation server")
struct V4EndpointTests {
    static func server(maxFailedAttempts: Int = 5) throws -> ActivationServer {
        var configuration = try ActivationServerConfiguration.generate(
            maxFailedAttempts: maxFailedAttempts, autoCommit: true)
        try configuration.serve(.ecP384)
        return try ActivationServer(configuration: configuration)
    }

    @Test("the SDK's order: create, confirm while PENDING_COMMIT, commit; nothing else works before the commit")
    func confirmBeforeCommit() async throws {
        var configuration = try ActivationServerConfiguration.generate(maxFailedAttempts: 5, autoCommit: false)
        try configuration.serve(.ecP384)
        let server = try ActivationServer(configuration: configuration)
        let prepared = try server.initActivation(userId: "alice")
        let device = try V4TestDevice(server: server)
        #expect(try await device.activate(code: prepared.activationCode).statusCode == 200)
        #expect(try server.activationDetail(device.activationId).state == .pendingCommit)
        // Before the commit only activation/confirm is admitted; the others are refused uncounted.
        for endpoint in [V4API.validate, V4API.activationRemove] {
            let refused = try await device.call(endpoint, body: Array("{}".utf8), factorSet: .possessionKnowledge)
            #expect(refused.statusCode == 401, "\(endpoint.path)")
        }
        #expect(try server.activationDetail(device.activationId).failedAttempts == 0)
        // A wrong code on confirm counts, as on any knowledge code.
        device.knowledge = try SecureBytes.random(count: 32)
        let wrong = try await device.call(
            V4API.activationConfirm, body: try WireCoding.encode(V4ConfirmRequest(enableBiometry: false)),
            factorSet: .possessionKnowledge)
        #expect(wrong.statusCode == 401)
        #expect(try server.activationDetail(device.activationId).failedAttempts == 1)
        device.knowledge = nil
        let confirmed = try await device.call(
            V4API.activationConfirm, body: try WireCoding.encode(V4ConfirmRequest(enableBiometry: false)),
            factorSet: .possessionKnowledge)
        #expect(confirmed.statusCode == 200)
        let pending = try server.activationDetail(device.activationId)
        #expect(pending.state == .pendingCommit && pending.failedAttempts == 0)
        var status = try await device.status()
        #expect(status.state == .pendingCommit && !status.isConfirmationPending)
        try server.commitActivation(device.activationId)
        status = try await device.status()
        #expect(status.state == .active && !status.isConfirmationPending)
        let ok = try await device.call(V4API.validate, body: Array("{}".utf8), factorSet: .possessionKnowledge)
        #expect(ok.statusCode == 200)
        // A second confirm is refused (400 ERR_ACTIVATION): it cannot turn biometry on again.
        let again = try await device.call(
            V4API.activationConfirm, body: try WireCoding.encode(V4ConfirmRequest(enableBiometry: true)),
            factorSet: .possessionKnowledge)
        #expect(again.statusCode == 400)
        #expect(try !server.activationDetail(device.activationId).biometryEnabled)
    }

    @Test("keystore/create: upstream's claims alone are enough; iat and exp, when sent, must be sane")
    func temporaryKeyTimes() async throws {
        let server = try Self.server()
        let device = try V4TestDevice(server: server)
        _ = try await device.temporaryKey(activation: false)
        let now = device.now / 1000
        _ = try await device.temporaryKey(activation: false, times: (now, now + 300))
        for (iat, exp) in [(now + 3600, now + 3900), (now - 7200, now - 3600), (now, now - 10)] {
            await #expect(throws: V4TestDevice.Failure.self, "iat \(iat - now), exp \(exp - now)") {
                _ = try await device.temporaryKey(activation: false, times: (iat, exp))
            }
        }
    }

    @Test("activation, fingerprint, confirm, status, validate, token create/remove, vault unlock, remove")
    func fullLifecycle() async throws {
        let server = try Self.server()
        let prepared = try server.initActivation(userId: "alice")
        let device = try V4TestDevice(server: server)
        let created = try await device.activate(code: prepared.activationCode)
        #expect(created.statusCode == 200)
        let keys = try #require(device.keys)

        let detail = try server.activationDetail(device.activationId)
        #expect(detail.state == .active)
        let fingerprint = try V4Fingerprint.compute(
            algorithm: .ecP384, devicePublicKey: device.deviceKeyPair.publicKey, activationId: device.activationId,
            serverPublicKey: device.serverPublicKey)
        #expect(detail.fingerprint == fingerprint)

        var status = try await device.status()
        #expect(status.state == .active && status.currentVersion == 4 && status.isConfirmationPending)
        #expect(try status.serverDistance(from: device.counter, counterDataMACKey: keys.counterDataMAC) == 0)

        let confirm = try WireCoding.encode(V4ConfirmRequest(enableBiometry: true))
        let confirmed = try await device.call(V4API.activationConfirm, body: confirm, factorSet: .possessionKnowledge)
        #expect(confirmed.statusCode == 200)
        status = try await device.status()
        #expect(!status.isConfirmationPending && status.isBiometryEnabled && status.counterByte == 1)

        for set in [FactorSet.possession, .possessionKnowledge, .possessionBiometry, .possessionKnowledgeBiometry] {
            let ok = try await device.call(V4API.validate, body: Array("{}".utf8), factorSet: set)
            #expect(ok.statusCode == 200, "\(set)")
        }

        let (tokenStatus, tokenBody) = try await device.encryptedCall(
            V4API.tokenCreate, plaintext: Array("{}".utf8), factorSet: .possessionKnowledge)
        #expect(tokenStatus == 200)
        let tokenJSON = try V4TestDevice.secure(tokenBody)
        let tokenSecret = try V4SecretJSON.decodeSecret(tokenJSON, secretName: "tokenSecret", count: 32)
        #expect(tokenSecret.count == 32)
        let tokenId = try #require(
            (try JSONSerialization.jsonObject(with: Data(tokenBody)) as? [String: Any])?["tokenId"] as? String)
        #expect(try server.store.token(tokenId: tokenId)?.factorSet == .possessionKnowledge)

        // An application server checks the token (digest, window, nonce once).
        let nonce = try SecureRandom.bytes(count: 16)
        let now = UInt64(device.now)
        let digest = try V4TokenDigest.compute(tokenSecret: tokenSecret, nonce: nonce, timestampMilliseconds: now)
        let tokenHeader = V4TokenHeader(tokenId: tokenId, digest: digest, nonce: nonce, timestampMilliseconds: now)
        #expect(try V4TokenHeader.parse(tokenHeader.value) == tokenHeader)
        let byToken = try server.verifyToken(header: tokenHeader.value)
        #expect(byToken.activationId == device.activationId && byToken.factorSet == .possessionKnowledge)
        #expect(throws: ActivationServerError.tokenInvalid) { try server.verifyToken(header: tokenHeader.value) }
        let forged = V4TokenHeader(
            tokenId: tokenId, digest: try SecureRandom.bytes(count: 32), nonce: try SecureRandom.bytes(count: 16),
            timestampMilliseconds: now)
        #expect(throws: ActivationServerError.tokenInvalid) { try server.verifyToken(header: forged.value) }

        // ... and a V4 code over its own resource identifier.
        let payment = V4API.Endpoint(path: "/pay", uriIdentifier: "/pa/payment", sharedInfo1: nil)
        let body = Array(#"{"amount":100}"#.utf8)
        let signed = try device.authorization(payment, body: body, factorSet: .possessionKnowledge)
        let verified = try server.verifyAuthorization(
            header: signed, method: "POST", uriIdentifier: "/pa/payment", body: body)
        #expect(verified.userId == "alice" && verified.factorSet == .possessionKnowledge)
        let replayed = #expect(throws: ActivationServerError.self) {
            try server.verifyAuthorization(header: signed, method: "POST", uriIdentifier: "/pa/payment", body: body)
        }
        #expect(replayed == .authenticationFailed)

        let (vaultStatus, vaultBody) = try await device.encryptedCall(
            V4API.vaultUnlock,
            plaintext: try WireCoding.encode(V4VaultUnlockRequest(keyIdentifier: "KEK_DEVICE_PRIVATE", reason: "test")),
            factorSet: .possessionKnowledge)
        #expect(vaultStatus == 200)
        let vaultKey = try V4SecretJSON.decodeSecret(
            try V4TestDevice.secure(vaultBody), secretName: "vaultEncryptionKey", count: 32)
        #expect(V4TestDevice.reveal(vaultKey) == V4TestDevice.reveal(keys.devicePrivateKEK))

        let removeToken = try await device.call(
            V4API.tokenRemove, body: try WireCoding.encode(V4TokenRemoveRequest(tokenId: tokenId)),
            factorSet: .possession)
        #expect(removeToken.statusCode == 200)
        #expect(try server.store.token(tokenId: tokenId) == nil)

        let removed = try await device.call(
            V4API.activationRemove, body: Array("{}".utf8), factorSet: .possessionKnowledge)
        #expect(removed.statusCode == 200)
        #expect(try server.activationDetail(device.activationId).state == .removed)
    }

    @Test("upstream's factor rules: refused factor sets answer before any code is verified, nothing counted")
    func factorRules() async throws {
        let server = try Self.server()
        let prepared = try server.initActivation(userId: "alice")
        let device = try V4TestDevice(server: server)
        #expect(try await device.activate(code: prepared.activationCode).statusCode == 200)
        let confirm = try WireCoding.encode(V4ConfirmRequest(enableBiometry: false))
        #expect(
            try await device.call(V4API.activationConfirm, body: confirm, factorSet: .possessionKnowledge)
                .statusCode == 200)
        // Every refusal below uses a wrong knowledge key, so a verified code would count.
        device.knowledge = try SecureBytes.random(count: 32)
        func vault(_ key: String, _ set: FactorSet) async throws -> Int {
            try await device.encryptedCall(
                V4API.vaultUnlock,
                plaintext: try WireCoding.encode(V4VaultUnlockRequest(keyIdentifier: key, reason: "test")),
                factorSet: set
            ).0
        }
        // vault/unlock: per key (v4 VaultUnlockServiceBehavior.checkKeyIdentifier), 400 ERR_SECURE_VAULT.
        for (key, set) in [
            ("KEK_DEVICE_PRIVATE", FactorSet.possession), ("KEK_DEVICE_PRIVATE", .possessionKnowledgeBiometry),
            ("KDK_APP_VAULT_KNOWLEDGE", .possessionBiometry), ("KDK_APP_VAULT_2FA", .possession),
        ] {
            #expect(try await vault(key, set) == 400, "\(key) \(set)")
        }
        // activation/remove takes no possession_knowledge_biometry; token/create and token/remove neither.
        for (endpoint, set) in [
            (V4API.activationRemove, FactorSet.possessionKnowledgeBiometry),
            (V4API.activationRemove, .possession), (V4API.tokenRemove, .possessionKnowledgeBiometry),
        ] {
            let refused = try await device.call(endpoint, body: Array("{}".utf8), factorSet: set)
            #expect(refused.statusCode == 401, "\(endpoint.path) \(set)")
        }
        // Biometry the activation does not have: refused before any key is tried, uncounted.
        let biometry = try await device.call(V4API.validate, body: Array("{}".utf8), factorSet: .possessionBiometry)
        #expect(biometry.statusCode == 401)
        #expect(try server.activationDetail(device.activationId).failedAttempts == 0)
        // The same wrong key on an admitted factor set is verified, refused (401) and counted.
        #expect(try await vault("KDK_APP_VAULT_KNOWLEDGE", .possessionKnowledge) == 401)
        #expect(try server.activationDetail(device.activationId).failedAttempts == 1)
        device.knowledge = nil
        #expect(try await vault("KDK_APP_VAULT_KNOWLEDGE", .possessionKnowledge) == 200)
        #expect(try server.activationDetail(device.activationId).failedAttempts == 0)
    }

    @Test("a wrong PIN is counted and blocks at the limit")
    func wrongPINBlocks() async throws {
        let server = try Self.server(maxFailedAttempts: 3)
        let device = try V4TestDevice(server: server)
        _ = try await device.activate(code: try server.initActivation(userId: "bob").activationCode)
        let wrong = try SecureBytes.random(count: 32)
        for attempt in 1...3 {
            let response = try await device.call(
                V4API.validate, body: Array("{}".utf8), factorSet: .possessionKnowledge, knowledge: wrong)
            #expect(response.statusCode == 401)
            let detail = try server.activationDetail(device.activationId)
            #expect(detail.failedAttempts == (attempt < 3 ? attempt : 3))
            #expect(detail.state == (attempt < 3 ? .active : .blocked))
        }
        // Blocked: even the right PIN is refused now.
        let right = try await device.call(V4API.validate, body: Array("{}".utf8), factorSet: .possessionKnowledge)
        #expect(right.statusCode == 401)
    }

    @Test("possession-only failures are not counted; a success with knowledge resets the count")
    func countingRules() async throws {
        let server = try Self.server(maxFailedAttempts: 5)
        let device = try V4TestDevice(server: server)
        _ = try await device.activate(code: try server.initActivation(userId: "carol").activationCode)
        let keys = try #require(device.keys)
        // A possession code under a foreign key: not counted.
        let header = try V4AuthorizationHeader(
            activationId: device.activationId, applicationKey: device.applicationKey,
            nonce: try SecureRandom.bytes(count: 16), factorSet: .possession,
            authenticationCode: Data(try SecureRandom.bytes(count: 32)).base64EncodedString())
        let forged = await device.send(
            V4API.validate.path, headers: [AuthorizationHeader.name: header.value], body: [])
        #expect(forged.statusCode == 401)
        #expect(try server.activationDetail(device.activationId).failedAttempts == 0)
        let wrong = try await device.call(
            V4API.validate, body: [], factorSet: .possessionKnowledge, knowledge: try SecureBytes.random(count: 32))
        #expect(wrong.statusCode == 401)
        #expect(try server.activationDetail(device.activationId).failedAttempts == 1)
        let right = try await device.call(
            V4API.validate, body: [], factorSet: .possessionKnowledge, knowledge: keys.knowledge)
        #expect(right.statusCode == 200)
        #expect(try server.activationDetail(device.activationId).failedAttempts == 0)
    }

    @Test("replayed or stale encrypted requests, a used activation code, V4 on a LEGACY_P256 application: refused")
    func refusals() async throws {
        let server = try Self.server()
        let device = try V4TestDevice(server: server)
        let prepared = try server.initActivation(userId: "dave")
        _ = try await device.activate(code: prepared.activationCode)

        // The same sealed status request twice.
        let key = try await device.temporaryKey(activation: true)
        let context = try device.context(key, .genericActivation, activation: true)
        let (request, _) = try context.encryptRequest(
            try V4TestDevice.secure(Array("{}".utf8)), timestampMilliseconds: device.now)
        let headers = [
            V4EncryptionHeader.name: V4EncryptionHeader(
                applicationKey: device.applicationKey, activationId: device.activationId
            ).value
        ]
        let first = await device.send(
            V4API.activationStatus.path, headers: headers, body: try WireCoding.encode(request))
        #expect(first.statusCode == 200)
        let second = await device.send(
            V4API.activationStatus.path, headers: headers, body: try WireCoding.encode(request))
        #expect(second.statusCode == 400)

        // An old timestamp.
        let (old, _) = try context.encryptRequest(
            try V4TestDevice.secure(Array("{}".utf8)), timestampMilliseconds: device.now - 600_000)
        let stale = await device.send(V4API.activationStatus.path, headers: headers, body: try WireCoding.encode(old))
        #expect(stale.statusCode == 400)

        // A second activation with the used code.
        let again = try V4TestDevice(server: server)
        let reused = try await again.activate(code: prepared.activationCode)
        #expect(reused.statusCode == 400)

        // A LEGACY_P256 application answers no V4 endpoint.
        let legacy = try ActivationServer(configuration: try ActivationServerConfiguration.generate(autoCommit: true))
        let refused = await legacy.handle(
            TransportRequest(path: V4API.keystoreCreate.path, body: Array(#"{"jwt":"a.b.c"}"#.utf8)))
        #expect(refused.statusCode == 400)
    }

    @Test("password change: the old PIN works until the new key is used, then it is refused and counted")
    func passwordChange() async throws {
        let server = try Self.server()
        let device = try V4TestDevice(server: server)
        _ = try await device.activate(code: try server.initActivation(userId: "erin").activationCode)
        let original = try #require(device.keys).knowledge
        let (code, first) = try await device.rotate(V4API.passwordChange)
        #expect(code == 200)
        let firstKey = try #require(first)
        #expect(V4TestDevice.reveal(firstKey) != V4TestDevice.reveal(original))
        // The device switches to the new key: accepted, and the server promotes it.
        device.knowledge = firstKey
        let withNew = try await device.call(V4API.validate, body: [], factorSet: .possessionKnowledge)
        #expect(withNew.statusCode == 200)
        let withOld = try await device.call(
            V4API.validate, body: [], factorSet: .possessionKnowledge, knowledge: original)
        #expect(withOld.statusCode == 401)
        #expect(try server.activationDetail(device.activationId).failedAttempts == 1)
        // A change whose new key is never used is dropped by the next success with the current key.
        let (_, second) = try await device.rotate(V4API.passwordChange)
        let secondKey = try #require(second)
        let current = try await device.call(V4API.validate, body: [], factorSet: .possessionKnowledge)
        #expect(current.statusCode == 200)
        let abandoned = try await device.call(
            V4API.validate, body: [], factorSet: .possessionKnowledge, knowledge: secondKey)
        #expect(abandoned.statusCode == 401)
    }

    @Test("biometry add gives a new biometry key the server accepts; remove makes biometry codes fail")
    func biometryAddRemove() async throws {
        let server = try Self.server()
        let device = try V4TestDevice(server: server)
        _ = try await device.activate(code: try server.initActivation(userId: "frank").activationCode)
        let off = try await device.call(V4API.validate, body: [], factorSet: .possessionBiometry)
        #expect(off.statusCode == 401)
        let (code, added) = try await device.rotate(V4API.biometryAdd)
        #expect(code == 200)
        device.biometry = try #require(added)
        #expect(try await device.status().isBiometryEnabled)
        let on = try await device.call(V4API.validate, body: [], factorSet: .possessionBiometry)
        #expect(on.statusCode == 200)
        let tree = try await device.call(
            V4API.validate, body: [], factorSet: .possessionKnowledgeBiometry)
        #expect(tree.statusCode == 200)
        let removed = try await device.call(V4API.biometryRemove, body: [], factorSet: .possession)
        #expect(removed.statusCode == 200)
        #expect(try await !device.status().isBiometryEnabled)
        let after = try await device.call(V4API.validate, body: [], factorSet: .possessionBiometry)
        #expect(after.statusCode == 401)
    }

    @Test(
        "devicePublicKeys.mldsa: refused for EC_P384 and for another parameter set; a hybrid key of the suite is kept")
    func deviceMLDSAKey() async throws {
        let plain = try Self.server()
        let ml87 = try MLDSA.KeyPair.generate(.mldsa87)
        defer { ml87.destroy() }
        let spki87 = Data(ml87.publicKeyInfo).base64EncodedString()
        let refused = try await V4TestDevice(server: plain).activate(
            code: try plain.initActivation(userId: "p").activationCode, mldsa: spki87)
        #expect(refused.statusCode == 400)
        var configuration = try ActivationServerConfiguration.generate(autoCommit: true)
        try configuration.serve(.ecP384MLL3)
        let hybrid = try ActivationServer(configuration: configuration)
        let wrongSet = try await V4TestDevice(server: hybrid).activate(
            code: try hybrid.initActivation(userId: "h").activationCode, mldsa: spki87)
        #expect(wrongSet.statusCode == 400)
        let ml65 = try MLDSA.KeyPair.generate(.mldsa65)
        defer { ml65.destroy() }
        let prepared = try hybrid.initActivation(userId: "k")
        let accepted = try await V4TestDevice(server: hybrid).activate(
            code: prepared.activationCode, mldsa: Data(ml65.publicKeyInfo).base64EncodedString())
        #expect(accepted.statusCode == 200)
        #expect(
            try hybrid.store.fetch(activationId: prepared.activationId)?.v4?.devicePostQuantumPublicKey
                == ml65.publicKey)
    }

    @Test("malformed bodies and headers on every V4 path are 4xx, never a server error")
    func malformedRequests() async throws {
        let server = try Self.server()
        let device = try V4TestDevice(server: server)
        _ = try await device.activate(code: try server.initActivation(userId: "heidi").activationCode)
        var generator = SystemRandomNumberGenerator()
        let bodies: [[UInt8]] = [
            [], Array("{".utf8), Array("[]".utf8), Array(#"{"jwt":42}"#.utf8),
            Array(#"{"temporaryKeyId":"x","encryptedData":"AAAA","nonce":"AAAA","timestamp":-1}"#.utf8),
            (0..<200).map { _ in UInt8.random(in: 0...255, using: &generator) },
        ]
        let headers: [[String: String]] = [
            [:], [AuthorizationHeader.name: "PowerAuth"],
            [AuthorizationHeader.name: #"PowerAuth pa_version="4.0", pa_activation_id="\#(device.activationId)""#],
            [V4EncryptionHeader.name: #"PowerAuth version="4.0", application_key="x""#],
            [
                V4EncryptionHeader.name: V4EncryptionHeader(
                    applicationKey: device.applicationKey, activationId: device.activationId
                ).value
            ],
        ]
        for endpoint in V4API.all {
            for body in bodies {
                for header in headers {
                    let response = await device.send(endpoint.path, headers: header, body: body)
                    // `/pa/v4/status` needs nothing: an empty body or any JSON object is a question.
                    let allowed = endpoint == V4API.serverStatus ? 200..<500 : 400..<500
                    #expect(allowed.contains(response.statusCode), "\(endpoint.path): \(response.statusCode)")
                }
            }
        }
        #expect(try server.activationDetail(device.activationId).state == .active)
    }
}
