import SecureCore

/// Where a server-bound vault's server is: its base URL and the application's configuration
/// string (public: every copy of the application carries it). The vault file records both.
public struct VaultServerAddress: Sendable, Equatable, Hashable, Codable {
    /// The base URL (`http://127.0.0.1:8080`).
    public var url: String
    /// The PowerAuth configuration string the server prints: application key and secret, master
    /// server public key.
    public var configuration: String

    /// Creates an address.
    public init(url: String, configuration: String) {
        self.url = url
        self.configuration = configuration
    }
}

/// The server's attempt counter for one vault.
public struct VaultServerCounters: Sendable, Equatable, Codable {
    /// Attempts counted since the last confirmed unlock.
    public var failures: Int
    /// The server's limit.
    public var maxFailures: Int
    /// Whether the server refuses every evaluation now.
    public var blocked: Bool

    /// Creates counters.
    public init(failures: Int, maxFailures: Int, blocked: Bool) {
        self.failures = failures
        self.maxFailures = maxFailures
        self.blocked = blocked
    }
}

/// One evaluation by the server: the evaluated element, the challenge a confirmation answers, and
/// the counter after the attempt was counted.
public struct VaultServerEvaluation: Sendable, Equatable {
    /// The evaluated element (RFC 9497 `BlindEvaluate`).
    public var evaluated: [UInt8]
    /// The challenge of this evaluation.
    public var challenge: [UInt8]
    /// The counter, this attempt included.
    public var counters: VaultServerCounters

    /// Creates an evaluation.
    public init(evaluated: [UInt8], challenge: [UInt8], counters: VaultServerCounters) {
        self.evaluated = evaluated
        self.challenge = challenge
        self.counters = counters
    }
}

/// How a server call failed.
public enum VaultServerError: Error, Equatable, Sendable {
    /// The server could not be reached or did not answer; nothing was counted locally.
    case network(reason: String)
    /// The server's TLS could not be trusted or spoken (an untrusted or expired certificate, a
    /// pinned key that does not match); nothing was counted.
    case tls(reason: String)
    /// The server blocks the vault: its counter reached the maximum.
    case blocked(VaultServerCounters)
    /// The server does not know this vault.
    case unknownVault
    /// The server refused the request (a proof that did not verify, a wrong state, a malformed answer).
    case refused(reason: String)
}

/// A server that evaluates a vault's OPRF with a per-vault key and counts the attempts
/// (`VaultOPRFProtocol` for the wire format; `PinVaultServer` for the HTTP client).
///
/// The vault calls it with public values and, for ``enroll(vaultId:verifier:)`` and
/// ``confirm(vaultId:verifier:challenge:)``, the verifier in secure memory.
public protocol VaultOPRFServer: Sendable {
    /// Where the server is, for messages.
    var location: String { get }
    /// Creates a vault record and evaluates its first blinded element.
    /// - Returns: the new vault identifier and the evaluation.
    func register(blinded: [UInt8]) throws(VaultServerError) -> (vaultId: [UInt8], evaluation: VaultServerEvaluation)
    /// Stores the verifier of a just-registered vault.
    func enroll(vaultId: [UInt8], verifier: SecureBytes) throws(VaultServerError)
    /// Counts one attempt, then evaluates.
    func evaluate(vaultId: [UInt8], blinded: [UInt8]) throws(VaultServerError) -> VaultServerEvaluation
    /// Proves that the evaluation with `challenge` opened the vault: the counter returns to zero.
    func confirm(vaultId: [UInt8], verifier: SecureBytes, challenge: [UInt8]) throws(VaultServerError)
        -> VaultServerCounters
    /// The counter, counting nothing.
    func status(vaultId: [UInt8]) throws(VaultServerError) -> VaultServerCounters
    /// Proves, like ``confirm(vaultId:verifier:challenge:)`` but under its own label, that the
    /// evaluation with `challenge` opened the vault, and deletes the server record.
    func remove(vaultId: [UInt8], verifier: SecureBytes, challenge: [UInt8]) throws(VaultServerError)
}

/// An opened server slot whose proof is held back: the vault proves it later, to remove the record
/// (``PinVault/destroy(pin:)``, and the old record at a PIN change) or, when that does not happen,
/// to confirm it. Lives inside one locked operation; the verifier is destroyed by ``finish(_:)``.
final class ServerProofHold {
    var vaultId: [UInt8] = []
    var challenge: [UInt8] = []
    var verifier: SecureBytes?
    var server: (any VaultOPRFServer)?

    /// Sends the held proof: the removal, or the confirmation; then wipes the verifier. Once only.
    func finish(_ removing: Bool) throws(VaultError) {
        guard let verifier, let server else { return }
        defer {
            verifier.destroy()
            self.verifier = nil
        }
        try VaultError.server { () throws(VaultServerError) in
            if removing {
                try server.remove(vaultId: vaultId, verifier: verifier, challenge: challenge)
            } else {
                _ = try server.confirm(vaultId: vaultId, verifier: verifier, challenge: challenge)
            }
        }
    }
}

/// What a server-bound vault records in its bound header (format version 4).
struct ServerBindingRecord: Equatable {
    var vaultId: [UInt8]
    var address: VaultServerAddress
}

extension PinVault {
    static let oprfInputLabel: [UInt8] = Array("SPC oprf input v1".utf8)
    static let serverSlotLabel: [UInt8] = Array("SPC server slot v1".utf8)
    static let serverVerifierLabel: [UInt8] = Array("SPC server verifier v1".utf8)

    /// The server of `address`, from ``Options/serverConnector``.
    func requireServer(_ address: VaultServerAddress) throws(VaultError) -> any VaultOPRFServer {
        guard let connect = options.serverConnector else { throw .serverRequired }
        return connect(address)
    }

    /// The keys one OPRF output gives a slot: the inner key (with the Argon2id output) and the verifier.
    func serverKeys(_ derived: SecureBytes, output: SecureBytes) throws(VaultError) -> (
        inner: SecureBytes, verifier: SecureBytes
    ) {
        try core { () throws(SecureCoreError) in
            (
                try HMACSHA256.deriveKey(label: Self.serverSlotLabel, from: [derived, output]),
                try HMACSHA256.deriveKey(label: Self.serverVerifierLabel, from: [output])
            )
        }
    }

    /// Runs the OPRF on the Argon2id output: blinds, lets `evaluate` reach the server, finalizes.
    func oprf(_ derived: SecureBytes, _ evaluate: ([UInt8]) throws(VaultError) -> [UInt8]) throws(VaultError)
        -> SecureBytes
    {
        let input = try core { () throws(SecureCoreError) in
            try HMACSHA256.deriveKey(label: Self.oprfInputLabel, from: [derived])
        }
        defer { input.destroy() }
        let blind = try core { () throws(SecureCoreError) in try OPRF.randomBlind() }
        defer { blind.destroy() }
        let blinded = try core { () throws(SecureCoreError) in try OPRF.blind(input, with: blind) }
        let evaluated = try evaluate(blinded)
        do throws(SecureCoreError) {
            return try OPRF.finalize(input, blind: blind, evaluated: evaluated)
        } catch .invalidKey {
            throw .serverRefused(reason: "the server's evaluated element is not a valid group element")
        } catch {
            throw .secureCore(error)
        }
    }

    /// Registers a new server record for a new PIN slot, enrolls its verifier, names it in `file`'s
    /// binding, and returns the slot's inner key. A PIN change registers anew: the new slot gets a
    /// new server record and a new OPRF key.
    func registerForNewSlot(_ derived: SecureBytes, file: inout VaultFile) throws(VaultError) -> SecureBytes {
        guard var binding = file.server else { throw .damaged(reason: "no server binding") }
        let server = try requireServer(binding.address)
        var registered: (vaultId: [UInt8], evaluation: VaultServerEvaluation)? = nil
        let output = try oprf(derived) { (blinded) throws(VaultError) -> [UInt8] in
            let answer = try VaultError.server { () throws(VaultServerError) in try server.register(blinded: blinded) }
            registered = answer
            return answer.evaluation.evaluated
        }
        defer { output.destroy() }
        guard let registered else { throw .serverRefused(reason: "no registration") }
        let keys = try serverKeys(derived, output: output)
        defer { keys.verifier.destroy() }
        do throws(VaultError) {
            try VaultError.server { () throws(VaultServerError) in
                try server.enroll(vaultId: registered.vaultId, verifier: keys.verifier)
            }
        } catch {
            keys.inner.destroy()
            throw error
        }
        binding.vaultId = registered.vaultId
        file.server = binding
        file.policy = .hard(maxFailures: max(1, min(0xFFFF, registered.evaluation.counters.maxFailures)))
        return keys.inner
    }

    /// Evaluates at the server (counted there before anything else) and tries the slot; on success
    /// proves it to the server, which resets its counter. Nil when the PIN is wrong.
    /// With `hold`, the proof is not sent: it is kept there for ``ServerProofHold/finish(_:)``.
    func openServerSlot(
        _ slot: VaultFile.Slot, derived: SecureBytes, file: VaultFile, half: SecureBytes,
        hold: ServerProofHold? = nil
    ) throws(VaultError) -> SecureBytes? {
        guard let binding = file.server else { throw .damaged(reason: "no server binding") }
        let server = try requireServer(binding.address)
        var challenge: [UInt8] = []
        let output = try oprf(derived) { (blinded) throws(VaultError) -> [UInt8] in
            let evaluation = try VaultError.server { () throws(VaultServerError) in
                try server.evaluate(vaultId: binding.vaultId, blinded: blinded)
            }
            challenge = evaluation.challenge
            return evaluation.evaluated
        }
        defer { output.destroy() }
        let keys = try serverKeys(derived, output: output)
        defer {
            keys.inner.destroy()
            keys.verifier.destroy()
        }
        let wrapKey = try slotKey(keys.inner, half: half)
        defer { wrapKey.destroy() }
        guard let dataKey = try unwrap(slot, with: wrapKey, file: file) else { return nil }
        if let hold {
            do throws(SecureCoreError) {
                hold.verifier = try keys.verifier.copy()
            } catch {
                dataKey.destroy()
                throw .secureCore(error)
            }
            hold.vaultId = binding.vaultId
            hold.challenge = challenge
            hold.server = server
            return dataKey
        }
        do throws(VaultError) {
            _ = try VaultError.server { () throws(VaultServerError) in
                try server.confirm(vaultId: binding.vaultId, verifier: keys.verifier, challenge: challenge)
            }
        } catch {
            dataKey.destroy()
            throw error
        }
        return dataKey
    }

    /// ``openDataKey(pin:)`` for a server-bound vault: the server counts every evaluation in its
    /// own store before evaluating; no local failure record is written (an attacker with a copy of
    /// the directory gets nothing from deleting it). Caller holds the lock.
    func openServerBoundDataKey(pin: Password, file: VaultFile, hold: ServerProofHold? = nil) throws(VaultError)
        -> (VaultFile, SecureBytes, VaultFile.Slot)
    {
        guard let binding = file.server else { throw .damaged(reason: "no server binding") }
        options.observer?(.derivingKey)
        let half = try directory.keyFile.half(file.keyHalf)
        defer { half.destroy() }
        for slot in file.slots where slot.type == .pin {
            if let dataKey = try openPINSlot(slot, pin: pin, file: file, half: half, hold: hold) {
                try finishInterruptedPINChange(file)
                options.observer?(.unlocked)
                return (file, dataKey, slot)
            }
        }
        let server = try requireServer(binding.address)
        let counters = try VaultError.server { () throws(VaultServerError) in
            try server.status(vaultId: binding.vaultId)
        }
        throw .wrongPIN(remainingAttempts: max(0, counters.maxFailures - counters.failures))
    }

    /// ``status()`` for a server-bound vault: the server's counter and limit.
    func serverStatus(_ file: VaultFile) throws(VaultError) -> VaultStatus {
        guard let binding = file.server else { throw .damaged(reason: "no server binding") }
        let server = try requireServer(binding.address)
        let counters = try VaultError.server { () throws(VaultServerError) in
            try server.status(vaultId: binding.vaultId)
        }
        let remaining = max(0, counters.maxFailures - counters.failures)
        let state: VaultStatus.State = counters.blocked || remaining == 0 ? .locked : .ready
        return VaultStatus(
            state: state, failures: counters.failures, maxFailures: counters.maxFailures,
            remainingAttempts: remaining, retryAfterSeconds: 0,
            nextAttemptAt: state == .locked ? nil : options.clock.wallSeconds(),
            hasBiometricSlot: file.slots.contains { $0.type == .biometric }, policy: file.policy,
            pinFormat: file.pinFormat, binding: .server, serverLocation: binding.address.url,
            serverVaultId: binding.vaultId.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined())
    }
}

extension VaultError {
    /// Runs a server call and reports its error as a vault error.
    static func server<R>(_ body: () throws(VaultServerError) -> R) throws(VaultError) -> R {
        do throws(VaultServerError) {
            return try body()
        } catch {
            switch error {
            case .network(let reason): throw .network(reason: reason)
            case .tls(let reason): throw .serverTLS(reason: reason)
            case .blocked: throw .serverBlocked
            case .unknownVault: throw .serverRefused(reason: "the server does not know this vault")
            case .refused(let reason): throw .serverRefused(reason: reason)
            }
        }
    }
}
