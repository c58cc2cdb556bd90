// kern.h: small inline numerics shared by the tiled attention kernels (flash.c, flash_ref.c):
// binary32 -> fp16 -> binary32 rounding without a call, the correctly rounded exp and tanh of
// spec/attention.md 7.3, and the eps_bar histogram update of section 5. Internal.
#ifndef HIFA4_ATTN_KERN_H
#define HIFA4_ATTN_KERN_H

#include <math.h>

#include "attention/attn.h"
#include "common.h"

// fp16(x) of spec 7.5 as a float: RNE to 11 significant bits, subnormals kept (grid 2^-24),
// |x| >= 65520 -> +-inf, NaN stays NaN. Equal to round_fp16() for every binary32 input
// (tests/test_attention.c checks a dense sweep of all exponents that matter).
static inline float kern_fp16(float x) {
    uint32_t u = f32_bits(x), a = u & 0x7fffffffu, s = u & 0x80000000u;
    if (a >= 0x477ff000u) return a > 0x7f800000u ? x : bits_f32(s | 0x7f800000u);
    if (a < 0x38800000u) {
        // below 2^-14: 0.5 + |x| has ulp 2^-24, so the add rounds |x| to the fp16 subnormal
        // grid with ties to even; subtracting 0.5 is exact.
        float y = (bits_f32(a) + 0.5f) - 0.5f;
        return bits_f32(f32_bits(y) | s);
    }
    a += 0xfffu + ((a >> 13) & 1u);
    return bits_f32((a & 0xffffe000u) | s);
}

// Correctly rounded binary32 exp / tanh (spec 7.3): binary64 libm, rounded once.
static inline float kern_exp(float x) { return (float)exp((double)x); }
static inline float kern_tanh(float x) { return (float)tanh((double)x); }

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
