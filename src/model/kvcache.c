// kvcache.c: allocation of the KV cache store (model.h "the exact KV cache"; the store is
// kvcache.h). The forward pass reads and fills it (model.c); this file only sizes it, once.
#include "model/kvcache.h"

#include <stdlib.h>

#include "base/host.h"

size_t model_kv_row_bytes(const struct model *m) {
    const struct model_config *c = model_cfg(m);
    return (size_t)c->n_layers * 2 * (size_t)c->n_kv_heads * (size_t)c->head_dim * sizeof(float);
}

int model_kv_open(struct model_kv **out, const struct model *m, int rows, struct err *e) {
    *out = NULL;
    const struct model_config *c = model_cfg(m);
    if (rows <= 0) return err_set(e, ERR_RANGE, "KV cache: %d rows", rows);
    const size_t per = model_kv_row_bytes(m), bytes = per * (size_t)rows + (size_t)rows * sizeof(uint64_t);
    const size_t avail = host_mem_available();
    if (avail && bytes > avail)
        return err_set(e, ERR_NOMEM, "KV cache: %d positions x %.1f KB (%d layers x K,V x %d kv heads x %d) = %.2f GB, "
                       "more than the %.2f GB available", rows, per / 1024.0, c->n_layers, c->n_kv_heads, c->head_dim,
                       bytes * 1e-9, avail * 1e-9);
    struct model_kv *kv = calloc(1, sizeof *kv);
    if (!kv) return err_set(e, ERR_NOMEM, "KV cache: out of memory");
    kv->rows = rows;
    kv->n_layers = c->n_layers;
    kv->row_floats = (size_t)c->n_kv_heads * (size_t)c->head_dim;
    kv->mem = aligned_alloc(64, (per * (size_t)rows + 63) / 64 * 64);
    kv->stamp = calloc((size_t)rows, sizeof *kv->stamp);
    kv->bytes = bytes;
    if (!kv->mem || !kv->stamp) {
        model_kv_free(kv);
        return err_set(e, ERR_NOMEM, "KV cache: cannot allocate %.2f GB for %d positions", bytes * 1e-9, rows);
    }
    *out = kv;
    return 0;
}

void model_kv_free(struct model_kv *kv) {
    if (!kv) return;
    free(kv->mem);
    free(kv->stamp);
    free(kv);
}

int model_kv_rows(const struct model_kv *kv) { return kv->rows; }
size_t model_kv_bytes(const struct model_kv *kv) { return kv->bytes; }
