import Foundation
import PowerAuthProtocol
import SecureCore
import Testing

@testable import ActivationServer

/// A V4 device for the server tests, built from the protocol layer only (no client service
/// yet): it fetches temporary keys, activates, signs and reads the status blob.
final class V4TestDevice {
    let server: ActivationServer
    let applicationKey: String
    let applicationSecret: String
    let masterPublicKey: [UInt8]
    let deviceKeyPair: ECP384KeyPair
    var activationId = ""
    var keys: V4ActivationKeys?
    var counter = V4HashCounter.random()
    var serverPublicKey: [UInt8] = []
    var now: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    init(server: ActivationServer) throws {
        self.server = server
        applicationKey = Data(server.configuration.applicationKey).base64EncodedString()
        applicationSecret = Data(server.configuration.applicationSecret).base64EncodedString()
        masterPublicKey = try #require(server.configuration.v4MasterKeyPair?.publicKey)
        deviceKeyPair = try ECP384KeyPair.generate()
    }

    func send(_ path: String, headers: [String: String] = [:], body: [UInt8], method: String = "POST") async
        -> TransportResponse
    {
        await server.handle(TransportRequest(method: method, path: path, headers: headers, body: body))
    }

    /// A temporary key in application scope (`activation == false`) or activation scope.
    func temporaryKey(activation: Bool) async throws -> (id: String, secret: SecureBytes) {
        let (context, shared) = try V4SharedSecret.makeRequest(algorithm: .ecP384)
        let claims = V4TemporaryKeyRequestClaims(
            applicationKey: applicationKey, activationId: activation ? activationId : nil,
            challenge: try V4TemporaryKeyJWT.makeChallenge(), sharedSecretRequest: shared, iat: now / 1000,
            exp: now / 1000 + 300)
        let macKey =
            activation
            ? try #require(keys).activationTemporaryKeyMAC
            : try V4ActivationKeys.applicationTemporaryKeyMAC(applicationSecret: applicationSecret)
        let jwt = try V4TemporaryKeyJWT.signRequest(claims, key: macKey)
        let response = await send(V4API.keystoreCreate.path, body: try WireCoding.encode(JWTMessage(jwt: jwt)))
        #expect(response.statusCode == 200)
        let message = try WireCoding.decode(JWTMessage.self, response.body)
        let verified = try V4TemporaryKeyJWT.verifyResponse(
            message.jwt, publicKey: activation ? serverPublicKey : masterPublicKey, request: claims, now: Date())
        return (verified.temporaryKeyId, try V4SharedSecret.finish(context, response: verified.sharedSecretResponse))
    }

    func context(_ key: (id: String, secret: SecureBytes), _ sharedInfo1: V4SharedInfo1, activation: Bool) throws
        -> V4EncryptionContext
    {
        try V4EncryptionContext(
            sharedSecret: key.secret, temporaryKeyId: key.id, applicationKey: applicationKey,
            applicationSecret: applicationSecret, sharedInfo1: sharedInfo1.rawValue,
            scope: activation
                ? .activation(activationId: activationId, sharedInfo2Key: try #require(keys).sharedInfo2) : .application
        )
    }

    static func secure(_ bytes: [UInt8]) throws -> SecureBytes {
        try bytes.withUnsafeBytes { try SecureBytes(copying: $0) }
    }

    static func reveal(_ value: SecureBytes?) -> [UInt8] { value?.withUnsafeBytes { Array($0) } ?? [] }

    func activate(code: String) async throws -> TransportResponse {
        let key = try await temporaryKey(activation: false)
        let (sharedContext, shared) = try V4SharedSecret.makeRequest(algorithm: .ecP384)
        let inner = try context(key, .activation, activation: false)
        let innerBody = V4ActivationLayer2Request(
            sharedSecretRequest: shared,
            devicePublicKeys: V4PublicKeys(ecdsa: Data(deviceKeyPair.publicKey).base64EncodedString()),
            activationName: "test device")
        let (innerRequest, innerNonce) = try inner.encryptRequest(
            try Self.secure(try WireCoding.encode(innerBody)), timestampMilliseconds: now)
        let outer = try context(key, .genericApplication, activation: false)
        let (outerRequest, outerNonce) = try outer.encryptRequest(
            try Self.secure(try WireCoding.encode(V4ActivationLayer1Request(code: code, activationData: innerRequest))),
            timestampMilliseconds: now)
        let response = await send(
            V4API.activationCreate.path,
            headers: [
                V4EncryptionHeader.name: V4EncryptionHeader(applicationKey: applicationKey, activationId: nil).value
            ],
            body: try WireCoding.encode(outerRequest))
        guard response.statusCode == 200 else { return response }
        let outerPlain = try outer.decryptResponse(
            try WireCoding.decode(V4EncryptedResponse.self, response.body), nonce: outerNonce)
        let layer1 = try WireCoding.decode(V4ActivationLayer1Response.self, Self.reveal(outerPlain))
        let innerPlain = try inner.decryptResponse(layer1.activationData, nonce: innerNonce)
        let layer2 = try WireCoding.decode(V4ActivationLayer2Response.self, Self.reveal(innerPlain))
        let secret = try V4SharedSecret.finish(sharedContext, response: layer2.sharedSecretResponse)
        keys = try V4ActivationKeys(activationSecret: secret)
        activationId = layer2.activationId
        counter = try V4HashCounter(base64: layer2.ctrData)
        serverPublicKey = try #require(Data(base64Encoded: layer2.serverPublicKeys.ecdsa).map { [UInt8]($0) })
        return response
    }

    /// The `X-PowerAuth-Authorization` value for a request, advancing the local counter.
    func authorization(
        _ endpoint: V4API.Endpoint, body: [UInt8], factorSet: FactorSet, knowledge: SecureBytes? = nil,
        method: String = "POST"
    ) throws -> String {
        let keys = try #require(self.keys)
        let nonce = try SecureRandom.bytes(count: 16)
        let data = try RequestData(
            method: method, uriIdentifier: try #require(endpoint.uriIdentifier), nonce: nonce, body: body
        ).normalized(applicationSecret: applicationSecret)
        let code = try V4AuthenticationCode.compute(
            factorSet: factorSet,
            keys: V4FactorKeys(
                possession: keys.possession, knowledge: knowledge ?? keys.knowledge, biometry: keys.biometry),
            counter: counter, data: data)
        counter = try counter.next()
        return try V4AuthorizationHeader(
            activationId: activationId, applicationKey: applicationKey, nonce: nonce, factorSet: factorSet,
            authenticationCode: code
        ).value
    }

    func call(
        _ endpoint: V4API.Endpoint, body: [UInt8], factorSet: FactorSet, knowledge: SecureBytes? = nil,
        extraHeaders: [String: String] = [:]
    ) async throws -> TransportResponse {
        var headers = extraHeaders
        headers[AuthorizationHeader.name] = try authorization(
            endpoint, body: body, factorSet: factorSet, knowledge: knowledge)
        return await send(endpoint.path, headers: headers, body: body)
    }

    /// An encrypted activation-scope call; returns the status and the decrypted response.
    func encryptedCall(
        _ endpoint: V4API.Endpoint, plaintext: [UInt8], factorSet: FactorSet?
    ) async throws -> (Int, [UInt8]) {
        let key = try await temporaryKey(activation: true)
        let context = try context(key, try #require(endpoint.sharedInfo1), activation: true)
        let (request, nonce) = try context.encryptRequest(try Self.secure(plaintext), timestampMilliseconds: now)
        let body = try WireCoding.encode(request)
        let header = [
            V4EncryptionHeader.name: V4EncryptionHeader(applicationKey: applicationKey, activationId: activationId)
                .value
        ]
        let response =
            if let factorSet {
                try await call(endpoint, body: body, factorSet: factorSet, extraHeaders: header)
            } else {
                await send(endpoint.path, headers: header, body: body)
            }
        guard response.statusCode == 200 else { return (response.statusCode, []) }
        let plain = try context.decryptResponse(
            try WireCoding.decode(V4EncryptedResponse.self, response.body), nonce: nonce)
        return (200, Self.reveal(plain))
    }

    func status() async throws -> V4StatusBlob {
        let (code, body) = try await encryptedCall(V4API.activationStatus, plaintext: Array("{}".utf8), factorSet: nil)
        #expect(code == 200)
        let response = try WireCoding.decode(V4StatusResponse.self, body)
        let blob = try #require(Data(base64Encoded: response.activationStatus).map { [UInt8]($0) })
        return try V4StatusBlob(opening: blob, statusMACKey: try #require(keys).statusMAC)
    }
}

@Suite("Protocol V4 (EC_P384) endpoints of the activation server")
struct V4EndpointTests {
    static func server(maxFailedAttempts: Int = 5) throws -> ActivationServer {
        var configuration = try ActivationServerConfiguration.generate(
            maxFailedAttempts: maxFailedAttempts, autoCommit: true)
        try configuration.serve(.ecP384)
        return try ActivationServer(configuration: configuration)
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
}
