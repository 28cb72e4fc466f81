import ActivationServer
import Foundation
import PostQuantum
import PowerAuthProtocol
import SecureCore

/// A V4 device for the server tests, built from the protocol layer only (no client service
/// yet): it fetches temporary keys, activates, signs and reads the status blob.
package final class V4TestDevice {
    package struct Failure: Error { package let what: String }
    package let transport: any ActivationTransport
    package let applicationKey: String
    package let applicationSecret: String
    package let masterPublicKey: [UInt8]
    package let deviceKeyPair: ECP384KeyPair
    package var activationId = ""
    package var keys: V4ActivationKeys?
    package var counter = V4HashCounter.random()
    package var serverPublicKey: [UInt8] = []
    /// The suite the application serves (the device's requests and expected signatures).
    package let algorithm: ProtocolAlgorithm
    /// The ML-DSA master public key of a hybrid application.
    package let masterPostQuantumKey: (publicKey: [UInt8], parameterSet: MLDSA.ParameterSet)?
    /// The activation's ML-DSA server key (hybrid suites), from `activation/create`.
    package var serverPostQuantumKey: (publicKey: [UInt8], parameterSet: MLDSA.ParameterSet)?
    /// The knowledge key after a password change (`nil`: the key tree's).
    package var knowledge: SecureBytes?
    /// The biometry key after a biometry addition (`nil`: the key tree's).
    package var biometry: SecureBytes?
    package var now: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// A device for the application of `configuration` (a V4 one, in its suite), over `transport`.
    package init(configuration: ActivationServerConfiguration, transport: any ActivationTransport) throws {
        self.transport = transport
        algorithm = configuration.algorithm
        masterPostQuantumKey = configuration.v4PostQuantumMasterKeyPair.map { ($0.publicKey, $0.parameterSet) }
        applicationKey = Data(configuration.applicationKey).base64EncodedString()
        applicationSecret = Data(configuration.applicationSecret).base64EncodedString()
        masterPublicKey = try Self.require(configuration.v4MasterKeyPair?.publicKey, "a V4 master key")
        deviceKeyPair = try ECP384KeyPair.generate()
    }

    /// A device talking to `server` in process.
    package convenience init(server: ActivationServer) throws {
        try self.init(configuration: server.configuration, transport: InProcessTransport(server: server))
    }

    static func require<T>(_ value: T?, _ what: String) throws -> T {
        guard let value else { throw Failure(what: what) }
        return value
    }

    package func send(_ path: String, headers: [String: String] = [:], body: [UInt8], method: String = "POST") async
        -> TransportResponse
    {
        let request = TransportRequest(method: method, path: path, headers: headers, body: body)
        do {
            return try await transport.send(request, timeout: .seconds(10))
        } catch {
            return TransportResponse(statusCode: 599, body: [])
        }
    }

    /// A temporary key in application scope (`activation == false`) or activation scope.
    /// The claims are upstream's request model (no `iat`/`exp`) unless `times` gives them.
    package func temporaryKey(activation: Bool, times: (iat: Int64, exp: Int64)? = nil) async throws -> (
        id: String, secret: SecureBytes
    ) {
        let (context, shared) = try V4SharedSecret.makeRequest(algorithm: algorithm)
        let claims = V4TemporaryKeyRequestClaims(
            applicationKey: applicationKey, activationId: activation ? activationId : nil,
            challenge: try V4TemporaryKeyJWT.makeChallenge(), sharedSecretRequest: shared, iat: times?.iat,
            exp: times?.exp)
        let macKey =
            activation
            ? try Self.require(keys, "keys").activationTemporaryKeyMAC
            : try V4ActivationKeys.applicationTemporaryKeyMAC(applicationSecret: applicationSecret)
        let jwt = try V4TemporaryKeyJWT.signRequest(claims, key: macKey)
        // The bare `{"jwt"}` request the server also accepts (the client sends upstream's wrapped one).
        let response = await send(V4API.keystoreCreate.path, body: try WireCoding.encode(JWTMessage(jwt: jwt)))
        guard response.statusCode == 200 else { throw Failure(what: "keystore/create: HTTP \(response.statusCode)") }
        let message = try Self.require(
            try WireCoding.decode(ResponseEnvelope<JWTMessage>.self, response.body).responseObject, "responseObject")
        let verified = try V4TemporaryKeyJWT.verifyResponse(
            message.jwt, publicKey: activation ? serverPublicKey : masterPublicKey,
            postQuantum: activation ? serverPostQuantumKey : masterPostQuantumKey, request: claims, now: Date())
        return (verified.temporaryKeyId, try V4SharedSecret.finish(context, response: verified.sharedSecretResponse))
    }

    package func context(_ key: (id: String, secret: SecureBytes), _ sharedInfo1: V4SharedInfo1, activation: Bool)
        throws
        -> V4EncryptionContext
    {
        try V4EncryptionContext(
            sharedSecret: key.secret, temporaryKeyId: key.id, applicationKey: applicationKey,
            applicationSecret: applicationSecret, sharedInfo1: sharedInfo1.rawValue,
            scope: activation
                ? .activation(activationId: activationId, sharedInfo2Key: try Self.require(keys, "keys").sharedInfo2)
                : .application
        )
    }

    package static func secure(_ bytes: [UInt8]) throws -> SecureBytes {
        try bytes.withUnsafeBytes { try SecureBytes(copying: $0) }
    }

    package static func reveal(_ value: SecureBytes?) -> [UInt8] { value?.withUnsafeBytes { Array($0) } ?? [] }

    /// - Parameter mldsa: what to send as `devicePublicKeys.mldsa` (none by default).
    package func activate(code: String, mldsa: String? = nil) async throws -> TransportResponse {
        let key = try await temporaryKey(activation: false)
        let (sharedContext, shared) = try V4SharedSecret.makeRequest(algorithm: algorithm)
        let inner = try context(key, .activation, activation: false)
        let innerBody = V4ActivationLayer2Request(
            sharedSecretRequest: shared,
            devicePublicKeys: V4PublicKeys(
                ecdsa: Data(deviceKeyPair.publicKey).base64EncodedString(), mldsa: mldsa),
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
        serverPublicKey = try Self.require(
            Data(base64Encoded: layer2.serverPublicKeys.ecdsa).map { [UInt8]($0) }, "server key")
        if let set = algorithm.signatureParameterSet {
            let der = try Self.require(
                layer2.serverPublicKeys.mldsa.flatMap { Data(base64Encoded: $0) }.map { [UInt8]($0) },
                "server ML-DSA key")
            serverPostQuantumKey = (try MLDSA.publicKey(set, fromPublicKeyInfo: der), set)
        }
        return response
    }

    /// The `X-PowerAuth-Authorization` value for a request, advancing the local counter.
    package func authorization(
        _ endpoint: V4API.Endpoint, body: [UInt8], factorSet: FactorSet, knowledge: SecureBytes? = nil,
        method: String = "POST"
    ) throws -> String {
        let keys = try Self.require(self.keys, "keys")
        let nonce = try SecureRandom.bytes(count: 16)
        let data = try RequestData(
            method: method, uriIdentifier: try Self.require(endpoint.uriIdentifier, "uriId"), nonce: nonce, body: body
        ).normalized(applicationSecret: applicationSecret)
        let code = try V4AuthenticationCode.compute(
            factorSet: factorSet,
            keys: V4FactorKeys(
                possession: keys.possession, knowledge: knowledge ?? self.knowledge ?? keys.knowledge,
                biometry: self.biometry ?? keys.biometry),
            counter: counter, data: data)
        counter = try counter.next()
        return try V4AuthorizationHeader(
            activationId: activationId, applicationKey: applicationKey, nonce: nonce, factorSet: factorSet,
            authenticationCode: code
        ).value
    }

    package func call(
        _ endpoint: V4API.Endpoint, body: [UInt8], factorSet: FactorSet, knowledge: SecureBytes? = nil,
        extraHeaders: [String: String] = [:]
    ) async throws -> TransportResponse {
        var headers = extraHeaders
        headers[AuthorizationHeader.name] = try authorization(
            endpoint, body: body, factorSet: factorSet, knowledge: knowledge)
        return await send(endpoint.path, headers: headers, body: body)
    }

    /// An encrypted activation-scope call; returns the status and the decrypted response.
    package func encryptedCall(
        _ endpoint: V4API.Endpoint, plaintext: [UInt8], factorSet: FactorSet?
    ) async throws -> (Int, [UInt8]) {
        let key = try await temporaryKey(activation: true)
        let context = try context(key, try Self.require(endpoint.sharedInfo1, "SH1"), activation: true)
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

    package func status() async throws -> V4StatusBlob {
        let (code, body) = try await encryptedCall(V4API.activationStatus, plaintext: Array("{}".utf8), factorSet: nil)
        guard code == 200 else { throw Failure(what: "status: HTTP \(code)") }
        let response = try WireCoding.decode(V4StatusResponse.self, body)
        let blob = try Self.require(Data(base64Encoded: response.activationStatus).map { [UInt8]($0) }, "blob")
        return try V4StatusBlob(opening: blob, statusMACKey: try Self.require(keys, "keys").statusMAC)
    }

    /// `password/change` or `biometry/add`: the new factor key from a shared-secret exchange.
    package func rotate(_ endpoint: V4API.Endpoint) async throws -> (Int, SecureBytes?) {
        let (context, request) = try V4SharedSecret.makeRequest(algorithm: algorithm)
        let (code, body) = try await encryptedCall(
            endpoint, plaintext: try WireCoding.encode(request), factorSet: .possessionKnowledge)
        guard code == 200 else { return (code, nil) }
        let response = try WireCoding.decode(V4SharedSecretResponse.self, body)
        return (200, try V4SharedSecret.finish(context, response: response))
    }
}
