// summary.c: summary.json of a run directory (spec/tasks.md section 3), computed from run.json
// and the samples files alone, with the replicas' noise statistics (results.h).
#include "results/results.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "base/sha256.h"
#include "results/metrics.h"
#include "results/noise.h"
#include "results/run_rec.h"
#include "results/stamp.h"

// ---- summary (spec/tasks.md section 3) ----

// percent p of v (sorted in place; nearest rank, metrics_percentile)
static double pctl(double *v, int n, double p) { return metrics_percentile(v, n, p / 100.0); }

// Loaded samples of one task under every mode.
struct task_samples {
    int n;                        // items (equal across modes)
    struct results_sample **s;    // [n_modes][n]
};

static void task_samples_free(struct task_samples *t, int n_modes) {
    if (!t->s) return;
    for (int m = 0; m < n_modes; m++) {
        if (!t->s[m]) continue;
        for (int i = 0; i < t->n; i++) results_sample_free(&t->s[m][i]);
        free(t->s[m]);
    }
    free(t->s);
    t->s = NULL;
}

struct run_ref {
    const char *dir;
    const struct run_rec *run; // its run.json
};

static int load_task(struct task_samples *t, const struct run_ref *rr, const char *task, char *const *modes, int n_modes, int want,
                     struct err *e) {
    const char *dir = rr->dir;
    memset(t, 0, sizeof *t);
    t->s = calloc((size_t)n_modes, sizeof *t->s);
    if (!t->s) return err_set(e, ERR_NOMEM, "summary: out of memory");
    for (int m = 0; m < n_modes; m++) {
        char path[4096];
        int n, rc = results_samples_path(path, sizeof path, dir, task, modes[m], e);
        if (!rc) rc = results_samples_read_run(dir, rr->run, task, modes[m], &t->s[m], &n, e);
        if (rc) return rc;
        char cmd[1200], fix[1400] = "finish it with run --resume";
        if (results_resume_command(cmd, sizeof cmd, rr->run->json) == 0)
            snprintf(fix, sizeof fix, "`%s` re-scores it%s", cmd, n > want ? " once the file is removed" : "");
        const int ref = m == 0 ? want : t->n; // the count this file must hold (-1: any)
        if (ref >= 0 && n != ref) {
            // free this mode's n samples now: task_samples_free frees t->n per mode (it read past a
            // shorter array - a heap overflow - when a killed run left fewer items in one mode)
            for (int i = 0; i < n; i++) results_sample_free(&t->s[m][i]);
            free(t->s[m]);
            t->s[m] = NULL;
            if (m == 0) // every mode cut alike (a kill at a frame boundary)
                return err_set(e, ERR_MISMATCH, "%s: %d items, but run.json says the task has %d (an interrupted run?): %s",
                               path, n, want, fix);
            return err_set(e, ERR_MISMATCH, "%s: %d items, but the reference mode '%s' has %d (an interrupted run?): %s", path,
                           n, modes[0], t->n, fix);
        }
        if (m == 0) t->n = n;
        for (int i = 0; m > 0 && i < n; i++)
            if (strcmp(t->s[m][i].id, t->s[0][i].id) || t->s[m][i].gold != t->s[0][i].gold || t->s[m][i].n_choices != t->s[0][i].n_choices)
                return err_set(e, ERR_MISMATCH, "%s: item %d ('%s') differs from the reference's ('%s') in id, gold or choices",
                               path, i, t->s[m][i].id, t->s[0][i].id);
    }
    return 0;
}

// Items whose log-likelihood was not finite in some mode (run --nonfinite count) leave every
// statistic of the task in every mode, so comparisons stay paired; o["nonfinite"] records how
// many were left out and how many each mode had (only when there are any: a normal run's
// summary.json is unchanged).
static void drop_nonfinite(struct task_samples *t, char *const *modes, int n_modes, cJSON *o) {
    int kept = 0, excluded = 0;
    int *per = calloc((size_t)n_modes, sizeof *per);
    for (int i = 0; i < t->n; i++) {
        int bad = 0;
        for (int m = 0; m < n_modes; m++) {
            bad |= t->s[m][i].nonfinite;
            if (per) per[m] += t->s[m][i].nonfinite;
        }
        for (int m = 0; m < n_modes; m++) {
            if (bad) results_sample_free(&t->s[m][i]);
            else t->s[m][kept] = t->s[m][i];
        }
        kept += !bad;
        excluded += bad;
    }
    t->n = kept;
    if (excluded && o) {
        cJSON *nf = cJSON_AddObjectToObject(o, "nonfinite");
        cJSON_AddNumberToObject(nf, "excluded", excluded);
        cJSON *mj = cJSON_AddObjectToObject(nf, "modes");
        for (int m = 0; per && m < n_modes; m++) cJSON_AddNumberToObject(mj, modes[m], per[m]);
    }
    free(per);
}

static cJSON *compare_json(const struct metrics_compare *c) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "n", c->n);
    cJSON_AddNumberToObject(o, "flips", c->flips);
    cJSON_AddNumberToObject(o, "pfr", c->pfr);
    cJSON_AddNumberToObject(o, "pfr_lo", c->pfr_lo);
    cJSON_AddNumberToObject(o, "pfr_hi", c->pfr_hi);
    cJSON_AddNumberToObject(o, "hurts", c->hurts);
    cJSON_AddNumberToObject(o, "helps", c->helps);
    cJSON_AddNumberToObject(o, "d_acc", c->d_acc);
    cJSON_AddNumberToObject(o, "mcnemar_p", c->mcnemar_p);
    cJSON_AddNumberToObject(o, "acc_ref", c->acc_ref);
    cJSON_AddNumberToObject(o, "acc", c->acc_q);
    return o;
}

static void add_num(cJSON *o, const char *k, double v) {
    if (isfinite(v)) cJSON_AddNumberToObject(o, k, v);
    else cJSON_AddNullToObject(o, k);
}

// Token level vs the reference: KL(ref || mode) over every scored position (mean and
// percentiles) and the same-top-1 rate, into o["token"].
static int token_json(cJSON *o, const struct task_samples *t, int m, struct err *e) {
    int n = t->n, nk = 0, same = 0;
    for (int i = 0; i < n; i++) { nk += t->s[m][i].n_kl; same += t->s[m][i].top1_same; }
    double *kl = malloc(sizeof *kl * (size_t)(nk ? nk : 1));
    if (!kl) return err_set(e, ERR_NOMEM, "summary: out of memory");
    int q = 0;
    double sum = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < t->s[m][i].n_kl; j++) { kl[q++] = t->s[m][i].kl[j]; sum += t->s[m][i].kl[j]; }
    cJSON *tk = cJSON_AddObjectToObject(o, "token");
    cJSON_AddNumberToObject(tk, "n_pos", nk);
    add_num(tk, "kl_mean", nk ? sum / nk : NAN);
    add_num(tk, "kl_p50", nk ? pctl(kl, nk, 50) : NAN);
    add_num(tk, "kl_p90", nk ? pctl(kl, nk, 90) : NAN);
    add_num(tk, "kl_p99", nk ? pctl(kl, nk, 99) : NAN);
    add_num(tk, "kl_max", nk ? pctl(kl, nk, 100) : NAN);
    add_num(tk, "same_top1", nk ? (double)same / nk : NAN);
    free(kl);
    return 0;
}

// Perplexity task (one sample per window): token perplexity exp(-sum ll / tokens) and bits
// per byte -sum ll / (ln 2 * bytes) per mode; vs the reference the perplexity change and the
// token-level statistics.
static int summarize_ppl(cJSON *tj, const struct task_samples *t, char *const *modes, int n_modes, struct err *e) {
    cJSON_AddNumberToObject(tj, "n", t->n);
    cJSON *mj = cJSON_AddObjectToObject(tj, "modes");
    double ppl_ref = NAN;
    for (int m = 0; m < n_modes; m++) {
        double ll = 0;
        int64_t tokens = 0, bytes = 0;
        for (int i = 0; i < t->n; i++) { ll += t->s[m][i].ll[0]; tokens += t->s[m][i].n_tok[0]; bytes += t->s[m][i].n_chars[0]; }
        double ppl = tokens ? exp(-ll / (double)tokens) : NAN;
        if (m == 0) ppl_ref = ppl;
        cJSON *o = cJSON_AddObjectToObject(mj, modes[m]);
        cJSON_AddNumberToObject(o, "tokens", (double)tokens);
        cJSON_AddNumberToObject(o, "bytes", (double)bytes);
        add_num(o, "loglik", ll);
        add_num(o, "ppl", ppl);
        add_num(o, "bits_per_byte", bytes ? -ll / (log(2.0) * (double)bytes) : NAN);
    }
    cJSON *vj = cJSON_AddObjectToObject(tj, "vs_reference");
    for (int m = 1; m < n_modes; m++) {
        cJSON *o = cJSON_AddObjectToObject(vj, modes[m]);
        const cJSON *x = cJSON_GetObjectItem(cJSON_GetObjectItem(mj, modes[m]), "ppl");
        add_num(o, "d_ppl", cJSON_IsNumber(x) ? x->valuedouble - ppl_ref : NAN);
        int rc = token_json(o, t, m, e);
        if (rc) return rc;
    }
    return 0;
}

// Where summarize_task leaves a task's accuracy and length-normalized accuracy per mode.
struct mode_acc {
    double *acc, *accn; // [n_modes] each
};

// Per-task statistics; out receives the accuracies for D_avg/D_w.
static int summarize_task(cJSON *tj, const struct task_samples *t, char *const *modes, int n_modes, int has_norm,
                          struct mode_acc out, struct err *e) {
    double *acc_out = out.acc, *accn_out = out.accn;
    int n = t->n, rc = 0;
    int *gold = malloc(sizeof(int) * (size_t)(n ? n : 1));
    int *pr = malloc(sizeof(int) * (size_t)(n ? n : 1)), *pq = malloc(sizeof(int) * (size_t)(n ? n : 1));
    double *buf = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!gold || !pr || !pq || !buf) { rc = err_set(e, ERR_NOMEM, "summary: out of memory"); goto done; }
    cJSON_AddNumberToObject(tj, "n", n);
    cJSON *mj = cJSON_AddObjectToObject(tj, "modes");
    for (int i = 0; i < n; i++) gold[i] = t->s[0][i].gold;
    for (int m = 0; m < n_modes; m++) {
        const struct results_sample *s = t->s[m];
        int k = 0, kn = 0;
        for (int i = 0; i < n; i++) { k += s[i].pred == s[i].gold; kn += s[i].pred_norm == s[i].gold; }
        double acc = n ? (double)k / n : NAN, accn = n ? (double)kn / n : NAN;
        acc_out[m] = acc;
        accn_out[m] = accn;
        cJSON *o = cJSON_AddObjectToObject(mj, modes[m]);
        cJSON_AddNumberToObject(o, "correct", k);
        add_num(o, "acc", acc);
        add_num(o, "acc_stderr", n > 1 ? metrics_stderr(acc, n) : NAN);
        if (has_norm) {
            cJSON_AddNumberToObject(o, "correct_norm", kn);
            add_num(o, "acc_norm", accn);
            add_num(o, "acc_norm_stderr", n > 1 ? metrics_stderr(accn, n) : NAN);
        }
        // per-subject accuracy (first-seen order)
        if (n && s[0].subject) {
            cJSON *sj = cJSON_AddObjectToObject(o, "subjects");
            for (int i = 0; i < n; i++) {
                if (!s[i].subject || cJSON_GetObjectItemCaseSensitive(sj, s[i].subject)) continue;
                int c = 0, tot = 0;
                for (int j = i; j < n; j++)
                    if (s[j].subject && !strcmp(s[j].subject, s[i].subject)) { tot++; c += s[j].pred == s[j].gold; }
                cJSON *x = cJSON_AddObjectToObject(sj, s[i].subject);
                cJSON_AddNumberToObject(x, "n", tot);
                cJSON_AddNumberToObject(x, "acc", (double)c / tot);
            }
        }
    }
    cJSON *vj = cJSON_AddObjectToObject(tj, "vs_reference");
    for (int m = 1; m < n_modes; m++) {
        struct metrics_compare c;
        for (int i = 0; i < n; i++) { pr[i] = t->s[0][i].pred; pq[i] = t->s[m][i].pred; }
        metrics_compare(&c, pr, pq, gold, n);
        cJSON *o = compare_json(&c);
        cJSON_AddItemToObject(vj, modes[m], o);
        if (has_norm) {
            for (int i = 0; i < n; i++) { pr[i] = t->s[0][i].pred_norm; pq[i] = t->s[m][i].pred_norm; }
            metrics_compare(&c, pr, pq, gold, n);
            cJSON_AddItemToObject(o, "acc_norm", compare_json(&c));
        }
        if ((rc = token_json(o, t, m, e))) goto done;
    }
    // margins on items every mode answers correctly (paper Fig. 9)
    cJSON *mg = cJSON_AddObjectToObject(tj, "margins_all_correct");
    int na = 0;
    for (int i = 0; i < n; i++) {
        int ok = 1;
        for (int m = 0; m < n_modes && ok; m++) ok = t->s[m][i].pred == t->s[m][i].gold;
        na += ok;
    }
    cJSON_AddNumberToObject(mg, "n", na);
    for (int m = 0; m < n_modes; m++) {
        int q = 0;
        for (int i = 0; i < n; i++) {
            int ok = 1;
            for (int mm = 0; mm < n_modes && ok; mm++) ok = t->s[mm][i].pred == t->s[mm][i].gold;
            if (ok && isfinite(t->s[m][i].margin)) buf[q++] = t->s[m][i].margin;
        }
        double sum = 0;
        for (int i = 0; i < q; i++) sum += buf[i];
        cJSON *o = cJSON_AddObjectToObject(mg, modes[m]);
        add_num(o, "mean", q ? sum / q : NAN);
        add_num(o, "p10", q ? pctl(buf, q, 10) : NAN);
        add_num(o, "p50", q ? pctl(buf, q, 50) : NAN);
        add_num(o, "p90", q ? pctl(buf, q, 90) : NAN);
    }
done:
    free(gold); free(pr); free(pq); free(buf);
    return rc;
}

// ---- noise: replicas ----
// modes[m + r * n_modes] = the name of replica r of mode m (malloc'd for r >= 1)
static int replica_modes(char **modes, int n_modes, int n_rep, struct err *e) {
    for (int r = 1; r < n_rep; r++)
        for (int m = 0; m < n_modes; m++) {
            char name[512];
            int rc = noise_replica_name(name, sizeof name, modes[m], r, e);
            if (rc) return rc;
            if (!(modes[r * n_modes + m] = str_dup(name))) return err_set(e, ERR_NOMEM, "summary: out of memory");
        }
    return 0;
}

// Predictions of every accuracy task, concatenated for the pooled "noise" object.
struct noise_pool {
    int n, cap;
    int *gold;
    int **pred;   // [n_all][cap]
};

static void noise_pool_free(struct noise_pool *p, int n_all) {
    for (int k = 0; p->pred && k < n_all; k++) free(p->pred[k]);
    free(p->pred);
    free(p->gold);
}

static int pool_add(struct noise_pool *p, const struct task_samples *t, int n_all) {
    if (!p->pred && !(p->pred = calloc((size_t)n_all, sizeof *p->pred))) return ERR_NOMEM;
    if (p->n + t->n > p->cap) {
        int cap = 2 * (p->n + t->n);
        int *g = realloc(p->gold, sizeof *g * (size_t)cap);
        if (!g) return ERR_NOMEM;
        p->gold = g;
        for (int k = 0; k < n_all; k++) {
            int *q = realloc(p->pred[k], sizeof *q * (size_t)cap);
            if (!q) return ERR_NOMEM;
            p->pred[k] = q;
        }
        p->cap = cap;
    }
    for (int i = 0; i < t->n; i++) {
        p->gold[p->n + i] = t->s[0][i].gold;
        for (int k = 0; k < n_all; k++) p->pred[k][p->n + i] = t->s[k][i].pred;
    }
    p->n += t->n;
    return 0;
}

// o["noise"] of one task from its samples of every mode and replica; appends them to pool.
static int task_noise(cJSON *o, const struct task_samples *t, char **modes, int n_modes, int n_rep,
                      struct noise_pool *pool, struct err *e) {
    const int n_all = n_modes * n_rep;
    struct noise_pool one = {0};
    if (pool_add(&one, t, n_all) || pool_add(pool, t, n_all)) {
        noise_pool_free(&one, n_all);
        return err_set(e, ERR_NOMEM, "summary: out of memory");
    }
    struct noise_preds p = {one.n, n_modes, n_rep, one.gold, (const int *const *)one.pred};
    struct stats_opts so;
    stats_opts_default(&so);
    cJSON *nj = NULL;
    int rc = noise_json(&nj, &p, modes, &so, e);
    if (!rc) cJSON_AddItemToObject(o, "noise", nj);
    noise_pool_free(&one, n_all);
    return rc;
}

// summary["noise"]: the replicas' record and the statistics over every accuracy task's items.
static int pooled_noise(cJSON *sum, const struct run_rec *run, const struct noise_pool *pool, char **modes, int n_modes,
                        int n_rep, struct err *e) {
    cJSON *o = cJSON_AddObjectToObject(sum, "noise");
    // the replicas' record as run.json has it (k, seed, perturbation, scope), copied whole
    const cJSON *r = run->has_replicas ? cJSON_GetObjectItemCaseSensitive(run->json, "replicas") : NULL;
    if (r) cJSON_AddItemToObject(o, "replicas", cJSON_Duplicate(r, 1));
    else cJSON_AddNumberToObject(o, "replicas", 0);
    struct stats_opts so;
    stats_opts_default(&so);
    cJSON_AddNumberToObject(o, "bootstrap_seed", (double)so.seed);
    cJSON_AddNumberToObject(o, "bootstrap_resamples", so.n_boot);
    cJSON_AddNumberToObject(o, "rel", so.rel);
    if (!pool->n) return 0;
    struct noise_preds p = {pool->n, n_modes, n_rep, pool->gold, (const int *const *)pool->pred};
    cJSON *nj = NULL;
    int rc = noise_json(&nj, &p, modes, &so, e);
    if (!rc) cJSON_AddItemToObject(o, "pooled", nj);
    return rc;
}

int results_summarize(const char *dir, cJSON **out, struct err *e) {
    *out = NULL;
    struct run_rec run;
    cJSON *sum = NULL;
    int rc = run_rec_load(&run, dir, e);
    if (rc) { run_rec_free(&run); return rc; }
    const int n_modes = run.n_modes, n_tasks = run.n_tasks, n_rep = run.replicas + 1;
    struct noise_pool pool = {0};
    char **modes = calloc((size_t)(n_modes * n_rep), sizeof *modes);
    double *acc = calloc((size_t)(n_modes * n_tasks + 1), sizeof *acc), *accn = calloc((size_t)(n_modes * n_tasks + 1), sizeof *accn);
    int *ns = calloc((size_t)n_tasks + 1, sizeof *ns), *norm = calloc((size_t)n_tasks + 1, sizeof *norm);
    if (!modes || !acc || !accn || !ns || !norm) { rc = err_set(e, ERR_NOMEM, "summary: out of memory"); goto done; }
    for (int m = 0; m < n_modes; m++) modes[m] = (char *)run.modes[m].name; // replicas' names below are malloc'd
    if ((rc = replica_modes(modes, n_modes, n_rep, e))) goto done;
    sum = cJSON_CreateObject();
    // the stamp: whose summary this is (results_summary_check)
    const char *key = run.resume_key;
    if (key) cJSON_AddStringToObject(sum, "run_key", key);
    cJSON_AddStringToObject(sum, "reference", modes[0]);
    cJSON *ma = cJSON_AddArrayToObject(sum, "modes");
    for (int m = 0; m < n_modes; m++) cJSON_AddItemToArray(ma, cJSON_CreateString(modes[m]));
    cJSON *tj = cJSON_AddObjectToObject(sum, "tasks");
    for (int k = 0; k < n_tasks; k++) {
        const struct run_rec_task *t = &run.tasks[k];
        const char *name = t->name;
        const int is_ppl = t->is_ppl;
        norm[k] = t->has_acc_norm;
        struct task_samples ts;
        const struct run_ref rr = {dir, &run};
        const int n_all = n_modes * n_rep;
        rc = load_task(&ts, &rr, name, modes, n_all, t->items, e);
        if (!rc) drop_nonfinite(&ts, modes, n_all, cJSON_AddObjectToObject(tj, name));
        if (!rc && is_ppl) {
            cJSON *o = cJSON_GetObjectItemCaseSensitive(tj, name);
            cJSON *ml = cJSON_AddArrayToObject(o, "metrics");
            cJSON_AddItemToArray(ml, cJSON_CreateString("ppl"));
            cJSON_AddItemToArray(ml, cJSON_CreateString("bits_per_byte"));
            ns[k] = -1; // not an accuracy task: left out of D_avg / D_w
            rc = summarize_ppl(o, &ts, modes, n_modes, e);
        } else if (!rc) {
            cJSON *o = cJSON_GetObjectItemCaseSensitive(tj, name);
            cJSON *ml = cJSON_AddArrayToObject(o, "metrics");
            cJSON_AddItemToArray(ml, cJSON_CreateString("acc"));
            if (norm[k]) cJSON_AddItemToArray(ml, cJSON_CreateString("acc_norm"));
            ns[k] = ts.n;
            const struct mode_acc out = {acc + (size_t)k * n_modes, accn + (size_t)k * n_modes};
            rc = summarize_task(o, &ts, modes, n_modes, norm[k], out, e);
            if (!rc && n_modes > 1) rc = task_noise(o, &ts, modes, n_modes, n_rep, &pool, e);
        }
        task_samples_free(&ts, n_all);
        if (rc) goto done;
    }
    // across tasks: gap = acc(mode) - acc(reference) per task; D_avg plain mean, D_w weighted by items
    cJSON *aj = cJSON_AddObjectToObject(sum, "across_tasks");
    double *gap = malloc(sizeof *gap * (size_t)(n_tasks + 1));
    int *w = malloc(sizeof *w * (size_t)(n_tasks + 1));
    if (!gap || !w) { free(gap); free(w); rc = err_set(e, ERR_NOMEM, "summary: out of memory"); goto done; }
    for (int m = 1; m < n_modes; m++) {
        cJSON *o = cJSON_AddObjectToObject(aj, modes[m]);
        int na = 0;
        for (int k = 0; k < n_tasks; k++)
            if (ns[k] >= 0) { gap[na] = acc[(size_t)k * n_modes + m] - acc[(size_t)k * n_modes]; w[na] = ns[k]; na++; }
        cJSON_AddNumberToObject(o, "n_tasks", na);
        add_num(o, "D_avg", na ? metrics_d_avg(gap, na) : NAN);
        add_num(o, "D_w", na ? metrics_d_w(gap, w, na) : NAN);
        int q = 0;
        for (int k = 0; k < n_tasks; k++)
            if (norm[k] && ns[k] >= 0) { gap[q] = accn[(size_t)k * n_modes + m] - accn[(size_t)k * n_modes]; w[q] = ns[k]; q++; }
        cJSON_AddNumberToObject(o, "n_tasks_norm", q);
        if (q) {
            add_num(o, "D_avg_norm", metrics_d_avg(gap, q));
            add_num(o, "D_w_norm", metrics_d_w(gap, w, q));
        }
    }
    free(gap); free(w);
    if (n_modes > 1) rc = pooled_noise(sum, &run, &pool, modes, n_modes, n_rep, e);
done:
    if (rc) cJSON_Delete(sum);
    else *out = sum;
    if (modes) for (int m = n_modes; m < n_modes * n_rep; m++) free(modes[m]);
    noise_pool_free(&pool, n_modes * n_rep);
    free(modes); free(acc); free(accn); free(ns); free(norm);
    run_rec_free(&run);
    return rc;
}
