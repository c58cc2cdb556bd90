// gemm_avx2.c: the AVX2+FMA path (what an AVX2-only CPU such as Zen 3 runs). Same packed
// layout and loop structure as gemm_avx512.c with 8-lane vectors: a 16-column panel is two
// ymm accumulators per row. The target pragma enables AVX2/FMA/F16C and disables AVX-512 so
// that a -march=native build on an AVX-512 machine cannot put EVEX instructions in here.
#pragma GCC target("avx2,fma,f16c,no-avx512f")
#include <immintrin.h>

#include "model/gemm_internal.h"

#ifndef AVX2_MR
#define AVX2_MR 6   // rows per micro-tile: 6 x 1 panel = 12 accumulators + 2 W + 1 broadcast
#endif

// ---- micro-kernel ----
struct kargs {
    int kc;
    const float *xp;   // (kc, 8) packed X rows (lanes < mr used); for mr = 1 the row itself
    const float *w;    // first panel at k0; panel j at w + j*ws (GEMM_FMT_F32)
    const uint32_t *wq; // bf16 formats: first pair panel at k0/2; panel j at wq + j*ws
    size_t ws;         // panel stride in floats (K*16) or pairs (ceil(K/2)*16)
    float *y;          // tile origin (row i0, column p*16)
    size_t ldy;
    const float *bias; // bias at column p*16, or NULL
    int full[8];      // half-panel entirely inside [n0, n1)
    __m256i mk[8];    // lane masks (sign bit) for partial halves
    int first, last, bf16;
};

static inline __attribute__((always_inline)) __m256 load_y(const struct kargs *a, const float *p, int v) {
    return a->full[v] ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, a->mk[v]);
}

static inline __attribute__((always_inline)) __m256 epilogue(__m256 v, const struct kargs *a, int vi, int bf16) {
    if (a->bias) v = _mm256_add_ps(v, load_y(a, a->bias + vi * 8, vi));
    __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    v = _mm256_blendv_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32((int)GEMM_QNAN)), nan);
    if (bf16) { // RNE on the bit pattern; NaN is canonical here and maps to itself
        __m256i u = _mm256_castps_si256(v);
        __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
        u = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
        v = _mm256_castsi256_ps(_mm256_and_si256(u, _mm256_set1_epi32((int)0xffff0000u)));
    }
    return v;
}

// The accumulators of a tile: zero on the first K block, else the partial sums in y; and
// back: the epilogue on the last K block, then the (masked) store (both kernels below).
static inline __attribute__((always_inline)) void init_acc(const int mr, const int nv, const struct kargs *a,
                                                           __m256 acc[6][8]) {
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++)
            acc[i][v] = a->first ? _mm256_setzero_ps() : load_y(a, a->y + i * a->ldy + v * 8, v);
}

static inline __attribute__((always_inline)) void finish_tile(const int mr, const int nv, const struct kargs *a,
                                                              __m256 acc[6][8]) {
    if (a->last) {
#pragma GCC unroll 8
        for (int i = 0; i < mr; i++)
#pragma GCC unroll 8
            for (int v = 0; v < nv; v++) acc[i][v] = epilogue(acc[i][v], a, v, a->bf16);
    }
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++) {
            float *p = a->y + i * a->ldy + v * 8;
            if (a->full[v]) _mm256_storeu_ps(p, acc[i][v]);
            else _mm256_maskstore_ps(p, a->mk[v], acc[i][v]);
        }
}

static inline __attribute__((always_inline)) void kern(const int mr, const int nv, const struct kargs *a) {
    __m256 acc[6][8]; // table maximum; only [mr][nv] is used (<= 12 registers)
    const float *xp = a->xp, *w = a->w;
    const size_t ws = a->ws;
    init_acc(mr, nv, a, acc);
    for (int k = 0; k < a->kc; k++) {
        __m256 wv[8];
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++) wv[v] = _mm256_load_ps(w + (v / 2) * ws + (size_t)k * 16 + (v % 2) * 8);
#pragma GCC unroll 8
        for (int i = 0; i < mr; i++) {
            __m256 xb = _mm256_broadcast_ss(xp + k * (mr == 1 ? 1 : 8) + i); // one row: x itself
#pragma GCC unroll 8
            for (int v = 0; v < nv; v++) acc[i][v] = _mm256_fmadd_ps(xb, wv[v], acc[i][v]);
        }
    }
    finish_tile(mr, nv, a, acc);
}

typedef void (*kern_fn)(const struct kargs *a);
#define K1(m, n) static void k_##m##_##n(const struct kargs *a) { kern(m, 2 * n, a); }
#define KROW(m) K1(m, 1) K1(m, 2)
KROW(1) KROW(2) KROW(3) K1(4, 1) K1(5, 1) K1(6, 1) K1(1, 3) K1(1, 4)
#define T1(m) {k_##m##_1, k_##m##_2, NULL, NULL}
#define T0(m) {k_##m##_1, NULL, NULL, NULL}
// ktab[mr-1][np-1]: one row takes 4 panels (8 accumulators, W as memory operands), up to 3
// rows 2 panels (12 accumulators), more rows 1 panel.
static const kern_fn ktab[6][4] = {{k_1_1, k_1_2, k_1_3, k_1_4}, T1(2), T1(3), T0(4), T0(5), T0(6)};
_Static_assert(AVX2_MR <= 6, "kernel table covers MR <= 6");

// ---- the bf16 formats: pair panels converted to f32 and fma (GEMM_FMT_BF16, and
// GEMM_FMT_BF16_DP under MXCSR FTZ|DAZ) ----
// xp holds x (rounded to bf16 for dp) at 2*ceil(kc/2) rows, the pad row -0.0 (adds -0).
static inline __attribute__((always_inline)) void kern_q(const int mr, const int nv, const struct kargs *a) {
    __m256 acc[6][8];
    const float *xp = a->xp;
    const uint32_t *w = a->wq;
    const size_t ws = a->ws, xs = mr == 1 ? 1 : 8;
    init_acc(mr, nv, a, acc);
    for (int q = 0; q < (a->kc + 1) / 2; q++) {
        __m256 wv[8];
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++) {
            const __m256i u = _mm256_load_si256((const __m256i *)(w + (v / 2) * ws + (size_t)q * 16 + (v % 2) * 8));
            wv[v] = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_srli_epi32(u, 16), 16)); // no mask register: 16 ymm
        }
#pragma GCC unroll 8
        for (int i = 0; i < mr; i++) {
            __m256 xb = _mm256_broadcast_ss(xp + (size_t)(2 * q) * xs + i);
#pragma GCC unroll 8
            for (int v = 0; v < nv; v++) acc[i][v] = _mm256_fmadd_ps(xb, wv[v], acc[i][v]);
        }
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++) {
            const __m256i u = _mm256_load_si256((const __m256i *)(w + (v / 2) * ws + (size_t)q * 16 + (v % 2) * 8));
            wv[v] = _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
        }
#pragma GCC unroll 8
        for (int i = 0; i < mr; i++) {
            __m256 xb = _mm256_broadcast_ss(xp + (size_t)(2 * q + 1) * xs + i);
#pragma GCC unroll 8
            for (int v = 0; v < nv; v++) acc[i][v] = _mm256_fmadd_ps(xb, wv[v], acc[i][v]);
        }
    }
    finish_tile(mr, nv, a, acc);
}
#define Q1(m, n) static void q_##m##_##n(const struct kargs *a) { kern_q(m, 2 * n, a); }
#define QROW(m) Q1(m, 1) Q1(m, 2)
QROW(1) QROW(2) QROW(3) Q1(4, 1) Q1(5, 1) Q1(6, 1) Q1(1, 3) Q1(1, 4)
#define QT1(m) {q_##m##_1, q_##m##_2, NULL, NULL}
#define QT0(m) {q_##m##_1, NULL, NULL, NULL}
static const kern_fn qtab[6][4] = {{q_1_1, q_1_2, q_1_3, q_1_4}, QT1(2), QT1(3), QT0(4), QT0(5), QT0(6)};

// ---- macro-kernel ----
// In-register transpose of 8 rows of 8 floats.
static inline __attribute__((always_inline)) void transpose8(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int g = 0; g < 2; g++) { // u[4g+c] lane L = rows 4g..4g+3 of column 4L+c
        u[4 * g + 0] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
        u[4 * g + 1] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0xee);
        u[4 * g + 2] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        u[4 * g + 3] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xee);
    }
    for (int c = 0; c < 4; c++) {
        r[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
        r[4 + c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
    }
}

// xp (kc, 8) = transpose of x rows [0, mr), columns [0, kc); lanes >= mr are zero.
static void pack_x(float *restrict xp, const float *restrict x, size_t ldx, int mr, int kc) {
    for (int k = 0; k < kc; k += 8) {
        const int kt = kc - k < 8 ? kc - k : 8;
        __m256 r[8];
        if (kt == 8)
            for (int i = 0; i < 8; i++) r[i] = i < mr ? _mm256_loadu_ps(x + i * ldx + k) : _mm256_setzero_ps();
        else {
            const __m256i km = _mm256_cmpgt_epi32(_mm256_set1_epi32(kt), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
            for (int i = 0; i < 8; i++) r[i] = i < mr ? _mm256_maskload_ps(x + i * ldx + k, km) : _mm256_setzero_ps();
        }
        transpose8(r);
        for (int i = 0; i < kt; i++) _mm256_store_ps(xp + (size_t)(k + i) * 8, r[i]);
    }
}

// Lanes [lo, hi) of half-panel v (columns c0 .. c0+7) inside [n0, n1).
static void half_mask(struct kargs *ka, int v, int c0, int n0, int n1) {
    int lo = n0 - c0, hi = n1 - c0;
    if (lo < 0) lo = 0;
    if (hi > 8) hi = 8;
    ka->full[v] = lo == 0 && hi == 8;
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i in = _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(hi), idx),
                                  _mm256_cmpgt_epi32(idx, _mm256_set1_epi32(lo - 1)));
    ka->mk[v] = in;
}

// xp for mr rows of x at columns [0, kc): F32 transposed (mr > 1) or read in place; the bf16
// formats always copied (xs = 8 for mr > 1, 1 for mr = 1), k padded to even with -0.0 and, for
// dp, rounded to bf16. Returns the pointer the kernel reads.
static const float *prep_x(float *restrict xp, const float *restrict x, size_t ldx, int mr, int kc, int fmt) {
    if (fmt == GEMM_FMT_F32 && mr == 1) return x;
    const size_t xs = mr == 1 ? 1 : 8;
    if (mr == 1) memcpy(xp, x, (size_t)kc * 4);
    else pack_x(xp, x, ldx, mr, kc);
    if (fmt == GEMM_FMT_F32) return xp;
    if (kc % 2)
        for (size_t i = 0; i < xs; i++) xp[(size_t)kc * xs + i] = -0.0f;
    if (fmt == GEMM_FMT_BF16_DP)
        for (size_t i = 0; i < (size_t)((kc + 1) & ~1) * xs; i++) xp[i] = gemm_float(gemm_bf16_bits(xp[i]));
    return xp;
}

// Row groups packed together: XG_FLOATS floats of packed X (256 KB, in L2) per pass, so that
// each W panel is read once per pass and reused by every group while it is in L1/L2.
#define XG_FLOATS (16 * 8 * 512)
#define XG_MAX 64 // row groups per pass at most

static void block(const struct gemm_args *a, int m0, int m1, int p0, int p1) {
    static _Thread_local float xp[XG_FLOATS] __attribute__((aligned(64)));
    const int K = a->K, pairs = a->fmt != GEMM_FMT_F32;
    const kern_fn(*tab)[4] = pairs ? qtab : ktab;
    // K blocks of equal size, at most a->kc each (fewer partial-sum round trips through y),
    // shortened (not below 256) so that all row groups of the block fit one pass; even for
    // the bf16 formats (a block starts at a pair)
    const int ng = (m1 - m0 + AVX2_MR - 1) / AVX2_MR, fit = XG_FLOATS / 8 / (ng > 0 ? ng : 1);
    const int kcm = ng > 1 && fit >= 256 && fit < a->kc ? fit & ~pairs : a->kc;
    const int nkb = K > kcm ? (K + kcm - 1) / kcm : 1;
    const int KC = pairs ? ((K + nkb - 1) / nkb + 1) & ~1 : (K + nkb - 1) / nkb;
    int G = KC < 1 || XG_FLOATS / (8 * KC) < 1 ? 1 : XG_FLOATS / (8 * KC); // groups per pass
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
        for (int g0 = m0; g0 < m1; g0 += G * AVX2_MR) {
            const int g1 = g0 + G * AVX2_MR < m1 ? g0 + G * AVX2_MR : m1;
            const float *xg[XG_MAX];
            for (int i = g0, g = 0; i < g1; i += AVX2_MR, g++)
                xg[g] = prep_x(xp + (size_t)g * 8 * KC, a->x + (size_t)i * a->ldx + k0, a->ldx,
                               g1 - i < AVX2_MR ? g1 - i : AVX2_MR, ka.kc, a->fmt);
            // one group of 1 row takes 4 panels, of <= 3 rows 2, otherwise 1 per call
            const int npmax = g1 - g0 == 1 ? 4 : g1 - g0 <= 3 ? 2 : 1;
            for (int p = p0; p < p1; p += npmax) {
                const int np = p1 - p < npmax ? p1 - p : npmax;
                for (int v = 0; v < 2 * np; v++) half_mask(&ka, v, p * 16 + v * 8, a->n0, a->n1);
                ka.w = pairs ? NULL : a->w + (size_t)p * ka.ws + (size_t)k0 * 16;
                ka.wq = pairs ? a->q + (size_t)p * ka.ws + (size_t)k0 / 2 * 16 : NULL;
                ka.bias = a->bias ? a->bias + (size_t)p * 16 : NULL;
                for (int i = g0, g = 0; i < g1; i += AVX2_MR, g++) {
                    const int mr = g1 - i < AVX2_MR ? g1 - i : AVX2_MR;
                    ka.xp = xg[g];
                    ka.y = a->y + (size_t)i * a->ldy + (size_t)p * 16;
                    tab[mr - 1][np - 1](&ka);
                }
            }
        }
        if (ka.last) break;
    }
    _mm_setcsr(csr);
}

// ---- packing ----
// 8 consecutive source elements of a row as f32 (n < 8: the rest are zero).
static inline __attribute__((always_inline)) __m256 load8(const void *row, int type, size_t j, int n) {
    if (n < 8) {
        float t[8] = {0};
        for (int i = 0; i < n; i++) t[i] = gemm_src_at(row, type, j + i);
        return _mm256_loadu_ps(t);
    }
    if (type == GEMM_SRC_F32) return _mm256_loadu_ps((const float *)row + j);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)row + j));
    __m256i u = _mm256_cvtepu16_epi32(h);
    if (type == GEMM_SRC_BF16) return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
    // vcvtph2ps quiets signalling NaNs; f16_to_f32 keeps them (see gemm_avx512.c).
    __m256 f = _mm256_cvtph_ps(h);
    __m256i ex = _mm256_cmpeq_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7e00)), _mm256_set1_epi32(0x7c00));
    __m256i z = _mm256_cmpeq_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x1ff)), _mm256_setzero_si256());
    __m256i sn = _mm256_andnot_si256(z, ex);
    return _mm256_castsi256_ps(_mm256_andnot_si256(_mm256_and_si256(sn, _mm256_set1_epi32(0x00400000)),
                                                   _mm256_castps_si256(f)));
}

// One panel: rows[c] (c < nrow) are the source rows, the rest zero. Full 8-row blocks of 8 k
// take the fast path (type is a constant in each instance).
static inline __attribute__((always_inline)) void pack_panel(float *restrict d, const void *const rows[16], int nrow,
                                                             int type, int K) {
    int k = 0;
    if (nrow == 16)
        for (; k + 8 <= K; k += 8)
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++) {
                __m256 r[8];
#pragma GCC unroll 8
                for (int c = 0; c < 8; c++) r[c] = load8(rows[8 * h + c], type, (size_t)k, 8);
                transpose8(r);
#pragma GCC unroll 8
                for (int i = 0; i < 8; i++) _mm256_store_ps(d + (size_t)(k + i) * 16 + 8 * h, r[i]);
            }
    for (; k < K; k += 8) {
        const int kt = K - k < 8 ? K - k : 8;
        for (int h = 0; h < 2; h++) {
            __m256 r[8];
            for (int c = 0; c < 8; c++)
                r[c] = 8 * h + c < nrow ? load8(rows[8 * h + c], type, (size_t)k, kt) : _mm256_setzero_ps();
            transpose8(r);
            for (int i = 0; i < kt; i++) _mm256_store_ps(d + (size_t)(k + i) * 16 + 8 * h, r[i]);
        }
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

// The bf16 formats' pair panels (gemm.h), 8 pairs (16 k) of 8 rows at a time: each value
// rounded as gemm_bf16_bits, k even joined into the high half, then transposed. The same bits
// as gemm.c's scalar pack_pairs (tests/test_gemm.c compares them).
static inline __attribute__((always_inline)) __m256i bf16_bits8(__m256 v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                           _mm256_set1_epi32(0x7f800000));
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1)),
                                                     _mm256_set1_epi32(0x7fff)));
    r = _mm256_blendv_epi8(r, _mm256_or_si256(u, _mm256_set1_epi32(0x00400000)), nan);
    return _mm256_and_si256(r, _mm256_set1_epi32((int)0xffff0000u));
}

// Pairs k/2 .. k/2+7 of one row (n: source elements left from k, >= 16 on the fast path).
static inline __attribute__((always_inline)) __m256 pairs8(const void *row, int type, int k, int n) {
    const int n0 = n < 8 ? n : 8, n1 = n - 8 < 0 ? 0 : n - 8 < 8 ? n - 8 : 8;
    const __m256 a = _mm256_castsi256_ps(bf16_bits8(load8(row, type, (size_t)k, n0)));
    const __m256 b = _mm256_castsi256_ps(bf16_bits8(load8(row, type, (size_t)k + 8, n1)));
    // within 128-bit lanes: a0 a2 b0 b2 | a4 a6 b4 b6; then the 64-bit quarters in order 0 2 1 3
    const __m256i hi = _mm256_permute4x64_epi64(_mm256_castps_si256(_mm256_shuffle_ps(a, b, 0x88)), 0xd8);
    const __m256i lo = _mm256_permute4x64_epi64(_mm256_castps_si256(_mm256_shuffle_ps(a, b, 0xdd)), 0xd8);
    return _mm256_castsi256_ps(_mm256_or_si256(hi, _mm256_srli_epi32(lo, 16)));
}

static inline __attribute__((always_inline)) void pack_q_panel(uint32_t *restrict d, const void *const rows[16],
                                                               int nrow, int type, int K) {
    const int K2 = (K + 1) / 2;
    int j = 0;
    if (nrow == 16)
        for (; 2 * j + 16 <= K; j += 8)
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++) {
                __m256 r[8];
#pragma GCC unroll 8
                for (int c = 0; c < 8; c++) r[c] = pairs8(rows[8 * h + c], type, 2 * j, 16);
                transpose8(r);
#pragma GCC unroll 8
                for (int i = 0; i < 8; i++) _mm256_store_ps((float *)d + (size_t)(j + i) * 16 + 8 * h, r[i]);
            }
    for (; j < K2; j += 8) {
        const int jt = K2 - j < 8 ? K2 - j : 8;
        for (int h = 0; h < 2; h++) {
            __m256 r[8];
            for (int c = 0; c < 8; c++)
                r[c] = 8 * h + c < nrow ? pairs8(rows[8 * h + c], type, 2 * j, K - 2 * j) : _mm256_setzero_ps();
            transpose8(r);
            for (int i = 0; i < jt; i++) _mm256_store_ps((float *)d + (size_t)(j + i) * 16 + 8 * h, r[i]);
        }
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

// Task shape 96 rows x 32 panels, K blocks <= 512: all 16 row groups of a block are packed in
// one pass and each W panel (512 k, 32 KB) is reused by them from L1 (docs/results/speed.md, tuning).
const struct gemm_isa gemm_isa_avx2 = {"avx2", AVX2_MR, 16 * AVX2_MR, 32, 512, block, pack, pack_q};
