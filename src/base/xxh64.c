// xxh64.c: XXH64 (xxHash specification, "XXH64 algorithm description"), little-endian reads
// through memcpy so unaligned input is fine.
#include "base/xxh64.h"

#include <string.h>

#define P1 11400714785074694791ULL
#define P2 14029467366897019727ULL
#define P3 1609587929392839161ULL
#define P4 9650029242287828579ULL
#define P5 2870177450012600261ULL

static uint64_t rotl(uint64_t x, int r) { return x << r | x >> (64 - r); }

static uint64_t rd64(const unsigned char *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
#else
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
#endif
}

static uint32_t rd32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

static uint64_t round1(uint64_t acc, uint64_t in) { return rotl(acc + in * P2, 31) * P1; }

static uint64_t merge(uint64_t acc, uint64_t v) { return (acc ^ round1(0, v)) * P1 + P4; }

void xxh64_init(struct xxh64 *s, uint64_t seed) {
    memset(s, 0, sizeof *s);
    s->seed = seed;
    s->v[0] = seed + P1 + P2;
    s->v[1] = seed + P2;
    s->v[2] = seed;
    s->v[3] = seed - P1;
}

static void stripes(uint64_t v[4], const unsigned char *p, size_t n) {
    uint64_t a = v[0], b = v[1], c = v[2], d = v[3];
    for (; n >= 32; p += 32, n -= 32) {
        a = round1(a, rd64(p));
        b = round1(b, rd64(p + 8));
        c = round1(c, rd64(p + 16));
        d = round1(d, rd64(p + 24));
    }
    v[0] = a; v[1] = b; v[2] = c; v[3] = d;
}

void xxh64_update(struct xxh64 *s, const void *data, size_t n) {
    const unsigned char *p = data;
    s->total += n;
    if (s->nbuf) {
        size_t k = 32 - s->nbuf < n ? 32 - s->nbuf : n;
        memcpy(s->buf + s->nbuf, p, k);
        s->nbuf += k; p += k; n -= k;
        if (s->nbuf < 32) return;
        stripes(s->v, s->buf, 32);
        s->nbuf = 0;
    }
    size_t whole = n & ~(size_t)31;
    stripes(s->v, p, whole);
    memcpy(s->buf, p + whole, n - whole);
    s->nbuf = n - whole;
}

uint64_t xxh64_digest(const struct xxh64 *s) {
    uint64_t h;
    if (s->total >= 32) {
        h = rotl(s->v[0], 1) + rotl(s->v[1], 7) + rotl(s->v[2], 12) + rotl(s->v[3], 18);
        for (int i = 0; i < 4; i++) h = merge(h, s->v[i]);
    } else {
        h = s->seed + P5;
    }
    h += s->total;
    const unsigned char *p = s->buf;
    size_t n = s->nbuf;
    for (; n >= 8; p += 8, n -= 8) h = rotl(h ^ round1(0, rd64(p)), 27) * P1 + P4;
    if (n >= 4) { h = rotl(h ^ (uint64_t)rd32(p) * P1, 23) * P2 + P3; p += 4; n -= 4; }
    for (; n; p++, n--) h = rotl(h ^ *p * P5, 11) * P1;
    h ^= h >> 33; h *= P2;
    h ^= h >> 29; h *= P3;
    h ^= h >> 32;
    return h;
}

uint64_t xxh64(const void *p, size_t n, uint64_t seed) {
    struct xxh64 s;
    xxh64_init(&s, seed);
    xxh64_update(&s, p, n);
    return xxh64_digest(&s);
}
