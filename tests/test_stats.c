// test_stats.c: the noise statistics (null replicas, paired tests) on hand-worked cases. Generator outputs are
// SplitMix64's published values; bootstrap resamples were drawn by hand from those outputs
// (index = (x >> 32) * n >> 32) and are listed beside the checks; permutation p-values are
// counts of sign patterns done by hand; McNemar and sample sizes are closed forms.
#include <math.h>
#include <stdlib.h>

#include "results/metrics.h"
#include "results/stats.h"
#include "test.h"

static void test_generator(void) {
    uint64_t s = 0;
    CHECK(stats_next(&s) == 0xe220a8397b1dcdafull, "splitmix64(0) #1");
    CHECK(stats_next(&s) == 0x6e789e6aa1b965f4ull, "splitmix64(0) #2");
    CHECK(stats_next(&s) == 0x06c45d188009454full, "splitmix64(0) #3");
    s = 0;
    // 0xe220a839 * 10 >> 32 = 8 (0xe220a839 / 2^32 = 0.8833)
    CHECK(stats_index(&s, 10) == 8, "index from the high 32 bits");
    uint64_t t = 5;
    CHECK(stats_index(&t, 0) == 0 && t == 5, "n = 0 draws nothing");
}

static void test_bootstrap(void) {
    struct stats_opts o;
    stats_opts_default(&o);
    // seed 7, n = 3, x = {0, 1, 5}, 4 resamples; indices from the seed-7 stream:
    // {1,0,2} -> 2, {1,1,0} -> 2/3, {1,0,0} -> 1/3, {1,0,2} -> 2. With 4 resamples the
    // nearest-rank 2.5% point is rank ceil(0.1) = 1 (the minimum) and 97.5% is rank 4 (the max).
    double x[] = {0, 1, 5}, mean, lo, hi;
    o.seed = 7;
    o.n_boot = 4;
    CHECK(stats_bootstrap_mean(&mean, &lo, &hi, x, 3, &o) == 0, "rc");
    CHECK_CLOSE(mean, 2.0, 1e-15, 0);
    CHECK_CLOSE(lo, 1.0 / 3, 1e-15, 0);
    CHECK_CLOSE(hi, 2.0, 1e-15, 0);
    // the same seed gives the same bits; resamples of a constant are the constant
    double lo2, hi2;
    stats_bootstrap_mean(&mean, &lo2, &hi2, x, 3, &o);
    CHECK(lo2 == lo && hi2 == hi, "same seed, same interval");
    double c[] = {0.25, 0.25, 0.25, 0.25, 0.25};
    o.n_boot = 500;
    stats_bootstrap_mean(&mean, &lo, &hi, c, 5, &o);
    CHECK(lo == 0.25 && hi == 0.25 && mean == 0.25, "constant data: [%g, %g]", lo, hi);
    // x = {0, 0, 1}: the exact bootstrap law of the mean is k/3, k ~ Bin(3, 1/3):
    // P(0) = 8/27, P(1) = 1/27 = 3.7% > 2.5%, so the 2.5% point is 0 and the 97.5% point is 1.
    double y[] = {0, 0, 1};
    o.n_boot = 20000;
    stats_bootstrap_mean(&mean, &lo, &hi, y, 3, &o);
    CHECK(lo == 0 && hi == 1, "{0,0,1}: [%g, %g]", lo, hi);
    // 30 ones in 100: the normal interval 0.3 +- 1.96 sqrt(0.21/100) = [0.210, 0.390]
    double z[100];
    for (int i = 0; i < 100; i++) z[i] = i < 30;
    o.n_boot = 4000;
    stats_bootstrap_mean(&mean, &lo, &hi, z, 100, &o);
    CHECK_CLOSE(lo, 0.210, 0.02, 0);
    CHECK_CLOSE(hi, 0.390, 0.02, 0);
    stats_bootstrap_mean(&mean, &lo, &hi, z, 0, &o);
    CHECK(isnan(mean) && isnan(lo) && isnan(hi), "n = 0 gives NaN");
}

static void test_permutation(void) {
    struct stats_opts o;
    stats_opts_default(&o);
    // {1,2,3}: the 8 signed sums are +-6, +-4, +-2, 0, 0; |sum| >= 6 twice: p = 2/8
    double a[] = {1, 2, 3, 0, 0};
    CHECK_CLOSE(stats_perm_p(a, 3, &o), 0.25, 0, 0);
    CHECK_CLOSE(stats_perm_p(a, 5, &o), 0.25, 0, 0);   // zeros change nothing
    double b[] = {1, 1, 1, 1};                         // only all-equal signs reach 4: 2/16
    CHECK_CLOSE(stats_perm_p(b, 4, &o), 0.125, 0, 0);
    double c[] = {3, -1, -1};                          // observed |1|: every sum (+-5,+-3,+-3,+-1) reaches it
    CHECK_CLOSE(stats_perm_p(c, 3, &o), 1.0, 0, 0);
    double d[] = {0.5, 0.25, 0.25};                    // 1, .5, .5, 0, 0, -.5, -.5, -1: 2/8
    CHECK_CLOSE(stats_perm_p(d, 3, &o), 0.25, 0, 0);
    // flips of {-1,0,1} are the sign test: 7 up, 2 down = McNemar(7, 2) = 2(1+9+36)/512
    double e[12] = {1, 1, 1, 1, 1, 1, 1, -1, -1, 0, 0, 0};
    CHECK_CLOSE(stats_perm_p(e, 12, &o), 92.0 / 512, 0, 1e-12);
    CHECK_CLOSE(stats_perm_p(e, 12, &o), metrics_mcnemar_exact_p(7, 2), 0, 1e-12);
    CHECK(stats_perm_p(e + 9, 3, &o) == 1.0, "all zero gives 1");
    double h[16];
    for (int i = 0; i < 16; i++) h[i] = 1;             // m = 16 is still exact: 2 / 2^16
    CHECK_CLOSE(stats_perm_p(h, 16, &o), 2.0 / 65536, 0, 0);
    // Monte Carlo (m > 16). 30 ones: only 2 of 2^30 patterns reach 30, none of 1000 draws
    // does, so p = (1 + 0) / (1 + 1000). 13 ones and 12 minus ones: every sum of 25 odd terms
    // is odd, |sum| >= 1 always, p = 1001/1001.
    double f[30];
    for (int i = 0; i < 30; i++) f[i] = 1;
    o.n_perm = 1000;
    CHECK_CLOSE(stats_perm_p(f, 30, &o), 1.0 / 1001, 0, 1e-15);
    for (int i = 13; i < 25; i++) f[i] = -1;
    CHECK_CLOSE(stats_perm_p(f, 25, &o), 1.0, 0, 0);
    // 15 up, 7 down (m = 22 > 16): exact 2 sum_{i<=7} C(22,i) / 2^22 = 0.13380; 10000 draws have
    // a standard error of 0.0034, the check allows 0.015
    double g[22];
    for (int i = 0; i < 22; i++) g[i] = i < 15 ? 1 : -1;
    o.n_perm = 10000;
    CHECK_CLOSE(stats_perm_p(g, 22, &o), 0.13380050659179688, 0.015, 0);
    CHECK_CLOSE(metrics_mcnemar_exact_p(15, 7), 0.13380050659179688, 0, 1e-11);
}

static void test_mcnemar_paired(void) {
    unsigned char a[] = {1, 1, 0, 0, 1}, b[] = {0, 1, 1, 0, 0};
    int nb, nc;
    CHECK(stats_mcnemar_paired(a, b, 5, &nb, &nc) == 1.0 && nb == 2 && nc == 1, "b=%d c=%d", nb, nc);
    unsigned char x[10] = {0}, y[10] = {1, 1, 1, 1, 1, 0, 0, 0, 0, 0};
    CHECK_CLOSE(stats_mcnemar_paired(x, y, 10, &nb, &nc), 0.0625, 0, 1e-12);   // (0, 5): 2/32
    CHECK(nb == 0 && nc == 5, "b=%d c=%d", nb, nc);
}

static void test_items_needed(void) {
    // (1.959964 + 0.841621)^2 = 7.848879: sd = delta gives 8 items
    CHECK(stats_items_needed(1.0, 1.0) == 8, "%g", stats_items_needed(1.0, 1.0));
    // sd 0.5, delta 0.02: 7.848879 * 625 = 4905.55 -> 4906
    CHECK(stats_items_needed(0.5, 0.02) == 4906, "%g", stats_items_needed(0.5, 0.02));
    CHECK(stats_items_needed(0.5, -0.02) == 4906, "sign of delta does not matter");
    CHECK(isinf(stats_items_needed(0.5, 0)), "no difference: never");
    CHECK(stats_items_needed(0, 0.1) == 1, "no variance: one item");
    CHECK(isnan(stats_items_needed(-1, 0.1)), "negative sd");
}

static void test_paired(void) {
    struct stats_opts o;
    stats_opts_default(&o);
    // a = {0, .25, .5, 0}, b = {.25, .25, 0, .5}: d = {.25, 0, -.5, .5}, mean .0625;
    // deviations .1875 -.0625 -.5625 .4375, squares sum .546875, sd = sqrt(.546875/3) = .426956;
    // signed sums of (.25, .5, .5) never fall below |.25|: p = 1; delta = 0.2 * mean(a) = .0375:
    // (2.8015852 * .426956 / .0375)^2 = 1017.45 -> 1018
    double a[] = {0, 0.25, 0.5, 0}, b[] = {0.25, 0.25, 0, 0.5};
    struct stats_paired r;
    CHECK(stats_paired(&r, a, b, 4, &o) == 0, "rc");
    CHECK(r.n == 4, "n");
    CHECK_CLOSE(r.mean_a, 0.1875, 0, 1e-15);
    CHECK_CLOSE(r.mean_b, 0.25, 0, 1e-15);
    CHECK_CLOSE(r.diff, 0.0625, 0, 1e-15);
    CHECK_CLOSE(r.sd_diff, 0.42695628191498325, 0, 1e-12);
    CHECK(r.perm_p == 1.0, "p %g", r.perm_p);
    CHECK(r.items_needed == 1018, "%g", r.items_needed);
    CHECK(r.lo <= r.diff && r.diff <= r.hi && r.lo >= -0.5 && r.hi <= 0.5, "[%g, %g]", r.lo, r.hi);
}

int main(void) {
    test_generator();
    test_bootstrap();
    test_permutation();
    test_mcnemar_paired();
    test_items_needed();
    test_paired();
    return test_summary("test_stats");
}
