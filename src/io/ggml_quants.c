// ggml_quants.c: ggml type table and scalar dequantizers (see ggml_quants.h). Each block
// function transcribes llama.cpp's dequantize_row_* (ggml/src/ggml-quants.c) operation for
// operation; block layouts are ggml's block_* structs (ggml-common.h), read byte by byte so
// neither alignment nor host byte order matters.
#include "io/ggml_quants.h"

#include <stdio.h>

#define QK_K 256

static const struct {
    const char *name;
    int blck;
    size_t size;
} types[GGML_TYPE_MAX] = {
    // gguf-py 0.19 GGML_QUANT_SIZES (llama.cpp's own table)
    [0] = {"F32", 1, 4},        [1] = {"F16", 1, 2},        [2] = {"Q4_0", 32, 18},
    [3] = {"Q4_1", 32, 20},     [6] = {"Q5_0", 32, 22},     [7] = {"Q5_1", 32, 24},
    [8] = {"Q8_0", 32, 34},     [9] = {"Q8_1", 32, 40},     [10] = {"Q2_K", 256, 84},
    [11] = {"Q3_K", 256, 110},  [12] = {"Q4_K", 256, 144},  [13] = {"Q5_K", 256, 176},
    [14] = {"Q6_K", 256, 210},  [15] = {"Q8_K", 256, 292},  [16] = {"IQ2_XXS", 256, 66},
    [17] = {"IQ2_XS", 256, 74}, [18] = {"IQ3_XXS", 256, 98}, [19] = {"IQ1_S", 256, 50},
    [20] = {"IQ4_NL", 32, 18},  [21] = {"IQ3_S", 256, 110}, [22] = {"IQ2_S", 256, 82},
    [23] = {"IQ4_XS", 256, 136}, [24] = {"I8", 1, 1},       [25] = {"I16", 1, 2},
    [26] = {"I32", 1, 4},       [27] = {"I64", 1, 8},       [28] = {"F64", 1, 8},
    [29] = {"IQ1_M", 256, 56},  [30] = {"BF16", 1, 2},      [34] = {"TQ1_0", 256, 54},
    [35] = {"TQ2_0", 256, 66},  [39] = {"MXFP4", 32, 17},   [40] = {"NVFP4", 64, 36},
    [41] = {"Q1_0", 128, 18},
};

const char *ggml_type_name(uint32_t t) { return t < GGML_TYPE_MAX ? types[t].name : NULL; }
int ggml_blck_size(uint32_t t) { return t < GGML_TYPE_MAX ? types[t].blck : 0; }
size_t ggml_type_size(uint32_t t) { return t < GGML_TYPE_MAX ? types[t].size : 0; }

const char *ggml_supported_names(void) {
    return "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K";
}

int ggml_can_dequantize(uint32_t t) {
    switch (t) {
    case GGML_F32: case GGML_F16: case GGML_BF16: case GGML_Q8_0: case GGML_Q4_0: case GGML_Q4_1:
    case GGML_Q5_0: case GGML_Q5_1: case GGML_Q2_K: case GGML_Q3_K: case GGML_Q4_K: case GGML_Q5_K:
    case GGML_Q6_K:
        return 1;
    default:
        return 0;
    }
}

int ggml_row_bytes(uint32_t t, int64_t n, size_t *bytes, struct err *e) {
    *bytes = 0;
    const char *name = ggml_type_name(t);
    if (!name) return err_set(e, ERR_FORMAT, "unknown ggml type %u", t);
    if (n < 0 || n % types[t].blck)
        return err_set(e, ERR_FORMAT, "%lld elements of type %s are not a whole number of %d-element blocks",
                       (long long)n, name, types[t].blck);
    if (mul_size((size_t)(n / types[t].blck), types[t].size, bytes))
        return err_set(e, ERR_RANGE, "%lld elements of type %s overflow the size type", (long long)n, name);
    return 0;
}

// fp16 field at byte offset o of a block (ggml_fp16_t, little-endian)
static inline float h16(const uint8_t *b, int o) { return f16_to_f32((uint16_t)(b[o] | b[o + 1] << 8)); }

// ---- 32-element blocks ----
static void deq_q4_0(float *y, const uint8_t *b) { // d @0, qs[16] @2
    const float d = h16(b, 0);
    for (int j = 0; j < 16; j++) {
        const int x0 = (b[2 + j] & 0x0F) - 8, x1 = (b[2 + j] >> 4) - 8;
        y[j] = x0 * d;
        y[j + 16] = x1 * d;
    }
}

static void deq_q4_1(float *y, const uint8_t *b) { // d @0, m @2, qs[16] @4
    const float d = h16(b, 0), m = h16(b, 2);
    for (int j = 0; j < 16; j++) {
        const int x0 = b[4 + j] & 0x0F, x1 = b[4 + j] >> 4;
        y[j] = x0 * d + m;
        y[j + 16] = x1 * d + m;
    }
}

static inline uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void deq_q5_0(float *y, const uint8_t *b) { // d @0, qh[4] @2, qs[16] @6
    const float d = h16(b, 0);
    const uint32_t qh = le32(b + 2);
    for (int j = 0; j < 16; j++) {
        const uint8_t xh_0 = (uint8_t)(((qh >> (j + 0)) << 4) & 0x10);
        const uint8_t xh_1 = (uint8_t)((qh >> (j + 12)) & 0x10);
        const int32_t x0 = ((b[6 + j] & 0x0F) | xh_0) - 16, x1 = ((b[6 + j] >> 4) | xh_1) - 16;
        y[j] = x0 * d;
        y[j + 16] = x1 * d;
    }
}

static void deq_q5_1(float *y, const uint8_t *b) { // d @0, m @2, qh[4] @4, qs[16] @8
    const float d = h16(b, 0), m = h16(b, 2);
    const uint32_t qh = le32(b + 4);
    for (int j = 0; j < 16; j++) {
        const uint8_t xh_0 = (uint8_t)(((qh >> (j + 0)) << 4) & 0x10);
        const uint8_t xh_1 = (uint8_t)((qh >> (j + 12)) & 0x10);
        const int x0 = (b[8 + j] & 0x0F) | xh_0, x1 = (b[8 + j] >> 4) | xh_1;
        y[j] = x0 * d + m;
        y[j + 16] = x1 * d + m;
    }
}

static void deq_q8_0(float *y, const uint8_t *b) { // d @0, qs int8[32] @2
    const float d = h16(b, 0);
    for (int j = 0; j < 32; j++) y[j] = (int8_t)b[2 + j] * d;
}

// ---- 256-element super-blocks (k-quants) ----
static void deq_q2_k(float *y, const uint8_t *b) { // scales[16] @0, qs[64] @16, d @80, dmin @82
    const float d = h16(b, 80), min = h16(b, 82);
    const uint8_t *q = b + 16;
    int is = 0;
    for (int n = 0; n < QK_K; n += 128) {
        int shift = 0;
        for (int j = 0; j < 4; ++j) {
            uint8_t sc = b[is++];
            float dl = d * (sc & 0xF), ml = min * (sc >> 4);
            for (int l = 0; l < 16; ++l) *y++ = dl * ((int8_t)((q[l] >> shift) & 3)) - ml;
            sc = b[is++];
            dl = d * (sc & 0xF), ml = min * (sc >> 4);
            for (int l = 0; l < 16; ++l) *y++ = dl * ((int8_t)((q[l + 16] >> shift) & 3)) - ml;
            shift += 2;
        }
        q += 32;
    }
}

static void deq_q3_k(float *y, const uint8_t *b) { // hmask[32] @0, qs[64] @32, scales[12] @96, d @108
    const uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
    const float d_all = h16(b, 108);
    const uint8_t *q = b + 32, *hm = b;
    uint32_t aux[4] = {le32(b + 96), le32(b + 100), le32(b + 104), 0};
    const uint32_t tmp = aux[2];
    aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
    aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
    aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
    aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
    int8_t scales[16]; // the bytes of aux as ggml reads them on a little-endian host
    for (int i = 0; i < 16; i++) scales[i] = (int8_t)(uint8_t)(aux[i / 4] >> (8 * (i % 4)));
    int is = 0;
    uint8_t m = 1;
    for (int n = 0; n < QK_K; n += 128) {
        int shift = 0;
        for (int j = 0; j < 4; ++j) {
            float dl = d_all * (scales[is++] - 32);
            for (int l = 0; l < 16; ++l) *y++ = dl * ((int8_t)((q[l + 0] >> shift) & 3) - ((hm[l + 0] & m) ? 0 : 4));
            dl = d_all * (scales[is++] - 32);
            for (int l = 0; l < 16; ++l) *y++ = dl * ((int8_t)((q[l + 16] >> shift) & 3) - ((hm[l + 16] & m) ? 0 : 4));
            shift += 2;
            m = (uint8_t)(m << 1);
        }
        q += 32;
    }
}

static inline void scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m) {
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
    }
}

static void deq_q4_k(float *y, const uint8_t *b) { // d @0, dmin @2, scales[12] @4, qs[128] @16
    const float d = h16(b, 0), min = h16(b, 2);
    const uint8_t *q = b + 16, *scales = b + 4;
    int is = 0;
    uint8_t sc, m;
    for (int j = 0; j < QK_K; j += 64) {
        scale_min_k4(is + 0, scales, &sc, &m);
        const float d1 = d * sc, m1 = min * m;
        scale_min_k4(is + 1, scales, &sc, &m);
        const float d2 = d * sc, m2 = min * m;
        for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
        for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
        q += 32;
        is += 2;
    }
}

static void deq_q5_k(float *y, const uint8_t *b) { // d, dmin, scales[12] @4, qh[32] @16, qs[128] @48
    const float d = h16(b, 0), min = h16(b, 2);
    const uint8_t *ql = b + 48, *qh = b + 16, *scales = b + 4;
    int is = 0;
    uint8_t sc, m, u1 = 1, u2 = 2;
    for (int j = 0; j < QK_K; j += 64) {
        scale_min_k4(is + 0, scales, &sc, &m);
        const float d1 = d * sc, m1 = min * m;
        scale_min_k4(is + 1, scales, &sc, &m);
        const float d2 = d * sc, m2 = min * m;
        for (int l = 0; l < 32; ++l) *y++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
        for (int l = 0; l < 32; ++l) *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
        ql += 32;
        is += 2;
        u1 = (uint8_t)(u1 << 2);
        u2 = (uint8_t)(u2 << 2);
    }
}

static void deq_q6_k(float *y, const uint8_t *b) { // ql[128] @0, qh[64] @128, scales int8[16] @192, d @208
    const float d = h16(b, 208);
    const uint8_t *ql = b, *qh = b + 128;
    const int8_t *sc = (const int8_t *)(b + 192);
    for (int n = 0; n < QK_K; n += 128) {
        for (int l = 0; l < 32; ++l) {
            const int is = l / 16;
            const int8_t q1 = (int8_t)((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
            const int8_t q2 = (int8_t)((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int8_t q3 = (int8_t)((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int8_t q4 = (int8_t)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l + 0] = d * sc[is + 0] * q1;
            y[l + 32] = d * sc[is + 2] * q2;
            y[l + 64] = d * sc[is + 4] * q3;
            y[l + 96] = d * sc[is + 6] * q4;
        }
        y += 128;
        ql += 64;
        qh += 32;
        sc += 8;
    }
}

int ggml_dequantize(float *dst, const void *src, uint32_t type, int64_t n, struct err *e) {
    size_t bytes;
    int rc = ggml_row_bytes(type, n, &bytes, e);
    if (rc) return rc;
    if (!ggml_can_dequantize(type))
        return err_set(e, ERR_UNSUPPORTED, "ggml type %s is not supported (supported: %s)", ggml_type_name(type),
                       ggml_supported_names());
    const uint8_t *p = src;
    const size_t tsz = types[type].size, nb = (size_t)n / (size_t)types[type].blck;
    const int bs = types[type].blck;
    switch (type) {
    case GGML_F32: memcpy(dst, p, (size_t)n * 4); return 0;
    case GGML_F16:
        for (size_t i = 0; i < (size_t)n; i++) dst[i] = f16_to_f32((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
        return 0;
    case GGML_BF16:
        for (size_t i = 0; i < (size_t)n; i++) dst[i] = bf16_to_f32((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
        return 0;
    default: break;
    }
    void (*f)(float *, const uint8_t *) = NULL;
    switch (type) {
    case GGML_Q4_0: f = deq_q4_0; break;
    case GGML_Q4_1: f = deq_q4_1; break;
    case GGML_Q5_0: f = deq_q5_0; break;
    case GGML_Q5_1: f = deq_q5_1; break;
    case GGML_Q8_0: f = deq_q8_0; break;
    case GGML_Q2_K: f = deq_q2_k; break;
    case GGML_Q3_K: f = deq_q3_k; break;
    case GGML_Q4_K: f = deq_q4_k; break;
    case GGML_Q5_K: f = deq_q5_k; break;
    case GGML_Q6_K: f = deq_q6_k; break;
    default: return err_set(e, ERR_INTERNAL, "ggml_dequantize: no block function for %s", ggml_type_name(type));
    }
    for (size_t i = 0; i < nb; i++) f(dst + i * (size_t)bs, p + i * tsz);
    return 0;
}
