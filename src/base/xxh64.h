// xxh64.h: XXH64 (Yann Collet's xxHash, 64-bit variant, seed 0 unless given), a fast
// non-cryptographic hash for fingerprinting every byte of a checkpoint (several GB/s on one
// core, where sha256 does a few hundred MB/s). Streaming: init, update any number of times,
// digest. Matches the reference implementation bit for bit (test_common checks its vectors).
#ifndef HIFA4_XXH64_H
#define HIFA4_XXH64_H

#include <stddef.h>
#include <stdint.h>

struct xxh64 {
    uint64_t v[4], total;
    unsigned char buf[32];
    size_t nbuf;
    uint64_t seed;
};
void xxh64_init(struct xxh64 *s, uint64_t seed);
void xxh64_update(struct xxh64 *s, const void *p, size_t n);
uint64_t xxh64_digest(const struct xxh64 *s);
// One call: the hash of p[0..n) with seed.
uint64_t xxh64(const void *p, size_t n, uint64_t seed);

#endif
