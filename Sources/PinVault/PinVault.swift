// Biometry is its own module; PinVault re-exports it, so vault code keeps one import.
@_exported import Biometry
import DurableStorage
import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
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
        /// The TPM a TPM-bound vault needs (``VaultBinding/tpm(_:pcrs:)``); nil for software vaults.
        public var tpm: (any VaultTPM)?
        /// The TPM's lockout-hierarchy authorisation, used once when a TPM-bound vault is created
        /// to set the dictionary-attack parameters. A TPM whose lockout authorisation is empty (a
        /// fresh TPM, swtpm) is refused (``VaultError/tpmLockoutAuthorizationNotSet``) unless
        /// ``tpmNewLockoutAuthorization`` is given.
        public var tpmLockoutAuthorization: SecureBytes?
        /// A new lockout-hierarchy authorisation (1 ... 64 bytes) that creating a TPM-bound vault
        /// sets when the TPM has none, before the dictionary-attack parameters; the caller keeps it
        /// for the administrator, never beside the vault. Ignored when the TPM has one already.
        public var tpmNewLockoutAuthorization: SecureBytes?
        /// Makes the client of a server-bound vault's server (``VaultBinding/server(_:)``) from the
        /// address its file records; nil for vaults without one.
        public var serverConnector: (@Sendable (VaultServerAddress) -> any VaultOPRFServer)?
        /// The system calls of durable writes; tests substitute failures.
        package var fileSystem: any DurableFileSystem = SystemFileSystem()

        /// Creates options; the floor defaults to OWASP's Argon2id minimum.
        public init(
            floor: Argon2id.Parameters = .owaspMinimum, limits: Argon2id.Limits = .default,
            clock: any VaultClock = SystemVaultClock(), pepper: SecureBytes? = nil,
            biometricConfiguration: BiometricConfiguration = BiometricConfiguration(),
            authenticator: (any BiometricAuthenticator)? = nil, observer: (@Sendable (VaultEvent) -> Void)? = nil,
            tpm: (any VaultTPM)? = nil, tpmLockoutAuthorization: SecureBytes? = nil,
            serverConnector: (@Sendable (VaultServerAddress) -> any VaultOPRFServer)? = nil
        ) {
            self.serverConnector = serverConnector
            self.tpm = tpm
            self.tpmLockoutAuthorization = tpmLockoutAuthorization
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
        self.directory = VaultDirectory(path: directory, fileSystem: options.fileSystem)
        self.options = options
    }

    /// Whether a vault exists in the directory.
    public var exists: Bool { directory.exists }

    /// Creates a vault holding `secret` under `pin`.
    /// - Parameters:
    ///   - directory: created with mode 0700 if missing (and then removed by
    ///     ``destroy()``); an existing one must be this user's, mode 0700 or
    ///     stricter, and empty — its mode is never changed.
    ///   - secret: 1 byte to ``maximumSecretByteCount``.
    ///   - pin: revealed only during the key derivation.
    ///   - policy: what failures lead to (default ``ThrottlePolicy/soft(maxFailures:)``; a
    ///     ``ThrottlePolicy/softSchedule(_:maxFailures:)`` is written as format version 6).
    ///   - pinFormat: the PIN format recorded in the vault; every later PIN must fit it
    ///     (default ``VaultPinFormat/unrecorded``: 1 to 256 printable characters).
    ///   - parameters: Argon2id cost, for example from `SecureCore.KDFCalibrator`.
    ///   - binding: ``VaultBinding/software`` (default), or ``VaultBinding/tpm(_:pcrs:)``: the PIN slot then
    ///     needs a value sealed in ``Options/tpm`` (under a PCR policy when `pcrs` is not empty), and
    ///     the TPM's dictionary-attack parameters are set from the binding's policy (with
    ///     ``Options/tpmLockoutAuthorization``); `policy` is then
    ///     recorded as `.hard(maxFailures:)` of the TPM's tries, and the TPM alone enforces it; or
    ///     ``VaultBinding/server(_:)``: the PIN slot then needs the OPRF of the server at that address
    ///     (through ``Options/serverConnector``), `policy` is recorded as `.hard(maxFailures:)` of the
    ///     server's limit, and the server alone enforces it.
    ///   - options: reader and writer settings.
    /// - Returns: the vault.
    /// - Throws: ``VaultError/alreadyExists``, ``VaultError/unsuitableDirectory(reason:)``,
    ///   ``VaultError/invalidSecretSize(_:)``, ``VaultError/invalidPolicy(reason:)``,
    ///   ``VaultError/parametersBelowFloor``, ``VaultError/parametersAboveCeiling``, ``VaultError/io(operation:errno:)``,
    ///   ``VaultError/pinOutsideFormat(_:)``; for a TPM binding ``VaultError/tpmRequired``,
    ///   ``VaultError/tpmUnavailable(reason:)`` and ``VaultError/tpmFailed(_:)`` (nothing is written);
    ///   for a server binding ``VaultError/serverRequired`` and ``VaultError/network(reason:)`` (a server
    ///   that cannot be reached is found before anything is written).
    public static func create(
        at directory: String, secret: SecureBytes, pin: Password, policy: ThrottlePolicy = .soft(),
        pinFormat: VaultPinFormat = .unrecorded, parameters: Argon2id.Parameters, binding: VaultBinding = .software,
        options: Options = Options()
    ) throws(VaultError) -> PinVault {
        let vault = PinVault(directory: directory, options: options)
        var policy = policy
        var tpmRecord: TPMBindingRecord? = nil
        if case .tpm(let lockout, let pcrs) = binding {
            guard (1...1000).contains(lockout.maxTries) else { throw .damaged(reason: "TPM max tries out of range") }
            policy = .hard(maxFailures: Int(lockout.maxTries))
            tpmRecord = TPMBindingRecord(
                policy: lockout, object: TPMSealedObject(publicArea: [], privateBlob: [], parentName: [], pcrs: pcrs))
        }
        var serverRecord: ServerBindingRecord? = nil
        if case .server(let address) = binding {
            serverRecord = ServerBindingRecord(
                vaultId: [UInt8](repeating: 0, count: VaultFile.serverVaultIdSize), address: address)
        }
        guard (1...maximumSecretByteCount).contains(secret.count) else { throw .invalidSecretSize(secret.count) }
        try policy.validate()
        try VaultFile.checkBounds(parameters, floor: options.floor, limits: options.limits)
        guard pinFormat.admits(pin) else { throw .pinOutsideFormat(pinFormat) }
        guard !vault.directory.exists else { throw .alreadyExists }
        if let tpmRecord {
            // Before anything is written: a TPM that is absent or refuses leaves no directory behind.
            let tpm = try vault.requireTPM()
            // A TPM whose lockout hierarchy has the empty authorisation lets anyone reset its guess
            // limit (TPM2_DictionaryAttackLockReset): refused, unless a new authorisation is given.
            var lockout = options.tpmLockoutAuthorization
            if try VaultError.tpm({ () throws(VaultTPMError) in try tpm.lockoutState() }).lockoutAuthorizationSet
                == false
            {
                guard let fresh = options.tpmNewLockoutAuthorization else { throw .tpmLockoutAuthorizationNotSet }
                try VaultError.tpm { () throws(VaultTPMError) in
                    try tpm.changeLockoutAuthorization(to: fresh, current: nil)
                }
                lockout = fresh
            }
            let authorization = lockout
            try VaultError.tpm { () throws(VaultTPMError) in
                try tpm.setLockoutPolicy(tpmRecord.policy, lockoutAuthorization: authorization)
            }
        }
        if let serverRecord {
            // Before anything is written: a server that cannot be reached leaves no directory behind.
            // Asking for an identifier that no vault has must get "unknown vault" back.
            let server = try vault.requireServer(serverRecord.address)
            do throws(VaultServerError) {
                _ = try server.status(vaultId: serverRecord.vaultId)
            } catch .unknownVault {
            } catch {
                _ = try VaultError.server { () throws(VaultServerError) in throw error }
            }
        }
        try vault.directory.prepare()
        try vault.directory.lockedCreatingDirectory { () throws(VaultError) in
            guard !vault.directory.exists else { throw .alreadyExists }
            // A key file without a vault file is what an interrupted create leaves: destroy it.
            try storage { () throws(StorageError) in
                try DurableFile.overwriteInPlace(vault.directory.file(KeyFile.name))
                try DurableFile.remove(vault.directory.file(KeyFile.name))
            }
            // The key file first, then the record: a vault file never exists without either.
            try vault.directory.keyFile.create()
            try vault.directory.syncDirectory()
            let half = try vault.directory.keyFile.half(0)
            defer { half.destroy() }
            let vaultID = try core { () throws(SecureCoreError) in try SecureRandom.bytes(count: 16) }
            let dataKey = try core { () throws(SecureCoreError) in try SecureBytes.random(count: 32) }
            defer { dataKey.destroy() }
            var file = VaultFile(
                vaultID: vaultID, policy: policy, keyHalf: 0, slots: [], payloadNonce: [], payloadCiphertext: [],
                pinFormat: pinFormat)
            if let tpmRecord {
                file.version = tpmRecord.object.pcrs.isEmpty ? VaultFile.bindingVersion : VaultFile.pcrBindingVersion
                file.tpm = tpmRecord
            }
            if let serverRecord {
                file.version = VaultFile.serverBindingVersion
                file.server = serverRecord
            }
            // A server-bound vault records the server's hard limit instead (below).
            if policy.schedule != nil, serverRecord == nil { file.version = VaultFile.scheduleVersion }
            let slot = try vault.makePINSlot(
                pin: pin, dataKey: dataKey, parameters: parameters, file: &file, half: half)
            file.slots = [slot]
            try vault.seal(secret, into: &file, dataKey: dataKey)
            try vault.writeRecord(FailureRecord.fresh(vaultID: vaultID, clock: options.clock), file)
            try vault.writeVault(file, half: half)
        }
        return vault
    }

    /// Opens the vault with `pin` and runs `body` with the secret, which is
    /// wiped when `body` returns.
    /// - Returns: what `body` returns.
    /// - Throws: ``VaultError/wrongPIN(remainingAttempts:)`` (counted), ``VaultError/throttled(retryAfterSeconds:)``
    ///   and ``VaultError/locked`` (not counted, no KDF run), ``VaultError/pinOutsideFormat(_:)`` (a PIN
    ///   the vault's format does not admit: not counted, no KDF run), ``VaultError/wiped``, or the file errors.
    public func unlock<R>(pin: Password, _ body: (SecureBytes) -> R) throws(VaultError) -> R {
        let secret = try open(pin: pin)
        defer { secret.destroy() }
        return body(secret)
    }

    /// ``unlock(pin:_:)`` for a `body` that can fail: the vault's errors and
    /// the body's arrive apart, each with its own type.
    /// - Returns: what `body` returns.
    /// - Throws: ``VaultUnlockError/vault(_:)`` with the errors of ``unlock(pin:_:)``, or
    ///   ``VaultUnlockError/body(_:)`` with what `body` threw (the vault was opened; the attempt counted as a
    ///   success).
    public func unlock<R, E: Error>(
        pin: Password, _ body: (SecureBytes) throws(E) -> R
    ) throws(VaultUnlockError<E>) -> R {
        let secret = try VaultUnlockError<E>.vault { () throws(VaultError) in try open(pin: pin) }
        defer { secret.destroy() }
        return try VaultUnlockError<E>.body { () throws(E) in try body(secret) }
    }

    /// ``unlock(pin:_:)`` with the key derivation off the caller's executor.
    /// - Returns: what `body` returns.
    /// - Throws: as ``unlock(pin:_:)``.
    public func unlock<R>(pin: Password, _ body: (SecureBytes) -> R) async throws(VaultError) -> R {
        let secret = try await openOffExecutor(pin: pin)
        defer { secret.destroy() }
        return body(secret)
    }

    /// ``unlock(pin:_:)`` for a `body` that can fail, with the key derivation
    /// off the caller's executor.
    /// - Returns: what `body` returns.
    /// - Throws: as the synchronous form.
    public func unlock<R, E: Error>(
        pin: Password, _ body: (SecureBytes) throws(E) -> R
    ) async throws(VaultUnlockError<E>) -> R {
        let secret: SecureBytes
        do throws(VaultError) { secret = try await openOffExecutor(pin: pin) } catch { throw .vault(error) }
        defer { secret.destroy() }
        return try VaultUnlockError<E>.body { () throws(E) in try body(secret) }
    }

    /// ``open(pin:)`` on a Dispatch queue, so Argon2id never occupies the cooperative pool.
    func openOffExecutor(pin: Password) async throws(VaultError) -> SecureBytes {
        let vault = self
        return try await offExecutor { () throws(VaultError) in try vault.open(pin: pin) }
    }

    /// Changes the PIN and every key behind it: the old PIN opens the vault;
    /// a fresh half of the key file is written in place; a new vault file
    /// with a fresh data key, the secret sealed anew and a new PIN slot (new
    /// salt) bound to that half replaces the old file and is verified to open
    /// from disk; only then is the old half destroyed in place, which makes
    /// every copy of the old file (with the old PIN, slot and data key)
    /// useless. A crash at any point leaves a vault that opens with the old
    /// or the new PIN. A biometric slot is re-created with a new key when an
    /// ``Options/authenticator`` is available, and removed otherwise.
    /// - Parameters:
    ///   - old: the current PIN (a wrong one is counted like an unlock).
    ///   - new: the new PIN.
    ///   - parameters: new Argon2id cost (default: keep the old slot's).
    /// - Throws: as `unlock(pin:_:)`, plus the parameter errors of
    ///   ``create(at:secret:pin:policy:pinFormat:parameters:binding:options:)``; a new PIN the vault's
    ///   format does not admit is ``VaultError/pinOutsideFormat(_:)``, before the old one is counted.
    public func changePIN(old: Password, new: Password, parameters: Argon2id.Parameters? = nil) throws(VaultError) {
        try directory.locked { () throws(VaultError) in
            let current = try loadFile()
            guard current.pinFormat.admits(new) else { throw .pinOutsideFormat(current.pinFormat) }
            // A server-bound vault holds the old record's proof: removal once the old key half is
            // gone, else (the change failed) the confirmation an unlock would have sent.
            let hold = current.server == nil ? nil : ServerProofHold()
            var oldRecordRemovable = false
            defer { try? hold?.finish(oldRecordRemovable) }
            let (file, oldDataKey, opened) = try openDataKey(pin: old, hold: hold)
            defer { oldDataKey.destroy() }
            let newParameters = parameters ?? opened.parameters
            try VaultFile.checkBounds(newParameters, floor: options.floor, limits: options.limits)
            let secret = try openPayload(file, dataKey: oldDataKey)
            defer { secret.destroy() }
            // The half the current file does not use: writing it cannot hurt the current file.
            let newHalfIndex: UInt8 = 1 - file.keyHalf
            let half = try directory.keyFile.renewHalf(newHalfIndex)
            defer { half.destroy() }
            let dataKey = try core { () throws(SecureCoreError) in try SecureBytes.random(count: 32) }
            defer { dataKey.destroy() }
            var updated = file
            updated.keyHalf = newHalfIndex
            let newSlot = try makePINSlot(
                pin: new, dataKey: dataKey, parameters: newParameters, file: &updated, half: half)
            updated.slots = [newSlot]
            if let biometric = file.slots.first(where: { $0.type == .biometric }),
                let authenticator = usableAuthenticator
            {
                updated.slots.append(
                    try makeBiometricSlot(
                        fingerprint: biometric.biometricFingerprint, dataKey: dataKey, file: updated, half: half,
                        authenticator: authenticator))
            }
            try seal(secret, into: &updated, dataKey: dataKey)
            let newMACKey = try macKey(half: half)
            defer { newMACKey.destroy() }
            let newBytes = try core { () throws(SecureCoreError) in try updated.encode(macKey: newMACKey) }
            do throws(VaultDirectory.ReplaceFailure) {
                try directory.replace(VaultDirectory.vaultName, newBytes)
            } catch {
                if error.replaced {
                    // In place but not durable: put the old file back, so that the failure reported is
                    // what the directory holds. Both halves stay, so whichever file a crash brings back
                    // opens with its own PIN.
                    let oldHalf = try directory.keyFile.half(file.keyHalf)
                    defer { oldHalf.destroy() }
                    try? writeVault(file, half: oldHalf)
                }
                throw error.error
            }
            options.observer?(.pinChangeNewSlotWritten)
            // Verify from disk before the old half goes.
            let reread = try loadFile()
            let check = reread == updated ? try openPINSlot(newSlot, pin: new, file: reread, half: half) : nil
            defer { check?.destroy() }
            let payload = try check.map { (key) throws(VaultError) in try openPayload(reread, dataKey: key) }
            defer { payload?.destroy() }
            guard let payload, try core({ () throws(SecureCoreError) in try payload.isEqual(to: secret) }) else {
                let oldHalf = try directory.keyFile.half(file.keyHalf)
                defer { oldHalf.destroy() }
                try writeVault(file, half: oldHalf)
                throw .damaged(reason: "the new PIN slot did not verify; the old PIN is kept")
            }
            do throws(VaultError) { try directory.keyFile.destroyHalf(file.keyHalf) } catch {
                // The PIN did change; say so, and that the old copies are not yet destroyed.
                if case .io(let operation, let code) = error {
                    throw .io(
                        operation: "\(operation) (the PIN was changed; the old key half is not destroyed)", errno: code)
                }
                throw error
            }
            // The old file no longer opens (its key half is destroyed): its server record goes too.
            // Best effort: a record left behind (server unreachable now) is useless without the
            // destroyed half and counts nothing; the back office can see it.
            oldRecordRemovable = true
            if !updated.slots.contains(where: { $0.type == .biometric }),
                file.slots.contains(where: { $0.type == .biometric })
            {
                options.authenticator?.deleteKey(account: biometricAccount(file))
            }
            options.observer?(.pinChangeOldSlotRemoved)
        }
    }

    /// Counters and throttle state, without a PIN. Works on a read-only file system.
    /// - Returns: the status.
    /// - Throws: ``VaultError/notFound`` and the file errors.
    public func status() throws(VaultError) -> VaultStatus {
        try directory.locked { () throws(VaultError) in
            let file = try loadFile()
            if file.tpm != nil { return try tpmStatus(file) }
            if file.server != nil { return try serverStatus(file) }
            let record = try loadRecord(file, persist: .ifPossible)
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

    /// Destroys the vault: its key file, vault file and failure record are
    /// overwritten in place and removed, with the lock file; its biometric
    /// key is deleted; the directory is removed only if the vault created it.
    /// Nothing else in the directory is touched.
    /// - Returns: what was removed.
    /// - Throws: ``VaultError/notFound``, ``VaultError/io(operation:errno:)``.
    @discardableResult
    public func destroy() throws(VaultError) -> VaultDestruction {
        let (file, report): (VaultFile?, VaultDestruction) = try directory.locked { () throws(VaultError) in
            guard directory.exists else { throw .notFound }
            let file = try? loadFile()
            return (file, try directory.removeAll())
        }
        if let file { options.authenticator?.deleteKey(account: biometricAccount(file)) }
        return report
    }

    /// Destroys the vault after proving its PIN, and with it a server-bound vault's record at the
    /// server (which ``destroy()`` cannot remove: deleting it needs a proof that only the right PIN
    /// gives, so that nobody else can delete another's record). The PIN is checked like an unlock
    /// (counted first); a wrong one destroys nothing. For a server-bound vault the record is removed
    /// first and the local files after: a server that cannot be reached leaves everything in place.
    /// - Parameter pin: the vault's PIN.
    /// - Returns: what was removed; ``VaultDestruction/removedServerRecord`` says whether a server
    ///   record was.
    /// - Throws: what an unlock with `pin` throws (a wrong PIN is ``VaultError/wrongPIN(remainingAttempts:)``),
    ///   and what ``destroy()`` throws.
    @discardableResult
    public func destroy(pin: Password) throws(VaultError) -> VaultDestruction {
        let (file, report): (VaultFile, VaultDestruction) = try directory.locked { () throws(VaultError) in
            let current = try loadFile()
            let hold = current.server == nil ? nil : ServerProofHold()
            var removed = false
            defer { if !removed { try? hold?.finish(false) } }
            let (file, dataKey, _) = try openDataKey(pin: pin, hold: hold)
            dataKey.destroy()
            if let hold {
                try hold.finish(true)
                removed = true
            }
            var report = try directory.removeAll()
            report.removedServerRecord = hold != nil
            return (file, report)
        }
        options.authenticator?.deleteKey(account: biometricAccount(file))
        return report
    }

    /// Checks, without changing anything, that ``create(at:secret:pin:policy:pinFormat:parameters:binding:options:)``
    /// can use `directory`: missing (it is then created), or an existing
    /// directory owned by this user, closed to the group and others, and empty.
    /// - Throws: ``VaultError/alreadyExists``, ``VaultError/unsuitableDirectory(reason:)``,
    ///   ``VaultError/io(operation:errno:)``.
    public static func checkCanCreate(at directory: String) throws(VaultError) {
        let dir = VaultDirectory(path: directory)
        guard !dir.exists else { throw .alreadyExists }
        try dir.checkCanCreate()
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
    /// With `hold`, a server-bound vault's proof is held there instead of sent.
    func openDataKey(pin: Password, hold: ServerProofHold? = nil) throws(VaultError) -> (
        VaultFile, SecureBytes, VaultFile.Slot
    ) {
        let file = try loadFile()
        guard file.pinFormat.admits(pin) else { throw .pinOutsideFormat(file.pinFormat) }
        if file.tpm != nil { return try openTPMBoundDataKey(pin: pin, file: file) }
        if file.server != nil { return try openServerBoundDataKey(pin: pin, file: file, hold: hold) }
        var record = try loadRecord(file)
        try checkAllowed(record, policy: file.policy)
        record.failures += 1
        record.bootID = options.clock.bootID()
        record.bootStamp = options.clock.nanosecondsSinceBoot()
        record.wallStamp = options.clock.wallSeconds()
        try writeRecord(record, file)
        options.observer?(.failureRecorded(Int(record.failures)))
        options.observer?(.derivingKey)
        let half = try directory.keyFile.half(file.keyHalf)
        defer { half.destroy() }
        for slot in file.slots where slot.type == .pin {
            if let dataKey = try openPINSlot(slot, pin: pin, file: file, half: half) {
                try resetFailures(file)
                try finishInterruptedPINChange(file)
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

    /// A PIN change interrupted after its new file was in place leaves the
    /// old half intact, and with it every copy of the old file. No change can
    /// be under way while the lock is held, so the half the current file does
    /// not name is destroyed here if it is not already zeros.
    func finishInterruptedPINChange(_ file: VaultFile) throws(VaultError) {
        let unused: UInt8 = 1 - file.keyHalf
        guard !(try directory.keyFile.isDestroyed(unused)) else { return }
        try directory.keyFile.destroyHalf(unused)
    }

    func resetFailures(_ file: VaultFile) throws(VaultError) {
        let fresh = FailureRecord.fresh(vaultID: file.vaultID, clock: options.clock)
        try writeRecord(fresh, file)
        options.observer?(.unlocked)
    }

    func checkAllowed(_ record: FailureRecord, policy: ThrottlePolicy) throws(VaultError) {
        if Int(record.failures) >= policy.maxFailures { throw .locked }
        let delay = record.remainingDelay(policy: policy, clock: options.clock)
        if delay > 0 { throw .throttled(retryAfterSeconds: delay) }
    }

    /// The vault file, checked (``VaultFile/decode(_:floor:limits:)``) and
    /// authenticated under its key file before anything is counted or derived.
    func loadFile() throws(VaultError) -> VaultFile {
        guard let bytes = try directory.readFile(VaultDirectory.vaultName) else { throw .notFound }
        let (file, mac) = try VaultFile.decode(bytes, floor: options.floor, limits: options.limits)
        let half = try directory.keyFile.half(file.keyHalf)
        defer { half.destroy() }
        let key = try macKey(half: half)
        defer { key.destroy() }
        guard try core({ () throws(SecureCoreError) in try file.verifyMAC(mac, macKey: key) }) else {
            throw .damaged(reason: "the vault file does not authenticate under its key file (edited?)")
        }
        return file
    }

    /// The failure record's MAC key: the key file's record key and, when the
    /// vault's PIN slots require one, the pepper.
    func recordKey(_ file: VaultFile) throws(VaultError) -> SecureBytes {
        let base = try directory.keyFile.recordKey()
        defer { base.destroy() }
        let peppered = file.slots.contains { $0.type == .pin && $0.flags & VaultFile.slotFlagPepper != 0 }
        var parts = [base]
        if peppered {
            guard let pepper = options.pepper else { throw .pepperRequired }
            parts.append(pepper)
        }
        return try core { () throws(SecureCoreError) in
            try HMACSHA256.deriveKey(label: KeyFile.recordLabel, from: parts)
        }
    }

    /// Writes the failure record with its MAC.
    func writeRecord(_ record: FailureRecord, _ file: VaultFile) throws(VaultError) {
        let key = try recordKey(file)
        defer { key.destroy() }
        try directory.writeFile(
            VaultDirectory.recordName, try core { () throws(SecureCoreError) in try record.encode(key: key) })
    }

    /// Writes the vault file with its MAC under `half`.
    func writeVault(_ file: VaultFile, half: SecureBytes) throws(VaultError) {
        let key = try macKey(half: half)
        defer { key.destroy() }
        try directory.writeFile(
            VaultDirectory.vaultName, try core { () throws(SecureCoreError) in try file.encode(macKey: key) })
    }

    /// Writes the vault file with its MAC under the key-file half it names.
    func writeVault(_ file: VaultFile) throws(VaultError) {
        let half = try directory.keyFile.half(file.keyHalf)
        defer { half.destroy() }
        try writeVault(file, half: half)
    }

    func macKey(half: SecureBytes) throws(VaultError) -> SecureBytes {
        try core { () throws(SecureCoreError) in try HMACSHA256.deriveKey(label: KeyFile.macLabel, from: [half]) }
    }

    /// A slot's wrapping key: the KDF output (or biometric key) bound to the key-file half.
    func slotKey(_ inner: SecureBytes, half: SecureBytes) throws(VaultError) -> SecureBytes {
        try core { () throws(SecureCoreError) in
            try HMACSHA256.deriveKey(label: KeyFile.slotLabel, from: [half, inner])
        }
    }

    /// Seals `secret` under `dataKey` into the file's payload.
    func seal(_ secret: SecureBytes, into file: inout VaultFile, dataKey: SecureBytes) throws(VaultError) {
        let box = try core { () throws(SecureCoreError) in
            try AEAD.seal(secret, using: dataKey, associatedData: file.payloadAssociatedData)
        }
        file.payloadNonce = box.nonce
        file.payloadCiphertext = box.ciphertext
    }

    /// The failure record; a record from an earlier boot, or whose stamps the
    /// clocks contradict, restarts its delay now (``FailureRecord/reconcileClocks(_:)``).
    func loadRecord(_ file: VaultFile, persist: Persist = .always) throws(VaultError) -> FailureRecord {
        guard let bytes = try directory.readFile(VaultDirectory.recordName) else {
            throw .damaged(reason: "the failure record is missing")
        }
        let key = try recordKey(file)
        defer { key.destroy() }
        var record: FailureRecord
        var rewrite = false
        do throws(VaultError) {
            record = try FailureRecord.decode(bytes, vaultID: file.vaultID, key: key)
        } catch {
            // An interrupted addPepper(_:pin:): the record is rewritten under the pepper.
            guard let left = try recordLeftByAddPepper(bytes, file) else { throw error }
            record = left
            rewrite = true
        }
        if record.reconcileClocks(options.clock) || rewrite {
            do throws(VaultError) {
                try directory.writeFile(
                    VaultDirectory.recordName, try core { () throws(SecureCoreError) in try record.encode(key: key) })
            } catch {
                // status() on a read-only file system reports the re-stamped record without keeping it.
                guard persist == .ifPossible else { throw error }
            }
        }
        return record
    }

    /// Whether a re-stamped failure record must be written (an attempt) or
    /// only if the file system allows it (``status()``, which must work read-only).
    enum Persist {
        case always
        case ifPossible
    }

    /// A new PIN slot; for a TPM-bound file, a fresh value is sealed and `file`'s binding names it.
    func makePINSlot(
        pin: Password, dataKey: SecureBytes, parameters: Argon2id.Parameters, file: inout VaultFile, half: SecureBytes
    ) throws(VaultError) -> VaultFile.Slot {
        let salt = try core { () throws(SecureCoreError) in try SecureRandom.bytes(count: VaultFile.saltSize) }
        let flags =
            (options.pepper == nil ? 0 : VaultFile.slotFlagPepper) | (file.tpm == nil ? 0 : VaultFile.slotFlagTPM)
            | (file.server == nil ? 0 : VaultFile.slotFlagServer)
        var slot = VaultFile.Slot(
            type: .pin, kdf: VaultFile.kdfArgon2id, parameters: parameters, flags: flags, salt: salt,
            biometricFingerprint: [UInt8](repeating: 0, count: VaultFile.fingerprintSize), nonce: [], wrappedKey: [])
        let derived = try core { () throws(SecureCoreError) in
            try Argon2id.deriveKey(
                from: pin, salt: salt, parameters: parameters, pepper: options.pepper, limits: options.limits)
        }
        defer { derived.destroy() }
        let inner: SecureBytes
        if file.tpm != nil {
            inner = try sealForNewSlot(derived, file: &file)
        } else if file.server != nil {
            inner = try registerForNewSlot(derived, file: &file)
        } else {
            inner = try core { () throws(SecureCoreError) in try derived.copy() }
        }
        defer { inner.destroy() }
        let wrapKey = try slotKey(inner, half: half)
        defer { wrapKey.destroy() }
        let box = try core { () throws(SecureCoreError) in
            try AEAD.seal(dataKey, using: wrapKey, associatedData: file.slotAssociatedData(slot))
        }
        slot.nonce = box.nonce
        slot.wrappedKey = box.ciphertext
        return slot
    }

    /// The data key, or nil when the PIN does not open this slot.
    func openPINSlot(
        _ slot: VaultFile.Slot, pin: Password, file: VaultFile, half: SecureBytes, hold: ServerProofHold? = nil
    ) throws(VaultError) -> SecureBytes? {
        let needsPepper = slot.flags & VaultFile.slotFlagPepper != 0
        guard needsPepper == (options.pepper != nil) else { throw .pepperRequired }
        let derived = try core { () throws(SecureCoreError) in
            try Argon2id.deriveKey(
                from: pin, salt: slot.salt, parameters: slot.parameters, pepper: options.pepper, limits: options.limits)
        }
        defer { derived.destroy() }
        if slot.flags & VaultFile.slotFlagServer != 0 {
            return try openServerSlot(slot, derived: derived, file: file, half: half, hold: hold)
        }
        guard slot.flags & VaultFile.slotFlagTPM != 0 else {
            let wrapKey = try slotKey(derived, half: half)
            defer { wrapKey.destroy() }
            return try unwrap(slot, with: wrapKey, file: file)
        }
        guard let inner = try unsealForSlot(derived, file: file) else { return nil }
        defer { inner.destroy() }
        let wrapKey = try slotKey(inner, half: half)
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
    /// The PIN format the vault records.
    public var pinFormat: VaultPinFormat
    /// What the vault's key needs besides the PIN and its files.
    public var binding: Binding = .software
    /// For a TPM-bound vault, the TPM's dictionary-attack state: ``failures`` and
    /// ``maxFailures`` are then the TPM's counter and limit, shared by every DA-protected object
    /// on that TPM, and the TPM enforces them.
    public var tpmLockout: TPMLockoutState? = nil
    /// For a TPM-bound vault, the PCRs its sealed object is bound to (``TPMPCRSelection/none``: none).
    public var tpmPCRs: TPMPCRSelection? = nil
    /// For a server-bound vault, the server's URL: ``failures`` and ``maxFailures`` are then the
    /// server's counter and limit for this vault, and the server enforces them.
    public var serverLocation: String? = nil
    /// For a server-bound vault, its record's identifier at the server (32 hex digits, public): what
    /// the server's back office needs to look the vault up or unblock it.
    public var serverVaultId: String? = nil

    /// Which binding, and so who enforces the attempt limit.
    public enum Binding: String, Sendable, Codable {
        /// The vault's own failure record, on disk: our code enforces it; a copy is open to offline guessing.
        case software
        /// The TPM's dictionary-attack logic enforces it; a copy without that TPM cannot be tested.
        case tpm
        /// The server's counter enforces it; a copy without that server cannot be tested.
        case server
    }
}

/// Runs a SecureCore call and reports its error as ``VaultError/secureCore(_:)``.
func core<R>(_ body: () throws(SecureCoreError) -> R) throws(VaultError) -> R {
    do throws(SecureCoreError) {
        return try body()
    } catch {
        throw .secureCore(error)
    }
}
