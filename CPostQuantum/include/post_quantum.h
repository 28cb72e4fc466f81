/*
 * post_quantum.h — the public C surface of CPostQuantum: ML-KEM (FIPS 203,
 * parameter sets ML-KEM-768 and ML-KEM-1024) and ML-DSA (FIPS 204, ML-DSA-65
 * and ML-DSA-87, "pure" signing with a context string).
 *
 * Why this target exists: Debian 12 ships no ML-KEM or ML-DSA library
 * (its OpenSSL is 3.0; both algorithms arrived in OpenSSL 3.5), so the
 * algorithms are written here, from the two standards, in one audited target.
 *
 * SHA-3 and SHAKE: our own Keccak-f[1600] (keccak.c, about 80 lines), not
 * OpenSSL's EVP. The samplers of both standards (SampleNTT, RejNTTPoly,
 * RejBoundedPoly, SampleInBall) squeeze a SHAKE stream block after block for
 * as long as rejection needs; OpenSSL 3.0's EVP_DigestFinalXOF can be called
 * only once per context (incremental squeezing, EVP_DigestSqueeze, came in
 * 3.3), which would force a guessed output length and a second code path.
 * Our Keccak is branch-free on data, needs no allocation and cannot fail, so
 * no function here has a library error path, and the target links libsodium
 * only (randombytes_buf, sodium_memzero).
 *
 * Conventions:
 *  - Every function returns PQ_OK (0) or PQ_E_INPUT (-1): a length that is
 *    not the parameter set's, an unknown parameter set, a NULL pointer, or a
 *    malformed key (the input checks of FIPS 203 section 7 and FIPS 204
 *    section 3.6.2). ML-DSA verification returns PQ_E_INPUT for a signature
 *    that does not verify, too: there is one failure, never a reason.
 *  - Secret keys, seeds, messages of encapsulation and shared secrets are the
 *    caller's buffers (the Swift layer keeps them in secure memory). Every
 *    temporary that held secret data is wiped (sodium_memzero) before the
 *    function returns. On failure, secret outputs are zeroed.
 *  - Constant time in every secret: no branch and no memory index depends on
 *    a secret. Rejection sampling branches on public data (the matrix from
 *    the public seed) or, in ExpandS and in the signing loop, only on values
 *    the standard discards or publishes (the rejected nibbles, whether an
 *    attempt is rejected, the challenge hash of an attempt); those single
 *    verdicts are computed branch-free and then declassified (see PQ_PUBLIC
 *    in pq_internal.h). Decapsulation compares ciphertexts in constant time
 *    and selects the implicit-rejection secret by a masked move.
 *  - Inputs and outputs must not overlap. No function keeps a pointer.
 *
 * Backend switch: compiled with -DPQ_BACKEND_OPENSSL against the headers and libcrypto of an
 * OpenSSL of at least 3.5 (pkg-config --atleast-version=3.5 libcrypto), each operation below
 * runs this target's own argument checks and then EVP's "ML-KEM-768", ..., "ML-DSA-87"
 * (pq_openssl.c: keygen from the "seed" parameter, encapsulation with "ikme" for an explicit m,
 * the expanded keys as "priv", signing through EVP_PKEY_sign_message_init with
 * "context-string" and "test-entropy" = rnd). The Swift build never sets it; `make test-c`
 * builds and runs test_pq (with every known answer) on that backend only where pkg-config
 * finds such an OpenSSL. Debian 12's is 3.0: there the backend is neither built nor tested.
 */
#ifndef POST_QUANTUM_H
#define POST_QUANTUM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PQ_OK 0
#define PQ_E_INPUT (-1)

/* Parameter sets; the value is FIPS 203's k or FIPS 204's (k, l) in decimal. */
typedef enum { PQ_MLKEM_768 = 3, PQ_MLKEM_1024 = 4 } pq_mlkem_param;
typedef enum { PQ_MLDSA_65 = 65, PQ_MLDSA_87 = 87 } pq_mldsa_param;

#define PQ_MLKEM_SEED_BYTES 64 /* d || z */
#define PQ_MLKEM_MSG_BYTES 32  /* m */
#define PQ_MLKEM_SS_BYTES 32   /* K */
#define PQ_MLKEM768_EK_BYTES 1184
#define PQ_MLKEM768_DK_BYTES 2400
#define PQ_MLKEM768_CT_BYTES 1088
#define PQ_MLKEM1024_EK_BYTES 1568
#define PQ_MLKEM1024_DK_BYTES 3168
#define PQ_MLKEM1024_CT_BYTES 1568

#define PQ_MLDSA_SEED_BYTES 32 /* xi */
#define PQ_MLDSA_RND_BYTES 32  /* rnd: all zero for the deterministic variant */
#define PQ_MLDSA_CTX_MAX 255
#define PQ_MLDSA65_PK_BYTES 1952
#define PQ_MLDSA65_SK_BYTES 4032
#define PQ_MLDSA65_SIG_BYTES 3309
#define PQ_MLDSA87_PK_BYTES 2592
#define PQ_MLDSA87_SK_BYTES 4896
#define PQ_MLDSA87_SIG_BYTES 4627

/* Sizes of a parameter set's encodings; 0 for an unknown parameter set. */
size_t pq_mlkem_ek_bytes(pq_mlkem_param p);
size_t pq_mlkem_dk_bytes(pq_mlkem_param p);
size_t pq_mlkem_ct_bytes(pq_mlkem_param p);
size_t pq_mldsa_pk_bytes(pq_mldsa_param p);
size_t pq_mldsa_sk_bytes(pq_mldsa_param p);
size_t pq_mldsa_sig_bytes(pq_mldsa_param p);

/*
 * ML-KEM.KeyGen_internal(d, z) (FIPS 203 Algorithm 16), from the 64-byte
 * seed d || z. Writes pq_mlkem_ek_bytes(p) bytes to `ek` and
 * pq_mlkem_dk_bytes(p) bytes to `dk` (the expanded decapsulation key
 * dk_PKE || ek || H(ek) || z). Deterministic. Secret: seed, dk.
 * Returns PQ_E_INPUT only for an unknown parameter set or a NULL pointer.
 */
int pq_mlkem_keygen(pq_mlkem_param p, const uint8_t seed[PQ_MLKEM_SEED_BYTES], uint8_t *ek, uint8_t *dk);

/*
 * ML-KEM.Encaps_internal(ek, m) (Algorithm 17) with the caller's 32-byte m:
 * for tests and known answers. Checks ek first (Section 7.2: its length, and
 * every 12-bit coefficient below q); PQ_E_INPUT if it fails, and then `ct`
 * and `ss` are zeroed. Writes pq_mlkem_ct_bytes(p) bytes to `ct` and 32
 * bytes to `ss`. Secret: m, ss.
 */
int pq_mlkem_encaps_derand(pq_mlkem_param p, const uint8_t *ek, size_t ek_len, const uint8_t m[PQ_MLKEM_MSG_BYTES],
                           uint8_t *ct, uint8_t ss[PQ_MLKEM_SS_BYTES]);

/* ML-KEM.Encaps(ek) (Algorithm 20): as above with m from randombytes_buf. */
int pq_mlkem_encaps(pq_mlkem_param p, const uint8_t *ek, size_t ek_len, uint8_t *ct, uint8_t ss[PQ_MLKEM_SS_BYTES]);

/*
 * ML-KEM.Decaps(dk, c) (Algorithm 21 with 18): checks the lengths of dk and
 * ct and the hash check of Section 7.3 (H(ek) stored in dk matches the ek in
 * dk); PQ_E_INPUT if one fails (ss zeroed). Otherwise PQ_OK, always: a
 * ciphertext that does not re-encrypt to itself gives the implicit-rejection
 * secret J(z || c), chosen in constant time. Secret: dk, ss.
 */
int pq_mlkem_decaps(pq_mlkem_param p, const uint8_t *dk, size_t dk_len, const uint8_t *ct, size_t ct_len,
                    uint8_t ss[PQ_MLKEM_SS_BYTES]);

/*
 * ML-DSA.KeyGen_internal(xi) (FIPS 204 Algorithm 6) from the 32-byte seed.
 * Writes pq_mldsa_pk_bytes(p) bytes to `pk` and pq_mldsa_sk_bytes(p) to
 * `sk`. Deterministic. Secret: seed, sk.
 */
int pq_mldsa_keygen(pq_mldsa_param p, const uint8_t seed[PQ_MLDSA_SEED_BYTES], uint8_t *pk, uint8_t *sk);

/*
 * ML-DSA.Sign(sk, M, ctx) (Algorithm 2, pure, then Algorithm 7): the
 * message M' = 0 || |ctx| || ctx || M. `rnd` is the 32-byte randomness:
 * all zero gives the deterministic variant; NULL draws it from
 * randombytes_buf (the hedged variant). ctx_len <= 255 (`ctx` may be NULL
 * when ctx_len is 0), sk_len the parameter set's; otherwise PQ_E_INPUT and
 * `sig` zeroed. Writes pq_mldsa_sig_bytes(p) bytes to `sig`. Secret: sk.
 */
int pq_mldsa_sign(pq_mldsa_param p, const uint8_t *sk, size_t sk_len, const uint8_t *msg, size_t msg_len,
                  const uint8_t *ctx, size_t ctx_len, const uint8_t *rnd, uint8_t *sig);

/*
 * ML-DSA.Verify(pk, M, sig, ctx) (Algorithm 3, then Algorithm 8): PQ_OK if
 * the signature is valid, PQ_E_INPUT otherwise, after every check of the
 * standard: lengths of pk and sig, ctx_len <= 255, the hint encoding
 * (indices strictly increasing per polynomial, counts non-decreasing and at
 * most omega, unused slots zero), ||z||inf < gamma1 - beta, and c~ equal to
 * the recomputed commitment hash. Everything here is public.
 */
int pq_mldsa_verify(pq_mldsa_param p, const uint8_t *pk, size_t pk_len, const uint8_t *msg, size_t msg_len,
                    const uint8_t *ctx, size_t ctx_len, const uint8_t *sig, size_t sig_len);

#ifdef __cplusplus
}
#endif

#endif
