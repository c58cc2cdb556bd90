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

// One decoding: what it runs on, its statistics, the sequence so far and what the cache holds.
struct dec {
    const struct cached_model *g;
    struct gen_stats *st;
    int32_t *seq;
    int stored; // positions [0, stored) of seq are in the cache
};

// One forward call over the positions [stored, T) of the sequence against the cached [0,
// stored), storing [stored, stored + save); logits of the last row into lg when lg != NULL.
struct step {
    int T, save;
    float *lg;
};
static int step_cached(const struct dec *d, struct step s, struct err *e) {
    const int stored = d->stored;
    struct model_seq q = {.n = s.T - stored, .save_row = stored, .save_n = s.save};
    if (stored) q.past = (struct attn_past){.n = stored, .n_seg = 1, .row = {0}, .len = {stored}};
    const int last = s.T - stored - 1;
    d->st->tokens += s.T - stored;
    d->st->stored += s.save;
    d->st->calls++;
    const struct model_batch b = {.tokens = d->seq + stored, .n_seq = 1, .seqs = &q, .out_pos = &last,
                                  .n_out = s.lg ? 1 : 0};
    return model_forward(d->g->m, d->g->ctx, d->g->kv, &b, s.lg, e);
}

// The logits of row T-1 of the sequence: cached (prefill chunks first, so the call that yields
// them holds at most max_tokens rows) or recomputed whole.
static int next_logits(struct dec *d, int T, float *lg, struct err *e) {
    struct model *m = d->g->m;
    if (!d->g->kv) {
        const int last = T - 1;
        d->st->tokens += T;
        d->st->calls++;
        const struct model_batch b = {.tokens = d->seq, .n_seq = 1, .seq_len = &T, .out_pos = &last, .n_out = 1};
        return model_forward(m, d->g->ctx, NULL, &b, lg, e);
    }
    const int A = attn_ctx_align(d->g->ctx), MT = model_get_opts(m)->max_tokens, MTa = MT / A * A;
    int rc = 0;
    while (!rc && T - d->stored > MT) { // aligned prefill chunks, no logits
        rc = step_cached(d, (struct step){d->stored + MTa, MTa, NULL}, e);
        d->stored += MTa;
    }
    if (rc) return rc;
    const int fin = T / A * A; // rows [0, fin) are final once this call reached T
    rc = step_cached(d, (struct step){T, fin - d->stored, lg}, e);
    if (!rc) d->stored = fin;
    return rc;
}

void gen_prev_free(struct gen_prev *p) {
    free(p->tok);
    *p = (struct gen_prev){0};
}

// the positions of prev's cached rows that the context can reuse (generate.h)
static int reusable(const struct gen_prev *prev, const struct gen_req *q, int A) {
    const int n = prev->n < q->n ? prev->n : q->n;
    int lcp = 0;
    while (lcp < n && prev->tok[lcp] == q->tok[lcp]) lcp++;
    if (lcp > prev->stored) lcp = prev->stored;
    if (lcp > q->n - 1) lcp = q->n - 1;
    return lcp / A * A;
}

// The greedy loop from d->stored cached positions of the context; prev (may be NULL) takes the
// sequence.
static int greedy(struct dec *d, struct gen_prev *prev, const struct gen_req *q, int32_t *out, int *n_out,
                  struct err *e) {
    struct model *m = d->g->m;
    const int window = model_get_opts(m)->max_seq, vocab = model_cfg(m)->vocab_size;
    d->seq = malloc(((size_t)q->n + (size_t)q->max_new) * sizeof *d->seq);
    float *lg = malloc((size_t)vocab * sizeof *lg);
    int rc = d->seq && lg ? 0 : err_set(e, ERR_NOMEM, "generate: out of memory");
    if (!rc) memcpy(d->seq, q->tok, (size_t)q->n * sizeof *d->seq);
    int T = q->n;
    while (!rc && *n_out < q->max_new && T <= window) {
        const double t0 = time_now();
        rc = next_logits(d, T, lg, e);
        *(*n_out ? &d->st->decode_s : &d->st->prefill_s) += time_now() - t0;
        if (rc) break;
        const int tok = argmax_row(lg, vocab);
        if (tok < 0) {
            rc = err_set(e, ERR_RANGE, "generate: the logits after %d tokens are not finite", T);
            break;
        }
        out[(*n_out)++] = tok;
        d->st->steps++;
        if (tok == q->eos_id || T == window) break;
        d->seq[T++] = tok;
    }
    if (prev) {
        gen_prev_free(prev);
        if (!rc) *prev = (struct gen_prev){.tok = d->seq, .n = T, .stored = d->stored}, d->seq = NULL;
    }
    free(d->seq), free(lg);
    return rc;
}

// the checks both entry points share
static int check_args(const struct cached_model *g, const struct gen_req *q, struct err *e) {
    const struct model *m = g->m;
    const int window = model_get_opts(m)->max_seq, A = attn_ctx_align(g->ctx);
    if (q->n < 1 || q->n > window)
        return err_set(e, ERR_RANGE, "generate: a context of %d tokens (the model's window is %d)", q->n, window);
    if (q->max_new < 1) return 0;
    if (g->kv && (int64_t)(q->n + q->max_new) / A * A > model_kv_rows(g->kv))
        return err_set(e, ERR_RANGE, "generate: %d + %d tokens need %d cached positions, the cache holds %d", q->n,
                       q->max_new, (q->n + q->max_new) / A * A, model_kv_rows(g->kv));
    if (A > model_get_opts(m)->max_tokens)
        return err_set(e, ERR_RANGE, "generate: --batch-tokens %d below the attention alignment %d",
                       model_get_opts(m)->max_tokens, A);
    return 0;
}

int gen_greedy_after(const struct cached_model *g, struct gen_prev *prev, const struct gen_req *q, int32_t *out,
                     int *n_out, struct gen_stats *st, struct err *e) {
    *n_out = 0;
    int rc = check_args(g, q, e);
    if (rc || q->max_new < 1) return rc;
    if (!g->kv) prev = NULL;
    struct dec d = {.g = g, .st = st, .stored = prev ? reusable(prev, q, attn_ctx_align(g->ctx)) : 0};
    return greedy(&d, prev, q, out, n_out, e);
}

int gen_greedy(const struct cached_model *g, const struct gen_req *q, int32_t *out, int *n_out, struct gen_stats *st,
               struct err *e) {
    return gen_greedy_after(g, NULL, q, out, n_out, st, e);
}
