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
}
