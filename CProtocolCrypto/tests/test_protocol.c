/* test_protocol.c — the protocol primitives (CProtocolCrypto/protocol.c) at the C level:
 * published vectors where they exist, round trips and every argument guard. */
#define _GNU_SOURCE
#include "protocol_crypto.h"
#include "check.h"

#include <string.h>

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

/* Before spc_init() every entry point refuses with SPC_E_INIT and clears its output. */
static void test_uninitialised(void) {
    uint8_t k[16] = {1}, in[32] = {2}, out[72], pub[65], sig[72];
    const uint8_t *keys[] = {k};
    size_t n = 9;
    int valid = 9;
    spc_buffer *b = (spc_buffer *)1;
    spc_password *pw = (spc_password *)1;
    spc_pool_stats st;
    spc_machine_report rep;
    spc_kdf_limits lim = {1024, 4};
    spc_argon2_params prm = {1, 8, 1};
    spc_argon2_input ai = {in, 1, in, 16, NULL, 0, NULL, 0};
    memset(out, 0xEE, sizeof out);
    CHECK_EQ(spc_initialized(), 0);
    CHECK_EQ(spc_aes128_encrypt_block(k, in, out), SPC_E_INIT);
    CHECK(all_zero(out, 16));
    CHECK_EQ(spc_aes128_decrypt_block(k, in, out), SPC_E_INIT);
    CHECK_EQ(spc_aes128_cbc_nopad_encrypt(k, in, in, 32, out), SPC_E_INIT);
    CHECK_EQ(spc_aes128_cbc_nopad_decrypt(k, in, in, 32, out), SPC_E_INIT);
    CHECK_EQ(spc_sha256(in, 3, out), SPC_E_INIT);
    CHECK_EQ(spc_hmac_sha256(k, 16, in, 3, out), SPC_E_INIT);
    CHECK_EQ(spc_authcode_compute(keys, 1, in, in, 3, out, 32), SPC_E_INIT);
    CHECK_EQ(spc_p256_public_check(pub, 65), SPC_E_INIT);
    CHECK_EQ(spc_p256_keypair_generate(out, pub), SPC_E_INIT);
    CHECK_EQ(spc_p256_ecdh(in, 32, pub, 65, out), SPC_E_INIT);
    CHECK_EQ(spc_p256_ecdsa_sign(in, 32, in, 3, sig, &n), SPC_E_INIT);
    CHECK_EQ(n, 0);
    CHECK_EQ(spc_p256_ecdsa_verify(pub, 65, in, 3, sig, 8, &valid), SPC_E_INIT);
    CHECK_EQ(valid, 0);
    CHECK_EQ(spc_knowledge_key_wrap(in, 4, in, 8, 1, k, out), SPC_E_INIT);
    CHECK_EQ(spc_knowledge_key_unwrap(in, 4, in, 8, 1, k, out), SPC_E_INIT);
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
    uint8_t key[16], pt[64], out[64], back[64], iv[16];
    unhex("000102030405060708090a0b0c0d0e0f", key);
    unhex("00112233445566778899aabbccddeeff", pt);
    REQUIRE_OK(spc_aes128_encrypt_block(key, pt, out));
    CHECK(is_hex(out, "69c4e0d86a7b0430d8cdb78070b4c55a"));
    REQUIRE_OK(spc_aes128_decrypt_block(key, out, back));
    CHECK(memcmp(back, pt, 16) == 0);
    unhex("2b7e151628aed2a6abf7158809cf4f3c", key);
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
}

/* FIPS 180-2 "abc"; RFC 4231 test case 2. */
static void test_sha256_hmac(void) {
    uint8_t out[32];
    REQUIRE_OK(spc_sha256((const uint8_t *)"abc", 3, out));
    CHECK(is_hex(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    REQUIRE_OK(spc_sha256(NULL, 0, out));
    CHECK(is_hex(out, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    CHECK_EQ(spc_sha256(NULL, 1, out), SPC_E_ARGUMENT);
    REQUIRE_OK(spc_hmac_sha256((const uint8_t *)"Jefe", 4, (const uint8_t *)"what do ya want for nothing?", 28, out));
    CHECK(is_hex(out, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"));
    REQUIRE_OK(spc_hmac_sha256((const uint8_t *)"Jefe", 4, NULL, 0, out));
    CHECK_EQ(spc_hmac_sha256((const uint8_t *)"Jefe", 0, NULL, 0, out), SPC_E_ARGUMENT);
    CHECK_EQ(spc_hmac_sha256(NULL, 4, NULL, 0, out), SPC_E_ARGUMENT);
    CHECK_EQ(spc_hmac_sha256((const uint8_t *)"Jefe", 4, NULL, 3, out), SPC_E_ARGUMENT);
    CHECK(all_zero(out, 32));
}

/* The key chain against the same chain written out with spc_hmac_sha256. */
static void test_authcode_chain(void) {
    uint8_t k1[16], k2[16], k3[16], ctr[16], out[128], want[32], kk[32], step[32], next[32];
    memset(k1, 0x11, 16), memset(k2, 0x22, 16), memset(k3, 0x33, 16), memset(ctr, 0x44, 16);
    const uint8_t *keys[] = {k1, k2, k3};
    const uint8_t *data = (const uint8_t *)"POST&L3BhL3Rlc3Q=&bm9uY2U=&Ym9keQ==&YXBw";
    size_t len = strlen((const char *)data);
    REQUIRE_OK(spc_authcode_compute(keys, 3, ctr, data, len, out, 96));
    for (size_t i = 0; i < 3; i++) {
        REQUIRE_OK(spc_hmac_sha256(keys[i], 16, ctr, 16, kk));
        for (size_t j = 0; j < i; j++) {
            REQUIRE_OK(spc_hmac_sha256(keys[j + 1], 16, ctr, 16, step));
            REQUIRE_OK(spc_hmac_sha256(step, 32, kk, 32, next)); /* outputs must not overlap inputs */
            memcpy(kk, next, 32);
        }
        REQUIRE_OK(spc_hmac_sha256(kk, 32, data, len, want));
        CHECK(memcmp(out + 32 * i, want, 32) == 0);
    }
    REQUIRE_OK(spc_authcode_compute(keys, 1, ctr, NULL, 0, out, 32));
    CHECK_EQ(spc_authcode_compute(keys, 0, ctr, data, len, out, 0), SPC_E_ARGUMENT);
    CHECK_EQ(spc_authcode_compute(keys, 4, ctr, data, len, out, 128), SPC_E_ARGUMENT);
    CHECK_EQ(spc_authcode_compute(keys, 2, ctr, data, len, out, 96), SPC_E_ARGUMENT);
    CHECK_EQ(spc_authcode_compute(keys, 1, ctr, NULL, 5, out, 32), SPC_E_ARGUMENT);
    const uint8_t *holes[] = {k1, NULL};
    CHECK_EQ(spc_authcode_compute(holes, 2, ctr, data, len, out, 64), SPC_E_ARGUMENT);
    CHECK(all_zero(out, 64));
}

/* The order n of P-256, and n - 1 (the largest valid scalar). */
static const char *order_hex = "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551";

static void test_p256_keys_and_ecdh(void) {
    uint8_t a[33], b[32], pa[65], pb[65], s1[32], s2[32], comp[33];
    REQUIRE_OK(spc_p256_keypair_generate(a + 1, pa));
    REQUIRE_OK(spc_p256_keypair_generate(b, pb));
    CHECK_EQ(pa[0], 0x04);
    CHECK_EQ(spc_p256_public_check(pa, 65), SPC_OK);
    comp[0] = (uint8_t)(0x02 | (pa[64] & 1));
    memcpy(comp + 1, pa + 1, 32);
    CHECK_EQ(spc_p256_public_check(comp, 33), SPC_OK);
    REQUIRE_OK(spc_p256_ecdh(a + 1, 32, pb, 65, s1));
    REQUIRE_OK(spc_p256_ecdh(b, 32, comp, 33, s2));
    CHECK(memcmp(s1, s2, 32) == 0);
    a[0] = 0; /* a Java BigInteger's sign byte */
    REQUIRE_OK(spc_p256_ecdh(a, 33, pb, 65, s2));
    CHECK(memcmp(s1, s2, 32) == 0);
    /* Invalid public keys. */
    uint8_t bad[65];
    memcpy(bad, pa, 65);
    bad[64] ^= 1; /* off the curve */
    CHECK_EQ(spc_p256_public_check(bad, 65), SPC_E_KEY);
    CHECK_EQ(spc_p256_public_check(pa, 64), SPC_E_KEY);
    CHECK_EQ(spc_p256_public_check(NULL, 65), SPC_E_ARGUMENT);
    memset(bad, 0, 65);
    bad[0] = 0x04;
    CHECK_EQ(spc_p256_public_check(bad, 65), SPC_E_KEY);
    CHECK_EQ(spc_p256_ecdh(b, 32, bad, 65, s2), SPC_E_KEY);
    CHECK(all_zero(s2, 32));
    CHECK_EQ(spc_p256_ecdh(b, 32, NULL, 65, s2), SPC_E_KEY);
    /* Scalars outside 1 ... n-1 and wrong encodings. */
    uint8_t d[33];
    memset(d, 0, 32);
    CHECK_EQ(spc_p256_ecdh(d, 32, pb, 65, s2), SPC_E_KEY);
    unhex(order_hex, d);
    CHECK_EQ(spc_p256_ecdh(d, 32, pb, 65, s2), SPC_E_KEY);
    d[31] -= 1; /* n - 1 */
    CHECK_EQ(spc_p256_ecdh(d, 32, pb, 65, s2), SPC_OK);
    memset(d, 0xFF, 32);
    CHECK_EQ(spc_p256_ecdh(d, 32, pb, 65, s2), SPC_E_KEY);
    a[0] = 1; /* 33 bytes without the zero sign byte */
    CHECK_EQ(spc_p256_ecdh(a, 33, pb, 65, s2), SPC_E_KEY);
    CHECK_EQ(spc_p256_ecdh(b, 31, pb, 65, s2), SPC_E_KEY);
    CHECK_EQ(spc_p256_ecdh(NULL, 32, pb, 65, s2), SPC_E_KEY);
}

static void test_p256_ecdsa(void) {
    uint8_t priv[32], pub[65], sig[SPC_P256_SIGNATURE_MAX];
    size_t sig_len = 0;
    int valid = 0;
    const uint8_t *msg = (const uint8_t *)"activation status";
    REQUIRE_OK(spc_p256_keypair_generate(priv, pub));
    REQUIRE_OK(spc_p256_ecdsa_sign(priv, 32, msg, 17, sig, &sig_len));
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
    REQUIRE_OK(spc_p256_ecdsa_sign(priv, 32, NULL, 0, sig, &sig_len));
    REQUIRE_OK(spc_p256_ecdsa_verify(pub, 65, NULL, 0, sig, sig_len, &valid));
    CHECK_EQ(valid, 1);
    /* Guards. */
    CHECK_EQ(spc_p256_ecdsa_sign(priv, 32, NULL, 3, sig, &sig_len), SPC_E_ARGUMENT);
    CHECK_EQ(sig_len, 0);
    uint8_t zero[32] = {0};
    CHECK_EQ(spc_p256_ecdsa_sign(zero, 32, msg, 17, sig, &sig_len), SPC_E_KEY);
    CHECK_EQ(spc_p256_ecdsa_verify(pub, 65, NULL, 3, sig, 8, &valid), SPC_E_ARGUMENT);
    CHECK_EQ(spc_p256_ecdsa_verify(pub, 65, msg, 17, NULL, 8, &valid), SPC_E_ARGUMENT);
    CHECK_EQ(spc_p256_ecdsa_verify(pub, 33, msg, 17, sig, 8, &valid), SPC_E_KEY);
    CHECK_EQ(spc_p256_ecdsa_verify(NULL, 65, msg, 17, sig, 8, &valid), SPC_E_KEY);
}

static void test_knowledge_key(void) {
    uint8_t salt[16], key[16], wrapped[16], back[16];
    memset(salt, 0x5A, 16);
    for (int i = 0; i < 16; i++) key[i] = (uint8_t)(0xC0 + i);
    const uint8_t *pin = (const uint8_t *)"482915";
    REQUIRE_OK(spc_knowledge_key_wrap(pin, 6, salt, 64, 2, key, wrapped));
    CHECK(memcmp(wrapped, key, 16) != 0);
    REQUIRE_OK(spc_knowledge_key_unwrap(pin, 6, salt, 64, 2, wrapped, back));
    CHECK(memcmp(back, key, 16) == 0);
    /* A wrong PIN or another cost is a different key, never a status. */
    REQUIRE_OK(spc_knowledge_key_unwrap((const uint8_t *)"482916", 6, salt, 64, 2, wrapped, back));
    CHECK(memcmp(back, key, 16) != 0);
    REQUIRE_OK(spc_knowledge_key_unwrap(pin, 6, salt, 64, 1, wrapped, back));
    CHECK(memcmp(back, key, 16) != 0);
    /* Guards, each leaving the output zero. */
    CHECK_EQ(spc_knowledge_key_wrap(NULL, 6, salt, 64, 2, key, back), SPC_E_ARGUMENT);
    CHECK(all_zero(back, 16));
    CHECK_EQ(spc_knowledge_key_wrap(pin, 0, salt, 64, 2, key, back), SPC_E_ARGUMENT);
    CHECK_EQ(spc_knowledge_key_wrap(pin, 6, salt, SPC_KNOWLEDGE_MEMORY_MIN_KIB - 1, 2, key, back), SPC_E_ARGUMENT);
    CHECK_EQ(spc_knowledge_key_wrap(pin, 6, salt, SPC_KNOWLEDGE_MEMORY_MAX_KIB + 1, 2, key, back), SPC_E_ARGUMENT);
    CHECK_EQ(spc_knowledge_key_unwrap(pin, 6, salt, 64, 0, wrapped, back), SPC_E_ARGUMENT);
    CHECK_EQ(spc_knowledge_key_unwrap(pin, 6, salt, 64, SPC_KNOWLEDGE_ITERATIONS_MAX + 1, wrapped, back),
             SPC_E_ARGUMENT);
    CHECK(all_zero(back, 16));
}

int main(void) {
    RUN(test_uninitialised);
    REQUIRE_OK(spc_init());
    CHECK_EQ(spc_initialized(), 1);
    RUN(test_aes128);
    RUN(test_sha256_hmac);
    RUN(test_authcode_chain);
    RUN(test_p256_keys_and_ecdh);
    RUN(test_p256_ecdsa);
    RUN(test_knowledge_key);
    return check_summary("c-protocol");
}
