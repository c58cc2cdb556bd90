// attn.c: the attention mode registry, the per-run context (scratch, statistics, hooks) and
// the dispatcher that runs a mode over a packed batch in parallel over (sequence, kv head)
// groups. Owns no numerics: every mode's arithmetic lives in its own file.
#include "attention/attn.h"

#include "base/pool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "attention/kern.h"
#include "attention/modes.h"

// ---- registry: one line per mode ----
static const struct attn_mode *const registry[] = {
    &attn_mode_exact,
    &attn_mode_f32,
    &attn_mode_bf16,
    &attn_mode_direct,
    &attn_mode_hifa4,
    &attn_mode_direct_qmean,
    &attn_mode_direct_qmean_sqk,
    &attn_mode_direct_qmean_preorder,
};
static const int n_registry = (int)(sizeof registry / sizeof registry[0]);

int attn_mode_count(void) { return n_registry; }
const struct attn_mode *attn_mode_at(int i) { return (i >= 0 && i < n_registry) ? registry[i] : NULL; }

const struct attn_mode *attn_mode_find(const char *name) {
    for (int i = 0; i < n_registry; i++)
        if (!strcmp(registry[i]->name, name)) return registry[i];
    return NULL;
}

const char *attn_mode_names(void) {
    static char buf[512];
    if (!buf[0]) {
        size_t n = 0;
        for (int i = 0; i < n_registry && n < sizeof buf; i++)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? ", " : "", registry[i]->name);
    }
    return buf;
}

unsigned attn_mode_run_flags(const struct attn_mode *m, int qmean) {
    unsigned f = m->flags;
    if ((f & ATTN_F_QMEAN) && qmean == ATTN_QMEAN_CHANNEL) f |= ATTN_F_QMEAN_CH;
    return f;
}

void attn_opts_default(struct attn_opts *o) {
    memset(o, 0, sizeof *o);
    o->tile = 128;
    o->v_group = ATTN_VGROUP_TOKEN;
    o->qformat = ATTN_QFORMAT_HIF4;
    o->qmean = ATTN_QMEAN_TOKEN;
    o->qdq_skip = 0;
}

int attn_parse_vgroup(const char *s, int *out, struct err *e) {
    if (!strcmp(s, "token")) *out = ATTN_VGROUP_TOKEN;
    else if (!strcmp(s, "channel")) *out = ATTN_VGROUP_CHANNEL;
    else return err_set(e, ERR_USAGE, "--v-group '%s': expected token or channel", s);
    return 0;
}
int attn_parse_qformat(const char *s, int *out, struct err *e) {
    if (!strcmp(s, "hif4")) *out = ATTN_QFORMAT_HIF4;
    else if (!strcmp(s, "hif4-a6")) *out = ATTN_QFORMAT_HIF4_A6;
    else return err_set(e, ERR_USAGE, "--qformat '%s': expected hif4 or hif4-a6", s);
    return 0;
}
int attn_parse_qmean(const char *s, int *out, struct err *e) {
    if (!strcmp(s, "token")) *out = ATTN_QMEAN_TOKEN;
    else if (!strcmp(s, "channel")) *out = ATTN_QMEAN_CHANNEL;
    else return err_set(e, ERR_USAGE, "--qmean '%s': expected token or channel", s);
    return 0;
}

static const char qdq_operands[4] = {'q', 'k', 'v', 'p'}; // bit i of enum attn_qdq_skip

int attn_parse_qdq_skip(const char *s, unsigned *out, struct err *e) {
    *out = 0;
    if (!strcmp(s, "none")) return 0;
    const char *p = s;
    while (1) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        int bit = -1;
        for (int i = 0; i < 4 && n == 1; i++)
            if (p[0] == qdq_operands[i]) bit = i;
        if (bit < 0)
            return err_set(e, ERR_USAGE, "--qdq-skip '%s': '%.*s' is not an operand (expected a comma list of q, k, v, p, "
                           "or none)", s, (int)n, p);
        if (*out & (1u << bit)) return err_set(e, ERR_USAGE, "--qdq-skip '%s': '%c' given twice", s, p[0]);
        *out |= 1u << bit;
        if (!end) break;
        p = end + 1;
    }
    return 0;
}

const char *attn_vgroup_name(int v) { return v == ATTN_VGROUP_CHANNEL ? "channel" : "token"; }
const char *attn_qformat_name(int q) { return q == ATTN_QFORMAT_HIF4_A6 ? "hif4-a6" : "hif4"; }
const char *attn_qmean_name(int q) { return q == ATTN_QMEAN_CHANNEL ? "channel" : "token"; }

const char *attn_qdq_skip_name(unsigned skip) {
    static const char *const names[16] = {"none", "q", "k", "q,k", "v", "q,v", "k,v", "q,k,v",
                                          "p", "q,p", "k,p", "q,k,p", "v,p", "q,v,p", "k,v,p", "q,k,v,p"};
    return names[skip & ATTN_QDQ_SKIP_ALL];
}

void attn_mode_display(char *buf, size_t n, const struct attn_mode *m, int qmean, unsigned qdq_skip) {
    int k = snprintf(buf, n, "%s", m->name);
    if (k >= 0 && (size_t)k < n && (m->flags & ATTN_F_QMEAN))
        k += snprintf(buf + k, n - (size_t)k, " (%s)", attn_qmean_name(qmean));
    if (k >= 0 && (size_t)k < n && (m->flags & ATTN_F_QUANT) && (qdq_skip & ATTN_QDQ_SKIP_ALL))
        snprintf(buf + k, n - (size_t)k, " [qdq-skip %s]", attn_qdq_skip_name(qdq_skip));
}

// ---- context ----
struct attn_ctx {
    const struct attn_mode *mode;
    struct attn_opts opts;
    int n_layers, H, Hkv, d, max_T;
    const float *scales; // [n_layers][Hkv][d], borrowed
    int n_threads;
    size_t scratch_per_thread;
    unsigned char *scratch; // n_threads * scratch_per_thread
    attn_hook_fn hook;
    void *hook_user;
    struct attn_stats stats;
    unsigned qdq_skip;             // opts.qdq_skip, or attn_ctx_set_qdq_skip's
    // diagnostics (opts.diag only)
    struct attn_diag *diag;        // per-layer results
    struct attn_diag_acc *dacc;    // (n_threads) per-thread accumulators of one call
    float *dref;                   // (dref_cap) f32 reference output of one batch, grows
    size_t dref_cap;
};

int attn_ctx_init(struct attn_ctx **out, const char *mode, const struct attn_opts *o,
                  int n_layers, int H, int Hkv, int d, int max_T, const float *scales,
                  struct err *e) {
    *out = NULL;
    const struct attn_mode *m = attn_mode_find(mode);
    if (!m) return err_set(e, ERR_USAGE, "unknown attention mode '%s' (known: %s)", mode, attn_mode_names());
    if (n_layers <= 0 || n_layers > ATTN_MAX_LAYERS || H <= 0 || Hkv <= 0 || H % Hkv || d <= 0 || max_T <= 0)
        return err_set(e, ERR_RANGE, "attention: bad shape layers=%d H=%d Hkv=%d d=%d max_T=%d",
                       n_layers, H, Hkv, d, max_T);
    if (o->tile < 64 || o->tile % 64)
        return err_set(e, ERR_USAGE, "--tile %d: must be a positive multiple of 64", o->tile);
    if (o->qmean != ATTN_QMEAN_TOKEN && o->qmean != ATTN_QMEAN_CHANNEL)
        return err_set(e, ERR_USAGE, "attention: Q-Mean form %d (expected token or channel)", o->qmean);
    if (o->qdq_skip & ~(unsigned)ATTN_QDQ_SKIP_ALL)
        return err_set(e, ERR_USAGE, "attention: qdq skip mask 0x%x (operands q, k, v, p only)", o->qdq_skip);
    if ((m->flags & ATTN_F_SQK) && !scales)
        return err_set(e, ERR_USAGE, "attention mode '%s' uses Smooth-QK and needs a scales file (--scales)", mode);
    struct attn_ctx *c = calloc(1, sizeof *c);
    if (!c) return err_set(e, ERR_NOMEM, "attention: out of memory");
    c->mode = m;
    c->opts = *o;
    c->n_layers = n_layers;
    c->H = H;
    c->Hkv = Hkv;
    c->d = d;
    c->max_T = max_T;
    c->scales = scales;
    c->qdq_skip = o->qdq_skip & ATTN_QDQ_SKIP_ALL;
    c->n_threads = o->n_threads > 0 ? o->n_threads : pool_threads();
    struct attn_call call = {.T = max_T, .H = H, .Hkv = Hkv, .d = d, .tile = o->tile,
                             .v_group = o->v_group, .qformat = o->qformat, .qmean = o->qmean};
    size_t sb = m->scratch_bytes(&call);
    if (o->diag) {
        size_t rb = attn_mode_f32.scratch_bytes(&call); // the f32 comparison runs in the same scratch
        sb = rb > sb ? rb : sb;
        c->diag = calloc(1, sizeof *c->diag);
        c->dacc = calloc((size_t)c->n_threads, sizeof *c->dacc);
        if (!c->diag || !c->dacc) {
            attn_ctx_free(c);
            return err_set(e, ERR_NOMEM, "attention: out of memory for diagnostics");
        }
        c->diag->n_layers = n_layers;
    }
    c->scratch_per_thread = (sb + 63) & ~(size_t)63;
    size_t total;
    if (mul_size(c->scratch_per_thread, (size_t)c->n_threads, &total)) {
        attn_ctx_free(c);
        return err_set(e, ERR_RANGE, "attention: scratch size overflow (max_T=%d)", max_T);
    }
    if (total) {
        c->scratch = aligned_alloc(64, total);
        if (!c->scratch) {
            attn_ctx_free(c);
            return err_set(e, ERR_NOMEM, "attention: cannot allocate %zu bytes of scratch", total);
        }
    }
    *out = c;
    return 0;
}

void attn_ctx_free(struct attn_ctx *ctx) {
    if (!ctx) return;
    free(ctx->scratch);
    free(ctx->diag);
    free(ctx->dacc);
    free(ctx->dref);
    free(ctx);
}

const struct attn_mode *attn_ctx_mode(const struct attn_ctx *ctx) { return ctx->mode; }
void attn_ctx_set_hook(struct attn_ctx *ctx, attn_hook_fn fn, void *user) { ctx->hook = fn; ctx->hook_user = user; }
const struct attn_stats *attn_ctx_stats(const struct attn_ctx *ctx) { return &ctx->stats; }
void attn_ctx_reset_stats(struct attn_ctx *ctx) {
    memset(&ctx->stats, 0, sizeof ctx->stats);
    if (ctx->diag) {
        memset(ctx->diag, 0, sizeof *ctx->diag);
        ctx->diag->n_layers = ctx->n_layers;
    }
}
const struct attn_diag *attn_ctx_diag(const struct attn_ctx *ctx) { return ctx->diag; }
void attn_ctx_set_qdq_skip(struct attn_ctx *ctx, unsigned skip) { ctx->qdq_skip = skip; }

// bf16 rounding in place; kern_bf16 is branch-free (vectorizes) and equals round_bf16
static void round_bf16_rows(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = kern_bf16(x[i]);
}

// ---- work split: tasks are (sequence, kv head, slice of its query heads) ----
// The kv-head group's query heads are sliced only when there are too few (sequence, kv head)
// pairs to keep every thread busy (e.g. one sequence of a model with one kv head). Each query
// head is computed the same way whatever the split, so results never depend on it.
static int head_split(int n_seq, int Hkv, int g, int n_threads) {
    int pairs = n_seq * Hkv, split = 1;
    if (pairs < 2 * n_threads) split = (2 * n_threads + pairs - 1) / pairs;
    return split < g ? split : g;
}
static void task_of(int t, int Hkv, int g, int split, int *s, int *h0, int *h1) {
    int per_seq = Hkv * split, rem = t % per_seq, kh = rem / split, part = rem % split;
    *s = t / per_seq;
    *h0 = kh * g + part * g / split;
    *h1 = kh * g + (part + 1) * g / split;
}

// One attention call as pool tasks: task t = (sequence, kv head, slice of its query heads).
struct attn_job {
    const struct attn_ctx *ctx;
    const struct attn_mode *mode;
    float *out;
    const float *q, *k, *v, *scales;
    const int *seq_off, *seq_len;
    const struct attn_layer *l;
    int split, full; // full: the mode's options (else the f32 diagnostics reference)
};
static void attn_task(void *p, int t, int slot) {
    const struct attn_job *j = p;
    const struct attn_ctx *ctx = j->ctx;
    const int H = ctx->H, Hkv = ctx->Hkv, d = ctx->d;
    int s, h0, h1;
    task_of(t, Hkv, H / Hkv, j->split, &s, &h0, &h1);
    const size_t o = (size_t)j->seq_off[s];
    const struct attn_layer *l = j->l;
    struct attn_call c = {.T = j->seq_len[s], .H = H, .Hkv = Hkv, .d = d, .layer = l->layer, .sm = l->sm,
                          .sm64 = l->sm64, .softcap = l->softcap, .window = l->window, .tile = ctx->opts.tile};
    if (j->full) {
        c.v_group = ctx->opts.v_group, c.qformat = ctx->opts.qformat, c.qmean = ctx->opts.qmean;
        c.scales = j->scales, c.qdq_skip = ctx->qdq_skip, c.diag = ctx->dacc ? &ctx->dacc[slot] : NULL;
    }
    void *scratch = ctx->scratch + (size_t)slot * ctx->scratch_per_thread;
    j->mode->forward(j->out + o * H * d, j->q + o * H * d, j->k + o * Hkv * d, j->v + o * Hkv * d, &c, h0, h1, scratch);
}

// ---- diagnostics (spec/attention.md section 5): merge and compare against f32 ----
void attn_diag_acc_merge(struct attn_diag_acc *dst, const struct attn_diag_acc *a) {
    for (int b = 0; b < ATTN_EPS_BINS + 2; b++) dst->eps_hist[b] += a->eps_hist[b];
    if (a->eps_tiles) {
        if (!dst->eps_tiles || a->eps_min < dst->eps_min) dst->eps_min = a->eps_min;
        if (!dst->eps_tiles || a->eps_max > dst->eps_max) dst->eps_max = a->eps_max;
    }
    dst->eps_tiles += a->eps_tiles;
    dst->eps_below_zero += a->eps_below_zero;
    if (a->k_maxabs > dst->k_maxabs) dst->k_maxabs = a->k_maxabs;
}

// Runs mode f32 on the same (already rounded) inputs into ctx->dref and adds the error sums
// of this batch to the layer (sequence rows only, in batch order: deterministic).
static int diag_compare(struct attn_ctx *ctx, const float *out, const float *q, const float *k,
                        const float *v, const int *seq_off, const int *seq_len, int n_seq,
                        const struct attn_layer *l, struct err *e) {
    const int H = ctx->H, Hkv = ctx->Hkv, d = ctx->d, g = H / Hkv;
    size_t rows = 0;
    for (int s = 0; s < n_seq; s++)
        if ((size_t)seq_off[s] + (size_t)seq_len[s] > rows) rows = (size_t)seq_off[s] + (size_t)seq_len[s];
    size_t need = rows * H * d;
    if (need > ctx->dref_cap) {
        float *nb = realloc(ctx->dref, need * sizeof(float));
        if (!nb) return err_set(e, ERR_NOMEM, "attention diagnostics: out of memory (%zu floats)", need);
        ctx->dref = nb;
        ctx->dref_cap = need;
    }
    const int split = head_split(n_seq, Hkv, g, ctx->n_threads);
    struct attn_job j = {ctx, &attn_mode_f32, ctx->dref, q, k, v, NULL, seq_off, seq_len, l, split, 0};
    pool_for(n_seq * Hkv * split, attn_task, &j, ctx->n_threads);
    struct attn_diag_layer *L = &ctx->diag->layer[l->layer];
    for (int s = 0; s < n_seq; s++) {
        size_t a = (size_t)seq_off[s] * H * d, b = a + (size_t)seq_len[s] * H * d;
        for (size_t i = a; i < b; i++) {
            double x = out[i], r = ctx->dref[i];
            L->err2 += (x - r) * (x - r);
            L->ref2 += r * r;
            L->out2 += x * x;
            L->dot += x * r;
        }
        L->n += (int64_t)(b - a);
    }
    L->rel_l2 = L->ref2 > 0 ? sqrt(L->err2 / L->ref2) : sqrt(L->err2);
    L->cosine = L->out2 > 0 && L->ref2 > 0 ? L->dot / sqrt(L->out2 * L->ref2) : 0;
    return 0;
}

int attn_forward(struct attn_ctx *ctx, float *out, float *q, float *k, float *v,
                 const int *seq_off, const int *seq_len, int n_seq, const struct attn_layer *l,
                 struct err *e) {
    const int H = ctx->H, Hkv = ctx->Hkv, d = ctx->d, g = H / Hkv;
    if (l->layer < 0 || l->layer >= ctx->n_layers)
        return err_set(e, ERR_INTERNAL, "attention: layer %d out of range", l->layer);
    for (int s = 0; s < n_seq; s++) {
        if (seq_len[s] <= 0 || seq_len[s] > ctx->max_T)
            return err_set(e, ERR_RANGE, "attention: sequence %d has %d tokens (context sized for %d)",
                           s, seq_len[s], ctx->max_T);
        if (seq_off[s] < 0) return err_set(e, ERR_INTERNAL, "attention: sequence %d at row %d", s, seq_off[s]);
    }
    // Small batches run on the calling thread: handing out tasks costs more than the work, and
    // results never depend on the thread count (spec section 8.5, tested). work = visible
    // (query, key) pairs x heads x d.
    double work = 0;
    for (int s = 0; s < n_seq; s++) {
        double T = seq_len[s], pairs = T * (T + 1) / 2;
        if (l->window > 0 && T > l->window) pairs = (double)l->window * (l->window + 1) / 2 + (T - l->window) * l->window;
        work += pairs * H * d;
    }
    const int par_attn = work >= 4.0e6;
    // Kernel inputs are 16-bit (attention.md 1): round in place, rows of sequences only.
    if (ctx->mode->flags & ATTN_F_ROUND_INPUT) {
        for (int s = 0; s < n_seq; s++) {
            size_t o = (size_t)seq_off[s], T = (size_t)seq_len[s];
            round_bf16_rows(q + o * H * d, T * H * d);
            round_bf16_rows(k + o * Hkv * d, T * Hkv * d);
            round_bf16_rows(v + o * Hkv * d, T * Hkv * d);
        }
    }
    if (ctx->hook)
        for (int s = 0; s < n_seq; s++) {
            size_t o = (size_t)seq_off[s];
            ctx->hook(ctx->hook_user, l->layer, s, q + o * H * d, k + o * Hkv * d, v + o * Hkv * d,
                      seq_len[s], H, Hkv, d);
        }
    const int split = head_split(n_seq, Hkv, g, ctx->n_threads);
    const float *scales = ctx->scales ? ctx->scales + (size_t)l->layer * Hkv * d : NULL;
    if (ctx->dacc) memset(ctx->dacc, 0, (size_t)ctx->n_threads * sizeof *ctx->dacc);
    struct attn_job j = {ctx, ctx->mode, out, q, k, v, scales, seq_off, seq_len, l, split, 1};
    pool_for(n_seq * Hkv * split, attn_task, &j, par_attn ? ctx->n_threads : 1);
    // Emulated Ascend cost counts (spec/cost.md) are a function of the call shapes only:
    // callers count them with cost_count_call from the same seq_len / window (run.c).

    if (ctx->diag) {
        struct attn_diag_layer *L = &ctx->diag->layer[l->layer];
        for (int th = 0; th < ctx->n_threads; th++) attn_diag_acc_merge(&L->acc, &ctx->dacc[th]);
        L->calls++;
        int rc = diag_compare(ctx, out, q, k, v, seq_off, seq_len, n_seq, l, e);
        if (rc) return rc;
    }
    ctx->stats.calls += (int64_t)n_seq * H;
    ctx->stats.calls_per_layer[l->layer] += (int64_t)n_seq * H;
    for (int s = 0; s < n_seq; s++) ctx->stats.tokens += seq_len[s];
    return 0;
}
