/* kdf.c — Argon2id on two backends, and PBKDF2-HMAC-SHA256.
 *
 * libsodium's Argon2id has runtime SIMD dispatch and is the fast path; it
 * takes p = 1, a 16-byte salt and neither secret nor associated data.
 * Everything else (threads, a pepper, AD, other salt sizes) goes to libargon2
 * (Debian builds it from the reference code: correct, but slower). Both
 * implement RFC 9106 v1.3 and produce identical output where both apply.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <argon2.h>
#include <sodium.h>

spc_status spc_kdf_limits_default(spc_kdf_limits *out) {
    uint64_t four_gib_kib = (uint64_t)4 * 1024 * 1024;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t half_ram_kib = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 2048 : four_gib_kib;
    out->max_m_cost_kib = half_ram_kib < four_gib_kib ? half_ram_kib : four_gib_kib;
    out->max_t_cost = 64;
    return SPC_OK;
}

spc_status spc_kdf_argon2id_check(const spc_argon2_params *p, const spc_kdf_limits *limits, size_t salt_len, size_t out_len) {
    if (p->t_cost < 1 || p->t_cost > limits->max_t_cost) return SPC_E_KDF_ITERATIONS;
    if (p->parallelism < 1 || p->parallelism > 0xFFFFFF) return SPC_E_KDF_PARALLELISM;
    if ((uint64_t)p->m_cost_kib < 8 * (uint64_t)p->parallelism) return SPC_E_KDF_MEMORY;
    if (salt_len < SPC_KDF_SALT_MIN || salt_len > 0xFFFFFFFFu) return SPC_E_KDF_SALT;
    if (out_len < SPC_KDF_OUTPUT_MIN || out_len > SPC_KDF_OUTPUT_MAX) return SPC_E_KDF_OUTPUT;
    if ((uint64_t)p->m_cost_kib > limits->max_m_cost_kib) return SPC_E_KDF_CEILING;
    return SPC_OK;
}

/* libargon2's work memory: kept out of core dumps, wiped before unmap. */
static int work_alloc(uint8_t **memory, size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        *memory = NULL;
        return -1;
    }
    (void)madvise(p, bytes, MADV_DONTDUMP); /* best effort: the wipe below is the guarantee */
    *memory = p;
    return 0;
}

static void work_free(uint8_t *memory, size_t bytes) {
    if (memory == NULL) return;
    sodium_memzero(memory, bytes);
    munmap(memory, bytes);
}

static int libsodium_can(const spc_argon2_input *in, const spc_argon2_params *p) {
    return p->parallelism == 1 && in->secret_len == 0 && in->ad_len == 0 && in->salt_len == crypto_pwhash_SALTBYTES &&
           p->m_cost_kib >= crypto_pwhash_argon2id_MEMLIMIT_MIN / 1024;
}

static int run_libsodium(const spc_argon2_input *in, const spc_argon2_params *p, uint8_t *out, size_t out_len) {
    int rc = crypto_pwhash(out, out_len, (const char *)in->password, in->password_len, in->salt, p->t_cost,
                           (size_t)p->m_cost_kib * 1024, crypto_pwhash_ALG_ARGON2ID13);
    return rc == 0 ? SPC_OK : SPC_E_KDF_FAILED;
}

static int run_reference(const spc_argon2_input *in, const spc_argon2_params *p, uint8_t *out, size_t out_len) {
    argon2_context ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.out = out;
    ctx.outlen = (uint32_t)out_len;
    ctx.pwd = (uint8_t *)(uintptr_t)in->password; /* not modified: no CLEAR_PASSWORD flag */
    ctx.pwdlen = (uint32_t)in->password_len;
    ctx.salt = (uint8_t *)(uintptr_t)in->salt;
    ctx.saltlen = (uint32_t)in->salt_len;
    ctx.secret = (uint8_t *)(uintptr_t)in->secret;
    ctx.secretlen = (uint32_t)in->secret_len;
    ctx.ad = (uint8_t *)(uintptr_t)in->ad;
    ctx.adlen = (uint32_t)in->ad_len;
    ctx.t_cost = p->t_cost;
    ctx.m_cost = p->m_cost_kib;
    ctx.lanes = ctx.threads = p->parallelism;
    ctx.version = ARGON2_VERSION_13;
    ctx.allocate_cbk = work_alloc;
    ctx.free_cbk = work_free;
    ctx.flags = ARGON2_DEFAULT_FLAGS;
    int rc = argon2_ctx(&ctx, Argon2_id);
    sodium_memzero(&ctx, sizeof ctx);
    return rc == ARGON2_OK ? SPC_OK : SPC_E_KDF_FAILED;
}

spc_status spc_kdf_argon2id(const spc_argon2_input *in, const spc_argon2_params *params, const spc_kdf_limits *limits,
                     int backend, spc_buffer *out, int *backend_used) {
    if (backend_used != NULL) *backend_used = 0;
    if (!spc__ready()) return SPC_E_INIT;
    size_t out_len = spc_buffer_size(out);
    int rc = spc_kdf_argon2id_check(params, limits, in->salt_len, out_len);
    if (rc != SPC_OK) return rc;
    if (in->password_len > 0xFFFFFFFFu || in->secret_len > 0xFFFFFFFFu || in->ad_len > 0xFFFFFFFFu)
        return SPC_E_ARGUMENT;
    if (backend == SPC_ARGON2_AUTO) backend = libsodium_can(in, params) ? SPC_ARGON2_LIBSODIUM : SPC_ARGON2_REFERENCE;
    if (backend == SPC_ARGON2_LIBSODIUM && !libsodium_can(in, params)) return SPC_E_UNSUPPORTED;
    if (backend != SPC_ARGON2_LIBSODIUM && backend != SPC_ARGON2_REFERENCE) return SPC_E_ARGUMENT;
    uint8_t *o;
    if ((rc = spc_buffer_open(out, &o)) != SPC_OK) return rc;
    rc = backend == SPC_ARGON2_LIBSODIUM ? run_libsodium(in, params, o, out_len) : run_reference(in, params, o, out_len);
    if (rc != SPC_OK) sodium_memzero(o, out_len);
    spc_buffer_close(out);
    if (rc == SPC_OK && backend_used != NULL) *backend_used = backend;
    return rc;
}

spc_status spc_kdf_pbkdf2_sha256(const uint8_t *password, size_t password_len, const uint8_t *salt, size_t salt_len,
                          uint32_t iterations, spc_buffer *out) {
    if (!spc__ready()) return SPC_E_INIT;
    size_t out_len = spc_buffer_size(out);
    if (iterations < 1) return SPC_E_KDF_ITERATIONS;
    if (salt_len < 1 || salt == NULL) return SPC_E_KDF_SALT;
    if (out_len < SPC_KDF_OUTPUT_MIN || out_len > SPC_KDF_OUTPUT_MAX) return SPC_E_KDF_OUTPUT;
    /* Secret scratch (HMAC states, U and T blocks) lives in secure memory. */
    typedef struct {
        crypto_auth_hmacsha256_state keyed, st;
        uint8_t u[32], t[32], idx[4];
    } scratch;
    spc_buffer *sb;
    int rc = spc_buffer_new(sizeof(scratch), &sb);
    if (rc != SPC_OK) return rc;
    uint8_t *o, *sp;
    if ((rc = spc_buffer_open(sb, &sp)) != SPC_OK) goto done;
    if ((rc = spc_buffer_open(out, &o)) != SPC_OK) goto close_scratch;
    scratch *s = (scratch *)(void *)sp;
    crypto_auth_hmacsha256_init(&s->keyed, password, password_len);
    for (uint32_t block = 1; (size_t)(block - 1) * 32 < out_len; block++) {
        s->idx[0] = (uint8_t)(block >> 24), s->idx[1] = (uint8_t)(block >> 16);
        s->idx[2] = (uint8_t)(block >> 8), s->idx[3] = (uint8_t)block;
        s->st = s->keyed; /* HMAC(P, S || INT(block)) */
        crypto_auth_hmacsha256_update(&s->st, salt, salt_len);
        crypto_auth_hmacsha256_update(&s->st, s->idx, 4);
        crypto_auth_hmacsha256_final(&s->st, s->u);
        memcpy(s->t, s->u, 32);
        for (uint32_t i = 1; i < iterations; i++) {
            s->st = s->keyed;
            crypto_auth_hmacsha256_update(&s->st, s->u, 32);
            crypto_auth_hmacsha256_final(&s->st, s->u);
            for (int k = 0; k < 32; k++) s->t[k] ^= s->u[k];
        }
        size_t off = (size_t)(block - 1) * 32, n = out_len - off < 32 ? out_len - off : 32;
        memcpy(o + off, s->t, n);
    }
    spc_buffer_close(out);
close_scratch:
    spc_buffer_close(sb);
done:
    spc_buffer_free(sb); /* wipes the HMAC states and blocks */
    return rc;
}
