import Foundation
import PostQuantum
import PowerAuthProtocol
import SecureCore

/// The device's public V4 state (any V4 suite: the one the activation was created with), JSON in
/// the state file. Nothing here is secret:
/// the knowledge key is wrapped under Argon2id(PIN) without a MAC (two 16-byte halves, each
/// wrapped as V3 wraps its knowledge key), so a wrong PIN gives a wrong key that only the
/// server can tell.
struct LocalV4State: Codable, Equatable {
    static let kind = "v4"
    static let counterHistoryLength = 32

    var kind: String
    var instanceId: String
    var activationId: String
    var algorithm: String
    var devicePublicKey: String
    var serverPublicKey: String
    var counter: String
    var counterIndex: UInt64
    var counterHistory: [String]
    var knowledgeKey: [WrappedKnowledgeKey]
    var vaultCheck: String
    var keyCheck: String
    /// Whether the biometry factor is on (its key is in the authenticator, never here).
    var biometryEnabled: Bool?
    /// The enrolled-set fingerprint when biometry was added (to invalidate after a change).
    var enrolledSetFingerprint: String?
    /// The authenticator account of the biometry key when it is not the configured one (an
    /// upgrade from V3.3 stores the V4 key beside the V3.3 key until the server confirmed).
    var biometryAccount: String?
    /// `true` from `activation/create` until `activation/confirm` answered OK; `nil` in states
    /// written before the client confirmed (treated as not pending).
    var confirmationPending: Bool?
    /// The server's ML-DSA public key for this activation (SubjectPublicKeyInfo, Base64): hybrid
    /// suites only; it verifies activation-scope temporary keys beside ``serverPublicKey``.
    var serverPostQuantumPublicKey: String?
    /// The device's ML-DSA public key sent at activation (SubjectPublicKeyInfo, Base64): hybrid
    /// suites only, `nil` in states written before the client sent one. Its signing key is not kept
    /// (as the P-384 one: nothing here signs with the device key). It enters the fingerprint.
    var devicePostQuantumPublicKey: String?

    /// The device's raw ML-DSA key of a hybrid activation, if it sent one.
    var devicePostQuantumKey: [UInt8]? {
        guard let set = suite.signatureParameterSet, let text = devicePostQuantumPublicKey,
            let der = Base64.decode(text)
        else { return nil }
        return try? MLDSA.publicKey(set, fromPublicKeyInfo: der)
    }

    /// The suite (validated by ``decode(_:instanceId:)``; `EC_P384` for anything else).
    var suite: ProtocolAlgorithm { ProtocolAlgorithm(rawValue: algorithm) ?? .ecP384 }

    /// The server's raw ML-DSA key and parameter set of a hybrid activation; `nil` otherwise.
    var serverPostQuantumKey: (publicKey: [UInt8], parameterSet: MLDSA.ParameterSet)? {
        guard let set = suite.signatureParameterSet, let text = serverPostQuantumPublicKey,
            let der = Base64.decode(text), let key = try? MLDSA.publicKey(set, fromPublicKeyInfo: der)
        else { return nil }
        return (key, set)
    }

    private struct Kind: Decodable { let kind: String? }

    /// Whether a state file holds a V4 state (rather than a V3.3 one).
    static func isV4State(_ bytes: [UInt8]) -> Bool {
        (try? JSONDecoder().decode(Kind.self, from: Data(bytes)))?.kind == kind
    }

    static func decode(_ bytes: [UInt8], instanceId: String) throws(ActivationError) -> LocalV4State {
        let state: LocalV4State
        do {
            state = try JSONDecoder().decode(LocalV4State.self, from: Data(bytes))
        } catch {
            throw .invalidActivationData(reason: "the activation state is not a V4 (EC_P384) state")
        }
        func bad(_ what: String) -> ActivationError { .invalidActivationData(reason: "the V4 state has \(what)") }
        guard state.kind == kind, let suite = ProtocolAlgorithm(rawValue: state.algorithm), suite.isV4 else {
            throw bad("an unknown kind")
        }
        guard (suite.signatureParameterSet == nil) == (state.serverPostQuantumPublicKey == nil),
            suite.signatureParameterSet == nil || state.serverPostQuantumKey != nil
        else { throw bad("a bad ML-DSA public key") }
        guard state.devicePostQuantumPublicKey == nil || state.devicePostQuantumKey != nil else {
            throw bad("a bad device ML-DSA public key")
        }
        guard state.instanceId == instanceId else { throw bad("another instance id") }
        guard (try? AuthorizationHeader.validateActivationId(state.activationId)) != nil else { throw bad("a bad id") }
        guard let device = Base64.decode(state.devicePublicKey), let server = Base64.decode(state.serverPublicKey),
            device.count == 97, server.count == 97, (try? ECP384KeyPair.validate(publicKey: device)) != nil,
            (try? ECP384KeyPair.validate(publicKey: server)) != nil
        else { throw bad("a bad public key") }
        guard (try? V4HashCounter(base64: state.counter)) != nil, state.counterHistory.count <= counterHistoryLength,
            state.counterHistory.allSatisfy({ (try? V4HashCounter(base64: $0)) != nil })
        else { throw bad("a bad counter") }
        guard state.knowledgeKey.count == 2 else { throw bad("a bad wrapped knowledge key") }
        guard Base64.decode(state.vaultCheck)?.count == 16, Base64.decode(state.keyCheck)?.count == 32 else {
            throw bad("a bad key check")
        }
        return state
    }

    func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array((try? encoder.encode(self)) ?? Data())
    }

    var currentCounter: V4HashCounter {
        get throws(ActivationError) {
            try protocolStep { () throws(ProtocolError) in try V4HashCounter(base64: counter) }
        }
    }

    mutating func advanceCounter() throws(ActivationError) {
        let old = try currentCounter
        counter = try protocolStep { () throws(ProtocolError) in try old.next().base64 }
        counterIndex &+= 1
        counterHistory = Array(([old.base64] + counterHistory).prefix(Self.counterHistoryLength))
    }
}

/// The device's secret V4 keys, in the secret key file:
/// `"SPC4" ‖ 01 ‖ possession ‖ KEY_MAC_CTR_DATA ‖ KEY_MAC_STATUS ‖ KEY_MAC_GET_ACT_TEMP_KEY ‖ KEY_E2EE_SHARED_INFO2`
/// (32 bytes each). `KEY_ACTIVATION_SECRET` and the knowledge and biometry keys are not kept:
/// the knowledge key exists only wrapped under the PIN.
struct LocalV4Keys {
    static let magic: [UInt8] = Array("SPC4".utf8)
    static let byteCount = 5 + 5 * 32
    static let keyCheckLabel = Array("SecurePIN V4 activation key check".utf8)

    let possession: SecureBytes
    let counterDataMAC: SecureBytes
    let statusMAC: SecureBytes
    let activationTemporaryKeyMAC: SecureBytes
    let sharedInfo2: SecureBytes

    var all: [SecureBytes] { [possession, counterDataMAC, statusMAC, activationTemporaryKeyMAC, sharedInfo2] }

    init(_ keys: V4ActivationKeys) throws(ActivationError) {
        possession = try coreStep { () throws(SecureCoreError) in try keys.possession.copy() }
        counterDataMAC = try coreStep { () throws(SecureCoreError) in try keys.counterDataMAC.copy() }
        statusMAC = try coreStep { () throws(SecureCoreError) in try keys.statusMAC.copy() }
        activationTemporaryKeyMAC = try coreStep { () throws(SecureCoreError) in
            try keys.activationTemporaryKeyMAC.copy()
        }
        sharedInfo2 = try coreStep { () throws(SecureCoreError) in try keys.sharedInfo2.copy() }
    }

    private init(parts: [SecureBytes]) {
        possession = parts[0]
        counterDataMAC = parts[1]
        statusMAC = parts[2]
        activationTemporaryKeyMAC = parts[3]
        sharedInfo2 = parts[4]
    }

    func destroy() { for key in all { key.destroy() } }

    func keyCheck() throws(ActivationError) -> [UInt8] {
        try coreStep { () throws(SecureCoreError) in
            try HMACSHA256.foldedTag(Self.keyCheckLabel, key: possession)
                + HMACSHA256.foldedTag(Self.keyCheckLabel, key: statusMAC)
        }
    }

    func serialized() throws(ActivationError) -> SecureBytes {
        let out = try coreStep { () throws(SecureCoreError) in try SecureBytes(count: Self.byteCount) }
        out.withUnsafeMutableBytes { buffer in
            buffer.copyBytes(from: Self.magic + [1])
            for (index, key) in all.enumerated() {
                key.withUnsafeBytes {
                    UnsafeMutableRawBufferPointer(rebasing: buffer[(5 + 32 * index)..<(37 + 32 * index)])
                        .copyMemory(from: $0)
                }
            }
        }
        return out
    }

    static func parse(_ blob: SecureBytes) throws(ActivationError) -> LocalV4Keys {
        defer { blob.destroy() }
        guard blob.count == byteCount else { throw .invalidActivationData(reason: "the V4 key file has a bad size") }
        let header = blob.withUnsafeBytes { Array($0.prefix(5)) }
        guard header == magic + [1] else { throw .invalidActivationData(reason: "the V4 key file has a bad header") }
        var parts: [SecureBytes] = []
        for index in 0..<5 {
            let part = try coreStep { () throws(SecureCoreError) in try SecureBytes(count: 32) }
            blob.withUnsafeBytes { source in
                part.withUnsafeMutableBytes { target in
                    target.copyMemory(
                        from: UnsafeRawBufferPointer(rebasing: source[(5 + 32 * index)..<(37 + 32 * index)]))
                }
            }
            parts.append(part)
        }
        return LocalV4Keys(parts: parts)
    }
}

/// The loaded V4 activation: its public state and secret keys.
struct V4ClientActivation {
    var state: LocalV4State
    let keys: LocalV4Keys
}
