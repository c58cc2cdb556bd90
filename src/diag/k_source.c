// k_source.c: the k_proj bias against each layer's max |K| (k_source.h).
#include "diag/k_source.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/config.h"
#include "model/model.h"

int k_source_partner(int c, int rope_dim) {
    const int half = rope_dim / 2;
    if (c < half) return c + half;
    if (c < rope_dim) return c - half;
    return -1;
}

static double pair_norm(const float *b, int c, int rope_dim) {
    const int p = k_source_partner(c, rope_dim);
    const double x = b[c], y = p >= 0 ? b[p] : 0;
    return sqrt(x * x + y * y);
}

struct k_source_layer k_source_layer_of(const float *kmax, const float *bias, int Hkv, int d, int rope_dim) {
    struct k_source_layer s = {0};
    const int n = Hkv * d;
    int top = 0;
    for (int i = 1; i < n; i++)
        if (kmax[i] > kmax[top]) top = i;
    s.head = top / d, s.channel = top % d;
    s.kmax = kmax[top];
    const float *bh = bias ? bias + (size_t)s.head * d : NULL;
    s.bias = bh ? bh[s.channel] : 0;
    s.bias_pair = bh ? pair_norm(bh, s.channel, rope_dim) : 0;
    s.share = s.kmax > 0 ? s.bias_pair / s.kmax : 0;
    for (int i = 0; i < n; i++) {
        if (!(kmax[i] >= s.kmax / 2)) continue;
        s.n_band++;
        if (bias && pair_norm(bias + (size_t)(i / d) * d, i % d, rope_dim) >= kmax[i] / 2.0) s.n_band_bias++;
    }
    return s;
}

void k_source_free(struct k_source *ks) {
    free(ks->layer);
    memset(ks, 0, sizeof *ks);
}

// max over the statistics set's samples of max_t |K| for layer l into out (Hkv x d)
static void kmax_of_layer(const struct calib_stats *s, int l, float *out) {
    const size_t n = (size_t)s->Hkv * s->d;
    for (size_t i = 0; i < n; i++) out[i] = 0;
    for (int p = 0; p < s->n_samples; p++) {
        const float *k = s->kmax + ((size_t)p * s->n_layers + l) * n;
        for (size_t i = 0; i < n; i++) out[i] = fmaxf(out[i], k[i]);
    }
}

int k_source_compute(struct k_source *ks, const struct model *m, const struct calib_stats *s, struct err *e) {
    memset(ks, 0, sizeof *ks);
    int rc = 0;
    const struct model_config *c = model_cfg(m);
    const int L = c->n_layers, Hkv = c->n_kv_heads, d = c->head_dim;
    float *bias = malloc((size_t)Hkv * d * sizeof *bias), *kmax = malloc((size_t)Hkv * d * sizeof *kmax);
    ks->layer = calloc((size_t)L, sizeof *ks->layer);
    if (!bias || !kmax || !ks->layer) { rc = err_set(e, ERR_NOMEM, "k_proj bias: out of memory"); goto done; }
    if (s->n_layers != L || s->Hkv != Hkv || s->d != d) {
        rc = err_set(e, ERR_MISMATCH, "k_proj bias: statistics of %d layers x %d x %d, the model has %d x %d x %d",
                     s->n_layers, s->Hkv, s->d, L, Hkv, d);
        goto done;
    }
    ks->n_layers = L, ks->Hkv = Hkv, ks->d = d;
    for (int l = 0; l < L; l++) {
        const int nb = model_k_bias(m, l, bias);
        ks->has_bias |= nb > 0;
        kmax_of_layer(s, l, kmax);
        ks->layer[l] = k_source_layer_of(kmax, nb > 0 ? bias : NULL, Hkv, d, c->rope_dim);
    }
done:
    free(bias);
    free(kmax);
    if (rc) k_source_free(ks);
    return rc;
}

void k_source_print(FILE *f, const struct k_source *ks) {
    if (!ks->has_bias) {
        fprintf(f, "Where the K outliers come from: the model has no k_proj bias - from the projection of the input\n");
        return;
    }
    fprintf(f, "Where the K outliers come from: k_proj bias against max |K| per layer (bias pair: the bias over the\n"
               "channel's RoPE pair, the most it can add at any position; band: channels with max |K| >= half the\n"
               "layer's, and how many of them the bias explains - pair >= half their max |K|)\n");
    fprintf(f, "%5s %9s %10s %10s %10s %7s %12s\n", "layer", "(h,c)", "max|K|", "bias", "bias pair", "share", "band (bias)");
    for (int l = 0; l < ks->n_layers; l++) {
        const struct k_source_layer *s = &ks->layer[l];
        char hc[24], band[32];
        snprintf(hc, sizeof hc, "(%d,%d)", s->head, s->channel);
        snprintf(band, sizeof band, "%d (%d)", s->n_band, s->n_band_bias);
        fprintf(f, "%5d %9s %10.4g %10.4g %10.4g %7.2f %12s\n", l, hc, s->kmax, s->bias, s->bias_pair, s->share, band);
    }
}

cJSON *k_source_json(const struct k_source *ks) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddBoolToObject(j, "has_k_bias", ks->has_bias);
    cJSON *a = cJSON_AddArrayToObject(j, "per_layer");
    for (int l = 0; ks->has_bias && l < ks->n_layers; l++) {
        const struct k_source_layer *s = &ks->layer[l];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "layer", l);
        cJSON_AddNumberToObject(o, "kv_head", s->head);
        cJSON_AddNumberToObject(o, "channel", s->channel);
        cJSON_AddNumberToObject(o, "max_abs_k", s->kmax);
        cJSON_AddNumberToObject(o, "bias", s->bias);
        cJSON_AddNumberToObject(o, "bias_pair", s->bias_pair);
        cJSON_AddNumberToObject(o, "bias_share", s->share);
        cJSON_AddNumberToObject(o, "band", s->n_band);
        cJSON_AddNumberToObject(o, "band_from_bias", s->n_band_bias);
        cJSON_AddItemToArray(a, o);
    }
    return j;
}
