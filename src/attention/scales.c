// scales.c: Smooth-QK scales file loader (see scales.h; spec/calibration.md section 7).
#include "attention/scales.h"

#include "base/paths.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "io/safetensors.h"

// The checks of attn_scales_load over an opened file.
static int scales_from(float **out, const struct safetensors *st, const char *path, struct attn_scales_shape shape,
                       const char *model_hash, struct err *e) {
    const int n_layers = shape.n_layers, Hkv = shape.n_kv_heads, d = shape.head_dim;
    const char *name = "smooth_qk.scales";
    const struct st_tensor *t = st_find(st, name);
    if (!t) return err_set(e, ERR_NOTFOUND, "%s: scales file has no tensor '%s'", path, name);
    if (t->dtype != ST_F32)
        return err_set(e, ERR_FORMAT, "%s: tensor '%s' has dtype %s, expected F32", path, name, st_dtype_name(t->dtype));
    if (t->ndim != 3 || t->shape[0] != n_layers || t->shape[1] != Hkv || t->shape[2] != d) {
        char got[128] = "";
        size_t n = 0;
        for (int i = 0; i < t->ndim && n < sizeof got; i++)
            n += (size_t)snprintf(got + n, sizeof got - n, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
        return err_set(e, ERR_MISMATCH, "%s: tensor '%s' has shape [%s], the model needs [%d, %d, %d] "
                       "(layers, kv_heads, head_dim)", path, name, got, n_layers, Hkv, d);
    }
    const char *h = st_meta(st, "model_hash");
    if (model_hash && h && h[0] && strcmp(h, model_hash))
        return err_set(e, ERR_MISMATCH, "%s: scales were calibrated for model hash %s, this model is %s", path, h,
                       model_hash);
    float *s = malloc((size_t)t->numel * sizeof(float) + 1);
    if (!s) return err_set(e, ERR_NOMEM, "%s: out of memory", path);
    int rc = st_to_f32(s, t, e);
    for (int64_t i = 0; !rc && i < t->numel; i++)
        if (!(s[i] >= 1 / ATTN_SCALE_MAX && s[i] <= ATTN_SCALE_MAX))
            rc = err_set(e, ERR_RANGE, "%s: '%s' layer %lld, kv head %lld, channel %lld = %g: a scale must be finite and "
                         "in [2^-64, 2^64] (a larger one overflows the scaled Q or K to inf)", path, name,
                         (long long)(i / ((int64_t)Hkv * d)), (long long)(i / d % Hkv), (long long)(i % d), (double)s[i]);
    if (rc) { free(s); return rc; }
    *out = s;
    return 0;
}

int attn_scales_load(float **out, const char *path, int n_layers, int Hkv, int d, const char *model_hash,
                     struct err *e) {
    *out = NULL;
    struct safetensors st;
    int rc = st_open(&st, path, e);
    if (rc) return err_prefix(e, "scales file");
    rc = scales_from(out, &st, path, (struct attn_scales_shape){n_layers, Hkv, d}, model_hash, e);
    st_close(&st);
    return rc;
}

int attn_scales_load_mem(float **out, const void *buf, size_t len, const char *name, struct attn_scales_shape shape,
                         const char *model_hash, struct err *e) {
    *out = NULL;
    struct safetensors st;
    int rc = st_open_mem(&st, buf, len, name, e);
    if (rc) return err_prefix(e, "scales file");
    rc = scales_from(out, &st, name, shape, model_hash, e);
    st_close(&st);
    return rc;
}

int attn_scales_cache_path(char *out, size_t n, const char *scales_id, const char *model_dir, struct err *e) {
    char cache[4096], hex[65];
    struct safetensors st;
    int rc = paths_cache(cache, sizeof cache, e);
    if (rc || (rc = st_open(&st, model_dir, e))) return rc;
    rc = st_fingerprint(&st, hex, e);
    st_close(&st);
    if (rc) return rc;
    if (snprintf(out, n, "%s/scales/%s-%.16s.safetensors", cache, scales_id, hex) >= (int)n)
        return err_set(e, ERR_RANGE, "scales path too long");
    return 0;
}

// configs/scales/<id>.safetensors: where calibrate wrote before the cache was its default
static int scales_in_tree(char *out, size_t n, const char *scales_id) {
    char home[3072] = ".";
    struct err e = {0};
    for (int k = 0; k < 2; k++) {
        if (k == 1 && paths_home(home, sizeof home, &e)) break;
        snprintf(out, n, "%s%sconfigs/scales/%s.safetensors", k ? home : "", k ? "/" : "", scales_id);
        if (file_exists(out)) return 1;
    }
    return 0;
}

int attn_scales_default(char *out, size_t n, const char *scales_id, const char *model_dir) {
    struct err e = {0};
    if (scales_in_tree(out, n, scales_id)) {
        log_info("Smooth-QK scales: reading %s (an older default; `calibrate` now writes to the cache)", out);
        return 1;
    }
    if (!attn_scales_cache_path(out, n, scales_id, model_dir, &e) && file_exists(out)) return 1;
    if (n) out[0] = 0;
    return 0;
}
