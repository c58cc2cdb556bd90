// gemm_avx512.c: the AVX-512F path. Micro-kernel MR rows x NP panels (16 columns each, one
// zmm accumulator per row and panel, one lane per output element), k ascending, X rows
// broadcast from a small packed copy, W panels read as packed. Compiled for AVX-512F
// through a target pragma, so the file is correct whatever -march the project uses; only
// called after the CPU check in gemm.c.
#pragma GCC target("avx512f,avx2,fma,f16c")
#include <immintrin.h>

#include "model/gemm_internal.h"

#ifndef AVX512_MR
#define AVX512_MR 14  // rows per micro-tile: 14 x 2 panels = 28 accumulators + 2 W + 1 broadcast
#endif

// ---- micro-kernel ----
struct kargs {
    int kc;
    const float *xp;   // (kc, 16) packed X rows (lanes < mr used); for mr = 1 the row itself
    const float *w;    // first panel at k0; panel j at w + j*ws (GEMM_FMT_F32)
    const uint32_t *wq; // bf16 formats: first pair panel at k0/2; panel j at wq + j*ws
    size_t ws;         // panel stride in floats (K*16) or pairs (ceil(K/2)*16)
    float *y;          // tile origin (row i0, column p*16)
    size_t ldy;
    const float *bias; // bias at column p*16, or NULL
    __mmask16 mk[4];      // lanes of each panel inside [n0, n1)
    int first, last, bf16;
};

static inline __attribute__((always_inline)) __m512 epilogue(__m512 v, const float *bias, __mmask16 m, int bf16) {
    if (bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, bias));
    __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    v = _mm512_mask_mov_ps(v, nan, _mm512_castsi512_ps(_mm512_set1_epi32((int)GEMM_QNAN)));
    if (bf16) { // RNE on the bit pattern; NaN is canonical here and maps to itself
        __m512i u = _mm512_castps_si512(v);
        __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
        u = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
        v = _mm512_castsi512_ps(_mm512_and_si512(u, _mm512_set1_epi32((int)0xffff0000u)));
    }
    return v;
}

// The accumulators of a tile: zero on the first K block, else the partial sums in y; and
// back: the epilogue on the last K block, then the masked store (every kernel below).
static inline __attribute__((always_inline)) void init_acc(const int mr, const int np, const struct kargs *a,
                                                           __m512 acc[14][4]) {
#pragma GCC unroll 16
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
        for (int j = 0; j < np; j++)
            acc[i][j] = a->first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(a->mk[j], a->y + i * a->ldy + j * 16);
}

static inline __attribute__((always_inline)) void finish(const int mr, const int np, const struct kargs *a,
                                                         __m512 acc[14][4]) {
    if (a->last) {
#pragma GCC unroll 16
        for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
            for (int j = 0; j < np; j++)
                acc[i][j] = epilogue(acc[i][j], a->bias ? a->bias + j * 16 : NULL, a->mk[j], a->bf16);
    }
#pragma GCC unroll 16
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
        for (int j = 0; j < np; j++) _mm512_mask_storeu_ps(a->y + i * a->ldy + j * 16, a->mk[j], acc[i][j]);
}

// mr and np are compile-time constants at every call site (the table below), so the
// accumulator array lives in registers.
static inline __attribute__((always_inline)) void kern(const int mr, const int np, const struct kargs *a) {
    __m512 acc[14][4]; // table maximum; only [mr][np] is used (<= 28 registers)
    init_acc(mr, np, a, acc);
    const float *xp = a->xp, *w = a->w;
    const size_t ws = a->ws;
    for (int k = 0; k < a->kc; k++) {
        __m512 wv[4];
#pragma GCC unroll 4
        for (int j = 0; j < np; j++) wv[j] = _mm512_load_ps(w + j * ws + (size_t)k * 16);
#ifndef AVX512_PF
#define AVX512_PF 32
#endif
#if AVX512_PF > 0
#pragma GCC unroll 4
        for (int j = 0; j < np; j++) _mm_prefetch((const char *)(w + j * ws + (size_t)(k + AVX512_PF) * 16), _MM_HINT_T0);
#endif
#pragma GCC unroll 16
        for (int i = 0; i < mr; i++) {
            __m512 xb = _mm512_set1_ps(xp[k * (mr == 1 ? 1 : 16) + i]); // one row: x itself
#pragma GCC unroll 4
            for (int j = 0; j < np; j++) acc[i][j] = _mm512_fmadd_ps(xb, wv[j], acc[i][j]);
        }
    }
    finish(mr, np, a, acc);
}

typedef void (*kern_fn)(const struct kargs *a);
#define K1(m, n) static void k_##m##_##n(const struct kargs *a) { kern(m, n, a); }
#define KROW2(m) K1(m, 1) K1(m, 2)
#define KROW4(m) K1(m, 1) K1(m, 2) K1(m, 3) K1(m, 4)
KROW4(1) KROW4(2) KROW4(3) KROW4(4) KROW4(5) KROW4(6) KROW2(7) KROW2(8)
KROW2(9) KROW2(10) KROW2(11) KROW2(12) KROW2(13) KROW2(14)
#define T2(m) {k_##m##_1, k_##m##_2, NULL, NULL}
#define T4(m) {k_##m##_1, k_##m##_2, k_##m##_3, k_##m##_4}
// ktab[mr-1][np-1]: up to 6 rows take 4 panels (more independent chains and W streams for
// small batches), more rows take 2 (14 x 2 = 28 accumulators).
static const kern_fn ktab[14][4] = {T4(1), T4(2), T4(3), T4(4), T4(5), T4(6), T2(7),
                                    T2(8), T2(9), T2(10), T2(11), T2(12), T2(13), T2(14)};
_Static_assert(AVX512_MR <= 14, "kernel table covers MR <= 14");

// ---- the bf16 formats: pair panels converted to f32 and fma (GEMM_FMT_BF16, and
// GEMM_FMT_BF16_DP under MXCSR FTZ|DAZ), or vdpbf16ps (GEMM_FMT_BF16_DP) ----
// xp holds x at k (converted: rounded to bf16 for dp), 2*ceil(kc/2) rows, the pad row -0.0:
// (-0) * w adds -0, which leaves every acc as it is.
static inline __attribute__((always_inline)) void kern_q(const int mr, const int np, const struct kargs *a) {
    __m512 acc[14][4];
    init_acc(mr, np, a, acc);
    const float *xp = a->xp;
    const uint32_t *w = a->wq;
    const size_t ws = a->ws, xs = mr == 1 ? 1 : 16;
    const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
    for (int q = 0; q < (a->kc + 1) / 2; q++) {
        __m512 wv[4];
#pragma GCC unroll 4
        for (int j = 0; j < np; j++) {
            const __m512i u = _mm512_load_si512((const void *)(w + j * ws + (size_t)q * 16));
            wv[j] = _mm512_castsi512_ps(_mm512_and_si512(u, hi));
            _mm_prefetch((const char *)(w + j * ws + (size_t)(q + 32) * 16), _MM_HINT_T0);
        }
#pragma GCC unroll 16
        for (int i = 0; i < mr; i++) {
            __m512 xb = _mm512_set1_ps(xp[(size_t)(2 * q) * xs + i]);
#pragma GCC unroll 4
            for (int j = 0; j < np; j++) acc[i][j] = _mm512_fmadd_ps(xb, wv[j], acc[i][j]);
        }
#pragma GCC unroll 4
        for (int j = 0; j < np; j++) {
            const __m512i u = _mm512_load_si512((const void *)(w + j * ws + (size_t)q * 16));
            wv[j] = _mm512_castsi512_ps(_mm512_slli_epi32(u, 16));
        }
#pragma GCC unroll 16
        for (int i = 0; i < mr; i++) {
            __m512 xb = _mm512_set1_ps(xp[(size_t)(2 * q + 1) * xs + i]);
#pragma GCC unroll 4
            for (int j = 0; j < np; j++) acc[i][j] = _mm512_fmadd_ps(xb, wv[j], acc[i][j]);
        }
    }
    finish(mr, np, a, acc);
}
#define Q1(m, n) static void q_##m##_##n(const struct kargs *a) { kern_q(m, n, a); }
#define QROW2(m) Q1(m, 1) Q1(m, 2)
#define QROW4(m) Q1(m, 1) Q1(m, 2) Q1(m, 3) Q1(m, 4)
QROW4(1) QROW4(2) QROW4(3) QROW4(4) QROW4(5) QROW4(6) QROW2(7) QROW2(8)
QROW2(9) QROW2(10) QROW2(11) QROW2(12) QROW2(13) QROW2(14)
#define QT2(m) {q_##m##_1, q_##m##_2, NULL, NULL}
#define QT4(m) {q_##m##_1, q_##m##_2, q_##m##_3, q_##m##_4}
static const kern_fn qtab[14][4] = {QT4(1), QT4(2), QT4(3), QT4(4), QT4(5), QT4(6), QT2(7),
                                    QT2(8), QT2(9), QT2(10), QT2(11), QT2(12), QT2(13), QT2(14)};

// vdpbf16ps: xp holds bf16 pairs of x (uint32 bf16(x[2j]) << 16 | bf16(x[2j+1]), the pad -0.0)
// at ceil(kc/2) rows; one instruction per pair and tile register.
#pragma GCC push_options
#pragma GCC target("avx512bf16")
static inline __attribute__((always_inline)) void kern_d(const int mr, const int np, const struct kargs *a) {
    __m512 acc[14][4];
    init_acc(mr, np, a, acc);
    const uint32_t *xp = (const uint32_t *)a->xp, *w = a->wq;
    const size_t ws = a->ws, xs = mr == 1 ? 1 : 16;
    for (int q = 0; q < (a->kc + 1) / 2; q++) {
        __m512bh wv[4];
#pragma GCC unroll 4
        for (int j = 0; j < np; j++) {
            wv[j] = (__m512bh)_mm512_load_si512((const void *)(w + j * ws + (size_t)q * 16));
            _mm_prefetch((const char *)(w + j * ws + (size_t)(q + 32) * 16), _MM_HINT_T0);
        }
#pragma GCC unroll 16
        for (int i = 0; i < mr; i++) {
            __m512bh xb = (__m512bh)_mm512_set1_epi32((int)xp[(size_t)q * xs + i]);
#pragma GCC unroll 4
            for (int j = 0; j < np; j++) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], xb, wv[j]);
        }
    }
    finish(mr, np, a, acc);
}
#define D1(m, n) static void d_##m##_##n(const struct kargs *a) { kern_d(m, n, a); }
#define DROW2(m) D1(m, 1) D1(m, 2)
#define DROW4(m) D1(m, 1) D1(m, 2) D1(m, 3) D1(m, 4)
DROW4(1) DROW4(2) DROW4(3) DROW4(4) DROW4(5) DROW4(6) DROW2(7) DROW2(8)
DROW2(9) DROW2(10) DROW2(11) DROW2(12) DROW2(13) DROW2(14)
#pragma GCC pop_options
#define DT2(m) {d_##m##_1, d_##m##_2, NULL, NULL}
#define DT4(m) {d_##m##_1, d_##m##_2, d_##m##_3, d_##m##_4}
static const kern_fn dtab[14][4] = {DT4(1), DT4(2), DT4(3), DT4(4), DT4(5), DT4(6), DT2(7),
                                    DT2(8), DT2(9), DT2(10), DT2(11), DT2(12), DT2(13), DT2(14)};

// ---- macro-kernel ----
// In-register transpose of 16 rows of 16 floats: r[i] lane c -> r[c] lane i.
static inline __attribute__((always_inline)) void transpose16(__m512 r[16]) {
    __m512 t[16], u[16];
    for (int i = 0; i < 8; i++) { // pairs of rows interleaved within 128-bit lanes
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int g = 0; g < 4; g++) { // u[4g+c] lane L = rows 4g..4g+3 of column 4L+c
        u[4 * g + 0] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
        u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xee);
        u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xee);
    }
    for (int c = 0; c < 4; c++) { // gather the four 128-bit lanes of each column
        __m512 v0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x44), v1 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x44);
        __m512 v2 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xee), v3 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xee);
        r[c] = _mm512_shuffle_f32x4(v0, v1, 0x88);
        r[4 + c] = _mm512_shuffle_f32x4(v0, v1, 0xdd);
        r[8 + c] = _mm512_shuffle_f32x4(v2, v3, 0x88);
        r[12 + c] = _mm512_shuffle_f32x4(v2, v3, 0xdd);
    }
}

// xp (kc, 16) = transpose of x rows [0, mr), columns [0, kc); lanes >= mr are zero.
static void pack_x(float *restrict xp, const float *restrict x, size_t ldx, int mr, int kc) {
    for (int k = 0; k < kc; k += 16) {
        const int kt = kc - k < 16 ? kc - k : 16;
        const __mmask16 km = (__mmask16)((1u << kt) - 1u);
        __m512 r[16];
        for (int i = 0; i < 16; i++) r[i] = i < mr ? _mm512_maskz_loadu_ps(km, x + i * ldx + k) : _mm512_setzero_ps();
        transpose16(r);
        for (int i = 0; i < kt; i++) _mm512_store_ps(xp + (size_t)(k + i) * 16, r[i]);
    }
}

static __mmask16 lanes(int p, int n0, int n1) {
    int lo = n0 - p * 16, hi = n1 - p * 16;
    if (lo < 0) lo = 0;
    if (hi > 16) hi = 16;
    if (hi <= lo) return 0;
    return (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}

// How a block's X rows are prepared for its kernels.
enum xprep {
    XP_F32,     // transposed (mr > 1) or read in place (mr = 1)
    XP_PAD,     // the bf16 formats: always copied, k padded to even with -0.0
    XP_ROUND,   // the same, rounded to bf16 (dp by fma)
    XP_PAIRS    // rounded and joined into bf16 pairs (vdpbf16ps)
};

// Rounds n floats to bf16 in place (gemm_bf16_bits).
static void round_n(float *v, size_t n) {
    const __m512i one = _mm512_set1_epi32(1), bias = _mm512_set1_epi32(0x7fff);
    const __m512i top = _mm512_set1_epi32((int)0xffff0000u), abs = _mm512_set1_epi32(0x7fffffff);
    const __m512i inf = _mm512_set1_epi32(0x7f800000), quiet = _mm512_set1_epi32(0x00400000);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i u = _mm512_loadu_si512((const void *)(v + i));
        __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs), inf);
        __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_and_si512(_mm512_srli_epi32(u, 16), one), bias));
        r = _mm512_mask_or_epi32(r, nan, u, quiet);
        _mm512_storeu_si512((void *)(v + i), _mm512_and_si512(r, top));
    }
    for (; i < n; i++) v[i] = gemm_float(gemm_bf16_bits(v[i]));
}

// xp for mr rows of x at columns [0, kc): the layout of mode (enum xprep); xs = 16 for
// mr > 1, 1 for mr = 1 (a copy of the row). Returns the pointer the kernel reads.
static const float *prep_x(float *restrict xp, const float *restrict x, size_t ldx, int mr, int kc, int mode) {
    if (mode == XP_F32 && mr == 1) return x;
    const size_t xs = mr == 1 ? 1 : 16;
    if (mr == 1) memcpy(xp, x, (size_t)kc * 4);
    else pack_x(xp, x, ldx, mr, kc);
    if (mode == XP_F32) return xp;
    if (kc % 2)
        for (size_t i = 0; i < xs; i++) xp[(size_t)kc * xs + i] = -0.0f;
    const int kp = (kc + 1) & ~1;
    if (mode >= XP_ROUND) round_n(xp, (size_t)kp * xs);
    if (mode == XP_PAIRS) { // pair j at row j: written at or before the rows it reads
        uint32_t *u = (uint32_t *)xp;
        for (int j = 0; j < kp / 2; j++)
            for (size_t i = 0; i < xs; i++) u[j * xs + i] = u[2 * j * xs + i] | u[(2 * j + 1) * xs + i] >> 16;
    }
    return xp;
}

// Row groups packed together: XG_FLOATS floats of packed X (256 KB, in L2) per pass, so that
// each W panel pair is read once per pass and reused by every group while it is in L1/L2.
#define XG_FLOATS (4 * 16 * GEMM_KC_MAX)
#define XG_MAX 64 // row groups per pass at most

// The kernel table and X preparation of a call.
static void pick(const struct gemm_args *a, enum gemm_dp_use use, const kern_fn (**tab)[4], int *mode) {
    if (a->fmt == GEMM_FMT_F32) *tab = ktab, *mode = XP_F32;
    else if (a->fmt == GEMM_FMT_BF16) *tab = qtab, *mode = XP_PAD;
    else if (use == GEMM_DP_VDPBF16PS) *tab = dtab, *mode = XP_PAIRS;
    else *tab = qtab, *mode = XP_ROUND;
}

void gemm_avx512_block_with(const struct gemm_args *a, int m0, int m1, int p0, int p1, enum gemm_dp_use use) {
    static _Thread_local float xp[XG_FLOATS] __attribute__((aligned(64)));
    const kern_fn(*tab)[4];
    int mode;
    pick(a, use, &tab, &mode);
    const int K = a->K, pairs = a->fmt != GEMM_FMT_F32;
    // K blocks of equal size, at most a->kc each (fewer partial-sum round trips through y),
    // shortened (not below 256) so that all row groups of the block fit one pass; even for
    // the bf16 formats (a block starts at a pair)
    const int ng = (m1 - m0 + AVX512_MR - 1) / AVX512_MR, fit = XG_FLOATS / 16 / (ng > 0 ? ng : 1);
    const int kcm = ng > 1 && fit >= 256 && fit < a->kc ? fit & ~pairs : a->kc;
    const int nkb = K > kcm ? (K + kcm - 1) / kcm : 1;
    const int KC = pairs ? ((K + nkb - 1) / nkb + 1) & ~1 : (K + nkb - 1) / nkb;
    int G = KC < 1 || XG_FLOATS / (16 * KC) < 1 ? 1 : XG_FLOATS / (16 * KC); // groups per pass
    if (G > XG_MAX) G = XG_MAX;
    struct kargs ka;
    ka.ws = pairs ? (size_t)(K + 1) / 2 * 16 : (size_t)K * 16;
    ka.ldy = a->ldy;
    ka.bf16 = a->bf16;
    const unsigned csr = _mm_getcsr();
    if (a->fmt == GEMM_FMT_BF16_DP) _mm_setcsr(csr | GEMM_MXCSR_FTZ_DAZ); // the dp contract (gemm.h)
    for (int k0 = 0;; k0 += KC) {
        ka.kc = K - k0 < KC ? K - k0 : KC;
        ka.first = k0 == 0;
        ka.last = k0 + ka.kc >= K;
        for (int g0 = m0; g0 < m1; g0 += G * AVX512_MR) {
            const int g1 = g0 + G * AVX512_MR < m1 ? g0 + G * AVX512_MR : m1;
            const float *xg[XG_MAX]; // what each group's kernels read
            for (int i = g0, g = 0; i < g1; i += AVX512_MR, g++)
                xg[g] = prep_x(xp + (size_t)g * 16 * KC, a->x + (size_t)i * a->ldx + k0, a->ldx,
                                             g1 - i < AVX512_MR ? g1 - i : AVX512_MR, ka.kc, mode);
            const int npmax = g1 - g0 <= 6 ? 4 : 2;
            for (int p = p0; p < p1; p += npmax) {
                const int np = p1 - p < npmax ? p1 - p : npmax;
                for (int j = 0; j < np; j++) ka.mk[j] = lanes(p + j, a->n0, a->n1);
                ka.w = pairs ? NULL : a->w + (size_t)p * ka.ws + (size_t)k0 * 16;
                ka.wq = pairs ? a->q + (size_t)p * ka.ws + (size_t)k0 / 2 * 16 : NULL;
                ka.bias = a->bias ? a->bias + (size_t)p * 16 : NULL;
                for (int i = g0, g = 0; i < g1; i += AVX512_MR, g++) {
                    const int mr = g1 - i < AVX512_MR ? g1 - i : AVX512_MR;
                    ka.xp = xg[g];
                    ka.y = a->y + (size_t)i * a->ldy + (size_t)p * 16;
                    tab[mr - 1][np - 1](&ka); // np <= 2 unless the pass is one group of <= 6 rows
                }
            }
        }
        if (ka.last) break;
    }
    _mm_setcsr(csr);
}

static void block(const struct gemm_args *a, int m0, int m1, int p0, int p1) {
    static int bf16 = -1; // racing first calls store the same value
    if (bf16 < 0) bf16 = __builtin_cpu_supports("avx512bf16") ? 1 : 0;
    gemm_avx512_block_with(a, m0, m1, p0, p1, bf16 ? GEMM_DP_VDPBF16PS : GEMM_DP_FMA);
}
static void block_f(const struct gemm_args *a, int m0, int m1, int p0, int p1) {
    gemm_avx512_block_with(a, m0, m1, p0, p1, GEMM_DP_FMA);
}

// ---- packing ----
// 16 consecutive source elements of a row as f32 (n < 16: the rest are zero).
static inline __attribute__((always_inline)) __m512 load16(const void *row, int type, size_t j, int n) {
    if (n < 16) {
        float t[16] = {0};
        for (int i = 0; i < n; i++) t[i] = gemm_src_at(row, type, j + i);
        return _mm512_loadu_ps(t);
    }
    if (type == GEMM_SRC_F32) return _mm512_loadu_ps((const float *)row + j);
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)row + j));
    __m512i u = _mm512_cvtepu16_epi32(h);
    if (type == GEMM_SRC_BF16) return _mm512_castsi512_ps(_mm512_slli_epi32(u, 16));
    // vcvtph2ps is exact but quiets signalling NaNs; f16_to_f32 keeps them: clear the quiet
    // bit again where the source was a signalling NaN (exponent 31, bit 9 clear, payload != 0).
    __m512 f = _mm512_cvtph_ps(h);
    __mmask16 sn = _mm512_cmpeq_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7e00)), _mm512_set1_epi32(0x7c00)) &
                   _mm512_test_epi32_mask(u, _mm512_set1_epi32(0x1ff));
    return _mm512_castsi512_ps(_mm512_mask_and_epi32(_mm512_castps_si512(f), sn, _mm512_castps_si512(f),
                                                     _mm512_set1_epi32(~0x00400000)));
}

// One panel: rows[c] (c < nrow) are the source rows, the rest zero. Full 16-row blocks of 16
// k take the fast path (type is a constant in each instance).
static inline __attribute__((always_inline)) void pack_panel(float *restrict d, const void *const rows[16], int nrow,
                                                             int type, int K) {
    int k = 0;
    if (nrow == 16)
        for (; k + 16 <= K; k += 16) {
            __m512 r[16];
#pragma GCC unroll 16
            for (int c = 0; c < 16; c++) r[c] = load16(rows[c], type, (size_t)k, 16);
            transpose16(r);
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++) _mm512_store_ps(d + (size_t)(k + i) * 16, r[i]);
        }
    for (; k < K; k += 16) {
        const int kt = K - k < 16 ? K - k : 16;
        __m512 r[16];
        for (int c = 0; c < 16; c++) r[c] = c < nrow ? load16(rows[c], type, (size_t)k, kt) : _mm512_setzero_ps();
        transpose16(r);
        for (int i = 0; i < kt; i++) _mm512_store_ps(d + (size_t)(k + i) * 16, r[i]);
    }
}

static void pack(float *dst, const struct gemm_mat *src, int pa, int pb) {
    const int N = src->N, K = src->K, type = src->type;
    for (int p = pa; p < pb; p++) {
        float *d = dst + (size_t)(p - pa) * K * 16;
        const void *rows[16];
        const int nrow = N - p * 16 < 16 ? N - p * 16 : 16;
        for (int c = 0; c < nrow; c++) rows[c] = gemm_src_row(src, (size_t)p * 16 + c);
        if (type == GEMM_SRC_F32) pack_panel(d, rows, nrow, GEMM_SRC_F32, K);
        else if (type == GEMM_SRC_BF16) pack_panel(d, rows, nrow, GEMM_SRC_BF16, K);
        else pack_panel(d, rows, nrow, GEMM_SRC_F16, K);
    }
}

// The bf16 formats' pair panels (gemm.h), 16 pairs (32 k) of 16 rows at a time: each value
// rounded as gemm_bf16_bits, k even joined into the high half, then transposed. The same bits
// as gemm.c's scalar pack_pairs (tests/test_gemm.c compares them).
static inline __attribute__((always_inline)) __m512i bf16_bits16(__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                  _mm512_set1_epi32(0x7f800000));
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1)),
                                                     _mm512_set1_epi32(0x7fff)));
    r = _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x00400000));
    return _mm512_and_si512(r, _mm512_set1_epi32((int)0xffff0000u));
}

// Pairs k/2 .. k/2+15 of one row (n: source elements left from k, >= 32 on the fast path).
static inline __attribute__((always_inline)) __m512 pairs16(const void *row, int type, int k, int n) {
    const int n0 = n < 16 ? n : 16, n1 = n - 16 < 0 ? 0 : n - 16 < 16 ? n - 16 : 16;
    const __m512i a = bf16_bits16(load16(row, type, (size_t)k, n0));
    const __m512i b = bf16_bits16(load16(row, type, (size_t)k + 16, n1));
    const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i od = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    const __m512i hi = _mm512_permutex2var_epi32(a, ev, b), lo = _mm512_permutex2var_epi32(a, od, b);
    return _mm512_castsi512_ps(_mm512_or_si512(hi, _mm512_srli_epi32(lo, 16)));
}

static inline __attribute__((always_inline)) void pack_q_panel(uint32_t *restrict d, const void *const rows[16],
                                                               int nrow, int type, int K) {
    const int K2 = (K + 1) / 2;
    int j = 0;
    if (nrow == 16)
        for (; 2 * j + 32 <= K; j += 16) {
            __m512 r[16];
#pragma GCC unroll 16
            for (int c = 0; c < 16; c++) r[c] = pairs16(rows[c], type, 2 * j, 32);
            transpose16(r);
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++) _mm512_store_ps((float *)d + (size_t)(j + i) * 16, r[i]);
        }
    for (; j < K2; j += 16) {
        const int jt = K2 - j < 16 ? K2 - j : 16;
        __m512 r[16];
        for (int c = 0; c < 16; c++) r[c] = c < nrow ? pairs16(rows[c], type, 2 * j, K - 2 * j) : _mm512_setzero_ps();
        transpose16(r);
        for (int i = 0; i < jt; i++) _mm512_store_ps((float *)d + (size_t)(j + i) * 16, r[i]);
    }
}

static void pack_q(uint32_t *dst, const struct gemm_mat *src, int pa, int pb) {
    const int N = src->N, K = src->K, type = src->type;
    for (int p = pa; p < pb; p++) {
        uint32_t *d = dst + (size_t)(p - pa) * ((K + 1) / 2) * 16;
        const void *rows[16];
        const int nrow = N - p * 16 < 16 ? N - p * 16 : 16;
        for (int c = 0; c < nrow; c++) rows[c] = gemm_src_row(src, (size_t)p * 16 + c);
        if (type == GEMM_SRC_F32) pack_q_panel(d, rows, nrow, GEMM_SRC_F32, K);
        else if (type == GEMM_SRC_BF16) pack_q_panel(d, rows, nrow, GEMM_SRC_BF16, K);
        else pack_q_panel(d, rows, nrow, GEMM_SRC_F16, K);
    }
}

// Task shape 56 rows x 96 panels (1536 columns), K blocks <= 1024: measured best of mc 14..112,
// pc 16..192, kc 512..1024 with the grouped passes (docs/results/speed.md).
const struct gemm_isa gemm_isa_avx512 = {"avx512", AVX512_MR, 4 * AVX512_MR, 96, 1024, block, pack, pack_q};
const struct gemm_isa gemm_isa_avx512f = {"avx512f", AVX512_MR, 4 * AVX512_MR, 96, 1024, block_f, pack, pack_q};
