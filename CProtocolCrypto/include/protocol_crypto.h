/*
 * protocol_crypto.h — the public C surface of CProtocolCrypto: the
 * primitives the PowerAuth V3.x compatible protocol needs (protocol.c).
 *
 * This target is the only part of SecurePIN that links OpenSSL libcrypto
 * (AES-128 and P-256, through the EVP interface); everything else here comes
 * from libsodium. It is built on the core (secure_core.h) and follows the
 * core's conventions:
 *  - Every function returns a status: SPC_OK (0) or a negative SPC_E_* code
 *    (the codes are defined in secure_core.h; SPC_E_CRYPTO and SPC_E_KEY are
 *    this target's).
 *  - Output parameters are cleared on entry and left cleared on failure.
 *  - spc_init() must succeed before anything else is called; every function
 *    here returns SPC_E_INIT before it.
 *  - Secrets cross as the core's handles: keys and secret outputs are
 *    spc_buffers (closed, as the caller holds them), the PIN an spc_password.
 *    Each function opens them for the time it needs them and closes them
 *    before it returns, so the caller never handles a secret's address; a
 *    buffer that cannot be opened gives spc_buffer_open()'s status
 *    (SPC_E_NOMEM, SPC_E_FORKED). A secret output buffer must have exactly
 *    the documented size and must not be one of the inputs (SPC_E_ARGUMENT);
 *    it is cleared once opened and left cleared on failure.
 *  - Public inputs and outputs are plain byte arrays. No function keeps a
 *    pointer or a handle after it returns. Inputs and outputs must not overlap.
 */
#ifndef PROTOCOL_CRYPTO_H
#define PROTOCOL_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

#include "secure_core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SPC_AES128_KEY_BYTES 16
#define SPC_AES_BLOCK_BYTES 16
#define SPC_SHA256_BYTES 32
#define SPC_HMAC_SHA256_BYTES 32
#define SPC_P256_SCALAR_BYTES 32      /* private key; also the ECDH x-coordinate */
#define SPC_P256_PUBLIC_BYTES 65      /* SEC1 uncompressed: 0x04 || X || Y       */
#define SPC_P256_COMPRESSED_BYTES 33  /* SEC1 compressed: 0x02/0x03 || X         */
#define SPC_P256_SIGNATURE_MAX 72     /* DER-encoded ECDSA signature, at most    */
#define SPC_FACTOR_KEY_BYTES 16       /* a PowerAuth factor key                  */
#define SPC_COUNTER_BYTES 16          /* the hash-based counter CTR_DATA         */
#define SPC_AUTHCODE_MAX_FACTORS 3
#define SPC_KNOWLEDGE_SALT_BYTES 16
#define SPC_KNOWLEDGE_MEMORY_MIN_KIB 8         /* libsodium's Argon2id floor     */
#define SPC_KNOWLEDGE_MEMORY_MAX_KIB 1048576   /* 1 GiB: caps a stored parameter */
#define SPC_KNOWLEDGE_ITERATIONS_MAX 32
#define SPC_HMAC_KEY_PARTS_MAX 8      /* secret parts of one spc_hmac_sha256_derive key */
#define SPC_X963_MAX 1024             /* largest output of spc_kdf_x963_sha256   */
#define SPC_ECIES_ENVELOPE_KEY_BYTES 48 /* KEY_ENC || KEY_MAC || KEY_IV, 16 each */
#define SPC_ECIES_NONCE_BYTES 16
#define SPC_ECIES_MAC_BYTES 32
/* AES-128-CBC-PKCS7 always adds 1 ... 16 bytes: the ciphertext size of n plaintext bytes. */
#define SPC_ECIES_CIPHERTEXT_BYTES(n) (((n) / 16 + 1) * 16)

/**
 * Encrypt one 16-byte block with AES-128 (ECB, a single block: the PowerAuth
 * index KDF, KDF(key, i) = AES(key, 0^8 || u64be(i))).
 * `key` is a buffer of SPC_AES128_KEY_BYTES, `out` one of SPC_AES_BLOCK_BYTES.
 * Returns: SPC_OK; SPC_E_ARGUMENT (a size, `out` is `key`); SPC_E_NOMEM or
 *          SPC_E_FORKED (a buffer cannot be opened); SPC_E_CRYPTO; SPC_E_INIT.
 * Security: the result is treated as a secret (a derived key) and written
 *           into `out` only. The cipher context is cleansed by OpenSSL when freed.
 */
SPC_MUST_CHECK SPC_NONNULL(1, 2, 3) spc_status spc_aes128_encrypt_block(spc_buffer *key,
                                                                 const uint8_t in[SPC_AES_BLOCK_BYTES],
                                                                 spc_buffer *out);

/**
 * Decrypt one 16-byte block with AES-128 (the inverse of the above).
 * Returns: as spc_aes128_encrypt_block.
 * Security: as spc_aes128_encrypt_block.
 */
SPC_MUST_CHECK SPC_NONNULL(1, 2, 3) spc_status spc_aes128_decrypt_block(spc_buffer *key,
                                                                 const uint8_t in[SPC_AES_BLOCK_BYTES],
                                                                 spc_buffer *out);

/**
 * AES-128-CBC without padding (the PowerAuth status blob). `key` is a buffer
 * of SPC_AES128_KEY_BYTES; `len` is a positive multiple of 16, at most
 * SPC_BUFFER_MAX; `out` (public) holds `len` bytes.
 * Returns: SPC_OK; SPC_E_ARGUMENT (length, nothing is written since the size
 *          of `out` is unknown; key size); SPC_E_NOMEM or SPC_E_FORKED (the
 *          key cannot be opened); SPC_E_CRYPTO; SPC_E_INIT.
 * Security: no padding and no MAC: this mode has no integrity. Use it only
 *           where the protocol mandates it and validate the plaintext.
 */
SPC_MUST_CHECK SPC_NONNULL(1, 2, 3, 5) spc_status spc_aes128_cbc_nopad_encrypt(spc_buffer *key,
                                                                       const uint8_t iv[SPC_AES_BLOCK_BYTES],
                                                                       const uint8_t *in, size_t len, uint8_t *out);

/**
 * AES-128-CBC decryption without padding; same contract as the encryption.
 * Returns: as the encryption.
 * Security: never reports a padding error (there is no padding), so it is
 *           no padding oracle; the plaintext is unauthenticated.
 */
SPC_MUST_CHECK SPC_NONNULL(1, 2, 3, 5) spc_status spc_aes128_cbc_nopad_decrypt(spc_buffer *key,
                                                                       const uint8_t iv[SPC_AES_BLOCK_BYTES],
                                                                       const uint8_t *in, size_t len, uint8_t *out);

/**
 * SHA-256 of `msg` (NULL is accepted when `len` is 0).
 * Returns: SPC_OK; SPC_E_ARGUMENT (NULL with a length); SPC_E_INIT.
 * Security: for public data (counters, fingerprints); no secret handling.
 */
SPC_MUST_CHECK SPC_NONNULL(3) spc_status spc_sha256(const uint8_t *msg, size_t len, uint8_t out[SPC_SHA256_BYTES]);

/**
 * HMAC-SHA256 (libsodium) keyed with the whole of `key` (any size), into
 * the public tag `out`. `msg` may be NULL when `len` is 0.
 * Returns: SPC_OK; SPC_E_ARGUMENT (NULL key, NULL message with a length);
 *          SPC_E_NOMEM or SPC_E_FORKED (the key cannot be opened);
 *          SPC_E_CRYPTO; SPC_E_INIT.
 * Security: the hash state holding the padded key is wiped before return.
 */
SPC_MUST_CHECK SPC_NONNULL(4) spc_status spc_hmac_sha256(spc_buffer *key, const uint8_t *msg, size_t len,
                                                  uint8_t out[SPC_HMAC_SHA256_BYTES]);

/**
 * A secret 32-byte key: HMAC-SHA256 keyed with parts[0] || parts[1] || ...
 * (1 ... SPC_HMAC_KEY_PARTS_MAX buffers, SPC_BUFFER_MAX bytes in all; a
 * buffer may appear twice) over the public `msg`, into the buffer `out` of
 * SPC_HMAC_SHA256_BYTES, which must not be one of the parts.
 * Returns: SPC_OK; SPC_E_ARGUMENT (count, sizes, NULL part, `out` among the
 *          parts, NULL message with a length); SPC_E_NOMEM or SPC_E_FORKED;
 *          SPC_E_CRYPTO; SPC_E_INIT.
 * Security: the concatenated key lives in a secure buffer of the core, freed
 *           (wiped) before return; the result is written into `out` only.
 */
SPC_MUST_CHECK SPC_NONNULL(1, 5) spc_status spc_hmac_sha256_derive(spc_buffer *const parts[], size_t part_count,
                                                            const uint8_t *msg, size_t len, spc_buffer *out);

/**
 * The PowerAuth V3 authentication-code components. For each factor key i
 * (1 ... SPC_AUTHCODE_MAX_FACTORS buffers of SPC_FACTOR_KEY_BYTES each, in
 * the order possession,
 * knowledge, biometry): K = HMAC(keys[i], ctr); for j < i:
 * K = HMAC(HMAC(keys[j+1], ctr), K); component i = HMAC(K, data), 32 bytes,
 * written at out + 32 i. `out_len` must be 32 * key_count.
 * Returns: SPC_OK; SPC_E_ARGUMENT (count, length, NULL key, key size);
 *          SPC_E_NOMEM or SPC_E_FORKED (a key cannot be opened);
 *          SPC_E_CRYPTO; SPC_E_INIT.
 * Security: the keys are open only during the computation; the chained keys
 *           K are stack locals wiped before return; the components are the
 *           public authentication code.
 */
SPC_MUST_CHECK SPC_NONNULL(1, 3, 6) spc_status spc_authcode_compute(spc_buffer *const keys[], size_t key_count,
                                                          const uint8_t ctr[SPC_COUNTER_BYTES], const uint8_t *data,
                                                          size_t len, uint8_t *out, size_t out_len);

/**
 * Check a SEC1 P-256 public key (33 or 65 bytes): on the curve, not the
 * point at infinity.
 * Returns: SPC_OK; SPC_E_KEY; SPC_E_ARGUMENT (NULL); SPC_E_INIT.
 * Security: public data only.
 */
SPC_MUST_CHECK spc_status spc_p256_public_check(const uint8_t *pub, size_t len);

/**
 * Generate a P-256 key pair: the private scalar (32 bytes, big-endian) into
 * the buffer `priv` of SPC_P256_SCALAR_BYTES, the uncompressed public key
 * (65 bytes) into `pub`.
 * Returns: SPC_OK; SPC_E_ARGUMENT (size of `priv`); SPC_E_NOMEM or
 *          SPC_E_FORKED; SPC_E_CRYPTO; SPC_E_INIT.
 * Security: OpenSSL's copy of the scalar is cleared when its key object is
 *           freed.
 */
SPC_MUST_CHECK SPC_NONNULL(1, 2) spc_status spc_p256_keypair_generate(spc_buffer *priv, uint8_t pub[SPC_P256_PUBLIC_BYTES]);

/**
 * ECDH on P-256: the 32-byte x-coordinate of priv * pub, into the buffer
 * `shared` of SPC_P256_SCALAR_BYTES. `priv` is a buffer of 32 bytes, or 33
 * with a leading zero byte (a Java BigInteger encoding); `pub` is SEC1 (33
 * or 65 bytes) and is fully validated.
 * Returns: SPC_OK; SPC_E_KEY (NULL, wrong size or out-of-range scalar,
 *          invalid public key); SPC_E_ARGUMENT (size of `shared`, `shared`
 *          is `priv`); SPC_E_NOMEM or SPC_E_FORKED; SPC_E_CRYPTO; SPC_E_INIT.
 * Security: the scalar's range check does not branch on its bytes; the
 *           byte-reversed copy OpenSSL needs is wiped.
 */
SPC_MUST_CHECK SPC_NONNULL(4) spc_status spc_p256_ecdh(spc_buffer *priv, const uint8_t *pub, size_t pub_len,
                                                spc_buffer *shared);

/**
 * ECDSA-SHA256 on P-256, DER-encoded (at most 72 bytes) into `sig`, its
 * length into `*sig_len`. `priv` as for spc_p256_ecdh.
 * Returns: SPC_OK; SPC_E_KEY; SPC_E_ARGUMENT; SPC_E_NOMEM or SPC_E_FORKED;
 *          SPC_E_CRYPTO; SPC_E_INIT.
 * Security: the scalar is handled as in spc_p256_ecdh; the per-signature
 *           nonce is OpenSSL's.
 */
SPC_MUST_CHECK SPC_NONNULL(4, 5) spc_status spc_p256_ecdsa_sign(spc_buffer *priv, const uint8_t *msg, size_t len,
                                                         uint8_t sig[SPC_P256_SIGNATURE_MAX], size_t *sig_len);

/**
 * Verify an ECDSA-SHA256 DER signature. `*valid` is 1 when it verifies and 0
 * otherwise (a malformed signature simply does not verify).
 * Returns: SPC_OK (whatever the verdict); SPC_E_KEY (invalid public key);
 *          SPC_E_ARGUMENT; SPC_E_CRYPTO; SPC_E_INIT.
 * Security: public data only.
 */
SPC_MUST_CHECK SPC_NONNULL(7) spc_status spc_p256_ecdsa_verify(const uint8_t *pub, size_t pub_len, const uint8_t *msg,
                                                        size_t len, const uint8_t *sig, size_t sig_len, int *valid);

/**
 * Wrap the knowledge factor key (a buffer of SPC_FACTOR_KEY_BYTES) under a
 * key derived from the PIN: wrapped = AES-128(Argon2id(UTF-8 of pin, salt,
 * memory_kib, iterations, p = 1), key). memory_kib is
 * SPC_KNOWLEDGE_MEMORY_MIN_KIB ... _MAX_KIB, iterations 1 ...
 * SPC_KNOWLEDGE_ITERATIONS_MAX, the PIN non-empty.
 * Returns: SPC_OK; SPC_E_ARGUMENT (NULL or empty PIN, parameters, key size);
 *          SPC_E_NOMEM (Argon2 memory, or a buffer that cannot be opened);
 *          SPC_E_FORKED; SPC_E_CRYPTO; SPC_E_INIT.
 * Security: no MAC and no check value: see spc_knowledge_key_unwrap. The
 *           PIN's UTF-8 exists only in a secure buffer freed (wiped) before
 *           return; the derived key is made by the core's spc_kdf_argon2id
 *           (the one Argon2 path) into a secure buffer, freed before return.
 *           Use a fresh random salt for every wrap.
 */
SPC_MUST_CHECK SPC_NONNULL(2, 5, 6) spc_status spc_knowledge_key_wrap(spc_password *pin,
                                                               const uint8_t salt[SPC_KNOWLEDGE_SALT_BYTES],
                                                               uint32_t memory_kib, uint32_t iterations,
                                                               spc_buffer *key, uint8_t wrapped[SPC_FACTOR_KEY_BYTES]);

/**
 * Unwrap: key = AES-128⁻¹(Argon2id(UTF-8 of pin, ...), wrapped), into the
 * buffer `key` of SPC_FACTOR_KEY_BYTES. Same parameters as the wrap.
 * Returns: SPC_OK for ANY PIN (a wrong PIN yields a different key, never a
 *          status); SPC_E_ARGUMENT; SPC_E_NOMEM; SPC_E_FORKED; SPC_E_CRYPTO;
 *          SPC_E_INIT.
 * Security: no local oracle — only the server, which verifies authentication
 *           codes made with the key, can tell a wrong PIN. The PIN and the
 *           derived key are handled as in the wrap.
 */
SPC_MUST_CHECK SPC_NONNULL(2, 5, 6) spc_status spc_knowledge_key_unwrap(spc_password *pin,
                                                                 const uint8_t salt[SPC_KNOWLEDGE_SALT_BYTES],
                                                                 uint32_t memory_kib, uint32_t iterations,
                                                                 const uint8_t wrapped[SPC_FACTOR_KEY_BYTES],
                                                                 spc_buffer *key);

/* ------------------------------------------------------------------------ */
/* ECIES as PowerAuth V3.0 ... V3.3 defines it. The version rules (what goes  */
/* into SH1 and SH2, when there is a nonce) are the caller's: these functions */
/* take SH1, SH2 and the nonce as bytes.                                      */
/* ------------------------------------------------------------------------ */

/**
 * ANSI X9.63 KDF with SHA-256: SHA256(secret || u32be(i) || info) for
 * i = 1, 2, ..., concatenated and cut to the size of `out` (1 ...
 * SPC_X963_MAX bytes). `secret` is a buffer of any size, `info` public (NULL
 * when `info_len` is 0).
 * Returns: SPC_OK; SPC_E_ARGUMENT (NULL secret, `out` is `secret`, size of
 *          `out`, NULL info with a length); SPC_E_NOMEM or SPC_E_FORKED;
 *          SPC_E_CRYPTO; SPC_E_INIT.
 * Security: the hash state and each block are wiped; the result is written
 *           into `out` only.
 */
SPC_MUST_CHECK SPC_NONNULL(4) spc_status spc_kdf_x963_sha256(spc_buffer *secret, const uint8_t *info, size_t info_len,
                                                      spc_buffer *out);

/**
 * The client's envelope key for a request: a fresh ephemeral P-256 key pair,
 * Z = the ECDH x-coordinate with `server_pub` (SEC1, 33 or 65 bytes, fully
 * validated), KEY_SECRET = X9.63-SHA256(Z, sh1 || eph_pub, 48) into the
 * buffer `envelope` of SPC_ECIES_ENVELOPE_KEY_BYTES. `eph_pub` receives the
 * ephemeral public key, compressed (33 bytes, as the mobile SDK sends it):
 * exactly the bytes that entered the KDF, to be sent as they are.
 * Returns: SPC_OK; SPC_E_KEY (invalid server key); SPC_E_ARGUMENT (size of
 *          `envelope`, NULL sh1 with a length); SPC_E_NOMEM or SPC_E_FORKED;
 *          SPC_E_CRYPTO; SPC_E_INIT.
 * Security: the ephemeral private key and Z live in secure buffers of the
 *           core, freed (wiped) before return.
 */
SPC_MUST_CHECK SPC_NONNULL(5, 6) spc_status spc_ecies_envelope_from_public(const uint8_t *server_pub, size_t pub_len,
                                                                    const uint8_t *sh1, size_t sh1_len,
                                                                    spc_buffer *envelope,
                                                                    uint8_t eph_pub[SPC_P256_COMPRESSED_BYTES]);

/**
 * The server's envelope key for a received request: Z = ECDH(priv,
 * eph_pub), KEY_SECRET = X9.63-SHA256(Z, sh1 || eph_pub, 48) into `envelope`
 * (SPC_ECIES_ENVELOPE_KEY_BYTES). `eph_pub` is used exactly as received (33
 * or 65 bytes), never re-encoded. `priv` as for spc_p256_ecdh.
 * Returns: SPC_OK; SPC_E_KEY (invalid private or ephemeral key);
 *          SPC_E_ARGUMENT; SPC_E_NOMEM or SPC_E_FORKED; SPC_E_CRYPTO;
 *          SPC_E_INIT.
 * Security: Z lives in a secure buffer freed (wiped) before return.
 */
SPC_MUST_CHECK SPC_NONNULL(6) spc_status spc_ecies_envelope_from_private(spc_buffer *priv, const uint8_t *eph_pub,
                                                                  size_t eph_len, const uint8_t *sh1, size_t sh1_len,
                                                                  spc_buffer *envelope);

/**
 * Encrypt one ECIES message (request or response) under the envelope key:
 * IV = 16 zero bytes when `nonce` is NULL (V3.0), fold(HMAC(KEY_IV, nonce))
 * otherwise (SPC_ECIES_NONCE_BYTES); out = AES-128-CBC-PKCS7(KEY_ENC, IV,
 * plain); mac = HMAC-SHA256(KEY_MAC, out || sh2). `plain` is a buffer, or
 * NULL for an empty plaintext; `out_len` must be
 * SPC_ECIES_CIPHERTEXT_BYTES(size of plain).
 * Returns: SPC_OK; SPC_E_ARGUMENT (sizes, `plain` is `envelope`, NULL sh2
 *          with a length); SPC_E_NOMEM or SPC_E_FORKED; SPC_E_CRYPTO;
 *          SPC_E_INIT.
 * Security: the plaintext goes from its buffer to the cipher; only the
 *           padded last block is copied, into a stack local wiped before
 *           return. Never use one envelope key for two requests.
 */
SPC_MUST_CHECK SPC_NONNULL(1, 6, 8) spc_status spc_ecies_encrypt(spc_buffer *envelope, const uint8_t *nonce,
                                                          spc_buffer *plain, const uint8_t *sh2, size_t sh2_len,
                                                          uint8_t *out, size_t out_len,
                                                          uint8_t mac[SPC_ECIES_MAC_BYTES]);

/**
 * Verify and decrypt one ECIES message: the MAC over in || sh2 is checked
 * first (constant time), then the data decrypted with the IV as in
 * spc_ecies_encrypt and the PKCS#7 padding removed. `len` is a positive
 * multiple of 16; `plain` a buffer of exactly `len` bytes: the plaintext is
 * its first `*plain_len` bytes, the rest is zero.
 * Returns: SPC_OK; SPC_E_AEAD_AUTH (wrong MAC, or a MAC that verifies over
 *          invalid padding: nothing is decrypted into `plain`, or it is
 *          cleared); SPC_E_ARGUMENT; SPC_E_NOMEM or SPC_E_FORKED;
 *          SPC_E_CRYPTO; SPC_E_INIT.
 * Security: encrypt-then-MAC: no byte is decrypted before the MAC verifies,
 *           so the padding check is no oracle; the padding is nevertheless
 *           checked without branching on its bytes. The verdict and the
 *           plaintext length are the only values derived from the secrets
 *           that are revealed.
 */
SPC_MUST_CHECK SPC_NONNULL(1, 3, 7, 8, 9) spc_status spc_ecies_decrypt(spc_buffer *envelope, const uint8_t *nonce,
                                                                const uint8_t *in, size_t len, const uint8_t *sh2,
                                                                size_t sh2_len, const uint8_t mac[SPC_ECIES_MAC_BYTES],
                                                                spc_buffer *plain, size_t *plain_len);

/* ------------------------------------------------------------------------ */
/* PowerAuth V4 ("crypto4") primitives (v4.c): SHA3, KMAC-256, AES-256-CTR,   */
/* P-384 (ECDH, ECDSA-SHA384), the DHKEM(P-384) step of the shared secret,   */
/* and the V4 AEAD. Same conventions as above. KMAC-256 is SP 800-185's,     */
/* through OpenSSL 3.0's EVP_MAC "KMAC-256".                                 */
/* ------------------------------------------------------------------------ */

#define SPC_SHA3_256_BYTES 32
#define SPC_SHA3_384_BYTES 48
#define SPC_HMAC_SHA384_BYTES 48
#define SPC_AES256_KEY_BYTES 32
#define SPC_KMAC_KEY_MIN 4          /* OpenSSL 3.0 refuses shorter KMAC keys   */
#define SPC_KMAC_KEY_MAX 512        /* ... and longer ones                     */
#define SPC_KMAC_CUSTOM_MAX 256     /* customization string S, bytes           */
#define SPC_KMAC_OUT_MAX 64         /* KMAC output length L, bytes             */
#define SPC_V4_KDF_LABEL_MAX 128    /* label of spc_v4_kdf ("PA4KDF:" + label) */
#define SPC_V4_PBKDF_SALT_MIN 32
#define SPC_V4_AEAD_NONCE_BYTES 12
#define SPC_V4_AEAD_TAG_BYTES 32
#define SPC_V4_AEAD_OVERHEAD 44     /* nonce || tag || ciphertext              */
#define SPC_P384_SCALAR_BYTES 48    /* private key; also the ECDH x-coordinate */
#define SPC_P384_PUBLIC_BYTES 97    /* SEC1 uncompressed: 0x04 || X || Y       */
#define SPC_P384_COMPRESSED_BYTES 49
#define SPC_P384_SIGNATURE_BYTES 96 /* ECDSA r || s (JOSE "ES384"), 48 each    */
#define SPC_DHKEM_P384_SECRET_BYTES 48
#define SPC_DHKEM_P384_ENC_BYTES 97 /* the sender's ephemeral key, uncompressed */

/**
 * SHA3-256 (FIPS 202) of `msg` (NULL is accepted when `len` is 0).
 * Returns: SPC_OK; SPC_E_ARGUMENT (NULL with a length); SPC_E_CRYPTO; SPC_E_INIT.
 * Security: for public data (the hash-based counter, SH2); no secret handling.
 */
SPC_MUST_CHECK SPC_NONNULL(3) spc_status spc_sha3_256(const uint8_t *msg, size_t len, uint8_t out[SPC_SHA3_256_BYTES]);

/**
 * SHA3-384 (FIPS 202), as spc_sha3_256.
 */
SPC_MUST_CHECK SPC_NONNULL(3) spc_status spc_sha3_384(const uint8_t *msg, size_t len, uint8_t out[SPC_SHA3_384_BYTES]);

/**
 * KMAC256(key, msg, L = out_len, S = custom) into the public tag `out`.
 * `key` is a buffer of SPC_KMAC_KEY_MIN ... SPC_KMAC_KEY_MAX bytes; `custom`
 * 1 ... SPC_KMAC_CUSTOM_MAX bytes; out_len 1 ... SPC_KMAC_OUT_MAX; `msg` may
 * be NULL when `len` is 0.
 * Returns: SPC_OK; SPC_E_ARGUMENT (sizes, NULLs); SPC_E_NOMEM or
 *          SPC_E_FORKED (the key cannot be opened); SPC_E_CRYPTO; SPC_E_INIT.
 * Security: the key is open only during the call; OpenSSL cleanses its copy
 *           when the MAC context is freed. For tags that are sent or
 *           compared (token digest, status MAC, SH2); secret outputs go
 *           through spc_v4_kdf.
 */
SPC_MUST_CHECK SPC_NONNULL(4, 6) spc_status spc_kmac256(spc_buffer *key, const uint8_t *msg, size_t len,
                                                 const uint8_t *custom, size_t custom_len, uint8_t *out,
                                                 size_t out_len);

/**
 * KMAC256(key, prefix || data, L, S = custom) into the buffer `out`, L its
 * size (1 ... SPC_KMAC_OUT_MAX): a secret result over public bytes `prefix`
 * (NULL when prefix_len is 0) followed by the secret buffer `data` (NULL for
 * none). `key` as for spc_kmac256; `custom` 1 ... SPC_KMAC_CUSTOM_MAX bytes.
 * The V4 authentication-code chain (KMAC(k, CTR_DATA || D, "PA4CODE")) and
 * the shared secret (KMAC(salt, X, "KDF")) need it.
 * Returns: SPC_OK; SPC_E_ARGUMENT (sizes, NULLs, `out` or `data` is `key`,
 *          `data` is `out`); SPC_E_NOMEM or SPC_E_FORKED; SPC_E_CRYPTO;
 *          SPC_E_INIT.
 * Security: key, data and result are open only during the call; once the
 *           arguments are accepted, `out` is zeroed on failure.
 */
SPC_MUST_CHECK SPC_NONNULL(5, 7) spc_status spc_kmac256_secret(spc_buffer *key, const uint8_t *prefix, size_t prefix_len,
                                                        spc_buffer *data, const uint8_t *custom, size_t custom_len,
                                                        spc_buffer *out);

/**
 * HMAC-SHA384 keyed with the whole buffer `key` (at least 1 byte) over the
 * public `msg` (NULL when `len` is 0), into the public tag `out` (zeroed on
 * failure): the "HS384" of V4 temporary-key request JWTs.
 * Returns: SPC_OK; SPC_E_ARGUMENT; SPC_E_NOMEM or SPC_E_FORKED; SPC_E_CRYPTO;
 *          SPC_E_INIT.
 * Security: the key is open only during the call.
 */
SPC_MUST_CHECK SPC_NONNULL(4) spc_status spc_hmac_sha384(spc_buffer *key, const uint8_t *msg, size_t len,
                                                  uint8_t out[SPC_HMAC_SHA384_BYTES]);

/**
 * The V4 KDF: KMAC256(key, data, L, S = "PA4KDF:" || label), L the size of
 * the buffer `out` (1 ... SPC_KMAC_OUT_MAX; the protocol uses 32). `label` is
 * 1 ... SPC_V4_KDF_LABEL_MAX bytes, `data` (the "diversifier", empty for most
 * keys, the key context for the AEAD) may be NULL when `data_len` is 0.
 * Returns: SPC_OK; SPC_E_ARGUMENT (sizes, NULLs, `out` is `key`); SPC_E_NOMEM
 *          or SPC_E_FORKED; SPC_E_CRYPTO; SPC_E_INIT.
 * Security: the derived key is written into `out` only.
 */
SPC_MUST_CHECK SPC_NONNULL(2, 6) spc_status spc_v4_kdf(spc_buffer *key, const uint8_t *label, size_t label_len,
                                                const uint8_t *data, size_t data_len, spc_buffer *out);

/**
 * The V4 password KDF: KMAC256(key = UTF-8 of `password`, data = salt, L,
 * S = "PA4PBKDF"), L the size of `out` (1 ... SPC_KMAC_OUT_MAX). The salt is
 * at least SPC_V4_PBKDF_SALT_MIN bytes; the password's UTF-8 is
 * SPC_KMAC_KEY_MIN ... SPC_KMAC_KEY_MAX bytes (OpenSSL 3.0's KMAC key limits:
 * a PIN has at least 4 digits).
 * Returns: SPC_OK; SPC_E_ARGUMENT (sizes, a password too short or too long);
 *          SPC_E_NOMEM or SPC_E_FORKED; SPC_E_CRYPTO; SPC_E_INIT.
 * Security: one KMAC, no work factor: the cost of guessing is the server's
 *           attempt counter. The password's UTF-8 exists only in a secure
 *           buffer, freed (wiped) before return.
 */
SPC_MUST_CHECK SPC_NONNULL(1, 2, 4) spc_status spc_v4_password_kdf(spc_password *password, const uint8_t *salt,
                                                            size_t salt_len, spc_buffer *out);

/**
 * AES-256-CTR with a 128-bit big-endian counter block starting at `iv`, over
 * public data: `out` holds `len` bytes (0 ... SPC_BUFFER_MAX; `in` and `out`
 * may be NULL when `len` is 0). Encryption and decryption are the same.
 * Returns: SPC_OK; SPC_E_ARGUMENT (length, key size, NULLs); SPC_E_NOMEM or
 *          SPC_E_FORKED; SPC_E_CRYPTO; SPC_E_INIT.
 * Security: no integrity (see spc_v4_aead_seal). Never reuse a key with an IV.
 */
SPC_MUST_CHECK SPC_NONNULL(1, 2) spc_status spc_aes256_ctr(spc_buffer *key, const uint8_t iv[SPC_AES_BLOCK_BYTES],
                                                    const uint8_t *in, size_t len, uint8_t *out);

/**
 * The V4 AEAD seal: Kenc = KDF(key, "aead/enc", kc), Kmac = KDF(key,
 * "aead/mac", kc) (32 bytes each); C = AES-256-CTR(Kenc, nonce || 0^4, plain);
 * T = KMAC256(Kmac, nonce || ad || C, 32, "PA4MAC-AEAD"); out = nonce || T ||
 * C. `key` is a buffer of SPC_AES256_KEY_BYTES ... SPC_KMAC_KEY_MAX bytes (any
 * KMAC key; the protocol's are 32); `kc` (the key context) and `ad` are
 * public, NULL when empty; `plain` a buffer, or NULL for an empty plaintext;
 * out_len = size of plain + SPC_V4_AEAD_OVERHEAD (at most SPC_BUFFER_MAX).
 * Returns: SPC_OK; SPC_E_ARGUMENT (sizes, NULLs, `plain` is `key`);
 *          SPC_E_NOMEM or SPC_E_FORKED; SPC_E_CRYPTO; SPC_E_INIT.
 * Security: Kenc and Kmac are stack locals wiped before return; the
 *           plaintext goes from its buffer to the cipher. A nonce must never
 *           repeat under one key and key context.
 */
SPC_MUST_CHECK SPC_NONNULL(1, 4, 8) spc_status spc_v4_aead_seal(spc_buffer *key, const uint8_t *kc, size_t kc_len,
                                                         const uint8_t nonce[SPC_V4_AEAD_NONCE_BYTES],
                                                         const uint8_t *ad, size_t ad_len, spc_buffer *plain,
                                                         uint8_t *out, size_t out_len);

/**
 * The V4 AEAD open: `in` is nonce || T || C (at least SPC_V4_AEAD_OVERHEAD
 * bytes); T is recomputed as in the seal and compared in constant time
 * before anything is decrypted. `plain` is a buffer of exactly len -
 * SPC_V4_AEAD_OVERHEAD bytes, or NULL when that is 0.
 * Returns: SPC_OK; SPC_E_AEAD_AUTH (wrong tag: `plain` is left cleared);
 *          SPC_E_ARGUMENT (sizes, NULLs, `plain` is `key`); SPC_E_NOMEM or
 *          SPC_E_FORKED; SPC_E_CRYPTO; SPC_E_INIT.
 * Security: the verdict is the only value derived from the key that the
 *           code branches on. The caller checks the nonce prefix it expects
 *           (the first SPC_V4_AEAD_NONCE_BYTES bytes of `in`).
 */
SPC_MUST_CHECK SPC_NONNULL(1, 6) spc_status spc_v4_aead_open(spc_buffer *key, const uint8_t *kc, size_t kc_len,
                                                      const uint8_t *ad, size_t ad_len, const uint8_t *in,
                                                      size_t len, spc_buffer *plain);

/**
 * Check a SEC1 P-384 public key (49 or 97 bytes): on the curve, not the
 * point at infinity.
 * Returns: SPC_OK; SPC_E_KEY; SPC_E_ARGUMENT (NULL); SPC_E_INIT.
 * Security: public data only.
 */
SPC_MUST_CHECK spc_status spc_p384_public_check(const uint8_t *pub, size_t len);

/**
 * Generate a P-384 key pair: the scalar (48 bytes, big-endian) into the
 * buffer `priv` of SPC_P384_SCALAR_BYTES, the uncompressed public key into `pub`.
 * Returns: SPC_OK; SPC_E_ARGUMENT (size of `priv`); SPC_E_NOMEM or
 *          SPC_E_FORKED; SPC_E_CRYPTO; SPC_E_INIT.
 * Security: OpenSSL's copy of the scalar is cleared when its key is freed.
 */
SPC_MUST_CHECK SPC_NONNULL(1, 2) spc_status spc_p384_keypair_generate(spc_buffer *priv,
                                                               uint8_t pub[SPC_P384_PUBLIC_BYTES]);

/**
 * The uncompressed public key of a P-384 scalar (`priv`: 48 bytes, or 49
 * with a leading zero byte, a Java BigInteger encoding; 0 < d < n).
 * Returns: SPC_OK; SPC_E_KEY (size or range of the scalar); SPC_E_NOMEM or
 *          SPC_E_FORKED; SPC_E_CRYPTO; SPC_E_INIT.
 * Security: the range check does not branch on the scalar's bytes; copies
 *           of the scalar are wiped or cleared when freed.
 */
SPC_MUST_CHECK SPC_NONNULL(2) spc_status spc_p384_public_from_private(spc_buffer *priv,
                                                               uint8_t pub[SPC_P384_PUBLIC_BYTES]);

/**
 * ECDH on P-384: the 48-byte x-coordinate of priv * pub into the buffer
 * `shared` of SPC_P384_SCALAR_BYTES. `priv` as for
 * spc_p384_public_from_private; `pub` SEC1 (49 or 97 bytes), fully validated.
 * Returns: SPC_OK; SPC_E_KEY (either key); SPC_E_ARGUMENT (size of `shared`,
 *          `shared` is `priv`); SPC_E_NOMEM or SPC_E_FORKED; SPC_E_CRYPTO;
 *          SPC_E_INIT.
 * Security: as spc_p384_public_from_private; the result is written into
 *           `shared` only.
 */
SPC_MUST_CHECK SPC_NONNULL(4) spc_status spc_p384_ecdh(spc_buffer *priv, const uint8_t *pub, size_t pub_len,
                                                spc_buffer *shared);

/**
 * ECDSA-SHA384 on P-384, as r || s (48 bytes each, big-endian: JOSE ES384).
 * `priv` as for spc_p384_public_from_private; `msg` may be NULL when `len` is 0.
 * Returns: SPC_OK; SPC_E_KEY; SPC_E_ARGUMENT; SPC_E_NOMEM or SPC_E_FORKED;
 *          SPC_E_CRYPTO; SPC_E_INIT.
 * Security: the per-signature nonce is OpenSSL's.
 */
SPC_MUST_CHECK SPC_NONNULL(4) spc_status spc_p384_ecdsa_sign(spc_buffer *priv, const uint8_t *msg, size_t len,
                                                      uint8_t sig[SPC_P384_SIGNATURE_BYTES]);

/**
 * Verify an ECDSA-SHA384 signature given as r || s (SPC_P384_SIGNATURE_BYTES;
 * any other length, or r or s out of range, simply does not verify).
 * `*valid` is 1 when it verifies, 0 otherwise.
 * Returns: SPC_OK (whatever the verdict); SPC_E_KEY (invalid public key);
 *          SPC_E_ARGUMENT; SPC_E_CRYPTO; SPC_E_INIT.
 * Security: public data only.
 */
SPC_MUST_CHECK SPC_NONNULL(7) spc_status spc_p384_ecdsa_verify(const uint8_t *pub, size_t pub_len, const uint8_t *msg,
                                                        size_t len, const uint8_t *sig, size_t sig_len, int *valid);

/**
 * The DHKEM(P-384, HKDF-SHA384) step of the V4 shared secret, as PowerAuth
 * uses it (RFC 9180): an HPKE base-mode setup (KEM 0x0011, KDF 0x0002, AEAD
 * 0xFFFF export-only, info = "DHKEM-P384") with the recipient key `pub`
 * (49 or 97 bytes, fully validated), then Export("DHKEM-P384", 48) into the
 * buffer `secret` of SPC_DHKEM_P384_SECRET_BYTES. `enc` receives the
 * ephemeral public key (uncompressed), to be sent.
 * Returns: SPC_OK; SPC_E_KEY (invalid recipient key); SPC_E_ARGUMENT (size of
 *          `secret`); SPC_E_NOMEM or SPC_E_FORKED; SPC_E_CRYPTO; SPC_E_INIT.
 * Security: the ephemeral scalar, the DH value and every HKDF intermediate
 *           live in secure buffers or wiped stack locals.
 */
SPC_MUST_CHECK SPC_NONNULL(3, 4) spc_status spc_dhkem_p384_encap(const uint8_t *pub, size_t pub_len,
                                                          uint8_t enc[SPC_DHKEM_P384_ENC_BYTES], spc_buffer *secret);

/**
 * The recipient's side of spc_dhkem_p384_encap: `priv` as for
 * spc_p384_public_from_private (its public key is recomputed for the KEM
 * context), `enc` the sender's key as received (97 bytes, validated).
 * Returns: SPC_OK; SPC_E_KEY (either key); SPC_E_ARGUMENT (size of `secret`,
 *          `secret` is `priv`); SPC_E_NOMEM or SPC_E_FORKED; SPC_E_CRYPTO;
 *          SPC_E_INIT.
 * Security: as the encapsulation.
 */
SPC_MUST_CHECK SPC_NONNULL(4) spc_status spc_dhkem_p384_decap(spc_buffer *priv, const uint8_t *enc, size_t enc_len,
                                                       spc_buffer *secret);

/**
 * The version of the libcrypto this target runs on, as OpenSSL reports it
 * (e.g. "OpenSSL 3.0.x 1 Jan 2025"): for `--version` and diagnostics, so no
 * other target needs to link libcrypto to print it.
 * Returns: a static string, never NULL. Nothing secret.
 */
const char *spc_crypto_library_version(void);

#ifdef __cplusplus
}
#endif

#endif /* PROTOCOL_CRYPTO_H */
