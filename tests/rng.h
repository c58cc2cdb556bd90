// rng.h: the tests' deterministic synthetic data (xorshift64): one stream per test program.
// rng_seed(s) fixes the sequence; urand() is uniform in [0, 1); nrand() is approximately a
// standard normal (the sum of four uniforms, rescaled). Header-only, for tests.
#ifndef HIFA4_TESTS_RNG_H
#define HIFA4_TESTS_RNG_H

#include <stdint.h>

static uint64_t rng_state = 0x243f6a8885a308d3ull;
static inline void rng_seed(uint64_t s) { rng_state = s * 0x9e3779b97f4a7c15ull + 1; }
static inline double urand(void) {
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}
static inline float nrand(void) { return (float)((urand() + urand() + urand() + urand() - 2.0) * 1.7320508); }

#endif
