// qk_gains.c: the q/k RMSNorm gains per layer and their k_norm outlier (qk_gains.h).
#include "diag/qk_gains.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/config.h"
#include "model/model.h"
#include "results/plot_xy.h"

struct qk_gain_layer qk_gain_summary(const float *k, const float *q, int d) {
    struct qk_gain_layer s = {0};
    double sum = 0;
    for (int c = 0; c < d; c++) {
        double a = fabs((double)k[c]);
        sum += a;
        if (a > fabs((double)k[s.channel])) s.channel = c;
    }
    s.k_gain = k[s.channel];
    s.q_gain = q[s.channel];
    s.k_mean_abs = sum / d;
    s.ratio = s.k_mean_abs > 0 ? fabs(s.k_gain) / s.k_mean_abs : 0;
    return s;
}

void qk_gains_free(struct qk_gains *g) {
    free(g->q);
    free(g->k);
    free(g->layer);
    memset(g, 0, sizeof *g);
}

int qk_gains_load(struct qk_gains *g, const struct model *m, struct err *e) {
    memset(g, 0, sizeof *g);
    int rc = 0;
    const struct model_config *c = model_cfg(m);
    const int L = c->n_layers, d = c->head_dim;
    if (!c->qk_norm) goto done;
    g->q = malloc((size_t)L * d * sizeof *g->q);
    g->k = malloc((size_t)L * d * sizeof *g->k);
    g->layer = malloc((size_t)L * sizeof *g->layer);
    if (!g->q || !g->k || !g->layer) { rc = err_set(e, ERR_NOMEM, "q/k norm gains: out of memory"); goto done; }
    for (int l = 0; l < L; l++) {
        float *q = g->q + (size_t)l * d, *k = g->k + (size_t)l * d;
        if (model_qk_gains(m, l, q, k) != d) {
            rc = err_set(e, ERR_MISMATCH, "q/k norm gains: layer %d has no q/k norm", l);
            goto done;
        }
        g->layer[l] = qk_gain_summary(k, q, d);
    }
    g->n_layers = L, g->d = d;
done:
    if (rc) qk_gains_free(g);
    return rc;
}

void qk_gains_print(FILE *f, const struct qk_gains *g) {
    if (!g->n_layers) {
        fprintf(f, "Figure 2 (q/k norm gains): the model has no q/k norm\n");
        return;
    }
    fprintf(f, "Figure 2 (stored q/k norm gains per layer: the largest |k_norm gain| over the layer's mean |gain|)\n");
    fprintf(f, "%5s %8s %10s %10s %8s %10s\n", "layer", "channel", "k gain", "mean |k|", "ratio", "q gain");
    for (int l = 0; l < g->n_layers; l++) {
        const struct qk_gain_layer *s = &g->layer[l];
        fprintf(f, "%5d %8d %10.4g %10.4g %8.2f %10.4g\n", l, s->channel, s->k_gain, s->k_mean_abs, s->ratio, s->q_gain);
    }
}

static cJSON *f32_array(const float *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

cJSON *qk_gains_json(const struct qk_gains *g) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddBoolToObject(j, "qk_norm", g->n_layers > 0);
    cJSON_AddStringToObject(j, "gain", "the factor the norm multiplies by: w, or 1 + w for Gemma");
    cJSON *a = cJSON_AddArrayToObject(j, "per_layer");
    for (int l = 0; l < g->n_layers; l++) {
        const struct qk_gain_layer *s = &g->layer[l];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "layer", l);
        cJSON_AddNumberToObject(o, "channel", s->channel);
        cJSON_AddNumberToObject(o, "k_gain", s->k_gain);
        cJSON_AddNumberToObject(o, "k_mean_abs", s->k_mean_abs);
        cJSON_AddNumberToObject(o, "ratio", s->ratio);
        cJSON_AddNumberToObject(o, "q_gain", s->q_gain);
        cJSON_AddItemToObject(o, "k_norm", f32_array(g->k + (size_t)l * g->d, g->d));
        cJSON_AddItemToObject(o, "q_norm", f32_array(g->q + (size_t)l * g->d, g->d));
        cJSON_AddItemToArray(a, o);
    }
    return j;
}

int qk_gains_svg(char **svg, const struct qk_gains *g, const char *model_id, struct err *e) {
    *svg = NULL;
    if (!g->n_layers) return err_set(e, ERR_USAGE, "q/k norm gains: %s has no q/k norm", model_id);
    const size_t n = (size_t)g->n_layers * g->d;
    double *v = malloc(n * sizeof *v);
    if (!v) return err_set(e, ERR_NOMEM, "q/k norm gains: out of memory");
    for (size_t i = 0; i < n; i++) v[i] = fabs((double)g->k[i]);
    char title[512];
    snprintf(title, sizeof title, "%s: |k_norm gain| per (layer, channel)", model_id);
    int rc = plot_heatmap_svg(svg, title, "channel", "layer", "|gain|", (struct plot_grid){v, g->n_layers, g->d}, e);
    free(v);
    return rc;
}
