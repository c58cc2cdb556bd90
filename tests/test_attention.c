// test_attention.c: the attention modes against the independent goldens
// (goldens/attention of the test data, bit for bit), the fast tiled kernel against its literal scalar
// reference (flash_ref.c), and every invariant of spec/attention.md section 8.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "attention/attn.h"
#include "attention/case.h"
#include "attention/kern.h"
#include "attention/modes.h"
#include "attention/scales.h"
#include "attention/hif4.h"
#include "io/safetensors.h"
#include "rng.h"
#include "test.h"

static const char *const golden_rel[] = {
    "goldens/attention/attn-t200-h4-kv2-d128.safetensors",
    "goldens/attention/attn-t77-h2-kv1-d64-w32.safetensors",
    "goldens/attention/attn-t130-h4-kv2-d32-cap10.safetensors",
};
// The path of golden case ci (data root, else the committed copy); NULL after a SKIP line.
#define golden_case(ci) TEST_NEED("%s", golden_rel[ci])
static const char *const tiled_modes[] = {"bf16", "direct", "hifa4", "direct+qmean", "direct+qmean+sqk",
                                          "direct+qmean+preorder"};
#define N_TILED 6

// number of elements that differ bitwise (signed zeros compared with ==)
static size_t n_diff(const float *a, const float *b, size_t n, size_t *first) {
    size_t nd = 0;
    for (size_t i = 0; i < n; i++)
        if (!(a[i] == b[i]) && !(isnan(a[i]) && isnan(b[i]))) {
            if (!nd && first) *first = i;
            nd++;
        }
    return nd;
}

// ---- goldens: every out.<mode>.bc<tile> bit-exact, out.f32 within rel-L2 1e-6 ----
static void test_goldens(void) {
    for (int ci = 0; ci < 3; ci++) {
        const char *path = golden_case(ci);
        if (!path) continue;
        struct err e = {0};
        struct attn_case c;
        int rc = attn_case_load(&c, path, &e);
        CHECK(rc == 0, "%s: %s", path, e.msg);
        if (rc) continue;
        struct safetensors st;
        rc = st_open(&st, path, &e);
        CHECK(rc == 0, "%s", e.msg);
        if (rc) { attn_case_free(&c); continue; }
        size_t n = (size_t)c.T * c.H * c.d;
        float *out = malloc(n * sizeof(float)), *ref = malloc(n * sizeof(float));
        struct attn_opts o;
        attn_opts_default(&o);
        o.n_threads = 2;
        // f32
        const struct st_tensor *t = st_find(&st, "out.f32");
        CHECK(t && (size_t)t->numel == n, "%s: out.f32", path);
        if (t && (size_t)t->numel == n && !st_to_f32(ref, t, &e)) {
            for (size_t i = 0; i < n; i++) out[i] = NAN;
            rc = attn_case_run(out, &c, "f32", &o, &e);
            double rl = test_rel_l2(out, ref, n);
            CHECK(rc == 0 && rl <= 1e-6, "%s f32: rc %d rel-L2 %.3g (%s)", path, rc, rl, e.msg);
        }
        for (int mi = 0; mi < N_TILED; mi++)
            for (int tile = 64; tile <= 128; tile += 64) {
                char name[96];
                snprintf(name, sizeof name, "out.%s.bc%d", tiled_modes[mi], tile);
                t = st_find(&st, name);
                CHECK(t && (size_t)t->numel == n, "%s: %s missing", path, name);
                if (!t || (size_t)t->numel != n || st_to_f32(ref, t, &e)) continue;
                o.tile = tile;
                for (size_t i = 0; i < n; i++) out[i] = NAN;
                rc = attn_case_run(out, &c, tiled_modes[mi], &o, &e);
                size_t first = 0, nd = n_diff(out, ref, n, &first);
                CHECK(rc == 0 && nd == 0, "%s %s: rc %d, %zu of %zu differ (first [%zu] %.9g vs %.9g) %s",
                      path, name, rc, nd, n, first, out[first], ref[first], e.msg);
            }
        o.tile = 128;
        free(out);
        free(ref);
        st_close(&st);
        attn_case_free(&c);
    }
}

// ---- deterministic synthetic inputs ----

struct synth {
    int T, H, Hkv, d;
    float *q, *k, *v, *scales; // bf16-valued
};
// q, k with a mean offset and a K outlier channel (so Q-Mean and Smooth-QK matter), v random;
// scales like the goldens' (sqrt(max|K|) / sqrt(max|Q|) per kv head and channel, binary32).
static void synth_make(struct synth *s, int T, int H, int Hkv, int d, uint64_t seed) {
    rng_seed(seed);
    s->T = T, s->H = H, s->Hkv = Hkv, s->d = d;
    size_t nq = (size_t)T * H * d, nkv = (size_t)T * Hkv * d;
    s->q = malloc(nq * 4), s->k = malloc(nkv * 4), s->v = malloc(nkv * 4), s->scales = malloc((size_t)Hkv * d * 4);
    int oc = d > 51 ? 51 : d / 2;
    for (size_t i = 0; i < nq; i++) s->q[i] = round_bf16(1.5f * nrand() + 0.3f);
    for (size_t i = 0; i < nkv; i++) s->k[i] = round_bf16(nrand() + ((int)(i % d) == oc ? 12.0f : 0.2f));
    for (size_t i = 0; i < nkv; i++) s->v[i] = round_bf16(nrand());
    for (int kh = 0; kh < Hkv; kh++)
        for (int c = 0; c < d; c++) {
            double km = 0, qm = 0;
            for (int t = 0; t < T; t++) {
                km = fmax(km, fabs(s->k[((size_t)t * Hkv + kh) * d + c]));
                for (int h = kh * (H / Hkv); h < (kh + 1) * (H / Hkv); h++)
                    qm = fmax(qm, fabs(s->q[((size_t)t * H + h) * d + c]));
            }
            s->scales[kh * d + c] = (km > 0 && qm > 0) ? (float)(sqrt(km) / sqrt(qm)) : 1.0f;
        }
}
static void synth_free(struct synth *s) { free(s->q), free(s->k), free(s->v), free(s->scales); }

// runs a registered mode through attn_forward on one sequence (inputs copied)
static int run_mode(float *out, const struct synth *s, const char *mode, int tile, int threads, unsigned skip,
                    int window, float softcap, struct err *e) {
    struct attn_case c = {.T = s->T, .H = s->H, .Hkv = s->Hkv, .d = s->d, .window = window, .softcap = softcap,
                          .sm = (float)(1.0 / sqrt((double)s->d)), .sm64 = 1.0 / sqrt((double)s->d),
                          .q = s->q, .k = s->k, .v = s->v, .scales = s->scales};
    size_t nq = (size_t)s->T * s->H * s->d, nkv = (size_t)s->T * s->Hkv * s->d;
    float *buf = malloc((nq + 2 * nkv) * 4);
    memcpy(buf, s->q, nq * 4), memcpy(buf + nq, s->k, nkv * 4), memcpy(buf + nq + nkv, s->v, nkv * 4);
    struct attn_opts o;
    attn_opts_default(&o);
    o.tile = tile, o.n_threads = threads;
    struct attn_ctx *ctx;
    int rc = attn_ctx_init(&ctx, mode, &o, &(struct attn_shape){1, s->H, s->Hkv, s->d, s->T}, s->scales, e);
    if (!rc) {
        attn_ctx_set_qdq_skip(ctx, skip);
        int off = 0, len = s->T;
        struct attn_layer l = {0, c.sm, c.sm64, softcap, window};
        for (size_t i = 0; i < nq; i++) out[i] = NAN;
        rc = attn_forward(ctx, &(struct attn_batch){1, &off, &len, NULL}, &(struct attn_io){out, buf, buf + nq, buf + nq + nkv, NULL, NULL}, &l, e);
        attn_ctx_free(ctx);
    }
    free(buf);
    return rc;
}

// ---- kern_exp_n, kern_tanh_n == (float)exp/tanh((double)x), kern_bf16 == round_bf16 ----
// A dense sample (every 509th binary32, all exponents) plus specials; with HIFA4_EXHAUSTIVE=1
// every binary32 input (about 4.3e9, minutes) - the proof by exhaustion kern.h refers to.
static void test_exp_bf16(void) {
    const int exhaustive = getenv("HIFA4_EXHAUSTIVE") && atoi(getenv("HIFA4_EXHAUSTIVE"));
    const uint64_t step = exhaustive ? 1 : 509;
    size_t bad = 0, badb = 0, n = 0;
    uint32_t first = 0;
    float x[1024], y[1024];
    int m = 0;
    for (uint64_t u = 0; u < (1ull << 32); u += step) {
        x[m++] = bits_f32((uint32_t)u);
        if (m == 1024 || u + step >= (1ull << 32)) {
            kern_exp_n(y, x, m);
            for (int i = 0; i < m; i++) {
                float r = (float)exp((double)x[i]);
                if (f32_bits(r) != f32_bits(y[i]) && !(isnan(r) && isnan(y[i]))) {
                    if (!bad) first = f32_bits(x[i]);
                    bad++;
                }
                float b = kern_bf16(x[i]), c = round_bf16(x[i]);
                if (f32_bits(b) != f32_bits(c) && !(isnan(b) && isnan(c))) badb++;
            }
            n += (size_t)m;
            m = 0;
        }
    }
    const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -87.0f, 88.0f, -86.99999f, 87.99999f, -103.97f,
                        -1e-30f, 1e-30f, 0x1p-25f, -0x1p-25f};
    kern_exp_n(y, sp, 14);
    for (int i = 0; i < 14; i++) {
        float r = (float)exp((double)sp[i]);
        if (f32_bits(r) != f32_bits(y[i]) && !(isnan(r) && isnan(y[i]))) bad++;
    }
    CHECK(bad == 0, "kern_exp_n differs from (float)exp((double)x) on %zu of %zu inputs (first 0x%08x)", bad, n, first);
    // tanh the same way
    bad = 0, m = 0;
    for (uint64_t u = 0; u < (1ull << 32); u += step) {
        x[m++] = bits_f32((uint32_t)u);
        if (m == 1024 || u + step >= (1ull << 32)) {
            kern_tanh_n(y, x, m);
            for (int i = 0; i < m; i++) {
                float r = (float)tanh((double)x[i]);
                if (f32_bits(r) != f32_bits(y[i]) && !(isnan(r) && isnan(y[i]))) {
                    if (!bad) first = f32_bits(x[i]);
                    bad++;
                }
            }
            m = 0;
        }
    }
    kern_tanh_n(y, sp, 14);
    for (int i = 0; i < 14; i++) {
        float r = (float)tanh((double)sp[i]);
        if (f32_bits(r) != f32_bits(y[i]) && !(isnan(r) && isnan(y[i]))) bad++;
    }
    CHECK(bad == 0, "kern_tanh_n differs from (float)tanh((double)x) on %zu inputs (first 0x%08x)", bad, first);
    CHECK(badb == 0, "kern_bf16 differs from round_bf16 on %zu inputs", badb);
}

// ---- fast kernel == literal scalar reference, bit for bit, over shapes and flag sets ----
static void test_fast_vs_ref(void) {
    static const struct { int T, H, Hkv, d, window, tile; float cap; } shapes[] = {
        {1, 2, 1, 64, 0, 64, 0},     {77, 2, 1, 64, 32, 64, 0},  {200, 4, 2, 128, 0, 128, 0},
        {130, 4, 2, 32, 0, 64, 10},  {150, 6, 2, 96, 0, 192, 0}, {260, 3, 3, 80, 100, 128, 30},
        {65, 4, 1, 16, 0, 64, 0},    {129, 2, 2, 200, 70, 64, 0}, {33, 2, 1, 72, 5, 64, 0},
    };
    static const unsigned flagsets[] = {
        ATTN_F_TILED, ATTN_F_TILED | ATTN_F_QUANT, ATTN_F_TILED | ATTN_F_QUANT | ATTN_F_QMEAN,
        ATTN_F_TILED | ATTN_F_QUANT | ATTN_F_QMEAN | ATTN_F_SQK,
        ATTN_F_TILED | ATTN_F_QUANT | ATTN_F_QMEAN | ATTN_F_PREORDER,
        ATTN_F_TILED | ATTN_F_QUANT | ATTN_F_QMEAN | ATTN_F_SQK | ATTN_F_PREORDER,
        ATTN_F_TILED | ATTN_F_QUANT | ATTN_F_PREORDER | ATTN_FI_STATE_F32 | ATTN_FI_RAW_OUT,
        ATTN_F_TILED | ATTN_FI_RAW_OUT, ATTN_F_TILED | ATTN_F_QUANT | ATTN_F_SQK,
    };
    const int n_shapes = (int)(sizeof shapes / sizeof shapes[0]), n_flags = (int)(sizeof flagsets / sizeof flagsets[0]);
    int n_bad = 0, n_runs = 0;
    for (int si = 0; si < n_shapes; si++) {
        struct synth s;
        synth_make(&s, shapes[si].T, shapes[si].H, shapes[si].Hkv, shapes[si].d, 100 + si);
        struct attn_call c = {.T = s.T, .r1 = s.T, .H = s.H, .Hkv = s.Hkv, .d = s.d, .sm = (float)(1.0 / sqrt((double)s.d)),
                              .softcap = shapes[si].cap, .window = shapes[si].window, .tile = shapes[si].tile,
                              .scales = s.scales};
        size_t n = (size_t)s.T * s.H * s.d;
        float *a = malloc(n * 4), *b = malloc(n * 4);
        void *sa = malloc(attn_flash_scratch(&c)), *sb = malloc(attn_flash_ref_scratch(&c));
        for (int fi = 0; fi < n_flags; fi++)
            for (int var = 0; var < 4; var++) {
                // variants: default; V grouped per channel + A6 recipe; qdq skip of P; a head range
                c.v_group = var == 1 ? ATTN_VGROUP_CHANNEL : ATTN_VGROUP_TOKEN;
                c.qformat = var == 1 ? ATTN_QFORMAT_HIF4_A6 : ATTN_QFORMAT_HIF4;
                c.qdq_skip = var == 2 ? ATTN_QDQ_SKIP_P | ATTN_QDQ_SKIP_K : 0;
                int h0 = var == 3 ? 1 : 0, h1 = var == 3 ? s.H - (s.H > 2) : s.H;
                for (size_t i = 0; i < n; i++) a[i] = b[i] = NAN;
                attn_flash_forward(&(struct attn_operands){a, s.q, s.k, s.v}, &c, h0, h1, sa, flagsets[fi]);
                attn_flash_ref_forward(&(struct attn_operands){b, s.q, s.k, s.v}, &c, h0, h1, sb, flagsets[fi]);
                size_t first = 0, nd = n_diff(a, b, n, &first);
                n_runs++;
                if (nd) {
                    n_bad++;
                    CHECK(nd == 0, "shape %d flags 0x%x variant %d: %zu of %zu differ, first [%zu] fast %.9g ref %.9g",
                          si, flagsets[fi], var, nd, n, first, a[first], b[first]);
                }
                // rows outside [h0, h1) untouched
                if (var == 3) {
                    int untouched = 1;
                    for (int t = 0; t < s.T; t++)
                        for (int h = 0; h < s.H; h++)
                            if ((h < h0 || h >= h1) && !isnan(a[((size_t)t * s.H + h) * s.d])) untouched = 0;
                    CHECK(untouched, "shape %d: heads outside [%d,%d) written", si, h0, h1);
                }
            }
        free(a), free(b), free(sa), free(sb);
        synth_free(&s);
    }
    CHECK(n_bad == 0, "%d of %d fast-vs-reference runs differ", n_bad, n_runs);
}

// ---- the fast binary64 reference (modes exact, f32) == the literal one up to summation order ----
static void test_ref_fast(void) {
    static const struct { int T, H, Hkv, d, window; float cap; } shapes[] = {
        {1, 2, 1, 64, 0, 0}, {77, 2, 1, 64, 32, 0}, {200, 4, 2, 128, 0, 0}, {130, 4, 2, 32, 0, 10},
        {150, 6, 2, 96, 0, 0}, {33, 2, 1, 72, 5, 0}, {129, 2, 2, 200, 70, 30},
    };
    for (int si = 0; si < (int)(sizeof shapes / sizeof shapes[0]); si++) {
        struct synth s;
        synth_make(&s, shapes[si].T, shapes[si].H, shapes[si].Hkv, shapes[si].d, 200 + si);
        struct attn_call c = {.T = s.T, .r1 = s.T, .H = s.H, .Hkv = s.Hkv, .d = s.d, .sm64 = 1.0 / sqrt((double)s.d),
                              .softcap = shapes[si].cap, .window = shapes[si].window, .tile = 128};
        size_t n = (size_t)s.T * s.H * s.d;
        float *a = malloc(n * 4), *b = malloc(n * 4);
        void *sa = malloc(attn_ref_scratch(&c)), *sb = malloc(attn_ref_literal_scratch(&c));
        for (size_t i = 0; i < n; i++) a[i] = b[i] = NAN;
        attn_ref_forward(&(struct attn_operands){a, s.q, s.k, s.v}, &c, 0, s.H, sa);
        attn_ref_literal_forward(&(struct attn_operands){b, s.q, s.k, s.v}, &c, 0, s.H, sb);
        double r = test_rel_l2(a, b, n);
        size_t nd = n_diff(a, b, n, NULL);
        // both round the same binary64 value to binary32 except within ~1e-15 of a midpoint
        CHECK(r <= 1e-12 && nd <= n / 1000, "shape %d: fast vs literal binary64 reference rel-L2 %.3g, %zu of %zu differ",
              si, r, nd, n);
        free(a), free(b), free(sa), free(sb);
        synth_free(&s);
    }
}

// ---- kern_fp16 == round_fp16 on every binary32 whose exponent matters, plus specials ----
static void test_fp16_round(void) {
    size_t bad = 0;
    uint32_t first = 0;
    for (uint32_t e = 90; e <= 145; e++)
        // every mantissa around the fp16 subnormal/normal boundary and overflow, a stride
        // coprime to 2^13 (all dropped-bit patterns) elsewhere
        for (uint32_t m = 0; m < (1u << 23); m += (e == 102 || e == 103 || e == 112 || e == 113 || e == 142) ? 1 : 61)
            for (uint32_t sgn = 0; sgn < 2; sgn++) {
                float x = bits_f32(sgn << 31 | e << 23 | m);
                float a = kern_fp16(x), b = round_fp16(x);
                if (f32_bits(a) != f32_bits(b)) {
                    if (!bad) first = f32_bits(x);
                    bad++;
                }
            }
    const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f, 65504.0f, 65519.99f, 65520.0f, 1e30f, -1e30f};
    for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++) {
        float a = kern_fp16(sp[i]), b = round_fp16(sp[i]);
        if (!(f32_bits(a) == f32_bits(b) || (isnan(a) && isnan(b)))) bad++;
    }
    CHECK(bad == 0, "kern_fp16 differs from round_fp16 on %zu inputs (first 0x%08x)", bad, first);
}

// ---- 8.1 and 8.2: identity qdq; every mode against f32 ----
static void test_identity_and_f32(void) {
    for (int ci = 0; ci < 4; ci++) {
        struct synth s;
        struct attn_case gc = {0};
        int window = 0;
        float cap = 0;
        if (ci < 3) { // the golden inputs (benign data, window, soft-cap)
            struct err e = {0};
            const char *path = golden_case(ci);
            if (!path) continue;
            if (attn_case_load(&gc, path, &e)) { CHECK(0, "%s", e.msg); continue; }
            s = (struct synth){gc.T, gc.H, gc.Hkv, gc.d, gc.q, gc.k, gc.v, gc.scales};
            window = gc.window, cap = gc.softcap;
        } else { // synthetic K outlier
            synth_make(&s, 190, 4, 2, 128, 7);
        }
        size_t n = (size_t)s.T * s.H * s.d;
        float *ref = malloc(n * 4), *dir = malloc(n * 4), *o = malloc(n * 4);
        struct err e = {0};
        int rc = run_mode(ref, &s, "f32", 128, 2, 0, window, cap, &e);
        rc |= run_mode(dir, &s, "direct", 128, 2, ATTN_QDQ_SKIP_ALL, window, cap, &e);
        CHECK(rc == 0, "%s", e.msg);
        double r_dir = test_rel_l2(dir, ref, n);
        CHECK(r_dir <= 1e-2, "case %d: identity-qdq direct vs f32 rel-L2 %.3g > 1e-2 (8.2)", ci, r_dir);
        rc = run_mode(o, &s, "bf16", 128, 2, 0, window, cap, &e);
        double r_bf = test_rel_l2(o, ref, n);
        CHECK(rc == 0 && r_bf <= 5e-3, "case %d: bf16 vs f32 rel-L2 %.3g > 5e-3 (8.2)", ci, r_bf);
        printf("8.2 case %d: bf16 vs f32 rel-L2 %.3g, identity-qdq direct vs f32 %.3g\n", ci, r_bf, r_dir);
        for (int mi = 3; mi < N_TILED + 1; mi++) {
            const char *m = mi < N_TILED ? tiled_modes[mi] : "hifa4";
            int sqk = strstr(m, "sqk") || !strcmp(m, "hifa4");
            // 8.1: 2e-3 without Smooth-QK; with it the extra bf16(q*s), bf16(k/s) roundings
            // alone reach ~8e-3 on K-outlier data (goldens README note), bound 1e-2
            double bound = sqk ? 1e-2 : 2e-3;
            rc = run_mode(o, &s, m, 128, 2, ATTN_QDQ_SKIP_ALL, window, cap, &e);
            double r = test_rel_l2(o, dir, n);
            CHECK(rc == 0 && r <= bound, "case %d: identity-qdq %s vs direct rel-L2 %.3g > %g (8.1)", ci, m, r, bound);
            printf("8.1 case %d: identity-qdq %-22s vs direct rel-L2 %.3g (bound %g)\n", ci, m, r, bound);
            CHECK(r > 0 || !sqk, "case %d: %s identical to direct under identity qdq: Smooth-QK not applied?", ci, m);
        }
        free(ref), free(dir), free(o);
        if (ci < 3) attn_case_free(&gc);
        else synth_free(&s);
    }
}

// ---- 8.3: tile size changes bf16 only through the fp16 state ----
static void test_tile_size(void) {
    struct synth s;
    synth_make(&s, 700, 2, 1, 64, 11);
    size_t n = (size_t)s.T * s.H * s.d;
    float *a = malloc(n * 4), *b = malloc(n * 4);
    struct err e = {0};
    int rc = run_mode(a, &s, "bf16", 64, 2, 0, 0, 0, &e) | run_mode(b, &s, "bf16", 512, 2, 0, 0, 0, &e);
    double r = test_rel_l2(a, b, n);
    CHECK(rc == 0 && r < 2e-3 && r > 0, "bf16 Bc=64 vs Bc=512 rel-L2 %.3g (want 0 < r < 2e-3, 8.3)", r);
    printf("8.3: bf16 Bc=64 vs Bc=512 rel-L2 %.3g\n", r);
    free(a), free(b);
    synth_free(&s);
}

// ---- 8.4: Theorem 1 (single tile, Q K V exact, only P quantized) ----
static void test_theorem1(void) {
    struct synth s;
    synth_make(&s, 128, 2, 1, 64, 21);
    const int T = s.T, H = s.H, d = s.d;
    struct attn_call c = {.T = T, .r1 = T, .H = H, .Hkv = 1, .d = d, .sm = (float)(1.0 / sqrt((double)d)), .tile = 128,
                          .qdq_skip = ATTN_QDQ_SKIP_Q | ATTN_QDQ_SKIP_K | ATTN_QDQ_SKIP_V};
    size_t n = (size_t)T * H * d;
    float *mis = malloc(n * 4), *con = malloc(n * 4);
    double *pm = malloc(n * 8), *pc = malloc(n * 8);
    void *sc = malloc(attn_flash_scratch(&c));
    for (int st = 0; st < 2; st++) {
        // predictions in binary64 from the softmax weights P (binary32 exp(S - max S), or the
        // fp16 state's P) and Pq = qdq(P) in 64-key groups
        double P[128], Pq[128], o[256];
        float pf[128], pqf[128];
        for (int h = 0; h < H; h++)
            for (int i = 0; i < T; i++) {
                double S[128], mx = -INFINITY;
                for (int j = 0; j <= i; j++) {
                    double dot = 0;
                    for (int ch = 0; ch < d; ch++) dot += (double)s.q[((size_t)i * H + h) * d + ch] * s.k[(size_t)j * d + ch];
                    S[j] = (double)c.sm * dot;
                    mx = fmax(mx, S[j]);
                }
                // with the fp16 state the weights are the state's P = fp16(exp(S - fp16(max)))
                if (st) mx = round_fp16((float)mx);
                for (int j = 0; j < 128; j++)
                    pf[j] = j > i ? 0.0f : st ? round_fp16((float)exp(S[j] - mx)) : (float)exp(S[j] - mx);
                for (int u = 0; u < 128; u += 64) hif4_qdq_group(pqf + u, pf + u, 64, HIF4_RECIPE_NORMATIVE, NULL, NULL);
                double L = 0, Lq = 0;
                for (int j = 0; j <= i; j++) P[j] = pf[j], Pq[j] = pqf[j], L += P[j], Lq += Pq[j];
                double eps = Lq / L - 1;
                for (int ch = 0; ch < d; ch++) {
                    double num = 0;
                    for (int j = 0; j <= i; j++) num += P[j] * s.v[(size_t)j * d + ch];
                    o[ch] = num / L; // O*
                }
                for (int ch = 0; ch < d; ch++) {
                    double et = 0; // e_t = sum_j Pq_j (v_j - O*) / sum_j P_j
                    for (int j = 0; j <= i; j++) et += Pq[j] * (s.v[(size_t)j * d + ch] - o[ch]);
                    et /= L;
                    size_t idx = ((size_t)i * H + h) * d + ch;
                    pm[idx] = o[ch] + et + eps * o[ch];
                    pc[idx] = o[ch] + et / (1 + eps);
                }
            }
        unsigned base = ATTN_F_TILED | ATTN_F_QUANT | ATTN_FI_RAW_OUT | (st == 0 ? ATTN_FI_STATE_F32 : 0);
        attn_flash_forward(&(struct attn_operands){mis, s.q, s.k, s.v}, &c, 0, H, sc, base);
        attn_flash_forward(&(struct attn_operands){con, s.q, s.k, s.v}, &c, 0, H, sc, base | ATTN_F_PREORDER);
        double em = 0, ec = 0, nm = 0, nc = 0, sep = 0;
        for (size_t i = 0; i < n; i++) {
            em += (mis[i] - pm[i]) * (mis[i] - pm[i]), nm += pm[i] * pm[i];
            ec += (con[i] - pc[i]) * (con[i] - pc[i]), nc += pc[i] * pc[i];
            sep += (pm[i] - pc[i]) * (pm[i] - pc[i]);
        }
        double rm = sqrt(em / nm), rcn = sqrt(ec / nc), rsep = sqrt(sep / nc);
        double tol = st == 0 ? 1e-4 : 1.0 / 2048; // spec 8.4
        printf("theorem 1 (%s state): mismatched %.3g, consistent %.3g (the two formulas differ by %.3g)\n",
               st == 0 ? "binary32" : "fp16", rm, rcn, rsep);
        CHECK(rm <= tol, "Theorem 1 mismatched (%s state): rel-L2 %.3g > %g", st == 0 ? "f32" : "fp16", rm, tol);
        CHECK(rcn <= tol, "Theorem 1 consistent (%s state): rel-L2 %.3g > %g", st == 0 ? "f32" : "fp16", rcn, tol);
        // the test can tell the two normalizations apart
        CHECK(rsep > 3 * tol, "Theorem 1: formulas too close to discriminate (%.3g)", rsep);
    }
    free(mis), free(con), free(pm), free(pc), free(sc);
    synth_free(&s);
}

// ---- 8.5: batch composition and thread count do not change a sequence's outputs ----
static void test_batch_threads(void) {
    const int H = 4, Hkv = 2, d = 64, lens[3] = {150, 1, 77};
    struct synth s[3];
    for (int i = 0; i < 3; i++) synth_make(&s[i], lens[i], H, Hkv, d, 31 + i);
    // packed batch with padding rows: [seq2][pad 5][seq0][pad 3][seq1]
    const int order[3] = {2, 0, 1}, pad[3] = {5, 3, 0};
    int off[3], len[3], Ttot = 0;
    for (int b = 0; b < 3; b++) {
        off[b] = Ttot, len[b] = lens[order[b]];
        Ttot += len[b] + pad[b];
    }
    const char *modes[] = {"bf16", "direct", "hifa4", "direct+qmean+preorder"};
    for (int mi = 0; mi < 4; mi++) {
        float *alone[3];
        struct err e = {0};
        for (int i = 0; i < 3; i++) {
            alone[i] = malloc((size_t)lens[i] * H * d * 4);
            CHECK(run_mode(alone[i], &s[i], modes[mi], 64, 1, 0, 0, 0, &e) == 0, "%s", e.msg);
            // 4 threads on one sequence with 2 kv heads: the query heads of a group are split
            float *split = malloc((size_t)lens[i] * H * d * 4);
            CHECK(run_mode(split, &s[i], modes[mi], 64, 4, 0, 0, 0, &e) == 0, "%s", e.msg);
            CHECK(n_diff(split, alone[i], (size_t)lens[i] * H * d, NULL) == 0, "%s: head split changed results",
                  modes[mi]);
            free(split);
        }
        for (int threads = 1; threads <= 3; threads++) {
            size_t nq = (size_t)Ttot * H * d, nkv = (size_t)Ttot * Hkv * d;
            float *q = malloc(nq * 4), *k = malloc(nkv * 4), *v = malloc(nkv * 4), *out = malloc(nq * 4);
            for (size_t i = 0; i < nq; i++) q[i] = 1e30f, out[i] = NAN; // padding: garbage in, untouched out
            for (size_t i = 0; i < nkv; i++) k[i] = v[i] = -1e30f;
            for (int b = 0; b < 3; b++) {
                const struct synth *x = &s[order[b]];
                memcpy(q + (size_t)off[b] * H * d, x->q, (size_t)x->T * H * d * 4);
                memcpy(k + (size_t)off[b] * Hkv * d, x->k, (size_t)x->T * Hkv * d * 4);
                memcpy(v + (size_t)off[b] * Hkv * d, x->v, (size_t)x->T * Hkv * d * 4);
            }
            struct attn_opts o;
            attn_opts_default(&o);
            o.tile = 64, o.n_threads = threads;
            struct attn_ctx *ctx;
            // the scales of sequence 0 serve the whole batch (one layer's calibration)
            float *sc = s[0].scales;
            int rc = attn_ctx_init(&ctx, modes[mi], &o, &(struct attn_shape){1, H, Hkv, d, 200}, sc, &e);
            CHECK(rc == 0, "%s", e.msg);
            if (rc) continue;
            struct attn_layer l = {0, (float)(1.0 / sqrt(64.0)), 1.0 / sqrt(64.0), 0, 0};
            rc = attn_forward(ctx, &(struct attn_batch){3, off, len, NULL}, &(struct attn_io){out, q, k, v, NULL, NULL}, &l, &e);
            CHECK(rc == 0, "%s", e.msg);
            for (int b = 0; b < 3; b++) {
                int i = order[b];
                float *ref = alone[i];
                if (i != 0) { // alone[] used its own scales; rerun with the batch's scales
                    struct synth t = s[i];
                    t.scales = sc;
                    ref = malloc((size_t)lens[i] * H * d * 4);
                    run_mode(ref, &t, modes[mi], 64, 1, 0, 0, 0, &e);
                }
                size_t first = 0, nd = n_diff(out + (size_t)off[b] * H * d, ref, (size_t)lens[i] * H * d, &first);
                CHECK(nd == 0, "%s threads %d: sequence %d in batch differs from alone in %zu elements", modes[mi],
                      threads, i, nd);
                if (ref != alone[i]) free(ref);
                size_t pad0 = (size_t)(off[b] + len[b]) * H * d, pad1 = pad0 + (size_t)pad[b] * H * d;
                int untouched = 1;
                for (size_t j = pad0; j < pad1; j++) untouched &= isnan(out[j]) != 0;
                CHECK(untouched, "%s: padding rows after sequence %d written", modes[mi], b);
            }
            attn_ctx_free(ctx);
            free(q), free(k), free(v), free(out);
        }
        for (int i = 0; i < 3; i++) free(alone[i]);
    }
    for (int i = 0; i < 3; i++) synth_free(&s[i]);
}

// ---- 8.6: 64-aligned prefixes are exact, others are not (V groups start at position 0) ----
static void test_prefix(void) {
    struct synth s, p;
    synth_make(&s, 200, 2, 1, 64, 41);
    const char *modes[] = {"bf16", "direct", "hifa4"};
    for (int mi = 0; mi < 3; mi++)
        for (int plen = 100; plen <= 128; plen += 28) {
            p = s;
            p.T = plen;
            size_t n = (size_t)s.T * s.H * s.d, np = (size_t)plen * s.H * s.d;
            float *full = malloc(n * 4), *pre = malloc(np * 4);
            struct err e = {0};
            int rc = run_mode(full, &s, modes[mi], 128, 2, 0, 0, 0, &e) | run_mode(pre, &p, modes[mi], 128, 2, 0, 0, 0, &e);
            CHECK(rc == 0, "%s", e.msg);
            size_t nd = n_diff(pre, full, np, NULL);
            if (plen % 64 == 0 || mi == 0)
                CHECK(nd == 0, "%s prefix %d: %zu outputs depend on later tokens", modes[mi], plen, nd);
            else // the last V group of the prefix sees different tokens: outputs must change
                CHECK(nd > 0, "%s prefix %d: no output changed; V groups not anchored at position 0?", modes[mi], plen);
            free(full), free(pre);
        }
    synth_free(&s);
}

// ---- diagnostics: never change results; values match independent computations ----
static void test_diag(void) {
    struct synth s;
    synth_make(&s, 190, 4, 2, 128, 51);
    const char *modes[] = {"bf16", "hifa4", "direct"};
    for (int mi = 0; mi < 3; mi++) {
        size_t n = (size_t)s.T * s.H * s.d, nkv = (size_t)s.T * s.Hkv * s.d;
        float *plain = malloc(n * 4), *out = malloc(n * 4), *ref = malloc(n * 4);
        float *buf = malloc((n + 2 * nkv) * 4);
        struct err e = {0};
        CHECK(run_mode(plain, &s, modes[mi], 128, 2, 0, 0, 0, &e) == 0, "%s", e.msg);
        CHECK(run_mode(ref, &s, "f32", 128, 2, 0, 0, 0, &e) == 0, "%s", e.msg);
        struct attn_opts o;
        attn_opts_default(&o);
        o.diag = 1, o.n_threads = 2;
        struct attn_ctx *ctx;
        int rc = attn_ctx_init(&ctx, modes[mi], &o, &(struct attn_shape){2, s.H, s.Hkv, s.d, s.T}, NULL, &e);
        // hifa4 without scales is refused; give it the same scales for both layers
        float *sc2 = NULL;
        if (rc) {
            sc2 = malloc((size_t)2 * s.Hkv * s.d * 4);
            memcpy(sc2, s.scales, (size_t)s.Hkv * s.d * 4), memcpy(sc2 + s.Hkv * s.d, s.scales, (size_t)s.Hkv * s.d * 4);
            rc = attn_ctx_init(&ctx, modes[mi], &o, &(struct attn_shape){2, s.H, s.Hkv, s.d, s.T}, sc2, &e);
        }
        CHECK(rc == 0, "%s", e.msg);
        if (rc) continue;
        memcpy(buf, s.q, n * 4), memcpy(buf + n, s.k, nkv * 4), memcpy(buf + n + nkv, s.v, nkv * 4);
        int off = 0, len = s.T;
        struct attn_layer l = {1, (float)(1.0 / sqrt(128.0)), 1.0 / sqrt(128.0), 0, 0};
        rc = attn_forward(ctx, &(struct attn_batch){1, &off, &len, NULL}, &(struct attn_io){out, buf, buf + n, buf + n + nkv, NULL, NULL}, &l, &e);
        CHECK(rc == 0, "%s", e.msg);
        CHECK(n_diff(out, plain, n, NULL) == 0, "%s: diagnostics changed the output", modes[mi]);
        const struct attn_diag *dg = attn_ctx_diag(ctx);
        CHECK(dg != NULL, "no diagnostics");
        if (!dg) continue;
        const struct attn_diag_layer *L = &dg->layer[1];
        double rl = test_rel_l2(out, ref, n), num = 0, a2 = 0, b2 = 0;
        for (size_t i = 0; i < n; i++) num += (double)out[i] * ref[i], a2 += (double)out[i] * out[i], b2 += (double)ref[i] * ref[i];
        CHECK_CLOSE(L->rel_l2, rl, 0, 1e-9);
        CHECK_CLOSE(L->cosine, num / sqrt(a2 * b2), 0, 1e-12);
        CHECK(L->n == (int64_t)n && L->calls == 1 && dg->layer[0].calls == 0, "diag counts n %lld calls %lld",
              (long long)L->n, (long long)L->calls);
        // K max-abs after smoothing: bf16(k/s) with Smooth-QK, else k
        float km = 0;
        for (int t = 0; t < s.T; t++)
            for (int kh = 0; kh < s.Hkv; kh++)
                for (int c = 0; c < s.d; c++) {
                    float x = s.k[((size_t)t * s.Hkv + kh) * s.d + c];
                    if (mi == 1) x = round_bf16(x / s.scales[kh * s.d + c]);
                    km = fabsf(x) > km ? fabsf(x) : km;
                }
        CHECK(L->acc.k_maxabs == km, "%s: K max-abs %g, expected %g", modes[mi], L->acc.k_maxabs, km);
        int64_t tot = 0;
        for (int b = 0; b < ATTN_EPS_BINS + 2; b++) tot += L->acc.eps_hist[b];
        // (row, tile) pairs: rows 0..189 see tile 0, rows 128..189 also tile 1; x 4 heads
        int64_t want = mi == 0 ? 0 : (int64_t)(190 + 62) * 4;
        CHECK(tot == L->acc.eps_tiles && L->acc.eps_tiles == want, "%s: eps_bar tiles %lld (hist %lld), expected %lld",
              modes[mi], (long long)L->acc.eps_tiles, (long long)tot, (long long)want);
        if (mi > 0)
            CHECK(L->acc.eps_below_zero > 0 && L->acc.eps_below_zero < L->acc.eps_tiles && L->acc.eps_min < 0 &&
                      L->acc.eps_max > 0 && L->acc.eps_max < 0.2,
                  "%s: eps_bar below zero %lld of %lld, range [%g, %g]", modes[mi], (long long)L->acc.eps_below_zero,
                  (long long)L->acc.eps_tiles, L->acc.eps_min, L->acc.eps_max);
        if (mi > 0)
            printf("diag %s: rel-L2 vs f32 %.3g, cosine %.6f, eps_bar < 0 in %lld of %lld tiles, K max-abs %g\n",
                   modes[mi], L->rel_l2, L->cosine, (long long)L->acc.eps_below_zero, (long long)L->acc.eps_tiles,
                   L->acc.k_maxabs);
        attn_ctx_reset_stats(ctx);
        CHECK(attn_ctx_diag(ctx)->layer[1].calls == 0, "reset keeps diagnostics");
        attn_ctx_free(ctx);
        free(sc2), free(plain), free(out), free(ref), free(buf);
    }
    synth_free(&s);
}

// ---- scales files, option errors, the attn command ----
static void test_scales_and_errors(void) {
    const char *tmp = getenv("HIFA4_TMP") ? getenv("HIFA4_TMP") : "build/tmp";
    char path[512];
    snprintf(path, sizeof path, "%s/test_attn_scales.safetensors", tmp);
    float sc[2 * 2 * 64];
    for (int i = 0; i < 256; i++) sc[i] = 0.5f + (float)i / 256;
    struct st_wtensor t = {"smooth_qk.scales", ST_F32, 3, {2, 2, 64}, sc};
    struct err e = {0};
    float *got = NULL;
    // no hash in the file: accepted
    CHECK(st_write(path, &t, 1, NULL, 0, &e) == 0, "%s", e.msg);
    int rc = attn_scales_load(&got, path, 2, 2, 64, "abc", &e);
    CHECK(rc == 0 && got && !memcmp(got, sc, sizeof sc), "load without hash: %s", e.msg);
    free(got), got = NULL;
    // shape mismatch names both shapes
    rc = attn_scales_load(&got, path, 3, 2, 64, NULL, &e);
    CHECK(rc == ERR_MISMATCH && strstr(e.msg, "[2, 2, 64]") && strstr(e.msg, "[3, 2, 64]") && !got, "shape: %s", e.msg);
    // hash: equal accepted, different refused, empty accepted
    const char *meta[] = {"model_hash", "abc"};
    CHECK(st_write(path, &t, 1, meta, 1, &e) == 0, "%s", e.msg);
    CHECK(attn_scales_load(&got, path, 2, 2, 64, "abc", &e) == 0, "%s", e.msg);
    free(got), got = NULL;
    rc = attn_scales_load(&got, path, 2, 2, 64, "def", &e);
    CHECK(rc == ERR_MISMATCH && strstr(e.msg, "abc") && strstr(e.msg, "def"), "hash: %s", e.msg);
    const char *meta0[] = {"model_hash", ""};
    st_write(path, &t, 1, meta0, 1, &e);
    CHECK(attn_scales_load(&got, path, 2, 2, 64, "def", &e) == 0, "empty hash: %s", e.msg);
    free(got), got = NULL;
    // wrong dtype, missing tensor, bad value
    struct st_wtensor t16 = {"smooth_qk.scales", ST_BF16, 3, {2, 2, 64}, sc};
    st_write(path, &t16, 1, NULL, 0, &e);
    CHECK(attn_scales_load(&got, path, 2, 2, 32, NULL, &e) < 0 && strstr(e.msg, "F32"), "dtype: %s", e.msg);
    struct st_wtensor tn = {"other", ST_F32, 3, {2, 2, 64}, sc};
    st_write(path, &tn, 1, NULL, 0, &e);
    CHECK(attn_scales_load(&got, path, 2, 2, 64, NULL, &e) == ERR_NOTFOUND, "missing: %s", e.msg);
    // a scale that is not finite, not positive, or so large (or small) that the scaled Q or K
    // overflows is refused naming layer, kv head and channel (a file of 1e38 was
    // accepted and every hifa4 item scored NaN)
    const float bad_vals[] = {0, -1, NAN, INFINITY, 1e38f, 1e-38f, 0x1p65f};
    for (size_t k = 0; k < sizeof bad_vals / sizeof bad_vals[0]; k++) {
        sc[70] = bad_vals[k];
        st_write(path, &t, 1, NULL, 0, &e);
        rc = attn_scales_load(&got, path, 2, 2, 64, NULL, &e);
        CHECK(rc == ERR_RANGE && strstr(e.msg, "layer 0, kv head 1, channel 6") && !got, "scale %g: rc %d: %s",
              (double)bad_vals[k], rc, e.msg);
    }
    sc[70] = 0x1p64f; // the bound itself is accepted
    st_write(path, &t, 1, NULL, 0, &e);
    CHECK(attn_scales_load(&got, path, 2, 2, 64, NULL, &e) == 0, "2^64: %s", e.msg);
    free(got), got = NULL;
    sc[70] = 0.5f;
    // the golden calibration scales of qwen3-tiny (3 layers, 2 kv heads, d 128)
    const char *gs = TEST_NEED("goldens/logits/qwen3-tiny.safetensors");
    if (gs) {
        rc = attn_scales_load(&got, gs, 3, 2, 128, "x", &e);
        CHECK(rc == 0 && got, "golden scales: %s", e.msg);
        free(got), got = NULL;
    }

    // context errors
    struct attn_ctx *ctx = NULL;
    struct attn_opts o;
    attn_opts_default(&o);
    o.tile = 96;
    CHECK(attn_ctx_init(&ctx, "bf16", &o, &(struct attn_shape){1, 4, 2, 64, 10}, NULL, &e) == ERR_USAGE && strstr(e.msg, "96"), "%s", e.msg);
    o.tile = 128;
    CHECK(attn_ctx_init(&ctx, "hifa4", &o, &(struct attn_shape){1, 4, 2, 64, 10}, NULL, &e) == ERR_USAGE && strstr(e.msg, "scales"), "%s", e.msg);
    CHECK(attn_ctx_init(&ctx, "hifa5", &o, &(struct attn_shape){1, 4, 2, 64, 10}, NULL, &e) == ERR_USAGE && strstr(e.msg, "direct+qmean+sqk"),
          "%s", e.msg);
    int v = -1;
    CHECK(attn_parse_vgroup("channel", &v, &e) == 0 && v == ATTN_VGROUP_CHANNEL, "v-group");
    CHECK(attn_parse_qformat("hif4-a6", &v, &e) == 0 && v == ATTN_QFORMAT_HIF4_A6, "qformat");
    CHECK(attn_parse_qformat("hif8", &v, &e) == ERR_USAGE, "qformat error");
    CHECK(attn_mode_count() == 10, "10 modes registered, got %d", attn_mode_count());

    // `hifa4-eval attn` on a golden case reproduces the golden bit for bit
    const char *bin = getenv("HIFA4_BIN");
    if (!bin) return;
    const char *case0 = golden_case(0), *case1 = golden_case(1);
    if (!case0 || !case1) return;
    char cmd[2048], out[512];
    snprintf(out, sizeof out, "%s/test_attn_out.safetensors", tmp);
    snprintf(cmd, sizeof cmd, "%s --quiet attn --case %s --attn direct+qmean+preorder --tile 64 --threads 2 --out %s",
             bin, case1, out);
    CHECK(system(cmd) == 0, "%s", cmd);
    struct safetensors a, b;
    if (!st_open(&a, out, &e)) {
        if (!st_open(&b, case1, &e)) {
            const struct st_tensor *x = st_find(&a, "out"), *y = st_find(&b, "out.direct+qmean+preorder.bc64");
            CHECK(x && y && x->nbytes == y->nbytes && !memcmp(x->data, y->data, x->nbytes), "attn command output differs");
            st_close(&b);
        }
        st_close(&a);
    } else CHECK(0, "%s", e.msg);
    // the format options reach the kernel: output equals the library run with the same options
    snprintf(cmd, sizeof cmd, "%s --quiet attn --case %s --attn hifa4 --tile 128 --v-group channel --qformat hif4-a6 --out %s",
             bin, case0, out);
    CHECK(system(cmd) == 0, "%s", cmd);
    struct attn_case gc;
    if (!attn_case_load(&gc, case0, &e) && !st_open(&a, out, &e)) {
        size_t n = (size_t)gc.T * gc.H * gc.d;
        float *lib = malloc(n * 4), *cli = malloc(n * 4);
        struct attn_opts ao;
        attn_opts_default(&ao);
        ao.v_group = ATTN_VGROUP_CHANNEL, ao.qformat = ATTN_QFORMAT_HIF4_A6;
        const struct st_tensor *x = st_find(&a, "out");
        CHECK(x && (size_t)x->numel == n && !st_to_f32(cli, x, &e) && !attn_case_run(lib, &gc, "hifa4", &ao, &e) &&
                  n_diff(cli, lib, n, NULL) == 0,
              "attn --v-group channel --qformat hif4-a6: output differs from the library run");
        float *def = malloc(n * 4);
        attn_opts_default(&ao);
        attn_case_run(def, &gc, "hifa4", &ao, &e);
        CHECK(n_diff(def, lib, n, NULL) > 0, "--v-group channel / --qformat hif4-a6 changed nothing");
        free(lib), free(cli), free(def);
        st_close(&a);
        attn_case_free(&gc);
    } else CHECK(0, "%s", e.msg);
    snprintf(cmd, sizeof cmd, "%s --quiet attn --case %s --attn nope --out %s 2>/dev/null", bin, case1, out);
    int st = system(cmd);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2, "unknown mode: exit %d, want 2", WEXITSTATUS(st));
    snprintf(cmd, sizeof cmd, "%s --quiet attn --case %s --attn bf16 --tile 100 --out %s 2>/dev/null", bin,
             case1, out);
    st = system(cmd);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2, "bad tile: exit %d, want 2", WEXITSTATUS(st));
    snprintf(cmd, sizeof cmd, "%s --quiet attn --case /nonexistent.safetensors --attn bf16 --out %s 2>/dev/null", bin, out);
    st = system(cmd);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1, "missing case: exit %d, want 1", WEXITSTATUS(st));
}

int main(void) {
    test_goldens();
    test_fp16_round();
    test_exp_bf16();
    test_fast_vs_ref();
    test_ref_fast();
    test_identity_and_f32();
    test_tile_size();
    test_theorem1();
    test_batch_threads();
    test_prefix();
    test_diag();
    test_scales_and_errors();
    return test_summary("test_attention");
}
