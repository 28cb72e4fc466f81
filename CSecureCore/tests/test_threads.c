/* test_threads.c — the pool under threads: buffers of shared slabs opened and
 * closed at once from several threads, request scopes holding scratch slabs
 * while other threads allocate from and free into them, slabs of their own
 * made and unmapped. A page made no-access while another thread reads it
 * crashes the test; a slab released twice or leaked shows in the sanitizer
 * builds (this file is also built with -fsanitize=thread) and in the pool's
 * counts at the end. */
#define _GNU_SOURCE
#include "secure_core.h"
#include "check.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define THREADS 4
#define ROUNDS 1500
#define SHARED 8

static spc_buffer *shared[SHARED];

struct worker {
    unsigned id;
    unsigned errors;  /* wrong bytes read, or a call that failed */
    unsigned checked; /* buffers read back whole */
};

static uint8_t pattern(unsigned owner, unsigned round, size_t i) { return (uint8_t)(owner * 31 + round * 7 + i); }

/* Every shared buffer holds its index in every byte. */
static void read_shared(struct worker *w, unsigned k) {
    uint8_t *p;
    if (spc_buffer_open(shared[k], &p) != SPC_OK) {
        w->errors++;
        return;
    }
    for (size_t i = 0; i < spc_buffer_size(shared[k]); i++) w->errors += p[i] != (uint8_t)k;
    spc_buffer_close(shared[k]);
    w->checked++;
}

/* Writes a private buffer, reads it back, and frees it. */
static void private_buffer(struct worker *w, unsigned round, size_t size, spc_buffer **keep) {
    spc_buffer *b;
    uint8_t *p;
    if (spc_buffer_new(size, &b) != SPC_OK) {
        w->errors++;
        return;
    }
    if (spc_buffer_open(b, &p) != SPC_OK) {
        w->errors++;
        spc_buffer_free(b);
        return;
    }
    for (size_t i = 0; i < size; i++) p[i] = pattern(w->id, round, i);
    spc_buffer_close(b);
    read_shared(w, (w->id + round) % SHARED);
    if (spc_buffer_open(b, &p) != SPC_OK) {
        w->errors++;
    } else {
        for (size_t i = 0; i < size; i++) w->errors += p[i] != pattern(w->id, round, i);
        spc_buffer_close(b);
        w->checked++;
    }
    if (keep != NULL && *keep == NULL) {
        *keep = b; /* freed later, maybe after its scope ended */
        return;
    }
    spc_buffer_free(b);
}

static void *work(void *arg) {
    struct worker *w = arg;
    spc_buffer *kept = NULL;
    for (unsigned round = 0; round < ROUNDS; round++) {
        int scoped = round % 2 == 0;
        if (scoped && spc_scope_begin() != SPC_OK) w->errors++;
        private_buffer(w, round, 32, NULL);
        private_buffer(w, round, 200 + w->id, &kept);
        if (round % 5 == 0) private_buffer(w, round, 3000, NULL); /* a slab of its own */
        read_shared(w, round % SHARED);
        if (scoped) spc_scope_end();
        if (kept != NULL && round % 3 == 2) {
            spc_buffer_free(kept);
            kept = NULL;
        }
    }
    spc_buffer_free(kept);
    return NULL;
}

static void test_threads_share_the_pool(void) {
    spc_pool_stats before, after;
    REQUIRE_OK(spc_pool_stats_get(&before));
    for (unsigned k = 0; k < SHARED; k++) {
        uint8_t *p;
        REQUIRE_OK(spc_buffer_new(24 + k, &shared[k]));
        REQUIRE_OK(spc_buffer_open(shared[k], &p));
        memset(p, (int)k, spc_buffer_size(shared[k]));
        spc_buffer_close(shared[k]);
    }
    pthread_t threads[THREADS];
    struct worker workers[THREADS];
    for (unsigned t = 0; t < THREADS; t++) {
        workers[t] = (struct worker){.id = t};
        CHECK_EQ(pthread_create(&threads[t], NULL, work, &workers[t]), 0);
    }
    unsigned checked = 0;
    for (unsigned t = 0; t < THREADS; t++) {
        CHECK_EQ(pthread_join(threads[t], NULL), 0);
        CHECK_EQ(workers[t].errors, 0);
        checked += workers[t].checked;
    }
    /* Each round reads back at least two private buffers and three shared ones. */
    CHECK(checked >= THREADS * ROUNDS * 5);
    uint8_t *p;
    REQUIRE_OK(spc_buffer_open(shared[0], &p));
    spc_buffer_close(shared[0]);
    CHECK_EQ(readable(p), 0); /* every open closed: the shared slab is no-access again */
    CHECK(spc_buffer_protection(shared[0]) & SPC_PROT_NOACCESS_IDLE);
    for (unsigned k = 0; k < SHARED; k++) spc_buffer_free(shared[k]);
    REQUIRE_OK(spc_pool_stats_get(&after));
    CHECK_EQ(after.slots_in_use, before.slots_in_use); /* every slot given back */
    CHECK_EQ(after.slabs, before.slabs);               /* every slab made here unmapped */
    printf("  %u threads x %u rounds, %u buffers read back whole\n", THREADS, ROUNDS, checked);
}

int main(void) {
    REQUIRE_OK(spc_init());
    RUN(test_threads_share_the_pool);
    return check_summary("c-threads");
}
