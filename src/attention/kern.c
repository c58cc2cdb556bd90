// kern.c: the vectorizable correctly rounded binary32 exp and tanh of kern.h (spec/attention.md
// 7.3).
#include "attention/kern.h"

#include <math.h>
#include <string.h>

#define SHIFT 0x1.8p52                    // adding it rounds to an integer, kept in the low bits
#define LOG2E 0x1.71547652b82fep0
#define LN2_HI 6.93147180369123816490e-01 // fdlibm split: LN2_HI has 21 trailing zero bits
#define LN2_LO 1.90821492927058770002e-10

static inline double exp_poly(double r) { // Taylor to r^13, Horner
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
    return 1.0 + r * p;
}

// binary64 exp(xd) within a few ulps for |xd| < 700 (k = round(x/ln2), 2^k built in the bits)
static inline double exp_core(double xd) {
    double t = xd * LOG2E + SHIFT;
    double kd = t - SHIFT;
    double r = (xd - kd * LN2_HI) - kd * LN2_LO;
    double p = exp_poly(r);
    uint64_t tb;
    memcpy(&tb, &t, 8);
    uint64_t sb = (tb + 1023u) << 52; // 2^k: k sits in the low bits of t's significand
    double sc;
    memcpy(&sc, &sb, 8);
    return p * sc;
}

// 1 if the binary64 y (a normal binary32 range value) lies within w binary64 ulps of a
// binary32 rounding midpoint
static inline int near_midpoint(double y, uint64_t w) {
    uint64_t yb;
    memcpy(&yb, &y, 8);
    uint64_t low = yb & 0x1fffffffu; // bits below the binary32 significand
    return (uint64_t)(low - (0x10000000u - w)) <= 2 * w;
}

// binary64 approximation of exp(x); *risky = 1 if it may round differently from libm
static inline float exp_fast(float x, int *risky) {
    double yd = exp_core((double)x);
    int out = !((x > -87.0f) & (x < 88.0f)); // NaN too; & keeps the loop branch-free
    *risky = near_midpoint(yd, 64) | out;
    return (float)yd;
}

// binary64 approximation of tanh(x); *risky = 1 if it may round differently from libm.
// |x| < 1/16: odd Taylor series to x^13 (next term < 2^-64 relative). Otherwise
// 1 - 2/(exp(2|x|) + 1) (|x| clamped to 20, where tanh is 1 in binary64): the subtraction
// loses at most 4 bits at |x| = 1/16, so the error stays below ~64 ulps of the result; the
// midpoint window is 1024 ulps. Tiny |x| (binary32 subnormal results) and NaN fall back.
static inline float tanh_fast(float x, int *risky) {
    double xd = (double)x, a = fabs(xd), a2 = a * a;
    double p = 21844.0 / 6081075.0;
    p = -1382.0 / 155925.0 + a2 * p;
    p = 62.0 / 2835.0 + a2 * p;
    p = -17.0 / 315.0 + a2 * p;
    p = 2.0 / 15.0 + a2 * p;
    p = -1.0 / 3.0 + a2 * p;
    double small = a + a * (a2 * p);
    double aa = a < 20.0 ? a : 20.0;
    double big = 1.0 - 2.0 / (exp_core(2.0 * aa) + 1.0);
    double y = a < 0.0625 ? small : big;
    *risky = near_midpoint(y, 1024) | !(a >= 0x1p-125); // NaN too
    float f = (float)y;
    return xd < 0 ? -f : f;
}

void kern_tanh_n(float *y, const float *x, int n) {
    int any = 0;
    for (int i = 0; i < n; i++) {
        int risky;
        y[i] = tanh_fast(x[i], &risky);
        any |= risky;
    }
    if (!any) return;
    for (int i = 0; i < n; i++) {
        int risky;
        (void)tanh_fast(x[i], &risky);
        if (risky) y[i] = (float)tanh((double)x[i]);
    }
}

void kern_exp_n(float *y, const float *x, int n) {
    int any = 0;
    for (int i = 0; i < n; i++) {
        int risky;
        y[i] = exp_fast(x[i], &risky);
        any |= risky;
    }
    if (!any) return;
    // rare (about 2.4e-7 of inputs in range): redo the risky elements with libm
    for (int i = 0; i < n; i++) {
        int risky;
        (void)exp_fast(x[i], &risky);
        if (risky) y[i] = (float)exp((double)x[i]);
    }
}
