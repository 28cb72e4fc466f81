import SecureCore

/// The V4 key tree of one activation, derived from `KEY_ACTIVATION_SECRET` with the labels of
/// ``V4KeyLabel`` (`powerauth-v4.md` §3; every key 32 bytes, empty diversifier):
///
/// ```
/// KDK_AUTHENTICATION_CODE = KDF(KEY_ACTIVATION_SECRET, "auth")
///   possession / knowledge / biometry = KDF(KDK_AUTHENTICATION_CODE, "auth/possession" | "auth/knowledge" | "auth/biometry")
/// KDK_VAULT = KDF(KEY_ACTIVATION_SECRET, "vault")
///   KEK_DEVICE_PRIVATE, KDK_APP_VAULT_KNOWLEDGE, KDK_APP_VAULT_2FA = KDF(KDK_VAULT, "vault/…")
/// KDK_UTILITY = KDF(KEY_ACTIVATION_SECRET, "util")
///   KEY_MAC_CTR_DATA, KEY_MAC_STATUS, KEY_MAC_GET_ACT_TEMP_KEY, KEY_MAC_PERSONALIZED_DATA,
///   KEY_E2EE_SHARED_INFO2 = KDF(KDK_UTILITY, "util/mac/…" | "util/key-e2ee-sh2")
/// ```
///
/// The KDF itself is verified by upstream's `v4-kdf.json`; the tree (which parent, which label)
/// follows the specification text only: no upstream vector derives a whole tree. All keys live
/// in secure memory; the description is redacted.
public struct V4ActivationKeys: Sendable {
    /// `KEY_AUTHENTICATION_CODE_POSSESSION`.
    public let possession: SecureBytes
    /// The initial `KEY_AUTHENTICATION_CODE_KNOWLEDGE` (later replaced by a password change).
    public let knowledge: SecureBytes
    /// The initial `KEY_AUTHENTICATION_CODE_BIOMETRY` (later replaced by a biometry addition).
    public let biometry: SecureBytes
    /// `KEK_DEVICE_PRIVATE`.
    public let devicePrivateKEK: SecureBytes
    /// `KDK_APP_VAULT_KNOWLEDGE`.
    public let appVaultKnowledge: SecureBytes
    /// `KDK_APP_VAULT_2FA`.
    public let appVault2FA: SecureBytes
    /// `KEY_MAC_CTR_DATA` (the status blob's counter hash).
    public let counterDataMAC: SecureBytes
    /// `KEY_MAC_STATUS` (the status blob's MAC).
    public let statusMAC: SecureBytes
    /// `KEY_MAC_GET_ACT_TEMP_KEY` (activation-scope temporary-key request JWTs).
    public let activationTemporaryKeyMAC: SecureBytes
    /// `KEY_MAC_PERSONALIZED_DATA`.
    public let personalizedDataMAC: SecureBytes
    /// `KEY_E2EE_SHARED_INFO2` (activation-scope end-to-end encryption).
    public let sharedInfo2: SecureBytes
    /// `true` for keys lent by their owner (``lent()``): ``destroy()`` leaves them to the owner.
    public private(set) var isLent = false

    /// Derives the whole tree.
    /// - Parameter activationSecret: `KEY_ACTIVATION_SECRET` (32 bytes), in secure memory.
    /// - Throws: ``ProtocolError/invalidLength(field:expected:actual:)``, ``ProtocolError/core(_:)``.
    public init(activationSecret: SecureBytes) throws(ProtocolError) {
        guard activationSecret.count == V4SharedSecret.secretByteCount else {
            throw .invalidLength(
                field: "activationSecret", expected: V4SharedSecret.secretByteCount, actual: activationSecret.count)
        }
        let auth = try V4KDF.derive(activationSecret, label: .authentication)
        defer { auth.destroy() }
        let vault = try V4KDF.derive(activationSecret, label: .vault)
        defer { vault.destroy() }
        let utility = try V4KDF.derive(activationSecret, label: .utility)
        defer { utility.destroy() }
        possession = try V4KDF.derive(auth, label: .possession)
        knowledge = try V4KDF.derive(auth, label: .knowledge)
        biometry = try V4KDF.derive(auth, label: .biometry)
        devicePrivateKEK = try V4KDF.derive(vault, label: .vaultDevicePrivateKEK)
        appVaultKnowledge = try V4KDF.derive(vault, label: .vaultAppKnowledge)
        appVault2FA = try V4KDF.derive(vault, label: .vaultApp2FA)
        counterDataMAC = try V4KDF.derive(utility, label: .counterDataMAC)
        statusMAC = try V4KDF.derive(utility, label: .statusMAC)
        activationTemporaryKeyMAC = try V4KDF.derive(utility, label: .activationTemporaryKeyMAC)
        personalizedDataMAC = try V4KDF.derive(utility, label: .personalizedDataMAC)
        sharedInfo2 = try V4KDF.derive(utility, label: .sharedInfo2)
    }

    /// The vault key a `vault/unlock` releases, by its upstream name.
    /// - Parameter identifier: `KEK_DEVICE_PRIVATE`, `KDK_APP_VAULT_KNOWLEDGE` or `KDK_APP_VAULT_2FA`.
    /// - Returns: the key, or `nil` for any other name.
    public func vaultKey(named identifier: String) -> SecureBytes? {
        switch identifier {
        case "KEK_DEVICE_PRIVATE": devicePrivateKEK
        case "KDK_APP_VAULT_KNOWLEDGE": appVaultKnowledge
        case "KDK_APP_VAULT_2FA": appVault2FA
        default: nil
        }
    }

    /// `KEY_MAC_GET_APP_TEMP_KEY = KDF(APP_SECRET, "util/mac/get-app-temp-key")`, the key of
    /// application-scope temporary-key request JWTs.
    /// - Parameter applicationSecret: Base64 of the 16-byte application secret (its bytes are the key).
    /// - Returns: the 32-byte key, in secure memory.
    /// - Throws: ``ProtocolError/malformedBase64(field:)``, ``ProtocolError/invalidLength(field:expected:actual:)``,
    ///   ``ProtocolError/core(_:)``.
    public static func applicationTemporaryKeyMAC(applicationSecret: String) throws(ProtocolError) -> SecureBytes {
        let bytes = try Base64.decode(
            applicationSecret, field: "applicationSecret", count: ProtocolConstants.applicationKeyByteCount)
        let key = try lift { () throws(SecureCoreError) -> SecureBytes in
            let key = try SecureBytes(count: bytes.count)
            key.withUnsafeMutableBytes { $0.copyBytes(from: bytes) }
            return key
        }
        defer { key.destroy() }
        return try V4KDF.derive(key, label: .applicationTemporaryKeyMAC)
    }

    /// Every key, in the order of the stored properties.
    private var all: [SecureBytes] {
        [
            possession, knowledge, biometry, devicePrivateKEK, appVaultKnowledge, appVault2FA, counterDataMAC,
            statusMAC, activationTemporaryKeyMAC, personalizedDataMAC, sharedInfo2,
        ]
    }

    private init(keys: [SecureBytes]) {
        (possession, knowledge, biometry, devicePrivateKEK) = (keys[0], keys[1], keys[2], keys[3])
        (appVaultKnowledge, appVault2FA, counterDataMAC, statusMAC) = (keys[4], keys[5], keys[6], keys[7])
        (activationTemporaryKeyMAC, personalizedDataMAC, sharedInfo2) = (keys[8], keys[9], keys[10])
    }

    /// Wipes every key now; does nothing for lent keys (``lent()``), which are their owner's.
    public func destroy() {
        guard !isLent else { return }
        for key in all { key.destroy() }
    }

    /// The same keys, lent out: no copy is made, and ``destroy()`` on the result does nothing
    /// (as `FactorKeys.lent()`: an owner that lends drops its keys rather than destroying them,
    /// and each key wipes itself when its last holder lets go of it).
    /// - Returns: the lent keys.
    public func lent() -> V4ActivationKeys {
        var keys = self
        keys.isLent = true
        return keys
    }

    /// The keys copied into secure memory that may outlive the current request scope (a cache
    /// entry) when `lasting`; the copy is the caller's to destroy.
    /// - Parameter lasting: `true` to keep the copy out of the scratch pool.
    /// - Returns: the copy.
    /// - Throws: `SecureCoreError.outOfMemory`; `SecureCoreError.destroyed` once these were destroyed.
    package func copy(lasting: Bool) throws(SecureCoreError) -> V4ActivationKeys {
        var copies: [SecureBytes] = []
        for key in all { copies.append(try key.copy(lasting: lasting)) }
        return V4ActivationKeys(keys: copies)
    }
}

extension V4ActivationKeys: CustomStringConvertible, CustomDebugStringConvertible {
    /// `V4ActivationKeys(redacted)`.
    public var description: String { "V4ActivationKeys(redacted)" }
    /// Same as ``description``.
    public var debugDescription: String { description }
}
