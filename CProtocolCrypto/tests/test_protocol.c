/* test_protocol.c — the protocol primitives (CProtocolCrypto/protocol.c) at the C level:
 * published vectors where they exist, round trips and every argument guard. */
#define _GNU_SOURCE
#include "protocol_crypto.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

static int is_hex(const uint8_t *got, const char *hex) {
    uint8_t want[128];
    size_t n = unhex(hex, want);
    return memcmp(got, want, n) == 0;
}

static int all_zero(const uint8_t *p, size_t n) {
    uint8_t acc = 0;
    for (size_t i = 0; i < n; i++) acc |= p[i];
    return acc == 0;
}

/* Secrets go in and come out as the core's buffers: these make and read them. */
static spc_buffer *buffer_with(const uint8_t *bytes, size_t n) {
    spc_buffer *b;
    uint8_t *p;
    REQUIRE_OK(spc_buffer_new(n, &b));
    REQUIRE_OK(spc_buffer_open(b, &p));
    memcpy(p, bytes, n);
    spc_buffer_close(b);
    return b;
}

static spc_buffer *buffer_of(size_t n) {
    spc_buffer *b;
    REQUIRE_OK(spc_buffer_new(n, &b));
    return b;
}

static void read_buffer(spc_buffer *b, uint8_t *out) {
    uint8_t *p;
    REQUIRE_OK(spc_buffer_open(b, &p));
    memcpy(out, p, spc_buffer_size(b));
    spc_buffer_close(b);
}

/* Whether the buffer holds exactly `n` bytes equal to `want`. */
static int buffer_is(spc_buffer *b, const uint8_t *want, size_t n) {
    uint8_t got[64];
    if (spc_buffer_size(b) != n || n > sizeof got) return 0;
    read_buffer(b, got);
    return memcmp(got, want, n) == 0;
}

static spc_password *password_of(const char *ascii) {
    spc_password *pw;
    REQUIRE_OK(spc_password_new(&pw));
    for (size_t i = 0; ascii[i] != 0; i++) REQUIRE_OK(spc_password_add(pw, (uint8_t)ascii[i]));
    return pw;
}

/* Before spc_init() every entry point refuses with SPC_E_INIT and clears its output. */
static void test_uninitialised(void) {
    uint8_t k[16] = {1}, in[32] = {2}, out[72], pub[65], sig[72];
    size_t n = 9;
    int valid = 9;
    spc_buffer *b = (spc_buffer *)1;
    spc_password *pw = (spc_password *)1;
    spc_pool_stats st;
    spc_machine_report rep;
    spc_kdf_limits lim = {1024, 4};
    spc_argon2_params prm = {1, 8, 1};
    spc_argon2_input ai = {in, 1, in, 16, NULL, 0, NULL, 0};
    /* No buffer can exist yet: the handles below are never touched. */
    spc_buffer *key = (spc_buffer *)2, *dst = (spc_buffer *)3;
    spc_buffer *const keys[] = {key};
    spc_password *pin = (spc_password *)4;
    memset(out, 0xEE, sizeof out);
    CHECK_EQ(spc_initialized(), 0);
    CHECK_EQ(spc_aes128_encrypt_block(key, in, dst), SPC_E_INIT);
    CHECK_EQ(spc_aes128_decrypt_block(key, in, dst), SPC_E_INIT);
    CHECK_EQ(spc_aes128_cbc_nopad_encrypt(key, in, in, 32, out), SPC_E_INIT);
    CHECK(all_zero(out, 32));
    CHECK_EQ(spc_aes128_cbc_nopad_decrypt(key, in, in, 32, out), SPC_E_INIT);
    CHECK_EQ(spc_sha256(in, 3, out), SPC_E_INIT);
    CHECK_EQ(spc_hmac_sha256(key, in, 3, out), SPC_E_INIT);
    CHECK_EQ(spc_hmac_sha256_derive(keys, 1, in, 3, dst), SPC_E_INIT);
    CHECK_EQ(spc_authcode_compute(keys, 1, in, in, 3, out, 32), SPC_E_INIT);
    CHECK_EQ(spc_p256_public_check(pub, 65), SPC_E_INIT);
    CHECK_EQ(spc_p256_keypair_generate(key, pub), SPC_E_INIT);
    CHECK_EQ(spc_p256_ecdh(key, pub, 65, dst), SPC_E_INIT);
    CHECK_EQ(spc_p256_ecdsa_sign(key, in, 3, sig, &n), SPC_E_INIT);
    CHECK_EQ(n, 0);
    CHECK_EQ(spc_p256_ecdsa_verify(pub, 65, in, 3, sig, 8, &valid), SPC_E_INIT);
    CHECK_EQ(valid, 0);
    CHECK_EQ(spc_knowledge_key_wrap(pin, in, 8, 1, key, out), SPC_E_INIT);
    CHECK_EQ(spc_knowledge_key_unwrap(pin, in, 8, 1, k, dst), SPC_E_INIT);
    CHECK_EQ(spc_digest(in, 3, out), SPC_E_INIT);
    CHECK_EQ(spc_buffer_new(16, &b), SPC_E_INIT);
    CHECK(b == NULL);
    CHECK_EQ(spc_password_new(&pw), SPC_E_INIT);
    CHECK(pw == NULL);
    CHECK_EQ(spc_pool_stats_get(&st), SPC_E_INIT);
    CHECK_EQ(spc_pool_set_secretmem(0), SPC_E_INIT);
    CHECK_EQ(spc_machine_report_get(&rep), SPC_E_INIT);
    CHECK_EQ(spc_aead_available(SPC_AEAD_AES256GCM), 0);
    CHECK_EQ(spc_kdf_pbkdf2_sha256(in, 1, in, 1, 1, (spc_buffer *)1), SPC_E_INIT);
    CHECK_EQ(spc_kdf_argon2id(&ai, &prm, &lim, SPC_ARGON2_AUTO, (spc_buffer *)1, &valid), SPC_E_INIT);
    CHECK_EQ(spc_aead_seal(SPC_AEAD_XCHACHA20POLY1305, (spc_buffer *)1, in, 24, NULL, NULL, 0, out), SPC_E_INIT);
    CHECK_EQ(spc_aead_open(SPC_AEAD_XCHACHA20POLY1305, (spc_buffer *)1, in, 24, in, 16, NULL, 0, &b), SPC_E_INIT);
}

/* FIPS-197 appendix C.1 and NIST SP 800-38A F.2.1 / F.2.2. */
static void test_aes128(void) {
    uint8_t raw[16], pt[64], out[64], back[64], iv[16], block[16];
    unhex("000102030405060708090a0b0c0d0e0f", raw);
    unhex("00112233445566778899aabbccddeeff", pt);
    spc_buffer *key = buffer_with(raw, 16), *enc = buffer_of(16), *dec = buffer_of(16);
    REQUIRE_OK(spc_aes128_encrypt_block(key, pt, enc));
    read_buffer(enc, block);
    CHECK(is_hex(block, "69c4e0d86a7b0430d8cdb78070b4c55a"));
    REQUIRE_OK(spc_aes128_decrypt_block(key, block, dec));
    CHECK(buffer_is(dec, pt, 16));
    /* Block guards: sizes, the output being the key; the output is left zero. */
    spc_buffer *small = buffer_with(raw, 15), *wide = buffer_of(17);
    CHECK_EQ(spc_aes128_encrypt_block(small, pt, enc), SPC_E_ARGUMENT);
    CHECK(buffer_is(enc, (const uint8_t[16]){0}, 16));
    CHECK_EQ(spc_aes128_encrypt_block(key, pt, wide), SPC_E_ARGUMENT);
    CHECK_EQ(spc_aes128_decrypt_block(key, pt, key), SPC_E_ARGUMENT);
    CHECK(buffer_is(key, raw, 16));
    spc_buffer_free(small), spc_buffer_free(wide), spc_buffer_free(enc), spc_buffer_free(dec), spc_buffer_free(key);

    unhex("2b7e151628aed2a6abf7158809cf4f3c", raw);
    key = buffer_with(raw, 16);
    unhex("000102030405060708090a0b0c0d0e0f", iv);
    unhex("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
          "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710", pt);
    REQUIRE_OK(spc_aes128_cbc_nopad_encrypt(key, iv, pt, 64, out));
    CHECK(is_hex(out, "7649abac8119b246cee98e9b12e9197d5086cb9b507219ee95db113a917678b2"
                      "73bed6b8e3c1743b7116e69e222295163ff1caa1681fac09120eca307586e1a7"));
    REQUIRE_OK(spc_aes128_cbc_nopad_decrypt(key, iv, out, 64, back));
    CHECK(memcmp(back, pt, 64) == 0);
    /* Lengths: whole blocks, at least one; nothing is written on refusal. */
    memset(out, 0xEE, sizeof out);
    CHECK_EQ(spc_aes128_cbc_nopad_encrypt(key, iv, pt, 0, out), SPC_E_ARGUMENT);
    CHECK_EQ(spc_aes128_cbc_nopad_encrypt(key, iv, pt, 17, out), SPC_E_ARGUMENT);
    CHECK_EQ(spc_aes128_cbc_nopad_decrypt(key, iv, pt, 15, out), SPC_E_ARGUMENT);
    CHECK_EQ(spc_aes128_cbc_nopad_decrypt(key, iv, pt, (size_t)SPC_BUFFER_MAX + 16, out), SPC_E_ARGUMENT);
    CHECK_EQ(out[0], 0xEE);
    /* A key of the wrong size: refused, the output cleared. */
    spc_buffer *long_key = buffer_of(32);
    CHECK_EQ(spc_aes128_cbc_nopad_encrypt(long_key, iv, pt, 16, out), SPC_E_ARGUMENT);
    CHECK(all_zero(out, 16));
    spc_buffer_free(long_key), spc_buffer_free(key);
}

/* FIPS 180-2 "abc"; RFC 4231 test case 2. */
static void test_sha256_hmac(void) {
    uint8_t out[32], derived[32];
    const char *library = spc_crypto_library_version();
    CHECK(library != NULL && strncmp(library, "OpenSSL ", 8) == 0);
    REQUIRE_OK(spc_sha256((const uint8_t *)"abc", 3, out));
    CHECK(is_hex(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    REQUIRE_OK(spc_sha256(NULL, 0, out));
    CHECK(is_hex(out, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    CHECK_EQ(spc_sha256(NULL, 1, out), SPC_E_ARGUMENT);
    const uint8_t *msg = (const uint8_t *)"what do ya want for nothing?";
    spc_buffer *jefe = buffer_with((const uint8_t *)"Jefe", 4);
    REQUIRE_OK(spc_hmac_sha256(jefe, msg, 28, out));
    CHECK(is_hex(out, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"));
    REQUIRE_OK(spc_hmac_sha256(jefe, NULL, 0, out));
    CHECK_EQ(spc_hmac_sha256(NULL, NULL, 0, out), SPC_E_ARGUMENT);
    CHECK_EQ(spc_hmac_sha256(jefe, NULL, 3, out), SPC_E_ARGUMENT);
    CHECK(all_zero(out, 32));
    /* The derived key is HMAC keyed with the parts' concatenation: "Je" || "fe". */
    spc_buffer *je = buffer_with((const uint8_t *)"Je", 2), *fe = buffer_with((const uint8_t *)"fe", 2);
    spc_buffer *dk = buffer_of(32);
    spc_buffer *const parts[] = {je, fe};
    REQUIRE_OK(spc_hmac_sha256_derive(parts, 2, msg, 28, dk));
    read_buffer(dk, derived);
    CHECK(is_hex(derived, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"));
    spc_buffer *const one[] = {jefe};
    REQUIRE_OK(spc_hmac_sha256_derive(one, 1, NULL, 0, dk));
    REQUIRE_OK(spc_hmac_sha256(jefe, NULL, 0, out));
    CHECK(buffer_is(dk, out, 32));
    spc_buffer *const twice[] = {je, je}; /* a buffer may appear twice: key "JeJe" */
    spc_buffer *jeje = buffer_with((const uint8_t *)"JeJe", 4);
    REQUIRE_OK(spc_hmac_sha256_derive(twice, 2, msg, 28, dk));
    REQUIRE_OK(spc_hmac_sha256(jeje, msg, 28, out));
    CHECK(buffer_is(dk, out, 32));
    /* Guards: count, NULL part, out among the parts, output size, NULL message. */
    spc_buffer *const holes[] = {je, NULL};
    spc_buffer *const self[] = {je, dk};
    spc_buffer *const many[SPC_HMAC_KEY_PARTS_MAX + 1] = {je, je, je, je, je, je, je, je, je};
    spc_buffer *small = buffer_of(16);
    CHECK_EQ(spc_hmac_sha256_derive(parts, 0, msg, 28, dk), SPC_E_ARGUMENT);
    CHECK_EQ(spc_hmac_sha256_derive(many, SPC_HMAC_KEY_PARTS_MAX + 1, msg, 28, dk), SPC_E_ARGUMENT);
    CHECK_EQ(spc_hmac_sha256_derive(holes, 2, msg, 28, dk), SPC_E_ARGUMENT);
    CHECK_EQ(spc_hmac_sha256_derive(self, 2, msg, 28, dk), SPC_E_ARGUMENT);
    CHECK_EQ(spc_hmac_sha256_derive(parts, 2, NULL, 3, dk), SPC_E_ARGUMENT);
    CHECK_EQ(spc_hmac_sha256_derive(parts, 2, msg, 28, small), SPC_E_ARGUMENT);
    REQUIRE_OK(spc_hmac_sha256_derive(many, SPC_HMAC_KEY_PARTS_MAX, msg, 28, dk));
    spc_buffer_free(small), spc_buffer_free(jeje), spc_buffer_free(dk), spc_buffer_free(je), spc_buffer_free(fe);
    spc_buffer_free(jefe);
}

/* The key chain against the same chain written out with spc_hmac_sha256. */
static void test_authcode_chain(void) {
    uint8_t raw[3][16], ctr[16], out[128], want[32], kk[32], step[32], next[32];
    memset(raw[0], 0x11, 16), memset(raw[1], 0x22, 16), memset(raw[2], 0x33, 16), memset(ctr, 0x44, 16);
    spc_buffer *const keys[] = {buffer_with(raw[0], 16), buffer_with(raw[1], 16), buffer_with(raw[2], 16)};
    const uint8_t *data = (const uint8_t *)"POST&L3BhL3Rlc3Q=&bm9uY2U=&Ym9keQ==&YXBw";
    size_t len = strlen((const char *)data);
    REQUIRE_OK(spc_authcode_compute(keys, 3, ctr, data, len, out, 96));
    for (size_t i = 0; i < 3; i++) {
        REQUIRE_OK(spc_hmac_sha256(keys[i], ctr, 16, kk));
        for (size_t j = 0; j < i; j++) {
            REQUIRE_OK(spc_hmac_sha256(keys[j + 1], ctr, 16, step));
            spc_buffer *s = buffer_with(step, 32);
            REQUIRE_OK(spc_hmac_sha256(s, kk, 32, next)); /* outputs must not overlap inputs */
            spc_buffer_free(s);
            memcpy(kk, next, 32);
        }
        spc_buffer *k = buffer_with(kk, 32);
        REQUIRE_OK(spc_hmac_sha256(k, data, len, want));
        spc_buffer_free(k);
        CHECK(memcmp(out + 32 * i, want, 32) == 0);
    }
    REQUIRE_OK(spc_authcode_compute(keys, 1, ctr, NULL, 0, out, 32));
    /* The same key twice is opened twice (opens nest). */
    spc_buffer *const same[] = {keys[0], keys[0]};
    REQUIRE_OK(spc_authcode_compute(same, 2, ctr, data, len, out, 64));
    CHECK(!all_zero(out, 64));
    CHECK_EQ(spc_authcode_compute(keys, 0, ctr, data, len, out, 0), SPC_E_ARGUMENT);
    CHECK_EQ(spc_authcode_compute(keys, 4, ctr, data, len, out, 128), SPC_E_ARGUMENT);
    CHECK_EQ(spc_authcode_compute(keys, 2, ctr, data, len, out, 96), SPC_E_ARGUMENT);
    CHECK_EQ(spc_authcode_compute(keys, 1, ctr, NULL, 5, out, 32), SPC_E_ARGUMENT);
    spc_buffer *const holes[] = {keys[0], NULL};
    CHECK_EQ(spc_authcode_compute(holes, 2, ctr, data, len, out, 64), SPC_E_ARGUMENT);
    spc_buffer *wide = buffer_of(32);
    spc_buffer *const sized[] = {keys[0], wide};
    CHECK_EQ(spc_authcode_compute(sized, 2, ctr, data, len, out, 64), SPC_E_ARGUMENT);
    CHECK(all_zero(out, 64));
    spc_buffer_free(wide);
    for (size_t i = 0; i < 3; i++) spc_buffer_free(keys[i]);
}

/* The order n of P-256, and n - 1 (the largest valid scalar). */
static const char *order_hex = "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551";

/* ECDH of a scalar given as bytes (a fresh buffer) with `pub`. */
static int ecdh_raw(const uint8_t *d, size_t n, const uint8_t *pub, size_t pub_len, spc_buffer *shared) {
    spc_buffer *priv = buffer_with(d, n);
    int rc = spc_p256_ecdh(priv, pub, pub_len, shared);
    spc_buffer_free(priv);
    return rc;
}

static void test_p256_keys_and_ecdh(void) {
    uint8_t a[33], pa[65], pb[65], s1[32], comp[33];
    spc_buffer *ka = buffer_of(32), *kb = buffer_of(32), *shared1 = buffer_of(32), *shared2 = buffer_of(32);
    REQUIRE_OK(spc_p256_keypair_generate(ka, pa));
    REQUIRE_OK(spc_p256_keypair_generate(kb, pb));
    CHECK_EQ(pa[0], 0x04);
    CHECK_EQ(spc_p256_public_check(pa, 65), SPC_OK);
    comp[0] = (uint8_t)(0x02 | (pa[64] & 1));
    memcpy(comp + 1, pa + 1, 32);
    CHECK_EQ(spc_p256_public_check(comp, 33), SPC_OK);
    REQUIRE_OK(spc_p256_ecdh(ka, pb, 65, shared1));
    REQUIRE_OK(spc_p256_ecdh(kb, comp, 33, shared2));
    read_buffer(shared1, s1);
    CHECK(buffer_is(shared2, s1, 32));
    read_buffer(ka, a + 1);
    a[0] = 0; /* a Java BigInteger's sign byte */
    REQUIRE_OK(ecdh_raw(a, 33, pb, 65, shared2));
    CHECK(buffer_is(shared2, s1, 32));
    /* Output guards: size, the output being the private key. */
    spc_buffer *wide = buffer_of(33);
    CHECK_EQ(spc_p256_keypair_generate(wide, pa), SPC_E_ARGUMENT);
    CHECK(all_zero(pa, 65));
    CHECK_EQ(spc_p256_ecdh(ka, pb, 65, wide), SPC_E_ARGUMENT);
    CHECK_EQ(spc_p256_ecdh(ka, pb, 65, ka), SPC_E_ARGUMENT);
    REQUIRE_OK(spc_p256_ecdh(ka, pb, 65, shared2)); /* the key is intact */
    CHECK(buffer_is(shared2, s1, 32));
    spc_buffer_free(wide);
    /* Invalid public keys. */
    uint8_t bad[65];
    memcpy(bad, pb, 65);
    bad[64] ^= 1; /* off the curve */
    CHECK_EQ(spc_p256_public_check(bad, 65), SPC_E_KEY);
    CHECK_EQ(spc_p256_public_check(pb, 64), SPC_E_KEY);
    CHECK_EQ(spc_p256_public_check(NULL, 65), SPC_E_ARGUMENT);
    memset(bad, 0, 65);
    bad[0] = 0x04;
    CHECK_EQ(spc_p256_public_check(bad, 65), SPC_E_KEY);
    CHECK_EQ(spc_p256_ecdh(kb, bad, 65, shared2), SPC_E_KEY);
    CHECK(buffer_is(shared2, (const uint8_t[32]){0}, 32));
    CHECK_EQ(spc_p256_ecdh(kb, NULL, 65, shared2), SPC_E_KEY);
    /* Scalars outside 1 ... n-1 and wrong encodings. */
    uint8_t d[33];
    memset(d, 0, 32);
    CHECK_EQ(ecdh_raw(d, 32, pb, 65, shared2), SPC_E_KEY);
    unhex(order_hex, d);
    CHECK_EQ(ecdh_raw(d, 32, pb, 65, shared2), SPC_E_KEY);
    d[31] -= 1; /* n - 1 */
    CHECK_EQ(ecdh_raw(d, 32, pb, 65, shared2), SPC_OK);
    memset(d, 0xFF, 32);
    CHECK_EQ(ecdh_raw(d, 32, pb, 65, shared2), SPC_E_KEY);
    a[0] = 1; /* 33 bytes without the zero sign byte */
    CHECK_EQ(ecdh_raw(a, 33, pb, 65, shared2), SPC_E_KEY);
    CHECK_EQ(ecdh_raw(a + 1, 31, pb, 65, shared2), SPC_E_KEY);
    CHECK_EQ(spc_p256_ecdh(NULL, pb, 65, shared2), SPC_E_KEY);
    spc_buffer_free(ka), spc_buffer_free(kb), spc_buffer_free(shared1), spc_buffer_free(shared2);
}

static void test_p256_ecdsa(void) {
    uint8_t pub[65], sig[SPC_P256_SIGNATURE_MAX];
    size_t sig_len = 0;
    int valid = 0;
    const uint8_t *msg = (const uint8_t *)"activation status";
    spc_buffer *priv = buffer_of(32);
    REQUIRE_OK(spc_p256_keypair_generate(priv, pub));
    REQUIRE_OK(spc_p256_ecdsa_sign(priv, msg, 17, sig, &sig_len));
    CHECK(sig_len >= 8 && sig_len <= SPC_P256_SIGNATURE_MAX);
    REQUIRE_OK(spc_p256_ecdsa_verify(pub, 65, msg, 17, sig, sig_len, &valid));
    CHECK_EQ(valid, 1);
    REQUIRE_OK(spc_p256_ecdsa_verify(pub, 65, msg, 16, sig, sig_len, &valid));
    CHECK_EQ(valid, 0);
    sig[sig_len / 2] ^= 1;
    REQUIRE_OK(spc_p256_ecdsa_verify(pub, 65, msg, 17, sig, sig_len, &valid));
    CHECK_EQ(valid, 0);
    REQUIRE_OK(spc_p256_ecdsa_verify(pub, 65, msg, 17, sig, 3, &valid)); /* malformed DER */
    CHECK_EQ(valid, 0);
    REQUIRE_OK(spc_p256_ecdsa_verify(pub, 65, msg, 17, NULL, 0, &valid));
    CHECK_EQ(valid, 0);
    /* The empty message signs and verifies. */
    REQUIRE_OK(spc_p256_ecdsa_sign(priv, NULL, 0, sig, &sig_len));
    REQUIRE_OK(spc_p256_ecdsa_verify(pub, 65, NULL, 0, sig, sig_len, &valid));
    CHECK_EQ(valid, 1);
    /* Guards. */
    CHECK_EQ(spc_p256_ecdsa_sign(priv, NULL, 3, sig, &sig_len), SPC_E_ARGUMENT);
    CHECK_EQ(sig_len, 0);
    spc_buffer *zero = buffer_of(32);
    CHECK_EQ(spc_p256_ecdsa_sign(zero, msg, 17, sig, &sig_len), SPC_E_KEY);
    CHECK_EQ(spc_p256_ecdsa_sign(NULL, msg, 17, sig, &sig_len), SPC_E_KEY);
    CHECK_EQ(spc_p256_ecdsa_verify(pub, 65, NULL, 3, sig, 8, &valid), SPC_E_ARGUMENT);
    CHECK_EQ(spc_p256_ecdsa_verify(pub, 65, msg, 17, NULL, 8, &valid), SPC_E_ARGUMENT);
    CHECK_EQ(spc_p256_ecdsa_verify(pub, 33, msg, 17, sig, 8, &valid), SPC_E_KEY);
    CHECK_EQ(spc_p256_ecdsa_verify(NULL, 65, msg, 17, sig, 8, &valid), SPC_E_KEY);
    spc_buffer_free(zero), spc_buffer_free(priv);
}

static void test_knowledge_key(void) {
    uint8_t salt[16], raw[16], wrapped[16], other[16];
    memset(salt, 0x5A, 16);
    for (int i = 0; i < 16; i++) raw[i] = (uint8_t)(0xC0 + i);
    spc_buffer *key = buffer_with(raw, 16), *back = buffer_of(16);
    spc_password *pin = password_of("482915"), *wrong = password_of("482916"), *empty = password_of("");
    REQUIRE_OK(spc_knowledge_key_wrap(pin, salt, 64, 2, key, wrapped));
    CHECK(memcmp(wrapped, raw, 16) != 0);
    REQUIRE_OK(spc_knowledge_key_unwrap(pin, salt, 64, 2, wrapped, back));
    CHECK(buffer_is(back, raw, 16));
    /* A wrong PIN or another cost is a different key, never a status. */
    REQUIRE_OK(spc_knowledge_key_unwrap(wrong, salt, 64, 2, wrapped, back));
    CHECK(!buffer_is(back, raw, 16));
    REQUIRE_OK(spc_knowledge_key_unwrap(pin, salt, 64, 1, wrapped, back));
    CHECK(!buffer_is(back, raw, 16));
    /* Guards, each leaving the output zero. */
    memset(other, 0xEE, 16);
    CHECK_EQ(spc_knowledge_key_wrap(NULL, salt, 64, 2, key, other), SPC_E_ARGUMENT);
    CHECK(all_zero(other, 16));
    CHECK_EQ(spc_knowledge_key_wrap(empty, salt, 64, 2, key, other), SPC_E_ARGUMENT);
    CHECK_EQ(spc_knowledge_key_wrap(pin, salt, SPC_KNOWLEDGE_MEMORY_MIN_KIB - 1, 2, key, other), SPC_E_ARGUMENT);
    CHECK_EQ(spc_knowledge_key_wrap(pin, salt, SPC_KNOWLEDGE_MEMORY_MAX_KIB + 1, 2, key, other), SPC_E_ARGUMENT);
    CHECK_EQ(spc_knowledge_key_unwrap(pin, salt, 64, 0, wrapped, back), SPC_E_ARGUMENT);
    CHECK(buffer_is(back, (const uint8_t[16]){0}, 16));
    CHECK_EQ(spc_knowledge_key_unwrap(pin, salt, 64, SPC_KNOWLEDGE_ITERATIONS_MAX + 1, wrapped, back),
             SPC_E_ARGUMENT);
    spc_buffer *wide = buffer_of(32);
    CHECK_EQ(spc_knowledge_key_unwrap(pin, salt, 64, 2, wrapped, wide), SPC_E_ARGUMENT);
    CHECK_EQ(spc_knowledge_key_wrap(pin, salt, 64, 2, wide, other), SPC_E_ARGUMENT);
    CHECK(all_zero(other, 16));
    spc_buffer_free(wide), spc_buffer_free(back), spc_buffer_free(key);
    spc_password_free(pin), spc_password_free(wrong), spc_password_free(empty);
}

/* ---- PowerAuth's own vectors for the authentication code (read from their files) ---- */

/* The directory of the upstream vector files, relative to the repository root (make runs there). */
static const char *vector_dir = "Tests/Vectors/powerauth";

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    char *text = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        if (size > 0 && fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)size + 1)) != NULL) {
            if (fread(text, 1, (size_t)size, f) == (size_t)size) {
                text[size] = 0;
            } else {
                free(text);
                text = NULL;
            }
        }
    }
    fclose(f);
    return text;
}

/* The string value of "key" : "value" at or after `from` and before `limit`; copied into `out`. */
static int json_string(const char *from, const char *limit, const char *key, char *out, size_t cap) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\" : \"", key);
    const char *at = strstr(from, pattern);
    if (at == NULL || at >= limit) return 0;
    at += strlen(pattern);
    const char *end = strchr(at, '"');
    if (end == NULL || (size_t)(end - at) >= cap) return 0;
    memcpy(out, at, (size_t)(end - at));
    out[end - at] = 0;
    return 1;
}

static size_t from_base64(const char *text, uint8_t *out, size_t cap) {
    size_t len = 0;
    if (sodium_base642bin(out, cap, text, strlen(text), NULL, &len, NULL, sodium_base64_VARIANT_ORIGINAL) != 0) {
        return (size_t)-1;
    }
    return len;
}

/* PowerAuth's rendering of the code: per factor, the last 4 bytes of its 32-byte tag as a
 * 31-bit number modulo 10^digits, joined with '-'; or (3.1 online) the last 16 bytes of each
 * tag, concatenated, in Base64. */
static void render(const uint8_t *tags, size_t factors, int digits, char *out, size_t cap) {
    out[0] = 0;
    if (digits == 0) {
        uint8_t tails[48];
        for (size_t i = 0; i < factors; i++) memcpy(tails + 16 * i, tags + 32 * i + 16, 16);
        sodium_bin2base64(out, cap, tails, 16 * factors, sodium_base64_VARIANT_ORIGINAL);
        return;
    }
    uint32_t modulus = 1;
    for (int d = 0; d < digits; d++) modulus *= 10;
    for (size_t i = 0; i < factors; i++) {
        const uint8_t *t = tags + 32 * i + 28;
        uint32_t value = ((uint32_t)t[0] << 24 | (uint32_t)t[1] << 16 | (uint32_t)t[2] << 8 | t[3]) & 0x7FFFFFFFu;
        size_t used = strlen(out);
        snprintf(out + used, cap - used, "%s%0*u", i == 0 ? "" : "-", digits, value % modulus);
    }
}

/* Every case of one file: keys, counter and data in, the rendered code out. `digits` 0 means
 * Base64; -1 means the file gives the length per case (signatureComponentLength). */
static void authcode_vectors(const char *file, int digits) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", vector_dir, file);
    char *text = read_text(path);
    if (text == NULL) {
        printf("  %s: cannot read %s\n", file, path);
        CHECK(0);
        return;
    }
    size_t ran = 0, total = 0;
    for (const char *c = strstr(text, "\"input\""); c != NULL; c = strstr(c + 1, "\"input\"")) total++;
    for (const char *c = strstr(text, "\"input\""); c != NULL;) {
        const char *next = strstr(c + 1, "\"input\"");
        const char *limit = next != NULL ? next : c + strlen(c);
        char field[3][64], type[64], ctr_text[64], data_text[4096], want[128], got[128], length_text[8];
        static const char *const names[3] = {"signaturePossessionKey", "signatureKnowledgeKey",
                                             "signatureBiometryKey"};
        int ok = json_string(c, limit, "signatureType", type, sizeof type) &&
                 json_string(c, limit, "counterData", ctr_text, sizeof ctr_text) &&
                 json_string(c, limit, "data", data_text, sizeof data_text) &&
                 json_string(c, limit, "signature", want, sizeof want);
        for (int k = 0; k < 3; k++) ok = ok && json_string(c, limit, names[k], field[k], sizeof field[k]);
        int case_digits = digits;
        if (ok && digits < 0) {
            ok = json_string(c, limit, "signatureComponentLength", length_text, sizeof length_text);
            case_digits = ok ? atoi(length_text) : 0;
        }
        CHECK(ok);
        if (!ok) break;
        /* possession, then knowledge, then biometry: the factors the type names, in that order. */
        size_t factors = 0;
        int use[3] = {1, strstr(type, "knowledge") != NULL, strstr(type, "biometry") != NULL};
        spc_buffer *keys[3] = {NULL, NULL, NULL};
        for (int k = 0; k < 3; k++) {
            if (!use[k]) continue;
            uint8_t raw[16];
            CHECK_EQ(from_base64(field[k], raw, sizeof raw), 16u);
            keys[factors++] = buffer_with(raw, 16);
        }
        uint8_t ctr[16], data[3072], tags[96];
        CHECK_EQ(from_base64(ctr_text, ctr, sizeof ctr), 16u);
        size_t data_len = from_base64(data_text, data, sizeof data);
        CHECK(data_len != (size_t)-1);
        REQUIRE_OK(spc_authcode_compute(keys, factors, ctr, data, data_len, tags, 32 * factors));
        render(tags, factors, case_digits, got, sizeof got);
        if (strcmp(got, want) != 0) printf("  %s case %zu: got %s, want %s\n", file, ran, got, want);
        CHECK(strcmp(got, want) == 0);
        for (size_t k = 0; k < factors; k++) spc_buffer_free(keys[k]);
        ran++;
        c = next;
    }
    printf("  %s: %zu of %zu vectors ran\n", file, ran, total);
    CHECK(ran == total && ran > 0);
    free(text);
}

static void test_authcode_vectors(void) {
    authcode_vectors("signatures-v3.json", 8);
    authcode_vectors("signatures-v31.json", 0);
    authcode_vectors("signatures-offline.json", -1);
}

/* ---- ECIES (PowerAuth V3.0 ... V3.3) ---- */

/* The value of "key" (a string, a number or null) at or after `from` and before `limit`, in
 * whatever spacing the file uses: 1 with the text in `out`, 2 for null, 0 when absent. */
static int json_value(const char *from, const char *limit, const char *key, char *out, size_t cap) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\"", key);
    const char *at = strstr(from, pattern);
    if (at == NULL || at >= limit) return 0;
    at += strlen(pattern);
    while (*at == ' ' || *at == ':') at++;
    if (strncmp(at, "null", 4) == 0) return 2;
    int quoted = *at == '"';
    at += quoted;
    const char *end = at;
    while (*end != 0 && (quoted ? *end != '"' : (*end != ',' && *end != '}' && *end != '\n'))) end++;
    if ((size_t)(end - at) >= cap) return 0;
    memcpy(out, at, (size_t)(end - at));
    out[end - at] = 0;
    return 1;
}

/* A field as bytes (Base64), or as its UTF-8 text when `text` is set; the length, -1 if absent. */
static long field_bytes(const char *from, const char *limit, const char *key, int text, uint8_t *out, size_t cap) {
    char value[8192];
    if (json_value(from, limit, key, value, sizeof value) != 1) return -1;
    if (text) {
        size_t n = strlen(value);
        if (n > cap) return -1;
        memcpy(out, value, n);
        return (long)n;
    }
    size_t n = from_base64(value, out, cap);
    return n == (size_t)-1 ? -1 : (long)n;
}

/* concatWithSizes: u32be(len) || bytes per item; a NULL item is u32be(0). */
static size_t join_sized(uint8_t *out, size_t at, const uint8_t *item, size_t len) {
    out[at] = (uint8_t)(len >> 24), out[at + 1] = (uint8_t)(len >> 16);
    out[at + 2] = (uint8_t)(len >> 8), out[at + 3] = (uint8_t)len;
    if (item != NULL) memcpy(out + at + 4, item, len);
    return at + 4 + (item != NULL ? len : 0);
}

/* One message both ways under one envelope key: encryption reproduces the vector's bytes,
 * decryption its plaintext, and a flipped MAC bit is refused. */
static void ecies_both_ways(spc_buffer *env, const uint8_t *nonce, const uint8_t *plain, size_t plain_len,
                            const uint8_t *ct, size_t ct_len, const uint8_t mac[32], const uint8_t *sh2,
                            size_t sh2_len) {
    uint8_t out[4096], tag[32], got[4096];
    spc_buffer *pb = plain_len > 0 ? buffer_with(plain, plain_len) : NULL, *dec = buffer_of(ct_len);
    CHECK_EQ(SPC_ECIES_CIPHERTEXT_BYTES(plain_len), ct_len);
    REQUIRE_OK(spc_ecies_encrypt(env, nonce, pb, sh2, sh2_len, out, ct_len, tag));
    CHECK(memcmp(out, ct, ct_len) == 0 && memcmp(tag, mac, 32) == 0);
    size_t n = 0;
    REQUIRE_OK(spc_ecies_decrypt(env, nonce, ct, ct_len, sh2, sh2_len, mac, dec, &n));
    read_buffer(dec, got);
    CHECK(n == plain_len && memcmp(got, plain, n) == 0 && all_zero(got + n, ct_len - n));
    memcpy(tag, mac, 32), tag[31] ^= 1;
    CHECK_EQ(spc_ecies_decrypt(env, nonce, ct, ct_len, sh2, sh2_len, tag, dec, &n), SPC_E_AEAD_AUTH);
    CHECK_EQ(n, 0u);
    spc_buffer_free(pb), spc_buffer_free(dec);
}

/* ecies-java-v30-v31.json: raw SH1/SH2; the server derives the envelope key from its private
 * key and the ephemeral key as sent, opens the request and seals the response (3.1: same nonce). */
static void ecies_raw_vectors(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/v3-ecies/ecies-java-v30-v31.json", vector_dir);
    char *text = read_text(path);
    CHECK(text != NULL);
    if (text == NULL) return;
    size_t ran = 0, total = 0;
    for (const char *c = strstr(text, "\"version\""); c != NULL; c = strstr(c + 1, "\"version\"")) total++;
    for (const char *c = strstr(text, "\"version\""); c != NULL; ran++) {
        const char *next = strstr(c + 1, "\"version\"");
        const char *lim = next != NULL ? next : c + strlen(c);
        uint8_t priv[33], eph[65], sh1[256], sh2[256], rq[1024], rs[1024], rqc[1024], rsc[1024], rqm[32], rsm[32],
            nonce[16];
        long pl = field_bytes(c, lim, "serverPrivateKey", 0, priv, sizeof priv),
             el = field_bytes(c, lim, "ephemeralPublicKey", 0, eph, sizeof eph),
             s1 = field_bytes(c, lim, "sharedInfo1", 0, sh1, sizeof sh1),
             s2 = field_bytes(c, lim, "sharedInfo2", 0, sh2, sizeof sh2),
             ql = field_bytes(c, lim, "requestPlaintext", 0, rq, sizeof rq),
             sl = field_bytes(c, lim, "responsePlaintext", 0, rs, sizeof rs),
             qc = field_bytes(c, lim, "requestCiphertext", 0, rqc, sizeof rqc),
             sc = field_bytes(c, lim, "responseCiphertext", 0, rsc, sizeof rsc),
             nl = field_bytes(c, lim, "nonce", 0, nonce, sizeof nonce);
        CHECK(pl > 0 && el > 0 && s1 >= 0 && s2 >= 0 && ql >= 0 && sl >= 0 && qc > 0 && sc > 0 &&
              (nl == -1 || nl == 16));
        CHECK(field_bytes(c, lim, "requestMac", 0, rqm, 32) == 32 && field_bytes(c, lim, "responseMac", 0, rsm, 32) == 32);
        spc_buffer *key = buffer_with(priv, (size_t)pl), *env = buffer_of(SPC_ECIES_ENVELOPE_KEY_BYTES);
        REQUIRE_OK(spc_ecies_envelope_from_private(key, eph, (size_t)el, sh1, (size_t)s1, env));
        const uint8_t *n = nl == 16 ? nonce : NULL;
        ecies_both_ways(env, n, rq, (size_t)ql, rqc, (size_t)qc, rqm, sh2, (size_t)s2);
        ecies_both_ways(env, n, rs, (size_t)sl, rsc, (size_t)sc, rsm, sh2, (size_t)s2);
        spc_buffer_free(key), spc_buffer_free(env);
        c = next;
    }
    printf("  v3-ecies/ecies-java-v30-v31.json: %zu of %zu cases ran\n", ran, total);
    CHECK(ran == total && ran > 0);
    free(text);
}

/* SH2 of one E2ee message: SH2_BASE alone (3.0, 3.1), or (3.2+) concatWithSizes(SH2_BASE,
 * nonce, u64be(timestamp), ephemeral key or null, AD). */
static size_t e2ee_sh2(int v32, const uint8_t base[32], const uint8_t nonce[16], const char *ts, const uint8_t *eph,
                       size_t eph_len, const uint8_t *ad, size_t ad_len, uint8_t *out) {
    if (!v32) return memcpy(out, base, 32), 32;
    uint64_t t = strtoull(ts, NULL, 10);
    uint8_t be[8];
    for (int i = 0; i < 8; i++) be[i] = (uint8_t)(t >> (56 - 8 * i));
    size_t at = join_sized(out, 0, base, 32);
    at = join_sized(out, at, nonce, 16);
    at = join_sized(out, at, be, 8);
    at = join_sized(out, at, eph, eph_len);
    return join_sized(out, at, ad, ad_len);
}

/* One E2ee_*_Test_Vectors_3x.json case: the envelope key is given (the private keys are not):
 * SH2_BASE from the application secret (and transport key), the request and the response. */
static void e2ee_case(const char *c, const char *lim, const char *version, int activation) {
    char ts_req[32] = "", ts_res[32] = "", app_key[64] = "", act_id[64] = "", tmp_id[64] = "";
    uint8_t envk[48], base[32], want_base[32], secret[64], tk[16], eph[65], rq[256], rs[256], rqc[256], rsc[256],
        rqm[32], rsm[32], nq[16], ns[16], ad[256], sh2[512];
    long sl = field_bytes(c, lim, "applicationSecret", 1, secret, sizeof secret),
         el = field_bytes(c, lim, "requestEphemeralPublicKey", 0, eph, sizeof eph),
         ql = field_bytes(c, lim, "requestData", 1, rq, sizeof rq), rl = field_bytes(c, lim, "responseData", 1, rs, sizeof rs),
         qc = field_bytes(c, lim, "encryptedDataRequest", 0, rqc, sizeof rqc),
         sc = field_bytes(c, lim, "encryptedDataResponse", 0, rsc, sizeof rsc);
    CHECK(field_bytes(c, lim, "envelopeKey", 0, envk, 48) == 48 && field_bytes(c, lim, "sharedInfo2Base", 0, want_base, 32) == 32);
    CHECK(field_bytes(c, lim, "requestMac", 0, rqm, 32) == 32 && field_bytes(c, lim, "responseMac", 0, rsm, 32) == 32);
    CHECK(sl > 0 && el > 0 && ql >= 0 && rl >= 0 && qc > 0 && sc > 0);
    if (activation) {
        CHECK_EQ(field_bytes(c, lim, "transportKey", 0, tk, sizeof tk), 16);
        spc_buffer *t = buffer_with(tk, 16);
        REQUIRE_OK(spc_hmac_sha256(t, secret, (size_t)sl, base));
        spc_buffer_free(t);
    } else REQUIRE_OK(spc_sha256(secret, (size_t)sl, base));
    CHECK(memcmp(base, want_base, 32) == 0);
    int v31 = strcmp(version, "3.0") != 0, v32 = v31 && strcmp(version, "3.1") != 0;
    if (v31) CHECK_EQ(field_bytes(c, lim, "requestNonce", 0, nq, 16), 16);
    size_t ad_len = 0;
    if (v32) {
        CHECK_EQ(field_bytes(c, lim, "responseNonce", 0, ns, 16), 16);
        CHECK(json_value(c, lim, "timestampRequest", ts_req, sizeof ts_req) == 1 &&
              json_value(c, lim, "timestampResponse", ts_res, sizeof ts_res) == 1 &&
              json_value(c, lim, "applicationKey", app_key, sizeof app_key) == 1);
        ad_len = join_sized(ad, 0, (const uint8_t *)version, 3);
        ad_len = join_sized(ad, ad_len, (const uint8_t *)app_key, strlen(app_key));
        if (activation) CHECK(json_value(c, lim, "activationId", act_id, sizeof act_id) == 1);
        if (activation) ad_len = join_sized(ad, ad_len, (const uint8_t *)act_id, strlen(act_id));
        if (strcmp(version, "3.3") == 0) {
            CHECK(json_value(c, lim, "temporaryKeyId", tmp_id, sizeof tmp_id) == 1);
            ad_len = join_sized(ad, ad_len, (const uint8_t *)tmp_id, strlen(tmp_id));
        }
    }
    spc_buffer *env = buffer_with(envk, 48);
    size_t n = e2ee_sh2(v32, base, nq, ts_req, eph, (size_t)el, ad, ad_len, sh2);
    ecies_both_ways(env, v31 ? nq : NULL, rq, (size_t)ql, rqc, (size_t)qc, rqm, sh2, n);
    /* The response: 3.0 a zero IV, 3.1 the request's nonce, 3.2+ its own nonce and timestamp. */
    n = e2ee_sh2(v32, base, ns, ts_res, NULL, 0, ad, ad_len, sh2);
    ecies_both_ways(env, v32 ? ns : v31 ? nq : NULL, rs, (size_t)rl, rsc, (size_t)sc, rsm, sh2, n);
    spc_buffer_free(env);
}

static void e2ee_vectors(const char *scope, const char *digits) {
    char path[512], name[128], version[8];
    snprintf(name, sizeof name, "E2ee_%s_Scope_Test_Vectors_%s.json", scope, digits);
    snprintf(path, sizeof path, "%s/v3-ecies/%s", vector_dir, name);
    char *text = read_text(path);
    CHECK(text != NULL);
    if (text == NULL) return;
    size_t ran = 0, total = 0;
    for (const char *c = strstr(text, "\"protocolVersion\""); c != NULL; c = strstr(c + 1, "\"protocolVersion\"")) total++;
    for (const char *c = strstr(text, "\"protocolVersion\""); c != NULL; ran++) {
        const char *next = strstr(c + 1, "\"protocolVersion\"");
        const char *lim = next != NULL ? next : c + strlen(c);
        CHECK(json_value(c, lim, "protocolVersion", version, sizeof version) == 1);
        e2ee_case(c, lim, version, scope[1] == 'c');
        c = next;
    }
    printf("  v3-ecies/%s: %zu of %zu cases ran\n", name, ran, total);
    CHECK(ran == total && ran > 0);
    free(text);
}

static void test_ecies_vectors(void) {
    ecies_raw_vectors();
    static const char *const versions[] = {"30", "31", "32", "33"};
    for (int i = 0; i < 4; i++) e2ee_vectors("Application", versions[i]), e2ee_vectors("Activation", versions[i]);
}

/* X9.63-SHA256 against OpenSSL's own implementation of the same KDF (ECDH_KDF_X9_62's rule). */
static void test_x963(void) {
    uint8_t z[32], info[40], got[100], want[100];
    for (int i = 0; i < 32; i++) z[i] = (uint8_t)(i * 7 + 3);
    for (int i = 0; i < 40; i++) info[i] = (uint8_t)(200 - i);
    /* Reference: the blocks written out by hand with SHA-256. */
    for (uint32_t blk = 0; blk * 32 < sizeof want; blk++) {
        uint8_t msg[76], h[32];
        memcpy(msg, z, 32);
        msg[32] = 0, msg[33] = 0, msg[34] = 0, msg[35] = (uint8_t)(blk + 1);
        memcpy(msg + 36, info, 40);
        REQUIRE_OK(spc_sha256(msg, sizeof msg, h));
        memcpy(want + 32 * blk, h, sizeof want - 32 * blk < 32 ? sizeof want - 32 * blk : 32);
    }
    spc_buffer *secret = buffer_with(z, 32), *out = buffer_of(100), *one = buffer_of(1), *big = buffer_of(SPC_X963_MAX + 1);
    REQUIRE_OK(spc_kdf_x963_sha256(secret, info, sizeof info, out));
    read_buffer(out, got);
    CHECK(memcmp(got, want, sizeof want) == 0);
    REQUIRE_OK(spc_kdf_x963_sha256(secret, info, sizeof info, one));
    CHECK(buffer_is(one, want, 1));
    CHECK_EQ(spc_kdf_x963_sha256(secret, info, sizeof info, big), SPC_E_ARGUMENT);
    CHECK_EQ(spc_kdf_x963_sha256(secret, NULL, 1, out), SPC_E_ARGUMENT);
    CHECK_EQ(spc_kdf_x963_sha256(NULL, info, 1, out), SPC_E_ARGUMENT);
    CHECK_EQ(spc_kdf_x963_sha256(out, info, 1, out), SPC_E_ARGUMENT);
    spc_buffer_free(secret), spc_buffer_free(out), spc_buffer_free(one), spc_buffer_free(big);
}

/* The client's envelope (fresh ephemeral key, sent compressed) is the server's envelope; a
 * round trip of every plaintext length around a block; the guards. */
static void test_ecies_round_trip(void) {
    uint8_t server_pub[65], eph[33], nonce[16], sh1[] = "3.3/pa/generic/application", sh2[5] = {1, 2, 3, 4, 5};
    spc_buffer *server = buffer_of(32), *client_env = buffer_of(48), *server_env = buffer_of(48), *small = buffer_of(47);
    REQUIRE_OK(spc_p256_keypair_generate(server, server_pub));
    REQUIRE_OK(spc_ecies_envelope_from_public(server_pub, 65, sh1, sizeof sh1 - 1, client_env, eph));
    CHECK(eph[0] == 0x02 || eph[0] == 0x03);
    REQUIRE_OK(spc_ecies_envelope_from_private(server, eph, 33, sh1, sizeof sh1 - 1, server_env));
    int eq = 0;
    REQUIRE_OK(spc_buffer_equal(client_env, server_env, &eq));
    CHECK_EQ(eq, 1);
    /* Another SH1 gives another key. */
    REQUIRE_OK(spc_ecies_envelope_from_private(server, eph, 33, sh1, sizeof sh1 - 2, server_env));
    REQUIRE_OK(spc_buffer_equal(client_env, server_env, &eq));
    CHECK_EQ(eq, 0);
    randombytes_buf(nonce, sizeof nonce);
    for (size_t len = 0; len <= 33; len++) {
        uint8_t plain[33], ct[64], mac[32], got[48];
        for (size_t i = 0; i < len; i++) plain[i] = (uint8_t)(i + len);
        spc_buffer *pb = len > 0 ? buffer_with(plain, len) : NULL, *dec = buffer_of(SPC_ECIES_CIPHERTEXT_BYTES(len));
        size_t ct_len = SPC_ECIES_CIPHERTEXT_BYTES(len), n = 99;
        REQUIRE_OK(spc_ecies_encrypt(client_env, len % 2 ? nonce : NULL, pb, sh2, sizeof sh2, ct, ct_len, mac));
        REQUIRE_OK(spc_ecies_decrypt(client_env, len % 2 ? nonce : NULL, ct, ct_len, sh2, sizeof sh2, mac, dec, &n));
        read_buffer(dec, got);
        CHECK(n == len && memcmp(got, plain, len) == 0);
        /* The wrong SH2 or nonce, a changed byte of the data: refused, nothing revealed. */
        CHECK_EQ(spc_ecies_decrypt(client_env, len % 2 ? nonce : NULL, ct, ct_len, sh2, 4, mac, dec, &n), SPC_E_AEAD_AUTH);
        ct[0] ^= 0x80;
        CHECK_EQ(spc_ecies_decrypt(client_env, len % 2 ? nonce : NULL, ct, ct_len, sh2, sizeof sh2, mac, dec, &n),
                 SPC_E_AEAD_AUTH);
        read_buffer(dec, got);
        CHECK(n == 0 && all_zero(got, ct_len));
        CHECK_EQ(spc_ecies_encrypt(client_env, NULL, pb, sh2, sizeof sh2, ct, ct_len + 16, mac), SPC_E_ARGUMENT);
        spc_buffer_free(pb), spc_buffer_free(dec);
    }
    uint8_t ct[64], mac[32];
    size_t n = 0;
    spc_buffer *dec = buffer_of(16);
    CHECK_EQ(spc_ecies_envelope_from_public(eph, 32, sh1, 3, client_env, eph), SPC_E_KEY);
    CHECK_EQ(spc_ecies_envelope_from_public(server_pub, 65, NULL, 3, client_env, eph), SPC_E_ARGUMENT);
    CHECK_EQ(spc_ecies_envelope_from_public(server_pub, 65, sh1, 3, small, eph), SPC_E_ARGUMENT);
    CHECK_EQ(spc_ecies_envelope_from_private(server, NULL, 33, sh1, 3, server_env), SPC_E_KEY);
    CHECK_EQ(spc_ecies_envelope_from_private(server, server_pub, 64, sh1, 3, server_env), SPC_E_KEY);
    CHECK_EQ(spc_ecies_envelope_from_private(server_env, server_pub, 65, sh1, 3, server_env), SPC_E_ARGUMENT);
    CHECK_EQ(spc_ecies_encrypt(small, NULL, NULL, NULL, 0, ct, 16, mac), SPC_E_ARGUMENT);
    CHECK_EQ(spc_ecies_encrypt(client_env, NULL, NULL, NULL, 1, ct, 16, mac), SPC_E_ARGUMENT);
    CHECK_EQ(spc_ecies_encrypt(client_env, NULL, client_env, NULL, 0, ct, 64, mac), SPC_E_ARGUMENT);
    REQUIRE_OK(spc_ecies_encrypt(client_env, NULL, NULL, NULL, 0, ct, 16, mac));
    CHECK_EQ(spc_ecies_decrypt(client_env, NULL, ct, 15, NULL, 0, mac, dec, &n), SPC_E_ARGUMENT);
    CHECK_EQ(spc_ecies_decrypt(client_env, NULL, ct, 16, NULL, 1, mac, dec, &n), SPC_E_ARGUMENT);
    CHECK_EQ(spc_ecies_decrypt(client_env, NULL, ct, 16, NULL, 0, mac, client_env, &n), SPC_E_ARGUMENT);
    CHECK_EQ(spc_ecies_decrypt(small, NULL, ct, 16, NULL, 0, mac, dec, &n), SPC_E_ARGUMENT);
    CHECK_EQ(spc_ecies_decrypt(client_env, NULL, ct, 16, NULL, 0, mac, small, &n), SPC_E_ARGUMENT);
    REQUIRE_OK(spc_ecies_decrypt(client_env, NULL, ct, 16, NULL, 0, mac, dec, &n));
    CHECK_EQ(n, 0u);
    spc_buffer_free(server), spc_buffer_free(client_env), spc_buffer_free(server_env), spc_buffer_free(small);
    spc_buffer_free(dec);
}

/* A MAC that verifies over bad padding (made here with the keys in hand): refused, and the
 * padding checker itself on every last-block shape. */
static void test_ecies_padding(void) {
    uint8_t envk[48], iv[16] = {0}, block[16], ct[16], mac[32];
    for (int i = 0; i < 48; i++) envk[i] = (uint8_t)(i * 5 + 1);
    spc_buffer *env = buffer_with(envk, 48), *enc = buffer_with(envk, 16), *mk = buffer_with(envk + 16, 16),
               *dec = buffer_of(16);
    for (int last = 0; last < 256; last++) {
        memset(block, 0x11, sizeof block);
        block[15] = (uint8_t)last;
        REQUIRE_OK(spc_aes128_cbc_nopad_encrypt(enc, iv, block, 16, ct));
        REQUIRE_OK(spc_hmac_sha256(mk, ct, 16, mac));
        size_t n = 99;
        int rc = spc_ecies_decrypt(env, NULL, ct, 16, NULL, 0, mac, dec, &n);
        /* Valid only when the pad byte is 1, or 0x11 (17) would be out of range: 1 only. */
        CHECK_EQ(rc, last == 1 ? SPC_OK : SPC_E_AEAD_AUTH);
        CHECK_EQ(n, last == 1 ? 15u : 0u);
    }
    spc_buffer_free(env), spc_buffer_free(enc), spc_buffer_free(mk), spc_buffer_free(dec);
}

int main(int argc, char **argv) {
    if (argc > 1) vector_dir = argv[1];

    RUN(test_uninitialised);
    REQUIRE_OK(spc_init());
    CHECK_EQ(spc_initialized(), 1);
    RUN(test_aes128);
    RUN(test_sha256_hmac);
    RUN(test_authcode_chain);
    RUN(test_authcode_vectors);
    RUN(test_p256_keys_and_ecdh);
    RUN(test_p256_ecdsa);
    RUN(test_knowledge_key);
    RUN(test_x963);
    RUN(test_ecies_round_trip);
    RUN(test_ecies_padding);
    RUN(test_ecies_vectors);
    return check_summary("c-protocol");
}
