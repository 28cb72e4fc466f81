/* fuzz_mldsa_verify.c — libFuzzer target: ML-DSA verification (CPostQuantum)
 * on malformed signatures, public keys and contexts.
 *
 * Input: byte 0 selects ML-DSA-65 or -87 (bit 0) and the mode (bits 1-2):
 * mode 0, the rest is XORed onto an honest signature (near-valid signatures:
 * hint sections, z bounds, c~); mode 1, the rest is a signature of any
 * length; mode 2, the rest is XORed onto the public key; mode 3, the rest is
 * the context string. Oracles: (1) only the honest signature, key and
 * context verify (a second valid signature would be a forgery: ML-DSA's
 * encoding is strict); (2) the honest triple always verifies; (3) ASan and
 * UBSan stay silent. */
#include "post_quantum.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint8_t pk[2][PQ_MLDSA87_PK_BYTES], sk[2][PQ_MLDSA87_SK_BYTES], sig[2][PQ_MLDSA87_SIG_BYTES];
static const uint8_t msg[] = "message", ctx[] = "context";

static void setup(void) {
    static int done;
    if (done) return;
    const pq_mldsa_param ps[2] = {PQ_MLDSA_65, PQ_MLDSA_87};
    uint8_t seed[32], rnd[32] = {0};
    for (int i = 0; i < 2; i++) {
        memset(seed, 0x21 + i, sizeof seed);
        if (pq_mldsa_keygen(ps[i], seed, pk[i], sk[i]) != PQ_OK ||
            pq_mldsa_sign(ps[i], sk[i], pq_mldsa_sk_bytes(ps[i]), msg, sizeof msg, ctx, sizeof ctx, rnd, sig[i]) != PQ_OK)
            abort();
    }
    done = 1;
}

static uint8_t *xored(const uint8_t *base, size_t len, const uint8_t *delta, size_t n) {
    uint8_t *out = malloc(len);
    if (!out) abort();
    memcpy(out, base, len);
    for (size_t i = 0; i < n && i < len; i++) out[i] ^= delta[i];
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setup();
    if (size < 1) return 0;
    const int which = data[0] & 1, mode = (data[0] >> 1) & 3;
    const pq_mldsa_param p = which ? PQ_MLDSA_87 : PQ_MLDSA_65;
    const size_t pkn = pq_mldsa_pk_bytes(p), sgn = pq_mldsa_sig_bytes(p);
    const uint8_t *rest = data + 1;
    const size_t n = size - 1;
    int rc, honest;
    if (mode == 0 || mode == 2) {
        uint8_t *s = xored(mode == 0 ? sig[which] : pk[which], mode == 0 ? sgn : pkn, rest, n);
        honest = memcmp(s, mode == 0 ? sig[which] : pk[which], mode == 0 ? sgn : pkn) == 0;
        rc = mode == 0 ? pq_mldsa_verify(p, pk[which], pkn, msg, sizeof msg, ctx, sizeof ctx, s, sgn)
                       : pq_mldsa_verify(p, s, pkn, msg, sizeof msg, ctx, sizeof ctx, sig[which], sgn);
        free(s);
    } else if (mode == 1) {
        honest = n == sgn && memcmp(rest, sig[which], sgn) == 0;
        rc = pq_mldsa_verify(p, pk[which], pkn, msg, sizeof msg, ctx, sizeof ctx, rest, n);
    } else {
        honest = n == sizeof ctx && memcmp(rest, ctx, n) == 0;
        rc = pq_mldsa_verify(p, pk[which], pkn, msg, sizeof msg, rest, n, sig[which], sgn);
    }
    if ((rc == PQ_OK) != honest) abort();
    return 0;
}
