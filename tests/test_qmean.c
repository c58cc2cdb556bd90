// test_qmean.c: Q-Mean in its channel form `qmean-ch` (spec/attention.md section 4):
// the fast kernel (flash.c) against the literal scalar reference (flash_ref.c) bit for bit over
// tiles, partial last tiles, GQA, lengths, head dims and every mode with Q-Mean; the reference's
// scores against the spec's formulas recomputed here; the algebraic identity with every qdq
// skipped (scores within a stated rounding bound, outputs like invariant 8.1); query tiles
// aligned to position 0 of each sequence (prefixes, batches); the run options
// (attn_opts.qmean / qdq_skip) and the `attn` command. The token form's goldens are
// test_attention's.
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "attention/attn.h"
#include "attention/case.h"
#include "attention/hif4.h"
#include "attention/modes.h"
#include "io/safetensors.h"
#include "results/results.h"
#include "rng.h"
#include "test.h"

static const char *bin, *tmp; // $HIFA4_BIN (NULL: command tests skipped), $HIFA4_TMP

// ---- test data ----
// The one place this file reads test data ($HIFA4_TEST_DATA, default ../shared, or the committed
// fixtures): path of rel, or NULL after a counted skip naming it (test.h TEST_NEED).
static const char *shared_path(const char *rel) { return TEST_NEED("%s", rel); }

#define F_Q4 (ATTN_F_ROUND_INPUT | ATTN_F_TILED | ATTN_F_QUANT)
#define F_CH ATTN_F_QMEAN_CH
// the modes with Q-Mean (paper Table 7 rows B-E) by flags
static const struct { const char *name; unsigned flags; } qmean_modes[4] = {
    {"direct+qmean", F_Q4 | ATTN_F_QMEAN},
    {"direct+qmean+sqk", F_Q4 | ATTN_F_QMEAN | ATTN_F_SQK},
    {"direct+qmean+preorder", F_Q4 | ATTN_F_QMEAN | ATTN_F_PREORDER},
    {"hifa4", F_Q4 | ATTN_F_QMEAN | ATTN_F_SQK | ATTN_F_PREORDER},
};

static size_t n_diff(const float *a, const float *b, size_t n, size_t *first) {
    size_t nd = 0;
    for (size_t i = 0; i < n; i++)
        if (!(a[i] == b[i]) && !(isnan(a[i]) && isnan(b[i]))) {
            if (!nd && first) *first = i;
            nd++;
        }
    return nd;
}

// ---- deterministic synthetic inputs ----

struct synth {
    int T, H, Hkv, d;
    float *q, *k, *v, *scales; // bf16-valued inputs
};
// Q with a per-channel offset (what the channel form removes and the token form cannot), K with
// an outlier channel, V random; Smooth-QK scales sqrt(max|K|) / sqrt(max|Q|) per kv head and channel.
static void synth_make(struct synth *s, int T, int H, int Hkv, int d, uint64_t seed) {
    rng_seed(seed);
    s->T = T, s->H = H, s->Hkv = Hkv, s->d = d;
    size_t nq = (size_t)T * H * d, nkv = (size_t)T * Hkv * d;
    s->q = malloc(nq * 4), s->k = malloc(nkv * 4), s->v = malloc(nkv * 4), s->scales = malloc((size_t)Hkv * d * 4);
    int oc = d > 51 ? 51 : d / 2;
    for (size_t i = 0; i < nq; i++) s->q[i] = round_bf16(1.2f * nrand() + 2.5f * sinf(0.37f * (float)(i % d)));
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

// a registered mode through attn_forward (the model's path) on one sequence, inputs copied
static int run_mode(float *out, const struct synth *s, const char *mode, const struct attn_opts *o, int window,
                    float softcap, struct err *e) {
    size_t nq = (size_t)s->T * s->H * s->d, nkv = (size_t)s->T * s->Hkv * s->d;
    float *buf = malloc((nq + 2 * nkv) * 4);
    memcpy(buf, s->q, nq * 4), memcpy(buf + nq, s->k, nkv * 4), memcpy(buf + nq + nkv, s->v, nkv * 4);
    struct attn_ctx *ctx;
    int rc = attn_ctx_init(&ctx, mode, o, &(struct attn_shape){1, s->H, s->Hkv, s->d, s->T}, s->scales, e);
    if (!rc) {
        int off = 0, len = s->T;
        struct attn_layer l = {0, (float)(1.0 / sqrt((double)s->d)), 1.0 / sqrt((double)s->d), softcap, window};
        for (size_t i = 0; i < nq; i++) out[i] = NAN;
        rc = attn_forward(ctx, &(struct attn_batch){1, &off, &len, NULL}, &(struct attn_io){out, buf, buf + nq, buf + nq + nkv, NULL, NULL}, &l, e);
        attn_ctx_free(ctx);
    }
    free(buf);
    return rc;
}

static struct attn_opts opts_of(int tile, int qmean, unsigned skip, int threads) {
    struct attn_opts o;
    attn_opts_default(&o);
    o.tile = tile, o.qmean = qmean, o.qdq_skip = skip, o.n_threads = threads;
    return o;
}

// ---- fast == literal reference, bit for bit ----
// Shapes: partial last tiles (T not a multiple of 64/128), T < one tile, T = 1, GQA 1..4 query
// heads per kv head, head dims 16..200 (not multiples of 64 too), windows, soft-cap; tiles 64,
// 128 and 192; every mode with Q-Mean in the channel form, plus the token form and no Q-Mean on
// the same shapes. Variants: default; V per channel + A6 recipe; qdq of K and P skipped; a head range.
static void test_fast_vs_ref(void) {
    static const struct { int T, H, Hkv, d, window, tile; float cap; } shapes[] = {
        {1, 2, 1, 64, 0, 64, 0},      {63, 2, 1, 64, 0, 64, 0},     {64, 4, 2, 32, 0, 64, 0},
        {65, 4, 1, 16, 0, 64, 0},     {127, 3, 1, 80, 0, 128, 0},   {128, 2, 2, 128, 0, 128, 0},
        {129, 4, 2, 64, 0, 128, 0},   {200, 4, 2, 128, 0, 128, 0},  {200, 4, 2, 128, 0, 64, 0},
        {77, 2, 1, 64, 32, 64, 0},    {260, 3, 3, 80, 100, 128, 30}, {130, 4, 2, 32, 0, 64, 10},
        {150, 6, 2, 96, 0, 192, 0},   {129, 2, 2, 200, 70, 64, 0},  {300, 8, 2, 64, 0, 128, 0},
    };
    const int n_shapes = (int)(sizeof shapes / sizeof shapes[0]);
    int n_bad = 0, n_runs = 0, n_ch = 0;
    size_t n_elems = 0;
    for (int si = 0; si < n_shapes; si++) {
        struct synth s;
        synth_make(&s, shapes[si].T, shapes[si].H, shapes[si].Hkv, shapes[si].d, 300 + si);
        struct attn_call c = {.T = s.T, .r1 = s.T, .H = s.H, .Hkv = s.Hkv, .d = s.d, .sm = (float)(1.0 / sqrt((double)s.d)),
                              .softcap = shapes[si].cap, .window = shapes[si].window, .tile = shapes[si].tile,
                              .qmean = ATTN_QMEAN_CHANNEL, .scales = s.scales};
        size_t n = (size_t)s.T * s.H * s.d;
        float *a = malloc(n * 4), *b = malloc(n * 4);
        void *sa = malloc(attn_flash_scratch(&c)), *sb = malloc(attn_flash_ref_scratch(&c));
        for (int fi = 0; fi < 6; fi++)
            for (int var = 0; var < 4; var++) {
                // fi 0..3: the four Q-Mean modes, channel form; 4: hifa4 token form; 5: direct
                unsigned flags = fi < 4 ? qmean_modes[fi].flags | F_CH : fi == 4 ? qmean_modes[3].flags : F_Q4;
                if (fi >= 4 && var > 1) continue;
                c.v_group = var == 1 ? ATTN_VGROUP_CHANNEL : ATTN_VGROUP_TOKEN;
                c.qformat = var == 1 ? ATTN_QFORMAT_HIF4_A6 : ATTN_QFORMAT_HIF4;
                c.qdq_skip = var == 2 ? ATTN_QDQ_SKIP_P | ATTN_QDQ_SKIP_K : 0;
                int h0 = var == 3 ? 1 : 0, h1 = var == 3 ? s.H - (s.H > 2) : s.H;
                for (size_t i = 0; i < n; i++) a[i] = b[i] = NAN;
                attn_flash_forward(&(struct attn_operands){a, s.q, s.k, s.v}, &c, h0, h1, sa, flags);
                attn_flash_ref_forward(&(struct attn_operands){b, s.q, s.k, s.v}, &c, h0, h1, sb, flags);
                size_t first = 0, nd = n_diff(a, b, n, &first);
                n_runs++;
                n_ch += (flags & F_CH) != 0;
                n_elems += (size_t)s.T * (size_t)(h1 - h0) * (size_t)s.d;
                if (nd && n_bad++ < 5)
                    CHECK(nd == 0, "T=%d H=%d Hkv=%d d=%d tile %d flags 0x%x variant %d: %zu of %zu differ, first [%zu] "
                          "fast %.9g ref %.9g", s.T, s.H, s.Hkv, s.d, c.tile, flags, var, nd, n, first, a[first], b[first]);
                int untouched = 1; // rows of heads outside [h0, h1) are left alone
                for (int t = 0; t < s.T; t++)
                    for (int h = 0; h < s.H; h++)
                        if ((h < h0 || h >= h1) && !isnan(a[((size_t)t * s.H + h) * s.d])) untouched = 0;
                CHECK(untouched, "shape %d: heads outside [%d,%d) written", si, h0, h1);
            }
        free(a), free(b), free(sa), free(sb);
        synth_free(&s);
    }
    CHECK(n_bad == 0, "%d of %d fast-vs-reference runs differ", n_bad, n_runs);
    printf("fast == literal reference: %d of %d runs bit-identical (%d in the channel form), %zu output elements\n",
           n_runs - n_bad, n_runs, n_ch, n_elems);
}

// ---- the registered modes (attn_forward with attn_opts.qmean) run what the reference runs ----
static void test_registered_modes(void) {
    struct synth s;
    synth_make(&s, 170, 4, 2, 64, 7);
    size_t n = (size_t)s.T * s.H * s.d;
    float *a = malloc(n * 4), *b = malloc(n * 4), *tok = malloc(n * 4);
    struct attn_call c = {.T = s.T, .r1 = s.T, .H = s.H, .Hkv = s.Hkv, .d = s.d, .sm = (float)(1.0 / sqrt(64.0)), .tile = 128,
                          .qmean = ATTN_QMEAN_CHANNEL, .scales = s.scales};
    void *sb = malloc(attn_flash_ref_scratch(&c)); // sized for the largest tile below
    struct err e = {0};
    for (int mi = 0; mi < 4; mi++)
        for (int tile = 64; tile <= 128; tile += 64) {
            struct attn_opts o = opts_of(tile, ATTN_QMEAN_CHANNEL, 0, 2);
            CHECK(run_mode(a, &s, qmean_modes[mi].name, &o, 0, 0, &e) == 0, "%s", e.msg);
            c.tile = tile;
            attn_flash_ref_forward(&(struct attn_operands){b, s.q, s.k, s.v}, &c, 0, s.H, sb, qmean_modes[mi].flags | F_CH);
            CHECK(n_diff(a, b, n, NULL) == 0, "%s --qmean channel --tile %d: attn_forward differs from the reference",
                  qmean_modes[mi].name, tile);
            o.qmean = ATTN_QMEAN_TOKEN;
            CHECK(run_mode(tok, &s, qmean_modes[mi].name, &o, 0, 0, &e) == 0, "%s", e.msg);
            size_t nd = n_diff(a, tok, n, NULL);
            CHECK(nd > n / 2, "%s tile %d: channel and token forms differ in only %zu of %zu outputs", qmean_modes[mi].name,
                  tile, nd, n);
        }
    // the form does not touch modes without Q-Mean
    struct attn_opts o = opts_of(64, ATTN_QMEAN_CHANNEL, 0, 2), ot = opts_of(64, ATTN_QMEAN_TOKEN, 0, 2);
    CHECK(run_mode(a, &s, "direct", &o, 0, 0, &e) == 0 && run_mode(b, &s, "direct", &ot, 0, 0, &e) == 0 &&
              n_diff(a, b, n, NULL) == 0,
          "--qmean channel changed mode direct");
    // ATTN_F_QMEAN_CH alone (without ATTN_F_QMEAN) is no Q-Mean
    void *sa = malloc(attn_flash_scratch(&c));
    attn_flash_forward(&(struct attn_operands){a, s.q, s.k, s.v}, &c, 0, s.H, sa, F_Q4 | F_CH);
    attn_flash_forward(&(struct attn_operands){b, s.q, s.k, s.v}, &c, 0, s.H, sa, F_Q4);
    CHECK(n_diff(a, b, n, NULL) == 0, "ATTN_F_QMEAN_CH without ATTN_F_QMEAN changed the output");
    // attn_mode_run_flags: the bit on Q-Mean modes under the channel form only
    CHECK(attn_mode_run_flags(attn_mode_find("hifa4"), ATTN_QMEAN_CHANNEL) == (qmean_modes[3].flags | F_CH) &&
              attn_mode_run_flags(attn_mode_find("hifa4"), ATTN_QMEAN_TOKEN) == qmean_modes[3].flags &&
              attn_mode_run_flags(attn_mode_find("direct"), ATTN_QMEAN_CHANNEL) == F_Q4,
          "attn_mode_run_flags");
    free(a), free(b), free(tok), free(sa), free(sb);
    synth_free(&s);
}

// ---- the reference's scores == the spec's formulas, recomputed here independently ----
// mu_c = fp16(f32(sum_{i in tile} qs_ic) / n), qx = qdq(qs - mu), delta_j = fp16(sm * f32(sum_c
// f32(mu_c ks_jc))), S = f32(f32(sm * dot(qx, qdq(ks))) + delta_j) (revision 2); Smooth-QK on, a window and a partial
// last tile (T = 150, tile 64: tiles [0,64), [64,128), [128,150)).
static void test_scores_spec(void) {
    struct synth s;
    const int T = 150, H = 4, Hkv = 2, d = 96, tile = 64, W = 90;
    synth_make(&s, T, H, Hkv, d, 11);
    struct attn_call c = {.T = T, .r1 = T, .H = H, .Hkv = Hkv, .d = d, .sm = (float)(1.0 / sqrt((double)d)), .window = W,
                          .tile = tile, .qmean = ATTN_QMEAN_CHANNEL, .scales = s.scales};
    void *sc = malloc(attn_flash_ref_scratch(&c));
    float *S = malloc((size_t)T * 4), *qs = malloc((size_t)T * d * 4), *ks = malloc((size_t)T * d * 4);
    float *kx = malloc((size_t)T * d * 4), mu[96], qx[96];
    const unsigned flags = qmean_modes[3].flags | F_CH;
    size_t bad = 0, n = 0;
    for (int h = 0; h < H; h++) {
        const int kh = h / (H / Hkv);
        const float *sk = s.scales + (size_t)kh * d;
        for (int j = 0; j < T; j++)
            for (int ch = 0; ch < d; ch++) {
                ks[(size_t)j * d + ch] = round_bf16(s.k[((size_t)j * Hkv + kh) * d + ch] / sk[ch]);
                qs[(size_t)j * d + ch] = round_bf16(s.q[((size_t)j * H + h) * d + ch] * sk[ch]);
            }
        for (int j = 0; j < T; j++) { // kx = qdq(ks) per row: groups of 64 + 32 (zero-padded tail)
            memcpy(kx + (size_t)j * d, ks + (size_t)j * d, (size_t)d * 4);
            hif4_qdq(kx + (size_t)j * d, kx + (size_t)j * d, d, HIF4_RECIPE_NORMATIVE);
        }
        for (int i = 0; i < T; i++) {
            const int ts = i / tile * tile, te = ts + tile < T ? ts + tile : T;
            for (int ch = 0; ch < d; ch++) {
                float sum = 0;
                for (int r = ts; r < te; r++) sum += qs[(size_t)r * d + ch];
                mu[ch] = round_fp16(sum / (float)(te - ts));
                qx[ch] = qs[(size_t)i * d + ch] - mu[ch];
            }
            hif4_qdq(qx, qx, d, HIF4_RECIPE_NORMATIVE);
            attn_flash_ref_scores(S, &(struct attn_operands){NULL, s.q, s.k, NULL}, &c, h, i, sc, flags);
            for (int j = 0; j < T; j++) {
                float want = -INFINITY;
                if (j <= i && i - j < W) {
                    float dot = 0, dl = 0;
                    for (int ch = 0; ch < d; ch++) dot += qx[ch] * kx[(size_t)j * d + ch];
                    for (int ch = 0; ch < d; ch++) dl += mu[ch] * ks[(size_t)j * d + ch];
                    want = c.sm * dot + round_fp16(c.sm * dl);
                }
                n++;
                if (f32_bits(want) != f32_bits(S[j]) && bad++ < 3)
                    fprintf(stderr, "h %d i %d j %d: reference %.9g, spec %.9g\n", h, i, j, S[j], want);
            }
        }
    }
    CHECK(bad == 0, "%zu of %zu channel-form scores differ from the spec's formulas", bad, n);
    printf("scores: the reference equals the spec's formulas on %zu of %zu (row, key) pairs\n", n - bad, n);
    free(S), free(qs), free(ks), free(kx), free(sc);
    synth_free(&s);
}

// ---- revision 2: the correction is scaled by sm before its fp16 rounding ----
// Q with a channel mean of ~40 and K with a band of 8 channels near 300 (what Qwen2.5-Coder-1.5B's
// layer 0 has): the unscaled sum_c mu_c ks_jc is ~96,000, above fp16's 65,504, which made
// revision 1's delta +inf and the output NaN; sm * sum (~8,500 at d = 128) is finite. The fast
// kernel equals the reference bit for bit and every output is finite.
static void test_correction_range(void) {
    const int T = 100, H = 2, Hkv = 1, d = 128;
    struct synth s;
    synth_make(&s, T, H, Hkv, d, 5);
    for (int t = 0; t < T; t++) {
        for (int ch = 0; ch < d; ch++) s.q[((size_t)t * H) * d + ch] = s.q[((size_t)t * H + 1) * d + ch] = round_bf16(40.0f + (float)(ch % 3));
        for (int ch = 56; ch < 64; ch++) s.k[(size_t)t * d + ch] = round_bf16(300.0f + (float)(t % 7));
    }
    const size_t n = (size_t)T * H * d;
    float *a = malloc(n * 4), *b = malloc(n * 4);
    struct attn_call c = {.T = T, .r1 = T, .H = H, .Hkv = Hkv, .d = d, .sm = (float)(1.0 / sqrt((double)d)), .tile = 64,
                          .qmean = ATTN_QMEAN_CHANNEL};
    double sum = 0;
    for (int ch = 0; ch < d; ch++) sum += (double)s.q[ch] * s.k[ch];
    CHECK(sum > 65504 && c.sm * sum < 65504, "test case: unscaled correction %.0f should overflow fp16, scaled %.0f not", sum, c.sm * sum);
    void *sa = malloc(attn_flash_scratch(&c)), *sb = malloc(attn_flash_ref_scratch(&c));
    attn_flash_forward(&(struct attn_operands){a, s.q, s.k, s.v}, &c, 0, H, sa, F_Q4 | ATTN_F_QMEAN | F_CH);
    attn_flash_ref_forward(&(struct attn_operands){b, s.q, s.k, s.v}, &c, 0, H, sb, F_Q4 | ATTN_F_QMEAN | F_CH);
    size_t nonfinite = 0;
    for (size_t i = 0; i < n; i++) nonfinite += !isfinite(a[i]);
    CHECK(nonfinite == 0, "channel form with a correction sum of %.0f: %zu of %zu outputs not finite", sum, nonfinite, n);
    CHECK(n_diff(a, b, n, NULL) == 0, "channel form, large correction: fast kernel differs from the reference");
    printf("revision 2: correction sum %.0f (> 65,504), sm * sum %.0f: %zu outputs finite, fast == reference\n", sum,
           c.sm * sum, n);
    free(a), free(b), free(sa), free(sb);
    synth_free(&s);
}

// ---- the algebraic identity: with every qdq skipped the scores are the unquantized ones ----
// Channel form (revision 2): S' = sm * dot(qs - mu, ks) + fp16(sm * sum_c mu_c ks_c); token form:
// S' = sm * (dot(qs - mu, ks) + fp16(mu) * fp16(kappa)); against S = sm * dot(qs, ks) in binary64
// (exact up to 2^-53: bf16 products are exact in binary64). With u = 2^-24 and gamma_n =
// n u / (1 - n u) (Higham, sequential sums), A = sum_c |qs_c - mu_c| |ks_c|, M = sum_c |mu_c ks_c|,
// D = |sum_c mu_c ks_c|:
//   qz_c = f32(qs_c - mu_c) and the binary32 dot over d terms:     gamma_{d+1} A
//   the binary32 sum of delta over d products:                     gamma_d M
//   delta rounded to fp16 (spec): half an fp16 ulp, relative 2^-11, plus 2^-25 subnormal spacing
//   (channel form: of sm * sum, so the 2^-25 is absolute, not scaled by sm)
//   dot + delta and sm * (.) in binary32:                          u (A + M) sm + u |S|
// so |S' - S| <= sm (gamma_{d+1} A + gamma_d M + 2^-11 (D + gamma_d M) + u (A + M)) + 2^-25 s + u |S|,
// with s = 1 in the channel form and s = sm in the token form,
// up to second-order terms (factor 1 + 1e-6). Everything but the fp16 term is binary32
// rounding; the fp16 rounding of delta_j is the spec's own and usually dominates. The token
// form is bounded the same way with its fp16(mu) * fp16(kappa) correction (two fp16 roundings).
static double gam(int n) { return n * 0x1p-24 / (1 - n * 0x1p-24); }

static void identity_scores(const struct synth *s, int tile, int channel, double *worst_ratio, double *fp16_share,
                            size_t *n_bad, size_t *n_scores) {
    const int T = s->T, H = s->H, d = s->d;
    struct attn_call c = {.T = T, .r1 = T, .H = H, .Hkv = s->Hkv, .d = d, .sm = (float)(1.0 / sqrt((double)d)), .tile = tile,
                          .qdq_skip = ATTN_QDQ_SKIP_ALL};
    void *sc = malloc(attn_flash_ref_scratch(&c));
    float *S = malloc((size_t)T * 4), *mu = malloc((size_t)d * 4);
    const double u = 0x1p-24, sm = c.sm;
    for (int h = 0; h < H; h++) {
        const float *kb = s->k + (size_t)(h / (H / s->Hkv)) * d;
        for (int i = 0; i < T; i++) {
            const float *qi = s->q + ((size_t)i * H + h) * d;
            // the mean as the spec forms it (only the bound needs it; any mu satisfies the identity)
            const int ts = i / tile * tile, te = ts + tile < T ? ts + tile : T;
            float tmu = 0;
            if (channel)
                for (int ch = 0; ch < d; ch++) {
                    float sum = 0;
                    for (int r = ts; r < te; r++) sum += s->q[((size_t)r * H + h) * d + ch];
                    mu[ch] = round_fp16(sum / (float)(te - ts));
                }
            else {
                float sum = 0;
                for (int ch = 0; ch < d; ch++) sum += qi[ch];
                tmu = round_fp16(sum / (float)d);
                for (int ch = 0; ch < d; ch++) mu[ch] = tmu;
            }
            attn_flash_ref_scores(S, &(struct attn_operands){NULL, s->q, s->k, NULL}, &c, h, i, sc, F_Q4 | ATTN_F_QMEAN | (channel ? F_CH : 0));
            for (int j = 0; j <= i; j++) {
                const float *kj = kb + (size_t)j * s->Hkv * d;
                double exact = 0, A = 0, M = 0, D = 0, K1 = 0, kap = 0;
                for (int ch = 0; ch < d; ch++) {
                    exact += (double)qi[ch] * kj[ch];
                    A += fabs((double)qi[ch] - mu[ch]) * fabs(kj[ch]);
                    M += fabs((double)mu[ch] * kj[ch]);
                    D += (double)mu[ch] * kj[ch];
                    K1 += fabs(kj[ch]);
                    kap += kj[ch];
                }
                exact *= sm;
                double fp16_term = channel ? 0x1p-11 * (fabs(D) + gam(d) * M)
                                           : 2 * 0x1p-11 * fabs(tmu) * (fabs(kap) + gam(d) * K1) * (1 + 0x1p-11);
                double sum_term = channel ? gam(d) * M : fabs(tmu) * gam(d) * K1;
                double bound = (1 + 1e-6) * (sm * (gam(d + 1) * A + sum_term + fp16_term + u * (A + M)) +
                                             0x1p-25 * (channel ? 1 : sm) + u * fabs(exact));
                double err = fabs((double)S[j] - exact), ratio = err / bound;
                if (ratio > *worst_ratio) *worst_ratio = ratio;
                double share = sm * fp16_term / bound;
                if (share > *fp16_share) *fp16_share = share;
                (*n_scores)++;
                if (err > bound && (*n_bad)++ < 3)
                    fprintf(stderr, "%s h %d i %d j %d: |S' - S| = %.3g > bound %.3g\n", channel ? "channel" : "token",
                            h, i, j, err, bound);
            }
        }
    }
    free(S), free(mu), free(sc);
}

static void test_identity(void) {
    // scores: two shapes (GQA, partial last tile, d not a multiple of 64) and both tiles
    static const struct { int T, H, Hkv, d, tile; } shapes[] = {{150, 4, 2, 128, 64}, {150, 4, 2, 128, 128},
                                                                {97, 3, 1, 80, 64}};
    for (int form = 1; form >= 0; form--) {
        double worst = 0, share = 0;
        size_t bad = 0, n = 0;
        for (int si = 0; si < 3; si++) {
            struct synth s;
            synth_make(&s, shapes[si].T, shapes[si].H, shapes[si].Hkv, shapes[si].d, 40 + si);
            identity_scores(&s, shapes[si].tile, form, &worst, &share, &bad, &n);
            synth_free(&s);
        }
        CHECK(bad == 0, "%s form, every qdq skipped: %zu of %zu scores outside the rounding bound", form ? "channel" : "token",
              bad, n);
        printf("identity (%s form, every qdq skipped): %zu scores within the bound, largest |S'-S| / bound = %.3f "
               "(the fp16 rounding of the correction is up to %.0f%% of a bound)\n",
               form ? "channel" : "token", n, worst, 100 * share);
    }
    // outputs (invariant 8.1 for the channel form): identity-qdq Q-Mean modes vs identity-qdq direct
    const char *path = shared_path("goldens/attention/attn-t200-h4-kv2-d128.safetensors");
    for (int ci = 0; ci < 2; ci++) {
        struct synth s;
        struct attn_case gc = {0};
        struct err e = {0};
        if (ci == 0) {
            if (!path || attn_case_load(&gc, path, &e)) { CHECK(!path, "%s", e.msg); continue; }
            s = (struct synth){gc.T, gc.H, gc.Hkv, gc.d, gc.q, gc.k, gc.v, gc.scales};
        } else {
            synth_make(&s, 190, 4, 2, 128, 9);
        }
        size_t n = (size_t)s.T * s.H * s.d;
        float *dir = malloc(n * 4), *o = malloc(n * 4);
        for (int tile = 64; tile <= 128; tile += 64) {
            struct attn_opts od = opts_of(tile, ATTN_QMEAN_TOKEN, ATTN_QDQ_SKIP_ALL, 2);
            CHECK(run_mode(dir, &s, "direct", &od, 0, 0, &e) == 0, "%s", e.msg);
            for (int mi = 0; mi < 4; mi++) {
                struct attn_opts oc = opts_of(tile, ATTN_QMEAN_CHANNEL, ATTN_QDQ_SKIP_ALL, 2);
                CHECK(run_mode(o, &s, qmean_modes[mi].name, &oc, 0, 0, &e) == 0, "%s", e.msg);
                const int sqk = (qmean_modes[mi].flags & ATTN_F_SQK) != 0;
                double r = test_rel_l2(o, dir, n), bound = sqk ? 1e-2 : 2e-3; // spec 8.1
                CHECK(r <= bound, "%s case %d tile %d: identity-qdq channel form vs direct rel-L2 %.3g > %g",
                      qmean_modes[mi].name, ci, tile, r, bound);
                if (tile == 128) printf("8.1 channel form, case %d: identity-qdq %-22s vs direct rel-L2 %.3g (bound %g)\n",
                                        ci, qmean_modes[mi].name, r, bound);
            }
        }
        free(dir), free(o);
        if (ci == 0) attn_case_free(&gc);
        else synth_free(&s);
    }
}

// ---- query tiles start at position 0 of each sequence ----
// A prefix that ends on a multiple of the tile has the same outputs alone as inside the longer
// sequence (its tiles and their means are the same); a 64-aligned prefix that ends inside a
// 128-row tile does not (the tile's mean changes), while the token form keeps 8.6's 64 rule.
static void test_prefix(void) {
    struct synth s, p;
    synth_make(&s, 300, 2, 1, 64, 51);
    size_t n = (size_t)s.T * s.H * s.d;
    float *full = malloc(n * 4), *pre = malloc(n * 4);
    struct err e = {0};
    static const struct { int tile, plen, qmean, exact; } cases[] = {
        {128, 128, ATTN_QMEAN_CHANNEL, 1}, {128, 256, ATTN_QMEAN_CHANNEL, 1}, {64, 192, ATTN_QMEAN_CHANNEL, 1},
        {128, 192, ATTN_QMEAN_CHANNEL, 0}, {128, 64, ATTN_QMEAN_CHANNEL, 0},  {128, 192, ATTN_QMEAN_TOKEN, 1},
    };
    for (int k = 0; k < 6; k++) {
        p = s;
        p.T = cases[k].plen;
        struct attn_opts o = opts_of(cases[k].tile, cases[k].qmean, 0, 2);
        int rc = run_mode(full, &s, "hifa4", &o, 0, 0, &e) | run_mode(pre, &p, "hifa4", &o, 0, 0, &e);
        CHECK(rc == 0, "%s", e.msg);
        size_t nd = n_diff(pre, full, (size_t)p.T * s.H * s.d, NULL);
        if (cases[k].exact)
            CHECK(nd == 0, "%s form, tile %d, prefix %d: %zu outputs depend on later tokens",
                  attn_qmean_name(cases[k].qmean), cases[k].tile, cases[k].plen, nd);
        else
            CHECK(nd > 0, "channel form, tile %d, prefix %d: no output changed; are query tiles aligned to position 0?",
                  cases[k].tile, cases[k].plen);
    }
    free(full), free(pre);
    synth_free(&s);
}

// ---- a sequence's tiles are its own: packed batches, padding and threads change no bit ----
static void test_batch(void) {
    const int H = 4, Hkv = 2, d = 64, lens[3] = {150, 1, 77}, order[3] = {2, 0, 1}, pad[3] = {5, 3, 0};
    struct synth s[3];
    for (int i = 0; i < 3; i++) synth_make(&s[i], lens[i], H, Hkv, d, 61 + i);
    for (int i = 1; i < 3; i++) memcpy(s[i].scales, s[0].scales, (size_t)Hkv * d * 4); // one layer's scales
    int off[3], len[3], Ttot = 0;
    for (int b = 0; b < 3; b++) off[b] = Ttot, len[b] = lens[order[b]], Ttot += len[b] + pad[b];
    struct err e = {0};
    for (int threads = 1; threads <= 3; threads += 2) {
        struct attn_opts o = opts_of(64, ATTN_QMEAN_CHANNEL, 0, threads);
        size_t nq = (size_t)Ttot * H * d, nkv = (size_t)Ttot * Hkv * d;
        float *q = malloc(nq * 4), *k = malloc(nkv * 4), *v = malloc(nkv * 4), *out = malloc(nq * 4);
        for (size_t i = 0; i < nq; i++) q[i] = 1e30f, out[i] = NAN;
        for (size_t i = 0; i < nkv; i++) k[i] = v[i] = -1e30f;
        for (int b = 0; b < 3; b++) {
            const struct synth *x = &s[order[b]];
            memcpy(q + (size_t)off[b] * H * d, x->q, (size_t)x->T * H * d * 4);
            memcpy(k + (size_t)off[b] * Hkv * d, x->k, (size_t)x->T * Hkv * d * 4);
            memcpy(v + (size_t)off[b] * Hkv * d, x->v, (size_t)x->T * Hkv * d * 4);
        }
        struct attn_ctx *ctx;
        int rc = attn_ctx_init(&ctx, "hifa4", &o, &(struct attn_shape){1, H, Hkv, d, 200}, s[0].scales, &e);
        CHECK(rc == 0, "%s", e.msg);
        if (rc) continue;
        struct attn_layer l = {0, (float)(1.0 / sqrt(64.0)), 1.0 / sqrt(64.0), 0, 0};
        CHECK(attn_forward(ctx, &(struct attn_batch){3, off, len, NULL}, &(struct attn_io){out, q, k, v, NULL, NULL}, &l, &e) == 0, "%s", e.msg);
        for (int b = 0; b < 3; b++) {
            int i = order[b];
            float *alone = malloc((size_t)lens[i] * H * d * 4);
            CHECK(run_mode(alone, &s[i], "hifa4", &o, 0, 0, &e) == 0, "%s", e.msg);
            size_t nd = n_diff(out + (size_t)off[b] * H * d, alone, (size_t)lens[i] * H * d, NULL);
            CHECK(nd == 0, "threads %d: sequence %d at batch row %d differs from alone in %zu elements", threads, i, off[b], nd);
            free(alone);
        }
        attn_ctx_free(ctx);
        free(q), free(k), free(v), free(out);
    }
    for (int i = 0; i < 3; i++) synth_free(&s[i]);
}

// ---- options: parsing, attn_opts.qdq_skip == the test hook, the `attn` command ----
static void test_options(void) {
    struct err e = {0};
    int q = -1;
    unsigned m = 99;
    CHECK(attn_parse_qmean("channel", &q, &e) == 0 && q == ATTN_QMEAN_CHANNEL, "qmean channel");
    CHECK(attn_parse_qmean("token", &q, &e) == 0 && q == ATTN_QMEAN_TOKEN, "qmean token");
    CHECK(attn_parse_qmean("chan", &q, &e) == ERR_USAGE && strstr(e.msg, "chan") && strstr(e.msg, "token"), "%s", e.msg);
    CHECK(!strcmp(attn_qmean_name(ATTN_QMEAN_CHANNEL), "channel") && !strcmp(attn_qmean_name(ATTN_QMEAN_TOKEN), "token"),
          "qmean names");
    CHECK(attn_parse_qdq_skip("p", &m, &e) == 0 && m == ATTN_QDQ_SKIP_P, "qdq-skip p");
    CHECK(attn_parse_qdq_skip("v,q,k,p", &m, &e) == 0 && m == ATTN_QDQ_SKIP_ALL, "qdq-skip all");
    CHECK(attn_parse_qdq_skip("none", &m, &e) == 0 && m == 0, "qdq-skip none");
    CHECK(attn_parse_qdq_skip("k,k", &m, &e) == ERR_USAGE && strstr(e.msg, "twice"), "%s", e.msg);
    CHECK(attn_parse_qdq_skip("q,x", &m, &e) == ERR_USAGE && strstr(e.msg, "'x'"), "%s", e.msg);
    CHECK(attn_parse_qdq_skip("", &m, &e) == ERR_USAGE, "empty list");
    CHECK(attn_parse_qdq_skip("q,", &m, &e) == ERR_USAGE, "trailing comma");
    CHECK(attn_parse_qdq_skip("qk", &m, &e) == ERR_USAGE, "no separator");
    CHECK(!strcmp(attn_qdq_skip_name(0), "none") && !strcmp(attn_qdq_skip_name(ATTN_QDQ_SKIP_K | ATTN_QDQ_SKIP_P), "k,p") &&
              !strcmp(attn_qdq_skip_name(ATTN_QDQ_SKIP_ALL), "q,k,v,p"),
          "qdq-skip names");
    for (unsigned k = 0; k < 16; k++) { // every name parses back to its mask
        unsigned back = 99;
        CHECK(attn_parse_qdq_skip(attn_qdq_skip_name(k), &back, &e) == 0 && back == k, "round trip %u: %s", k, e.msg);
    }
    struct attn_ctx *ctx = NULL;
    struct attn_opts bad = opts_of(128, 7, 0, 1);
    CHECK(attn_ctx_init(&ctx, "direct", &bad, &(struct attn_shape){1, 2, 1, 64, 10}, NULL, &e) == ERR_USAGE, "Q-Mean form 7 accepted");
    bad = opts_of(128, ATTN_QMEAN_TOKEN, 0x10, 1);
    CHECK(attn_ctx_init(&ctx, "direct", &bad, &(struct attn_shape){1, 2, 1, 64, 10}, NULL, &e) == ERR_USAGE, "qdq skip 0x10 accepted");

    // the option runs what the test hook runs; skipping P changes the output
    struct synth s;
    synth_make(&s, 140, 2, 1, 64, 71);
    size_t n = (size_t)s.T * s.H * s.d;
    float *a = malloc(n * 4), *b = malloc(n * 4);
    struct attn_opts o = opts_of(64, ATTN_QMEAN_CHANNEL, ATTN_QDQ_SKIP_Q | ATTN_QDQ_SKIP_K | ATTN_QDQ_SKIP_V, 2);
    CHECK(run_mode(a, &s, "hifa4", &o, 0, 0, &e) == 0, "%s", e.msg);
    struct attn_call c = {.T = s.T, .r1 = s.T, .H = s.H, .Hkv = s.Hkv, .d = s.d, .sm = (float)(1.0 / 8.0), .tile = 64,
                          .qmean = ATTN_QMEAN_CHANNEL, .scales = s.scales, .qdq_skip = o.qdq_skip};
    void *sb = malloc(attn_flash_ref_scratch(&c));
    attn_flash_ref_forward(&(struct attn_operands){b, s.q, s.k, s.v}, &c, 0, s.H, sb, qmean_modes[3].flags | F_CH);
    CHECK(n_diff(a, b, n, NULL) == 0, "attn_opts.qdq_skip differs from the reference with the same skip");
    o.qdq_skip = ATTN_QDQ_SKIP_ALL;
    CHECK(run_mode(b, &s, "hifa4", &o, 0, 0, &e) == 0 && n_diff(a, b, n, NULL) > 0, "skipping P changed nothing");
    free(a), free(b), free(sb);
    synth_free(&s);

    // `hifa4-eval attn --qmean channel --qdq-skip ...` equals the library run; bad values exit 2
    if (!bin) { TEST_SKIP("the attn command: HIFA4_BIN unset"); return; }
    const char *cpath = shared_path("goldens/attention/attn-t77-h2-kv1-d64-w32.safetensors");
    if (!cpath) return;
    char cmd[2048], out[512];
    snprintf(out, sizeof out, "%s/test_qmean_out.safetensors", tmp);
    snprintf(cmd, sizeof cmd, "%s --quiet attn --case %s --attn direct+qmean+preorder --tile 64 --qmean channel "
             "--qdq-skip v --out %s", bin, cpath, out);
    CHECK(system(cmd) == 0, "%s", cmd);
    struct attn_case gc;
    struct safetensors st;
    if (!attn_case_load(&gc, cpath, &e) && !st_open(&st, out, &e)) {
        size_t ng = (size_t)gc.T * gc.H * gc.d;
        float *lib = malloc(ng * 4), *cli = malloc(ng * 4);
        struct attn_opts ao = opts_of(64, ATTN_QMEAN_CHANNEL, ATTN_QDQ_SKIP_V, 0);
        const struct st_tensor *x = st_find(&st, "out");
        CHECK(x && (size_t)x->numel == ng && !st_to_f32(cli, x, &e) &&
                  !attn_case_run(lib, &gc, "direct+qmean+preorder", &ao, &e) && n_diff(cli, lib, ng, NULL) == 0,
              "attn --qmean channel --qdq-skip v: output differs from the library run");
        const char *meta = st_meta(&st, "qmean"), *skip = st_meta(&st, "qdq_skip");
        CHECK(meta && !strcmp(meta, "channel") && skip && !strcmp(skip, "v"), "attn output metadata qmean %s qdq_skip %s",
              meta ? meta : "(none)", skip ? skip : "(none)");
        free(lib), free(cli);
        st_close(&st);
        attn_case_free(&gc);
    } else {
        CHECK(0, "%s", e.msg);
    }
    const char *bad_args[] = {"--qmean mean", "--qdq-skip q,z", "--qdq-skip p,p"};
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "%s --quiet attn --case %s --attn hifa4 %s --out %s 2>/dev/null", bin, cpath,
                 bad_args[i], out);
        int stt = system(cmd);
        CHECK(WIFEXITED(stt) && WEXITSTATUS(stt) == 2, "attn %s: exit %d, want 2", bad_args[i], WEXITSTATUS(stt));
    }
}

// ---- a run in each form: run.json, the configuration key, resume/merge, reports, tables ----

static char *slurp(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *slurp(const char *fmt, ...) {
    char path[4096], *b = NULL;
    size_t n;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(path, sizeof path, fmt, ap);
    va_end(ap);
    struct err e = {0};
    return file_read_all(path, &b, &n, &e) ? NULL : b;
}

static cJSON *run_json(const char *dir) {
    char *t = slurp("%s/run.json", dir);
    cJSON *j = t ? cJSON_Parse(t) : NULL;
    free(t);
    return j;
}

static const char *jpath(const cJSON *j, const char *a, const char *b, const char *c) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, a);
    if (b) x = cJSON_GetObjectItemCaseSensitive(x, b);
    if (c) x = cJSON_GetObjectItemCaseSensitive(x, c);
    return cJSON_IsString(x) ? x->valuestring : "";
}

static int files_equal(const char *a, const char *b) {
    char *x = slurp("%s", a), *y = slurp("%s", b);
    int same = x && y && !strcmp(x, y);
    free(x), free(y);
    return same;
}

static void test_run_forms(void) {
    if (!bin) { TEST_SKIP("runs: HIFA4_BIN unset"); return; }
    char model[1024], task[1024], tok[1024], ch[1024], args[4096];
    snprintf(model, sizeof model, "%s/qm_model", tmp);
    snprintf(task, sizeof task, "%s/qm_items.jsonl", tmp);
    snprintf(tok, sizeof tok, "%s/qm_token", tmp);
    snprintf(ch, sizeof ch, "%s/qm_channel", tmp);
    // 12 four-choice items (the model is random: only the comparisons between modes matter)
    FILE *f = fopen(task, "w");
    for (int i = 0; f && i < 12; i++)
        fprintf(f, "{\"question\": \"Item %d: which word comes after number %d in the list?\", \"choices\": [\"apple\", "
                   "\"river stone\", \"blue\", \"seven and a half\"], \"answer\": %d, \"id\": \"q%d\"}\n", i, 3 * i, i % 4, i);
    if (f) fclose(f);
    CHECK(test_sh("rm -rf %s %s %s && %s --quiet make-model --arch qwen3 --layers 2 --dim 128 --heads 4 --kv-heads 2 --head-dim 64 "
             "--ffn 256 --out %s > /dev/null", model, tok, ch, bin, model) == 0, "make-model");
    snprintf(args, sizeof args, "--model %s --task mc_jsonl --task-file %s --threads 2 --tile 64", model, task);
    // one command per form: every mode (the ones with Smooth-QK are skipped without scales)
    CHECK(test_sh("%s --quiet run %s --attn all --out %s > /dev/null 2>&1", bin, args, tok) == 0, "run --attn all (token)");
    CHECK(test_sh("%s --quiet run %s --attn all --qmean channel --out %s > /dev/null 2>&1", bin, args, ch) == 0,
          "run --attn all --qmean channel");
    cJSON *jt = run_json(tok), *jc = run_json(ch);
    CHECK(jt && jc, "run.json of both runs");
    if (!jt || !jc) { cJSON_Delete(jt); cJSON_Delete(jc); return; }
    CHECK(!strcmp(jpath(jc, "attention", "qmean", NULL), "channel") && !strcmp(jpath(jt, "attention", "qmean", NULL), "token") &&
              !strcmp(jpath(jc, "attention", "qdq_skip", NULL), "none"),
          "run.json attention.qmean / qdq_skip");
    CHECK(!strcmp(jpath(jc, "attention", "display", "direct+qmean"), "direct+qmean (channel)") &&
              !strcmp(jpath(jt, "attention", "display", "direct+qmean+preorder"), "direct+qmean+preorder (token)") &&
              !strcmp(jpath(jc, "attention", "display", "direct"), "direct"),
          "display names: %s / %s", jpath(jc, "attention", "display", "direct+qmean"),
          jpath(jt, "attention", "display", "direct+qmean+preorder"));
    // the cost counts follow the form
    const cJSON *ct = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(jt, "cost_counts"), "direct+qmean"), "vector_ops");
    const cJSON *cc = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(jc, "cost_counts"), "direct+qmean"), "vector_ops");
    const cJSON *gt = cJSON_GetObjectItem(ct, "qmean_gemv"), *gc = cJSON_GetObjectItem(cc, "qmean_gemv");
    CHECK(cJSON_IsNumber(gt) && gt->valuedouble == 0 && cJSON_IsNumber(gc) && gc->valuedouble > 0,
          "run.json cost counts: qmean_gemv token %g, channel %g", gt ? gt->valuedouble : -1, gc ? gc->valuedouble : -1);
    // modes without Q-Mean give byte-identical samples in both runs; modes with Q-Mean do not
    const char *same_modes[] = {"bf16", "f32", "direct"}, *diff_modes[] = {"direct+qmean", "direct+qmean+preorder"};
    char pa[2048], pb[2048];
    for (int i = 0; i < 3; i++) {
        snprintf(pa, sizeof pa, "%s/samples-mc_jsonl-%s.jsonl.zst", tok, same_modes[i]);
        snprintf(pb, sizeof pb, "%s/samples-mc_jsonl-%s.jsonl.zst", ch, same_modes[i]);
        CHECK(files_equal(pa, pb), "%s: samples differ between the forms", same_modes[i]);
    }
    for (int i = 0; i < 2; i++) {
        snprintf(pa, sizeof pa, "%s/samples-mc_jsonl-%s.jsonl.zst", tok, diff_modes[i]);
        snprintf(pb, sizeof pb, "%s/samples-mc_jsonl-%s.jsonl.zst", ch, diff_modes[i]);
        CHECK(!files_equal(pa, pb), "%s: the channel form scored exactly like the token form", diff_modes[i]);
    }
    // the configuration key: the form is part of it; defaults and names are not (older run.json keep their key)
    char k1[65], k2[65];
    results_config_key(k1, jt, 1);
    CHECK(!strcmp(k1, jpath(jt, "resume_key", NULL, NULL)), "resume_key is results_config_key");
    cJSON *at = cJSON_GetObjectItem(jt, "attention");
    cJSON_DeleteItemFromObject(at, "qmean"), cJSON_DeleteItemFromObject(at, "qdq_skip"), cJSON_DeleteItemFromObject(at, "display");
    results_config_key(k2, jt, 1);
    CHECK(!strcmp(k1, k2), "a token run's key without the new fields (an older run.json) is unchanged");
    CHECK(!strcmp(results_run_qmean(jt), "token") && !strcmp(results_run_qmean(jc), "channel"), "results_run_qmean");
    results_config_key(k1, jc, 1);
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(jc, "attention"), "qmean");
    results_config_key(k2, jc, 1);
    CHECK(strcmp(k1, k2), "the channel form is part of the key");
    cJSON_Delete(jt), cJSON_Delete(jc);
    // one form per run directory: --resume with the other form is refused, naming it
    char log[1200];
    snprintf(log, sizeof log, "%s/qm_resume.txt", tmp);
    CHECK(test_sh("%s --quiet run %s --attn all --out %s --resume > %s 2>&1", bin, args, ch, log) == 1,
          "--resume of a channel run with the token form refused");
    char *txt = slurp("%s", log);
    CHECK(txt && strstr(txt, "--qmean channel") && strstr(txt, "--qmean token"), "message names both forms: %s", txt ? txt : "");
    free(txt);
    CHECK(test_sh("%s --quiet run %s --attn all --qmean channel --out %s --resume > /dev/null 2>&1", bin, args, ch) == 0,
          "--resume with the same form");
    // reports and tables say which form rows B-E are
    char *md = slurp("%s/report.md", ch);
    CHECK(md && strstr(md, "| direct+qmean (channel) |") && strstr(md, "Q-Mean form **channel**") &&
              strstr(md, "`direct+qmean+preorder (channel)`"),
          "report.md labels the channel form");
    free(md);
    CHECK(test_sh("%s tables %s %s > %s/qm_tables.md 2> /dev/null", bin, tok, ch, tmp) == 0, "tables over both forms");
    md = slurp("%s/qm_tables.md", tmp);
    CHECK(md && strstr(md, "| B. +Q-Mean | - | - |") && strstr(md, "| B. +Q-Mean (channel) | - | - |") &&
              strstr(md, "| D. +P-Reordering (channel) | - |") && strstr(md, "Q-Mean, token form)") &&
              strstr(md, "Q-Mean, channel form)"),
          "tables rows B-E name their form:\n%s", md ? md : "");
    free(md);
    CHECK(test_sh("%s diff %s:direct+qmean %s:direct+qmean > %s/qm_diff.txt 2>&1", bin, tok, ch, tmp) == 0, "diff across forms");
    md = slurp("%s/qm_diff.txt", tmp);
    CHECK(md && strstr(md, "(A: direct+qmean (token))") && strstr(md, "(B: direct+qmean (channel))"), "diff names the forms: %.300s",
          md ? md : "");
    free(md);
    // shards of different forms do not merge
    CHECK(test_sh("rm -rf %s/qm_s0 %s/qm_s1 %s/qm_m && %s --quiet run %s --attn bf16,direct+qmean --qmean channel --shard 0/2 "
             "--out %s/qm_s0 > /dev/null 2>&1 && %s --quiet run %s --attn bf16,direct+qmean --shard 1/2 --out %s/qm_s1 > /dev/null 2>&1",
             tmp, tmp, tmp, bin, args, tmp, bin, args, tmp) == 0, "two shards");
    CHECK(test_sh("%s --quiet merge %s/qm_s0 %s/qm_s1 --out %s/qm_m > %s 2>&1", bin, tmp, tmp, tmp, log) == 1, "merge of two forms refused");
    txt = slurp("%s", log);
    CHECK(txt && strstr(txt, "--qmean"), "merge message names the form: %s", txt ? txt : "");
    free(txt);
    // --qdq-skip: recorded, named; a bad list is a usage error
    CHECK(test_sh("rm -rf %s/qm_skip && %s --quiet run %s --attn bf16,direct --qdq-skip p --out %s/qm_skip > /dev/null 2>&1", tmp, bin,
             args, tmp) == 0, "run --qdq-skip p");
    snprintf(pa, sizeof pa, "%s/qm_skip", tmp);
    cJSON *js = run_json(pa);
    CHECK(js && !strcmp(jpath(js, "attention", "qdq_skip", NULL), "p") &&
              !strcmp(jpath(js, "attention", "display", "direct"), "direct [qdq-skip p]"),
          "run.json qdq_skip p, display 'direct [qdq-skip p]'");
    cJSON_Delete(js);
    CHECK(test_sh("%s --quiet run %s --attn bf16,direct --qdq-skip p,x --out %s/qm_bad 2> /dev/null", bin, args, tmp) == 2, "--qdq-skip p,x exits 2");
    CHECK(test_sh("%s --quiet run %s --qmean rows --out %s/qm_bad 2> /dev/null", bin, args, tmp) == 2, "--qmean rows exits 2");
    // logits --qmean: the form reaches the model, and is recorded
    CHECK(test_sh("%s --quiet logits --model %s --ids 1,2,3,4,5,6,7,8,9,10 --attn direct+qmean --out %s/qm_lt.safetensors && "
             "%s --quiet logits --model %s --ids 1,2,3,4,5,6,7,8,9,10 --attn direct+qmean --qmean channel --out %s/qm_lc.safetensors",
             bin, model, tmp, bin, model, tmp) == 0, "logits in both forms");
    struct safetensors a, b;
    struct err e = {0};
    snprintf(pa, sizeof pa, "%s/qm_lt.safetensors", tmp);
    snprintf(pb, sizeof pb, "%s/qm_lc.safetensors", tmp);
    if (!st_open(&a, pa, &e)) {
        if (!st_open(&b, pb, &e)) {
            const struct st_tensor *x = st_find(&a, "logits"), *y = st_find(&b, "logits");
            const char *qa = st_meta(&a, "qmean"), *qb = st_meta(&b, "qmean");
            CHECK(x && y && x->nbytes == y->nbytes && memcmp(x->data, y->data, x->nbytes) && qa && qb && !strcmp(qa, "token") &&
                      !strcmp(qb, "channel"),
                  "logits --qmean channel differ from the token form and say so");
            st_close(&b);
        }
        st_close(&a);
    } else CHECK(0, "%s", e.msg);
}

int main(void) {
    bin = getenv("HIFA4_BIN");
    tmp = getenv("HIFA4_TMP") && getenv("HIFA4_TMP")[0] ? getenv("HIFA4_TMP") : "build/tmp";
    mkdir_p(tmp, NULL);
    test_run_forms();
    test_fast_vs_ref();
    test_registered_modes();
    test_scores_spec();
    test_correction_range();
    test_identity();
    test_prefix();
    test_batch();
    test_options();
    return test_summary("test_qmean");
}
