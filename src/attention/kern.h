// kern.h: small inline numerics shared by the tiled attention kernels (flash.c, flash_ref.c):
// binary32 -> fp16 -> binary32 rounding without a call, the correctly rounded exp and tanh of
// spec/attention.md 7.3, and the eps_bar histogram update of section 5. Internal.
#ifndef HIFA4_ATTN_KERN_H
#define HIFA4_ATTN_KERN_H

#include <math.h>
#include <string.h>

#include "attention/attn.h"
#include "base/common.h"

// fp16(x) of spec 7.5 as a float: RNE to 11 significant bits, subnormals kept (grid 2^-24),
// |x| >= 65520 -> +-inf, NaN stays NaN. Equal to round_fp16() for every binary32 input
// (tests/test_attention.c checks a dense sweep of all exponents that matter). Branch-free
// (selects only) so loops over it vectorize.
static inline float kern_fp16(float x) {
    uint32_t u = f32_bits(x), a = u & 0x7fffffffu, s = u & 0x80000000u;
    uint32_t nrm = (a + 0xfffu + ((a >> 13) & 1u)) & 0xffffe000u;
    // below 2^-14: 0.5 + |x| has ulp 2^-24, so the add rounds |x| to the fp16 subnormal grid
    // with ties to even; subtracting 0.5 is exact.
    uint32_t sub = f32_bits((bits_f32(a) + 0.5f) - 0.5f);
    uint32_t r = a < 0x38800000u ? sub : nrm;
    r = a >= 0x477ff000u ? (a > 0x7f800000u ? a : 0x7f800000u) : r;
    return bits_f32(r | s);
}

// bf16(x) (RNE, NaN kept) branch-free; equal to round_bf16() of common.h.
static inline float kern_bf16(float x) {
    uint32_t u = f32_bits(x);
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    return bits_f32((u & 0x7fffffffu) > 0x7f800000u ? u : r);
}

// binary64 exp(x) within a few binary64 ulps for |x| < 700, branch-free (vectorizes):
// k = round(x / ln2), r = x - k ln2 with fdlibm's split ln2 (|r| <= 0.35, k * LN2_HI exact),
// a degree-13 Taylor polynomial (Horner; truncation < 2^-57) and 2^k built in the bits.
static inline double kern_exp64(double x) {
    const double shift = 0x1.8p52; // adding it rounds to an integer, kept in the low bits
    double t = x * 0x1.71547652b82fep0 + shift, kd = t - shift;
    double r = (x - kd * 6.93147180369123816490e-01) - kd * 1.90821492927058770002e-10;
    double p = 1.0 / 6227020800.0;
    p = 1.0 / 479001600.0 + r * p;
    p = 1.0 / 39916800.0 + r * p;
    p = 1.0 / 3628800.0 + r * p;
    p = 1.0 / 362880.0 + r * p;
    p = 1.0 / 40320.0 + r * p;
    p = 1.0 / 5040.0 + r * p;
    p = 1.0 / 720.0 + r * p;
    p = 1.0 / 120.0 + r * p;
    p = 1.0 / 24.0 + r * p;
    p = 1.0 / 6.0 + r * p;
    p = 0.5 + r * p;
    p = 1.0 + r * p;
    p = 1.0 + r * p;
    uint64_t tb, sb;
    memcpy(&tb, &t, 8);
    sb = (tb + 1023u) << 52; // 2^k: k sits in the low bits of t's significand
    double sc;
    memcpy(&sc, &sb, 8);
    return p * sc;
}

// Correctly rounded binary32 exp / tanh (spec 7.3): binary64 libm, rounded once.
static inline float kern_exp(float x) { return (float)exp((double)x); }
static inline float kern_tanh(float x) { return (float)tanh((double)x); }

// y[i] = (float)exp((double)x[i]) for i < n, bit for bit, vectorizable (y must not alias x).
// Why it equals the libm path: for x in (-87, 88) a binary64 exp with range reduction
// k = round(x/ln2), r = x - k ln2 (fdlibm's split ln2, |r| <= 0.35, k*LN2_HI exact) and a
// degree-13 Taylor polynomial (truncation < 2^-57) is within a few binary64 ulps of exp(x), as
// is glibc's exp (< 1 ulp). Both therefore round to the same binary32 unless exp(x) lies within
// ~10 binary64 ulps of a binary32 rounding midpoint; every element within 64 ulps of a
// midpoint, or outside (-87, 88) (binary32 subnormal/overflow results), NaN included, is
// recomputed with libm. tests/test_attention.c checks equality on a dense sample of all
// binary32 inputs in the range (and on all of them with HIFA4_EXHAUSTIVE=1).
void kern_exp_n(float *y, const float *x, int n);
// y[i] = (float)tanh((double)x[i]), bit for bit, vectorizable (y must not alias x). Same
// construction (kern.c tanh_fast): a binary64 approximation within ~64 ulps, libm for every
// element within 1024 ulps of a binary32 midpoint, for tiny |x| and for NaN; checked like
// kern_exp_n.
void kern_tanh_n(float *y, const float *x, int n);

static inline void kern_eps_add(struct attn_diag_acc *a, double eps) {
    int b;
    if (eps < ATTN_EPS_LO) b = 0;
    else if (eps >= ATTN_EPS_HI) b = ATTN_EPS_BINS + 1;
    else {
        b = 1 + (int)((eps - ATTN_EPS_LO) * (ATTN_EPS_BINS / (ATTN_EPS_HI - ATTN_EPS_LO)));
        if (b > ATTN_EPS_BINS) b = ATTN_EPS_BINS;
    }
    a->eps_hist[b]++;
    if (a->eps_tiles == 0 || eps < a->eps_min) a->eps_min = eps;
    if (a->eps_tiles == 0 || eps > a->eps_max) a->eps_max = eps;
    a->eps_tiles++;
    if (eps < 0) a->eps_below_zero++;
}

#endif
