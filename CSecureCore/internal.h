/* internal.h — declarations shared between the core's .c files, never exported. */
#ifndef SPC_INTERNAL_H
#define SPC_INTERNAL_H

#include "secure_core.h"

/* Two slab pools keep a password's scrambled data and its pad on different
 * pages, so a single leaked page never holds both halves. A third takes the
 * data-pool allocations made inside a request scope (spc_scope_begin), so the
 * slabs a scope keeps open never hold a secret made outside one. */
enum { SPC_POOL_DATA = 0, SPC_POOL_PAD = 1, SPC_POOL_SCRATCH = 2, SPC_POOL_COUNT = 3 };

/* spc_buffer_new, but from a chosen pool. */
SPC_MUST_CHECK int spc__buffer_new_in(int pool, size_t size, spc_buffer **out);

/* Usable bytes of the slot the buffer occupies (>= its size). */
size_t spc__buffer_slot_capacity(size_t size);

/* Nonzero after a successful spc_init(). */
int spc__ready(void);

/* SPC_DECLASSIFY marks a value derived from a secret as public on purpose:
 * an accept/reject verdict or a length the header documents as revealed.
 * It compiles to nothing, except in the constant-time audit build
 * (-DSPC_CTGRIND), where it tells valgrind the value may be branched on.
 * Every use is a reviewed, documented disclosure; grep for it. */
#ifdef SPC_CTGRIND
#include <valgrind/memcheck.h>
#define SPC_DECLASSIFY(ptr, len) ((void)VALGRIND_MAKE_MEM_DEFINED((ptr), (len)))
#else
#define SPC_DECLASSIFY(ptr, len) ((void)0)
#endif

/* Fault injection, for the tests of error paths only: with
 * -DSPC_FAULT_INJECTION, SPC_FAULT() makes the n-th next fallible step (an
 * open or a slab allocation) fail as if the kernel had refused it, n being set
 * by spc__fault_after(n) (-1: never). Production builds do not define it and
 * SPC_FAULT() is the constant 0, which the compiler removes. */
#ifdef SPC_FAULT_INJECTION
int spc__fault(void);
void spc__fault_after(long n);
#define SPC_FAULT() spc__fault()
#else
#define SPC_FAULT() 0
#endif

/* Branch-free helpers: all return 0 or all-ones (uint32_t). */
static inline uint32_t spc__mask_lt(uint64_t a, uint64_t b) { return (uint32_t)0 - (uint32_t)((a - b) >> 63); }
static inline uint32_t spc__mask_eq(uint64_t a, uint64_t b) { return ~(spc__mask_lt(a, b) | spc__mask_lt(b, a)); }

/* 1 when cp is a Unicode scalar value (not a surrogate, <= U+10FFFF), branch-free. */
static inline uint32_t spc__scalar_ok(uint32_t cp) {
    uint32_t above = (uint32_t)(((uint64_t)0x10FFFF - cp) >> 63);
    uint32_t surrogate = (uint32_t)(((uint64_t)((cp >> 11) ^ 0x1Bu) - 1) >> 63);
    return 1u & ~(above | surrogate);
}

/* Hand every code point, in order, to `sink` (the value lives in a register
 * and in the sink's own secure scratch only). */
SPC_MUST_CHECK int spc__password_read_all(spc_password *pw, void (*sink)(uint32_t cp, size_t k, void *ctx), void *ctx);

#endif
