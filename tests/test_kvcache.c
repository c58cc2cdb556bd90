// test_kvcache.c: the exact KV cache. Attention: a continuation of a cached prefix
// (attn_forward with a past) gives the rows [P, P + n) bit for bit as one call over [0, P + n) for
// every registered mode, both Q-Mean forms, tiles 64 and 128, prefix lengths 1, Bc-1, Bc, Bc+1
// and a random one, continuation lengths 1..300, the cached part being the prefix's longest
// aligned part (attn.h) and the rest recomputed with the continuation; unaligned pasts are
// refused; the query-tile split never changes a bit. Model: the same on synthetic checkpoints
// (model_forward with a cache against model_forward without, every mode, chunked prefixes, several segments,
// greedy decoding step by step against full runs). Bitwise comparisons (memcmp) throughout.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attn.h"
#include "attention/modes.h"
#include "attention/split.h"
#include "eval/eval.h"
#include "eval/prefix.h"
#include "import/make_model.h"
#include "model/model.h"
#include "model_util.h"
#include "rng.h"
#include "test.h"

// ---- deterministic synthetic attention inputs (bf16-valued; K has an outlier channel) ----

struct synth {
    int T, H, Hkv, d;
    float *q, *k, *v, *scales;
};
static void synth_make(struct synth *s, int T, int H, int Hkv, int d, uint64_t seed) {
    rng_seed(seed);
    s->T = T, s->H = H, s->Hkv = Hkv, s->d = d;
    size_t nq = (size_t)T * H * d, nkv = (size_t)T * Hkv * d;
    s->q = malloc(nq * 4), s->k = malloc(nkv * 4), s->v = malloc(nkv * 4), s->scales = malloc((size_t)Hkv * d * 4);
    for (size_t i = 0; i < nq; i++) s->q[i] = round_bf16(1.5f * nrand() + 0.3f);
    for (size_t i = 0; i < nkv; i++) s->k[i] = round_bf16(nrand() + ((int)(i % d) == d / 3 ? 9.0f : 0.2f));
    for (size_t i = 0; i < nkv; i++) s->v[i] = round_bf16(nrand());
    for (int i = 0; i < Hkv * d; i++) s->scales[i] = (float)(0.5 + urand() * 2.0);
}
static void synth_free(struct synth *s) { free(s->q), free(s->k), free(s->v), free(s->scales); }

struct cfg {
    const char *mode;
    int tile, qmean, window, threads;
};

static int ctx_open(struct attn_ctx **ctx, const struct synth *s, const struct cfg *c, int max_T, struct err *e) {
    struct attn_opts o;
    attn_opts_default(&o);
    o.tile = c->tile, o.qmean = c->qmean, o.n_threads = c->threads;
    return attn_ctx_init(ctx, c->mode, &o, &(struct attn_shape){1, s->H, s->Hkv, s->d, max_T}, s->scales, e);
}

// Rows [r, L) of one call over positions [0, L) of s into out ([L - r][H][d]).
static int run_full(float *out, const struct synth *s, const struct cfg *c, int L, int r, struct err *e) {
    const size_t hq = (size_t)s->H * s->d, hk = (size_t)s->Hkv * s->d;
    float *q = malloc(L * hq * 4), *k = malloc(L * hk * 4), *v = malloc(L * hk * 4), *o = malloc(L * hq * 4);
    memcpy(q, s->q, L * hq * 4), memcpy(k, s->k, L * hk * 4), memcpy(v, s->v, L * hk * 4);
    struct attn_ctx *ctx;
    int rc = ctx_open(&ctx, s, c, L, e);
    if (!rc) {
        int off = 0;
        struct attn_layer l = {0, (float)(1.0 / sqrt((double)s->d)), 1.0 / sqrt((double)s->d), 0, c->window};
        rc = attn_forward(ctx, &(struct attn_batch){1, &off, &L, NULL}, &(struct attn_io){o, q, k, v, NULL, NULL}, &l, e);
        attn_ctx_free(ctx);
    }
    if (!rc) memcpy(out, o + (size_t)r * hq, (size_t)(L - r) * hq * 4);
    free(q), free(k), free(v), free(o);
    return rc;
}

// Rows [A, L) of a continuation: positions [0, A) as a past of two segments (split at A / 3),
// positions [A, L) as the call's rows, into out ([L - A][H][d]).
static int run_cont(float *out, const struct synth *s, const struct cfg *c, int A, int L, struct err *e) {
    const size_t hq = (size_t)s->H * s->d, hk = (size_t)s->Hkv * s->d;
    const int n = L - A;
    float *q = malloc(n * hq * 4), *k = malloc(n * hk * 4), *v = malloc(n * hk * 4);
    memcpy(q, s->q + A * hq, n * hq * 4), memcpy(k, s->k + A * hk, n * hk * 4), memcpy(v, s->v + A * hk, n * hk * 4);
    struct attn_past p = {.n = A, .n_seg = 2, .row = {0, A / 3}, .len = {A / 3, A - A / 3}}; // rows of s->k, s->v
    struct attn_ctx *ctx;
    int rc = ctx_open(&ctx, s, c, L, e);
    if (!rc) {
        int off = 0;
        struct attn_layer l = {0, (float)(1.0 / sqrt((double)s->d)), 1.0 / sqrt((double)s->d), 0, c->window};
        rc = attn_forward(ctx, &(struct attn_batch){1, &off, &n, &p}, &(struct attn_io){out, q, k, v, s->k, s->v}, &l, e);
        attn_ctx_free(ctx);
    }
    free(q), free(k), free(v);
    return rc;
}

static int align_of(const struct cfg *c) {
    struct attn_opts o;
    attn_opts_default(&o);
    o.tile = c->tile, o.qmean = c->qmean;
    return attn_prefix_align(attn_mode_find(c->mode), &o);
}

// ---- the alignment of every mode under its options ----
static void test_align(void) {
    struct attn_opts o;
    attn_opts_default(&o);
    for (int i = 0; i < attn_mode_count(); i++) {
        const struct attn_mode *m = attn_mode_at(i);
        for (int tile = 64; tile <= 192; tile += 128)
            for (int qm = 0; qm < 2; qm++)
                for (int vg = 0; vg < 2; vg++)
                    for (unsigned skip = 0; skip <= ATTN_QDQ_SKIP_V; skip += ATTN_QDQ_SKIP_V) {
                        o.tile = tile, o.qmean = qm, o.v_group = vg, o.qdq_skip = skip;
                        int want = 1;
                        if (m->flags & ATTN_F_SAGE3) want = ATTN_ALIGN_NONE; // K mean over T (fp4.md 5.5)
                        else if ((m->flags & ATTN_F_QMEAN) && qm == ATTN_QMEAN_CHANNEL) want = tile;
                        else if ((m->flags & ATTN_F_QUANT) && vg == ATTN_VGROUP_TOKEN && !skip) want = 64;
                        CHECK(attn_prefix_align(m, &o) == want, "%s tile %d qmean %d v-group %d skip %u: align %d, want %d",
                              m->name, tile, qm, vg, skip, attn_prefix_align(m, &o), want);
                    }
    }
}

// ---- continuation == one call, every mode x form x tile x prefix x length 1..300 ----
// For each total length L one full call is the reference of every (prefix P, n = L - P) pair.
static void test_continuation(void) {
    const int H = 2, Hkv = 2, d = 16, NMAX = 300; // two kv heads: each head's offset into the past
    int64_t n_cmp = 0, n_bad = 0;
    for (int mi = 0; mi < attn_mode_count(); mi++) {
        const struct attn_mode *m = attn_mode_at(mi);
        if (m->flags & ATTN_F_SAGE3) continue; // no exact cached prefix: test_sage3 checks the refusal
        for (int qm = 0; qm < ((m->flags & ATTN_F_QMEAN) ? 2 : 1); qm++)
            for (int tile = 64; tile <= 128; tile += 64) {
                struct cfg c = {m->name, tile, qm, 0, 1};
                const int align = align_of(&c);
                rng_seed(1000 + mi * 7 + qm * 3 + tile);
                const int P[5] = {1, tile - 1, tile, tile + 1, tile + 2 + (int)(urand() * 3 * tile)};
                int Lmax = 0;
                for (int i = 0; i < 5; i++) Lmax = P[i] + NMAX > Lmax ? P[i] + NMAX : Lmax;
                struct synth s;
                synth_make(&s, Lmax, H, Hkv, d, 77 + mi);
                const size_t hq = (size_t)H * d;
                float *ref = malloc((size_t)Lmax * hq * 4), *got = malloc((size_t)Lmax * hq * 4);
                struct err e = {0};
                for (int L = 2; L <= Lmax; L++) {
                    int need = 0;
                    for (int i = 0; i < 5; i++) need |= L - P[i] >= 1 && L - P[i] <= NMAX;
                    if (!need) continue;
                    if (run_full(ref, &s, &c, L, 0, &e)) { CHECK(0, "%s: %s", m->name, e.msg); break; }
                    for (int i = 0; i < 5; i++) {
                        if (L - P[i] < 1 || L - P[i] > NMAX) continue;
                        const int A = P[i] / align * align; // the cached, aligned part; [A, P) recomputed
                        if (run_cont(got, &s, &c, A, L, &e)) { CHECK(0, "%s: %s", m->name, e.msg); continue; }
                        n_cmp++;
                        // rows [A, L): the recomputed part of the prefix and the continuation
                        if (memcmp(got, ref + (size_t)A * hq, (size_t)(L - A) * hq * 4)) {
                            if (n_bad++ < 5)
                                CHECK(0, "%s qmean %d tile %d: prefix %d (cached %d) + %d rows differ from one call", m->name,
                                      qm, tile, P[i], A, L - P[i]);
                        }
                    }
                }
                free(ref), free(got);
                synth_free(&s);
            }
    }
    CHECK(n_bad == 0, "%lld of %lld continuations differ", (long long)n_bad, (long long)n_cmp);
    printf("continuation == one call: %lld of %lld (mode, form, tile, prefix, length) cases bit-identical\n",
           (long long)(n_cmp - n_bad), (long long)n_cmp);
}


// ---- refusals: a past that is not a multiple of the alignment, bad segments, a hook ----
static void hook_nop(void *u, const struct attn_hook_call *c) { (void)u, (void)c; }
static void test_refusals(void) {
    struct synth s;
    synth_make(&s, 300, 2, 1, 16, 5);
    const size_t hq = 32, hk = 16;
    float *out = malloc(300 * hq * 4);
    struct attn_layer l = {0, 0.25f, 0.25, 0, 0};
    const struct cfg cs[3] = {{"direct", 128, 0, 0, 1}, {"hifa4", 128, ATTN_QMEAN_CHANNEL, 0, 1}, {"bf16", 128, 0, 0, 1}};
    for (int ci = 0; ci < 3; ci++) {
        const int align = align_of(&cs[ci]);
        for (int A = 1; A < 260; A += 37) {
            struct attn_ctx *ctx;
            struct err e = {0};
            if (ctx_open(&ctx, &s, &cs[ci], 300, &e)) { CHECK(0, "%s", e.msg); continue; }
            int off = 0, n = 300 - A;
            struct attn_past p = {.n = A, .n_seg = 1, .row = {0}, .len = {A}}; // rows of s.k, s.v
            int rc = attn_forward(ctx, &(struct attn_batch){1, &off, &n, &p}, &(struct attn_io){out, s.q + A * hq, s.k + A * hk, s.v + A * hk, s.k, s.v}, &l, &e);
            if (A % align) CHECK(rc == ERR_USAGE && strstr(e.msg, "not a multiple"), "%s: past %d accepted (%s)", cs[ci].mode, A, e.msg);
            else CHECK(rc == 0, "%s: aligned past %d refused: %s", cs[ci].mode, A, e.msg);
            p.len[0] = A - 1; // segments short of n
            rc = attn_forward(ctx, &(struct attn_batch){1, &off, &n, &p}, &(struct attn_io){out, s.q + A * hq, s.k + A * hk, s.v + A * hk, s.k, s.v}, &l, &e);
            CHECK(rc < 0, "%s: segments summing to %d accepted for a past of %d", cs[ci].mode, A - 1, A);
            p.len[0] = A;
            n = 301 - A; // past + rows above max_T
            rc = attn_forward(ctx, &(struct attn_batch){1, &off, &n, &p}, &(struct attn_io){out, s.q + A * hq, s.k + A * hk, s.v + A * hk, s.k, s.v}, &l, &e);
            CHECK(rc == ERR_RANGE, "%s: %d + %d rows accepted by a context for 300", cs[ci].mode, A, n);
            if (A % align == 0) {
                n = 300 - A;
                attn_ctx_set_hook(ctx, hook_nop, NULL);
                rc = attn_forward(ctx, &(struct attn_batch){1, &off, &n, &p}, &(struct attn_io){out, s.q + A * hq, s.k + A * hk, s.v + A * hk, s.k, s.v}, &l, &e);
                CHECK(rc == ERR_USAGE, "%s: a hook with a past accepted", cs[ci].mode);
            }
            attn_ctx_free(ctx);
        }
    }
    free(out);
    synth_free(&s);
}

// ---- the work split (split.h): a long sequence cut into query-tile ranges or head slices, by
// 1..3 threads, alone or among many sequences (one task per (sequence, kv head)), with and
// without a window and a past: bit-identical ----
static void test_split(void) {
    const int H = 4, Hkv = 2, d = 32, T = 1100, n_other = 8;
    struct synth s;
    synth_make(&s, T, H, Hkv, d, 9);
    const size_t hq = (size_t)H * d, hk = (size_t)Hkv * d;
    int n_cmp = 0;
    const char *modes[] = {"f32", "bf16", "direct", "hifa4"};
    for (int mi = 0; mi < 4; mi++)
        for (int qm = 0; qm < 2; qm++)
            for (int w = 0; w <= 300; w += 300) {
                struct cfg c = {modes[mi], 64, qm, w, 1};
                float *ref = malloc((size_t)T * hq * 4);
                struct err e = {0};
                CHECK(run_full(ref, &s, &c, T, 0, &e) == 0, "%s", e.msg);
                for (int th = 2; th <= 3; th++) {
                    c.threads = th;
                    float *got = malloc((size_t)T * hq * 4);
                    CHECK(run_full(got, &s, &c, T, 0, &e) == 0, "%s", e.msg);
                    CHECK(!memcmp(got, ref, (size_t)T * hq * 4), "%s qmean %d window %d: %d threads differ", modes[mi], qm, w, th);
                    n_cmp++;
                    // continuations of 1 (head slices) and 700 rows (tile ranges) after a 64-aligned past
                    for (int n = 1; n <= 700; n += 699) {
                        const int A = (T - n) / 128 * 128;
                        CHECK(run_cont(got, &s, &c, A, A + n, &e) == 0, "%s", e.msg);
                        float *r2 = malloc((size_t)(A + n) * hq * 4);
                        c.threads = 1;
                        run_full(r2, &s, &c, A + n, 0, &e);
                        c.threads = th;
                        CHECK(!memcmp(got, r2 + (size_t)A * hq, (size_t)n * hq * 4), "%s qmean %d window %d: %d threads, "
                              "continuation of %d rows after %d differs", modes[mi], qm, w, th, n, A);
                        n_cmp++;
                        free(r2);
                    }
                    free(got);
                }
                // the sequence among n_other short ones: many pairs, one task per (sequence, kv head)
                const int Ttot = T + n_other * 20;
                float *q = malloc(Ttot * hq * 4), *k = malloc(Ttot * hk * 4), *v = malloc(Ttot * hk * 4);
                float *o = malloc(Ttot * hq * 4);
                int off[9], len[9];
                off[0] = 0, len[0] = T;
                for (int i = 1; i <= n_other; i++) off[i] = T + (i - 1) * 20, len[i] = 20;
                memcpy(q, s.q, T * hq * 4), memcpy(k, s.k, T * hk * 4), memcpy(v, s.v, T * hk * 4);
                for (int i = 1; i <= n_other; i++) {
                    memcpy(q + off[i] * hq, s.q + i * 20 * hq, 20 * hq * 4);
                    memcpy(k + off[i] * hk, s.k + i * 20 * hk, 20 * hk * 4);
                    memcpy(v + off[i] * hk, s.v + i * 20 * hk, 20 * hk * 4);
                }
                struct attn_ctx *ctx;
                c.threads = 2;
                if (!ctx_open(&ctx, &s, &c, T, &e)) {
                    struct attn_layer l = {0, (float)(1.0 / sqrt((double)d)), 1.0 / sqrt((double)d), 0, w};
                    CHECK(attn_forward(ctx, &(struct attn_batch){1 + n_other, off, len, NULL}, &(struct attn_io){o, q, k, v, NULL, NULL}, &l, &e) == 0, "%s", e.msg);
                    CHECK(!memcmp(o, ref, (size_t)T * hq * 4), "%s qmean %d window %d: in a batch of %d differs", modes[mi],
                          qm, w, 1 + n_other);
                    n_cmp++;
                    attn_ctx_free(ctx);
                }
                free(q), free(k), free(v), free(o), free(ref);
            }
    printf("work split: %d comparisons bit-identical across threads, ranges, head slices and batches\n", n_cmp);
    synth_free(&s);
}

// ==== the model: model_forward with a cache against model_forward without ====
static const char *tmpdir(void) {
    const char *t = getenv("HIFA4_TMP");
    return t ? t : "build/tmp";
}

// A synthetic checkpoint in $HIFA4_TMP (window > 0: every windowed layer's window set to it by
// rewriting config.json's sliding_window).
static int make_tiny(char *dir, size_t n, int arch, int window, struct err *e) {
    struct make_model_opts o;
    make_model_opts_default(&o);
    o.arch = arch;
    o.seed = 11 + arch;
    o.max_seq = arch == ARCH_PHI3 ? 8192 : 4096;
    snprintf(dir, n, "%s/kv-%s-w%d", tmpdir(), cfg_arch_short(arch), window);
    int rc = make_model(&o, dir, e);
    if (rc || window <= 0) return rc;
    char path[700], *js = NULL, *hit;
    size_t len;
    snprintf(path, sizeof path, "%s/config.json", dir);
    if ((rc = file_read_all(path, &js, &len, e))) return rc;
    static const char key[] = "\"sliding_window\":\t4096";
    if (!(hit = strstr(js, key))) { free(js); return err_set(e, ERR_FORMAT, "no sliding_window 4096 in %s", path); }
    char *out = malloc(len + 16);
    int k = snprintf(out, len + 16, "%.*s\"sliding_window\": %d%s", (int)(hit - js), js, window, hit + strlen(key));
    rc = file_write_atomic(path, out, (size_t)k, e);
    free(js), free(out);
    return rc;
}

// make_tiny, then model_open with max_tokens rows per call on 2 threads.
static int open_tiny(struct model **m, int arch, int window, int max_tokens, struct err *e) {
    char dir[512];
    struct model_opts mo;
    model_opts_default(&mo);
    mo.max_tokens = max_tokens, mo.n_threads = 2;
    int rc = make_tiny(dir, sizeof dir, arch, window, e);
    return rc ? rc : model_open(m, dir, &mo, e);
}

static float *scales_for(const struct model *m) {
    const struct model_config *c = model_cfg(m);
    size_t n = (size_t)c->n_layers * c->n_kv_heads * c->head_dim;
    float *s = malloc(n * 4);
    rng_seed(3);
    for (size_t i = 0; i < n; i++) s[i] = (float)(0.5 + 1.5 * urand());
    return s;
}

// Replaces *ctx by a context of mode c for model m.
static int set_mode(struct attn_ctx **ctx, const struct model *m, const struct cfg *c, const float *scales, struct err *e) {
    struct attn_opts o;
    attn_opts_default(&o);
    o.tile = c->tile, o.qmean = c->qmean, o.n_threads = 2;
    return test_attn_reopen(ctx, m, c->mode, &o, scales, e);
}

// Logits of every row of one model_forward over tok[0, L) into lg ([L][V]).
static int full_logits(struct model *m, struct attn_ctx *ctx, const int32_t *tok, int L, float *lg, int *pos,
                       struct err *e) {
    for (int i = 0; i < L; i++) pos[i] = i;
    const struct model_batch b = test_batch(tok, &L, 1, pos, L);
    return model_forward(m, ctx, NULL, &b, lg, e);
}

// The prefix [0, A) stored in two aligned pieces - [0, A1) at store rows [R1, R1 + A1), then
// [A1, A) against it at rows [0, A - A1) - and the rows [A, L) against both (two segments):
// their logits into lg ([L - A][V]).
static int cached_logits(struct model *m, struct attn_ctx *ctx, struct model_kv *kv, const int32_t *tok, int A, int L,
                         float *lg, int *pos, struct err *e) {
    const int align = attn_ctx_align(ctx), A1 = A / 2 / align * align, R1 = model_kv_rows(kv) / 2;
    int rc = 0;
    if (A1 > 0) {
        struct model_seq s1 = {.n = A1, .save_row = R1, .save_n = A1};
        rc = model_forward(m, ctx, kv, &(struct model_batch){.tokens = tok, .n_seq = 1, .seqs = &s1, .out_pos = NULL, .n_out = 0}, NULL, e);
    }
    if (!rc && A > A1) {
        struct model_seq s2 = {.n = A - A1, .past = {A1, 1, {R1}, {A1}}, .save_row = 0, .save_n = A - A1};
        if (!A1) s2.past.n = s2.past.n_seg = 0;
        rc = model_forward(m, ctx, kv, &(struct model_batch){.tokens = tok + A1, .n_seq = 1, .seqs = &s2, .out_pos = NULL, .n_out = 0}, NULL, e);
    }
    if (rc) return rc;
    struct model_seq s3 = {.n = L - A, .past = {A, 2, {R1, 0}, {A1, A - A1}}};
    if (!A) s3.past.n = s3.past.n_seg = 0;
    for (int i = 0; i < L - A; i++) pos[i] = i;
    return model_forward(m, ctx, kv, &(struct model_batch){.tokens = tok + A, .n_seq = 1, .seqs = &s3, .out_pos = pos, .n_out = L - A}, lg, e);
}

// Every mode, both forms, tiles 64/128: prefixes 1, Bc-1, Bc, Bc+1 and a random one, then
// continuations of the lengths below, bit for bit as one model_forward.
static void test_model_continuation(int arch, int window, int all_modes) {
    static const int NS[] = {1, 2, 7, 63, 64, 65, 129, 300}; // every length 1..300: test_continuation
    const int n_ns = (int)(sizeof NS / sizeof NS[0]);
    struct err e = {0};
    struct model *m = NULL;
    struct attn_ctx *ctx = NULL;
    if (open_tiny(&m, arch, window, 1024, &e)) { CHECK(0, "%s", e.msg); return; }
    const int V = model_cfg(m)->vocab_size, Lmax = 3 * 128 + 2 + 300;
    float *scales = scales_for(m), *ref = malloc((size_t)Lmax * V * 4), *got = malloc((size_t)Lmax * V * 4);
    int32_t *tok = malloc(Lmax * sizeof *tok);
    int *pos = malloc(Lmax * sizeof *pos);
    struct model_kv *kv = NULL;
    CHECK(model_kv_open(&kv, m, 2 * Lmax, &e) == 0, "%s", e.msg);
    int64_t n_cmp = 0, n_bad = 0;
    for (int mi = 0; kv && mi < attn_mode_count(); mi++) {
        const struct attn_mode *am = attn_mode_at(mi);
        if (am->flags & ATTN_F_SAGE3) continue; // no exact cached prefix (test_sage3)
        if (!all_modes && strcmp(am->name, "bf16") && strcmp(am->name, "direct") && strcmp(am->name, "hifa4")) continue;
        for (int qm = 0; qm < ((am->flags & ATTN_F_QMEAN) ? 2 : 1); qm++)
            for (int tile = 64; tile <= 128; tile += 64) {
                struct cfg c = {am->name, tile, qm, 0, 2};
                if (set_mode(&ctx, m, &c, scales, &e)) { CHECK(0, "%s", e.msg); continue; }
                const int align = attn_ctx_align(ctx);
                rng_seed(500 + mi * 5 + qm * 3 + tile + arch);
                for (int i = 0; i < Lmax; i++) tok[i] = (int32_t)(urand() * (V - 1));
                const int P[5] = {1, tile - 1, tile, tile + 1, tile + 2 + (int)(urand() * 2 * tile)};
                for (int pi = 0; pi < 5; pi++)
                    for (int ni = 0; ni < n_ns; ni++) {
                        const int L = P[pi] + NS[ni], A = P[pi] / align * align;
                        if (full_logits(m, ctx, tok, L, ref, pos, &e) || cached_logits(m, ctx, kv, tok, A, L, got, pos, &e)) {
                            CHECK(0, "%s: %s", am->name, e.msg);
                            continue;
                        }
                        n_cmp++;
                        if (memcmp(got, ref + (size_t)A * V, (size_t)(L - A) * V * 4) && n_bad++ < 5)
                            CHECK(0, "%s %s qmean %d tile %d: prefix %d (cached %d) + %d: logits differ from one run",
                                  cfg_arch_short(arch), am->name, qm, tile, P[pi], A, NS[ni]);
                    }
            }
    }
    CHECK(n_bad == 0, "%lld of %lld cached runs differ", (long long)n_bad, (long long)n_cmp);
    printf("model %s%s: %lld of %lld cached continuations (modes x forms x tiles x prefixes x lengths) bit-identical to one run\n",
           cfg_arch_short(arch), window ? " (window)" : "", (long long)(n_cmp - n_bad), (long long)n_cmp);
    model_kv_free(kv);
    free(scales), free(ref), free(got), free(tok), free(pos);
    attn_ctx_free(ctx);
    model_free(m);
}

// Greedy decoding by the step rule of model.h against a full run at every step: tokens [0, T)
// known, the step computes rows [p, T) (p = floor((T-1)/A)*A) against the cached [0, p), takes
// row T-1's logits and stores the final rows [p, floor(T/A)*A).
static void test_decode(void) {
    struct err e = {0};
    struct model *m = NULL;
    struct attn_ctx *ctx = NULL;
    if (open_tiny(&m, ARCH_QWEN3, 0, 512, &e)) { CHECK(0, "%s", e.msg); return; }
    const int V = model_cfg(m)->vocab_size, C = 150, STEPS = 140;
    float *scales = scales_for(m), *ref = malloc((size_t)(C + STEPS) * V * 4), *lg = malloc((size_t)V * 4);
    int32_t tok[512];
    int pos[512], n_steps = 0, n_bad = 0;
    struct model_kv *kv = NULL;
    CHECK(model_kv_open(&kv, m, C + STEPS, &e) == 0, "%s", e.msg);
    const struct cfg cs[4] = {{"bf16", 128, 0, 0, 2}, {"direct", 128, 0, 0, 2}, {"hifa4", 64, ATTN_QMEAN_CHANNEL, 0, 2},
                              {"f32", 128, 0, 0, 2}};
    for (int ci = 0; kv && ci < 4; ci++) {
        if (set_mode(&ctx, m, &cs[ci], scales, &e)) { CHECK(0, "%s", e.msg); continue; }
        const int A = attn_ctx_align(ctx);
        rng_seed(9 + ci);
        for (int i = 0; i < C; i++) tok[i] = (int32_t)(urand() * (V - 1));
        int cached = (C - 1) / A * A; // prefill: rows [0, cached) stored
        struct model_seq pre = {.n = cached, .save_row = 0, .save_n = cached};
        if (cached && model_forward(m, ctx, kv, &(struct model_batch){.tokens = tok, .n_seq = 1, .seqs = &pre, .out_pos = NULL, .n_out = 0}, NULL, &e)) { CHECK(0, "%s", e.msg); continue; }
        for (int T = C; T < C + STEPS; T++) {
            const int p = (T - 1) / A * A, keep = T / A * A;
            struct model_seq sq = {.n = T - p, .past = {p, 1, {0}, {p}}, .save_row = p, .save_n = keep - p};
            if (!p) sq.past.n = sq.past.n_seg = 0;
            if (p > cached) { CHECK(0, "decode: rows up to %d not stored (%d)", p, cached); break; }
            int out = T - 1 - p;
            if (model_forward(m, ctx, kv, &(struct model_batch){.tokens = tok + p, .n_seq = 1, .seqs = &sq, .out_pos = &out, .n_out = 1}, lg, &e) || full_logits(m, ctx, tok, T, ref, pos, &e)) {
                CHECK(0, "%s: %s", cs[ci].mode, e.msg);
                break;
            }
            if (keep > cached) cached = keep;
            n_steps++;
            if (memcmp(lg, ref + (size_t)(T - 1) * V, (size_t)V * 4) && n_bad++ < 5)
                CHECK(0, "%s: decode step at T=%d differs from one run", cs[ci].mode, T);
            int best = 0;
            for (int j = 1; j < V; j++) best = lg[j] > lg[best] ? j : best;
            tok[T] = best;
        }
    }
    CHECK(n_bad == 0, "%d of %d decode steps differ", n_bad, n_steps);
    printf("decode: %d greedy steps (4 modes, alignments 1/64/64-tile) bit-identical to full runs\n", n_steps - n_bad);
    model_kv_free(kv);
    free(scales), free(ref), free(lg);
    attn_ctx_free(ctx);
    model_free(m);
}

// What the rule does not cover is refused: unaligned pasts and stores, rows of another mode,
// rows never stored, LongRoPE rows from the other side of rope_orig_max, a cache beyond memory.
static void test_model_refusals(void) {
    struct err e = {0};
    struct model *m = NULL;
    struct attn_ctx *ctx = NULL;
    if (open_tiny(&m, ARCH_PHI3, 0, 512, &e)) { CHECK(0, "%s", e.msg); return; }
    int32_t tok[400];
    for (int i = 0; i < 400; i++) tok[i] = (i * 31 + 7) % 300;
    struct model_kv *kv = NULL;
    CHECK(model_kv_open(&kv, m, 512, &e) == 0, "%s", e.msg);
    const struct cfg cd = {"direct", 128, 0, 0, 2}, cb = {"bf16", 128, 0, 0, 2};
    float *lg = malloc((size_t)model_cfg(m)->vocab_size * 4);
    int out = 0;
    CHECK(set_mode(&ctx, m, &cd, NULL, &e) == 0, "%s", e.msg);
    struct model_seq s = {.n = 100, .save_row = 0, .save_n = 100};
    CHECK(model_forward(m, ctx, kv, &(struct model_batch){.tokens = tok, .n_seq = 1, .seqs = &s, .out_pos = NULL, .n_out = 0}, NULL, &e) == ERR_USAGE, "direct: storing 100 rows accepted");
    s.save_n = 64;
    CHECK(model_forward(m, ctx, kv, &(struct model_batch){.tokens = tok, .n_seq = 1, .seqs = &s, .out_pos = NULL, .n_out = 0}, NULL, &e) == 0, "%s", e.msg);
    struct model_seq c = {.n = 10, .past = {32, 1, {0}, {32}}};
    CHECK(model_forward(m, ctx, kv, &(struct model_batch){.tokens = tok + 32, .n_seq = 1, .seqs = &c, .out_pos = &out, .n_out = 1}, lg, &e) == ERR_USAGE, "direct: a past of 32 accepted");
    c.past = (struct attn_past){64, 1, {100}, {64}};
    CHECK(model_forward(m, ctx, kv, &(struct model_batch){.tokens = tok + 64, .n_seq = 1, .seqs = &c, .out_pos = &out, .n_out = 1}, lg, &e) == ERR_MISMATCH, "rows never stored accepted");
    c.past = (struct attn_past){64, 1, {0}, {64}};
    CHECK(model_forward(m, ctx, kv, &(struct model_batch){.tokens = tok + 64, .n_seq = 1, .seqs = &c, .out_pos = &out, .n_out = 1}, lg, &e) == 0, "%s", e.msg);
    CHECK(model_forward(m, ctx, NULL, &(struct model_batch){.tokens = tok + 64, .n_seq = 1, .seqs = &c, .out_pos = &out, .n_out = 1}, lg, &e) == ERR_USAGE, "a past without a cache accepted");
    // the phi3 model switches to its long RoPE factors above rope_orig_max = 8192 / 32 = 256
    c.n = 300;
    CHECK(model_forward(m, ctx, kv, &(struct model_batch){.tokens = tok + 64, .n_seq = 1, .seqs = &c, .out_pos = &out, .n_out = 1}, lg, &e) == ERR_MISMATCH,
          "LongRoPE: rows of a short-factor run used in a long one");
    c.n = 10;
    CHECK(set_mode(&ctx, m, &cb, NULL, &e) == 0, "%s", e.msg);
    CHECK(model_forward(m, ctx, kv, &(struct model_batch){.tokens = tok + 64, .n_seq = 1, .seqs = &c, .out_pos = &out, .n_out = 1}, lg, &e) == ERR_MISMATCH, "direct's rows accepted under bf16");
    struct model_kv *big = NULL;
    CHECK(model_kv_open(&big, m, 1 << 30, &e) == ERR_NOMEM && strstr(e.msg, "available"), "a %d-row cache: %s", 1 << 30,
          e.msg);
    model_kv_free(kv);
    free(lg);
    attn_ctx_free(ctx);
    model_free(m);
}

// ==== the prefix schedule (eval/prefix.h), simulated ====
// Each cache row holds a hash of the tokens [0, position] it was computed from; every piece's
// past must hold exactly its own sequence's hashes, written by an earlier call; pieces and
// stores end on the alignment; calls fit max_tokens; every sequence has one leaf that ends at
// its end and covers its scored rows at the plan's logits rows.
static int byte_encode(void *user, const char *str, size_t n, int32_t **ids, int *nid, struct err *e) {
    (void)user;
    int32_t *r = malloc(sizeof *r * (n + 1));
    if (!r) return err_set(e, ERR_NOMEM, "oom");
    for (size_t i = 0; i < n; i++) r[i] = (unsigned char)str[i];
    *ids = r, *nid = (int)n;
    return 0;
}

static char *rand_text(int n, const char *alphabet) {
    char *t = malloc((size_t)n + 1);
    const int k = (int)strlen(alphabet);
    for (int i = 0; i < n; i++) t[i] = alphabet[(int)(urand() * k)];
    t[n] = 0;
    return t;
}

// A plan with a 300-character shared prefix over 30 items, 20 unrelated items, 6 long ones and
// 5 with one choice; window 700 (long ones are left-truncated).
static int make_plan(struct eval_plan *p, struct err *e) {
    enum { N = 61 };
    struct eval_item it[N];
    char *ctx[N], *ch[N][6];
    char *shots = rand_text(300, "abcdefgh ");
    rng_seed(42);
    for (int i = 0; i < N; i++) {
        const int kind = i < 30 ? 0 : i < 50 ? 1 : i < 56 ? 2 : 3;
        char *q = rand_text(kind == 2 ? 900 + (int)(urand() * 300) : 10 + (int)(urand() * 110), "abcdefgh ");
        ctx[i] = malloc(strlen(shots) + strlen(q) + 2);
        sprintf(ctx[i], "%s%s", kind == 0 ? shots : "", q);
        free(q);
        const int nc = kind == 3 ? 1 : 2 + (int)(urand() * 5);
        for (int c = 0; c < 6; c++) ch[i][c] = c < nc ? rand_text(1 + (int)(urand() * 40), "xyz") : NULL;
        it[i] = (struct eval_item){"item", ctx[i], nc, ch[i], 0};
    }
    struct eval_plan_opts o = {.delim = " ", .bos_id = 1, .eos_id = 2, .window = 700, .n_threads = 1};
    int rc = eval_plan_build(p, it, N, &o, byte_encode, NULL, e);
    for (int i = 0; i < N; i++) {
        free(ctx[i]);
        for (int c = 0; c < 6; c++) free(ch[i][c]);
    }
    free(shots);
    return rc;
}

static uint64_t hash_prefix(const int32_t *tok, int j) { // tokens [0, j]
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i <= j; i++) h = (h ^ (uint64_t)(uint32_t)tok[i]) * 0x100000001b3ull;
    return h;
}

// Checks one schedule; returns the number of violations (the first few printed).
static int check_sched(const struct prefix_sched *sc, const struct eval_plan *p, int i0, int i1, int A, int S, int MT) {
    uint64_t *row = calloc((size_t)S, sizeof *row);
    int *wcall = malloc((size_t)S * sizeof *wcall), *leaves = calloc((size_t)p->n_seq, sizeof *leaves), bad = 0;
    for (int r = 0; r < S; r++) wcall[r] = -1;
    const int row_base = p->seq[p->item_seq[i0]].row0;
#define V(cond, ...) do { if (!(cond) && bad++ < 5) CHECK(0, __VA_ARGS__); } while (0)
    for (int k0 = 0; k0 < sc->n_pieces;) {
        int k1 = k0, tok = 0, c = sc->pieces[k0].call;
        while (k1 < sc->n_pieces && sc->pieces[k1].call == c) tok += sc->pieces[k1].end - sc->pieces[k1].start, k1++;
        V(tok <= MT, "call %d: %d tokens > %d", c, tok, MT);
        for (int k = k0; k < k1; k++) { // reads
            const struct prefix_piece *pc = &sc->pieces[k];
            const struct eval_seq *q = &p->seq[pc->seq];
            V(pc->past.n == pc->start && pc->start % A == 0, "piece %d: past %d, start %d, align %d", k, pc->past.n, pc->start, A);
            for (int g = 0, j = 0; g < pc->past.n_seg; g++)
                for (int r = pc->past.row[g]; r < pc->past.row[g] + pc->past.len[g]; r++, j++)
                    V(r < S && wcall[r] >= 0 && wcall[r] < c && row[r] == hash_prefix(q->tok, j),
                      "piece %d (seq %d): position %d from row %d is not its own", k, pc->seq, j, r);
            if (pc->save_n) {
                V(pc->save_n == pc->end - pc->start && pc->end % A == 0 && pc->end <= q->n && !pc->n_out,
                  "piece %d stores %d rows up to %d", k, pc->save_n, pc->end);
            } else {
                leaves[pc->seq]++;
                V(pc->end == q->n && q->pos[0] >= pc->start && pc->n_out == q->n_rows && pc->out_row == q->row0 - row_base,
                  "leaf of seq %d: [%d, %d) of %d, first scored %d, rows %d at %d", pc->seq, pc->start, pc->end, q->n,
                  q->pos[0], pc->n_out, pc->out_row);
            }
        }
        for (int k = k0; k < k1; k++) // writes
            for (int j = 0; j < sc->pieces[k].save_n; j++) {
                const int r = sc->pieces[k].save_row + j;
                if (r >= S) { V(0, "row %d outside %d", r, S); continue; }
                row[r] = hash_prefix(p->seq[sc->pieces[k].seq].tok, sc->pieces[k].start + j);
                wcall[r] = c;
            }
        k0 = k1;
    }
    for (int s = p->item_seq[i0]; s < p->item_seq[i1]; s++) V(leaves[s] == 1, "seq %d has %d leaves", s, leaves[s]);
#undef V
    free(row), free(wcall), free(leaves);
    return bad;
}

// Positions of the trie of all sequences: each sequence adds what it shares with no earlier one.
static int64_t trie_positions(const struct eval_plan *p) {
    int64_t n = 0;
    for (int s = 0; s < p->n_seq; s++) {
        int best = 0;
        for (int t = 0; t < s; t++) {
            int i = 0;
            while (i < p->seq[s].n && i < p->seq[t].n && p->seq[s].tok[i] == p->seq[t].tok[i]) i++;
            best = i > best ? i : best;
        }
        n += p->seq[s].n - best;
    }
    return n;
}

static void test_prefix_schedule(void) {
    struct eval_plan p;
    struct err e = {0};
    if (make_plan(&p, &e)) { CHECK(0, "%s", e.msg); return; }
    int n_sched = 0, n_bad = 0, n_refused = 0;
    int64_t best = p.n_tokens;
    const int aligns[3] = {1, 64, 128}, mts[4] = {128, 256, 1000, 4096}, batch[3] = {61, 7, 1};
    for (int ai = 0; ai < 3; ai++)
        for (int mi = 0; mi < 4; mi++)
            for (int bi = 0; bi < 3; bi++) {
                const int A = aligns[ai], MT = mts[mi], S = prefix_store_rows(&p, MT, A);
                int64_t tokens = 0;
                for (int i0 = 0; i0 < p.n_items; i0 += batch[bi]) {
                    const int i1 = i0 + batch[bi] < p.n_items ? i0 + batch[bi] : p.n_items;
                    struct prefix_sched sc;
                    const int rc = prefix_schedule(&sc, &p, &(struct prefix_window){i0, i1, p.seq[p.item_seq[i0]].row0},
                                                         &(struct prefix_limits){A, S, MT}, &e);
                    // a leaf holds up to A - 1 recomputed context positions and its continuation
                    if (A == 128 && MT == 128 && rc == ERR_RANGE) { n_refused++; continue; }
                    if (rc) {
                        CHECK(0, "align %d batch-tokens %d: %s", A, MT, e.msg);
                        continue;
                    }
                    n_bad += check_sched(&sc, &p, i0, i1, A, S, MT);
                    n_sched++;
                    tokens += sc.tokens;
                    prefix_sched_free(&sc);
                }
                if (A == 1 && bi == 0 && tokens < best) best = tokens;
            }
    CHECK(n_bad == 0, "%d violations", n_bad);
    CHECK(n_refused > 0, "align 128 with batch-tokens 128 never refused a continuation that cannot fit");
    // the least any exact schedule computes at alignment 1: the distinct prefixes of the plan's
    // sequences (a trie), plus the row before each sequence's first scored one, which is shared
    // by its own sequences only when they agree beyond it
    const int64_t least = trie_positions(&p);
    CHECK(best <= least + least / 10, "alignment 1 computes %lld positions, a trie of the sequences %lld",
          (long long)best, (long long)least);
    printf("prefix schedules: %d checked by simulation (alignments 1/64/128, batch-tokens 128..4096, batches of 61/7/1 "
           "items); alignment 1 computes %lld of %lld positions (distinct prefixes: %lld)\n", n_sched, (long long)best,
           (long long)p.n_tokens, (long long)least);
    eval_plan_free(&p);
}

int main(void) {
    test_align();
    test_prefix_schedule();
    test_refusals();
    test_split();
    test_continuation();
    test_model_refusals();
    test_decode();
    test_model_continuation(ARCH_QWEN3, 0, 1);
    test_model_continuation(ARCH_GEMMA2, 100, 0);
    return test_summary("test_kvcache");
}
