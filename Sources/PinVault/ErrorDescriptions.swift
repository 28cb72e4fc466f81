import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// The sentences the vault's errors print: what happened and, where there is one, what to do. Each
// switch is exhaustive, so a new case does not compile until it is described.

extension VaultError: CustomStringConvertible {
    /// What went wrong, in a sentence fragment a person can act on; it never names a PIN or a secret.
    public var description: String {
        switch self {
        case .wrongPIN(nil): "the PIN is wrong"
        case .wrongPIN(0?): "the PIN is wrong; no attempts remain"
        case .wrongPIN(1?): "the PIN is wrong; 1 attempt remains"
        case .wrongPIN(let remaining?): "the PIN is wrong; \(remaining) attempts remain"
        case .throttled(let seconds): "too many failures: try again in \(seconds) s; nothing was counted"
        case .locked: "locked after too many failures: only destroying the vault and creating it anew help"
        case .wiped: "too many failures: the vault was erased"
        case .notFound: "no vault in this directory"
        case .alreadyExists: "a vault already exists in this directory"
        case .notAVault: "the file is not a SecurePIN vault"
        case .newerFormat(let version): "the vault has format \(version), newer than this library reads: upgrade"
        case .unsupportedFormat(let version):
            "the vault has format \(version), which this library no longer reads: destroy it and create it anew"
        case .unsuitableDirectory(let reason): "the directory cannot hold a vault: \(reason)"
        case .damaged(let reason): "the vault is damaged: \(reason)"
        case .invalidPolicy(let reason): "the throttle policy is not valid: \(reason)"
        case .parametersBelowFloor:
            "refused: the vault derives its key below the floor this reader accepts, and it is never weakened"
        case .parametersAboveCeiling: "refused: the vault's key derivation needs more than the ceiling allows"
        case .pinOutsideFormat(let format):
            "the PIN does not fit the vault's PIN format, \(format); nothing was counted"
        case .pepperRequired: "the vault was created with a pepper, and none or another one was given"
        case .pepperNotSupported(let reason): "the vault cannot take a pepper: \(reason); nothing was changed"
        case .invalidSecretSize(let size):
            "the secret must be 1 to \(PinVault.maximumSecretByteCount) bytes, not \(size)"
        case .biometryNotConfigured: "the vault has no biometric slot, or it was invalidated"
        case .biometryInvalidated:
            "the enrolled biometry changed, so the biometric slot was removed: unlock with the PIN and add it again"
        case .biometryFailed(.available): "the biometric match failed"
        case .biometryFailed(let status): "biometry is not available: \(status.phrase)"
        case .biometryOptionNotSupported(let option): option.unsupportedPhrase
        case .cancelled: "cancelled; nothing was entered"
        case .io(let operation, let code): "\(operation) failed: \(String(cString: strerror(code)))"
        case .secureCore(let error): "secure memory or cryptography failed: \(error)"
        case .tpmRequired: "the vault is bound to a TPM and none was given"
        case .tpmUnavailable(let reason): "the vault needs its TPM: \(reason); nothing was counted"
        case .tpmMismatch:
            "the vault is bound to another TPM, another machine's or this one before it was cleared: no PIN can "
                + "open it here; nothing was counted"
        case .tpmLockedOut(let seconds):
            "the TPM is in dictionary-attack lockout: it refuses every PIN, the right one too; "
                + (seconds == 0 ? "it never forgets a failure" : "it forgets one failure every \(seconds) s")
                + "; nothing was counted"
        case .tpmPCRsChanged(let pcrs):
            "the vault is sealed to PCRs \(pcrs) of its TPM and they no longer read as when it was sealed: another "
                + "OS or boot chain, a changed Secure Boot state, or a firmware or boot loader update; the PIN was "
                + "not checked and nothing was counted"
        case .tpmLockoutAuthorizationNotSet:
            "the TPM's lockout hierarchy has the empty authorisation, so anyone who can send it commands could "
                + "reset its guess limit whenever the vault locks: set one first, or let the vault set a random "
                + "one; nothing was written"
        case .tpmFailed(let error): "the TPM failed: \(error)"
        case .serverRequired: "the vault is bound to a server and no client was given"
        case .network(let reason): "the vault's server cannot be reached: \(reason); nothing was counted here"
        case .serverTLS(let reason): "the vault's server is not trusted: \(reason); nothing was counted"
        case .serverBlocked:
            "the server blocks this vault after too many failures: it refuses every PIN, the right one too; only "
                + "its operator can lift the block"
        case .serverRefused(let reason): "the vault's server refused: \(reason)"
        }
    }
}

extension VaultUnlockError: CustomStringConvertible {
    /// The vault's description, or the closure's error as it describes itself.
    public var description: String {
        switch self {
        case .vault(let error): error.description
        case .body(let error): String(describing: error)
        }
    }
}

extension VaultTPMError: CustomStringConvertible {
    /// What went wrong, in a sentence fragment a person can act on; it never names an authorisation.
    public var description: String {
        switch self {
        case .unavailable(let reason): "the TPM cannot be reached: \(reason)"
        case .differentTPM: "the object belongs to another TPM, or to this one before it was cleared"
        case .authorizationFailed: "the TPM refused the authorisation and counted the failure"
        case .lockedOut: "the TPM is in dictionary-attack lockout: it checked nothing and counted nothing"
        case .lockoutAuthorizationRefused:
            "the TPM refused its lockout authorisation; it locks its lockout hierarchy for a while after a wrong "
                + "one, so check it before trying again"
        case .pcrMismatch:
            "the PCRs the object's policy names no longer hold the values it was sealed under; nothing was counted"
        case .failed(let responseCode): "the TPM failed with response code 0x\(String(responseCode, radix: 16))"
        }
    }
}

extension VaultServerError: CustomStringConvertible {
    /// What went wrong, in a sentence fragment a person can act on; it never names a verifier.
    public var description: String {
        switch self {
        case .network(let reason): "the server cannot be reached: \(reason); nothing was counted locally"
        case .tls(let reason): "the server is not trusted: \(reason); nothing was counted"
        case .blocked(let counters):
            "the server blocks the vault after \(counters.failures) of \(counters.maxFailures) failures"
        case .unknownVault: "the server does not know this vault"
        case .refused(let reason): "the server refused: \(reason)"
        }
    }
}
