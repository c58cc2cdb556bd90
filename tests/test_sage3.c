// test_sage3.c: the modes sage3 and sage3+preorder (spec/fp4.md section 5) against the spec's
// reference emulation (cases written by fp4_attention_ref.py through tests/gen/fp4_cases.py,
// committed under tests/data/fp4: every output bit for bit, with and without qdq skips), the
// fast kernel against the literal scalar reference (sage3_ref.c) over shapes, windows, GQA and
// row splits, and the invariants of section 8: 5 (batches, threads), 6 (--qdq-skip p makes the
// two modes equal), 7 (identity quantizers vs f32 and bf16), 8 (Theorem 1 on the raw outputs),
// 9 (usage errors, refused prefixes), 10 (the K-mean leak is real).
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attn.h"
#include "attention/case.h"
#include "attention/modes.h"
#include "io/safetensors.h"
#include "rng.h"
#include "test.h"

static size_t n_diff(const float *a, const float *b, size_t n) {
    size_t nd = 0;
    for (size_t i = 0; i < n; i++) nd += f32_bits(a[i]) != f32_bits(b[i]) && !(isnan(a[i]) && isnan(b[i]));
    return nd;
}

// ---- the reference emulation's cases ----
static const char *const cases[] = {"fp4/sage3-t150-h2-kv1-d64.safetensors", "fp4/sage3-t140-h4-kv2-d32-w50.safetensors"};
static const struct { const char *tensor, *mode; unsigned skip; } outputs[] = {
    {"out.sage3.bc128", "sage3", 0},
    {"out.sage3+preorder.bc128", "sage3+preorder", 0},
    {"out.sage3.qdq-skip-qkv.bc128", "sage3", ATTN_QDQ_SKIP_Q | ATTN_QDQ_SKIP_K | ATTN_QDQ_SKIP_V},
    {"out.sage3+preorder.qdq-skip-qkv.bc128", "sage3+preorder", ATTN_QDQ_SKIP_Q | ATTN_QDQ_SKIP_K | ATTN_QDQ_SKIP_V},
    {"out.sage3.qdq-skip-qkvp.bc128", "sage3", ATTN_QDQ_SKIP_ALL},
};

static void test_reference_cases(void) {
    for (int ci = 0; ci < 2; ci++) {
        const char *path = TEST_NEED("%s", cases[ci]);
        if (!path) continue;
        struct err e = {0};
        struct attn_case c;
        struct safetensors st;
        if (attn_case_load(&c, path, &e) || st_open(&st, path, &e)) {
            CHECK(0, "%s", e.msg);
            continue;
        }
        const size_t n = (size_t)c.T * c.H * c.d;
        float *out = malloc(n * 4), *ref = malloc(n * 4), *f32 = malloc(n * 4);
        const struct st_tensor *tf = st_find(&st, "out.f32");
        CHECK(tf && !st_to_f32(f32, tf, &e), "%s: out.f32", path);
        for (int oi = 0; oi < 5; oi++) {
            const struct st_tensor *t = st_find(&st, outputs[oi].tensor);
            if (!t || (size_t)t->numel != n || st_to_f32(ref, t, &e)) {
                CHECK(0, "%s: %s missing", path, outputs[oi].tensor);
                continue;
            }
            struct attn_opts o;
            attn_opts_default(&o);
            o.qdq_skip = outputs[oi].skip, o.n_threads = 2;
            const int rc = attn_case_run(out, &c, outputs[oi].mode, &o, &e);
            const size_t nd = n_diff(out, ref, n);
            CHECK(rc == 0 && nd == 0, "%s %s: rc %d, %zu of %zu differ from the reference emulation (%s)", path,
                  outputs[oi].tensor, rc, nd, n, e.msg);
            printf("%s %s: bit-exact, rel-L2 vs f32 %.4f\n", cases[ci], outputs[oi].tensor, test_rel_l2(out, f32, n));
        }
        free(out), free(ref), free(f32);
        st_close(&st);
        attn_case_free(&c);
    }
}

// ---- fast == literal reference ----
struct qkv { int T, H, Hkv, d; float *q, *k, *v; };
static struct qkv qkv_make(int T, int H, int Hkv, int d, uint64_t seed) {
    rng_seed(seed);
    struct qkv s = {T, H, Hkv, d, NULL, NULL, NULL};
    const size_t nq = (size_t)T * H * d, nk = (size_t)T * Hkv * d;
    s.q = malloc(nq * 4), s.k = malloc(nk * 4), s.v = malloc(nk * 4);
    for (size_t i = 0; i < nq; i++) s.q[i] = round_bf16(1.3f * nrand() + 2.0f * sinf(0.5f * (float)(i % d)));
    for (size_t i = 0; i < nk; i++) s.k[i] = round_bf16(nrand() + ((int)(i % d) == 7 ? 15.0f : 1.0f));
    for (size_t i = 0; i < nk; i++) s.v[i] = round_bf16(nrand() + 1.0f);
    return s;
}
static void qkv_free(struct qkv *s) { free(s->q), free(s->k), free(s->v); }

static void test_fast_vs_ref(void) {
    static const struct { int T, H, Hkv, d, window; } shapes[] = {
        {1, 2, 1, 64, 0}, {100, 2, 2, 64, 0}, {129, 4, 2, 32, 0}, {300, 3, 1, 48, 0}, {260, 2, 1, 128, 90}, {385, 2, 2, 16, 200},
    };
    static const unsigned skips[] = {0, ATTN_QDQ_SKIP_P, ATTN_QDQ_SKIP_Q | ATTN_QDQ_SKIP_V, ATTN_QDQ_SKIP_ALL};
    int bad = 0, runs = 0;
    for (int si = 0; si < 6; si++) {
        struct qkv s = qkv_make(shapes[si].T, shapes[si].H, shapes[si].Hkv, shapes[si].d, 90 + si);
        struct attn_call c = {.T = s.T, .r1 = s.T, .H = s.H, .Hkv = s.Hkv, .d = s.d, .sm = (float)(1.0 / sqrt((double)s.d)),
                              .window = shapes[si].window, .tile = 128};
        const size_t n = (size_t)s.T * s.H * s.d;
        float *a = malloc(n * 4), *b = malloc(n * 4);
        void *sa = malloc(attn_sage3_scratch(&c)), *sb = malloc(attn_sage3_ref_scratch(&c));
        for (int k = 0; k < 4; k++)
            for (int pre = 0; pre < 2; pre++) {
                const unsigned fl = ATTN_F_SAGE3 | (pre ? ATTN_F_PREORDER : 0) | (k == 3 ? ATTN_FI_RAW_OUT : 0);
                c.qdq_skip = skips[k];
                c.r0 = 0, c.r1 = s.T;
                attn_sage3_ref_forward(&(struct attn_operands){b, s.q, s.k, s.v}, &c, 0, s.H, sb, fl);
                for (size_t i = 0; i < n; i++) a[i] = NAN;
                if (s.T > 128 && k == 1) { // a row split at 128 and a head range per part
                    c.r1 = 128;
                    attn_sage3_forward(&(struct attn_operands){a, s.q, s.k, s.v}, &c, 0, s.H, sa, fl);
                    c.r0 = 128, c.r1 = s.T;
                    attn_sage3_forward(&(struct attn_operands){a, s.q, s.k, s.v}, &c, 0, 1, sa, fl);
                    attn_sage3_forward(&(struct attn_operands){a, s.q, s.k, s.v}, &c, 1, s.H, sa, fl);
                } else {
                    attn_sage3_forward(&(struct attn_operands){a, s.q, s.k, s.v}, &c, 0, s.H, sa, fl);
                }
                const size_t nd = n_diff(a, b, n);
                runs++;
                if (nd) {
                    bad++;
                    CHECK(0, "shape %d skip 0x%x preorder %d: %zu of %zu differ", si, skips[k], pre, nd, n);
                }
            }
        free(a), free(b), free(sa), free(sb);
        qkv_free(&s);
    }
    CHECK(bad == 0, "%d of %d fast-vs-reference runs differ", bad, runs);
    printf("fast vs reference: %d runs bit-identical\n", runs);
}

// ---- through attn_forward ----
static int run_seq(float *out, const struct qkv *s, const char *mode, const struct attn_opts *o, float cap, struct err *e) {
    const size_t nq = (size_t)s->T * s->H * s->d, nk = (size_t)s->T * s->Hkv * s->d;
    float *buf = malloc((nq + 2 * nk) * 4);
    memcpy(buf, s->q, nq * 4), memcpy(buf + nq, s->k, nk * 4), memcpy(buf + nq + nk, s->v, nk * 4);
    struct attn_ctx *ctx;
    int rc = attn_ctx_init(&ctx, mode, o, &(struct attn_shape){1, s->H, s->Hkv, s->d, s->T}, NULL, e);
    if (!rc) {
        int off = 0, len = s->T;
        struct attn_layer l = {0, (float)(1.0 / sqrt((double)s->d)), 1.0 / sqrt((double)s->d), cap, 0};
        rc = attn_forward(ctx, &(struct attn_batch){1, &off, &len, NULL}, &(struct attn_io){out, buf, buf + nq, buf + nq + nk, NULL, NULL},
                          &l, e);
        attn_ctx_free(ctx);
    }
    free(buf);
    return rc;
}
static struct attn_opts opts(unsigned skip, int threads) {
    struct attn_opts o;
    attn_opts_default(&o);
    o.qdq_skip = skip, o.n_threads = threads;
    return o;
}

static void test_invariants(void) {
    struct qkv s = qkv_make(260, 4, 2, 64, 77);
    const size_t n = (size_t)s.T * s.H * s.d;
    float *a = malloc(n * 4), *b = malloc(n * 4), *r = malloc(n * 4);
    struct err e = {0};
    struct attn_opts op = opts(ATTN_QDQ_SKIP_P, 1), oa = opts(ATTN_QDQ_SKIP_ALL, 1), o0 = opts(0, 1), o2 = opts(0, 2);
    // 6: with P unquantized the normalizers coincide
    int rc = run_seq(a, &s, "sage3", &op, 0, &e) | run_seq(b, &s, "sage3+preorder", &op, 0, &e);
    CHECK(rc == 0 && n_diff(a, b, n) == 0, "invariant 6: sage3 and sage3+preorder differ with --qdq-skip p (%s)", e.msg);
    // 7: identity quantizers vs f32 and bf16 within 1e-2
    rc = run_seq(a, &s, "sage3", &oa, 0, &e) | run_seq(r, &s, "f32", &o0, 0, &e) | run_seq(b, &s, "bf16", &o0, 0, &e);
    const double rf = test_rel_l2(a, r, n), rb = test_rel_l2(a, b, n);
    CHECK(rc == 0 && rf <= 1e-2 && rb <= 1e-2 && rf > 0, "invariant 7: sage3 --qdq-skip q,k,v,p vs f32 %.3g, vs bf16 %.3g", rf, rb);
    printf("invariant 7: sage3 --qdq-skip q,k,v,p vs f32 rel-L2 %.3g, vs bf16 %.3g\n", rf, rb);
    // 5: threads change no bit; quantized, the two modes differ and stay near f32
    rc = run_seq(a, &s, "sage3", &o0, 0, &e) | run_seq(b, &s, "sage3", &o2, 0, &e);
    CHECK(rc == 0 && n_diff(a, b, n) == 0, "invariant 5: sage3 on 1 vs 2 threads differs");
    rc = run_seq(b, &s, "sage3+preorder", &o0, 0, &e);
    CHECK(rc == 0 && n_diff(a, b, n) > 0, "sage3 and sage3+preorder identical with P quantized");
    printf("quantized: sage3 vs f32 rel-L2 %.4f, sage3+preorder %.4f\n", test_rel_l2(a, r, n), test_rel_l2(b, r, n));
    // 10: the K-mean leak - the last key moves earlier rows' outputs, but row 0 (one key) keeps its own
    struct qkv t = s;
    t.k = malloc((size_t)s.T * s.Hkv * s.d * 4);
    memcpy(t.k, s.k, (size_t)s.T * s.Hkv * s.d * 4);
    for (int ch = 0; ch < s.d; ch++) t.k[((size_t)(s.T - 1) * s.Hkv) * s.d + ch] += 8.0f;
    rc = run_seq(b, &t, "sage3", &o0, 0, &e);
    const size_t w = (size_t)s.H * s.d, early = n_diff(a + w, b + w, 128 * w - w);
    CHECK(rc == 0 && early > 0, "invariant 10: changing the last key changed none of rows 1..127");
    CHECK(n_diff(a, b, s.d) == 0, "invariant 10: row 0 of head 0 changed (it sees one key)");
    printf("invariant 10: the last key changes %zu outputs of rows 1..127\n", early);
    free(t.k);
    free(a), free(b), free(r);
    qkv_free(&s);
}

// 8: Theorem 1 on sage3 with only P quantized, raw outputs O * (1/l): O_mis = O_cons * l_cons / l_mis
// (single tile), the per-row factor fitted by least squares.
static void test_theorem1(void) {
    struct qkv s = qkv_make(128, 2, 1, 64, 5);
    struct attn_call c = {.T = 128, .r1 = 128, .H = 2, .Hkv = 1, .d = 64, .sm = 0.125f, .tile = 128,
                          .qdq_skip = ATTN_QDQ_SKIP_Q | ATTN_QDQ_SKIP_K | ATTN_QDQ_SKIP_V};
    const size_t n = 128 * 2 * 64;
    float *mis = malloc(n * 4), *con = malloc(n * 4);
    void *sc = malloc(attn_sage3_scratch(&c));
    attn_sage3_forward(&(struct attn_operands){mis, s.q, s.k, s.v}, &c, 0, 2, sc, ATTN_F_SAGE3 | ATTN_FI_RAW_OUT);
    attn_sage3_forward(&(struct attn_operands){con, s.q, s.k, s.v}, &c, 0, 2, sc, ATTN_F_SAGE3 | ATTN_F_PREORDER | ATTN_FI_RAW_OUT);
    // per row: O_mis * l_mis = O_cons * l_cons (= sum Pc v, the same numerator), so the ratio of
    // the two outputs is one scalar per row. (The spec's second form, O_cons = O* + e_t/(1+eps)
    // with e_t from O_mis = O* + e_t + eps O*, is this relation again once eps = l_cons/l_mis - 1.)
    double worst = 0, maxo = 0, dsep = 0;
    for (size_t row = 0; row < 128 * 2; row++) {
        const float *m = mis + row * 64, *k = con + row * 64;
        double num = 0, den = 0;
        for (int ch = 0; ch < 64; ch++) num += (double)m[ch] * k[ch], den += (double)k[ch] * k[ch];
        const double ratio = den > 0 ? num / den : 1; // l_cons / l_mis, least squares
        for (int ch = 0; ch < 64; ch++) {
            worst = fmax(worst, fabs(m[ch] - ratio * k[ch]));
            maxo = fmax(maxo, fabs(k[ch]));
            dsep = fmax(dsep, fabs(m[ch] - k[ch]));
        }
    }
    CHECK(worst <= 1e-5 * maxo && dsep > 100 * worst, "Theorem 1: O_mis = O_cons * (l_cons/l_mis) to %.3g of max|O| "
          "(bound 1e-5), the modes differ by %.3g", worst / maxo, dsep / maxo);
    printf("Theorem 1 on sage3: per-row scalar relation holds to %.2g of max|O| (modes differ by %.2g)\n", worst / maxo,
           dsep / maxo);
    free(mis), free(con), free(sc);
    qkv_free(&s);
}

static void test_usage(void) {
    struct err e = {0};
    struct attn_ctx *ctx = NULL;
    struct attn_opts o = opts(0, 1);
    o.tile = 64;
    CHECK(attn_ctx_init(&ctx, "sage3", &o, &(struct attn_shape){1, 2, 1, 64, 64}, NULL, &e) == ERR_USAGE && strstr(e.msg, "--tile 64"), "tile: %s", e.msg);
    o = opts(0, 1), o.qformat = ATTN_QFORMAT_MXFP4;
    CHECK(attn_ctx_init(&ctx, "sage3", &o, &(struct attn_shape){1, 2, 1, 64, 64}, NULL, &e) == ERR_USAGE && strstr(e.msg, "mxfp4"), "qformat: %s", e.msg);
    o = opts(0, 1), o.qformat = ATTN_QFORMAT_NVFP4;
    CHECK(attn_ctx_init(&ctx, "sage3+preorder", &o, &(struct attn_shape){1, 2, 1, 64, 64}, NULL, &e) == 0, "--qformat nvfp4 accepted");
    attn_ctx_free(ctx);
    o = opts(0, 1), o.qmean = ATTN_QMEAN_CHANNEL;
    CHECK(attn_ctx_init(&ctx, "sage3", &o, &(struct attn_shape){1, 2, 1, 64, 64}, NULL, &e) == ERR_USAGE, "qmean channel refused");
    o = opts(0, 1), o.v_group = ATTN_VGROUP_CHANNEL;
    CHECK(attn_ctx_init(&ctx, "sage3", &o, &(struct attn_shape){1, 2, 1, 64, 64}, NULL, &e) == ERR_USAGE, "v-group channel refused");
    o = opts(0, 1);
    CHECK(attn_prefix_align(attn_mode_find("sage3"), &o) == ATTN_ALIGN_NONE, "sage3 has no exact prefix");
    struct qkv s = qkv_make(70, 2, 1, 64, 3);
    float *out = malloc((size_t)70 * 2 * 64 * 4);
    CHECK(run_seq(out, &s, "sage3", &o, 30.0f, &e) == ERR_USAGE && strstr(e.msg, "soft-capping"), "soft-cap: %s", e.msg);
    // a cached prefix is refused
    CHECK(attn_ctx_init(&ctx, "sage3", &o, &(struct attn_shape){1, 2, 1, 64, 70}, NULL, &e) == 0, "%s", e.msg);
    int off = 0, len = 6;
    struct attn_past past = {64, 1, {0}, {64}};
    struct attn_layer l = {0, 0.125f, 0.125, 0, 0};
    const int rc = attn_forward(ctx, &(struct attn_batch){1, &off, &len, &past},
                                &(struct attn_io){out, s.q + 64 * 128, s.k + 64 * 64, s.v + 64 * 64, s.k, s.v}, &l, &e);
    CHECK(rc == ERR_USAGE && strstr(e.msg, "no exact cached prefix"), "sage3 past: rc %d %s", rc, e.msg);
    attn_ctx_free(ctx);
    char buf[64];
    attn_mode_display(buf, sizeof buf, attn_mode_find("sage3+preorder"), ATTN_QFORMAT_NVFP4, ATTN_QMEAN_TOKEN, ATTN_QDQ_SKIP_P);
    CHECK(!strcmp(buf, "sage3+preorder [qdq-skip p]"), "display '%s'", buf);
    free(out);
    qkv_free(&s);
}

int main(void) {
    test_reference_cases();
    test_fast_vs_ref();
    test_invariants();
    test_theorem1();
    test_usage();
    return test_summary("test_sage3");
}
