// stats.h: the statistics that say whether a difference is noise, binary64 throughout:
// a documented seeded generator, the percentile bootstrap of a mean, the paired sign-flip
// permutation test, the exact McNemar test on two modes' flip indicators and the number of items
// a paired comparison needs. Pure functions: no I/O, no global state, allocation only where
// noted; the same inputs and seed give the same bits on every machine and thread count.
#ifndef HIFA4_STATS_H
#define HIFA4_STATS_H

#include <stdint.h>

// z of one-sided 80% power (the 0.8 normal quantile); METRICS_Z95 is the two-sided 0.05 one.
#define STATS_Z80 0.8416212335729143

// SplitMix64 (Steele, Lea, Flood 2014; the generator java.util.SplittableRandom and xoshiro's
// seeding use): *s += 0x9e3779b97f4a7c15, then two xor-shift-multiply rounds. From s = 0 the
// first outputs are 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f.
uint64_t stats_next(uint64_t *s);
// An index in [0, n) from the next output x: ((x >> 32) * n) >> 32 (Lemire's multiply-shift on
// the high 32 bits; bias below n / 2^32). n <= 0 gives 0 and draws nothing.
int stats_index(uint64_t *s, int n);

// Options shared by the resampling statistics (stats_opts_default: seed 21, 2000 bootstrap
// resamples, 10000 permutations, relative difference 0.2).
struct stats_opts {
    uint64_t seed;
    int n_boot;      // bootstrap resamples (>= 1)
    int n_perm;      // Monte Carlo sign flips when the exact enumeration is too large (>= 1)
    double rel;      // relative difference the items-needed figure is for (0.2: 20% fewer)
};
void stats_opts_default(struct stats_opts *o);

// Sample standard deviation (n - 1 in the denominator; 0 for n < 2). n <= 0: NaN. The mean is
// metrics_mean.
double stats_sd(const double *x, int n);

// Percentile bootstrap of the mean of x[0..n): o->n_boot resamples of n items, drawn with
// replacement by stats_index from a generator seeded with o->seed (resample b takes its n
// indices in order, then resample b+1 continues the same stream), each resample's mean summed
// in draw order; lo and hi are the nearest-rank 2.5% and 97.5% points of the resample means
// (metrics_percentile). Allocates n_boot doubles: returns -1 if that fails, else 0. n <= 0:
// NaN mean and bounds, returns 0.
int stats_bootstrap_mean(double *mean, double *lo, double *hi, const double *x, int n, const struct stats_opts *o);

// Two-sided paired permutation p of mean(d) = 0 under sign flips of each d[i]: the share of
// sign patterns whose |sum| is >= the observed |sum| (ties within 1e-9 * sum|d| count as >=).
// Zeros are left out (flipping them changes nothing). Exact over all 2^m patterns of the m
// nonzero d[i] when m <= 16; else (1 + hits) / (1 + o->n_perm) over o->n_perm seeded patterns
// (bit j of the pattern from stats_next, 64 items per draw). m == 0 gives 1. For d in
// {-1, 0, 1} the exact p equals metrics_mcnemar_exact_p(#{d = 1}, #{d = -1}).
double stats_perm_p(const double *d, int n, const struct stats_opts *o);

// Exact McNemar p on two 0/1 indicator vectors (e.g. two modes' flips on the same items): the
// discordant counts b = #{a_i = 1, b_i = 0}, c = #{a_i = 0, b_i = 1} into
// metrics_mcnemar_exact_p. *nb, *nc (may be NULL) receive b and c.
double stats_mcnemar_paired(const unsigned char *a, const unsigned char *b, int n, int *nb, int *nc);

// Items a paired comparison needs to detect a mean difference delta at two-sided p < 0.05 with
// 80% power, given the per-item difference's standard deviation sd (normal approximation):
// ceil(((METRICS_Z95 + STATS_Z80) * sd / delta)^2). delta == 0 or non-finite inputs: +inf;
// sd == 0: 1 (any item shows a difference that never varies); negative sd: NaN.
double stats_items_needed(double sd, double delta);

// One paired comparison of per-item values a[i] (mode A) and b[i] (mode B) on the same items.
struct stats_paired {
    int n;
    double mean_a, mean_b;
    double diff, lo, hi;   // mean(b - a) and its bootstrap 95% interval
    double perm_p;         // stats_perm_p of b - a
    double sd_diff;        // sample sd of b - a
    double items_needed;   // stats_items_needed(sd_diff, o->rel * mean_a)
};
// Fills *out; allocates n doubles (and the bootstrap's): returns -1 if that fails, else 0.
int stats_paired(struct stats_paired *out, const double *a, const double *b, int n, const struct stats_opts *o);

#endif
