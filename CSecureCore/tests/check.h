/* check.h — a minimal test harness for the C core's tests. */
#ifndef SPC_CHECK_H
#define SPC_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_passed, check_failed;

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (cond) {                                                              \
            check_passed++;                                                      \
        } else {                                                                 \
            check_failed++;                                                      \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                        \
    } while (0)

#define CHECK_EQ(a, b) CHECK((long long)(a) == (long long)(b))

#define REQUIRE_OK(expr)                                                         \
    do {                                                                         \
        int rc_ = (expr);                                                        \
        if (rc_ != 0) {                                                          \
            fprintf(stderr, "%s:%d: %s returned %d\n", __FILE__, __LINE__, #expr, rc_); \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

#define RUN(test)                                                                \
    do {                                                                         \
        int before_ = check_failed;                                              \
        test();                                                                  \
        printf("%-44s %s\n", #test, check_failed == before_ ? "ok" : "FAILED");  \
    } while (0)

/* Decodes test-vector hex into `out`; returns the byte count. */
static inline size_t unhex(const char *hex, uint8_t *out) {
    size_t n = strlen(hex) / 2;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        out[i] = (uint8_t)v;
    }
    return n;
}

#ifdef SECURE_CORE_H
/* An equality call as one number for CHECK_EQ: the verdict (0 or 1) when the
 * call succeeded, its negative status when it failed, after checking that a
 * failure left the verdict at 0 (an error must never read as "equal"). */
static inline int equal_result(int rc, int equal) {
    if (rc != SPC_OK) {
        CHECK_EQ(equal, 0);
        return rc;
    }
    CHECK(equal == 0 || equal == 1);
    return equal;
}
static inline int buffer_equal(spc_buffer *a, spc_buffer *b) {
    int equal = -1;
    int rc = spc_buffer_equal(a, b, &equal);
    return equal_result(rc, equal);
}
static inline int password_equal(spc_password *a, spc_password *b) {
    int equal = -1;
    int rc = spc_password_equal(a, b, &equal);
    return equal_result(rc, equal);
}
static inline int bytes_equal(const uint8_t *a, const uint8_t *b, size_t len) {
    int equal = -1;
    int rc = spc_bytes_equal(a, b, len, &equal);
    return equal_result(rc, equal);
}
#endif

/* What /proc/self/maps says of the page holding `p`: 1 readable, 0 no-access, -1 not mapped. */
static inline int readable(const void *p) {
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f != NULL);
    if (f == NULL) return -1;
    char line[512], perms[8];
    int result = -1;
    while (result < 0 && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && (uintptr_t)p >= lo && (uintptr_t)p < hi)
            result = perms[0] == 'r';
    }
    fclose(f);
    return result;
}

static int check_summary(const char *suite) {
    printf("%s: %d passed, %d failed\n", suite, check_passed, check_failed);
    return check_failed == 0 ? 0 : 1;
}

#endif
