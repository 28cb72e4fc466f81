import Biometry
import Foundation
import PowerAuthProtocol
import SecureCore

/// How ``ActivationService/resolvePendingUpgrade()`` ended an upgrade it found half-finished.
public enum ActivationUpgradeOutcome: Sendable, Equatable {
    /// The server confirmed the V4 state: the device now speaks V4.
    case upgraded
    /// The server never confirmed this V4 state and still accepts the V3.3 one: the pending V4
    /// state was discarded and the activation stays V3.3 (``ActivationService/upgradeToV4(password:)``
    /// starts again).
    case abandoned
}

/// The durable steps of ``ActivationService/upgradeToV4(password:)``, after each of which a
/// test can stop the upgrade as a crash would (`docs/protocol-v4.md`, "The client's upgrade").
enum UpgradeCheckpoint: Sendable, Equatable {
    /// `upgrade/start` answered; nothing stored.
    case started
    /// The pending V4 keys are stored.
    case pendingKeysStored
    /// The pending V4 state is stored (the device is "locally pending").
    case pendingStateStored
    /// `upgrade/confirm` answered OK; nothing switched yet.
    case confirmed
    /// The V4 state replaced the V3.3 state.
    case stateSwitched
    /// The V4 keys replaced the V3.3 keys.
    case keysSwitched
}

/// The client side of the upgrade from V3.3 to V4 (`EC_P384`): a state machine whose every
/// step is one atomic storage write, so a crash leaves a device that works in V3.3 (before the
/// server confirmed) or in V4 (after), and the next service over the same storage finishes or
/// abandons the upgrade without a new activation.
extension ActivationService {
    /// Whether a V4 state waits for the server's confirmation (a crash interrupted
    /// ``upgradeToV4(password:)``); ``resolvePendingUpgrade()`` settles it.
    /// - Returns: `true` when one waits.
    public func hasPendingUpgrade() -> Bool { upgrade != nil }

    /// Upgrades the stored V3.3 activation to protocol V4 (`EC_P384`): `upgrade/start` (a V3.3
    /// code with the PIN over a V4-encrypted body) gives a new activation secret, whose keys are
    /// stored next to the V3.3 state; `upgrade/confirm` (a V4 code) makes the server switch;
    /// then the V4 state becomes current and the V3.3 state is removed. A pending upgrade found
    /// at the start is resolved first. With biometry on, the V4 biometry key (the new key tree's
    /// `auth/biometry` key, which the server uses from the confirmation on) goes into the
    /// authenticator under ``ActivationConfiguration/upgradeBiometryKeyAccount`` beside the V3.3
    /// key, which is deleted once the V4 state is current; no biometric prompt is needed.
    /// - Parameter password: the PIN (the V4 knowledge key is wrapped under it).
    /// - Throws: ``ActivationError/wrongParameter(reason:)`` unless the configuration is
    ///   `EC_P384`, ``ActivationError/invalidActivationState(reason:)`` when the activation is
    ///   V4 already, ``ActivationError/missingActivation``, ``ActivationError/protocolError(_:)``
    ///   with `unsupportedAlgorithm` for an activation with biometry (not upgraded here) or
    ///   `emptyPIN`, ``ActivationError/authentication`` for a wrong PIN (counted), the network
    ///   and server errors, ``ActivationError/invalidResponse(reason:)``,
    ///   ``ActivationError/storage(operation:errno:)``, ``ActivationError/core(_:)``.
    public func upgradeToV4(password: Password) async throws(ActivationError) {
        guard configuration.algorithm.isV4 else {
            throw .wrongParameter(reason: "the upgrade to V4 needs a V4 configuration (EC_P384 or a hybrid suite)")
        }
        if upgrade != nil, try await resolvePendingUpgrade() == .upgraded { return }
        guard v4 == nil else { throw .invalidActivationState(reason: "the activation speaks V4 already") }
        guard let current = record else { throw .missingActivation }
        guard password.length > 0 else { throw .protocolError(.emptyPIN) }
        try await runUpgrade(from: .v3(current), password: password)
    }

    /// Upgrades the stored activation to the configuration's suite when that one is stronger
    /// (``algorithmCheck()`` says ``ActivationAlgorithmCheck/upgradeAvailable(from:to:)``):
    /// V3.3 to any V4 suite as ``upgradeToV4(password:)``, and a V4 suite to a stronger one
    /// (`EC_P384` → `EC_P384_ML_L3` → `EC_P384_ML_L5`) by the same authenticated flow with the same
    /// guarantees: `upgrade/start` signed with a V4 `possession_knowledge` code of the current
    /// state, the new state stored beside the current one (which keeps working), `upgrade/confirm`
    /// signed by the new state, then the switch; every step one atomic write, so an interrupted
    /// upgrade is finished or abandoned by ``resolvePendingUpgrade()``. Biometry is carried across
    /// when the authenticator is available (the new key tree's biometry key, stored under
    /// ``ActivationConfiguration/upgradeBiometryKeyAccount``).
    /// - Parameter password: the PIN (the new knowledge key is wrapped under it).
    /// - Throws: ``ActivationError/invalidActivationState(reason:)`` when the configuration's
    ///   suite is not stronger than the activation's (naming both), the errors of
    ///   ``upgradeToV4(password:)``.
    public func upgrade(password: Password) async throws(ActivationError) {
        if upgrade != nil, try await resolvePendingUpgrade() == .upgraded { return }
        if record != nil {
            try await upgradeToV4(password: password)
            return
        }
        guard let current = v4 else { throw .missingActivation }
        let check = algorithmCheck()
        guard case .upgradeAvailable = check else {
            throw .invalidActivationState(reason: "\(check): nothing to upgrade")
        }
        guard password.length > 0 else { throw .protocolError(.emptyPIN) }
        try await runUpgrade(from: .v4(current), password: password)
    }

    /// What an upgrade starts from.
    private enum UpgradeSource {
        case v3(LocalActivationRecord)
        case v4(V4ClientActivation)

        var activationId: String {
            switch self {
            case .v3(let record): record.activationId
            case .v4(let activation): activation.state.activationId
            }
        }

        var biometryEnabled: Bool {
            switch self {
            case .v3(let record): record.biometryEnabled == true
            case .v4(let activation): activation.state.biometryEnabled == true
            }
        }

        /// The authenticator account of the current biometry key.
        func biometryAccount(_ configuration: ActivationConfiguration) -> String {
            switch self {
            case .v3: configuration.biometryKeyAccount
            case .v4(let activation): activation.state.biometryAccount ?? configuration.biometryKeyAccount
            }
        }

        /// Where the new biometry key goes: the account the current key does not use, so both
        /// exist until the switch.
        func upgradeBiometryAccount(_ configuration: ActivationConfiguration) -> String {
            biometryAccount(configuration) == configuration.upgradeBiometryKeyAccount
                ? configuration.biometryKeyAccount : configuration.upgradeBiometryKeyAccount
        }

        var enrolledSetFingerprint: String? {
            switch self {
            case .v3(let record): record.enrolledSetFingerprint
            case .v4(let activation): activation.state.enrolledSetFingerprint
            }
        }
    }

    /// The durable steps shared by both upgrades: start, store the pending keys and state, confirm.
    private func runUpgrade(from source: UpgradeSource, password: Password) async throws(ActivationError) {
        let pending = try await v4StartUpgrade(source, password: password)
        try interrupt(at: .started, pending.keys)
        let names = configuration.storageNames
        do {
            let blob = try pending.keys.serialized()
            defer { blob.destroy() }
            try storage.writeSecret(names.upgradeKeys, blob)
            try interrupt(at: .pendingKeysStored)
            try storage.write(names.upgradeState, pending.state.encoded())
        } catch {
            pending.keys.destroy()
            throw error
        }
        upgrade = pending
        try interrupt(at: .pendingStateStored)
        guard try await v4ConfirmUpgrade() == .upgraded else { throw .authentication }
    }

    /// Settles an upgrade a crash interrupted: sends `upgrade/confirm` again with the pending V4
    /// state (the server accepts a repeated confirmation). Accepted: the V4 state becomes
    /// current. Refused while the V3.3 status still opens: the server never confirmed this
    /// state, which is discarded. Refused otherwise, or a network error: nothing changes.
    /// - Returns: the outcome, or `nil` when no upgrade was pending.
    /// - Throws: ``ActivationError/authentication`` when the server refuses both versions, the
    ///   network and server errors, ``ActivationError/storage(operation:errno:)``,
    ///   ``ActivationError/protocolError(_:)``, ``ActivationError/core(_:)``.
    public func resolvePendingUpgrade() async throws(ActivationError) -> ActivationUpgradeOutcome? {
        guard upgrade != nil else { return nil }
        return try await v4ConfirmUpgrade()
    }

    /// Loads the pending V4 state of a V3.3 activation, if there is one; a key file without its
    /// state (a crash between the two writes) is removed.
    static func loadPendingUpgrade(
        _ configuration: ActivationConfiguration, storage: any DeviceActivationStorage, activationId: String
    ) throws(ActivationError) -> V4ClientActivation? {
        let names = configuration.storageNames
        guard let bytes = try storage.read(names.upgradeState) else {
            try storage.remove(names.upgradeKeys)
            return nil
        }
        let state = try LocalV4State.decode(bytes, instanceId: configuration.instanceId)
        guard state.activationId == activationId else {
            throw .invalidActivationData(reason: "the pending upgrade belongs to another activation")
        }
        guard let keys = try loadV4Keys(names.upgradeKeys, storage: storage, keyCheck: state.keyCheck) else {
            throw .invalidActivationData(reason: "the pending upgrade's key file is missing or does not match")
        }
        return V4ClientActivation(state: state, keys: keys)
    }

    /// Tests only: makes the next ``upgradeToV4(password:)`` stop after `checkpoint`, leaving
    /// storage as a crash there would (this instance is then not to be used again).
    /// - Parameter checkpoint: the step, or `nil` for none.
    func interruptUpgrade(after checkpoint: UpgradeCheckpoint?) { upgradeInterruption = checkpoint }

    private func interrupt(at checkpoint: UpgradeCheckpoint, _ discard: LocalV4Keys? = nil) throws(ActivationError) {
        guard upgradeInterruption == checkpoint else { return }
        discard?.destroy()
        throw .cancelled
    }

    /// `upgrade/start`: the application-scope V4 encryption of `{sharedSecretRequest,
    /// devicePublicKeys}` under a V3.3 `possession_knowledge` code; the answer's secret gives the
    /// V4 key tree, kept in memory only (the caller stores it).
    private func v4StartUpgrade(_ current: UpgradeSource, password: Password)
        async throws(ActivationError) -> V4ClientActivation
    {
        let endpoint = V4API.upgradeStart
        guard let uriIdentifier = endpoint.uriIdentifier else { throw .missingActivation }
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
        let context = try v4Context(key, .upgradeStart, activation: nil)
        // Biometry stays on across the upgrade when the authenticator can take the new key.
        let keepBiometry = current.biometryEnabled && authenticator.map { $0.systemStatus == .available } == true
        let devicePostQuantum = try Self.v4DevicePostQuantumKey(suite: suite)
        let plain = try securePlaintext(
            V4UpgradeStartRequest(
                sharedSecretRequest: shared,
                devicePublicKeys: V4PublicKeys(ecdsa: Base64.encode(device.publicKey), mldsa: devicePostQuantum),
                enableBiometry: keepBiometry))
        defer { plain.destroy() }
        let now = Int64(clock.now().timeIntervalSince1970 * 1000)
        let (request, nonce) = try protocolStep { () throws(ProtocolError) in
            try context.encryptRequest(plain, timestampMilliseconds: now)
        }
        let body = try protocolStep { () throws(ProtocolError) in try WireCoding.encode(request) }
        let authentication = ActivationAuthentication.possessionWithPassword(password)
        // The current state signs: a V3.3 code, or a V4 code of the weaker suite.
        let headerValue: String
        switch current {
        case .v3:
            headerValue = try await sign(
                method: "POST", uriIdentifier: uriIdentifier, body: body, authentication: authentication
            ).value
        case .v4:
            headerValue = try await v4Sign(
                method: "POST", uriIdentifier: uriIdentifier, body: body, authentication: authentication
            ).value
        }
        let applicationKey = configuration.sdkConfiguration.applicationKey
        let answer = try await exchange(
            path: endpoint.path, body: body,
            headers: [
                AuthorizationHeader.name: headerValue,
                V4EncryptionHeader.name: V4EncryptionHeader(applicationKey: applicationKey, activationId: nil).value,
            ], authentication: authentication)
        let response = try decodePlaintext(
            try v4Open(answer, context: context, nonce: nonce, path: endpoint.path), V4UpgradeStartResponse.self,
            path: endpoint.path)
        let serverPostQuantum = try Self.v4ServerPostQuantumKey(
            response.serverPublicKeys.mldsa, suite: suite, step: "upgrade/start")
        let (server, counter, tree) = try v4CompleteExchange(
            kem, response: response.sharedSecretResponse, serverKey: response.serverPublicKeys.ecdsa,
            ctrData: response.ctrData, step: "upgrade/start")
        defer { tree.destroy() }
        let newKeys = try LocalV4Keys(tree)
        var biometry = false
        if keepBiometry, let authenticator {
            do {
                try mapBiometry { () throws(BiometryError) in
                    try authenticator.storeKey(tree.biometry, account: current.upgradeBiometryAccount(configuration))
                }
            } catch {
                newKeys.destroy()
                throw error
            }
            biometry = true
        }
        do {
            let wrapped = try v4Wrap(tree.knowledge, password: password)
            let vaultCheck = try coreStep { () throws(SecureCoreError) in
                try HMACSHA256.foldedTag(LocalV4Keys.keyCheckLabel, key: tree.appVault2FA)
            }
            let state = LocalV4State(
                kind: LocalV4State.kind, instanceId: configuration.instanceId, activationId: current.activationId,
                algorithm: suite.rawValue, devicePublicKey: Base64.encode(device.publicKey),
                serverPublicKey: Base64.encode(server), counter: counter.base64, counterIndex: 0,
                counterHistory: [], knowledgeKey: wrapped, vaultCheck: Base64.encode(vaultCheck),
                keyCheck: Base64.encode(try newKeys.keyCheck()), biometryEnabled: biometry ? true : nil,
                enrolledSetFingerprint: biometry ? current.enrolledSetFingerprint : nil,
                biometryAccount: biometry ? current.upgradeBiometryAccount(configuration) : nil,
                serverPostQuantumPublicKey: serverPostQuantum, devicePostQuantumPublicKey: devicePostQuantum)
            return V4ClientActivation(state: state, keys: newKeys)
        } catch {
            newKeys.destroy()
            throw error
        }
    }

    /// `upgrade/confirm` with the pending state (its counter moves and is stored first), then
    /// the switch; a refusal is checked against the V3.3 status before anything is discarded.
    private func v4ConfirmUpgrade() async throws(ActivationError) -> ActivationUpgradeOutcome {
        let endpoint = V4API.upgradeConfirm
        let body = Array("{}".utf8)
        let header = try v4UpgradeConfirmHeader(body: body)
        do throws(ActivationError) {
            let answer = try await exchange(
                path: endpoint.path, body: body, headers: [AuthorizationHeader.name: header.value],
                authentication: nil)
            guard let envelope = try? WireCoding.decode(ResponseEnvelope<EmptyMessage>.self, answer),
                envelope.status.uppercased() == "OK"
            else { throw .invalidResponse(reason: "\(endpoint.path): the body does not follow the API") }
        } catch {
            guard case .authentication = error else { throw error }
            // The server does not know this V4 state. If it still answers V3.3 under our keys it
            // never confirmed one: discard ours. Otherwise keep it and report.
            _ = try await fetchActivationStatus()
            try discardPendingUpgrade()
            return .abandoned
        }
        try interrupt(at: .confirmed)
        try switchToUpgradedState()
        return .upgraded
    }

    /// A V4 `possession` code for `upgrade/confirm` from the pending state, whose counter moves
    /// and is stored (under the storage lock) before the code leaves.
    private func v4UpgradeConfirmHeader(body: [UInt8]) throws(ActivationError) -> V4AuthorizationHeader {
        guard let known = upgrade, let uriIdentifier = V4API.upgradeConfirm.uriIdentifier else {
            throw .missingActivation
        }
        let nonce = try coreStep { () throws(SecureCoreError) in
            try SecureRandom.bytes(count: ProtocolConstants.nonceByteCount)
        }
        let secret = configuration.sdkConfiguration.applicationSecret
        let data = try protocolStep { () throws(ProtocolError) in
            try RequestData(method: "POST", uriIdentifier: uriIdentifier, nonce: nonce, body: body)
                .normalized(applicationSecret: secret)
        }
        let names = configuration.storageNames
        let instanceId = configuration.instanceId
        let (code, state) = try storage.withExclusiveAccess { () throws(ActivationError) -> (String, LocalV4State) in
            guard let bytes = try storage.read(names.upgradeState) else { throw .missingActivation }
            var state = try LocalV4State.decode(bytes, instanceId: instanceId)
            guard state.activationId == known.state.activationId, state.keyCheck == known.state.keyCheck else {
                throw .invalidActivationState(reason: "the pending upgrade was replaced")
            }
            let counter = try state.currentCounter
            let code = try protocolStep { () throws(ProtocolError) in
                try V4AuthenticationCode.compute(
                    factorSet: .possession, keys: V4FactorKeys(possession: known.keys.possession, knowledge: nil),
                    counter: counter, data: data)
            }
            try state.advanceCounter()
            try storage.write(names.upgradeState, state.encoded())
            return (code, state)
        }
        upgrade = V4ClientActivation(state: state, keys: known.keys)
        let applicationKey = configuration.sdkConfiguration.applicationKey
        return try protocolStep { () throws(ProtocolError) in
            try V4AuthorizationHeader(
                activationId: state.activationId, applicationKey: applicationKey, nonce: nonce,
                factorSet: .possession, authenticationCode: code)
        }
    }

    /// After the server confirmed: the V4 state replaces the V3.3 state (from here on the next
    /// service loads V4 and takes the keys from the pending key file), the V3.3 keys are zeroed
    /// and replaced by the V4 keys, then the pending files go.
    private func switchToUpgradedState() throws(ActivationError) {
        guard let pending = upgrade else { throw .missingActivation }
        let oldAccount = currentBiometryAccount
        let names = configuration.storageNames
        try storage.withExclusiveAccess { () throws(ActivationError) in
            try storage.write(names.state, pending.state.encoded())
            try interrupt(at: .stateSwitched)
            try storage.remove(names.keys)
            let blob = try pending.keys.serialized()
            defer { blob.destroy() }
            try storage.writeSecret(names.keys, blob)
            try interrupt(at: .keysSwitched)
            try storage.remove(names.upgradeState)
            try storage.remove(names.upgradeKeys)
        }
        keys?.destroy()
        keys = nil
        record = nil
        temporaryKeys = [:]
        v4?.keys.destroy()
        v4 = pending
        upgrade = nil
        // The old biometry key opens nothing any more; the new one lives under the state's account.
        if pending.state.biometryAccount != oldAccount { authenticator?.deleteKey(account: oldAccount) }
    }

    /// The authenticator account of the current state's biometry key.
    private var currentBiometryAccount: String {
        if record != nil { return configuration.biometryKeyAccount }
        return v4?.state.biometryAccount ?? configuration.biometryKeyAccount
    }

    /// Forgets a pending V4 state the server never confirmed (state first, then its keys).
    private func discardPendingUpgrade() throws(ActivationError) {
        let names = configuration.storageNames
        try storage.remove(names.upgradeState)
        try storage.remove(names.upgradeKeys)
        if let account = upgrade?.state.biometryAccount, account != currentBiometryAccount {
            authenticator?.deleteKey(account: account)
        }
        upgrade?.keys.destroy()
        upgrade = nil
    }
}
