// pt_noise.c: the replicas' flip / hurt / help probabilities beside the counts of the paper's
// Tables 3, 6, 7 and 9 (see pt_internal.h). Every number is summary.json's
// tasks.<task>.noise.modes.<mode>.{flip,hurt,help} = {mean, lo, hi}: nothing is recomputed.
#include <math.h>
#include <stdio.h>

#include "results/pt_internal.h"

int pt_replicas(const struct pt_ctx *c, int r) {
    const cJSON *rep = pt_get(pt_get(c->in->sum[r], "noise"), "replicas");
    double k = cJSON_IsObject(rep) ? pt_num(rep, "k") : 0;
    return isfinite(k) && k > 0 ? (int)k : 0;
}

int pt_shown_replicas(const struct pt_ctx *c) {
    int k = 0;
    for (int i = 0; i < c->shown.n; i++) {
        int q = pt_replicas(c, c->shown.r[i]);
        if (q && k && q != k) return -1;
        if (q) k = q;
    }
    return k;
}

void pt_prob_cell(char *b, size_t n, const struct pt_ctx *c, int r, const char *task, const char *mode, enum pt_prob what) {
    static const char *const key[3] = {"flip", "hurt", "help"};
    const cJSON *nz = pt_get(pt_task(c, r, task), "noise");
    const cJSON *iv = pt_get(pt_get(pt_get(nz, "modes"), mode), key[what]);
    double m = pt_num(iv, "mean"), lo = pt_num(iv, "lo"), hi = pt_num(iv, "hi"), k = pt_num(nz, "replicas");
    // a task without replicas (or a run without them in a table that has the columns): no probability
    if (!(k > 0) || !isfinite(m) || !isfinite(lo) || !isfinite(hi)) { snprintf(b, n, "-"); return; }
    snprintf(b, n, "%.2f%% [%.2f, %.2f]", 100 * m, 100 * lo, 100 * hi);
}

int pt_prob_note(struct grid *g, int k) {
    char kk[64];
    if (k > 0) snprintf(kk, sizeof kk, "K = %d", k);
    else snprintf(kk, sizeof kk, "K as each run's run.json `replicas` records");
    size_t u = strlen(g->note);
    int w = snprintf(g->note + u, sizeof g->note - u,
                     "%sP(...) columns (`run --replicas K`, %s): per item, the fraction of the K + 1 runs - the "
                     "unperturbed one and K null replicas - in which the mode flips (hurts, helps) against BF16 of the "
                     "same replica; mean over items in %% [95%% bootstrap interval over items]. The counts beside them "
                     "are the unperturbed run's.",
                     u ? " " : "", kk);
    return w < 0 || (size_t)w >= sizeof g->note - u ? ERR_RANGE : 0;
}
