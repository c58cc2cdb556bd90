// generate.c: greedy decoding with and without the exact KV cache (generate.h).
#include "eval/generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// argmax of a binary32 row (ties: lowest id); -1 when a logit is not finite
static int argmax_row(const float *row, int n) {
    int best = 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(row[i])) return -1;
        if (row[i] > row[best]) best = i;
    }
    return best;
}

// One forward call over the positions [stored, T) of seq against the cached [0, stored),
// storing [stored, stored + save); logits of the last row into lg when lg != NULL.
static int step_cached(struct model *m, struct model_kv *kv, const int32_t *seq, int stored, int T, int save, float *lg,
                       struct gen_stats *st, struct err *e) {
    struct model_seq q = {.n = T - stored, .save_row = stored, .save_n = save};
    if (stored) q.past = (struct model_past){.n = stored, .n_seg = 1, .row = {0}, .len = {stored}};
    const int last = T - stored - 1;
    st->tokens += T - stored;
    st->stored += save;
    st->calls++;
    return model_forward_kv(m, kv, seq + stored, &q, 1, &last, lg ? 1 : 0, lg, e);
}

// The logits of row T-1 of seq[0..T): cached (prefill chunks first, so the call that yields
// them holds at most max_tokens rows) or recomputed whole.
static int next_logits(struct model *m, struct model_kv *kv, const int32_t *seq, int T, int *stored, float *lg,
                       struct gen_stats *st, struct err *e) {
    if (!kv) {
        const int last = T - 1;
        st->tokens += T;
        st->calls++;
        return model_forward(m, seq, &T, 1, &last, 1, lg, e);
    }
    const int A = model_attn_align(m), MT = model_get_opts(m)->max_tokens, MTa = MT / A * A;
    int rc = 0;
    while (!rc && T - *stored > MT) { // aligned prefill chunks, no logits
        rc = step_cached(m, kv, seq, *stored, *stored + MTa, MTa, NULL, st, e);
        *stored += MTa;
    }
    if (rc) return rc;
    const int fin = T / A * A; // rows [0, fin) are final once this call reached T
    rc = step_cached(m, kv, seq, *stored, T, fin - *stored, lg, st, e);
    if (!rc) *stored = fin;
    return rc;
}

int gen_greedy(struct model *m, struct model_kv *kv, const int32_t *ctx, int n_ctx, int max_new, int eos_id,
               int32_t *out, int *n_out, struct gen_stats *st, struct err *e) {
    const int window = model_get_opts(m)->max_seq, vocab = model_cfg(m)->vocab_size, A = model_attn_align(m);
    *n_out = 0;
    if (n_ctx < 1 || n_ctx > window)
        return err_set(e, ERR_RANGE, "generate: a context of %d tokens (the model's window is %d)", n_ctx, window);
    if (max_new < 1) return 0;
    if (kv && (int64_t)(n_ctx + max_new) / A * A > model_kv_rows(kv))
        return err_set(e, ERR_RANGE, "generate: %d + %d tokens need %d cached positions, the cache holds %d", n_ctx,
                       max_new, (n_ctx + max_new) / A * A, model_kv_rows(kv));
    if (A > model_get_opts(m)->max_tokens)
        return err_set(e, ERR_RANGE, "generate: --batch-tokens %d below the attention alignment %d",
                       model_get_opts(m)->max_tokens, A);
    int32_t *seq = malloc(((size_t)n_ctx + (size_t)max_new) * sizeof *seq);
    float *lg = malloc((size_t)vocab * sizeof *lg);
    int rc = seq && lg ? 0 : err_set(e, ERR_NOMEM, "generate: out of memory");
    if (!rc) memcpy(seq, ctx, (size_t)n_ctx * sizeof *seq);
    int T = n_ctx, stored = 0;
    while (!rc && *n_out < max_new && T <= window) {
        const double t0 = time_now();
        rc = next_logits(m, kv, seq, T, &stored, lg, st, e);
        *(*n_out ? &st->decode_s : &st->prefill_s) += time_now() - t0;
        if (rc) break;
        const int tok = argmax_row(lg, vocab);
        if (tok < 0) {
            rc = err_set(e, ERR_RANGE, "generate: the logits after %d tokens are not finite", T);
            break;
        }
        out[(*n_out)++] = tok;
        st->steps++;
        if (tok == eos_id || T == window) break;
        seq[T++] = tok;
    }
    free(seq), free(lg);
    return rc;
}
