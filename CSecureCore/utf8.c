/* utf8.c — moving a password between code points and UTF-8.
 *
 * reveal: branch-free. Each character's width and bytes are computed with
 * masks; each output byte is then gathered from every candidate character
 * with equality masks, so no branch and no memory address depends on a code
 * point (the cost is quadratic, bounded by SPC_PASSWORD_MAX).
 * from_utf8: an import path; it branches on each character's byte-length
 * class (documented in the header), never on its value.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#include <sodium.h>

/* Per character: 4 encoded bytes, width and start offset (secret scratch). */
typedef struct {
    uint8_t b[4];
    uint32_t width;
    uint32_t pos;
} enc;

static void encode(uint32_t cp, enc *e) {
    uint32_t m2 = spc__mask_lt(0x7F, cp);    /* >= 0x80    */
    uint32_t m3 = spc__mask_lt(0x7FF, cp);   /* >= 0x800   */
    uint32_t m4 = spc__mask_lt(0xFFFF, cp);  /* >= 0x10000 */
    uint32_t w1 = ~m2, w2 = m2 & ~m3, w3 = m3 & ~m4, w4 = m4;
    uint32_t c6 = 0x80 | (cp & 0x3F), c12 = 0x80 | ((cp >> 6) & 0x3F), c18 = 0x80 | ((cp >> 12) & 0x3F);
    e->b[0] = (uint8_t)((w1 & cp) | (w2 & (0xC0 | (cp >> 6))) | (w3 & (0xE0 | (cp >> 12))) | (w4 & (0xF0 | (cp >> 18))));
    e->b[1] = (uint8_t)((w2 & c6) | (w3 & c12) | (w4 & c18));
    e->b[2] = (uint8_t)((w3 & c6) | (w4 & c12));
    e->b[3] = (uint8_t)(w4 & c6);
    e->width = 1 + (m2 & 1) + (m3 & 1) + (m4 & 1);
}

/* Assign each character its start offset; returns the total byte length. */
static size_t layout(enc *e, size_t n) {
    size_t total = 0;
    for (size_t k = 0; k < n; k++) {
        e[k].pos = (uint32_t)total;
        total += e[k].width;
    }
    return total;
}

/* Gather output byte j from all characters that could cover it. */
static void place(const enc *e, size_t n, uint8_t *out, size_t total) {
    for (size_t j = 0; j < total; j++) {
        uint32_t acc = 0;
        size_t lo = j / 4 > 0 ? j / 4 - 1 : 0; /* char k starts at >= k, ends <= 4k+3 */
        size_t hi = j < n ? j + 1 : n;
        for (size_t k = lo; k < hi; k++)
            for (uint32_t t = 0; t < 4; t++)
                acc |= e[k].b[t] & spc__mask_eq((uint64_t)e[k].pos + t, j) & spc__mask_lt(t, e[k].width);
        out[j] = (uint8_t)acc;
    }
}

static void sink_encode(uint32_t cp, size_t k, void *ctx) { encode(cp, &((enc *)ctx)[k]); }

spc_status spc_password_reveal(spc_password *pw, spc_buffer **out, size_t *len) {
    *out = NULL;
    *len = 0;
    size_t n = spc_password_length(pw);
    if (n == 0) return SPC_OK;
    spc_buffer *scratch;
    int rc = spc_buffer_new(n * sizeof(enc), &scratch);
    if (rc != SPC_OK) return rc;
    uint8_t *sp;
    if ((rc = spc_buffer_open(scratch, &sp)) != SPC_OK) goto done;
    enc *e = (enc *)(void *)sp;
    if ((rc = spc__password_read_all(pw, sink_encode, e)) != SPC_OK) goto close;
    size_t total = layout(e, n);
    SPC_DECLASSIFY(&total, sizeof total); /* the byte length is public (header) */
    spc_buffer *res;
    uint8_t *rp;
    if ((rc = spc_buffer_new(total, &res)) != SPC_OK) goto close;
    if ((rc = spc_buffer_open(res, &rp)) != SPC_OK) {
        spc_buffer_free(res);
        goto close;
    }
    place(e, n, rp, total);
    spc_buffer_close(res);
    *out = res;
    *len = total;
close:
    spc_buffer_close(scratch);
done:
    spc_buffer_free(scratch); /* wipes the per-character scratch */
    return rc;
}

spc_status spc_password_with_utf8(spc_password *pw, spc_reveal_fn fn, void *ctx) {
    spc_buffer *b;
    size_t len;
    int rc = spc_password_reveal(pw, &b, &len);
    if (rc != SPC_OK) return rc;
    static const uint8_t empty[1] = {0};
    uint8_t *p = (uint8_t *)empty;
    if (b != NULL && (rc = spc_buffer_open(b, &p)) != SPC_OK) {
        spc_buffer_free(b);
        return rc;
    }
    int cb = fn(b != NULL ? p : empty, len, ctx);
    if (b != NULL) {
        spc_buffer_close(b);
        spc_buffer_free(b);
    }
    return cb == 0 ? SPC_OK : SPC_E_CALLBACK;
}

/* Length of the sequence a lead byte starts (0 = invalid lead). */
static size_t seq_len(uint8_t c) {
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return 2;
    if (c >= 0xE0 && c <= 0xEF) return 3;
    if (c >= 0xF0 && c <= 0xF4) return 4;
    return 0;
}

/* Decode one character at s[0..avail); returns its length or 0 if malformed. */
static size_t decode_one(const uint8_t *s, size_t avail, uint32_t *cp) {
    size_t n = seq_len(s[0]);
    if (n == 0 || n > avail) return 0;
    static const uint32_t lead_mask[5] = {0, 0x7F, 0x1F, 0x0F, 0x07};
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    uint32_t v = s[0] & lead_mask[n];
    uint32_t bad = 0;
    for (size_t i = 1; i < n; i++) {
        bad |= (uint32_t)((s[i] & 0xC0) != 0x80);
        v = (v << 6) | (s[i] & 0x3F);
    }
    bad |= spc__mask_lt(v, min_cp[n]) & 1; /* overlong */
    bad |= ~spc__scalar_ok(v) & 1;          /* surrogate or > U+10FFFF */
    *cp = v;
    return bad ? 0 : n;
}

spc_status spc_password_from_utf8(spc_buffer *utf8, size_t len, spc_password **out) {
    *out = NULL;
    if (len > spc_buffer_size(utf8)) return SPC_E_ARGUMENT;
    spc_password *pw;
    int rc = spc_password_new(&pw);
    if (rc != SPC_OK) return rc;
    uint8_t *s;
    if ((rc = spc_buffer_open(utf8, &s)) != SPC_OK) {
        spc_password_free(pw);
        return rc;
    }
    for (size_t i = 0; i < len && rc == SPC_OK;) {
        uint32_t cp = 0;
        size_t n = decode_one(s + i, len - i, &cp);
        rc = n == 0 ? SPC_E_UTF8 : spc_password_add(pw, cp);
        i += n;
        cp = 0;
    }
    spc_buffer_close(utf8);
    if (rc != SPC_OK) {
        spc_password_free(pw); /* wipes what was decoded so far */
        return rc;
    }
    *out = pw;
    return SPC_OK;
}
