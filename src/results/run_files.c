// run_files.c: the files of a run directory other than samples and summary: samples paths,
// atomic JSON writes, the legacy configuration key, run.json field readers and the default
// run directory name (results.h).
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

#include "base/json_util.h"
#include "base/sha256.h"
#include "results/run_identity.h"
#include "results/run_rec.h"
#include "results/stamp.h"

// ---- files of a run ----
int results_samples_path(char *out, size_t n, const char *dir, const char *task, const char *mode, struct err *e) {
    char name[512];
    int k = snprintf(name, sizeof name, "samples-%s-%s.jsonl.zst", task, mode);
    if (k < 0 || (size_t)k >= sizeof name) return err_set(e, ERR_RANGE, "samples file name too long (%s, %s)", task, mode);
    for (char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
              *p == '_' || *p == '.' || *p == '+'))
            *p = '_';
    return path_join(out, n, dir, name, e);
}

int results_write_json(const char *path, const cJSON *j, struct err *e) {
    char *s = cJSON_Print(j);
    if (!s) return err_set(e, ERR_NOMEM, "%s: out of memory rendering JSON", path);
    size_t n = strlen(s);
    char *t = realloc(s, n + 2);
    if (!t) { free(s); return err_set(e, ERR_NOMEM, "%s: out of memory", path); }
    t[n] = '\n';
    t[n + 1] = 0;
    int rc = file_write_atomic(path, t, n + 1, e);
    free(t);
    return rc;
}

// The key of a schema-1 run.json (written before run_identity.h): kept so the runs made then
// keep the key their samples files are stamped with.
static void legacy_key(char hex[65], const cJSON *run, int with_shard) {
    static const char *const keys[] = {"tokenizer", "modes", "attention", "scales", "tasks", "seed", "limit", "subjects", "window", "shard", "replicas"};
    static const char *const task_stats[] = {"tokenize_s", "n_requests", "n_sequences", "n_tokens", "n_truncated", "item_range"};
    cJSON *k = cJSON_CreateObject();
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(run, "model");
    cJSON_AddItemToObject(k, "model_hash", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(model, "hash"), 1));
    cJSON_AddItemToObject(k, "act", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(model, "act"), 1));
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(run, keys[i]);
        if (!x || (!with_shard && !strcmp(keys[i], "shard"))) continue;
        cJSON *d = cJSON_Duplicate(x, 1);
        if (!strcmp(keys[i], "tasks")) {
            cJSON *t;
            cJSON_ArrayForEach(t, d) {
                for (size_t s = 0; s < sizeof task_stats / sizeof task_stats[0]; s++)
                    cJSON_DeleteItemFromObjectCaseSensitive(t, task_stats[s]);
                // identity by content: the items' hash stands for the files; their
                // paths (the source) are kept only by a run.json made before the hash existed
                if (cJSON_GetObjectItemCaseSensitive(t, "items_sha256")) cJSON_DeleteItemFromObjectCaseSensitive(t, "source");
                // "all" is what every run.json without the field scored: such runs keep their key
                const cJSON *ps = cJSON_GetObjectItemCaseSensitive(t, "ppl_score");
                if (cJSON_IsString(ps) && !strcmp(ps->valuestring, "all")) cJSON_DeleteItemFromObjectCaseSensitive(t, "ppl_score");
            }
        }
        // the tokenizer and the scales by their hashes, not by how their paths were spelled
        if (!strcmp(keys[i], "tokenizer") || !strcmp(keys[i], "scales")) cJSON_DeleteItemFromObjectCaseSensitive(d, "path");
        if (!strcmp(keys[i], "attention")) { // defaults and derived names out: older run.json keep their key
            const cJSON *q = cJSON_GetObjectItemCaseSensitive(d, "qmean"), *k = cJSON_GetObjectItemCaseSensitive(d, "qdq_skip");
            if (cJSON_IsString(q) && !strcmp(q->valuestring, "token")) cJSON_DeleteItemFromObjectCaseSensitive(d, "qmean");
            if (cJSON_IsString(k) && !strcmp(k->valuestring, "none")) cJSON_DeleteItemFromObjectCaseSensitive(d, "qdq_skip");
            cJSON_DeleteItemFromObjectCaseSensitive(d, "display");
        }
        cJSON_AddItemToObject(k, keys[i], d);
    }
    // the GEMM's arithmetic (not the CPU or path, which cannot change a bit): a run made with
    // OpenBLAS (no "gemm" record, key unchanged) cannot be resumed or merged with a newer one
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(run, "gemm"), "arithmetic");
    if (g) cJSON_AddItemToObject(k, "gemm", cJSON_Duplicate(g, 1));
    char *s = cJSON_PrintUnformatted(k);
    sha256_hex(s ? s : "", s ? strlen(s) : 0, hex);
    free(s);
    cJSON_Delete(k);
}

void results_config_key(char hex[65], const cJSON *run, int with_shard) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(run, "schema");
    if (!cJSON_IsNumber(v) || v->valuedouble < 2) { legacy_key(hex, run, with_shard); return; }
    struct run_identity id;
    struct err e = {0};
    if (run_identity_build(&id, run, with_shard, &e)) { snprintf(hex, 65, "%s", "out-of-memory"); return; }
    run_identity_key(hex, &id);
    run_identity_free(&id);
}

const char *results_run_qmean(const cJSON *run) {
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(run, "attention"), "qmean");
    return cJSON_IsString(q) ? q->valuestring : "token";
}

int results_check_complete(const char *dir, const struct run_rec *run, struct err *e) {
    if (run->complete) return 0;
    char cmd[1200]; // the command that made it, shell-quoted, with --resume added
    const int k = results_resume_command(cmd, sizeof cmd, run->json) == 0;
    return err_set(e, ERR_MISMATCH, "%s is not a complete run (run.json: \"complete\" is not true): it was interrupted, "
                   "failed or is still running, and its samples files may be partial; finish it with %s%s%s", dir,
                   k ? "`" : "the same `run` command with --resume", k ? cmd : "", k ? "`" : "");
}

int results_default_dir(char *out, size_t n, const char *model, struct err *e) {
    const char *base = model;
    size_t len = strlen(model);
    while (len > 1 && model[len - 1] == '/') len--;
    for (size_t i = 0; i < len; i++)
        if (model[i] == '/') base = model + i + 1;
    size_t bl = (size_t)(model + len - base);
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    char ts[32];
    strftime(ts, sizeof ts, "%Y%m%d-%H%M%S", &tm);
    int k = snprintf(out, n, "results/%.*s-%s", (int)bl, base, ts);
    if (k < 0 || (size_t)k >= n) return err_set(e, ERR_RANGE, "run directory name too long");
    return 0;
}


int results_summary_check(const char *dir, const struct run_rec *run, const cJSON *sum, struct err *e) {
    const char *have = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sum, "run_key"));
    const char *want = run->resume_key;
    if (!have || !want || !strcmp(have, want)) return 0;
    return err_set(e, ERR_MISMATCH, "%s/summary.json is another run's: it is stamped with run key %.12s.., and %s/run.json's "
                   "resume_key is %.12s..; recompute it from this run's samples files with `hifa4-eval report %s`", dir, have, dir,
                   want, dir);
}
