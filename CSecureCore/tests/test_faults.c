/* test_faults.c — every error path of the secret-handling functions, by
 * making each fallible step fail in turn (an open of secure pages, a slab
 * allocation; the seam is SPC_FAULT in internal.h, compiled in only with
 * -DSPC_FAULT_INJECTION). After each failure the call must report
 * SPC_E_NOMEM, clear its outputs, change nothing, and leak nothing (this test
 * runs under ASan's leak checker and valgrind). */
#define _GNU_SOURCE
#include "internal.h"
#include "check.h"

#include <string.h>

#include <sodium.h>

/* Run `call` with the n-th fallible step failing, n = 0, 1, ... until it
 * succeeds; `after_failure` checks each failure. Counts the failures seen. */
#define EVERY_FAULT(failures, call, after_failure)                  \
    do {                                                             \
        failures = 0;                                                \
        for (long n_ = 0; n_ < 64; n_++) {                           \
            spc__fault_after(n_);                                    \
            int rc_ = (call);                                        \
            spc__fault_after(-1);                                    \
            if (rc_ >= 0) break;                                     \
            failures++;                                              \
            CHECK_EQ(rc_, SPC_E_NOMEM);                              \
            after_failure;                                           \
        }                                                            \
    } while (0)

static spc_password *make(const char *ascii) {
    spc_password *pw;
    REQUIRE_OK(spc_password_new(&pw));
    for (size_t i = 0; ascii[i] != 0; i++) REQUIRE_OK(spc_password_add(pw, (uint8_t)ascii[i]));
    return pw;
}

/* 1 when pw reveals exactly as `ascii` (no fault active). */
static int reads(spc_password *pw, const char *ascii) {
    spc_buffer *b;
    size_t len;
    if (spc_password_reveal(pw, &b, &len) != SPC_OK) return 0;
    if (len != strlen(ascii)) {
        spc_buffer_free(b);
        return 0;
    }
    if (b == NULL) return 1;
    uint8_t *p;
    int ok = spc_buffer_open(b, &p) == SPC_OK;
    ok = ok && memcmp(p, ascii, len) == 0;
    if (ok) spc_buffer_close(b);
    spc_buffer_free(b);
    return ok;
}

static void test_password_edits_fail_cleanly(void) {
    int failures;
    spc_password *pw = make("2580");
    EVERY_FAULT(failures, spc_password_insert(pw, 1, 'x'), CHECK(reads(pw, "2580")));
    CHECK(failures > 0 && reads(pw, "2x580"));
    EVERY_FAULT(failures, spc_password_remove(pw, 1), CHECK(reads(pw, "2x580")));
    CHECK(failures > 0 && reads(pw, "2580"));
    EVERY_FAULT(failures, spc_password_clear(pw), CHECK(reads(pw, "2580")));
    CHECK(failures > 0 && reads(pw, ""));
    spc_password_free(pw);
    /* Growth: the 29th code point moves the password to larger slots. */
    const char *long28 = "abcdefghijklmnopqrstuvwxyzAB";
    pw = make(long28);
    EVERY_FAULT(failures, spc_password_add(pw, 'C'), CHECK(reads(pw, long28)));
    CHECK(failures >= 2 && reads(pw, "abcdefghijklmnopqrstuvwxyzABC"));
    spc_password_free(pw);
}

static void test_password_new_copy_equal_fail_cleanly(void) {
    int failures;
    spc_password *out = (spc_password *)&failures;
    EVERY_FAULT(failures, spc_password_new(&out), CHECK(out == NULL));
    CHECK(failures >= 2); /* the data slab, then the pad slab */
    spc_password_free(out);
    spc_password *a = make("4711"), *b = make("4711"), *copy = NULL;
    EVERY_FAULT(failures, spc_password_copy(a, &copy), CHECK(copy == NULL));
    CHECK(failures > 0 && password_equal(a, copy) == 1);
    EVERY_FAULT(failures, password_equal(a, b), (void)0);
    CHECK(failures >= 2);
    /* A long password copies into a grown copy. */
    spc_password *big = make("abcdefghijklmnopqrstuvwxyzABCDEF"), *big_copy = NULL;
    EVERY_FAULT(failures, spc_password_copy(big, &big_copy), CHECK(big_copy == NULL));
    CHECK(failures > 0 && reads(big_copy, "abcdefghijklmnopqrstuvwxyzABCDEF"));
    spc_password_free(a), spc_password_free(b), spc_password_free(copy);
    spc_password_free(big), spc_password_free(big_copy);
}

static int count_cb(const uint8_t *utf8, size_t len, void *ctx) {
    (void)utf8;
    *(size_t *)ctx = len;
    return 0;
}

static void test_reveal_and_import_fail_cleanly(void) {
    int failures;
    spc_password *pw = make("1234");
    spc_buffer *b = (spc_buffer *)&failures;
    size_t len = 99;
    EVERY_FAULT(failures, spc_password_reveal(pw, &b, &len), CHECK(b == NULL && len == 0));
    CHECK(failures >= 3 && len == 4);
    spc_buffer_free(b);
    size_t seen = 0;
    EVERY_FAULT(failures, spc_password_with_utf8(pw, count_cb, &seen), CHECK_EQ(seen, 0));
    CHECK(failures > 0 && seen == 4);
    REQUIRE_OK(spc_buffer_new(4, &b));
    uint8_t *p;
    REQUIRE_OK(spc_buffer_open(b, &p));
    memcpy(p, "0815", 4);
    spc_buffer_close(b);
    spc_password *got = (spc_password *)&failures;
    EVERY_FAULT(failures, spc_password_from_utf8(b, 4, &got), CHECK(got == NULL));
    CHECK(failures > 0 && reads(got, "0815"));
    spc_password_free(got), spc_password_free(pw), spc_buffer_free(b);
}

static void test_buffers_fail_cleanly(void) {
    int failures;
    spc_buffer *a = NULL, *b = NULL;
    /* Two fallible steps: finding (or mapping) a slab, then opening it to write the canary
     * (the reserved slot is given back). */
    EVERY_FAULT(failures, spc_buffer_new(32, &a), CHECK(a == NULL));
    CHECK_EQ(failures, 2);
    REQUIRE_OK(spc_buffer_new(32, &b));
    EVERY_FAULT(failures, spc_buffer_randomize(a), (void)0);
    CHECK_EQ(failures, 1);
    EVERY_FAULT(failures, buffer_equal(a, b), (void)0);
    CHECK_EQ(failures, 2);
    uint8_t *p = (uint8_t *)&failures;
    spc__fault_after(0);
    CHECK_EQ(spc_buffer_open(a, &p), SPC_E_NOMEM);
    CHECK(p == NULL);
    spc_buffer_free(a), spc_buffer_free(b);
}

static void test_kdf_and_aead_fail_cleanly(void) {
    int failures;
    spc_buffer *key, *msg, *out, *back = (spc_buffer *)&failures;
    REQUIRE_OK(spc_buffer_new(32, &key));
    REQUIRE_OK(spc_buffer_randomize(key));
    REQUIRE_OK(spc_buffer_new(5, &msg));
    REQUIRE_OK(spc_buffer_new(32, &out));
    uint8_t nonce[24] = {0}, ct[5 + 16], salt[16] = {0};
    EVERY_FAULT(failures, spc_aead_seal(SPC_AEAD_XCHACHA20POLY1305, key, nonce, 24, msg, NULL, 0, ct), (void)0);
    CHECK(failures >= 2);
    EVERY_FAULT(failures, spc_aead_open(SPC_AEAD_XCHACHA20POLY1305, key, nonce, 24, ct, sizeof ct, NULL, 0, &back),
                CHECK(back == NULL));
    CHECK(failures >= 3 && back != NULL);
    spc_buffer_free(back);
    EVERY_FAULT(failures, spc_kdf_pbkdf2_sha256((const uint8_t *)"pw", 2, salt, 16, 2, out), (void)0);
    CHECK(failures >= 3);
    spc_kdf_limits lim;
    REQUIRE_OK(spc_kdf_limits_default(&lim));
    spc_argon2_params prm = {1, 8, 1};
    spc_argon2_input in = {(const uint8_t *)"pw", 2, salt, 16, NULL, 0, NULL, 0};
    EVERY_FAULT(failures, spc_kdf_argon2id(&in, &prm, &lim, SPC_ARGON2_AUTO, out, NULL), (void)0);
    CHECK_EQ(failures, 1);
    spc_buffer_free(key), spc_buffer_free(msg), spc_buffer_free(out);
}


static void test_oprf_fails_cleanly(void) {
    int failures;
    spc_buffer *seed, *sk, *in, *blind, *out;
    REQUIRE_OK(spc_buffer_new(32, &seed));
    REQUIRE_OK(spc_buffer_randomize(seed));
    REQUIRE_OK(spc_buffer_new(32, &sk));
    REQUIRE_OK(spc_buffer_new(4, &in));
    REQUIRE_OK(spc_buffer_randomize(in));
    REQUIRE_OK(spc_buffer_new(32, &blind));
    REQUIRE_OK(spc_buffer_new(64, &out));
    uint8_t blinded[32], evaluated[32];
    EVERY_FAULT(failures, spc_oprf_derive_key(seed, (const uint8_t *)"i", 1, sk), (void)0);
    CHECK_EQ(failures, 2);
    EVERY_FAULT(failures, spc_oprf_random_scalar(blind), (void)0);
    CHECK_EQ(failures, 1);
    EVERY_FAULT(failures, spc_oprf_blind(in, blind, blinded), CHECK(sodium_is_zero(blinded, 32)));
    CHECK_EQ(failures, 2);
    EVERY_FAULT(failures, spc_oprf_blind_evaluate(sk, blinded, evaluated), CHECK(sodium_is_zero(evaluated, 32)));
    CHECK_EQ(failures, 1);
    EVERY_FAULT(failures, spc_oprf_finalize(in, blind, evaluated, out), (void)0);
    CHECK_EQ(failures, 3);
    spc_buffer_free(seed), spc_buffer_free(sk), spc_buffer_free(in), spc_buffer_free(blind), spc_buffer_free(out);
}

int main(void) {
    REQUIRE_OK(spc_init());
    RUN(test_password_edits_fail_cleanly);
    RUN(test_password_new_copy_equal_fail_cleanly);
    RUN(test_reveal_and_import_fail_cleanly);
    RUN(test_buffers_fail_cleanly);
    RUN(test_kdf_and_aead_fail_cleanly);
    RUN(test_oprf_fails_cleanly);
    spc_pool_stats st;
    REQUIRE_OK(spc_pool_stats_get(&st));
    CHECK_EQ(st.slots_in_use, 0); /* every failure released what it had taken */
    return check_summary("c-faults");
}
