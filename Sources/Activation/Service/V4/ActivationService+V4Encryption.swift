import Biometry
import Foundation
import PostQuantum
import PowerAuthProtocol
import SecureCore

// V4 temporary keys and end-to-end encryption on the client.
extension ActivationService {
    // MARK: - Temporary keys and encryption

    /// A fresh temporary key (`/pa/v4/keystore/create`), application scope (`activation == nil`)
    /// or activation scope, in the configuration's suite or the activation's; the response's
    /// ES384 signature is checked with the master key or the activation's server key, and for a
    /// hybrid suite its ML-DSA signature too (both must hold).
    func v4TemporaryKey(activation: V4ClientActivation?) async throws(ActivationError) -> (
        id: String, secret: SecureBytes
    ) {
        let sdk = configuration.sdkConfiguration
        let suite = activation?.state.suite ?? configuration.algorithm
        let (kem, shared) = try protocolStep { () throws(ProtocolError) in
            try V4SharedSecret.makeRequest(algorithm: suite)
        }
        defer {
            kem.keyPair.privateKey.destroy()
            kem.destroy()
        }
        let challenge: String
        do throws(JWTError) {
            challenge = try V4TemporaryKeyJWT.makeChallenge()
        } catch {
            throw .protocolError(.jwt(error))
        }
        // Upstream's request model: no `iat`/`exp` (powerauth-crypto `GetTemporaryKeyRequest`).
        let claims = V4TemporaryKeyRequestClaims(
            applicationKey: sdk.applicationKey, activationId: activation?.state.activationId, challenge: challenge,
            sharedSecretRequest: shared)
        let macKey: SecureBytes
        let verifier: [UInt8]
        let postQuantumVerifier: (publicKey: [UInt8], parameterSet: MLDSA.ParameterSet)?
        if let activation {
            postQuantumVerifier = activation.state.serverPostQuantumKey
            guard (postQuantumVerifier == nil) == (suite.signatureParameterSet == nil) else {
                throw .invalidActivationData(reason: "the V4 state has a bad ML-DSA public key")
            }
            macKey = try coreStep { () throws(SecureCoreError) in try activation.keys.activationTemporaryKeyMAC.copy() }
            verifier = Base64.decode(activation.state.serverPublicKey) ?? []
        } else {
            postQuantumVerifier = try v4PostQuantumMasterKey
            macKey = try protocolStep { () throws(ProtocolError) in
                try V4ActivationKeys.applicationTemporaryKeyMAC(applicationSecret: sdk.applicationSecret)
            }
            verifier = try v4MasterPublicKey
        }
        defer { macKey.destroy() }
        let jwt: String
        do throws(JWTError) {
            jwt = try V4TemporaryKeyJWT.signRequest(claims, key: macKey)
        } catch {
            throw .protocolError(.jwt(error))
        }
        let path = V4API.keystoreCreate.path
        // `ObjectRequest<TemporaryKeyRequest>` / `ObjectResponse<TemporaryKeyResponse>` as upstream; a
        // bare `{"jwt"}` answer is read too.
        let answer = try await exchange(
            path: path,
            body: try protocolStep { () throws(ProtocolError) in
                try WireCoding.encode(RequestEnvelope(requestObject: JWTMessage(jwt: jwt)))
            },
            headers: [:], authentication: nil)
        let wrapped = (try? WireCoding.decode(ResponseEnvelope<JWTMessage>.self, answer))?.responseObject
        guard let message = wrapped ?? (try? WireCoding.decode(JWTMessage.self, answer)),
            let verified = try? V4TemporaryKeyJWT.verifyResponse(
                message.jwt, publicKey: verifier, postQuantum: postQuantumVerifier, request: claims, now: clock.now())
        else { throw .invalidResponse(reason: "keystore/create: the response does not verify") }
        do throws(ProtocolError) {
            return (
                verified.temporaryKeyId, try V4SharedSecret.finish(kem, response: verified.sharedSecretResponse)
            )
        } catch {
            throw .invalidResponse(reason: "keystore/create: the shared secret does not complete")
        }
    }

    func v4Context(
        _ key: (id: String, secret: SecureBytes), _ sharedInfo1: V4SharedInfo1, activation: V4ClientActivation?
    )
        throws(ActivationError) -> V4EncryptionContext
    {
        let sdk = configuration.sdkConfiguration
        return try protocolStep { () throws(ProtocolError) in
            try V4EncryptionContext(
                sharedSecret: key.secret, temporaryKeyId: key.id, applicationKey: sdk.applicationKey,
                applicationSecret: sdk.applicationSecret, sharedInfo1: sharedInfo1.rawValue,
                scope: activation.map {
                    .activation(activationId: $0.state.activationId, sharedInfo2Key: $0.keys.sharedInfo2)
                } ?? .application)
        }
    }

    func v4Open(_ answer: [UInt8], context: V4EncryptionContext, nonce: [UInt8], path: String)
        throws(ActivationError) -> SecureBytes?
    {
        guard let response = try? WireCoding.decode(V4EncryptedResponse.self, answer) else {
            throw .invalidResponse(reason: "\(path): the body is not an encrypted response")
        }
        return try v4OpenResponse(response, context: context, nonce: nonce, path: path)
    }

    func v4OpenResponse(_ response: V4EncryptedResponse, context: V4EncryptionContext, nonce: [UInt8], path: String)
        throws(ActivationError) -> SecureBytes?
    {
        do throws(ProtocolError) {
            return try context.decryptResponse(response, nonce: nonce)
        } catch {
            throw .invalidResponse(reason: "\(path): the encrypted response does not open")
        }
    }

    /// An activation-scope encrypted call, signed when `authentication` is given (the code covers
    /// the encrypted body).
    func v4SendEncrypted(_ endpoint: V4API.Endpoint, plaintext: SecureBytes?, authentication: ActivationAuthentication?)
        async throws(ActivationError) -> SecureBytes?
    {
        guard let activation = v4, let sharedInfo1 = endpoint.sharedInfo1 else { throw .missingActivation }
        let key = try await v4TemporaryKey(activation: activation)
        defer { key.secret.destroy() }
        let context = try v4Context(key, sharedInfo1, activation: activation)
        let now = Int64(clock.now().timeIntervalSince1970 * 1000)
        let (request, nonce) = try protocolStep { () throws(ProtocolError) in
            try context.encryptRequest(plaintext, timestampMilliseconds: now)
        }
        let body = try protocolStep { () throws(ProtocolError) in try WireCoding.encode(request) }
        // As upstream's SDK: the encryption header goes with unsigned requests only (a signed one
        // names the application and the activation in its authorization header).
        var headers: [String: String] = [:]
        if let authentication {
            headers[AuthorizationHeader.name] = try await v4Sign(endpoint, body: body, authentication: authentication)
                .value
        } else {
            headers[V4EncryptionHeader.name] =
                V4EncryptionHeader(
                    applicationKey: configuration.sdkConfiguration.applicationKey,
                    activationId: activation.state.activationId
                ).value
        }
        let answer = try await exchange(
            path: endpoint.path, body: body, headers: headers, authentication: authentication)
        return try v4Open(answer, context: context, nonce: nonce, path: endpoint.path)
    }

    /// A plain signed call; the response's `{"status":"OK"}` is checked.
    func v4Send(_ endpoint: V4API.Endpoint, body: [UInt8], authentication: ActivationAuthentication)
        async throws(ActivationError)
    {
        let header = try await v4Sign(endpoint, body: body, authentication: authentication)
        let answer = try await exchange(
            path: endpoint.path, body: body, headers: [AuthorizationHeader.name: header.value],
            authentication: authentication)
        guard let envelope = try? WireCoding.decode(ResponseEnvelope<EmptyMessage>.self, answer),
            envelope.status.uppercased() == "OK"
        else { throw .invalidResponse(reason: "\(endpoint.path): the body does not follow the API") }
    }
}
