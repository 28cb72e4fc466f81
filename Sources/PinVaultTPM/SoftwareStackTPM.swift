import CTPMBinding
import PinVault
import SecureCore

#if canImport(Glibc)
    import Glibc
#endif

/// A TPM 2.0 reached through the TPM Software Stack (ESYS over a TCTI), as `PinVault.PinVault` needs it
/// for `PinVault.VaultBinding.tpm(_:pcrs:)`.
///
/// Each call opens the TCTI, derives the owner hierarchy's ECC P-256 storage primary key, runs
/// in an HMAC session salted to that key with AES-128-CFB parameter encryption (the sealed value
/// and the authorisation never cross the bus in clear), flushes what it loaded and closes.
///
/// ```swift
/// let tpm = SoftwareStackTPM(tcti: SoftwareStackTPM.tcti(option: nil))
/// let options = PinVault.Options(tpm: tpm)
/// ```
public struct SoftwareStackTPM: VaultTPM {
    /// The TCTI configuration string (`swtpm:host=127.0.0.1,port=2321`, `device:/dev/tpmrm0`).
    public let tcti: String

    /// Where the TPM is, for messages.
    public var location: String { tcti }

    /// The kernel's resource manager, the default when neither an option nor `TSS2_TCTI` names one.
    public static let defaultTCTI = "device:/dev/tpmrm0"

    /// A TPM at `tcti`; a bare device path (`/dev/tpmrm0`) is read as `device:/dev/tpmrm0`.
    public init(tcti: String) {
        self.tcti = tcti.hasPrefix("/") ? "device:" + tcti : tcti
        // The TSS logs every failed command to standard error; a wrong PIN is not an error to log.
        setenv("TSS2_LOG", "all+NONE", 0)
    }

    /// The TCTI to use: `option` (`--tcti`), else the environment's `TSS2_TCTI` (tpm2-tools' syntax),
    /// else ``defaultTCTI``.
    public static func tcti(option: String?, environment: [String: String] = [:]) -> String {
        if let option, !option.isEmpty { return option }
        if let value = environment["TSS2_TCTI"] ?? getenv("TSS2_TCTI").map({ String(cString: $0) }), !value.isEmpty {
            return value
        }
        return defaultTCTI
    }

    /// Seals `value` under `authorization` in a new DA-protected sealed data object; with `pcrs`,
    /// under `TPM2_PolicyPCR` (those PCRs of the SHA-256 bank as they read now) and
    /// `TPM2_PolicyAuthValue` instead, so that unsealing needs the same PCR values as well.
    /// - Throws: `PinVault.VaultTPMError`.
    public func seal(_ value: SecureBytes, authorization: SecureBytes, pcrs: TPMPCRSelection = .none)
        throws(VaultTPMError) -> TPMSealedObject
    {
        guard value.count == Int(SPC_TPM_SECRET_SIZE), authorization.count == Int(SPC_TPM_SECRET_SIZE) else {
            throw .failed(responseCode: 0)
        }
        let object = UnsafeMutablePointer<spc_tpm_object>.allocate(capacity: 1)
        defer { object.deallocate() }
        var rc: UInt32 = 0
        let status = value.withUnsafeBytes { secret in
            authorization.withUnsafeBytes { auth in
                spc_tpm_seal(
                    tcti, secret.bindMemory(to: UInt8.self).baseAddress, auth.bindMemory(to: UInt8.self).baseAddress,
                    pcrs.mask, object, &rc)
            }
        }
        try Self.check(status, rc: rc, tcti: tcti)
        return TPMSealedObject(
            publicArea: Self.bytes(&object.pointee.public_area, object.pointee.public_size),
            privateBlob: Self.bytes(&object.pointee.private_blob, object.pointee.private_size),
            parentName: Self.bytes(&object.pointee.parent_name, object.pointee.parent_name_size),
            pcrs: TPMPCRSelection(mask: object.pointee.pcr_mask) ?? pcrs)
    }

    /// The sealed value, in secure memory. Under a PCR policy the TPM first checks the PCRs, then
    /// the authorisation: changed PCRs are `VaultTPMError.pcrMismatch`, not counted.
    /// - Throws: `PinVault.VaultTPMError`.
    public func unseal(_ sealed: TPMSealedObject, authorization: SecureBytes) throws(VaultTPMError) -> SecureBytes {
        let limit = Int(SPC_TPM_BLOB_MAX)
        guard authorization.count == Int(SPC_TPM_SECRET_SIZE), sealed.publicArea.count <= limit,
            sealed.privateBlob.count <= limit, sealed.parentName.count <= limit
        else { throw .failed(responseCode: 0) }
        let object = UnsafeMutablePointer<spc_tpm_object>.allocate(capacity: 1)
        defer { object.deallocate() }
        Self.store(sealed.publicArea, into: &object.pointee.public_area, size: &object.pointee.public_size)
        Self.store(sealed.privateBlob, into: &object.pointee.private_blob, size: &object.pointee.private_size)
        Self.store(sealed.parentName, into: &object.pointee.parent_name, size: &object.pointee.parent_name_size)
        object.pointee.pcr_mask = sealed.pcrs.mask
        let out: SecureBytes
        do throws(SecureCoreError) {
            out = try SecureBytes(count: Int(SPC_TPM_SECRET_SIZE))
        } catch {
            throw .failed(responseCode: 0)
        }
        var rc: UInt32 = 0
        let status = authorization.withUnsafeBytes { auth in
            out.withUnsafeMutableBytes { secret in
                spc_tpm_unseal(
                    tcti, object, auth.bindMemory(to: UInt8.self).baseAddress,
                    secret.bindMemory(to: UInt8.self).baseAddress, &rc)
            }
        }
        do throws(VaultTPMError) {
            try Self.check(status, rc: rc, tcti: tcti)
        } catch {
            out.destroy()
            throw error
        }
        return out
    }

    /// The TPM's dictionary-attack state.
    /// - Throws: `PinVault.VaultTPMError`.
    public func lockoutState() throws(VaultTPMError) -> TPMLockoutState {
        var state = spc_tpm_da_state()
        var rc: UInt32 = 0
        try Self.check(spc_tpm_read_da(tcti, &state, &rc), rc: rc, tcti: tcti)
        return TPMLockoutState(
            failures: state.counter, maxTries: state.max_tries, recoverySeconds: state.recovery_seconds,
            lockoutRecoverySeconds: state.lockout_recovery, inLockout: state.in_lockout != 0,
            lockoutAuthorizationSet: state.lockout_auth_set != 0)
    }

    /// Changes the lockout hierarchy's authorisation (`TPM2_HierarchyChangeAuth`, the new value
    /// encrypted by the salted session).
    /// - Throws: `PinVault.VaultTPMError`.
    public func changeLockoutAuthorization(to new: SecureBytes, current: SecureBytes?) throws(VaultTPMError) {
        var rc: UInt32 = 0
        let status = new.withUnsafeBytes { next -> spc_tpm_status in
            let nextPointer = next.bindMemory(to: UInt8.self).baseAddress
            guard let current else {
                return spc_tpm_change_lockout_auth(tcti, nil, 0, nextPointer, next.count, &rc)
            }
            return current.withUnsafeBytes { old in
                spc_tpm_change_lockout_auth(
                    tcti, old.bindMemory(to: UInt8.self).baseAddress, old.count, nextPointer, next.count, &rc)
            }
        }
        try Self.check(status, rc: rc, tcti: tcti)
    }

    /// Sets the dictionary-attack parameters (`TPM2_DictionaryAttackParameters`).
    /// - Throws: `PinVault.VaultTPMError`.
    public func setLockoutPolicy(_ policy: TPMLockoutPolicy, lockoutAuthorization: SecureBytes?) throws(VaultTPMError) {
        var rc: UInt32 = 0
        let status: spc_tpm_status
        if let lockoutAuthorization {
            status = lockoutAuthorization.withUnsafeBytes { auth in
                spc_tpm_set_da(
                    tcti, policy.maxTries, policy.recoverySeconds, policy.lockoutRecoverySeconds,
                    auth.bindMemory(to: UInt8.self).baseAddress, auth.count, &rc)
            }
        } else {
            status = spc_tpm_set_da(
                tcti, policy.maxTries, policy.recoverySeconds, policy.lockoutRecoverySeconds, nil, 0, &rc)
        }
        try Self.check(status, rc: rc, tcti: tcti)
    }

    static func check(_ status: spc_tpm_status, rc: UInt32, tcti: String) throws(VaultTPMError) {
        switch status {
        case SPC_TPM_OK: return
        case SPC_TPM_UNAVAILABLE:
            throw .unavailable(reason: "no TPM answers at \(tcti) (TSS response 0x\(String(rc, radix: 16)))")
        case SPC_TPM_MISMATCH: throw .differentTPM
        case SPC_TPM_AUTH_FAILED: throw .authorizationFailed
        case SPC_TPM_LOCKOUT: throw .lockedOut
        case SPC_TPM_LOCKOUT_AUTH: throw .lockoutAuthorizationRefused
        case SPC_TPM_PCR_MISMATCH: throw .pcrMismatch
        default: throw .failed(responseCode: rc)
        }
    }

    /// The first `count` bytes of a fixed C array (public data only: blobs and names).
    static func bytes<T>(_ tuple: inout T, _ count: Int) -> [UInt8] {
        withUnsafeBytes(of: &tuple) { Array($0.prefix(count)) }
    }

    static func store<T>(_ bytes: [UInt8], into tuple: inout T, size: inout Int) {
        withUnsafeMutableBytes(of: &tuple) { $0.copyBytes(from: bytes) }
        size = bytes.count
    }
}
