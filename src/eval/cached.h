// cached.h: scores a batch through the exact KV cache: builds the batch's prefix
// schedule (prefix.h) for the attention context's alignment and runs its forward calls with
// model_forward, writing every scored row's logits where model_forward would have
// (the batch's rows in plan order), bit-identical to it (the cache rule of model.h).
#ifndef HIFA4_CACHED_H
#define HIFA4_CACHED_H

#include <stdint.h>

#include "eval/eval.h"
#include "model/model.h"

struct cached_stats {
    int64_t tokens;  // positions computed
    int64_t stored;  // of those, stored in the cache (shared prefixes)
    int64_t calls;   // forward calls
};

// What a cached forward runs on: the model, the attention context of one mode, the cache
// (generate.h: NULL recomputes every step); tick (may be NULL) is called after each forward
// call but the last with the share (0..1) of the batch's positions computed so far (a progress
// line moves within a batch that takes minutes).
struct cached_model {
    struct model *m;
    struct attn_ctx *ctx;
    struct model_kv *kv;
    void (*tick)(void *user, double frac);
    void *tick_user;
};

// Logits of the batch b of plan p into logits ([b->n_out][vocab]); cm->kv must hold at least
// prefix_store_rows(p, max_tokens, A) rows for the context's alignment A or more. Adds to *st.
int cached_forward(const struct cached_model *cm, const struct eval_plan *p, const struct eval_batch *b, float *logits,
                   struct cached_stats *st, struct err *e);

#endif
