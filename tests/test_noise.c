// test_noise.c: per-item flip / hurt / help probabilities over replicas and summary.json's
// "noise" object on a case worked by hand (4 items, a reference and two modes, 3 runs each),
// and the single-run (K = 0) form with its McNemar p.
#include <math.h>
#include <stdlib.h>

#include "results/noise.h"
#include "test.h"

static const cJSON *jo(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }
static double jnum(const cJSON *o, const char *k) {
    const cJSON *x = jo(o, k);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

// gold {0,1,0,1}; pred[r * 3 + m], m = ref, A, B
static const int gold4[4] = {0, 1, 0, 1};
static const int P[9][4] = {
    {0, 1, 1, 0}, {0, 0, 1, 1}, {1, 1, 1, 0},   // replica 0: ref, A, B
    {0, 1, 1, 1}, {0, 1, 0, 1}, {1, 1, 1, 1},   // replica 1
    {0, 1, 0, 0}, {1, 0, 1, 0}, {0, 1, 0, 0},   // replica 2
};

static void test_item_probs(void) {
    const int *pred[9];
    for (int k = 0; k < 9; k++) pred[k] = P[k];
    struct noise_preds p = {4, 3, 3, gold4, pred};
    double f[4], h[4], g[4], z[4];
    struct noise_item it = {f, h, g, z};
    // A vs the same replica's reference: r0 flips items 1,3; r1 item 2; r2 items 0,1,2.
    // Hurts (ref right, A wrong): r0 item 1; r2 items 0,1,2. Helps: r0 item 3, r1 item 2.
    // A's own replicas against replica 0 ({0,0,1,1}): r1 differs at 1,2; r2 at 0,3.
    noise_item_probs(&it, &p, 1);
    const double fA[4] = {1. / 3, 2. / 3, 2. / 3, 1. / 3}, hA[4] = {1. / 3, 2. / 3, 1. / 3, 0};
    const double gA[4] = {0, 0, 1. / 3, 1. / 3}, zA[4] = {.5, .5, .5, .5};
    for (int i = 0; i < 4; i++) {
        CHECK_CLOSE(f[i], fA[i], 1e-15, 0);
        CHECK_CLOSE(h[i], hA[i], 1e-15, 0);
        CHECK_CLOSE(g[i], gA[i], 1e-15, 0);
        CHECK_CLOSE(z[i], zA[i], 1e-15, 0);
    }
    // the reference never flips against itself; its replicas move at items 3 (r1) and 2 (r2)
    noise_item_probs(&it, &p, 0);
    const double zR[4] = {0, 0, .5, .5};
    for (int i = 0; i < 4; i++) CHECK(f[i] == 0 && h[i] == 0 && g[i] == 0 && z[i] == zR[i], "ref item %d", i);
    struct noise_item only = {f, NULL, NULL, NULL};   // NULL arrays are not computed
    noise_item_probs(&only, &p, 2);
    CHECK(f[0] == 2. / 3 && f[1] == 0 && f[2] == 0 && f[3] == 0, "B flips %g %g %g %g", f[0], f[1], f[2], f[3]);
}

// noise_json of modes ref, A, B with the default options
static cJSON *noise_of(const struct noise_preds *p) {
    char *modes[3] = {"ref", "A", "B"};
    struct stats_opts o;
    stats_opts_default(&o);
    cJSON *j = NULL;
    struct err e = {0};
    CHECK(noise_json(&j, p, modes, &o, &e) == 0, "%s", e.msg);
    return j;
}

static void test_json(void) {
    const int *pred[9];
    for (int k = 0; k < 9; k++) pred[k] = P[k];
    struct noise_preds p = {4, 3, 3, gold4, pred};
    cJSON *j = noise_of(&p);
    CHECK(jnum(j, "n") == 4 && jnum(j, "replicas") == 2, "n, replicas");
    const cJSON *A = jo(jo(j, "modes"), "A"), *B = jo(jo(j, "modes"), "B");
    // replica 0 alone: A flips 2 of 4 (1 hurt, 1 help), B flips 1 (1 hurt)
    CHECK(jnum(A, "pfr") == 0.5 && jnum(A, "hurts") == 1 && jnum(A, "helps") == 1, "A single run");
    CHECK(jnum(B, "pfr") == 0.25 && jnum(B, "hurts") == 1 && jnum(B, "helps") == 0, "B single run");
    CHECK_CLOSE(jnum(jo(A, "flip"), "mean"), 0.5, 1e-15, 0);        // (1+2+2+1)/3/4
    CHECK_CLOSE(jnum(jo(A, "hurt"), "mean"), 1. / 3, 1e-15, 0);      // (1+2+1+0)/3/4
    CHECK_CLOSE(jnum(jo(A, "null_flip"), "mean"), 0.5, 1e-15, 0);
    CHECK_CLOSE(jnum(jo(jo(jo(j, "modes"), "ref"), "null_flip"), "mean"), 0.25, 1e-15, 0);
    const cJSON *fl = jo(A, "flip");
    CHECK(jnum(fl, "lo") <= 0.5 && jnum(fl, "hi") >= 0.5 && jnum(fl, "lo") >= 1. / 3 && jnum(fl, "hi") <= 2. / 3, "interval");
    const cJSON *pr = cJSON_GetArrayItem(jo(j, "pairs"), 0);
    CHECK(cJSON_GetArraySize(jo(j, "pairs")) == 1, "one pair of non-reference modes");
    const cJSON *pf = jo(pr, "flip"), *ph = jo(pr, "hurt");
    // flip_B - flip_A = {1/3, -2/3, -2/3, -1/3}: mean -1/3; in thirds the signed sums of
    // {1,2,2,1} reach |4| in 6 of 16 patterns
    CHECK_CLOSE(jnum(pf, "diff"), -1. / 3, 1e-15, 0);
    CHECK_CLOSE(jnum(pf, "p"), 6. / 16, 0, 1e-12);
    CHECK(!strcmp(jo(pf, "test")->valuestring, "permutation"), "K > 0 uses the permutation test");
    // hurt_B - hurt_A = {1/3, -2/3, -1/3, 0}: mean -1/6; {1,2,1} reach |2| in 6 of 8; sd =
    // sqrt(5/27) = .430331, delta = .2 * 1/3: (2.8015852 * .430331 / .0666667)^2 = 327.04 -> 328
    CHECK_CLOSE(jnum(ph, "diff"), -1. / 6, 1e-15, 0);
    CHECK_CLOSE(jnum(ph, "p"), 0.75, 0, 1e-12);
    CHECK(jnum(ph, "items_needed") == 328, "items needed %g", jnum(ph, "items_needed"));
    cJSON_Delete(j);
}

static void test_single_run(void) {
    // K = 0, 10 items all gold 0, the reference right everywhere; A wrong on items 0-5, B never:
    // A's flips and hurts are 6 discordant pairs against none, McNemar p = 2 / 2^6
    int ref[10] = {0}, a[10] = {1, 1, 1, 1, 1, 1}, b[10] = {0}, gold[10] = {0};
    const int *pred[3] = {ref, a, b};
    struct noise_preds p = {10, 3, 1, gold, pred};
    cJSON *j = noise_of(&p);
    const cJSON *pr = cJSON_GetArrayItem(jo(j, "pairs"), 0);
    CHECK_CLOSE(jnum(jo(pr, "flip"), "p"), 1.0 / 32, 0, 1e-12);
    CHECK_CLOSE(jnum(jo(pr, "hurt"), "p"), 1.0 / 32, 0, 1e-12);
    CHECK_CLOSE(jnum(jo(pr, "flip"), "diff"), -0.6, 1e-15, 0);
    CHECK(!strcmp(jo(jo(pr, "flip"), "test")->valuestring, "mcnemar"), "K = 0 uses McNemar");
    CHECK(cJSON_IsNull(jo(jo(jo(j, "modes"), "A"), "null_flip")), "no null flip rate without replicas");
    CHECK(jnum(j, "replicas") == 0, "replicas 0");
    cJSON_Delete(j);
    char name[32];
    struct err e = {0};
    CHECK(noise_replica_name(name, sizeof name, "direct+qmean", 3, &e) == 0 && !strcmp(name, "direct+qmean@r3"), "%s", name);
    CHECK(noise_replica_name(name, sizeof name, "bf16", 0, &e) == 0 && !strcmp(name, "bf16"), "%s", name);
    CHECK(noise_replica_name(name, 8, "direct+qmean", 3, &e) == ERR_RANGE, "too long");
}

int main(void) {
    test_item_probs();
    test_json();
    test_single_run();
    return test_summary("test_noise");
}
