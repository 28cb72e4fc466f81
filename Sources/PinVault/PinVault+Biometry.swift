import SecureCore

extension PinVault {
    /// Adds (or replaces) the biometric slot: a random key, stored behind
    /// biometry by the ``Options/authenticator``, wraps the data key. The PIN
    /// proves the user and is counted like an unlock.
    /// - Throws: ``VaultError/biometryFailed(_:)`` when the system cannot do
    ///   biometry, ``VaultError/biometryNotConfigured`` without an
    ///   authenticator, ``VaultError/biometryOptionNotSupported(_:)`` for a
    ///   ``Options/biometricConfiguration`` the authenticator cannot honour (nothing counted
    ///   or written), and the errors of `unlock(pin:_:)`.
    public func addBiometricSlot(pin: Password) throws(VaultError) {
        let authenticator = try requireAuthenticator()
        guard authenticator.systemStatus == .available else { throw .biometryFailed(authenticator.systemStatus) }
        try directory.locked { () throws(VaultError) in
            let (file, dataKey, _) = try openDataKey(pin: pin)
            defer { dataKey.destroy() }
            let half = try directory.keyFile.half(file.keyHalf)
            defer { half.destroy() }
            let slot = try makeBiometricSlot(
                fingerprint: authenticator.enrolledSetFingerprint, dataKey: dataKey, file: file, half: half,
                authenticator: authenticator)
            var updated = file
            updated.slots = file.slots.filter { $0.type != .biometric } + [slot]
            try writeVault(updated, half: half)
        }
    }

    /// The authenticator, once it has accepted ``Options/biometricConfiguration``: a setting it
    /// cannot honour is refused before anything is counted, evaluated or written, never ignored.
    func requireAuthenticator() throws(VaultError) -> any BiometricAuthenticator {
        guard let authenticator = options.authenticator else { throw .biometryNotConfigured }
        do throws(BiometryError) { try authenticator.checkConfiguration(options.biometricConfiguration) } catch {
            throw VaultError(error)
        }
        return authenticator
    }

    /// The authenticator when a biometric slot can be made now (a PIN change carries the slot
    /// over only then): available, and honouring the configuration.
    var usableAuthenticator: (any BiometricAuthenticator)? {
        guard let authenticator = try? requireAuthenticator(), authenticator.systemStatus == .available else {
            return nil
        }
        return authenticator
    }

    /// Whether the system's state lets an evaluation run: available, or locked out with the
    /// device-passcode fallback allowed (the authenticator then asks for the passcode).
    func canEvaluate(_ authenticator: any BiometricAuthenticator) -> Bool {
        let status = authenticator.systemStatus
        return status == .available
            || (status == .lockout && options.biometricConfiguration.allowFallbackToDevicePasscode)
    }

    /// A biometric slot for `dataKey`: a new random key, stored by the
    /// authenticator, bound to the key-file half, wraps it.
    func makeBiometricSlot(
        fingerprint: [UInt8], dataKey: SecureBytes, file: VaultFile, half: SecureBytes,
        authenticator: any BiometricAuthenticator
    ) throws(VaultError) -> VaultFile.Slot {
        let biometricKey = try core { () throws(SecureCoreError) in try SecureBytes.random(count: 32) }
        defer { biometricKey.destroy() }
        var slot = VaultFile.Slot(
            type: .biometric, kdf: VaultFile.kdfNone,
            parameters: .init(memoryKiB: 0, iterations: 0, parallelism: 0),
            flags: 0,
            salt: try core { () throws(SecureCoreError) in try SecureRandom.bytes(count: VaultFile.saltSize) },
            biometricFingerprint: fingerprint, nonce: [], wrappedKey: [])
        let wrapKey = try slotKey(biometricKey, half: half)
        defer { wrapKey.destroy() }
        let box = try core { () throws(SecureCoreError) in
            try AEAD.seal(dataKey, using: wrapKey, associatedData: file.slotAssociatedData(slot))
        }
        slot.nonce = box.nonce
        slot.wrappedKey = box.ciphertext
        do throws(BiometryError) {
            try authenticator.storeKey(biometricKey, account: biometricAccount(file))
        } catch {
            throw VaultError(error)
        }
        return slot
    }

    /// Removes the biometric slot and its key; the PIN keeps working.
    /// - Throws: ``VaultError/biometryNotConfigured`` when there is none, and the file errors.
    public func removeBiometricSlot() throws(VaultError) {
        let file: VaultFile = try directory.locked { () throws(VaultError) in
            var file = try loadFile()
            guard file.slots.contains(where: { $0.type == .biometric }) else { throw .biometryNotConfigured }
            file.slots.removeAll { $0.type == .biometric }
            try writeVault(file)
            return file
        }
        options.authenticator?.deleteKey(account: biometricAccount(file))
    }

    /// Opens the vault with biometry and runs `body` with the secret. A
    /// success resets the PIN failure counter; a locked vault stays locked.
    /// - Returns: what `body` returns.
    /// - Throws: ``VaultError/biometryNotConfigured``, ``VaultError/biometryInvalidated``
    ///   (enrolled set changed and the configuration invalidates the factor),
    ///   ``VaultError/biometryFailed(_:)``, ``VaultError/cancelled``, ``VaultError/locked``,
    ///   ``VaultError/biometryOptionNotSupported(_:)`` (nothing evaluated).
    public func unlockWithBiometry<R>(prompt: String, _ body: (SecureBytes) -> R) async throws(VaultError) -> R {
        let secret = try await openWithBiometry(prompt: prompt)
        defer { secret.destroy() }
        return body(secret)
    }

    /// ``unlockWithBiometry(prompt:_:)`` for a `body` that can fail.
    /// - Returns: what `body` returns.
    /// - Throws: ``VaultUnlockError/vault(_:)`` with the errors of ``unlockWithBiometry(prompt:_:)``,
    ///   or ``VaultUnlockError/body(_:)`` with what `body` threw.
    public func unlockWithBiometry<R, E: Error>(
        prompt: String, _ body: (SecureBytes) throws(E) -> R
    ) async throws(VaultUnlockError<E>) -> R {
        let secret: SecureBytes
        do throws(VaultError) { secret = try await openWithBiometry(prompt: prompt) } catch { throw .vault(error) }
        defer { secret.destroy() }
        return try VaultUnlockError<E>.body { () throws(E) in try body(secret) }
    }

    /// Whether a biometric unlock can be attempted now (system available and a slot present).
    public var canUnlockWithBiometry: Bool {
        guard let authenticator = try? requireAuthenticator(), canEvaluate(authenticator) else { return false }
        return (try? status().hasBiometricSlot) == true
    }

    func openWithBiometry(prompt: String) async throws(VaultError) -> SecureBytes {
        let authenticator = try requireAuthenticator()
        guard canEvaluate(authenticator) else { throw .biometryFailed(authenticator.systemStatus) }
        let (file, slot) = try biometricSlot()
        let key: SecureBytes
        do throws(BiometryError) {
            key = try await authenticator.evaluate(
                prompt: prompt, account: biometricAccount(file), configuration: options.biometricConfiguration)
        } catch {
            throw VaultError(error)
        }
        defer { key.destroy() }
        return try directory.locked { () throws(VaultError) in
            let current = try loadFile()
            let record = try loadRecord(current)
            if Int(record.failures) >= current.policy.maxFailures { throw .locked }
            let half = try directory.keyFile.half(current.keyHalf)
            defer { half.destroy() }
            let bound = try slotKey(key, half: half)
            defer { bound.destroy() }
            guard current.slots.contains(slot), let dataKey = try unwrap(slot, with: bound, file: current) else {
                throw .biometryNotConfigured
            }
            defer { dataKey.destroy() }
            try resetFailures(current)
            return try openPayload(current, dataKey: dataKey)
        }
    }

    /// The biometric slot, after applying `invalidateBiometricFactorAfterChange`. As in
    /// PowerAuth's SDKs, a factor that may fall back to the device passcode is not bound to the
    /// enrolled set, so `allowFallbackToDevicePasscode` turns the invalidation off.
    func biometricSlot() throws(VaultError) -> (VaultFile, VaultFile.Slot) {
        let authenticator = options.authenticator
        let configuration = options.biometricConfiguration
        let invalidate =
            configuration.invalidateBiometricFactorAfterChange && !configuration.allowFallbackToDevicePasscode
        return try directory.locked { () throws(VaultError) in
            var file = try loadFile()
            guard let slot = file.slots.first(where: { $0.type == .biometric }) else { throw .biometryNotConfigured }
            if invalidate, let authenticator, slot.biometricFingerprint != authenticator.enrolledSetFingerprint {
                file.slots.removeAll { $0.type == .biometric }
                try writeVault(file)
                authenticator.deleteKey(account: biometricAccount(file))
                throw .biometryInvalidated
            }
            return (file, slot)
        }
    }
}
