import Biometry
import Foundation
import PostQuantum
import PowerAuthProtocol
import SecureCore

/// The protocol V4 path of the service, taken when the configuration's algorithm is a V4 suite
/// (`EC_P384`, `EC_P384_ML_L3`, `EC_P384_ML_L5`): activation, status, codes (possession and knowledge), tokens, vault unlock and
/// removal, the server-side password change and biometry add/remove, against the `/pa/v4`
/// endpoints (`docs/protocol-v4.md`). Biometry at activation, offline codes and the other V3
/// extras throw ``ActivationError/protocolError(_:)`` with
/// `unsupportedAlgorithm` on this path.
extension ActivationService {
    /// The V4 path: a V4 configuration, unless a V3.3 activation (one to upgrade) is loaded.
    var isV4: Bool { configuration.algorithm.isV4 && record == nil }

    /// What the V4 client does not do, named with the configured suite.
    func v4Unsupported(_ what: String) -> ActivationError {
        .protocolError(
            .unsupportedAlgorithm(name: configuration.algorithm.rawValue, missing: "\(what) in the V4 client"))
    }

    /// The P-384 master key of the configuration string (key `0x02`).
    var v4MasterPublicKey: [UInt8] {
        get throws(ActivationError) {
            guard let key = configuration.sdkConfiguration.keys.first(where: { $0.id == 0x02 })?.bytes else {
                throw .wrongParameter(reason: "the configuration string has no P-384 master key (key 0x02)")
            }
            return key
        }
    }

    /// The ML-DSA master key of the configuration string for a hybrid configuration (key `0x03`
    /// or `0x04`, checked by ``ActivationConfiguration``); `nil` for `EC_P384`.
    var v4PostQuantumMasterKey: (publicKey: [UInt8], parameterSet: MLDSA.ParameterSet)? {
        get throws(ActivationError) {
            let suite = configuration.algorithm
            guard let set = suite.signatureParameterSet, let id = suite.postQuantumMasterKeyId else { return nil }
            guard let der = configuration.sdkConfiguration.keys.first(where: { $0.id == id })?.bytes,
                let key = try? MLDSA.publicKey(set, fromPublicKeyInfo: der)
            else {
                throw .wrongParameter(reason: "the configuration string has no ML-DSA master key (key \(id))")
            }
            return (key, set)
        }
    }

    /// The server's ML-DSA key of an `activation/create` or `upgrade/start` response: for a hybrid
    /// suite a SubjectPublicKeyInfo of its parameter set (kept as received, Base64), else absent.
    static func v4ServerPostQuantumKey(_ text: String?, suite: ProtocolAlgorithm, step: String)
        throws(ActivationError) -> String?
    {
        guard let set = suite.signatureParameterSet else {
            guard text == nil else { throw .invalidResponse(reason: "\(step): unexpected ML-DSA key") }
            return nil
        }
        guard let text, let der = Base64.decode(text), (try? MLDSA.publicKey(set, fromPublicKeyInfo: der)) != nil
        else { throw .invalidResponse(reason: "\(step): malformed field") }
        return text
    }

    /// The common end of `activation/create` and `upgrade/start`: the server's P-384 key (97 bytes, on
    /// the curve), its `CTR_DATA`, and the key tree of the completed shared secret.
    func v4CompleteExchange(
        _ kem: V4SharedSecretClientContext, response: V4SharedSecretResponse, serverKey: String, ctrData: String,
        step: String
    ) throws(ActivationError) -> (server: [UInt8], counter: V4HashCounter, tree: V4ActivationKeys) {
        guard let server = Base64.decode(serverKey), server.count == 97,
            (try? ECP384KeyPair.validate(publicKey: server)) != nil,
            let counter = try? V4HashCounter(base64: ctrData)
        else { throw .invalidResponse(reason: "\(step): malformed field") }
        let secret: SecureBytes
        do throws(ProtocolError) {
            secret = try V4SharedSecret.finish(kem, response: response)
        } catch {
            throw .invalidResponse(reason: "\(step): the shared secret does not complete")
        }
        defer { secret.destroy() }
        let tree = try protocolStep { () throws(ProtocolError) in try V4ActivationKeys(activationSecret: secret) }
        return (server, counter, tree)
    }

    static func loadV4(_ configuration: ActivationConfiguration, storage: any DeviceActivationStorage)
        throws(ActivationError) -> (current: V4ClientActivation, upgrade: V4ClientActivation?)?
    {
        let names = configuration.storageNames
        guard let bytes = try storage.read(names.state) else {
            try storage.remove(names.keys)
            try storage.remove(names.upgradeState)
            try storage.remove(names.upgradeKeys)
            return nil
        }
        let state = try LocalV4State.decode(bytes, instanceId: configuration.instanceId)
        let keys: LocalV4Keys
        if let own = try loadV4Keys(names.keys, storage: storage, keyCheck: state.keyCheck) {
            keys = own
        } else if let upgraded = try loadV4Keys(names.upgradeKeys, storage: storage, keyCheck: state.keyCheck) {
            // An upgrade interrupted after its V4 state became current: its keys replace the
            // V3.3 ones (zeroed first) under the usual name.
            keys = upgraded
            do {
                try storage.remove(names.keys)
                let blob = try upgraded.serialized()
                defer { blob.destroy() }
                try storage.writeSecret(names.keys, blob)
            } catch {
                upgraded.destroy()
                throw error
            }
        } else if try storage.readSecret(names.keys).map({ $0.destroy() }) == nil {
            throw .invalidActivationData(reason: "the key file is missing")
        } else {
            throw .invalidActivationData(reason: "the key file does not belong to the activation state")
        }
        // A pending upgrade to a stronger suite stays for resolvePendingUpgrade(); anything else
        // is what a finished (or never begun) upgrade leaves behind.
        do {
            if let pending = try loadPendingSuiteUpgrade(names, storage: storage, current: state, configuration) {
                return (V4ClientActivation(state: state, keys: keys), pending)
            }
            try storage.remove(names.upgradeState)
            try storage.remove(names.upgradeKeys)
        } catch {
            keys.destroy()
            throw error
        }
        return (V4ClientActivation(state: state, keys: keys), nil)
    }

    /// The pending state of an upgrade of `current` to a stronger V4 suite, with its keys, if
    /// the upgrade files hold one (another key check, the same activation, a stronger suite).
    static func loadPendingSuiteUpgrade(
        _ names: StorageNames, storage: any DeviceActivationStorage, current: LocalV4State,
        _ configuration: ActivationConfiguration
    ) throws(ActivationError) -> V4ClientActivation? {
        guard let bytes = try storage.read(names.upgradeState),
            let pending = try? LocalV4State.decode(bytes, instanceId: configuration.instanceId),
            pending.activationId == current.activationId, pending.keyCheck != current.keyCheck,
            pending.suite.isStronger(than: current.suite),
            let keys = try loadV4Keys(names.upgradeKeys, storage: storage, keyCheck: pending.keyCheck)
        else { return nil }
        return V4ClientActivation(state: pending, keys: keys)
    }

    /// The V4 keys stored under `name` when they match `keyCheck`; `nil` when absent, of
    /// another format or another activation.
    static func loadV4Keys(_ name: String, storage: any DeviceActivationStorage, keyCheck: String)
        throws(ActivationError) -> LocalV4Keys?
    {
        guard let blob = try storage.readSecret(name) else { return nil }
        let keys: LocalV4Keys
        do throws(ActivationError) {
            keys = try LocalV4Keys.parse(blob)
        } catch {
            return nil
        }
        guard try Base64.encode(keys.keyCheck()) == keyCheck else {
            keys.destroy()
            return nil
        }
        return keys
    }

    // MARK: - Activation

    func v4CreateActivation(activationCode: String, name: String, password: Password, enableBiometry: Bool)
        async throws(ActivationError) -> ActivationResult
    {
        guard v4 == nil else { throw .invalidActivationState(reason: "an activation already exists") }
        guard password.length > 0 else { throw .protocolError(.emptyPIN) }
        if enableBiometry {
            guard let authenticator else { throw .biometryNotAvailable(.notSupported) }
            guard authenticator.systemStatus == .available else {
                throw .biometryNotAvailable(authenticator.systemStatus)
            }
        }
        let sdk = configuration.sdkConfiguration
        let master = try v4MasterPublicKey
        let code = try protocolStep { () throws(ProtocolError) in
            let code = try ActivationCode(parsing: activationCode)
            try code.verifyV4Signature(masterPublicKey: master)
            return code
        }
        let device = try protocolStep { () throws(ProtocolError) in try ECP384KeyPair.generate() }
        defer { device.privateKey.destroy() }
        let suite = configuration.algorithm
        let (kem, shared) = try protocolStep { () throws(ProtocolError) in
            try V4SharedSecret.makeRequest(algorithm: suite)
        }
        defer {
            kem.keyPair.privateKey.destroy()
            kem.destroy()
        }
        let key = try await v4TemporaryKey(activation: nil)
        defer { key.secret.destroy() }
        let inner = try v4Context(key, .activation, activation: nil)
        let outer = try v4Context(key, .genericApplication, activation: nil)
        let devicePostQuantum = try Self.v4DevicePostQuantumKey(suite: suite)
        let innerPlain = try securePlaintext(
            V4ActivationLayer2Request(
                sharedSecretRequest: shared,
                devicePublicKeys: V4PublicKeys(ecdsa: Base64.encode(device.publicKey), mldsa: devicePostQuantum),
                activationName: name))
        defer { innerPlain.destroy() }
        let now = Int64(clock.now().timeIntervalSince1970 * 1000)
        let (innerRequest, innerNonce) = try protocolStep { () throws(ProtocolError) in
            try inner.encryptRequest(innerPlain, timestampMilliseconds: now)
        }
        let outerPlain = try securePlaintext(V4ActivationLayer1Request(code: code.code, activationData: innerRequest))
        defer { outerPlain.destroy() }
        let (outerRequest, outerNonce) = try protocolStep { () throws(ProtocolError) in
            try outer.encryptRequest(outerPlain, timestampMilliseconds: now)
        }
        let path = V4API.activationCreate.path
        let answer = try await exchange(
            path: path, body: try protocolStep { () throws(ProtocolError) in try WireCoding.encode(outerRequest) },
            headers: [
                V4EncryptionHeader.name: V4EncryptionHeader(applicationKey: sdk.applicationKey, activationId: nil).value
            ],
            authentication: nil)
        let layer1 = try decodePlaintext(
            try v4Open(answer, context: outer, nonce: outerNonce, path: path), V4ActivationLayer1Response.self,
            path: path)
        let layer2 = try decodePlaintext(
            try v4OpenResponse(layer1.activationData, context: inner, nonce: innerNonce, path: path),
            V4ActivationLayer2Response.self, path: path)
        guard v4 == nil else { throw .invalidActivationState(reason: "an activation already exists") }
        guard (try? AuthorizationHeader.validateActivationId(layer2.activationId)) != nil else {
            throw .invalidResponse(reason: "activation/create: malformed field")
        }
        let serverPostQuantum = try Self.v4ServerPostQuantumKey(
            layer2.serverPublicKeys.mldsa, suite: suite, step: "activation/create")
        let (server, counter, tree) = try v4CompleteExchange(
            kem, response: layer2.sharedSecretResponse, serverKey: layer2.serverPublicKeys.ecdsa,
            ctrData: layer2.ctrData, step: "activation/create")
        defer { tree.destroy() }
        let newKeys = try LocalV4Keys(tree)
        let wrapped = try v4Wrap(tree.knowledge, password: password)
        let vaultCheck = try coreStep { () throws(SecureCoreError) in
            try HMACSHA256.foldedTag(LocalV4Keys.keyCheckLabel, key: tree.appVault2FA)
        }
        let state = LocalV4State(
            kind: LocalV4State.kind, instanceId: configuration.instanceId, activationId: layer2.activationId,
            algorithm: suite.rawValue, devicePublicKey: Base64.encode(device.publicKey),
            serverPublicKey: Base64.encode(server), counter: counter.base64, counterIndex: 0, counterHistory: [],
            knowledgeKey: wrapped, vaultCheck: Base64.encode(vaultCheck),
            keyCheck: Base64.encode(try newKeys.keyCheck()), biometryEnabled: enableBiometry ? true : nil,
            enrolledSetFingerprint: enableBiometry
                ? authenticator.map { Base64.encode($0.enrolledSetFingerprint) } : nil,
            confirmationPending: true, serverPostQuantumPublicKey: serverPostQuantum,
            devicePostQuantumPublicKey: devicePostQuantum)
        // The key tree's `auth/biometry` key is the first biometry key (the server uses it once
        // `activation/confirm` says `enableBiometry`); it goes to the authenticator only.
        if enableBiometry, let authenticator {
            do {
                try mapBiometry { () throws(BiometryError) in
                    try authenticator.storeKey(tree.biometry, account: configuration.biometryKeyAccount)
                }
            } catch {
                newKeys.destroy()
                throw error
            }
        }
        do {
            let blob = try newKeys.serialized()
            defer { blob.destroy() }
            try storage.writeSecret(configuration.storageNames.keys, blob)
            try storage.write(configuration.storageNames.state, state.encoded())
        } catch {
            try? storage.remove(configuration.storageNames.keys)
            if enableBiometry { authenticator?.deleteKey(account: configuration.biometryKeyAccount) }
            newKeys.destroy()
            throw error
        }
        v4 = V4ClientActivation(state: state, keys: newKeys)
        return ActivationResult(activationId: state.activationId, activationFingerprint: try v4Fingerprint())
    }

    /// A fresh device ML-DSA key for a hybrid suite (`devicePublicKeys.mldsa`: SubjectPublicKeyInfo,
    /// Base64); `nil` for `EC_P384`. Its signing key is destroyed at once, as the P-384 one is
    /// discarded after the exchange: nothing here signs with the device key.
    static func v4DevicePostQuantumKey(suite: ProtocolAlgorithm) throws(ActivationError) -> String? {
        guard let set = suite.signatureParameterSet else { return nil }
        do throws(PostQuantumError) {
            let pair = try MLDSA.KeyPair.generate(set)
            defer { pair.destroy() }
            return Base64.encode(pair.publicKeyInfo)
        } catch {
            throw .invalidActivationState(reason: "the device's ML-DSA key could not be made (\(error))")
        }
    }

    /// The authenticator account of this V4 activation's biometry key.
    var v4BiometryAccount: String { v4?.state.biometryAccount ?? configuration.biometryKeyAccount }

    func v4Fingerprint() throws(ActivationError) -> String {
        guard let state = v4?.state, let device = Base64.decode(state.devicePublicKey),
            let server = Base64.decode(state.serverPublicKey)
        else { throw .missingActivation }
        // SubjectPublicKeyInfo, as sent and received (the state keeps them in that form, checked on load).
        let devicePostQuantum = state.devicePostQuantumPublicKey.flatMap { Base64.decode($0) }
        let serverPostQuantum = state.serverPostQuantumPublicKey.flatMap { Base64.decode($0) }
        return try protocolStep { () throws(ProtocolError) in
            try V4Fingerprint.compute(
                algorithm: state.suite, devicePublicKey: device, activationId: state.activationId,
                serverPublicKey: server, devicePostQuantumKey: devicePostQuantum,
                serverPostQuantumKey: serverPostQuantum)
        }
    }

    // MARK: - Knowledge key

    /// Wraps the 32-byte knowledge key as two 16-byte halves under Argon2id(PIN), each with its
    /// own salt and no MAC (the V3 wrap, twice).
    func v4Wrap(_ key: SecureBytes, password: Password) throws(ActivationError) -> [WrappedKnowledgeKey] {
        var result: [WrappedKnowledgeKey] = []
        for half in 0..<2 {
            let part = try coreStep { () throws(SecureCoreError) in try SecureBytes(count: 16) }
            defer { part.destroy() }
            key.withUnsafeBytes { source in
                part.withUnsafeMutableBytes { target in
                    target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[(16 * half)..<(16 * half + 16)]))
                }
            }
            let parameters = configuration.knowledgeKeyParameters
            result.append(
                try protocolStep { () throws(ProtocolError) in
                    try crypto.wrapKnowledgeKey(part, pin: password, parameters: parameters)
                })
        }
        return result
    }

    func v4Unwrap(_ wrapped: [WrappedKnowledgeKey], password: Password) throws(ActivationError) -> SecureBytes {
        let key = try coreStep { () throws(SecureCoreError) in try SecureBytes(count: 32) }
        for (half, item) in wrapped.enumerated() {
            let part = try protocolStep { () throws(ProtocolError) in try crypto.unwrapKnowledgeKey(item, pin: password)
            }
            defer { part.destroy() }
            part.withUnsafeBytes { source in
                key.withUnsafeMutableBytes { target in
                    UnsafeMutableRawBufferPointer(rebasing: target[(16 * half)..<(16 * half + 16)]).copyMemory(
                        from: source)
                }
            }
        }
        return key
    }

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

    // MARK: - Codes

    /// A V4 authorization header; the counter moves (and is stored) before anything is sent.
    func v4Sign(_ endpoint: V4API.Endpoint, body: [UInt8], authentication: ActivationAuthentication)
        async throws(ActivationError) -> V4AuthorizationHeader
    {
        guard let uriIdentifier = endpoint.uriIdentifier else {
            throw .invalidActivationState(reason: "a signed endpoint needs a resource identifier")
        }
        return try await v4Sign(
            method: "POST", uriIdentifier: uriIdentifier, body: body, authentication: authentication)
    }

    func v4Sign(method: String, uriIdentifier: String, body: [UInt8], authentication: ActivationAuthentication)
        async throws(ActivationError) -> V4AuthorizationHeader
    {
        guard v4 != nil else { throw .missingActivation }
        let kind = try authentication.usableKind(now: clock.now())
        let factorSet = authentication.factorSet
        var biometry: SecureBytes?
        defer { biometry?.destroy() }
        switch kind {
        case .biometryPrompt(let prompt):
            biometry = try await v4BiometryKey(prompt: prompt)
        case .biometryKey(let key, _):
            biometry = try coreStep { () throws(SecureCoreError) in try key.copy() }
        case .possession, .password:
            break
        }
        let biometryKey = biometry
        let nonce = try coreStep { () throws(SecureCoreError) in
            try SecureRandom.bytes(count: ProtocolConstants.nonceByteCount)
        }
        let secret = configuration.sdkConfiguration.applicationSecret
        let data = try protocolStep { () throws(ProtocolError) in
            try RequestData(method: method, uriIdentifier: uriIdentifier, nonce: nonce, body: body)
                .normalized(applicationSecret: secret)
        }
        let code = try v4Code(
            data: data, kind: kind, factorSet: factorSet, biometryKey: biometryKey, format: .online)
        guard let activationId = v4?.state.activationId else { throw .missingActivation }
        let applicationKey = configuration.sdkConfiguration.applicationKey
        return try protocolStep { () throws(ProtocolError) in
            try V4AuthorizationHeader(
                activationId: activationId, applicationKey: applicationKey, nonce: nonce, factorSet: factorSet,
                authenticationCode: code)
        }
    }

    /// The V4 offline code: decimal components over the offline data (`POST`, application
    /// secret `offline`, as in V3.3), the counter moved and stored first.
    func v4OfflineCode(uriIdentifier: String, nonce: [UInt8], body: [UInt8], authentication: ActivationAuthentication)
        async throws(ActivationError) -> String
    {
        guard v4 != nil else { throw .missingActivation }
        let kind = try authentication.usableKind(now: clock.now())
        var biometry: SecureBytes?
        defer { biometry?.destroy() }
        switch kind {
        case .biometryPrompt(let prompt):
            biometry = try await v4BiometryKey(prompt: prompt)
        case .biometryKey(let key, _):
            biometry = try coreStep { () throws(SecureCoreError) in try key.copy() }
        case .possession, .password:
            break
        }
        let data = try protocolStep { () throws(ProtocolError) in
            try RequestData.offline(uriIdentifier: uriIdentifier, nonce: nonce, body: body).normalizedOffline
        }
        return try v4Code(
            data: data, kind: kind, factorSet: authentication.factorSet, biometryKey: biometry,
            format: .offline(digits: configuration.offlineAuthenticationCodeComponentLength))
    }

    /// Computes a V4 code over `data` with the stored counter and moves the counter, all under
    /// the storage lock (the counter is stored before the code leaves).
    private func v4Code(
        data: [UInt8], kind: ActivationAuthentication.Kind, factorSet: FactorSet, biometryKey: SecureBytes?,
        format: V4AuthenticationCodeFormat
    ) throws(ActivationError) -> String {
        try v4Mutate { (activation) throws(ActivationError) -> String in
            var knowledge: SecureBytes?
            defer { knowledge?.destroy() }
            if case .password(let password) = kind {
                knowledge = try v4Unwrap(activation.state.knowledgeKey, password: password)
            }
            let counter = try activation.state.currentCounter
            let keys = activation.keys
            let code = try protocolStep { () throws(ProtocolError) in
                try V4AuthenticationCode.compute(
                    factorSet: factorSet,
                    keys: V4FactorKeys(possession: keys.possession, knowledge: knowledge, biometry: biometryKey),
                    counter: counter, data: data, format: format)
            }
            try activation.state.advanceCounter()
            return code
        }
    }

    /// Reads the stored V4 state under the storage lock, applies `change`, writes it back.
    func v4Mutate<R>(_ change: (inout V4ClientActivation) throws(ActivationError) -> R) throws(ActivationError) -> R {
        guard let known = v4 else { throw .missingActivation }
        let names = configuration.storageNames
        let instanceId = configuration.instanceId
        return try storage.withExclusiveAccess { () throws(ActivationError) -> R in
            guard let bytes = try storage.read(names.state) else { throw .missingActivation }
            let current = try LocalV4State.decode(bytes, instanceId: instanceId)
            guard current.activationId == known.state.activationId, current.keyCheck == known.state.keyCheck else {
                throw .invalidActivationState(reason: "the stored activation was replaced")
            }
            var activation = V4ClientActivation(state: current, keys: known.keys)
            let result = try change(&activation)
            try storage.write(names.state, activation.state.encoded())
            v4 = activation
            return result
        }
    }

    // MARK: - Status, tokens, vault

    func v4FetchStatus() async throws(ActivationError) -> ActivationStatus {
        guard let before = v4 else { throw .missingActivation }
        let request = try securePlaintext(EmptyMessage())
        defer { request.destroy() }
        let answer = try await v4SendEncrypted(V4API.activationStatus, plaintext: request, authentication: nil)
        let response = try decodePlaintext(answer, V4StatusResponse.self, path: V4API.activationStatus.path)
        guard let bytes = Base64.decode(response.activationStatus) else {
            throw .invalidResponse(reason: "activation/status: malformed field")
        }
        let blob: V4StatusBlob
        do throws(ProtocolError) {
            blob = try V4StatusBlob(opening: bytes, statusMACKey: before.keys.statusMAC)
        } catch {
            if case .unknownActivationState = error { throw .protocolError(error) }
            throw .invalidResponse(reason: "activation/status: the status blob does not verify")
        }
        let expiry = try ActivationStatus.readCustomObject(response.customObject, path: V4API.activationStatus.path)
        var state = ClientActivationState(blob.state)
        if blob.state == .active { state = try v4SynchroniseCounter(blob) ? .active : .deadlock }
        return ActivationStatus(
            state: state, failCount: Int(blob.failedAttempts), maxFailCount: Int(blob.maxFailedAttempts),
            blockExpirationTime: expiry, counterLookAhead: Int(blob.counterLookAhead),
            customObject: response.customObject)
    }

    /// As V3: the server ahead (within the look-ahead) moves the device forward; the server behind
    /// by less than the look-ahead is fine; anything else is a deadlock.
    private func v4SynchroniseCounter(_ blob: V4StatusBlob) throws(ActivationError) -> Bool {
        guard let current = v4 else { throw .missingActivation }
        let counter = try current.state.currentCounter
        let distance = try protocolStep { () throws(ProtocolError) in
            try blob.serverDistance(from: counter, counterDataMACKey: current.keys.counterDataMAC)
        }
        if let distance {
            if distance > 0 {
                let target = current.state.counterIndex + UInt64(distance)
                try v4Mutate { (a) throws(ActivationError) in
                    while a.state.counterIndex < target { try a.state.advanceCounter() }
                }
            }
            return true
        }
        let lookAhead = max(1, Int(blob.counterLookAhead))
        for (index, text) in current.state.counterHistory.enumerated() where index + 1 < lookAhead {
            let hash = try protocolStep { () throws(ProtocolError) in
                try V4StatusBlob.counterDataHash(
                    try V4HashCounter(base64: text), counterDataMACKey: current.keys.counterDataMAC)
            }
            if constantTimeEqual(hash, blob.counterDataHash) { return true }
        }
        return false
    }

    func v4CreateToken(authentication: ActivationAuthentication) async throws(ActivationError) -> ActivationToken {
        let request = try securePlaintext(EmptyMessage())
        defer { request.destroy() }
        let answer = try await v4SendEncrypted(V4API.tokenCreate, plaintext: request, authentication: authentication)
        guard let answer else { throw .invalidResponse(reason: "token/create: empty response") }
        defer { answer.destroy() }
        let tokenId: String? = answer.withUnsafeBytes { json in
            TokenPayload.stringValue(of: "tokenId", in: json).map { String(decoding: json[$0], as: UTF8.self) }
        }
        guard let tokenId, (try? AuthorizationHeader.validateActivationId(tokenId)) != nil else {
            throw .invalidResponse(reason: "token/create: no token id")
        }
        let secret = try protocolStep { () throws(ProtocolError) in
            try V4SecretJSON.decodeSecret(answer, secretName: "tokenSecret", count: 32)
        }
        return ActivationToken(tokenId: tokenId, factorSet: authentication.factorSet, secret: secret)
    }

    func v4UnlockVault(authentication: ActivationAuthentication, reason: String) async throws(ActivationError)
        -> SecureBytes
    {
        guard authentication.factorSet != .possession else {
            throw .wrongParameter(reason: "the vault opens with two factors")
        }
        let request = try securePlaintext(
            V4VaultUnlockRequest(keyIdentifier: "KDK_APP_VAULT_2FA", reason: reason))
        defer { request.destroy() }
        let answer = try await v4SendEncrypted(V4API.vaultUnlock, plaintext: request, authentication: authentication)
        guard let answer, let current = v4 else { throw .invalidResponse(reason: "vault/unlock: empty response") }
        defer { answer.destroy() }
        let key = try protocolStep { () throws(ProtocolError) in
            try V4SecretJSON.decodeSecret(answer, secretName: "vaultEncryptionKey", count: 32)
        }
        let check = try coreStep { () throws(SecureCoreError) in
            try HMACSHA256.foldedTag(LocalV4Keys.keyCheckLabel, key: key)
        }
        guard Base64.encode(check) == current.state.vaultCheck else {
            key.destroy()
            throw .invalidResponse(reason: "vault/unlock: the vault key is not this activation's")
        }
        return key
    }

    /// The server-side password change of V4 (dynamic factor keys): `password/change` with the
    /// current PIN gives a new knowledge key, wrapped here under the new PIN and stored; then one
    /// `auth/validate` with the new PIN makes the server promote it, so the old PIN stops working
    /// (an old copy of this state is then no PIN oracle). A crash before the new key is stored
    /// leaves the old PIN working: the server drops the unused key at the next success.
    func v4FinishPasswordChange(newPassword: Password, data: PasswordChangeData) async throws(ActivationError) {
        defer { data.secureClear() }
        guard let current = v4 else { throw .missingActivation }
        guard data.activationId == current.state.activationId else {
            throw .invalidActivationState(reason: "the change data belongs to another activation")
        }
        guard let old = try data.currentPassword() else {
            throw .invalidActivationState(reason: "the change data was cleared")
        }
        defer { old.destroy() }
        guard newPassword.length > 0 else { throw .protocolError(.emptyPIN) }
        let suite = current.state.suite
        let (kem, shared) = try protocolStep { () throws(ProtocolError) in
            try V4SharedSecret.makeRequest(algorithm: suite)
        }
        defer {
            kem.keyPair.privateKey.destroy()
            kem.destroy()
        }
        let request = try securePlaintext(shared)
        defer { request.destroy() }
        let answer = try await v4SendEncrypted(
            V4API.passwordChange, plaintext: request, authentication: .possessionWithPassword(old))
        let response = try decodePlaintext(answer, V4SharedSecretResponse.self, path: V4API.passwordChange.path)
        let key: SecureBytes
        do throws(ProtocolError) {
            key = try V4SharedSecret.finish(kem, response: response)
        } catch {
            throw .invalidResponse(reason: "password/change: the shared secret does not complete")
        }
        defer { key.destroy() }
        let wrapped = try v4Wrap(key, password: newPassword)
        try v4Mutate { (a) throws(ActivationError) in a.state.knowledgeKey = wrapped }
        try await v4Send(V4API.validate, body: Array("{}".utf8), authentication: .possessionWithPassword(newPassword))
    }

    // MARK: - Biometry

    /// `biometry/add` with the PIN: the server's new biometry key goes into the authenticator
    /// (never into the state files). When biometry was on already, the server keeps the new
    /// key as "next" until its first use.
    func v4AddBiometry(password: Password) async throws(ActivationError) {
        guard let authenticator else { throw .biometryNotAvailable(.notSupported) }
        guard authenticator.systemStatus == .available else { throw .biometryNotAvailable(authenticator.systemStatus) }
        guard let suite = v4?.state.suite else { throw .missingActivation }
        let (kem, shared) = try protocolStep { () throws(ProtocolError) in
            try V4SharedSecret.makeRequest(algorithm: suite)
        }
        defer {
            kem.keyPair.privateKey.destroy()
            kem.destroy()
        }
        let request = try securePlaintext(shared)
        defer { request.destroy() }
        let answer = try await v4SendEncrypted(
            V4API.biometryAdd, plaintext: request, authentication: .possessionWithPassword(password))
        let response = try decodePlaintext(answer, V4SharedSecretResponse.self, path: V4API.biometryAdd.path)
        let key: SecureBytes
        do throws(ProtocolError) {
            key = try V4SharedSecret.finish(kem, response: response)
        } catch {
            throw .invalidResponse(reason: "biometry/add: the shared secret does not complete")
        }
        defer { key.destroy() }
        try mapBiometry { () throws(BiometryError) in
            try authenticator.storeKey(key, account: v4BiometryAccount)
        }
        let enrolled = Base64.encode(authenticator.enrolledSetFingerprint)
        do {
            try v4Mutate { (a) throws(ActivationError) in
                a.state.biometryEnabled = true
                a.state.enrolledSetFingerprint = enrolled
            }
        } catch {
            authenticator.deleteKey(account: v4BiometryAccount)
            throw error
        }
    }

    /// `biometry/remove` (possession), then the local key and flag.
    func v4RemoveBiometry() async throws(ActivationError) {
        guard let current = v4 else { throw .missingActivation }
        guard current.state.biometryEnabled == true else { throw .biometryNotConfigured }
        try await v4Send(V4API.biometryRemove, body: Array("{}".utf8), authentication: .possession())
        try v4Mutate { (a) throws(ActivationError) in
            a.state.biometryEnabled = false
            a.state.enrolledSetFingerprint = nil
        }
        authenticator?.deleteKey(account: v4BiometryAccount)
    }

    /// The biometry key from the authenticator, as V3.3 reads it (invalidated after an
    /// enrolment change when so configured).
    func v4BiometryKey(prompt: String) async throws(ActivationError) -> SecureBytes {
        guard let authenticator else { throw .biometryNotAvailable(.notSupported) }
        guard let current = v4 else { throw .missingActivation }
        guard current.state.biometryEnabled == true else { throw .biometryNotConfigured }
        let biometric = configuration.biometricConfiguration
        if biometric.invalidateBiometricFactorAfterChange && !biometric.allowFallbackToDevicePasscode,
            current.state.enrolledSetFingerprint != Base64.encode(authenticator.enrolledSetFingerprint)
        {
            authenticator.deleteKey(account: v4BiometryAccount)
            try v4Mutate { (a) throws(ActivationError) in
                a.state.biometryEnabled = false
                a.state.enrolledSetFingerprint = nil
            }
            throw .biometryInvalidated
        }
        do throws(BiometryError) {
            return try await authenticator.evaluate(
                prompt: prompt, account: v4BiometryAccount, configuration: biometric)
        } catch {
            throw ActivationError(biometry: error)
        }
    }

    func v4RemoveActivation(authentication: ActivationAuthentication) async throws(ActivationError) {
        try await v4Send(V4API.activationRemove, body: Array("{}".utf8), authentication: authentication)
        try removeActivationLocal()
    }
}
