// metrics.c: decision-consistency statistics (spec/tasks.md section 3), binary64 throughout.
// Pure functions; see metrics.h for each contract.
#include "results/metrics.h"

#include <math.h>
#include <stdlib.h>

double metrics_stderr(double p, int n) {
    if (n < 2) return 0.0;
    double v = p * (1.0 - p) / (double)(n - 1);
    return v > 0 ? sqrt(v) : 0.0;
}

void metrics_wilson(int k, int n, double z, double *lo, double *hi) {
    if (n <= 0) { *lo = 0.0; *hi = 1.0; return; }
    if (k < 0) k = 0;
    if (k > n) k = n;
    double nn = (double)n, p = (double)k / nn, z2 = z * z;
    double den = 1.0 + z2 / nn;
    double center = (p + z2 / (2.0 * nn)) / den;
    double half = z * sqrt(p * (1.0 - p) / nn + z2 / (4.0 * nn * nn)) / den;
    double l = center - half, h = center + half;
    *lo = l < 0 ? 0 : l;
    *hi = h > 1 ? 1 : h;
    if (k == 0) *lo = 0.0;  // exact bound (avoid -0/rounding residue)
    if (k == n) *hi = 1.0;
}

// log of the Binomial(n, 1/2) pmf at i
static double log_pmf_half(int n, int i) {
    return lgamma((double)n + 1) - lgamma((double)i + 1) - lgamma((double)(n - i) + 1) - (double)n * log(2.0);
}

double metrics_mcnemar_exact_p(int b, int c) {
    if (b < 0 || c < 0) return NAN;
    int n = b + c, k = b < c ? b : c;
    if (n == 0) return 1.0;
    // P(X <= k) by log-sum-exp over the lower tail (terms rise monotonically for i <= n/2)
    double mx = log_pmf_half(n, k), s = 0.0;
    for (int i = 0; i <= k; i++) s += exp(log_pmf_half(n, i) - mx);
    double p = 2.0 * exp(mx + log(s));
    return p > 1.0 ? 1.0 : p;
}

void metrics_compare(struct metrics_compare *out, const int *pred_ref, const int *pred_q, const int *gold, int n) {
    struct metrics_compare r = {0};
    int cr = 0, cq = 0;
    r.n = n > 0 ? n : 0;
    for (int i = 0; i < n; i++) {
        int a = pred_ref[i] == gold[i], b = pred_q[i] == gold[i];
        cr += a;
        cq += b;
        r.flips += pred_ref[i] != pred_q[i];
        r.hurts += a && !b;
        r.helps += !a && b;
    }
    if (n > 0) {
        double nn = (double)n;
        r.pfr = r.flips / nn;
        r.d_acc = (double)(r.helps - r.hurts) / nn;
        r.acc_ref = cr / nn;
        r.acc_q = cq / nn;
    } else {
        r.pfr = r.d_acc = r.acc_ref = r.acc_q = NAN;
    }
    metrics_wilson(r.flips, r.n, METRICS_Z95, &r.pfr_lo, &r.pfr_hi);
    r.mcnemar_p = metrics_mcnemar_exact_p(r.hurts, r.helps);
    *out = r;
}

double metrics_d_avg(const double *gap, int n_tasks) {
    if (n_tasks <= 0) return NAN;
    double s = 0;
    for (int i = 0; i < n_tasks; i++) s += gap[i];
    return s / n_tasks;
}

double metrics_d_w(const double *gap, const int *n_items, int n_tasks) {
    double s = 0, w = 0;
    for (int i = 0; i < n_tasks; i++) {
        s += (double)n_items[i] * gap[i];
        w += (double)n_items[i];
    }
    return w > 0 ? s / w : NAN;
}

double metrics_lse_argmax(const float *v, int n, int *amax) {
    int am = 0, bad = 0;
    float mx = n > 0 ? v[0] : -INFINITY;
    for (int i = 0; i < n; i++) {
        bad |= isnan(v[i]) || v[i] == INFINITY;
        if (v[i] > mx) { mx = v[i]; am = i; }
    }
    if (amax) *amax = am;
    if (bad) return NAN;
    if (mx == -INFINITY) return -INFINITY;
    double m = (double)mx, s = 0;
    for (int i = 0; i < n; i++) s += exp((double)v[i] - m);
    return m + log(s);
}

double metrics_lse(const float *v, int n) { return metrics_lse_argmax(v, n, NULL); }

double metrics_kl_logits(const float *ref, const float *q, int vocab) {
    if (vocab <= 0) return NAN;
    return metrics_kl_logits_lse(ref, metrics_lse(ref, vocab), q, metrics_lse(q, vocab), vocab);
}

double metrics_kl_logits_lse(const float *ref, double lr, const float *q, double lq, int vocab) {
    if (vocab <= 0) return NAN;
    if (isnan(lr) || isnan(lq) || lr == -INFINITY || lq == -INFINITY) return NAN;
    double kl = 0;
    for (int i = 0; i < vocab; i++) {
        double a = (double)ref[i] - lr;  // log p_ref
        if (a == -INFINITY) continue;   // p_ref = 0 contributes nothing
        double b = (double)q[i] - lq;
        if (b == -INFINITY) return INFINITY;
        kl += exp(a) * (a - b);
    }
    return kl > 0 ? kl : 0.0;
}

int metrics_argmax_f(const float *v, int n) {
    if (n <= 0) return -1;
    int best = -1;
    for (int i = 0; i < n; i++) {
        if (isnan(v[i])) continue;
        if (best < 0 || v[i] > v[best]) best = i;
    }
    return best < 0 ? 0 : best;
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    if (isnan(x) || isnan(y)) return isnan(x) - isnan(y);  // NaN last
    return (x > y) - (x < y);
}

double metrics_percentile(double *v, int n, double p) {
    if (n <= 0) return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_dbl);
    double r = ceil(p * (double)n - 1e-9);
    long k = (long)r - 1;
    if (!(r == r)) k = 0;
    if (k < 0) k = 0;
    if (k > n - 1) k = n - 1;
    return v[k];
}

double metrics_mean(const double *v, int n) {
    if (n <= 0) return NAN;
    double s = 0;
    for (int i = 0; i < n; i++) s += v[i];
    return s / n;
}

int metrics_argmax(const double *v, int n) {
    if (n <= 0) return -1;
    int best = -1;
    for (int i = 0; i < n; i++) {
        if (isnan(v[i])) continue;
        if (best < 0 || v[i] > v[best]) best = i;
    }
    return best < 0 ? 0 : best;
}

double metrics_margin(const double *ll, int n) {
    if (n < 2) return NAN;
    double t1 = -INFINITY, t2 = -INFINITY;
    int seen = 0;
    for (int i = 0; i < n; i++) {
        if (isnan(ll[i])) continue;
        seen++;
        if (ll[i] > t1) { t2 = t1; t1 = ll[i]; }
        else if (ll[i] > t2) t2 = ll[i];
    }
    if (seen < 2) return NAN;
    if (t1 == t2) return 0.0;  // also covers -inf == -inf
    return t1 - t2;
}

int metrics_all_correct(unsigned char *mask, const int *const *preds, int n_modes, const int *gold, int n) {
    int c = 0;
    for (int i = 0; i < n; i++) {
        int ok = 1;
        for (int m = 0; m < n_modes && ok; m++) ok = preds[m][i] == gold[i];
        mask[i] = (unsigned char)ok;
        c += ok;
    }
    return c;
}
