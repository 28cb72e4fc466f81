/* test_pq.c — tests of CPostQuantum: round trips, implicit rejection, every
 * input check, and (with a directory argument) every case of the NIST
 * known-answer files kat_MLKEM_768.rsp, kat_MLKEM_1024.rsp,
 * kat_MLDSA_65_det_pure.rsp and kat_MLDSA_87_det_pure.rsp (the Makefile
 * fetches them into the build folder). Usage: test_pq [KAT-DIR] */
#define _GNU_SOURCE
#include "post_quantum.h"
#include "pq_internal.h"
#include "check.h"

#include <sodium.h>

static const pq_mlkem_param KEMS[] = {PQ_MLKEM_768, PQ_MLKEM_1024};
static const pq_mldsa_param DSAS[] = {PQ_MLDSA_65, PQ_MLDSA_87};

static void test_hashes(void) {
    /* FIPS 202 examples: the empty message, and 200 bytes of 0xA3 (rate-crossing). */
    uint8_t out[64], want[64], msg[200];
    pq_sha3_256(out, NULL, 0);
    unhex("a7ffc6f8bf1ed76651c14756a061d662f580ff4de43b49fa82d80a4b80f8434a", want);
    CHECK(memcmp(out, want, 32) == 0);
    memset(msg, 0xA3, sizeof msg);
    pq_sha3_512(out, msg, sizeof msg);
    unhex("e76dfad22084a8b1467fcf2ffa58361bec7628edf5f3fdc0e4805dc48caeeca81b7c13c30adf52a3659584739a2df46be589c51ca1a4a8416df6545a1ce8ba00", want);
    CHECK(memcmp(out, want, 64) == 0);
    pq_shake256(out, 32, NULL, 0);
    unhex("46b9dd2b0ba88d13233b3feb743eeb243fcd52ea62b81b82b50c27646ed5762f", want);
    CHECK(memcmp(out, want, 32) == 0);
    /* Incremental absorb and squeeze equal one-shot. */
    pq_keccak k;
    uint8_t a[300], b[300];
    pq_keccak_init(&k, PQ_SHAKE256_RATE, 0x1F);
    for (int i = 0; i < 200; i += 7) pq_keccak_absorb(&k, msg + i, i + 7 <= 200 ? 7 : (size_t)(200 - i));
    pq_keccak_finish(&k);
    for (int i = 0; i < 300; i += 50) pq_keccak_squeeze(&k, a + i, 50);
    pq_shake256(b, 300, msg, 200);
    CHECK(memcmp(a, b, 300) == 0);
}

static void test_packing(void) {
    uint32_t v[256], back[256];
    uint8_t buf[32 * 20];
    for (unsigned bits = 1; bits <= 20; bits++) {
        for (int i = 0; i < 256; i++) v[i] = (uint32_t)(i * 2654435761u) & ((1u << bits) - 1);
        pq_pack(buf, v, bits);
        pq_unpack(back, buf, bits);
        CHECK(memcmp(v, back, sizeof v) == 0);
    }
    uint8_t x[5] = {1, 2, 3, 4, 5}, y[5] = {1, 2, 3, 4, 5};
    CHECK_EQ(pq_ct_equal_mask(x, y, 5), 0xFF);
    y[4] ^= 0x80;
    CHECK_EQ(pq_ct_equal_mask(x, y, 5), 0);
}

static void test_sizes(void) {
    CHECK_EQ(pq_mlkem_ek_bytes(PQ_MLKEM_768), PQ_MLKEM768_EK_BYTES);
    CHECK_EQ(pq_mlkem_dk_bytes(PQ_MLKEM_768), PQ_MLKEM768_DK_BYTES);
    CHECK_EQ(pq_mlkem_ct_bytes(PQ_MLKEM_768), PQ_MLKEM768_CT_BYTES);
    CHECK_EQ(pq_mlkem_ek_bytes(PQ_MLKEM_1024), PQ_MLKEM1024_EK_BYTES);
    CHECK_EQ(pq_mlkem_dk_bytes(PQ_MLKEM_1024), PQ_MLKEM1024_DK_BYTES);
    CHECK_EQ(pq_mlkem_ct_bytes(PQ_MLKEM_1024), PQ_MLKEM1024_CT_BYTES);
    CHECK_EQ(pq_mldsa_pk_bytes(PQ_MLDSA_65), PQ_MLDSA65_PK_BYTES);
    CHECK_EQ(pq_mldsa_sk_bytes(PQ_MLDSA_65), PQ_MLDSA65_SK_BYTES);
    CHECK_EQ(pq_mldsa_sig_bytes(PQ_MLDSA_65), PQ_MLDSA65_SIG_BYTES);
    CHECK_EQ(pq_mldsa_pk_bytes(PQ_MLDSA_87), PQ_MLDSA87_PK_BYTES);
    CHECK_EQ(pq_mldsa_sk_bytes(PQ_MLDSA_87), PQ_MLDSA87_SK_BYTES);
    CHECK_EQ(pq_mldsa_sig_bytes(PQ_MLDSA_87), PQ_MLDSA87_SIG_BYTES);
    CHECK_EQ(pq_mlkem_ek_bytes((pq_mlkem_param)2), 0);
    CHECK_EQ(pq_mlkem_dk_bytes((pq_mlkem_param)2), 0);
    CHECK_EQ(pq_mlkem_ct_bytes((pq_mlkem_param)2), 0);
    CHECK_EQ(pq_mldsa_pk_bytes((pq_mldsa_param)44), 0);
    CHECK_EQ(pq_mldsa_sk_bytes((pq_mldsa_param)44), 0);
    CHECK_EQ(pq_mldsa_sig_bytes((pq_mldsa_param)44), 0);
}

static int all_zero(const uint8_t *p, size_t n) {
    uint8_t acc = 0;
    for (size_t i = 0; i < n; i++) acc |= p[i];
    return acc == 0;
}

static void test_mlkem_round_trip(void) {
    static uint8_t ek[PQ_MLKEM1024_EK_BYTES], dk[PQ_MLKEM1024_DK_BYTES], ct[PQ_MLKEM1024_CT_BYTES];
    uint8_t seed[64], ss1[32], ss2[32], ss3[32], m[32];
    for (int pi = 0; pi < 2; pi++) {
        pq_mlkem_param p = KEMS[pi];
        size_t ekn = pq_mlkem_ek_bytes(p), dkn = pq_mlkem_dk_bytes(p), ctn = pq_mlkem_ct_bytes(p);
        for (int round = 0; round < 20; round++) {
            randombytes_buf(seed, sizeof seed);
            CHECK_EQ(pq_mlkem_keygen(p, seed, ek, dk), PQ_OK);
            CHECK_EQ(pq_mlkem_encaps(p, ek, ekn, ct, ss1), PQ_OK);
            CHECK_EQ(pq_mlkem_decaps(p, dk, dkn, ct, ctn, ss2), PQ_OK);
            CHECK(memcmp(ss1, ss2, 32) == 0);
            /* A flipped bit: the implicit-rejection secret J(z || c'), not K. */
            ct[round * 37 % ctn] ^= (uint8_t)(1u << (round % 8));
            CHECK_EQ(pq_mlkem_decaps(p, dk, dkn, ct, ctn, ss3), PQ_OK);
            CHECK(memcmp(ss3, ss1, 32) != 0);
            pq_keccak j;
            pq_keccak_init(&j, PQ_SHAKE256_RATE, 0x1F);
            pq_keccak_absorb(&j, dk + dkn - 32, 32);
            pq_keccak_absorb(&j, ct, ctn);
            pq_keccak_finish(&j);
            pq_keccak_squeeze(&j, ss2, 32);
            CHECK(memcmp(ss3, ss2, 32) == 0);
        }
        /* Explicit m is deterministic; a different m gives a different secret. */
        memset(m, 7, sizeof m);
        CHECK_EQ(pq_mlkem_encaps_derand(p, ek, ekn, m, ct, ss1), PQ_OK);
        CHECK_EQ(pq_mlkem_encaps_derand(p, ek, ekn, m, ct, ss2), PQ_OK);
        CHECK(memcmp(ss1, ss2, 32) == 0);
        m[0] ^= 1;
        CHECK_EQ(pq_mlkem_encaps_derand(p, ek, ekn, m, ct, ss2), PQ_OK);
        CHECK(memcmp(ss1, ss2, 32) != 0);
    }
}

static void test_mlkem_input_checks(void) {
    static uint8_t ek[PQ_MLKEM1024_EK_BYTES], dk[PQ_MLKEM1024_DK_BYTES], ct[PQ_MLKEM1024_CT_BYTES];
    uint8_t seed[64] = {1}, ss[32], m[32] = {2};
    for (int pi = 0; pi < 2; pi++) {
        pq_mlkem_param p = KEMS[pi];
        size_t ekn = pq_mlkem_ek_bytes(p), dkn = pq_mlkem_dk_bytes(p), ctn = pq_mlkem_ct_bytes(p);
        REQUIRE_OK(pq_mlkem_keygen(p, seed, ek, dk));
        CHECK_EQ(pq_mlkem_keygen((pq_mlkem_param)2, seed, ek, dk), PQ_E_INPUT);
        CHECK_EQ(pq_mlkem_keygen(p, NULL, ek, dk), PQ_E_INPUT);
        CHECK_EQ(pq_mlkem_keygen(p, seed, NULL, dk), PQ_E_INPUT);
        CHECK_EQ(pq_mlkem_keygen(p, seed, ek, NULL), PQ_E_INPUT);
        /* Encapsulation key: wrong length, a coefficient of q (in either half of a 3-byte pair). */
        memset(ss, 0xAA, sizeof ss);
        CHECK_EQ(pq_mlkem_encaps_derand(p, ek, ekn - 1, m, ct, ss), PQ_E_INPUT);
        CHECK(all_zero(ss, 32) && all_zero(ct, ctn));
        CHECK_EQ(pq_mlkem_encaps_derand(p, NULL, ekn, m, ct, ss), PQ_E_INPUT);
        CHECK_EQ(pq_mlkem_encaps_derand(p, ek, ekn, NULL, ct, ss), PQ_E_INPUT);
        CHECK_EQ(pq_mlkem_encaps_derand(p, ek, ekn, m, NULL, ss), PQ_E_INPUT);
        CHECK_EQ(pq_mlkem_encaps_derand(p, ek, ekn, m, ct, NULL), PQ_E_INPUT);
        CHECK_EQ(pq_mlkem_encaps_derand((pq_mlkem_param)5, ek, ekn, m, ct, ss), PQ_E_INPUT);
        uint8_t save[3];
        memcpy(save, ek + 300, 3);
        ek[300] = 0x01, ek[301] = (uint8_t)((ek[301] & 0xF0) | 0x0D); /* low: 0xD01 = 3329 */
        CHECK_EQ(pq_mlkem_encaps(p, ek, ekn, ct, ss), PQ_E_INPUT);
        memcpy(ek + 300, save, 3);
        ek[301] = (uint8_t)((ek[301] & 0x0F) | 0xF0), ek[302] = 0xFF; /* high: 0xFFF */
        CHECK_EQ(pq_mlkem_encaps(p, ek, ekn, ct, ss), PQ_E_INPUT);
        memcpy(ek + 300, save, 3);
        CHECK_EQ(pq_mlkem_encaps(p, ek, ekn, ct, ss), PQ_OK);
        /* Decapsulation: lengths, NULLs, and the hash check of the ek inside dk. */
        memset(ss, 0xAA, sizeof ss);
        CHECK_EQ(pq_mlkem_decaps(p, dk, dkn - 1, ct, ctn, ss), PQ_E_INPUT);
        CHECK(all_zero(ss, 32));
        CHECK_EQ(pq_mlkem_decaps(p, dk, dkn, ct, ctn + 1, ss), PQ_E_INPUT);
        CHECK_EQ(pq_mlkem_decaps(p, NULL, dkn, ct, ctn, ss), PQ_E_INPUT);
        CHECK_EQ(pq_mlkem_decaps(p, dk, dkn, NULL, ctn, ss), PQ_E_INPUT);
        CHECK_EQ(pq_mlkem_decaps(p, dk, dkn, ct, ctn, NULL), PQ_E_INPUT);
        CHECK_EQ(pq_mlkem_decaps((pq_mlkem_param)7, dk, dkn, ct, ctn, ss), PQ_E_INPUT);
        dk[dkn - 64 - 100] ^= 1; /* a byte of the ek copy */
        CHECK_EQ(pq_mlkem_decaps(p, dk, dkn, ct, ctn, ss), PQ_E_INPUT);
        dk[dkn - 64 - 100] ^= 1;
        dk[dkn - 40] ^= 1; /* a byte of H(ek) */
        CHECK_EQ(pq_mlkem_decaps(p, dk, dkn, ct, ctn, ss), PQ_E_INPUT);
        dk[dkn - 40] ^= 1;
        CHECK_EQ(pq_mlkem_decaps(p, dk, dkn, ct, ctn, ss), PQ_OK);
    }
}

static void test_mldsa_round_trip(void) {
    static uint8_t pk[PQ_MLDSA87_PK_BYTES], sk[PQ_MLDSA87_SK_BYTES], sig[PQ_MLDSA87_SIG_BYTES],
        sig2[PQ_MLDSA87_SIG_BYTES];
    uint8_t seed[32], msg[100], ctx[255], zero[32] = {0};
    for (int pi = 0; pi < 2; pi++) {
        pq_mldsa_param p = DSAS[pi];
        size_t pkn = pq_mldsa_pk_bytes(p), skn = pq_mldsa_sk_bytes(p), sgn = pq_mldsa_sig_bytes(p);
        for (int round = 0; round < 10; round++) {
            randombytes_buf(seed, sizeof seed), randombytes_buf(msg, sizeof msg), randombytes_buf(ctx, sizeof ctx);
            size_t ctxn = (size_t)round * 28;
            CHECK_EQ(pq_mldsa_keygen(p, seed, pk, sk), PQ_OK);
            CHECK_EQ(pq_mldsa_sign(p, sk, skn, msg, sizeof msg, ctx, ctxn, NULL, sig), PQ_OK);
            CHECK_EQ(pq_mldsa_verify(p, pk, pkn, msg, sizeof msg, ctx, ctxn, sig, sgn), PQ_OK);
            /* Hedged signatures differ; deterministic ones repeat; all verify. */
            CHECK_EQ(pq_mldsa_sign(p, sk, skn, msg, sizeof msg, ctx, ctxn, NULL, sig2), PQ_OK);
            CHECK(memcmp(sig, sig2, sgn) != 0);
            CHECK_EQ(pq_mldsa_sign(p, sk, skn, msg, sizeof msg, ctx, ctxn, zero, sig), PQ_OK);
            CHECK_EQ(pq_mldsa_sign(p, sk, skn, msg, sizeof msg, ctx, ctxn, zero, sig2), PQ_OK);
            CHECK(memcmp(sig, sig2, sgn) == 0);
            CHECK_EQ(pq_mldsa_verify(p, pk, pkn, msg, sizeof msg, ctx, ctxn, sig, sgn), PQ_OK);
            /* Another message, another context, a flipped signature bit: refused. */
            msg[round] ^= 1;
            CHECK_EQ(pq_mldsa_verify(p, pk, pkn, msg, sizeof msg, ctx, ctxn, sig, sgn), PQ_E_INPUT);
            msg[round] ^= 1;
            CHECK_EQ(pq_mldsa_verify(p, pk, pkn, msg, sizeof msg, ctx, ctxn + 1, sig, sgn), PQ_E_INPUT);
            sig[(size_t)round * 331 % sgn] ^= 0x10;
            CHECK_EQ(pq_mldsa_verify(p, pk, pkn, msg, sizeof msg, ctx, ctxn, sig, sgn), PQ_E_INPUT);
        }
        /* An empty message without a context. */
        CHECK_EQ(pq_mldsa_sign(p, sk, skn, NULL, 0, NULL, 0, zero, sig), PQ_OK);
        CHECK_EQ(pq_mldsa_verify(p, pk, pkn, NULL, 0, NULL, 0, sig, sgn), PQ_OK);
    }
}

/* A hint section edited in place: every malformation of FIPS 204 Algorithm 21. */
static void test_mldsa_input_checks(void) {
    static uint8_t pk[PQ_MLDSA87_PK_BYTES], sk[PQ_MLDSA87_SK_BYTES], sig[PQ_MLDSA87_SIG_BYTES],
        bad[PQ_MLDSA87_SIG_BYTES];
    uint8_t seed[32] = {9}, msg[3] = {1, 2, 3}, ctx[256] = {0};
    for (int pi = 0; pi < 2; pi++) {
        pq_mldsa_param p = DSAS[pi];
        size_t pkn = pq_mldsa_pk_bytes(p), skn = pq_mldsa_sk_bytes(p), sgn = pq_mldsa_sig_bytes(p);
        unsigned k = p == PQ_MLDSA_65 ? 6 : 8, omega = p == PQ_MLDSA_65 ? 55 : 75;
        REQUIRE_OK(pq_mldsa_keygen(p, seed, pk, sk));
        CHECK_EQ(pq_mldsa_keygen((pq_mldsa_param)44, seed, pk, sk), PQ_E_INPUT);
        CHECK_EQ(pq_mldsa_keygen(p, NULL, pk, sk), PQ_E_INPUT);
        CHECK_EQ(pq_mldsa_keygen(p, seed, NULL, sk), PQ_E_INPUT);
        CHECK_EQ(pq_mldsa_keygen(p, seed, pk, NULL), PQ_E_INPUT);
        REQUIRE_OK(pq_mldsa_sign(p, sk, skn, msg, 3, ctx, 0, NULL, sig));
        /* Signing: a context of 256 bytes, a short key, NULLs: refused, sig zeroed. */
        CHECK_EQ(pq_mldsa_sign(p, sk, skn, msg, 3, ctx, 256, NULL, bad), PQ_E_INPUT);
        CHECK(all_zero(bad, sgn));
        CHECK_EQ(pq_mldsa_sign(p, sk, skn - 1, msg, 3, ctx, 0, NULL, bad), PQ_E_INPUT);
        CHECK_EQ(pq_mldsa_sign(p, NULL, skn, msg, 3, ctx, 0, NULL, bad), PQ_E_INPUT);
        CHECK_EQ(pq_mldsa_sign(p, sk, skn, NULL, 3, ctx, 0, NULL, bad), PQ_E_INPUT);
        CHECK_EQ(pq_mldsa_sign(p, sk, skn, msg, 3, NULL, 1, NULL, bad), PQ_E_INPUT);
        CHECK_EQ(pq_mldsa_sign(p, sk, skn, msg, 3, ctx, 0, NULL, NULL), PQ_E_INPUT);
        CHECK_EQ(pq_mldsa_sign((pq_mldsa_param)44, sk, skn, msg, 3, ctx, 0, NULL, bad), PQ_E_INPUT);
        /* Verification: lengths, NULLs, context length. */
        CHECK_EQ(pq_mldsa_verify(p, pk, pkn, msg, 3, ctx, 0, sig, sgn), PQ_OK);
        CHECK_EQ(pq_mldsa_verify(p, pk, pkn - 1, msg, 3, ctx, 0, sig, sgn), PQ_E_INPUT);
        CHECK_EQ(pq_mldsa_verify(p, pk, pkn, msg, 3, ctx, 0, sig, sgn + 1), PQ_E_INPUT);
        CHECK_EQ(pq_mldsa_verify(p, NULL, pkn, msg, 3, ctx, 0, sig, sgn), PQ_E_INPUT);
        CHECK_EQ(pq_mldsa_verify(p, pk, pkn, msg, 3, ctx, 0, NULL, sgn), PQ_E_INPUT);
        CHECK_EQ(pq_mldsa_verify(p, pk, pkn, msg, 3, ctx, 256, sig, sgn), PQ_E_INPUT);
        CHECK_EQ(pq_mldsa_verify((pq_mldsa_param)44, pk, pkn, msg, 3, ctx, 0, sig, sgn), PQ_E_INPUT);
        uint8_t *h = sig + sgn - omega - k, *hb = bad + sgn - omega - k;
        /* A count above omega, counts decreasing, indices not increasing, a non-zero unused slot. */
        memcpy(bad, sig, sgn);
        hb[omega + k - 1] = (uint8_t)(omega + 1);
        CHECK_EQ(pq_mldsa_verify(p, pk, pkn, msg, 3, ctx, 0, bad, sgn), PQ_E_INPUT);
        memcpy(bad, sig, sgn);
        hb[omega] = 2, hb[omega + 1] = 1, hb[0] = 3, hb[1] = 5;
        CHECK_EQ(pq_mldsa_verify(p, pk, pkn, msg, 3, ctx, 0, bad, sgn), PQ_E_INPUT);
        memcpy(bad, sig, sgn);
        hb[omega] = (uint8_t)(h[omega] > 2 ? h[omega] : 2), hb[0] = 9, hb[1] = 9;
        CHECK_EQ(pq_mldsa_verify(p, pk, pkn, msg, 3, ctx, 0, bad, sgn), PQ_E_INPUT);
        memcpy(bad, sig, sgn);
        if (h[omega + k - 1] < omega) {
            hb[omega - 1] = 1;
            CHECK_EQ(pq_mldsa_verify(p, pk, pkn, msg, 3, ctx, 0, bad, sgn), PQ_E_INPUT);
        }
        /* ||z|| at the bound gamma1 - beta: the first z coefficient set to gamma1 - (gamma1 - beta). */
        memcpy(bad, sig, sgn);
        unsigned beta = p == PQ_MLDSA_65 ? 196 : 120, ct_bytes = p == PQ_MLDSA_65 ? 48 : 64;
        uint32_t v = beta; /* stored as gamma1 - z: z = gamma1 - beta */
        uint8_t *z = bad + ct_bytes;
        z[0] = (uint8_t)v, z[1] = (uint8_t)(v >> 8), z[2] = (uint8_t)((z[2] & 0xF0) | ((v >> 16) & 0x0F));
        CHECK_EQ(pq_mldsa_verify(p, pk, pkn, msg, 3, ctx, 0, bad, sgn), PQ_E_INPUT);
    }
}

/* ---- Known answers ---- */

typedef struct {
    char *key[16], *val[16];
    int n;
} record;

static const char *field(const record *r, const char *key) {
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->key[i], key) == 0) return r->val[i];
    fprintf(stderr, "KAT record without field %s\n", key);
    exit(1);
}

/* Hex of `want_len` bytes into a fresh buffer; checks the length. */
static uint8_t *bytes(const record *r, const char *key, size_t *len) {
    const char *hex = field(r, key);
    size_t n = strlen(hex) / 2;
    uint8_t *out = malloc(n + 1);
    if (!out) exit(1);
    unhex(hex, out);
    *len = n;
    return out;
}

static size_t kat_mlkem(const record *r, pq_mlkem_param p) {
    size_t zn, dn, mn, pkn, skn, ctn, ssn, ctnn, ssnn;
    uint8_t *z = bytes(r, "z", &zn), *d = bytes(r, "d", &dn), *m = bytes(r, "msg", &mn), *pk = bytes(r, "pk", &pkn),
            *sk = bytes(r, "sk", &skn), *ct = bytes(r, "ct", &ctn), *ss = bytes(r, "ss", &ssn),
            *ct_n = bytes(r, "ct_n", &ctnn), *ss_n = bytes(r, "ss_n", &ssnn);
    static uint8_t ek[PQ_MLKEM1024_EK_BYTES], dk[PQ_MLKEM1024_DK_BYTES], c[PQ_MLKEM1024_CT_BYTES];
    uint8_t seed[64], k[32];
    CHECK(zn == 32 && dn == 32 && mn == 32 && ssn == 32 && ssnn == 32);
    CHECK(pkn == pq_mlkem_ek_bytes(p) && skn == pq_mlkem_dk_bytes(p) && ctn == pq_mlkem_ct_bytes(p) && ctnn == ctn);
    memcpy(seed, d, 32), memcpy(seed + 32, z, 32);
    CHECK_EQ(pq_mlkem_keygen(p, seed, ek, dk), PQ_OK);
    CHECK(memcmp(ek, pk, pkn) == 0);
    CHECK(memcmp(dk, sk, skn) == 0);
    CHECK_EQ(pq_mlkem_encaps_derand(p, pk, pkn, m, c, k), PQ_OK);
    CHECK(memcmp(c, ct, ctn) == 0);
    CHECK(memcmp(k, ss, 32) == 0);
    CHECK_EQ(pq_mlkem_decaps(p, sk, skn, ct, ctn, k), PQ_OK);
    CHECK(memcmp(k, ss, 32) == 0);
    CHECK_EQ(pq_mlkem_decaps(p, sk, skn, ct_n, ctnn, k), PQ_OK); /* implicit rejection */
    CHECK(memcmp(k, ss_n, 32) == 0);
    free(z), free(d), free(m), free(pk), free(sk), free(ct), free(ss), free(ct_n), free(ss_n);
    return 1;
}

static size_t kat_mldsa(const record *r, pq_mldsa_param p) {
    size_t xn, pkn, skn, mn, smn, ctxn;
    uint8_t *xi = bytes(r, "xi", &xn), *pk = bytes(r, "pk", &pkn), *sk = bytes(r, "sk", &skn),
            *msg = bytes(r, "msg", &mn), *sm = bytes(r, "sm", &smn), *ctx = bytes(r, "ctx", &ctxn);
    static uint8_t pub[PQ_MLDSA87_PK_BYTES], sec[PQ_MLDSA87_SK_BYTES], sig[PQ_MLDSA87_SIG_BYTES];
    const uint8_t zero[32] = {0};
    size_t sgn = pq_mldsa_sig_bytes(p);
    CHECK(xn == 32 && pkn == pq_mldsa_pk_bytes(p) && skn == pq_mldsa_sk_bytes(p));
    CHECK_EQ((size_t)atol(field(r, "mlen")), mn);
    CHECK_EQ((size_t)atol(field(r, "smlen")), smn);
    CHECK(smn == sgn + mn && memcmp(sm + sgn, msg, mn) == 0); /* sm = sig || msg */
    CHECK_EQ(pq_mldsa_keygen(p, xi, pub, sec), PQ_OK);
    CHECK(memcmp(pub, pk, pkn) == 0);
    CHECK(memcmp(sec, sk, skn) == 0);
    CHECK_EQ(pq_mldsa_sign(p, sk, skn, msg, mn, ctx, ctxn, zero, sig), PQ_OK);
    CHECK(memcmp(sig, sm, sgn) == 0);
    CHECK_EQ(pq_mldsa_verify(p, pk, pkn, msg, mn, ctx, ctxn, sm, sgn), PQ_OK);
    sm[sgn / 2] ^= 1;
    CHECK_EQ(pq_mldsa_verify(p, pk, pkn, msg, mn, ctx, ctxn, sm, sgn), PQ_E_INPUT);
    free(xi), free(pk), free(sk), free(msg), free(sm), free(ctx);
    return 1;
}

static void clear(record *r) {
    for (int i = 0; i < r->n; i++) free(r->key[i]), free(r->val[i]);
    r->n = 0;
}

/* Runs every "count = N" record of one .rsp file; prints how many ran. */
static void run_kat(const char *dir, const char *file, int kem, int param) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (!f) {
        printf("  %s: cannot read %s\n", file, path);
        return;
    }
    record r = {.n = 0};
    size_t ran = 0, cap = 0, records = 0;
    char *line = NULL;
    int before = check_failed;
    for (;;) {
        ssize_t len = getline(&line, &cap, f);
        int end = len < 0;
        if (!end)
            while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (end || strncmp(line, "count = ", 8) == 0) {
            if (r.n > 0) {
                records++;
                ran += kem ? kat_mlkem(&r, (pq_mlkem_param)param) : kat_mldsa(&r, (pq_mldsa_param)param);
                clear(&r);
            }
            if (end) break;
        }
        char *eq = strstr(line, " = ");
        if (!eq || r.n == 16) continue;
        *eq = 0;
        r.key[r.n] = strdup(line), r.val[r.n] = strdup(eq + 3);
        r.n++;
    }
    free(line);
    fclose(f);
    CHECK(ran > 0 && ran == records);
    printf("  %s: %zu of %zu cases ran, %s\n", file, ran, records, check_failed == before ? "all match" : "MISMATCH");
}

int main(int argc, char **argv) {
    if (sodium_init() < 0) return 1;
    RUN(test_hashes);
    RUN(test_packing);
    RUN(test_sizes);
    RUN(test_mlkem_round_trip);
    RUN(test_mlkem_input_checks);
    RUN(test_mldsa_round_trip);
    RUN(test_mldsa_input_checks);
    if (argc > 1) {
        run_kat(argv[1], "kat_MLKEM_768.rsp", 1, PQ_MLKEM_768);
        run_kat(argv[1], "kat_MLKEM_1024.rsp", 1, PQ_MLKEM_1024);
        run_kat(argv[1], "kat_MLDSA_65_det_pure.rsp", 0, PQ_MLDSA_65);
        run_kat(argv[1], "kat_MLDSA_87_det_pure.rsp", 0, PQ_MLDSA_87);
    }
    return check_summary("c-pq");
}
