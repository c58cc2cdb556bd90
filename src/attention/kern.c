// kern.c: the vectorizable correctly rounded binary32 exp of kern.h (spec/attention.md 7.3).
#include "attention/kern.h"

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

// binary64 approximation of exp(x); *risky = 1 if it may round differently from libm
static inline float exp_fast(float x, int *risky) {
    double xd = (double)x;
    double t = xd * LOG2E + SHIFT;
    double kd = t - SHIFT;
    double r = (xd - kd * LN2_HI) - kd * LN2_LO;
    double p = exp_poly(r);
    uint64_t tb, yb;
    memcpy(&tb, &t, 8);
    uint64_t sb = (tb + 1023u) << 52; // 2^k: k sits in the low bits of t's significand
    double sc;
    memcpy(&sc, &sb, 8);
    double yd = p * sc;
    memcpy(&yb, &yd, 8);
    uint64_t low = yb & 0x1fffffffu; // bits below the binary32 significand
    int near_mid = (uint64_t)(low - (0x10000000u - 64u)) <= 128u;
    int out = !((x > -87.0f) & (x < 88.0f)); // NaN too; & keeps the loop branch-free
    *risky = near_mid | out;
    return (float)yd;
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
