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

void gen_prev_free(struct gen_prev *p) {
    free(p->tok);
    *p = (struct gen_prev){0};
}

// the positions of prev's cached rows that ctx[0..n_ctx) can reuse (generate.h)
static int reusable(const struct gen_prev *prev, const int32_t *ctx, int n_ctx, int A) {
    const int n = prev->n < n_ctx ? prev->n : n_ctx;
    int lcp = 0;
    while (lcp < n && prev->tok[lcp] == ctx[lcp]) lcp++;
    if (lcp > prev->stored) lcp = prev->stored;
    if (lcp > n_ctx - 1) lcp = n_ctx - 1;
    return lcp / A * A;
}

// The greedy loop from `stored` cached positions of ctx; prev (may be NULL) takes the sequence.
static int greedy(struct model *m, struct model_kv *kv, struct gen_prev *prev, int stored, const int32_t *ctx,
                  int n_ctx, int max_new, int eos_id, int32_t *out, int *n_out, struct gen_stats *st, struct err *e) {
    const int window = model_get_opts(m)->max_seq, vocab = model_cfg(m)->vocab_size;
    int32_t *seq = malloc(((size_t)n_ctx + (size_t)max_new) * sizeof *seq);
    float *lg = malloc((size_t)vocab * sizeof *lg);
    int rc = seq && lg ? 0 : err_set(e, ERR_NOMEM, "generate: out of memory");
    if (!rc) memcpy(seq, ctx, (size_t)n_ctx * sizeof *seq);
    int T = n_ctx;
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
    if (prev) {
        gen_prev_free(prev);
        if (!rc) *prev = (struct gen_prev){.tok = seq, .n = T, .stored = stored}, seq = NULL;
    }
    free(seq), free(lg);
    return rc;
}

// the checks both entry points share
static int check_args(struct model *m, struct model_kv *kv, int n_ctx, int max_new, struct err *e) {
    const int window = model_get_opts(m)->max_seq, A = model_attn_align(m);
    if (n_ctx < 1 || n_ctx > window)
        return err_set(e, ERR_RANGE, "generate: a context of %d tokens (the model's window is %d)", n_ctx, window);
    if (max_new < 1) return 0;
    if (kv && (int64_t)(n_ctx + max_new) / A * A > model_kv_rows(kv))
        return err_set(e, ERR_RANGE, "generate: %d + %d tokens need %d cached positions, the cache holds %d", n_ctx,
                       max_new, (n_ctx + max_new) / A * A, model_kv_rows(kv));
    if (A > model_get_opts(m)->max_tokens)
        return err_set(e, ERR_RANGE, "generate: --batch-tokens %d below the attention alignment %d",
                       model_get_opts(m)->max_tokens, A);
    return 0;
}

int gen_greedy_after(struct model *m, struct model_kv *kv, struct gen_prev *prev, const int32_t *ctx, int n_ctx,
                     int max_new, int eos_id, int32_t *out, int *n_out, struct gen_stats *st, struct err *e) {
    *n_out = 0;
    int rc = check_args(m, kv, n_ctx, max_new, e);
    if (rc || max_new < 1) return rc;
    if (!kv) prev = NULL;
    const int stored = prev ? reusable(prev, ctx, n_ctx, model_attn_align(m)) : 0;
    return greedy(m, kv, prev, stored, ctx, n_ctx, max_new, eos_id, out, n_out, st, e);
}

int gen_greedy(struct model *m, struct model_kv *kv, const int32_t *ctx, int n_ctx, int max_new, int eos_id,
               int32_t *out, int *n_out, struct gen_stats *st, struct err *e) {
    return gen_greedy_after(m, kv, NULL, ctx, n_ctx, max_new, eos_id, out, n_out, st, e);
}
