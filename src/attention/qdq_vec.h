// qdq_vec.h: one line of a 4-bit vectors file (spec/fp4.md section 7; spec/hif4.md's lines
// carry input_bits too) quantized by this build's codecs: `hifa4-eval qdq` prints such lines so
// that any set of vectors can be checked from the command line. The line is a cJSON object
// whose inputs are read and validated (names of line, field and value in every error) and
// whose output fields are replaced in place, keeping their position:
//  - block formats (mxfp4, nvfp4, nvfp4-1l; hif4, hif4-a6 in 64-groups): codes, scale_bytes
//    (one per block; HiF4: the 4 metadata bytes ea, eb, ec & 255, ec >> 8 of each group, the
//    packed unit's tail), output_bits; nvfp4 also s_enc_bits and s_dec_bits from the line's
//    tensor_amax_bits (added as the amax of the line's inputs when absent).
//  - sage3-p (section 5.4 T2-T4): ptilde_bits, s_bits, scale_bytes, codes, pc_bits from
//    scores_bits, m_bits and c_bits.
// A format given explicitly that differs from the line's own turns the line into a line of
// that format: its format and block fields are set, and fields that belong to the old format
// (its variant records, HiF4's ea/eb/ec/packed_hex, decimal input/output) are dropped.
#ifndef HIFA4_QDQ_VEC_H
#define HIFA4_QDQ_VEC_H

#include "base/common.h"
#include "base/json_util.h"

enum qdq_vec_format {
    QDQ_VEC_LINE = -1, // each line's own "format" field
    QDQ_VEC_MXFP4 = 0, QDQ_VEC_NVFP4, QDQ_VEC_NVFP4_1L, QDQ_VEC_HIF4, QDQ_VEC_HIF4_A6, QDQ_VEC_SAGE3_P,
};
// "mxfp4" | "nvfp4" | "nvfp4-1l" | "hif4" | "hif4-a6" | "sage3-p" -> 0, else ERR_USAGE naming
// what (e.g. "--format") and the accepted spellings.
int qdq_vec_parse_format(const char *s, enum qdq_vec_format *out, const char *what, struct err *e);
// Quantizes the line (ctx names it in errors, e.g. "FILE:12"). Errors: ERR_FORMAT for missing
// or malformed fields, ERR_RANGE for a non-finite input of an FP4 format (spec 2.4).
int qdq_vec_line(cJSON *line, enum qdq_vec_format f, const char *ctx, struct err *e);

#endif
