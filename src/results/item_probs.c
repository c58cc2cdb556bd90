// item_probs.c: per-item flip and hurt probabilities of one mode of a run directory (see
// item_probs.h).
#include "results/item_probs.h"

#include <stdlib.h>
#include <string.h>

#include "results/noise.h"
#include "results/results.h"

void item_probs_free(struct item_probs *p) {
    for (int i = 0; p->ids && i < p->n; i++) free(p->ids[i]);
    free(p->ids);
    free(p->flip);
    free(p->hurt);
    memset(p, 0, sizeof *p);
}

static void free_samples(struct results_sample *s, int n) {
    for (int i = 0; s && i < n; i++) results_sample_free(&s[i]);
    free(s);
}

// file k = replica k/2 of the reference (even k) or of mode (odd k)
struct task_ref { const char *dir, *task; int want; }; // want < 0: any item count
static int read_file(struct results_sample **s, int *n, const struct task_ref *tr, const char *mode, int r, struct err *e) {
    const char *dir = tr->dir, *task = tr->task;
    const int want = tr->want;
    char name[512], path[4096];
    int rc = noise_replica_name(name, sizeof name, mode, r, e);
    if (!rc) rc = results_samples_path(path, sizeof path, dir, task, name, e);
    if (!rc) rc = results_samples_read(path, s, n, e);
    if (!rc && want >= 0 && *n != want)
        rc = err_set(e, ERR_MISMATCH, "%s: %d items, but run.json says task %s has %d", path, *n, task, want);
    return rc;
}

// the predictions of every file into a noise_preds of 2 modes (reference, mode), items kept
static int fill(struct item_probs *out, struct results_sample **s, int n_files, int n, struct err *e) {
    int *gold = malloc(sizeof(int) * (size_t)(n + 1)), **pred = calloc((size_t)n_files, sizeof *pred);
    int rc = gold && pred ? 0 : ERR_NOMEM, kept = 0;
    for (int k = 0; !rc && k < n_files; k++) rc = (pred[k] = malloc(sizeof(int) * (size_t)(n + 1))) ? 0 : ERR_NOMEM;
    out->ids = calloc((size_t)(n + 1), sizeof *out->ids);
    out->flip = malloc(sizeof(double) * (size_t)(n + 1));
    out->hurt = malloc(sizeof(double) * (size_t)(n + 1));
    if (!out->ids || !out->flip || !out->hurt) rc = ERR_NOMEM;
    for (int i = 0; !rc && i < n; i++) {
        int bad = 0;
        for (int k = 0; k < n_files; k++) {
            bad |= s[k][i].nonfinite;
            if (strcmp(s[k][i].id, s[0][i].id) || s[k][i].gold != s[0][i].gold)
                rc = err_set(e, ERR_MISMATCH, "item %d ('%s') differs between the replicas' samples files", i, s[0][i].id);
        }
        if (bad || rc) continue;
        gold[kept] = s[0][i].gold;
        for (int k = 0; k < n_files; k++) pred[k][kept] = s[k][i].pred;
        if (!(out->ids[kept] = str_dup(s[0][i].id))) rc = ERR_NOMEM;
        kept++;
    }
    out->n = kept;
    if (!rc) {
        struct noise_preds p = {kept, 2, out->n_rep, gold, (const int *const *)pred};
        struct noise_item it = {out->flip, out->hurt, NULL, NULL};
        noise_item_probs(&it, &p, 1);
    }
    for (int k = 0; pred && k < n_files; k++) free(pred[k]);
    free(pred);
    free(gold);
    if (rc == ERR_NOMEM) rc = err_set(e, ERR_NOMEM, "item probabilities: out of memory");
    return rc;
}

int item_probs_load(struct item_probs *out, const char *dir, const struct run_rec *run, const char *task, const char *mode,
                    struct err *e) {
    memset(out, 0, sizeof *out);
    const int K = run->replicas;
    const struct run_rec_task *t = run_rec_task(run, task);
    const int want = t ? t->items : -1;
    int rc = 0;
    out->n_rep = K + 1;
    const int n_files = 2 * (K + 1);
    struct results_sample **s = calloc((size_t)n_files, sizeof *s);
    int *ns = calloc((size_t)n_files, sizeof *ns);
    if (!s || !ns) rc = err_set(e, ERR_NOMEM, "item probabilities: out of memory");
    // file order as noise_preds wants it: pred[r * 2 + m], m = 0 reference, 1 mode
    for (int k = 0; !rc && k < n_files; k++) {
        const struct task_ref tr = {dir, task, want};
        rc = read_file(&s[k], &ns[k], &tr, k % 2 ? mode : run->modes[0].name, k / 2, e);
        if (!rc && ns[k] != ns[0])
            rc = err_set(e, ERR_MISMATCH, "task %s: %d items in one samples file, %d in another", task, ns[k], ns[0]);
    }
    if (!rc) rc = fill(out, s, n_files, ns[0], e);
    for (int k = 0; s && k < n_files; k++) free_samples(s[k], ns[k]);
    free(s);
    free(ns);
    if (rc) item_probs_free(out);
    return rc;
}
