// model_util.h: small helpers of the tests that run a model (header-only, tests only): the
// caller owns every attention context; nothing here keeps a mode.
#ifndef HIFA4_TEST_MODEL_UTIL_H
#define HIFA4_TEST_MODEL_UTIL_H

#include "model/model.h"

// Replaces *ctx (may be NULL) by a new context of model m for `mode` (model_attn_open).
static inline int test_attn_reopen(struct attn_ctx **ctx, const struct model *m, const char *mode,
                                   const struct attn_opts *ao, const float *scales, struct err *e) {
    attn_ctx_free(*ctx);
    *ctx = NULL;
    return model_attn_open(ctx, m, mode, ao, scales, e);
}

// A batch of plain sequences (positions from 0) with logits at the packed rows pos[0..n_out).
static inline struct model_batch test_batch(const int32_t *tok, const int *len, int n_seq, const int *pos, int n_out) {
    return (struct model_batch){.tokens = tok, .n_seq = n_seq, .seq_len = len, .out_pos = pos, .n_out = n_out};
}

#endif
