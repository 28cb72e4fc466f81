/* ctgrind_pq.c — the constant-time audit of CPostQuantum, by the method of
 * CSecureCore/tests/ctgrind.c: run under valgrind memcheck, every secret
 * input (seeds, m, the secret parts of dk and sk) is marked undefined, and
 * memcheck reports any conditional jump or memory address that depends on
 * it. The public parts of a secret key (ek and H(ek) inside dk; rho and tr
 * inside sk) are marked defined: they are the public key's. Outputs are
 * declassified by the harness before it compares them. Must report no error.
 *
 * Built with -DPQ_PLANTED_LEAK, decapsulation compares the re-encryption
 * with an early-exit loop (planted_leak_differs in mlkem.c): that build must
 * be flagged, or the audit is blind. */
#include "post_quantum.h"
#include "check.h"

#include <sodium.h>
#include <valgrind/memcheck.h>

#define SECRET(p, n) VALGRIND_MAKE_MEM_UNDEFINED((p), (n))
#define PUBLIC(p, n) VALGRIND_MAKE_MEM_DEFINED((p), (n))

static int verdict(int rc) {
    PUBLIC(&rc, sizeof rc);
    return rc;
}

static void ct_mlkem(pq_mlkem_param p) {
    static uint8_t ek[PQ_MLKEM1024_EK_BYTES], dk[PQ_MLKEM1024_DK_BYTES], ct[PQ_MLKEM1024_CT_BYTES];
    uint8_t seed[64], m[32], ss1[32], ss2[32];
    const size_t k = p == PQ_MLKEM_768 ? 3 : 4, ekn = pq_mlkem_ek_bytes(p), dkn = pq_mlkem_dk_bytes(p),
                 ctn = pq_mlkem_ct_bytes(p);
    randombytes_buf(seed, sizeof seed), randombytes_buf(m, sizeof m);
    SECRET(seed, sizeof seed);
    REQUIRE_OK(verdict(pq_mlkem_keygen(p, seed, ek, dk)));
    PUBLIC(ek, ekn);
    SECRET(m, sizeof m);
    REQUIRE_OK(verdict(pq_mlkem_encaps_derand(p, ek, ekn, m, ct, ss1)));
    PUBLIC(ct, ctn);
    /* dk = dk_PKE (secret) || ek || H(ek) (public) || z (secret) */
    SECRET(dk, dkn);
    PUBLIC(dk + 384 * k, 384 * k + 64);
    REQUIRE_OK(verdict(pq_mlkem_decaps(p, dk, dkn, ct, ctn, ss2)));
    PUBLIC(ss1, 32), PUBLIC(ss2, 32);
    CHECK(memcmp(ss1, ss2, 32) == 0);
    ct[5] ^= 1; /* implicit rejection: the select must not branch either */
    REQUIRE_OK(verdict(pq_mlkem_decaps(p, dk, dkn, ct, ctn, ss2)));
    PUBLIC(ss2, 32);
    CHECK(memcmp(ss1, ss2, 32) != 0);
    REQUIRE_OK(verdict(pq_mlkem_encaps(p, ek, ekn, ct, ss1)));
}

static void ct_mldsa(pq_mldsa_param p) {
    static uint8_t pk[PQ_MLDSA87_PK_BYTES], sk[PQ_MLDSA87_SK_BYTES], sig[PQ_MLDSA87_SIG_BYTES];
    uint8_t seed[32], rnd[32] = {0}, msg[33] = "a message of thirty-three bytes.", ctx[4] = "ctx";
    const size_t pkn = pq_mldsa_pk_bytes(p), skn = pq_mldsa_sk_bytes(p), sgn = pq_mldsa_sig_bytes(p);
    randombytes_buf(seed, sizeof seed);
    SECRET(seed, sizeof seed);
    REQUIRE_OK(verdict(pq_mldsa_keygen(p, seed, pk, sk)));
    PUBLIC(pk, pkn);
    /* sk = rho (public) || K (secret) || tr (public) || s1, s2, t0 (secret) */
    SECRET(sk, skn);
    PUBLIC(sk, 32);
    PUBLIC(sk + 64, 64);
    for (int variant = 0; variant < 2; variant++) { /* deterministic, then hedged */
        REQUIRE_OK(verdict(pq_mldsa_sign(p, sk, skn, msg, sizeof msg, ctx, sizeof ctx, variant ? NULL : rnd, sig)));
        PUBLIC(sig, sgn);
        CHECK_EQ(pq_mldsa_verify(p, pk, pkn, msg, sizeof msg, ctx, sizeof ctx, sig, sgn), PQ_OK);
    }
}

int main(void) {
    if (sodium_init() < 0) return 1;
    ct_mlkem(PQ_MLKEM_768);
    ct_mlkem(PQ_MLKEM_1024);
    ct_mldsa(PQ_MLDSA_65);
    ct_mldsa(PQ_MLDSA_87);
    return check_summary("ctgrind CPostQuantum (keygen, encaps, decaps, sign)");
}
