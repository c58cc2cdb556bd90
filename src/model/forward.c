// forward.c: the batched forward pass (model.h model_forward). Per layer: RMSNorm -> q/k/v
// GEMMs (+bias) -> [Qwen3/Gemma3 q/k norm] -> RoPE -> attn_forward (all sequences, the caller's
// context) -> o GEMM -> [Gemma2 post norm] -> residual -> norm -> gate/up GEMMs -> act*up ->
// down GEMM -> [Gemma2 post norm] -> residual. Every operation but attention is per row (the
// GEMMs of linear.c, the row loops below), which is what the KV-cache rule of model.h rests on.
// Row loops run on the worker pool (base/pool.h).
#include <math.h>
#include <stdlib.h>

#include "base/pool.h"
#include "model/model_internal.h"
#include "model/ops.h"

// ---- data-parallel loops on the pool: rows [i0, i1) per task ----
typedef void (*rows_fn)(const struct model *m, const void *args, int i0, int i1);
struct rows_job {
    rows_fn fn;
    const struct model *m;
    const void *args;
    int T, chunk;
};
static void rows_task(void *p, int t, int slot) {
    (void)slot;
    const struct rows_job *j = p;
    const int i0 = t * j->chunk, i1 = i0 + j->chunk < j->T ? i0 + j->chunk : j->T;
    j->fn(j->m, j->args, i0, i1);
}
// Small loops (work elements below 2^15) run on the calling thread: a task hand-off costs more.
static void par_rows(const struct model *m, int T, size_t row_work, rows_fn fn, const void *args) {
    const int nt = m->opts.n_threads;
    if (T <= 0) return;
    if (nt <= 1 || (size_t)T * row_work < ((size_t)1 << 15)) { fn(m, args, 0, T); return; }
    struct rows_job j = {fn, m, args, T, (T + 4 * nt - 1) / (4 * nt)};
    pool_for((T + j.chunk - 1) / j.chunk, rows_task, &j, nt);
}

// ---- row loops (each a function of its rows only) ----
// Rows (T, n) with row stride n: out = RMSNorm(x) (norm), or x += y then, with w, out =
// RMSNorm(x) for the next block (add_norm); in and out may alias.
struct norm_args {
    float *out, *x;
    const float *y, *w;
    int n;
};
static void norm_fn(const struct model *m, const void *p, int i0, int i1) {
    const struct norm_args *a = p;
    const struct model_config *c = &m->cfg;
    for (int i = i0; i < i1; i++)
        ops_rmsnorm(a->out + (size_t)i * a->n, a->x + (size_t)i * a->n, a->w, a->n, c->norm_eps, c->norm_plus_one,
                    m->opts.act_bf16);
}
static void norm_rows(const struct model *m, float *out, float *x, const float *w, int T, int n) {
    struct norm_args a = {.out = out, .x = x, .w = w, .n = n};
    par_rows(m, T, (size_t)n, norm_fn, &a);
}
static void add_norm_fn(const struct model *m, const void *p, int i0, int i1) {
    const struct norm_args *a = p;
    const struct model_config *c = &m->cfg;
    const int bf16 = m->opts.act_bf16, n = a->n;
    for (int i = i0; i < i1; i++) {
        ops_add(a->x + (size_t)i * n, a->y + (size_t)i * n, (size_t)n, bf16);
        if (a->w) ops_rmsnorm(a->out + (size_t)i * n, a->x + (size_t)i * n, a->w, n, c->norm_eps, c->norm_plus_one, bf16);
    }
}
// The residual x += y (rows of m->rs.x), then out = RMSNorm(x) with w (none when w is NULL).
static void add_norm_rows(const struct model *m, const float *y, float *out, const float *w, int T) {
    struct norm_args a = {.out = out, .x = m->rs.x, .y = y, .w = w, .n = m->dims.D};
    par_rows(m, T, (size_t)a.n, add_norm_fn, &a);
}

// Embedding rows (Gemma2: x sqrt(dim), Gemma3: x (float)sqrt(dim); config.h enum embed_scale.
// HF rounds the factor to the activation dtype).
struct embed_args {
    const int32_t *tokens;
    _Atomic size_t *bad; // rows holding a non-finite weight
};
static void embed_fn(const struct model *m, const void *p, int i0, int i1) {
    const struct embed_args *a = p;
    const int D = m->dims.D, bf16 = m->opts.act_bf16;
    const double norm64 = m->cfg.embed_scale == EMBED_SQRT_F32 ? (double)(float)sqrt((double)D) : sqrt((double)D);
    const float normb = round_bf16((float)norm64);
    for (int t = i0; t < i1; t++) {
        float *x = m->rs.x + (size_t)t * D;
        if (weights_convert(x, m->embed, (size_t)a->tokens[t] * D, (size_t)D)) atomic_fetch_add(a->bad, 1);
        if (m->cfg.embed_scale)
            for (int i = 0; i < D; i++) x[i] = bf16 ? round_bf16(x[i] * normb) : (float)(x[i] * norm64);
    }
}

// The per-head q/k RMSNorm (Qwen3; Gemma3 with (1 + w)), then RoPE at each row's position (long
// factors per sequence; Gemma3's sliding layers their own base).
static void qk_rope_fn(const struct model *m, const void *p, int i0, int i1) {
    const struct layer_w *L = p;
    const int local = m->rs.rope_local && m->cfg.window[L - m->layers] > 0;
    const struct model_config *c = &m->cfg;
    const struct model_dims *d = &m->dims;
    const struct run_state *rs = &m->rs;
    const int hd = d->hd, bf16 = m->opts.act_bf16;
    const size_t half = (size_t)c->rope_dim / 2;
    for (int t = i0; t < i1; t++) {
        float *q = rs->q + (size_t)t * d->qd, *k = rs->k + (size_t)t * d->kd;
        if (c->qk_norm) {
            const int po = c->norm_plus_one;
            for (int h = 0; h < d->H; h++) ops_rmsnorm(q + h * hd, q + h * hd, L->q_norm, hd, c->norm_eps, po, bf16);
            for (int h = 0; h < d->Hkv; h++) ops_rmsnorm(k + h * hd, k + h * hd, L->k_norm, hd, c->norm_eps, po, bf16);
        }
        const double *cs = (local ? rs->rope_local : rs->rope + (rs->lng[t] ? 2 * rs->rope_tab : 0)) + (size_t)rs->pos[t] * half;
        const double *sn = cs + rs->rope_tab;
        ops_rope(q, cs, sn, d->H, hd, c->rope_dim, bf16);
        ops_rope(k, cs, sn, d->Hkv, hd, c->rope_dim, bf16);
    }
}

// bf16 rounding of rows (T, n) of x.
struct round_args {
    float *x;
    int n;
};
static void round_fn(const struct model *m, const void *p, int i0, int i1) {
    (void)m;
    const struct round_args *a = p;
    for (int t = i0; t < i1; t++) round_bf16_n(a->x + (size_t)t * a->n, (size_t)a->n);
}

static void act_fn(const struct model *m, const void *p, int i0, int i1) {
    (void)p;
    const int F = m->dims.F;
    float *g = m->rs.gate, *u = m->rs.up;
    for (int t = i0; t < i1; t++)
        ops_act_mul(g + (size_t)t * F, g + (size_t)t * F, u + (size_t)t * F, (size_t)F, m->cfg.act, m->opts.act_bf16);
}

static void softcap_fn(const struct model *m, const void *p, int i0, int i1) {
    const struct round_args *a = p;
    for (int i = i0; i < i1; i++)
        ops_softcap(a->x + (size_t)i * a->n, (size_t)a->n, m->cfg.final_softcap, m->opts.act_bf16);
}

// ---- the batch ----
// The batch's sequences, packed rows, positions and RoPE factor sets into the run state, and
// every check (capacities, tokens, output rows; the past by attention's rule, the store by
// the cache's). *T: packed rows.
static int check_seqs(struct model *m, const struct model_batch *b, int *T, struct err *e) {
    const struct model_config *c = &m->cfg;
    struct run_state *rs = &m->rs;
    const int mt = m->opts.max_tokens;
    if (b->n_seq <= 0 || b->n_seq > mt) return err_set(e, ERR_RANGE, "model_forward: %d sequences", b->n_seq);
    if (!b->seq_len == !b->seqs) return err_set(e, ERR_INTERNAL, "model_forward: give seq_len or seqs, not both");
    int64_t T64 = 0;
    for (int s = 0; s < b->n_seq; s++) {
        const int n = b->seqs ? b->seqs[s].n : b->seq_len[s], p = b->seqs ? b->seqs[s].past.n : 0;
        if (n <= 0 || p < 0 || (int64_t)p + n > m->opts.max_seq)
            return err_set(e, ERR_RANGE, "model_forward: sequence %d has %d tokens after %d cached (max_seq %d)", s, n, p,
                           m->opts.max_seq);
        if (T64 + n > mt) return err_set(e, ERR_RANGE, "model_forward: batch exceeds max_tokens %d", mt);
        rs->seq_off[s] = (int)T64;
        rs->seq_len[s] = n;
        rs->past[s] = b->seqs ? b->seqs[s].past : (struct attn_past){0};
        for (int i = 0; i < n; i++) {
            rs->pos[T64 + i] = p + i;
            rs->lng[T64 + i] = c->rope_type == ROPE_LONGROPE && p + n > c->rope_orig_max; // HF longrope: per length
        }
        T64 += n;
    }
    *T = (int)T64;
    return 0;
}

// The packed batch as attention sees it (rows laid out by check_seqs; pasts only with seqs).
static struct attn_batch attn_batch_of(const struct model *m, const struct model_batch *b) {
    return (struct attn_batch){.n_seq = b->n_seq, .seq_off = m->rs.seq_off, .seq_len = m->rs.seq_len,
                               .past = b->seqs ? m->rs.past : NULL};
}

static int check_batch(struct model *m, const struct attn_ctx *ctx, const struct model_kv *kv,
                       const struct model_batch *b, int *T, struct err *e) {
    int rc;
    if (!ctx) return err_set(e, ERR_INTERNAL, "model_forward: no attention context");
    if ((rc = check_seqs(m, b, T, e))) return rc;
    const struct attn_batch ab = attn_batch_of(m, b);
    if ((rc = attn_batch_check(ctx, &ab, e))) return err_prefix(e, "model_forward");
    for (int s = 0; b->seqs && s < b->n_seq; s++)
        if ((rc = kv_check_seq(m, ctx, kv, &b->seqs[s], s, e))) return rc;
    if (b->n_out < 0 || b->n_out > m->opts.max_tokens)
        return err_set(e, ERR_RANGE, "model_forward: %d output rows (max %d)", b->n_out, m->opts.max_tokens);
    for (int i = 0; i < b->n_out; i++)
        if (b->out_pos[i] < 0 || b->out_pos[i] >= *T)
            return err_set(e, ERR_RANGE, "model_forward: out_pos[%d] = %d outside the %d packed rows", i, b->out_pos[i], *T);
    for (int t = 0; t < *T; t++)
        if (b->tokens[t] < 0 || b->tokens[t] >= m->dims.V)
            return err_set(e, ERR_RANGE, "model_forward: token %d at row %d outside the vocabulary (%d)", b->tokens[t], t,
                           m->dims.V);
    return 0;
}

// ---- layers ----
// One forward call: the model, its context and cache, the batch and its packed rows T.
struct fwd {
    struct model *m;
    struct attn_ctx *ctx;
    struct model_kv *kv;
    const struct model_batch *b;
    int T;
};

// Layer l's attention block: q/k/v, norms and RoPE, attention (against the cached pasts), the
// rows to store, o projection, residual + the MLP's input norm (layer 0's input norm runs
// before it, later ones fuse with the residual).
static int attention_block(const struct fwd *f, int l, struct err *e) {
    struct model *m = f->m;
    struct run_state *rs = &m->rs;
    const struct model_config *c = &m->cfg;
    const struct model_dims *d = &m->dims;
    const struct layer_w *L = &m->layers[l];
    const int T = f->T;
    int rc;
    if ((rc = linear(m, (struct linear_out){rs->q, d->qd}, rs->xb, &L->w[W_Q], L->b[B_Q], T, e)) ||
        (rc = linear(m, (struct linear_out){rs->k, d->kd}, rs->xb, &L->w[W_K], L->b[B_K], T, e)) ||
        (rc = linear(m, (struct linear_out){rs->v, d->kd}, rs->xb, &L->w[W_V], L->b[B_V], T, e)))
        return rc;
    par_rows(m, T, (size_t)(d->qd + d->kd), qk_rope_fn, L);
    const double sm64 = 1.0 / sqrt(c->query_pre_attn_scalar);
    const struct attn_layer al = {.layer = l, .sm = (float)sm64, .sm64 = sm64, .softcap = (float)c->attn_softcap,
                                  .window = c->window[l]};
    const struct attn_batch ab = attn_batch_of(m, f->b);
    const struct attn_io io = {.out = rs->att, .q = rs->q, .k = rs->k, .v = rs->v,
                               .past_k = f->kv ? kv_k(f->kv, l, 0) : NULL, .past_v = f->kv ? kv_v(f->kv, l, 0) : NULL};
    double t0 = time_now(), c0 = cpu_now();
    rc = attn_forward(f->ctx, &ab, &io, &al, e);
    m->stats.attn_s += time_now() - t0;
    m->stats.attn_cpu_s += cpu_now() - c0;
    if (rc) return err_prefix(e, "layer %d", l);
    if (f->kv) kv_store_rows(m, f->ctx, f->kv, f->b, l);
    if (m->opts.act_bf16) {
        struct round_args rr = {.x = rs->att, .n = d->qd};
        par_rows(m, T, (size_t)d->qd, round_fn, &rr);
    }
    if ((rc = linear(m, (struct linear_out){rs->tmp, d->D}, rs->att, &L->w[W_O], L->b[B_O], T, e))) return rc;
    if (c->sandwich_norm) norm_rows(m, rs->tmp, rs->tmp, L->post_attn_norm, T, d->D);
    add_norm_rows(m, rs->tmp, rs->xb, c->sandwich_norm ? L->pre_ffn_norm : L->post_attn_norm, T);
    return 0;
}

// Layer l's MLP block: gate/up, act*up, down, residual fused with the next layer's input norm.
static int mlp_block(struct model *m, int l, int T, struct err *e) {
    struct run_state *rs = &m->rs;
    const struct model_dims *d = &m->dims;
    const struct layer_w *L = &m->layers[l];
    int rc;
    if ((rc = linear(m, (struct linear_out){rs->gate, d->F}, rs->xb, &L->w[W_GATE], L->b[B_GATE], T, e)) ||
        (rc = linear(m, (struct linear_out){rs->up, d->F}, rs->xb, &L->w[W_UP], L->b[B_UP], T, e)))
        return rc;
    par_rows(m, T, (size_t)d->F, act_fn, NULL);
    if ((rc = linear(m, (struct linear_out){rs->tmp, d->D}, rs->gate, &L->w[W_DOWN], L->b[B_DOWN], T, e))) return rc;
    if (m->cfg.sandwich_norm) norm_rows(m, rs->tmp, rs->tmp, L->post_ffn_norm, T, d->D);
    add_norm_rows(m, rs->tmp, rs->xb, l + 1 < d->n_layers ? m->layers[l + 1].in_norm : NULL, T);
    return 0;
}

// Final norm and vocab projection at the requested rows only.
static int head(struct model *m, const struct model_batch *b, float *logits, struct err *e) {
    const int D = m->dims.D, V = m->dims.V;
    struct run_state *rs = &m->rs;
    if (b->n_out <= 0) return 0;
    for (int i = 0; i < b->n_out; i++)
        memcpy(rs->xb + (size_t)i * D, rs->x + (size_t)b->out_pos[i] * D, (size_t)D * 4);
    norm_rows(m, rs->xb, rs->xb, m->final_norm, b->n_out, D);
    int rc = linear(m, (struct linear_out){logits, V}, rs->xb, &m->head, NULL, b->n_out, e);
    if (!rc && m->cfg.final_softcap > 0) {
        struct round_args a = {.x = logits, .n = V};
        par_rows(m, b->n_out, (size_t)V, softcap_fn, &a);
    }
    return rc;
}

// The embedding of every packed row, then layer 0's input norm.
static int embed(struct model *m, const struct model_batch *b, int T, struct err *e) {
    const size_t D = (size_t)m->dims.D;
    _Atomic size_t bad = 0;
    struct embed_args ea = {.tokens = b->tokens, .bad = &bad};
    par_rows(m, T, D, embed_fn, &ea);
    for (int t = 0; atomic_load(&bad) && t < T; t++) { // the embedding is read per token: its rows are checked here
        const size_t off = (size_t)b->tokens[t] * D;
        if (weights_convert(m->rs.xb, m->embed, off, D)) return weights_nonfinite_err(m->embed, off, D, e);
    }
    norm_rows(m, m->rs.xb, m->rs.x, m->layers[0].in_norm, T, (int)D);
    return 0;
}

int model_forward(struct model *m, struct attn_ctx *ctx, struct model_kv *kv, const struct model_batch *b,
                  float *logits, struct err *e) {
    const double t_start = time_now(), c_start = cpu_now();
    struct fwd f = {.m = m, .ctx = ctx, .kv = kv, .b = b};
    int rc;
    if ((rc = check_batch(m, ctx, kv, b, &f.T, e)) || (rc = embed(m, b, f.T, e))) return rc;
    for (int l = 0; l < m->dims.n_layers && !rc; l++)
        if (!(rc = attention_block(&f, l, e))) rc = mlp_block(m, l, f.T, e);
    if (!rc) rc = head(m, b, logits, e);
    if (rc) return rc;
    m->stats.n_forward++;
    m->stats.tokens += f.T;
    m->stats.forward_s += time_now() - t_start;
    m->stats.forward_cpu_s += cpu_now() - c_start;
    return 0;
}
