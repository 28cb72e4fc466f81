/* fuzz_mlkem_decaps.c — libFuzzer target: ML-KEM decapsulation (CPostQuantum)
 * on malformed ciphertexts and decapsulation keys.
 *
 * Input: byte 0 selects ML-KEM-768 or -1024 (bit 0) and the mode (bit 1):
 * mode 0, the rest is a ciphertext of any length for a fixed honest key;
 * mode 1, the rest is XORed onto the honest decapsulation key (truncated or
 * extended to its length) and decapsulates an honest ciphertext.
 * Oracles: (1) decapsulation succeeds exactly when the lengths are right and
 * (for a changed key) the hash check of FIPS 203 section 7.3 holds;
 * (2) a ciphertext other than the honest one never gives the honest secret;
 * (3) the honest ciphertext always does; (4) ASan and UBSan stay silent. */
#include "post_quantum.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint8_t ek[2][PQ_MLKEM1024_EK_BYTES], dk[2][PQ_MLKEM1024_DK_BYTES], ct[2][PQ_MLKEM1024_CT_BYTES], ss[2][32];

static void setup(void) {
    static int done;
    if (done) return;
    const pq_mlkem_param ps[2] = {PQ_MLKEM_768, PQ_MLKEM_1024};
    uint8_t seed[64], m[32];
    for (int i = 0; i < 2; i++) {
        memset(seed, 0x40 + i, sizeof seed), memset(m, 0x11 + i, sizeof m);
        if (pq_mlkem_keygen(ps[i], seed, ek[i], dk[i]) != PQ_OK ||
            pq_mlkem_encaps_derand(ps[i], ek[i], pq_mlkem_ek_bytes(ps[i]), m, ct[i], ss[i]) != PQ_OK)
            abort();
    }
    done = 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setup();
    if (size < 1) return 0;
    const int which = data[0] & 1;
    const pq_mlkem_param p = which ? PQ_MLKEM_1024 : PQ_MLKEM_768;
    const size_t dkn = pq_mlkem_dk_bytes(p), ctn = pq_mlkem_ct_bytes(p);
    const uint8_t *rest = data + 1;
    const size_t n = size - 1;
    uint8_t out[32];
    if ((data[0] & 2) == 0) {
        int rc = pq_mlkem_decaps(p, dk[which], dkn, rest, n, out);
        if ((rc == PQ_OK) != (n == ctn)) abort();
        if (rc == PQ_OK && (memcmp(out, ss[which], 32) == 0) != (memcmp(rest, ct[which], ctn) == 0)) abort();
        return 0;
    }
    uint8_t *key = malloc(n ? n : 1);
    if (!key) return 0;
    for (size_t i = 0; i < n; i++) key[i] = (uint8_t)(rest[i] ^ (i < dkn ? dk[which][i] : 0));
    int rc = pq_mlkem_decaps(p, key, n, ct[which], ctn, out);
    if (n != dkn && rc == PQ_OK) abort();
    /* An unchanged key decapsulates the honest ciphertext to the honest secret. */
    if (n == dkn && memcmp(key, dk[which], dkn) == 0 && (rc != PQ_OK || memcmp(out, ss[which], 32) != 0)) abort();
    free(key);
    return 0;
}
