// test_provenance.c: what a run records about the machine and the numerics, and what that
// changes: run.json holds the CPU model, its SIMD level and the GEMM's arithmetic
// contract with the path that ran it; the configuration key (resume, merge) includes the
// arithmetic but not the CPU or path; `diff` warns when one run was made with OpenBLAS (no
// "gemm" record), with other GEMM arithmetic or another libm variant, and only notes different
// CPUs.
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_util.h"
#include "eval/run.h"
#include "import/make_model.h"
#include "model/gemm.h"
#include "results/results.h"
#include "results/run_identity.h"
#include "test.h"

static char tmp[1024];

static int sh(const char *cmd) {
    int st = system(cmd);
    return st;
}

static void test_key(void) {
    cJSON *a = cJSON_Parse("{\"model\":{\"hash\":\"h\",\"act\":\"bf16\"},\"modes\":[\"bf16\"],\"seed\":1}");
    cJSON *b = cJSON_Duplicate(a, 1);
    cJSON *g = cJSON_AddObjectToObject(b, "gemm");
    cJSON_AddStringToObject(g, "arithmetic", GEMM_ARITHMETIC);
    cJSON_AddStringToObject(g, "isa", "avx512");
    cJSON *c = cJSON_Duplicate(b, 1);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(c, "gemm"), "isa", cJSON_CreateString("scalar"));
    cJSON *h = cJSON_AddObjectToObject(c, "host");
    cJSON_AddStringToObject(h, "cpu", "another CPU");
    char ka[65], kb[65], kc[65];
    results_config_key(ka, a, 1);
    results_config_key(kb, b, 1);
    results_config_key(kc, c, 1);
    CHECK(strcmp(ka, kb) != 0, "an OpenBLAS run (no gemm record) and a gemm.h run must not share a key");
    CHECK(strcmp(kb, kc) == 0, "the GEMM path and the CPU must not change the key (they cannot change a bit)");
    cJSON_Delete(a), cJSON_Delete(b), cJSON_Delete(c);
}

// A schema-2 identity (results/run_identity.h): config.json by value (key order and number
// spelling do not count), the CPU and GEMM path out, a changed field named with both values,
// a newer schema refused naming its version.
static void test_identity(void) {
    cJSON *a = cJSON_Parse("{\"schema\":2,\"model\":{\"hash\":\"h\",\"fingerprint\":{\"version\":2,\"hash\":\"f\"},"
                           "\"config_json\":{\"rope_theta\":500000,\"rms_norm_eps\":1e-5,\"act\":\"silu\"}},"
                           "\"gemm\":{\"arithmetic\":\"x\",\"isa\":\"avx512\"},\"modes\":[\"bf16\"],\"seed\":1}");
    cJSON *b = cJSON_Parse("{\"seed\":1,\"modes\":[\"bf16\"],\"gemm\":{\"isa\":\"scalar\",\"arithmetic\":\"x\"},"
                           "\"host\":{\"cpu\":\"another\"},\"schema\":2,\"model\":{\"config_json\":{\"act\":\"silu\","
                           "\"rms_norm_eps\":0.00001,\"rope_theta\":5e5},\"fingerprint\":{\"hash\":\"f\",\"version\":2},"
                           "\"hash\":\"h\"}}");
    char ka[65], kb[65], d[600];
    results_config_key(ka, a, 1);
    results_config_key(kb, b, 1);
    CHECK(!strcmp(ka, kb), "key order, number spelling, CPU and GEMM path change no identity");
    CHECK(run_json_diff(d, sizeof d, a, b, 1, NULL) == 0 && !d[0], "no difference named: %s", d);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(cJSON_GetObjectItem(b, "model"), "config_json"), "rope_theta",
                              cJSON_CreateNumber(10000));
    results_config_key(kb, b, 1);
    CHECK(strcmp(ka, kb) && run_json_diff(d, sizeof d, a, b, 1, NULL) == 1 && !strcmp(d, "config.json rope_theta 500000 vs 10000"),
          "rope_theta named: %s", d);
    cJSON_AddNumberToObject(cJSON_GetObjectItem(b, "model"), "x", 1); // not in the identity's list
    CHECK(run_json_diff(d, sizeof d, a, b, 1, NULL) == 1, "a field outside the list changes nothing: %s", d);
    struct err e = {0};
    int v = 0;
    CHECK(run_schema(a, &v, "a", &e) == 0 && v == 2, "schema 2 read");
    cJSON_ReplaceItemInObject(a, "schema", cJSON_CreateNumber(RUN_SCHEMA + 1));
    CHECK(run_schema(a, &v, "run.json", &e) == ERR_UNSUPPORTED && strstr(e.msg, "schema version 3"), "newer schema: %s", e.msg);
    cJSON_DeleteItemFromObject(a, "schema");
    CHECK(run_schema(a, &v, "a", &e) == 0 && v == 1, "no field: schema 1");
    cJSON_Delete(a), cJSON_Delete(b);
}

static int small_run_shard(const char *out, int k, int n) {
    char model[1200], q[1200];
    snprintf(model, sizeof model, "%s/model", tmp);
    snprintf(q, sizeof q, "%s/q.jsonl", tmp);
    struct err e = {0};
    if (!file_exists(model)) {
        struct make_model_opts mo;
        make_model_opts_default(&mo);
        if (make_model(&mo, model, &e)) { CHECK(0, "make_model: %s", e.msg); return -1; }
        FILE *f = fopen(q, "w");
        for (int i = 0; i < 3; i++) fprintf(f, "{\"question\": \"%d + 1?\", \"choices\": [\"1\", \"2\"], \"answer\": 1}\n", i);
        fclose(f);
    }
    struct run_opts o;
    run_opts_default(&o);
    o.model_dir = o.model_arg = model;
    o.model_name = "tiny";
    o.out_dir = out;
    o.task.file = q;
    o.shard_k = k, o.shard_n = n;
    static char *argv0[] = {"test_provenance"};
    o.argc = 1, o.argv = argv0;
    const char *modes[] = {"bf16"}, *tasks[] = {"mc_jsonl"};
    struct run *r = NULL;
    int next, rc = run_select_modes(&o, modes, 1, &e) || run_select_tasks(&o, tasks, 1, &e) || run_open(&r, &o, &e) ||
                   run_task_begin(r, 0, &next, &e) || run_task_score(r, 0, run_task_items(r, 0), &e) || run_task_end(r, 0, &e) ||
                   run_finish(r, NULL, &e);
    CHECK(rc == 0, "run: %s", e.msg);
    run_free(r);
    return rc;
}

static int small_run(const char *out) { return small_run_shard(out, 0, 1); }

// merge joins shards made with different libm variants, and says so
static void test_merge_libm(void) {
    char s0[1200], s1[1200], out[1200], path[1300], cmd[8192], log[1300];
    snprintf(s0, sizeof s0, "%s/s0", tmp), snprintf(s1, sizeof s1, "%s/s1", tmp), snprintf(out, sizeof out, "%s/merged", tmp);
    snprintf(log, sizeof log, "%s/merge.log", tmp);
    if (small_run_shard(s0, 0, 2) || small_run_shard(s1, 1, 2)) return;
    const char *bin = getenv("HIFA4_BIN") ? getenv("HIFA4_BIN") : "./hifa4-eval";
    snprintf(cmd, sizeof cmd, "%s merge %s %s --out %s > /dev/null 2> %s", bin, s0, s1, out, log);
    char *txt = NULL;
    size_t n = 0;
    struct err e = {0};
    CHECK(sh(cmd) == 0 && file_read_all(log, &txt, &n, &e) == 0 && !strstr(txt, "libm"), "same libm: no warning (%s)",
          txt ? txt : e.msg);
    free(txt), txt = NULL;
    cJSON *j = NULL;
    snprintf(path, sizeof path, "%s/run.json", s1);
    CHECK(json_parse_file(&j, path, &e) == 0, "%s", e.msg);
    if (!j) return;
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(j, "host"), "libm", cJSON_CreateString("glibc 2.36 other-variant"));
    results_write_json(path, j, &e);
    cJSON_Delete(j);
    snprintf(cmd, sizeof cmd, "rm -rf %s && %s merge %s %s --out %s > /dev/null 2> %s", out, bin, s0, s1, out, log);
    CHECK(sh(cmd) == 0 && file_read_all(log, &txt, &n, &e) == 0 && strstr(txt, "other-variant") && strstr(txt, "merge:"),
          "different libm: merged with a warning (%s)", txt ? txt : e.msg);
    free(txt);
}

static void test_record_and_diff(void) {
    char a[1200], b[1200], path[1300], cmd[4000], log[1300];
    snprintf(a, sizeof a, "%s/a", tmp);
    snprintf(b, sizeof b, "%s/b", tmp);
    snprintf(log, sizeof log, "%s/diff.log", tmp);
    if (small_run(a) || small_run(b)) return;
    snprintf(path, sizeof path, "%s/run.json", b);
    cJSON *j = NULL;
    struct err e = {0};
    CHECK(json_parse_file(&j, path, &e) == 0, "%s", e.msg);
    if (!j) return;
    const cJSON *g = cJSON_GetObjectItem(j, "gemm"), *h = cJSON_GetObjectItem(j, "host");
    const char *ar = cJSON_GetStringValue(cJSON_GetObjectItem(g, "arithmetic"));
    const char *isa = cJSON_GetStringValue(cJSON_GetObjectItem(g, "isa"));
    const char *cpu = cJSON_GetStringValue(cJSON_GetObjectItem(h, "cpu"));
    CHECK(ar && !strcmp(ar, GEMM_ARITHMETIC), "run.json gemm.arithmetic: %s", ar ? ar : "(none)");
    CHECK(isa && (!strcmp(isa, "avx512") || !strcmp(isa, "avx2") || !strcmp(isa, "scalar")), "gemm.isa: %s", isa ? isa : "?");
    CHECK(cpu && *cpu, "host.cpu recorded");
    CHECK(cJSON_GetStringValue(cJSON_GetObjectItem(h, "simd")) != NULL, "host.simd recorded");
    const char *lm = cJSON_GetStringValue(cJSON_GetObjectItem(h, "libm"));
    CHECK(lm && (!strncmp(lm, "glibc 2.", 8) || !strcmp(lm, "unknown")) &&
              (strstr(lm, " fma") || strstr(lm, " sse2") || !strcmp(lm, "unknown")),
          "host.libm recorded: %s", lm ? lm : "(none)");
    const char *bin = getenv("HIFA4_BIN") ? getenv("HIFA4_BIN") : "./hifa4-eval";
    // another CPU, same arithmetic: a note, no warning
    cJSON_ReplaceItemInObject((cJSON *)h, "cpu", cJSON_CreateString("Some Other CPU"));
    results_write_json(path, j, &e);
    snprintf(cmd, sizeof cmd, "%s diff %s %s > /dev/null 2> %s", bin, a, b, log);
    CHECK(sh(cmd) == 0, "diff runs");
    char *txt = NULL;
    size_t n = 0;
    CHECK(file_read_all(log, &txt, &n, &e) == 0 && strstr(txt, "different CPUs") && !strstr(txt, "OpenBLAS"),
          "different CPU: a note only (%s)", txt ? txt : "");
    free(txt), txt = NULL;
    // another libm variant (a CPU without FMA): a warning naming both
    cJSON_ReplaceItemInObject((cJSON *)h, "libm", cJSON_CreateString("glibc 2.36 other-variant"));
    results_write_json(path, j, &e);
    CHECK(sh(cmd) == 0, "diff runs");
    CHECK(file_read_all(log, &txt, &n, &e) == 0 && strstr(txt, "different libm") && strstr(txt, "other-variant"),
          "different libm warned (%s)", txt ? txt : "");
    free(txt), txt = NULL;
    // no gemm record = made with OpenBLAS: a warning naming that run
    cJSON_DeleteItemFromObject(j, "gemm");
    results_write_json(path, j, &e);
    CHECK(sh(cmd) == 0, "diff runs");
    CHECK(file_read_all(log, &txt, &n, &e) == 0 && strstr(txt, "OpenBLAS") && strstr(txt, b), "OpenBLAS run warned (%s)",
          txt ? txt : "");
    free(txt);
    cJSON_Delete(j);
}

int main(void) {
    const char *t = getenv("HIFA4_TMP");
    snprintf(tmp, sizeof tmp, "%s/provenance", t ? t : "build/tmp");
    char cmd[2200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", tmp, tmp);
    CHECK(sh(cmd) == 0, "%s", cmd);
    log_set_level(LOG_WARN);
    test_key();
    test_identity();
    test_record_and_diff();
    test_merge_libm();
    return test_summary("test_provenance");
}
