/* fuzz_utf8_password.c — libFuzzer target: spc_password_from_utf8 and reveal.
 *
 * Oracles: (1) the core accepts exactly the well-formed UTF-8 of RFC 3629
 * (checked against the plain reference validator below, test code only);
 * (2) whatever it accepts reveals back to the very same bytes; (3) ASan and
 * UBSan see no invalid access anywhere on the way. */
#include "secure_core.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Reference validator (RFC 3629, section 4): 1 when well-formed; counts code points. */
static int reference_valid(const uint8_t *s, size_t n, size_t *cps) {
    size_t i = 0;
    *cps = 0;
    while (i < n) {
        uint8_t c = s[i];
        size_t len;
        uint32_t lo = 0x80, hi = 0xBF;
        if (c < 0x80) len = 1;
        else if (c >= 0xC2 && c <= 0xDF) len = 2;
        else if (c == 0xE0) len = 3, lo = 0xA0;
        else if (c == 0xED) len = 3, hi = 0x9F;
        else if (c >= 0xE1 && c <= 0xEF) len = 3;
        else if (c == 0xF0) len = 4, lo = 0x90;
        else if (c == 0xF4) len = 4, hi = 0x8F;
        else if (c >= 0xF1 && c <= 0xF3) len = 4;
        else return 0;
        if (len > n - i) return 0;
        if (len > 1 && (s[i + 1] < lo || s[i + 1] > hi)) return 0;
        for (size_t k = 2; k < len; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF) return 0;
        i += len;
        ++*cps;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready;
    if (!ready) {
        if (spc_init() != SPC_OK) abort();
        ready = 1;
    }
    spc_buffer *in;
    uint8_t *p;
    if (spc_buffer_new(size == 0 ? 1 : size, &in) != SPC_OK || spc_buffer_open(in, &p) != SPC_OK) abort();
    if (size > 0) memcpy(p, data, size);
    spc_buffer_close(in);
    spc_password *pw;
    int rc = spc_password_from_utf8(in, size, &pw);
    size_t cps;
    int valid = reference_valid(data, size, &cps);
    if (!valid && rc != SPC_E_UTF8 && rc != SPC_E_TOO_LONG) abort();   /* accepted ill-formed input */
    if (valid && cps <= SPC_PASSWORD_MAX && rc != SPC_OK) abort();     /* refused well-formed input */
    if (valid && cps > SPC_PASSWORD_MAX && rc != SPC_E_TOO_LONG) abort();
    if ((rc == SPC_OK) != (pw != NULL)) abort();
    if (rc == SPC_OK) {
        if (spc_password_length(pw) != cps) abort();
        spc_buffer *out;
        size_t len;
        if (spc_password_reveal(pw, &out, &len) != SPC_OK || len != size) abort();
        if (out != NULL) {
            uint8_t *q;
            if (spc_buffer_open(out, &q) != SPC_OK) abort();
            if (memcmp(q, data, size) != 0) abort(); /* the round trip changed the text */
            spc_buffer_close(out);
            spc_buffer_free(out);
        }
        spc_password_free(pw);
    }
    spc_buffer_free(in);
    return 0;
}
