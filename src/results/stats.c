// stats.c: seeded bootstrap, paired permutation p, paired McNemar and items needed.
// Pure functions in binary64; see stats.h for each contract.
#include "results/stats.h"

#include <math.h>
#include <stdlib.h>

#include "results/metrics.h"

uint64_t stats_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int stats_index(uint64_t *s, int n) {
    if (n <= 0) return 0;
    return (int)(((stats_next(s) >> 32) * (uint64_t)n) >> 32);
}

void stats_opts_default(struct stats_opts *o) {
    o->seed = 21;
    o->n_boot = 2000;
    o->n_perm = 10000;
    o->rel = 0.2;
}

double stats_sd(const double *x, int n) {
    if (n <= 0) return NAN;
    if (n < 2) return 0.0;
    double m = metrics_mean(x, n), s = 0;
    for (int i = 0; i < n; i++) s += (x[i] - m) * (x[i] - m);
    return sqrt(s / (n - 1));
}

int stats_bootstrap_mean(double *mean, double *lo, double *hi, const double *x, int n, const struct stats_opts *o) {
    *mean = *lo = *hi = NAN;
    if (n <= 0) return 0;
    *mean = metrics_mean(x, n);
    int nb = o->n_boot > 0 ? o->n_boot : 1;
    double *m = malloc((size_t)nb * sizeof *m);
    if (!m) return -1;
    uint64_t s = o->seed;
    for (int b = 0; b < nb; b++) {
        double sum = 0;
        for (int i = 0; i < n; i++) sum += x[stats_index(&s, n)];
        m[b] = sum / n;
    }
    *lo = metrics_percentile(m, nb, 0.025);
    *hi = metrics_percentile(m, nb, 0.975);
    free(m);
    return 0;
}

// |sum of d[j] * sign_j| with sign_j = -1 where bit j of the pattern is set
static double flipped_abs_sum(const double *d, int m, uint64_t pattern) {
    double s = 0;
    for (int j = 0; j < m; j++) s += (pattern >> j & 1) ? -d[j] : d[j];
    return fabs(s);
}

double stats_perm_p(const double *d, int n, const struct stats_opts *o) {
    double *nz = malloc((size_t)(n > 0 ? n : 1) * sizeof *nz);
    if (!nz) return NAN;
    int m = 0;
    double obs = 0, scale = 0;
    for (int i = 0; i < n; i++) {
        if (d[i] == 0) continue;
        nz[m++] = d[i];
        obs += d[i];
        scale += fabs(d[i]);
    }
    double p = 1.0;
    if (m > 0) {
        double thr = fabs(obs) - 1e-9 * scale;
        if (m <= 16) {
            uint64_t total = (uint64_t)1 << m, hits = 0;
            for (uint64_t pat = 0; pat < total; pat++) hits += flipped_abs_sum(nz, m, pat) >= thr;
            p = (double)hits / (double)total;
        } else {
            int np = o->n_perm > 0 ? o->n_perm : 1;
            uint64_t s = o->seed, hits = 0;
            for (int k = 0; k < np; k++) {
                double sum = 0;
                uint64_t bits = 0;
                for (int j = 0; j < m; j++) {
                    if (j % 64 == 0) bits = stats_next(&s);
                    sum += (bits >> (j % 64) & 1) ? -nz[j] : nz[j];
                }
                hits += fabs(sum) >= thr;
            }
            p = (1.0 + (double)hits) / (1.0 + np);
        }
    }
    free(nz);
    return p;
}

double stats_mcnemar_paired(const unsigned char *a, const unsigned char *b, int n, int *nb, int *nc) {
    int cb = 0, cc = 0;
    for (int i = 0; i < n; i++) {
        cb += a[i] && !b[i];
        cc += !a[i] && b[i];
    }
    if (nb) *nb = cb;
    if (nc) *nc = cc;
    return metrics_mcnemar_exact_p(cb, cc);
}

double stats_items_needed(double sd, double delta) {
    if (isnan(sd) || sd < 0) return NAN;
    if (!isfinite(sd) || !isfinite(delta) || delta == 0) return INFINITY;
    if (sd == 0) return 1;
    double z = (METRICS_Z95 + STATS_Z80) * sd / fabs(delta);
    return ceil(z * z);
}

int stats_paired(struct stats_paired *out, const double *a, const double *b, int n, const struct stats_opts *o) {
    struct stats_paired r = {.n = n > 0 ? n : 0, .perm_p = 1.0};
    r.mean_a = metrics_mean(a, n);
    r.mean_b = metrics_mean(b, n);
    double *d = calloc((size_t)(n > 0 ? n : 1), sizeof *d);
    if (!d) return -1;
    for (int i = 0; i < n; i++) d[i] = b[i] - a[i];
    int rc = stats_bootstrap_mean(&r.diff, &r.lo, &r.hi, d, n, o);
    if (n > 0) r.perm_p = stats_perm_p(d, n, o);
    r.sd_diff = stats_sd(d, n);
    r.items_needed = stats_items_needed(r.sd_diff, o->rel * r.mean_a);
    free(d);
    *out = r;
    return rc;
}
