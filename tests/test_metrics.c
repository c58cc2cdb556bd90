// test_metrics.c: every metric of spec/tasks.md section 3 on hand-worked examples. Expected
// values are closed forms worked out by hand (shown beside each check), published tables
// (Newcombe 1998 for Wilson intervals) or exact binomial sums done with integer arithmetic.
#include <math.h>
#include <string.h>
#include <stdlib.h>

#include "results/metrics.h"
#include "test.h"

static void test_stderr(void) {
    CHECK_CLOSE(metrics_stderr(0.5, 101), 0.05, 1e-15, 0);           // sqrt(.25/100)
    CHECK_CLOSE(metrics_stderr(0.8, 5), 0.2, 1e-15, 0);              // sqrt(.16/4)
    CHECK_CLOSE(metrics_stderr(0.25, 4), 0.25, 1e-15, 0);            // sqrt(.1875/3) = sqrt(.0625)
    CHECK(metrics_stderr(0.7, 1) == 0 && metrics_stderr(0.7, 0) == 0, "n < 2 gives 0");
    CHECK(metrics_stderr(1.0, 50) == 0 && metrics_stderr(0.0, 50) == 0, "p in {0,1} gives 0");
}

static void test_wilson(void) {
    // Newcombe (1998), Stat. Med. 17:857, Table I, method 3 (Wilson score, no continuity
    // correction), z = 1.96, published to 4 decimals.
    struct { int k, n; double lo, hi; } t[] = {
        {81, 263, 0.2553, 0.3662}, {15, 148, 0.0624, 0.1605}, {0, 20, 0.0, 0.1611}, {1, 29, 0.0061, 0.1718}};
    for (int i = 0; i < 4; i++) {
        double lo, hi;
        metrics_wilson(t[i].k, t[i].n, 1.96, &lo, &hi);
        CHECK_CLOSE(lo, t[i].lo, 5e-5, 0);
        CHECK_CLOSE(hi, t[i].hi, 5e-5, 0);
    }
    // 8/10 by hand: p=.8, z^2=3.8416, den=1.38416, center=.99208/1.38416,
    // half=1.96*sqrt(.016+.009604)/1.38416
    double lo, hi, den = 1.38416, half = 1.96 * sqrt(0.025604) / den;
    metrics_wilson(8, 10, 1.96, &lo, &hi);
    CHECK_CLOSE(lo, 0.99208 / den - half, 1e-12, 0);
    CHECK_CLOSE(hi, 0.99208 / den + half, 1e-12, 0);
    metrics_wilson(10, 10, METRICS_Z95, &lo, &hi);
    CHECK(hi == 1.0 && lo > 0.69 && lo < 0.73, "10/10: [%g, %g]", lo, hi);   // 1/(1+z^2/10) = 0.7225
    CHECK_CLOSE(lo, 10.0 / (10.0 + METRICS_Z95 * METRICS_Z95), 1e-12, 0);
    metrics_wilson(0, 0, METRICS_Z95, &lo, &hi);
    CHECK(lo == 0 && hi == 1, "n=0 gives [0,1]");
    // symmetry: (k, n) mirrors (n-k, n)
    double l2, h2;
    metrics_wilson(3, 17, METRICS_Z95, &lo, &hi);
    metrics_wilson(14, 17, METRICS_Z95, &l2, &h2);
    CHECK_CLOSE(lo, 1 - h2, 1e-14, 0);
    CHECK_CLOSE(hi, 1 - l2, 1e-14, 0);
}

static void test_mcnemar(void) {
    CHECK_CLOSE(metrics_mcnemar_exact_p(1, 9), 22.0 / 1024, 1e-15, 1e-12);   // 2*(1+10)/2^10
    CHECK_CLOSE(metrics_mcnemar_exact_p(9, 1), 22.0 / 1024, 1e-15, 1e-12);
    CHECK_CLOSE(metrics_mcnemar_exact_p(0, 5), 0.0625, 1e-15, 1e-12);         // 2/2^5
    CHECK_CLOSE(metrics_mcnemar_exact_p(10, 0), 2.0 / 1024, 1e-15, 1e-12);
    CHECK(metrics_mcnemar_exact_p(3, 3) == 1.0, "b == c gives 1");
    CHECK(metrics_mcnemar_exact_p(2, 1) == 1.0, "2*(1+3)/8 = 1");
    CHECK(metrics_mcnemar_exact_p(0, 0) == 1.0, "no discordant pairs gives 1");
    CHECK(isnan(metrics_mcnemar_exact_p(-1, 3)), "negative input");
    // exact integer sums: 2 * sum_{i<=k} C(n,i) / 2^n
    CHECK_CLOSE(metrics_mcnemar_exact_p(10, 20), 0.09873714670538902, 0, 1e-11);
    CHECK_CLOSE(metrics_mcnemar_exact_p(7, 30), 0.00019107642583549023, 0, 1e-11);
    CHECK_CLOSE(metrics_mcnemar_exact_p(400, 480), 0.007707305043339141, 0, 1e-10);
    double p = metrics_mcnemar_exact_p(20000, 20000);
    CHECK(p == 1.0, "large balanced: %g", p);
    p = metrics_mcnemar_exact_p(0, 2000);
    CHECK(p >= 0 && p < 1e-300, "far tail underflows to ~0: %g", p);
}

static void test_compare(void) {
    // hand example (10 items):
    //   gold 0 1 2 3 0 1 2 3 0 1
    //   ref  0 1 2 0 0 1 1 3 1 1   correct at 0,1,2,4,5,7,9 -> 7
    //   q    0 1 0 0 0 2 1 3 0 1   correct at 0,1,4,7,8,9   -> 6
    // flips at 2,5,8 = 3; hurts (ref ok, q wrong) at 2,5 = 2; helps at 8 = 1
    const int gold[10] = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1};
    const int ref[10] = {0, 1, 2, 0, 0, 1, 1, 3, 1, 1};
    const int q[10] = {0, 1, 0, 0, 0, 2, 1, 3, 0, 1};
    struct metrics_compare c;
    metrics_compare(&c, ref, q, gold, 10);
    CHECK(c.n == 10 && c.flips == 3 && c.hurts == 2 && c.helps == 1, "counts %d %d %d %d", c.n, c.flips, c.hurts, c.helps);
    CHECK_CLOSE(c.pfr, 0.3, 1e-15, 0);
    CHECK_CLOSE(c.d_acc, -0.1, 1e-15, 0);
    CHECK_CLOSE(c.acc_ref, 0.7, 1e-15, 0);
    CHECK_CLOSE(c.acc_q, 0.6, 1e-15, 0);
    CHECK_CLOSE(c.d_acc, c.acc_q - c.acc_ref, 1e-15, 0);
    CHECK(c.mcnemar_p == 1.0, "McNemar(2,1) = 1: %g", c.mcnemar_p);
    double lo, hi;
    metrics_wilson(3, 10, METRICS_Z95, &lo, &hi);
    CHECK(c.pfr_lo == lo && c.pfr_hi == hi, "PFR interval is Wilson 95%%");
    CHECK(lo > 0.10 && lo < 0.11 && hi > 0.60 && hi < 0.61, "Wilson(3,10) = [%g, %g] (0.1078, 0.6032)", lo, hi);
    // identical runs: nothing flips
    metrics_compare(&c, ref, ref, gold, 10);
    CHECK(c.flips == 0 && c.hurts == 0 && c.helps == 0 && c.d_acc == 0 && c.mcnemar_p == 1.0 && c.pfr_lo == 0, "identical");
    // a flip between two wrong answers counts as a flip but neither hurt nor help
    const int g1[1] = {0}, r1[1] = {1}, q1[1] = {2};
    metrics_compare(&c, r1, q1, g1, 1);
    CHECK(c.flips == 1 && c.hurts == 0 && c.helps == 0, "wrong-to-wrong flip");
    metrics_compare(&c, ref, q, gold, 0);
    CHECK(c.n == 0 && isnan(c.pfr) && c.mcnemar_p == 1.0, "n = 0");
}

static void test_cross_task(void) {
    // gaps .01, -.02, .03 on 100, 300, 600 items: D_w = (1 - 6 + 18)/1000 = .013; D_avg = .02/3
    const double gap[3] = {0.01, -0.02, 0.03};
    const int n[3] = {100, 300, 600};
    CHECK_CLOSE(metrics_d_w(gap, n, 3), 0.013, 1e-15, 0);
    CHECK_CLOSE(metrics_d_avg(gap, 3), 0.02 / 3, 1e-15, 0);
    // equal weights: D_w == D_avg
    const int eq[3] = {50, 50, 50};
    CHECK_CLOSE(metrics_d_w(gap, eq, 3), metrics_d_avg(gap, 3), 1e-16, 0);
    CHECK(isnan(metrics_d_avg(gap, 0)) && isnan(metrics_d_w(gap, n, 0)), "no tasks gives NaN");
}

static void test_kl(void) {
    // ref logits (0,0) -> (1/2,1/2); q (ln 3, 0) -> (3/4,1/4):
    // KL = 1/2 ln(2/3) + 1/2 ln 2 = 1/2 ln(4/3)
    float r[2] = {0, 0}, q[2] = {(float)log(3.0), 0};
    // q[0] is ln 3 rounded to binary32: use its exact value in the closed form
    double a = exp((double)q[0]), pq0 = a / (a + 1), pq1 = 1 / (a + 1);
    CHECK_CLOSE(metrics_kl_logits(r, q, 2), 0.5 * log(0.5 / pq0) + 0.5 * log(0.5 / pq1), 1e-15, 1e-13);
    CHECK_CLOSE(metrics_kl_logits(r, q, 2), 0.5 * log(4.0 / 3.0), 1e-7, 0);
    // (1,2,3) vs (3,2,1): equal log-normalisers, so KL = sum p_i (x_i - y_i) = 2 (p_3 - p_1)
    // = 2 (1 - e^-2) / (1 + e^-1 + e^-2)
    float x[3] = {1, 2, 3}, y[3] = {3, 2, 1};
    CHECK_CLOSE(metrics_kl_logits(x, y, 3), 2 * (1 - exp(-2.0)) / (1 + exp(-1.0) + exp(-2.0)), 0, 1e-13);
    // KL(p||p) = 0; invariant to adding a constant to all logits; large logits do not overflow
    float big[3] = {1001, 1002, 1003};
    CHECK(metrics_kl_logits(x, x, 3) == 0.0, "KL(p||p) = 0");
    CHECK_CLOSE(metrics_kl_logits(big, y, 3), metrics_kl_logits(x, y, 3), 0, 1e-9);
    // masked entries: p_ref = 0 contributes 0; p_ref > 0 with p_q = 0 is +inf
    float m1[3] = {0, 0, -INFINITY}, m2[3] = {0, 0, 5}, m3[3] = {0, -INFINITY, 0};
    double want = log(0.5 / (1 / (2 + exp(5.0))));  // both ref tokens have q = 1/(2+e^5)
    CHECK_CLOSE(metrics_kl_logits(m1, m2, 3), want, 0, 1e-12);
    CHECK(isinf(metrics_kl_logits(m1, m3, 3)), "p_q = 0 under p_ref > 0 gives inf");
    float nanv[2] = {0, NAN};
    CHECK(isnan(metrics_kl_logits(nanv, r, 2)) && isnan(metrics_kl_logits(r, r, 0)), "NaN / empty");
    // metrics_lse by definition (ln(e^1 + e^2 + e^3)), its special rows, and the KL from given
    // log-sum-exps equal to the KL computed afresh, bit for bit, on every row above
    CHECK_CLOSE(metrics_lse(x, 3), 3 + log(1 + exp(-1.0) + exp(-2.0)), 0, 1e-15);
    float ninf[2] = {-INFINITY, -INFINITY}, pinf[2] = {0, INFINITY};
    CHECK(metrics_lse(ninf, 2) == -INFINITY && isnan(metrics_lse(pinf, 2)) && isnan(metrics_lse(nanv, 2)),
          "lse: all -inf gives -inf, +inf or NaN gives NaN");
    const float *rows[] = {r, q, x, y, big, m1, m2, m3, nanv, ninf, pinf};
    const int lens[] = {2, 2, 3, 3, 3, 3, 3, 3, 2, 2, 2};
    int same = 1;
    for (int i = 0; i < 11; i++)
        for (int j = 0; j < 11; j++) {
            if (lens[i] != lens[j]) continue;
            double k0 = metrics_kl_logits(rows[i], rows[j], lens[i]);
            double k1 = metrics_kl_logits_lse(rows[i], metrics_lse(rows[i], lens[i]), rows[j], metrics_lse(rows[j], lens[j]), lens[i]);
            same &= (isnan(k0) && isnan(k1)) || memcmp(&k0, &k1, sizeof k0) == 0;
        }
    CHECK(same, "metrics_kl_logits_lse(lse given) == metrics_kl_logits, bit for bit (NaN as NaN)");
    // the argmax of the same scan: ties to the lowest index, a later NaN never wins, a NaN v[0]
    // keeps 0, +inf wins (and makes the log-sum-exp NaN); the log-sum-exp is metrics_lse's
    float tie[4] = {1, 3, 3, NAN}, nan0[3] = {NAN, 5, 7}, inf2[3] = {1, 2, INFINITY};
    int a0 = -1, a1 = -1, a2 = -1, a3 = -1;
    double l0 = metrics_lse_argmax(tie, 3, &a0), l3 = metrics_lse_argmax(x, 3, &a3);
    CHECK(a0 == 1 && memcmp(&l0, &(double){metrics_lse(tie, 3)}, sizeof l0) == 0, "lse_argmax tie: %d", a0);
    CHECK(isnan(metrics_lse_argmax(tie, 4, &a0)) && a0 == 1, "lse_argmax later NaN: %d", a0);
    CHECK(isnan(metrics_lse_argmax(nan0, 3, &a1)) && a1 == 0, "lse_argmax NaN first: %d", a1);
    CHECK(isnan(metrics_lse_argmax(inf2, 3, &a2)) && a2 == 2, "lse_argmax +inf: %d", a2);
    CHECK(a3 == 2 && l3 == metrics_lse(x, 3) && metrics_lse_argmax(ninf, 2, &a1) == -INFINITY && a1 == 0,
          "lse_argmax (1,2,3): %d; all -inf: %d", a3, a1);
    // same-top-1 helper: ties to lowest, NaN never wins
    float t[4] = {1, 3, 3, NAN};
    CHECK(metrics_argmax_f(t, 4) == 1 && metrics_argmax_f(t, 0) == -1, "argmax_f");
}

static void test_percentile(void) {
    double v[5] = {5, 1, 4, 2, 3};
    CHECK(metrics_percentile(v, 5, 0.5) == 3, "median of 1..5: ceil(2.5)=3rd");
    CHECK(v[0] == 1 && v[4] == 5, "sorted in place");
    CHECK(metrics_percentile(v, 5, 0.9) == 5, "p90: ceil(4.5)=5th");
    CHECK(metrics_percentile(v, 5, 0.2) == 1, "p20: ceil(1.0)=1st");
    CHECK(metrics_percentile(v, 5, 0.0) == 1 && metrics_percentile(v, 5, 1.0) == 5, "p0 / p100");
    double w[100];
    for (int i = 0; i < 100; i++) w[i] = 100 - i;  // 100..1
    CHECK(metrics_percentile(w, 100, 0.07) == 7, "0.07*100 = 7.000000000000001 still picks rank 7");
    CHECK(metrics_percentile(w, 100, 0.99) == 99 && metrics_percentile(w, 100, 0.995) == 100, "p99 / p99.5");
    double z[3] = {NAN, 2, 1};
    CHECK(metrics_percentile(z, 3, 0.5) == 2 && isnan(z[2]), "NaN sorts last");
    CHECK(isnan(metrics_percentile(v, 0, 0.5)), "empty gives NaN");
    CHECK_CLOSE(metrics_mean(v, 5), 3.0, 0, 0);
}

static void test_margin(void) {
    const double ll[3] = {-1, -3, -2};
    CHECK(metrics_margin(ll, 3) == 1.0 && metrics_argmax(ll, 3) == 0, "margin 1, argmax 0");
    const double tie[3] = {-5, -1, -1};
    CHECK(metrics_margin(tie, 3) == 0.0 && metrics_argmax(tie, 3) == 1, "tie: margin 0, lowest index");
    const double neg[4] = {-10.5, -2.25, -7, -2.5};
    CHECK(metrics_margin(neg, 4) == 0.25 && metrics_argmax(neg, 4) == 1, "margin .25");
    const double withnan[3] = {NAN, -4, -1};
    CHECK(metrics_margin(withnan, 3) == 3.0 && metrics_argmax(withnan, 3) == 2, "NaN ignored");
    const double one[1] = {-1};
    CHECK(isnan(metrics_margin(one, 1)) && metrics_argmax(one, 1) == 0 && metrics_argmax(one, 0) == -1, "n=1 / n=0");
    const double inf[2] = {-INFINITY, -INFINITY};
    CHECK(metrics_margin(inf, 2) == 0.0 && metrics_argmax(inf, 2) == 0, "-inf tie");
    // margin population: items every mode answers correctly
    const int gold[5] = {0, 1, 2, 3, 0}, a[5] = {0, 1, 2, 0, 0}, b[5] = {0, 2, 2, 3, 0};
    const int *preds[2] = {a, b};
    unsigned char mask[5];
    CHECK(metrics_all_correct(mask, preds, 2, gold, 5) == 3 && mask[0] && !mask[1] && mask[2] && !mask[3] && mask[4],
          "all-correct mask");
}

int main(void) {
    test_stderr();
    test_wilson();
    test_mcnemar();
    test_compare();
    test_cross_task();
    test_kl();
    test_percentile();
    test_margin();
    return test_summary("test_metrics");
}
