import SecureCore

/// What a vault's key needs besides the PIN and the key file.
public enum VaultBinding: Sendable, Equatable {
    /// Nothing else: the PIN, the key file and the KDF (format version 2). A copy of the
    /// directory can be attacked offline at Argon2id's speed.
    case software
    /// A sealed object held by a TPM 2.0, whose authorisation derives from the PIN after Argon2id:
    /// every guess is a TPM command, counted by the TPM's dictionary-attack logic, whose
    /// parameters `lockout` sets when the vault is created (format version 3).
    ///
    /// With a non-empty `pcrs` the sealed object also needs those PCRs (SHA-256 bank) to hold the
    /// values they held when it was sealed (`TPM2_PolicyPCR` with `TPM2_PolicyAuthValue`; format
    /// version 5): another OS or boot chain on the same machine cannot use it, and unlocking there
    /// fails with ``VaultError/tpmPCRsChanged(pcrs:)`` before the TPM checks, or counts, the PIN.
    /// An OS or firmware update that changes them does the same: keep a recovery path.
    case tpm(TPMLockoutPolicy, pcrs: TPMPCRSelection = .none)
    /// An oblivious PRF evaluated by a server with a per-vault key (RFC 9497, ristretto255-SHA512):
    /// the slot key needs the server's evaluation of the Argon2id output, the server counts every
    /// evaluation and blocks at its policy's maximum (format version 4). A copy of the directory
    /// cannot be tested without that server.
    case server(VaultServerAddress)
}

/// A set of PCRs of a TPM's SHA-256 bank (0 ... 23) that a TPM-bound vault's sealed object is
/// bound to (`--tpm-pcrs 7`: the Secure Boot state; `0,2,4,7`: firmware, option ROMs, boot loader
/// and Secure Boot).
public struct TPMPCRSelection: Sendable, Equatable, Hashable, Codable, CustomStringConvertible {
    /// PCRs a selection may name: 0 ..< 24.
    public static let count = 24
    /// No PCRs: the sealed object needs its authorisation only.
    public static let none = TPMPCRSelection(validMask: 0)

    /// Bit `i` set: PCR `i` selected.
    public let mask: UInt32

    init(validMask: UInt32) { mask = validMask }

    /// The selection of `mask`, or nil when it names a PCR of 24 or above.
    public init?(mask: UInt32) {
        guard mask >> UInt32(Self.count) == 0 else { return nil }
        self.mask = mask
    }

    /// The selection of `indices` (duplicates allowed), or nil when one is outside 0 ..< 24.
    public init?(_ indices: some Sequence<Int>) {
        var mask: UInt32 = 0
        for index in indices {
            guard (0..<Self.count).contains(index) else { return nil }
            mask |= 1 << UInt32(index)
        }
        self.mask = mask
    }

    /// Parses `7` or `0,2,7` (the form `--tpm-pcrs` takes); nil for anything else, an empty list
    /// included.
    public init?(parsing text: String) {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        var indices: [Int] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 2, part.allSatisfy(\.isASCII), let index = Int(part) else { return nil }
            indices.append(index)
        }
        guard !indices.isEmpty else { return nil }
        self.init(indices)
    }

    /// The selected PCRs, ascending.
    public var indices: [Int] { (0..<Self.count).filter { mask & (1 << UInt32($0)) != 0 } }

    /// Whether no PCR is selected.
    public var isEmpty: Bool { mask == 0 }

    /// `7` or `0,2,7`; `none` when empty.
    public var description: String { isEmpty ? "none" : indices.map(String.init).joined(separator: ",") }
}

/// The TPM's dictionary-attack parameters a TPM-bound vault sets (`TPM2_DictionaryAttackParameters`).
///
/// They are the TPM's, not the vault's: every DA-protected object on that TPM shares one failure
/// counter, and the last vault created (or the machine's administrator) sets them.
public struct TPMLockoutPolicy: Sendable, Equatable, Hashable, Codable {
    /// Authorisation failures after which the TPM refuses every DA-protected object (`maxTries`).
    public var maxTries: UInt32
    /// Seconds after which the TPM forgets one failure (`recoveryTime`); 0 means never.
    public var recoverySeconds: UInt32
    /// Seconds after a failed lockout-hierarchy authorisation before another is accepted.
    public var lockoutRecoverySeconds: UInt32

    /// Creates a policy.
    /// - Parameters:
    ///   - maxTries: 1 to 1000.
    ///   - recoverySeconds: seconds per forgotten failure (default 10 minutes).
    ///   - lockoutRecoverySeconds: default one day.
    public init(maxTries: UInt32 = 10, recoverySeconds: UInt32 = 600, lockoutRecoverySeconds: UInt32 = 86_400) {
        self.maxTries = maxTries
        self.recoverySeconds = recoverySeconds
        self.lockoutRecoverySeconds = lockoutRecoverySeconds
    }
}

/// The TPM's dictionary-attack state, as `TPM2_GetCapability` reports it.
public struct TPMLockoutState: Sendable, Equatable, Codable {
    /// Failures the TPM counts now (`TPM_PT_LOCKOUT_COUNTER`), for every DA-protected object.
    public var failures: UInt32
    /// `TPM_PT_MAX_AUTH_FAIL`.
    public var maxTries: UInt32
    /// `TPM_PT_LOCKOUT_INTERVAL`: seconds per forgotten failure.
    public var recoverySeconds: UInt32
    /// `TPM_PT_LOCKOUT_RECOVERY`.
    public var lockoutRecoverySeconds: UInt32
    /// Whether the TPM refuses every DA-protected object now (`TPMA_PERMANENT.inLockout`).
    public var inLockout: Bool
    /// Whether the lockout hierarchy has a non-empty authorisation (`TPMA_PERMANENT.lockoutAuthSet`);
    /// `nil` when the implementation does not say. Without one anyone who can send the TPM
    /// commands can reset its dictionary-attack counter.
    public var lockoutAuthorizationSet: Bool?

    /// Creates a state (TPM implementations and tests).
    public init(
        failures: UInt32, maxTries: UInt32, recoverySeconds: UInt32, lockoutRecoverySeconds: UInt32, inLockout: Bool,
        lockoutAuthorizationSet: Bool? = nil
    ) {
        self.failures = failures
        self.maxTries = maxTries
        self.recoverySeconds = recoverySeconds
        self.lockoutRecoverySeconds = lockoutRecoverySeconds
        self.inLockout = inLockout
        self.lockoutAuthorizationSet = lockoutAuthorizationSet
    }
}

/// A sealed data object as a vault file records it. None of it is secret: the private blob is
/// encrypted and integrity-protected by the TPM under its parent's seed, and useless elsewhere.
public struct TPMSealedObject: Sendable, Equatable {
    /// The marshalled `TPM2B_PUBLIC`.
    public var publicArea: [UInt8]
    /// The marshalled `TPM2B_PRIVATE`.
    public var privateBlob: [UInt8]
    /// The name of the primary key it was created under: another TPM derives another one.
    public var parentName: [UInt8]
    /// The PCRs its policy names (``TPMPCRSelection/none``: authorised by its auth value alone).
    /// The policy itself is in the public area (`authPolicy`).
    public var pcrs: TPMPCRSelection

    /// Creates a record.
    public init(publicArea: [UInt8], privateBlob: [UInt8], parentName: [UInt8], pcrs: TPMPCRSelection = .none) {
        self.publicArea = publicArea
        self.privateBlob = privateBlob
        self.parentName = parentName
        self.pcrs = pcrs
    }
}

/// How a TPM operation failed.
public enum VaultTPMError: Error, Equatable, Sendable {
    /// The TPM could not be reached (no device, nothing listening at the TCTI); `reason` says which.
    case unavailable(reason: String)
    /// The object belongs to another TPM, or to this one before it was cleared.
    case differentTPM
    /// The authorisation was wrong; the TPM counted the failure.
    case authorizationFailed
    /// The TPM is in dictionary-attack lockout: it checked nothing and counted nothing.
    case lockedOut
    /// The lockout hierarchy's authorisation was refused (setting the DA parameters).
    case lockoutAuthorizationRefused
    /// The PCRs the object's policy names no longer hold the values it was sealed under. The
    /// authorisation was not checked and nothing was counted.
    case pcrMismatch
    /// Any other TPM or TSS failure, with its response code.
    case failed(responseCode: UInt32)
}

/// A TPM 2.0 that seals a value under an authorisation and counts wrong authorisations.
///
/// The vault calls it with secrets in secure memory only; an implementation must wipe every copy
/// it makes and keep no state that outlives a call.
public protocol VaultTPM: Sendable {
    /// Where the TPM is (a TCTI string), for messages.
    var location: String { get }
    /// Seals `value` (32 bytes) in a new DA-protected object whose authorisation is `authorization`
    /// (32 bytes) and, when `pcrs` is not empty, whose policy also needs those PCRs to hold the
    /// values they hold now.
    /// - Throws: ``VaultTPMError``.
    func seal(_ value: SecureBytes, authorization: SecureBytes, pcrs: TPMPCRSelection) throws(VaultTPMError)
        -> TPMSealedObject
    /// The sealed value (32 bytes).
    /// - Throws: ``VaultTPMError/authorizationFailed`` (counted), ``VaultTPMError/lockedOut``,
    ///   ``VaultTPMError/pcrMismatch`` (checked before the authorisation, not counted),
    ///   ``VaultTPMError/differentTPM``, ``VaultTPMError/unavailable(reason:)``.
    func unseal(_ object: TPMSealedObject, authorization: SecureBytes) throws(VaultTPMError) -> SecureBytes
    /// The dictionary-attack state.
    /// - Throws: ``VaultTPMError``.
    func lockoutState() throws(VaultTPMError) -> TPMLockoutState
    /// Sets the dictionary-attack parameters with the lockout hierarchy's authorisation (nil: empty).
    /// - Throws: ``VaultTPMError/lockoutAuthorizationRefused`` and the others.
    func setLockoutPolicy(_ policy: TPMLockoutPolicy, lockoutAuthorization: SecureBytes?) throws(VaultTPMError)
    /// Changes the lockout hierarchy's authorisation from `current` (nil: empty) to `new`
    /// (1 ... 64 bytes), the new value encrypted on its way to the TPM.
    /// - Throws: ``VaultTPMError/lockoutAuthorizationRefused`` and the others.
    func changeLockoutAuthorization(to new: SecureBytes, current: SecureBytes?) throws(VaultTPMError)
}

/// What a TPM-bound vault records in its bound header (format version 3).
struct TPMBindingRecord: Equatable {
    var policy: TPMLockoutPolicy
    var object: TPMSealedObject
}

extension PinVault {
    static let tpmAuthLabel: [UInt8] = Array("SPC tpm auth v1".utf8)
    static let tpmSlotLabel: [UInt8] = Array("SPC tpm slot v1".utf8)

    /// The TPM in ``Options/tpm``, or the typed error a TPM-bound vault without one gets.
    func requireTPM() throws(VaultError) -> any VaultTPM {
        guard let tpm = options.tpm else { throw .tpmRequired }
        return tpm
    }

    /// The sealed object's authorisation: a key derived from the Argon2id output alone.
    func tpmAuthorization(_ derived: SecureBytes) throws(VaultError) -> SecureBytes {
        try core { () throws(SecureCoreError) in try HMACSHA256.deriveKey(label: Self.tpmAuthLabel, from: [derived]) }
    }

    /// The slot's inner key: the Argon2id output and the sealed value together.
    func tpmInnerKey(_ derived: SecureBytes, sealed: SecureBytes) throws(VaultError) -> SecureBytes {
        try core { () throws(SecureCoreError) in
            try HMACSHA256.deriveKey(label: Self.tpmSlotLabel, from: [derived, sealed])
        }
    }

    /// Seals a fresh random value for a new PIN slot into `file`'s binding and returns the slot's inner key.
    func sealForNewSlot(_ derived: SecureBytes, file: inout VaultFile) throws(VaultError) -> SecureBytes {
        guard var binding = file.tpm else { throw .damaged(reason: "no TPM binding") }
        let tpm = try requireTPM()
        let value = try core { () throws(SecureCoreError) in try SecureBytes.random(count: 32) }
        defer { value.destroy() }
        let authorization = try tpmAuthorization(derived)
        defer { authorization.destroy() }
        let pcrs = binding.object.pcrs
        binding.object = try VaultError.tpm { () throws(VaultTPMError) in
            try tpm.seal(value, authorization: authorization, pcrs: pcrs)
        }
        file.tpm = binding
        return try tpmInnerKey(derived, sealed: value)
    }

    /// The slot's inner key from the TPM, or nil when the TPM counted a wrong authorisation.
    func unsealForSlot(_ derived: SecureBytes, file: VaultFile) throws(VaultError) -> SecureBytes? {
        guard let binding = file.tpm else { throw .damaged(reason: "no TPM binding") }
        let tpm = try requireTPM()
        let authorization = try tpmAuthorization(derived)
        defer { authorization.destroy() }
        let value: SecureBytes
        do throws(VaultTPMError) {
            value = try tpm.unseal(binding.object, authorization: authorization)
        } catch .authorizationFailed {
            return nil
        } catch .pcrMismatch {
            throw .tpmPCRsChanged(pcrs: binding.object.pcrs)
        } catch {
            throw VaultError(error, tpm: tpm)
        }
        defer { value.destroy() }
        return try tpmInnerKey(derived, sealed: value)
    }

    /// The TPM's lockout state, as a vault error on failure.
    func tpmLockoutState() throws(VaultError) -> TPMLockoutState {
        let tpm = try requireTPM()
        return try VaultError.tpm { () throws(VaultTPMError) in try tpm.lockoutState() }
    }
}

extension VaultError {
    /// The vault's view of a TPM failure.
    init(_ error: VaultTPMError, tpm: any VaultTPM) {
        switch error {
        case .unavailable(let reason): self = .tpmUnavailable(reason: reason)
        case .differentTPM: self = .tpmMismatch
        case .pcrMismatch: self = .tpmPCRsChanged(pcrs: .none)
        case .lockedOut:
            let seconds = (try? tpm.lockoutState()).map { UInt64($0.recoverySeconds) } ?? 0
            self = .tpmLockedOut(retryAfterSeconds: seconds)
        case .authorizationFailed, .lockoutAuthorizationRefused, .failed: self = .tpmFailed(error)
        }
    }

    /// Runs a TPM call and reports its error as a vault error.
    static func tpm<R>(_ body: () throws(VaultTPMError) -> R) throws(VaultError) -> R {
        do throws(VaultTPMError) {
            return try body()
        } catch .unavailable(let reason) {
            throw .tpmUnavailable(reason: reason)
        } catch .differentTPM {
            throw .tpmMismatch
        } catch .pcrMismatch {
            throw .tpmPCRsChanged(pcrs: .none)
        } catch .lockedOut {
            throw .tpmLockedOut(retryAfterSeconds: 0)
        } catch {
            throw .tpmFailed(error)
        }
    }
}

extension PinVault {
    /// ``openDataKey(pin:)`` for a TPM-bound vault. The TPM counts every wrong authorisation in its
    /// own non-volatile state, atomically with the check, and refuses to check while in lockout;
    /// no failure record is written, since none would add anything a kill could lose.
    /// Caller holds the lock.
    func openTPMBoundDataKey(pin: Password, file: VaultFile) throws(VaultError)
        -> (VaultFile, SecureBytes, VaultFile.Slot)
    {
        let tpm = try requireTPM()
        options.observer?(.derivingKey)
        let half = try directory.keyFile.half(file.keyHalf)
        defer { half.destroy() }
        for slot in file.slots where slot.type == .pin {
            if let dataKey = try openPINSlot(slot, pin: pin, file: file, half: half) {
                try finishInterruptedPINChange(file)
                options.observer?(.unlocked)
                return (file, dataKey, slot)
            }
        }
        let state = try VaultError.tpm { () throws(VaultTPMError) in try tpm.lockoutState() }
        throw .wrongPIN(remainingAttempts: max(0, Int(state.maxTries) - Int(state.failures)))
    }

    /// ``status()`` for a TPM-bound vault: the TPM's counter, limit and lockout.
    func tpmStatus(_ file: VaultFile) throws(VaultError) -> VaultStatus {
        let lockout = try tpmLockoutState()
        let remaining = max(0, Int(lockout.maxTries) - Int(lockout.failures))
        let state: VaultStatus.State =
            lockout.inLockout ? (lockout.recoverySeconds == 0 ? .locked : .throttled) : .ready
        let delay = lockout.inLockout ? UInt64(lockout.recoverySeconds) : 0
        return VaultStatus(
            state: state, failures: Int(lockout.failures), maxFailures: Int(lockout.maxTries),
            remainingAttempts: remaining, retryAfterSeconds: delay,
            nextAttemptAt: state == .locked ? nil : options.clock.wallSeconds() + delay,
            hasBiometricSlot: file.slots.contains { $0.type == .biometric }, policy: file.policy,
            pinFormat: file.pinFormat, binding: .tpm, tpmLockout: lockout, tpmPCRs: file.tpm?.object.pcrs)
    }
}
