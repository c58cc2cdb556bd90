// diagnose.h: outlier diagnostics of a model (spec/calibration.md sections 2-6, paper Tables 1
// and 8, Figures 3, 4, 6, Appendix E): the gate statistics of calib.c on a statistics set (the
// 8 built-in prompts or a calibration source), the Jaccard stability of layer-0 top channels
// over the built-in prompts with the inter-sample CV of Kmax_s, and the report files
// (diagnose.json + SVG figures). Runs the model only through calib_run (no forward-pass copy).
#ifndef HIFA4_DIAGNOSE_H
#define HIFA4_DIAGNOSE_H

#include <stdint.h>
#include <stdio.h>

#include "calib/calib.h"
#include "calib/calib_run.h"
#include "diag/k_source.h"
#include "diag/qk_gains.h"

#define DIAG_N_PROMPTS 8

// Built-in prompt i (0..DIAG_N_PROMPTS-1): static text, *name its kind ("code", "math", ...).
const char *diag_prompt(int i, const char **name);

// ---- stability helpers (spec section 6), pure ----
// N = ceil(5% of Hkv*d) (at least 1).
int diag_top_count(int Hkv, int d);
// Indices of the k largest of v[0..n) into idx[0..k), by value descending, ties by lower index
// (NaN counts as smallest). Returns k clamped to n, or -1 when out of memory.
int diag_top_n(int *idx, const float *v, int n, int k);
// |A n B| / |A u B| of two index sets (each without duplicates); 1 when both are empty.
double diag_jaccard(const int *a, int na, const int *b, int nb);

// Stability over P samples of a statistics store at layer 0: each sample's top-N (kv head,
// channel) pairs by Kmax_s, the P x P Jaccard matrix and the mean of its P(P-1)/2 off-diagonal
// pairs; the top-N pairs by mean Kmax_s over the samples with the CV (population std / mean)
// of Kmax_s across samples for each.
struct diag_stability {
    int n_samples, top_n;
    int *top;           // (n_samples, top_n) flat index h*d + c, per sample
    double *jaccard;    // (n_samples, n_samples)
    double jaccard_mean;// mean off-diagonal (NAN with fewer than 2 samples)
    int *cv_idx;        // (top_n) pairs by mean Kmax_s, descending
    double *cv_mean;    // (top_n) mean Kmax_s over samples
    double *cv;         // (top_n) population std / mean (0 when the mean is 0)
    double cv_avg, cv_max;
};
int diag_stability_compute(struct diag_stability *out, const struct calib_stats *s, struct err *e);
void diag_stability_free(struct diag_stability *s);

// ---- the whole diagnosis ----
struct diag_opts {
    const char *calib;          // statistics source (calib_source_read); NULL: the built-in prompts
    struct calib_run_opts run;  // samples, len, seed, agg, gate, force, threads, batch_tokens
};
void diag_opts_default(struct diag_opts *o);

struct diagnose {
    char model_id[256], model_hash[65];
    char source[1100];              // what the statistics came from
    int from_prompts;               // statistics set = the built-in prompts
    struct calib_run stats;         // statistics set: per-sample stats + gate result (o->run.agg/gate)
    struct calib_result s05;        // same statistics with alpha 0.5 forced (scale column of Table 8)
    struct calib_run prompts;       // the built-in prompts (only when !from_prompts; else use stats)
    int n_prompts;
    int prompt_tokens[DIAG_N_PROMPTS];
    char prompt_names[DIAG_N_PROMPTS][16];  // built-in kinds ("code", ...) or "sample<i>" for explicit ids
    struct diag_stability stab;     // over the prompts
    double *heat;                   // (Hkv, d) layer-0 max |K| over every token of the statistics set
    struct calib_gate_opts gate;    // thresholds used
    struct qk_gains gains;          // the stored q/k norm gains (Figure 2; n_layers 0 without q/k norm)
    struct k_source ksrc;           // the k_proj bias against each layer's max |K| (has_bias 0 without one)
};

// Diagnoses a model: tokenizes the built-in prompts with the model's tokenizer, or tok_dir's when
// not NULL (BOS first when the tokenizer adds one; cut to the model's max_position_embeddings),
// collects statistics on them, and on o->calib when given (tokenized with the model's own
// tokenizer by calib_run_source). Errors from the tokenizer (more ids than the model's
// vocabulary: ERR_MISMATCH), model, source or calibration.
int diag_run(struct diagnose *d, const char *model_dir, const char *tok_dir, const struct diag_opts *o,
             struct err *e);
// Token sequences back to back: sequence i has lens[i] tokens.
struct diag_seqs {
    const int32_t *ids; // (sum of lens)
    const int *lens;    // (n)
    int n;
};
// Same from explicit token ids (tests, models without a tokenizer): prompts (prompts.n >= 2)
// and an optional statistics set described by stat_desc (stat.ids NULL: the prompts are the
// statistics set).
int diag_run_ids(struct diagnose *d, const char *model_dir, struct diag_seqs prompts, struct diag_seqs stat,
                 const char *stat_desc, const struct diag_opts *o, struct err *e);
void diag_free(struct diagnose *d);
// The statistics store the stability was computed from (prompts).
const struct calib_stats *diag_prompt_stats(const struct diagnose *d);

// Prints Table 1 row, Table 8, the q/k norm gains (Figure 2), the Jaccard matrix and CV summary, and a closing line saying
// which gate branch and why.
void diag_print(FILE *f, const struct diagnose *d);
// Writes out_dir/diagnose.json (every number, the gains under "fig2_qk_gains") and the SVGs fig3_layer0_heatmap.svg,
// fig4_layer_k_stats.svg, fig6_gate_plane.svg, and fig2_k_norm_gains.svg for a model with q/k
// norm (creating out_dir).
int diag_write(const struct diagnose *d, const char *out_dir, struct err *e);
// The SVG texts on their own (malloc'd, caller frees each), for tests.
int diag_svgs(const struct diagnose *d, char **fig3, char **fig4, char **fig6, struct err *e);

#endif
