// kern.c: the vectorizable correctly rounded binary32 exp and tanh of kern.h (spec/attention.md
// 7.3).
#include "attention/kern.h"

#include <math.h>
#include <string.h>

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
    double yd = kern_exp64((double)x);
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
    double big = 1.0 - 2.0 / (kern_exp64(2.0 * aa) + 1.0);
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
