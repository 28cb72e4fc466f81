import Foundation
import PostQuantum
import PowerAuthProtocol
import SecureCore
import Synchronization

/// One activation as the server keeps it. The server's private key lives in
/// secure memory; the description is redacted.
public struct ActivationRecord: Sendable {
    /// The identifier (a UUID).
    public let activationId: String
    /// The one-time code the device activates with.
    public let activationCode: String
    /// The user the activation belongs to.
    public let userId: String
    /// The device's display name.
    public var name: String
    /// The state.
    public var state: ProtocolActivationState
    /// The server's public key for this activation (SEC1).
    public let serverPublicKey: [UInt8]
    /// The server's private key for this activation, opened from its sealed form only when a
    /// request needs it (a store reads records with the key still sealed).
    public let serverPrivateKey: ServerPrivateKey
    /// The device's public key, once the device exchanged keys.
    public var devicePublicKey: [UInt8]?
    /// The next expected counter `CTR_DATA`.
    public var counter: HashCounter
    /// How many counter steps were consumed (its low byte goes in the status blob).
    public var counterIndex: UInt64
    /// Failed attempts in a row.
    public var failedAttempts: Int
    /// Failed attempts that block the activation.
    public var maxFailedAttempts: Int
    /// End of a temporary block; `nil` for a permanent one or when not blocked.
    public var blockedUntil: Date?
    /// Whether biometry codes are accepted.
    public var biometryEnabled: Bool
    /// The protocol V4 part of an activation of an `EC_P384` application; `nil` for V3.3.
    public var v4: V4ActivationState?
    /// The state of a stronger V4 suite that `upgrade/start` made for a V4 activation, waiting
    /// for `upgrade/confirm`: until then ``v4`` keeps working and this one only confirms; the
    /// confirmation makes it ``v4``. Stores keep it sealed with ``v4``.
    public var v4Upgrade: V4ActivationState?
    /// The store's mark of the sealed V4 state as it was read (its nonce, fresh at every sealing):
    /// a conditional write (`recordAttemptIfUnchanged`) applies only while the stored state is
    /// still the one read. `nil` for a V3.3 record or one not read from a store.
    package var sealedStateMark: [UInt8]? = nil

    /// Creates a record in the `PowerAuthProtocol.ProtocolActivationState.created` state.
    /// - Parameters:
    ///   - activationId: the identifier.
    ///   - activationCode: the activation code.
    ///   - userId: the user.
    ///   - serverKeyPair: the server's key pair.
    ///   - counter: the initial counter.
    ///   - maxFailedAttempts: the blocking limit.
    public init(
        activationId: String, activationCode: String, userId: String, serverKeyPair: KeyPair, counter: HashCounter,
        maxFailedAttempts: Int
    ) {
        self.init(
            activationId: activationId, activationCode: activationCode, userId: userId,
            serverPublicKey: serverKeyPair.publicKey, serverPrivateKey: ServerPrivateKey(serverKeyPair.privateKey),
            counter: counter, maxFailedAttempts: maxFailedAttempts)
    }

    /// Creates a record in the `PowerAuthProtocol.ProtocolActivationState.created` state whose
    /// private key may still be sealed (a store reading it back).
    /// - Parameters:
    ///   - activationId: the identifier.
    ///   - activationCode: the activation code.
    ///   - userId: the user.
    ///   - serverPublicKey: the server's public key (SEC1).
    ///   - serverPrivateKey: its private key, open or sealed.
    ///   - counter: the initial counter.
    ///   - maxFailedAttempts: the blocking limit.
    public init(
        activationId: String, activationCode: String, userId: String, serverPublicKey: [UInt8],
        serverPrivateKey: ServerPrivateKey, counter: HashCounter, maxFailedAttempts: Int
    ) {
        self.activationId = activationId
        self.activationCode = activationCode
        self.userId = userId
        self.name = ""
        self.state = .created
        self.serverPublicKey = serverPublicKey
        self.serverPrivateKey = serverPrivateKey
        self.devicePublicKey = nil
        self.counter = counter
        self.counterIndex = 0
        self.failedAttempts = 0
        self.maxFailedAttempts = maxFailedAttempts
        self.blockedUntil = nil
        self.biometryEnabled = false
        self.v4 = nil
        self.v4Upgrade = nil
    }

    /// Ends a temporary block whose time has come (failures reset).
    /// - Parameter now: the current time.
    public mutating func expireBlock(now: Date) {
        if state == .blocked, let until = blockedUntil, now >= until {
            state = .active
            failedAttempts = 0
            blockedUntil = nil
        }
    }

    /// Applies one verification outcome — the whole failure-counting rule:
    /// only an active activation counts (or one pending its commit, which only V4's
    /// `activation/confirm` lets through to here, as the SDK confirms before the commit);
    /// an accepted code whose counter was
    /// not consumed yet moves the counter (and resets the failures when it
    /// used knowledge or biometry); anything else — a wrong code, a replayed
    /// or reordered one — is a failure, and the last allowed failure blocks.
    /// - Parameters:
    ///   - outcome: the verification outcome.
    ///   - now: the current time.
    ///   - failureBlockDuration: how long a block after too many failures
    ///     lasts; `nil` blocks until an administrator unblocks.
    /// - Returns: whether the attempt is accepted.
    public mutating func apply(_ outcome: AttemptOutcome, now: Date, failureBlockDuration: TimeInterval?) -> Bool {
        expireBlock(now: now)
        guard state == .active || state == .pendingCommit else { return false }
        if case .accepted(let codeIndex, let nextCounter, let resetsFailures) = outcome, codeIndex >= counterIndex {
            // V4 moves its SHA3 counter as far as the code's index; if that cannot be computed the
            // attempt is refused, uncounted, and nothing moves.
            if var state = v4 {
                guard let moved = try? state.counter.advanced(by: Int(codeIndex + 1 - counterIndex)) else {
                    return false
                }
                state.counter = moved
                v4 = state
            }
            counter = nextCounter
            counterIndex = codeIndex + 1
            if resetsFailures { failedAttempts = 0 }
            return true
        }
        // V3: a code that claims possession alone and fails is not counted.
        if case .rejectedUncounted = outcome { return false }
        failedAttempts += 1
        if failedAttempts >= maxFailedAttempts {
            state = .blocked
            blockedUntil = failureBlockDuration.map { now.addingTimeInterval($0) }
        }
        return false
    }
}

/// The server's private key of one activation, either open or sealed at rest and opened on
/// first use — once: every copy of a record shares it. The key lives in secure memory and is
/// wiped when the last record holding it goes away. A request answered from the factor-key
/// cache never opens it.
public final class ServerPrivateKey: Sendable {
    private enum State {
        case open(SecureBytes)
        case sealed(@Sendable () throws(ActivationServerError) -> SecureBytes)
    }

    private let state: Mutex<State>

    /// An open key.
    /// - Parameter key: the private scalar in secure memory.
    public init(_ key: SecureBytes) { state = Mutex(.open(key)) }

    /// A sealed key and how to open it.
    /// - Parameter open: opens the key into secure memory (called at most once after it succeeds).
    public init(opening open: @escaping @Sendable () throws(ActivationServerError) -> SecureBytes) {
        state = Mutex(.sealed(open))
    }

    /// The key, opened now if it was still sealed (the same object on every call).
    /// - Returns: the private scalar in secure memory; the record owns it (do not destroy it).
    /// - Throws: ``ActivationServerError/storage(reason:)`` when the sealed key does not open.
    public func key() throws(ActivationServerError) -> SecureBytes {
        try state.withLock { (s) throws(ActivationServerError) -> SecureBytes in
            switch s {
            case .open(let key): return key
            case .sealed(let open):
                let key = try open()
                s = .open(key)
                return key
            }
        }
    }
}

extension ServerPrivateKey: CustomStringConvertible, CustomDebugStringConvertible {
    /// Always redacted.
    public var description: String { "ServerPrivateKey(redacted)" }
    /// Same as ``description``.
    public var debugDescription: String { description }
}

extension ActivationRecord {
    /// The same record with another holder of its private key (for a copy kept beyond one
    /// request, which must not keep an opened key).
    /// - Parameter key: the key holder.
    /// - Returns: the copy.
    public func replacingPrivateKey(_ key: ServerPrivateKey) -> ActivationRecord {
        var copy = ActivationRecord(
            activationId: activationId, activationCode: activationCode, userId: userId,
            serverPublicKey: serverPublicKey, serverPrivateKey: key, counter: counter,
            maxFailedAttempts: maxFailedAttempts)
        copy.name = name
        copy.state = state
        copy.devicePublicKey = devicePublicKey
        copy.counterIndex = counterIndex
        copy.failedAttempts = failedAttempts
        copy.blockedUntil = blockedUntil
        copy.biometryEnabled = biometryEnabled
        copy.v4 = v4
        copy.v4Upgrade = v4Upgrade
        copy.sealedStateMark = sealedStateMark
        return copy
    }

    /// The server's key pair for this activation (opens the private key if still sealed).
    /// - Returns: the pair; the private key belongs to the record.
    /// - Throws: ``ActivationServerError/storage(reason:)`` when the sealed key does not open.
    public func serverKeyPair() throws(ActivationServerError) -> KeyPair {
        KeyPair(privateKey: try serverPrivateKey.key(), publicKey: serverPublicKey)
    }
}

extension ActivationRecord: CustomStringConvertible, CustomDebugStringConvertible {
    /// Identifier and state; keys redacted.
    public var description: String { "ActivationRecord(\(activationId), \(state), keys redacted)" }
    /// Same as ``description``.
    public var debugDescription: String { description }
}

/// What a verification concluded, for ``ServerActivationStore/recordAttempt(activationId:outcome:now:failureBlockDuration:)``.
public enum AttemptOutcome: Sendable, Equatable {
    /// The code matched the counter at `codeIndex`; `nextCounter` follows it.
    case accepted(codeIndex: UInt64, nextCounter: HashCounter, resetsFailures: Bool)
    /// No counter in the window matched.
    case rejected
    /// A code that does not verify but is not counted: PowerAuth V3 does not count a
    /// failed code that claims possession alone.
    case rejectedUncounted
}

/// The state after one recorded attempt.
public struct AttemptResult: Sendable, Equatable {
    /// Whether the attempt was accepted.
    public let accepted: Bool
    /// The state afterwards.
    public let state: ProtocolActivationState
    /// Failed attempts afterwards.
    public let failedAttempts: Int
    /// The blocking limit.
    public let maxFailedAttempts: Int

    /// Creates a result, for stores that implement
    /// ``ServerActivationStore/recordAttempt(activationId:outcome:now:failureBlockDuration:)`` themselves.
    /// - Parameters:
    ///   - accepted: whether the attempt was accepted.
    ///   - state: the state afterwards.
    ///   - failedAttempts: failed attempts afterwards.
    ///   - maxFailedAttempts: the blocking limit.
    public init(accepted: Bool, state: ProtocolActivationState, failedAttempts: Int, maxFailedAttempts: Int) {
        self.accepted = accepted
        self.state = state
        self.failedAttempts = failedAttempts
        self.maxFailedAttempts = maxFailedAttempts
    }
}

/// The protocol V4 state of one activation (`EC_P384`): the per-activation server signing key,
/// and once the device activated, its public key, `KEY_ACTIVATION_SECRET` and the SHA3 counter.
/// Secrets in secure memory; the description is redacted.
public struct V4ActivationState: Sendable {
    /// The suite.
    public let algorithm: ProtocolAlgorithm
    /// The server's P-384 signing key pair for this activation (ES384 temporary keys).
    public let serverKeyPair: ECP384KeyPair
    /// `KEY_ACTIVATION_SECRET`, once `activation/create` ran.
    public var activationSecret: SecureBytes?
    /// The device's P-384 signing public key (97 bytes), once known.
    public var devicePublicKey: [UInt8]?
    /// `CTR_DATA`, the next expected counter value.
    public var counter: V4HashCounter
    /// Whether the device still has to call `activation/confirm`.
    public var confirmationPending: Bool
    /// The knowledge factor key set by a password change; `nil`: the key tree's initial one.
    public var knowledgeKey: SecureBytes? = nil
    /// A knowledge key from a password change not yet used by the device (dynamic factor keys).
    public var knowledgeNext: SecureBytes? = nil
    /// The biometry factor key set by a biometry addition; `nil`: the key tree's initial one.
    public var biometryKey: SecureBytes? = nil
    /// A biometry key from an addition not yet used by the device.
    public var biometryNext: SecureBytes? = nil
    /// Bumped at every factor-key change (so a store sees that the sealed state changed).
    public var keyGeneration: UInt32 = 0
    /// An upgrade from V3.3 was started and waits for `upgrade/confirm`: until then the V3.3
    /// keys keep working and the V4 ones only confirm.
    public var upgradePending: Bool = false
    /// The seed of the server's ML-DSA signing key for this activation (hybrid suites only; 32
    /// bytes): a store keeps the seed, ``postQuantumKeyPair()`` expands it when a key is signed or
    /// published.
    public var postQuantumSeed: SecureBytes? = nil
    /// The device's raw ML-DSA public key (hybrid suites; `nil` when the device sent none, as an
    /// older client did). Public; it enters the fingerprint.
    public var devicePostQuantumPublicKey: [UInt8]? = nil

    /// A fresh state: a new server key pair (and, for a hybrid suite, a new ML-DSA seed) and
    /// counter, no device yet.
    /// - Parameter algorithm: a protocol V4 suite.
    /// - Throws: ``ActivationServerError/protocolFailure(_:)``.
    public init(algorithm: ProtocolAlgorithm) throws(ActivationServerError) {
        self.algorithm = algorithm
        if algorithm.signatureParameterSet != nil {
            do throws(SecureCoreError) {
                postQuantumSeed = try SecureBytes.random(count: MLDSA.seedByteCount)
            } catch {
                throw .protocolFailure(.core(error))
            }
        }
        self.serverKeyPair = try protocolStep { () throws(ProtocolError) in try ECP384KeyPair.generate() }
        self.activationSecret = nil
        self.devicePublicKey = nil
        self.counter = V4HashCounter.random()
        self.confirmationPending = true
    }

    /// A stored state.
    /// - Parameters:
    ///   - algorithm: the suite.
    ///   - serverKeyPair: the server key pair.
    ///   - activationSecret: the secret, if set.
    ///   - devicePublicKey: the device key, if set.
    ///   - counter: the counter.
    ///   - confirmationPending: the flag.
    public init(
        algorithm: ProtocolAlgorithm, serverKeyPair: ECP384KeyPair, activationSecret: SecureBytes?,
        devicePublicKey: [UInt8]?, counter: V4HashCounter, confirmationPending: Bool
    ) {
        self.algorithm = algorithm
        self.serverKeyPair = serverKeyPair
        self.activationSecret = activationSecret
        self.devicePublicKey = devicePublicKey
        self.counter = counter
        self.confirmationPending = confirmationPending
    }

    /// The server's ML-DSA key pair for this activation (hybrid suites), expanded from
    /// ``postQuantumSeed``; `nil` for `EC_P384`.
    /// - Returns: the key pair, whose signing key the caller destroys.
    /// - Throws: ``ActivationServerError/protocolFailure(_:)`` when a hybrid state has no seed.
    public func postQuantumKeyPair() throws(ActivationServerError) -> MLDSA.KeyPair? {
        guard let set = algorithm.signatureParameterSet else { return nil }
        guard let seed = postQuantumSeed else {
            throw .protocolFailure(.invalidKey(field: "the activation's ML-DSA seed"))
        }
        do throws(PostQuantumError) {
            return try MLDSA.KeyPair(set, seed: seed)
        } catch {
            throw .protocolFailure(.invalidKey(field: "the activation's ML-DSA seed"))
        }
    }

    /// The same state with its secrets copied into secure memory that may outlive the current
    /// request scope (a snapshot kept in ``FactorKeyCache``).
    /// - Returns: the copy.
    /// - Throws: ``ActivationServerError/protocolFailure(_:)`` when secure memory runs out.
    package func lastingCopy() throws(ActivationServerError) -> V4ActivationState {
        func keep(_ key: SecureBytes?) throws(ActivationServerError) -> SecureBytes? {
            do throws(SecureCoreError) {
                return try key?.copy(lasting: true)
            } catch {
                throw .protocolFailure(.core(error))
            }
        }
        let privateKey = try keep(serverKeyPair.privateKey) ?? serverKeyPair.privateKey
        let publicKey = serverKeyPair.publicKey
        let pair = try protocolStep { () throws(ProtocolError) in
            try ECP384KeyPair(privateKey: privateKey, storedPublicKey: publicKey)
        }
        var copy = V4ActivationState(
            algorithm: algorithm, serverKeyPair: pair, activationSecret: try keep(activationSecret),
            devicePublicKey: devicePublicKey, counter: counter, confirmationPending: confirmationPending)
        copy.knowledgeKey = try keep(knowledgeKey)
        copy.knowledgeNext = try keep(knowledgeNext)
        copy.biometryKey = try keep(biometryKey)
        copy.biometryNext = try keep(biometryNext)
        copy.keyGeneration = keyGeneration
        copy.upgradePending = upgradePending
        copy.postQuantumSeed = try keep(postQuantumSeed)
        copy.devicePostQuantumPublicKey = devicePostQuantumPublicKey
        return copy
    }

    /// The public facts a store compares to see whether a change happened (the secret is set
    /// once, with the device key; factor-key changes bump ``keyGeneration``).
    public var changeMarker: [UInt8] {
        [confirmationPending ? 1 : 0, activationSecret == nil ? 0 : 1, upgradePending ? 1 : 0] + counter.bytes
            + (devicePublicKey ?? [])
            + withUnsafeBytes(of: keyGeneration.bigEndian) { Array($0) }
    }
}

extension V4ActivationState: CustomStringConvertible, CustomDebugStringConvertible {
    /// Suite and counter presence only; keys redacted.
    public var description: String { "V4ActivationState(\(algorithm.rawValue), keys redacted)" }
    /// Same as ``description``.
    public var debugDescription: String { description }
}
