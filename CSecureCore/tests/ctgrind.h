/* ctgrind.h — the harness shared by the two constant-time audits
 * (CSecureCore/tests/ctgrind.c and CProtocolCrypto/tests/ctgrind_protocol.c):
 * marking secrets undefined and verdicts defined for valgrind memcheck, and
 * building secret inputs. Include after check.h. */
#ifndef SPC_CTGRIND_H
#define SPC_CTGRIND_H

#include "secure_core.h"

#include <string.h>

#include <valgrind/memcheck.h>

#define SECRET(p, n) VALGRIND_MAKE_MEM_UNDEFINED((p), (n))
#define PUBLIC(p, n) VALGRIND_MAKE_MEM_DEFINED((p), (n))

/* The verdict of a call is public: declassify it before looking at it. */
static inline int verdict(int rc) {
    PUBLIC(&rc, sizeof rc);
    return rc;
}

/* An equality call: its status must be SPC_OK; its verdict is public. */
static inline int equal_verdict(int rc, const int *equal) {
    CHECK_EQ(verdict(rc), SPC_OK);
    int v = *equal;
    PUBLIC(&v, sizeof v);
    return v;
}

/* A secure buffer holding `bytes`, marked secret once written. */
static inline spc_buffer *secret_buffer(const uint8_t *bytes, size_t n) {
    spc_buffer *b;
    uint8_t *p;
    REQUIRE_OK(spc_buffer_new(n, &b));
    REQUIRE_OK(spc_buffer_open(b, &p));
    memcpy(p, bytes, n);
    SECRET(p, n);
    spc_buffer_close(b);
    return b;
}

/* A password (or PIN) whose code points are secret from the moment they are added. */
static inline spc_password *secret_password(const char *ascii) {
    spc_password *pw;
    REQUIRE_OK(spc_password_new(&pw));
    for (size_t i = 0; ascii[i] != 0; i++) {
        uint32_t cp = (uint8_t)ascii[i];
        SECRET(&cp, sizeof cp);
        REQUIRE_OK(verdict(spc_password_add(pw, cp)));
    }
    return pw;
}

#endif
