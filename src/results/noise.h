// noise.h: how much of a run's flips is noise. From the predictions of every mode
// in every replica of a run (replica 0 = the unperturbed run, replicas 1..K under a seeded null
// perturbation, run --replicas K) it computes per item and mode the flip, hurt and help
// probabilities and the null flip fraction, and per mode and pair of modes the statistics of
// stats.h, as summary.json's "noise" objects. Pure: no I/O.
#ifndef HIFA4_NOISE_H
#define HIFA4_NOISE_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "base/common.h"
#include "results/stats.h"

// Mode name of replica r >= 1 of mode (its samples files' mode): "<mode>@r<r>"; r == 0 is the
// mode itself. ERR_RANGE when out is too small.
int noise_replica_name(char *out, size_t n, const char *mode, int r, struct err *e);

// Predictions of n items under n_modes modes (the reference first) in n_rep runs each
// (n_rep = K + 1, replica 0 first): pred[r * n_modes + m][i]; gold[i].
struct noise_preds {
    int n, n_modes, n_rep;
    const int *gold;
    const int *const *pred;
};

// Per-item probabilities of mode m, each over the n_rep replicas (arrays of n, caller's):
//   flip[i] = #{r : pred_r,m(i) != pred_r,ref(i)} / n_rep        (vs the same replica's reference)
//   hurt[i] = #{r : ref correct and m wrong in replica r} / n_rep, help[i] the reverse
//   null_flip[i] = #{r >= 1 : pred_r,m(i) != pred_0,m(i)} / (n_rep - 1)   (0 when n_rep == 1)
// Any pointer may be NULL (not computed).
struct noise_item {
    double *flip, *hurt, *help, *null_flip;
};
void noise_item_probs(const struct noise_item *out, const struct noise_preds *p, int m);

// The "noise" object of one task (or of several pooled into one item list):
//   {"n", "replicas": K, "modes": {mode: {"pfr", "hurts", "helps" (replica 0's single-run
//    figures), "flip", "hurt", "help", "null_flip": {"mean", "lo", "hi"} (bootstrap 95% over
//    items)}}, "pairs": [{"a", "b", "flip", "hurt": {"a", "b", "diff" (b - a), "lo", "hi", "p",
//    "test" ("permutation" for K > 0, "mcnemar" on replica 0's indicators for K = 0),
//    "items_needed" (to detect o->rel * a at p < 0.05 with 80% power)}}]}
// over every pair a < b of the non-reference modes. *out owned by the caller.
int noise_json(cJSON **out, const struct noise_preds *p, char *const *modes, const struct stats_opts *o, struct err *e);

#endif
