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
#include "attention/split.h"

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
    &attn_mode_sage3,
    &attn_mode_sage3_preorder,
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
    else if (!strcmp(s, "nvfp4")) *out = ATTN_QFORMAT_NVFP4;
    else if (!strcmp(s, "mxfp4")) *out = ATTN_QFORMAT_MXFP4;
    else return err_set(e, ERR_USAGE, "--qformat '%s': expected hif4, hif4-a6, nvfp4 or mxfp4", s);
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
const char *attn_qformat_name(int q) {
    return q == ATTN_QFORMAT_HIF4_A6 ? "hif4-a6" : q == ATTN_QFORMAT_NVFP4 ? "nvfp4" : q == ATTN_QFORMAT_MXFP4 ? "mxfp4" : "hif4";
}
double attn_qformat_bits(int q) {
    return q == ATTN_QFORMAT_MXFP4 ? 4.25 : 4.5; // 4 + 8/32 (E8M0); 4 + 8/16 (E4M3); HiF4 4 + 32/64
}
const char *attn_qmean_name(int q) { return q == ATTN_QMEAN_CHANNEL ? "channel" : "token"; }

const char *attn_qdq_skip_name(unsigned skip) {
    static const char *const names[16] = {"none", "q", "k", "q,k", "v", "q,v", "k,v", "q,k,v",
                                          "p", "q,p", "k,p", "q,k,p", "v,p", "q,v,p", "k,v,p", "q,k,v,p"};
    return names[skip & ATTN_QDQ_SKIP_ALL];
}

void attn_mode_display(char *buf, size_t n, const struct attn_mode *m, int qformat, int qmean, unsigned qdq_skip) {
    int k = snprintf(buf, n, "%s", m->name);
    if (k >= 0 && (size_t)k < n && (m->flags & ATTN_F_QMEAN))
        k += snprintf(buf + k, n - (size_t)k, " (%s)", attn_qmean_name(qmean));
    if (k >= 0 && (size_t)k < n && (m->flags & ATTN_F_QUANT) && !(m->flags & ATTN_F_SAGE3) && qformat != ATTN_QFORMAT_HIF4)
        k += snprintf(buf + k, n - (size_t)k, " [%s]", attn_qformat_name(qformat));
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
    struct attn_task *tasks;       // (attn_split_cap) one call's tasks
};

// sage3 fixes its formats and tiling (fp4.md 5.2, invariant 9). An option left at its default
// is accepted: the context cannot tell an explicit --qformat hif4 or --qmean token from none.
static int sage3_check_opts(const struct attn_mode *m, const struct attn_opts *o, struct err *e) {
    if (o->tile != 128) return err_set(e, ERR_USAGE, "mode %s: --tile %d: SageAttention3's tiles are 128 x 128", m->name, o->tile);
    if (o->qformat != ATTN_QFORMAT_HIF4 && o->qformat != ATTN_QFORMAT_NVFP4)
        return err_set(e, ERR_USAGE, "mode %s: --qformat %s: its formats are fixed (NVFP4; spec/fp4.md 5.2)", m->name,
                       attn_qformat_name(o->qformat));
    if (o->qmean != ATTN_QMEAN_TOKEN)
        return err_set(e, ERR_USAGE, "mode %s: --qmean %s: it has its own Q smoothing (128-row group mean)", m->name,
                       attn_qmean_name(o->qmean));
    if (o->v_group != ATTN_VGROUP_TOKEN)
        return err_set(e, ERR_USAGE, "mode %s: --v-group channel: V is quantized along tokens", m->name);
    return 0;
}

int attn_ctx_init(struct attn_ctx **out, const char *mode, const struct attn_opts *o,
                  int n_layers, int H, int Hkv, int d, int max_T, const float *scales,
                  struct err *e) {
    *out = NULL;
    int rc;
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
    if ((m->flags & ATTN_F_SAGE3) && (rc = sage3_check_opts(m, o, e))) return rc;
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
    c->tasks = malloc((size_t)attn_split_cap(c->n_threads, H / Hkv) * sizeof *c->tasks);
    if (!c->tasks) {
        attn_ctx_free(c);
        return err_set(e, ERR_NOMEM, "attention: out of memory");
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
    free(ctx->tasks);
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

// ---- the alignment rule of attn.h ----
int attn_prefix_align(const struct attn_mode *m, const struct attn_opts *o) {
    const unsigned f = attn_mode_run_flags(m, o->qmean);
    const unsigned qkv = ATTN_QDQ_SKIP_Q | ATTN_QDQ_SKIP_K | ATTN_QDQ_SKIP_V;
    if (f & ATTN_F_SAGE3) return ATTN_ALIGN_NONE; // the K mean over all T tokens (fp4.md 5.5)
    // NVFP4 with Q, K or V quantized: per-tensor scales over every row of the call (fp4.md 4.3)
    if ((f & ATTN_F_QUANT) && o->qformat == ATTN_QFORMAT_NVFP4 && (o->qdq_skip & qkv) != qkv) return ATTN_ALIGN_NONE;
    if (f & ATTN_F_QMEAN_CH) return o->tile;
    if ((f & ATTN_F_QUANT) && o->v_group == ATTN_VGROUP_TOKEN && !(o->qdq_skip & ATTN_QDQ_SKIP_V))
        return o->qformat == ATTN_QFORMAT_MXFP4 ? 32 : 64; // V's blocks along tokens from position 0
    return 1;
}

int attn_ctx_align(const struct attn_ctx *ctx) {
    struct attn_opts o = ctx->opts;
    o.qdq_skip = ctx->qdq_skip;
    return attn_prefix_align(ctx->mode, &o);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}
uint64_t attn_ctx_key(const struct attn_ctx *ctx) {
    const int v[5] = {ctx->opts.tile, ctx->opts.v_group, ctx->opts.qformat, ctx->opts.qmean, (int)ctx->qdq_skip};
    const uintptr_t sc = (uintptr_t)ctx->scales;
    uint64_t h = fnv(0xcbf29ce484222325ull, ctx->mode->name, strlen(ctx->mode->name));
    h = fnv(h, v, sizeof v);
    return fnv(h, &sc, sizeof sc);
}

// bf16 rounding in place; kern_bf16 is branch-free (vectorizes) and equals round_bf16
static void round_bf16_rows(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = kern_bf16(x[i]);
}

// ---- pool tasks (split.h): one task = rows [r0, r1) of query heads [h0, h1) of a sequence ----
struct attn_job {
    const struct attn_ctx *ctx;
    const struct attn_mode *mode;
    float *out;
    const float *q, *k, *v, *scales;
    const int *seq_off, *seq_len;
    const struct attn_past *past;  // may be NULL
    const struct attn_layer *l;
    const struct attn_task *tasks; // NULL: task t = (sequence t / Hkv, kv head t % Hkv), whole
    int full; // full: the mode's options (else the f32 diagnostics reference)
};
static void attn_task(void *p, int t, int slot) {
    const struct attn_job *j = p;
    const struct attn_ctx *ctx = j->ctx;
    const int H = ctx->H, Hkv = ctx->Hkv, d = ctx->d, g = H / Hkv;
    struct attn_task td;
    if (j->tasks) td = j->tasks[t];
    else {
        const int s = t / Hkv, kh = t % Hkv, q0 = j->past ? j->past[s].n : 0;
        td = (struct attn_task){s, kh * g, (kh + 1) * g, q0, q0 + j->seq_len[s], 0};
    }
    const int s = td.s, q0 = j->past ? j->past[s].n : 0;
    const size_t o = (size_t)j->seq_off[s];
    const struct attn_layer *l = j->l;
    struct attn_call c = {.T = q0 + j->seq_len[s], .H = H, .Hkv = Hkv, .d = d, .q0 = q0, .r0 = td.r0, .r1 = td.r1,
                          .past = q0 ? &j->past[s] : NULL, .layer = l->layer, .sm = l->sm, .sm64 = l->sm64,
                          .softcap = l->softcap, .window = l->window, .tile = ctx->opts.tile};
    if (j->full) {
        c.v_group = ctx->opts.v_group, c.qformat = ctx->opts.qformat, c.qmean = ctx->opts.qmean;
        c.scales = j->scales, c.qdq_skip = ctx->qdq_skip, c.diag = ctx->dacc ? &ctx->dacc[slot] : NULL;
    }
    void *scratch = ctx->scratch + (size_t)slot * ctx->scratch_per_thread;
    j->mode->forward(j->out + o * H * d, j->q + o * H * d, j->k + o * Hkv * d, j->v + o * Hkv * d, &c, td.h0, td.h1,
                     scratch);
}

// Runs job j over the call's tasks (threads: 1 = on the calling thread).
static void run_tasks(struct attn_ctx *ctx, struct attn_job *j, int n_seq, int threads) {
    struct attn_split_in in = {j->seq_len, j->past, n_seq, ctx->H, ctx->Hkv, ctx->d, ctx->opts.tile, j->l->window,
                               ctx->n_threads};
    const int n = attn_split(ctx->tasks, &in);
    j->tasks = n ? ctx->tasks : NULL;
    pool_for(n ? n : n_seq * ctx->Hkv, attn_task, j, threads);
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
                        const float *v, const int *seq_off, const int *seq_len, const struct attn_past *past,
                        int n_seq, const struct attn_layer *l, struct err *e) {
    const int H = ctx->H, d = ctx->d;
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
    struct attn_job j = {ctx, &attn_mode_f32, ctx->dref, q, k, v, NULL, seq_off, seq_len, past, l, NULL, 0};
    run_tasks(ctx, &j, n_seq, ctx->n_threads);
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

// The past of every sequence against the rule of attn.h (alignment, segments, capacity).
static int check_past(const struct attn_ctx *ctx, const int *seq_len, const struct attn_past *past, int n_seq,
                      struct err *e) {
    const int align = attn_ctx_align(ctx);
    for (int s = 0; s < n_seq; s++) {
        const int n = past ? past[s].n : 0;
        if (seq_len[s] <= 0 || n < 0 || (int64_t)n + seq_len[s] > ctx->max_T)
            return err_set(e, ERR_RANGE, "attention: sequence %d has %d tokens after %d cached (context sized for %d)", s,
                           seq_len[s], n, ctx->max_T);
        if (!n) continue;
        if (ctx->hook) return err_set(e, ERR_USAGE, "attention: a hook sees whole sequences; sequence %d continues a cache", s);
        if (align == ATTN_ALIGN_NONE)
            return err_set(e, ERR_USAGE, "attention: sequence %d continues a cached prefix of %d positions, but mode %s "
                           "(--qformat %s) has no exact cached prefix (NVFP4's per-tensor scales, sage3's K mean: they "
                           "see every row of the sequence, spec/fp4.md 4.3, 5.5)", s, n, ctx->mode->name,
                           attn_qformat_name(ctx->opts.qformat));
        if (n % align)
            return err_set(e, ERR_USAGE, "attention: sequence %d continues a cached prefix of %d positions, not a multiple of "
                           "%d (mode %s): such a cache is not exact (spec/attention.md 8.6)", s, n, align, ctx->mode->name);
        const struct attn_past *p = &past[s];
        int64_t sum = 0;
        int ok = p->n_seg >= 1 && p->n_seg <= ATTN_PAST_SEGS;
        for (int g = 0; ok && g < p->n_seg; g++) {
            ok = p->len[g] >= 0 && (p->len[g] == 0 || (p->k[g] && p->v[g]));
            sum += p->len[g];
        }
        if (!ok || sum != n)
            return err_set(e, ERR_INTERNAL, "attention: sequence %d: %d past segments do not hold its %d cached positions", s,
                           p->n_seg, n);
    }
    return 0;
}

// FP4 formats take finite inputs only (spec/fp4.md 2.4): the first NaN or Inf of a quantized
// Q, K or V row of the call is an error naming layer, sequence, position, head and operand.
static int check_fp4_finite(const struct attn_ctx *ctx, const float *const x[3], const int *seq_off, const int *seq_len,
                            const struct attn_past *past, int n_seq, int layer, struct err *e) {
    const int fp4 = ctx->opts.qformat == ATTN_QFORMAT_NVFP4 || ctx->opts.qformat == ATTN_QFORMAT_MXFP4 ||
                    (ctx->mode->flags & ATTN_F_SAGE3);
    if (!fp4 || !(ctx->mode->flags & ATTN_F_QUANT)) return 0;
    static const char name[3] = {'Q', 'K', 'V'};
    for (int op = 0; op < 3; op++) {
        if (ctx->qdq_skip & (1u << op)) continue;
        const int heads = op ? ctx->Hkv : ctx->H;
        for (int s = 0; s < n_seq; s++) {
            const size_t w = (size_t)heads * ctx->d, a = (size_t)seq_off[s] * w, n = (size_t)seq_len[s] * w;
            for (size_t i = 0; i < n; i++)
                if (!isfinite(x[op][a + i]))
                    return err_set(e, ERR_RANGE, "attention layer %d: %c of sequence %d, position %d, head %d, channel %d is "
                                   "%g: outside the input contract of --qformat %s (spec/fp4.md 2.4)", layer, name[op], s,
                                   (int)(i / w) + (past ? past[s].n : 0), (int)(i % w) / ctx->d, (int)(i % ctx->d),
                                   (double)x[op][a + i], ctx->mode->flags & ATTN_F_SAGE3 ? "nvfp4 (sage3)" : attn_qformat_name(ctx->opts.qformat));
        }
    }
    return 0;
}

int attn_forward(struct attn_ctx *ctx, float *out, float *q, float *k, float *v,
                 const int *seq_off, const int *seq_len, int n_seq, const struct attn_layer *l,
                 struct err *e) {
    return attn_forward_past(ctx, out, q, k, v, seq_off, seq_len, NULL, n_seq, l, e);
}

int attn_forward_past(struct attn_ctx *ctx, float *out, float *q, float *k, float *v,
                      const int *seq_off, const int *seq_len, const struct attn_past *past, int n_seq,
                      const struct attn_layer *l, struct err *e) {
    const int H = ctx->H, Hkv = ctx->Hkv, d = ctx->d;
    if (l->layer < 0 || l->layer >= ctx->n_layers)
        return err_set(e, ERR_INTERNAL, "attention: layer %d out of range", l->layer);
    for (int s = 0; s < n_seq; s++)
        if (seq_off[s] < 0) return err_set(e, ERR_INTERNAL, "attention: sequence %d at row %d", s, seq_off[s]);
    int rc = check_past(ctx, seq_len, past, n_seq, e);
    if (rc) return rc;
    if ((ctx->mode->flags & ATTN_F_SAGE3) && l->softcap > 0)
        return err_set(e, ERR_USAGE, "attention layer %d: mode %s has no soft-capping (cap %g; SageAttention3 has none)",
                       l->layer, ctx->mode->name, (double)l->softcap);
    // Small calls run on the calling thread: handing out tasks costs more than the work, and
    // results never depend on the thread count (spec section 8.5, tested).
    struct attn_split_in in = {seq_len, past, n_seq, H, Hkv, d, ctx->opts.tile, l->window, ctx->n_threads};
    const int par_attn = attn_split_work(&in) >= 4.0e6;
    // Kernel inputs are 16-bit (attention.md 1): round in place, new rows of sequences only
    // (cached rows were rounded when they were computed).
    if (ctx->mode->flags & ATTN_F_ROUND_INPUT) {
        for (int s = 0; s < n_seq; s++) {
            size_t o = (size_t)seq_off[s], T = (size_t)seq_len[s];
            round_bf16_rows(q + o * H * d, T * H * d);
            round_bf16_rows(k + o * Hkv * d, T * Hkv * d);
            round_bf16_rows(v + o * Hkv * d, T * Hkv * d);
        }
    }
    const float *const qkv[3] = {q, k, v};
    if ((rc = check_fp4_finite(ctx, qkv, seq_off, seq_len, past, n_seq, l->layer, e))) return rc;
    if (ctx->hook)
        for (int s = 0; s < n_seq; s++) {
            size_t o = (size_t)seq_off[s];
            ctx->hook(ctx->hook_user, l->layer, s, q + o * H * d, k + o * Hkv * d, v + o * Hkv * d,
                      seq_len[s], H, Hkv, d);
        }
    const float *scales = ctx->scales ? ctx->scales + (size_t)l->layer * Hkv * d : NULL;
    if (ctx->dacc) memset(ctx->dacc, 0, (size_t)ctx->n_threads * sizeof *ctx->dacc);
    struct attn_job j = {ctx, ctx->mode, out, q, k, v, scales, seq_off, seq_len, past, l, NULL, 1};
    run_tasks(ctx, &j, n_seq, par_attn ? ctx->n_threads : 1);
    // Emulated Ascend cost counts (spec/cost.md) are a function of the call shapes only:
    // callers count them with cost_count_call from the same seq_len / window (run.c).

    if (ctx->diag) {
        struct attn_diag_layer *L = &ctx->diag->layer[l->layer];
        for (int th = 0; th < ctx->n_threads; th++) attn_diag_acc_merge(&L->acc, &ctx->dacc[th]);
        L->calls++;
        if ((rc = diag_compare(ctx, out, q, k, v, seq_off, seq_len, past, n_seq, l, e))) return rc;
    }
    ctx->stats.calls += (int64_t)n_seq * H;
    ctx->stats.calls_per_layer[l->layer] += (int64_t)n_seq * H;
    for (int s = 0; s < n_seq; s++) ctx->stats.tokens += seq_len[s];
    return 0;
}
