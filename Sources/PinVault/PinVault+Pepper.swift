import DurableStorage
import SecureCore

/// A pepper added to a vault that has none: how a software vault's PIN slot moves under a secret
/// kept outside its directory (a desktop keyring, a hardware keystore), with the same crash
/// safety as a PIN change.
extension PinVault {
    /// The vault's identifier, 32 lowercase hex digits: public, stable for the vault's life, and
    /// different for every vault (a keyring item that holds its pepper is named by it). No PIN and
    /// no pepper are needed; the file is authenticated under its key file first.
    /// - Returns: the identifier.
    /// - Throws: ``VaultError/notFound`` and the file errors.
    public func identifier() throws(VaultError) -> String {
        try directory.locked { () throws(VaultError) in
            let file = try loadFile()
            return file.vaultID.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        }
    }

    /// Whether the vault's PIN slot needs a pepper (``Options/pepper``); no PIN and no pepper
    /// are needed to ask.
    /// - Returns: `true` when it does.
    /// - Throws: ``VaultError/notFound`` and the file errors.
    public func requiresPepper() throws(VaultError) -> Bool {
        try directory.locked { () throws(VaultError) in
            let file = try loadFile()
            return file.slots.contains { $0.type == .pin && $0.flags & VaultFile.slotFlagPepper != 0 }
        }
    }

    /// Puts the vault's PIN slot under `pepper`: from then on it opens only with the PIN *and*
    /// that pepper (``Options/pepper``), and its failure record is authenticated under the pepper
    /// too. The vault must have no pepper yet and be opened with options that give none.
    ///
    /// It is a PIN change to the same PIN, under the other key half, and as crash-safe: the PIN is
    /// checked (counted like an unlock), a new file with a new data key and a peppered slot bound
    /// to the renewed half replaces the old one and is verified from disk, the failure record is
    /// rewritten under the peppered key, and only then is the old half destroyed in place, which
    /// makes every copy of the unpeppered file useless. A crash leaves a vault that opens without
    /// the pepper (nothing changed yet) or with it. In the one state between the new file and the
    /// new record, a record that still authenticates under the unpeppered key is accepted from a
    /// reader that has the pepper, for as long as the old half is not destroyed, and rewritten
    /// under the pepper (``Options/pepper`` holders could write one anyway; a reader without it
    /// cannot open the peppered slot).
    /// - Parameters:
    ///   - pepper: 32 random bytes kept outside the directory.
    ///   - pin: the vault's PIN (a wrong one is counted).
    /// - Throws: ``VaultError/pepperRequired`` when the vault has a pepper already (or these
    ///   options give one), ``VaultError/pepperNotSupported(reason:)`` for a TPM- or server-bound
    ///   vault or a pepper that is not 32 bytes, and what ``changePIN(old:new:parameters:)`` throws.
    public func addPepper(_ pepper: SecureBytes, pin: Password) throws(VaultError) {
        guard options.pepper == nil else { throw .pepperRequired }
        guard pepper.count == 32 else { throw .pepperNotSupported(reason: "a pepper is 32 bytes") }
        var pepperedOptions = options
        pepperedOptions.pepper = pepper
        let peppered = PinVault(directory: directory.path, options: pepperedOptions)
        try directory.locked { () throws(VaultError) in
            let current = try loadFile()
            guard current.tpm == nil, current.server == nil else {
                throw .pepperNotSupported(
                    reason: "a TPM- or server-bound vault keeps its guess counter outside the directory already")
            }
            let (file, oldDataKey, opened) = try openDataKey(pin: pin)
            defer { oldDataKey.destroy() }
            let secret = try openPayload(file, dataKey: oldDataKey)
            defer { secret.destroy() }
            let newHalfIndex: UInt8 = 1 - file.keyHalf
            let half = try directory.keyFile.renewHalf(newHalfIndex)
            defer { half.destroy() }
            let dataKey = try core { () throws(SecureCoreError) in try SecureBytes.random(count: 32) }
            defer { dataKey.destroy() }
            var updated = file
            updated.keyHalf = newHalfIndex
            let newSlot = try peppered.makePINSlot(
                pin: pin, dataKey: dataKey, parameters: opened.parameters, file: &updated, half: half)
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
                    // In place but not durable: put the old file back (both halves stay).
                    let oldHalf = try directory.keyFile.half(file.keyHalf)
                    defer { oldHalf.destroy() }
                    try? writeVault(file, half: oldHalf)
                }
                throw error.error
            }
            options.observer?(.pinChangeNewSlotWritten)
            // Verify from disk, with the pepper, before anything else changes.
            let reread = try loadFile()
            let check =
                reread == updated ? try peppered.openPINSlot(newSlot, pin: pin, file: reread, half: half) : nil
            defer { check?.destroy() }
            let payload = try check.map { (key) throws(VaultError) in try openPayload(reread, dataKey: key) }
            defer { payload?.destroy() }
            guard let payload, try core({ () throws(SecureCoreError) in try payload.isEqual(to: secret) }) else {
                let oldHalf = try directory.keyFile.half(file.keyHalf)
                defer { oldHalf.destroy() }
                try writeVault(file, half: oldHalf)
                throw .damaged(reason: "the peppered slot did not verify; the vault keeps no pepper")
            }
            try peppered.writeRecord(FailureRecord.fresh(vaultID: updated.vaultID, clock: options.clock), updated)
            do throws(VaultError) { try directory.keyFile.destroyHalf(file.keyHalf) } catch {
                if case .io(let operation, let code) = error {
                    throw .io(
                        operation: "\(operation) (the pepper was added; the old key half is not destroyed)",
                        errno: code)
                }
                throw error
            }
            if !updated.slots.contains(where: { $0.type == .biometric }),
                file.slots.contains(where: { $0.type == .biometric })
            {
                options.authenticator?.deleteKey(account: biometricAccount(file))
            }
            options.observer?(.pinChangeOldSlotRemoved)
        }
    }

    /// The record an interrupted ``addPepper(_:pin:)`` left: the file is peppered, the record
    /// still authenticates under the unpeppered key, and the old key half is not destroyed yet.
    /// Only a reader with a pepper asks; nil when this is not that state.
    func recordLeftByAddPepper(_ bytes: [UInt8], _ file: VaultFile) throws(VaultError) -> FailureRecord? {
        guard options.pepper != nil,
            file.slots.contains(where: { $0.type == .pin && $0.flags & VaultFile.slotFlagPepper != 0 }),
            !(try directory.keyFile.isDestroyed(1 - file.keyHalf))
        else { return nil }
        let base = try directory.keyFile.recordKey()
        defer { base.destroy() }
        let key = try core { () throws(SecureCoreError) in
            try HMACSHA256.deriveKey(label: KeyFile.recordLabel, from: [base])
        }
        defer { key.destroy() }
        return try? FailureRecord.decode(bytes, vaultID: file.vaultID, key: key)
    }
}
