import Biometry
import Foundation
import PostQuantum
import PowerAuthProtocol
import SecureCore

// V4 activation on the client: the key exchange, the stored state, the knowledge key.
extension ActivationService {
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
}
