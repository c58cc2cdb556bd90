// qk_gains.h: the stored q/k RMSNorm gains of a QK-norm model per layer (paper Figure 2: the
// k_norm gain that plants a K outlier channel, e.g. Qwen3-8B layer 0 channel 51, ~34, 12x the
// layer mean, over a small q_norm gain there). Read through the model layer (model_qk_gains),
// never from the forward pass; diagnose prints and stores them beside Table 8.
#ifndef HIFA4_QK_GAINS_H
#define HIFA4_QK_GAINS_H

#include <stdio.h>

#include "base/common.h"

// One layer's k_norm outlier: the channel of the largest |gain| (lowest index on ties), that
// gain, the mean |gain| over the head_dim channels, their ratio (0 when the mean is 0), and the
// q_norm gain at the same channel.
struct qk_gain_layer {
    int channel;
    double k_gain, k_mean_abs, ratio, q_gain;
};

struct qk_gains {
    int n_layers, d;              // d = head_dim; n_layers 0: the model has no q/k norm
    float *q, *k;                 // (n_layers, d) the gains, owned
    struct qk_gain_layer *layer;  // (n_layers)
};

// The summary of one layer from its gains (pure; d >= 1).
struct qk_gain_layer qk_gain_summary(const float *k, const float *q, int d);
// Reads every layer's gains of model m (model_open_bound is enough) and summarises them. A model
// without q/k norm gives n_layers 0 and rc 0.
struct model;
int qk_gains_load(struct qk_gains *g, const struct model *m, struct err *e);
void qk_gains_free(struct qk_gains *g); // safe on a zeroed struct

// "Figure 2" table: per layer the outlier channel, its k_norm gain, the mean |gain|, the ratio
// and the q_norm gain there; one line saying so for a model without q/k norm.
void qk_gains_print(FILE *f, const struct qk_gains *g);
// The same per layer, with every layer's k_norm and q_norm gains (NULL when out of memory).
struct cJSON;
struct cJSON *qk_gains_json(const struct qk_gains *g);
// Heat map of |k_norm gain| per (layer, channel), layers top to bottom (*svg malloc'd; the
// caller frees). A model without q/k norm: ERR_USAGE.
int qk_gains_svg(char **svg, const struct qk_gains *g, const char *model_id, struct err *e);

#endif
