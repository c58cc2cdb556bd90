// report_noise.c: report.md's "How much is noise" section (see report_noise.h).
#include "results/report_noise.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "results/metrics.h"

static const cJSON *jget(const cJSON *o, const char *k) { return o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL; }
static double jnum(const cJSON *o, const char *k) {
    const cJSON *x = jget(o, k);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

// the columns: every task with a "noise" object, then the pooled one when there are several
#define MAX_COLS 65
struct cols {
    int n;
    const char *name[MAX_COLS];
    const cJSON *noise[MAX_COLS];
};

static void find_cols(struct cols *c, const cJSON *sum) {
    c->n = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, jget(sum, "tasks")) {
        const cJSON *nz = jget(t, "noise");
        if (nz && c->n < MAX_COLS - 1) { c->name[c->n] = t->string; c->noise[c->n++] = nz; }
    }
    const cJSON *pooled = jget(jget(sum, "noise"), "pooled");
    if (c->n > 1 && pooled) { c->name[c->n] = "all tasks"; c->noise[c->n++] = pooled; }
}

// "mean [lo, hi]" in percent. The bootstrap interval of a mean that is 0 on every item is the
// point [0, 0] (every resample is 0); such a cell carries the Wilson 95% interval of 0 events in
// its items instead (no item ever moved: at most that share of items would move),
// marked "W" (docs/design/statistics.md).
static void pct_interval(char *b, size_t n, const cJSON *iv, int items) {
    double m = jnum(iv, "mean"), lo = jnum(iv, "lo"), hi = jnum(iv, "hi");
    if (isfinite(m) && m == 0 && hi == 0 && items > 0) {
        metrics_wilson(0, items, METRICS_Z95, &lo, &hi);
        snprintf(b, n, "0.00 [0.00, %.2f] W", 100 * hi);
    } else if (isfinite(m)) snprintf(b, n, "%.2f [%.2f, %.2f]", 100 * m, 100 * lo, 100 * hi);
    else snprintf(b, n, "-");
}

// "18.60 [15.20, 22.10] (PFR 18.60)" from a mode object of "noise" (percent; "-" when missing)
static void flip_cell(char *b, size_t n, const cJSON *mode, int items) {
    char iv[96];
    pct_interval(iv, sizeof iv, jget(mode, "flip"), items);
    double pfr = jnum(mode, "pfr");
    if (isfinite(pfr)) snprintf(b, n, "%s (PFR %.2f)", iv, 100 * pfr);
    else snprintf(b, n, "%s", iv);
}

static int header(struct results_buf *o, const char *title, const char *first, const struct cols *c) {
    int rc = results_buf_printf(o, "#### %s\n\n| %s |", title, first);
    for (int k = 0; k < c->n; k++) rc |= results_buf_printf(o, " %s (%d) |", c->name[k], (int)jnum(c->noise[k], "n"));
    rc |= results_buf_printf(o, "\n|---|");
    for (int k = 0; k < c->n; k++) rc |= results_buf_printf(o, "---:|");
    return rc | results_buf_printf(o, "\n");
}

enum cell_kind { CELL_NULL, CELL_FLIP, CELL_HURT };

// one row per mode (from m0 on) of a run with replicas: the null flip rate, the flip or the hurt probability
static int mode_table(struct results_buf *o, const struct cols *c, const struct run_rec *run, const cJSON *modes,
                      enum cell_kind kind) {
    static const char *const titles[] = {
        "Null flip rate (% of items whose prediction moves between a mode's replica 0 and replica r; mean over "
        "r = 1..K and items [95% bootstrap interval])",
        "Flip probability vs the reference (% per item over replicas 0..K, mean over items [95%]; replica 0's PFR)",
        "Hurt probability vs the reference (% per item over replicas 0..K, mean over items [95%]; replica 0's Hurts)"};
    const int m0 = kind == CELL_NULL ? 0 : 1;
    int rc = header(o, titles[kind], "mode", c);
    for (int m = m0; m < cJSON_GetArraySize(modes); m++) {
        const char *name = cJSON_GetArrayItem(modes, m)->valuestring;
        rc |= results_buf_printf(o, "| %s |", run_rec_display(run, name));
        for (int k = 0; k < c->n; k++) {
            const cJSON *mj = jget(jget(c->noise[k], "modes"), name);
            char b[160];
            const int items = (int)jnum(c->noise[k], "n");
            if (kind == CELL_FLIP) flip_cell(b, sizeof b, mj, items);
            else if (kind == CELL_NULL) pct_interval(b, sizeof b, jget(mj, "null_flip"), items);
            else {
                char iv[96];
                pct_interval(iv, sizeof iv, jget(mj, "hurt"), items);
                snprintf(b, sizeof b, "%s (%d)", iv, (int)jnum(mj, "hurts"));
            }
            rc |= results_buf_printf(o, " %s |", b);
        }
        rc |= results_buf_printf(o, "\n");
    }
    return rc | results_buf_printf(o, "\n");
}

static int pair_table(struct results_buf *o, const struct cols *c, const struct run_rec *run, const char *key, const char *what) {
    char title[256];
    snprintf(title, sizeof title, "Paired differences of the %s probability (B - A, percentage points [95%%], p; "
             "items needed to detect 20%% less than A's)", what);
    int rc = header(o, title, "B - A", c);
    const cJSON *pr;
    cJSON_ArrayForEach(pr, jget(c->noise[0], "pairs")) {
        const char *a = jget(pr, "a")->valuestring, *b = jget(pr, "b")->valuestring;
        rc |= results_buf_printf(o, "| %s - %s |", run_rec_display(run, b), run_rec_display(run, a));
        for (int k = 0; k < c->n; k++) {
            const cJSON *q = NULL, *x;
            cJSON_ArrayForEach(x, jget(c->noise[k], "pairs"))
                if (!strcmp(jget(x, "a")->valuestring, a) && !strcmp(jget(x, "b")->valuestring, b)) q = jget(x, key);
            double d = jnum(q, "diff"), need = jnum(q, "items_needed");
            char nb[32];
            if (isfinite(need)) snprintf(nb, sizeof nb, "%.0f", need);
            else snprintf(nb, sizeof nb, "-");
            if (isfinite(d))
                rc |= results_buf_printf(o, " %+.2f [%+.2f, %+.2f] p=%.2g, n=%s |", 100 * d, 100 * jnum(q, "lo"),
                                         100 * jnum(q, "hi"), jnum(q, "p"), nb);
            else rc |= results_buf_printf(o, " - |");
        }
        rc |= results_buf_printf(o, "\n");
    }
    return rc | results_buf_printf(o, "\n");
}

int report_noise_md(struct results_buf *o, const cJSON *sum, const struct run_rec *run) {
    const cJSON *nz = jget(sum, "noise"), *modes = jget(sum, "modes");
    const int n_modes = cJSON_GetArraySize(modes);
    struct cols c;
    find_cols(&c, sum);
    const cJSON *rep = jget(nz, "replicas");
    const int K = cJSON_IsObject(rep) ? (int)jnum(rep, "k") : 0;
    if (!nz || !c.n || n_modes < 2 || (K == 0 && n_modes < 3)) return 0;
    int rc = results_buf_printf(o, "### How much is noise\n\n");
    if (K > 0) {
        const double rev = jnum(rep, "revision"); // absent: revision 1
        rc |= results_buf_printf(o, "Replicas: %d beside the unperturbed run (replica 0), each under the null perturbation "
                                 "`%s` revision %.0f (seed %.0f): a change the model's function does not notice, so whatever "
                                 "moves between replicas is noise. ", K, cJSON_IsString(jget(rep, "perturbation")) ?
                                 jget(rep, "perturbation")->valuestring : "?", isnan(rev) ? 1.0 : rev, jnum(rep, "seed"));
    }
    else
        rc |= results_buf_printf(o, "A single run (no `--replicas`): each mode's flip rate and hurts are in the tables "
                                 "above (Wilson intervals); here the paired differences between modes, with intervals over "
                                 "items and exact McNemar tests on the two modes' flip (or hurt) indicators. ");
    rc |= results_buf_printf(o, "Intervals: percentile bootstrap over items (%.0f resamples, seed %.0f); p: %s over "
                             "items; items needed: a paired test at p < 0.05 with 80%% power, from the observed "
                             "per-item variance.\n\n", jnum(nz, "bootstrap_resamples"), jnum(nz, "bootstrap_seed"),
                             K > 0 ? "paired sign-flip permutation test" : "exact McNemar");
    // without replicas the flip and hurt rates are the flip and hurts tables' counts: not repeated
    if (K > 0) {
        rc |= mode_table(o, &c, run, modes, CELL_NULL);
        rc |= mode_table(o, &c, run, modes, CELL_FLIP);
        rc |= mode_table(o, &c, run, modes, CELL_HURT);
    }
    if (n_modes >= 3 && n_modes <= REPORT_NOISE_MAX_MODES) {
        rc |= pair_table(o, &c, run, "flip", "flip");
        rc |= pair_table(o, &c, run, "hurt", "hurt");
    } else if (n_modes > REPORT_NOISE_MAX_MODES)
        rc |= results_buf_printf(o, "(%d modes: the paired differences of every pair are in summary.json.)\n\n", n_modes);
    return rc;
}
