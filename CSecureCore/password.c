/* password.c — a password as scrambled Unicode code points.
 *
 * data[k] = cp[k] XOR pad[k], one 32-bit word per code point. data and pad
 * live in different slab pools. Every edit draws a new pad word for every
 * position and re-scrambles in place: a plaintext code point exists only in
 * a register, never in memory. Positions at or past the length hold zero in
 * both arrays, so nothing stale survives an edit.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#include <sodium.h>

struct spc_password {
    spc_buffer *data;
    spc_buffer *pad;
    size_t length;   /* code points */
    size_t capacity; /* code points the two buffers can hold */
};

/* An open password: both buffers mapped for the duration of one operation. */
typedef struct {
    uint32_t *d;
    uint32_t *p;
} view;

static int view_open(spc_password *pw, view *v) {
    uint8_t *d, *p;
    int rc = spc_buffer_open(pw->data, &d);
    if (rc != SPC_OK) return rc;
    rc = spc_buffer_open(pw->pad, &p);
    if (rc != SPC_OK) {
        spc_buffer_close(pw->data);
        return rc;
    }
    v->d = (uint32_t *)(void *)d; /* slots are 16-byte aligned */
    v->p = (uint32_t *)(void *)p;
    return SPC_OK;
}

static void view_close(spc_password *pw) {
    spc_buffer_close(pw->pad);
    spc_buffer_close(pw->data);
}

/* Allocate data and pad for at least `cap` code points (zero-filled). */
static int storage_new(size_t cap, spc_buffer **data, spc_buffer **pad, size_t *got) {
    size_t bytes = spc__buffer_slot_capacity(cap * 4);
    int rc = spc__buffer_new_in(SPC_POOL_DATA, bytes, data);
    if (rc != SPC_OK) return rc;
    rc = spc__buffer_new_in(SPC_POOL_PAD, bytes, pad);
    if (rc != SPC_OK) {
        spc_buffer_free(*data);
        *data = NULL;
        return rc;
    }
    *got = bytes / 4;
    return SPC_OK;
}

spc_status spc_password_new(spc_password **out) {
    *out = NULL;
    if (!spc__ready()) return SPC_E_INIT;
    spc_password *pw = calloc(1, sizeof *pw);
    if (pw == NULL) return SPC_E_NOMEM;
    int rc = storage_new(16, &pw->data, &pw->pad, &pw->capacity);
    if (rc != SPC_OK) {
        free(pw);
        return rc;
    }
    *out = pw;
    return SPC_OK;
}

void spc_password_free(spc_password *pw) {
    if (pw == NULL) return;
    spc_buffer_free(pw->data); /* wipes */
    spc_buffer_free(pw->pad);
    free(pw);
}

size_t spc_password_length(const spc_password *pw) { return pw->length; }

unsigned spc_password_protection(const spc_password *pw) {
    return spc_buffer_protection(pw->data) & spc_buffer_protection(pw->pad);
}

/* Re-scramble positions [0, n) of `from` into `to` under fresh pad words.
 * `to` may equal `from` (in-place refresh). `r` holds n random words. */
static void transfer(view *to, const view *from, size_t n, const uint32_t *r) {
    for (size_t k = 0; k < n; k++) {
        uint32_t d = from->d[k] ^ from->p[k] ^ r[k];
        to->d[k] = d;
        to->p[k] = r[k];
    }
}

/* Copy the first src->length code points of `src` into `dst` (which holds at
 * least that many) under a fresh pad: the two never share a scrambling. Both
 * are opened and closed here; on failure nothing is written. */
static int copy_rescrambled(spc_password *dst, spc_password *src) {
    view from, to;
    int rc = view_open(src, &from);
    if (rc != SPC_OK) return rc;
    if ((rc = view_open(dst, &to)) != SPC_OK) {
        view_close(src);
        return rc;
    }
    uint32_t r[SPC_PASSWORD_MAX];
    randombytes_buf(r, src->length * 4);
    transfer(&to, &from, src->length, r);
    sodium_memzero(r, src->length * 4);
    view_close(dst);
    view_close(src);
    return SPC_OK;
}

/* Move to storage that holds `cap` code points. */
static int grow(spc_password *pw, size_t cap) {
    spc_buffer *nd, *np;
    size_t got;
    int rc = storage_new(cap, &nd, &np, &got);
    if (rc != SPC_OK) return rc;
    spc_password fresh = {nd, np, pw->length, got};
    if ((rc = copy_rescrambled(&fresh, pw)) != SPC_OK) goto fail;
    spc_buffer_free(pw->data);
    spc_buffer_free(pw->pad);
    pw->data = nd;
    pw->pad = np;
    pw->capacity = got;
    return SPC_OK;
fail:
    spc_buffer_free(nd);
    spc_buffer_free(np);
    return rc;
}

spc_status spc_password_insert(spc_password *pw, size_t index, uint32_t cp) {
    if (index > pw->length) return SPC_E_RANGE;
    uint32_t valid = spc__scalar_ok(cp);
    SPC_DECLASSIFY(&valid, sizeof valid); /* the accept/reject bit is the documented disclosure */
    if (!valid) return SPC_E_CODEPOINT;  /* the one branch on it */
    if (pw->length + 1 > SPC_PASSWORD_MAX) return SPC_E_TOO_LONG;
    int rc;
    if (pw->length + 1 > pw->capacity && (rc = grow(pw, pw->length + 1)) != SPC_OK) return rc;
    view v;
    if ((rc = view_open(pw, &v)) != SPC_OK) return rc;
    size_t n = pw->length;
    uint32_t r[SPC_PASSWORD_MAX];
    randombytes_buf(r, (n + 1) * 4);
    /* Top down, so pad[k-1] is still the old pad when position k is written. */
    for (size_t k = n; k > index; k--) {
        v.d[k] = v.d[k - 1] ^ v.p[k - 1] ^ r[k];
        v.p[k] = r[k];
    }
    v.d[index] = cp ^ r[index];
    v.p[index] = r[index];
    transfer(&v, &v, index, r);
    sodium_memzero(r, (n + 1) * 4);
    pw->length = n + 1;
    view_close(pw);
    return SPC_OK;
}

spc_status spc_password_add(spc_password *pw, uint32_t cp) { return spc_password_insert(pw, pw->length, cp); }

spc_status spc_password_remove(spc_password *pw, size_t index) {
    if (index >= pw->length) return SPC_E_RANGE;
    view v;
    int rc = view_open(pw, &v);
    if (rc != SPC_OK) return rc;
    size_t n = pw->length;
    uint32_t r[SPC_PASSWORD_MAX];
    randombytes_buf(r, n * 4);
    transfer(&v, &v, index, r);
    /* Bottom up, so pad[k+1] is still the old pad when position k is written. */
    for (size_t k = index; k + 1 < n; k++) {
        v.d[k] = v.d[k + 1] ^ v.p[k + 1] ^ r[k];
        v.p[k] = r[k];
    }
    v.d[n - 1] = 0;
    v.p[n - 1] = 0;
    sodium_memzero(r, n * 4);
    pw->length = n - 1;
    view_close(pw);
    return SPC_OK;
}

spc_status spc_password_remove_last(spc_password *pw) {
    if (pw->length == 0) return SPC_E_RANGE;
    return spc_password_remove(pw, pw->length - 1);
}

spc_status spc_password_clear(spc_password *pw) {
    view v;
    int rc = view_open(pw, &v);
    if (rc != SPC_OK) return rc;
    sodium_memzero(v.d, pw->capacity * 4);
    sodium_memzero(v.p, pw->capacity * 4);
    pw->length = 0;
    view_close(pw);
    return SPC_OK;
}

spc_status spc_password_copy(spc_password *pw, spc_password **out) {
    int rc = spc_password_new(out);
    if (rc != SPC_OK) return rc;
    spc_password *c = *out;
    if (pw->length > c->capacity && (rc = grow(c, pw->length)) != SPC_OK) goto fail;
    if ((rc = copy_rescrambled(c, pw)) != SPC_OK) goto fail;
    c->length = pw->length;
    return SPC_OK;
fail:
    spc_password_free(c);
    *out = NULL;
    return rc;
}

spc_status spc_password_equal(spc_password *a, spc_password *b, int *equal) {
    *equal = 0;
    view va, vb;
    int rc = view_open(a, &va);
    if (rc != SPC_OK) return rc;
    if ((rc = view_open(b, &vb)) != SPC_OK) {
        view_close(a);
        return rc;
    }
    size_t n = a->length < b->length ? a->length : b->length;
    uint32_t diff = 0;
    for (size_t k = 0; k < n; k++) diff |= (va.d[k] ^ va.p[k]) ^ (vb.d[k] ^ vb.p[k]);
    view_close(b);
    view_close(a);
    uint32_t same_len = spc__mask_eq(a->length, b->length);
    *equal = (int)(1u & same_len & spc__mask_eq(diff, 0));
    return SPC_OK;
}

int spc__password_read_all(spc_password *pw, void (*sink)(uint32_t cp, size_t k, void *ctx), void *ctx) {
    view v;
    int rc = view_open(pw, &v);
    if (rc != SPC_OK) return rc;
    for (size_t k = 0; k < pw->length; k++) sink(v.d[k] ^ v.p[k], k, ctx);
    view_close(pw);
    return SPC_OK;
}
