/* aead.c — XChaCha20-Poly1305 (default) and AES-256-GCM, from libsodium.
 * Keys and plaintexts live in secure buffers; ciphertexts are public. */
#include "internal.h"

#include <stdint.h>

#include <sodium.h>

size_t spc_aead_nonce_bytes(int alg) {
    switch (alg) {
    case SPC_AEAD_XCHACHA20POLY1305: return crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
    case SPC_AEAD_AES256GCM: return crypto_aead_aes256gcm_NPUBBYTES;
    default: return 0;
    }
}

int spc_aead_available(int alg) {
    if (alg == SPC_AEAD_XCHACHA20POLY1305) return 1;
    return alg == SPC_AEAD_AES256GCM && spc__ready() && crypto_aead_aes256gcm_is_available();
}

static int check_args(int alg, spc_buffer *key, size_t nonce_len) {
    if (!spc__ready()) return SPC_E_INIT;
    if (spc_aead_nonce_bytes(alg) == 0 || nonce_len != spc_aead_nonce_bytes(alg)) return SPC_E_ARGUMENT;
    if (spc_buffer_size(key) != SPC_AEAD_KEY_BYTES) return SPC_E_ARGUMENT;
    if (!spc_aead_available(alg)) return SPC_E_UNSUPPORTED;
    return SPC_OK;
}

spc_status spc_aead_seal(int alg, spc_buffer *key, const uint8_t *nonce, size_t nonce_len, spc_buffer *plaintext,
                  const uint8_t *ad, size_t ad_len, uint8_t *ciphertext) {
    int rc = check_args(alg, key, nonce_len);
    if (rc != SPC_OK) return rc;
    static const uint8_t empty[1] = {0};
    uint8_t *k, *m = (uint8_t *)(uintptr_t)empty;
    if ((rc = spc_buffer_open(key, &k)) != SPC_OK) return rc;
    if (plaintext != NULL && (rc = spc_buffer_open(plaintext, &m)) != SPC_OK) {
        spc_buffer_close(key);
        return rc;
    }
    size_t mlen = plaintext != NULL ? spc_buffer_size(plaintext) : 0;
    unsigned long long clen = 0;
    if (alg == SPC_AEAD_XCHACHA20POLY1305)
        rc = crypto_aead_xchacha20poly1305_ietf_encrypt(ciphertext, &clen, m, mlen, ad, ad_len, NULL, nonce, k);
    else
        rc = crypto_aead_aes256gcm_encrypt(ciphertext, &clen, m, mlen, ad, ad_len, NULL, nonce, k);
    if (plaintext != NULL) spc_buffer_close(plaintext);
    spc_buffer_close(key);
    return rc == 0 ? SPC_OK : SPC_E_ARGUMENT;
}

spc_status spc_aead_open(int alg, spc_buffer *key, const uint8_t *nonce, size_t nonce_len, const uint8_t *ciphertext,
                  size_t ciphertext_len, const uint8_t *ad, size_t ad_len, spc_buffer **out) {
    *out = NULL;
    int rc = check_args(alg, key, nonce_len);
    if (rc != SPC_OK) return rc;
    if (ciphertext_len < SPC_AEAD_TAG_BYTES) return SPC_E_AEAD_AUTH;
    size_t mlen = ciphertext_len - SPC_AEAD_TAG_BYTES;
    /* An empty message still gets a one-byte buffer to decrypt into; it is
     * released and NULL returned after the tag verifies. */
    spc_buffer *plain;
    if ((rc = spc_buffer_new(mlen == 0 ? 1 : mlen, &plain)) != SPC_OK) return rc;
    uint8_t *k, *m;
    if ((rc = spc_buffer_open(key, &k)) != SPC_OK) goto fail;
    if ((rc = spc_buffer_open(plain, &m)) != SPC_OK) {
        spc_buffer_close(key);
        goto fail;
    }
    int ok;
    if (alg == SPC_AEAD_XCHACHA20POLY1305)
        ok = crypto_aead_xchacha20poly1305_ietf_decrypt(m, NULL, NULL, ciphertext, ciphertext_len, ad, ad_len, nonce, k);
    else
        ok = crypto_aead_aes256gcm_decrypt(m, NULL, NULL, ciphertext, ciphertext_len, ad, ad_len, nonce, k);
    spc_buffer_close(plain);
    spc_buffer_close(key);
    SPC_DECLASSIFY(&ok, sizeof ok); /* verified or not is public; libsodium compared the tag in constant time */
    if (ok != 0) {
        rc = SPC_E_AEAD_AUTH;
        goto fail;
    }
    if (mlen == 0) spc_buffer_free(plain);
    else *out = plain;
    return SPC_OK;
fail:
    spc_buffer_free(plain); /* wipes whatever a failed decryption wrote */
    return rc;
}
