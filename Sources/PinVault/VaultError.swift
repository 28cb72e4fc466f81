import SecureCore

/// Everything that can go wrong with a vault. Messages never contain a PIN
/// or a secret; they say what is wrong with the file or the attempt.
public enum VaultError: Error, Equatable, Sendable {
    /// The PIN did not open the vault. The failure was counted before the
    /// key derivation ran. `remainingAttempts` is how many more failures the
    /// policy allows before locking or wiping (nil when unbounded).
    case wrongPIN(remainingAttempts: Int?)
    /// Too many recent failures: try again after this many seconds. Nothing
    /// was counted and no key derivation ran.
    case throttled(retryAfterSeconds: UInt64)
    /// The hard limit was reached: only ``PinVault/destroy()`` and enrolling
    /// anew help.
    case locked
    /// The failure limit of a wipe policy was reached and the vault was destroyed.
    case wiped
    /// No vault in this directory.
    case notFound
    /// A vault already exists in this directory.
    case alreadyExists
    /// The file is not a SecurePIN vault (wrong magic).
    case notAVault
    /// The file was written by a newer format version this library does not know.
    case newerFormat(version: Int)
    /// The file has an older format version that this library no longer reads
    /// (version 1 had no key file; see `docs/vault-format.md`). Destroy it and
    /// create the vault anew.
    case unsupportedFormat(version: Int)
    /// The directory cannot hold a new vault: it is not empty, not owned by
    /// this user, not a directory, or open to the group or others (its mode
    /// is never changed, since the vault did not create it); `reason` says which.
    case unsuitableDirectory(reason: String)
    /// The file is damaged, truncated or was edited; `reason` says where.
    case damaged(reason: String)
    /// A throttle policy or lockout schedule that no vault can record (a limit out of range,
    /// a malformed or empty schedule, a delay out of range); `reason` says which. Refused before
    /// anything is read, written or derived.
    case invalidPolicy(reason: String)
    /// The file's key-derivation parameters are below the floor this reader
    /// accepts (a downgrade).
    case parametersBelowFloor
    /// The file's key-derivation parameters are above the ceiling (a denial of service).
    case parametersAboveCeiling
    /// The PIN does not fit the PIN format the vault records (too short, too
    /// long, or a character the format does not allow). Nothing was counted
    /// and no key derivation ran.
    case pinOutsideFormat(VaultPinFormat)
    /// The vault was created with a pepper and none (or another one) was given.
    case pepperRequired
    /// ``PinVault/addPepper(_:pin:)`` cannot put this vault under a pepper (a TPM- or
    /// server-bound vault, or a pepper of the wrong size); nothing was changed.
    case pepperNotSupported(reason: String)
    /// The secret is empty or larger than ``PinVault/maximumSecretByteCount``.
    case invalidSecretSize(Int)
    /// The vault has no biometric slot, or it was invalidated by a change of
    /// the enrolled biometry.
    case biometryNotConfigured
    /// The enrolled biometry changed and the configuration invalidates the
    /// biometric factor after a change: the biometric slot was removed.
    case biometryInvalidated
    /// Biometric evaluation failed or is not possible; see the status.
    case biometryFailed(BiometricSystemStatus)
    /// The ``PinVault/Options/authenticator`` cannot honour this setting of
    /// ``PinVault/Options/biometricConfiguration``; nothing was counted, evaluated or written.
    case biometryOptionNotSupported(BiometricOption)
    /// The user cancelled (biometric prompt or PIN entry).
    case cancelled
    /// The file system refused an operation (`errno`), with the step that failed.
    case io(operation: String, errno: Int32)
    /// A SecureCore operation failed.
    case secureCore(SecureCoreError)
    /// The vault is bound to a TPM and ``PinVault/Options/tpm`` is nil. Nothing was counted.
    case tpmRequired
    /// The vault's TPM cannot be reached (no device, nothing at the TCTI). Nothing was counted.
    case tpmUnavailable(reason: String)
    /// The TPM reached is not the one the vault was sealed to (another machine, or this TPM
    /// cleared): the vault cannot be opened here with any PIN. Nothing was counted.
    case tpmMismatch
    /// The TPM is in dictionary-attack lockout and refuses every guess, the right PIN included;
    /// it forgets one failure every `retryAfterSeconds` (0 when it never does). Nothing was counted.
    case tpmLockedOut(retryAfterSeconds: UInt64)
    /// The vault's sealed object is bound to `pcrs` (``VaultBinding/tpm(_:pcrs:)``) and they no
    /// longer hold the values they held when it was sealed: another OS or boot chain, a changed
    /// Secure Boot state, or a firmware or boot-loader update. The TPM refused before checking the
    /// PIN: nothing was counted, and the right PIN cannot open it until the PCRs read as before.
    case tpmPCRsChanged(pcrs: TPMPCRSelection)
    /// The TPM's lockout hierarchy has the empty authorisation (a fresh TPM, swtpm): anyone who
    /// can send it commands could run `TPM2_DictionaryAttackLockReset` whenever the vault locks
    /// and guess on, so a TPM-bound vault is not created. Set one first (`tpm2_changeauth -c
    /// lockout`, kept by the administrator), or let the vault set a random one
    /// (``PinVault/Options/tpmNewLockoutAuthorization``). Nothing was written.
    case tpmLockoutAuthorizationNotSet
    /// Another TPM failure.
    case tpmFailed(VaultTPMError)
    /// The vault is bound to a server and ``PinVault/Options/serverConnector`` is nil. Nothing was counted.
    case serverRequired
    /// The vault's server cannot be reached or did not answer. Nothing was counted locally, and a
    /// copy of the vault cannot be tested without that server.
    case network(reason: String)
    /// The vault's server could not be trusted over TLS (an untrusted, expired or misnamed
    /// certificate, a pinned key that does not match). Nothing was counted, here or there.
    case serverTLS(reason: String)
    /// The server blocks the vault: its attempt counter reached the maximum. The right PIN is
    /// refused too; only the server's operator can lift it.
    case serverBlocked
    /// The server refused a request or answered something invalid.
    case serverRefused(reason: String)
}

extension VaultError {
    /// The vault's view of an authenticator's failure.
    /// - Parameter error: what the authenticator reported.
    public init(_ error: BiometryError) {
        switch error {
        case .cancelled: self = .cancelled
        case .failed(let status): self = .biometryFailed(status)
        case .notConfigured: self = .biometryNotConfigured
        case .secureCore(let core): self = .secureCore(core)
        case .unsupportedOption(let option): self = .biometryOptionNotSupported(option)
        }
    }
}

/// How an unlock whose closure can fail ended: the vault's own failure, or
/// the closure's. Each arrives with its own type, so a caller can handle both
/// exhaustively.
public enum VaultUnlockError<BodyError: Error>: Error {
    /// The vault did not open (wrong PIN, throttled, locked, file errors …);
    /// the closure did not run.
    case vault(VaultError)
    /// The vault opened and the closure threw this; the secret was wiped.
    case body(BodyError)

    /// Runs the vault's part and reports its error as ``vault(_:)``.
    static func vault<R>(_ work: () throws(VaultError) -> R) throws(VaultUnlockError) -> R {
        do throws(VaultError) { return try work() } catch { throw .vault(error) }
    }

    /// Runs the caller's closure and reports its error as ``body(_:)``.
    static func body<R>(_ work: () throws(BodyError) -> R) throws(VaultUnlockError) -> R {
        do throws(BodyError) { return try work() } catch { throw .body(error) }
    }
}

extension VaultUnlockError: Equatable where BodyError: Equatable {}
extension VaultUnlockError: Sendable where BodyError: Sendable {}
