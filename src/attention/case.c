// case.c: attention case files (see case.h): load and validate, run one mode on them.
#include "attention/case.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/json_util.h"
#include "io/safetensors.h"

void attn_case_free(struct attn_case *c) {
    free(c->q);
    free(c->k);
    free(c->v);
    free(c->scales);
    memset(c, 0, sizeof *c);
}

// A tensor the case file must (or may) hold: its name and its expected shape.
enum tensor_presence { TENSOR_REQUIRED, TENSOR_OPTIONAL };
struct tensor_want {
    const char *name;
    int ndim;
    const int64_t *shape; // (ndim)
    enum tensor_presence presence;
};

static int load_tensor(float **out, const struct safetensors *st, const char *path, struct tensor_want w,
                       struct err *e) {
    *out = NULL;
    const char *name = w.name;
    if (w.presence == TENSOR_OPTIONAL && !st_find(st, name)) return 0;
    const struct st_tensor *t;
    int rc = st_check(st, name, ST_FLOATING, w.ndim, w.shape, &t, e);
    if (rc) return err_prefix(e, "%s", path);
    *out = malloc((size_t)t->numel * sizeof(float) + 1);
    if (!*out) return err_set(e, ERR_NOMEM, "%s: out of memory for tensor '%s'", path, name);
    rc = st_to_f32(*out, t, e);
    if (rc) return err_prefix(e, "%s", path);
    return 0;
}

int attn_case_load(struct attn_case *c, const char *path, struct err *e) {
    memset(c, 0, sizeof *c);
    struct safetensors st;
    cJSON *p = NULL;
    int rc = st_open(&st, path, e);
    if (rc) return rc;
    const char *pj = st_meta(&st, "params");
    if (!pj) { rc = err_set(e, ERR_FORMAT, "%s: metadata 'params' missing", path); goto fail; }
    char ctx[1100];
    snprintf(ctx, sizeof ctx, "%s: metadata 'params'", path);
    if ((rc = json_parse(&p, pj, strlen(pj), ctx, e))) goto fail;
    double sm64 = 0, cap = 0;
    const char *hex = NULL;
    if ((rc = json_need_int(p, "T", &c->T, ctx, e)) || (rc = json_need_int(p, "H", &c->H, ctx, e)) ||
        (rc = json_need_int(p, "Hkv", &c->Hkv, ctx, e)) || (rc = json_need_int(p, "d", &c->d, ctx, e)) ||
        (rc = json_opt_int(p, "window", &c->window, 0, ctx, e)) ||
        (rc = json_opt_num(p, "softcap", &cap, 0, ctx, e)) || (rc = json_need_num(p, "sm", &sm64, ctx, e)) ||
        (rc = json_need_str(p, "sm_binary32_hex", &hex, ctx, e)))
        goto fail;
    if (c->T <= 0 || c->H <= 0 || c->Hkv <= 0 || c->H % c->Hkv || c->d <= 0 || c->window < 0 ||
        !(cap >= 0) || !isfinite(cap) || !(sm64 > 0) || !isfinite(sm64)) {
        rc = err_set(e, ERR_FORMAT, "%s: bad shape or value (T=%d H=%d Hkv=%d d=%d window=%d softcap=%g sm=%g)",
                     ctx, c->T, c->H, c->Hkv, c->d, c->window, cap, sm64);
        goto fail;
    }
    char *end;
    unsigned long bits = strtoul(hex, &end, 16);
    if (*end || end == hex || bits > 0xffffffffUL || bits_f32((uint32_t)bits) != (float)sm64) {
        rc = err_set(e, ERR_FORMAT, "%s: field 'sm_binary32_hex': '%s' is not the binary32 rounding of sm=%.17g",
                     ctx, hex, sm64);
        goto fail;
    }
    c->sm = bits_f32((uint32_t)bits);
    c->sm64 = sm64;
    c->softcap = (float)cap;
    int64_t sq[3] = {c->T, c->H, c->d}, skv[3] = {c->T, c->Hkv, c->d}, ss[2] = {c->Hkv, c->d};
    if ((rc = load_tensor(&c->q, &st, path, (struct tensor_want){"q", 3, sq, TENSOR_REQUIRED}, e)) ||
        (rc = load_tensor(&c->k, &st, path, (struct tensor_want){"k", 3, skv, TENSOR_REQUIRED}, e)) ||
        (rc = load_tensor(&c->v, &st, path, (struct tensor_want){"v", 3, skv, TENSOR_REQUIRED}, e)) ||
        (rc = load_tensor(&c->scales, &st, path, (struct tensor_want){"scales", 2, ss, TENSOR_OPTIONAL}, e)))
        goto fail;
    cJSON_Delete(p);
    st_close(&st);
    return 0;
fail:
    cJSON_Delete(p);
    st_close(&st);
    attn_case_free(c);
    return rc;
}

int attn_case_run(float *out, const struct attn_case *c, const char *mode, const struct attn_opts *o,
                  struct err *e) {
    size_t nq = (size_t)c->T * c->H * c->d, nkv = (size_t)c->T * c->Hkv * c->d;
    float *buf = malloc((nq + 2 * nkv) * sizeof(float));
    if (!buf) return err_set(e, ERR_NOMEM, "attention case: out of memory");
    float *q = buf, *k = q + nq, *v = k + nkv;
    memcpy(q, c->q, nq * sizeof(float));
    memcpy(k, c->k, nkv * sizeof(float));
    memcpy(v, c->v, nkv * sizeof(float));
    struct attn_ctx *ctx = NULL;
    const struct attn_shape shape = {.n_layers = 1, .H = c->H, .Hkv = c->Hkv, .d = c->d, .max_T = c->T};
    int rc = attn_ctx_init(&ctx, mode, o, &shape, c->scales, e);
    if (!rc) {
        int off = 0, len = c->T;
        struct attn_layer l = {.layer = 0, .sm = c->sm, .sm64 = c->sm64, .softcap = c->softcap,
                               .window = c->window};
        const struct attn_batch b = {.n_seq = 1, .seq_off = &off, .seq_len = &len};
        const struct attn_io io = {.out = out, .q = q, .k = k, .v = v};
        rc = attn_forward(ctx, &b, &io, &l, e);
    }
    attn_ctx_free(ctx);
    free(buf);
    return rc;
}
