/*
 * tpm_binding.h: the vault's use of a TPM 2.0, through the TPM Software Stack (ESYS).
 *
 * One primary storage key (ECC NIST P-256, the TCG storage-key template, owner hierarchy, empty
 * owner auth) is derived again on each call; it is never stored in the TPM or in a file. Under it,
 * a sealed data object (keyedhash, no sign/decrypt, userWithAuth, DA-protected) holds 32 random
 * bytes; its authorisation value is supplied by the caller (derived from the PIN). Every command
 * that carries the authorisation or the sealed bytes runs in a session salted to the primary key
 * with AES-128-CFB parameter encryption, so neither crosses the bus in clear.
 *
 * With a PCR selection the object is sealed under a policy instead (userWithAuth clear):
 * TPM2_PolicyPCR over the selected PCRs of the SHA-256 bank, as they read when it was sealed,
 * then TPM2_PolicyAuthValue. Unsealing it needs both the same PCR values and the authorisation;
 * the PCRs are checked before the authorisation is used, so a changed boot state never costs a
 * dictionary-attack failure.
 *
 * Every function returns an spc_tpm_status and, on failure, the TPM or TSS response code in *rc
 * (when rc is not NULL). Buffers that held a secret (authorisation, sealed bytes) are wiped
 * before they are released. No function keeps state between calls: each opens the TCTI, does its
 * work, flushes what it loaded and closes.
 */
#ifndef SPC_TPM_BINDING_H
#define SPC_TPM_BINDING_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Outcome of a TPM operation. */
typedef enum {
    SPC_TPM_OK = 0,
    /** The TCTI could not be loaded or the TPM did not answer. */
    SPC_TPM_UNAVAILABLE = 1,
    /** The sealed object does not belong to this TPM (another primary seed, or a cleared TPM). */
    SPC_TPM_MISMATCH = 2,
    /** The authorisation was wrong; the TPM counted the failure. */
    SPC_TPM_AUTH_FAILED = 3,
    /** The TPM is in dictionary-attack lockout and refused to check the authorisation. */
    SPC_TPM_LOCKOUT = 4,
    /** A caller error: a NULL pointer, a length out of range, a blob that does not parse. */
    SPC_TPM_INVALID = 5,
    /** The lockout hierarchy's authorisation was refused (TPM2_DictionaryAttackParameters). */
    SPC_TPM_LOCKOUT_AUTH = 6,
    /** Any other TPM or TSS failure (see *rc). */
    SPC_TPM_FAILED = 7,
    /**
     * The selected PCRs no longer hold the values the object was sealed under (another boot
     * chain, another OS, a changed Secure Boot state). The authorisation was not checked and
     * nothing was counted.
     */
    SPC_TPM_PCR_MISMATCH = 8,
} spc_tpm_status;

/** Size of the sealed value and of the authorisation value. */
#define SPC_TPM_SECRET_SIZE 32
/** Largest marshalled public area, private blob, or name this interface passes. */
#define SPC_TPM_BLOB_MAX 1024
/** PCRs a selection may name: 0 to SPC_TPM_PCR_COUNT - 1 of the SHA-256 bank (bit i of a mask is PCR i). */
#define SPC_TPM_PCR_COUNT 24

/** The sealed object as a vault file records it (none of it is secret). */
typedef struct {
    uint8_t public_area[SPC_TPM_BLOB_MAX]; /* marshalled TPM2B_PUBLIC */
    size_t public_size;
    uint8_t private_blob[SPC_TPM_BLOB_MAX]; /* marshalled TPM2B_PRIVATE (encrypted by the TPM) */
    size_t private_size;
    uint8_t parent_name[SPC_TPM_BLOB_MAX]; /* the primary key's name (TPM2B_NAME contents) */
    size_t parent_name_size;
    uint32_t pcr_mask; /* the PCRs of the SHA-256 bank the object's policy names; 0: no PCR policy */
} spc_tpm_object;

/** The TPM's dictionary-attack state (TPM2_GetCapability, TPM_PT_*). */
typedef struct {
    uint32_t counter;          /* TPM_PT_LOCKOUT_COUNTER: failures counted now */
    uint32_t max_tries;        /* TPM_PT_MAX_AUTH_FAIL */
    uint32_t recovery_seconds; /* TPM_PT_LOCKOUT_INTERVAL: one failure forgotten per interval */
    uint32_t lockout_recovery; /* TPM_PT_LOCKOUT_RECOVERY */
    int in_lockout;            /* TPMA_PERMANENT.inLockout */
    int lockout_auth_set;      /* TPMA_PERMANENT.lockoutAuthSet: the lockout hierarchy has a non-empty authorisation */
} spc_tpm_da_state;

/**
 * Seals `secret` (SPC_TPM_SECRET_SIZE bytes) into a new object under the primary key with the
 * authorisation `auth` (SPC_TPM_SECRET_SIZE bytes). `tcti` is a tpm2-tools TCTI string
 * ("swtpm:host=127.0.0.1,port=2321", "device:/dev/tpmrm0"); NULL means the TSS default.
 * `pcr_mask` 0 gives an object authorised by `auth` alone; otherwise bit i selects PCR i of the
 * SHA-256 bank (bits SPC_TPM_PCR_COUNT and above must be 0) and the object's policy is
 * PolicyPCR over those PCRs as they read now, then PolicyAuthValue. Writes `out` (with
 * out->pcr_mask = pcr_mask) on success; `secret` and `auth` are only read.
 * Returns SPC_TPM_OK, SPC_TPM_UNAVAILABLE, SPC_TPM_INVALID or SPC_TPM_FAILED (a TPM without a
 * SHA-256 PCR bank among them).
 */
spc_tpm_status spc_tpm_seal(const char *tcti, const uint8_t *secret, const uint8_t *auth, uint32_t pcr_mask,
                            spc_tpm_object *out, uint32_t *rc);

/**
 * Unseals `object` with `auth` (SPC_TPM_SECRET_SIZE bytes) into `secret_out`
 * (SPC_TPM_SECRET_SIZE bytes, written only on SPC_TPM_OK). Checks the primary key's name against
 * object->parent_name before loading anything: another TPM gives SPC_TPM_MISMATCH, not
 * SPC_TPM_AUTH_FAILED. With object->pcr_mask set, a policy session salted to the primary key runs
 * PolicyPCR and PolicyAuthValue, and its digest is compared with the object's authPolicy before
 * the authorisation is used: PCRs that changed give SPC_TPM_PCR_MISMATCH, uncounted (and so does a
 * PCR changed between that check and the unseal: TPM_RC_PCR_CHANGED). A wrong `auth` is counted by
 * the TPM (SPC_TPM_AUTH_FAILED); a TPM in lockout gives SPC_TPM_LOCKOUT.
 */
spc_tpm_status spc_tpm_unseal(const char *tcti, const spc_tpm_object *object, const uint8_t *auth,
                              uint8_t *secret_out, uint32_t *rc);

/** Reads the dictionary-attack state into `out`. Returns SPC_TPM_OK, SPC_TPM_UNAVAILABLE or SPC_TPM_FAILED. */
spc_tpm_status spc_tpm_read_da(const char *tcti, spc_tpm_da_state *out, uint32_t *rc);

/**
 * Sets the TPM-wide dictionary-attack parameters (TPM2_DictionaryAttackParameters) with the
 * lockout hierarchy's authorisation `lockout_auth` (`lockout_auth_size` bytes, 0 to 64; NULL when 0).
 * A refused authorisation is SPC_TPM_LOCKOUT_AUTH (and the TPM may lock the lockout hierarchy).
 */
spc_tpm_status spc_tpm_set_da(const char *tcti, uint32_t max_tries, uint32_t recovery_seconds,
                              uint32_t lockout_recovery, const uint8_t *lockout_auth, size_t lockout_auth_size,
                              uint32_t *rc);

/**
 * Changes the lockout hierarchy's authorisation (TPM2_HierarchyChangeAuth on TPM_RH_LOCKOUT) from
 * `current` (`current_size` bytes, 0 to 64; NULL when 0: the empty authorisation of a fresh TPM)
 * to `new_auth` (`new_size` bytes, 1 to 64). The new value travels encrypted (the salted session's
 * parameter encryption); both buffers are only read. Without the lockout authorisation nobody can
 * run TPM2_DictionaryAttackLockReset, so the TPM's guess limit holds against whoever can send it
 * commands. A refused `current` is SPC_TPM_LOCKOUT_AUTH (and the TPM may lock the lockout
 * hierarchy). Returns SPC_TPM_OK, SPC_TPM_INVALID, SPC_TPM_UNAVAILABLE, SPC_TPM_LOCKOUT_AUTH or
 * SPC_TPM_FAILED.
 */
spc_tpm_status spc_tpm_change_lockout_auth(const char *tcti, const uint8_t *current, size_t current_size,
                                           const uint8_t *new_auth, size_t new_size, uint32_t *rc);

#ifdef __cplusplus
}
#endif

#endif
