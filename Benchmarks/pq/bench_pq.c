/* bench_pq.c — operations per second of CPostQuantum (ML-KEM-768/1024, ML-DSA-65/87), one JSON
 * object per line: {"alg":..., "op":..., "per_second":...}. Built with the target's release
 * flags by `make bench`; Benchmarks/pq/bench.py prints them beside Python's cryptography. */
#define _POSIX_C_SOURCE 200809L
#include "post_quantum.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Runs `op` for at least `seconds`; prints its rate. */
#define MEASURE(alg, name, seconds, op)                                                           \
    do {                                                                                          \
        long n_ = 0;                                                                              \
        double start_ = now(), t_;                                                                \
        do {                                                                                      \
            for (int i_ = 0; i_ < 10; i_++, n_++)                                                 \
                if ((op) != PQ_OK) {                                                              \
                    fprintf(stderr, "%s %s failed\n", alg, name);                                 \
                    exit(1);                                                                      \
                }                                                                                 \
        } while ((t_ = now() - start_) < (seconds));                                              \
        printf("{\"alg\":\"%s\",\"op\":\"%s\",\"per_second\":%.1f}\n", alg, name, (double)n_ / t_); \
    } while (0)

int main(int argc, char **argv) {
    double s = argc > 1 ? atof(argv[1]) : 0.5;
    if (sodium_init() < 0) return 1;
    static uint8_t ek[PQ_MLKEM1024_EK_BYTES], dk[PQ_MLKEM1024_DK_BYTES], ct[PQ_MLKEM1024_CT_BYTES];
    static uint8_t pk[PQ_MLDSA87_PK_BYTES], sk[PQ_MLDSA87_SK_BYTES], sig[PQ_MLDSA87_SIG_BYTES];
    uint8_t seed[64], ss[32], msg[64], ctx[16];
    randombytes_buf(seed, sizeof seed), randombytes_buf(msg, sizeof msg), randombytes_buf(ctx, sizeof ctx);
    const struct { const char *name; pq_mlkem_param p; } kems[] = {{"ML-KEM-768", PQ_MLKEM_768}, {"ML-KEM-1024", PQ_MLKEM_1024}};
    for (int i = 0; i < 2; i++) {
        pq_mlkem_param p = kems[i].p;
        MEASURE(kems[i].name, "keygen", s, pq_mlkem_keygen(p, seed, ek, dk));
        MEASURE(kems[i].name, "encaps", s, pq_mlkem_encaps(p, ek, pq_mlkem_ek_bytes(p), ct, ss));
        MEASURE(kems[i].name, "decaps", s, pq_mlkem_decaps(p, dk, pq_mlkem_dk_bytes(p), ct, pq_mlkem_ct_bytes(p), ss));
    }
    const struct { const char *name; pq_mldsa_param p; } dsas[] = {{"ML-DSA-65", PQ_MLDSA_65}, {"ML-DSA-87", PQ_MLDSA_87}};
    for (int i = 0; i < 2; i++) {
        pq_mldsa_param p = dsas[i].p;
        MEASURE(dsas[i].name, "keygen", s, pq_mldsa_keygen(p, seed, pk, sk));
        MEASURE(dsas[i].name, "sign", s, pq_mldsa_sign(p, sk, pq_mldsa_sk_bytes(p), msg, sizeof msg, ctx, sizeof ctx, NULL, sig));
        MEASURE(dsas[i].name, "verify", s,
                pq_mldsa_verify(p, pk, pq_mldsa_pk_bytes(p), msg, sizeof msg, ctx, sizeof ctx, sig, pq_mldsa_sig_bytes(p)));
    }
    return 0;
}
