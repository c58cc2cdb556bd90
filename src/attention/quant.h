// quant.h: the 4-bit quantizer of the tiled modes under --qformat (spec/attention.md sections 3-4
// with qdq() of spec/hif4.md or spec/fp4.md section 4): one operand's format, block and, for
// NVFP4, its per-tensor scale (section 4.2). flash.c runs the fast paths, flash_ref.c the
// literal per-block references. Internal to src/attention/.
#ifndef HIFA4_ATTN_QUANT_H
#define HIFA4_ATTN_QUANT_H

#include <stddef.h>

#include "attention/fp4.h"
#include "attention/hif4.h"

struct attn_q4 {
    int qformat;           // enum attn_qformat
    int block;             // 64 (HiF4), 32 (MXFP4) or 16 (NVFP4)
    enum hif4_recipe rec;  // HiF4 formats
    enum fp4_format f4;    // FP4 formats
    struct fp4_tscale ts;  // NVFP4: the operand's per-tensor scale (At = 1 until set: P's, 4.2)
};
void attn_q4_init(struct attn_q4 *z, int qformat);
// 1 for formats with a per-tensor scale (NVFP4): the caller sets it from the set's amax.
int attn_q4_has_tensor_scale(const struct attn_q4 *z);
void attn_q4_set_amax(struct attn_q4 *z, float At);
// QDQ of x[n] in place, blocks from element 0 (tail zero-padded): fast path / literal reference.
// Inputs are finite (attn_forward checked the call's Q, K, V for the FP4 formats).
void attn_q4_vec(const struct attn_q4 *z, float *x, int n);
void attn_q4_vec_ref(const struct attn_q4 *z, float *x, int n);
// QDQ down the columns of x[rows][ld] (first cols columns), blocks of rows from row 0, in place.
void attn_q4_cols(const struct attn_q4 *z, float *x, ptrdiff_t ld, int rows, int cols);

#endif
