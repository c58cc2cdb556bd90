// quant.c: --qformat dispatch of the tiled modes' qdq (quant.h) over hif4.h and fp4.h.
#include "attention/quant.h"

#include "attention/attn.h"

void attn_q4_init(struct attn_q4 *z, int qformat) {
    z->qformat = qformat;
    z->rec = qformat == ATTN_QFORMAT_HIF4_A6 ? HIF4_RECIPE_A6 : HIF4_RECIPE_NORMATIVE;
    z->f4 = qformat == ATTN_QFORMAT_MXFP4 ? FP4_MXFP4 : FP4_NVFP4;
    z->block = qformat == ATTN_QFORMAT_MXFP4 ? FP4_MX_BLOCK : qformat == ATTN_QFORMAT_NVFP4 ? FP4_NV_BLOCK : HIF4_GROUP;
    fp4_nv_tscale(&z->ts, 1.0f);
}

int attn_q4_has_tensor_scale(const struct attn_q4 *z) { return z->qformat == ATTN_QFORMAT_NVFP4; }
void attn_q4_set_amax(struct attn_q4 *z, float At) { fp4_nv_tscale(&z->ts, At); }

static int is_hif4(const struct attn_q4 *z) {
    return z->qformat == ATTN_QFORMAT_HIF4 || z->qformat == ATTN_QFORMAT_HIF4_A6;
}

void attn_q4_vec(const struct attn_q4 *z, float *x, int n) {
    if (is_hif4(z)) hif4_qdq(x, x, n, z->rec);
    else fp4_qdq(x, x, n, z->f4, &z->ts);
}

void attn_q4_vec_ref(const struct attn_q4 *z, float *x, int n) {
    for (int g0 = 0; g0 < n; g0 += z->block) {
        const int m = n - g0 < z->block ? n - g0 : z->block;
        if (is_hif4(z)) hif4_qdq_group(x + g0, x + g0, m, z->rec, NULL, NULL);
        else fp4_qdq_block_ref(x + g0, x + g0, m, z->f4, &z->ts, NULL, NULL);
    }
}

void attn_q4_cols(const struct attn_q4 *z, float *x, ptrdiff_t ld, int rows, int cols) {
    if (is_hif4(z)) hif4_qdq_cols(x, ld, x, ld, rows, cols, z->rec);
    else fp4_qdq_cols(x, x, ld, rows, cols, z->f4, &z->ts);
}
