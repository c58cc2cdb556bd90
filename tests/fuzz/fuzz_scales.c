// fuzz_scales.c: Smooth-QK scales files (attention/scales.c) over arbitrary bytes: the shape the
// loader is asked for is taken from the file's own tensor when it has one (so the value checks
// are reached), else a fixed [2, 1, 8].
// fuzz-seeds: tests/data/fuzz/seeds/scales/* build/fuzz-seeds/scales/*
// fuzz-max-len: 16384
#include <stdint.h>
#include <stdlib.h>

#include "attention/scales.h"
#include "fuzz.h"
#include "io/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct err e = {0};
    (void)fz_dir();
    int L = 2, H = 1, d = 8;
    struct safetensors st;
    if (!st_open_mem(&st, data, size, "fuzz-scales.safetensors", &e)) {
        const struct st_tensor *t = st_find(&st, "smooth_qk.scales");
        if (t && t->ndim == 3 && t->shape[0] > 0 && t->shape[0] <= 256 && t->shape[1] > 0 && t->shape[1] <= 64 &&
            t->shape[2] > 0 && t->shape[2] <= 1024) {
            L = (int)t->shape[0];
            H = (int)t->shape[1];
            d = (int)t->shape[2];
        }
        st_close(&st);
    }
    float *s = NULL;
    if (!attn_scales_load_mem(&s, data, size, "fuzz-scales.safetensors", (struct attn_scales_shape){L, H, d}, "abc", &e)) free(s);
    return 0;
}
