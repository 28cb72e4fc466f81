/* ctgrind_protocol.c — the constant-time audit of the protocol target
 * (CProtocolCrypto), by the method of CSecureCore/tests/ctgrind.c: run under
 * valgrind memcheck, every secret input is marked undefined, and memcheck
 * reports any conditional jump or memory address that depends on it. A
 * verdict that is public by contract is marked defined before the harness
 * branches on it. Must produce no memcheck error at all; the suppression file
 * is the core's (CSecureCore/tests/ctgrind.supp) and covers only documented
 * library internals. The core's harness holds the --leaky proof that the
 * method can fail.
 */
#define _GNU_SOURCE
#include "protocol_crypto.h"
#include "check.h"

#include <string.h>

#include <valgrind/memcheck.h>

#define SECRET(p, n) VALGRIND_MAKE_MEM_UNDEFINED((p), (n))
#define PUBLIC(p, n) VALGRIND_MAKE_MEM_DEFINED((p), (n))

/* The verdict of a call is public: declassify it before looking at it. */
static int verdict(int rc) {
    PUBLIC(&rc, sizeof rc);
    return rc;
}

static void ct_knowledge_unwrap(void) {
    uint8_t pin[6], salt[16], key[16], wrapped[16], got[16];
    memcpy(pin, "482915", 6);
    memset(salt, 0x5A, sizeof salt);
    for (int i = 0; i < 16; i++) key[i] = (uint8_t)(i * 37 + 1);
    REQUIRE_OK(spc_knowledge_key_wrap(pin, 6, salt, SPC_KNOWLEDGE_MEMORY_MIN_KIB, 1, key, wrapped));
    SECRET(pin, sizeof pin);
    REQUIRE_OK(verdict(spc_knowledge_key_unwrap(pin, 6, salt, SPC_KNOWLEDGE_MEMORY_MIN_KIB, 1, wrapped, got)));
    PUBLIC(got, sizeof got);
    CHECK(memcmp(got, key, 16) == 0);
    memcpy(pin, "482916", 6); /* a wrong PIN: a different key, never a status */
    SECRET(pin, sizeof pin);
    REQUIRE_OK(verdict(spc_knowledge_key_unwrap(pin, 6, salt, SPC_KNOWLEDGE_MEMORY_MIN_KIB, 1, wrapped, got)));
    PUBLIC(got, sizeof got);
    CHECK(memcmp(got, key, 16) != 0);
}

/* The server's check of an authentication code: the expected code is
 * secret until it matches; the presented one is the attacker's. */
static void ct_authcode_compare(void) {
    uint8_t k1[16], k2[16], ctr[16], expected[64], presented[64];
    memset(k1, 1, 16), memset(k2, 2, 16), memset(ctr, 3, 16);
    const uint8_t *keys[] = {k1, k2};
    SECRET(k1, 16), SECRET(k2, 16);
    REQUIRE_OK(verdict(spc_authcode_compute(keys, 2, ctr, (const uint8_t *)"GET&/pa/status", 14, expected, 64)));
    memcpy(presented, expected, 64); /* copies the undefinedness: harmless for a harness */
    PUBLIC(presented, 64);
    CHECK_EQ(verdict(spc_bytes_equal(expected, presented, 64)), 1);
    presented[0] ^= 0x10;
    CHECK_EQ(verdict(spc_bytes_equal(expected, presented, 64)), 0);
    presented[0] ^= 0x10, presented[63] ^= 0x01;
    CHECK_EQ(verdict(spc_bytes_equal(expected, presented, 64)), 0);
}

int main(void) {
    REQUIRE_OK(spc_init());
    /* valgrind (3.19) does not implement memfd_secret: ask for the pool's
     * fallback outright (the property checked is the code's). */
    REQUIRE_OK(spc_pool_set_secretmem(0));
    RUN(ct_knowledge_unwrap);
    RUN(ct_authcode_compare);
    return check_summary("ctgrind-protocol");
}
