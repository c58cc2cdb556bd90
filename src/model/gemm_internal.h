// gemm_internal.h: the interface between gemm.c (validation, dispatch, threading, reference)
// and one file per instruction set (gemm_avx512.c, gemm_avx2.c, the scalar path in gemm.c).
// Not part of the public contract.
#ifndef HIFA4_GEMM_INTERNAL_H
#define HIFA4_GEMM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <string.h>

#include "model/gemm.h"

// One GEMM call, as the block functions see it (validated by gemm_run).
struct gemm_args {
    float *y;           // (M, ldy), columns indexed absolutely
    size_t ldy;
    const float *x;     // (M, ldx)
    size_t ldx;
    const float *w;     // GEMM_FMT_F32: packed panels (ceil(N/16), K, 16)
    const uint32_t *q;  // bf16 formats: pair panels (ceil(N/16), ceil(K/2), 16)
    int fmt;            // enum gemm_fmt
    int K;
    int n0, n1;         // column range written
    const float *bias;  // (N) or NULL, absolute columns
    int bf16;           // output rounding (enum gemm_round)
    int kc;             // max k per K block (K is split evenly; even for the bf16 formats), 1..GEMM_KC_MAX
};
#define GEMM_KC_MAX 1024

// A path: computes rows [m0, m1) x panels [p0, p1) (clipped to [n0, n1)) over all of K, and
// packs panels [pa, pb) into dst (panel pa at dst): pack the f32 format, pack_q the bf16
// pair panels (the same bits on every path). mr: rows per micro-tile; mc, pc, kc: the default task
// shape (rows, panels) and K block, tuned per path (README.md).
struct gemm_isa {
    const char *name;
    int mr, mc, pc, kc;
    void (*block)(const struct gemm_args *a, int m0, int m1, int p0, int p1);
    void (*pack)(float *dst, const struct gemm_mat *src, int pa, int pb);
    void (*pack_q)(uint32_t *dst, const struct gemm_mat *src, int pa, int pb);
};

extern const struct gemm_isa gemm_isa_avx512, gemm_isa_avx512f, gemm_isa_avx2, gemm_isa_scalar;
// The vdpbf16ps kernel of the avx512 path (gemm_avx512bf16.c): the GEMM_FMT_BF16_DP block.
void gemm_avx512bf16_block(const struct gemm_args *a, int m0, int m1, int p0, int p1);
// The avx512 path's block with the format dispatch (gemm_avx512.c): vdpbf16ps for
// GEMM_FMT_BF16_DP if use_dp says so, else convert and fma.
enum gemm_dp_use { GEMM_DP_FMA = 0, GEMM_DP_VDPBF16PS = 1 };
void gemm_avx512_block_with(const struct gemm_args *a, int m0, int m1, int p0, int p1, enum gemm_dp_use use);

// Overrides the driver's block shape (rows per block, panels per block; 0 = default) and the
// work (multiply-adds) below which a call stays on one thread (< 0 = default). For tests
// (many blocks on small shapes) and tuning runs only; not thread-safe against gemm_run.
void gemm_set_blocking(int mc, int pc, double min_par);
void gemm_set_kc(int kc);

// Shared epilogue helpers (scalar, the definition of the contract's epilogue).
static inline uint32_t gemm_bits(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static inline float gemm_float(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
#define GEMM_QNAN 0x7fc00000u
// bias add, NaN canonicalisation, optional RNE to bf16 (common.h round_bf16 semantics: the
// NaN branch there maps the canonical NaN to itself, so integer rounding covers every case).
static inline float gemm_epi1(float acc, const float *bias, int n, int bf16) {
    if (bias) acc = acc + bias[n];
    uint32_t u = gemm_bits(acc);
    if ((u & 0x7fffffffu) > 0x7f800000u) u = GEMM_QNAN;
    if (bf16) u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    return gemm_float(u);
}
// Exact widening, same bits as common.h bf16_to_f32 / f16_to_f32.
static inline float gemm_bf16_f32(uint16_t h) { return gemm_float((uint32_t)h << 16); }
static inline float gemm_f16_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return gemm_float(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        float v = (float)m * 5.9604644775390625e-8f; // m * 2^-24, exact
        return sign ? -v : v;
    }
    return gemm_float(sign | ((e + 112) << 23) | (m << 13));
}
// Element j of a source row of the given type, as f32.
static inline float gemm_src_at(const void *row, int type, size_t j) {
    if (type == GEMM_SRC_F32) return ((const float *)row)[j];
    uint16_t h;
    memcpy(&h, (const unsigned char *)row + 2 * j, 2);
    return type == GEMM_SRC_BF16 ? gemm_bf16_f32(h) : gemm_f16_f32(h);
}
static inline const void *gemm_src_row(const struct gemm_mat *s, size_t r) {
    return (const unsigned char *)s->p + r * s->ld * (s->type == GEMM_SRC_F32 ? 4 : 2);
}

// ---- the bf16 formats (gemm.h) ----
// common.h round_bf16, as bits: RNE; a NaN keeps its top bits and is made quiet.
static inline uint32_t gemm_bf16_bits(float v) {
    uint32_t u = gemm_bits(v);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (u | 0x00400000u) & 0xffff0000u;
    return (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
}
// daz: a subnormal becomes a zero of its sign.
static inline float gemm_daz(float v) {
    const uint32_t u = gemm_bits(v);
    return (u & 0x7f800000u) ? v : gemm_float(u & 0x80000000u);
}
// One step of the bf16 dot-product contract, acc = ftz(rnd(acc + x*w)) with x, w already
// daz'd bf16 values and acc not subnormal: fmaf rounds with gradual underflow, which agrees
// with the unbounded-exponent rounding except when it returns exactly +-2^-126; there the
// same sum is redone scaled by 2^24 (exact: |x| <= 2^40 whenever such a sum is that small,
// as |w| >= 2^-126) to see whether the unbounded rounding fell below 2^-126.
static inline float gemm_dp_step(float acc, float x, float w) {
    const float r = fmaf(x, w, acc);
    const uint32_t a = gemm_bits(r) & 0x7fffffffu;
    if (a > 0x00800000u) return r;
    if (a == 0x00800000u && fabsf(fmaf(x * 0x1p24f, w, acc * 0x1p24f)) >= 0x1p-102f) return r;
    return gemm_float(gemm_bits(r) & 0x80000000u);
}
// The dp epilogue's bias add: ftz(rnd(acc + daz(b))).
static inline float gemm_dp_bias(float acc, const float *bias, int n) {
    return bias ? gemm_dp_step(acc, 1.0f, gemm_daz(bias[n])) : acc;
}
// MXCSR FTZ (bit 15) and DAZ (bit 6): the vector paths' dp arithmetic.
#define GEMM_MXCSR_FTZ_DAZ 0x8040u

#endif
