// merge.c: run_merge (run.h) - joins the run directories of `run --shard K/N` (DESIGN.md
// section 5: several machines through files) into one run: the samples are concatenated in item
// order and re-framed, so the merged samples files and summary.json are byte-identical to an
// unsharded run's; run.json sums the hook coverage and cost counts and keeps every shard's
// timings. Shards must all be complete, come from the same configuration (results_config_key)
// and cover 0..N-1 exactly once.
#include <stdio.h>
#include <stdlib.h>

#include "eval/run.h"
#include "results/lock.h"
#include "results/noise.h"
#include "results/results.h"
#include "results/run_identity.h"
#include "results/run_rec.h"
#include "results/stamp.h"

// Adds the numbers of src into dst (same layout; arrays element-wise), recursively.
static void add_numbers(cJSON *dst, const cJSON *src) {
    cJSON *d;
    cJSON_ArrayForEach(d, dst) {
        const cJSON *s = cJSON_IsArray(dst) ? cJSON_GetArrayItem(src, 0) : cJSON_GetObjectItemCaseSensitive(src, d->string);
        if (cJSON_IsArray(dst)) {
            int i = 0;
            for (cJSON *x = dst->child; x; x = x->next, i++) {
                const cJSON *y = cJSON_GetArrayItem(src, i);
                if (cJSON_IsNumber(x) && cJSON_IsNumber(y)) cJSON_SetNumberValue(x, x->valuedouble + y->valuedouble);
                else if (y) add_numbers(x, y);
            }
            return;
        }
        if (!s) continue;
        if (cJSON_IsNumber(d) && cJSON_IsNumber(s)) cJSON_SetNumberValue(d, d->valuedouble + s->valuedouble);
        else if (cJSON_IsObject(d) || cJSON_IsArray(d)) add_numbers(d, s);
    }
}

// Shards made with different libm variants (base/host.h) are merged, with a warning: the same
// configuration, but exp, log, tanh and erf may differ in their last bit between them.
static void warn_libm(const struct run_rec *a, const struct run_rec *b, const char *pa, const char *pb) {
    const char *la = a->host_libm, *lb = b->host_libm;
    if (la && lb && strcmp(la, lb))
        log_warn("merge: %s used libm '%s', %s '%s': their bits may differ in the last bit of exp, log, tanh and erf "
                 "(README \"Reproducibility\")", pa, la, pb, lb);
}

// Reads every shard's run.json into runs[] and orders them by k (order[k] = index into shards).
static int load_shards(const char *const *shards, int n, struct run_rec *runs, int *order, struct err *e) {
    char key0[65] = "";
    int N = -1, rc;
    for (int i = 0; i < n; i++) order[i] = -1;
    for (int i = 0; i < n; i++) {
        if ((rc = run_rec_load(&runs[i], shards[i], e))) return rc;
        const struct run_rec *r = &runs[i];
        const char *path = r->path;
        if (!r->has_shard) return err_set(e, ERR_FORMAT, "%s: not a shard (no field 'shard' {k, n}); made with run --shard K/N?", path);
        if (!r->complete) return results_check_complete(shards[i], r, e); // names the resume command
        const int k = r->shard_k, nn = r->shard_n;
        if (N < 0) N = nn;
        if (nn != N || N != n) return err_set(e, ERR_MISMATCH, "%s: shard %d/%d, but %d shard directories were given (first says N=%d)", path, k, nn, n, N);
        if (order[k] >= 0) return err_set(e, ERR_MISMATCH, "%s: shard %d given twice or out of range", path, k);
        order[k] = i;
        char key[65];
        results_config_key(key, r->json, 0);
        if (!key0[0]) memcpy(key0, key, sizeof key);
        else if (strcmp(run_rec_qmean(r), run_rec_qmean(&runs[0])))
            return err_set(e, ERR_MISMATCH, "%s: made with --qmean %s, %s with --qmean %s: a run holds one Q-Mean form", path,
                           run_rec_qmean(r), shards[0], run_rec_qmean(&runs[0]));
        else if (strcmp(key, key0)) {
            char d[1600];
            if (run_json_diff(d, sizeof d, runs[0].json, r->json, 0, NULL) < 0) return err_set(e, ERR_NOMEM, "merge: out of memory");
            return err_set(e, ERR_MISMATCH, "%s was made from other inputs than %s (%s vs %s): %s", path, shards[0], shards[0],
                           shards[i], d[0] ? d : "run.json schema versions differ");
        }
        warn_libm(r, &runs[0], path, shards[0]);
    }
    return 0;
}

// run.json: shard 0's, without the shard, counts summed, every shard's timings
static cJSON *merged_json(const char *const *shards, int N, const struct run_rec *runs, const int *order) {
    cJSON *merged = cJSON_Duplicate(runs[order[0]].json, 1);
    cJSON_DeleteItemFromObjectCaseSensitive(merged, "shard");
    cJSON_DeleteItemFromObjectCaseSensitive(merged, "timings");
    cJSON_DeleteItemFromObjectCaseSensitive(merged, "resume_key");
    cJSON *st = cJSON_AddArrayToObject(merged, "shard_timings"), *from = cJSON_AddArrayToObject(merged, "merged_from");
    cJSON *tasks = cJSON_GetObjectItemCaseSensitive(merged, "tasks"), *t;
    cJSON_ArrayForEach(t, tasks) cJSON_DeleteItemFromObjectCaseSensitive(t, "item_range");
    for (int k = 0; k < N; k++) {
        const cJSON *r = runs[order[k]].json;
        cJSON_AddItemToArray(from, cJSON_CreateString(shards[order[k]]));
        const cJSON *tm = cJSON_GetObjectItemCaseSensitive(r, "timings");
        cJSON_AddItemToArray(st, tm ? cJSON_Duplicate(tm, 1) : cJSON_CreateNull());
        if (k == 0) continue;
        const char *sums[] = {"hook_coverage", "cost_counts"};
        for (int s = 0; s < 2; s++) {
            cJSON *d = cJSON_GetObjectItemCaseSensitive(merged, sums[s]);
            const cJSON *x = cJSON_GetObjectItemCaseSensitive(r, sums[s]);
            if (d && x) add_numbers(d, x);
        }
        // per-task request/token counts add up
        cJSON *mt;
        int ti = 0;
        cJSON_ArrayForEach(mt, tasks) {
            const cJSON *rt = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r, "tasks"), ti++);
            const char *f[] = {"n_requests", "n_sequences", "n_tokens", "n_truncated", "tokenize_s"};
            for (int q = 0; q < 5; q++) {
                cJSON *a = cJSON_GetObjectItemCaseSensitive(mt, f[q]);
                const cJSON *b = cJSON_GetObjectItemCaseSensitive(rt, f[q]);
                if (cJSON_IsNumber(a) && cJSON_IsNumber(b)) cJSON_SetNumberValue(a, a->valuedouble + b->valuedouble);
            }
        }
    }
    char key[65];
    results_config_key(key, merged, 1);
    cJSON_AddStringToObject(merged, "resume_key", key);
    return merged;
}

// One task under one mode: the shards' samples concatenated in shard order, framed by item index.
// The shards of a merge, ordered (order[k] = index into shards and runs), and the merged run.
struct merge_src {
    const char *const *shards;
    const struct run_rec *runs;
    const int *order;
    int N;
    const cJSON *merged;
    const char *out;
};

// Each shard's file is checked against its own run.json's stamp; the merged file carries the
// merged run's (stamp.h), equal to an unsharded run's.
static int merge_samples(const struct merge_src *ms, const struct run_rec_task *task, const char *mode, struct err *e) {
    const char *const *shards = ms->shards;
    const int *order = ms->order, N = ms->N;
    struct results_writer w = {0};
    const char *name = task->name;
    char op[4096];
    struct results_stamp st;
    results_stamp_expect(&st, ms->merged, ms->out, name, mode);
    int rc, next = 0;
    if ((rc = results_samples_path(op, sizeof op, ms->out, name, mode, e)) || (rc = results_writer_open(&w, op, 0, &st, e))) return rc;
    for (int k = 0; k < N && !rc; k++) {
        char sp[4096];
        struct results_sample *v = NULL;
        int n = 0;
        if ((rc = results_samples_path(sp, sizeof sp, shards[order[k]], name, mode, e)) ||
            (rc = results_samples_read_run(shards[order[k]], &ms->runs[order[k]], name, mode, &v, &n, e)))
            break;
        if (n > 0 && v[0].idx != next)
            rc = err_set(e, ERR_MISMATCH, "%s: starts at item %d, expected %d (shards must be contiguous)", sp, v[0].idx, next);
        for (int i = 0; i < n && !rc; i++) rc = results_writer_add(&w, &v[i], e);
        next += n;
        for (int i = 0; i < n; i++) results_sample_free(&v[i]);
        free(v);
    }
    const int want = task->n_items > 0 ? task->n_items : 0;
    if (!rc && next != want) rc = err_set(e, ERR_MISMATCH, "task %s mode %s: the shards hold %d items, the task has %d", name, mode, next, want);
    if (!rc) rc = results_writer_close(&w, e);
    results_writer_abort(&w);
    return rc;
}

int run_merge(const char *const *shards, int n, const char *out, char **headline, struct err *e) {
    struct run_rec *runs = calloc((size_t)n, sizeof *runs);
    int *order = calloc((size_t)n, sizeof *order), lock = -1;
    cJSON *merged = NULL;
    char path[4096];
    int rc;
    if (!runs || !order) { rc = err_set(e, ERR_NOMEM, "merge: out of memory"); goto done; }
    if ((rc = load_shards(shards, n, runs, order, e))) goto done;
    if ((rc = path_join(path, sizeof path, out, "run.json", e))) goto done;
    if (file_exists(path)) { rc = err_set(e, ERR_USAGE, "%s exists: merge into a new --out directory", path); goto done; }
    if ((rc = mkdir_p(out, e)) || (rc = results_lock(out, &lock, e))) goto done;
    if (file_exists(path)) { rc = err_set(e, ERR_USAGE, "%s exists: merge into a new --out directory", path); goto done; }
    merged = merged_json(shards, n, runs, order);
    // the merged run's tasks, modes and replicas are shard 0's (merged_json copies them)
    const struct run_rec *r0 = &runs[order[0]];
    const struct merge_src ms = {shards, runs, order, n, merged, out};
    for (int t = 0; t < r0->n_tasks; t++) {
        // every replica of every mode (run --replicas K: "<mode>@r<k>", results/noise.h)
        for (int k = 0; k <= r0->replicas && !rc; k++) for (int m = 0; m < r0->n_modes; m++) {
            char name[512];
            if ((rc = noise_replica_name(name, sizeof name, r0->modes[m].name, k, e)) ||
                (rc = merge_samples(&ms, &r0->tasks[t], name, e)))
                goto done;
        }
    }
    rc = run_publish(out, merged, headline, e);
done:
    for (int i = 0; runs && i < n; i++) run_rec_free(&runs[i]);
    free(runs);
    free(order);
    cJSON_Delete(merged);
    results_unlock(lock);
    return rc;
}
