// fp4_ref.c: the literal scalar transcription of spec/fp4.md sections 3.1-3.3 and 5.4 that
// tests/test_fp4.c checks the fast paths of fp4.c against. Written independently of fp4.c's
// tricks: E2M1 and E4M3 encode by an exact nearest search over the decoded value tables
// (distances in binary64, which are exact here; ties to the even code), the MXFP4 exponent by
// frexp, one block at a time, one element at a time. Slow; tests only.
#include <float.h>
#include <math.h>
#include <string.h>

#include "attention/fp4.h"
#include "base/common.h"

// nearest E2M1 magnitude code of a >= 0 (ties: even code), saturating at 6
static int e2m1_nearest(double a) {
    if (a >= 6.0) return 7; // saturation (binary64 distances to 4 and 6 can tie for huge a)
    int best = 0;
    double bd = INFINITY;
    for (int c = 0; c < 8; c++) {
        const double d = fabs(a - (double)fp4_e2m1_value(c));
        if (d < bd || (d == bd && !(c & 1))) best = c, bd = d;
    }
    return best;
}
static int e2m1_ref(float v) { return e2m1_nearest(fabs((double)v)) | (signbit(v) ? 8 : 0); }

// nearest E4M3 byte of x >= 0 (ties: even byte), every x >= 448 -> 0x7e (satfinite)
static int e4m3_nearest(float x) {
    if (x >= 448.0f) return FP4_E4M3_MAX_BYTE;
    int best = 0;
    double bd = INFINITY;
    for (int b = 0; b <= FP4_E4M3_MAX_BYTE; b++) {
        const double d = fabs((double)x - (double)fp4_e4m3_value(b));
        if (d < bd || (d == bd && !(b & 1))) best = b, bd = d;
    }
    return best;
}

static int finite_block(const float *x, int n) {
    for (int i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

int fp4_qdq_block_ref(float *y, const float *x, int n, enum fp4_format f, const struct fp4_tscale *ts,
                      uint8_t *codes, uint8_t *scale) {
    if (!finite_block(x, n)) return -1;
    float A = 0.0f; // amax; the zero pads never change it
    for (int i = 0; i < n; i++) A = fabsf(x[i]) > A ? fabsf(x[i]) : A;
    float out[FP4_MX_BLOCK];
    uint8_t cd[FP4_MX_BLOCK];
    int byte;
    if (f == FP4_MXFP4) {
        int E = -1000; // A == 0: -inf
        if (A > 0.0f) {
            int ex;
            frexp((double)A, &ex); // A = m * 2^ex, m in [0.5, 1)
            E = ex - 1;
        }
        int se = E - 2;
        if (se < -127) se = -127;
        if (se > 127) se = 127;
        byte = se + 127;
        for (int i = 0; i < n; i++) {
            const double v = ldexp((double)x[i], -se); // exact in binary64
            const float vf = (float)v;                 // the binary32 value of step 4
            cd[i] = (uint8_t)e2m1_ref(vf);
            out[i] = (float)ldexp((double)fp4_e2m1_value(cd[i]), se);
        }
    } else if (f == FP4_NVFP4) {
        volatile float p = A * ts->t;
        float pm = p > FLT_MAX ? FLT_MAX : p;
        byte = e4m3_nearest(pm);
        const float sq = fp4_e4m3_value(byte);
        float enc = 0.0f;
        if (sq != 0.0f) {
            volatile float d = sq * ts->s_dec;
            volatile float r = 1.0f / d;
            enc = r > FLT_MAX ? FLT_MAX : r;
        }
        for (int i = 0; i < n; i++) {
            volatile float v = x[i] * enc;
            cd[i] = (uint8_t)e2m1_ref(v);
            volatile float vs = fp4_e2m1_value(cd[i]) * sq;
            out[i] = vs * ts->s_dec;
        }
    } else {
        volatile float a6 = A / 6.0f;
        byte = e4m3_nearest(a6);
        const float SF = fp4_e4m3_value(byte);
        const float inv = SF == 0.0f ? 0.0f : 1.0f / SF;
        for (int i = 0; i < n; i++) {
            volatile float v = x[i] * inv;
            cd[i] = (uint8_t)e2m1_ref(v);
            out[i] = fp4_e2m1_value(cd[i]) * SF;
        }
    }
    memcpy(y, out, (size_t)n * sizeof(float));
    if (codes) memcpy(codes, cd, (size_t)n);
    if (scale) *scale = (uint8_t)byte;
    return 0;
}

void fp4_sage3_p_ref(const struct fp4_sage3_row *o, const float *S, int n, float m_new, float c) {
    const float L2688 = bits_f32(FP4_L2688), L6 = bits_f32(FP4_L6);
    volatile float mc = m_new * c;
    const float ms = mc + L2688;
    float pt[FP4_SAGE3_TILE];
    for (int j = 0; j < FP4_SAGE3_TILE; j++) {
        const float sj = j < n ? S[j] : -INFINITY;
        volatile float sc = sj * c;
        volatile float arg = sc - ms;
        pt[j] = isinf(sj) ? 0.0f : (float)exp2((double)arg);
    }
    for (int u = 0; u < 8; u++) {
        float M = -INFINITY;
        for (int j = 16 * u; j < 16 * u + 16; j++)
            if (j < n && S[j] > M) M = S[j];
        volatile float a = M * c;
        volatile float b = a - ms;
        volatile float e = b + L6;
        const float s = (float)exp2((double)e); // exp2(-inf) = 0
        const int sb = e4m3_nearest(s);
        const float sq = fp4_e4m3_value(sb);
        if (o->s) o->s[u] = s;
        if (o->sb) o->sb[u] = (uint8_t)sb;
        for (int j = 16 * u; j < 16 * u + 16 && j < n; j++) {
            int code = 0;
            if (sq != 0.0f) {
                volatile float r = pt[j] / s;
                code = e2m1_ref(r);
            }
            o->pc[j] = fp4_e2m1_value(code) * sq;
            if (o->codes) o->codes[j] = (uint8_t)code;
            if (o->ptilde) o->ptilde[j] = pt[j];
        }
    }
}
