import Biometry
import Foundation
import PowerAuthProtocol
import SecureCore

extension ActivationService {
    // MARK: - PIN change

    /// Step 1 of the PIN change: checks the current PIN with the server. A
    /// wrong PIN is a failed attempt like any other; the password is then
    /// cleared. On success the returned data keeps the password (do not
    /// modify it any more) until ``finishPasswordChange(newPassword:data:)``
    /// or ``PasswordChangeData/secureClear()``.
    /// - Parameter currentPassword: the current PIN as the user typed it.
    /// - Returns: the opaque change data.
    /// - Throws: ``ActivationError/authentication`` for a wrong PIN, the network errors.
    public func beginPasswordChange(currentPassword: sending MutablePassword) async throws(ActivationError)
        -> PasswordChangeData
    {
        guard let activationId = record?.activationId ?? v4?.state.activationId else { throw .missingActivation }
        let immutable = try coreStep { () throws(SecureCoreError) in try currentPassword.copyToImmutable() }
        defer { immutable.destroy() }
        do {
            if isV4 {
                try await v4Send(
                    V4API.validate, body: Array("{}".utf8), authentication: .possessionWithPassword(immutable))
            } else {
                _ = try await send(
                    ActivationAPI.validateSignature, ValidateSignatureRequest(reason: "PASSWORD_CHANGE"),
                    authentication: .possessionWithPassword(immutable))
            }
        } catch {
            try? currentPassword.clear()
            throw error
        }
        return PasswordChangeData(password: currentPassword, activationId: activationId)
    }

    /// Step 2 of the PIN change: wraps the knowledge key under the new PIN and
    /// stores it atomically. The change data is wiped whatever the outcome.
    /// - Parameters:
    ///   - newPassword: the new PIN (already confirmed by the user).
    ///   - data: the data from ``beginPasswordChange(currentPassword:)``.
    /// - Throws: ``ActivationError/invalidActivationState(reason:)`` for cleared or
    ///   foreign data, ``ActivationError/protocolError(_:)`` with `PowerAuthProtocol.ProtocolError.emptyPIN`
    ///   for an empty new PIN, ``ActivationError/storage(operation:errno:)``.
    public func finishPasswordChange(newPassword: Password, data: PasswordChangeData) async throws(ActivationError) {
        if isV4 { return try await v4FinishPasswordChange(newPassword: newPassword, data: data) }
        defer { data.secureClear() }
        guard let current = record else { throw .missingActivation }
        guard data.activationId == current.activationId else {
            throw .invalidActivationState(reason: "the change data belongs to another activation")
        }
        guard let old = try data.currentPassword() else {
            throw .invalidActivationState(reason: "the change data was cleared")
        }
        defer { old.destroy() }
        guard newPassword.length > 0 else { throw .protocolError(.emptyPIN) }
        let parameters = configuration.knowledgeKeyParameters
        let crypto = crypto
        try mutateRecord { (r) throws(ActivationError) in
            let wrapped = r.knowledgeKey
            r.knowledgeKey = try protocolStep { () throws(ProtocolError) in
                let key = try crypto.unwrapKnowledgeKey(wrapped, pin: old)
                defer { key.destroy() }
                return try crypto.wrapKnowledgeKey(key, pin: newPassword, parameters: parameters)
            }
        }
    }

    // MARK: - Biometry

    /// Adds the biometry factor: the server checks the PIN (`vault/unlock`,
    /// counted like any attempt) and returns the vault key, which opens the
    /// biometry key sealed at activation; that key is stored behind biometry.
    /// - Parameter password: the PIN.
    /// - Throws: ``ActivationError/biometryNotAvailable(_:)``, ``ActivationError/authentication``,
    ///   the network errors, ``ActivationError/invalidResponse(reason:)``.
    public func addBiometryFactor(password: Password) async throws(ActivationError) {
        if isV4 { return try await v4AddBiometry(password: password) }
        guard let authenticator else { throw .biometryNotAvailable(.notSupported) }
        guard authenticator.systemStatus == .available else { throw .biometryNotAvailable(authenticator.systemStatus) }
        guard record != nil else { throw .missingActivation }
        let request = try securePlaintext(VaultUnlockRequest(reason: ActivationAPI.addBiometryReason))
        defer { request.destroy() }
        let answer = try await sendEncrypted(
            ActivationAPI.unlockVault, plaintext: request, authentication: .possessionWithPassword(password))
        let response = try decodePlaintext(answer, VaultUnlockResponse.self, path: ActivationAPI.unlockVault.path)
        guard let current = record, let keys else { throw .missingActivation }
        let binding = Array(current.activationId.utf8)
        guard let encrypted = Base64.decode(response.encryptedVaultEncryptionKey),
            let vaultKey = try? crypto.decryptVaultKey(encrypted, transportKey: keys.transport)
        else { throw .invalidResponse(reason: "vault/unlock: the vault key does not open") }
        defer { vaultKey.destroy() }
        let biometrySeal = try protocolStep { () throws(ProtocolError) in
            try crypto.aeadKey(from: vaultKey, index: ProtocolConstants.biometrySealKeyIndex)
        }
        defer { biometrySeal.destroy() }
        guard let biometryKey = try? AEAD.open(current.sealedBiometryKey, using: biometrySeal, associatedData: binding)
        else { throw .invalidActivationData(reason: "the sealed biometry key does not open") }
        defer { biometryKey.destroy() }
        try mapBiometry { () throws(BiometryError) in
            try authenticator.storeKey(biometryKey, account: configuration.biometryKeyAccount)
        }
        let enrolled = Base64.encode(authenticator.enrolledSetFingerprint)
        do {
            try mutateRecord { (r) throws(ActivationError) in
                r.biometryEnabled = true
                r.enrolledSetFingerprint = enrolled
            }
        } catch {
            authenticator.deleteKey(account: configuration.biometryKeyAccount)
            throw error
        }
    }

    /// Removes the biometry factor on this device: the key and the flag. As in
    /// PowerAuth V3, the server is not told (it has no per-factor switch); without
    /// the key no biometry code can be computed here any more.
    /// - Throws: ``ActivationError/biometryNotConfigured``, storage errors.
    public func removeBiometryFactor() async throws(ActivationError) {
        if isV4 { return try await v4RemoveBiometry() }
        guard let current = record else { throw .missingActivation }
        guard current.biometryEnabled else { throw .biometryNotConfigured }
        try mutateRecord { (r) throws(ActivationError) in
            r.biometryEnabled = false
            r.enrolledSetFingerprint = nil
        }
        authenticator?.deleteKey(account: configuration.biometryKeyAccount)
    }

    /// Shows the biometric prompt now and returns possession+biometry
    /// credentials for the codes of one interaction. They expire after
    /// `validFor`; ``ActivationAuthentication/destroy()`` them when done.
    /// - Parameters:
    ///   - prompt: the prompt text.
    ///   - validFor: the lifetime, default 60 s.
    /// - Returns: the credentials.
    /// - Throws: ``ActivationError/biometryNotConfigured``, ``ActivationError/biometryInvalidated``,
    ///   ``ActivationError/biometryNotAvailable(_:)``, ``ActivationError/biometryFailed``,
    ///   ``ActivationError/cancelled``.
    public func authenticateUsingBiometry(prompt: String, validFor: Duration = .seconds(60))
        async throws(ActivationError) -> ActivationAuthentication
    {
        let key = try await (isV4 ? v4BiometryKey(prompt: prompt) : biometryKey(prompt: prompt))
        let seconds = Double(validFor.components.seconds) + Double(validFor.components.attoseconds) / 1e18
        return .prefetchedBiometry(key: key, validUntil: clock.now().addingTimeInterval(seconds))
    }

    /// Releases the biometry key after a prompt, enforcing the invalidation rule.
    func biometryKey(prompt: String) async throws(ActivationError) -> SecureBytes {
        guard let authenticator else { throw .biometryNotAvailable(.notSupported) }
        guard let current = record else { throw .missingActivation }
        guard current.biometryEnabled else { throw .biometryNotConfigured }
        let biometric = configuration.biometricConfiguration
        if biometric.invalidateBiometricFactorAfterChange && !biometric.allowFallbackToDevicePasscode,
            current.enrolledSetFingerprint != Base64.encode(authenticator.enrolledSetFingerprint)
        {
            authenticator.deleteKey(account: configuration.biometryKeyAccount)
            try mutateRecord { (r) throws(ActivationError) in
                r.biometryEnabled = false
                r.enrolledSetFingerprint = nil
            }
            throw .biometryInvalidated
        }
        do throws(BiometryError) {
            return try await authenticator.evaluate(
                prompt: prompt, account: configuration.biometryKeyAccount, configuration: biometric)
        } catch {
            throw ActivationError(biometry: error)
        }
    }
}
