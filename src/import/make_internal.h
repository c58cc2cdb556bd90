// make_internal.h: what make_model.c and make_tokenizer.c share (not an API).
#ifndef HIFA4_MAKE_INTERNAL_H
#define HIFA4_MAKE_INTERNAL_H

#include <stdint.h>

// FNV-1a 64 of a string: the per-tensor stream seed (seed ^ fnv1a(name)) and the tokenizer
// builder's string hash. Changing it changes every synthetic checkpoint.
static inline uint64_t fnv1a(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

#endif
