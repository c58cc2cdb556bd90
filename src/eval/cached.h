// cached.h: scores a batch through the exact KV cache (issue 13): builds the batch's prefix
// schedule (prefix.h) for the current attention mode's alignment and runs its forward calls
// with model_forward_kv, writing every scored row's logits where model_forward would have
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

// Logits of the batch b of plan p into logits ([b->n_out][vocab]); kv must hold at least
// prefix_store_rows(p, max_tokens, A) rows for its alignment A or more. Adds to *st.
int cached_forward(struct model *m, struct model_kv *kv, const struct eval_plan *p, const struct eval_batch *b,
                   float *logits, int vocab, struct cached_stats *st, struct err *e);

#endif
