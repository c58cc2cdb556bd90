// metrics.h: pure decision-consistency statistics of spec/tasks.md section 3 (paper Section 5,
// Appendix D), all in binary64: accuracy stderr, Wilson interval, exact McNemar test, flips /
// hurts / helps against a reference run, cross-task D_avg / D_w, token-level KL, nearest-rank
// percentiles and the option-loglik decision margin. No I/O, no allocation except where noted,
// no global state; every function is safe to call from several threads.
#ifndef HIFA4_METRICS_H
#define HIFA4_METRICS_H

// z for a two-sided 95% interval (the 0.975 normal quantile).
#define METRICS_Z95 1.959963984540054

// Standard error of an accuracy p over n items: sqrt(p(1-p)/(n-1)) (the sample-variance form
// lm-evaluation-harness reports); 0 for n < 2.
double metrics_stderr(double p, int n);

// Wilson score interval for k successes in n trials at normal quantile z:
// (p + z^2/2n +- z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n), clamped to [0,1].
// n <= 0 gives [0,1]. k is clamped to [0,n].
void metrics_wilson(int k, int n, double z, double *lo, double *hi);

// Two-sided exact McNemar test on the discordant pairs (b, c): under H0 b ~ Binomial(b+c, 1/2);
// p = min(1, 2 * P(X <= min(b,c))). b+c == 0 gives 1. Computed with lgamma in log space
// (relative error ~1e-12), valid for any b, c >= 0; negative input gives NaN.
double metrics_mcnemar_exact_p(int b, int c);

// Decisions of a quantized run (pred_q) against the reference (pred_ref) on the same n items.
struct metrics_compare {
    int n;
    int flips;         // pred_q != pred_ref
    int hurts;         // ref correct, q wrong
    int helps;         // ref wrong, q correct
    double pfr;        // flips / n (percent flip rate as a fraction)
    double pfr_lo, pfr_hi;  // Wilson 95% interval of pfr
    double d_acc;      // (helps - hurts) / n = acc_q - acc_ref
    double mcnemar_p;  // exact McNemar p on (hurts, helps)
    double acc_ref, acc_q;
};
// n == 0 gives zero counts, NaN rates, [0,1] interval and p = 1.
void metrics_compare(struct metrics_compare *out, const int *pred_ref, const int *pred_q, const int *gold, int n);

// Across tasks (paper Table 5): D_avg = mean of the per-task accuracy gaps; D_w = sum N_b gap_b /
// sum N_b with N_b the item counts. n_tasks == 0 (or all N_b == 0 for D_w) gives NaN.
double metrics_d_avg(const double *gap, int n_tasks);
double metrics_d_w(const double *gap, const int *n_items, int n_tasks);

// KL(ref || q) of the next-token distributions softmax(ref) and softmax(q) over vocab binary32
// logits, computed in binary64 (log-softmax by max-shifted log-sum-exp). Masked -inf logits are
// fine: terms with p_ref = 0 contribute 0; p_ref > 0 with p_q = 0 gives +inf. NaN logits or
// vocab <= 0 give NaN. Always >= 0 (tiny negative rounding is clamped to 0).
double metrics_kl_logits(const float *ref, const float *q, int vocab);
// The same KL given both rows' metrics_lse (callers that already have them skip two of the three
// exp passes; the result is bit for bit metrics_kl_logits's).
double metrics_kl_logits_lse(const float *ref, double lse_ref, const float *q, double lse_q, int vocab);
// Log-sum-exp of v[n] in binary64: max-shifted, summed in index order; -inf when every entry is
// -inf (or n <= 0); NaN if any entry is NaN or +inf.
double metrics_lse(const float *v, int n);
// The same log-sum-exp and, from the same scan, *amax (if not NULL): the first index whose entry
// is larger than every earlier one under `>` from v[0] on (ties to the lowest index; a NaN after
// v[0] never wins; 0 for n <= 0). Unlike metrics_argmax_f, a NaN v[0] keeps index 0.
double metrics_lse_argmax(const float *v, int n, int *amax);
// Index of the largest binary32 logit, ties to the lowest index (same-top-1 rate = fraction of
// positions where both runs give the same index); NaN never wins; -1 for vocab <= 0.
int metrics_argmax_f(const float *v, int n);

// Nearest-rank percentile: sorts v ascending in place (NaN last) and returns
// sorted[ceil(p*n)-1] with the index clamped to [0, n-1] (p = 0 gives the minimum, p = 1 the
// maximum). p*n is rounded down by 1e-9 before ceil so that e.g. 0.07*100 = 7.000000000000001
// picks rank 7. n <= 0 gives NaN.
double metrics_percentile(double *v, int n, double p);
// Arithmetic mean (NaN for n <= 0).
double metrics_mean(const double *v, int n);

// Decision margin (paper Fig. 9): top-1 minus top-2 of the option logliks (>= 0; 0 on a tie).
// NaN for n < 2. NaN entries are ignored (a NaN never ranks).
double metrics_margin(const double *ll, int n);
// argmax with ties to the lowest index (spec/tasks.md section 1); NaN never wins; -1 for n <= 0,
// 0 when every entry is NaN.
int metrics_argmax(const double *v, int n);

// Marks the items every compared mode answers correctly (the margin-distribution population of
// spec/tasks.md section 3): mask[i] = 1 iff preds[m][i] == gold[i] for all m < n_modes. Returns
// the number of marked items.
int metrics_all_correct(unsigned char *mask, const int *const *preds, int n_modes, const int *gold, int n);

#endif
