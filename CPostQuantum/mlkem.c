/* mlkem.c — ML-KEM-768 and ML-KEM-1024 (FIPS 203). Arithmetic mod q = 3329
 * in signed 16-bit coefficients with Montgomery (R = 2^16) and Barrett
 * reductions, branch-free; the NTT follows the standard's Algorithms 9 and
 * 10 with the zetas in Montgomery form. The only data-dependent branches are
 * on public data: SampleNTT's rejection (the public seed rho) and the
 * encapsulation key's modulus check. */
#include "post_quantum.h"
#include "pq_internal.h"

#include <string.h>

#define Q 3329
#define QINV (-3327) /* q^-1 mod 2^16 */
#define KMAX 4

typedef struct {
    int16_t c[256];
} poly;

/* zeta^bitrev7(i) * 2^16 mod q, centred (FIPS 203 Appendix A, in Montgomery form). */
static const int16_t zetas[128] = {
    -1044, -758,  -359,  -1517, 1493,  1422,  287,   202,   -171,  622,   1577,  182,   962,   -1202, -1474, 1468,
    573,   -1325, 264,   383,   -829,  1458,  -1602, -130,  -681,  1017,  732,   608,   -1542, 411,   -205,  -1571,
    1223,  652,   -552,  1015,  -1293, 1491,  -282,  -1544, 516,   -8,    -320,  -666,  -1618, -1162, 126,   1469,
    -853,  -90,   -271,  830,   107,   -1421, -247,  -951,  -398,  961,   -1508, -725,  448,   -1065, 677,   -1275,
    -1103, 430,   555,   843,   -1251, 871,   1550,  105,   422,   587,   177,   -235,  -291,  -460,  1574,  1653,
    -246,  778,   1159,  -147,  -777,  1483,  -602,  1119,  -1590, 644,   -872,  349,   418,   329,   -156,  -75,
    817,   1097,  603,   610,   1322,  -1285, -1465, 384,   -1215, -136,  1218,  -1335, -874,  220,   -1187, -1659,
    -1185, -1530, -1278, 794,   -1510, -854,  -870,  478,   -108,  -308,  996,   991,   958,   -1460, 1522,  1628};

static int16_t montgomery_reduce(int32_t a) {
    int16_t t = (int16_t)((int16_t)a * QINV);
    return (int16_t)((a - (int32_t)t * Q) >> 16);
}

/* Centred representative of a mod q, for |a| < 2^15. */
static int16_t barrett_reduce(int16_t a) {
    const int16_t v = ((1 << 26) + Q / 2) / Q;
    int16_t t = (int16_t)(((int32_t)v * a + (1 << 25)) >> 26);
    return (int16_t)(a - t * Q);
}

static int16_t fqmul(int16_t a, int16_t b) { return montgomery_reduce((int32_t)a * b); }

/* From (-q, q) to [0, q) with a mask. */
static uint32_t canonical(int16_t a) { return (uint32_t)(int16_t)(a + ((a >> 15) & Q)); }

static void poly_reduce(poly *r) {
    for (int i = 0; i < 256; i++) r->c[i] = barrett_reduce(r->c[i]);
}

static void ntt(poly *r) {
    unsigned k = 1;
    for (unsigned len = 128; len >= 2; len >>= 1)
        for (unsigned start = 0; start < 256; start += 2 * len) {
            int16_t zeta = zetas[k++];
            for (unsigned j = start; j < start + len; j++) {
                int16_t t = fqmul(zeta, r->c[j + len]);
                r->c[j + len] = (int16_t)(r->c[j] - t);
                r->c[j] = (int16_t)(r->c[j] + t);
            }
        }
    poly_reduce(r);
}

/* Inverse NTT, times 2^16 (the factor f = 1441 is 2^32 / 128 mod q). */
static void invntt(poly *r) {
    unsigned k = 127;
    for (unsigned len = 2; len <= 128; len <<= 1)
        for (unsigned start = 0; start < 256; start += 2 * len) {
            int16_t zeta = zetas[k--];
            for (unsigned j = start; j < start + len; j++) {
                int16_t t = r->c[j];
                r->c[j] = barrett_reduce((int16_t)(t + r->c[j + len]));
                r->c[j + len] = fqmul(zeta, (int16_t)(r->c[j + len] - t));
            }
        }
    for (int j = 0; j < 256; j++) r->c[j] = fqmul(r->c[j], 1441);
}

/* r += a o b in the NTT domain (Algorithms 11, 12), times 2^-16. */
static void basemul_acc(poly *r, const poly *a, const poly *b) {
    for (int i = 0; i < 64; i++)
        for (int s = 0; s < 2; s++) {
            int16_t zeta = (int16_t)(s ? -zetas[64 + i] : zetas[64 + i]);
            const int16_t *x = &a->c[4 * i + 2 * s], *y = &b->c[4 * i + 2 * s];
            int16_t *z = &r->c[4 * i + 2 * s];
            z[0] = (int16_t)(z[0] + fqmul(fqmul(x[1], y[1]), zeta) + fqmul(x[0], y[0]));
            z[1] = (int16_t)(z[1] + fqmul(x[0], y[1]) + fqmul(x[1], y[0]));
        }
}

/* round(2^d / q * x) mod 2^d for x in [0, q), as floor((x 2^(d+1) + q) / 2q)
 * with an exact multiply-shift in place of the division. */
static uint32_t compress(uint32_t x, unsigned d) {
    uint64_t y = ((uint64_t)x << (d + 1)) + Q;
    return (uint32_t)((y * ((1ULL << 48) / (2 * Q) + 1)) >> 48) & ((1u << d) - 1);
}

static int16_t decompress(uint32_t y, unsigned d) { return (int16_t)((y * Q + (1u << (d - 1))) >> d); }

static void poly_pack_compressed(uint8_t *out, const poly *a, unsigned d) {
    uint32_t v[256];
    for (int i = 0; i < 256; i++) v[i] = d == 12 ? canonical(a->c[i]) : compress(canonical(a->c[i]), d);
    pq_pack(out, v, d);
    PQ_WIPE(v);
}

static void poly_unpack_decompressed(poly *a, const uint8_t *in, unsigned d) {
    uint32_t v[256];
    pq_unpack(v, in, d);
    for (int i = 0; i < 256; i++) a->c[i] = d == 12 ? (int16_t)v[i] : decompress(v[i], d);
    PQ_WIPE(v);
}

/* SampleNTT (Algorithm 7): rejection on the public seed rho. */
static void sample_ntt(poly *a, const uint8_t rho[32], uint8_t x, uint8_t y) {
    pq_keccak k;
    uint8_t buf[PQ_SHAKE128_RATE], idx[2] = {x, y};
    pq_keccak_init(&k, PQ_SHAKE128_RATE, 0x1F);
    pq_keccak_absorb(&k, rho, 32);
    pq_keccak_absorb(&k, idx, 2);
    pq_keccak_finish(&k);
    for (unsigned j = 0; j < 256;) {
        pq_keccak_squeeze(&k, buf, sizeof buf);
        for (unsigned i = 0; i + 3 <= sizeof buf && j < 256; i += 3) {
            uint16_t d1 = (uint16_t)(buf[i] | ((buf[i + 1] & 0x0F) << 8));
            uint16_t d2 = (uint16_t)((buf[i + 1] >> 4) | (buf[i + 2] << 4));
            if (d1 < Q) a->c[j++] = (int16_t)d1;
            if (d2 < Q && j < 256) a->c[j++] = (int16_t)d2;
        }
    }
}

/* SamplePolyCBD_2(PRF_2(sigma, n)) (Algorithms 8 and the PRF of 4.1). */
static void sample_cbd2(poly *a, const uint8_t sigma[32], uint8_t n) {
    uint8_t in[33], buf[128];
    memcpy(in, sigma, 32);
    in[32] = n;
    pq_shake256(buf, sizeof buf, in, sizeof in);
    for (int i = 0; i < 128; i++) {
        unsigned b = buf[i];
        a->c[2 * i] = (int16_t)((int)((b & 1) + ((b >> 1) & 1)) - (int)(((b >> 2) & 1) + ((b >> 3) & 1)));
        a->c[2 * i + 1] = (int16_t)((int)(((b >> 4) & 1) + ((b >> 5) & 1)) - (int)(((b >> 6) & 1) + ((b >> 7) & 1)));
    }
    PQ_WIPE(in);
    PQ_WIPE(buf);
}

typedef struct {
    unsigned k, du, dv;
} params;

#define ALG_NAME(p) ((p) == PQ_MLKEM_768 ? "ML-KEM-768" : "ML-KEM-1024") /* the OpenSSL backend's */

static int get_params(pq_mlkem_param p, params *pr) {
    if (p == PQ_MLKEM_768) *pr = (params){3, 10, 4};
    else if (p == PQ_MLKEM_1024) *pr = (params){4, 11, 5};
    else return PQ_E_INPUT;
    return PQ_OK;
}

size_t pq_mlkem_ek_bytes(pq_mlkem_param p) {
    params pr;
    return get_params(p, &pr) ? 0 : 384 * pr.k + 32;
}
size_t pq_mlkem_dk_bytes(pq_mlkem_param p) {
    params pr;
    return get_params(p, &pr) ? 0 : 768 * pr.k + 96;
}
size_t pq_mlkem_ct_bytes(pq_mlkem_param p) {
    params pr;
    return get_params(p, &pr) ? 0 : 32 * (pr.du * pr.k + pr.dv);
}

/* The working state of one operation, wiped as a whole at its end. */
typedef struct {
    poly a[KMAX][KMAX], s[KMAX], e[KMAX], t[KMAX], u[KMAX], v, mu;
    uint8_t seeds[64], hash_in[64], kr[64], m[32], ct2[PQ_MLKEM1024_CT_BYTES];
    pq_keccak j;
} work;

/* K-PKE.Encrypt (Algorithm 14) of m with the randomness r; t and rho from ek. */
static void pke_encrypt(work *w, const params *pr, const uint8_t *ek, const uint8_t m[32], const uint8_t r[32],
                        uint8_t *ct) {
    const unsigned k = pr->k;
    const uint8_t *rho = ek + 384 * k;
    uint8_t n = 0;
    for (unsigned i = 0; i < k; i++) poly_unpack_decompressed(&w->t[i], ek + 384 * i, 12);
    for (unsigned i = 0; i < k; i++)
        for (unsigned j = 0; j < k; j++) sample_ntt(&w->a[i][j], rho, (uint8_t)j, (uint8_t)i);
    for (unsigned i = 0; i < k; i++) sample_cbd2(&w->s[i], r, n++); /* y */
    for (unsigned i = 0; i < k; i++) sample_cbd2(&w->e[i], r, n++); /* e1 */
    sample_cbd2(&w->mu, r, n++);                                     /* e2, then + mu */
    for (int i = 0; i < 256; i++) /* + Decompress_1(m): (q + 1) / 2 where the bit is set, by a mask */
        w->mu.c[i] = (int16_t)(w->mu.c[i] + (int16_t)(-pq_barrier((m[i / 8] >> (i % 8)) & 1) & ((Q + 1) / 2)));
    for (unsigned i = 0; i < k; i++) ntt(&w->s[i]);
    memset(&w->v, 0, sizeof w->v);
    for (unsigned i = 0; i < k; i++) {
        memset(&w->u[i], 0, sizeof(poly));
        for (unsigned j = 0; j < k; j++) basemul_acc(&w->u[i], &w->a[j][i], &w->s[j]); /* A^T y */
        basemul_acc(&w->v, &w->t[i], &w->s[i]);                                        /* t^T y */
    }
    for (unsigned i = 0; i < k; i++) {
        poly_reduce(&w->u[i]);
        invntt(&w->u[i]);
        for (int c = 0; c < 256; c++) w->u[i].c[c] = barrett_reduce((int16_t)(w->u[i].c[c] + w->e[i].c[c]));
        poly_pack_compressed(ct + 32 * pr->du * i, &w->u[i], pr->du);
    }
    poly_reduce(&w->v);
    invntt(&w->v);
    for (int c = 0; c < 256; c++) w->v.c[c] = barrett_reduce((int16_t)(w->v.c[c] + w->mu.c[c]));
    poly_pack_compressed(ct + 32 * pr->du * k, &w->v, pr->dv);
}

/* K-PKE.Decrypt (Algorithm 15) into w->m. */
static void pke_decrypt(work *w, const params *pr, const uint8_t *dk_pke, const uint8_t *ct) {
    const unsigned k = pr->k;
    memset(&w->v, 0, sizeof w->v);
    for (unsigned i = 0; i < k; i++) {
        poly_unpack_decompressed(&w->u[i], ct + 32 * pr->du * i, pr->du);
        ntt(&w->u[i]);
        poly_unpack_decompressed(&w->s[i], dk_pke + 384 * i, 12);
        basemul_acc(&w->v, &w->s[i], &w->u[i]);
    }
    poly_reduce(&w->v);
    invntt(&w->v);
    poly_unpack_decompressed(&w->mu, ct + 32 * pr->du * k, pr->dv);
    uint32_t bits[256];
    for (int i = 0; i < 256; i++) bits[i] = compress(canonical(barrett_reduce((int16_t)(w->mu.c[i] - w->v.c[i]))), 1);
    pq_pack(w->m, bits, 1);
    PQ_WIPE(bits);
}

int pq_mlkem_keygen(pq_mlkem_param p, const uint8_t seed[PQ_MLKEM_SEED_BYTES], uint8_t *ek, uint8_t *dk) {
    params pr;
    if (get_params(p, &pr) || !seed || !ek || !dk) return PQ_E_INPUT;
#ifdef PQ_BACKEND_OPENSSL
    return pq_openssl_keygen(ALG_NAME(p), seed, PQ_MLKEM_SEED_BYTES, ek, pq_mlkem_ek_bytes(p), dk, pq_mlkem_dk_bytes(p));
#endif
    const unsigned k = pr.k;
    work w;
    /* (rho, sigma) = G(d || k) */
    memcpy(w.hash_in, seed, 32);
    w.hash_in[32] = (uint8_t)k;
    pq_sha3_512(w.seeds, w.hash_in, 33);
    const uint8_t *rho = w.seeds, *sigma = w.seeds + 32;
    PQ_PUBLIC(rho, 32); /* published in ek */
    uint8_t n = 0;
    for (unsigned i = 0; i < k; i++)
        for (unsigned j = 0; j < k; j++) sample_ntt(&w.a[i][j], rho, (uint8_t)j, (uint8_t)i);
    for (unsigned i = 0; i < k; i++) sample_cbd2(&w.s[i], sigma, n++);
    for (unsigned i = 0; i < k; i++) sample_cbd2(&w.e[i], sigma, n++);
    for (unsigned i = 0; i < k; i++) ntt(&w.s[i]), ntt(&w.e[i]);
    for (unsigned i = 0; i < k; i++) {
        memset(&w.t[i], 0, sizeof(poly));
        for (unsigned j = 0; j < k; j++) basemul_acc(&w.t[i], &w.a[i][j], &w.s[j]);
        for (int c = 0; c < 256; c++) /* back from 2^-16 with 2^32 mod q, then + e */
            w.t[i].c[c] = barrett_reduce((int16_t)(fqmul(barrett_reduce(w.t[i].c[c]), 1353) + w.e[i].c[c]));
        poly_pack_compressed(ek + 384 * i, &w.t[i], 12);
        poly_pack_compressed(dk + 384 * i, &w.s[i], 12);
    }
    memcpy(ek + 384 * k, rho, 32);
    memcpy(dk + 384 * k, ek, 384 * k + 32);
    pq_sha3_256(dk + 768 * k + 32, ek, 384 * k + 32);
    memcpy(dk + 768 * k + 64, seed + 32, 32);
    PQ_WIPE(w);
    return PQ_OK;
}

/* Section 7.2: every 12-bit coefficient of ek is below q (public data). */
static int ek_valid(const params *pr, const uint8_t *ek, size_t ek_len) {
    if (!ek || ek_len != 384 * pr->k + 32) return 0;
    for (unsigned i = 0; i < 384 * pr->k; i += 3) {
        if ((ek[i] | ((ek[i + 1] & 0x0F) << 8)) >= Q) return 0;
        if (((ek[i + 1] >> 4) | (ek[i + 2] << 4)) >= Q) return 0;
    }
    return 1;
}

int pq_mlkem_encaps_derand(pq_mlkem_param p, const uint8_t *ek, size_t ek_len, const uint8_t m[PQ_MLKEM_MSG_BYTES],
                           uint8_t *ct, uint8_t ss[PQ_MLKEM_SS_BYTES]) {
    params pr;
    if (get_params(p, &pr) || !ct || !ss) return PQ_E_INPUT;
    if (!m || !ek_valid(&pr, ek, ek_len)) {
        memset(ct, 0, pq_mlkem_ct_bytes(p));
        sodium_memzero(ss, PQ_MLKEM_SS_BYTES);
        return PQ_E_INPUT;
    }
#ifdef PQ_BACKEND_OPENSSL
    return pq_openssl_encaps(ALG_NAME(p), ek, ek_len, m, ct, pq_mlkem_ct_bytes(p), ss);
#endif
    work w;
    /* (K, r) = G(m || H(ek)) */
    memcpy(w.hash_in, m, 32);
    pq_sha3_256(w.hash_in + 32, ek, ek_len);
    pq_sha3_512(w.kr, w.hash_in, 64);
    pke_encrypt(&w, &pr, ek, m, w.kr + 32, ct);
    memcpy(ss, w.kr, 32);
    PQ_WIPE(w);
    return PQ_OK;
}

int pq_mlkem_encaps(pq_mlkem_param p, const uint8_t *ek, size_t ek_len, uint8_t *ct, uint8_t ss[PQ_MLKEM_SS_BYTES]) {
    uint8_t m[PQ_MLKEM_MSG_BYTES];
    randombytes_buf(m, sizeof m);
    int rc = pq_mlkem_encaps_derand(p, ek, ek_len, m, ct, ss);
    PQ_WIPE(m);
    return rc;
}

#ifdef PQ_PLANTED_LEAK
/* The constant-time audit's proof that it can fail (ctgrind_pq --leaky build
 * only): an early-exit comparison of the secret re-encryption. */
__attribute__((noinline)) static int planted_leak_differs(const uint8_t *a, const uint8_t *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return 1;
    return 0;
}
#endif

int pq_mlkem_decaps(pq_mlkem_param p, const uint8_t *dk, size_t dk_len, const uint8_t *ct, size_t ct_len,
                    uint8_t ss[PQ_MLKEM_SS_BYTES]) {
    params pr;
    if (get_params(p, &pr) || !ss) return PQ_E_INPUT;
    const unsigned k = pr.k;
    const size_t ek_len = 384 * k + 32;
    work w;
    /* Section 7.3: lengths, and H(ek) stored in dk is the hash of the ek in dk (both public). */
    int ok = dk && ct && dk_len == pq_mlkem_dk_bytes(p) && ct_len == pq_mlkem_ct_bytes(p);
    if (ok) {
        pq_sha3_256(w.kr, dk + 384 * k, ek_len);
        ok = pq_ct_equal_mask(w.kr, dk + 768 * k + 32, 32) != 0;
    }
    if (!ok) {
        sodium_memzero(ss, PQ_MLKEM_SS_BYTES);
        PQ_WIPE(w);
        return PQ_E_INPUT;
    }
#ifdef PQ_BACKEND_OPENSSL
    PQ_WIPE(w);
    return pq_openssl_decaps(ALG_NAME(p), dk, dk_len, ct, ct_len, ss);
#endif
    const uint8_t *ek = dk + 384 * k, *h = dk + 768 * k + 32, *z = dk + 768 * k + 64;
    pke_decrypt(&w, &pr, dk, ct);
    /* (K', r') = G(m' || h); Kbar = J(z || c) */
    memcpy(w.hash_in, w.m, 32);
    memcpy(w.hash_in + 32, h, 32);
    pq_sha3_512(w.kr, w.hash_in, 64);
    pq_keccak_init(&w.j, PQ_SHAKE256_RATE, 0x1F);
    pq_keccak_absorb(&w.j, z, 32);
    pq_keccak_absorb(&w.j, ct, ct_len);
    pq_keccak_finish(&w.j);
    pq_keccak_squeeze(&w.j, ss, PQ_MLKEM_SS_BYTES);
    pke_encrypt(&w, &pr, ek, w.m, w.kr + 32, w.ct2);
#ifdef PQ_PLANTED_LEAK
    uint8_t same = planted_leak_differs(ct, w.ct2, ct_len) ? 0x00 : 0xFF;
#else
    uint8_t same = pq_ct_equal_mask(ct, w.ct2, ct_len);
#endif
    for (int i = 0; i < PQ_MLKEM_SS_BYTES; i++) ss[i] = (uint8_t)(ss[i] ^ (same & (ss[i] ^ w.kr[i])));
    PQ_WIPE(w);
    PQ_WIPE(same);
    return PQ_OK;
}
