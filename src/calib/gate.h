// gate.h: the measured Smooth-QK gate (docs/results/gate.md): for each layer and each candidate alpha
// the attention-output error that HiF4 quantization of the (smoothed) Q and K causes on the
// calibration samples (gate_err.h), compared with the unsmoothed error; per-layer and per-model
// decisions with a bootstrap interval over samples. Knows no model: calib_run feeds it.
#ifndef HIFA4_GATE_H
#define HIFA4_GATE_H

#include <stdint.h>

#include "base/common.h"

#define GATE_MAX_CAND 8 // candidates including the bypass (candidate 0)

// Which rule makes the scales: the paper's statistics (rho_K, T_KQ; spec/calibration.md 5) or
// this measurement.
enum calib_rule { CALIB_RULE_PAPER = 0, CALIB_RULE_MEASURED = 1 };
const char *calib_rule_name(int r);
int calib_rule_parse(const char *s, int *out); // "paper" | "measured"; -1 otherwise

struct gate_opts {
    int n_alpha;                        // smoothing candidates (default 3: 0.25, 0.5, 1)
    double alpha[GATE_MAX_CAND - 1];
    double max_ratio;                   // "helps": ratio <= max_ratio (default 0.95) ...
    int boot;                           // ... and the bootstrap upper bound < 1 (boot resamples, 1000)
    uint64_t boot_seed;
    int qmean, tile;                    // gate_err_cfg (default token, 128: run's defaults)
    int samples;                        // calibration samples measured (0 = all)
};
void gate_opts_default(struct gate_opts *o);

// The measurement: err2[(s * n_layers + l) * n_cand + c] and ref2[s * n_layers + l] as
// gate_err_seq sums them over one sample's heads and rows (candidate 0 = bypass, candidate c
// = alpha[c - 1] of the options).
struct gate_meas {
    int n_samples, n_layers, n_cand;
    double *err2, *ref2;
};
int gate_meas_init(struct gate_meas *m, int n_samples, int n_layers, int n_cand, struct err *e);
void gate_meas_free(struct gate_meas *m);

struct gate_layer {
    double rel[GATE_MAX_CAND];   // rel-L2 output error per candidate, pooled over samples and heads
    double ratio[GATE_MAX_CAND]; // rel[c] / rel[0]
    int best;                    // candidate of lowest ratio among the smoothing ones (>= 1)
    double lo, hi;               // 95% bootstrap interval of ratio[best] over samples
    int smooth;                  // ratio[best] <= max_ratio and hi < 1
    double alpha;                // alpha[best] if smooth, else 0 (bypass)
};

struct gate_result {
    int n_layers, n_cand, n_samples;
    double alpha[GATE_MAX_CAND];    // alpha of each candidate (candidate 0: 0 = bypass)
    struct gate_layer *layer;       // (n_layers), owned; NULL when not measured
    double rel[GATE_MAX_CAND];      // model: mean over layers of the layers' rel
    double ratio[GATE_MAX_CAND];    // rel[c] / rel[0]
    int best;
    double lo, hi;
    int smooth;                     // the model decision (same rule as a layer's)
    double alpha_model;             // alpha[best] if smooth, else 0
    int n_layers_smooth;            // layers whose own decision is smooth
    double max_ratio;
    int qmean;
    double seconds;                 // wall time of the measurement pass (filled by calib_run)
};

// Decides from the measurement (docs/results/gate.md section 1). Deterministic (seeded bootstrap).
int gate_decide(struct gate_result *r, const struct gate_meas *m, const struct gate_opts *o, struct err *e);
void gate_result_free(struct gate_result *r);

#endif
