/* protocol.c — the primitives the PowerAuth-compatible protocol needs
 * (CProtocolCrypto, the one target that links libcrypto).
 *
 * libsodium has no AES-128 and no P-256, so those come from OpenSSL libcrypto
 * (through its EVP interface only: the low-level AES_* and EC_KEY_* calls are
 * deprecated in OpenSSL 3). HMAC-SHA256, SHA-256 and Argon2id come from
 * libsodium. Two protocol steps live here rather than in Swift because their
 * intermediates are secret: the authentication-code key chain and the
 * knowledge-key wrap. Their intermediates stay in stack locals that are wiped
 * before return; they never reach the Swift heap.
 *
 * Secrets cross in as the core's handles (spc_buffer, spc_password): this
 * file opens them for exactly the time it reads or writes them and closes
 * them before returning, so no caller ever holds the address of a secret.
 *
 * Every OpenSSL failure is reported as SPC_E_CRYPTO (or SPC_E_KEY where the
 * cause is the caller's key) and the thread's OpenSSL error queue is cleared,
 * so a stale error never surfaces in an unrelated later call.
 */
#include "protocol_crypto.h"

#include <limits.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <sodium.h>

const char *spc_crypto_library_version(void) { return OpenSSL_version(OPENSSL_VERSION); }

/* ------------------------------------------------------------------------ */
/* Opening the caller's buffers                                              */
/* ------------------------------------------------------------------------ */

/* Open `buf` if its size is `size` (0: any size). Pair with spc_buffer_close. */
static int open_sized(spc_buffer *buf, size_t size, uint8_t **p) {
    *p = NULL;
    if (buf == NULL || (size != 0 && spc_buffer_size(buf) != size)) return SPC_E_ARGUMENT;
    return spc_buffer_open(buf, p);
}

/* Open an output buffer of exactly `size` bytes and clear it. */
static int open_output(spc_buffer *buf, size_t size, uint8_t **p) {
    int rc = open_sized(buf, size, p);
    if (rc == SPC_OK) sodium_memzero(*p, size);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* AES-128                                                                   */
/* ------------------------------------------------------------------------ */

/* One EVP pass without padding. EVP_CIPHER_CTX_free cleanses the key schedule. */
static int aes128_run(const EVP_CIPHER *cipher, int encrypt, const uint8_t key[16], const uint8_t *iv,
                      const uint8_t *in, size_t len, uint8_t *out) {
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return SPC_E_NOMEM;
    int produced = 0, tail = 0;
    int ok = EVP_CipherInit_ex(ctx, cipher, NULL, key, iv, encrypt) == 1 &&
             EVP_CIPHER_CTX_set_padding(ctx, 0) == 1 &&
             EVP_CipherUpdate(ctx, out, &produced, in, (int)len) == 1 &&
             EVP_CipherFinal_ex(ctx, out + produced, &tail) == 1 &&
             (size_t)produced + (size_t)tail == len;
    EVP_CIPHER_CTX_free(ctx);
    if (ok) return SPC_OK;
    sodium_memzero(out, len);
    ERR_clear_error();
    return SPC_E_CRYPTO;
}

/* One block from the key buffer into the output buffer (two distinct buffers). */
static int aes128_block(int encrypt, spc_buffer *key, const uint8_t in[SPC_AES_BLOCK_BYTES], spc_buffer *out) {
    if (!spc_initialized()) return SPC_E_INIT;
    if (key == out) return SPC_E_ARGUMENT;
    uint8_t *o, *k;
    int rc = open_output(out, SPC_AES_BLOCK_BYTES, &o);
    if (rc != SPC_OK) return rc;
    rc = open_sized(key, SPC_AES128_KEY_BYTES, &k);
    if (rc == SPC_OK) {
        rc = aes128_run(EVP_aes_128_ecb(), encrypt, k, NULL, in, SPC_AES_BLOCK_BYTES, o);
        spc_buffer_close(key);
    }
    if (rc != SPC_OK) sodium_memzero(o, SPC_AES_BLOCK_BYTES);
    spc_buffer_close(out);
    return rc;
}

spc_status spc_aes128_encrypt_block(spc_buffer *key, const uint8_t in[SPC_AES_BLOCK_BYTES], spc_buffer *out) {
    return aes128_block(1, key, in, out);
}

spc_status spc_aes128_decrypt_block(spc_buffer *key, const uint8_t in[SPC_AES_BLOCK_BYTES], spc_buffer *out) {
    return aes128_block(0, key, in, out);
}

/* CBC lengths: whole blocks, at least one, at most SPC_BUFFER_MAX (fits an int). */
static int cbc_length_ok(size_t len) { return len > 0 && len % SPC_AES_BLOCK_BYTES == 0 && len <= SPC_BUFFER_MAX; }

static int aes128_cbc(int encrypt, spc_buffer *key, const uint8_t iv[SPC_AES_BLOCK_BYTES], const uint8_t *in,
                      size_t len, uint8_t *out) {
    if (!cbc_length_ok(len)) return SPC_E_ARGUMENT;
    memset(out, 0, len);
    if (!spc_initialized()) return SPC_E_INIT;
    uint8_t *k;
    int rc = open_sized(key, SPC_AES128_KEY_BYTES, &k);
    if (rc != SPC_OK) return rc;
    rc = aes128_run(EVP_aes_128_cbc(), encrypt, k, iv, in, len, out);
    spc_buffer_close(key);
    return rc;
}

spc_status spc_aes128_cbc_nopad_encrypt(spc_buffer *key, const uint8_t iv[SPC_AES_BLOCK_BYTES], const uint8_t *in,
                                 size_t len, uint8_t *out) {
    return aes128_cbc(1, key, iv, in, len, out);
}

spc_status spc_aes128_cbc_nopad_decrypt(spc_buffer *key, const uint8_t iv[SPC_AES_BLOCK_BYTES], const uint8_t *in,
                                 size_t len, uint8_t *out) {
    return aes128_cbc(0, key, iv, in, len, out);
}

/* ------------------------------------------------------------------------ */
/* SHA-256 and HMAC-SHA256 (libsodium)                                       */
/* ------------------------------------------------------------------------ */

spc_status spc_sha256(const uint8_t *msg, size_t len, uint8_t out[SPC_SHA256_BYTES]) {
    static const uint8_t empty[1] = {0};
    memset(out, 0, SPC_SHA256_BYTES);
    if (!spc_initialized()) return SPC_E_INIT;
    if (msg == NULL && len != 0) return SPC_E_ARGUMENT;
    if (crypto_hash_sha256(out, msg != NULL ? msg : empty, (unsigned long long)len) != 0) return SPC_E_CRYPTO;
    return SPC_OK;
}

/* HMAC without the readiness check (for the loops below). The state holds
 * the padded key: wipe it. */
static int hmac(const uint8_t *key, size_t key_len, const uint8_t *msg, size_t len, uint8_t out[32]) {
    crypto_auth_hmacsha256_state st;
    int ok = crypto_auth_hmacsha256_init(&st, key, key_len) == 0 &&
             (len == 0 || crypto_auth_hmacsha256_update(&st, msg, (unsigned long long)len) == 0) &&
             crypto_auth_hmacsha256_final(&st, out) == 0;
    sodium_memzero(&st, sizeof st);
    if (ok) return SPC_OK;
    sodium_memzero(out, 32);
    return SPC_E_CRYPTO;
}

spc_status spc_hmac_sha256(spc_buffer *key, const uint8_t *msg, size_t len, uint8_t out[SPC_HMAC_SHA256_BYTES]) {
    memset(out, 0, SPC_HMAC_SHA256_BYTES);
    if (!spc_initialized()) return SPC_E_INIT;
    if (msg == NULL && len != 0) return SPC_E_ARGUMENT;
    uint8_t *k;
    int rc = open_sized(key, 0, &k);
    if (rc != SPC_OK) return rc;
    rc = hmac(k, spc_buffer_size(key), msg, len, out);
    spc_buffer_close(key);
    return rc;
}

spc_status spc_hmac_sha256_derive(spc_buffer *const parts[], size_t part_count, const uint8_t *msg, size_t len,
                           spc_buffer *out) {
    if (!spc_initialized()) return SPC_E_INIT;
    if (part_count < 1 || part_count > SPC_HMAC_KEY_PARTS_MAX || (msg == NULL && len != 0)) return SPC_E_ARGUMENT;
    size_t total = 0;
    for (size_t i = 0; i < part_count; i++) {
        if (parts[i] == NULL || parts[i] == out) return SPC_E_ARGUMENT;
        total += spc_buffer_size(parts[i]); /* each at most SPC_BUFFER_MAX: no overflow for 8 parts */
    }
    if (total > SPC_BUFFER_MAX) return SPC_E_ARGUMENT;
    uint8_t *o, *k, *p;
    int rc = open_output(out, SPC_HMAC_SHA256_BYTES, &o);
    if (rc != SPC_OK) return rc;
    spc_buffer *key = NULL;
    rc = spc_buffer_new(total, &key);
    if (rc == SPC_OK) rc = spc_buffer_open(key, &k);
    if (rc == SPC_OK) {
        size_t offset = 0;
        for (size_t i = 0; rc == SPC_OK && i < part_count; i++) {
            size_t n = spc_buffer_size(parts[i]);
            rc = spc_buffer_open(parts[i], &p);
            if (rc == SPC_OK) {
                memcpy(k + offset, p, n);
                spc_buffer_close(parts[i]);
                offset += n;
            }
        }
        if (rc == SPC_OK) rc = hmac(k, total, msg, len, o);
        spc_buffer_close(key);
    }
    spc_buffer_free(key); /* wipes the concatenated key */
    if (rc != SPC_OK) sodium_memzero(o, SPC_HMAC_SHA256_BYTES);
    spc_buffer_close(out);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Authentication code (PowerAuth V3 key chain)                              */
/* ------------------------------------------------------------------------ */

/* Component i: K = HMAC(keys[i], ctr); for j < i: K = HMAC(HMAC(keys[j+1], ctr), K);
 * component = HMAC(K, data). */
static int authcode_component(const uint8_t *const keys[], size_t i, const uint8_t ctr[SPC_COUNTER_BYTES],
                              const uint8_t *data, size_t len, uint8_t out[32]) {
    uint8_t chain[32], step[32], next[32];
    int rc = hmac(keys[i], SPC_FACTOR_KEY_BYTES, ctr, SPC_COUNTER_BYTES, chain);
    for (size_t j = 0; rc == SPC_OK && j < i; j++) {
        rc = hmac(keys[j + 1], SPC_FACTOR_KEY_BYTES, ctr, SPC_COUNTER_BYTES, step);
        if (rc == SPC_OK) rc = hmac(step, sizeof step, chain, sizeof chain, next);
        if (rc == SPC_OK) memcpy(chain, next, sizeof chain);
    }
    if (rc == SPC_OK) rc = hmac(chain, sizeof chain, data, len, out);
    sodium_memzero(chain, sizeof chain);
    sodium_memzero(step, sizeof step);
    sodium_memzero(next, sizeof next);
    return rc;
}

spc_status spc_authcode_compute(spc_buffer *const keys[], size_t key_count, const uint8_t ctr[SPC_COUNTER_BYTES],
                         const uint8_t *data, size_t len, uint8_t *out, size_t out_len) {
    memset(out, 0, out_len);
    if (!spc_initialized()) return SPC_E_INIT;
    if (key_count < 1 || key_count > SPC_AUTHCODE_MAX_FACTORS || out_len != key_count * SPC_HMAC_SHA256_BYTES ||
        (data == NULL && len != 0))
        return SPC_E_ARGUMENT;
    for (size_t i = 0; i < key_count; i++)
        if (keys[i] == NULL || spc_buffer_size(keys[i]) != SPC_FACTOR_KEY_BYTES) return SPC_E_ARGUMENT;
    const uint8_t *bytes[SPC_AUTHCODE_MAX_FACTORS] = {NULL};
    size_t opened = 0;
    int rc = SPC_OK;
    for (; rc == SPC_OK && opened < key_count; opened++) {
        uint8_t *p;
        rc = spc_buffer_open(keys[opened], &p);
        if (rc != SPC_OK) break;
        bytes[opened] = p;
    }
    for (size_t i = 0; rc == SPC_OK && i < key_count; i++)
        rc = authcode_component(bytes, i, ctr, data, len, out + i * SPC_HMAC_SHA256_BYTES);
    while (opened > 0) spc_buffer_close(keys[--opened]);
    if (rc != SPC_OK) sodium_memzero(out, out_len);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* P-256                                                                     */
/* ------------------------------------------------------------------------ */

/* The order n of the P-256 group, big-endian. */
static const uint8_t p256_order[32] = {
    0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
    0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
};

/* 1 when 0 < d < n. Runs over every byte with no branch on d: the result is
 * the only thing that leaves, and it is public (valid key or not). */
static int scalar_in_range(const uint8_t d[32]) {
    unsigned borrow = 0, any = 0;
    for (int i = 31; i >= 0; i--) {
        unsigned diff = (unsigned)d[i] - (unsigned)p256_order[i] - borrow;
        borrow = (diff >> 8) & 1u; /* set while d < n so far */
        any |= d[i];
    }
    return (int)(borrow & ((any + 0xFFu) >> 8));
}

/* Accept 32 bytes, or 33 with a leading zero (a Java BigInteger's sign byte). */
static const uint8_t *scalar_bytes(const uint8_t *priv, size_t len) {
    if (len == SPC_P256_SCALAR_BYTES) return priv;
    if (len == SPC_P256_SCALAR_BYTES + 1 && priv[0] == 0) return priv + 1;
    return NULL;
}

static int p256_import(OSSL_PARAM *params, int selection, EVP_PKEY **out) {
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    int ok = ctx != NULL && EVP_PKEY_fromdata_init(ctx) == 1 && EVP_PKEY_fromdata(ctx, out, selection, params) == 1;
    EVP_PKEY_CTX_free(ctx);
    return ok;
}

/* A private key object from a big-endian scalar (range already checked).
 * OSSL_PARAM integers are native-endian: the reversed copy is wiped. */
static int p256_private_key(const uint8_t d[32], EVP_PKEY **out) {
    char group[] = "P-256";
    uint8_t native[32];
    for (size_t i = 0; i < 32; i++)
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        native[i] = d[i];
#else
        native[i] = d[31 - i];
#endif
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0),
        OSSL_PARAM_construct_BN(OSSL_PKEY_PARAM_PRIV_KEY, native, sizeof native),
        OSSL_PARAM_construct_end(),
    };
    int ok = p256_import(params, EVP_PKEY_KEYPAIR, out);
    sodium_memzero(native, sizeof native);
    return ok;
}

/* A public key object from SEC1 bytes (33 compressed or 65 uncompressed),
 * fully checked: on the curve, not the point at infinity, of order n. */
static int p256_public_key(const uint8_t *pub, size_t len, EVP_PKEY **out) {
    if (len != SPC_P256_PUBLIC_BYTES && len != SPC_P256_COMPRESSED_BYTES) return 0;
    char group[] = "P-256";
    uint8_t copy[SPC_P256_PUBLIC_BYTES];
    memcpy(copy, pub, len);
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0),
        OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, copy, len),
        OSSL_PARAM_construct_end(),
    };
    if (!p256_import(params, EVP_PKEY_PUBLIC_KEY, out)) return 0;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, *out, NULL);
    int ok = ctx != NULL && EVP_PKEY_public_check(ctx) == 1;
    EVP_PKEY_CTX_free(ctx);
    if (!ok) {
        EVP_PKEY_free(*out);
        *out = NULL;
    }
    return ok;
}

spc_status spc_p256_public_check(const uint8_t *pub, size_t len) {
    if (!spc_initialized()) return SPC_E_INIT;
    if (pub == NULL) return SPC_E_ARGUMENT;
    EVP_PKEY *key = NULL;
    int ok = p256_public_key(pub, len, &key);
    EVP_PKEY_free(key);
    ERR_clear_error();
    return ok ? SPC_OK : SPC_E_KEY;
}

static int keypair_generate(uint8_t priv[SPC_P256_SCALAR_BYTES], uint8_t pub[SPC_P256_PUBLIC_BYTES]) {
    char group[] = "P-256";
    EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", group);
    BIGNUM *d = NULL;
    size_t pub_len = 0;
    int ok = key != NULL && EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_PRIV_KEY, &d) == 1 &&
             BN_bn2binpad(d, priv, SPC_P256_SCALAR_BYTES) == SPC_P256_SCALAR_BYTES &&
             EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_PUB_KEY, pub, SPC_P256_PUBLIC_BYTES, &pub_len) == 1 &&
             pub_len == SPC_P256_PUBLIC_BYTES && pub[0] == 0x04;
    BN_clear_free(d);
    EVP_PKEY_free(key);
    if (ok) return SPC_OK;
    sodium_memzero(priv, SPC_P256_SCALAR_BYTES);
    memset(pub, 0, SPC_P256_PUBLIC_BYTES);
    ERR_clear_error();
    return SPC_E_CRYPTO;
}

spc_status spc_p256_keypair_generate(spc_buffer *priv, uint8_t pub[SPC_P256_PUBLIC_BYTES]) {
    memset(pub, 0, SPC_P256_PUBLIC_BYTES);
    if (!spc_initialized()) return SPC_E_INIT;
    uint8_t *d;
    int rc = open_output(priv, SPC_P256_SCALAR_BYTES, &d);
    if (rc != SPC_OK) return rc;
    rc = keypair_generate(d, pub);
    spc_buffer_close(priv);
    return rc;
}

/* The private key object for an ECDH or a signature, from the scalar in
 * `priv` (opened and closed here), or the status explaining why not. */
static int p256_load(spc_buffer *priv, EVP_PKEY **key) {
    uint8_t *p;
    if (priv == NULL) return SPC_E_KEY;
    int rc = spc_buffer_open(priv, &p);
    if (rc != SPC_OK) return rc;
    const uint8_t *d = scalar_bytes(p, spc_buffer_size(priv));
    if (d == NULL || !scalar_in_range(d)) rc = SPC_E_KEY;
    else if (!p256_private_key(d, key)) {
        ERR_clear_error();
        rc = SPC_E_CRYPTO;
    }
    spc_buffer_close(priv);
    return rc;
}

spc_status spc_p256_ecdh(spc_buffer *priv, const uint8_t *pub, size_t pub_len, spc_buffer *shared) {
    if (!spc_initialized()) return SPC_E_INIT;
    if (priv == shared) return SPC_E_ARGUMENT;
    uint8_t *shared_x;
    int rc = open_output(shared, SPC_P256_SCALAR_BYTES, &shared_x);
    if (rc != SPC_OK) return rc;
    EVP_PKEY *mine = NULL, *peer = NULL;
    rc = p256_load(priv, &mine);
    if (rc == SPC_OK && (pub == NULL || !p256_public_key(pub, pub_len, &peer))) rc = SPC_E_KEY;
    EVP_PKEY_CTX *ctx = rc == SPC_OK ? EVP_PKEY_CTX_new_from_pkey(NULL, mine, NULL) : NULL;
    size_t len = SPC_P256_SCALAR_BYTES;
    if (rc == SPC_OK &&
        !(ctx != NULL && EVP_PKEY_derive_init(ctx) == 1 && EVP_PKEY_derive_set_peer_ex(ctx, peer, 1) == 1 &&
          EVP_PKEY_derive(ctx, shared_x, &len) == 1 && len == SPC_P256_SCALAR_BYTES))
        rc = SPC_E_CRYPTO;
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(mine);
    EVP_PKEY_free(peer);
    if (rc != SPC_OK) sodium_memzero(shared_x, SPC_P256_SCALAR_BYTES);
    spc_buffer_close(shared);
    ERR_clear_error();
    return rc;
}

spc_status spc_p256_ecdsa_sign(spc_buffer *priv, const uint8_t *msg, size_t len, uint8_t sig[SPC_P256_SIGNATURE_MAX],
                        size_t *sig_len) {
    memset(sig, 0, SPC_P256_SIGNATURE_MAX);
    *sig_len = 0;
    if (!spc_initialized()) return SPC_E_INIT;
    if (msg == NULL && len != 0) return SPC_E_ARGUMENT;
    static const uint8_t empty[1] = {0};
    EVP_PKEY *key = NULL;
    int rc = p256_load(priv, &key);
    EVP_MD_CTX *md = rc == SPC_OK ? EVP_MD_CTX_new() : NULL;
    size_t produced = SPC_P256_SIGNATURE_MAX;
    if (rc == SPC_OK &&
        !(md != NULL && EVP_DigestSignInit_ex(md, NULL, "SHA256", NULL, NULL, key, NULL) == 1 &&
          EVP_DigestSign(md, sig, &produced, msg != NULL ? msg : empty, len) == 1))
        rc = SPC_E_CRYPTO;
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(key);
    if (rc == SPC_OK) *sig_len = produced;
    else memset(sig, 0, SPC_P256_SIGNATURE_MAX);
    ERR_clear_error();
    return rc;
}

spc_status spc_p256_ecdsa_verify(const uint8_t *pub, size_t pub_len, const uint8_t *msg, size_t len, const uint8_t *sig,
                          size_t sig_len, int *valid) {
    *valid = 0;
    if (!spc_initialized()) return SPC_E_INIT;
    if ((msg == NULL && len != 0) || (sig == NULL && sig_len != 0)) return SPC_E_ARGUMENT;
    static const uint8_t empty[1] = {0};
    EVP_PKEY *key = NULL;
    if (pub == NULL || !p256_public_key(pub, pub_len, &key)) {
        ERR_clear_error();
        return SPC_E_KEY;
    }
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int rc = md != NULL && EVP_DigestVerifyInit_ex(md, NULL, "SHA256", NULL, NULL, key, NULL) == 1 ? SPC_OK
                                                                                                   : SPC_E_CRYPTO;
    /* A malformed DER signature is a signature that does not verify, not an error. */
    if (rc == SPC_OK && sig_len > 0)
        *valid = EVP_DigestVerify(md, sig, sig_len, msg != NULL ? msg : empty, len) == 1;
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(key);
    ERR_clear_error();
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Knowledge key wrap (no oracle)                                            */
/* ------------------------------------------------------------------------ */

/* Argon2id (v1.3, p = 1) of the PIN through the core's one Argon2 path
 * (spc_kdf_argon2id: parameters checked against the ceilings before any
 * work), the PIN revealed as UTF-8 into a secure buffer for the derivation
 * only, into a 16-byte key-encryption key that lives in secure memory. */
static int knowledge_kek(spc_password *pin, const uint8_t salt[SPC_KNOWLEDGE_SALT_BYTES], uint32_t memory_kib,
                         uint32_t iterations, spc_buffer **kek_out) {
    *kek_out = NULL;
    if (pin == NULL || memory_kib < SPC_KNOWLEDGE_MEMORY_MIN_KIB || memory_kib > SPC_KNOWLEDGE_MEMORY_MAX_KIB ||
        iterations < 1 || iterations > SPC_KNOWLEDGE_ITERATIONS_MAX || spc_password_length(pin) == 0)
        return SPC_E_ARGUMENT;
    spc_buffer *utf8 = NULL, *kek = NULL;
    size_t len = 0;
    uint8_t *p;
    spc_kdf_limits limits;
    int rc = spc_kdf_limits_default(&limits);
    if (rc == SPC_OK) rc = spc_password_reveal(pin, &utf8, &len);
    if (rc == SPC_OK) rc = spc_buffer_new(SPC_AES128_KEY_BYTES, &kek);
    if (rc == SPC_OK) rc = spc_buffer_open(utf8, &p);
    if (rc == SPC_OK) {
        const spc_argon2_input in = {
            .password = p, .password_len = len, .salt = salt, .salt_len = SPC_KNOWLEDGE_SALT_BYTES};
        const spc_argon2_params params = {.t_cost = iterations, .m_cost_kib = memory_kib, .parallelism = 1};
        rc = spc_kdf_argon2id(&in, &params, &limits, SPC_ARGON2_AUTO, kek, NULL);
        /* The parameters were checked above, inside the KDF's own bounds: what is left to fail
         * is the allocation of its work memory (or a ceiling below it on a small machine). */
        if (rc == SPC_E_KDF_FAILED || rc == SPC_E_KDF_CEILING) rc = SPC_E_NOMEM;
        spc_buffer_close(utf8);
    }
    spc_buffer_free(utf8);
    if (rc != SPC_OK) {
        spc_buffer_free(kek);
        return rc;
    }
    *kek_out = kek;
    return SPC_OK;
}

static int knowledge_apply(int encrypt, spc_password *pin, const uint8_t salt[SPC_KNOWLEDGE_SALT_BYTES],
                           uint32_t memory_kib, uint32_t iterations, const uint8_t in[SPC_FACTOR_KEY_BYTES],
                           uint8_t out[SPC_FACTOR_KEY_BYTES]) {
    spc_buffer *kek = NULL;
    uint8_t *k;
    int rc = knowledge_kek(pin, salt, memory_kib, iterations, &kek);
    if (rc == SPC_OK) rc = spc_buffer_open(kek, &k);
    if (rc == SPC_OK) {
        rc = aes128_run(EVP_aes_128_ecb(), encrypt, k, NULL, in, SPC_FACTOR_KEY_BYTES, out);
        spc_buffer_close(kek);
    }
    spc_buffer_free(kek);
    if (rc != SPC_OK) sodium_memzero(out, SPC_FACTOR_KEY_BYTES);
    return rc;
}

spc_status spc_knowledge_key_wrap(spc_password *pin, const uint8_t salt[SPC_KNOWLEDGE_SALT_BYTES], uint32_t memory_kib,
                           uint32_t iterations, spc_buffer *key, uint8_t wrapped[SPC_FACTOR_KEY_BYTES]) {
    memset(wrapped, 0, SPC_FACTOR_KEY_BYTES);
    if (!spc_initialized()) return SPC_E_INIT;
    uint8_t *k;
    int rc = open_sized(key, SPC_FACTOR_KEY_BYTES, &k);
    if (rc != SPC_OK) return rc;
    rc = knowledge_apply(1, pin, salt, memory_kib, iterations, k, wrapped);
    spc_buffer_close(key);
    return rc;
}

spc_status spc_knowledge_key_unwrap(spc_password *pin, const uint8_t salt[SPC_KNOWLEDGE_SALT_BYTES], uint32_t memory_kib,
                             uint32_t iterations, const uint8_t wrapped[SPC_FACTOR_KEY_BYTES], spc_buffer *key) {
    if (!spc_initialized()) return SPC_E_INIT;
    uint8_t *k;
    int rc = open_output(key, SPC_FACTOR_KEY_BYTES, &k);
    if (rc != SPC_OK) return rc;
    rc = knowledge_apply(0, pin, salt, memory_kib, iterations, wrapped, k);
    spc_buffer_close(key);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* ECIES (PowerAuth V3.0 ... V3.3)                                           */
/* ------------------------------------------------------------------------ */

/* A value derived from a secret that the header documents as public (a MAC
 * verdict, a plaintext length): compiled away except in the constant-time
 * audit build, where valgrind is told it may be branched on. */
#ifdef SPC_CTGRIND
#include <valgrind/memcheck.h>
#define DECLASSIFY(p, n) ((void)VALGRIND_MAKE_MEM_DEFINED((p), (n)))
#else
#define DECLASSIFY(p, n) ((void)0)
#endif

/* X9.63 with SHA-256: block i = SHA256(secret || u32be(i) || info_a || info_b),
 * i from 1, concatenated and cut to out_len. The info comes in two public
 * parts so that SH1 || ephemeral key needs no copy. */
static int kdf_x963(const uint8_t *secret, size_t secret_len, const uint8_t *info_a, size_t a_len,
                    const uint8_t *info_b, size_t b_len, uint8_t *out, size_t out_len) {
    crypto_hash_sha256_state st;
    uint8_t block[SPC_SHA256_BYTES];
    int rc = SPC_OK;
    for (uint32_t i = 1; rc == SPC_OK && out_len > 0; i++) {
        const uint8_t counter[4] = {(uint8_t)(i >> 24), (uint8_t)(i >> 16), (uint8_t)(i >> 8), (uint8_t)i};
        size_t n = out_len < sizeof block ? out_len : sizeof block;
        if (crypto_hash_sha256_init(&st) != 0 || crypto_hash_sha256_update(&st, secret, secret_len) != 0 ||
            crypto_hash_sha256_update(&st, counter, sizeof counter) != 0 ||
            (a_len > 0 && crypto_hash_sha256_update(&st, info_a, a_len) != 0) ||
            (b_len > 0 && crypto_hash_sha256_update(&st, info_b, b_len) != 0) ||
            crypto_hash_sha256_final(&st, block) != 0)
            rc = SPC_E_CRYPTO;
        else memcpy(out, block, n);
        out += n, out_len -= n;
    }
    sodium_memzero(&st, sizeof st);
    sodium_memzero(block, sizeof block);
    return rc;
}

spc_status spc_kdf_x963_sha256(spc_buffer *secret, const uint8_t *info, size_t info_len, spc_buffer *out) {
    if (!spc_initialized()) return SPC_E_INIT;
    if (secret == NULL || secret == out || (info == NULL && info_len != 0) || spc_buffer_size(out) > SPC_X963_MAX)
        return SPC_E_ARGUMENT;
    uint8_t *o, *s;
    size_t len = spc_buffer_size(out);
    int rc = open_output(out, len, &o);
    if (rc != SPC_OK) return rc;
    rc = spc_buffer_open(secret, &s);
    if (rc == SPC_OK) {
        rc = kdf_x963(s, spc_buffer_size(secret), info, info_len, NULL, 0, o, len);
        spc_buffer_close(secret);
    }
    if (rc != SPC_OK) sodium_memzero(o, len);
    spc_buffer_close(out);
    return rc;
}

/* KEY_SECRET = X9.63(ECDH x of priv * pub, sh1 || eph_pub), 48 bytes, into `envelope`. */
static int envelope_derive(spc_buffer *priv, const uint8_t *pub, size_t pub_len, const uint8_t *sh1, size_t sh1_len,
                           const uint8_t *eph_pub, size_t eph_len, spc_buffer *envelope) {
    if ((sh1 == NULL && sh1_len != 0) || priv == envelope) return SPC_E_ARGUMENT;
    spc_buffer *shared = NULL;
    uint8_t *x, *o;
    int rc = open_output(envelope, SPC_ECIES_ENVELOPE_KEY_BYTES, &o);
    if (rc != SPC_OK) return rc;
    rc = spc_buffer_new(SPC_P256_SCALAR_BYTES, &shared);
    if (rc == SPC_OK) rc = spc_p256_ecdh(priv, pub, pub_len, shared);
    if (rc == SPC_OK) rc = spc_buffer_open(shared, &x);
    if (rc == SPC_OK) {
        rc = kdf_x963(x, SPC_P256_SCALAR_BYTES, sh1, sh1_len, eph_pub, eph_len, o, SPC_ECIES_ENVELOPE_KEY_BYTES);
        spc_buffer_close(shared);
    }
    spc_buffer_free(shared); /* wipes the shared x-coordinate */
    if (rc != SPC_OK) sodium_memzero(o, SPC_ECIES_ENVELOPE_KEY_BYTES);
    spc_buffer_close(envelope);
    return rc;
}

spc_status spc_ecies_envelope_from_public(const uint8_t *server_pub, size_t pub_len, const uint8_t *sh1, size_t sh1_len,
                                   spc_buffer *envelope, uint8_t eph_pub[SPC_P256_COMPRESSED_BYTES]) {
    memset(eph_pub, 0, SPC_P256_COMPRESSED_BYTES);
    if (!spc_initialized()) return SPC_E_INIT;
    uint8_t full[SPC_P256_PUBLIC_BYTES];
    spc_buffer *eph = NULL;
    int rc = spc_buffer_new(SPC_P256_SCALAR_BYTES, &eph);
    if (rc == SPC_OK) rc = spc_p256_keypair_generate(eph, full);
    if (rc == SPC_OK) {
        /* SEC1 compression, as the mobile SDK sends it: the parity of Y picks 02 or 03. */
        eph_pub[0] = (uint8_t)(0x02 | (full[SPC_P256_PUBLIC_BYTES - 1] & 1));
        memcpy(eph_pub + 1, full + 1, SPC_P256_SCALAR_BYTES);
        rc = envelope_derive(eph, server_pub, pub_len, sh1, sh1_len, eph_pub, SPC_P256_COMPRESSED_BYTES, envelope);
    }
    spc_buffer_free(eph); /* the ephemeral private key is used once and wiped */
    if (rc != SPC_OK) memset(eph_pub, 0, SPC_P256_COMPRESSED_BYTES);
    return rc;
}

spc_status spc_ecies_envelope_from_private(spc_buffer *priv, const uint8_t *eph_pub, size_t eph_len, const uint8_t *sh1,
                                    size_t sh1_len, spc_buffer *envelope) {
    if (!spc_initialized()) return SPC_E_INIT;
    if (eph_pub == NULL) return SPC_E_KEY;
    return envelope_derive(priv, eph_pub, eph_len, sh1, sh1_len, eph_pub, eph_len, envelope);
}

/* The IV: zero without a nonce (3.0), fold(HMAC(KEY_IV, nonce)) with one. */
static int ecies_iv(const uint8_t *env, const uint8_t *nonce, uint8_t iv[SPC_AES_BLOCK_BYTES]) {
    uint8_t tag[SPC_HMAC_SHA256_BYTES];
    memset(iv, 0, SPC_AES_BLOCK_BYTES);
    if (nonce == NULL) return SPC_OK;
    int rc = hmac(env + 2 * SPC_AES128_KEY_BYTES, SPC_AES128_KEY_BYTES, nonce, SPC_ECIES_NONCE_BYTES, tag);
    for (size_t i = 0; rc == SPC_OK && i < SPC_AES_BLOCK_BYTES; i++) iv[i] = tag[i] ^ tag[i + SPC_AES_BLOCK_BYTES];
    sodium_memzero(tag, sizeof tag);
    return rc;
}

/* MAC = HMAC(KEY_MAC, data || sh2). */
static int ecies_mac(const uint8_t *env, const uint8_t *data, size_t len, const uint8_t *sh2, size_t sh2_len,
                     uint8_t mac[SPC_HMAC_SHA256_BYTES]) {
    crypto_auth_hmacsha256_state st;
    int ok = crypto_auth_hmacsha256_init(&st, env + SPC_AES128_KEY_BYTES, SPC_AES128_KEY_BYTES) == 0 &&
             crypto_auth_hmacsha256_update(&st, data, (unsigned long long)len) == 0 &&
             (sh2_len == 0 || crypto_auth_hmacsha256_update(&st, sh2, (unsigned long long)sh2_len) == 0) &&
             crypto_auth_hmacsha256_final(&st, mac) == 0;
    sodium_memzero(&st, sizeof st);
    return ok ? SPC_OK : SPC_E_CRYPTO;
}

/* AES-128-CBC-PKCS7 of `plain` (len bytes) into out (len rounded up to the next block). The
 * whole blocks go straight from the secure buffer; the padded last block is a wiped local. */
static int ecies_cbc_encrypt(const uint8_t *env, const uint8_t iv[16], const uint8_t *plain, size_t len, uint8_t *out) {
    size_t whole = len - len % SPC_AES_BLOCK_BYTES;
    uint8_t last[SPC_AES_BLOCK_BYTES];
    memset(last, (int)(SPC_AES_BLOCK_BYTES - len % SPC_AES_BLOCK_BYTES), sizeof last);
    if (len > whole) memcpy(last, plain + whole, len - whole);
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int a = 0, b = 0, c = 0;
    int ok = ctx != NULL && EVP_EncryptInit_ex(ctx, EVP_aes_128_cbc(), NULL, env, iv) == 1 &&
             EVP_CIPHER_CTX_set_padding(ctx, 0) == 1 &&
             (whole == 0 || EVP_EncryptUpdate(ctx, out, &a, plain, (int)whole) == 1) &&
             EVP_EncryptUpdate(ctx, out + a, &b, last, sizeof last) == 1 && EVP_EncryptFinal_ex(ctx, out + a + b, &c) == 1;
    EVP_CIPHER_CTX_free(ctx);
    sodium_memzero(last, sizeof last);
    if (ok) return SPC_OK;
    ERR_clear_error();
    return SPC_E_CRYPTO;
}

spc_status spc_ecies_encrypt(spc_buffer *envelope, const uint8_t *nonce, spc_buffer *plain, const uint8_t *sh2,
                      size_t sh2_len, uint8_t *out, size_t out_len, uint8_t mac[SPC_ECIES_MAC_BYTES]) {
    memset(out, 0, out_len);
    memset(mac, 0, SPC_ECIES_MAC_BYTES);
    if (!spc_initialized()) return SPC_E_INIT;
    size_t len = plain != NULL ? spc_buffer_size(plain) : 0;
    if (plain == envelope || (sh2 == NULL && sh2_len != 0) || out_len != SPC_ECIES_CIPHERTEXT_BYTES(len) ||
        out_len > SPC_BUFFER_MAX)
        return SPC_E_ARGUMENT;
    static const uint8_t empty[1] = {0};
    uint8_t *env, *p = NULL, iv[SPC_AES_BLOCK_BYTES];
    int rc = open_sized(envelope, SPC_ECIES_ENVELOPE_KEY_BYTES, &env);
    if (rc != SPC_OK) return rc;
    if (plain != NULL) rc = spc_buffer_open(plain, &p);
    if (rc == SPC_OK) {
        rc = ecies_iv(env, nonce, iv);
        if (rc == SPC_OK) rc = ecies_cbc_encrypt(env, iv, p != NULL ? p : empty, len, out);
        if (rc == SPC_OK) rc = ecies_mac(env, out, out_len, sh2, sh2_len, mac);
        if (plain != NULL) spc_buffer_close(plain);
    }
    spc_buffer_close(envelope);
    sodium_memzero(iv, sizeof iv);
    if (rc != SPC_OK) memset(out, 0, out_len), memset(mac, 0, SPC_ECIES_MAC_BYTES);
    return rc;
}

/* The PKCS#7 padding of the last block, checked without a branch or an index on
 * its bytes: the pad length if it is valid (1 ... 16), 0 otherwise. */
static size_t pkcs7_pad_length(const uint8_t last[SPC_AES_BLOCK_BYTES]) {
    unsigned pad = last[SPC_AES_BLOCK_BYTES - 1], bad = ((pad - 1u) >> 8) | ((16u - pad) >> 8);
    for (unsigned i = 0; i < SPC_AES_BLOCK_BYTES; i++) {
        unsigned inside = ((SPC_AES_BLOCK_BYTES - 1u - i - pad) >> 8) & 1u; /* i >= 16 - pad */
        bad |= inside & (((unsigned)last[i] ^ pad) + 0xFFu) >> 8;
    }
    return (size_t)(pad & ((bad & 1u) - 1u));
}

spc_status spc_ecies_decrypt(spc_buffer *envelope, const uint8_t *nonce, const uint8_t *in, size_t len, const uint8_t *sh2,
                      size_t sh2_len, const uint8_t mac[SPC_ECIES_MAC_BYTES], spc_buffer *plain, size_t *plain_len) {
    *plain_len = 0;
    if (!spc_initialized()) return SPC_E_INIT;
    if (!cbc_length_ok(len) || plain == envelope || (sh2 == NULL && sh2_len != 0)) return SPC_E_ARGUMENT;
    uint8_t *env, *p, iv[SPC_AES_BLOCK_BYTES], expected[SPC_ECIES_MAC_BYTES];
    int rc = open_output(plain, len, &p);
    if (rc != SPC_OK) return rc;
    rc = open_sized(envelope, SPC_ECIES_ENVELOPE_KEY_BYTES, &env);
    if (rc == SPC_OK) {
        rc = ecies_mac(env, in, len, sh2, sh2_len, expected);
        int differs = sodium_memcmp(expected, mac, SPC_ECIES_MAC_BYTES) != 0;
        DECLASSIFY(&differs, sizeof differs); /* the MAC verdict is public */
        if (rc == SPC_OK && differs) rc = SPC_E_AEAD_AUTH;
        if (rc == SPC_OK) rc = ecies_iv(env, nonce, iv);
        if (rc == SPC_OK) rc = aes128_run(EVP_aes_128_cbc(), 0, env, iv, in, len, p);
        spc_buffer_close(envelope);
    }
    size_t pad = rc == SPC_OK ? pkcs7_pad_length(p + len - SPC_AES_BLOCK_BYTES) : 0;
    DECLASSIFY(&pad, sizeof pad); /* the plaintext's length is an output */
    if (rc == SPC_OK && pad == 0) rc = SPC_E_AEAD_AUTH;
    if (rc == SPC_OK) *plain_len = len - pad;
    sodium_memzero(p + *plain_len, len - *plain_len);
    spc_buffer_close(plain);
    sodium_memzero(iv, sizeof iv);
    sodium_memzero(expected, sizeof expected);
    return rc;
}
