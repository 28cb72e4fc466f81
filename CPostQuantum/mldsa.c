/* mldsa.c — ML-DSA-65 and ML-DSA-87 (FIPS 204), pure signing with a context
 * string. Arithmetic mod q = 8380417 in signed 32-bit coefficients with
 * Montgomery (R = 2^32) reductions and the standard's NTT (Algorithms 41,
 * 42). Both parameter sets have gamma1 = 2^19 and gamma2 = (q - 1) / 32.
 * Signing is constant time except where the standard allows: each rejection
 * verdict is computed over all coefficients without a branch and only the
 * one-bit verdict, and the challenge hash c~ of an attempt, are declassified. */
#include "post_quantum.h"
#include "pq_internal.h"

#include <string.h>

#define Q 8380417
#define QINV 58728449 /* q^-1 mod 2^32 */
#define D 13
#define GAMMA1 (1 << 19)
#define GAMMA2 ((Q - 1) / 32)
#define KMAX 8
#define LMAX 7

typedef struct {
    int32_t c[256];
} poly;

/* 1753^bitrev8(i) * 2^32 mod q, centred (FIPS 204 Appendix B, in Montgomery form). */
static const int32_t zetas[256] = {
    0,        25847,    -2608894, -518909,  237124,   -777960,  -876248,  466468,   1826347,  2353451,  -359251,
    -2091905, 3119733,  -2884855, 3111497,  2680103,  2725464,  1024112,  -1079900, 3585928,  -549488,  -1119584,
    2619752,  -2108549, -2118186, -3859737, -1399561, -3277672, 1757237,  -19422,   4010497,  280005,   2706023,
    95776,    3077325,  3530437,  -1661693, -3592148, -2537516, 3915439,  -3861115, -3043716, 3574422,  -2867647,
    3539968,  -300467,  2348700,  -539299,  -1699267, -1643818, 3505694,  -3821735, 3507263,  -2140649, -1600420,
    3699596,  811944,   531354,   954230,   3881043,  3900724,  -2556880, 2071892,  -2797779, -3930395, -1528703,
    -3677745, -3041255, -1452451, 3475950,  2176455,  -1585221, -1257611, 1939314,  -4083598, -1000202, -3190144,
    -3157330, -3632928, 126922,   3412210,  -983419,  2147896,  2715295,  -2967645, -3693493, -411027,  -2477047,
    -671102,  -1228525, -22981,   -1308169, -381987,  1349076,  1852771,  -1430430, -3343383, 264944,   508951,
    3097992,  44288,    -1100098, 904516,   3958618,  -3724342, -8578,    1653064,  -3249728, 2389356,  -210977,
    759969,   -1316856, 189548,   -3553272, 3159746,  -1851402, -2409325, -177440,  1315589,  1341330,  1285669,
    -1584928, -812732,  -1439742, -3019102, -3881060, -3628969, 3839961,  2091667,  3407706,  2316500,  3817976,
    -3342478, 2244091,  -2446433, -3562462, 266997,   2434439,  -1235728, 3513181,  -3520352, -3759364, -1197226,
    -3193378, 900702,   1859098,  909542,   819034,   495491,   -1613174, -43260,   -522500,  -655327,  -3122442,
    2031748,  3207046,  -3556995, -525098,  -768622,  -3595838, 342297,   286988,   -2437823, 4108315,  3437287,
    -3342277, 1735879,  203044,   2842341,  2691481,  -2590150, 1265009,  4055324,  1247620,  2486353,  1595974,
    -3767016, 1250494,  2635921,  -3548272, -2994039, 1869119,  1903435,  -1050970, -1333058, 1237275,  -3318210,
    -1430225, -451100,  1312455,  3306115,  -1962642, -1279661, 1917081,  -2546312, -1374803, 1500165,  777191,
    2235880,  3406031,  -542412,  -2831860, -1671176, -1846953, -2584293, -3724270, 594136,   -3776993, -2013608,
    2432395,  2454455,  -164721,  1957272,  3369112,  185531,   -1207385, -3183426, 162844,   1616392,  3014001,
    810149,   1652634,  -3694233, -1799107, -3038916, 3523897,  3866901,  269760,   2213111,  -975884,  1717735,
    472078,   -426683,  1723600,  -1803090, 1910376,  -1667432, -1104333, -260646,  -3833893, -2939036, -2235985,
    -420899,  -2286327, 183443,   -976891,  1612842,  -3545687, -554416,  3919660,  -48306,   -1362209, 3937738,
    1400424,  -846154,  1976782};

static int32_t montgomery_reduce(int64_t a) {
    int32_t t = (int32_t)((uint64_t)(int64_t)(int32_t)a * QINV);
    return (int32_t)((a - (int64_t)t * Q) >> 32);
}
static int32_t reduce32(int32_t a) { return a - ((a + (1 << 22)) >> 23) * Q; }
static int32_t caddq(int32_t a) { return a + ((a >> 31) & Q); }

static void ntt(poly *a) {
    unsigned k = 0;
    for (unsigned len = 128; len > 0; len >>= 1)
        for (unsigned start = 0; start < 256; start += 2 * len) {
            int32_t zeta = zetas[++k];
            for (unsigned j = start; j < start + len; j++) {
                int32_t t = montgomery_reduce((int64_t)zeta * a->c[j + len]);
                a->c[j + len] = a->c[j] - t;
                a->c[j] = a->c[j] + t;
            }
        }
}

/* Inverse NTT, times 2^32 (f = 41978 is 2^64 / 256 mod q). */
static void invntt(poly *a) {
    unsigned k = 256;
    for (unsigned len = 1; len < 256; len <<= 1)
        for (unsigned start = 0; start < 256; start += 2 * len) {
            int32_t zeta = -zetas[--k];
            for (unsigned j = start; j < start + len; j++) {
                int32_t t = a->c[j];
                a->c[j] = t + a->c[j + len];
                a->c[j + len] = montgomery_reduce((int64_t)zeta * (t - a->c[j + len]));
            }
        }
    for (unsigned j = 0; j < 256; j++) a->c[j] = montgomery_reduce((int64_t)41978 * a->c[j]);
}

static void poly_pointwise(poly *r, const poly *a, const poly *b, int acc) {
    for (int i = 0; i < 256; i++) r->c[i] = (acc ? r->c[i] : 0) + montgomery_reduce((int64_t)a->c[i] * b->c[i]);
}

/* Decompose (Algorithm 36) for gamma2 = (q - 1) / 32, a in [0, q): branch-free. */
static int32_t decompose(int32_t *a0, int32_t a) {
    int32_t a1 = (a + 127) >> 7;
    a1 = ((a1 * 1025 + (1 << 21)) >> 22) & 15;
    *a0 = a - a1 * 2 * GAMMA2;
    *a0 -= (((Q - 1) / 2 - *a0) >> 31) & Q;
    return a1;
}

/* 1 when ||a||inf >= bound for some coefficient (a centred), without a branch. */
static uint32_t exceeds(const poly *a, unsigned n, int32_t bound) {
    uint32_t bad = 0;
    for (unsigned p = 0; p < n; p++)
        for (int i = 0; i < 256; i++) {
            int32_t x = a[p].c[i], m = x >> 31;
            bad |= (uint32_t)((bound - 1 - ((x ^ m) - m)) >> 31);
        }
    return bad & 1;
}

typedef struct {
    unsigned k, l, eta, eta_bits, tau, beta, omega, ctilde;
} params;

#define ALG_NAME(p) ((p) == PQ_MLDSA_65 ? "ML-DSA-65" : "ML-DSA-87") /* the OpenSSL backend's */

static int get_params(pq_mldsa_param p, params *pr) {
    if (p == PQ_MLDSA_65) *pr = (params){6, 5, 4, 4, 49, 196, 55, 48};
    else if (p == PQ_MLDSA_87) *pr = (params){8, 7, 2, 3, 60, 120, 75, 64};
    else return PQ_E_INPUT;
    return PQ_OK;
}

size_t pq_mldsa_pk_bytes(pq_mldsa_param p) {
    params pr;
    return get_params(p, &pr) ? 0 : 32 + 320 * pr.k;
}
size_t pq_mldsa_sk_bytes(pq_mldsa_param p) {
    params pr;
    return get_params(p, &pr) ? 0 : 128 + 32 * pr.eta_bits * (pr.k + pr.l) + 416 * pr.k;
}
size_t pq_mldsa_sig_bytes(pq_mldsa_param p) {
    params pr;
    return get_params(p, &pr) ? 0 : pr.ctilde + 640 * pr.l + pr.omega + pr.k;
}

/* RejNTTPoly (Algorithm 30) of rho || s || r: public. */
static void expand_a(poly a[KMAX][LMAX], const params *pr, const uint8_t rho[32]) {
    uint8_t buf[PQ_SHAKE128_RATE];
    pq_keccak k;
    for (unsigned r = 0; r < pr->k; r++)
        for (unsigned s = 0; s < pr->l; s++) {
            uint8_t idx[2] = {(uint8_t)s, (uint8_t)r};
            pq_keccak_init(&k, PQ_SHAKE128_RATE, 0x1F);
            pq_keccak_absorb(&k, rho, 32);
            pq_keccak_absorb(&k, idx, 2);
            pq_keccak_finish(&k);
            for (unsigned j = 0; j < 256;) {
                pq_keccak_squeeze(&k, buf, sizeof buf);
                for (unsigned i = 0; i + 3 <= sizeof buf && j < 256; i += 3) {
                    uint32_t t = buf[i] | ((uint32_t)buf[i + 1] << 8) | ((uint32_t)(buf[i + 2] & 0x7F) << 16);
                    if (t < Q) a[r][s].c[j++] = (int32_t)t;
                }
            }
        }
}

/* RejBoundedPoly (Algorithm 31) of rho' || n. Which nibbles are rejected
 * is independent of the coefficients kept; each nibble's verdict is
 * computed branch-free, then declassified. */
static void expand_s(poly *a, const params *pr, const uint8_t rhop[64], uint16_t n) {
    uint8_t buf[PQ_SHAKE256_RATE], idx[2] = {(uint8_t)n, (uint8_t)(n >> 8)};
    pq_keccak k;
    pq_keccak_init(&k, PQ_SHAKE256_RATE, 0x1F);
    pq_keccak_absorb(&k, rhop, 64);
    pq_keccak_absorb(&k, idx, 2);
    pq_keccak_finish(&k);
    for (unsigned j = 0; j < 256;) {
        pq_keccak_squeeze(&k, buf, sizeof buf);
        for (unsigned i = 0; i < 2 * sizeof buf && j < 256; i++) {
            int32_t b = (buf[i / 2] >> (4 * (i % 2))) & 15;
            /* eta = 2: b < 15 gives 2 - (b mod 5); eta = 4: b < 9 gives 4 - b. */
            int32_t limit = pr->eta == 2 ? 15 : 9, accept = (b - limit) >> 31 & 1;
            int32_t mod5 = b - 5 * ((b * 205) >> 10);
            PQ_PUBLIC(&accept, sizeof accept);
            if (accept) a->c[j++] = pr->eta == 2 ? 2 - mod5 : 4 - b;
        }
    }
    PQ_WIPE(buf);
    PQ_WIPE(k);
}

/* ExpandMask (Algorithm 34): y[r] from H(rho'' || kappa + r), 20-bit values. */
static void expand_mask(poly *y, const uint8_t rhopp[64], uint16_t kappa) {
    uint8_t in[66], buf[640];
    uint32_t v[256];
    memcpy(in, rhopp, 64);
    in[64] = (uint8_t)kappa, in[65] = (uint8_t)(kappa >> 8);
    pq_shake256(buf, sizeof buf, in, sizeof in);
    pq_unpack(v, buf, 20);
    for (int i = 0; i < 256; i++) y->c[i] = GAMMA1 - (int32_t)v[i];
    PQ_WIPE(in), PQ_WIPE(buf), PQ_WIPE(v);
}

/* SampleInBall (Algorithm 29) from c~ (public: part of the signature, or a
 * rejected attempt's hash, which the standard discards). */
static void sample_in_ball(poly *c, const params *pr, const uint8_t *ctilde) {
    uint8_t buf[PQ_SHAKE256_RATE];
    pq_keccak k;
    pq_keccak_init(&k, PQ_SHAKE256_RATE, 0x1F);
    pq_keccak_absorb(&k, ctilde, pr->ctilde);
    pq_keccak_finish(&k);
    pq_keccak_squeeze(&k, buf, sizeof buf);
    uint64_t signs = 0;
    for (unsigned i = 0; i < 8; i++) signs |= (uint64_t)buf[i] << (8 * i);
    unsigned pos = 8;
    memset(c, 0, sizeof *c);
    for (unsigned i = 256 - pr->tau; i < 256; i++) {
        unsigned j;
        do {
            if (pos == sizeof buf) pq_keccak_squeeze(&k, buf, sizeof buf), pos = 0;
            j = buf[pos++];
        } while (j > i);
        c->c[i] = c->c[j];
        c->c[j] = 1 - 2 * (int32_t)(signs & 1);
        signs >>= 1;
    }
}

/* BitPack (Algorithm 17) as offset - a; SimpleBitPack (16) when offset is 0. */
static void pack_offset(uint8_t *out, const poly *a, int32_t offset, unsigned bits) {
    uint32_t v[256];
    for (int i = 0; i < 256; i++) v[i] = (uint32_t)(offset ? offset - a->c[i] : a->c[i]);
    pq_pack(out, v, bits);
    PQ_WIPE(v);
}
static void unpack_offset(poly *a, const uint8_t *in, int32_t offset, unsigned bits) {
    uint32_t v[256];
    pq_unpack(v, in, bits);
    for (int i = 0; i < 256; i++) a->c[i] = offset ? offset - (int32_t)v[i] : (int32_t)v[i];
    PQ_WIPE(v);
}

/* The working state of one operation, wiped as a whole at its end. */
typedef struct {
    poly a[KMAX][LMAX], s1[LMAX], s2[KMAX], t0[KMAX], t1[KMAX], y[LMAX], z[LMAX], w[KMAX], w1[KMAX], h[KMAX], c;
    uint8_t seeds[128], tr[64], mu[64], rhopp[64], ctilde[64], w1_packed[KMAX * 128], hints[KMAX * 256];
    pq_keccak x;
} work;

/* sum_j A[i][j] v[j] for each row, back to the normal domain. */
static void matrix_mul(work *w, poly *out, const params *pr, const poly *v) {
    for (unsigned i = 0; i < pr->k; i++) {
        for (unsigned j = 0; j < pr->l; j++) poly_pointwise(&out[i], &w->a[i][j], &v[j], j > 0);
        for (int c = 0; c < 256; c++) out[i].c[c] = reduce32(out[i].c[c]);
        invntt(&out[i]);
    }
}

int pq_mldsa_keygen(pq_mldsa_param p, const uint8_t seed[PQ_MLDSA_SEED_BYTES], uint8_t *pk, uint8_t *sk) {
    params pr;
    if (get_params(p, &pr) || !seed || !pk || !sk) return PQ_E_INPUT;
#ifdef PQ_BACKEND_OPENSSL
    return pq_openssl_keygen(ALG_NAME(p), seed, PQ_MLDSA_SEED_BYTES, pk, pq_mldsa_pk_bytes(p), sk, pq_mldsa_sk_bytes(p));
#endif
    work w;
    uint8_t in[34];
    memcpy(in, seed, 32);
    in[32] = (uint8_t)pr.k, in[33] = (uint8_t)pr.l;
    pq_shake256(w.seeds, 128, in, sizeof in); /* rho, rho', K */
    const uint8_t *rho = w.seeds, *rhop = w.seeds + 32, *key = w.seeds + 96;
    PQ_PUBLIC(w.seeds, 32); /* rho: published in pk */
    expand_a(w.a, &pr, rho);
    for (unsigned i = 0; i < pr.l; i++) expand_s(&w.s1[i], &pr, rhop, (uint16_t)i), w.z[i] = w.s1[i], ntt(&w.z[i]);
    for (unsigned i = 0; i < pr.k; i++) expand_s(&w.s2[i], &pr, rhop, (uint16_t)(pr.l + i));
    matrix_mul(&w, w.t1, &pr, w.z);
    memcpy(pk, rho, 32);
    uint8_t *out = sk + 128;
    for (unsigned i = 0; i < pr.k; i++) {
        for (int c = 0; c < 256; c++) { /* Power2Round (Algorithm 35) of t = A s1 + s2 */
            int32_t t = caddq(reduce32(w.t1[i].c[c] + w.s2[i].c[c]));
            w.t1[i].c[c] = (t + (1 << (D - 1)) - 1) >> D;
            w.t0[i].c[c] = t - (w.t1[i].c[c] << D);
        }
        pack_offset(pk + 32 + 320 * i, &w.t1[i], 0, 10);
    }
    for (unsigned i = 0; i < pr.l; i++, out += 32 * pr.eta_bits) pack_offset(out, &w.s1[i], (int32_t)pr.eta, pr.eta_bits);
    for (unsigned i = 0; i < pr.k; i++, out += 32 * pr.eta_bits) pack_offset(out, &w.s2[i], (int32_t)pr.eta, pr.eta_bits);
    for (unsigned i = 0; i < pr.k; i++, out += 416) pack_offset(out, &w.t0[i], 1 << (D - 1), D);
    memcpy(sk, rho, 32);
    memcpy(sk + 32, key, 32);
    pq_shake256(sk + 64, 64, pk, pq_mldsa_pk_bytes(p)); /* tr = H(pk) */
    PQ_WIPE(w);
    PQ_WIPE(in);
    return PQ_OK;
}

/* mu = H(tr || 0 || |ctx| || ctx || M, 64) (Algorithms 2, 3 and 7, 8). */
static void message_hash(work *w, const uint8_t tr[64], const uint8_t *msg, size_t msg_len, const uint8_t *ctx,
                         size_t ctx_len) {
    uint8_t prefix[2] = {0, (uint8_t)ctx_len};
    pq_keccak_init(&w->x, PQ_SHAKE256_RATE, 0x1F);
    pq_keccak_absorb(&w->x, tr, 64);
    pq_keccak_absorb(&w->x, prefix, 2);
    pq_keccak_absorb(&w->x, ctx, ctx_len);
    pq_keccak_absorb(&w->x, msg, msg_len);
    pq_keccak_finish(&w->x);
    pq_keccak_squeeze(&w->x, w->mu, 64);
}

/* c~ = H(mu || w1Encode(w1), lambda / 4). */
static void commitment_hash(work *w, const params *pr) {
    for (unsigned i = 0; i < pr->k; i++) pack_offset(w->w1_packed + 128 * i, &w->w1[i], 0, 4);
    pq_keccak_init(&w->x, PQ_SHAKE256_RATE, 0x1F);
    pq_keccak_absorb(&w->x, w->mu, 64);
    pq_keccak_absorb(&w->x, w->w1_packed, 128 * pr->k);
    pq_keccak_finish(&w->x);
    pq_keccak_squeeze(&w->x, w->ctilde, pr->ctilde);
}

static int msg_args_ok(const uint8_t *msg, size_t msg_len, const uint8_t *ctx, size_t ctx_len) {
    return (msg || msg_len == 0) && (ctx || ctx_len == 0) && ctx_len <= PQ_MLDSA_CTX_MAX;
}

int pq_mldsa_sign(pq_mldsa_param p, const uint8_t *sk, size_t sk_len, const uint8_t *msg, size_t msg_len,
                  const uint8_t *ctx, size_t ctx_len, const uint8_t *rnd, uint8_t *sig) {
    params pr;
    if (get_params(p, &pr) || !sig) return PQ_E_INPUT;
    const size_t sig_len = pq_mldsa_sig_bytes(p);
    if (!sk || sk_len != pq_mldsa_sk_bytes(p) || !msg_args_ok(msg, msg_len, ctx, ctx_len)) {
        memset(sig, 0, sig_len);
        return PQ_E_INPUT;
    }
#ifdef PQ_BACKEND_OPENSSL
    return pq_openssl_sign(ALG_NAME(p), sk, sk_len, msg, msg_len, ctx, ctx_len, rnd, sig, sig_len);
#endif
    work w;
    const uint8_t *in = sk + 128;
    for (unsigned i = 0; i < pr.l; i++, in += 32 * pr.eta_bits) unpack_offset(&w.s1[i], in, (int32_t)pr.eta, pr.eta_bits), ntt(&w.s1[i]);
    for (unsigned i = 0; i < pr.k; i++, in += 32 * pr.eta_bits) unpack_offset(&w.s2[i], in, (int32_t)pr.eta, pr.eta_bits), ntt(&w.s2[i]);
    for (unsigned i = 0; i < pr.k; i++, in += 416) unpack_offset(&w.t0[i], in, 1 << (D - 1), D), ntt(&w.t0[i]);
    expand_a(w.a, &pr, sk);
    message_hash(&w, sk + 64, msg, msg_len, ctx, ctx_len);
    /* rho'' = H(K || rnd || mu, 64) */
    uint8_t fresh[PQ_MLDSA_RND_BYTES];
    if (!rnd) randombytes_buf(fresh, sizeof fresh), rnd = fresh;
    pq_keccak_init(&w.x, PQ_SHAKE256_RATE, 0x1F);
    pq_keccak_absorb(&w.x, sk + 32, 32);
    pq_keccak_absorb(&w.x, rnd, PQ_MLDSA_RND_BYTES);
    pq_keccak_absorb(&w.x, w.mu, 64);
    pq_keccak_finish(&w.x);
    pq_keccak_squeeze(&w.x, w.rhopp, 64);
    PQ_WIPE(fresh);
    for (uint16_t kappa = 0;; kappa = (uint16_t)(kappa + pr.l)) {
        for (unsigned i = 0; i < pr.l; i++) expand_mask(&w.y[i], w.rhopp, (uint16_t)(kappa + i)), w.z[i] = w.y[i], ntt(&w.z[i]);
        matrix_mul(&w, w.w, &pr, w.z);
        for (unsigned i = 0; i < pr.k; i++)
            for (int c = 0; c < 256; c++) w.w1[i].c[c] = decompose(&w.w[i].c[c], caddq(w.w[i].c[c])); /* w -> w0 */
        commitment_hash(&w, &pr);
        PQ_PUBLIC(w.ctilde, pr.ctilde);
        sample_in_ball(&w.c, &pr, w.ctilde);
        ntt(&w.c);
        uint32_t reject = 0;
        for (unsigned i = 0; i < pr.l; i++) { /* z = y + c s1 */
            poly_pointwise(&w.z[i], &w.c, &w.s1[i], 0);
            invntt(&w.z[i]);
            for (int c = 0; c < 256; c++) w.z[i].c[c] = reduce32(w.z[i].c[c] + w.y[i].c[c]);
        }
        reject |= exceeds(w.z, pr.l, GAMMA1 - (int32_t)pr.beta);
        for (unsigned i = 0; i < pr.k; i++) { /* r0 = w0 - c s2; then c t0 */
            poly_pointwise(&w.h[i], &w.c, &w.s2[i], 0);
            invntt(&w.h[i]);
            for (int c = 0; c < 256; c++) w.w[i].c[c] = reduce32(w.w[i].c[c] - w.h[i].c[c]);
            poly_pointwise(&w.h[i], &w.c, &w.t0[i], 0);
            invntt(&w.h[i]);
            for (int c = 0; c < 256; c++) w.h[i].c[c] = reduce32(w.h[i].c[c]);
        }
        reject |= exceeds(w.w, pr.k, GAMMA2 - (int32_t)pr.beta);
        reject |= exceeds(w.h, pr.k, GAMMA2);
        /* MakeHint (Algorithm 39) in the form of w0 - c s2 + c t0 and w1, branch-free. */
        uint32_t count = 0;
        for (unsigned i = 0; i < pr.k; i++)
            for (int c = 0; c < 256; c++) {
                int32_t a0 = w.w[i].c[c] + w.h[i].c[c], a1 = w.w1[i].c[c], e = a0 + GAMMA2;
                uint32_t gt = (uint32_t)(GAMMA2 - a0) >> 31, lt = (uint32_t)e >> 31;
                uint32_t eq = 1 ^ (((uint32_t)e | (uint32_t)-e) >> 31), nz = ((uint32_t)a1 | (uint32_t)-a1) >> 31;
                uint32_t hint = gt | lt | (eq & nz);
                w.hints[256 * i + (unsigned)c] = (uint8_t)hint;
                count += hint;
            }
        reject |= (uint32_t)((int32_t)(pr.omega - count) >> 31) & 1;
        PQ_PUBLIC(&reject, sizeof reject);
        if (reject) continue;
        /* Accepted: z and the hints are the signature, public from here. */
        PQ_PUBLIC(w.z, sizeof w.z);
        PQ_PUBLIC(w.hints, sizeof w.hints);
        memcpy(sig, w.ctilde, pr.ctilde);
        uint8_t *out = sig + pr.ctilde;
        for (unsigned i = 0; i < pr.l; i++, out += 640) pack_offset(out, &w.z[i], GAMMA1, 20);
        memset(out, 0, pr.omega + pr.k);
        unsigned n = 0; /* HintBitPack (Algorithm 20) */
        for (unsigned i = 0; i < pr.k; i++) {
            for (unsigned c = 0; c < 256; c++)
                if (w.hints[256 * i + c]) out[n++] = (uint8_t)c;
            out[pr.omega + i] = (uint8_t)n;
        }
        break;
    }
    PQ_WIPE(w);
    return PQ_OK;
}

/* HintBitUnpack (Algorithm 21) with its malformation checks; 0 if malformed. */
static int unpack_hints(work *w, const params *pr, const uint8_t *in) {
    unsigned k = 0;
    memset(w->hints, 0, sizeof w->hints);
    for (unsigned i = 0; i < pr->k; i++) {
        unsigned end = in[pr->omega + i];
        if (end < k || end > pr->omega) return 0;
        for (unsigned j = k; j < end; j++) {
            if (j > k && in[j] <= in[j - 1]) return 0;
            w->hints[256 * i + in[j]] = 1;
        }
        k = end;
    }
    for (unsigned j = k; j < pr->omega; j++)
        if (in[j]) return 0;
    return 1;
}

int pq_mldsa_verify(pq_mldsa_param p, const uint8_t *pk, size_t pk_len, const uint8_t *msg, size_t msg_len,
                    const uint8_t *ctx, size_t ctx_len, const uint8_t *sig, size_t sig_len) {
    params pr;
    if (get_params(p, &pr) || !pk || !sig || pk_len != pq_mldsa_pk_bytes(p) || sig_len != pq_mldsa_sig_bytes(p) ||
        !msg_args_ok(msg, msg_len, ctx, ctx_len))
        return PQ_E_INPUT;
#ifdef PQ_BACKEND_OPENSSL
    return pq_openssl_verify(ALG_NAME(p), pk, pk_len, msg, msg_len, ctx, ctx_len, sig, sig_len);
#endif
    work w;
    int ok = 0;
    const uint8_t *zin = sig + pr.ctilde;
    for (unsigned i = 0; i < pr.l; i++) unpack_offset(&w.z[i], zin + 640 * i, GAMMA1, 20);
    if (unpack_hints(&w, &pr, zin + 640 * pr.l) && !exceeds(w.z, pr.l, GAMMA1 - (int32_t)pr.beta)) {
        uint8_t tr[64];
        pq_shake256(tr, 64, pk, pk_len);
        message_hash(&w, tr, msg, msg_len, ctx, ctx_len);
        expand_a(w.a, &pr, pk);
        sample_in_ball(&w.c, &pr, sig);
        ntt(&w.c);
        for (unsigned i = 0; i < pr.l; i++) ntt(&w.z[i]);
        matrix_mul(&w, w.w, &pr, w.z); /* A z */
        for (unsigned i = 0; i < pr.k; i++) {
            unpack_offset(&w.t1[i], pk + 32 + 320 * i, 0, 10);
            for (int c = 0; c < 256; c++) w.t1[i].c[c] = -(w.t1[i].c[c] << D); /* -t1 2^d */
            ntt(&w.t1[i]);
            poly_pointwise(&w.h[i], &w.c, &w.t1[i], 0);
            for (int c = 0; c < 256; c++) w.h[i].c[c] = reduce32(w.h[i].c[c]);
            invntt(&w.h[i]);
            for (int c = 0; c < 256; c++) { /* UseHint (Algorithm 40) of A z - c t1 2^d */
                int32_t a0, a1 = decompose(&a0, caddq(reduce32(w.w[i].c[c] + w.h[i].c[c])));
                if (w.hints[256 * i + (unsigned)c]) a1 = (a0 > 0 ? a1 + 1 : a1 - 1) & 15;
                w.w1[i].c[c] = a1;
            }
        }
        commitment_hash(&w, &pr);
        ok = pq_ct_equal_mask(w.ctilde, sig, pr.ctilde) != 0;
    }
    PQ_WIPE(w);
    return ok ? PQ_OK : PQ_E_INPUT;
}
