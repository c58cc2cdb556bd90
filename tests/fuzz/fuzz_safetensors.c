// fuzz_safetensors.c: the safetensors header parser (io/safetensors.c) over arbitrary bytes:
// st_open_mem, then every tensor converted (st_to_f32 / st_to_i32 into exactly sized buffers),
// a metadata lookup, st_check and the fingerprint - everything `inspect` and model loading do
// with a header before any model code runs.
// fuzz-seeds: ../shared/goldens/stories260K/*.safetensors tests/data/fuzz/seeds/safetensors/*
// fuzz-seeds: build/fuzz-seeds/safetensors/*
// fuzz-max-len: 65536
#include <stdint.h>
#include <stdlib.h>

#include "fuzz.h"
#include "io/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct safetensors st;
    struct err e = {0};
    (void)fz_dir();
    if (st_open_mem(&st, data, size, "fuzz.safetensors", &e)) return 0;
    for (int i = 0; i < st.n_tensors; i++) {
        const struct st_tensor *t = &st.tensors[i];
        if (t->numel > (1 << 20)) continue; // the data area bounds numel already; keep executions fast
        if (t->dtype == ST_F32 || t->dtype == ST_F16 || t->dtype == ST_BF16) {
            float *f = malloc(sizeof *f * (size_t)(t->numel ? t->numel : 1));
            if (f) st_to_f32(f, t, &e);
            free(f);
        } else {
            int32_t *v = malloc(sizeof *v * (size_t)(t->numel ? t->numel : 1));
            if (v) st_to_i32(v, t, &e);
            free(v);
        }
        const struct st_tensor *o = NULL;
        st_check(&st, t->name, ST_FLOATING, t->ndim, t->shape, &o, &e);
    }
    st_meta(&st, "model_hash");
    char hex[65];
    st_fingerprint(&st, hex, &e);
    st_close(&st);
    return 0;
}
