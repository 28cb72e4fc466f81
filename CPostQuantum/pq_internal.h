/* pq_internal.h — what the target's files share: the Keccak sponge
 * (keccak.c), bit packing, and the declassification hook of the
 * constant-time audit. Not installed; not for callers. */
#ifndef PQ_INTERNAL_H
#define PQ_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <sodium.h>

/* Under the constant-time audit (CPostQuantum/tests/ctgrind_pq.c, built with
 * -DPQ_CTGRIND) a value that the standard publishes or discards is marked
 * defined where the code first branches on it; elsewhere this is nothing. */
#ifdef PQ_CTGRIND
#include <valgrind/memcheck.h>
#define PQ_PUBLIC(p, n) VALGRIND_MAKE_MEM_DEFINED((p), (n))
#else
#define PQ_PUBLIC(p, n) ((void)(p), (void)(n))
#endif

/* Hides a value from the optimiser, so that a mask built from a secret bit
 * stays arithmetic: without it clang turns ML-KEM's message decoding into a
 * conditional jump on each message bit (the audit caught that). */
static inline uint32_t pq_barrier(uint32_t x) {
    __asm__("" : "+r"(x));
    return x;
}

#define PQ_WIPE(x) sodium_memzero(&(x), sizeof(x))

/* An incremental Keccak sponge: SHA3-256/512 and SHAKE128/256. */
typedef struct {
    uint64_t s[25];
    unsigned pos, rate;
    uint8_t pad;
} pq_keccak;

enum { PQ_SHAKE128_RATE = 168, PQ_SHAKE256_RATE = 136, PQ_SHA3_256_RATE = 136, PQ_SHA3_512_RATE = 72 };

/* rate in bytes; pad 0x06 for SHA3, 0x1F for SHAKE. */
void pq_keccak_init(pq_keccak *k, unsigned rate, uint8_t pad);
void pq_keccak_absorb(pq_keccak *k, const uint8_t *in, size_t len);
/* Pads once; may then be called again to squeeze further output. */
void pq_keccak_squeeze(pq_keccak *k, uint8_t *out, size_t len);
void pq_keccak_finish(pq_keccak *k);

void pq_sha3_256(uint8_t out[32], const uint8_t *in, size_t len);
void pq_sha3_512(uint8_t out[64], const uint8_t *in, size_t len);
void pq_shake256(uint8_t *out, size_t out_len, const uint8_t *in, size_t len);

/* 256 values of `bits` bits each, little-endian bit order (FIPS 203
 * ByteEncode, FIPS 204 SimpleBitPack); pq_unpack is the inverse. */
void pq_pack(uint8_t *out, const uint32_t v[256], unsigned bits);
void pq_unpack(uint32_t v[256], const uint8_t *in, unsigned bits);

/* All-ones (0xFF) when the two arrays are equal, zero otherwise; no branch. */
uint8_t pq_ct_equal_mask(const uint8_t *a, const uint8_t *b, size_t n);

#ifdef PQ_BACKEND_OPENSSL
/* The OpenSSL backend (pq_openssl.c), called after this target's own argument checks. */
int pq_openssl_keygen(const char *alg, const uint8_t *seed, size_t seed_len, uint8_t *pub, size_t pub_len,
                      uint8_t *priv, size_t priv_len);
int pq_openssl_encaps(const char *alg, const uint8_t *ek, size_t ek_len, const uint8_t *m, uint8_t *ct, size_t ct_len,
                      uint8_t *ss);
int pq_openssl_decaps(const char *alg, const uint8_t *dk, size_t dk_len, const uint8_t *ct, size_t ct_len, uint8_t *ss);
int pq_openssl_sign(const char *alg, const uint8_t *sk, size_t sk_len, const uint8_t *msg, size_t msg_len,
                    const uint8_t *ctx, size_t ctx_len, const uint8_t *rnd, uint8_t *sig, size_t sig_len);
int pq_openssl_verify(const char *alg, const uint8_t *pk, size_t pk_len, const uint8_t *msg, size_t msg_len,
                      const uint8_t *ctx, size_t ctx_len, const uint8_t *sig, size_t sig_len);
#endif

#endif
