/* pq_openssl.c — the optional backend: with -DPQ_BACKEND_OPENSSL (and an OpenSSL of at least
 * 3.5 to link), the operations of post_quantum.h are served by EVP's ML-KEM and ML-DSA after
 * this target's own argument checks (mlkem.c and mldsa.c forward to the functions below).
 * NOT BUILT OR TESTED on Debian 12, whose OpenSSL is 3.0: see the header. */
#ifdef PQ_BACKEND_OPENSSL
#include "post_quantum.h"
#include "pq_internal.h"

#include <string.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

/* A key of `alg` from its raw public ("pub") or expanded private ("priv") encoding. */
static EVP_PKEY *load(const char *alg, const char *field, const uint8_t *key, size_t len) {
    EVP_PKEY *pkey = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, alg, NULL);
    OSSL_PARAM params[] = {OSSL_PARAM_octet_string(field, (void *)key, len), OSSL_PARAM_END};
    int selection = strcmp(field, OSSL_PKEY_PARAM_PUB_KEY) == 0 ? EVP_PKEY_PUBLIC_KEY : EVP_PKEY_KEYPAIR;
    if (!ctx || EVP_PKEY_fromdata_init(ctx) != 1 || EVP_PKEY_fromdata(ctx, &pkey, selection, params) != 1) pkey = NULL;
    EVP_PKEY_CTX_free(ctx);
    return pkey;
}

static int export(EVP_PKEY *pkey, const char *field, uint8_t *out, size_t len) {
    size_t n = 0;
    return EVP_PKEY_get_octet_string_param(pkey, field, out, len, &n) == 1 && n == len;
}

int pq_openssl_keygen(const char *alg, const uint8_t *seed, size_t seed_len, uint8_t *pub, size_t pub_len,
                      uint8_t *priv, size_t priv_len) {
    EVP_PKEY *pkey = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, alg, NULL);
    OSSL_PARAM params[] = {OSSL_PARAM_octet_string("seed", (void *)seed, seed_len), OSSL_PARAM_END};
    int ok = ctx && EVP_PKEY_keygen_init(ctx) == 1 && EVP_PKEY_CTX_set_params(ctx, params) == 1 &&
             EVP_PKEY_generate(ctx, &pkey) == 1 && export(pkey, OSSL_PKEY_PARAM_PUB_KEY, pub, pub_len) &&
             export(pkey, OSSL_PKEY_PARAM_PRIV_KEY, priv, priv_len);
    EVP_PKEY_free(pkey);
    EVP_PKEY_CTX_free(ctx);
    return ok ? PQ_OK : PQ_E_INPUT;
}

int pq_openssl_encaps(const char *alg, const uint8_t *ek, size_t ek_len, const uint8_t *m, uint8_t *ct, size_t ct_len,
                      uint8_t *ss) {
    EVP_PKEY *pkey = load(alg, OSSL_PKEY_PARAM_PUB_KEY, ek, ek_len);
    EVP_PKEY_CTX *ctx = pkey ? EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL) : NULL;
    OSSL_PARAM params[] = {OSSL_PARAM_octet_string(OSSL_KEM_PARAM_IKME, (void *)m, PQ_MLKEM_MSG_BYTES), OSSL_PARAM_END};
    size_t ctn = ct_len, ssn = PQ_MLKEM_SS_BYTES;
    int ok = ctx && EVP_PKEY_encapsulate_init(ctx, m ? params : NULL) == 1 &&
             EVP_PKEY_encapsulate(ctx, ct, &ctn, ss, &ssn) == 1 && ctn == ct_len && ssn == PQ_MLKEM_SS_BYTES;
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(pkey);
    return ok ? PQ_OK : PQ_E_INPUT;
}

int pq_openssl_decaps(const char *alg, const uint8_t *dk, size_t dk_len, const uint8_t *ct, size_t ct_len, uint8_t *ss) {
    EVP_PKEY *pkey = load(alg, OSSL_PKEY_PARAM_PRIV_KEY, dk, dk_len);
    EVP_PKEY_CTX *ctx = pkey ? EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL) : NULL;
    size_t ssn = PQ_MLKEM_SS_BYTES;
    int ok = ctx && EVP_PKEY_decapsulate_init(ctx, NULL) == 1 && EVP_PKEY_decapsulate(ctx, ss, &ssn, ct, ct_len) == 1 &&
             ssn == PQ_MLKEM_SS_BYTES;
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(pkey);
    return ok ? PQ_OK : PQ_E_INPUT;
}

/* Signing or verification with the context string; rnd NULL means hedged (OpenSSL's default). */
static EVP_PKEY_CTX *message_ctx(const char *alg, EVP_PKEY *pkey, int sign, const uint8_t *ctx, size_t ctx_len,
                                 const uint8_t *rnd) {
    EVP_SIGNATURE *sig_alg = EVP_SIGNATURE_fetch(NULL, alg, NULL);
    EVP_PKEY_CTX *c = pkey && sig_alg ? EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL) : NULL;
    OSSL_PARAM params[3] = {OSSL_PARAM_END, OSSL_PARAM_END, OSSL_PARAM_END};
    params[0] = OSSL_PARAM_construct_octet_string(OSSL_SIGNATURE_PARAM_CONTEXT_STRING, (void *)ctx, ctx_len);
    if (rnd) params[1] = OSSL_PARAM_construct_octet_string(OSSL_SIGNATURE_PARAM_TEST_ENTROPY, (void *)rnd, 32);
    int ok = c && (sign ? EVP_PKEY_sign_message_init(c, sig_alg, params) : EVP_PKEY_verify_message_init(c, sig_alg, params)) == 1;
    EVP_SIGNATURE_free(sig_alg);
    if (!ok) EVP_PKEY_CTX_free(c);
    return ok ? c : NULL;
}

int pq_openssl_sign(const char *alg, const uint8_t *sk, size_t sk_len, const uint8_t *msg, size_t msg_len,
                    const uint8_t *ctx, size_t ctx_len, const uint8_t *rnd, uint8_t *sig, size_t sig_len) {
    EVP_PKEY *pkey = load(alg, OSSL_PKEY_PARAM_PRIV_KEY, sk, sk_len);
    EVP_PKEY_CTX *c = message_ctx(alg, pkey, 1, ctx, ctx_len, rnd);
    size_t n = sig_len;
    int ok = c && EVP_PKEY_sign(c, sig, &n, msg, msg_len) == 1 && n == sig_len;
    EVP_PKEY_CTX_free(c);
    EVP_PKEY_free(pkey);
    return ok ? PQ_OK : PQ_E_INPUT;
}

int pq_openssl_verify(const char *alg, const uint8_t *pk, size_t pk_len, const uint8_t *msg, size_t msg_len,
                      const uint8_t *ctx, size_t ctx_len, const uint8_t *sig, size_t sig_len) {
    EVP_PKEY *pkey = load(alg, OSSL_PKEY_PARAM_PUB_KEY, pk, pk_len);
    EVP_PKEY_CTX *c = message_ctx(alg, pkey, 0, ctx, ctx_len, NULL);
    int ok = c && EVP_PKEY_verify(c, sig, sig_len, msg, msg_len) == 1;
    EVP_PKEY_CTX_free(c);
    EVP_PKEY_free(pkey);
    return ok ? PQ_OK : PQ_E_INPUT;
}
#else
typedef int pq_openssl_backend_not_built; /* ISO C wants a declaration in every file */
#endif
