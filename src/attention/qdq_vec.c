// qdq_vec.c: a vectors-file line through this build's codecs (qdq_vec.h): parse and validate
// the inputs, quantize with fp4.h or hif4.h, write the outputs back into the line.
#include "attention/qdq_vec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "attention/fp4.h"
#include "attention/hif4.h"

static const char *const fmt_names[] = {"mxfp4", "nvfp4", "nvfp4-1l", "hif4", "hif4-a6", "sage3-p"};
enum { N_FMT = 6, MAX_N = 1 << 20 };

int qdq_vec_parse_format(const char *s, enum qdq_vec_format *out, const char *what, struct err *e) {
    for (int i = 0; i < N_FMT; i++)
        if (!strcmp(s, fmt_names[i])) {
            *out = (enum qdq_vec_format)i;
            return 0;
        }
    return err_set(e, ERR_USAGE, "%s '%s': expected mxfp4, nvfp4, nvfp4-1l, hif4, hif4-a6 or sage3-p", what, s);
}

// "0x%08x" string -> bits
static int parse_bits(const cJSON *it, uint32_t *out, const char *ctx, const char *key, int i, struct err *e) {
    const char *s = cJSON_GetStringValue(it);
    char *end = NULL;
    unsigned long v = s && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') ? strtoul(s + 2, &end, 16) : 0;
    if (!s || !end || *end || end == s + 2 || strlen(s) > 10 || v > 0xfffffffful)
        return err_set(e, ERR_FORMAT, "%s: field '%s'[%d]: expected a \"0x%%08x\" bit pattern, got %s", ctx, key, i,
                       json_brief(it));
    *out = (uint32_t)v;
    return 0;
}

// array of n bit strings -> floats (n = -1: any length, returned in *n_out)
static int get_bits(const cJSON *line, const char *key, float **out, int *n, const char *ctx, struct err *e) {
    const cJSON *arr;
    int rc = json_need_arr(line, key, &arr, ctx, e);
    if (rc) return rc;
    const int len = cJSON_GetArraySize(arr);
    if (len < 1 || len > MAX_N || (*n >= 0 && len != *n))
        return err_set(e, ERR_FORMAT, "%s: field '%s': %d entries (expected %d)", ctx, key, len, *n);
    float *x = malloc((size_t)len * sizeof *x);
    if (!x) return err_set(e, ERR_NOMEM, "%s: out of memory", ctx);
    int i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        uint32_t b = 0;
        if ((rc = parse_bits(it, &b, ctx, key, i, e))) {
            free(x);
            return rc;
        }
        x[i++] = bits_f32(b);
    }
    *out = x, *n = len;
    return 0;
}

static int get_bits1(const cJSON *line, const char *key, float *out, const char *ctx, struct err *e) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(line, key);
    uint32_t b = 0;
    if (!it) return err_set(e, ERR_FORMAT, "%s: missing field '%s'", ctx, key);
    int rc = parse_bits(it, &b, ctx, key, 0, e);
    if (!rc) *out = bits_f32(b);
    return rc;
}

// ---- output fields (replaced in place, else appended) ----
static int put(cJSON *line, const char *key, cJSON *v, const char *ctx, struct err *e) {
    if (!v) return err_set(e, ERR_NOMEM, "%s: out of memory", ctx);
    if (cJSON_GetObjectItemCaseSensitive(line, key)) cJSON_ReplaceItemInObjectCaseSensitive(line, key, v);
    else cJSON_AddItemToObject(line, key, v);
    return 0;
}
static cJSON *bits_arr(const float *x, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) {
        char s[16];
        snprintf(s, sizeof s, "0x%08x", f32_bits(x[i]));
        cJSON_AddItemToArray(a, cJSON_CreateString(s));
    }
    return a;
}
static cJSON *bits_str(float x) {
    char s[16];
    snprintf(s, sizeof s, "0x%08x", f32_bits(x));
    return cJSON_CreateString(s);
}
static cJSON *byte_arr(const uint8_t *b, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(b[i]));
    return a;
}

// ---- block formats ----
struct outv { float *y; uint8_t *codes, *scales; int n_scales; };

static int quant_fp4(struct outv *o, const float *x, int n, enum fp4_format f, const struct fp4_tscale *ts,
                     const char *ctx, struct err *e) {
    const int B = fp4_block(f);
    for (int i = 0, b = 0; i < n; i += B, b++) {
        const int m = n - i < B ? n - i : B;
        if (fp4_qdq_block(o->y + i, x + i, m, f, ts, o->codes + i, o->scales + b))
            return err_set(e, ERR_RANGE, "%s: field 'input_bits': block %d (elements %d..%d) holds a NaN or Inf, "
                           "outside the FP4 input contract (spec/fp4.md 2.4)", ctx, b, i, i + m - 1);
        o->n_scales = b + 1;
    }
    return 0;
}

static void quant_hif4(struct outv *o, const float *x, int n, enum hif4_recipe r) {
    for (int i = 0, b = 0; i < n; i += HIF4_GROUP, b++) {
        const int m = n - i < HIF4_GROUP ? n - i : HIF4_GROUP;
        struct hif4_meta meta;
        uint8_t codes[HIF4_GROUP];
        hif4_qdq_group(o->y + i, x + i, m, r, &meta, codes);
        memcpy(o->codes + i, codes, (size_t)m);
        const uint8_t s[4] = {meta.ea, meta.eb, (uint8_t)(meta.ec & 0xff), (uint8_t)(meta.ec >> 8)};
        memcpy(o->scales + 4 * b, s, 4);
        o->n_scales = 4 * (b + 1);
    }
}

static int block_line(cJSON *line, enum qdq_vec_format f, const char *ctx, struct err *e) {
    float *x = NULL;
    int n = -1, rc = get_bits(line, "input_bits", &x, &n, ctx, e);
    if (rc) return rc;
    struct outv o = {malloc((size_t)n * sizeof(float)), malloc((size_t)n), malloc((size_t)n * 4 + 4), 0};
    struct fp4_tscale ts = {0};
    if (!o.y || !o.codes || !o.scales) rc = err_set(e, ERR_NOMEM, "%s: out of memory", ctx);
    if (!rc && f == QDQ_VEC_NVFP4) {
        float At = fp4_amax(x, n);
        if (cJSON_GetObjectItemCaseSensitive(line, "tensor_amax_bits")) rc = get_bits1(line, "tensor_amax_bits", &At, ctx, e);
        else rc = put(line, "tensor_amax_bits", bits_str(At), ctx, e);
        if (!rc && !(At >= 0.0f && At < INFINITY))
            rc = err_set(e, ERR_FORMAT, "%s: field 'tensor_amax_bits': 0x%08x is not a finite amax >= 0", ctx, f32_bits(At));
        if (!rc) fp4_nv_tscale(&ts, At);
    }
    if (!rc) {
        if (f == QDQ_VEC_HIF4 || f == QDQ_VEC_HIF4_A6)
            quant_hif4(&o, x, n, f == QDQ_VEC_HIF4 ? HIF4_RECIPE_NORMATIVE : HIF4_RECIPE_A6);
        else rc = quant_fp4(&o, x, n, (enum fp4_format)f, &ts, ctx, e);
    }
    if (!rc) rc = put(line, "codes", byte_arr(o.codes, n), ctx, e);
    if (!rc) rc = put(line, "scale_bytes", byte_arr(o.scales, o.n_scales), ctx, e);
    if (!rc) rc = put(line, "output_bits", bits_arr(o.y, n), ctx, e);
    if (!rc && f == QDQ_VEC_NVFP4) rc = put(line, "s_enc_bits", bits_str(ts.s_enc), ctx, e);
    if (!rc && f == QDQ_VEC_NVFP4) rc = put(line, "s_dec_bits", bits_str(ts.s_dec), ctx, e);
    free(x);
    free(o.y);
    free(o.codes);
    free(o.scales);
    return rc;
}

// ---- sage3-p ----
static int sage3_line(cJSON *line, const char *ctx, struct err *e) {
    float *S = NULL, m = 0, c = 0;
    int n = FP4_SAGE3_TILE, rc = get_bits(line, "scores_bits", &S, &n, ctx, e);
    if (!rc) rc = get_bits1(line, "m_bits", &m, ctx, e);
    if (!rc) rc = get_bits1(line, "c_bits", &c, ctx, e);
    if (!rc && (!isfinite(m) || !isfinite(c) || !(c > 0)))
        rc = err_set(e, ERR_FORMAT, "%s: fields 'm_bits', 'c_bits': 0x%08x, 0x%08x: need a finite m and c > 0", ctx,
                     f32_bits(m), f32_bits(c));
    for (int j = 0; !rc && j < n; j++)
        if (isnan(S[j]) || S[j] == INFINITY || S[j] > m)
            rc = err_set(e, ERR_FORMAT, "%s: field 'scores_bits'[%d]: 0x%08x above m_new or not a score", ctx, j,
                         f32_bits(S[j]));
    float pt[FP4_SAGE3_TILE], pc[FP4_SAGE3_TILE], s[8];
    uint8_t sb[8], codes[FP4_SAGE3_TILE];
    if (!rc) {
        const struct fp4_sage3_row o = {pt, pc, s, sb, codes};
        fp4_sage3_p(&o, S, n, m, c, FP4_P_QUANT);
        rc = put(line, "ptilde_bits", bits_arr(pt, n), ctx, e);
    }
    if (!rc) rc = put(line, "s_bits", bits_arr(s, 8), ctx, e);
    if (!rc) rc = put(line, "scale_bytes", byte_arr(sb, 8), ctx, e);
    if (!rc) rc = put(line, "codes", byte_arr(codes, n), ctx, e);
    if (!rc) rc = put(line, "pc_bits", bits_arr(pc, n), ctx, e);
    free(S);
    return rc;
}

// A line of another format becomes a line of f: only name, note and the inputs stay.
static int convert(cJSON *line, enum qdq_vec_format f, const char *ctx, struct err *e) {
    static const char *const keep[] = {"name", "note", "format", "block", "n", "input_bits"};
    for (cJSON *it = line->child, *next; it; it = next) {
        next = it->next;
        int k = 0;
        for (int i = 0; i < 6; i++) k |= it->string && !strcmp(it->string, keep[i]);
        if (!k) cJSON_DeleteItemFromObjectCaseSensitive(line, it->string);
    }
    const int block = f == QDQ_VEC_MXFP4 ? FP4_MX_BLOCK : f <= QDQ_VEC_NVFP4_1L ? FP4_NV_BLOCK : HIF4_GROUP;
    int rc = put(line, "format", cJSON_CreateString(fmt_names[f]), ctx, e);
    return rc ? rc : put(line, "block", cJSON_CreateNumber(block), ctx, e);
}

int qdq_vec_line(cJSON *line, enum qdq_vec_format f, const char *ctx, struct err *e) {
    if (!cJSON_IsObject(line)) return err_set(e, ERR_FORMAT, "%s: not a JSON object", ctx);
    const char *own = NULL;
    int rc = json_opt_str(line, "format", &own, NULL, ctx, e);
    if (rc) return rc;
    enum qdq_vec_format lf = QDQ_VEC_LINE;
    if (own && (rc = qdq_vec_parse_format(own, &lf, "field 'format'", e))) return err_set(e, ERR_FORMAT, "%s: %s", ctx, e->msg);
    if (f == QDQ_VEC_LINE) {
        if (!own) return err_set(e, ERR_FORMAT, "%s: no 'format' field (give the format explicitly)", ctx);
        f = lf;
    } else if (f != lf) {
        if (f == QDQ_VEC_SAGE3_P || lf == QDQ_VEC_SAGE3_P)
            return err_set(e, ERR_FORMAT, "%s: a %s line cannot be quantized as %s (sage3-p lines hold scores, block "
                           "lines inputs)", ctx, own ? own : "hif4", fmt_names[f]);
        if ((rc = convert(line, f, ctx, e))) return rc;
    }
    return f == QDQ_VEC_SAGE3_P ? sage3_line(line, ctx, e) : block_line(line, f, ctx, e);
}
