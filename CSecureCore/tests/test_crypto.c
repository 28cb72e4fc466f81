/* test_crypto.c — KDF and AEAD of the C core against published vectors. */
#define _GNU_SOURCE
#include "secure_core.h"
#include "check.h"

#include <string.h>

#include <sodium.h>

/* 1 when the secure buffer holds exactly `hex`. */
static int buffer_is(spc_buffer *b, const char *hex) {
    uint8_t want[256];
    size_t n = unhex(hex, want);
    uint8_t *p;
    if (spc_buffer_size(b) != n || spc_buffer_open(b, &p) != SPC_OK) return 0;
    int same = memcmp(p, want, n) == 0;
    spc_buffer_close(b);
    return same;
}

static spc_buffer *buffer_from(const uint8_t *bytes, size_t n) {
    spc_buffer *b;
    REQUIRE_OK(spc_buffer_new(n, &b));
    uint8_t *p;
    REQUIRE_OK(spc_buffer_open(b, &p));
    memcpy(p, bytes, n);
    spc_buffer_close(b);
    return b;
}

static spc_kdf_limits limits(void) {
    spc_kdf_limits l;
    REQUIRE_OK(spc_kdf_limits_default(&l));
    return l;
}

/* RFC 9106 section 5.3: Argon2id with secret and associated data. */
static void test_argon2id_rfc9106_vector(void) {
    uint8_t pw[32], salt[16], secret[8], ad[12];
    memset(pw, 1, sizeof pw), memset(salt, 2, sizeof salt), memset(secret, 3, sizeof secret), memset(ad, 4, sizeof ad);
    spc_argon2_input in = {pw, 32, salt, 16, secret, 8, ad, 12};
    spc_argon2_params p = {3, 32, 4};
    spc_kdf_limits l = limits();
    spc_buffer *out;
    REQUIRE_OK(spc_buffer_new(32, &out));
    int used = 0;
    REQUIRE_OK(spc_kdf_argon2id(&in, &p, &l, SPC_ARGON2_AUTO, out, &used));
    CHECK_EQ(used, SPC_ARGON2_REFERENCE);
    CHECK(buffer_is(out, "0d640df58d78766c08c037a34a8b53c9d01ef0452d75b65eb52520e96b01e659"));
    /* libsodium cannot take a secret or AD: forcing it is refused, not ignored. */
    CHECK_EQ(spc_kdf_argon2id(&in, &p, &l, SPC_ARGON2_LIBSODIUM, out, &used), SPC_E_UNSUPPORTED);
    spc_buffer_free(out);
}

/* Both backends agree wherever both apply (p = 1, 16-byte salt). */
static void test_argon2id_backends_agree(void) {
    const spc_argon2_params sets[] = {{1, 8, 1}, {2, 64, 1}, {3, 256, 1}, {1, 1024, 1}, {4, 4096, 1}};
    const char *pw = "correct horse battery staple";
    uint8_t salt[16];
    memcpy(salt, "0123456789abcdef", 16);
    spc_kdf_limits l = limits();
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        for (size_t len = 16; len <= 64; len += 48) {
            spc_argon2_input in = {(const uint8_t *)pw, strlen(pw), salt, 16, NULL, 0, NULL, 0};
            spc_buffer *a, *b;
            REQUIRE_OK(spc_buffer_new(len, &a));
            REQUIRE_OK(spc_buffer_new(len, &b));
            int ua = 0, ub = 0;
            REQUIRE_OK(spc_kdf_argon2id(&in, &sets[i], &l, SPC_ARGON2_LIBSODIUM, a, &ua));
            REQUIRE_OK(spc_kdf_argon2id(&in, &sets[i], &l, SPC_ARGON2_REFERENCE, b, &ub));
            CHECK_EQ(ua, SPC_ARGON2_LIBSODIUM);
            CHECK_EQ(ub, SPC_ARGON2_REFERENCE);
            CHECK_EQ(buffer_equal(a, b), 1);
            spc_buffer_free(a);
            spc_buffer_free(b);
        }
    }
}

static void test_argon2id_parameter_checks(void) {
    spc_kdf_limits l = {1024, 10};
    const spc_argon2_params ok = {2, 64, 1};
    CHECK_EQ(spc_kdf_argon2id_check(&ok, &l, 16, 32), SPC_OK);
    spc_argon2_params p = ok;
    p.t_cost = 0;
    CHECK_EQ(spc_kdf_argon2id_check(&p, &l, 16, 32), SPC_E_KDF_ITERATIONS);
    p.t_cost = 11;
    CHECK_EQ(spc_kdf_argon2id_check(&p, &l, 16, 32), SPC_E_KDF_ITERATIONS);
    p = ok, p.parallelism = 0;
    CHECK_EQ(spc_kdf_argon2id_check(&p, &l, 16, 32), SPC_E_KDF_PARALLELISM);
    p = ok, p.parallelism = 1u << 24;
    CHECK_EQ(spc_kdf_argon2id_check(&p, &l, 16, 32), SPC_E_KDF_PARALLELISM);
    p = ok, p.parallelism = 4, p.m_cost_kib = 31;
    CHECK_EQ(spc_kdf_argon2id_check(&p, &l, 16, 32), SPC_E_KDF_MEMORY);
    CHECK_EQ(spc_kdf_argon2id_check(&ok, &l, 15, 32), SPC_E_KDF_SALT);
    CHECK_EQ(spc_kdf_argon2id_check(&ok, &l, 16, 15), SPC_E_KDF_OUTPUT);
    CHECK_EQ(spc_kdf_argon2id_check(&ok, &l, 16, 65), SPC_E_KDF_OUTPUT);
    p = ok, p.m_cost_kib = 1025;
    CHECK_EQ(spc_kdf_argon2id_check(&p, &l, 16, 32), SPC_E_KDF_CEILING);
    /* The derivation itself refuses before any work, and leaves `out` zero. */
    spc_buffer *out;
    REQUIRE_OK(spc_buffer_new(32, &out));
    uint8_t salt[16] = {0};
    spc_argon2_input in = {(const uint8_t *)"pw", 2, salt, 16, NULL, 0, NULL, 0};
    p = ok, p.m_cost_kib = 0xFFFFFFFF;
    CHECK_EQ(spc_kdf_argon2id(&in, &p, &l, SPC_ARGON2_AUTO, out, NULL), SPC_E_KDF_CEILING);
    CHECK(buffer_is(out, "0000000000000000000000000000000000000000000000000000000000000000"));
    spc_buffer_free(out);
    spc_kdf_limits d;
    REQUIRE_OK(spc_kdf_limits_default(&d));
    CHECK(d.max_m_cost_kib > 0 && d.max_m_cost_kib <= (uint64_t)4 * 1024 * 1024);
}

/* RFC 7914 section 11: PBKDF2-HMAC-SHA256. */
static void test_pbkdf2_vectors(void) {
    spc_buffer *out;
    REQUIRE_OK(spc_buffer_new(64, &out));
    REQUIRE_OK(spc_kdf_pbkdf2_sha256((const uint8_t *)"passwd", 6, (const uint8_t *)"salt", 4, 1, out));
    CHECK(buffer_is(out, "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"
                         "49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783"));
    REQUIRE_OK(spc_kdf_pbkdf2_sha256((const uint8_t *)"Password", 8, (const uint8_t *)"NaCl", 4, 80000, out));
    CHECK(buffer_is(out, "4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56"
                         "a1d425a1225833549adb841b51c9b3176a272bdebba1d078478f62b397f33c8d"));
    CHECK_EQ(spc_kdf_pbkdf2_sha256((const uint8_t *)"p", 1, (const uint8_t *)"s", 1, 0, out), SPC_E_KDF_ITERATIONS);
    CHECK_EQ(spc_kdf_pbkdf2_sha256((const uint8_t *)"p", 1, NULL, 0, 1, out), SPC_E_KDF_SALT);
    spc_buffer_free(out);
}

/* draft-irtf-cfrg-xchacha-03, appendix A.3.1. */
static void test_xchacha_vector(void) {
    uint8_t key[32], nonce[24], ad[12], ct[130];
    unhex("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f", key);
    unhex("404142434445464748494a4b4c4d4e4f5051525354555657", nonce);
    unhex("50515253c0c1c2c3c4c5c6c7", ad);
    const char *msg = "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, "
                      "sunscreen would be it.";
    spc_buffer *k = buffer_from(key, 32), *m = buffer_from((const uint8_t *)msg, strlen(msg)), *back;
    REQUIRE_OK(spc_aead_seal(SPC_AEAD_XCHACHA20POLY1305, k, nonce, 24, m, ad, 12, ct));
    uint8_t want[130];
    unhex("bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb"
          "731c7f1b0b4aa6440bf3a82f4eda7e39ae64c6708c54c216cb96b72e1213b452"
          "2f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565d3fff9"
          "21f9664c97637da9768812f615c68b13b52ec0875924c1c7987947deafd8780acf49",
          want);
    CHECK(memcmp(ct, want, 130) == 0);
    REQUIRE_OK(spc_aead_open(SPC_AEAD_XCHACHA20POLY1305, k, nonce, 24, ct, 130, ad, 12, &back));
    CHECK_EQ(buffer_equal(back, m), 1);
    spc_buffer_free(back);
    /* Any flipped bit, in ciphertext, tag or AD, fails without output. */
    for (size_t i = 0; i < 130; i += 13) {
        ct[i] ^= 1;
        CHECK_EQ(spc_aead_open(SPC_AEAD_XCHACHA20POLY1305, k, nonce, 24, ct, 130, ad, 12, &back), SPC_E_AEAD_AUTH);
        CHECK(back == NULL);
        ct[i] ^= 1;
    }
    ad[0] ^= 1;
    CHECK_EQ(spc_aead_open(SPC_AEAD_XCHACHA20POLY1305, k, nonce, 24, ct, 130, ad, 12, &back), SPC_E_AEAD_AUTH);
    CHECK_EQ(spc_aead_open(SPC_AEAD_XCHACHA20POLY1305, k, nonce, 24, ct, 15, ad, 12, &back), SPC_E_AEAD_AUTH);
    CHECK_EQ(spc_aead_open(SPC_AEAD_XCHACHA20POLY1305, k, nonce, 12, ct, 130, ad, 12, &back), SPC_E_ARGUMENT);
    CHECK_EQ(spc_aead_open(99, k, nonce, 24, ct, 130, ad, 12, &back), SPC_E_ARGUMENT);
    spc_buffer_free(k);
    spc_buffer_free(m);
}

/* The GCM specification (McGrew and Viega), test case 16: AES-256 with AD. */
static void test_aes256gcm_vector(void) {
    if (!spc_aead_available(SPC_AEAD_AES256GCM)) {
        uint8_t z[32] = {0}, n[12] = {0}, c[32];
        spc_buffer *k = buffer_from(z, 32), *m = buffer_from(z, 1);
        CHECK_EQ(spc_aead_seal(SPC_AEAD_AES256GCM, k, n, 12, m, NULL, 0, c), SPC_E_UNSUPPORTED);
        spc_buffer_free(k), spc_buffer_free(m);
        printf("  (AES-256-GCM unavailable on this CPU: checked that it is refused)\n");
        return;
    }
    uint8_t key[32], nonce[12], ad[20], pt[60], ct[76], want[76];
    unhex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", key);
    unhex("cafebabefacedbaddecaf888", nonce);
    unhex("feedfacedeadbeeffeedfacedeadbeefabaddad2", ad);
    unhex("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
          "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
          pt);
    unhex("522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
          "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662"
          "76fc6ece0f4e1768cddf8853bb2d551b",
          want);
    spc_buffer *k = buffer_from(key, 32), *m = buffer_from(pt, 60), *back;
    REQUIRE_OK(spc_aead_seal(SPC_AEAD_AES256GCM, k, nonce, 12, m, ad, 20, ct));
    CHECK(memcmp(ct, want, 76) == 0);
    REQUIRE_OK(spc_aead_open(SPC_AEAD_AES256GCM, k, nonce, 12, ct, 76, ad, 20, &back));
    CHECK_EQ(buffer_equal(back, m), 1);
    spc_buffer_free(back);
    ct[75] ^= 0x80;
    CHECK_EQ(spc_aead_open(SPC_AEAD_AES256GCM, k, nonce, 12, ct, 76, ad, 20, &back), SPC_E_AEAD_AUTH);
    spc_buffer_free(k);
    spc_buffer_free(m);
}

static void test_aead_empty_message_and_wrong_key(void) {
    uint8_t nonce[24] = {1}, ct[16];
    spc_buffer *k, *k2, *m, *back;
    REQUIRE_OK(spc_buffer_new(32, &k));
    REQUIRE_OK(spc_buffer_randomize(k));
    REQUIRE_OK(spc_buffer_new(32, &k2));
    REQUIRE_OK(spc_buffer_randomize(k2));
    REQUIRE_OK(spc_buffer_new(1, &m));
    uint8_t ct1[17];
    REQUIRE_OK(spc_aead_seal(SPC_AEAD_XCHACHA20POLY1305, k, nonce, 24, m, NULL, 0, ct1));
    CHECK_EQ(spc_aead_open(SPC_AEAD_XCHACHA20POLY1305, k2, nonce, 24, ct1, 17, NULL, 0, &back), SPC_E_AEAD_AUTH);
    REQUIRE_OK(spc_aead_open(SPC_AEAD_XCHACHA20POLY1305, k, nonce, 24, ct1, 17, NULL, 0, &back));
    CHECK_EQ(spc_buffer_size(back), 1);
    spc_buffer_free(back);
    /* The empty message: a tag-only ciphertext that opens to nothing. */
    REQUIRE_OK(spc_aead_seal(SPC_AEAD_XCHACHA20POLY1305, k, nonce, 24, NULL, NULL, 0, ct));
    REQUIRE_OK(spc_aead_open(SPC_AEAD_XCHACHA20POLY1305, k, nonce, 24, ct, 16, NULL, 0, &back));
    CHECK(back == NULL);
    ct[0] ^= 1;
    CHECK_EQ(spc_aead_open(SPC_AEAD_XCHACHA20POLY1305, k, nonce, 24, ct, 16, NULL, 0, &back), SPC_E_AEAD_AUTH);
    spc_buffer *short_key;
    REQUIRE_OK(spc_buffer_new(16, &short_key));
    CHECK_EQ(spc_aead_seal(SPC_AEAD_XCHACHA20POLY1305, short_key, nonce, 24, m, NULL, 0, ct1), SPC_E_ARGUMENT);
    spc_buffer_free(short_key);
    spc_buffer_free(k), spc_buffer_free(k2), spc_buffer_free(m);
}

/* BLAKE2b-256 (RFC 7693) of public data, checked against an independent implementation. */
static void test_digest(void) {
    uint8_t out[SPC_DIGEST_BYTES], want[SPC_DIGEST_BYTES];
    REQUIRE_OK(spc_digest((const uint8_t *)"abc", 3, out));
    unhex("bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319", want);
    CHECK(memcmp(out, want, sizeof out) == 0);
    REQUIRE_OK(spc_digest(NULL, 0, out));
    unhex("0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8", want);
    CHECK(memcmp(out, want, sizeof out) == 0);
}

/* An unknown backend is refused after the parameters are checked. */
static void test_argon2id_unknown_backend(void) {
    uint8_t salt[16] = {0};
    spc_argon2_input in = {(const uint8_t *)"pw", 2, salt, 16, NULL, 0, NULL, 0};
    spc_argon2_params p = {1, 8, 1};
    spc_kdf_limits l = limits();
    spc_buffer *out;
    REQUIRE_OK(spc_buffer_new(32, &out));
    int used = 7;
    CHECK_EQ(spc_kdf_argon2id(&in, &p, &l, 99, out, &used), SPC_E_ARGUMENT);
    CHECK_EQ(used, 0);
    spc_buffer_free(out);
}


/* ---- RFC 9497 OPRF (ristretto255-SHA512, modeOPRF), vectors read from their file ---- */

static const char *oprf_vectors = "Tests/Vectors/oprf/rfc9497-ristretto255-sha512-oprf.txt";

/* One "Key = hex" line of the vector file into `out` (at most cap bytes); returns the length, 0 if absent. */
static size_t oprf_field(const char *line, const char *key, uint8_t *out, size_t cap) {
    size_t klen = strlen(key);
    if (strncmp(line, key, klen) != 0 || strncmp(line + klen, " = ", 3) != 0) return 0;
    const char *hex = line + klen + 3;
    size_t n = strcspn(hex, "\r\n");
    if (n % 2 != 0 || n / 2 > cap) return 0;
    char tmp[512];
    memcpy(tmp, hex, n), tmp[n] = 0;
    return unhex(tmp, out);
}

static int buffer_equals(spc_buffer *b, const uint8_t *want, size_t n) {
    uint8_t *p;
    if (spc_buffer_size(b) != n || spc_buffer_open(b, &p) != SPC_OK) return 0;
    int same = memcmp(p, want, n) == 0;
    spc_buffer_close(b);
    return same;
}

/* One vector: Blind with the given blind, BlindEvaluate with the derived key, Finalize. */
static int oprf_check_vector(spc_buffer *sk, const uint8_t *input_bytes, size_t input_len, const uint8_t *blind_bytes,
                             const uint8_t *blinded_want, const uint8_t *evaluated_want, const uint8_t *output_want) {
    spc_buffer *input = buffer_from(input_bytes, input_len), *blind = buffer_from(blind_bytes, 32), *out;
    REQUIRE_OK(spc_buffer_new(SPC_OPRF_OUTPUT_BYTES, &out));
    uint8_t blinded[32], evaluated[32];
    int before = check_failed;
    CHECK_EQ(spc_oprf_blind(input, blind, blinded), SPC_OK);
    CHECK(memcmp(blinded, blinded_want, 32) == 0);
    CHECK_EQ(spc_oprf_blind_evaluate(sk, blinded, evaluated), SPC_OK);
    CHECK(memcmp(evaluated, evaluated_want, 32) == 0);
    CHECK_EQ(spc_oprf_finalize(input, blind, evaluated, out), SPC_OK);
    CHECK(buffer_equals(out, output_want, 64));
    /* A fresh random blind gives another blinded element and the same output. */
    REQUIRE_OK(spc_oprf_random_scalar(blind));
    CHECK_EQ(spc_oprf_blind(input, blind, blinded), SPC_OK);
    CHECK(memcmp(blinded, blinded_want, 32) != 0);
    CHECK_EQ(spc_oprf_blind_evaluate(sk, blinded, evaluated), SPC_OK);
    CHECK_EQ(spc_oprf_finalize(input, blind, evaluated, out), SPC_OK);
    CHECK(buffer_equals(out, output_want, 64));
    spc_buffer_free(input), spc_buffer_free(blind), spc_buffer_free(out);
    return check_failed == before;
}

static void test_oprf_rfc9497_vectors(void) {
    FILE *f = fopen(oprf_vectors, "r");
    CHECK(f != NULL);
    if (f == NULL) return;
    char line[512];
    uint8_t seed[32], info[64], skm[32], input[64], blind[32], blinded[32], evaluated[32], output[64];
    size_t info_len = 0, input_len = 0, have = 0;
    int keys = 0, vectors = 0, passed = 0;
    spc_buffer *sk = NULL;
    while (fgets(line, sizeof line, f) != NULL) {
        size_t n;
        if (oprf_field(line, "Seed", seed, 32) == 32) have |= 1;
        if ((n = oprf_field(line, "KeyInfo", info, sizeof info)) > 0) info_len = n, have |= 2;
        if (oprf_field(line, "skSm", skm, 32) == 32 && have == 3) {
            spc_buffer *s = buffer_from(seed, 32);
            if (sk != NULL) spc_buffer_free(sk);
            REQUIRE_OK(spc_buffer_new(32, &sk));
            CHECK_EQ(spc_oprf_derive_key(s, info, info_len, sk), SPC_OK);
            CHECK(buffer_equals(sk, skm, 32));
            spc_buffer_free(s);
            keys++, have = 0;
        }
        if ((n = oprf_field(line, "Input", input, sizeof input)) > 0) input_len = n, have = 4;
        if (oprf_field(line, "Blind", blind, 32) == 32) have |= 8;
        if (oprf_field(line, "BlindedElement", blinded, 32) == 32) have |= 16;
        if (oprf_field(line, "EvaluationElement", evaluated, 32) == 32) have |= 32;
        if (oprf_field(line, "Output", output, 64) == 64 && have == 60 && sk != NULL) {
            vectors++;
            passed += oprf_check_vector(sk, input, input_len, blind, blinded, evaluated, output);
            have = 0;
        }
    }
    fclose(f);
    printf("  RFC 9497 ristretto255-SHA512 OPRF: %d key derivation(s), %d/%d vectors passed\n", keys, passed, vectors);
    CHECK_EQ(keys, 1);
    CHECK_EQ(vectors, 2);
    CHECK_EQ(passed, vectors);
    if (sk != NULL) spc_buffer_free(sk);
}

/* Bad elements and sizes are refused with SPC_E_ARGUMENT and cleared outputs. */
static void test_oprf_rejects(void) {
    uint8_t seed[32] = {1}, bad[32], out32[32];
    spc_buffer *s = buffer_from(seed, 32), *sk, *short_key, *in = buffer_from((const uint8_t *)"1234", 4), *blind,
               *out, *wrong_out;
    REQUIRE_OK(spc_buffer_new(32, &sk));
    REQUIRE_OK(spc_buffer_new(16, &short_key));
    REQUIRE_OK(spc_buffer_new(32, &blind));
    REQUIRE_OK(spc_buffer_new(64, &out));
    REQUIRE_OK(spc_buffer_new(32, &wrong_out));
    REQUIRE_OK(spc_oprf_derive_key(s, (const uint8_t *)"", 0, sk));
    CHECK_EQ(spc_oprf_derive_key(s, (const uint8_t *)"", 0x10000, sk), SPC_E_ARGUMENT);
    CHECK_EQ(spc_oprf_derive_key(short_key, (const uint8_t *)"", 0, sk), SPC_E_ARGUMENT);
    CHECK_EQ(spc_oprf_random_scalar(short_key), SPC_E_ARGUMENT);
    REQUIRE_OK(spc_oprf_random_scalar(blind));
    CHECK_EQ(spc_oprf_blind(in, short_key, out32), SPC_E_ARGUMENT);
    memset(bad, 0, sizeof bad); /* the identity */
    memset(out32, 0x55, sizeof out32);
    CHECK_EQ(spc_oprf_blind_evaluate(sk, bad, out32), SPC_E_ARGUMENT);
    CHECK(sodium_is_zero(out32, 32));
    memset(bad, 0xff, sizeof bad); /* not a canonical encoding */
    CHECK_EQ(spc_oprf_blind_evaluate(sk, bad, out32), SPC_E_ARGUMENT);
    CHECK_EQ(spc_oprf_finalize(in, blind, bad, out), SPC_E_ARGUMENT);
    uint8_t blinded[32];
    REQUIRE_OK(spc_oprf_blind(in, blind, blinded));
    CHECK_EQ(spc_oprf_blind_evaluate(short_key, blinded, out32), SPC_E_ARGUMENT);
    REQUIRE_OK(spc_oprf_blind_evaluate(sk, blinded, out32));
    CHECK_EQ(spc_oprf_finalize(in, blind, out32, wrong_out), SPC_E_ARGUMENT);
    spc_buffer *zero_blind;
    REQUIRE_OK(spc_buffer_new(32, &zero_blind)); /* a zero scalar has no inverse: refused, output zero */
    CHECK_EQ(spc_oprf_finalize(in, zero_blind, out32, out), SPC_E_ARGUMENT);
    uint8_t z[64] = {0};
    CHECK(buffer_equals(out, z, 64));
    spc_buffer_free(s), spc_buffer_free(sk), spc_buffer_free(short_key), spc_buffer_free(in);
    spc_buffer_free(blind), spc_buffer_free(out), spc_buffer_free(wrong_out), spc_buffer_free(zero_blind);
}

int main(void) {
    REQUIRE_OK(spc_init());
    RUN(test_argon2id_rfc9106_vector);
    RUN(test_argon2id_backends_agree);
    RUN(test_argon2id_parameter_checks);
    RUN(test_pbkdf2_vectors);
    RUN(test_xchacha_vector);
    RUN(test_aes256gcm_vector);
    RUN(test_aead_empty_message_and_wrong_key);
    RUN(test_digest);
    RUN(test_argon2id_unknown_backend);
    RUN(test_oprf_rfc9497_vectors);
    RUN(test_oprf_rejects);
    return check_summary("c-crypto");
}
