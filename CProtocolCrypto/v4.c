/* v4.c — the primitives of PowerAuth protocol V4 ("crypto4"): SHA3, KMAC-256
 * and the KMAC-based KDFs, AES-256-CTR, the V4 AEAD, P-384 and the DHKEM step
 * of the shared secret. All from OpenSSL 3.0 libcrypto through EVP (libsodium
 * has none of them); contracts in protocol_crypto.h.
 *
 * Same rules as protocol.c: secrets cross as the core's buffers, opened only
 * while used; intermediates are stack locals wiped before return (or secure
 * buffers); every OpenSSL failure is SPC_E_CRYPTO (SPC_E_KEY when the caller's
 * key is at fault) and the thread's OpenSSL error queue is cleared.
 */
#include "protocol_crypto.h"

#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/params.h>
#include <sodium.h>

#ifdef SPC_CTGRIND
#include <valgrind/memcheck.h>
#define DECLASSIFY(p, n) ((void)VALGRIND_MAKE_MEM_DEFINED((p), (n)))
#else
#define DECLASSIFY(p, n) ((void)0)
#endif

static const uint8_t empty[1] = {0};

/* A run of public or secret bytes; a message is a list of them. */
typedef struct {
    const uint8_t *p;
    size_t n;
} span;

static int open_sized(spc_buffer *buf, size_t size, uint8_t **p) {
    *p = NULL;
    if (buf == NULL || (size != 0 && spc_buffer_size(buf) != size)) return SPC_E_ARGUMENT;
    return spc_buffer_open(buf, p);
}

/* Map an OpenSSL verdict to a status, clearing the error queue on failure. */
static int crypto_rc(int ok) {
    if (ok) return SPC_OK;
    ERR_clear_error();
    return SPC_E_CRYPTO;
}

/* ------------------------------------------------------------------------ */
/* SHA3                                                                      */
/* ------------------------------------------------------------------------ */

static int sha3(const EVP_MD *md, const uint8_t *msg, size_t len, uint8_t *out, size_t out_len) {
    memset(out, 0, out_len);
    if (!spc_initialized()) return SPC_E_INIT;
    if (msg == NULL && len != 0) return SPC_E_ARGUMENT;
    unsigned n = 0;
    int rc = crypto_rc(EVP_Digest(msg != NULL ? msg : empty, len, out, &n, md, NULL) == 1 && n == out_len);
    if (rc != SPC_OK) memset(out, 0, out_len);
    return rc;
}

spc_status spc_sha3_256(const uint8_t *msg, size_t len, uint8_t out[SPC_SHA3_256_BYTES]) {
    return sha3(EVP_sha3_256(), msg, len, out, SPC_SHA3_256_BYTES);
}

spc_status spc_sha3_384(const uint8_t *msg, size_t len, uint8_t out[SPC_SHA3_384_BYTES]) {
    return sha3(EVP_sha3_384(), msg, len, out, SPC_SHA3_384_BYTES);
}

/* ------------------------------------------------------------------------ */
/* MACs: KMAC-256 and HMAC-SHA384 over a list of spans                       */
/* ------------------------------------------------------------------------ */

/* One MAC pass. `name` is "KMAC-256" (custom and out_len set) or "HMAC" (SHA-384).
 * EVP_MAC_CTX_free cleanses the key and the state. */
static int mac_spans(const char *name, const uint8_t *key, size_t key_len, const span *parts, size_t count,
                     const uint8_t *custom, size_t custom_len, uint8_t *out, size_t out_len) {
    char sha384[] = "SHA384";
    size_t size = out_len, written = 0;
    int kmac = name[0] == 'K';
    OSSL_PARAM params[3];
    if (kmac) {
        params[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_CUSTOM, (void *)custom, custom_len);
        params[1] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size);
    } else {
        params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, sha384, 0);
        params[1] = OSSL_PARAM_construct_end();
    }
    params[2] = OSSL_PARAM_construct_end();
    EVP_MAC *mac = EVP_MAC_fetch(NULL, name, NULL);
    EVP_MAC_CTX *ctx = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    /* HMAC with an empty key (an HKDF salt of zero length): OpenSSL wants a non-NULL pointer. */
    int ok = ctx != NULL && EVP_MAC_init(ctx, key_len > 0 ? key : empty, key_len, params) == 1;
    for (size_t i = 0; ok && i < count; i++) ok = parts[i].n == 0 || EVP_MAC_update(ctx, parts[i].p, parts[i].n) == 1;
    ok = ok && EVP_MAC_final(ctx, out, &written, out_len) == 1 && written == out_len;
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
    if (!ok) sodium_memzero(out, out_len);
    return crypto_rc(ok);
}

static int kmac_spans(const uint8_t *key, size_t key_len, const span *parts, size_t count, const uint8_t *custom,
                      size_t custom_len, uint8_t *out, size_t out_len) {
    return mac_spans("KMAC-256", key, key_len, parts, count, custom, custom_len, out, out_len);
}

static int kmac_key_ok(size_t len) { return len >= SPC_KMAC_KEY_MIN && len <= SPC_KMAC_KEY_MAX; }

spc_status spc_kmac256(spc_buffer *key, const uint8_t *msg, size_t len, const uint8_t *custom, size_t custom_len,
                       uint8_t *out, size_t out_len) {
    if (out_len > SPC_KMAC_OUT_MAX) return SPC_E_ARGUMENT;
    memset(out, 0, out_len);
    if (!spc_initialized()) return SPC_E_INIT;
    if (key == NULL || !kmac_key_ok(spc_buffer_size(key)) || (msg == NULL && len != 0) || custom_len < 1 ||
        custom_len > SPC_KMAC_CUSTOM_MAX || out_len < 1)
        return SPC_E_ARGUMENT;
    uint8_t *k;
    int rc = spc_buffer_open(key, &k);
    if (rc != SPC_OK) return rc;
    const span m = {msg, len};
    rc = kmac_spans(k, spc_buffer_size(key), &m, 1, custom, custom_len, out, out_len);
    spc_buffer_close(key);
    return rc;
}

spc_status spc_kmac256_secret(spc_buffer *key, const uint8_t *prefix, size_t prefix_len, spc_buffer *data,
                              const uint8_t *custom, size_t custom_len, spc_buffer *out) {
    if (!spc_initialized()) return SPC_E_INIT;
    size_t n = spc_buffer_size(out);
    if (key == NULL || key == out || data == out || data == key || !kmac_key_ok(spc_buffer_size(key)) ||
        (prefix == NULL && prefix_len != 0) || custom_len < 1 || custom_len > SPC_KMAC_CUSTOM_MAX || n < 1 ||
        n > SPC_KMAC_OUT_MAX)
        return SPC_E_ARGUMENT;
    uint8_t *o, *k, *d = NULL;
    int rc = open_sized(out, n, &o);
    if (rc != SPC_OK) return rc;
    sodium_memzero(o, n);
    if ((rc = spc_buffer_open(key, &k)) == SPC_OK) {
        if (data == NULL || (rc = spc_buffer_open(data, &d)) == SPC_OK) {
            const span parts[2] = {{prefix, prefix_len}, {d, data != NULL ? spc_buffer_size(data) : 0}};
            rc = kmac_spans(k, spc_buffer_size(key), parts, 2, custom, custom_len, o, n);
            if (data != NULL) spc_buffer_close(data);
        }
        spc_buffer_close(key);
    }
    spc_buffer_close(out);
    return rc;
}

spc_status spc_hmac_sha384(spc_buffer *key, const uint8_t *msg, size_t len, uint8_t out[SPC_HMAC_SHA384_BYTES]) {
    memset(out, 0, SPC_HMAC_SHA384_BYTES);
    if (!spc_initialized()) return SPC_E_INIT;
    if (key == NULL || spc_buffer_size(key) < 1 || (msg == NULL && len != 0)) return SPC_E_ARGUMENT;
    uint8_t *k;
    int rc = spc_buffer_open(key, &k);
    if (rc != SPC_OK) return rc;
    const span m = {msg, len};
    rc = mac_spans("HMAC", k, spc_buffer_size(key), &m, 1, NULL, 0, out, SPC_HMAC_SHA384_BYTES);
    spc_buffer_close(key);
    return rc;
}

/* KDF(key, label, data) = KMAC(key, data, L, "PA4KDF:" || label) into out (L bytes). */
static int v4_kdf_raw(const uint8_t *key, size_t key_len, const char *label, size_t label_len, const span *data,
                      size_t count, uint8_t *out, size_t out_len) {
    uint8_t custom[7 + SPC_V4_KDF_LABEL_MAX];
    memcpy(custom, "PA4KDF:", 7);
    memcpy(custom + 7, label, label_len);
    return kmac_spans(key, key_len, data, count, custom, 7 + label_len, out, out_len);
}

spc_status spc_v4_kdf(spc_buffer *key, const uint8_t *label, size_t label_len, const uint8_t *data, size_t data_len,
                      spc_buffer *out) {
    if (!spc_initialized()) return SPC_E_INIT;
    if (key == NULL || key == out || !kmac_key_ok(spc_buffer_size(key)) || label_len < 1 ||
        label_len > SPC_V4_KDF_LABEL_MAX || (data == NULL && data_len != 0) || spc_buffer_size(out) > SPC_KMAC_OUT_MAX)
        return SPC_E_ARGUMENT;
    size_t n = spc_buffer_size(out);
    uint8_t *o, *k;
    int rc = open_sized(out, n, &o);
    if (rc != SPC_OK) return rc;
    sodium_memzero(o, n);
    rc = spc_buffer_open(key, &k);
    if (rc == SPC_OK) {
        const span d = {data, data_len};
        rc = v4_kdf_raw(k, spc_buffer_size(key), (const char *)label, label_len, &d, 1, o, n);
        spc_buffer_close(key);
    }
    spc_buffer_close(out);
    return rc;
}

spc_status spc_v4_password_kdf(spc_password *password, const uint8_t *salt, size_t salt_len, spc_buffer *out) {
    if (!spc_initialized()) return SPC_E_INIT;
    if (salt_len < SPC_V4_PBKDF_SALT_MIN || spc_buffer_size(out) > SPC_KMAC_OUT_MAX) return SPC_E_ARGUMENT;
    size_t n = spc_buffer_size(out), len = 0;
    uint8_t *o, *p;
    spc_buffer *utf8 = NULL;
    int rc = open_sized(out, n, &o);
    if (rc != SPC_OK) return rc;
    sodium_memzero(o, n);
    rc = spc_password_reveal(password, &utf8, &len);
    if (rc == SPC_OK && !kmac_key_ok(len)) rc = SPC_E_ARGUMENT;
    if (rc == SPC_OK) rc = spc_buffer_open(utf8, &p);
    if (rc == SPC_OK) {
        const span s = {salt, salt_len};
        rc = kmac_spans(p, len, &s, 1, (const uint8_t *)"PA4PBKDF", 8, o, n);
        spc_buffer_close(utf8);
    }
    spc_buffer_free(utf8); /* wipes the password's UTF-8 */
    spc_buffer_close(out);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* AES-256-CTR and the V4 AEAD                                               */
/* ------------------------------------------------------------------------ */

/* One CTR pass. EVP_CIPHER_CTX_free cleanses the key schedule. */
static int ctr_run(const uint8_t key[32], const uint8_t iv[16], const uint8_t *in, size_t len, uint8_t *out) {
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int produced = 0, tail = 0;
    int ok = ctx != NULL && EVP_EncryptInit_ex(ctx, EVP_aes_256_ctr(), NULL, key, iv) == 1 &&
             (len == 0 || EVP_EncryptUpdate(ctx, out, &produced, in, (int)len) == 1) &&
             EVP_EncryptFinal_ex(ctx, out + produced, &tail) == 1 && (size_t)produced + (size_t)tail == len;
    EVP_CIPHER_CTX_free(ctx);
    return crypto_rc(ok);
}

spc_status spc_aes256_ctr(spc_buffer *key, const uint8_t iv[SPC_AES_BLOCK_BYTES], const uint8_t *in, size_t len,
                          uint8_t *out) {
    if (len > SPC_BUFFER_MAX || (len > 0 && (in == NULL || out == NULL))) return SPC_E_ARGUMENT;
    if (len > 0) memset(out, 0, len);
    if (!spc_initialized()) return SPC_E_INIT;
    uint8_t *k;
    int rc = open_sized(key, SPC_AES256_KEY_BYTES, &k);
    if (rc != SPC_OK) return rc;
    rc = ctr_run(k, iv, in, len, len > 0 ? out : (uint8_t *)empty);
    spc_buffer_close(key);
    if (rc != SPC_OK && len > 0) memset(out, 0, len);
    return rc;
}

/* Kenc and Kmac of the AEAD: KDF(key, "aead/enc" | "aead/mac", kc), 32 bytes each. */
static int aead_keys(const uint8_t *key, size_t key_len, const uint8_t *kc, size_t kc_len, uint8_t enc[32],
                     uint8_t mac[32]) {
    const span c = {kc, kc_len};
    int rc = v4_kdf_raw(key, key_len, "aead/enc", 8, &c, 1, enc, 32);
    if (rc == SPC_OK) rc = v4_kdf_raw(key, key_len, "aead/mac", 8, &c, 1, mac, 32);
    return rc;
}

/* T = KMAC(Kmac, nonce || ad || C, 32, "PA4MAC-AEAD"). */
static int aead_tag(const uint8_t mac[32], const uint8_t *nonce, const uint8_t *ad, size_t ad_len, const uint8_t *c,
                    size_t c_len, uint8_t tag[32]) {
    const span parts[3] = {{nonce, SPC_V4_AEAD_NONCE_BYTES}, {ad, ad_len}, {c, c_len}};
    return kmac_spans(mac, 32, parts, 3, (const uint8_t *)"PA4MAC-AEAD", 11, tag, SPC_V4_AEAD_TAG_BYTES);
}

/* The arguments both directions share; `data_len` is the plaintext's length. */
static int aead_args_ok(spc_buffer *key, spc_buffer *plain, const uint8_t *kc, size_t kc_len, const uint8_t *ad,
                        size_t ad_len, size_t data_len) {
    return key != NULL && key != plain && kmac_key_ok(spc_buffer_size(key)) && (kc != NULL || kc_len == 0) &&
           (ad != NULL || ad_len == 0) && data_len <= SPC_BUFFER_MAX - SPC_V4_AEAD_OVERHEAD &&
           (plain != NULL ? spc_buffer_size(plain) == data_len : data_len == 0);
}

spc_status spc_v4_aead_seal(spc_buffer *key, const uint8_t *kc, size_t kc_len,
                            const uint8_t nonce[SPC_V4_AEAD_NONCE_BYTES], const uint8_t *ad, size_t ad_len,
                            spc_buffer *plain, uint8_t *out, size_t out_len) {
    if (out_len < SPC_V4_AEAD_OVERHEAD || out_len > SPC_BUFFER_MAX) return SPC_E_ARGUMENT;
    memset(out, 0, out_len);
    if (!spc_initialized()) return SPC_E_INIT;
    size_t len = out_len - SPC_V4_AEAD_OVERHEAD;
    if (!aead_args_ok(key, plain, kc, kc_len, ad, ad_len, len)) return SPC_E_ARGUMENT;
    uint8_t *k, *p = NULL, enc[32], mac[32], iv[16] = {0};
    int rc = spc_buffer_open(key, &k);
    if (rc != SPC_OK) return rc;
    if (plain != NULL) rc = spc_buffer_open(plain, &p);
    if (rc == SPC_OK) {
        memcpy(iv, nonce, SPC_V4_AEAD_NONCE_BYTES);
        memcpy(out, nonce, SPC_V4_AEAD_NONCE_BYTES);
        uint8_t *c = out + SPC_V4_AEAD_OVERHEAD;
        rc = aead_keys(k, spc_buffer_size(key), kc, kc_len, enc, mac);
        if (rc == SPC_OK) rc = ctr_run(enc, iv, p != NULL ? p : empty, len, c);
        if (rc == SPC_OK) rc = aead_tag(mac, nonce, ad, ad_len, c, len, out + SPC_V4_AEAD_NONCE_BYTES);
        if (plain != NULL) spc_buffer_close(plain);
    }
    spc_buffer_close(key);
    sodium_memzero(enc, sizeof enc);
    sodium_memzero(mac, sizeof mac);
    if (rc != SPC_OK) memset(out, 0, out_len);
    return rc;
}

spc_status spc_v4_aead_open(spc_buffer *key, const uint8_t *kc, size_t kc_len, const uint8_t *ad, size_t ad_len,
                            const uint8_t *in, size_t len, spc_buffer *plain) {
    if (!spc_initialized()) return SPC_E_INIT;
    if (len < SPC_V4_AEAD_OVERHEAD || !aead_args_ok(key, plain, kc, kc_len, ad, ad_len, len - SPC_V4_AEAD_OVERHEAD))
        return SPC_E_ARGUMENT;
    size_t n = len - SPC_V4_AEAD_OVERHEAD;
    uint8_t *k, *p = NULL, enc[32], mac[32], tag[32], iv[16] = {0};
    int rc = plain != NULL ? spc_buffer_open(plain, &p) : SPC_OK;
    if (rc != SPC_OK) return rc;
    if (p != NULL) sodium_memzero(p, n);
    rc = spc_buffer_open(key, &k);
    if (rc == SPC_OK) {
        const uint8_t *c = in + SPC_V4_AEAD_OVERHEAD;
        rc = aead_keys(k, spc_buffer_size(key), kc, kc_len, enc, mac);
        spc_buffer_close(key);
        if (rc == SPC_OK) rc = aead_tag(mac, in, ad, ad_len, c, n, tag);
        int differs = sodium_memcmp(tag, in + SPC_V4_AEAD_NONCE_BYTES, SPC_V4_AEAD_TAG_BYTES) != 0;
        DECLASSIFY(&differs, sizeof differs); /* the tag's verdict is public */
        if (rc == SPC_OK && differs) rc = SPC_E_AEAD_AUTH;
        memcpy(iv, in, SPC_V4_AEAD_NONCE_BYTES);
        if (rc == SPC_OK && n > 0) rc = ctr_run(enc, iv, c, n, p);
        if (rc != SPC_OK && p != NULL) sodium_memzero(p, n);
    }
    if (plain != NULL) spc_buffer_close(plain);
    sodium_memzero(enc, sizeof enc);
    sodium_memzero(mac, sizeof mac);
    sodium_memzero(tag, sizeof tag);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* P-384                                                                     */
/* ------------------------------------------------------------------------ */

/* The order n of the P-384 group, big-endian. */
static const uint8_t p384_order[48] = {
    0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
    0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xC7, 0x63, 0x4D, 0x81, 0xF4, 0x37, 0x2D, 0xDF,
    0x58, 0x1A, 0x0D, 0xB2, 0x48, 0xB0, 0xA7, 0x7A, 0xEC, 0xEC, 0x19, 0x6A, 0xCC, 0xC5, 0x29, 0x73,
};

/* 1 when 0 < d < n, with no branch on d (as protocol.c's P-256 check). */
static int scalar_in_range(const uint8_t d[48]) {
    unsigned borrow = 0, any = 0;
    for (int i = 47; i >= 0; i--) {
        unsigned diff = (unsigned)d[i] - (unsigned)p384_order[i] - borrow;
        borrow = (diff >> 8) & 1u;
        any |= d[i];
    }
    return (int)(borrow & ((any + 0xFFu) >> 8));
}

static int ec_import(OSSL_PARAM *params, int selection, EVP_PKEY **out) {
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    int ok = ctx != NULL && EVP_PKEY_fromdata_init(ctx) == 1 && EVP_PKEY_fromdata(ctx, out, selection, params) == 1;
    EVP_PKEY_CTX_free(ctx);
    return ok;
}

/* A public key object from SEC1 bytes (49 or 97), fully checked. */
static int p384_public_key(const uint8_t *pub, size_t len, EVP_PKEY **out) {
    *out = NULL;
    if (pub == NULL || (len != SPC_P384_PUBLIC_BYTES && len != SPC_P384_COMPRESSED_BYTES)) return 0;
    char group[] = "P-384";
    uint8_t copy[SPC_P384_PUBLIC_BYTES];
    memcpy(copy, pub, len);
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0),
        OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, copy, len),
        OSSL_PARAM_construct_end(),
    };
    if (!ec_import(params, EVP_PKEY_PUBLIC_KEY, out)) return 0;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, *out, NULL);
    int ok = ctx != NULL && EVP_PKEY_public_check(ctx) == 1;
    EVP_PKEY_CTX_free(ctx);
    if (!ok) EVP_PKEY_free(*out), *out = NULL;
    return ok;
}

spc_status spc_p384_public_check(const uint8_t *pub, size_t len) {
    if (!spc_initialized()) return SPC_E_INIT;
    if (pub == NULL) return SPC_E_ARGUMENT;
    EVP_PKEY *key = NULL;
    int ok = p384_public_key(pub, len, &key);
    EVP_PKEY_free(key);
    ERR_clear_error();
    return ok ? SPC_OK : SPC_E_KEY;
}

/* The public point of scalar d (range checked), uncompressed, by EC_POINT_mul
 * (OpenSSL's constant-time ladder for the generator). */
static int p384_public_of(const uint8_t d[48], uint8_t pub[SPC_P384_PUBLIC_BYTES]) {
    EC_GROUP *group = EC_GROUP_new_by_curve_name(NID_secp384r1);
    EC_POINT *point = group != NULL ? EC_POINT_new(group) : NULL;
    BIGNUM *k = BN_secure_new();
    int ok = point != NULL && k != NULL && BN_bin2bn(d, 48, k) != NULL &&
             EC_POINT_mul(group, point, k, NULL, NULL, NULL) == 1 &&
             EC_POINT_point2oct(group, point, POINT_CONVERSION_UNCOMPRESSED, pub, SPC_P384_PUBLIC_BYTES, NULL) ==
                 SPC_P384_PUBLIC_BYTES;
    BN_clear_free(k);
    EC_POINT_free(point);
    EC_GROUP_free(group);
    return ok;
}

/* A key pair object from the scalar d (range checked) and its public point. */
static int p384_private_key(const uint8_t d[48], EVP_PKEY **out) {
    char group[] = "P-384";
    uint8_t native[48], pub[SPC_P384_PUBLIC_BYTES];
    for (size_t i = 0; i < 48; i++)
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        native[i] = d[i];
#else
        native[i] = d[47 - i];
#endif
    int ok = p384_public_of(d, pub);
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0),
        OSSL_PARAM_construct_BN(OSSL_PKEY_PARAM_PRIV_KEY, native, sizeof native),
        OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof pub),
        OSSL_PARAM_construct_end(),
    };
    ok = ok && ec_import(params, EVP_PKEY_KEYPAIR, out);
    sodium_memzero(native, sizeof native);
    return ok;
}

/* Opens `priv` (48 bytes, or 49 with a leading zero), checks its range and
 * runs `use` on the scalar; closes it. */
typedef int (*scalar_use)(const uint8_t d[48], void *arg);

static int with_scalar(spc_buffer *priv, scalar_use use, void *arg) {
    uint8_t *p;
    if (priv == NULL) return SPC_E_KEY;
    size_t n = spc_buffer_size(priv);
    int rc = spc_buffer_open(priv, &p);
    if (rc != SPC_OK) return rc;
    /* Whether the key is valid (its form, its range) is public: the status says it. */
    int zero_pad = n == 49 && p[0] == 0;
    DECLASSIFY(&zero_pad, sizeof zero_pad);
    const uint8_t *d = n == 48 ? p : zero_pad ? p + 1 : NULL;
    int valid = d != NULL && scalar_in_range(d);
    DECLASSIFY(&valid, sizeof valid);
    rc = valid ? use(d, arg) : SPC_E_KEY;
    spc_buffer_close(priv);
    return rc;
}

static int load_key(const uint8_t d[48], void *arg) { return crypto_rc(p384_private_key(d, (EVP_PKEY **)arg)); }

static int public_of(const uint8_t d[48], void *arg) { return crypto_rc(p384_public_of(d, (uint8_t *)arg)); }

spc_status spc_p384_public_from_private(spc_buffer *priv, uint8_t pub[SPC_P384_PUBLIC_BYTES]) {
    memset(pub, 0, SPC_P384_PUBLIC_BYTES);
    if (!spc_initialized()) return SPC_E_INIT;
    int rc = with_scalar(priv, public_of, pub);
    if (rc != SPC_OK) memset(pub, 0, SPC_P384_PUBLIC_BYTES);
    return rc;
}

spc_status spc_p384_keypair_generate(spc_buffer *priv, uint8_t pub[SPC_P384_PUBLIC_BYTES]) {
    memset(pub, 0, SPC_P384_PUBLIC_BYTES);
    if (!spc_initialized()) return SPC_E_INIT;
    uint8_t *d;
    int rc = open_sized(priv, SPC_P384_SCALAR_BYTES, &d);
    if (rc != SPC_OK) return rc;
    char group[] = "P-384";
    EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", group);
    BIGNUM *bn = NULL;
    size_t pub_len = 0;
    rc = crypto_rc(key != NULL && EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_PRIV_KEY, &bn) == 1 &&
                   BN_bn2binpad(bn, d, SPC_P384_SCALAR_BYTES) == SPC_P384_SCALAR_BYTES &&
                   EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_PUB_KEY, pub, SPC_P384_PUBLIC_BYTES,
                                                   &pub_len) == 1 &&
                   pub_len == SPC_P384_PUBLIC_BYTES && pub[0] == 0x04);
    BN_clear_free(bn);
    EVP_PKEY_free(key);
    if (rc != SPC_OK) sodium_memzero(d, SPC_P384_SCALAR_BYTES), memset(pub, 0, SPC_P384_PUBLIC_BYTES);
    spc_buffer_close(priv);
    return rc;
}

/* x of mine * peer into out (48 bytes). */
static int ecdh_raw(EVP_PKEY *mine, EVP_PKEY *peer, uint8_t out[48]) {
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, mine, NULL);
    size_t len = SPC_P384_SCALAR_BYTES;
    int ok = ctx != NULL && EVP_PKEY_derive_init(ctx) == 1 && EVP_PKEY_derive_set_peer_ex(ctx, peer, 1) == 1 &&
             EVP_PKEY_derive(ctx, out, &len) == 1 && len == SPC_P384_SCALAR_BYTES;
    EVP_PKEY_CTX_free(ctx);
    if (!ok) sodium_memzero(out, SPC_P384_SCALAR_BYTES);
    return crypto_rc(ok);
}

spc_status spc_p384_ecdh(spc_buffer *priv, const uint8_t *pub, size_t pub_len, spc_buffer *shared) {
    if (!spc_initialized()) return SPC_E_INIT;
    if (priv == shared) return SPC_E_ARGUMENT;
    uint8_t *x;
    int rc = open_sized(shared, SPC_P384_SCALAR_BYTES, &x);
    if (rc != SPC_OK) return rc;
    sodium_memzero(x, SPC_P384_SCALAR_BYTES);
    EVP_PKEY *mine = NULL, *peer = NULL;
    rc = with_scalar(priv, load_key, &mine);
    if (rc == SPC_OK && !p384_public_key(pub, pub_len, &peer)) rc = SPC_E_KEY;
    if (rc == SPC_OK) rc = ecdh_raw(mine, peer, x);
    EVP_PKEY_free(mine);
    EVP_PKEY_free(peer);
    spc_buffer_close(shared);
    ERR_clear_error();
    return rc;
}

spc_status spc_p384_ecdsa_sign(spc_buffer *priv, const uint8_t *msg, size_t len,
                               uint8_t sig[SPC_P384_SIGNATURE_BYTES]) {
    memset(sig, 0, SPC_P384_SIGNATURE_BYTES);
    if (!spc_initialized()) return SPC_E_INIT;
    if (msg == NULL && len != 0) return SPC_E_ARGUMENT;
    EVP_PKEY *key = NULL;
    int rc = with_scalar(priv, load_key, &key);
    EVP_MD_CTX *md = rc == SPC_OK ? EVP_MD_CTX_new() : NULL;
    uint8_t der[120];
    size_t der_len = sizeof der;
    ECDSA_SIG *s = NULL;
    if (rc == SPC_OK) {
        const uint8_t *at = der;
        rc = crypto_rc(md != NULL && EVP_DigestSignInit_ex(md, NULL, "SHA384", NULL, NULL, key, NULL) == 1 &&
                       EVP_DigestSign(md, der, &der_len, msg != NULL ? msg : empty, len) == 1 &&
                       (s = d2i_ECDSA_SIG(NULL, &at, (long)der_len)) != NULL &&
                       BN_bn2binpad(ECDSA_SIG_get0_r(s), sig, 48) == 48 &&
                       BN_bn2binpad(ECDSA_SIG_get0_s(s), sig + 48, 48) == 48);
    }
    ECDSA_SIG_free(s);
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(key);
    if (rc != SPC_OK) memset(sig, 0, SPC_P384_SIGNATURE_BYTES);
    ERR_clear_error();
    return rc;
}

spc_status spc_p384_ecdsa_verify(const uint8_t *pub, size_t pub_len, const uint8_t *msg, size_t len,
                                 const uint8_t *sig, size_t sig_len, int *valid) {
    *valid = 0;
    if (!spc_initialized()) return SPC_E_INIT;
    if ((msg == NULL && len != 0) || (sig == NULL && sig_len != 0)) return SPC_E_ARGUMENT;
    EVP_PKEY *key = NULL;
    if (!p384_public_key(pub, pub_len, &key)) {
        ERR_clear_error();
        return SPC_E_KEY;
    }
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int rc = crypto_rc(md != NULL && EVP_DigestVerifyInit_ex(md, NULL, "SHA384", NULL, NULL, key, NULL) == 1);
    /* r || s to DER for OpenSSL; a wrong length or a zero / too large r or s does not verify. */
    ECDSA_SIG *s = rc == SPC_OK && sig_len == SPC_P384_SIGNATURE_BYTES ? ECDSA_SIG_new() : NULL;
    BIGNUM *r = s != NULL ? BN_bin2bn(sig, 48, NULL) : NULL, *t = r != NULL ? BN_bin2bn(sig + 48, 48, NULL) : NULL;
    uint8_t *der = NULL;
    int der_len = t != NULL && ECDSA_SIG_set0(s, r, t) == 1 ? i2d_ECDSA_SIG(s, &der) : -1;
    if (der_len < 0) BN_free(r), BN_free(t); /* not taken over by the signature object */
    if (der_len > 0) *valid = EVP_DigestVerify(md, der, (size_t)der_len, msg != NULL ? msg : empty, len) == 1;
    OPENSSL_free(der);
    ECDSA_SIG_free(s);
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(key);
    ERR_clear_error();
    return rc;
}

/* ------------------------------------------------------------------------ */
/* DHKEM(P-384, HKDF-SHA384) with the HPKE export step (RFC 9180)            */
/* ------------------------------------------------------------------------ */

/* LabeledExtract(salt, label, ikm) = HMAC-SHA384(salt, "HPKE-v1" || suite || label || ikm). */
static int labeled_extract(const uint8_t *salt, size_t salt_len, const uint8_t *suite, size_t suite_len,
                           const char *label, const uint8_t *ikm, size_t ikm_len, uint8_t prk[48]) {
    const span parts[4] = {{(const uint8_t *)"HPKE-v1", 7}, {suite, suite_len}, {(const uint8_t *)label, strlen(label)},
                           {ikm, ikm_len}};
    return mac_spans("HMAC", salt, salt_len, parts, 4, NULL, 0, prk, 48);
}

/* LabeledExpand(prk, label, info, L) for L <= 48: the first HKDF-Expand block,
 * HMAC-SHA384(prk, u16be(L) || "HPKE-v1" || suite || label || info || 0x01), cut to L. */
static int labeled_expand(const uint8_t prk[48], const uint8_t *suite, size_t suite_len, const char *label,
                          const span *info, size_t info_count, uint8_t *out, size_t out_len) {
    const uint8_t length[2] = {(uint8_t)(out_len >> 8), (uint8_t)out_len}, one[1] = {1};
    span parts[8] = {{length, 2}, {(const uint8_t *)"HPKE-v1", 7}, {suite, suite_len},
                     {(const uint8_t *)label, strlen(label)}};
    for (size_t i = 0; i < info_count; i++) parts[4 + i] = info[i];
    parts[4 + info_count] = (span){one, 1};
    uint8_t block[48];
    int rc = mac_spans("HMAC", prk, 48, parts, 5 + info_count, NULL, 0, block, 48);
    if (rc == SPC_OK) memcpy(out, block, out_len);
    sodium_memzero(block, sizeof block);
    return rc;
}

/* From the DH value and the KEM context (enc || pkR) to the exported secret:
 * DHKEM ExtractAndExpand, the base-mode key schedule and Export("DHKEM-P384", 48). */
static int dhkem_secret(const uint8_t dh[48], const uint8_t enc[97], const uint8_t pkr[97], uint8_t out[48]) {
    static const uint8_t kem_suite[5] = {'K', 'E', 'M', 0x00, 0x11};
    static const uint8_t hpke_suite[10] = {'H', 'P', 'K', 'E', 0x00, 0x11, 0x00, 0x02, 0xFF, 0xFF};
    static const uint8_t mode_base[1] = {0x00};
    const uint8_t *info = (const uint8_t *)"DHKEM-P384";
    uint8_t prk[48], shared[48], psk_id_hash[48], info_hash[48], secret[48], exporter[48];
    const span context[2] = {{enc, 97}, {pkr, 97}};
    int rc = labeled_extract(NULL, 0, kem_suite, 5, "eae_prk", dh, 48, prk);
    if (rc == SPC_OK) rc = labeled_expand(prk, kem_suite, 5, "shared_secret", context, 2, shared, 48);
    if (rc == SPC_OK) rc = labeled_extract(NULL, 0, hpke_suite, 10, "psk_id_hash", NULL, 0, psk_id_hash);
    if (rc == SPC_OK) rc = labeled_extract(NULL, 0, hpke_suite, 10, "info_hash", info, 10, info_hash);
    if (rc == SPC_OK) rc = labeled_extract(shared, 48, hpke_suite, 10, "secret", NULL, 0, secret);
    const span schedule[3] = {{mode_base, 1}, {psk_id_hash, 48}, {info_hash, 48}}, exporter_context = {info, 10};
    if (rc == SPC_OK) rc = labeled_expand(secret, hpke_suite, 10, "exp", schedule, 3, exporter, 48);
    if (rc == SPC_OK) rc = labeled_expand(exporter, hpke_suite, 10, "sec", &exporter_context, 1, out, 48);
    sodium_memzero(prk, sizeof prk);
    sodium_memzero(shared, sizeof shared);
    sodium_memzero(secret, sizeof secret);
    sodium_memzero(exporter, sizeof exporter);
    return rc;
}

/* The shared part of both sides: DH(priv, peer) then the export into `secret`. */
static int dhkem_finish(spc_buffer *priv, const uint8_t *peer, size_t peer_len, const uint8_t enc[97],
                        const uint8_t pkr[97], spc_buffer *secret) {
    spc_buffer *dh = NULL;
    uint8_t *x, *o;
    int rc = spc_buffer_new(SPC_P384_SCALAR_BYTES, &dh);
    if (rc == SPC_OK) rc = spc_p384_ecdh(priv, peer, peer_len, dh);
    if (rc == SPC_OK) rc = spc_buffer_open(dh, &x);
    if (rc == SPC_OK) {
        rc = spc_buffer_open(secret, &o);
        if (rc == SPC_OK) {
            rc = dhkem_secret(x, enc, pkr, o);
            if (rc != SPC_OK) sodium_memzero(o, SPC_DHKEM_P384_SECRET_BYTES);
            spc_buffer_close(secret);
        }
        spc_buffer_close(dh);
    }
    spc_buffer_free(dh); /* wipes the DH value */
    return rc;
}

/* The secret output: exactly SPC_DHKEM_P384_SECRET_BYTES, cleared. */
static int clear_secret(spc_buffer *secret) {
    uint8_t *o;
    int rc = open_sized(secret, SPC_DHKEM_P384_SECRET_BYTES, &o);
    if (rc != SPC_OK) return rc;
    sodium_memzero(o, SPC_DHKEM_P384_SECRET_BYTES);
    spc_buffer_close(secret);
    return SPC_OK;
}

/* A public key in its uncompressed form (validated), for the KEM context. */
static int uncompressed(const uint8_t *pub, size_t len, uint8_t out[97]) {
    EVP_PKEY *key = NULL;
    size_t n = 0;
    int ok = p384_public_key(pub, len, &key);
    if (ok && len == SPC_P384_COMPRESSED_BYTES) {
        ok = EVP_PKEY_set_utf8_string_param(key, OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT, "uncompressed") == 1 &&
             EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_PUB_KEY, out, 97, &n) == 1 && n == 97;
    } else if (ok) memcpy(out, pub, 97);
    EVP_PKEY_free(key);
    ERR_clear_error();
    return ok;
}

spc_status spc_dhkem_p384_encap(const uint8_t *pub, size_t pub_len, uint8_t enc[SPC_DHKEM_P384_ENC_BYTES],
                                spc_buffer *secret) {
    memset(enc, 0, SPC_DHKEM_P384_ENC_BYTES);
    if (!spc_initialized()) return SPC_E_INIT;
    uint8_t pkr[97];
    int rc = clear_secret(secret);
    if (rc == SPC_OK && !uncompressed(pub, pub_len, pkr)) rc = SPC_E_KEY;
    spc_buffer *eph = NULL;
    if (rc == SPC_OK) rc = spc_buffer_new(SPC_P384_SCALAR_BYTES, &eph);
    if (rc == SPC_OK) rc = spc_p384_keypair_generate(eph, enc);
    if (rc == SPC_OK) rc = dhkem_finish(eph, pkr, 97, enc, pkr, secret);
    spc_buffer_free(eph); /* the ephemeral scalar is used once and wiped */
    if (rc != SPC_OK) memset(enc, 0, SPC_DHKEM_P384_ENC_BYTES);
    return rc;
}

spc_status spc_dhkem_p384_decap(spc_buffer *priv, const uint8_t *enc, size_t enc_len, spc_buffer *secret) {
    if (!spc_initialized()) return SPC_E_INIT;
    if (priv == secret) return SPC_E_ARGUMENT;
    uint8_t pkr[97];
    int rc = clear_secret(secret);
    if (rc == SPC_OK && (enc == NULL || enc_len != SPC_DHKEM_P384_ENC_BYTES)) rc = SPC_E_KEY;
    if (rc == SPC_OK) rc = spc_p384_public_from_private(priv, pkr);
    if (rc == SPC_OK) rc = dhkem_finish(priv, enc, enc_len, enc, pkr, secret);
    return rc;
}
