// ggml_quants.h: the ggml tensor types a GGUF file can hold (name, block size, bytes per block,
// as in llama.cpp's gguf-py GGML_QUANT_SIZES) and scalar dequantization to binary32 of the
// types small GGUF models use: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K.
// Each dequantizer does llama.cpp's dequantize_row_* arithmetic in its order (one binary32
// multiply, then one add/sub; the build has -ffp-contract=off so nothing is fused), so its
// output equals gguf.quants.dequantize bit for bit (tests/test_gguf.c, tests/data/gguf/).
// Knows no file format and no model.
#ifndef HIFA4_GGML_QUANTS_H
#define HIFA4_GGML_QUANTS_H

#include <stddef.h>
#include <stdint.h>

#include "base/common.h"

// ggml type ids (ggml.h enum ggml_type; gaps are ids llama.cpp removed).
enum ggml_type {
    GGML_F32 = 0, GGML_F16 = 1, GGML_Q4_0 = 2, GGML_Q4_1 = 3, GGML_Q5_0 = 6, GGML_Q5_1 = 7,
    GGML_Q8_0 = 8, GGML_Q8_1 = 9, GGML_Q2_K = 10, GGML_Q3_K = 11, GGML_Q4_K = 12, GGML_Q5_K = 13,
    GGML_Q6_K = 14, GGML_Q8_K = 15, GGML_BF16 = 30, GGML_TYPE_MAX = 64
};

// Name ("Q4_1"), or NULL for an id ggml does not define.
const char *ggml_type_name(uint32_t type);
// Elements per block and bytes per block; 0 for an undefined id.
int ggml_blck_size(uint32_t type);
size_t ggml_type_size(uint32_t type);
// 1 if ggml_dequantize supports the type.
int ggml_can_dequantize(uint32_t type);
// "F32, F16, BF16, Q8_0, ..." (static storage), for error messages.
const char *ggml_supported_names(void);

// Bytes of n elements of the type (n a multiple of the block size): 0 and ERR_* on a partial
// block or overflow, with a message naming the type and n.
int ggml_row_bytes(uint32_t type, int64_t n, size_t *bytes, struct err *e);

// Dequantizes n elements (a multiple of the type's block size) from src (ggml_row_bytes(n)
// bytes, any alignment, little-endian) into dst. An unsupported type is ERR_UNSUPPORTED
// naming it and listing the supported ones; a partial block is ERR_FORMAT.
int ggml_dequantize(float *dst, const void *src, uint32_t type, int64_t n, struct err *e);

#endif
