// hif4.c: HiF4 codec (spec/hif4.md). hif4_qdq_group_ref is the literal transcription of
// section 4 / section 6 "A6 hardware"; the fast path (qdq64) computes the same bits with
// fewer, branch-free operations whose equivalence is argued at each step and checked by
// tests/test_hif4.c against the reference. Tensor-level helpers pad tails with zeros
// (section 5). All arithmetic is binary32 (built with -ffp-contract=off, no -ffast-math).
#include "attention/hif4.h"

#include <assert.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "base/common.h"

// ---- constants (section 2, 4) ----
#define SCALE_MIN 0x1p-48f  // E6M2 code 0
#define SCALE_MAX 49152.0f  // E6M2 code 254
static const float R7 = 0.142578125f; // bf16(1/7) = bf16 0x3E12 (step 0)
// step 7 table: bf16(1/S) = RECIP_MANT[f] * 2^-E for S = (4+f)/4 * 2^E (exact, never a tie)
static const float RECIP_MANT[4] = {1.0f, 205.0f / 256.0f, 171.0f / 256.0f, 146.0f / 256.0f};

// ---- scalar pieces ----
float hif4_e6m2_value(int ea) {
    if (ea < 0 || ea > 254) return NAN;
    return ldexpf((float)(4 + (ea & 3)), (ea >> 2) - 50);
}

int hif4_e6m2_encode(float t) {
    // step 6 via the bits: t is normal (>= 2^-48); keep 2 fraction bits, round half to even
    uint32_t u = f32_bits(t);
    int E = (int)((u >> 23) & 0xff) - 127;
    uint32_t mant = u & 0x7fffff;
    uint32_t f = mant >> 21, rest = mant & 0x1fffff;
    if (rest > 0x100000u || (rest == 0x100000u && (f & 1))) f++;
    if (f == 4) { f = 0; E++; } // n == 8 carries to the next binade
    return ((E + 48) << 2) | (int)f;
}

float hif4_recip(int ea) {
    if (ea < 0 || ea > 254) return NAN;
    return ldexpf(RECIP_MANT[ea & 3], -((ea >> 2) - 48));
}

// ---- literal reference (section 4 and section 6 "A6 hardware") ----
void hif4_qdq_group_ref(float y[64], const float x_in[64], enum hif4_recipe r,
                        struct hif4_meta *meta, uint8_t codes[64]) {
    float x[64], a[64], m4[16], m8[8];
    for (int i = 0; i < 64; i++) x[i] = r == HIF4_RECIPE_A6 ? round_bf16(x_in[i]) : x_in[i];
    // step 1: NaN poisons the group
    for (int i = 0; i < 64; i++) {
        if (isnan(x[i])) {
            for (int k = 0; k < 64; k++) y[k] = NAN;
            if (meta) *meta = (struct hif4_meta){HIF4_EA_NAN, 0, 0};
            if (codes) memset(codes, 0, 64);
            return;
        }
    }
    // step 2: maxima of |x| (Inf is an ordinary value)
    for (int i = 0; i < 64; i++) a[i] = fabsf(x[i]);
    for (int k = 0; k < 16; k++) m4[k] = fmaxf(fmaxf(a[4 * k], a[4 * k + 1]), fmaxf(a[4 * k + 2], a[4 * k + 3]));
    float M = 0.0f;
    for (int j = 0; j < 8; j++) {
        m8[j] = fmaxf(m4[2 * j], m4[2 * j + 1]);
        M = fmaxf(M, m8[j]);
    }
    // steps 3-5: fp32 product, then bf16, then clamp
    volatile float prod = M * R7; // volatile: one binary32 rounding, even on odd targets
    float t = round_bf16(prod);
    t = fminf(fmaxf(t, SCALE_MIN), SCALE_MAX);
    // step 6: E := floor(log2 t), q := t * 2^(2-E) in [4,8), n := round half even
    int E = (int)((f32_bits(t) >> 23) & 0xff) - 127;
    float q = ldexpf(t, 2 - E);
    int n = (int)rintf(q);
    if (n == 8) { n = 4; E++; }
    float S = ldexpf((float)n, E - 2);
    int ea = ((E + 48) << 2) | (n - 4);
    // step 7: R := bf16(f32(1/S))
    float one = 1.0f;
    float R = round_bf16(one / S);
    int eb = 0, ec = 0;
    float s8[8], s4[16];
    for (int j = 0; j < 8; j++) {
        // step 8 (A6: the product is rounded to bf16 before the comparison)
        float p = m8[j] * R;
        if (r == HIF4_RECIPE_A6) p = round_bf16(p);
        int b = p >= 4.0f;
        eb |= b << j;
        s8[j] = b ? 2.0f : 1.0f;
    }
    for (int k = 0; k < 16; k++) {
        // step 9 (A6: bf16(bf16(M4*R) * 2^-eb) >= 2)
        float p;
        if (r == HIF4_RECIPE_A6) p = round_bf16(round_bf16(m4[k] * R) * (1.0f / s8[k >> 1]));
        else p = (m4[k] * R) / s8[k >> 1];
        int b = p >= 2.0f;
        ec |= b << k;
        s4[k] = b ? 2.0f : 1.0f;
    }
    for (int i = 0; i < 64; i++) {
        int j = i >> 3, k = i >> 2, c;
        if (r == HIF4_RECIPE_A6) {
            // m = bf16(x * R * 2^-(eb+ec)); nearest code, ties to even; >= 7 saturates
            float rs = R / (s8[j] * s4[k]); // exact: power-of-two scaling of a normal value
            float m = fabsf(round_bf16(x[i] * rs));
            float v = m * 4.0f;
            c = v >= 7.0f ? 7 : (int)rintf(v);
        } else {
            // step 10-11: m := ((a / s8) / s4) * R; w := f32(m*4 + 0.5) (two roundings)
            float m = ((a[i] / s8[j]) / s4[k]) * R;
            float v = m * 4.0f;
            float w = v + 0.5f;
            if (isinf(w) || w >= 8.0f) c = 7;
            else c = (int)floorf(w);
            if (c > 7) c = 7;
        }
        // step 12: sign; y = sgn(x) * c/4 * s8 * s4 * S with sgn(+-0) = 0
        int neg = x[i] < 0.0f;
        if (codes) codes[i] = (uint8_t)((neg ? 8 : 0) | c);
        float mag = ((float)c / 4.0f) * s8[j] * s4[k] * S;
        y[i] = x[i] == 0.0f ? 0.0f : neg ? -mag : mag;
    }
    if (meta) *meta = (struct hif4_meta){(uint8_t)ea, (uint8_t)eb, (uint16_t)ec};
}

// ---- fast path ----
// Equivalence with the reference, step by step:
// - Maxima on the bit patterns of |x|: for non-negative binary32 (and +Inf) the unsigned
//   integer order is the float order; any NaN has |bits| > 0x7f800000 and so shows up in M.
// - Step 8/9: f32(f32(M4*R)/s8) >= 2 is f32(M4*R) >= 2*s8 because halving a value >= 2 is
//   exact (and a halved value < 2 compares the same either way).
// - Steps 10-11: for a normal |x| the chain a/s8/s4*R*4 has exact power-of-two steps, so
//   v = f32(a * (4*R/(s8*s4))) bit for bit (overflow gives +Inf in both). When a/s8/s4
//   would be inexact (subnormal a) v < 2^-70, so both give code 0.
// - A6: x*(R*2^-(eb+ec)) is the same product the reference forms; *4 of a bf16 is exact.
// - y = c * (S/4 * s8 * s4): exact (<= 6 significant bits, normal range), sign bit from
//   is_neg(x), so +-0 inputs give +0 and negative inputs rounding to zero give -0 (step 12).
// Every per-block quantity is computed per element (block maxima broadcast to the 4 or 8
// elements of the block) so that all loops are lane-wise and vectorize.

// bf16 rounding (RNE) of a non-NaN binary32 value; branch-free so that loops vectorize.
// Equals round_bf16 on every non-NaN input (Inf stays Inf, overflow rounds to Inf).
static inline float bf16_rne(float x) {
    uint32_t u = f32_bits(x);
    u += 0x7fffu + ((u >> 16) & 1u);
    return bits_f32(u & 0xffff0000u);
}

// The same on the bits of a non-negative value (used on maxima: RNE is monotonic, so for
// the A6 recipe max|bf16(x)| = bf16(max|x|) and the maxima of the raw input can be rounded).
static inline uint32_t bf16_bits(uint32_t u) { return (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u; }

// x < 0 decided on the bits (sign set, not -0.0): the same as the comparison, but immune to
// denormals-are-zero modes, so that, as spec section 5 says, FTZ/DAZ change no output (every
// other subnormal operand here only ever yields code 0).
static inline uint32_t is_neg(float x) { return f32_bits(x) > 0x80000000u; }

// 2^e for e in the normal range -126..127
static inline float pow2f(int e) { return bits_f32((uint32_t)(e + 127) << 23); }

// Steps 3-7 for a group maximum (bits of a non-NaN |x| maximum): the E6M2 code, R and S/4.
struct gscale { int ea; float R, step0; };
static inline struct gscale group_scale(uint32_t Mb) {
    float t = bf16_rne(bits_f32(Mb) * R7); // steps 3-4 (M * R7 <= 4.9e37: no overflow)
    t = t < SCALE_MIN ? SCALE_MIN : t > SCALE_MAX ? SCALE_MAX : t; // step 5
    struct gscale g;
    g.ea = hif4_e6m2_encode(t); // step 6
    int E = (g.ea >> 2) - 48, f = g.ea & 3;
    g.R = RECIP_MANT[f] * pow2f(-E);      // step 7, exact (E in -48..15)
    g.step0 = (float)(4 + f) * pow2f(E - 4); // S/4, exact
    return g;
}

// Element loop for one group: xs[64] (raw input, no NaN; y may alias it), per-element
// block maxima m4e/m8e (bits), group scale g. Writes y[64] and the 4-bit codes cm[64] (floats).
// Written with integer masks and exponent-field arithmetic instead of float selects and
// floorf: GCC 12 does not vectorize floorf, nor float selects feeding a float->int
// conversion, in this loop; the bits are the same.
// Scaling by 2^-sh (sh = eb + ec in 0..2) subtracts sh from the exponent field: exact, all
// operands are normal (R >= 2^-16, S/4 >= 2^-50).
static inline void elements64(float *y, float *restrict cm, const float *xs,
                              const uint32_t *restrict m4e, const uint32_t *restrict m8e,
                              struct gscale g, enum hif4_recipe r) {
    const float R = g.R;
    const uint32_t sb0 = f32_bits(g.step0);
    if (r == HIF4_RECIPE_A6) {
        const uint32_t kb0 = f32_bits(R); // R * 2^-(eb+ec)
        for (int i = 0; i < 64; i++) {
            uint32_t b8 = bf16_rne(bits_f32(m8e[i]) * R) >= 4.0f;
            float lim = bits_f32(0x40000000u + (b8 << 23)); // 2 * s8
            uint32_t b4 = bf16_rne(bits_f32(m4e[i]) * R) >= lim;
            uint32_t sh = (b8 + b4) << 23;
            float xv = bf16_rne(xs[i]); // the device quantizes bf16 inputs (xs has no NaN)
            float v = fabsf(bf16_rne(xv * bits_f32(kb0 - sh))) * 4.0f;
            float c = v >= 7.0f ? 7.0f : rintf(v); // nearest, ties to even (default mode)
            float mag = c * bits_f32(sb0 + sh);
            cm[i] = c + (float)(8 * is_neg(xv)); // the code (y may alias xs)
            y[i] = bits_f32(f32_bits(mag) | is_neg(xv) << 31);
        }
    } else {
        const uint32_t kb0 = f32_bits(4.0f * R); // 4 * R / (s8 * s4)
        for (int i = 0; i < 64; i++) {
            uint32_t b8 = bits_f32(m8e[i]) * R >= 4.0f;
            float lim = bits_f32(0x40000000u + (b8 << 23)); // 2 * s8
            uint32_t b4 = bits_f32(m4e[i]) * R >= lim;
            uint32_t sh = (b8 + b4) << 23;
            float xv = xs[i];
            float w = fabsf(xv) * bits_f32(kb0 - sh) + 0.5f; // two roundings, as step 11
            // floor then saturate at 7: w >= 0.5 so truncation is floor; w is clipped at 8
            // on its bits (order-preserving for w > 0, +Inf included) before the conversion
            uint32_t wb = f32_bits(w);
            wb = wb < 0x41000000u ? wb : 0x41000000u;
            int ci = (int)bits_f32(wb);
            ci = ci < 7 ? ci : 7;
            float c = (float)ci;
            float mag = c * bits_f32(sb0 + sh);
            cm[i] = c + (float)(8 * is_neg(xv)); // the code (y may alias xs)
            y[i] = bits_f32(f32_bits(mag) | is_neg(xv) << 31);
        }
    }
}

// Step 2 on the bits of |x|: M4 broadcast to the 4 elements of its block (m4e), M8 to the 8
// of its block (m8e); returns the bits of M (> 0x7f800000 iff the group holds a NaN).
static inline uint32_t maxima64(uint32_t *restrict m4e, uint32_t *restrict m8e,
                                const float *restrict xs) {
    for (int i = 0; i < 64; i += 4) {
        uint32_t a0 = f32_bits(xs[i]) & 0x7fffffffu, a1 = f32_bits(xs[i + 1]) & 0x7fffffffu;
        uint32_t a2 = f32_bits(xs[i + 2]) & 0x7fffffffu, a3 = f32_bits(xs[i + 3]) & 0x7fffffffu;
        uint32_t p = a0 > a1 ? a0 : a1, q = a2 > a3 ? a2 : a3, m = p > q ? p : q;
        m4e[i] = m4e[i + 1] = m4e[i + 2] = m4e[i + 3] = m;
    }
    // (written as 8-element groups: an m4e[i ^ 4] formulation compiles to a slow gather)
    for (int i = 0; i < 64; i += 8) {
        uint32_t p = m4e[i], q = m4e[i + 4], m = p > q ? p : q;
        for (int l = 0; l < 8; l++) m8e[i + l] = m;
    }
    uint32_t Mb = 0;
    for (int i = 0; i < 64; i++) Mb = m8e[i] > Mb ? m8e[i] : Mb;
    return Mb;
}

// Steps 3-7 lane-wise for up to 16 groups (maxima bits M[16], NaN groups masked to 0):
// R = bf16(f32(1/S)) literally, step0 = S/4; step 6 on the bits: for a normal t, adding
// 0xfffff + bit21 and clearing the low 21 bits rounds half to even on 2 fraction bits, and
// the n == 8 carry goes into the exponent field.
static inline void scales16(float *restrict R, uint32_t *restrict step0b, const uint32_t *restrict M) {
    for (int l = 0; l < 16; l++) {
        float tt = bf16_rne(bits_f32(M[l]) * R7);                          // steps 3-4
        tt = tt < SCALE_MIN ? SCALE_MIN : tt > SCALE_MAX ? SCALE_MAX : tt; // step 5
        uint32_t u = f32_bits(tt);
        u = (u + 0xfffffu + ((u >> 21) & 1u)) & ~0x1fffffu;               // step 6
        R[l] = bf16_rne(1.0f / bits_f32(u));                             // step 7
        step0b[l] = u - (2u << 23);                                      // bits of S/4
    }
}

// A6: maxima of the bf16-rounded input from the maxima of the raw input (see bf16_bits)
static inline void round_maxima(uint32_t *m4e, uint32_t *m8e) {
    for (int i = 0; i < 64; i++) {
        m4e[i] = bf16_bits(m4e[i]);
        m8e[i] = bf16_bits(m8e[i]);
    }
}

static void nan_group(float *y, struct hif4_meta *meta, uint8_t *codes) {
    for (int i = 0; i < 64; i++) y[i] = NAN;
    if (meta) *meta = (struct hif4_meta){HIF4_EA_NAN, 0, 0};
    if (codes) memset(codes, 0, 64);
}

// One full group x[64] -> y[64] (y may alias x).
static void qdq64(float *y, const float *x, enum hif4_recipe r, struct hif4_meta *meta,
                  uint8_t *codes) {
    float cm[64];
    uint32_t m4e[64], m8e[64];
    uint32_t Mb = maxima64(m4e, m8e, x);
    if (Mb > 0x7f800000u) { // step 1: a NaN poisons the group
        nan_group(y, meta, codes);
        return;
    }
    if (r == HIF4_RECIPE_A6) {
        round_maxima(m4e, m8e);
        Mb = bf16_bits(Mb);
    }
    struct gscale g = group_scale(Mb);
    if (meta) { // eb/ec from the same comparisons as the element loop
        int eb = 0, ec = 0;
        for (int k = 0; k < 16; k++) {
            float p8 = bits_f32(m8e[4 * k]) * g.R, p4 = bits_f32(m4e[4 * k]) * g.R;
            if (r == HIF4_RECIPE_A6) { p8 = bf16_rne(p8); p4 = bf16_rne(p4); }
            int b8 = p8 >= 4.0f;
            eb |= b8 << (k >> 1);
            ec |= (p4 >= (b8 ? 4.0f : 2.0f)) << k;
        }
        *meta = (struct hif4_meta){(uint8_t)g.ea, (uint8_t)eb, (uint16_t)ec};
    }
    elements64(y, cm, x, m4e, m8e, g, r);
    if (codes)
        for (int i = 0; i < 64; i++) codes[i] = (uint8_t)(int)cm[i];
}

// ng full contiguous groups (y may alias x): maxima of 16 groups first, then their scales
// lane-wise, then the element loops, so the scalar chain of steps 3-7 is off the critical
// path. Bits identical to qdq64 (same maxima, steps 3-7 checked equal to the table).
static void qdq_groups(float *y, const float *x, int ng, enum hif4_recipe r) {
    uint32_t m4e[16][64], m8e[16][64], M[16], nan[16], step0b[16];
    float R[16], cm[64];
    for (int g0 = 0; g0 < ng; g0 += 16) {
        int nb = ng - g0 < 16 ? ng - g0 : 16;
        for (int b = 0; b < 16; b++) {
            M[b] = 0;
            nan[b] = 0;
            if (b >= nb) continue;
            uint32_t mb = maxima64(m4e[b], m8e[b], x + (ptrdiff_t)(g0 + b) * 64);
            nan[b] = mb > 0x7f800000u;
            if (r == HIF4_RECIPE_A6 && !nan[b]) {
                round_maxima(m4e[b], m8e[b]);
                mb = bf16_bits(mb);
            }
            M[b] = nan[b] ? 0 : mb;
        }
        scales16(R, step0b, M);
        for (int b = 0; b < nb; b++) {
            float *yg = y + (ptrdiff_t)(g0 + b) * 64;
            if (nan[b]) {
                for (int i = 0; i < 64; i++) yg[i] = NAN;
                continue;
            }
            struct gscale g = {0, R[b], bits_f32(step0b[b])};
            elements64(yg, cm, x + (ptrdiff_t)(g0 + b) * 64, m4e[b], m8e[b], g, r);
        }
    }
}

void hif4_qdq_group(float *y, const float *x, int n, enum hif4_recipe r, struct hif4_meta *meta,
                    uint8_t *codes) {
    assert(n >= 1 && n <= 64);
    if (n == 64) {
        qdq64(y, x, r, meta, codes);
        return;
    }
    float buf[64];
    memcpy(buf, x, (size_t)n * sizeof(float));
    memset(buf + n, 0, (size_t)(64 - n) * sizeof(float));
    qdq64(buf, buf, r, meta, codes);
    memcpy(y, buf, (size_t)n * sizeof(float));
    if (codes) memset(codes + n, 0, (size_t)(64 - n)); // zero tail quantizes to code 0 anyway
}

// ---- tensor level ----
void hif4_qdq(float *y, const float *x, int len, enum hif4_recipe r) {
    if (len <= 0) return;
    int full = len / 64;
    qdq_groups(y, x, full, r);
    if (len % 64) hif4_qdq_group(y + full * 64, x + full * 64, len % 64, r, NULL, NULL);
}

void hif4_qdq_strided(float *y, const float *x, int len, ptrdiff_t stride, enum hif4_recipe r) {
    if (len <= 0) return;
    if (stride == 1) {
        hif4_qdq(y, x, len, r);
        return;
    }
    // gather up to 16 groups into a local buffer (zero-padded tail), QDQ them as one
    // contiguous batch, scatter back (in place is fine: each chunk is read before written)
    float buf[16 * 64];
    for (int g = 0; g < len; g += 16 * 64) {
        int n = len - g < 16 * 64 ? len - g : 16 * 64;
        int ng = (n + 63) / 64;
        const float *xs = x + (ptrdiff_t)g * stride;
        for (int i = 0; i < n; i++) buf[i] = xs[(ptrdiff_t)i * stride];
        for (int i = n; i < ng * 64; i++) buf[i] = 0.0f;
        qdq_groups(buf, buf, ng, r);
        float *ys = y + (ptrdiff_t)g * stride;
        for (int i = 0; i < n; i++) ys[(ptrdiff_t)i * stride] = buf[i];
    }
}

void hif4_qdq_rows(float *y, ptrdiff_t ldy, const float *x, ptrdiff_t ld, int rows, int cols,
                   enum hif4_recipe r) {
    if (rows <= 0 || cols <= 0) return;
    if (cols % 64 == 0 && ld == cols && ldy == cols && (int64_t)rows * cols <= INT_MAX) {
        // one contiguous run of whole groups
        hif4_qdq(y, x, rows * cols, r);
        return;
    }
    // gather the groups of consecutive rows (tails zero-padded) into batches of 16
    float buf[16 * 64];
    float *dst[16];
    int len[16], nb = 0;
    for (int i = 0; i < rows; i++) {
        const float *xr = x + (ptrdiff_t)i * ld;
        float *yr = y + (ptrdiff_t)i * ldy;
        for (int c = 0; c < cols; c += 64) {
            int n = cols - c < 64 ? cols - c : 64;
            memcpy(buf + nb * 64, xr + c, (size_t)n * sizeof(float));
            if (n < 64) memset(buf + nb * 64 + n, 0, (size_t)(64 - n) * sizeof(float));
            dst[nb] = yr + c;
            len[nb++] = n;
            if (nb == 16 || (i == rows - 1 && c + 64 >= cols)) {
                qdq_groups(buf, buf, nb, r);
                for (int b = 0; b < nb; b++) memcpy(dst[b], buf + b * 64, (size_t)len[b] * sizeof(float));
                nb = 0;
            }
        }
    }
}

// ---- column QDQ (vertical: one SIMD lane per column) ----
// A tile of 64 rows x CW columns is quantized with every step lane-wise across the columns,
// so no horizontal reductions or shuffles are needed. Same arithmetic as qdq64 (same
// equivalence arguments), plus two vector forms of scalar steps:
// - step 6 on the bits: for a normal t, adding 0xfffff + bit21 and clearing the low 21 bits
//   is round-half-even to 2 fraction bits, with the n == 8 carry going into the exponent;
//   then ea = (bits >> 21) - 4*(127-48) and S = the rounded value.
// - step 7 literally: R = bf16(f32(1/S)) (equal to the table, checked in the tests).
enum { CW = 16 };

static void cols_tile(float *y, ptrdiff_t ldy, const float *x, ptrdiff_t ld, int n, int w,
                      enum hif4_recipe r) {
    float t[64][CW];
    uint32_t m4[16][CW], m8[8][CW], M[CW], nanm[CW], kb[16][CW], sb[16][CW];
    float R[CW];
    for (int i = 0; i < 64; i++) {
        const float *xr = x + (ptrdiff_t)i * ld;
        if (i < n && w == CW) {
            for (int l = 0; l < CW; l++) t[i][l] = xr[l];
        } else {
            for (int l = 0; l < CW; l++) t[i][l] = (i < n && l < w) ? xr[l] : 0.0f;
        }
    }
    if (r == HIF4_RECIPE_A6)
        for (int i = 0; i < 64; i++)
            for (int l = 0; l < CW; l++) t[i][l] = round_bf16(t[i][l]);
    for (int k = 0; k < 16; k++) // step 2 on |x| bits
        for (int l = 0; l < CW; l++) {
            uint32_t a0 = f32_bits(t[4 * k][l]) & 0x7fffffffu, a1 = f32_bits(t[4 * k + 1][l]) & 0x7fffffffu;
            uint32_t a2 = f32_bits(t[4 * k + 2][l]) & 0x7fffffffu, a3 = f32_bits(t[4 * k + 3][l]) & 0x7fffffffu;
            uint32_t p = a0 > a1 ? a0 : a1, q = a2 > a3 ? a2 : a3;
            m4[k][l] = p > q ? p : q;
        }
    for (int l = 0; l < CW; l++) M[l] = 0;
    for (int j = 0; j < 8; j++)
        for (int l = 0; l < CW; l++) {
            uint32_t p = m4[2 * j][l], q = m4[2 * j + 1][l];
            m8[j][l] = p > q ? p : q;
            M[l] = m8[j][l] > M[l] ? m8[j][l] : M[l];
        }
    for (int l = 0; l < CW; l++) {
        nanm[l] = M[l] > 0x7f800000u ? 0xffffffffu : 0; // step 1 (lane poisoned at the end)
        uint32_t mb = M[l] & ~nanm[l];
        float tt = bf16_rne(bits_f32(mb) * R7);                        // steps 3-4
        tt = tt < SCALE_MIN ? SCALE_MIN : tt > SCALE_MAX ? SCALE_MAX : tt; // step 5
        uint32_t u = f32_bits(tt);
        u = (u + 0xfffffu + ((u >> 21) & 1u)) & ~0x1fffffu;             // step 6
        float S = bits_f32(u);
        R[l] = bf16_rne(1.0f / S);                                     // step 7
        M[l] = u - (2u << 23);                                         // bits of S/4
    }
    const uint32_t kadd = r == HIF4_RECIPE_A6 ? 0 : (2u << 23); // normative folds the *4
    for (int k = 0; k < 16; k++)
        for (int l = 0; l < CW; l++) {
            float p8 = bits_f32(m8[k >> 1][l]) * R[l], p4 = bits_f32(m4[k][l]) * R[l];
            if (r == HIF4_RECIPE_A6) { p8 = bf16_rne(p8); p4 = bf16_rne(p4); }
            uint32_t b8 = p8 >= 4.0f;
            uint32_t b4 = p4 >= bits_f32(0x40000000u + (b8 << 23));
            uint32_t sh = (b8 + b4) << 23;
            kb[k][l] = f32_bits(R[l]) + kadd - sh;
            sb[k][l] = M[l] + sh;
        }
    for (int i = 0; i < 64; i++) {
        float *yr = y + (ptrdiff_t)i * ldy;
        float out[CW];
        const int k = i >> 2;
        if (r == HIF4_RECIPE_A6) {
            for (int l = 0; l < CW; l++) {
                float xv = t[i][l];
                float v = fabsf(bf16_rne(xv * bits_f32(kb[k][l]))) * 4.0f;
                float c = v >= 7.0f ? 7.0f : rintf(v);
                float mag = c * bits_f32(sb[k][l]);
                out[l] = bits_f32((f32_bits(mag) | is_neg(xv) << 31) | nanm[l]);
            }
        } else {
            for (int l = 0; l < CW; l++) {
                float xv = t[i][l];
                float wv = fabsf(xv) * bits_f32(kb[k][l]) + 0.5f;
                uint32_t wb = f32_bits(wv);
                wb = wb < 0x41000000u ? wb : 0x41000000u;
                int ci = (int)bits_f32(wb);
                ci = ci < 7 ? ci : 7;
                float mag = (float)ci * bits_f32(sb[k][l]);
                out[l] = bits_f32((f32_bits(mag) | is_neg(xv) << 31) | nanm[l]);
            }
        }
        if (i >= n) break;
        if (w == CW) {
            for (int l = 0; l < CW; l++) yr[l] = out[l];
        } else {
            for (int l = 0; l < w; l++) yr[l] = out[l];
        }
    }
}

void hif4_qdq_cols(float *y, ptrdiff_t ldy, const float *x, ptrdiff_t ld, int rows, int cols,
                   enum hif4_recipe r) {
    for (int g = 0; g < rows; g += 64) {
        int n = rows - g < 64 ? rows - g : 64;
        for (int c = 0; c < cols; c += CW) {
            int w = cols - c < CW ? cols - c : CW;
            cols_tile(y + (ptrdiff_t)g * ldy + c, ldy, x + (ptrdiff_t)g * ld + c, ld, n, w, r);
        }
    }
}

// ---- packed unit ----
void hif4_pack(uint8_t unit[36], const uint8_t codes[64], struct hif4_meta m) {
    for (int i = 0; i < 32; i++) unit[i] = (uint8_t)((codes[2 * i] & 15) | (codes[2 * i + 1] & 15) << 4);
    unit[32] = m.ea;
    unit[33] = m.eb;
    unit[34] = (uint8_t)(m.ec & 0xff);
    unit[35] = (uint8_t)(m.ec >> 8);
}

void hif4_unpack_codes(uint8_t codes[64], struct hif4_meta *m, const uint8_t unit[36]) {
    for (int i = 0; i < 32; i++) {
        codes[2 * i] = unit[i] & 15;
        codes[2 * i + 1] = unit[i] >> 4;
    }
    m->ea = unit[32];
    m->eb = unit[33];
    m->ec = (uint16_t)(unit[34] | unit[35] << 8);
}

void hif4_decode(float out[64], const uint8_t codes[64], struct hif4_meta m) {
    if (m.ea == HIF4_EA_NAN) {
        for (int i = 0; i < 64; i++) out[i] = NAN;
        return;
    }
    float S = hif4_e6m2_value(m.ea);
    for (int i = 0; i < 64; i++) {
        int k = ((m.eb >> (i >> 3)) & 1) + ((m.ec >> (i >> 2)) & 1);
        float v = ldexpf((float)(codes[i] & 7) * S, k - 2); // exact: <= 6 significant bits
        out[i] = codes[i] & 8 ? -v : v;
    }
}

void hif4_unpack(float out[64], const uint8_t unit[36]) {
    uint8_t codes[64];
    struct hif4_meta m;
    hif4_unpack_codes(codes, &m, unit);
    hif4_decode(out, codes, m);
}
