/* oprf.c — RFC 9497 OPRF, mode 0x00 (modeOPRF), suite ristretto255-SHA512, on
 * libsodium's ristretto255 primitives. The secrets (the client's input and
 * blind, the server's key, the unblinded element and the output) live in
 * secure buffers; stack temporaries are wiped before return. No branch and no
 * address depends on a secret: the only verdicts looked at are "the element
 * is the identity" and "the scalar is zero", declassified on purpose (both
 * have probability 2^-252 for honest inputs and are public by the RFC). */
#include "internal.h"

#include <string.h>

#include <sodium.h>

/* contextString = "OPRFV1-" || I2OSP(modeOPRF, 1) || "-" || "ristretto255-SHA512" */
#define CTX "OPRFV1-\x00-ristretto255-SHA512"
#define CTX_LEN 27
static const uint8_t dst_group[] = "HashToGroup-" CTX;
static const uint8_t dst_derive[] = "DeriveKeyPair" CTX;
static const uint8_t none[1] = {0};
enum { N = SPC_OPRF_ELEMENT_BYTES, OUT = SPC_OPRF_OUTPUT_BYTES };

/* expand_message_xmd(msg, DST, 64) with SHA-512 (RFC 9380 5.3.1): one block,
 * so uniform = b_1 = H(b_0 || 0x01 || DST'), b_0 = H(Z_pad || msg || 0x0040 ||
 * 0x00 || DST'). msg is given in up to three pieces (the DeriveKeyPair input
 * is seed || I2OSP(len(info), 2) || info || counter). */
static void expand64(const uint8_t *m1, size_t l1, const uint8_t *m2, size_t l2, const uint8_t *m3, size_t l3,
                     const uint8_t *dst, size_t dst_len, uint8_t out[64]) {
    static const uint8_t zpad[128] = {0};
    const uint8_t tail[3] = {0, 64, 0}, one = 1, dlen = (uint8_t)dst_len;
    uint8_t b0[64];
    crypto_hash_sha512_state st;
    crypto_hash_sha512_init(&st);
    crypto_hash_sha512_update(&st, zpad, sizeof zpad);
    crypto_hash_sha512_update(&st, m1, l1);
    crypto_hash_sha512_update(&st, m2, l2);
    crypto_hash_sha512_update(&st, m3, l3);
    crypto_hash_sha512_update(&st, tail, sizeof tail);
    crypto_hash_sha512_update(&st, dst, dst_len);
    crypto_hash_sha512_update(&st, &dlen, 1);
    crypto_hash_sha512_final(&st, b0);
    crypto_hash_sha512_init(&st);
    crypto_hash_sha512_update(&st, b0, sizeof b0);
    crypto_hash_sha512_update(&st, &one, 1);
    crypto_hash_sha512_update(&st, dst, dst_len);
    crypto_hash_sha512_update(&st, &dlen, 1);
    crypto_hash_sha512_final(&st, out);
    sodium_memzero(b0, sizeof b0);
    sodium_memzero(&st, sizeof st);
}

/* Opens up to three buffers of the expected sizes (0: any size); on failure
 * closes what it opened. */
static spc_status open3(spc_buffer *a, size_t na, uint8_t **pa, spc_buffer *b, size_t nb, uint8_t **pb, spc_buffer *c,
                        size_t nc, uint8_t **pc) {
    spc_buffer *bufs[3] = {a, b, c};
    size_t sizes[3] = {na, nb, nc};
    uint8_t **ptrs[3] = {pa, pb, pc};
    if (!spc__ready()) return SPC_E_INIT;
    for (int i = 0; i < 3; i++)
        if (bufs[i] != NULL && sizes[i] != 0 && spc_buffer_size(bufs[i]) != sizes[i]) return SPC_E_ARGUMENT;
    for (int i = 0; i < 3; i++) {
        if (bufs[i] == NULL) continue;
        spc_status rc = spc_buffer_open(bufs[i], ptrs[i]);
        if (rc != SPC_OK) {
            while (i-- > 0)
                if (bufs[i] != NULL) spc_buffer_close(bufs[i]);
            return rc;
        }
    }
    return SPC_OK;
}

static void close3(spc_buffer *a, spc_buffer *b, spc_buffer *c) {
    if (a != NULL) spc_buffer_close(a);
    if (b != NULL) spc_buffer_close(b);
    if (c != NULL) spc_buffer_close(c);
}

/* A public verdict on secret-derived bytes: all zero (the identity encoding,
 * or the zero scalar). sodium_is_zero does not branch on the contents. */
static int is_zero_public(const uint8_t *p, size_t n) {
    int zero = sodium_is_zero(p, n);
    SPC_DECLASSIFY(&zero, sizeof zero);
    return zero;
}

spc_status spc_oprf_derive_key(spc_buffer *seed, const uint8_t *info, size_t info_len, spc_buffer *sk) {
    uint8_t *s, *k, wide[64];
    if (info_len > 0xFFFF) return SPC_E_ARGUMENT;
    spc_status rc = open3(seed, 32, &s, sk, N, &k, NULL, 0, NULL);
    if (rc != SPC_OK) return rc;
    const uint8_t len2[2] = {(uint8_t)(info_len >> 8), (uint8_t)info_len};
    rc = SPC_E_ARGUMENT; /* every counter gave the zero scalar: probability 2^-64000 */
    for (unsigned counter = 0; counter < 256; counter++) {
        uint8_t c = (uint8_t)counter, msg[32 + 2];
        memcpy(msg, s, 32), memcpy(msg + 32, len2, 2);
        expand64(msg, sizeof msg, info, info_len, &c, 1, dst_derive, sizeof dst_derive - 1, wide);
        sodium_memzero(msg, sizeof msg);
        crypto_core_ristretto255_scalar_reduce(k, wide);
        if (!is_zero_public(k, N)) {
            rc = SPC_OK;
            break;
        }
    }
    sodium_memzero(wide, sizeof wide);
    if (rc != SPC_OK) sodium_memzero(k, N);
    close3(seed, sk, NULL);
    return rc;
}

spc_status spc_oprf_random_scalar(spc_buffer *scalar) {
    uint8_t *r;
    spc_status rc = open3(scalar, N, &r, NULL, 0, NULL, NULL, 0, NULL);
    if (rc != SPC_OK) return rc;
    crypto_core_ristretto255_scalar_random(r); /* uniform in 1 ... L-1 */
    close3(scalar, NULL, NULL);
    return SPC_OK;
}

/* HashToGroup(input) * scalar; SPC_E_ARGUMENT when the input hashes to the
 * identity (RFC 9497 Blind: InvalidInputError). */
static spc_status hash_and_multiply(const uint8_t *input, size_t len, const uint8_t *scalar, uint8_t out[N]) {
    uint8_t wide[64], point[N];
    expand64(input, len, none, 0, none, 0, dst_group, sizeof dst_group - 1, wide);
    crypto_core_ristretto255_from_hash(point, wide);
    spc_status rc = is_zero_public(point, N) ? SPC_E_ARGUMENT : SPC_OK;
    /* Fails only for the identity result, impossible with a nonzero scalar of a prime-order group. */
    if (rc == SPC_OK && crypto_scalarmult_ristretto255(out, scalar, point) != 0) rc = SPC_E_ARGUMENT;
    sodium_memzero(wide, sizeof wide);
    sodium_memzero(point, sizeof point);
    return rc;
}

spc_status spc_oprf_blind(spc_buffer *input, spc_buffer *blind, uint8_t blinded[SPC_OPRF_ELEMENT_BYTES]) {
    uint8_t *in, *r;
    memset(blinded, 0, N);
    spc_status rc = open3(input, 0, &in, blind, N, &r, NULL, 0, NULL);
    if (rc != SPC_OK) return rc;
    rc = hash_and_multiply(in, spc_buffer_size(input), r, blinded);
    close3(input, blind, NULL);
    return rc;
}

/* DeserializeElement: a canonical encoding of a point other than the identity. */
static int element_ok(const uint8_t e[N]) {
    return crypto_core_ristretto255_is_valid_point(e) == 1 && !sodium_is_zero(e, N);
}

spc_status spc_oprf_blind_evaluate(spc_buffer *sk, const uint8_t blinded[SPC_OPRF_ELEMENT_BYTES],
                                   uint8_t evaluated[SPC_OPRF_ELEMENT_BYTES]) {
    uint8_t *k;
    memset(evaluated, 0, N);
    if (!element_ok(blinded)) return SPC_E_ARGUMENT;
    spc_status rc = open3(sk, N, &k, NULL, 0, NULL, NULL, 0, NULL);
    if (rc != SPC_OK) return rc;
    int bad = crypto_scalarmult_ristretto255(evaluated, k, blinded);
    SPC_DECLASSIFY(&bad, sizeof bad); /* the identity: only for the zero key, which DeriveKeyPair never returns */
    close3(sk, NULL, NULL);
    return bad == 0 ? SPC_OK : SPC_E_ARGUMENT;
}

spc_status spc_oprf_finalize(spc_buffer *input, spc_buffer *blind, const uint8_t evaluated[SPC_OPRF_ELEMENT_BYTES],
                             spc_buffer *output) {
    uint8_t *in, *r, *out, inv[32], unblinded[N];
    if (!element_ok(evaluated)) return SPC_E_ARGUMENT;
    if (spc_buffer_size(input) > 0xFFFF) return SPC_E_ARGUMENT;
    spc_status rc = open3(input, 0, &in, blind, N, &r, output, OUT, &out);
    if (rc != SPC_OK) return rc;
    /* A zero blind has no inverse; spc_oprf_random_scalar never returns it. */
    int bad = crypto_core_ristretto255_scalar_invert(inv, r);
    bad |= crypto_scalarmult_ristretto255(unblinded, inv, evaluated);
    SPC_DECLASSIFY(&bad, sizeof bad);
    size_t len = spc_buffer_size(input);
    const uint8_t ilen[2] = {(uint8_t)(len >> 8), (uint8_t)len}, elen[2] = {0, N};
    crypto_hash_sha512_state st;
    crypto_hash_sha512_init(&st);
    crypto_hash_sha512_update(&st, ilen, 2);
    crypto_hash_sha512_update(&st, in, len);
    crypto_hash_sha512_update(&st, elen, 2);
    crypto_hash_sha512_update(&st, unblinded, N);
    crypto_hash_sha512_update(&st, (const uint8_t *)"Finalize", 8);
    crypto_hash_sha512_final(&st, out);
    if (bad != 0) sodium_memzero(out, OUT);
    sodium_memzero(&st, sizeof st);
    sodium_memzero(inv, sizeof inv);
    sodium_memzero(unblinded, sizeof unblinded);
    close3(input, blind, output);
    return bad == 0 ? SPC_OK : SPC_E_ARGUMENT;
}
