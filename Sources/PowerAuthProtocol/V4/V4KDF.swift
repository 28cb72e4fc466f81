import SecureCore

/// The PowerAuth V4 key derivations, all KMAC-256 (NIST SP 800-185):
/// `KDF(key, label, custom, L) = KMAC256(key, custom, L, "PA4KDF:" ‖ label)` and
/// the password KDF `KMAC256(UTF-8 of password, salt, L, "PA4PBKDF")`.
///
/// Keys go in and come out in secure memory; labels and diversifiers are public.
/// Verified by upstream's `v4-kdf.json` and `pbkdf-v4.json` (100 cases each).
public enum V4KDF {
    /// The derived key size every protocol key uses.
    public static let defaultByteCount = 32
    /// The accepted derived key sizes.
    public static let byteCountRange = KMAC256.outputByteCountRange
    /// The shortest password salt.
    public static let minimumSaltByteCount = KMAC256.passwordSaltMinimum

    /// `KDF(key, label, custom, count)`.
    /// - Parameters:
    ///   - key: the parent key, 4 ... 512 bytes, in secure memory.
    ///   - label: the key's label (see ``V4KeyLabel``), 1 ... 128 bytes of UTF-8.
    ///   - custom: the public diversifier; empty for every protocol key except the AEAD's.
    ///   - count: the derived key's size, 1 ... 64 (default 32).
    /// - Returns: the derived key, in secure memory.
    /// - Throws: ``ProtocolError/invalidLength(field:expected:actual:)`` (a size),
    ///   ``ProtocolError/core(_:)`` (a destroyed key, memory).
    public static func derive(
        _ key: SecureBytes, label: String, custom: [UInt8] = [], count: Int = defaultByteCount
    ) throws(ProtocolError) -> SecureBytes {
        let labelBytes = Array(label.utf8)
        guard byteCountRange.contains(count) else {
            throw .invalidLength(field: "count", expected: defaultByteCount, actual: count)
        }
        guard (1...KMAC256.labelMaximum).contains(labelBytes.count) else {
            throw .invalidLength(field: "label", expected: KMAC256.labelMaximum, actual: labelBytes.count)
        }
        guard KMAC256.keyByteCountRange.contains(key.count) else {
            throw .invalidLength(field: "key", expected: defaultByteCount, actual: key.count)
        }
        return try lift { () throws(SecureCoreError) in
            try KMAC256.deriveKey(key, label: labelBytes, data: custom, count: count)
        }
    }

    /// ``derive(_:label:custom:count:)`` with one of the protocol's labels.
    /// - Parameters:
    ///   - key: the parent key.
    ///   - label: the protocol label.
    ///   - custom: the diversifier (empty by default).
    /// - Returns: the 32-byte derived key, in secure memory.
    /// - Throws: as ``derive(_:label:custom:count:)``.
    public static func derive(_ key: SecureBytes, label: V4KeyLabel, custom: [UInt8] = []) throws(ProtocolError)
        -> SecureBytes
    {
        try derive(key, label: label.rawValue, custom: custom)
    }

    /// The password KDF: `KMAC256(UTF-8 of password, salt, count, "PA4PBKDF")`. It has no work
    /// factor: guessing is limited by the server's attempt counter, not by this function.
    /// - Parameters:
    ///   - password: the PIN or password; its UTF-8 must have 4 ... 512 bytes (OpenSSL 3.0's
    ///     KMAC key limits: a PIN needs at least four digits).
    ///   - salt: at least 32 random bytes.
    ///   - count: the key's size, 1 ... 64 (default 32).
    /// - Returns: the key, in secure memory.
    /// - Throws: ``ProtocolError/emptyPIN``, ``ProtocolError/invalidLength(field:expected:actual:)``
    ///   (salt, size, a password too short or too long), ``ProtocolError/core(_:)``.
    public static func derivePassword(_ password: Password, salt: [UInt8], count: Int = defaultByteCount)
        throws(ProtocolError) -> SecureBytes
    {
        guard password.length > 0 else { throw .emptyPIN }
        guard byteCountRange.contains(count) else {
            throw .invalidLength(field: "count", expected: defaultByteCount, actual: count)
        }
        guard salt.count >= minimumSaltByteCount else {
            throw .invalidLength(field: "salt", expected: minimumSaltByteCount, actual: salt.count)
        }
        do throws(SecureCoreError) {
            return try KMAC256.derivePasswordKey(password, salt: salt, count: count)
        } catch .invalidSize(let length) {
            throw .invalidLength(field: "password", expected: KMAC256.keyByteCountRange.lowerBound, actual: length)
        } catch {
            throw .core(error)
        }
    }
}

/// The key labels of the V4 key tree (the `label` of ``V4KDF``), exactly as upstream spells them.
public enum V4KeyLabel: String, Sendable, CaseIterable {
    /// `KDK_AUTHENTICATION_CODE` from `KEY_ACTIVATION_SECRET`.
    case authentication = "auth"
    /// The possession factor key from `KDK_AUTHENTICATION_CODE`.
    case possession = "auth/possession"
    /// The initial knowledge factor key from `KDK_AUTHENTICATION_CODE`.
    case knowledge = "auth/knowledge"
    /// The initial biometry factor key from `KDK_AUTHENTICATION_CODE`.
    case biometry = "auth/biometry"
    /// `KDK_VAULT` from `KEY_ACTIVATION_SECRET`.
    case vault = "vault"
    /// `KEK_DEVICE_PRIVATE` from `KDK_VAULT`.
    case vaultDevicePrivateKEK = "vault/kek-device-private"
    /// `KDK_APP_VAULT_KNOWLEDGE` from `KDK_VAULT`.
    case vaultAppKnowledge = "vault/kdk-app-vault-knowledge"
    /// `KDK_APP_VAULT_2FA` from `KDK_VAULT`.
    case vaultApp2FA = "vault/kdk-app-vault-2fa"
    /// `KDK_UTILITY` from `KEY_ACTIVATION_SECRET`.
    case utility = "util"
    /// `KEY_MAC_CTR_DATA` from `KDK_UTILITY`.
    case counterDataMAC = "util/mac/ctr-data"
    /// `KEY_MAC_STATUS` from `KDK_UTILITY`.
    case statusMAC = "util/mac/status"
    /// `KEY_MAC_GET_ACT_TEMP_KEY` from `KDK_UTILITY`.
    case activationTemporaryKeyMAC = "util/mac/get-act-temp-key"
    /// `KEY_MAC_PERSONALIZED_DATA` from `KDK_UTILITY`.
    case personalizedDataMAC = "util/mac/personalized-data"
    /// `KEY_E2EE_SHARED_INFO2` from `KDK_UTILITY`.
    case sharedInfo2 = "util/key-e2ee-sh2"
    /// `KEY_MAC_GET_APP_TEMP_KEY` from the 16 raw bytes of `APP_SECRET`.
    case applicationTemporaryKeyMAC = "util/mac/get-app-temp-key"
    /// The AEAD's encryption key (diversifier: the key context).
    case aeadEncryption = "aead/enc"
    /// The AEAD's MAC key (diversifier: the key context).
    case aeadMAC = "aead/mac"
}
