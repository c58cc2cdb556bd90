// fp4.h: the OCP FP4 codecs of spec/fp4.md - E2M1 elements, E4M3 and E8M0 block scales, and
// quantize-dequantize (QDQ) of MXFP4 (32-element blocks, E8M0), two-level NVFP4 (16 elements,
// E4M3 block scale under a binary32 per-tensor scale, TransformerEngine order) and single-level
// NVFP4 (SageAttention3's quantizer), plus SageAttention3's two-level P quantizer of one tile
// row (section 5.4 T2-T4). Knows nothing about attention. No allocation, no I/O, no globals.
// Inputs must be finite (section 2.4): every block function returns -1 (nothing written but
// unspecified outputs) when a block holds NaN or +-Inf, so callers can report the position.
// The fast paths here (branch-free element loops that vectorize) sit beside a literal
// transcription in fp4_ref.c; tests/test_fp4.c checks both against the spec's vectors and each
// other. Results never depend on the call shape (a block alone or inside a tensor).
#ifndef HIFA4_FP4_H
#define HIFA4_FP4_H

#include <stddef.h>
#include <stdint.h>

#define FP4_MX_BLOCK 32
#define FP4_NV_BLOCK 16
#define FP4_E4M3_MAX_BYTE 0x7e // 448 (satfinite; 0x7f is NaN and never produced)

// The block formats (CLI spellings "mxfp4", "nvfp4", "nvfp4-1l").
enum fp4_format { FP4_MXFP4 = 0, FP4_NVFP4 = 1, FP4_NVFP4_1L = 2 };
int fp4_block(enum fp4_format f); // 32, 16, 16

// ---- element and scale codecs (section 2) ----
// E2M1: code = 8*sign + magnitude code; value(8) = -0.0.
float fp4_e2m1_value(int code);
// Round to nearest, ties to the even code, saturate to +-6; sign bit of v kept (-0.0 -> 8).
int fp4_e2m1_encode(float v);
// E4M3 (OCP E4M3FN, bias 7, subnormals): byte 0..0x7e; 0x7f (NaN) and bytes >= 0x80 (negative)
// decode to NaN here (never produced).
float fp4_e4m3_value(int b);
// x >= 0 binary32 or +Inf: nearest, ties to even, every x >= 448 -> 0x7e (section 2.2).
int fp4_e4m3_encode(float x);
// E8M0: 2^(b - 127) for b in 0..254 (b = 0 is the subnormal 2^-127); 255 -> NaN.
float fp4_e8m0_value(int b);

// ---- NVFP4 per-tensor scale (section 3.2 G1-G3) ----
struct fp4_tscale { float s_enc, s_dec, t; };
// From the tensor amax At (>= every |x| of the set; 0 allowed). P's fixed scale is At = 1.
void fp4_nv_tscale(struct fp4_tscale *ts, float At);

// ---- one block (fast path) ----
// QDQ of x[0..n) (1 <= n <= the format's block; the tail is zero-padded, pads dropped) into
// y[0..n) (may alias x). codes[n] and *scale (the block's scale byte) may be NULL. ts is the
// NVFP4 tensor scale (ignored by the other formats, may then be NULL). Returns 0, or -1 if x
// holds a NaN or an Inf.
int fp4_qdq_block(float *y, const float *x, int n, enum fp4_format f, const struct fp4_tscale *ts,
                  uint8_t *codes, uint8_t *scale);
// The literal transcription of sections 3.1-3.3 (fp4_ref.c): E2M1 and E4M3 by exact nearest
// search over their value tables, the MXFP4 exponent by frexp; same contract. For tests.
int fp4_qdq_block_ref(float *y, const float *x, int n, enum fp4_format f, const struct fp4_tscale *ts,
                      uint8_t *codes, uint8_t *scale);

// ---- tensors (blocks along one axis from element 0, last block zero-padded; section 3.4) ----
// Contiguous x[len] -> y[len] (y may alias x). 0 or -1 (a non-finite element).
int fp4_qdq(float *y, const float *x, int len, enum fp4_format f, const struct fp4_tscale *ts);
// Down the columns of a row-major x[rows][ld] (first `cols` columns): column c is quantized in
// blocks of consecutive rows from row 0 (V grouped along tokens), lane-wise across columns.
// y[rows][ld] (the same row stride as x) may alias x. 0 or -1.
int fp4_qdq_cols(float *y, const float *x, ptrdiff_t ld, int rows, int cols, enum fp4_format f,
                 const struct fp4_tscale *ts);
// amax of x[len] (max |x|, binary32; NaN never wins a comparison here, callers check finiteness).
float fp4_amax(const float *x, int len);

// ---- SageAttention3's P of one tile row (section 5.4 T2-T4, 5.1 constants) ----
#define FP4_SAGE3_TILE 128
#define FP4_L2688 0xc13646efu // f32(log2 1/2688)
#define FP4_L6 0xc0257007u    // f32(log2 1/6)
// exp2cr(x) = (float)exp2((double)x) (section 5.1).
float fp4_exp2cr(float x);
// c = (float)((double)sm * log2 e) for a binary32 score scale sm.
float fp4_sage3_c(float sm);
// Scores S[n] of one tile row (n <= 128 keys from the tile start, -inf = invisible; keys n..127
// count as masked), the row's m_new (finite) and c: P~ (ptilde[n]), the PV operand pc[n], the
// unrounded block scales s[8], scale bytes sb[8] and codes[n]. Any output pointer but pc may be
// NULL. With quantize_p = 0 (--qdq-skip p) pc = P~.
struct fp4_sage3_row {
    float *ptilde, *pc, *s;
    uint8_t *sb, *codes;
};
enum fp4_p_quant { FP4_P_QUANT = 0, FP4_P_SKIP = 1 };
void fp4_sage3_p(const struct fp4_sage3_row *out, const float *S, int n, float m_new, float c, enum fp4_p_quant q);
// The literal per-key transcription of the same (fp4_ref.c), for tests.
void fp4_sage3_p_ref(const struct fp4_sage3_row *out, const float *S, int n, float m_new, float c);

#endif
