/* test_v4.c — the PowerAuth V4 primitives (CProtocolCrypto/v4.c) at the C level:
 * upstream's V4 vector files (Tests/Vectors/powerauth/v4, see its README.md),
 * published NIST vectors, round trips and the argument guards. Every vector
 * file prints how many of its cases ran. */
#define _GNU_SOURCE
#include "protocol_crypto.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

/* The directory of the V4 vector files, relative to the repository root (make runs there). */
static const char *vector_dir = "Tests/Vectors/powerauth/v4";

/* ---- secure buffers in and out ---- */

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

static int buffer_is(spc_buffer *b, const uint8_t *want, size_t n) {
    uint8_t got[128];
    if (spc_buffer_size(b) != n || n > sizeof got) return 0;
    read_buffer(b, got);
    return memcmp(got, want, n) == 0;
}

static int all_zero(const uint8_t *p, size_t n) {
    uint8_t acc = 0;
    for (size_t i = 0; i < n; i++) acc |= p[i];
    return acc == 0;
}

static spc_password *password_of(const char *utf8) {
    spc_password *pw;
    REQUIRE_OK(spc_password_new(&pw));
    /* Code points from UTF-8 (the vector passwords are ASCII; any UTF-8 works). */
    for (size_t i = 0; utf8[i] != 0; i++) REQUIRE_OK(spc_password_add(pw, (uint8_t)utf8[i]));
    return pw;
}

/* ---- the vector files (the approach of test_protocol.c: plain string search) ---- */

static char *read_text(const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", vector_dir, name);
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        printf("  cannot read %s\n", path);
        return NULL;
    }
    char *text = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        if (size > 0 && fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)size + 1)) != NULL) {
            if (fread(text, 1, (size_t)size, f) == (size_t)size) text[size] = 0;
            else free(text), text = NULL;
        }
    }
    fclose(f);
    return text;
}

/* The string value of "key" at or after `from`, before `limit`, in either spacing
 * ("k": "v" or "k" : "v"); into `out` (cap bytes). 1 if found. */
static int json_text(const char *from, const char *limit, const char *key, char *out, size_t cap) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\"", key);
    const char *at = strstr(from, pattern);
    if (at == NULL || at >= limit) return 0;
    at += strlen(pattern);
    while (*at == ' ' || *at == ':') at++;
    if (*at++ != '"') return 0;
    const char *end = strchr(at, '"');
    if (end == NULL || (size_t)(end - at) >= cap) return 0;
    memcpy(out, at, (size_t)(end - at));
    out[end - at] = 0;
    return 1;
}

/* A Base64 (or, with hex set, hex) field as bytes: the length, or -1. */
static long json_bytes(const char *from, const char *limit, const char *key, int hex, uint8_t *out, size_t cap) {
    size_t text_cap = 2 * cap + 8;
    char *text = malloc(text_cap);
    long n = -1;
    if (text != NULL && json_text(from, limit, key, text, text_cap)) {
        size_t len = 0;
        if (hex) n = sodium_hex2bin(out, cap, text, strlen(text), NULL, &len, NULL) == 0 ? (long)len : -1;
        else
            n = sodium_base642bin(out, cap, text, strlen(text), NULL, &len, NULL, sodium_base64_VARIANT_ORIGINAL) == 0
                    ? (long)len
                    : -1;
    }
    free(text);
    return n;
}

/* Calls `each` on every object of `file` that starts at an occurrence of "`key`";
 * prints and checks the count. `label` names the file (and says what it checks). */
typedef void (*case_fn)(const char *c, const char *limit);

static void each_case(const char *file, const char *key, const char *label, case_fn each) {
    char *text = read_text(file);
    CHECK(text != NULL);
    if (text == NULL) return;
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\"", key);
    size_t ran = 0, total = 0;
    for (const char *c = strstr(text, pattern); c != NULL; c = strstr(c + 1, pattern)) total++;
    int failed_before = check_failed;
    for (const char *c = strstr(text, pattern); c != NULL; ran++) {
        const char *next = strstr(c + 1, pattern);
        each(c, next != NULL ? next : c + strlen(c));
        c = next;
    }
    printf("  %s%s: %zu of %zu cases ran, %s\n", file, label, ran, total,
           check_failed == failed_before ? "all pass" : "FAILURES");
    CHECK(ran == total && ran > 0);
    free(text);
}

/* ---- before spc_init ---- */

static void test_uninitialised(void) {
    uint8_t in[64] = {1}, out[128], pub[97], sig[96];
    int valid = 9;
    spc_buffer *key = (spc_buffer *)2, *dst = (spc_buffer *)3;
    spc_password *pw = (spc_password *)4;
    memset(out, 0xEE, sizeof out);
    CHECK_EQ(spc_sha3_256(in, 3, out), SPC_E_INIT);
    CHECK(all_zero(out, 32));
    CHECK_EQ(spc_sha3_384(in, 3, out), SPC_E_INIT);
    CHECK_EQ(spc_kmac256(key, in, 3, in, 3, out, 32), SPC_E_INIT);
    CHECK_EQ(spc_v4_kdf(key, in, 3, in, 3, dst), SPC_E_INIT);
    CHECK_EQ(spc_v4_password_kdf(pw, in, 32, dst), SPC_E_INIT);
    CHECK_EQ(spc_aes256_ctr(key, in, in, 16, out), SPC_E_INIT);
    CHECK_EQ(spc_v4_aead_seal(key, in, 3, in, in, 3, NULL, out, 44), SPC_E_INIT);
    CHECK_EQ(spc_v4_aead_open(key, in, 3, in, 3, in, 44, NULL), SPC_E_INIT);
    CHECK_EQ(spc_p384_public_check(pub, 97), SPC_E_INIT);
    CHECK_EQ(spc_p384_keypair_generate(key, pub), SPC_E_INIT);
    CHECK_EQ(spc_p384_public_from_private(key, pub), SPC_E_INIT);
    CHECK_EQ(spc_p384_ecdh(key, pub, 97, dst), SPC_E_INIT);
    CHECK_EQ(spc_p384_ecdsa_sign(key, in, 3, sig), SPC_E_INIT);
    CHECK_EQ(spc_p384_ecdsa_verify(pub, 97, in, 3, sig, 96, &valid), SPC_E_INIT);
    CHECK_EQ(valid, 0);
    CHECK_EQ(spc_dhkem_p384_encap(pub, 97, pub, dst), SPC_E_INIT);
    CHECK_EQ(spc_dhkem_p384_decap(key, pub, 97, dst), SPC_E_INIT);
}

/* ---- SHA3 ---- */

static int sha3_bits;

static void sha3_case(const char *c, const char *lim) {
    size_t cap = 16384;
    uint8_t *msg = malloc(cap), want[48], got[48];
    long n = json_bytes(c, lim, "msg", 1, msg, cap), d = json_bytes(c, lim, "digest", 1, want, sizeof want);
    CHECK(n >= 0 && d == sha3_bits / 8);
    if (n >= 0) {
        if (sha3_bits == 256) REQUIRE_OK(spc_sha3_256(n > 0 ? msg : NULL, (size_t)n, got));
        else REQUIRE_OK(spc_sha3_384(n > 0 ? msg : NULL, (size_t)n, got));
        CHECK(memcmp(got, want, (size_t)sha3_bits / 8) == 0);
    }
    free(msg);
}

static void test_sha3_vectors(void) {
    sha3_bits = 256;
    each_case("SHA3_256_Test_Vectors.json", "msg", "", sha3_case);
    sha3_bits = 384;
    each_case("SHA3_384_Test_Vectors.json", "msg", "", sha3_case);
    uint8_t out[48];
    CHECK_EQ(spc_sha3_256(NULL, 1, out), SPC_E_ARGUMENT);
    CHECK_EQ(spc_sha3_384(NULL, 1, out), SPC_E_ARGUMENT);
}

/* The hash-based counter: CTR_DATA[i+1] = SHA3-256(CTR_DATA[i]), 20 steps per chain. */
static size_t counter_steps;

static void counter_case(const char *c, const char *lim) {
    uint8_t ctr[21][32];
    char key[32];
    for (int i = 0; i <= 20; i++) {
        snprintf(key, sizeof key, "ctrData[%d]", i);
        CHECK_EQ(json_bytes(c, lim, key, 0, ctr[i], 32), 32);
    }
    for (int i = 0; i < 20; i++, counter_steps++) {
        uint8_t next[32];
        REQUIRE_OK(spc_sha3_256(ctr[i], 32, next));
        CHECK(memcmp(next, ctr[i + 1], 32) == 0);
    }
}

static void test_counter_vectors(void) {
    counter_steps = 0;
    each_case("Hash_Based_Counter_Test_Vectors.json", "ctrData[0]", " (chains)", counter_case);
    printf("  Hash_Based_Counter_Test_Vectors.json: %zu counter steps checked\n", counter_steps);
    CHECK_EQ(counter_steps, 200);
}

/* ---- KMAC-256 and the KDFs ---- */

/* NIST SP 800-185 KMAC samples #4 and #6 (KMAC256, S = "My Tagged Application", L = 512). */
static void test_kmac_nist(void) {
    uint8_t key[32], data[200], out[64];
    for (int i = 0; i < 32; i++) key[i] = (uint8_t)(0x40 + i);
    for (int i = 0; i < 200; i++) data[i] = (uint8_t)i;
    const uint8_t *s = (const uint8_t *)"My Tagged Application";
    spc_buffer *k = buffer_with(key, 32);
    REQUIRE_OK(spc_kmac256(k, data, 4, s, 21, out, 64));
    CHECK(bytes_equal(out, (const uint8_t *)"\x20\xC5\x70\xC3\x13\x46\xF7\x03\xC9\xAC\x36\xC6\x1C\x03\xCB\x64"
                                            "\xC3\x97\x0D\x0C\xFC\x78\x7E\x9B\x79\x59\x9D\x27\x3A\x68\xD2\xF7"
                                            "\xF6\x9D\x4C\xC3\xDE\x9D\x10\x4A\x35\x16\x89\xF2\x7C\xF6\xF5\x95"
                                            "\x1F\x01\x03\xF3\x3F\x4F\x24\x87\x10\x24\xD9\xC2\x77\x73\xA8\xDD",
                      64));
    REQUIRE_OK(spc_kmac256(k, data, 200, s, 21, out, 64));
    CHECK(bytes_equal(out, (const uint8_t *)"\xB5\x86\x18\xF7\x1F\x92\xE1\xD5\x6C\x1B\x8C\x55\xDD\xD7\xCD\x18"
                                            "\x8B\x97\xB4\xCA\x4D\x99\x83\x1E\xB2\x69\x9A\x83\x7D\xA2\xE4\xD9"
                                            "\x70\xFB\xAC\xFD\xE5\x00\x33\xAE\xA5\x85\xF1\xA2\x70\x85\x10\xC3"
                                            "\x2D\x07\x88\x08\x01\xBD\x18\x28\x98\xFE\x47\x68\x76\xFC\x89\x65",
                      64));
    /* Guards: key sizes (OpenSSL's 4-byte minimum), custom, output length; the output is cleared. */
    spc_buffer *short_key = buffer_with(key, 3);
    memset(out, 0xEE, sizeof out);
    CHECK_EQ(spc_kmac256(short_key, data, 4, s, 21, out, 32), SPC_E_ARGUMENT);
    CHECK(all_zero(out, 32));
    CHECK_EQ(spc_kmac256(k, data, 4, s, 0, out, 32), SPC_E_ARGUMENT);
    CHECK_EQ(spc_kmac256(k, data, 4, s, SPC_KMAC_CUSTOM_MAX + 1, out, 32), SPC_E_ARGUMENT);
    CHECK_EQ(spc_kmac256(k, data, 4, s, 21, out, 0), SPC_E_ARGUMENT);
    CHECK_EQ(spc_kmac256(k, data, 4, s, 21, out, SPC_KMAC_OUT_MAX + 1), SPC_E_ARGUMENT);
    CHECK_EQ(spc_kmac256(k, NULL, 4, s, 21, out, 32), SPC_E_ARGUMENT);
    CHECK_EQ(spc_kmac256(NULL, data, 4, s, 21, out, 32), SPC_E_ARGUMENT);
    REQUIRE_OK(spc_kmac256(k, NULL, 0, s, 21, out, 32)); /* an empty message is a message */
    spc_buffer_free(k), spc_buffer_free(short_key);
}

/* spc_kmac256_secret is KMAC over prefix || secret data: NIST SP 800-185 KMAC256 sample 4
 * (the same as spc_kmac256 above), split at every point between the public and secret part. */
static void test_kmac_secret_nist(void) {
    uint8_t key[32], data[200], out[64];
    for (int i = 0; i < 32; i++) key[i] = (uint8_t)(0x40 + i);
    for (int i = 0; i < 200; i++) data[i] = (uint8_t)i;
    const uint8_t *s = (const uint8_t *)"My Tagged Application";
    spc_buffer *k = buffer_with(key, 32), *o = buffer_of(64);
    REQUIRE_OK(spc_kmac256(k, data, 4, s, 21, out, 64));
    for (size_t split = 0; split <= 4; split++) {
        spc_buffer *d = split < 4 ? buffer_with(data + split, 4 - split) : NULL;
        REQUIRE_OK(spc_kmac256_secret(k, data, split, d, s, 21, o));
        CHECK(buffer_is(o, out, 64));
        if (d != NULL) spc_buffer_free(d);
    }
    spc_buffer *d = buffer_with(data, 4);
    CHECK_EQ(spc_kmac256_secret(k, NULL, 1, d, s, 21, o), SPC_E_ARGUMENT);
    CHECK_EQ(spc_kmac256_secret(k, data, 0, k, s, 21, o), SPC_E_ARGUMENT);
    CHECK_EQ(spc_kmac256_secret(k, data, 0, o, s, 21, o), SPC_E_ARGUMENT);
    CHECK_EQ(spc_kmac256_secret(k, data, 0, d, s, 0, o), SPC_E_ARGUMENT);
    CHECK_EQ(spc_kmac256_secret(NULL, data, 0, d, s, 21, o), SPC_E_ARGUMENT);
    spc_buffer_free(k), spc_buffer_free(o), spc_buffer_free(d);
}

/* HMAC-SHA384: RFC 4231 test cases 1 and 2. */
static void test_hmac_sha384_rfc4231(void) {
    uint8_t key1[20], out[SPC_HMAC_SHA384_BYTES];
    memset(key1, 0x0b, sizeof key1);
    spc_buffer *k1 = buffer_with(key1, 20), *k2 = buffer_with((const uint8_t *)"Jefe", 4);
    REQUIRE_OK(spc_hmac_sha384(k1, (const uint8_t *)"Hi There", 8, out));
    CHECK(bytes_equal(out, (const uint8_t *)"\xaf\xd0\x39\x44\xd8\x48\x95\x62\x6b\x08\x25\xf4\xab\x46\x90\x7f"
                                            "\x15\xf9\xda\xdb\xe4\x10\x1e\xc6\x82\xaa\x03\x4c\x7c\xeb\xc5\x9c"
                                            "\xfa\xea\x9e\xa9\x07\x6e\xde\x7f\x4a\xf1\x52\xe8\xb2\xfa\x9c\xb6",
                      48));
    REQUIRE_OK(spc_hmac_sha384(k2, (const uint8_t *)"what do ya want for nothing?", 28, out));
    CHECK(bytes_equal(out, (const uint8_t *)"\xaf\x45\xd2\xe3\x76\x48\x40\x31\x61\x7f\x78\xd2\xb5\x8a\x6b\x1b"
                                            "\x9c\x7e\xf4\x64\xf5\xa0\x1b\x47\xe4\x2e\xc3\x73\x63\x22\x44\x5e"
                                            "\x8e\x22\x40\xca\x5e\x69\xe2\xc7\x8b\x32\x39\xec\xfa\xb2\x16\x49",
                      48));
    CHECK_EQ(spc_hmac_sha384(k1, NULL, 3, out), SPC_E_ARGUMENT);
    CHECK(all_zero(out, sizeof out));
    spc_buffer_free(k1), spc_buffer_free(k2);
}

static void kdf_case(const char *c, const char *lim) {
    char label[256], size_text[8];
    uint8_t key[128], custom[256], want[64];
    long kl = json_bytes(c, lim, "key", 0, key, sizeof key), cl = json_bytes(c, lim, "custom", 0, custom, sizeof custom),
         wl = json_bytes(c, lim, "derivedKey", 0, want, sizeof want);
    CHECK(json_text(c, lim, "label", label, sizeof label) && json_text(c, lim, "outSize", size_text, sizeof size_text));
    CHECK(kl > 0 && cl >= 0 && wl == atol(size_text));
    if (kl <= 0 || cl < 0 || wl <= 0) return;
    spc_buffer *k = buffer_with(key, (size_t)kl), *out = buffer_of((size_t)wl);
    REQUIRE_OK(spc_v4_kdf(k, (const uint8_t *)label, strlen(label), cl > 0 ? custom : NULL, (size_t)cl, out));
    CHECK(buffer_is(out, want, (size_t)wl));
    spc_buffer_free(k), spc_buffer_free(out);
}

static void test_kdf_vectors(void) {
    each_case("v4-kdf.json", "input", " (KDF = KMAC256 with \"PA4KDF:\" + label)", kdf_case);
    uint8_t raw[32] = {7};
    spc_buffer *k = buffer_with(raw, 32), *out = buffer_of(32), *wide = buffer_of(SPC_KMAC_OUT_MAX + 1);
    char label[SPC_V4_KDF_LABEL_MAX + 2];
    memset(label, 'a', sizeof label);
    CHECK_EQ(spc_v4_kdf(k, (const uint8_t *)label, 0, NULL, 0, out), SPC_E_ARGUMENT);
    CHECK_EQ(spc_v4_kdf(k, (const uint8_t *)label, SPC_V4_KDF_LABEL_MAX + 1, NULL, 0, out), SPC_E_ARGUMENT);
    REQUIRE_OK(spc_v4_kdf(k, (const uint8_t *)label, SPC_V4_KDF_LABEL_MAX, NULL, 0, out));
    CHECK_EQ(spc_v4_kdf(k, (const uint8_t *)"auth", 4, NULL, 0, k), SPC_E_ARGUMENT);
    CHECK_EQ(spc_v4_kdf(k, (const uint8_t *)"auth", 4, NULL, 0, wide), SPC_E_ARGUMENT);
    CHECK_EQ(spc_v4_kdf(k, (const uint8_t *)"auth", 4, NULL, 3, out), SPC_E_ARGUMENT);
    CHECK_EQ(spc_v4_kdf(NULL, (const uint8_t *)"auth", 4, NULL, 0, out), SPC_E_ARGUMENT);
    spc_buffer_free(k), spc_buffer_free(out), spc_buffer_free(wide);
}

static void pbkdf_case(const char *c, const char *lim) {
    char password[128], size_text[8];
    uint8_t salt[128], want[64];
    long sl = json_bytes(c, lim, "salt", 0, salt, sizeof salt), wl = json_bytes(c, lim, "derivedKey", 0, want, 64);
    CHECK(json_text(c, lim, "password", password, sizeof password) &&
          json_text(c, lim, "outSize", size_text, sizeof size_text));
    CHECK(sl >= SPC_V4_PBKDF_SALT_MIN && wl == atol(size_text));
    if (sl <= 0 || wl <= 0) return;
    spc_password *pw = password_of(password);
    spc_buffer *out = buffer_of((size_t)wl);
    REQUIRE_OK(spc_v4_password_kdf(pw, salt, (size_t)sl, out));
    CHECK(buffer_is(out, want, (size_t)wl));
    spc_password_free(pw), spc_buffer_free(out);
}

static void test_password_kdf_vectors(void) {
    each_case("pbkdf-v4.json", "input", " (password KDF, KMAC256 \"PA4PBKDF\")", pbkdf_case);
    uint8_t salt[32] = {1};
    spc_password *pin = password_of("1234"), *short_pin = password_of("123"), *empty_pw = password_of("");
    spc_buffer *out = buffer_of(32);
    REQUIRE_OK(spc_v4_password_kdf(pin, salt, 32, out));
    CHECK_EQ(spc_v4_password_kdf(pin, salt, 31, out), SPC_E_ARGUMENT);
    CHECK_EQ(spc_v4_password_kdf(short_pin, salt, 32, out), SPC_E_ARGUMENT);
    CHECK(buffer_is(out, (const uint8_t[32]){0}, 32)); /* cleared on refusal */
    CHECK_EQ(spc_v4_password_kdf(empty_pw, salt, 32, out), SPC_E_ARGUMENT);
    spc_password_free(pin), spc_password_free(short_pin), spc_password_free(empty_pw), spc_buffer_free(out);
}

/* digest = KMAC256(tokenSecret, nonce || "&" || timestamp || "&" || "4.0", 32, "PA4DIGEST"). */
static void token_case(const char *c, const char *lim) {
    uint8_t secret[64], ts[32], nonce[16], want[32], msg[64], got[32];
    long sl = json_bytes(c, lim, "tokenSecret", 0, secret, sizeof secret),
         tl = json_bytes(c, lim, "timestamp", 0, ts, sizeof ts);
    CHECK(sl == 32 && tl > 0 && json_bytes(c, lim, "nonce", 0, nonce, 16) == 16 &&
          json_bytes(c, lim, "tokenDigest", 0, want, 32) == 32);
    if (sl != 32 || tl <= 0) return;
    size_t n = 0;
    memcpy(msg, nonce, 16), n = 16, msg[n++] = '&';
    memcpy(msg + n, ts, (size_t)tl), n += (size_t)tl, msg[n++] = '&';
    memcpy(msg + n, "4.0", 3), n += 3;
    spc_buffer *k = buffer_with(secret, 32);
    REQUIRE_OK(spc_kmac256(k, msg, n, (const uint8_t *)"PA4DIGEST", 9, got, 32));
    CHECK(memcmp(got, want, 32) == 0);
    spc_buffer_free(k);
}

static void test_token_digest_vectors(void) {
    each_case("Token_Digest_Test_Vectors.json", "tokenSecret", "", token_case);
}

/* Auth_Code_Test_Vectors.json encodes the OBSOLETE Feb-2025 authentication code (16-byte keys and
 * components, another chaining than the final protocol's), composed here from spc_kmac256 only to
 * run KMAC over upstream's data: K = KMAC(k1, ctr, 32); K = KMAC(KMAC(kj, ctr, 32), K, 32) for
 * j = 2 ... i; component i = KMAC(K, data, 16); all with S = "PA4CODE". Online: Base64 of the
 * components; offline: (u32be(last 4 bytes) & 0x7FFFFFFF) mod 10^8 per component, joined by '-'. */
static void obsolete_kmac(const uint8_t *key, size_t key_len, const uint8_t *msg, size_t len, uint8_t *out,
                          size_t out_len) {
    spc_buffer *k = buffer_with(key, key_len);
    REQUIRE_OK(spc_kmac256(k, msg, len, (const uint8_t *)"PA4CODE", 7, out, out_len));
    spc_buffer_free(k);
}

static void authcode_case(const char *c, const char *lim) {
    uint8_t keys[3][16], ctr[32], data[256], chain[32], step[32], next[32], code[48];
    char want_online[80], want_offline[40], online[80], offline[40] = "";
    static const char *const names[3] = {"key1", "key2", "key3"};
    for (int i = 0; i < 3; i++) CHECK_EQ(json_bytes(c, lim, names[i], 0, keys[i], 16), 16);
    long dl = json_bytes(c, lim, "inputData", 0, data, sizeof data);
    CHECK(json_bytes(c, lim, "ctrData", 0, ctr, 32) == 32 && dl >= 0 &&
          json_text(c, lim, "authCodeOnline", want_online, sizeof want_online) &&
          json_text(c, lim, "authCodeOffline", want_offline, sizeof want_offline));
    if (dl < 0) return;
    for (int i = 0; i < 3; i++) {
        obsolete_kmac(keys[0], 16, ctr, 32, chain, 32);
        for (int j = 1; j <= i; j++) {
            obsolete_kmac(keys[j], 16, ctr, 32, step, 32);
            obsolete_kmac(step, 32, chain, 32, next, 32);
            memcpy(chain, next, 32);
        }
        obsolete_kmac(chain, 32, data, (size_t)dl, code + 16 * i, 16);
        const uint8_t *t = code + 16 * i + 12;
        uint32_t v = ((uint32_t)t[0] << 24 | (uint32_t)t[1] << 16 | (uint32_t)t[2] << 8 | t[3]) & 0x7FFFFFFFu;
        size_t used = strlen(offline);
        snprintf(offline + used, sizeof offline - used, "%s%08u", i == 0 ? "" : "-", v % 100000000u);
    }
    sodium_bin2base64(online, sizeof online, code, 48, sodium_base64_VARIANT_ORIGINAL);
    CHECK(strcmp(online, want_online) == 0);
    CHECK(strcmp(offline, want_offline) == 0);
}

static void test_authcode_vectors_obsolete_feb2025(void) {
    each_case("Auth_Code_Test_Vectors.json", "key1", " (OBSOLETE Feb-2025 code, online + offline)", authcode_case);
}

/* ---- AES-256-CTR: NIST SP 800-38A F.5.5 / F.5.6 ---- */

static void test_aes256_ctr(void) {
    uint8_t key[32], iv[16], pt[64], ct[64], out[64];
    unhex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4", key);
    unhex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff", iv);
    unhex("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
          "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710", pt);
    unhex("601ec313775789a5b7a7f504bbf3d228f443e3ca4d62b59aca84e990cacaf5c5"
          "2b0930daa23de94ce87017ba2d84988ddfc9c58db67aada613c2dd08457941a6", ct);
    spc_buffer *k = buffer_with(key, 32), *short_key = buffer_with(key, 16);
    REQUIRE_OK(spc_aes256_ctr(k, iv, pt, 64, out));
    CHECK(memcmp(out, ct, 64) == 0);
    REQUIRE_OK(spc_aes256_ctr(k, iv, ct, 64, out));
    CHECK(memcmp(out, pt, 64) == 0);
    REQUIRE_OK(spc_aes256_ctr(k, iv, pt, 21, out)); /* a partial block: the stream's prefix */
    CHECK(memcmp(out, ct, 21) == 0);
    REQUIRE_OK(spc_aes256_ctr(k, iv, NULL, 0, NULL));
    CHECK_EQ(spc_aes256_ctr(short_key, iv, pt, 16, out), SPC_E_ARGUMENT);
    CHECK(all_zero(out, 16));
    CHECK_EQ(spc_aes256_ctr(k, iv, NULL, 16, out), SPC_E_ARGUMENT);
    CHECK_EQ(spc_aes256_ctr(k, iv, pt, (size_t)SPC_BUFFER_MAX + 1, out), SPC_E_ARGUMENT);
    spc_buffer_free(k), spc_buffer_free(short_key);
}

/* ---- the V4 AEAD through the E2EE vectors ---- */

static size_t put_sized(uint8_t *out, size_t at, const void *item, size_t len) {
    out[at] = (uint8_t)(len >> 24), out[at + 1] = (uint8_t)(len >> 16);
    out[at + 2] = (uint8_t)(len >> 8), out[at + 3] = (uint8_t)len;
    memcpy(out + at + 4, item, len);
    return at + 4 + len;
}

/* AD = LV("4.0") || LV(appKey) [|| LV(activationId)] || LV(temporaryKeyId) || LV(u64be(ts)) || LV(nonce) || LV(SH2). */
static size_t e2ee_ad(const char *app_key, const char *act_id, const char *tmp_id, const char *ts,
                      const uint8_t nonce[24], const uint8_t sh2[32], uint8_t *ad) {
    uint64_t t = strtoull(ts, NULL, 10);
    uint8_t be[8];
    for (int i = 0; i < 8; i++) be[i] = (uint8_t)(t >> (56 - 8 * i));
    size_t n = put_sized(ad, 0, "4.0", 3);
    n = put_sized(ad, n, app_key, strlen(app_key));
    if (act_id != NULL) n = put_sized(ad, n, act_id, strlen(act_id));
    n = put_sized(ad, n, tmp_id, strlen(tmp_id));
    n = put_sized(ad, n, be, 8);
    n = put_sized(ad, n, nonce, 24);
    return put_sized(ad, n, sh2, 32);
}

/* One direction: the seal reproduces the vector's bytes, the open its plaintext, a flipped
 * tag bit or AD bit is refused with the output left cleared. */
static void aead_both_ways(spc_buffer *key, const uint8_t *kc, size_t kc_len, const uint8_t *ad, size_t ad_len,
                           const char *plain, const uint8_t *blob, size_t blob_len) {
    size_t n = strlen(plain);
    uint8_t out[512], got[512], bad[512];
    CHECK_EQ(blob_len, n + SPC_V4_AEAD_OVERHEAD);
    if (blob_len != n + SPC_V4_AEAD_OVERHEAD || n == 0) return;
    spc_buffer *p = buffer_with((const uint8_t *)plain, n), *dec = buffer_of(n);
    REQUIRE_OK(spc_v4_aead_seal(key, kc, kc_len, blob, ad, ad_len, p, out, blob_len));
    CHECK(memcmp(out, blob, blob_len) == 0);
    REQUIRE_OK(spc_v4_aead_open(key, kc, kc_len, ad, ad_len, blob, blob_len, dec));
    read_buffer(dec, got);
    CHECK(memcmp(got, plain, n) == 0);
    memcpy(bad, blob, blob_len), bad[20] ^= 1;
    CHECK_EQ(spc_v4_aead_open(key, kc, kc_len, ad, ad_len, bad, blob_len, dec), SPC_E_AEAD_AUTH);
    read_buffer(dec, got);
    CHECK(all_zero(got, n));
    CHECK_EQ(spc_v4_aead_open(key, kc, kc_len, ad, ad_len - 1, blob, blob_len, dec), SPC_E_AEAD_AUTH);
    spc_buffer_free(p), spc_buffer_free(dec);
}

static int e2ee_activation;

static void e2ee_case(const char *c, const char *lim) {
    char app_key[64], act_id[64] = "", tmp_id[64], ts_req[24], ts_res[24], rq[128], rs[128], secret_text[64];
    uint8_t envk[64], secret[32], nonce[24], sh2[32], rqc[512], rsc[512], kc[64], ad[512];
    long el = json_bytes(c, lim, "envelopeKey", 0, envk, sizeof envk),
         ql = json_bytes(c, lim, "encryptedDataRequest", 0, rqc, sizeof rqc),
         sl = json_bytes(c, lim, "encryptedDataResponse", 0, rsc, sizeof rsc);
    int ok = json_text(c, lim, "applicationKey", app_key, sizeof app_key) &&
             json_text(c, lim, "temporaryKeyId", tmp_id, sizeof tmp_id) &&
             json_text(c, lim, "timestampRequest", ts_req, sizeof ts_req) &&
             json_text(c, lim, "timestampResponse", ts_res, sizeof ts_res) &&
             json_text(c, lim, "requestData", rq, sizeof rq) && json_text(c, lim, "responseData", rs, sizeof rs) &&
             json_text(c, lim, "applicationSecret", secret_text, sizeof secret_text) &&
             json_bytes(c, lim, "applicationSecret", 0, secret, sizeof secret) == 16 &&
             json_bytes(c, lim, "nonce", 0, nonce, sizeof nonce) == 24 && el == 32 && ql > 0 && sl > 0;
    if (e2ee_activation) ok = ok && json_text(c, lim, "activationId", act_id, sizeof act_id);
    CHECK(ok);
    if (!ok) return;
    /* SH2: SHA3-256(APP_SECRET) or KMAC256(KEY_E2EE_SHARED_INFO2, APP_SECRET, 32, "PA4SH2"). */
    if (e2ee_activation) {
        uint8_t sh2_key[32];
        CHECK_EQ(json_bytes(c, lim, "sharedInfo2Key", 0, sh2_key, 32), 32);
        spc_buffer *k = buffer_with(sh2_key, 32);
        REQUIRE_OK(spc_kmac256(k, secret, 16, (const uint8_t *)"PA4SH2", 6, sh2, 32));
        spc_buffer_free(k);
    } else REQUIRE_OK(spc_sha3_256(secret, 16, sh2));
    /* KC = "4.0" || SH1 || NONCE, SH1 the generic endpoint of the scope. */
    const char *sh1 = e2ee_activation ? "/pa/generic/activation" : "/pa/generic/application";
    size_t kc_len = 0;
    memcpy(kc, "4.0", 3), kc_len = 3;
    memcpy(kc + kc_len, sh1, strlen(sh1)), kc_len += strlen(sh1);
    memcpy(kc + kc_len, nonce, 24), kc_len += 24;
    spc_buffer *key = buffer_with(envk, 32);
    const char *act = e2ee_activation ? act_id : NULL;
    size_t ad_len = e2ee_ad(app_key, act, tmp_id, ts_req, nonce, sh2, ad);
    CHECK(memcmp(rqc, nonce, 12) == 0); /* request: REQ_NONCE, the first half */
    aead_both_ways(key, kc, kc_len, ad, ad_len, rq, rqc, (size_t)ql);
    ad_len = e2ee_ad(app_key, act, tmp_id, ts_res, nonce, sh2, ad);
    CHECK(memcmp(rsc, nonce + 12, 12) == 0); /* response: RESP_NONCE, the second half */
    aead_both_ways(key, kc, kc_len, ad, ad_len, rs, rsc, (size_t)sl);
    spc_buffer_free(key);
}

static void test_e2ee_vectors(void) {
    e2ee_activation = 0;
    each_case("E2ee_Application_Scope_Test_Vectors_40.json", "protocolVersion", " (request + response)", e2ee_case);
    e2ee_activation = 1;
    each_case("E2ee_Activation_Scope_Test_Vectors_40.json", "protocolVersion", " (request + response)", e2ee_case);
}

static void test_aead_guards(void) {
    uint8_t raw[32], nonce[12] = {9}, out[80], blob[44];
    for (int i = 0; i < 32; i++) raw[i] = (uint8_t)(i + 1);
    spc_buffer *key = buffer_with(raw, 32), *plain = buffer_with(raw, 20), *dec = buffer_of(20), *small = buffer_of(19);
    /* An empty plaintext: nonce || tag only, and it opens to nothing. */
    REQUIRE_OK(spc_v4_aead_seal(key, NULL, 0, nonce, NULL, 0, NULL, blob, 44));
    REQUIRE_OK(spc_v4_aead_open(key, NULL, 0, NULL, 0, blob, 44, NULL));
    blob[43] ^= 1;
    CHECK_EQ(spc_v4_aead_open(key, NULL, 0, NULL, 0, blob, 44, NULL), SPC_E_AEAD_AUTH);
    /* The key context separates keys: a different one does not open. */
    REQUIRE_OK(spc_v4_aead_seal(key, (const uint8_t *)"kc1", 3, nonce, NULL, 0, plain, out, 64));
    CHECK_EQ(spc_v4_aead_open(key, (const uint8_t *)"kc2", 3, NULL, 0, out, 64, dec), SPC_E_AEAD_AUTH);
    REQUIRE_OK(spc_v4_aead_open(key, (const uint8_t *)"kc1", 3, NULL, 0, out, 64, dec));
    CHECK(buffer_is(dec, raw, 20));
    /* Sizes and overlaps. */
    CHECK_EQ(spc_v4_aead_seal(key, NULL, 0, nonce, NULL, 0, plain, out, 63), SPC_E_ARGUMENT);
    CHECK_EQ(spc_v4_aead_seal(key, NULL, 0, nonce, NULL, 0, plain, out, 43), SPC_E_ARGUMENT);
    CHECK_EQ(spc_v4_aead_seal(key, NULL, 3, nonce, NULL, 0, plain, out, 64), SPC_E_ARGUMENT);
    CHECK(all_zero(out, 64));
    CHECK_EQ(spc_v4_aead_seal(key, NULL, 0, nonce, NULL, 0, key, out, 76), SPC_E_ARGUMENT);
    CHECK_EQ(spc_v4_aead_open(key, NULL, 0, NULL, 0, out, 43, NULL), SPC_E_ARGUMENT);
    CHECK_EQ(spc_v4_aead_open(key, NULL, 0, NULL, 0, out, 64, small), SPC_E_ARGUMENT);
    CHECK_EQ(spc_v4_aead_open(key, NULL, 0, NULL, 2, out, 64, dec), SPC_E_ARGUMENT);
    CHECK_EQ(spc_v4_aead_open(key, NULL, 0, NULL, 0, out, 64, key), SPC_E_ARGUMENT);
    spc_buffer_free(key), spc_buffer_free(plain), spc_buffer_free(dec), spc_buffer_free(small);
}

/* ---- P-384 ---- */

/* ECDHE_P384_Test_Vectors.json: the raw ECDH x-coordinate is still the final protocol's DH value;
 * the file's sharedSecret is the OBSOLETE May-2025 derivation KDF(x, "shared-secret/ec-p384"),
 * checked here only because it is the only way the file exercises the ECDH step. */
static void ecdh_case(const char *c, const char *lim) {
    uint8_t priv[49], pub[97], want[32];
    long pl = json_bytes(c, lim, "ecClientPrivateKey", 0, priv, sizeof priv),
         ql = json_bytes(c, lim, "ecServerPublicKey", 0, pub, sizeof pub);
    CHECK((pl == 48 || pl == 49) && ql == 97 && json_bytes(c, lim, "sharedSecret", 0, want, 32) == 32);
    if (pl <= 0 || ql != 97) return;
    spc_buffer *d = buffer_with(priv, (size_t)pl), *x = buffer_of(48), *out = buffer_of(32);
    REQUIRE_OK(spc_p384_ecdh(d, pub, 97, x));
    REQUIRE_OK(spc_v4_kdf(x, (const uint8_t *)"shared-secret/ec-p384", 21, NULL, 0, out));
    CHECK(buffer_is(out, want, 32));
    spc_buffer_free(d), spc_buffer_free(x), spc_buffer_free(out);
}

static void test_ecdh_p384_vectors_obsolete_derivation(void) {
    each_case("ECDHE_P384_Test_Vectors.json", "ecClientPrivateKey",
              " (raw P-384 ECDH; OBSOLETE May-2025 KDF step on top)", ecdh_case);
}

static void test_p384_keys(void) {
    uint8_t pa[97], pb[97], again[97], xa[48], xb[48], d[49];
    spc_buffer *a = buffer_of(48), *b = buffer_of(48), *sa = buffer_of(48), *sb = buffer_of(48);
    REQUIRE_OK(spc_p384_keypair_generate(a, pa));
    REQUIRE_OK(spc_p384_keypair_generate(b, pb));
    CHECK(pa[0] == 0x04 && memcmp(pa, pb, 97) != 0);
    REQUIRE_OK(spc_p384_public_check(pa, 97));
    REQUIRE_OK(spc_p384_public_from_private(a, again));
    CHECK(memcmp(again, pa, 97) == 0);
    REQUIRE_OK(spc_p384_ecdh(a, pb, 97, sa));
    REQUIRE_OK(spc_p384_ecdh(b, pa, 97, sb));
    read_buffer(sa, xa), read_buffer(sb, xb);
    CHECK(memcmp(xa, xb, 48) == 0);
    /* The compressed form of the same point gives the same secret. */
    uint8_t compressed[49];
    compressed[0] = (uint8_t)(0x02 | (pb[96] & 1));
    memcpy(compressed + 1, pb + 1, 48);
    REQUIRE_OK(spc_p384_public_check(compressed, 49));
    REQUIRE_OK(spc_p384_ecdh(a, compressed, 49, sa));
    CHECK(buffer_is(sa, xb, 48));
    /* A Java BigInteger's 49 bytes (leading zero) are the same key. */
    d[0] = 0;
    read_buffer(a, d + 1);
    spc_buffer *a49 = buffer_with(d, 49);
    REQUIRE_OK(spc_p384_ecdh(a49, pb, 97, sa));
    CHECK(buffer_is(sa, xb, 48));
    /* Scalars out of range: 0, n, all ones; a 49-byte form without the zero. */
    static const char *const bad[] = {
        "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "ffffffffffffffffffffffffffffffffffffffffffffffffc7634d81f4372ddf581a0db248b0a77aecec196accc52973",
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"};
    for (int i = 0; i < 3; i++) {
        unhex(bad[i], d);
        spc_buffer *k = buffer_with(d, 48);
        CHECK_EQ(spc_p384_ecdh(k, pb, 97, sa), SPC_E_KEY);
        CHECK(buffer_is(sa, (const uint8_t[48]){0}, 48));
        CHECK_EQ(spc_p384_public_from_private(k, again), SPC_E_KEY);
        CHECK(all_zero(again, 97));
        spc_buffer_free(k);
    }
    unhex("ffffffffffffffffffffffffffffffffffffffffffffffffc7634d81f4372ddf581a0db248b0a77aecec196accc52972", d);
    spc_buffer *top = buffer_with(d, 48); /* n - 1 is valid */
    REQUIRE_OK(spc_p384_public_from_private(top, again));
    d[0] = 1; /* 49 bytes whose first is not zero */
    spc_buffer *k49 = buffer_with(d, 49);
    CHECK_EQ(spc_p384_ecdh(k49, pb, 97, sa), SPC_E_KEY);
    /* Public keys: off the curve, wrong sizes, a P-256 size; the output size and overlap. */
    memcpy(again, pb, 97), again[96] ^= 1;
    CHECK_EQ(spc_p384_public_check(again, 97), SPC_E_KEY);
    CHECK_EQ(spc_p384_ecdh(a, again, 97, sa), SPC_E_KEY);
    CHECK_EQ(spc_p384_public_check(pb, 65), SPC_E_KEY);
    CHECK_EQ(spc_p384_public_check(NULL, 97), SPC_E_ARGUMENT);
    CHECK_EQ(spc_p384_ecdh(a, NULL, 97, sa), SPC_E_KEY);
    CHECK_EQ(spc_p384_ecdh(NULL, pb, 97, sa), SPC_E_KEY);
    CHECK_EQ(spc_p384_ecdh(a, pb, 97, a), SPC_E_ARGUMENT);
    spc_buffer *narrow = buffer_of(32);
    CHECK_EQ(spc_p384_ecdh(a, pb, 97, narrow), SPC_E_ARGUMENT);
    CHECK_EQ(spc_p384_keypair_generate(narrow, again), SPC_E_ARGUMENT);
    spc_buffer_free(a), spc_buffer_free(b), spc_buffer_free(sa), spc_buffer_free(sb), spc_buffer_free(a49);
    spc_buffer_free(top), spc_buffer_free(k49), spc_buffer_free(narrow);
}

static void test_p384_ecdsa(void) {
    uint8_t pub[97], other[97], sig[96], bad[96];
    const uint8_t *msg = (const uint8_t *)"activation code signed data";
    spc_buffer *priv = buffer_of(48), *priv2 = buffer_of(48);
    REQUIRE_OK(spc_p384_keypair_generate(priv, pub));
    REQUIRE_OK(spc_p384_keypair_generate(priv2, other));
    int valid = 0;
    REQUIRE_OK(spc_p384_ecdsa_sign(priv, msg, 27, sig));
    REQUIRE_OK(spc_p384_ecdsa_verify(pub, 97, msg, 27, sig, 96, &valid));
    CHECK_EQ(valid, 1);
    REQUIRE_OK(spc_p384_ecdsa_verify(pub, 97, msg, 26, sig, 96, &valid));
    CHECK_EQ(valid, 0);
    REQUIRE_OK(spc_p384_ecdsa_verify(other, 97, msg, 27, sig, 96, &valid));
    CHECK_EQ(valid, 0);
    memcpy(bad, sig, 96), bad[50] ^= 4;
    REQUIRE_OK(spc_p384_ecdsa_verify(pub, 97, msg, 27, bad, 96, &valid));
    CHECK_EQ(valid, 0);
    REQUIRE_OK(spc_p384_ecdsa_verify(pub, 97, msg, 27, sig, 95, &valid));
    CHECK_EQ(valid, 0);
    memset(bad, 0, 96); /* r = s = 0 */
    REQUIRE_OK(spc_p384_ecdsa_verify(pub, 97, msg, 27, bad, 96, &valid));
    CHECK_EQ(valid, 0);
    REQUIRE_OK(spc_p384_ecdsa_sign(priv, NULL, 0, sig)); /* the empty message */
    REQUIRE_OK(spc_p384_ecdsa_verify(pub, 97, NULL, 0, sig, 96, &valid));
    CHECK_EQ(valid, 1);
    CHECK_EQ(spc_p384_ecdsa_sign(priv, NULL, 3, sig), SPC_E_ARGUMENT);
    CHECK_EQ(spc_p384_ecdsa_verify(pub, 96, msg, 27, sig, 96, &valid), SPC_E_KEY);
    CHECK_EQ(spc_p384_ecdsa_verify(pub, 97, NULL, 3, sig, 96, &valid), SPC_E_ARGUMENT);
    spc_buffer *zero = buffer_of(48);
    CHECK_EQ(spc_p384_ecdsa_sign(zero, msg, 27, sig), SPC_E_KEY);
    CHECK(all_zero(sig, 96));
    spc_buffer_free(priv), spc_buffer_free(priv2), spc_buffer_free(zero);
}

/* The ES384 signatures of upstream's keystore responses (JWS JSON serialization, the
 * JSON held in a string): r || s over the ASCII "protected.payload". The payloads are an
 * OBSOLETE June-2025 layout; the signatures are plain ES384 and still verify. */
static size_t es384_checked;

static int escaped_field(const char *from, const char *limit, const char *key, char *out, size_t cap) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\\\"%s\\\":\\\"", key);
    const char *at = strstr(from, pattern);
    if (at == NULL || at >= limit) return 0;
    at += strlen(pattern);
    const char *end = strstr(at, "\\\"");
    if (end == NULL || (size_t)(end - at) >= cap) return 0;
    memcpy(out, at, (size_t)(end - at));
    out[end - at] = 0;
    return 1;
}

static void jws_case(const char *c, const char *lim) {
    static char payload[8192], protected_[256], signature[256], input[8600];
    uint8_t pub[97], sig[96];
    size_t len = 0;
    if (strstr(c, "responsePayload") == NULL || strstr(c, "responsePayload") >= lim) return; /* a request case */
    CHECK_EQ(json_bytes(c, lim, "publicKeyEs384", 0, pub, sizeof pub), 97);
    CHECK(escaped_field(c, lim, "payload", payload, sizeof payload));
    /* The ES384 entry: the protected header {"alg":"ES384"}. */
    const char *es = strstr(c, "eyJhbGciOiJFUzM4NCJ9");
    CHECK(es != NULL && es < lim);
    if (es == NULL || es >= lim) return;
    CHECK(escaped_field(es - 20, lim, "protected", protected_, sizeof protected_) &&
          escaped_field(es, lim, "signature", signature, sizeof signature));
    CHECK(sodium_base642bin(sig, sizeof sig, signature, strlen(signature), NULL, &len, NULL,
                            sodium_base64_VARIANT_URLSAFE_NO_PADDING) == 0 && len == 96);
    snprintf(input, sizeof input, "%s.%s", protected_, payload);
    int valid = 0;
    REQUIRE_OK(spc_p384_ecdsa_verify(pub, 97, (const uint8_t *)input, strlen(input), sig, 96, &valid));
    CHECK_EQ(valid, 1);
    input[strlen(input) - 1] ^= 1;
    REQUIRE_OK(spc_p384_ecdsa_verify(pub, 97, (const uint8_t *)input, strlen(input), sig, 96, &valid));
    CHECK_EQ(valid, 0);
    es384_checked++;
}

static void test_es384_jws_vectors(void) {
    es384_checked = 0;
    each_case("TemporaryKeyTest_JWS_Vectors.json", "test", " (cases; ES384 responses below)", jws_case);
    printf("  TemporaryKeyTest_JWS_Vectors.json: %zu ES384 signatures verified\n", es384_checked);
    CHECK_EQ(es384_checked, 2);
}

/* ---- DHKEM(P-384) with the HPKE export ---- */

static void test_dhkem(void) {
    uint8_t pub[97], enc[97], enc2[97], s1[48], s2[48];
    spc_buffer *priv = buffer_of(48), *other = buffer_of(48), *sender = buffer_of(48), *recipient = buffer_of(48);
    uint8_t other_pub[97];
    REQUIRE_OK(spc_p384_keypair_generate(priv, pub));
    REQUIRE_OK(spc_p384_keypair_generate(other, other_pub));
    REQUIRE_OK(spc_dhkem_p384_encap(pub, 97, enc, sender));
    REQUIRE_OK(spc_p384_public_check(enc, 97));
    CHECK(enc[0] == 0x04);
    REQUIRE_OK(spc_dhkem_p384_decap(priv, enc, 97, recipient));
    read_buffer(sender, s1), read_buffer(recipient, s2);
    CHECK(memcmp(s1, s2, 48) == 0 && !all_zero(s1, 48));
    /* Fresh ephemeral key each time; the compressed recipient key is the same recipient. */
    uint8_t compressed[49];
    compressed[0] = (uint8_t)(0x02 | (pub[96] & 1));
    memcpy(compressed + 1, pub + 1, 48);
    REQUIRE_OK(spc_dhkem_p384_encap(compressed, 49, enc2, sender));
    CHECK(memcmp(enc, enc2, 97) != 0);
    CHECK(!buffer_is(sender, s1, 48));
    REQUIRE_OK(spc_dhkem_p384_decap(priv, enc2, 97, recipient));
    read_buffer(sender, s1);
    CHECK(buffer_is(recipient, s1, 48));
    /* The secret is not the bare ECDH value. */
    spc_buffer *x = buffer_of(48);
    REQUIRE_OK(spc_p384_ecdh(priv, enc2, 97, x));
    CHECK(!buffer_is(x, s1, 48));
    /* The wrong recipient gets another secret; bad keys are refused with the output cleared. */
    REQUIRE_OK(spc_dhkem_p384_decap(other, enc2, 97, recipient));
    CHECK(!buffer_is(recipient, s1, 48));
    enc2[96] ^= 1;
    CHECK_EQ(spc_dhkem_p384_decap(priv, enc2, 97, recipient), SPC_E_KEY);
    CHECK(buffer_is(recipient, (const uint8_t[48]){0}, 48));
    CHECK_EQ(spc_dhkem_p384_decap(priv, compressed, 49, recipient), SPC_E_KEY);
    CHECK_EQ(spc_dhkem_p384_decap(priv, enc, 97, priv), SPC_E_ARGUMENT);
    CHECK_EQ(spc_dhkem_p384_encap(enc2, 97, enc, sender), SPC_E_KEY);
    CHECK(all_zero(enc, 97) && buffer_is(sender, (const uint8_t[48]){0}, 48));
    spc_buffer *narrow = buffer_of(32);
    CHECK_EQ(spc_dhkem_p384_encap(pub, 97, enc, narrow), SPC_E_ARGUMENT);
    spc_buffer_free(priv), spc_buffer_free(other), spc_buffer_free(sender), spc_buffer_free(recipient);
    spc_buffer_free(x), spc_buffer_free(narrow);
}

int main(int argc, char **argv) {
    if (argc > 1) vector_dir = argv[1];

    RUN(test_uninitialised);
    REQUIRE_OK(spc_init());
    RUN(test_sha3_vectors);
    RUN(test_counter_vectors);
    RUN(test_kmac_nist);
    RUN(test_kmac_secret_nist);
    RUN(test_hmac_sha384_rfc4231);
    RUN(test_kdf_vectors);
    RUN(test_password_kdf_vectors);
    RUN(test_token_digest_vectors);
    RUN(test_authcode_vectors_obsolete_feb2025);
    RUN(test_aes256_ctr);
    RUN(test_e2ee_vectors);
    RUN(test_aead_guards);
    RUN(test_ecdh_p384_vectors_obsolete_derivation);
    RUN(test_p384_keys);
    RUN(test_p384_ecdsa);
    RUN(test_es384_jws_vectors);
    RUN(test_dhkem);
    return check_summary("c-protocol-v4");
}
