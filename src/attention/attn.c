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

// The options of a mode a kernel call carries (the scratch sizing and every call of the mode;
// the f32 reference of the diagnostics keeps the defaults).
static void call_set_opts(struct attn_call *c, const struct attn_opts *o) {
    c->v_group = o->v_group, c->qformat = o->qformat, c->qmean = o->qmean;
}

int attn_ctx_init(struct attn_ctx **out, const char *mode, const struct attn_opts *o, const struct attn_shape *shape,
                  const float *scales, struct err *e) {
    *out = NULL;
    int rc;
    const int n_layers = shape->n_layers, H = shape->H, Hkv = shape->Hkv, d = shape->d, max_T = shape->max_T;
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
    struct attn_call call = {.T = max_T, .H = H, .Hkv = Hkv, .d = d, .tile = o->tile};
    call_set_opts(&call, o);
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
// What a job computes: the context's mode under its options, or mode f32 with default options
// (the reference the diagnostics compare against).
enum attn_job_kind { ATTN_JOB_MODE, ATTN_JOB_F32_REF };
struct attn_job {
    const struct attn_ctx *ctx;
    const struct attn_mode *mode;
    const struct attn_batch *b;
    const float *scales;
    const struct attn_layer *l;
    const struct attn_task *tasks; // NULL: task t = (sequence t / Hkv, kv head t % Hkv), whole
    enum attn_job_kind kind;
    float *out;
    const float *q, *k, *v, *past_k, *past_v;
};
static void attn_task(void *p, int t, int slot) {
    const struct attn_job *j = p;
    const struct attn_ctx *ctx = j->ctx;
    const struct attn_batch *b = j->b;
    const int H = ctx->H, Hkv = ctx->Hkv, d = ctx->d, g = H / Hkv;
    struct attn_task td;
    if (j->tasks) td = j->tasks[t];
    else {
        const int s = t / Hkv, kh = t % Hkv, q0 = b->past ? b->past[s].n : 0;
        td = (struct attn_task){s, kh * g, (kh + 1) * g, q0, q0 + b->seq_len[s], 0};
    }
    const int s = td.s, q0 = b->past ? b->past[s].n : 0;
    const size_t o = (size_t)b->seq_off[s];
    const struct attn_layer *l = j->l;
    struct attn_call c = {.T = q0 + b->seq_len[s], .H = H, .Hkv = Hkv, .d = d, .q0 = q0, .r0 = td.r0, .r1 = td.r1,
                          .past = q0 ? &b->past[s] : NULL, .past_k = j->past_k, .past_v = j->past_v,
                          .layer = l->layer, .sm = l->sm, .sm64 = l->sm64, .softcap = l->softcap, .window = l->window,
                          .tile = ctx->opts.tile};
    if (j->kind == ATTN_JOB_MODE) {
        call_set_opts(&c, &ctx->opts);
        c.scales = j->scales, c.qdq_skip = ctx->qdq_skip, c.diag = ctx->dacc ? &ctx->dacc[slot] : NULL;
    }
    void *scratch = ctx->scratch + (size_t)slot * ctx->scratch_per_thread;
    const struct attn_operands x = {j->out + o * H * d, j->q + o * H * d, j->k + o * Hkv * d, j->v + o * Hkv * d};
    j->mode->forward(&x, &c, td.h0, td.h1, scratch);
}
static struct attn_split_in split_in(const struct attn_ctx *ctx, const struct attn_batch *b, const struct attn_layer *l) {
    return (struct attn_split_in){.seq_len = b->seq_len, .past = b->past, .n_seq = b->n_seq, .H = ctx->H,
                                  .Hkv = ctx->Hkv, .d = ctx->d, .tile = ctx->opts.tile, .window = l->window,
                                  .n_threads = ctx->n_threads};
}
// Runs job j over the call's tasks (threads: 1 = on the calling thread).
static void run_tasks(struct attn_ctx *ctx, struct attn_job *j, int threads) {
    const struct attn_split_in in = split_in(ctx, j->b, j->l);
    const int n = attn_split(ctx->tasks, &in);
    j->tasks = n ? ctx->tasks : NULL;
    pool_for(n ? n : j->b->n_seq * ctx->Hkv, attn_task, j, threads);
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
static int diag_compare(struct attn_ctx *ctx, const struct attn_batch *b, const struct attn_io *io,
                        const struct attn_layer *l, struct err *e) {
    const int H = ctx->H, d = ctx->d;
    size_t rows = 0;
    for (int s = 0; s < b->n_seq; s++)
        if ((size_t)b->seq_off[s] + (size_t)b->seq_len[s] > rows) rows = (size_t)b->seq_off[s] + (size_t)b->seq_len[s];
    size_t need = rows * H * d;
    if (need > ctx->dref_cap) {
        float *nb = realloc(ctx->dref, need * sizeof(float));
        if (!nb) return err_set(e, ERR_NOMEM, "attention diagnostics: out of memory (%zu floats)", need);
        ctx->dref = nb;
        ctx->dref_cap = need;
    }
    struct attn_job j = {.ctx = ctx, .mode = &attn_mode_f32, .b = b, .l = l, .kind = ATTN_JOB_F32_REF, .out = ctx->dref,
                         .q = io->q, .k = io->k, .v = io->v, .past_k = io->past_k, .past_v = io->past_v};
    run_tasks(ctx, &j, ctx->n_threads);
    struct attn_diag_layer *L = &ctx->diag->layer[l->layer];
    for (int s = 0; s < b->n_seq; s++) {
        size_t a = (size_t)b->seq_off[s] * H * d, z = a + (size_t)b->seq_len[s] * H * d;
        for (size_t i = a; i < z; i++) {
            double x = io->out[i], r = ctx->dref[i];
            L->err2 += (x - r) * (x - r);
            L->ref2 += r * r;
            L->out2 += x * x;
            L->dot += x * r;
        }
        L->n += (int64_t)(z - a);
    }
    L->rel_l2 = L->ref2 > 0 ? sqrt(L->err2 / L->ref2) : sqrt(L->err2);
    L->cosine = L->out2 > 0 && L->ref2 > 0 ? L->dot / sqrt(L->out2 * L->ref2) : 0;
    return 0;
}

// One sequence's past against the rule of attn.h (alignment, segments).
static int check_past(const struct attn_ctx *ctx, const struct attn_past *p, int s, int align, struct err *e) {
    if (ctx->hook) return err_set(e, ERR_USAGE, "attention: a hook sees whole sequences; sequence %d continues a cache", s);
    if (align == ATTN_ALIGN_NONE)
        return err_set(e, ERR_USAGE, "attention: sequence %d continues a cached prefix of %d positions, but mode %s "
                       "(--qformat %s) has no exact cached prefix (NVFP4's per-tensor scales, sage3's K mean: they "
                       "see every row of the sequence, spec/fp4.md 4.3, 5.5)", s, p->n, ctx->mode->name,
                       attn_qformat_name(ctx->opts.qformat));
    if (p->n % align)
        return err_set(e, ERR_USAGE, "attention: sequence %d continues a cached prefix of %d positions, not a multiple of "
                       "%d (mode %s): such a cache is not exact (spec/attention.md 8.6)", s, p->n, align, ctx->mode->name);
    if (p->n_seg < 1 || p->n_seg > ATTN_PAST_SEGS)
        return err_set(e, ERR_RANGE, "attention: sequence %d: %d past segments (1..%d)", s, p->n_seg, ATTN_PAST_SEGS);
    int64_t sum = 0;
    for (int g = 0; g < p->n_seg; g++) {
        if (p->len[g] < 0 || p->row[g] < 0)
            return err_set(e, ERR_RANGE, "attention: sequence %d: past segment %d at row %d of %d rows", s, g, p->row[g],
                           p->len[g]);
        sum += p->len[g];
    }
    if (sum != p->n)
        return err_set(e, ERR_RANGE, "attention: sequence %d: past segments hold %lld of its %d cached positions", s,
                       (long long)sum, p->n);
    return 0;
}

int attn_batch_check(const struct attn_ctx *ctx, const struct attn_batch *b, struct err *e) {
    const int align = attn_ctx_align(ctx);
    for (int s = 0; s < b->n_seq; s++) {
        const int n = b->past ? b->past[s].n : 0, len = b->seq_len[s];
        if (b->seq_off[s] < 0) return err_set(e, ERR_INTERNAL, "attention: sequence %d at row %d", s, b->seq_off[s]);
        if (len <= 0 || n < 0 || (int64_t)n + len > ctx->max_T)
            return err_set(e, ERR_RANGE, "attention: sequence %d has %d tokens after %d cached (context sized for %d)", s,
                           len, n, ctx->max_T);
        int rc = n ? check_past(ctx, &b->past[s], s, align, e) : 0;
        if (rc) return rc;
    }
    return 0;
}

// FP4 formats take finite inputs only (spec/fp4.md 2.4): the first NaN or Inf of a quantized
// Q, K or V row of the call is an error naming layer, sequence, position, head and operand.
static int check_fp4_finite(const struct attn_ctx *ctx, const float *const x[3], const struct attn_batch *b, int layer,
                            struct err *e) {
    const int *seq_off = b->seq_off, *seq_len = b->seq_len, n_seq = b->n_seq;
    const struct attn_past *past = b->past;
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

// Kernel inputs are 16-bit (attention.md 1): round in place, new rows of sequences only
// (cached rows were rounded when they were computed).
static void round_inputs(const struct attn_ctx *ctx, const struct attn_batch *b, const struct attn_io *io) {
    const int H = ctx->H, Hkv = ctx->Hkv, d = ctx->d;
    for (int s = 0; s < b->n_seq; s++) {
        size_t o = (size_t)b->seq_off[s], T = (size_t)b->seq_len[s];
        round_bf16_rows(io->q + o * H * d, T * H * d);
        round_bf16_rows(io->k + o * Hkv * d, T * Hkv * d);
        round_bf16_rows(io->v + o * Hkv * d, T * Hkv * d);
    }
}

int attn_forward(struct attn_ctx *ctx, const struct attn_batch *b, const struct attn_io *io, const struct attn_layer *l,
                 struct err *e) {
    const int H = ctx->H, Hkv = ctx->Hkv, d = ctx->d;
    if (l->layer < 0 || l->layer >= ctx->n_layers)
        return err_set(e, ERR_INTERNAL, "attention: layer %d out of range", l->layer);
    int rc = attn_batch_check(ctx, b, e);
    if (rc) return rc;
    if ((ctx->mode->flags & ATTN_F_SAGE3) && l->softcap > 0)
        return err_set(e, ERR_USAGE, "attention layer %d: mode %s has no soft-capping (cap %g; SageAttention3 has none)",
                       l->layer, ctx->mode->name, (double)l->softcap);
    for (int s = 0; b->past && s < b->n_seq; s++)
        if (b->past[s].n && (!io->past_k || !io->past_v))
            return err_set(e, ERR_INTERNAL, "attention: sequence %d continues a cache but no store was given", s);
    // Small calls run on the calling thread: handing out tasks costs more than the work, and
    // results never depend on the thread count (spec section 8.5, tested).
    const struct attn_split_in in = split_in(ctx, b, l);
    const int par_attn = attn_split_work(&in) >= 4.0e6;
    if (ctx->mode->flags & ATTN_F_ROUND_INPUT) round_inputs(ctx, b, io);
    const float *const qkv[3] = {io->q, io->k, io->v};
    if ((rc = check_fp4_finite(ctx, qkv, b, l->layer, e))) return rc;
    if (ctx->hook)
        for (int s = 0; s < b->n_seq; s++) {
            size_t o = (size_t)b->seq_off[s];
            const struct attn_hook_call hc = {.layer = l->layer, .seq = s, .q = io->q + o * H * d, .k = io->k + o * Hkv * d,
                                              .v = io->v + o * Hkv * d, .T = b->seq_len[s], .H = H, .Hkv = Hkv, .d = d};
            ctx->hook(ctx->hook_user, &hc);
        }
    const float *scales = ctx->scales ? ctx->scales + (size_t)l->layer * Hkv * d : NULL;
    if (ctx->dacc) memset(ctx->dacc, 0, (size_t)ctx->n_threads * sizeof *ctx->dacc);
    struct attn_job j = {.ctx = ctx, .mode = ctx->mode, .b = b, .scales = scales, .l = l, .kind = ATTN_JOB_MODE,
                         .out = io->out, .q = io->q, .k = io->k, .v = io->v, .past_k = io->past_k, .past_v = io->past_v};
    run_tasks(ctx, &j, par_attn ? ctx->n_threads : 1);
    // Emulated Ascend cost counts (spec/cost.md) are a function of the call shapes only:
    // the run counts them with cost_count_call from the same seq_len / window (eval/run.c).
    if (ctx->diag) {
        struct attn_diag_layer *L = &ctx->diag->layer[l->layer];
        for (int th = 0; th < ctx->n_threads; th++) attn_diag_acc_merge(&L->acc, &ctx->dacc[th]);
        L->calls++;
        if ((rc = diag_compare(ctx, b, io, l, e))) return rc;
    }
    ctx->stats.calls += (int64_t)b->n_seq * H;
    ctx->stats.calls_per_layer[l->layer] += (int64_t)b->n_seq * H;
    for (int s = 0; s < b->n_seq; s++) ctx->stats.tokens += b->seq_len[s];
    return 0;
}
