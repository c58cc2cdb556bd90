// noise.c: per-item flip / hurt / help probabilities over replicas and their per-mode and paired
// statistics (see noise.h; the statistics are stats.h's).
#include "results/noise.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int noise_replica_name(char *out, size_t n, const char *mode, int r, struct err *e) {
    int k = r == 0 ? snprintf(out, n, "%s", mode) : snprintf(out, n, "%s@r%d", mode, r);
    if (k < 0 || (size_t)k >= n) return err_set(e, ERR_RANGE, "replica name too long (%s, replica %d)", mode, r);
    return 0;
}

void noise_item_probs(const struct noise_item *out, const struct noise_preds *p, int m) {
    const int R = p->n_rep, M = p->n_modes;
    for (int i = 0; i < p->n; i++) {
        int fl = 0, hu = 0, he = 0, nu = 0, g = p->gold[i];
        for (int r = 0; r < R; r++) {
            int pm = p->pred[r * M + m][i], pr = p->pred[r * M][i];
            fl += pm != pr;
            hu += pr == g && pm != g;
            he += pr != g && pm == g;
            nu += r > 0 && pm != p->pred[m][i];
        }
        if (out->flip) out->flip[i] = (double)fl / R;
        if (out->hurt) out->hurt[i] = (double)hu / R;
        if (out->help) out->help[i] = (double)he / R;
        if (out->null_flip) out->null_flip[i] = R > 1 ? (double)nu / (R - 1) : 0.0;
    }
}

static void add_num(cJSON *o, const char *k, double v) {
    if (isfinite(v)) cJSON_AddNumberToObject(o, k, v);
    else cJSON_AddNullToObject(o, k);
}

// {"mean", "lo", "hi"} of x[0..n) into o[key]
static int interval_json(cJSON *o, const char *key, const double *x, int n, const struct stats_opts *so) {
    double mean, lo, hi;
    if (stats_bootstrap_mean(&mean, &lo, &hi, x, n, so)) return ERR_NOMEM;
    cJSON *j = cJSON_AddObjectToObject(o, key);
    add_num(j, "mean", mean);
    add_num(j, "lo", lo);
    add_num(j, "hi", hi);
    return 0;
}

// Per-item arrays of every mode: [n_modes][n] each.
struct mode_probs {
    double *flip, *hurt, *help, *null_flip;
};

static int mode_json(cJSON *mj, const struct mode_probs *mp, const struct noise_preds *p, const char *name, int m,
                     const struct stats_opts *so) {
    const int n = p->n;
    const double *f = mp->flip + (size_t)m * n, *h = mp->hurt + (size_t)m * n, *g = mp->help + (size_t)m * n;
    int flips = 0, hurts = 0, helps = 0;
    for (int i = 0; i < n; i++) {
        int r0 = p->pred[m][i], ref = p->pred[0][i];
        flips += r0 != ref;
        hurts += ref == p->gold[i] && r0 != p->gold[i];
        helps += ref != p->gold[i] && r0 == p->gold[i];
    }
    cJSON *o = cJSON_AddObjectToObject(mj, name);
    add_num(o, "pfr", n ? (double)flips / n : NAN);
    cJSON_AddNumberToObject(o, "hurts", hurts);
    cJSON_AddNumberToObject(o, "helps", helps);
    int rc = interval_json(o, "flip", f, n, so) | interval_json(o, "hurt", h, n, so) | interval_json(o, "help", g, n, so);
    if (p->n_rep > 1) rc |= interval_json(o, "null_flip", mp->null_flip + (size_t)m * n, n, so);
    else cJSON_AddNullToObject(o, "null_flip");
    return rc;
}

// One paired statistic of per-item values a, b (modes ma < mb) into o[key].
static int pair_stat(cJSON *o, const char *key, const double *a, const double *b, int n, int n_rep,
                     const struct stats_opts *so) {
    struct stats_paired s;
    if (stats_paired(&s, a, b, n, so)) return ERR_NOMEM;
    cJSON *j = cJSON_AddObjectToObject(o, key);
    add_num(j, "a", s.mean_a);
    add_num(j, "b", s.mean_b);
    add_num(j, "diff", s.diff);
    add_num(j, "lo", s.lo);
    add_num(j, "hi", s.hi);
    if (n_rep == 1) { // single run: indicators in {0, 1}, the exact McNemar test
        unsigned char *ia = malloc((size_t)(n ? n : 1)), *ib = malloc((size_t)(n ? n : 1));
        if (!ia || !ib) { free(ia); free(ib); return ERR_NOMEM; }
        for (int i = 0; i < n; i++) { ia[i] = a[i] != 0; ib[i] = b[i] != 0; }
        add_num(j, "p", stats_mcnemar_paired(ia, ib, n, NULL, NULL));
        cJSON_AddStringToObject(j, "test", "mcnemar");
        free(ia); free(ib);
    } else {
        add_num(j, "p", s.perm_p);
        cJSON_AddStringToObject(j, "test", "permutation");
    }
    add_num(j, "items_needed", s.items_needed);
    return 0;
}

static int pairs_json(cJSON *root, const struct mode_probs *mp, const struct noise_preds *p, char *const *modes,
                      const struct stats_opts *so) {
    const size_t n = (size_t)p->n;
    cJSON *pa = cJSON_AddArrayToObject(root, "pairs");
    int rc = 0;
    for (int a = 1; a < p->n_modes && !rc; a++)
        for (int b = a + 1; b < p->n_modes && !rc; b++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToArray(pa, o);
            cJSON_AddStringToObject(o, "a", modes[a]);
            cJSON_AddStringToObject(o, "b", modes[b]);
            rc = pair_stat(o, "flip", mp->flip + a * n, mp->flip + b * n, p->n, p->n_rep, so);
            if (!rc) rc = pair_stat(o, "hurt", mp->hurt + a * n, mp->hurt + b * n, p->n, p->n_rep, so);
        }
    return rc;
}

int noise_json(cJSON **out, const struct noise_preds *p, char *const *modes, const struct stats_opts *o, struct err *e) {
    *out = NULL;
    size_t sz = (size_t)p->n * (size_t)p->n_modes + 1;
    struct mode_probs mp = {calloc(sz, sizeof(double)), calloc(sz, sizeof(double)), calloc(sz, sizeof(double)),
                            calloc(sz, sizeof(double))};
    cJSON *root = cJSON_CreateObject();
    int rc = mp.flip && mp.hurt && mp.help && mp.null_flip && root ? 0 : ERR_NOMEM;
    for (int m = 0; m < p->n_modes && !rc; m++) {
        size_t off = (size_t)m * p->n;
        struct noise_item it = {mp.flip + off, mp.hurt + off, mp.help + off, mp.null_flip + off};
        noise_item_probs(&it, p, m);
    }
    if (!rc) {
        cJSON_AddNumberToObject(root, "n", p->n);
        cJSON_AddNumberToObject(root, "replicas", p->n_rep - 1);
        cJSON *mj = cJSON_AddObjectToObject(root, "modes");
        for (int m = 0; m < p->n_modes && !rc; m++) rc = mode_json(mj, &mp, p, modes[m], m, o);
    }
    if (!rc) rc = pairs_json(root, &mp, p, modes, o);
    free(mp.flip); free(mp.hurt); free(mp.help); free(mp.null_flip);
    if (rc) { cJSON_Delete(root); return err_set(e, ERR_NOMEM, "noise statistics: out of memory"); }
    *out = root;
    return 0;
}
