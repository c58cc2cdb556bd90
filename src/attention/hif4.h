// hif4.h: the HiFloat4 (HiF4) 4-bit codec of spec/hif4.md: quantize-dequantize (QDQ) of
// 64-element groups in binary32 with the explicit bf16 roundings of section 4 (normative) or
// the A6-hardware rounding recipe of section 6, tensor-level QDQ along one axis with
// zero-padded tails (section 5), and the packed 36-byte unit (section 3).
// Knows nothing about attention. No allocation, no I/O, no globals; every function is
// thread-safe and deterministic, and its bits never depend on the call shape (one group at a
// time, a batch, strided or columns give identical results; tests/test_hif4.c checks it).
// Speed (bench_hif4, one core, AVX-512): hif4_qdq on long contiguous arrays ~2 G elem/s (it
// batches 16 groups); single hif4_qdq_group calls ~1.5 G; hif4_qdq_cols ~0.9 G. So quantize
// a whole contiguous P tile [rows][Bc] with one hif4_qdq call (Bc a multiple of 64), and V
// along tokens with hif4_qdq_cols: hif4_qdq_strided one column at a time is cache-bound
// (~0.5 G elem/s, ~0.1 G at power-of-two strides such as 1024 floats, set aliasing).
#ifndef HIFA4_HIF4_H
#define HIFA4_HIF4_H

#include <stddef.h>
#include <stdint.h>

#define HIF4_GROUP 64
#define HIF4_UNIT_BYTES 36        // 32 bytes of nibbles + ea, eb, ec_lo, ec_hi (section 3)
#define HIF4_EA_NAN 255           // ea of a group that held a NaN (section 3/5)
#define HIF4_MAX_VALUE 344064.0f  // 1.75 * 2 * 2 * 49152, largest magnitude (section 2)

// Normative = section 4 (binary32, half-up element rounding with the fp32 add).
// A6 = section 6 row "A6 hardware": the input is first rounded to bf16 (the device quantizes
// bf16 tensors), eb/ec thresholds and the element quotient are rounded to bf16, and the
// element rounds to the nearest code with ties to even. Both share steps 1-7 (maxima,
// scale, reciprocal) and the section 5 NaN/Inf rules.
enum hif4_recipe { HIF4_RECIPE_NORMATIVE = 0, HIF4_RECIPE_A6 = 1 };

// Group metadata (section 2): ea = E6M2 scale code (255 marks a NaN group), eb bit j =
// micro-exponent of 8-block j, ec bit k = micro-exponent of 4-block k.
struct hif4_meta { uint8_t ea; uint8_t eb; uint16_t ec; };

// ---- group QDQ ----
// QDQ of one group of n (1..64) binary32 values x[0..n-1]; elements n..63 are treated as
// zeros (zero-padded tail, section 5). Writes y[0..n-1] only. y may alias x. meta and codes
// (64 entries; code = 8*sign + magnitude, tail codes 0) may be NULL.
// Section 4/5 semantics: any NaN in x -> all n outputs NaN, meta ea=255 eb=ec=0, codes 0;
// +-Inf is an ordinary (saturating) value. y[i] is +0.0 for x[i] = +-0 and -0.0 for a
// negative x[i] that rounds to zero. n outside 1..64 is a caller bug (asserted).
void hif4_qdq_group(float *y, const float *x, int n, enum hif4_recipe r, struct hif4_meta *meta,
                    uint8_t *codes);

// Literal, step-by-step scalar transcription of section 4 (normative: the divisions and
// products exactly as listed) and of the A6 recipe of section 6; full 64-element group only,
// meta/codes may be NULL. Slow; it exists so tests can check hif4_qdq_group against it.
void hif4_qdq_group_ref(float y[64], const float x[64], enum hif4_recipe r,
                        struct hif4_meta *meta, uint8_t codes[64]);

// ---- tensor QDQ ----
// QDQ of len elements spaced by stride (in floats, may be negative or 1) along one axis:
// groups of 64 consecutive elements starting at element 0, last group zero-padded.
// y may alias x (same stride). len <= 0 does nothing.
void hif4_qdq_strided(float *y, const float *x, int len, ptrdiff_t stride, enum hif4_recipe r);

// QDQ of a contiguous array x[len], groups along it (len need not be a multiple of 64).
void hif4_qdq(float *y, const float *x, int len, enum hif4_recipe r);

// QDQ along each row of a row-major matrix x[rows][ld] (first `cols` columns used): row i is
// hif4_qdq(y + i*ldy, x + i*ld, cols) - groups of 64 inside the row, each row's tail
// zero-padded separately - but batched across rows (e.g. Q/K [T*H][head_dim] with a
// head_dim that is not a multiple of 64, or a P tile inside a wider buffer). In place
// (y == x) needs ldy == ld.
void hif4_qdq_rows(float *y, ptrdiff_t ldy, const float *x, ptrdiff_t ld, int rows, int cols,
                   enum hif4_recipe r);

// QDQ down the columns of a row-major matrix x[rows][ld] (first `cols` columns used): column
// c is the strided axis x[0*ld+c], x[1*ld+c], ..., grouped in 64 consecutive rows, last
// group zero-padded. Same result as hif4_qdq_strided on every column (V grouped along tokens),
// but vectorized across columns. y[rows][ldy] may alias x only with ldy == ld.
void hif4_qdq_cols(float *y, ptrdiff_t ldy, const float *x, ptrdiff_t ld, int rows, int cols,
                   enum hif4_recipe r);

// ---- packed unit (section 3) ----
// unit = 32 bytes q[i] = code[2i] | code[2i+1] << 4, then ea, eb, ec & 0xff, ec >> 8.
void hif4_pack(uint8_t unit[36], const uint8_t codes[64], struct hif4_meta m);
// Decodes a unit to 64 floats (exact). ea = 255 (NaN group) -> all NaN.
void hif4_unpack(float out[64], const uint8_t unit[36]);
// Splits a unit back into codes and metadata (inverse of hif4_pack).
void hif4_unpack_codes(uint8_t codes[64], struct hif4_meta *m, const uint8_t unit[36]);
// Decodes codes + metadata to 64 floats (section 3 decode; ea = 255 -> all NaN).
void hif4_decode(float out[64], const uint8_t codes[64], struct hif4_meta m);

// ---- scalar pieces (exposed for tests) ----
// E6M2 scale of a code (0..254); NaN for 255. S = (4 + (ea&3)) * 2^((ea>>2) - 50).
float hif4_e6m2_value(int ea);
// Step 6: E6M2 code of a binary32 t in [2^-48, 49152], round half to even on 2 fraction bits.
int hif4_e6m2_encode(float t);
// Step 7: R = bf16(f32(1/S)) of code ea (0..254), from the exact table.
float hif4_recip(int ea);

#endif
