// merge.c: `hifa4-eval merge SHARD_DIR... --out DIR` joins the run directories of
// `run --shard K/N` (DESIGN.md section 5: several machines through files) into one run: the
// samples are concatenated in item order and re-framed, so the merged samples files and
// summary.json are byte-identical to an unsharded run's; run.json sums the hook coverage and
// cost counts and keeps every shard's timings. Shards must all be complete, come from the
// same configuration (results_config_key) and cover 0..N-1 exactly once.
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "attention/cost.h"
#include "base/json_util.h"
#include "results/report.h"
#include "results/results.h"

#define MAX_SHARDS 1024

static int num_field(const cJSON *o, const char *k, double *v) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(x)) return -1;
    *v = x->valuedouble;
    return 0;
}

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

int cmd_merge(int argc, char **argv, struct err *e) {
    int help = 0;
    const char *out = NULL;
    struct cli_opt opts[] = {
        {"out", CLI_STR, &out, "DIR: the merged run directory (required, must not hold a run)"},
        {"help", CLI_FLAG, &help, "show this help"},
    };
    const char *pos[MAX_SHARDS];
    int n_pos = 0, rc = cli_parse(argc, argv, 1, opts, 2, pos, MAX_SHARDS, &n_pos, e);
    if (rc) return rc;
    if (help) { cli_usage("merge", "SHARD_DIR... --out DIR", opts, 2); return 0; }
    if (n_pos < 1) return err_set(e, ERR_USAGE, "expected the shard run directories");
    if (!out) return err_set(e, ERR_USAGE, "--out is required");
    cJSON **runs = calloc((size_t)n_pos, sizeof *runs);
    int *order = calloc((size_t)n_pos, sizeof *order);
    cJSON *merged = NULL, *sum = NULL;
    char *head = NULL;
    struct results_writer w = {0};
    if (!runs || !order) { rc = err_set(e, ERR_NOMEM, "merge: out of memory"); goto done; }
    char key0[65] = "", path[4096];
    int N = -1;
    for (int i = 0; i < n_pos; i++) order[i] = -1;
    for (int i = 0; i < n_pos; i++) {
        if ((rc = path_join(path, sizeof path, pos[i], "run.json", e)) || (rc = json_parse_file(&runs[i], path, e))) goto done;
        const cJSON *sh = cJSON_GetObjectItemCaseSensitive(runs[i], "shard"), *complete = cJSON_GetObjectItemCaseSensitive(runs[i], "complete");
        double k, n;
        if (!sh || num_field(sh, "k", &k) || num_field(sh, "n", &n)) { rc = err_set(e, ERR_FORMAT, "%s: not a shard (no field 'shard' {k, n}); made with run --shard K/N?", path); goto done; }
        if (!cJSON_IsTrue(complete)) { rc = err_set(e, ERR_MISMATCH, "%s: the shard is not complete (field 'complete'): finish it with run --resume", path); goto done; }
        if (N < 0) N = (int)n;
        if ((int)n != N || N != n_pos) { rc = err_set(e, ERR_MISMATCH, "%s: shard %d/%d, but %d shard directories were given (first says N=%d)", path, (int)k, (int)n, n_pos, N); goto done; }
        if (k < 0 || k >= N || order[(int)k] >= 0) { rc = err_set(e, ERR_MISMATCH, "%s: shard %d given twice or out of range", path, (int)k); goto done; }
        order[(int)k] = i;
        char key[65];
        results_config_key(key, runs[i], 0);
        if (!key0[0]) memcpy(key0, key, sizeof key);
        else if (strcmp(key, key0)) { rc = err_set(e, ERR_MISMATCH, "%s: made with another model, tokenizer, modes, options or task data than %s", path, pos[0]); goto done; }
    }
    if ((rc = path_join(path, sizeof path, out, "run.json", e))) goto done;
    if (file_exists(path)) { rc = err_set(e, ERR_USAGE, "%s exists: merge into a new --out directory", path); goto done; }
    if ((rc = mkdir_p(out, e))) goto done;

    // ---- run.json: shard 0's, without the shard, counts summed, every shard's timings ----
    const cJSON *r0 = runs[order[0]];
    merged = cJSON_Duplicate(r0, 1);
    cJSON_DeleteItemFromObjectCaseSensitive(merged, "shard");
    cJSON_DeleteItemFromObjectCaseSensitive(merged, "timings");
    cJSON_DeleteItemFromObjectCaseSensitive(merged, "resume_key");
    cJSON *st = cJSON_AddArrayToObject(merged, "shard_timings"), *from = cJSON_AddArrayToObject(merged, "merged_from");
    cJSON *tasks = cJSON_GetObjectItemCaseSensitive(merged, "tasks"), *t;
    cJSON_ArrayForEach(t, tasks) cJSON_DeleteItemFromObjectCaseSensitive(t, "item_range");
    for (int k = 0; k < N; k++) {
        const cJSON *r = runs[order[k]];
        cJSON_AddItemToArray(from, cJSON_CreateString(pos[order[k]]));
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

    // ---- samples: concatenated in shard order, framed by item index ----
    const cJSON *modes = cJSON_GetObjectItemCaseSensitive(r0, "modes"), *m;
    cJSON_ArrayForEach(t, tasks) {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "name"));
        if (!name) { rc = err_set(e, ERR_FORMAT, "%s/run.json: a task without 'name'", pos[order[0]]); goto done; }
        cJSON_ArrayForEach(m, modes) {
            char op[4096];
            if ((rc = results_samples_path(op, sizeof op, out, name, m->valuestring, e)) || (rc = results_writer_open(&w, op, 0, e))) goto done;
            int next = 0;
            for (int k = 0; k < N && !rc; k++) {
                char sp[4096];
                struct results_sample *v = NULL;
                int n = 0;
                if ((rc = results_samples_path(sp, sizeof sp, pos[order[k]], name, m->valuestring, e)) ||
                    (rc = results_samples_read(sp, &v, &n, e)))
                    break;
                if (n > 0 && v[0].idx != next)
                    rc = err_set(e, ERR_MISMATCH, "%s: starts at item %d, expected %d (shards must be contiguous)", sp, v[0].idx, next);
                for (int i = 0; i < n && !rc; i++) rc = results_writer_add(&w, &v[i], e);
                next += n;
                for (int i = 0; i < n; i++) results_sample_free(&v[i]);
                free(v);
            }
            double want = 0;
            num_field(t, "n_items", &want);
            if (!rc && next != (int)want) rc = err_set(e, ERR_MISMATCH, "task %s mode %s: the shards hold %d items, the task has %d", name, m->valuestring, next, (int)want);
            if (!rc) rc = results_writer_close(&w, e);
            if (rc) goto done;
        }
    }
    cJSON_ReplaceItemInObjectCaseSensitive(merged, "complete", cJSON_CreateBool(1));
    if ((rc = results_write_json(path, merged, e))) goto done;
    if ((rc = results_summarize(out, &sum, e))) goto done;
    if ((rc = path_join(path, sizeof path, out, "summary.json", e)) || (rc = results_write_json(path, sum, e))) goto done;
    if ((rc = report_render(out, &head, e))) goto done;
    printf("merged %d shards: %s/report.md\n\n%s", N, out, head ? head : "");
done:
    results_writer_abort(&w);
    for (int i = 0; runs && i < n_pos; i++) cJSON_Delete(runs[i]);
    free(runs); free(order); free(head);
    cJSON_Delete(merged); cJSON_Delete(sum);
    return rc;
}
