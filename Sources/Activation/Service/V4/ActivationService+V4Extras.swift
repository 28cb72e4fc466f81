import PowerAuthProtocol
import SecureCore

extension ActivationService {
    /// Confirms a V4 activation (`POST /pa/v4/activation/confirm`, `possession_knowledge`, body
    /// `{"enableBiometry": Bool}` as the SDK sends it), before or after the operator's commit: the
    /// SDK confirms in its persist step, right after `activation/create`, while the activation is
    /// still `PENDING_COMMIT`. The server clears its confirmation flag and, when the activation was
    /// created with biometry, turns the biometry factor on (its first key is the key tree's
    /// `auth/biometry` key, which ``createActivation(activationCode:name:password:enableBiometry:)``
    /// put in the authenticator). A wrong PIN counts as a failed attempt. Once confirmed, a second
    /// call sends nothing (the server refuses a second confirmation with 400 `ERR_ACTIVATION`).
    /// - Parameter password: the PIN.
    /// - Throws: ``ActivationError/invalidActivationState(reason:)`` for a V3.3 activation (protocol
    ///   V3.3 has no confirmation: the activation works once the server committed it),
    ///   ``ActivationError/missingActivation``, ``ActivationError/authentication`` for a wrong PIN,
    ///   the network and server errors,
    ///   ``ActivationError/storage(operation:errno:)``.
    public func confirmActivation(password: Password) async throws(ActivationError) {
        guard isV4 else {
            guard record != nil else { throw .missingActivation }
            throw .invalidActivationState(
                reason: "protocol V3.3 has no activation/confirm: the activation works once the server committed it")
        }
        guard let current = v4 else { throw .missingActivation }
        guard current.state.confirmationPending == true else { return }
        let request = V4ConfirmRequest(enableBiometry: current.state.biometryEnabled == true)
        let body = try protocolStep { () throws(ProtocolError) in try WireCoding.encode(request) }
        try await v4Send(V4API.activationConfirm, body: body, authentication: .possessionWithPassword(password))
        try v4Mutate { (activation) throws(ActivationError) in activation.state.confirmationPending = false }
    }

    /// Whether a V4 activation still waits for ``confirmActivation(password:)`` (always `false`
    /// for V3.3 and for V4 states written before the client confirmed).
    /// - Returns: `true` while the confirmation is due.
    public func needsConfirmation() -> Bool { v4?.state.confirmationPending == true }
}

extension ActivationService {
    /// `/pa/v4/activation/detail`: a V4 MAC token (two factors) and an empty body encrypted in
    /// activation scope (`/pa/generic/activation`); the answer is the encrypted
    /// `{"status":"OK","responseObject":{…}}`.
    func v4FetchActivationDetail(token: ActivationToken) async throws(ActivationError) -> ActivationDetailResponse {
        guard let activation = v4 else { throw .missingActivation }
        let endpoint = V4API.activationDetail
        let key = try await v4TemporaryKey(activation: activation)
        defer { key.secret.destroy() }
        let context = try v4Context(key, .genericActivation, activation: activation)
        let now = Int64(clock.now().timeIntervalSince1970 * 1000)
        let (request, nonce) = try protocolStep { () throws(ProtocolError) in
            try context.encryptRequest(nil, timestampMilliseconds: now)
        }
        let body = try protocolStep { () throws(ProtocolError) in try WireCoding.encode(request) }
        let headers = [
            TokenHeader.name: try v4TokenHeader(for: token).value,
            V4EncryptionHeader.name: V4EncryptionHeader(
                applicationKey: configuration.sdkConfiguration.applicationKey,
                activationId: activation.state.activationId
            ).value,
        ]
        let answer = try await exchange(path: endpoint.path, body: body, headers: headers, authentication: nil)
        let response = try decodePlaintext(
            try v4Open(answer, context: context, nonce: nonce, path: endpoint.path),
            ResponseEnvelope<ActivationDetailResponse>.self, path: endpoint.path)
        guard let detail = response.responseObject else {
            throw .invalidResponse(reason: "\(endpoint.path): no responseObject")
        }
        return detail
    }
}
