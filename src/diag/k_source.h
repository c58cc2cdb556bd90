// k_source.h: where each layer's K outliers come from - the k_proj bias or the projection of the
// input. K = RoPE(x W_k + b_k): a bias channel whose RoPE pair turns slowly (the lowest-frequency
// pairs) stays a near-constant offset of the bias's size at every position, on every token - a
// band of outlier channels that does not depend on the input (Qwen2.5-Coder-1.5B, layer 0: |b_k|
// up to 354 where max |K| is 358). Read through the model layer (model_k_bias); the max |K|
// come from the statistics set of a calibration (calib_stats). diagnose prints and stores it.
#ifndef HIFA4_K_SOURCE_H
#define HIFA4_K_SOURCE_H

#include <stdio.h>

#include "base/common.h"
#include "calib/calib.h"

struct k_source_layer {
    int head, channel;   // kv head and channel of the layer's largest max |K| (lowest index on ties)
    double kmax;         // that max |K| over every token of the statistics set (post-RoPE, as the kernel sees K)
    double bias;         // b_k at (head, channel)
    double bias_pair;    // sqrt(b_c^2 + b_p^2) over the channel's RoPE pair p (|b_c| for an unrotated
                         // channel): the largest the bias alone can make |K| there, at any position
    double share;        // bias_pair / kmax (0 when kmax is 0)
    int n_band;          // channels with max |K| >= kmax / 2 (the outlier channels of the layer)
    int n_band_bias;     // of them, those whose bias_pair >= half their own max |K|
};

struct k_source {
    int n_layers, Hkv, d;
    int has_bias;                  // 0: no k_proj bias, every K outlier comes from the projection
    struct k_source_layer *layer;  // (n_layers), owned
};

// The RoPE partner of channel c under the rotate-half layout on the first rope_dim channels:
// c + rope_dim/2, c - rope_dim/2, or -1 for a channel RoPE leaves alone (pure).
int k_source_partner(int c, int rope_dim);
// One layer from its max |K| (Hkv x d) and bias (Hkv x d, or NULL without one) (pure).
struct k_source_layer k_source_layer_of(const float *kmax, const float *bias, int Hkv, int d, int rope_dim);
// Every layer of model m (model_open_bound is enough) against s's max |K| (maximum over its
// samples). Errors: ERR_MISMATCH when s's shape is not the model's, ERR_NOMEM.
struct model;
int k_source_compute(struct k_source *ks, const struct model *m, const struct calib_stats *s, struct err *e);
void k_source_free(struct k_source *ks); // safe on a zeroed struct

// Table: per layer the top channel, its max |K|, the bias there, the bias's share, the band and
// how much of it the bias explains; one line for a model without a k_proj bias.
void k_source_print(FILE *f, const struct k_source *ks);
struct cJSON;
struct cJSON *k_source_json(const struct k_source *ks); // NULL when out of memory

#endif
