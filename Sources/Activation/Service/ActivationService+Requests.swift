import Biometry
import Foundation
import PowerAuthProtocol
import SecureCore

extension ActivationService {
    /// Signs a request of your own: computes the authentication code, moves
    /// and stores the counter, and returns the `X-PowerAuth-Authorization` header in the
    /// activation's generation (a V3.3 header for `LEGACY_P256`, a V4 header with KMAC-256
    /// codes for the `EC_P384` suites).
    ///
    /// If your server answers the request with HTTP 401, call
    /// ``ActivationAuthentication/markRejected()`` and fetch the status; never
    /// send another request signed with the same credentials.
    /// - Parameters:
    ///   - method: the HTTP method.
    ///   - uriIdentifier: the resource identifier the server expects.
    ///   - body: the exact body bytes that will be sent.
    ///   - authentication: the factors.
    /// - Returns: the header; send its `value` under `SignedRequestHeader.name`.
    /// - Throws: ``ActivationError/missingActivation``, ``ActivationError/credentialsRejected``,
    ///   ``ActivationError/credentialsExpired``, the biometry errors, ``ActivationError/storage(operation:errno:)``,
    ///   ``ActivationError/protocolError(_:)`` for a method or body the protocol refuses (for example
    ///   `PowerAuthProtocol.ProtocolError.invalidHTTPMethod(_:)`) or a wrong PIN that does not unwrap.
    public func signRequest(
        method: String, uriIdentifier: String, body: [UInt8], authentication: ActivationAuthentication
    ) async throws(ActivationError) -> SignedRequestHeader {
        if isV4 {
            return .v4(
                try await v4Sign(
                    method: method, uriIdentifier: uriIdentifier, body: body, authentication: authentication))
        }
        return .v3(
            try await sign(method: method, uriIdentifier: uriIdentifier, body: body, authentication: authentication))
    }

    /// Checks a PIN with the server (`signature/validate`, possession and
    /// knowledge). A wrong PIN counts as a failed attempt on the server.
    /// - Parameter password: the PIN.
    /// - Throws: ``ActivationError/authentication`` for a wrong PIN or an
    ///   activation that is no longer active, and the network errors.
    public func validatePassword(_ password: Password) async throws(ActivationError) {
        if isV4 {
            return try await v4Send(
                V4API.validate, body: Array("{}".utf8), authentication: .possessionWithPassword(password))
        }
        _ = try await send(
            ActivationAPI.validateSignature, ValidateSignatureRequest(reason: "VALIDATE_PASSWORD"),
            authentication: .possessionWithPassword(password))
    }

    /// Checks any factor set with the server (`signature/validate`, the body the SDK
    /// sends: `{"requestObject":{"reason":"VALIDATE_PASSWORD"}}`); a wrong code that
    /// claims a second factor counts.
    /// - Parameter authentication: the factors.
    /// - Throws: ``ActivationError/authentication`` when refused, the network and server errors.
    public func validateSignature(authentication: ActivationAuthentication) async throws(ActivationError) {
        if isV4 { return try await v4Send(V4API.validate, body: Array("{}".utf8), authentication: authentication) }
        _ = try await send(
            ActivationAPI.validateSignature, ValidateSignatureRequest(reason: "VALIDATE_PASSWORD"),
            authentication: authentication)
    }

    /// Computes an offline authentication code (for example for a QR-code
    /// operation the user confirms by typing the code on another device):
    /// decimal components of ``ActivationConfiguration/offlineAuthenticationCodeComponentLength``
    /// digits over the offline data (`POST`, application secret `offline`).
    /// The counter moves as for any code. With a V4 activation the components are V4 codes
    /// (KMAC-256, 32 bytes each) decimalised the same way.
    /// - Parameters:
    ///   - uriIdentifier: the operation's resource identifier.
    ///   - nonce: the 16-byte nonce of the operation.
    ///   - body: the operation data.
    ///   - authentication: possession with the PIN or with biometry.
    /// - Returns: the code, components joined with `-`.
    /// - Throws: ``ActivationError/invalidActivationState(reason:)`` for possession-only
    ///   credentials, and the errors of ``signRequest(method:uriIdentifier:body:authentication:)``.
    public func offlineAuthenticationCode(
        uriIdentifier: String, nonce: [UInt8], body: [UInt8], authentication: ActivationAuthentication
    ) async throws(ActivationError) -> String {
        guard authentication.factorSet != .possession else {
            throw .invalidActivationState(reason: "an offline code needs a second factor")
        }
        if isV4 {
            return try await v4OfflineCode(
                uriIdentifier: uriIdentifier, nonce: nonce, body: body, authentication: authentication)
        }
        let request = try protocolStep { () throws(ProtocolError) in
            try RequestData.offline(uriIdentifier: uriIdentifier, nonce: nonce, body: body)
        }
        return try await computeCode(
            data: { () throws(ProtocolError) in request.normalizedOffline }, authentication: authentication,
            format: .decimal(componentLength: configuration.offlineAuthenticationCodeComponentLength)
        ).code
    }

    // MARK: - Signing and sending

    func sign(method: String, uriIdentifier: String, body: [UInt8], authentication: ActivationAuthentication)
        async throws(ActivationError) -> AuthorizationHeader
    {
        let nonce = try coreStep { () throws(SecureCoreError) in
            try SecureRandom.bytes(count: ProtocolConstants.nonceByteCount)
        }
        let request = try protocolStep { () throws(ProtocolError) in
            try RequestData(method: method, uriIdentifier: uriIdentifier, nonce: nonce, body: body)
        }
        let secret = configuration.sdkConfiguration.applicationSecret
        let (activationId, code) = try await computeCode(
            data: { () throws(ProtocolError) in try request.normalized(applicationSecret: secret) },
            authentication: authentication, format: ProtocolVersion.v3_3.authenticationCodeFormat)
        let applicationKey = configuration.sdkConfiguration.applicationKey
        let factorSet = authentication.factorSet
        return try protocolStep { () throws(ProtocolError) in
            try AuthorizationHeader(
                activationId: activationId, applicationKey: applicationKey,
                nonce: nonce, factorSet: factorSet, authenticationCode: code, version: .v3_3)
        }
    }

    /// Computes one code over `data()` with the credentials' factors, then
    /// moves and stores the counter before the code is handed out.
    func computeCode(
        data: () throws(ProtocolError) -> [UInt8], authentication: ActivationAuthentication,
        format: AuthenticationCodeFormat
    ) async throws(ActivationError) -> (activationId: String, code: String) {
        guard record != nil else { throw .missingActivation }
        let kind = try authentication.usableKind(now: clock.now())
        var biometry: SecureBytes?
        defer { biometry?.destroy() }
        switch kind {
        case .biometryPrompt(let prompt):
            biometry = try await biometryKey(prompt: prompt)
        case .biometryKey(let key, _):
            biometry = try coreStep { () throws(SecureCoreError) in try copy(key) }
        case .possession, .password:
            break
        }
        // Read the state after the prompt: the activation may have changed meanwhile.
        guard let keys else { throw .missingActivation }
        let normalized = try protocolStep(data)
        let factors = authentication.factorSet
        let crypto = crypto
        return try mutateRecord { (r) throws(ActivationError) -> (activationId: String, code: String) in
            var knowledge: SecureBytes?
            defer { knowledge?.destroy() }
            if case .password(let password) = kind {
                knowledge = try protocolStep { () throws(ProtocolError) in
                    try crypto.unwrapKnowledgeKey(r.knowledgeKey, pin: password)
                }
            }
            let counter = try r.currentCounter
            let code = try protocolStep { () throws(ProtocolError) in
                try crypto.authenticationCode(
                    data: normalized, factors: factors,
                    keys: SigningKeys(possession: keys.possession, knowledge: knowledge, biometry: biometry),
                    counter: counter, format: format)
            }
            try r.advanceCounter()
            return (r.activationId, code)
        }
    }

    /// Sends a plain request (`{"requestObject": …}`), signing it when the endpoint
    /// is signed, and decodes the `responseObject` (or ``EmptyMessage`` for a bare
    /// `{"status":"OK"}`).
    func send<Request, Response>(
        _ endpoint: ActivationAPI.Endpoint<Request, Response>, _ message: Request,
        authentication: ActivationAuthentication?
    ) async throws(ActivationError) -> Response {
        let body = try protocolStep { () throws(ProtocolError) in
            try WireCoding.encode(RequestEnvelope(requestObject: message))
        }
        var headers: [String: String] = [:]
        if let uriIdentifier = endpoint.uriIdentifier {
            guard let authentication else {
                throw .invalidActivationState(reason: "a signed endpoint needs credentials")
            }
            let header = try await sign(
                method: ActivationAPI.method, uriIdentifier: uriIdentifier, body: body, authentication: authentication)
            headers[AuthorizationHeader.name] = header.value
        }
        let answer = try await exchange(
            path: endpoint.path, body: body, headers: headers, authentication: authentication)
        guard let envelope = try? WireCoding.decode(ResponseEnvelope<Response>.self, answer),
            envelope.status.uppercased() == "OK"
        else { throw .invalidResponse(reason: "\(endpoint.path): the body does not follow the API") }
        if let object = envelope.responseObject { return object }
        if let empty = EmptyMessage() as? Response { return empty }
        throw .invalidResponse(reason: "\(endpoint.path): no responseObject")
    }

    /// Sends an ECIES-encrypted request (protocol 3.3, with the scope's temporary key)
    /// and opens the response: unsigned with `X-PowerAuth-Encryption`, or signed over
    /// the encrypted body (encrypt-then-sign) when the endpoint is signed.
    /// - Returns: the response plaintext in secure memory (`nil` when empty); the caller destroys it.
    func sendEncrypted(
        _ endpoint: ActivationAPI.EncryptedEndpoint, plaintext: SecureBytes?, authentication: ActivationAuthentication?
    ) async throws(ActivationError) -> SecureBytes? {
        let scope = endpoint.sharedInfo1.scope
        let (encryptor, activationId) = try await encryptor(scope: scope, sharedInfo1: endpoint.sharedInfo1)
        let (cryptogram, envelope) = try eciesStep { () throws(ECIESError) in
            try encryptor.encryptRequest(plaintext, now: clock.now())
        }
        let body = try protocolStep { () throws(ProtocolError) in
            try WireCoding.encode(EncryptedRequestBody(cryptogram))
        }
        var headers: [String: String] = [:]
        if let uriIdentifier = endpoint.uriIdentifier {
            guard let authentication else {
                throw .invalidActivationState(reason: "a signed endpoint needs credentials")
            }
            let header = try await sign(
                method: ActivationAPI.method, uriIdentifier: uriIdentifier, body: body, authentication: authentication)
            headers[AuthorizationHeader.name] = header.value
        } else {
            headers[EncryptionHeader.name] =
                EncryptionHeader(
                    version: .v3_3, applicationKey: configuration.sdkConfiguration.applicationKey,
                    activationId: activationId
                ).value
        }
        let answer = try await exchange(
            path: endpoint.path, body: body, headers: headers, authentication: authentication)
        return try openResponse(answer, envelope: envelope, path: endpoint.path)
    }

    /// An encryptor for the scope: the temporary key (3.3) and the configuration.
    func encryptor(scope: ECIES.Scope, sharedInfo1: ECIES.SharedInfo1) async throws(ActivationError) -> (
        ECIESEncryptor, String?
    ) {
        let key = try await temporaryEncryptionKey(scope: scope)
        let sdk = configuration.sdkConfiguration
        let activationId = scope == .activation ? record?.activationId : nil
        if scope == .activation, activationId == nil { throw .missingActivation }
        let transport = scope == .activation ? keys?.transport : nil
        let encryptor = try eciesStep { () throws(ECIESError) in
            let configuration = try ECIESConfiguration(
                version: .v3_3, sharedInfo1: sharedInfo1, applicationKey: sdk.applicationKey,
                applicationSecret: sdk.applicationSecret, activationId: activationId, transportKey: transport,
                temporaryKeyId: key.temporaryKeyId)
            return try ECIESEncryptor(configuration: configuration, serverPublicKey: key.publicKey)
        }
        return (encryptor, activationId)
    }

    /// Opens a bare encrypted response with the request's envelope.
    func openResponse(_ answer: [UInt8], envelope: ECIESEnvelope, path: String) throws(ActivationError)
        -> SecureBytes?
    {
        guard let wire = try? WireCoding.decode(EncryptedResponseBody.self, answer),
            let cryptogram = try? wire.cryptogram()
        else { throw .invalidResponse(reason: "\(path): the body is not an encrypted response") }
        do throws(ECIESError) {
            return try envelope.decryptResponse(cryptogram)
        } catch {
            throw .invalidResponse(reason: "\(path): the encrypted response does not open")
        }
    }

    /// Posts a body and returns the body of a 200 answer; maps every other answer to
    /// its error (a 401 marks the credentials rejected).
    func exchange(
        path: String, body: [UInt8], headers extra: [String: String], authentication: ActivationAuthentication?
    )
        async throws(ActivationError) -> [UInt8]
    {
        var request = TransportRequest(
            method: ActivationAPI.method, path: path,
            headers: ["Content-Type": ActivationAPI.contentType, "Accept": ActivationAPI.contentType], body: body)
        for (name, value) in extra { request.headers[name] = value }
        let client = configuration.clientConfiguration
        if let agent = client.userAgent { request.headers["User-Agent"] = agent }
        for interceptor in client.requestInterceptors { interceptor.process(&request) }
        let response: TransportResponse
        do throws(TransportError) {
            response = try await transport.send(request, timeout: client.requestTimeout)
        } catch {
            throw ActivationError(error)
        }
        guard response.statusCode == 200 else {
            let code = (try? WireCoding.decode(ResponseEnvelope<ErrorResponse>.self, response.body))?.responseObject?
                .code
            if response.statusCode == 401 {
                // Never again with these credentials: a second wrong PIN would be counted too.
                authentication?.markRejected()
                throw .authentication
            }
            // A temporary key the server no longer knows: fetch a new one next time.
            if code == ActivationAPI.ErrorCode.encryption { resetTemporaryEncryptionKeys() }
            throw .server(statusCode: response.statusCode, code: code ?? "UNKNOWN")
        }
        return response.body
    }

    /// Copies public JSON into secure memory (the ECIES layer encrypts from there).
    func securePlaintext(_ value: some Encodable) throws(ActivationError) -> SecureBytes {
        let bytes = try protocolStep { () throws(ProtocolError) in try WireCoding.encode(value) }
        return try coreStep { () throws(SecureCoreError) in
            try bytes.withUnsafeBufferPointer { (buffer) throws(SecureCoreError) in
                try SecureBytes(copying: UnsafeRawBufferPointer(buffer))
            }
        }
    }

    /// Decodes a public JSON plaintext (`{}` when it is empty) and destroys it.
    func decodePlaintext<T: Decodable>(_ plaintext: SecureBytes?, _ type: T.Type, path: String)
        throws(ActivationError) -> T
    {
        defer { plaintext?.destroy() }
        let bytes = plaintext.map { secure in secure.withUnsafeBytes { Array($0) } } ?? Array("{}".utf8)
        guard let value = try? WireCoding.decode(type, bytes) else {
            throw .invalidResponse(reason: "\(path): the decrypted body does not follow the API")
        }
        return value
    }

    func eciesStep<R>(_ body: () throws(ECIESError) -> R) throws(ActivationError) -> R {
        do throws(ECIESError) {
            return try body()
        } catch {
            throw .protocolError(.ecies(error))
        }
    }
}

func copy(_ key: SecureBytes) throws(SecureCoreError) -> SecureBytes {
    try key.copy()
}
