/* keccak.c — Keccak-f[1600] and its sponge (FIPS 202): SHA3-256, SHA3-512,
 * SHAKE128, SHAKE256; plus the bit packing and the constant-time comparison
 * both algorithms use. No branch or index depends on the data. */
#include "pq_internal.h"

#include <string.h>

static const uint64_t round_constants[24] = {
    0x0000000000000001ULL, 0x0000000000008082ULL, 0x800000000000808aULL, 0x8000000080008000ULL,
    0x000000000000808bULL, 0x0000000080000001ULL, 0x8000000080008081ULL, 0x8000000000008009ULL,
    0x000000000000008aULL, 0x0000000000000088ULL, 0x0000000080008009ULL, 0x000000008000000aULL,
    0x000000008000808bULL, 0x800000000000008bULL, 0x8000000000008089ULL, 0x8000000000008003ULL,
    0x8000000000008002ULL, 0x8000000000000080ULL, 0x000000000000800aULL, 0x800000008000000aULL,
    0x8000000080008081ULL, 0x8000000000008080ULL, 0x0000000080000001ULL, 0x8000000080008008ULL};
/* rho offsets along the pi walk, and the walk itself. */
static const unsigned rotations[24] = {1,  3,  6,  10, 15, 21, 28, 36, 45, 55, 2,  14,
                                       27, 41, 56, 8,  25, 43, 62, 18, 39, 61, 20, 44};
static const unsigned pi_lanes[24] = {10, 7, 11, 17, 18, 3, 5, 16, 8, 21, 24, 4, 15, 23, 19, 13, 12, 2, 20, 14, 22, 9, 6, 1};

static uint64_t rotl(uint64_t x, unsigned n) { return (x << n) | (x >> (64 - n)); }

static void keccak_f1600(uint64_t s[25]) {
    uint64_t bc[5], t;
    for (unsigned r = 0; r < 24; r++) {
        for (unsigned i = 0; i < 5; i++) bc[i] = s[i] ^ s[i + 5] ^ s[i + 10] ^ s[i + 15] ^ s[i + 20];
        for (unsigned i = 0; i < 5; i++) {
            t = bc[(i + 4) % 5] ^ rotl(bc[(i + 1) % 5], 1);
            for (unsigned j = 0; j < 25; j += 5) s[j + i] ^= t;
        }
        t = s[1];
        for (unsigned i = 0; i < 24; i++) {
            unsigned j = pi_lanes[i];
            bc[0] = s[j];
            s[j] = rotl(t, rotations[i]);
            t = bc[0];
        }
        for (unsigned j = 0; j < 25; j += 5) {
            for (unsigned i = 0; i < 5; i++) bc[i] = s[j + i];
            for (unsigned i = 0; i < 5; i++) s[j + i] ^= (~bc[(i + 1) % 5]) & bc[(i + 2) % 5];
        }
        s[0] ^= round_constants[r];
    }
    sodium_memzero(bc, sizeof bc);
    sodium_memzero(&t, sizeof t);
}

static void xor_byte(uint64_t s[25], unsigned i, uint8_t b) { s[i / 8] ^= (uint64_t)b << (8 * (i % 8)); }

void pq_keccak_init(pq_keccak *k, unsigned rate, uint8_t pad) {
    memset(k, 0, sizeof *k);
    k->rate = rate;
    k->pad = pad;
}

void pq_keccak_absorb(pq_keccak *k, const uint8_t *in, size_t len) {
    for (size_t i = 0; i < len; i++) {
        xor_byte(k->s, k->pos++, in[i]);
        if (k->pos == k->rate) {
            keccak_f1600(k->s);
            k->pos = 0;
        }
    }
}

/* Pads the message; the squeeze position starts at the end of the block. */
void pq_keccak_finish(pq_keccak *k) {
    xor_byte(k->s, k->pos, k->pad);
    xor_byte(k->s, k->rate - 1, 0x80);
    k->pos = k->rate;
}

void pq_keccak_squeeze(pq_keccak *k, uint8_t *out, size_t len) {
    for (size_t i = 0; i < len; i++) {
        if (k->pos == k->rate) {
            keccak_f1600(k->s);
            k->pos = 0;
        }
        out[i] = (uint8_t)(k->s[k->pos / 8] >> (8 * (k->pos % 8)));
        k->pos++;
    }
}

static void hash(unsigned rate, uint8_t pad, uint8_t *out, size_t out_len, const uint8_t *in, size_t len) {
    pq_keccak k;
    pq_keccak_init(&k, rate, pad);
    pq_keccak_absorb(&k, in, len);
    pq_keccak_finish(&k);
    pq_keccak_squeeze(&k, out, out_len);
    PQ_WIPE(k);
}

void pq_sha3_256(uint8_t out[32], const uint8_t *in, size_t len) { hash(PQ_SHA3_256_RATE, 0x06, out, 32, in, len); }
void pq_sha3_512(uint8_t out[64], const uint8_t *in, size_t len) { hash(PQ_SHA3_512_RATE, 0x06, out, 64, in, len); }
void pq_shake256(uint8_t *out, size_t out_len, const uint8_t *in, size_t len) {
    hash(PQ_SHAKE256_RATE, 0x1F, out, out_len, in, len);
}

void pq_pack(uint8_t *out, const uint32_t v[256], unsigned bits) {
    uint64_t acc = 0;
    unsigned have = 0;
    size_t o = 0;
    for (unsigned i = 0; i < 256; i++) {
        acc |= (uint64_t)(v[i] & ((1u << bits) - 1)) << have;
        for (have += bits; have >= 8; have -= 8, acc >>= 8) out[o++] = (uint8_t)acc;
    }
    sodium_memzero(&acc, sizeof acc);
}

void pq_unpack(uint32_t v[256], const uint8_t *in, unsigned bits) {
    uint64_t acc = 0;
    unsigned have = 0;
    size_t o = 0;
    for (unsigned i = 0; i < 256; i++) {
        for (; have < bits; have += 8) acc |= (uint64_t)in[o++] << have;
        v[i] = (uint32_t)(acc & ((1u << bits) - 1));
        acc >>= bits;
        have -= bits;
    }
    sodium_memzero(&acc, sizeof acc);
}

uint8_t pq_ct_equal_mask(const uint8_t *a, const uint8_t *b, size_t n) {
    uint32_t d = 0;
    for (size_t i = 0; i < n; i++) d |= (uint32_t)(a[i] ^ b[i]);
    /* d in [0, 255]: (d - 1) >> 8 is all ones exactly when d == 0. */
    return (uint8_t)((d - 1) >> 8);
}
