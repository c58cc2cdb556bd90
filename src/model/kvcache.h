// kvcache.h: the store behind struct model_kv (model.h), internal to src/model/ (kvcache.c
// keeps it, forward.c uses it): per layer, K and V of `rows` cached positions
// ([rows][n_kv_heads][head_dim] binary32 each), and per row the key of the attention
// configuration that computed it.
#ifndef HIFA4_MODEL_KVCACHE_H
#define HIFA4_MODEL_KVCACHE_H

#include <stdint.h>

#include "model/model.h"

struct model_kv {
    int rows, n_layers;
    size_t row_floats;  // n_kv_heads * head_dim: one position of one layer's K (or V)
    float *mem;         // [n_layers][2][rows][row_floats]
    uint64_t *stamp;    // [rows] attn_ctx_key of the context that stored the row (0: never)
    size_t bytes;
};

static inline float *kv_k(const struct model_kv *kv, int layer, int row) {
    return kv->mem + ((size_t)layer * 2 * (size_t)kv->rows + (size_t)row) * kv->row_floats;
}
static inline float *kv_v(const struct model_kv *kv, int layer, int row) {
    return kv->mem + (((size_t)layer * 2 + 1) * (size_t)kv->rows + (size_t)row) * kv->row_floats;
}

#endif
