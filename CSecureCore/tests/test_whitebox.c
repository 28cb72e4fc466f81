/* test_whitebox.c — checks of the password buffer's private state: after any
 * edit, positions at or past the length hold zero in both data and pad, and
 * every edit replaces every pad word. Built with password.c included, so the
 * test can see the layout without the library exporting it. */
#define _GNU_SOURCE
#include "../password.c"
#include "check.h"

/* Every word past the length is zero in data and pad. */
static int tail_clear(spc_password *pw) {
    view v;
    if (view_open(pw, &v) != SPC_OK) return 0;
    int clear = 1;
    for (size_t k = pw->length; k < pw->capacity; k++) clear &= v.d[k] == 0 && v.p[k] == 0;
    view_close(pw);
    return clear;
}

/* Copies of the pad words, to check they all change on an edit. */
static void pad_snapshot(spc_password *pw, uint32_t *out, size_t n) {
    view v;
    REQUIRE_OK(view_open(pw, &v));
    memcpy(out, v.p, n * 4);
    view_close(pw);
}

static void test_tail_is_clear_after_every_edit(void) {
    spc_password *pw;
    REQUIRE_OK(spc_password_new(&pw));
    for (uint32_t c = 0; c < 40; c++) REQUIRE_OK(spc_password_add(pw, 0x41 + c)); /* grows twice */
    CHECK(tail_clear(pw));
    REQUIRE_OK(spc_password_remove(pw, 0));
    CHECK(tail_clear(pw));
    REQUIRE_OK(spc_password_remove(pw, 17));
    CHECK(tail_clear(pw));
    REQUIRE_OK(spc_password_remove_last(pw));
    CHECK(tail_clear(pw));
    REQUIRE_OK(spc_password_insert(pw, 5, 0x1F600));
    CHECK(tail_clear(pw));
    while (pw->length > 0) {
        REQUIRE_OK(spc_password_remove_last(pw));
        CHECK(tail_clear(pw));
    }
    REQUIRE_OK(spc_password_add(pw, 'x'));
    REQUIRE_OK(spc_password_clear(pw));
    CHECK(tail_clear(pw));
    spc_password_free(pw);
}

static void test_every_edit_replaces_every_pad_word(void) {
    spc_password *pw;
    REQUIRE_OK(spc_password_new(&pw));
    for (uint32_t c = 0; c < 8; c++) REQUIRE_OK(spc_password_add(pw, '0' + c));
    uint32_t before[8], after[8];
    pad_snapshot(pw, before, 8);
    REQUIRE_OK(spc_password_add(pw, '9'));
    pad_snapshot(pw, after, 8);
    int changed = 0;
    for (int k = 0; k < 8; k++) changed += before[k] != after[k];
    CHECK(changed >= 7); /* a 32-bit pad word repeats by chance with probability 2^-32 */
    pad_snapshot(pw, before, 8);
    REQUIRE_OK(spc_password_remove(pw, 3));
    pad_snapshot(pw, after, 8);
    changed = 0;
    for (int k = 0; k < 8; k++) changed += before[k] != after[k];
    CHECK(changed >= 7);
    /* The scrambled data never equals the plaintext it hides (for 8 words
     * this fails by chance with probability 8 * 2^-32). */
    view v;
    REQUIRE_OK(view_open(pw, &v));
    int plain_visible = 0;
    for (size_t k = 0; k < pw->length; k++) plain_visible += (v.d[k] ^ v.p[k]) == v.d[k];
    view_close(pw);
    CHECK(plain_visible == 0);
    spc_password_free(pw);
}

int main(void) {
    REQUIRE_OK(spc_init());
    RUN(test_tail_is_clear_after_every_edit);
    RUN(test_every_edit_replaces_every_pad_word);
    return check_summary("c-whitebox");
}
