// fp4.c: fast paths of the FP4 codecs (spec/fp4.md sections 2-3, 5.4). Element loops are
// branch-free (E2M1 as a count of comparisons, section 2.1) so they vectorize; scales are
// formed on the bits (E8M0 exponent, E4M3 binade) exactly as the spec's integer steps say.
// fp4_ref.c holds the literal transcription these are tested against. All arithmetic is
// binary32 (built with -ffp-contract=off, no -ffast-math).
#include "attention/fp4.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "base/common.h"

static const float E2M1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

int fp4_block(enum fp4_format f) { return f == FP4_MXFP4 ? FP4_MX_BLOCK : FP4_NV_BLOCK; }

float fp4_e2m1_value(int code) {
    const float v = E2M1[code & 7];
    return code & 8 ? -v : v;
}

// magnitude code of a = |v| (section 2.1: the count of true conditions; ties as listed)
static inline int e2m1_mag(float a) {
    return (a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) + (a > 2.5f) + (a >= 3.5f) + (a > 5.0f);
}

int fp4_e2m1_encode(float v) { return e2m1_mag(fabsf(v)) | (int)(f32_bits(v) >> 31) << 3; }

float fp4_e4m3_value(int b) {
    if (b < 0 || b >= 0x7f) return NAN;
    const int e = b >> 3, m = b & 7;
    return e ? ldexpf(1.0f + (float)m / 8.0f, e - 7) : ldexpf((float)m, -9);
}

// floor(log2 x) of a positive finite binary32 from its bits (subnormals: bit length - 150)
static inline int ilog2_bits(uint32_t b) {
    const int ex = (int)(b >> 23);
    if (ex) return ex - 127;
    int n = 0;
    for (uint32_t m = b & 0x7fffffu; m; m >>= 1) n++;
    return n - 150;
}

int fp4_e4m3_encode(float x) {
    if (!(x < 448.0f)) return FP4_E4M3_MAX_BYTE; // satfinite (+Inf too)
    const uint32_t b = f32_bits(x);
    const int E = b ? ilog2_bits(b) : -1000;
    if (E < -6) return (int)rintf(x * 0x1p9f); // 0..8 (8 = the smallest normal)
    return ((E + 7) << 3) + (int)rintf(ldexpf(x, 3 - E)) - 8; // a carry to 16 is the next binade
}

float fp4_e8m0_value(int b) {
    if (b < 0 || b > 254) return NAN;
    return b ? bits_f32((uint32_t)b << 23) : bits_f32(0x00400000u);
}

void fp4_nv_tscale(struct fp4_tscale *ts, float At) {
    float s = 2688.0f / At; // G1 (At = 0 -> +Inf)
    s = s < FLT_MAX ? s : FLT_MAX;
    if (At == 0.0f || s == 0.0f) s = 1.0f;
    ts->s_enc = s;
    ts->s_dec = 1.0f / s;                         // G2
    ts->t = s * bits_f32(0x3e2aaaabu);            // G3, R6 = f32(1/6)
}

float fp4_amax(const float *x, int len) {
    uint32_t m = 0;
    for (int i = 0; i < len; i++) {
        const uint32_t a = f32_bits(x[i]) & 0x7fffffffu;
        m = a > m ? a : m;
    }
    return bits_f32(m);
}

// 1 if every element of x[n] is finite
static int all_finite(const float *x, int n) {
    uint32_t bad = 0;
    for (int i = 0; i < n; i++) bad |= (f32_bits(x[i]) & 0x7f800000u) == 0x7f800000u;
    return !bad;
}

// ---- per-block scale, then the shared element loop ----
// A block's quantization is y_i = value(e2m1(x_i * enc)) * dq (* S_dec for two-level NVFP4,
// one more rounding); enc = 0 gives codes 0/8 and +-0 outputs (zero scales, sections 3.2-3.3).
struct bscale { float enc, dq, post; int byte; };

static struct bscale block_scale(float Ab, enum fp4_format f, const struct fp4_tscale *ts) {
    struct bscale s = {0, 0, 1.0f, 0};
    if (f == FP4_MXFP4) { // 3.1
        const uint32_t b = f32_bits(Ab);
        int se = b ? ilog2_bits(b) - 2 : -127;
        se = se < -127 ? -127 : se > 127 ? 127 : se;
        s.byte = se + 127;
        s.enc = bits_f32((uint32_t)(127 - se) << 23); // 2^-se, -se in [-125, 127]: normal
        s.dq = fp4_e8m0_value(s.byte);
    } else if (f == FP4_NVFP4) { // 3.2 B2-B3
        float p = Ab * ts->t;
        p = p < FLT_MAX ? p : FLT_MAX;
        s.byte = fp4_e4m3_encode(p);
        s.dq = fp4_e4m3_value(s.byte);
        if (s.dq != 0.0f) {
            const float r = 1.0f / (s.dq * ts->s_dec);
            s.enc = r < FLT_MAX ? r : FLT_MAX;
        }
        s.post = ts->s_dec;
    } else { // 3.3 S1-S2
        s.byte = fp4_e4m3_encode(Ab / 6.0f);
        s.dq = fp4_e4m3_value(s.byte);
        s.enc = s.dq == 0.0f ? 0.0f : 1.0f / s.dq;
    }
    return s;
}

// y[n], codes (may be NULL) of one block with scale s; y may alias x
static inline void block_elems(float *y, uint8_t *codes, const float *x, int n, struct bscale s, int two_level) {
    for (int i = 0; i < n; i++) {
        const float v = x[i] * s.enc;
        const int code = e2m1_mag(fabsf(v)) | (int)(f32_bits(v) >> 31) << 3;
        float q = fp4_e2m1_value(code) * s.dq; // exact
        if (two_level) q = q * s.post;        // B5: one rounding of the exact product
        y[i] = q;
        if (codes) codes[i] = (uint8_t)code;
    }
}

int fp4_qdq_block(float *y, const float *x, int n, enum fp4_format f, const struct fp4_tscale *ts,
                  uint8_t *codes, uint8_t *scale) {
    if (!all_finite(x, n)) return -1;
    const struct bscale s = block_scale(fp4_amax(x, n), f, ts);
    block_elems(y, codes, x, n, s, f == FP4_NVFP4);
    if (scale) *scale = (uint8_t)s.byte;
    return 0;
}

int fp4_qdq(float *y, const float *x, int len, enum fp4_format f, const struct fp4_tscale *ts) {
    const int B = fp4_block(f);
    if (!all_finite(x, len > 0 ? len : 0)) return -1;
    for (int i = 0; i < len; i += B) {
        const int n = len - i < B ? len - i : B;
        const struct bscale s = block_scale(fp4_amax(x + i, n), f, ts);
        block_elems(y + i, NULL, x + i, n, s, f == FP4_NVFP4);
    }
    return 0;
}

// Column blocks: for each run of B rows, the per-column amax (lanes = columns), the scales,
// then the elements row by row. Same per-element arithmetic as block_elems.
enum { CW = 32 };
int fp4_qdq_cols(float *y, const float *x, ptrdiff_t ld, int rows, int cols, enum fp4_format f,
                 const struct fp4_tscale *ts) {
    const int B = fp4_block(f), two = f == FP4_NVFP4;
    for (int c0 = 0; c0 < cols; c0 += CW) {
        const int w = cols - c0 < CW ? cols - c0 : CW;
        for (int r0 = 0; r0 < rows; r0 += B) {
            const int n = rows - r0 < B ? rows - r0 : B;
            uint32_t m[CW] = {0}, bad = 0;
            for (int i = 0; i < n; i++) {
                const float *xr = x + (ptrdiff_t)(r0 + i) * ld + c0;
                for (int l = 0; l < w; l++) {
                    const uint32_t a = f32_bits(xr[l]) & 0x7fffffffu;
                    bad |= a >= 0x7f800000u;
                    m[l] = a > m[l] ? a : m[l];
                }
            }
            if (bad) return -1;
            struct bscale s[CW];
            for (int l = 0; l < w; l++) s[l] = block_scale(bits_f32(m[l]), f, ts);
            for (int i = 0; i < n; i++) {
                const float *xr = x + (ptrdiff_t)(r0 + i) * ld + c0;
                float *yr = y + (ptrdiff_t)(r0 + i) * ld + c0;
                for (int l = 0; l < w; l++) {
                    const float v = xr[l] * s[l].enc;
                    const int code = e2m1_mag(fabsf(v)) | (int)(f32_bits(v) >> 31) << 3;
                    float q = fp4_e2m1_value(code) * s[l].dq;
                    yr[l] = two ? q * s[l].post : q;
                }
            }
        }
    }
    return 0;
}

// ---- SageAttention3's P (5.4 T2-T4) ----
float fp4_exp2cr(float x) { return (float)exp2((double)x); }
float fp4_sage3_c(float sm) { return (float)((double)sm * 1.4426950408889634); }

void fp4_sage3_p(const struct fp4_sage3_row *o, const float *S, int n, float m_new, float c, enum fp4_p_quant q) {
    const float L2688 = bits_f32(FP4_L2688), L6 = bits_f32(FP4_L6);
    const float ms = m_new * c + L2688; // T2 (no FMA: -ffp-contract=off)
    float pt[FP4_SAGE3_TILE];
    for (int j = 0; j < n; j++) pt[j] = S[j] == -INFINITY ? 0.0f : fp4_exp2cr(S[j] * c - ms); // T3
    if (o->ptilde) memcpy(o->ptilde, pt, (size_t)n * sizeof(float));
    if (q == FP4_P_SKIP) {
        memcpy(o->pc, pt, (size_t)n * sizeof(float));
        return;
    }
    for (int u = 0; u * 16 < FP4_SAGE3_TILE; u++) { // T4 per 16-key block
        const int a = u * 16, b = a + 16 < n ? a + 16 : n;
        float M = -INFINITY;
        for (int j = a; j < b; j++) M = S[j] > M ? S[j] : M;
        const float s = M == -INFINITY ? 0.0f : fp4_exp2cr((M * c - ms) + L6);
        const int sb = fp4_e4m3_encode(s);
        const float sq = fp4_e4m3_value(sb);
        if (o->s) o->s[u] = s;
        if (o->sb) o->sb[u] = (uint8_t)sb;
        for (int j = a; j < b; j++) {
            const int code = sq == 0.0f ? 0 : e2m1_mag(pt[j] / s); // P~ >= 0: sign 0
            o->pc[j] = E2M1[code] * sq;
            if (o->codes) o->codes[j] = (uint8_t)code;
        }
    }
}
