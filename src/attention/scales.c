// scales.c: Smooth-QK scales file loader (see scales.h; spec/calibration.md section 7).
#include "attention/scales.h"

#include "base/paths.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "io/safetensors.h"

int attn_scales_load(float **out, const char *path, int n_layers, int Hkv, int d, const char *model_hash,
                     struct err *e) {
    *out = NULL;
    struct safetensors st;
    int rc = st_open(&st, path, e);
    if (rc) return err_prefix(e, "scales file");
    const char *name = "smooth_qk.scales";
    const struct st_tensor *t = st_find(&st, name);
    float *s = NULL;
    if (!t) {
        rc = err_set(e, ERR_NOTFOUND, "%s: scales file has no tensor '%s'", path, name);
        goto done;
    }
    if (t->dtype != ST_F32) {
        rc = err_set(e, ERR_FORMAT, "%s: tensor '%s' has dtype %s, expected F32", path, name,
                     st_dtype_name(t->dtype));
        goto done;
    }
    if (t->ndim != 3 || t->shape[0] != n_layers || t->shape[1] != Hkv || t->shape[2] != d) {
        char got[128] = "";
        size_t n = 0;
        for (int i = 0; i < t->ndim && n < sizeof got; i++)
            n += (size_t)snprintf(got + n, sizeof got - n, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
        rc = err_set(e, ERR_MISMATCH, "%s: tensor '%s' has shape [%s], the model needs [%d, %d, %d] "
                     "(layers, kv_heads, head_dim)", path, name, got, n_layers, Hkv, d);
        goto done;
    }
    const char *h = st_meta(&st, "model_hash");
    if (model_hash && h && h[0] && strcmp(h, model_hash)) {
        rc = err_set(e, ERR_MISMATCH, "%s: scales were calibrated for model hash %s, this model is %s",
                     path, h, model_hash);
        goto done;
    }
    s = malloc((size_t)t->numel * sizeof(float) + 1);
    if (!s) { rc = err_set(e, ERR_NOMEM, "%s: out of memory", path); goto done; }
    if ((rc = st_to_f32(s, t, e))) goto done;
    for (int64_t i = 0; i < t->numel; i++)
        if (!(s[i] > 0) || !isfinite(s[i])) {
            rc = err_set(e, ERR_FORMAT, "%s: '%s'[%lld][%lld][%lld] = %g: scales must be finite and > 0", path,
                         name, (long long)(i / ((int64_t)Hkv * d)), (long long)(i / d % Hkv), (long long)(i % d),
                         (double)s[i]);
            goto done;
        }
    *out = s;
    s = NULL;
done:
    free(s);
    st_close(&st);
    return rc;
}

int attn_scales_default(char *out, size_t n, const char *model_id) {
    snprintf(out, n, "configs/scales/%s.safetensors", model_id);
    if (file_exists(out)) return 1;
    char home[3072];
    struct err e = {0};
    if (!paths_home(home, sizeof home, &e)) {
        snprintf(out, n, "%s/configs/scales/%s.safetensors", home, model_id);
        if (file_exists(out)) return 1;
    }
    if (n) out[0] = 0;
    return 0;
}
