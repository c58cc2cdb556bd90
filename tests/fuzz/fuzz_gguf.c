// fuzz_gguf.c: the GGUF reader (io/gguf.c) and everything import-gguf does with a parsed file
// before writing, over arbitrary bytes: gguf_parse from memory, every tensor dequantized into an
// exactly sized buffer, typed metadata getters on every key, then gguf_import_check (the
// architecture, config.json values, tensor plan and tokenizer.json synthesis).
// fuzz-seeds: tests/data/fuzz/seeds/gguf/*
// fuzz-max-len: 131072
#include <stdint.h>
#include <stdlib.h>

#include "import/gguf_import.h"
#include "io/ggml_quants.h"
#include "io/gguf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct gguf g;
    struct err e = {0};
    log_set_level(LOG_QUIET);
    if (gguf_parse(&g, data, size, "fuzz.gguf", &e)) return 0;
    for (int64_t i = 0; i < g.n_tensors; i++) {
        const struct gguf_tensor *t = &g.tensors[i];
        if (t->numel > (1 << 20) || !ggml_can_dequantize(t->type)) continue; // the file bounds the size
        float *f = malloc(sizeof *f * (size_t)(t->numel ? t->numel : 1));
        if (f) ggml_dequantize(f, t->data, t->type, t->numel, &e);
        free(f);
    }
    for (int64_t i = 0; i < g.n_kv; i++) {
        int64_t iv;
        double dv;
        int bv;
        struct gguf_str sv;
        const struct gguf_kv *arr;
        gguf_get_int(&g, g.kv[i].key, &iv, 1, &e);
        gguf_get_float(&g, g.kv[i].key, &dv, 1, &e);
        gguf_get_bool(&g, g.kv[i].key, &bv, 1, &e);
        gguf_get_str(&g, g.kv[i].key, &sv, 1, &e);
        gguf_get_arr(&g, g.kv[i].key, GGUF_I64, &arr, 1, &e);
    }
    gguf_import_check(&g, GGUF_TOK_PUBLISHED, &e);
    gguf_import_check(&g, GGUF_TOK_TRANSFORMERS, &e);
    gguf_close(&g);
    return 0;
}
