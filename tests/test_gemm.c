// test_gemm.c: bit-exactness of every available ISA path of gemm_run against gemm_ref (the
// literal fmaf chain), for random shapes, strides, column ranges, thread counts, block
// shapes and special values; packing from bf16/f16 equal to packing their f32 values
// (exhaustive over all 65536 codes); row invariance (a row's bits do not depend on the
// batch it is in); argument errors and ISA selection. Ends with "N passed, M failed".
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "model/gemm.h"
#include "model/gemm_internal.h"
#include "test.h"

// ---- random data ----
static unsigned long long rng = 0x9e3779b97f4a7c15ull;
static unsigned long long next(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}
static int irand(int lo, int hi) { return lo + (int)(next() % (unsigned long long)(hi - lo + 1)); } // [lo, hi]
static float frand(void) { return (float)((double)(next() >> 11) * (2.0 / 9007199254740992.0) - 1.0); }

// bf16 value near 2^e: +-(1 + m/128) * 2^e, m random; e below -126 gives a bf16 subnormal.
static float bf16_near(int e) {
    const float v = ldexpf(1.0f + (float)(next() % 128) / 128.0f, e);
    return (next() & 1) ? -v : v;
}
// special: 0 = plain values; 1 = sprinkle NaN, +-Inf, +-0, subnormals, huge values; 2 = the
// dp contract's edges: bf16 values whose products lie around 2^-126 (partial sums cancel into
// and out of the subnormal range), bf16 subnormals, zeros and a few ordinary values.
static float value(int special) {
    if (special == 2) {
        const int c = (int)(next() % 64);
        if (c < 4) return gemm_float((uint32_t)(next() & 0x807f0000u)); // bf16 subnormal (or +-0)
        if (c < 6) return (next() & 1) ? -0.0f : 0.0f;
        if (c < 7) return bf16_near(irand(-3, 3)); // rare: one such product hides the rest
        return bf16_near(irand(-66, -62));
    }
    if (special && next() % 16 == 0) {
        switch (next() % 8) {
        case 0: return NAN;
        case 1: return (next() & 1) ? INFINITY : -INFINITY;
        case 2: return -0.0f;
        case 3: return 0.0f;
        case 4: return gemm_float((uint32_t)(next() & 0x807fffffu)); // subnormal (or +-0)
        case 5: return (next() & 1) ? 3e38f : -3e38f;               // overflowing products
        case 6: return frand() * 1e-30f;                             // subnormal products
        default: return gemm_float(0x7f800001u | (uint32_t)(next() & 0x3fffffu)); // NaN payloads
        }
    }
    // a spread of magnitudes makes rounding matter at every step
    return frand() * ldexpf(1.0f, irand(-6, 6));
}
static void fill(float *a, size_t n, int special) {
    for (size_t i = 0; i < n; i++) a[i] = value(special);
}

static const char *isas[4];
// The packed format of one_case (set by the caller: the F32 cases keep their old signature).
static enum gemm_fmt case_fmt = GEMM_FMT_F32;
static const char *const fmt_name[] = {"f32", "bf16", "dp"};
// y = the reference of format fmt: the fmaf chain on w (rounded to bf16 for GEMM_FMT_BF16) or
// the dp contract.
static void ref_fmt(enum gemm_fmt fmt, const struct gemm_io *io, const float *w, int N, int K) {
    if (fmt == GEMM_FMT_BF16_DP) {
        gemm_ref_dp(io, w, (size_t)K, N, K);
        return;
    }
    float *wr = malloc(((size_t)N * K + 1) * 4);
    for (size_t i = 0; i < (size_t)N * K; i++) wr[i] = fmt == GEMM_FMT_BF16 ? gemm_float(gemm_bf16_bits(w[i])) : w[i];
    gemm_ref(io, wr, (size_t)K, N, K);
    free(wr);
}
static int n_isas;

// First differing element of two arrays, or -1.
static long first_diff(const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (gemm_bits(a[i]) != gemm_bits(b[i])) return (long)i;
    return -1;
}

// ---- one random case ----
// Computes columns [n0, n1) of an (M, N, K) product with strides ldx/ldy on every ISA and
// thread count, into NaN-sentinel buffers, and compares whole buffers with the reference.
static void one_case(int M, int N, int K, int special, int mc, int pc, int kc) {
    const size_t ldx = (size_t)K + (next() % 3 ? 0 : (size_t)irand(1, 5));
    const size_t ldy = (size_t)N + (next() % 3 ? 0 : (size_t)irand(1, 5));
    int n0 = 0, n1 = N;
    if (next() % 3 == 0) n0 = irand(0, N), n1 = irand(n0, N);
    const int use_bias = next() % 2, bf16 = next() % 2;
    float *x = malloc(((size_t)M * ldx + 1) * 4), *w = malloc(((size_t)N * K + 1) * 4), *b = malloc(((size_t)N + 1) * 4);
    float *ref = malloc(((size_t)M * ldy + 1) * 4), *full = malloc(((size_t)M * N + 1) * 4),
          *y = malloc(((size_t)M * ldy + 1) * 4);
    fill(x, (size_t)M * ldx, special), fill(w, (size_t)N * K, special), fill(b, (size_t)N, special);
    const float sentinel = gemm_float(0x7fbadbadu);
    for (size_t i = 0; i < (size_t)M * ldy; i++) ref[i] = sentinel;
    ref_fmt(case_fmt, &(struct gemm_io){full, (size_t)N, x, ldx, M, use_bias ? b : NULL, bf16}, w, N, K);
    for (int m = 0; m < M; m++) memcpy(ref + (size_t)m * ldy + n0, full + (size_t)m * N + n0, (size_t)(n1 - n0) * 4);
    gemm_set_blocking(mc, pc, 0);
    gemm_set_kc(kc);
    for (int s = 0; s < n_isas; s++) {
        gemm_isa_set(isas[s]);
        struct gemm_w pw;
        int rc = gemm_pack(&pw, case_fmt, &(struct gemm_mat){w, GEMM_SRC_F32, (size_t)K, N, K}, irand(1, 3));
        CHECK(rc == 0, "pack rc %d", rc);
        for (int nt = 1; nt <= 4; nt++) {
            for (size_t i = 0; i < (size_t)M * ldy; i++) y[i] = sentinel;
            rc = gemm_run(&(struct gemm_io){y, ldy, x, ldx, M, use_bias ? b : NULL, bf16}, &pw, n0, n1, nt);
            long d = first_diff(y, ref, (size_t)M * ldy);
            CHECK(rc == 0 && d < 0,
                  "%s %s t=%d M=%d N=%d K=%d ldx=%zu ldy=%zu cols [%d,%d) bias %d bf16 %d special %d blk %d,%d,%d: "
                  "rc %d, element %ld (row %ld col %ld) got %08x ref %08x",
                  isas[s], fmt_name[case_fmt], nt, M, N, K, ldx, ldy, n0, n1, use_bias, bf16, special, mc, pc, kc, rc, d,
                  d < 0 ? -1 : d / (long)ldy, d < 0 ? -1 : d % (long)ldy, d < 0 ? 0 : gemm_bits(y[d]),
                  d < 0 ? 0 : gemm_bits(ref[d]));
        }
        // the task interface: every block once, in a shuffled order, equals gemm_run
        struct gemm_plan pl;
        for (size_t i = 0; i < (size_t)M * ldy; i++) y[i] = sentinel;
        rc = gemm_plan_init(&pl, &(struct gemm_io){y, ldy, x, ldx, M, use_bias ? b : NULL, bf16}, &pw, n0, n1);
        int order[4096], nt = pl.n_tasks < 4096 ? pl.n_tasks : 0;
        for (int t = 0; t < nt; t++) order[t] = t;
        for (int t = nt - 1; t > 0; t--) {
            int u = irand(0, t), v = order[t];
            order[t] = order[u], order[u] = v;
        }
        for (int t = 0; t < nt; t++) gemm_plan_task(&pl, order[t]);
        long d = first_diff(y, ref, (size_t)M * ldy);
        CHECK(rc == 0 && pl.n_tasks == nt && d < 0, "%s plan (%d tasks, shuffled) M=%d N=%d K=%d: element %ld",
              isas[s], pl.n_tasks, M, N, K, d);
        gemm_w_free(&pw);
    }
    gemm_set_blocking(0, 0, -1);
    gemm_set_kc(0);
    free(x), free(w), free(b), free(ref), free(full), free(y);
}

static const int primes[] = {1, 2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73,
                             79, 83, 89, 97, 101, 127, 131, 251, 257, 263, 293};
static int pick_dim(int max) {
    switch (next() % 4) {
    case 0: return primes[next() % (sizeof primes / sizeof primes[0])];
    case 1: { int m = 16 * irand(1, max / 16); return m + irand(-1, 1) > 0 ? m + irand(-1, 1) : 1; } // tile edges
    default: return irand(1, max);
    }
}

static void test_random(int n) {
    for (int i = 0; i < n; i++) {
        const int M = pick_dim(300), N = pick_dim(300), K = next() % 8 == 0 ? irand(250, 600) : pick_dim(300);
        // block shapes: the default, or small blocks so that several threads share the work
        // and K blocks: the default (one block up to 1024), or short ones (partial sums in y)
        const int mc = next() % 2 ? 0 : irand(1, 40), pc = next() % 2 ? 0 : irand(1, 5);
        const int kc = next() % 2 ? 0 : irand(1, 100);
        one_case(M, N, K, next() % 3 == 0, mc, pc, kc);
        // every other case: a bf16 format on the same kind of shapes (random, special and
        // dp-edge values; test_fixed covers both formats on every fixed shape)
        if (i % 2) continue;
        case_fmt = next() % 2 ? GEMM_FMT_BF16 : GEMM_FMT_BF16_DP;
        one_case(M, N, K, (int)(next() % 3), mc, pc, kc);
        case_fmt = GEMM_FMT_F32;
    }
}

static void test_fixed(void) {
    // K across the K-block boundaries, tails of every tile, a few real shapes (cut in M)
    static const int shapes[][3] = {{1, 1, 1},     {1, 16, 1},     {14, 32, 256},  {15, 33, 257}, {13, 31, 255},
                                    {6, 16, 512},  {7, 17, 513},   {28, 64, 1},    {29, 65, 2},   {300, 300, 300},
                                    {3, 1024, 1024}, {64, 576, 576}, {37, 192, 576}, {5, 1536, 576}, {33, 1024, 3072}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        one_case(shapes[i][0], shapes[i][1], shapes[i][2], 0, 0, 0, 0);
        one_case(shapes[i][0], shapes[i][1], shapes[i][2], 1, 7, 2, 0);
        one_case(shapes[i][0], shapes[i][1], shapes[i][2], 1, 0, 0, 256);
        one_case(shapes[i][0], shapes[i][1], shapes[i][2], 0, 3, 1, 17);
    }
    // the bf16 formats: odd K (the padded pair), K blocks of odd length, every value kind
    for (int f = GEMM_FMT_BF16; f <= GEMM_FMT_BF16_DP; f++) {
        case_fmt = (enum gemm_fmt)f;
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            one_case(shapes[i][0], shapes[i][1], shapes[i][2], 0, 0, 0, 0);
            one_case(shapes[i][0], shapes[i][1], shapes[i][2], 1, 7, 2, 0);
            one_case(shapes[i][0], shapes[i][1], shapes[i][2], 2, 0, 0, 255);
            one_case(shapes[i][0], shapes[i][1], shapes[i][2], 2, 3, 1, 17);
        }
        case_fmt = GEMM_FMT_F32;
    }
}

// ---- the dp contract's flush rule, directed (gemm.h; docs/results/speed.md) ----
// Row r of x (K = 3) against one weight row: x = {2^-63, 2^-75, -m * 2^-75}, w = {2^-63, 2^-74,
// 2^-74}: the chain is 2^-126, then 2^-126 + 2^-149 (normal), then 2^-126 + (1 - m) 2^-149:
//   m = 1.25:  2^-126 - 2^-151, a tie that rounds to 2^-126 (kept in both contracts);
//   m = 1.375: 2^-126 - 0.75 2^-150: the unbounded rounding gives 2^-126 - 2^-150, tiny, so dp
//              gives +0 while fmaf (gradual underflow) rounds to 2^-126;
//   m = 1.5:   2^-126 - 2^-150: exact and tiny: dp +0, fmaf 2^-126 (tie to even);
//   m = 3:     2^-126 - 2^-148: subnormal in fmaf, +0 in dp.
// Then sign rules: -(2^-130) flushed gives -0.0 and -0.0 + -0.0 stays -0.0 (where the fmaf
// chain gives -2^-130), a subnormal x or w counts as zero (dp) or as itself (fmaf), and a
// subnormal partial sum inside a pair is flushed before the pair's second product.
static void test_dp_flush(void) {
    enum { M = 8, K = 3, N = 16 };
    static const float ms[4] = {1.25f, 1.375f, 1.5f, 3.0f};
    float x[M * K], w[N * K], y[M * N], yb[M * N];
    for (int n = 0; n < N; n++) w[n * K] = 0x1p-63f, w[n * K + 1] = 0x1p-74f, w[n * K + 2] = 0x1p-74f;
    for (int r = 0; r < 4; r++) x[r * K] = 0x1p-63f, x[r * K + 1] = 0x1p-75f, x[r * K + 2] = -ms[r] * 0x1p-75f;
    // row 4: +0 + (-2^-67 * 2^-63 = -2^-130) -> -0 (dp) or -2^-130 (fmaf); then two -0 products
    x[4 * K] = -0x1p-67f, x[4 * K + 1] = -0.0f, x[4 * K + 2] = -0.0f;
    // row 5: a subnormal x (2^-130) in the second product: zero in dp; 2^-204 (absorbed) in fmaf
    x[5 * K] = 0x1p-63f, x[5 * K + 1] = 0x1p-130f, x[5 * K + 2] = 0.0f;
    // row 6: within a pair: 2^-125 then -0.75*2^-125 (2^-127: flushed) then +2^-126 (k = 2)
    x[6 * K] = 0x1p-62f, x[6 * K + 1] = -0.75f * 0x1p-51f, x[6 * K + 2] = 0x1p-52f;
    // row 7: cancellation to exactly zero: 2^-126 - 2^-126 + 0 = +0 in both
    x[7 * K] = 0x1p-63f, x[7 * K + 1] = -0x1p-52f, x[7 * K + 2] = 0.0f;
    // (row 6 and 7 use w[1] = w[2] = 2^-74: products 2^-125, -0.75*2^-125, 2^-126; 2^-126, -2^-126)
    const uint32_t want_dp[M] = {0x00800000u, 0, 0, 0, 0x80000000u, 0x00800000u, 0x00800000u, 0};
    float want_f[M];
    for (int r = 0; r < M; r++) { // the fmaf chain, literally
        float acc = 0.0f;
        for (int k = 0; k < K; k++) acc = fmaf(x[r * K + k], w[k], acc);
        want_f[r] = acc;
    }
    CHECK(want_f[1] == 0x1p-126f && want_f[2] == 0x1p-126f && want_f[4] == -0x1p-130f && want_f[6] == 0x1.8p-126f,
          "the fmaf chain itself: %a %a %a %a", want_f[1], want_f[2], want_f[4], want_f[6]);
    const struct gemm_io io = {y, N, x, K, M, NULL, GEMM_ROUND_NONE}, iob = {yb, N, x, K, M, NULL, GEMM_ROUND_NONE};
    gemm_ref_dp(&io, w, K, N, K);
    int bad = -1;
    for (int r = 0; r < M; r++)
        if (gemm_bits(y[r * N]) != want_dp[r] && bad < 0) bad = r;
    CHECK(bad < 0, "gemm_ref_dp row %d: got %08x want %08x", bad, bad < 0 ? 0 : gemm_bits(y[bad * N]),
          bad < 0 ? 0 : want_dp[bad]);
    for (int s = 0; s < n_isas; s++) {
        gemm_isa_set(isas[s]);
        struct gemm_w pd, pb;
        gemm_pack(&pd, GEMM_FMT_BF16_DP, &(struct gemm_mat){w, GEMM_SRC_F32, K, N, K}, 1);
        gemm_pack(&pb, GEMM_FMT_BF16, &(struct gemm_mat){w, GEMM_SRC_F32, K, N, K}, 1);
        gemm_run(&io, &pd, 0, N, 1);
        gemm_run(&iob, &pb, 0, N, 1);
        int bd = -1, bf = -1;
        for (int r = 0; r < M; r++)
            for (int n = 0; n < N; n++) {
                if (gemm_bits(y[r * N + n]) != want_dp[r] && bd < 0) bd = r;
                if (gemm_bits(yb[r * N + n]) != gemm_bits(want_f[r]) && bf < 0) bf = r;
            }
        CHECK(bd < 0, "%s dp row %d: got %08x want %08x", isas[s], bd, bd < 0 ? 0 : gemm_bits(y[bd * N]),
              bd < 0 ? 0 : want_dp[bd]);
        CHECK(bf < 0, "%s bf16 (fmaf chain) row %d: got %08x want %08x", isas[s], bf, bf < 0 ? 0 : gemm_bits(yb[bf * N]),
              bf < 0 ? 0 : gemm_bits(want_f[bf]));
        gemm_w_free(&pd), gemm_w_free(&pb);
    }
}

// The dp-edge values of one_case (special 2) make the two contracts differ: the cross-path
// checks above meet the flush rule in action, not only the fmaf-equal cases.
static void test_dp_edges_bite(void) {
    enum { M = 32, N = 32, K = 48 };
    float *x = malloc(M * K * 4), *w = malloc(N * K * 4), *a = malloc(M * N * 4), *b = malloc(M * N * 4);
    fill(x, M * K, 2), fill(w, N * K, 2);
    for (int i = 0; i < N * K; i++) w[i] = gemm_float(gemm_bf16_bits(w[i])); // bf16 already
    gemm_ref(&(struct gemm_io){a, N, x, K, M, NULL, GEMM_ROUND_NONE}, w, K, N, K);
    gemm_ref_dp(&(struct gemm_io){b, N, x, K, M, NULL, GEMM_ROUND_NONE}, w, K, N, K);
    int differ = 0;
    for (int i = 0; i < M * N; i++) differ += gemm_bits(a[i]) != gemm_bits(b[i]);
    printf("dp-edge values: %d of %d outputs differ between the fmaf chain and the dp contract\n", differ, M * N);
    CHECK(differ > M * N / 20 && differ < M * N, "dp-edge values: %d of %d outputs differ", differ, M * N);
    free(x), free(w), free(a), free(b);
}

// The bf16 formats' packing: the pair layout of gemm.h (k in the high half), from f32 (RNE),
// bf16 (exact) and f16 sources, odd K padded with +0; gemm_w_row gives the packed values.
static void test_pack_pairs(void) {
    enum { N = 19, K = 7 };
    float w[N * K], row[K];
    uint16_t h[N * K];
    for (int i = 0; i < N * K; i++) w[i] = value(1), h[i] = (uint16_t)(gemm_bf16_bits(w[i]) >> 16);
    struct gemm_w a, b;
    CHECK(gemm_pack(&a, GEMM_FMT_BF16, &(struct gemm_mat){w, GEMM_SRC_F32, K, N, K}, 1) == 0, "pack bf16 from f32");
    CHECK(gemm_pack(&b, GEMM_FMT_BF16_DP, &(struct gemm_mat){h, GEMM_SRC_BF16, K, N, K}, 1) == 0, "pack dp from bf16");
    CHECK(gemm_packed_bytes(GEMM_FMT_BF16, N, K) == 2 * 4 * 16 * 4, "bf16 bytes %zu", gemm_packed_bytes(GEMM_FMT_BF16, N, K));
    int bad = 0;
    for (int n = 0; n < 32; n++)
        for (int j = 0; j < 4; j++) {
            const uint32_t u = a.q[(size_t)(n / 16) * 4 * 16 + (size_t)j * 16 + n % 16];
            const uint32_t hi = n < N ? (uint32_t)h[n * K + 2 * j] : 0, lo = n < N && 2 * j + 1 < K ? h[n * K + 2 * j + 1] : 0;
            bad += u != (hi << 16 | lo) || u != b.q[(size_t)(n / 16) * 4 * 16 + (size_t)j * 16 + n % 16];
        }
    CHECK(bad == 0, "pair layout: %d wrong", bad);
    for (int n = 0; n < N; n++) {
        gemm_w_row(&a, n, row);
        for (int k = 0; k < K; k++) bad += gemm_bits(row[k]) != (uint32_t)h[n * K + k] << 16;
    }
    CHECK(bad == 0, "gemm_w_row of bf16 panels: %d wrong", bad);
    gemm_w_free(&a), gemm_w_free(&b);
}

// ---- special cases ----
static void test_zero_sign_nan(void) {
    enum { M = 3, N = 20, K = 9 };
    float x[M * K], w[N * K], y[M * N], b[N];
    for (int i = 0; i < M * K; i++) x[i] = -1.0f;
    for (int i = 0; i < N * K; i++) w[i] = 0.0f; // every product is -0.0
    for (int s = 0; s < n_isas; s++) {
        gemm_isa_set(isas[s]);
        for (int i = 0; i < N; i++) b[i] = -0.0f;
        struct gemm_w pw;
        gemm_pack(&pw, GEMM_FMT_F32, &(struct gemm_mat){w, GEMM_SRC_F32, K, N, K}, 1);
        gemm_run(&(struct gemm_io){y, N, x, K, M, NULL, 0}, &pw, 0, N, 1);
        int pos = 1;
        for (int i = 0; i < M * N; i++) pos &= gemm_bits(y[i]) == 0u;
        CHECK(pos, "%s: all-(-0.0) products must give +0.0 (chain starts at +0.0)", isas[s]);
        gemm_run(&(struct gemm_io){y, N, x, K, M, b, 0}, &pw, 0, N, 1); // +0.0 + -0.0 = +0.0
        pos = 1;
        for (int i = 0; i < M * N; i++) pos &= gemm_bits(y[i]) == 0u;
        CHECK(pos, "%s: +0.0 + bias -0.0 must give +0.0", isas[s]);
        // NaN in one x row propagates to that row only, canonical; Inf*0 and Inf-Inf give NaN
        x[K + 4] = NAN;
        w[2 * K + 1] = INFINITY; // row 0 col 2: -1*Inf = -Inf; row 2 too
        w[3 * K + 1] = INFINITY, w[3 * K + 2] = -INFINITY; // col 3: -Inf + Inf = NaN
        gemm_w_free(&pw);
        gemm_pack(&pw, GEMM_FMT_F32, &(struct gemm_mat){w, GEMM_SRC_F32, K, N, K}, 1);
        gemm_run(&(struct gemm_io){y, N, x, K, M, NULL, 1}, &pw, 0, N, 1);
        int ok = 1;
        for (int n = 0; n < N; n++) ok &= gemm_bits(y[N + n]) == GEMM_QNAN;
        CHECK(ok, "%s: NaN in x row 1 must give canonical NaN in every column of row 1", isas[s]);
        CHECK(y[2] == -INFINITY && y[2 * N + 2] == -INFINITY, "%s: -Inf expected, got %g", isas[s], y[2]);
        CHECK(gemm_bits(y[3]) == GEMM_QNAN && gemm_bits(y[2 * N + 3]) == GEMM_QNAN, "%s: Inf-Inf must be NaN",
              isas[s]);
        CHECK(gemm_bits(y[0]) == 0u && gemm_bits(y[2 * N]) == 0u, "%s: other columns stay +0.0", isas[s]);
        x[K + 4] = -1.0f;
        w[2 * K + 1] = w[3 * K + 1] = w[3 * K + 2] = 0.0f;
        gemm_w_free(&pw);
        // K = 0: y = +0.0 + bias
        for (int i = 0; i < N; i++) b[i] = (float)i - 3.5f;
        gemm_pack(&pw, GEMM_FMT_F32, &(struct gemm_mat){w, GEMM_SRC_F32, 0, N, 0}, 1);
        gemm_run(&(struct gemm_io){y, N, x, 0, M, b, 0}, &pw, 0, N, 2);
        ok = 1;
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) ok &= y[m * N + n] == b[n] && gemm_bits(y[m * N + n]) == gemm_bits(b[n] + 0.0f);
        CHECK(ok, "%s: K = 0 must give bias", isas[s]);
        gemm_w_free(&pw);
    }
}

// The epilogue's bf16 rounding against the definition in common.h, on edge patterns
// (ties, carries into the exponent, overflow to Inf, NaN) and random bits.
static uint16_t f32_to_bf16_ref(float x) { // common.h, verbatim semantics
    uint32_t u = gemm_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static void test_bf16_epilogue(void) {
    enum { N = 64 };
    static const uint32_t pats[] = {0x3f808000u, 0x3f818000u, 0x3f807fffu, 0x3f80ffffu, 0x7f7fffffu, 0x7f7f8000u,
                                    0x7f7f7fffu, 0xff7fffffu, 0x00008000u, 0x00018000u, 0x80008000u, 0x7f800000u,
                                    0xff800000u, 0x00000000u, 0x80000000u, 0x3effffffu, 0x7fc00000u, 0x7f800001u};
    float b[N], w[N], y[N], x[1] = {1.0f}, r[N];
    for (int n = 0; n < N; n++) b[n] = n < 18 ? gemm_float(pats[n]) : gemm_float((uint32_t)next());
    for (int n = 0; n < N; n++) w[n] = 0.0f; // y = +0.0 + bias[n], then rounded
    for (int s = 0; s < n_isas; s++) {
        gemm_isa_set(isas[s]);
        struct gemm_w pw;
        gemm_pack(&pw, GEMM_FMT_F32, &(struct gemm_mat){w, GEMM_SRC_F32, 1, N, 1}, 1);
        gemm_run(&(struct gemm_io){y, N, x, 1, 1, b, 1}, &pw, 0, N, 1);
        int bad = -1;
        for (int n = 0; n < N; n++) {
            float v = 0.0f + b[n];
            r[n] = isnan(v) ? gemm_float(GEMM_QNAN) : gemm_float((uint32_t)f32_to_bf16_ref(v) << 16);
            if (gemm_bits(y[n]) != gemm_bits(r[n]) && bad < 0) bad = n;
        }
        CHECK(bad < 0, "%s: bf16 epilogue of %08x: got %08x want %08x", isas[s], bad < 0 ? 0 : gemm_bits(b[bad]),
              bad < 0 ? 0 : gemm_bits(y[bad]), bad < 0 ? 0 : gemm_bits(r[bad]));
        gemm_w_free(&pw);
    }
}

// ---- packing from bf16 / f16: all 65536 codes, several shapes, every path ----
static float f16_ref(uint16_t h) { // common.c f16_to_f32, verbatim semantics
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return gemm_float(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        float v = (float)m * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return gemm_float(sign | ((e + 112) << 23) | (m << 13));
}
static void test_pack_16bit(void) {
    static const int shapes[][2] = {{256, 256}, {4096, 16}, {65536, 1}, {300, 219}, {17, 3856}};
    for (int t = 0; t < 2; t++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            const int N = shapes[si][0], K = shapes[si][1];
            const size_t n = (size_t)N * K, ld = (size_t)K + (si % 2);
            uint16_t *h = malloc((size_t)N * ld * 2);
            float *f = malloc((size_t)N * ld * 4);
            for (size_t i = 0; i < (size_t)N * ld; i++) {
                h[i] = (uint16_t)(i < n ? i * 40503u : next()); // a permutation of all codes when n = 65536
                f[i] = t == 0 ? gemm_float((uint32_t)h[i] << 16) : f16_ref(h[i]);
            }
            const size_t bytes = gemm_packed_bytes(GEMM_FMT_F32, N, K);
            float *p16 = aligned_alloc(64, bytes), *p32 = aligned_alloc(64, bytes);
            for (int s = 0; s < n_isas; s++) {
                gemm_isa_set(isas[s]);
                struct gemm_w a, b;
                memset(p16, 0xff, bytes), memset(p32, 0xee, bytes);
                int rc1 = gemm_pack_into(&a, GEMM_FMT_F32, p16, bytes, &(struct gemm_mat){h, t == 0 ? GEMM_SRC_BF16 : GEMM_SRC_F16, ld, N, K}, 2);
                int rc2 = gemm_pack_into(&b, GEMM_FMT_F32, p32, bytes, &(struct gemm_mat){f, GEMM_SRC_F32, ld, N, K}, 2);
                CHECK(rc1 == 0 && rc2 == 0 && memcmp(p16, p32, bytes) == 0, "%s: %s packing of (%d,%d) differs from f32",
                      isas[s], t == 0 ? "bf16" : "f16", N, K);
                // and the packed layout itself: panel p, k, lane c = row p*16+c, column k
                long bad = -1;
                for (int r = 0; r < N && bad < 0; r++)
                    for (int k = 0; k < K; k++)
                        if (gemm_bits(p32[((size_t)(r / 16) * K + k) * 16 + r % 16]) != gemm_bits(f[(size_t)r * ld + k])) {
                            bad = (long)r * K + k;
                            break;
                        }
                CHECK(bad < 0, "%s: packed layout wrong at %ld", isas[s], bad);
            }
            free(h), free(f), free(p16), free(p32);
        }
}

// The pair panels from every source type on every path (the vector paths' pack_q: 32 k of 16
// rows at a time, tails of K and N, odd K, ld > K) against gemm.h's layout written with
// common.h: lane c of pair j of panel p = f32_to_bf16(w[n][2j]) << 16 | f32_to_bf16(w[n][2j+1]),
// n = 16p + c, zero past N and past K. The 16-bit sources run through all 65536 codes (NaN
// payloads, signalling NaNs, subnormals), the f32 source through random and special values.
static void test_pack_pairs_paths(void) {
    static const int shapes[][2] = {{256, 256}, {4096, 16}, {300, 219}, {17, 3856}, {33, 65}};
    for (int t = 0; t < 3; t++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            const int N = shapes[si][0], K = shapes[si][1], K2 = (K + 1) / 2, np = (N + 15) / 16;
            const size_t n = (size_t)N * K, ld = (size_t)K + (si % 2);
            uint16_t *h = malloc((size_t)N * ld * 2);
            float *f = malloc((size_t)N * ld * 4);
            for (size_t i = 0; i < (size_t)N * ld; i++) {
                h[i] = (uint16_t)(i < n ? i * 40503u : next());
                f[i] = t == 0 ? value(1) : t == 1 ? bf16_to_f32(h[i]) : f16_to_f32(h[i]);
            }
            const size_t bytes = gemm_packed_bytes(GEMM_FMT_BF16, N, K);
            uint32_t *q = aligned_alloc(64, bytes);
            const void *src = t == 0 ? (const void *)f : (const void *)h;
            const int type = t == 0 ? GEMM_SRC_F32 : t == 1 ? GEMM_SRC_BF16 : GEMM_SRC_F16;
            for (int s = 0; s < n_isas; s++) {
                gemm_isa_set(isas[s]);
                struct gemm_w a;
                memset(q, 0xee, bytes);
                const int rc = gemm_pack_into(&a, s % 2 ? GEMM_FMT_BF16 : GEMM_FMT_BF16_DP, q, bytes,
                                              &(struct gemm_mat){src, type, ld, N, K}, 2);
                long bad = -1;
                for (int p = 0; p < np && bad < 0; p++)
                    for (int j = 0; j < K2 && bad < 0; j++)
                        for (int c = 0; c < 16; c++) {
                            const int r = 16 * p + c;
                            const uint32_t hi = r < N ? f32_to_bf16(f[(size_t)r * ld + 2 * j]) : 0;
                            const uint32_t lo = r < N && 2 * j + 1 < K ? f32_to_bf16(f[(size_t)r * ld + 2 * j + 1]) : 0;
                            if (q[((size_t)p * K2 + j) * 16 + c] != (hi << 16 | lo)) {
                                bad = (long)r * K + 2 * j;
                                break;
                            }
                        }
                CHECK(rc == 0 && bad < 0, "%s: pair panels from %s (%d,%d) rc %d, wrong at %ld", isas[s],
                      t == 0 ? "f32" : t == 1 ? "bf16" : "f16", N, K, rc, bad);
            }
            free(h), free(f), free(q);
        }
}

// gemm_w_init + gemm_pack_panels in random chunks, in reverse order, equals gemm_pack.
static void test_pack_panels(void) {
    for (int it = 0; it < 20; it++) {
        const int N = pick_dim(300), K = pick_dim(300), np = (N + 15) / 16;
        float *w = malloc((size_t)N * K * 4);
        fill(w, (size_t)N * K, 1);
        const size_t bytes = gemm_packed_bytes(GEMM_FMT_F32, N, K);
        float *mem = aligned_alloc(64, bytes + 64);
        for (int s = 0; s < n_isas; s++) {
            gemm_isa_set(isas[s]);
            struct gemm_w a, b;
            gemm_pack(&a, GEMM_FMT_F32, &(struct gemm_mat){w, GEMM_SRC_F32, (size_t)K, N, K}, 1);
            int rc = gemm_w_init(&b, GEMM_FMT_F32, mem, bytes, N, K);
            for (int pb = np; pb > 0 && !rc;) {
                const int step = irand(1, 5), pa = pb - step < 0 ? 0 : pb - step;
                rc = gemm_pack_panels(&b, &(struct gemm_mat){w, GEMM_SRC_F32, (size_t)K, N, K}, pa, pb);
                pb = pa;
            }
            CHECK(rc == 0 && memcmp(a.p, b.p, bytes) == 0, "%s: pack_panels (%d,%d) rc %d", isas[s], N, K, rc);
            float row[300];
            int same = 1;
            for (int n = 0; n < N; n++) {
                gemm_w_row(&a, n, row);
                same &= memcmp(row, w + (size_t)n * K, (size_t)K * 4) == 0;
            }
            CHECK(same, "%s: gemm_w_row differs from the source rows", isas[s]);
            CHECK(gemm_pack_panels(&b, &(struct gemm_mat){w, GEMM_SRC_F32, (size_t)K, N, K}, 0, np + 1) == GEMM_ERR_RANGE, "pb > panels");
            CHECK(gemm_w_init(&b, GEMM_FMT_F32, mem, bytes - 1, N, K) == GEMM_ERR_RANGE || bytes == 0, "short");
            gemm_w_free(&a);
        }
        free(w), free(mem);
    }
}

// ---- row invariance ----
// Row r of x gives the same bits as the only row of an M=1 product, as row 3 of M=7 and at
// several offsets of an M=4096 batch (neighbours random), on every path and thread count.
static void test_row_invariance(void) {
    enum { N = 1024, K = 1024, MBIG = 4096 };
    float *w = malloc((size_t)N * K * 4), *x = malloc((size_t)MBIG * K * 4), *y = malloc((size_t)MBIG * N * 4);
    float *row = malloc(K * 4), *ref = malloc(N * 4), *b = malloc(N * 4);
    fill(w, (size_t)N * K, 0), fill(row, K, 0), fill(b, N, 0);
    gemm_ref(&(struct gemm_io){ref, N, row, K, 1, b, 1}, w, K, N, K);
    static const int offs[] = {0, 1, 11, 12, 13, 1234, 4095};
    for (int s = 0; s < n_isas; s++) {
        gemm_isa_set(isas[s]);
        struct gemm_w pw;
        gemm_pack(&pw, GEMM_FMT_F32, &(struct gemm_mat){w, GEMM_SRC_F32, K, N, K}, 2);
        gemm_run(&(struct gemm_io){y, N, row, K, 1, b, 1}, &pw, 0, N, 1);
        CHECK(first_diff(y, ref, N) < 0, "%s: M=1 row differs from reference", isas[s]);
        fill(x, (size_t)7 * K, 0);
        memcpy(x + 3 * K, row, K * 4);
        gemm_run(&(struct gemm_io){y, N, x, K, 7, b, 1}, &pw, 0, N, 2);
        CHECK(first_diff(y + 3 * N, ref, N) < 0, "%s: row 3 of M=7 differs", isas[s]);
        if (!strcmp(isas[s], "scalar")) { // the scalar path is slow; M=4096 twice is enough
            gemm_w_free(&pw);
            continue;
        }
        for (size_t o = 0; o < sizeof offs / sizeof offs[0]; o++) {
            const int nt = 1 + (int)(o % 4);
            fill(x, (size_t)MBIG * K, 0);
            memcpy(x + (size_t)offs[o] * K, row, K * 4);
            gemm_run(&(struct gemm_io){y, N, x, K, MBIG, b, 1}, &pw, 0, N, nt);
            CHECK(first_diff(y + (size_t)offs[o] * N, ref, N) < 0, "%s: row at offset %d of M=%d (t=%d) differs",
                  isas[s], offs[o], MBIG, nt);
        }
        gemm_w_free(&pw);
    }
    free(w), free(x), free(y), free(row), free(ref), free(b);
}

// gemm_ref against a double-precision dot product (guards against a reference that agrees
// with the kernels for a wrong reason, e.g. a transposed operand).
static void test_ref_sane(void) {
    enum { M = 5, N = 7, K = 300 };
    float x[M * K], w[N * K], y[M * N];
    fill(x, M * K, 0), fill(w, N * K, 0);
    gemm_ref(&(struct gemm_io){y, N, x, K, M, NULL, 0}, w, K, N, K);
    double worst = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double s = 0, a = 0;
            for (int k = 0; k < K; k++) s += (double)x[m * K + k] * w[n * K + k], a += fabs((double)x[m * K + k] * w[n * K + k]);
            double e = fabs(y[m * N + n] - s) / a;
            if (e > worst) worst = e;
        }
    CHECK(worst < 1e-5, "gemm_ref vs double: relative error %.3g", worst);
}

// ---- arguments and ISA selection ----
static void test_errors(void) {
    float w[32 * 8] = {0}, x[8] = {0}, y[32];
    struct gemm_w pw;
    CHECK(gemm_pack(&pw, GEMM_FMT_F32, &(struct gemm_mat){w, GEMM_SRC_F32, 8, 32, 8}, 1) == 0, "pack");
    CHECK(gemm_run(&(struct gemm_io){y, 32, x, 7, 1, NULL, 0}, &pw, 0, 32, 1) == GEMM_ERR_RANGE, "ldx < K");
    CHECK(gemm_run(&(struct gemm_io){y, 32, x, 8, 1, NULL, 0}, &pw, 0, 33, 1) == GEMM_ERR_RANGE, "n1 > N");
    CHECK(gemm_run(&(struct gemm_io){y, 32, x, 8, 1, NULL, 0}, &pw, 5, 4, 1) == GEMM_ERR_RANGE, "n1 < n0");
    CHECK(gemm_run(&(struct gemm_io){y, 31, x, 8, 1, NULL, 0}, &pw, 0, 32, 1) == GEMM_ERR_RANGE, "ldy < n1");
    CHECK(gemm_run(&(struct gemm_io){y, 32, x, 8, -1, NULL, 0}, &pw, 0, 32, 1) == GEMM_ERR_RANGE, "M < 0");
    CHECK(gemm_run(&(struct gemm_io){y, 32, x, 8, 0, NULL, 0}, &pw, 0, 32, 1) == 0, "M = 0 is a no-op");
    gemm_w_free(&pw);
    struct gemm_w q;
    char *mem = aligned_alloc(64, 64 * 1024);
    CHECK(gemm_pack_into(&q, GEMM_FMT_F32, mem + 4, 60000, &(struct gemm_mat){w, GEMM_SRC_F32, 8, 32, 8}, 1) == GEMM_ERR_RANGE, "misaligned mem");
    CHECK(gemm_pack_into(&q, GEMM_FMT_F32, mem, gemm_packed_bytes(GEMM_FMT_F32, 32, 8) - 1, &(struct gemm_mat){w, GEMM_SRC_F32, 8, 32, 8}, 1) == GEMM_ERR_RANGE,
          "short mem");
    CHECK(gemm_pack_into(&q, GEMM_FMT_F32, mem, 65536, &(struct gemm_mat){w, GEMM_SRC_F32, 7, 32, 8}, 1) == GEMM_ERR_RANGE, "ld < K");
    CHECK(gemm_pack_into(&q, GEMM_FMT_F32, mem, 65536, &(struct gemm_mat){w, 9, 8, 32, 8}, 1) == GEMM_ERR_RANGE, "bad type");
    CHECK(gemm_packed_bytes(GEMM_FMT_F32, 17, 3) == 2 * 3 * 16 * 4, "packed bytes %zu", gemm_packed_bytes(GEMM_FMT_F32, 17, 3));
    CHECK(gemm_packed_bytes(GEMM_FMT_F32, -1, 3) == 0 && gemm_packed_bytes(GEMM_FMT_F32, 0x7fffffff, 0x7fffffff) != 0, "packed bytes edge");
    free(mem);
    CHECK(gemm_isa_set("bogus") == GEMM_ERR_RANGE, "unknown ISA name");
    CHECK(gemm_isa_set("scalar") == 0 && !strcmp(gemm_isa_name(), "scalar"), "force scalar");
}

// Before anything else selects a path: the environment override and its errors.
static void test_env(void) {
    char msg[256] = "";
    setenv("HIFA4_GEMM_ISA", "bogus", 1);
    CHECK(gemm_isa_init(msg, sizeof msg) == GEMM_ERR_RANGE && strstr(msg, "bogus"), "env bogus: %s", msg);
    CHECK(!strcmp(gemm_isa_name(), "none"), "nothing selected after an error");
    const char *names[] = {"avx512", "avx2"};
    for (int i = 0; i < 2; i++)
        if (!gemm_isa_supported(names[i])) {
            setenv("HIFA4_GEMM_ISA", names[i], 1);
            CHECK(gemm_isa_init(msg, sizeof msg) == GEMM_ERR_UNSUPPORTED, "forced unsupported %s", names[i]);
        }
    setenv("HIFA4_GEMM_ISA", "avx2", 1);
    if (gemm_isa_supported("avx2"))
        CHECK(gemm_isa_init(msg, sizeof msg) == 0 && !strcmp(gemm_isa_name(), "avx2"), "env avx2: %s",
              gemm_isa_name());
    unsetenv("HIFA4_GEMM_ISA");
    gemm_isa_set(NULL);
    printf("automatic ISA on this CPU: %s\n", gemm_isa_name());
}

int main(int argc, char **argv) {
    const int n_random = argc > 1 ? atoi(argv[1]) : 400;
    test_env();
    static const char *const all[] = {"avx512", "avx512f", "avx2", "scalar"};
    for (int i = 0; i < 4; i++)
        if (gemm_isa_supported(all[i])) isas[n_isas++] = all[i];
    printf("paths under test:");
    for (int i = 0; i < n_isas; i++) printf(" %s", isas[i]);
    printf("\n");
    test_ref_sane();
    test_errors();
    test_zero_sign_nan();
    test_bf16_epilogue();
    test_pack_pairs();
    test_dp_flush();
    test_dp_edges_bite();
    test_pack_16bit();
    test_pack_pairs_paths();
    test_pack_panels();
    test_fixed();
    test_random(n_random);
    test_row_invariance();
    return test_summary("test_gemm");
}
