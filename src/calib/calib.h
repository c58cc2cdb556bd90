// calib.h: Smooth-QK calibration (spec/calibration.md): per-sample Q/K statistics collected
// through the attention hook, aggregation over samples, scale factors, the Strong/Mild/Bypass
// gate, and the scales file. Knows no model and no tokenizer: callers feed it kernel-input Q
// and K per (sample, layer) (calib_observe, usable directly as an attn_hook_fn body).
#ifndef HIFA4_CALIB_H
#define HIFA4_CALIB_H

#include <stdint.h>
#include <stdio.h>

#include "base/common.h"
#include "calib/gate.h"

enum calib_agg { CALIB_AGG_RMS = 0, CALIB_AGG_MEAN, CALIB_AGG_P99, CALIB_AGG_MAX };
enum calib_gate_mode { CALIB_GATE_MODEL = 0, CALIB_GATE_LAYER = 1 };
enum calib_branch { CALIB_BYPASS = 0, CALIB_MILD = 1, CALIB_STRONG = 2 };

struct calib_gate_opts {
    double rho_min;   // 6
    double t_strong;  // 3   (Strong if T_KQ > t_strong)
    double t_mild;    // 2   (Mild if t_mild <= T_KQ <= t_strong)
    double alpha_strong, alpha_mild; // 0.5, 0.25
    double alpha_forced;             // < 0: use the gate; else this alpha everywhere
    int mode;                        // enum calib_gate_mode
    int rule;                        // enum calib_rule: which decision makes the scales (default: CALIB_RULE_DEFAULT of calib/rule_args.h)
    struct gate_opts meas;           // the measured rule's options (docs/results/gate.md)
};
void calib_gate_opts_default(struct calib_gate_opts *g);
// ERR_USAGE naming the options when the thresholds contradict: t_mild > t_strong leaves no
// Mild band (every layer past t_strong is Strong, the rest Bypass) - a silent other gate.
int calib_gate_check(const struct calib_gate_opts *g, struct err *e);

// Per-sample statistics store. Sizes fixed at init; calib_observe never allocates (its
// percentile scratch is sized at init for max_T tokens); calib_observe_seqs allocates its
// per-thread histograms at its first call (and again if the pool grows).
struct calib_stats {
    int n_layers, Hkv, H, d, max_samples, max_T;
    int n_samples;           // samples observed so far (max sample index + 1)
    float *kmax;             // (max_samples, n_layers, Hkv, d)  max_t |K|
    float *qmax;             // (max_samples, n_layers, Hkv, d)  max_t max_{h in group} |Q|
    float *kp99, *qp99;      // (max_samples, n_layers) nearest-rank p99 of |K|, |Q| elements
    float *kp999, *kstd;     // (max_samples, n_layers) K p99.9 and std (reports, Fig. 4)
    float *scratch;          // (max_T * H * d) percentile selection buffer (calib_observe)
    unsigned char *seen;     // (max_samples, n_layers) observed flags
    uint32_t *hist;          // (hist_slots, CALIB_HIST_BINS) calib_observe_seqs, per pool slot
    int hist_slots;
    int64_t n_fallback;      // (sample, layer)s calib_observe_seqs left to calib_observe
};
#define CALIB_HIST_BINS 32768 // one per upper 16 bits of a non-negative binary32 (|bf16| values)

// The attention shape statistics are kept for: n_layers layers of H query heads over Hkv kv
// heads (H % Hkv == 0) of d channels.
struct calib_shape {
    int n_layers, H, Hkv, d;
};
int calib_stats_init(struct calib_stats *s, struct calib_shape shape, int max_samples, int max_T, struct err *e);
void calib_stats_free(struct calib_stats *s);
// Records sample `sample` at `layer`: q (T, H, d), k (T, Hkv, d) as the kernel sees them.
// Returns ERR_RANGE if sample/layer/T exceed the sizes given at init.
// This is the literal reference of spec section 2 (quickselect percentiles, serial).
int calib_observe(struct calib_stats *s, int sample, int layer, const float *q, const float *k, int T,
                  struct err *e);
// n_seq sequences of one layer as the kernel saw them: q[i] (T[i], H, d), k[i] (T[i], Hkv, d).
struct calib_seqs {
    int n_seq;
    const float *const *q, *const *k; // (n_seq) each
    const int *T;                     // (n_seq)
};
// The same as calib_observe for the sequences of seqs at once: sequence i is sample
// first_sample + i. Sequences run as tasks on the worker pool
// (base/pool.h, up to max_threads threads). Bit-identical to calib_observe on each sequence,
// whatever the thread count: maxima are exact; when every |Q|, |K| element is a non-NaN bf16
// value (the bf16 mode's kernel inputs) its percentiles come from an exact 32768-bin histogram
// of the upper 16 bits (counts are integers; the nearest-rank element is the same value
// quickselect finds); otherwise that (sample, layer) is redone by calib_observe afterwards
// (counted in s->n_fallback); the K std is the same binary64 sum in the same order.
// Errors: ERR_RANGE as calib_observe (nothing recorded), ERR_NOMEM.
int calib_observe_seqs(struct calib_stats *s, int first_sample, int layer, struct calib_seqs seqs, int max_threads,
                       struct err *e);

// Nearest-rank percentile of n values: sorted[ceil(p*n) - 1] (spec section 1); v is permuted.
float calib_percentile(float *v, size_t n, double p);
// Aggregates x[0..n) (stride in floats) by agg in binary64 (spec section 3).
double calib_aggregate(const float *x, int n, ptrdiff_t stride, int agg, double *scratch);

struct calib_layer_stats {
    double maxabs_k, maxabs_q, kp99, qp99, rho_k, t_kq; // aggregated (spec section 5)
    double kp999, kstd;                                 // aggregated, reports
    int branch;                                         // enum calib_branch (per-layer rule)
    double alpha;                                       // alpha applied to this layer
};

struct calib_result {
    int n_layers, Hkv, d, n_samples, agg;
    float *scales;                  // (n_layers, Hkv, d) binary32, owned
    double *kagg, *qagg;            // (n_layers, Hkv, d) aggregates, owned
    struct calib_layer_stats *layer;// (n_layers), owned
    double rho_k, t_kq;             // model level (max over layers)
    int rho_layer, t_layer;         // where the maxima sit
    int branch;                     // model-level decision of the rule that made the scales
    double alpha;                   // model-level alpha (gate model) or forced
    int rule;                       // enum calib_rule that made the scales
    int paper_branch;               // the paper rule's model decision (whichever rule applied)
    struct gate_result gate;        // the measured rule's statistics (gate.layer NULL: not measured)
};

// Aggregates, computes gate statistics, decides, and computes the scales (binary64, rounded
// once to binary32; 1 where an aggregate is 0 or not finite; Bypass layers get 1).
int calib_compute(struct calib_result *r, const struct calib_stats *s, int agg,
                  const struct calib_gate_opts *g, struct err *e);
void calib_result_free(struct calib_result *r);
// Scales of layer l for alpha (spec section 4) into out[Hkv * d]: Kagg^alpha / Qagg^(1-alpha),
// 1 where an aggregate is 0 or not finite.
void calib_scales_alpha(const struct calib_result *r, int l, double alpha, float *out);
// Makes the measured decision r->gate (gate_decide) the one applied, unless alpha is forced:
// --gate model gives every layer the model's alpha, --gate layer each layer its own; Bypass
// layers get 1. r->rule, r->branch (bypass; mild below alpha 0.5; strong from 0.5) and r->alpha
// follow. The paper's statistics stay in r->layer[l].rho_k etc. and r->paper_branch.
void calib_apply_measured(struct calib_result *r, const struct calib_gate_opts *g);
// Both rules' decisions side by side with the statistics behind each (per layer and model), the
// rule that made the scales, and a warning line when the two disagree on smoothing the model
// (gate_report.c). Prints nothing when the measured rule did not run.
void calib_print_rules(FILE *f, const struct calib_result *r);
int calib_rules_disagree(const struct calib_result *r); // 1: one rule smooths the model, the other not
// The branch a measured alpha is reported as (0: bypass, < 0.5: mild, else strong).
int calib_branch_of_alpha(double alpha);
const char *calib_branch_name(int b);
const char *calib_agg_name(int agg);
int calib_agg_parse(const char *s, int *agg);

// Provenance written into the scales file's metadata.
struct calib_meta {
    const char *model_id, *model_hash, *source;
    int samples, length;
    uint64_t seed;
};
// Writes the scales file (spec section 7): tensor smooth_qk.scales F32 (L, Hkv, d) and
// __metadata__ keys model_id, model_hash, source, samples, length, seed, aggregator, alpha,
// gate, gate_rule (paper|measured), smooth_qk (JSON of per-layer statistics, and the measured
// rule's under "measured" when it ran). Byte-identical for identical inputs.
int calib_write(const char *path, const struct calib_result *r, const struct calib_meta *m, struct err *e);

#endif
