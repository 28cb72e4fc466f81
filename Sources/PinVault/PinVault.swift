import SecureCore

#if canImport(Dispatch)
    import Dispatch
#endif

/// A secret (a refresh token, a data key) sealed under a PIN.
///
/// No PIN, hash of a PIN or "PIN is correct" flag is stored: the PIN derives
/// (Argon2id) a key that unwraps a random data key, which opens the sealed
/// secret. A wrong PIN fails authentication. The failure counter is written
/// and fsynced *before* the key derivation runs and reset only after a
/// success, so killing the process at any instant loses no failure.
///
/// ```swift
/// let vault = try PinVault.create(at: dir, secret: token, pin: pin, parameters: tuned)
/// try vault.unlock(pin: pin) { secret in use(secret) }
/// ```
///
/// What the counter cannot do: someone who copies the files can guess
/// offline at Argon2id speed, and restoring an old failure record rolls the
/// counter back. A ``Options/pepper`` kept outside the files (a hardware
/// keystore, a server) closes the first gap where such a place exists.
public struct PinVault: Sendable {
    /// Reader and writer settings. None of them is stored in the vault.
    public struct Options: Sendable {
        /// Weakest key derivation this reader accepts (a downgrade guard).
        public var floor: Argon2id.Parameters
        /// Ceilings (a denial-of-service guard).
        public var limits: Argon2id.Limits
        /// Time sources of the throttle.
        public var clock: any VaultClock
        /// A secret kept outside the vault, mixed in through Argon2id's secret input.
        public var pepper: SecureBytes?
        /// Biometric behaviour.
        public var biometricConfiguration: BiometricConfiguration
        /// The platform's biometric key store, when there is one.
        public var authenticator: (any BiometricAuthenticator)?
        /// Told each step of an operation (tests and crash harnesses).
        public var observer: (@Sendable (VaultEvent) -> Void)?

        /// Creates options; the floor defaults to OWASP's Argon2id minimum.
        public init(
            floor: Argon2id.Parameters = .owaspMinimum, limits: Argon2id.Limits = .default,
            clock: any VaultClock = SystemVaultClock(), pepper: SecureBytes? = nil,
            biometricConfiguration: BiometricConfiguration = BiometricConfiguration(),
            authenticator: (any BiometricAuthenticator)? = nil, observer: (@Sendable (VaultEvent) -> Void)? = nil
        ) {
            self.floor = floor
            self.limits = limits
            self.clock = clock
            self.pepper = pepper
            self.biometricConfiguration = biometricConfiguration
            self.authenticator = authenticator
            self.observer = observer
        }
    }

    /// Largest secret a vault holds.
    public static let maximumSecretByteCount = VaultFile.maxSecretSize

    let directory: VaultDirectory
    /// The options in force.
    public let options: Options

    /// Refers to the vault in `directory` (which may not exist yet).
    public init(directory: String, options: Options = Options()) {
        self.directory = VaultDirectory(path: directory)
        self.options = options
    }

    /// Whether a vault exists in the directory.
    public var exists: Bool { directory.exists }

    /// Creates a vault holding `secret` under `pin`.
    /// - Parameters:
    ///   - directory: created with mode 0700 if missing.
    ///   - secret: 1 byte to ``maximumSecretByteCount``.
    ///   - pin: revealed only during the key derivation.
    ///   - policy: what failures lead to (default ``ThrottlePolicy/soft(maxFailures:)``).
    ///   - pinFormat: the PIN format recorded in the vault; every later PIN must fit it
    ///     (default ``VaultPinFormat/unrecorded``: 1 to 256 printable characters).
    ///   - parameters: Argon2id cost, for example from ``KDFCalibrator``.
    ///   - options: reader and writer settings.
    /// - Returns: the vault.
    /// - Throws: ``VaultError/alreadyExists``, ``VaultError/invalidSecretSize(_:)``,
    ///   ``VaultError/parametersBelowFloor``, ``VaultError/parametersAboveCeiling``, ``VaultError/io(operation:errno:)``,
    ///   ``VaultError/pinOutsideFormat(_:)``.
    public static func create(
        at directory: String, secret: SecureBytes, pin: Password, policy: ThrottlePolicy = .soft(),
        pinFormat: VaultPinFormat = .unrecorded, parameters: Argon2id.Parameters, options: Options = Options()
    ) throws(VaultError) -> PinVault {
        let vault = PinVault(directory: directory, options: options)
        guard (1...maximumSecretByteCount).contains(secret.count) else { throw .invalidSecretSize(secret.count) }
        guard (1...UInt16.max).contains(UInt16(clamping: policy.maxFailures)), policy.maxFailures <= 0xFFFF else {
            throw .damaged(reason: "policy limit out of range")
        }
        try VaultFile.checkBounds(parameters, floor: options.floor, limits: options.limits)
        guard try pinFormat.admits(pin) else { throw .pinOutsideFormat(pinFormat) }
        try vault.directory.prepare()
        try vault.directory.locked { () throws(VaultError) in
            guard !vault.directory.exists else { throw .alreadyExists }
            let vaultID = try core { try SecureRandom.bytes(count: 16) }
            let dataKey = try core { try SecureBytes.random(count: 32) }
            defer { dataKey.destroy() }
            var file = VaultFile(
                vaultID: vaultID, policy: policy, slots: [], payloadNonce: [], payloadCiphertext: [],
                pinFormat: pinFormat)
            file.slots = [try vault.makePINSlot(pin: pin, dataKey: dataKey, parameters: parameters, file: file)]
            let box = try core { try AEAD.seal(secret, using: dataKey, associatedData: file.payloadAssociatedData) }
            file.payloadNonce = box.nonce
            file.payloadCiphertext = box.ciphertext
            // The record first: a vault file never exists without its counter.
            try vault.directory.writeFile(
                VaultDirectory.recordName,
                try core { try FailureRecord.fresh(vaultID: vaultID, clock: options.clock).encode() })
            try vault.directory.writeFile(VaultDirectory.vaultName, try core { try file.encode() })
        }
        return vault
    }

    /// Opens the vault with `pin` and runs `body` with the secret, which is
    /// wiped when `body` returns.
    /// - Returns: what `body` returns.
    /// - Throws: ``VaultError/wrongPIN(remainingAttempts:)`` (counted), ``VaultError/throttled(retryAfterSeconds:)``
    ///   and ``VaultError/locked`` (not counted, no KDF run), ``VaultError/pinOutsideFormat(_:)`` (a PIN
    ///   the vault's format does not admit: not counted, no KDF run), ``VaultError/wiped``, the file errors,
    ///   or what `body` throws.
    public func unlock<R>(pin: Password, _ body: (SecureBytes) throws -> R) throws -> R {
        let secret = try open(pin: pin)
        defer { secret.destroy() }
        return try body(secret)
    }

    /// ``unlock(pin:_:)`` with the key derivation off the caller's executor.
    /// - Returns: what `body` returns.
    /// - Throws: as ``unlock(pin:_:)``.
    public func unlock<R>(pin: Password, _ body: (SecureBytes) throws -> R) async throws -> R {
        let vault = self
        let secret = try await offExecutor { () throws(VaultError) in try vault.open(pin: pin) }
        defer { secret.destroy() }
        return try body(secret)
    }

    /// Changes the PIN: the old PIN opens the data key, a new slot (new salt)
    /// is written beside the old one and verified to open from disk, and only
    /// then is the old slot removed. A crash at any point leaves a vault that
    /// opens with the old or the new PIN.
    /// - Parameters:
    ///   - old: the current PIN (a wrong one is counted like an unlock).
    ///   - new: the new PIN.
    ///   - parameters: new Argon2id cost (default: keep the old slot's).
    /// - Throws: as ``unlock(pin:_:)``, plus the parameter errors of
    ///   ``create(at:secret:pin:policy:pinFormat:parameters:options:)``; a new PIN the vault's
    ///   format does not admit is ``VaultError/pinOutsideFormat(_:)``, before the old one is counted.
    public func changePIN(old: Password, new: Password, parameters: Argon2id.Parameters? = nil) throws(VaultError) {
        try directory.locked { () throws(VaultError) in
            let current = try loadFile()
            guard try current.pinFormat.admits(new) else { throw .pinOutsideFormat(current.pinFormat) }
            let (file, dataKey, opened) = try openDataKey(pin: old)
            defer { dataKey.destroy() }
            let newParameters = parameters ?? opened.parameters
            try VaultFile.checkBounds(newParameters, floor: options.floor, limits: options.limits)
            let newSlot = try makePINSlot(pin: new, dataKey: dataKey, parameters: newParameters, file: file)
            var withBoth = file
            withBoth.slots.append(newSlot)
            try directory.writeFile(VaultDirectory.vaultName, try core { try withBoth.encode() })
            options.observer?(.pinChangeNewSlotWritten)
            // Verify from disk before the old slot goes.
            let reread = try loadFile()
            guard let written = reread.slots.last, written == newSlot,
                let check = try openPINSlot(written, pin: new, file: reread),
                try core({ try check.isEqual(to: dataKey) })
            else {
                try directory.writeFile(VaultDirectory.vaultName, try core { try file.encode() })
                throw .damaged(reason: "the new PIN slot did not verify; the old PIN is kept")
            }
            check.destroy()
            var final = reread
            final.slots = reread.slots.filter { $0.type != .pin } + [newSlot]
            try directory.writeFile(VaultDirectory.vaultName, try core { try final.encode() })
            options.observer?(.pinChangeOldSlotRemoved)
        }
    }

    /// Counters and throttle state, without a PIN.
    /// - Returns: the status.
    /// - Throws: ``VaultError/notFound`` and the file errors.
    public func status() throws(VaultError) -> VaultStatus {
        try directory.locked { () throws(VaultError) in
            let file = try loadFile()
            let record = try loadRecord(file)
            let failures = Int(record.failures)
            let remaining = max(0, file.policy.maxFailures - failures)
            let delay = record.remainingDelay(policy: file.policy, clock: options.clock)
            let state: VaultStatus.State = remaining == 0 ? .locked : delay > 0 ? .throttled : .ready
            return VaultStatus(
                state: state, failures: failures, maxFailures: file.policy.maxFailures, remainingAttempts: remaining,
                retryAfterSeconds: delay, nextAttemptAt: state == .locked ? nil : options.clock.wallSeconds() + delay,
                hasBiometricSlot: file.slots.contains { $0.type == .biometric }, policy: file.policy,
                pinFormat: file.pinFormat)
        }
    }

    /// Wipes (overwrites with zeros) and removes the vault, its counter and
    /// its biometric key.
    /// - Throws: ``VaultError/notFound``, ``VaultError/io(operation:errno:)``.
    public func destroy() throws(VaultError) {
        let file: VaultFile? = try directory.locked { () throws(VaultError) in
            guard directory.exists else { throw .notFound }
            let file = try? loadFile()
            try directory.removeAll()
            return file
        }
        if let file { options.authenticator?.deleteKey(account: biometricAccount(file)) }
    }

    // MARK: - Internals shared with the biometric and PIN paths

    func open(pin: Password) throws(VaultError) -> SecureBytes {
        try directory.locked { () throws(VaultError) in
            let (file, dataKey, _) = try openDataKey(pin: pin)
            defer { dataKey.destroy() }
            return try openPayload(file, dataKey: dataKey)
        }
    }

    /// Counts the attempt, then runs the KDF; resets the counter on success.
    /// Caller holds the lock.
    func openDataKey(pin: Password) throws(VaultError) -> (VaultFile, SecureBytes, VaultFile.Slot) {
        let file = try loadFile()
        guard try file.pinFormat.admits(pin) else { throw .pinOutsideFormat(file.pinFormat) }
        var record = try loadRecord(file)
        try checkAllowed(record, policy: file.policy)
        record.failures += 1
        record.bootID = options.clock.bootID()
        record.bootStamp = options.clock.nanosecondsSinceBoot()
        record.wallStamp = options.clock.wallSeconds()
        try directory.writeFile(VaultDirectory.recordName, try core { try record.encode() })
        options.observer?(.failureRecorded(Int(record.failures)))
        options.observer?(.derivingKey)
        for slot in file.slots where slot.type == .pin {
            if let dataKey = try openPINSlot(slot, pin: pin, file: file) {
                try resetFailures(file)
                return (file, dataKey, slot)
            }
        }
        let remaining = file.policy.maxFailures - Int(record.failures)
        if case .wipe = file.policy, remaining <= 0 {
            try directory.removeAll()
            options.authenticator?.deleteKey(account: biometricAccount(file))
            throw .wiped
        }
        throw .wrongPIN(remainingAttempts: max(0, remaining))
    }

    func resetFailures(_ file: VaultFile) throws(VaultError) {
        let fresh = FailureRecord.fresh(vaultID: file.vaultID, clock: options.clock)
        try directory.writeFile(VaultDirectory.recordName, try core { try fresh.encode() })
        options.observer?(.unlocked)
    }

    func checkAllowed(_ record: FailureRecord, policy: ThrottlePolicy) throws(VaultError) {
        if Int(record.failures) >= policy.maxFailures { throw .locked }
        let delay = record.remainingDelay(policy: policy, clock: options.clock)
        if delay > 0 { throw .throttled(retryAfterSeconds: delay) }
    }

    func loadFile() throws(VaultError) -> VaultFile {
        guard let bytes = try directory.readFile(VaultDirectory.vaultName) else { throw .notFound }
        return try VaultFile.decode(bytes, floor: options.floor, limits: options.limits)
    }

    /// The failure record; a record from an earlier boot restarts its delay now.
    func loadRecord(_ file: VaultFile) throws(VaultError) -> FailureRecord {
        guard let bytes = try directory.readFile(VaultDirectory.recordName) else {
            throw .damaged(reason: "the failure record is missing")
        }
        var record = try FailureRecord.decode(bytes, vaultID: file.vaultID)
        let boot = options.clock.bootID()
        if record.bootID != boot {
            record.bootID = boot
            record.bootStamp = options.clock.nanosecondsSinceBoot()
            try directory.writeFile(VaultDirectory.recordName, try core { try record.encode() })
        }
        return record
    }

    func makePINSlot(pin: Password, dataKey: SecureBytes, parameters: Argon2id.Parameters, file: VaultFile)
        throws(VaultError) -> VaultFile.Slot
    {
        let salt = try core { try SecureRandom.bytes(count: VaultFile.saltSize) }
        var slot = VaultFile.Slot(
            type: .pin, kdf: VaultFile.kdfArgon2id, parameters: parameters,
            flags: options.pepper == nil ? 0 : VaultFile.slotFlagPepper, salt: salt,
            biometricFingerprint: [UInt8](repeating: 0, count: VaultFile.fingerprintSize), nonce: [], wrappedKey: [])
        let wrapKey = try core {
            try Argon2id.deriveKey(
                from: pin, salt: salt, parameters: parameters, pepper: options.pepper, limits: options.limits)
        }
        defer { wrapKey.destroy() }
        let box = try core { try AEAD.seal(dataKey, using: wrapKey, associatedData: file.slotAssociatedData(slot)) }
        slot.nonce = box.nonce
        slot.wrappedKey = box.ciphertext
        return slot
    }

    /// The data key, or nil when the PIN does not open this slot.
    func openPINSlot(_ slot: VaultFile.Slot, pin: Password, file: VaultFile) throws(VaultError) -> SecureBytes? {
        let needsPepper = slot.flags & VaultFile.slotFlagPepper != 0
        guard needsPepper == (options.pepper != nil) else { throw .pepperRequired }
        let wrapKey = try core {
            try Argon2id.deriveKey(
                from: pin, salt: slot.salt, parameters: slot.parameters, pepper: options.pepper, limits: options.limits)
        }
        defer { wrapKey.destroy() }
        return try unwrap(slot, with: wrapKey, file: file)
    }

    func unwrap(_ slot: VaultFile.Slot, with key: SecureBytes, file: VaultFile) throws(VaultError) -> SecureBytes? {
        let box = AEAD.SealedBox(algorithm: .xChaCha20Poly1305, nonce: slot.nonce, ciphertext: slot.wrappedKey)
        do throws(SecureCoreError) {
            return try AEAD.open(box, using: key, associatedData: file.slotAssociatedData(slot))
        } catch .authenticationFailed {
            return nil
        } catch {
            throw .secureCore(error)
        }
    }

    func openPayload(_ file: VaultFile, dataKey: SecureBytes) throws(VaultError) -> SecureBytes {
        let box = AEAD.SealedBox(
            algorithm: .xChaCha20Poly1305, nonce: file.payloadNonce, ciphertext: file.payloadCiphertext)
        let opened: SecureBytes?
        do throws(SecureCoreError) {
            opened = try AEAD.open(box, using: dataKey, associatedData: file.payloadAssociatedData)
        } catch .authenticationFailed {
            throw .damaged(reason: "the payload does not authenticate under the data key")
        } catch {
            throw .secureCore(error)
        }
        guard let secret = opened else { throw .damaged(reason: "empty payload") }
        return secret
    }

    func biometricAccount(_ file: VaultFile) -> String {
        "securepin.vault." + file.vaultID.map { String($0, radix: 16) }.joined()
    }
}

/// Steps of an operation, for tests and crash harnesses (``PinVault/Options/observer``).
public enum VaultEvent: Sendable, Equatable {
    /// The failure counter reached this value on disk (before the KDF).
    case failureRecorded(Int)
    /// The key derivation is about to run.
    case derivingKey
    /// The PIN or biometry opened the vault; the counter was reset on disk.
    case unlocked
    /// PIN change: the new slot is on disk beside the old one.
    case pinChangeNewSlotWritten
    /// PIN change: the old slot is gone.
    case pinChangeOldSlotRemoved
}

/// What ``PinVault/status()`` reports.
public struct VaultStatus: Sendable, Equatable, Codable {
    /// Whether an attempt is possible now.
    public enum State: String, Sendable, Codable {
        /// An attempt may be made now.
        case ready
        /// Wait ``VaultStatus/retryAfterSeconds``.
        case throttled
        /// No attempts are possible any more.
        case locked
    }

    /// The state.
    public var state: State
    /// Consecutive failures.
    public var failures: Int
    /// The policy's limit.
    public var maxFailures: Int
    /// Failures left before locking or wiping.
    public var remainingAttempts: Int
    /// Seconds to wait (0 when ready).
    public var retryAfterSeconds: UInt64
    /// Wall-clock time (seconds since 1970) of the next allowed attempt; nil when locked.
    public var nextAttemptAt: UInt64?
    /// Whether a biometric slot exists.
    public var hasBiometricSlot: Bool
    /// What failures lead to.
    public var policy: ThrottlePolicy
    /// The PIN format the vault records (``VaultPinFormat/unrecorded`` for a version 1 file).
    public var pinFormat: VaultPinFormat
}

/// Narrows a SecureCore call to ``VaultError``.
func core<R>(_ body: () throws -> R) throws(VaultError) -> R {
    do {
        return try body()
    } catch let error as SecureCoreError {
        throw .secureCore(error)
    } catch let error as VaultError {
        throw error
    } catch {
        throw .secureCore(.internalFailure(status: 0))
    }
}

/// Blocking work on a Dispatch queue, resuming the caller when done.
func offExecutor<R: Sendable>(_ work: @escaping @Sendable () throws(VaultError) -> R) async throws(VaultError) -> R {
    let result: Result<R, VaultError> = await withCheckedContinuation { continuation in
        DispatchQueue.global(qos: .userInitiated).async {
            do throws(VaultError) {
                continuation.resume(returning: .success(try work()))
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
    }
    return try result.get()
}
