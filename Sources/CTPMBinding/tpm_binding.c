/*
 * tpm_binding.c: see include/tpm_binding.h for the contract of each function.
 */
#include "tpm_binding.h"

#include <string.h>

#include <tss2/tss2_esys.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_tctildr.h>

#include "secure_core.h"

/* A TPM response code without its handle, session or parameter number (format-one codes). */
static uint32_t base_rc(TSS2_RC rc) {
    if ((rc & TSS2_RC_LAYER_MASK) != 0) {
        return rc;
    }
    return (rc & TPM2_RC_FMT1) ? (rc & (TPM2_RC_FMT1 | 0x3F)) : rc;
}

static void report(uint32_t *rc_out, TSS2_RC rc) {
    if (rc_out != NULL) {
        *rc_out = rc;
    }
}

/* What the vault makes of a TPM failure on a command that checked the sealed object's authorisation. */
static spc_tpm_status classify(TSS2_RC rc) {
    switch (base_rc(rc)) {
    case TPM2_RC_AUTH_FAIL:
    case TPM2_RC_BAD_AUTH:
        return SPC_TPM_AUTH_FAILED;
    case TPM2_RC_LOCKOUT:
        return SPC_TPM_LOCKOUT;
    case TPM2_RC_INTEGRITY:
    case TPM2_RC_KEY:
    case TPM2_RC_BINDING:
        return SPC_TPM_MISMATCH;
    default:
        break;
    }
    /* The TCTI layer: the connection went away or never came. */
    if ((rc & TSS2_RC_LAYER_MASK) == TSS2_TCTI_RC_LAYER) {
        return SPC_TPM_UNAVAILABLE;
    }
    return SPC_TPM_FAILED;
}

/* One conversation with the TPM: TCTI, ESYS context, primary key, salted session. */
typedef struct {
    TSS2_TCTI_CONTEXT *tcti;
    ESYS_CONTEXT *esys;
    ESYS_TR primary;
    ESYS_TR session;
} conversation;

/*
 * Without a resource manager (swtpm:, mssim: TCTIs) objects and sessions of a process killed
 * mid-command stay loaded and fill the TPM's few slots: flush every transient object and loaded
 * session. With a resource manager (device:/dev/tpmrm0, tabrmd) this is the manager's job.
 */
static int is_direct_tcti(const char *tcti) {
    return tcti != NULL && (strncmp(tcti, "swtpm", 5) == 0 || strncmp(tcti, "mssim", 5) == 0);
}

static void flush_range(ESYS_CONTEXT *esys, TSS2_SYS_CONTEXT *sys, TPM2_HANDLE first) {
    TPMS_CAPABILITY_DATA *data = NULL;
    TPMI_YES_NO more = TPM2_NO;
    if (Esys_GetCapability(esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, TPM2_CAP_HANDLES, first, 64, &more,
                           &data) != TSS2_RC_SUCCESS) {
        return;
    }
    for (uint32_t i = 0; i < data->data.handles.count; i++) {
        TPM2_HANDLE h = data->data.handles.handle[i];
        if ((h >> 24) != (first >> 24)) {
            continue;
        }
        (void)Tss2_Sys_FlushContext(sys, h); /* best effort: a handle gone meanwhile is fine */
    }
    Esys_Free(data);
}

static void flush_stale(ESYS_CONTEXT *esys) {
    TSS2_SYS_CONTEXT *sys = NULL;
    if (Esys_GetSysContext(esys, &sys) != TSS2_RC_SUCCESS || sys == NULL) {
        return;
    }
    flush_range(esys, sys, TPM2_TRANSIENT_FIRST);
    flush_range(esys, sys, TPM2_LOADED_SESSION_FIRST);
}

static void close_conversation(conversation *c) {
    if (c->esys != NULL) {
        if (c->session != ESYS_TR_NONE) {
            (void)Esys_FlushContext(c->esys, c->session);
        }
        if (c->primary != ESYS_TR_NONE) {
            (void)Esys_FlushContext(c->esys, c->primary);
        }
        Esys_Finalize(&c->esys);
    }
    if (c->tcti != NULL) {
        Tss2_TctiLdr_Finalize(&c->tcti);
    }
}

/* The TCG storage-key template (ECC NIST P-256, AES-128-CFB): the same seed gives the same key. */
static void primary_template(TPM2B_PUBLIC *t) {
    memset(t, 0, sizeof *t);
    t->publicArea.type = TPM2_ALG_ECC;
    t->publicArea.nameAlg = TPM2_ALG_SHA256;
    t->publicArea.objectAttributes = TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT | TPMA_OBJECT_FIXEDTPM |
                                     TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN |
                                     TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_NODA;
    t->publicArea.parameters.eccDetail.symmetric.algorithm = TPM2_ALG_AES;
    t->publicArea.parameters.eccDetail.symmetric.keyBits.aes = 128;
    t->publicArea.parameters.eccDetail.symmetric.mode.aes = TPM2_ALG_CFB;
    t->publicArea.parameters.eccDetail.scheme.scheme = TPM2_ALG_NULL;
    t->publicArea.parameters.eccDetail.curveID = TPM2_ECC_NIST_P256;
    t->publicArea.parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
}

/* Opens the TCTI and ESYS, derives the primary key and starts the salted, encrypting session. */
static spc_tpm_status open_conversation(const char *tcti, conversation *c, uint32_t *rc_out) {
    c->tcti = NULL;
    c->esys = NULL;
    c->primary = ESYS_TR_NONE;
    c->session = ESYS_TR_NONE;
    TSS2_RC rc = Tss2_TctiLdr_Initialize(tcti, &c->tcti);
    if (rc != TSS2_RC_SUCCESS) {
        report(rc_out, rc);
        return SPC_TPM_UNAVAILABLE;
    }
    rc = Esys_Initialize(&c->esys, c->tcti, NULL);
    if (rc != TSS2_RC_SUCCESS) {
        report(rc_out, rc);
        close_conversation(c);
        return SPC_TPM_UNAVAILABLE;
    }
    if (is_direct_tcti(tcti)) {
        flush_stale(c->esys);
    }
    TPM2B_PUBLIC template;
    primary_template(&template);
    TPM2B_SENSITIVE_CREATE sensitive;
    memset(&sensitive, 0, sizeof sensitive);
    TPM2B_DATA outside;
    memset(&outside, 0, sizeof outside);
    TPML_PCR_SELECTION pcrs;
    memset(&pcrs, 0, sizeof pcrs);
    rc = Esys_CreatePrimary(c->esys, ESYS_TR_RH_OWNER, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &sensitive,
                            &template, &outside, &pcrs, &c->primary, NULL, NULL, NULL, NULL);
    if (rc != TSS2_RC_SUCCESS) {
        report(rc_out, rc);
        spc_tpm_status status = classify(rc) == SPC_TPM_UNAVAILABLE ? SPC_TPM_UNAVAILABLE : SPC_TPM_FAILED;
        c->primary = ESYS_TR_NONE;
        close_conversation(c);
        return status;
    }
    TPMT_SYM_DEF symmetric = {.algorithm = TPM2_ALG_AES, .keyBits = {.aes = 128}, .mode = {.aes = TPM2_ALG_CFB}};
    rc = Esys_StartAuthSession(c->esys, c->primary, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, NULL,
                               TPM2_SE_HMAC, &symmetric, TPM2_ALG_SHA256, &c->session);
    if (rc == TSS2_RC_SUCCESS) {
        rc = Esys_TRSess_SetAttributes(c->esys, c->session,
                                       TPMA_SESSION_DECRYPT | TPMA_SESSION_ENCRYPT | TPMA_SESSION_CONTINUESESSION,
                                       0xFF);
    }
    if (rc != TSS2_RC_SUCCESS) {
        report(rc_out, rc);
        close_conversation(c);
        return SPC_TPM_FAILED;
    }
    return SPC_TPM_OK;
}

/* Overwrites the authorisation ESYS copied into an object with zeros. */
static void forget_auth(ESYS_CONTEXT *esys, ESYS_TR object) {
    TPM2B_AUTH zero;
    memset(&zero, 0, sizeof zero);
    zero.size = SPC_TPM_SECRET_SIZE;
    (void)Esys_TR_SetAuth(esys, object, &zero);
    zero.size = 0;
    (void)Esys_TR_SetAuth(esys, object, &zero);
}

/* The PCRs of `mask` in the SHA-256 bank. */
static void pcr_selection(uint32_t mask, TPML_PCR_SELECTION *out) {
    memset(out, 0, sizeof *out);
    out->count = 1;
    out->pcrSelections[0].hash = TPM2_ALG_SHA256;
    out->pcrSelections[0].sizeofSelect = 3;
    for (uint32_t i = 0; i < SPC_TPM_PCR_COUNT; i++) {
        if ((mask >> i) & 1u) {
            out->pcrSelections[0].pcrSelect[i / 8] |= (BYTE)(1u << (i % 8));
        }
    }
}

/*
 * Runs PolicyPCR (over `mask`, as the PCRs read now) and PolicyAuthValue in `session` and returns
 * the session's digest in *digest (freed by the caller with Esys_Free). A trial session gives the
 * policy to seal under; a policy session, the value to compare with the object's authPolicy.
 */
static TSS2_RC pcr_policy(ESYS_CONTEXT *esys, ESYS_TR session, uint32_t mask, TPM2B_DIGEST **digest) {
    TPML_PCR_SELECTION selection;
    pcr_selection(mask, &selection);
    TPM2B_DIGEST current;
    memset(&current, 0, sizeof current); /* empty: the TPM digests the PCRs' values itself */
    TSS2_RC rc = Esys_PolicyPCR(esys, session, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &current, &selection);
    if (rc == TSS2_RC_SUCCESS) {
        rc = Esys_PolicyAuthValue(esys, session, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE);
    }
    if (rc == TSS2_RC_SUCCESS) {
        rc = Esys_PolicyGetDigest(esys, session, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, digest);
    }
    return rc;
}

/* The policy an object sealed now under `mask` needs: PolicyPCR then PolicyAuthValue, in a trial session. */
static TSS2_RC trial_policy(ESYS_CONTEXT *esys, uint32_t mask, TPM2B_DIGEST *out) {
    TPMT_SYM_DEF none = {.algorithm = TPM2_ALG_NULL};
    ESYS_TR trial = ESYS_TR_NONE;
    TSS2_RC rc = Esys_StartAuthSession(esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
                                       NULL, TPM2_SE_TRIAL, &none, TPM2_ALG_SHA256, &trial);
    if (rc != TSS2_RC_SUCCESS) {
        return rc;
    }
    TPM2B_DIGEST *digest = NULL;
    rc = pcr_policy(esys, trial, mask, &digest);
    if (rc == TSS2_RC_SUCCESS) {
        *out = *digest;
    }
    Esys_Free(digest);
    (void)Esys_FlushContext(esys, trial);
    return rc;
}

spc_tpm_status spc_tpm_seal(const char *tcti, const uint8_t *secret, const uint8_t *auth, uint32_t pcr_mask,
                            spc_tpm_object *out, uint32_t *rc_out) {
    report(rc_out, 0);
    if (secret == NULL || auth == NULL || out == NULL || (pcr_mask >> SPC_TPM_PCR_COUNT) != 0) {
        return SPC_TPM_INVALID;
    }
    conversation c;
    spc_tpm_status status = open_conversation(tcti, &c, rc_out);
    if (status != SPC_TPM_OK) {
        return status;
    }
    TPM2B_SENSITIVE_CREATE sensitive;
    memset(&sensitive, 0, sizeof sensitive);
    sensitive.sensitive.userAuth.size = SPC_TPM_SECRET_SIZE;
    memcpy(sensitive.sensitive.userAuth.buffer, auth, SPC_TPM_SECRET_SIZE);
    sensitive.sensitive.data.size = SPC_TPM_SECRET_SIZE;
    memcpy(sensitive.sensitive.data.buffer, secret, SPC_TPM_SECRET_SIZE);
    /* A sealed data object: no sign or decrypt, authorised by its auth value, counted by the DA logic. */
    TPM2B_PUBLIC in_public;
    memset(&in_public, 0, sizeof in_public);
    in_public.publicArea.type = TPM2_ALG_KEYEDHASH;
    in_public.publicArea.nameAlg = TPM2_ALG_SHA256;
    in_public.publicArea.objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_USERWITHAUTH;
    in_public.publicArea.parameters.keyedHashDetail.scheme.scheme = TPM2_ALG_NULL;
    if (pcr_mask != 0) {
        /* Only the policy authorises it: without userWithAuth the auth value alone is refused. */
        in_public.publicArea.objectAttributes &= ~(TPMA_OBJECT)TPMA_OBJECT_USERWITHAUTH;
        TSS2_RC policy_rc = trial_policy(c.esys, pcr_mask, &in_public.publicArea.authPolicy);
        if (policy_rc != TSS2_RC_SUCCESS) {
            spc_wipe(&sensitive, sizeof sensitive);
            report(rc_out, policy_rc);
            close_conversation(&c);
            return classify(policy_rc) == SPC_TPM_UNAVAILABLE ? SPC_TPM_UNAVAILABLE : SPC_TPM_FAILED;
        }
    }
    TPM2B_DATA outside;
    memset(&outside, 0, sizeof outside);
    TPML_PCR_SELECTION pcrs;
    memset(&pcrs, 0, sizeof pcrs);
    TPM2B_PRIVATE *private_blob = NULL;
    TPM2B_PUBLIC *public_area = NULL;
    TSS2_RC rc = Esys_Create(c.esys, c.primary, c.session, ESYS_TR_NONE, ESYS_TR_NONE, &sensitive, &in_public,
                             &outside, &pcrs, &private_blob, &public_area, NULL, NULL, NULL);
    spc_wipe(&sensitive, sizeof sensitive);
    if (rc != TSS2_RC_SUCCESS) {
        report(rc_out, rc);
        close_conversation(&c);
        return classify(rc) == SPC_TPM_UNAVAILABLE ? SPC_TPM_UNAVAILABLE : SPC_TPM_FAILED;
    }
    TPM2B_NAME *parent_name = NULL;
    size_t public_size = 0;
    size_t private_size = 0;
    status = SPC_TPM_FAILED;
    rc = Esys_TR_GetName(c.esys, c.primary, &parent_name);
    if (rc == TSS2_RC_SUCCESS) {
        rc = Tss2_MU_TPM2B_PUBLIC_Marshal(public_area, out->public_area, sizeof out->public_area, &public_size);
    }
    if (rc == TSS2_RC_SUCCESS) {
        rc = Tss2_MU_TPM2B_PRIVATE_Marshal(private_blob, out->private_blob, sizeof out->private_blob, &private_size);
    }
    if (rc == TSS2_RC_SUCCESS && parent_name->size <= sizeof out->parent_name) {
        out->public_size = public_size;
        out->private_size = private_size;
        memcpy(out->parent_name, parent_name->name, parent_name->size);
        out->parent_name_size = parent_name->size;
        out->pcr_mask = pcr_mask;
        status = SPC_TPM_OK;
    }
    report(rc_out, rc);
    Esys_Free(parent_name);
    Esys_Free(private_blob);
    Esys_Free(public_area);
    close_conversation(&c);
    return status;
}

spc_tpm_status spc_tpm_unseal(const char *tcti, const spc_tpm_object *object, const uint8_t *auth,
                              uint8_t *secret_out, uint32_t *rc_out) {
    report(rc_out, 0);
    if (object == NULL || auth == NULL || secret_out == NULL || object->public_size > SPC_TPM_BLOB_MAX ||
        object->private_size > SPC_TPM_BLOB_MAX || object->parent_name_size > SPC_TPM_BLOB_MAX ||
        (object->pcr_mask >> SPC_TPM_PCR_COUNT) != 0) {
        return SPC_TPM_INVALID;
    }
    TPM2B_PUBLIC public_area;
    TPM2B_PRIVATE private_blob;
    memset(&public_area, 0, sizeof public_area);
    memset(&private_blob, 0, sizeof private_blob);
    size_t offset = 0;
    if (Tss2_MU_TPM2B_PUBLIC_Unmarshal(object->public_area, object->public_size, &offset, &public_area) !=
            TSS2_RC_SUCCESS ||
        offset != object->public_size) {
        return SPC_TPM_INVALID;
    }
    offset = 0;
    if (Tss2_MU_TPM2B_PRIVATE_Unmarshal(object->private_blob, object->private_size, &offset, &private_blob) !=
            TSS2_RC_SUCCESS ||
        offset != object->private_size) {
        return SPC_TPM_INVALID;
    }
    conversation c;
    spc_tpm_status status = open_conversation(tcti, &c, rc_out);
    if (status != SPC_TPM_OK) {
        return status;
    }
    /* Another TPM (or this one cleared) derives another primary key: say so before any attempt. */
    TPM2B_NAME *parent_name = NULL;
    TSS2_RC rc = Esys_TR_GetName(c.esys, c.primary, &parent_name);
    if (rc != TSS2_RC_SUCCESS) {
        report(rc_out, rc);
        close_conversation(&c);
        return SPC_TPM_FAILED;
    }
    int same_parent = parent_name->size == object->parent_name_size &&
                      memcmp(parent_name->name, object->parent_name, parent_name->size) == 0;
    Esys_Free(parent_name);
    if (!same_parent) {
        close_conversation(&c);
        return SPC_TPM_MISMATCH;
    }
    ESYS_TR sealed = ESYS_TR_NONE;
    rc = Esys_Load(c.esys, c.primary, c.session, ESYS_TR_NONE, ESYS_TR_NONE, &private_blob, &public_area, &sealed);
    if (rc != TSS2_RC_SUCCESS) {
        report(rc_out, rc);
        close_conversation(&c);
        status = classify(rc);
        return status == SPC_TPM_UNAVAILABLE ? status : SPC_TPM_MISMATCH;
    }
    /* Under a PCR policy: a policy session, salted like the HMAC one (the unsealed value comes back
     * encrypted, the auth value never travels), whose digest must equal the object's authPolicy
     * before the auth value is used at all. */
    ESYS_TR authorising = c.session;
    ESYS_TR policy = ESYS_TR_NONE;
    if (object->pcr_mask != 0) {
        TPMT_SYM_DEF symmetric = {.algorithm = TPM2_ALG_AES, .keyBits = {.aes = 128}, .mode = {.aes = TPM2_ALG_CFB}};
        rc = Esys_StartAuthSession(c.esys, c.primary, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, NULL,
                                   TPM2_SE_POLICY, &symmetric, TPM2_ALG_SHA256, &policy);
        if (rc == TSS2_RC_SUCCESS) {
            rc = Esys_TRSess_SetAttributes(c.esys, policy, TPMA_SESSION_ENCRYPT | TPMA_SESSION_CONTINUESESSION, 0xFF);
        }
        TPM2B_DIGEST *digest = NULL;
        if (rc == TSS2_RC_SUCCESS) {
            rc = pcr_policy(c.esys, policy, object->pcr_mask, &digest);
        }
        int same_policy = rc == TSS2_RC_SUCCESS && digest->size == public_area.publicArea.authPolicy.size &&
                          memcmp(digest->buffer, public_area.publicArea.authPolicy.buffer, digest->size) == 0;
        Esys_Free(digest);
        if (!same_policy) {
            report(rc_out, rc);
            status = rc == TSS2_RC_SUCCESS ? SPC_TPM_PCR_MISMATCH : classify(rc);
            status = status == SPC_TPM_PCR_MISMATCH || status == SPC_TPM_UNAVAILABLE ? status : SPC_TPM_FAILED;
            if (policy != ESYS_TR_NONE) {
                (void)Esys_FlushContext(c.esys, policy);
            }
            (void)Esys_FlushContext(c.esys, sealed);
            close_conversation(&c);
            return status;
        }
        authorising = policy;
    }
    TPM2B_AUTH auth_value;
    memset(&auth_value, 0, sizeof auth_value);
    auth_value.size = SPC_TPM_SECRET_SIZE;
    memcpy(auth_value.buffer, auth, SPC_TPM_SECRET_SIZE);
    rc = Esys_TR_SetAuth(c.esys, sealed, &auth_value);
    spc_wipe(&auth_value, sizeof auth_value);
    TPM2B_SENSITIVE_DATA *data = NULL;
    if (rc == TSS2_RC_SUCCESS) {
        rc = Esys_Unseal(c.esys, sealed, authorising, ESYS_TR_NONE, ESYS_TR_NONE, &data);
    }
    forget_auth(c.esys, sealed);
    report(rc_out, rc);
    if (rc != TSS2_RC_SUCCESS && object->pcr_mask != 0 &&
        (base_rc(rc) == TPM2_RC_PCR_CHANGED || base_rc(rc) == TPM2_RC_POLICY_FAIL)) {
        /* A PCR extended after the check above: the TPM refused before checking the auth value. */
        status = SPC_TPM_PCR_MISMATCH;
    } else if (rc != TSS2_RC_SUCCESS) {
        status = classify(rc);
        /* A mismatch here would have failed the load: an unexpected code is a failure, not a wrong PIN. */
        status = status == SPC_TPM_MISMATCH ? SPC_TPM_FAILED : status;
    } else if (data->size != SPC_TPM_SECRET_SIZE) {
        status = SPC_TPM_FAILED;
    } else {
        memcpy(secret_out, data->buffer, SPC_TPM_SECRET_SIZE);
        status = SPC_TPM_OK;
    }
    if (data != NULL) {
        spc_wipe(data, sizeof *data);
        Esys_Free(data);
    }
    if (policy != ESYS_TR_NONE) {
        (void)Esys_FlushContext(c.esys, policy);
    }
    (void)Esys_FlushContext(c.esys, sealed);
    close_conversation(&c);
    return status;
}

spc_tpm_status spc_tpm_read_da(const char *tcti, spc_tpm_da_state *out, uint32_t *rc_out) {
    report(rc_out, 0);
    if (out == NULL) {
        return SPC_TPM_INVALID;
    }
    TSS2_TCTI_CONTEXT *tctx = NULL;
    ESYS_CONTEXT *esys = NULL;
    TSS2_RC rc = Tss2_TctiLdr_Initialize(tcti, &tctx);
    if (rc == TSS2_RC_SUCCESS) {
        rc = Esys_Initialize(&esys, tctx, NULL);
    }
    if (rc != TSS2_RC_SUCCESS) {
        report(rc_out, rc);
        if (tctx != NULL) {
            Tss2_TctiLdr_Finalize(&tctx);
        }
        return SPC_TPM_UNAVAILABLE;
    }
    memset(out, 0, sizeof *out);
    spc_tpm_status status = SPC_TPM_OK;
    const TPM2_PT wanted[2] = {TPM2_PT_PERMANENT, TPM2_PT_LOCKOUT_COUNTER};
    const uint32_t counts[2] = {1, 4};
    for (int q = 0; q < 2 && status == SPC_TPM_OK; q++) {
        TPMS_CAPABILITY_DATA *data = NULL;
        TPMI_YES_NO more = TPM2_NO;
        rc = Esys_GetCapability(esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, TPM2_CAP_TPM_PROPERTIES, wanted[q],
                                counts[q], &more, &data);
        if (rc != TSS2_RC_SUCCESS) {
            report(rc_out, rc);
            status = classify(rc) == SPC_TPM_UNAVAILABLE ? SPC_TPM_UNAVAILABLE : SPC_TPM_FAILED;
            break;
        }
        for (uint32_t i = 0; i < data->data.tpmProperties.count; i++) {
            TPMS_TAGGED_PROPERTY p = data->data.tpmProperties.tpmProperty[i];
            switch (p.property) {
            case TPM2_PT_PERMANENT:
                out->in_lockout = (p.value & TPMA_PERMANENT_INLOCKOUT) != 0;
                out->lockout_auth_set = (p.value & TPMA_PERMANENT_LOCKOUTAUTHSET) != 0;
                break;
            case TPM2_PT_LOCKOUT_COUNTER: out->counter = p.value; break;
            case TPM2_PT_MAX_AUTH_FAIL: out->max_tries = p.value; break;
            case TPM2_PT_LOCKOUT_INTERVAL: out->recovery_seconds = p.value; break;
            case TPM2_PT_LOCKOUT_RECOVERY: out->lockout_recovery = p.value; break;
            default: break;
            }
        }
        Esys_Free(data);
    }
    Esys_Finalize(&esys);
    Tss2_TctiLdr_Finalize(&tctx);
    return status;
}

/* Gives ESYS the lockout hierarchy's authorisation (`size` bytes, at most a TPM2B_AUTH; checked by
 * the callers) for the next command; the stack copy is wiped. */
static TSS2_RC use_lockout_auth(ESYS_CONTEXT *esys, const uint8_t *auth, size_t size) {
    TPM2B_AUTH value;
    memset(&value, 0, sizeof value);
    value.size = (UINT16)size;
    if (size > 0) {
        memcpy(value.buffer, auth, size);
    }
    TSS2_RC rc = Esys_TR_SetAuth(esys, ESYS_TR_RH_LOCKOUT, &value);
    spc_wipe(&value, sizeof value);
    return rc;
}

/* What a command authorised by the lockout hierarchy makes of its response code: a refused
 * authorisation (or a locked lockout hierarchy) is SPC_TPM_LOCKOUT_AUTH. */
static spc_tpm_status classify_lockout(TSS2_RC rc) {
    if (rc == TSS2_RC_SUCCESS) {
        return SPC_TPM_OK;
    }
    spc_tpm_status status = classify(rc);
    if (status == SPC_TPM_AUTH_FAILED || status == SPC_TPM_LOCKOUT) {
        return SPC_TPM_LOCKOUT_AUTH;
    }
    return status == SPC_TPM_UNAVAILABLE ? status : SPC_TPM_FAILED;
}

spc_tpm_status spc_tpm_set_da(const char *tcti, uint32_t max_tries, uint32_t recovery_seconds,
                              uint32_t lockout_recovery, const uint8_t *lockout_auth, size_t lockout_auth_size,
                              uint32_t *rc_out) {
    report(rc_out, 0);
    if (lockout_auth_size > sizeof(((TPM2B_AUTH *)0)->buffer) || (lockout_auth == NULL && lockout_auth_size != 0)) {
        return SPC_TPM_INVALID;
    }
    conversation c;
    spc_tpm_status status = open_conversation(tcti, &c, rc_out);
    if (status != SPC_TPM_OK) {
        return status;
    }
    TSS2_RC rc = use_lockout_auth(c.esys, lockout_auth, lockout_auth_size);
    /* The salted HMAC session proves the lockout authorisation without sending it. */
    if (rc == TSS2_RC_SUCCESS) {
        rc = Esys_DictionaryAttackParameters(c.esys, ESYS_TR_RH_LOCKOUT, c.session, ESYS_TR_NONE, ESYS_TR_NONE,
                                             max_tries, recovery_seconds, lockout_recovery);
    }
    forget_auth(c.esys, ESYS_TR_RH_LOCKOUT);
    report(rc_out, rc);
    close_conversation(&c);
    return classify_lockout(rc);
}

spc_tpm_status spc_tpm_change_lockout_auth(const char *tcti, const uint8_t *current, size_t current_size,
                                           const uint8_t *new_auth, size_t new_size, uint32_t *rc_out) {
    report(rc_out, 0);
    const size_t limit = sizeof(((TPM2B_AUTH *)0)->buffer);
    if (current_size > limit || (current == NULL && current_size != 0) || new_auth == NULL || new_size == 0 ||
        new_size > limit) {
        return SPC_TPM_INVALID;
    }
    conversation c;
    spc_tpm_status status = open_conversation(tcti, &c, rc_out);
    if (status != SPC_TPM_OK) {
        return status;
    }
    TSS2_RC rc = use_lockout_auth(c.esys, current, current_size);
    TPM2B_AUTH next;
    memset(&next, 0, sizeof next);
    next.size = (UINT16)new_size;
    memcpy(next.buffer, new_auth, new_size);
    /* newAuth is the command's first parameter: the salted session (TPMA_SESSION_DECRYPT)
     * encrypts it, so the new value never crosses the bus in the clear. */
    if (rc == TSS2_RC_SUCCESS) {
        rc = Esys_HierarchyChangeAuth(c.esys, ESYS_TR_RH_LOCKOUT, c.session, ESYS_TR_NONE, ESYS_TR_NONE, &next);
    }
    spc_wipe(&next, sizeof next);
    forget_auth(c.esys, ESYS_TR_RH_LOCKOUT);
    report(rc_out, rc);
    close_conversation(&c);
    return classify_lockout(rc);
}
