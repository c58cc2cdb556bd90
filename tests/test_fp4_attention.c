// test_fp4_attention.c: the tiled modes under --qformat nvfp4|mxfp4 (spec/fp4.md section 4):
// the fast kernel against the literal reference bit for bit over shapes, modes, Q-Mean forms,
// V groupings, skips and row splits (the NVFP4 tensor amax over the whole call, invariant 5);
// the format enters only through qdq (invariant 4) and identity quantizers keep 8.1/8.2; tile
// size with P unquantized (8.11); prefix alignment (MXFP4: 32, V blocks from position 0; NVFP4:
// no exact prefix, refused) and continuations; batches and threads; NaN/Inf rejected with the
// position; names, bits and option parsing.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attn.h"
#include "attention/modes.h"
#include "rng.h"
#include "test.h"

// Q with channel offsets, K with one outlier channel, V offset: bf16-valued, our own generator
struct qkv { int T, H, Hkv, d; float *q, *k, *v, *scales; };
static struct qkv qkv_make(int T, int H, int Hkv, int d, uint64_t seed) {
    rng_seed(seed);
    struct qkv s = {T, H, Hkv, d, NULL, NULL, NULL, NULL};
    const size_t nq = (size_t)T * H * d, nk = (size_t)T * Hkv * d;
    s.q = malloc(nq * 4), s.k = malloc(nk * 4), s.v = malloc(nk * 4), s.scales = malloc((size_t)Hkv * d * 4);
    for (size_t i = 0; i < nq; i++) s.q[i] = round_bf16(nrand() + 1.5f * cosf(0.21f * (float)(i % d)));
    for (size_t i = 0; i < nk; i++) s.k[i] = round_bf16(0.8f * nrand() + ((int)(i % d) == d / 3 ? 9.0f : 0.1f));
    for (size_t i = 0; i < nk; i++) s.v[i] = round_bf16(nrand() + 0.5f);
    for (int i = 0; i < Hkv * d; i++) s.scales[i] = (float)(0.5 + urand());
    return s;
}
static void qkv_free(struct qkv *s) { free(s->q), free(s->k), free(s->v), free(s->scales); }

static size_t n_diff(const float *a, const float *b, size_t n) {
    size_t nd = 0;
    for (size_t i = 0; i < n; i++) nd += !(a[i] == b[i]) && !(isnan(a[i]) && isnan(b[i]));
    return nd;
}

#define F_Q4 (ATTN_F_TILED | ATTN_F_QUANT)
static const unsigned flagsets[] = {
    F_Q4, F_Q4 | ATTN_F_QMEAN, F_Q4 | ATTN_F_QMEAN | ATTN_F_QMEAN_CH, F_Q4 | ATTN_F_QMEAN | ATTN_F_SQK,
    F_Q4 | ATTN_F_QMEAN | ATTN_F_PREORDER, F_Q4 | ATTN_F_QMEAN | ATTN_F_QMEAN_CH | ATTN_F_SQK | ATTN_F_PREORDER,
};
enum { N_FLAGS = 6 };

// ---- fast == literal reference, bit for bit; row splits change no bit ----
static void test_fast_vs_ref(void) {
    static const struct { int T, H, Hkv, d, window, tile; float cap; } shapes[] = {
        {1, 2, 1, 64, 0, 64, 0}, {77, 2, 1, 64, 32, 64, 0}, {200, 4, 2, 128, 0, 128, 0}, {130, 4, 2, 40, 0, 64, 10},
        {150, 3, 3, 16, 0, 128, 0}, {260, 2, 1, 80, 100, 128, 0},
    };
    int n_bad = 0, n_runs = 0;
    for (int si = 0; si < 6; si++) {
        struct qkv s = qkv_make(shapes[si].T, shapes[si].H, shapes[si].Hkv, shapes[si].d, 700 + si);
        struct attn_call c = {.T = s.T, .r1 = s.T, .H = s.H, .Hkv = s.Hkv, .d = s.d, .sm = (float)(1.0 / sqrt((double)s.d)),
                              .softcap = shapes[si].cap, .window = shapes[si].window, .tile = shapes[si].tile,
                              .scales = s.scales};
        const size_t n = (size_t)s.T * s.H * s.d;
        float *a = malloc(n * 4), *b = malloc(n * 4), *sp = malloc(n * 4);
        void *sa = malloc(attn_flash_scratch(&c)), *sb = malloc(attn_flash_ref_scratch(&c));
        for (int fmt = ATTN_QFORMAT_NVFP4; fmt <= ATTN_QFORMAT_MXFP4; fmt++)
            for (int fi = 0; fi < N_FLAGS; fi++)
                for (int var = 0; var < 3; var++) {
                    // variants: default; V per channel; qdq of K and P skipped
                    c.qformat = fmt;
                    c.v_group = var == 1 ? ATTN_VGROUP_CHANNEL : ATTN_VGROUP_TOKEN;
                    c.qdq_skip = var == 2 ? ATTN_QDQ_SKIP_P | ATTN_QDQ_SKIP_K : 0;
                    c.r0 = 0, c.r1 = s.T;
                    attn_flash_forward(&(struct attn_operands){a, s.q, s.k, s.v}, &c, 0, s.H, sa, flagsets[fi]);
                    attn_flash_ref_forward(&(struct attn_operands){b, s.q, s.k, s.v}, &c, 0, s.H, sb, flagsets[fi]);
                    size_t nd = n_diff(a, b, n);
                    // rows split at a multiple of Bc: each part computes its own rows only
                    const int cut = s.T > c.tile ? c.tile : 0;
                    for (size_t i = 0; i < n; i++) sp[i] = NAN;
                    c.r0 = 0, c.r1 = cut;
                    if (cut) attn_flash_forward(&(struct attn_operands){sp, s.q, s.k, s.v}, &c, 0, s.H, sa, flagsets[fi]);
                    c.r0 = cut, c.r1 = s.T;
                    attn_flash_forward(&(struct attn_operands){sp, s.q, s.k, s.v}, &c, 0, s.H, sa, flagsets[fi]);
                    const size_t ns = n_diff(a, sp, n);
                    n_runs++;
                    if (nd || ns) {
                        n_bad++;
                        CHECK(0, "shape %d format %d flags 0x%x variant %d: %zu of %zu differ from the reference, %zu "
                              "after a row split at %d", si, fmt, flagsets[fi], var, nd, n, ns, cut);
                    }
                }
        free(a), free(b), free(sp), free(sa), free(sb);
        qkv_free(&s);
    }
    CHECK(n_bad == 0, "%d of %d fast-vs-reference runs differ", n_bad, n_runs);
    printf("fast vs reference: %d runs (nvfp4, mxfp4 x 6 flag sets x 3 variants x 6 shapes), bit-identical\n", n_runs);
}

// ---- through attn_forward (the model's path) ----
static struct attn_opts opts_of(int qformat, int tile, unsigned skip, int threads) {
    struct attn_opts o;
    attn_opts_default(&o);
    o.qformat = qformat, o.tile = tile, o.qdq_skip = skip, o.n_threads = threads;
    return o;
}
// One sequence of s under mode, rows [0, T), optionally continuing a past of p rows (K, V of
// the full sequence), inputs copied. Returns the rc; out holds rows [p, T).
static int run_seq(float *out, const struct qkv *s, const char *mode, const struct attn_opts *o, int p, struct err *e) {
    const size_t wq = (size_t)s->H * s->d, wk = (size_t)s->Hkv * s->d, nq = (size_t)(s->T - p) * wq, nk = (size_t)(s->T - p) * wk;
    float *buf = malloc((nq + 2 * nk) * 4);
    memcpy(buf, s->q + p * wq, nq * 4), memcpy(buf + nq, s->k + p * wk, nk * 4), memcpy(buf + nq + nk, s->v + p * wk, nk * 4);
    struct attn_ctx *ctx;
    int rc = attn_ctx_init(&ctx, mode, o, &(struct attn_shape){1, s->H, s->Hkv, s->d, s->T}, s->scales, e);
    if (!rc) {
        int off = 0, len = s->T - p;
        struct attn_past past = {p, 1, {0}, {p}}; // rows [0, p) of the store: the full sequence's K, V
        struct attn_layer l = {0, (float)(1.0 / sqrt((double)s->d)), 1.0 / sqrt((double)s->d), 0, 0};
        rc = attn_forward(ctx, &(struct attn_batch){1, &off, &len, p ? &past : NULL},
                          &(struct attn_io){out, buf, buf + nq, buf + nq + nk, p ? s->k : NULL, p ? s->v : NULL}, &l, e);
        attn_ctx_free(ctx);
    }
    free(buf);
    return rc;
}

static const char *const qmodes[] = {"direct", "direct+qmean", "direct+qmean+sqk", "direct+qmean+preorder", "hifa4"};

// invariant 4 (the format only changes qdq) and 8.1 / 8.2 with identity quantizers
static void test_identity(void) {
    struct qkv s = qkv_make(190, 4, 2, 64, 31);
    const size_t n = (size_t)s.T * s.H * s.d;
    float *ref = malloc(n * 4), *h = malloc(n * 4), *f = malloc(n * 4), *dir = malloc(n * 4);
    struct err e = {0};
    struct attn_opts o32 = opts_of(ATTN_QFORMAT_HIF4, 128, 0, 1);
    int rc = run_seq(ref, &s, "f32", &o32, 0, &e);
    for (int mi = 0; mi < 5; mi++)
        for (int fmt = ATTN_QFORMAT_NVFP4; fmt <= ATTN_QFORMAT_MXFP4; fmt++) {
            struct attn_opts oh = opts_of(ATTN_QFORMAT_HIF4, 128, ATTN_QDQ_SKIP_ALL, 1), of = opts_of(fmt, 128, ATTN_QDQ_SKIP_ALL, 1);
            rc |= run_seq(h, &s, qmodes[mi], &oh, 0, &e) | run_seq(f, &s, qmodes[mi], &of, 0, &e);
            CHECK(rc == 0 && n_diff(h, f, n) == 0, "%s --qformat %s --qdq-skip q,k,v,p differs from hif4 (invariant 4): %s",
                  qmodes[mi], attn_qformat_name(fmt), e.msg);
            if (mi == 0) memcpy(dir, f, n * 4);
            const double r = test_rel_l2(f, mi ? dir : ref, n), bound = mi == 0 ? 1e-2 : strstr(qmodes[mi], "sqk") || mi == 4 ? 1e-2 : 2e-3;
            CHECK(r <= bound, "identity-qdq %s [%s] vs %s rel-L2 %.3g > %g (8.1/8.2)", qmodes[mi], attn_qformat_name(fmt),
                  mi ? "direct" : "f32", r, bound);
            // quantized, the formats differ from HiF4 and from each other
            struct attn_opts oq = opts_of(fmt, 128, 0, 1), oq4 = opts_of(ATTN_QFORMAT_HIF4, 128, 0, 1);
            rc |= run_seq(f, &s, qmodes[mi], &oq, 0, &e) | run_seq(h, &s, qmodes[mi], &oq4, 0, &e);
            const double rq = test_rel_l2(f, ref, n);
            CHECK(rc == 0 && n_diff(f, h, n) > 0 && rq < 0.2, "%s [%s] quantized: rel-L2 vs f32 %.3g", qmodes[mi],
                  attn_qformat_name(fmt), rq);
            if (mi == 0 || mi == 4) printf("%s [%s] vs f32 rel-L2 %.4f (hif4 %.4f)\n", qmodes[mi], attn_qformat_name(fmt), rq, test_rel_l2(h, ref, n));
        }
    free(ref), free(h), free(f), free(dir);
    qkv_free(&s);
}

// 8.11: with --qdq-skip p the Q, K, V blocks do not depend on Bc: 64 vs 512 within 2e-3
static void test_tile_size(void) {
    struct qkv s = qkv_make(700, 2, 1, 64, 12);
    const size_t n = (size_t)s.T * s.H * s.d;
    float *a = malloc(n * 4), *b = malloc(n * 4);
    for (int fmt = ATTN_QFORMAT_NVFP4; fmt <= ATTN_QFORMAT_MXFP4; fmt++) {
        struct err e = {0};
        struct attn_opts o64 = opts_of(fmt, 64, ATTN_QDQ_SKIP_P, 2), o512 = opts_of(fmt, 512, ATTN_QDQ_SKIP_P, 2);
        int rc = run_seq(a, &s, "direct", &o64, 0, &e) | run_seq(b, &s, "direct", &o512, 0, &e);
        const double r = test_rel_l2(a, b, n);
        CHECK(rc == 0 && r > 0 && r < 2e-3, "direct [%s] --qdq-skip p: Bc 64 vs 512 rel-L2 %.3g (want 0 < r < 2e-3, 8.11)",
              attn_qformat_name(fmt), r);
        printf("8.11 direct [%s] --qdq-skip p: Bc 64 vs 512 rel-L2 %.3g\n", attn_qformat_name(fmt), r);
    }
    free(a), free(b);
    qkv_free(&s);
}

// prefix alignment (4.3): MXFP4 32 with V along tokens; NVFP4 none (refused), 1 with only P
static void test_prefix(void) {
    struct attn_opts o = opts_of(ATTN_QFORMAT_MXFP4, 128, 0, 1);
    const struct attn_mode *d = attn_mode_find("direct"), *h = attn_mode_find("hifa4");
    CHECK(attn_prefix_align(d, &o) == 32, "mxfp4 direct alignment %d", attn_prefix_align(d, &o));
    o.v_group = ATTN_VGROUP_CHANNEL;
    CHECK(attn_prefix_align(d, &o) == 1, "mxfp4 direct --v-group channel alignment");
    o.qmean = ATTN_QMEAN_CHANNEL;
    CHECK(attn_prefix_align(h, &o) == 128, "mxfp4 hifa4 (channel) alignment");
    o = opts_of(ATTN_QFORMAT_NVFP4, 128, 0, 1);
    CHECK(attn_prefix_align(d, &o) == ATTN_ALIGN_NONE, "nvfp4 direct has no exact prefix");
    o.qdq_skip = ATTN_QDQ_SKIP_Q | ATTN_QDQ_SKIP_K;
    CHECK(attn_prefix_align(d, &o) == ATTN_ALIGN_NONE, "nvfp4 with V quantized has no exact prefix");
    o.qdq_skip = ATTN_QDQ_SKIP_Q | ATTN_QDQ_SKIP_K | ATTN_QDQ_SKIP_V;
    CHECK(attn_prefix_align(d, &o) == 1, "nvfp4 with only P quantized: alignment 1");
    CHECK(attn_prefix_align(attn_mode_find("bf16"), &o) == 1, "bf16 under nvfp4: alignment 1");

    struct qkv s = qkv_make(200, 2, 1, 64, 41), p = s;
    const size_t w = (size_t)s.H * s.d, n = (size_t)s.T * w;
    float *full = malloc(n * 4), *pre = malloc(n * 4), *cont = malloc(n * 4);
    struct err e = {0};
    for (int fmt = ATTN_QFORMAT_NVFP4; fmt <= ATTN_QFORMAT_MXFP4; fmt++)
        for (int plen = 96; plen <= 100; plen += 4) {
            o = opts_of(fmt, 128, 0, 1);
            p.T = plen;
            int rc = run_seq(full, &s, "direct", &o, 0, &e) | run_seq(pre, &p, "direct", &o, 0, &e);
            const size_t nd = n_diff(pre, full, (size_t)plen * w);
            if (fmt == ATTN_QFORMAT_MXFP4 && plen % 32 == 0) {
                CHECK(rc == 0 && nd == 0, "mxfp4 prefix %d: %zu outputs depend on later tokens", plen, nd);
                rc = run_seq(cont, &s, "direct", &o, plen, &e);
                CHECK(rc == 0 && n_diff(cont, full + (size_t)plen * w, n - (size_t)plen * w) == 0,
                      "mxfp4 continuation of %d cached rows differs from the one-call run: %s", plen, e.msg);
            } else { // NVFP4's tensor amax and an open MXFP4 V block see later tokens
                CHECK(rc == 0 && nd > 0, "%s prefix %d: no output changed", attn_qformat_name(fmt), plen);
                rc = run_seq(cont, &s, "direct", &o, plen, &e);
                CHECK(rc == ERR_USAGE, "%s: a past of %d rows accepted (rc %d)", attn_qformat_name(fmt), plen, rc);
                if (fmt == ATTN_QFORMAT_NVFP4) CHECK(strstr(e.msg, "no exact cached prefix") != NULL, "message: %s", e.msg);
            }
        }
    free(full), free(pre), free(cont);
    qkv_free(&s);
}

// invariant 5: batch composition and thread count change no bit (NVFP4's amax per sequence)
static void test_batch_threads(void) {
    struct qkv a = qkv_make(300, 4, 2, 64, 51), b = qkv_make(170, 4, 2, 64, 52);
    const size_t wq = 4 * 64, wk = 2 * 64, na = 300 * wq, nb = 170 * wq;
    float *oa = malloc(na * 4), *ob = malloc(nb * 4), *ot = malloc((na + nb) * 4);
    float *q = malloc((na + nb) * 4), *k = malloc((size_t)470 * wk * 4), *v = malloc((size_t)470 * wk * 4);
    for (int fmt = ATTN_QFORMAT_NVFP4; fmt <= ATTN_QFORMAT_MXFP4; fmt++) {
        struct err e = {0};
        struct attn_opts o1 = opts_of(fmt, 64, 0, 1), o2 = opts_of(fmt, 64, 0, 2);
        int rc = run_seq(oa, &a, "hifa4", &o1, 0, &e) | run_seq(ob, &b, "hifa4", &o1, 0, &e);
        memcpy(q, b.q, nb * 4), memcpy(q + nb, a.q, na * 4); // batch order b, a
        memcpy(k, b.k, 170 * wk * 4), memcpy(k + 170 * wk, a.k, 300 * wk * 4);
        memcpy(v, b.v, 170 * wk * 4), memcpy(v + 170 * wk, a.v, 300 * wk * 4);
        struct attn_ctx *ctx;
        rc |= attn_ctx_init(&ctx, "hifa4", &o2, &(struct attn_shape){1, 4, 2, 64, 300}, a.scales, &e);
        if (!rc) {
            int off[2] = {0, 170}, len[2] = {170, 300};
            struct attn_layer l = {0, 0.125f, 0.125, 0, 0};
            rc = attn_forward(ctx, &(struct attn_batch){2, off, len, NULL}, &(struct attn_io){ot, q, k, v, NULL, NULL}, &l, &e);
            attn_ctx_free(ctx);
        }
        // b's scales are a's in the batch: compare b run with a's scales
        memcpy(b.scales, a.scales, 2 * 64 * 4);
        rc |= run_seq(ob, &b, "hifa4", &o1, 0, &e);
        CHECK(rc == 0 && n_diff(ot, ob, nb) == 0 && n_diff(ot + nb, oa, na) == 0,
              "hifa4 [%s]: a batch of two on 2 threads differs from single sequences on 1 (%s)", attn_qformat_name(fmt), e.msg);
    }
    free(oa), free(ob), free(ot), free(q), free(k), free(v);
    qkv_free(&a), qkv_free(&b);
}

// NaN / Inf inputs are refused with the position (spec 2.4); names, bits, parsing
static void test_errors_names(void) {
    struct qkv s = qkv_make(40, 2, 1, 64, 61);
    const size_t n = (size_t)s.T * s.H * s.d;
    float *o = malloc(n * 4);
    s.k[(size_t)17 * 64 + 5] = NAN;
    struct err e = {0};
    struct attn_opts on = opts_of(ATTN_QFORMAT_NVFP4, 128, 0, 1), oh = opts_of(ATTN_QFORMAT_HIF4, 128, 0, 1);
    int rc = run_seq(o, &s, "direct", &on, 0, &e);
    CHECK(rc == ERR_RANGE && strstr(e.msg, "layer 0: K of sequence 0, position 17, head 0, channel 5"), "NaN in K: rc %d %s", rc,
          e.msg);
    on.qdq_skip = ATTN_QDQ_SKIP_K;
    CHECK(run_seq(o, &s, "bf16", &on, 0, &e) == 0, "bf16 under nvfp4 does not quantize: NaN passes as before");
    CHECK(run_seq(o, &s, "direct", &oh, 0, &e) == 0, "hif4 keeps its NaN semantics (hif4.md 5)");
    free(o);
    qkv_free(&s);
    int v = -1;
    CHECK(attn_parse_qformat("nvfp4", &v, &e) == 0 && v == ATTN_QFORMAT_NVFP4 && attn_parse_qformat("mxfp4", &v, &e) == 0 &&
              v == ATTN_QFORMAT_MXFP4 && attn_parse_qformat("fp4", &v, &e) == ERR_USAGE && strstr(e.msg, "nvfp4 or mxfp4"),
          "--qformat parsing");
    char buf[128];
    attn_mode_display(buf, sizeof buf, attn_mode_find("direct"), ATTN_QFORMAT_NVFP4, ATTN_QMEAN_TOKEN, 0);
    CHECK(!strcmp(buf, "direct [nvfp4]"), "display '%s'", buf);
    attn_mode_display(buf, sizeof buf, attn_mode_find("hifa4"), ATTN_QFORMAT_MXFP4, ATTN_QMEAN_CHANNEL, ATTN_QDQ_SKIP_P);
    CHECK(!strcmp(buf, "hifa4 (channel) [mxfp4] [qdq-skip p]"), "display '%s'", buf);
    attn_mode_display(buf, sizeof buf, attn_mode_find("bf16"), ATTN_QFORMAT_NVFP4, ATTN_QMEAN_TOKEN, 0);
    CHECK(!strcmp(buf, "bf16"), "bf16 under nvfp4 is plain bf16: '%s'", buf);
    attn_mode_display(buf, sizeof buf, attn_mode_find("direct"), ATTN_QFORMAT_HIF4, ATTN_QMEAN_TOKEN, 0);
    CHECK(!strcmp(buf, "direct"), "hif4 names unchanged: '%s'", buf);
    CHECK(attn_qformat_bits(ATTN_QFORMAT_HIF4) == 4.5 && attn_qformat_bits(ATTN_QFORMAT_NVFP4) == 4.5 &&
              attn_qformat_bits(ATTN_QFORMAT_MXFP4) == 4.25,
          "storage bits per value");
}

int main(void) {
    test_fast_vs_ref();
    test_identity();
    test_tile_size();
    test_prefix();
    test_batch_threads();
    test_errors_names();
    return test_summary("test_fp4_attention");
}
