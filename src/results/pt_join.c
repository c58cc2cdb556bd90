// pt_join.c: runs of one configuration split over several directories, read by `tables` as one.
// A study often runs the rows of an ablation, or its tasks, in separate invocations (rows A, D,
// E in one directory, B and C in another; ARC-Easy and ARC-Challenge apart). Two input runs are
// joined when their identities (run_identity.h) differ only in their modes and in the tasks one
// of them lacks - the same weights, tokenizer, attention options, scales, limit, seed, replicas,
// and for every task both hold the same items - when no mode but the reference is in both for
// the same task, and when the reference's results agree on every task both hold. The joined
// run's summary.json is the union (modes, and per task "modes", "vs_reference", "noise" modes);
// across_tasks is recomputed over the union's tasks as summary.c computes it. Every table then
// reads the joined run as it reads one run; the Markdown says which directories were joined.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "results/metrics.h"
#include "results/pt_internal.h"
#include "results/run_identity.h"

#define JOIN_MAX_SKIP 70

int pt_same_config(const struct run_rec *a, const struct run_rec *b, const char *const *also) {
    const char *skip[JOIN_MAX_SKIP + 1];
    char pre[JOIN_MAX_SKIP][160];
    int n = 0, shared = 0;
    skip[n++] = "modes";
    skip[n++] = "mode ";
    for (int t = 0; t < a->n_tasks; t++) shared |= run_rec_task(b, a->tasks[t].name) != NULL;
    if (!shared) { // --limit and --subjects select items of tasks the other run does not hold
        skip[n++] = "--limit";
        skip[n++] = "--subjects";
    }
    for (int k = 0; also && also[k] && n < JOIN_MAX_SKIP; k++) skip[n++] = also[k];
    for (int s = 0; s < 2; s++) {
        const struct run_rec *r = s ? b : a, *other = s ? a : b;
        for (int t = 0; t < r->n_tasks; t++) {
            if (run_rec_task(other, r->tasks[t].name)) continue;
            if (n == JOIN_MAX_SKIP) return 0;
            snprintf(pre[n], sizeof pre[n], "task %s ", r->tasks[t].name);
            skip[n] = pre[n];
            n++;
        }
    }
    skip[n] = NULL;
    char d[512];
    return run_json_diff(d, sizeof d, a->json, b->json, 0, skip) == 0;
}

// No mode but the reference in both for one task; the reference's results equal where both hold a task.
static int disjoint_modes(const cJSON *sa, const cJSON *sb, const char *ref) {
    const cJSON *t;
    cJSON_ArrayForEach(t, pt_get(sb, "tasks")) {
        const cJSON *ta = pt_get(pt_get(sa, "tasks"), t->string);
        if (!ta) continue;
        if (pt_num(ta, "n") != pt_num(t, "n")) return 0;
        const cJSON *ma = pt_get(ta, "modes"), *m;
        cJSON_ArrayForEach(m, pt_get(t, "modes")) {
            const cJSON *x = pt_get(ma, m->string);
            if (!x) continue;
            if (strcmp(m->string, ref)) return 0;
            static const char *const same[] = {"correct", "acc", "correct_norm", "acc_norm", "ppl"};
            for (int k = 0; k < 5; k++) {
                double u = pt_num(x, same[k]), v = pt_num(m, same[k]);
                if ((isfinite(u) || isfinite(v)) && !(u == v)) return 0;
            }
        }
    }
    return 1;
}

// Adds b's members of object `key` absent from a's (a missing in a: b's copied whole). 0 or ERR_NOMEM.
static int add_members(cJSON *a, const cJSON *b, const char *key) {
    const cJSON *ob = pt_get(b, key), *x;
    if (!ob) return 0;
    cJSON *oa = cJSON_GetObjectItemCaseSensitive(a, key);
    if (!oa) {
        cJSON *dup = cJSON_Duplicate(ob, 1);
        return dup && cJSON_AddItemToObject(a, key, dup) ? 0 : ERR_NOMEM;
    }
    cJSON_ArrayForEach(x, ob) {
        if (pt_get(oa, x->string)) continue;
        cJSON *dup = cJSON_Duplicate(x, 1);
        if (!dup || !cJSON_AddItemToObject(oa, x->string, dup)) { cJSON_Delete(dup); return ERR_NOMEM; }
    }
    return 0;
}

// sa gets sb's modes and tasks.
static int merge_summary(cJSON *sa, const cJSON *sb) {
    cJSON *modes = cJSON_GetObjectItemCaseSensitive(sa, "modes"), *tasks = cJSON_GetObjectItemCaseSensitive(sa, "tasks");
    const cJSON *m, *t;
    cJSON_ArrayForEach(m, pt_get(sb, "modes")) {
        int seen = 0;
        const cJSON *x;
        cJSON_ArrayForEach(x, modes) seen |= cJSON_IsString(x) && cJSON_IsString(m) && !strcmp(x->valuestring, m->valuestring);
        if (!seen && !cJSON_AddItemToArray(modes, cJSON_Duplicate(m, 1))) return ERR_NOMEM;
    }
    cJSON_ArrayForEach(t, pt_get(sb, "tasks")) {
        cJSON *ta = cJSON_GetObjectItemCaseSensitive(tasks, t->string);
        if (!ta) {
            cJSON *dup = cJSON_Duplicate(t, 1);
            if (!dup || !cJSON_AddItemToObject(tasks, t->string, dup)) { cJSON_Delete(dup); return ERR_NOMEM; }
            continue;
        }
        int rc = add_members(ta, t, "modes") | add_members(ta, t, "vs_reference");
        cJSON *na = cJSON_GetObjectItemCaseSensitive(ta, "noise");
        if (!rc && na) rc = add_members(na, pt_get(t, "noise"), "modes");
        if (rc) return rc;
    }
    return 0;
}

static int is_acc_task(const cJSON *t) {
    const cJSON *x;
    cJSON_ArrayForEach(x, pt_get(t, "metrics")) if (cJSON_IsString(x) && !strcmp(x->valuestring, "ppl")) return 0;
    return 1;
}

// across_tasks as summary.c writes it, over the tasks of the joined summary that hold the mode.
static int across_tasks(cJSON *sum) {
    const char *ref = pt_str(sum, "reference", "bf16");
    int nt = cJSON_GetArraySize(pt_get(sum, "tasks"));
    double *gap = malloc(sizeof *gap * (size_t)(nt + 1));
    int *w = malloc(sizeof *w * (size_t)(nt + 1));
    cJSON *aj = cJSON_CreateObject();
    int rc = gap && w && aj ? 0 : ERR_NOMEM;
    const cJSON *m;
    cJSON_ArrayForEach(m, pt_get(sum, "modes")) {
        if (rc || !cJSON_IsString(m) || !strcmp(m->valuestring, ref)) continue;
        cJSON *o = cJSON_AddObjectToObject(aj, m->valuestring);
        if (!o) { rc = ERR_NOMEM; break; }
        for (int norm = 0; norm < 2; norm++) {
            const char *acc = norm ? "acc_norm" : "acc";
            int na = 0;
            const cJSON *t;
            cJSON_ArrayForEach(t, pt_get(sum, "tasks")) {
                const cJSON *ms = pt_get(t, "modes");
                double x = pt_num(pt_get(ms, m->valuestring), acc), r = pt_num(pt_get(ms, ref), acc);
                if (!is_acc_task(t) || !isfinite(x) || !isfinite(r)) continue;
                gap[na] = x - r;
                w[na++] = (int)pt_num(t, "n");
            }
            cJSON_AddNumberToObject(o, norm ? "n_tasks_norm" : "n_tasks", na);
            if (!na) continue;
            cJSON_AddNumberToObject(o, norm ? "D_avg_norm" : "D_avg", metrics_d_avg(gap, na));
            cJSON_AddNumberToObject(o, norm ? "D_w_norm" : "D_w", metrics_d_w(gap, w, na));
        }
    }
    free(gap);
    free(w);
    if (rc) { cJSON_Delete(aj); return rc; }
    cJSON_DeleteItemFromObjectCaseSensitive(sum, "across_tasks");
    return cJSON_AddItemToObject(sum, "across_tasks", aj) ? 0 : ERR_NOMEM;
}

int pt_join_runs(struct pt_in *in, struct err *e) {
    int rc = 0;
    for (int a = 0; a < in->n_run && !rc; a++) {
        // a's group: its members' run.json records stay until the group is done, since every
        // later candidate is checked against each of them (a task it shares with one member only)
        struct run_rec *member[PT_MAX_IN];
        const char *dir[PT_MAX_IN];
        int nm = 1;
        member[0] = in->run[a];
        dir[0] = in->run_dir[a];
        for (int b = a + 1; b < in->n_run && !rc;) {
            int ok = disjoint_modes(in->sum[a], in->sum[b], pt_str(in->sum[a], "reference", "bf16"));
            for (int k = 0; k < nm && ok; k++) ok = pt_same_config(member[k], in->run[b], NULL);
            if (!ok) { b++; continue; }
            rc = merge_summary(in->sum[a], in->sum[b]);
            member[nm] = in->run[b];
            dir[nm++] = in->run_dir[b];
            cJSON_Delete(in->sum[b]);
            for (int k = b; k + 1 < in->n_run; k++) {
                in->run_dir[k] = in->run_dir[k + 1];
                in->run[k] = in->run[k + 1];
                in->sum[k] = in->sum[k + 1];
            }
            in->n_run--;
        }
        if (nm > 1 && !rc) rc = across_tasks(in->sum[a]);
        for (int k = 0; k < nm && nm > 1; k++) {
            size_t u = strlen(in->joined);
            snprintf(in->joined + u, sizeof in->joined - u, "%s`%s`%s", k ? " + " : "- ", dir[k], k + 1 == nm ? "\n" : "");
        }
        for (int k = 1; k < nm; k++) { run_rec_free(member[k]); free(member[k]); }
    }
    return rc ? err_set(e, ERR_NOMEM, "tables: out of memory") : 0;
}
