import Biometry
import Foundation
import PowerAuthProtocol
import SecureCore

/// The client side of an activation: the module's one entry type. It creates
/// an activation (device keys, key agreement with the server, factor keys
/// stored: the knowledge key wrapped under the PIN, the biometry key behind
/// the `Biometry.BiometricAuthenticator`), signs requests, fetches the
/// status, changes the PIN in two steps and adds or removes the biometry
/// factor. Calls are serialised by the actor; the counter moves and is
/// stored before any signed request leaves.
///
/// Every method throws ``ActivationError``. In the method documentation, "the network
/// errors" are ``ActivationError/network(reason:)`` and ``ActivationError/cancelled`` (what
/// the transport reported); "the server errors" are ``ActivationError/authentication``,
/// ``ActivationError/server(statusCode:code:)`` and ``ActivationError/invalidResponse(reason:)``;
/// "the signing errors" are those of ``signRequest(method:uriIdentifier:body:authentication:)``.
/// A method that signs, encodes or decrypts can also throw ``ActivationError/protocolError(_:)``
/// (what the protocol layer refused) and ``ActivationError/core(_:)``.
public actor ActivationService {
    /// The validated configuration.
    public nonisolated let configuration: ActivationConfiguration
    let storage: any DeviceActivationStorage
    let transport: any ActivationTransport
    let authenticator: (any BiometricAuthenticator)?
    let clock: any ActivationClock
    let crypto: ActivationCrypto
    var record: LocalActivationRecord?
    var keys: LocalActivationKeys?
    /// Temporary encryption keys (3.3), one per scope, until shortly before they expire.
    var temporaryKeys: [ECIES.Scope: TemporaryEncryptionKey] = [:]
    /// The V4 activation (any V4 suite), when the configuration's algorithm is a V4 one.
    var v4: V4ClientActivation?
    /// The V4 state of an upgrade the server has not confirmed yet (stored under
    /// `StorageNames.upgradeState` and `upgradeKeys`), while ``record`` (from V3.3) or ``v4``
    /// (from a weaker V4 suite) is still current.
    var upgrade: V4ClientActivation?
    /// Tests only: where ``upgradeToV4(password:)`` stops, as a crash there would.
    var upgradeInterruption: UpgradeCheckpoint?

    /// Opens the instance's stored activation, if there is one.
    /// - Parameters:
    ///   - configuration: the configuration.
    ///   - storage: where the activation is kept.
    ///   - transport: how the server is reached.
    ///   - authenticator: the biometric key store, if the device has one.
    ///   - clock: the time source.
    /// - Throws: ``ActivationError/invalidActivationData(reason:)`` (recover with
    ///   ``cleanupInstanceData(configuration:storage:authenticator:)``),
    ///   ``ActivationError/upgradeSDK(foundVersion:)``, ``ActivationError/storage(operation:errno:)``,
    ///   ``ActivationError/core(_:)``, ``ActivationError/protocolError(_:)`` for an algorithm
    ///   the configuration names but the protocol layer cannot run,
    ///   ``ActivationError/biometryOptionNotSupported(_:)`` for a `biometricConfiguration` setting
    ///   `authenticator` cannot honour.
    public init(
        configuration: ActivationConfiguration, storage: any DeviceActivationStorage,
        transport: any ActivationTransport,
        authenticator: (any BiometricAuthenticator)? = nil, clock: any ActivationClock = SystemActivationClock()
    ) throws(ActivationError) {
        self.configuration = configuration
        self.storage = storage
        self.transport = transport
        // A biometry setting the authenticator cannot honour is refused now, never ignored later.
        if let authenticator {
            do throws(BiometryError) {
                try authenticator.checkConfiguration(configuration.biometricConfiguration)
            } catch {
                throw ActivationError(biometry: error)
            }
        }
        self.authenticator = authenticator
        self.clock = clock
        // The V3.3 crypto also wraps the V4 knowledge key's halves (Argon2id, no MAC).
        self.crypto = try protocolStep { () throws(ProtocolError) in
            try ActivationCrypto(algorithm: configuration.algorithm.isV4 ? .legacyP256 : configuration.algorithm)
        }
        let names = configuration.storageNames
        if configuration.algorithm.isV4 {
            // A V3.3 state under a V4 configuration is an activation to upgrade (or being
            // upgraded): it loads as V3.3 below, with its pending V4 state, if any.
            let current = try storage.read(names.state)
            if current.map(LocalV4State.isV4State) ?? true {
                let loaded = try Self.loadV4(configuration, storage: storage)
                v4 = loaded?.current
                upgrade = loaded?.upgrade
                return
            }
        }
        guard let stateBytes = try storage.read(names.state) else {
            // A key file without a state file is what an interrupted create or
            // remove leaves: nothing refers to it any more.
            try storage.remove(names.keys)
            return
        }
        // A V4 activation under a LEGACY_P256 configuration: valid, but not runnable here. A
        // typed answer naming both suites, never "damaged data" (which an app would wipe).
        if LocalV4State.isV4State(stateBytes) {
            let stored = try LocalV4State.decode(stateBytes, instanceId: configuration.instanceId)
            throw .algorithmMismatch(activation: stored.suite, configuration: configuration.algorithm)
        }
        let loaded = try LocalActivationRecord.decode(stateBytes, instanceId: configuration.instanceId)
        guard let blob = try storage.readSecret(names.keys) else {
            throw .invalidActivationData(reason: "the key file is missing")
        }
        let loadedKeys = try LocalActivationKeys.parse(blob)
        guard try Base64.encode(loadedKeys.keyCheck()) == loaded.keyCheck else {
            loadedKeys.destroy()
            throw .invalidActivationData(reason: "the key file does not belong to the activation state")
        }
        record = loaded
        keys = loadedKeys
        if configuration.algorithm.isV4 {
            upgrade = try Self.loadPendingUpgrade(configuration, storage: storage, activationId: loaded.activationId)
        }
    }

    /// The suite of the activation stored for `configuration`'s instance, read without opening
    /// its keys: `nil` when there is none. Lets an app (and `securepin client`) pick the
    /// configuration an activation needs before opening the service.
    /// - Parameters:
    ///   - configuration: the instance's configuration (its storage names and instance).
    ///   - storage: the storage.
    /// - Returns: the stored activation's suite, or `nil`.
    /// - Throws: ``ActivationError/invalidActivationData(reason:)`` for a state that does not
    ///   parse, ``ActivationError/storage(operation:errno:)``.
    public static func storedAlgorithm(configuration: ActivationConfiguration, storage: any DeviceActivationStorage)
        throws(ActivationError) -> ProtocolAlgorithm?
    {
        guard let bytes = try storage.read(configuration.storageNames.state) else { return nil }
        if LocalV4State.isV4State(bytes) {
            return try LocalV4State.decode(bytes, instanceId: configuration.instanceId).suite
        }
        _ = try LocalActivationRecord.decode(bytes, instanceId: configuration.instanceId)
        return .legacyP256
    }

    /// How the stored activation's suite relates to the configuration's (seed 004: "if the
    /// selected algorithm does not match the one used for the activation currently present on
    /// the device, the authenticated protocol upgrade process must be performed").
    /// - Returns: the comparison.
    public func algorithmCheck() -> ActivationAlgorithmCheck {
        let wanted = configuration.algorithm
        let stored: ProtocolAlgorithm
        if let v4 {
            stored = v4.state.suite
        } else if record != nil {
            stored = .legacyP256
        } else {
            return .noActivation
        }
        if stored == wanted { return .matches(stored) }
        return wanted.isStronger(than: stored)
            ? .upgradeAvailable(from: stored, to: wanted)
            : .configurationWeaker(activation: stored, configuration: wanted)
    }

    /// Removes everything an instance stored (state, keys, biometry key),
    /// for example after ``ActivationError/invalidActivationData(reason:)``.
    /// - Parameters:
    ///   - configuration: the instance's configuration.
    ///   - storage: its storage.
    ///   - authenticator: its biometric key store.
    /// - Throws: ``ActivationError/storage(operation:errno:)``.
    public static func cleanupInstanceData(
        configuration: ActivationConfiguration, storage: any DeviceActivationStorage,
        authenticator: (any BiometricAuthenticator)? = nil
    ) throws(ActivationError) {
        try storage.remove(configuration.storageNames.state)
        try storage.remove(configuration.storageNames.keys)
        try storage.remove(configuration.storageNames.upgradeState)
        try storage.remove(configuration.storageNames.upgradeKeys)
        for name in try storage.tokenNames(instanceId: configuration.instanceId) { try storage.remove(name) }
        authenticator?.deleteKey(account: configuration.biometryKeyAccount)
        authenticator?.deleteKey(account: configuration.upgradeBiometryKeyAccount)
    }

    deinit {
        keys?.destroy()
        v4?.keys.destroy()
        upgrade?.keys.destroy()
    }

    // MARK: - State

    /// Whether an activation is stored on this device (in any server state).
    /// - Returns: `true` when there is one.
    public func hasValidActivation() -> Bool { record != nil || v4 != nil }

    /// The stored activation's identifier.
    /// - Returns: the identifier, or `nil` without an activation.
    public func activationIdentifier() -> String? { record?.activationId ?? v4?.state.activationId }

    /// The fingerprint of the stored activation, to compare with the server's.
    /// - Returns: 8 decimal digits.
    /// - Throws: ``ActivationError/missingActivation``; ``ActivationError/protocolError(_:)``
    ///   if the stored keys cannot be used.
    public func activationFingerprint() throws(ActivationError) -> String {
        if isV4 { return try v4Fingerprint() }
        guard let record else { throw .missingActivation }
        return try protocolStep { () throws(ProtocolError) in
            try crypto.fingerprint(
                devicePublicKey: try Base64.decode(record.devicePublicKey, field: "devicePublicKey"),
                serverPublicKey: try Base64.decode(record.serverPublicKey, field: "serverPublicKey"),
                activationId: record.activationId)
        }
    }

    /// Whether the activation has a biometry factor.
    /// - Returns: `true` when it has one.
    public func hasBiometryFactor() -> Bool { record?.biometryEnabled ?? v4?.state.biometryEnabled ?? false }

    /// Biometry on the system and activation levels.
    /// - Returns: the status.
    public func biometricStatus() -> ActivationBiometricStatus {
        ActivationBiometricStatus(
            systemStatus: authenticator?.systemStatus ?? .notSupported,
            biometryType: authenticator?.biometryType ?? .none,
            isBiometricFactorConfigured: record?.biometryEnabled ?? v4?.state.biometryEnabled ?? false)
    }

    /// Forgets the activation on this device: the state and key files are
    /// overwritten and deleted, the biometry key removed, and the activation's tokens
    /// (``storeToken(_:)``) deleted with it. The server is not told.
    /// - Throws: ``ActivationError/storage(operation:errno:)``.
    public func removeActivationLocal() throws(ActivationError) {
        let names = configuration.storageNames
        // The state goes first: once it is gone the activation is gone, and a
        // left-over key file is removed by the next init.
        try storage.remove(names.state)
        record = nil
        keys?.destroy()
        keys = nil
        v4?.keys.destroy()
        v4 = nil
        authenticator?.deleteKey(account: configuration.biometryKeyAccount)
        authenticator?.deleteKey(account: configuration.upgradeBiometryKeyAccount)
        try storage.remove(names.keys)
        upgrade?.keys.destroy()
        upgrade = nil
        try storage.remove(names.upgradeState)
        try storage.remove(names.upgradeKeys)
        // The activation's tokens sign nothing without it; they go with it.
        for name in try storage.tokenNames(instanceId: configuration.instanceId) { try storage.remove(name) }
    }

    // MARK: - Activation

    /// Creates an activation from an activation code the server prepared.
    /// - Parameters:
    ///   - activationCode: the code `XXXXX-XXXXX-XXXXX-XXXXX` as typed, or the QR form
    ///     `CODE#SIGNATURE`; its checksum is checked, and a signature verified under the
    ///     configuration's master server public key, before anything is sent.
    ///   - name: a display name for this device.
    ///   - password: the new PIN; the knowledge key is wrapped under it.
    ///   - enableBiometry: also store the biometry key behind the authenticator.
    /// - Returns: the identifier and the fingerprint to show while the commit is pending.
    /// - Throws: ``ActivationError/invalidActivationState(reason:)`` when an activation
    ///   exists, ``ActivationError/protocolError(_:)`` with
    ///   `PowerAuthProtocol.ProtocolError.emptyPIN` for an empty PIN or
    ///   `PowerAuthProtocol.ProtocolError.invalidActivationCode(_:)` for a mistyped code or a
    ///   signature that does not verify,
    ///   ``ActivationError/biometryNotAvailable(_:)``, the network and server errors,
    ///   ``ActivationError/invalidResponse(reason:)``, ``ActivationError/storage(operation:errno:)``,
    ///   ``ActivationError/core(_:)``.
    public func createActivation(
        activationCode: String, name: String, password: Password, enableBiometry: Bool = false
    ) async throws(ActivationError) -> ActivationResult {
        if isV4 {
            return try await v4CreateActivation(
                activationCode: activationCode, name: name, password: password, enableBiometry: enableBiometry)
        }
        guard record == nil else { throw .invalidActivationState(reason: "an activation already exists") }
        guard password.length > 0 else { throw .protocolError(.emptyPIN) }
        let sdk = configuration.sdkConfiguration
        let code = try protocolStep { () throws(ProtocolError) in
            let code = try ActivationCode(parsing: activationCode)
            try code.verifySignature(masterServerPublicKey: sdk.masterServerPublicKey)
            return code
        }
        if enableBiometry {
            guard let authenticator else { throw .biometryNotAvailable(.notSupported) }
            guard authenticator.systemStatus == .available else {
                throw .biometryNotAvailable(authenticator.systemStatus)
            }
        }
        let device = try protocolStep { () throws(ProtocolError) in try crypto.generateKeyPair() }
        defer { device.privateKey.destroy() }
        // The device key goes out compressed, as the mobile SDK sends it.
        let devicePublicKey = try protocolStep { () throws(ProtocolError) in
            try PublicKeyEncoding.compressed(device.publicKey)
        }
        let response = try await exchangeActivation(
            code: code.code, devicePublicKey: devicePublicKey, name: name)
        guard record == nil else { throw .invalidActivationState(reason: "an activation already exists") }
        let (serverKey, counter) = try verifyCreateResponse(response)
        let factorKeys = try protocolStep { () throws(ProtocolError) in
            let master = try crypto.masterSecret(privateKey: device.privateKey, peerPublicKey: serverKey)
            defer { master.destroy() }
            return try crypto.factorKeys(masterSecret: master)
        }
        defer { factorKeys.knowledge.destroy(); factorKeys.biometry.destroy(); factorKeys.vault.destroy() }
        let newKeys = LocalActivationKeys(possession: factorKeys.possession, transport: factorKeys.transport)
        let seal = try protocolStep { () throws(ProtocolError) in
            try crypto.aeadKey(from: factorKeys.vault, index: ProtocolConstants.biometrySealKeyIndex)
        }
        defer { seal.destroy() }
        let sealedBiometry = try coreStep { () throws(SecureCoreError) in
            try AEAD.seal(factorKeys.biometry, using: seal, associatedData: Array(response.activationId.utf8))
        }
        let knowledgeKey = try protocolStep { () throws(ProtocolError) in
            try crypto.wrapKnowledgeKey(
                factorKeys.knowledge, pin: password, parameters: configuration.knowledgeKeyParameters)
        }
        let newRecord = LocalActivationRecord(
            formatVersion: LocalActivationRecord.currentFormatVersion, instanceId: configuration.instanceId,
            activationId: response.activationId, algorithm: configuration.algorithm.rawValue,
            devicePublicKey: Base64.encode(devicePublicKey), serverPublicKey: response.serverPublicKey,
            counter: counter.base64, counterIndex: 0, counterHistory: [],
            knowledgeKey: knowledgeKey,
            sealedBiometryKey: sealedBiometry, biometryEnabled: enableBiometry,
            enrolledSetFingerprint: enableBiometry
                ? authenticator.map { Base64.encode($0.enrolledSetFingerprint) } : nil,
            keyCheck: Base64.encode(try newKeys.keyCheck()))
        if enableBiometry, let authenticator {
            try mapBiometry { () throws(BiometryError) in
                try authenticator.storeKey(factorKeys.biometry, account: configuration.biometryKeyAccount)
            }
        }
        do {
            let blob = try newKeys.serialized()
            defer { blob.destroy() }
            try storage.writeSecret(configuration.storageNames.keys, blob)
            try storage.write(configuration.storageNames.state, newRecord.encoded())
        } catch {
            authenticator?.deleteKey(account: configuration.biometryKeyAccount)
            try? storage.remove(configuration.storageNames.keys)
            newKeys.destroy()
            throw error
        }
        record = newRecord
        keys = newKeys
        return ActivationResult(activationId: response.activationId, activationFingerprint: try activationFingerprint())
    }

    /// `activation/create`: layer 2 (the device key) inside layer 1 (the code), both
    /// encrypted in application scope with the same temporary key; the response's layer 2
    /// opens with layer 2's envelope inside layer 1's. The ECIES MACs, keyed from an ECDH
    /// with a key the master key signed, authenticate the answer.
    private func exchangeActivation(code: String, devicePublicKey: [UInt8], name: String)
        async throws(ActivationError) -> ActivationLayer2Response
    {
        let endpoint = ActivationAPI.createActivation
        let (inner, _) = try await encryptor(scope: .application, sharedInfo1: ActivationAPI.createActivationLayer2)
        let (outer, _) = try await encryptor(scope: .application, sharedInfo1: endpoint.sharedInfo1)
        let innerPlain = try securePlaintext(
            ActivationLayer2Request(
                devicePublicKey: Base64.encode(devicePublicKey), activationName: name, platform: "unknown",
                deviceInfo: configuration.clientConfiguration.userAgent))
        defer { innerPlain.destroy() }
        let (innerCryptogram, innerEnvelope) = try eciesStep { () throws(ECIESError) in
            try inner.encryptRequest(innerPlain, now: clock.now())
        }
        let outerPlain = try securePlaintext(
            ActivationLayer1Request(activationCode: code, activationData: EncryptedRequestBody(innerCryptogram)))
        defer { outerPlain.destroy() }
        let (outerCryptogram, outerEnvelope) = try eciesStep { () throws(ECIESError) in
            try outer.encryptRequest(outerPlain, now: clock.now())
        }
        let body = try protocolStep { () throws(ProtocolError) in
            try WireCoding.encode(EncryptedRequestBody(outerCryptogram))
        }
        let header = EncryptionHeader(
            version: .v3_3, applicationKey: configuration.sdkConfiguration.applicationKey, activationId: nil)
        let answer = try await exchange(
            path: endpoint.path, body: body, headers: [EncryptionHeader.name: header.value], authentication: nil)
        let layer1 = try decodePlaintext(
            try openResponse(answer, envelope: outerEnvelope, path: endpoint.path), ActivationLayer1Response.self,
            path: endpoint.path)
        let innerAnswer = try protocolStep { () throws(ProtocolError) in
            try WireCoding.encode(layer1.activationData)
        }
        return try decodePlaintext(
            try openResponse(innerAnswer, envelope: innerEnvelope, path: endpoint.path), ActivationLayer2Response.self,
            path: endpoint.path)
    }

    private func verifyCreateResponse(_ response: ActivationLayer2Response) throws(ActivationError) -> (
        [UInt8], HashCounter
    ) {
        func invalid(_ what: String) -> ActivationError { .invalidResponse(reason: "activation/create: \(what)") }
        guard (try? AuthorizationHeader.validateActivationId(response.activationId)) != nil else {
            throw invalid("bad activation id")
        }
        guard let serverKey = Base64.decode(response.serverPublicKey),
            (try? P256.validate(publicKey: serverKey)) != nil,
            let ctr = Base64.decode(response.ctrData), let counter = try? HashCounter(bytes: ctr)
        else { throw invalid("malformed field") }
        return (serverKey, counter)
    }

    /// Removes the activation on the server (it needs 2FA), then locally.
    /// - Parameter authentication: possession with the PIN or with biometry.
    /// - Throws: the signing, network and server errors; the local activation
    ///   stays when the server did not confirm.
    public func removeActivation(authentication: ActivationAuthentication) async throws(ActivationError) {
        if isV4 { return try await v4RemoveActivation(authentication: authentication) }
        _ = try await send(ActivationAPI.removeActivation, EmptyMessage(), authentication: authentication)
        try removeActivationLocal()
    }

    // MARK: - Persistence

    /// Changes the stored activation under the storage lock: re-reads the
    /// state (another process may have moved the counter), applies `change`,
    /// writes, and only then adopts the result — a failed write changes nothing.
    func mutateRecord<R>(_ change: (inout LocalActivationRecord) throws(ActivationError) -> R)
        throws(ActivationError) -> R
    {
        guard let known = record else { throw .missingActivation }
        let names = configuration.storageNames
        let instanceId = configuration.instanceId
        return try storage.withExclusiveAccess { () throws(ActivationError) -> R in
            guard let bytes = try storage.read(names.state) else { throw .missingActivation }
            var current = try LocalActivationRecord.decode(bytes, instanceId: instanceId)
            guard current.activationId == known.activationId, current.keyCheck == known.keyCheck else {
                throw .invalidActivationState(reason: "the stored activation was replaced")
            }
            let result = try change(&current)
            try storage.write(names.state, current.encoded())
            record = current
            return result
        }
    }
}
