// test_run_rec.c: run.json read as one typed record (results/run_rec.h). A good schema-2 file
// fills every field; a required field missing and a field of the wrong type are errors naming
// the file, the field and the value; a schema above RUN_SCHEMA is refused naming both versions;
// schema-1 files (no "schema") load, among them every run committed under studies/ and
// tests/data/ (the runs report, diff and tables must keep reading byte for byte).
#include <cjson/cJSON.h>

#include "base/json_util.h"
#include "results/run_identity.h"
#include "results/run_rec.h"
#include "test.h"

static char tmp[1024];

// A schema-2 run.json as run_record.c writes it (the fields the record reads, and some it does not).
static const char *const good =
    "{\"schema\": 2, \"tool\": \"hifa4-eval\", \"version\": \"0.9\", \"git_revision\": \"abc123\", "
    "\"created\": \"2026-01-01T00:00:00Z\", \"command\": [\"run\", \"--model\", \"m\"], "
    "\"host\": {\"cpu\": \"Some CPU\", \"libm\": \"glibc 2.36\"}, \"gemm\": {\"arithmetic\": \"fma-chain-v1\"}, "
    "\"model\": {\"name\": \"toy\", \"arg\": \"m\", \"path\": \"/m\", \"hash\": \"00ff\", \"act\": \"f32\", "
    "\"fingerprint\": {\"version\": 2, \"hash\": \"beef\"}, \"checkpoint_metadata\": {\"gguf_file\": \"m.gguf\"}}, "
    "\"tokenizer\": {\"path\": \"/m\", \"hash\": \"11\", \"bos_policy\": \"auto\", \"add_bos\": true, \"bos_id\": 1, \"eos_id\": 2}, "
    "\"modes\": [\"bf16\", \"direct\", \"hifa4\"], \"reference\": \"bf16\", "
    "\"attention\": {\"tile\": 128, \"v_group\": \"token\", \"qformat\": \"hif4\", \"qmean\": \"channel\", "
    "\"qmean_revision\": 2, \"qdq_skip\": \"none\", \"labels\": {\"bf16\": \"BF16\", \"direct\": \"Direct\", \"hifa4\": \"HiFA4\"}, "
    "\"display\": {\"bf16\": \"bf16\", \"direct\": \"direct\", \"hifa4\": \"hifa4 (channel)\"}}, "
    "\"storage\": {\"bf16\": {\"format\": \"bf16\", \"bits_per_value\": 16, \"per_tensor_scale\": false}}, "
    "\"scales\": {\"path\": \"s.safetensors\", \"sha256\": \"22\"}, "
    "\"scales_calibration\": {\"aggregator\": \"rms\", \"gate\": \"bypass\", \"gate_rule\": \"paper\"}, "
    "\"shard\": {\"k\": 1, \"n\": 3}, \"seed\": 1234, \"limit\": 70, \"replicas\": {\"k\": 2, \"seed\": 1}, "
    "\"tasks\": [{\"name\": \"arc_easy\", \"n_items\": 70, \"item_range\": [23, 46], \"metrics\": [\"acc\", \"acc_norm\"], "
    "\"template_version\": \"1\", \"source\": \"x\", \"items_sha256\": \"33\", \"n_bad_rows\": 0, \"n_tokens\": 900}, "
    "{\"name\": \"wiki\", \"n_items\": 4, \"metrics\": [\"ppl\", \"bits_per_byte\"], \"ppl_score\": \"all\"}], "
    "\"resume_key\": \"44\", \"complete\": true, \"timings\": {\"forward_s\": {\"bf16\": 1.5}}}";

// Writes text as <tmp>/<name>/run.json and returns the directory (static buffer).
static const char *put_run(const char *name, const char *text) {
    static char dir[1200];
    char path[1300];
    struct err e = {0};
    snprintf(dir, sizeof dir, "%s/%s", tmp, name);
    snprintf(path, sizeof path, "%s/run.json", dir);
    mkdir_p(dir, &e);
    CHECK(file_write_atomic(path, text, strlen(text), &e) == 0, "write %s: %s", path, e.msg);
    return dir;
}

// good with one edit: the value at top-level key k (in object obj, or at the top when obj is
// NULL) replaced by the JSON text v, or removed when v is NULL.
static const char *edited(const char *name, const char *obj, const char *k, const char *v) {
    cJSON *j = cJSON_Parse(good), *o = obj ? cJSON_GetObjectItem(j, obj) : j;
    if (v) cJSON_ReplaceItemInObject(o, k, cJSON_Parse(v));
    else cJSON_DeleteItemFromObject(o, k);
    char *t = cJSON_Print(j);
    const char *dir = put_run(name, t);
    free(t);
    cJSON_Delete(j);
    return dir;
}

static void test_good(void) {
    struct run_rec r;
    struct err e = {0};
    const char *dir = put_run("good", good);
    int rc = run_rec_load(&r, dir, &e);
    CHECK(rc == 0, "good run.json: %s", e.msg);
    if (rc) { run_rec_free(&r); return; }
    CHECK(r.schema == 2 && !strcmp(r.tool, "hifa4-eval") && !strcmp(r.git_revision, "abc123"), "schema %d, tool", r.schema);
    CHECK(!strcmp(r.model.name, "toy") && !strcmp(r.model.hash, "00ff") && r.model.fingerprint_version == 2 &&
          !strcmp(r.model.fingerprint, "beef") && !strcmp(r.model.act, "f32") && !strcmp(r.model.gguf_file, "m.gguf") &&
          !r.model.gguf_sha256, "model fields");
    CHECK(!strcmp(r.tokenizer.hash, "11") && r.tokenizer.add_bos == 1 && r.tokenizer.bos_id == 1 && r.tokenizer.eos_id == 2,
          "tokenizer fields");
    CHECK(r.n_modes == 3 && !strcmp(r.modes[2].name, "hifa4") && !strcmp(r.modes[2].label, "HiFA4") &&
          !strcmp(r.modes[2].display, "hifa4 (channel)") && !strcmp(r.reference, "bf16"), "modes");
    CHECK(!strcmp(run_rec_display(&r, "hifa4"), "hifa4 (channel)") && !strcmp(run_rec_display(&r, "other"), "other"),
          "display names");
    CHECK(r.attention.tile == 128 && !strcmp(run_rec_qmean(&r), "channel") && r.attention.qmean_revision == 2 &&
          !strcmp(r.attention.qdq_skip, "none"), "attention");
    CHECK(r.n_storage == 1 && !strcmp(r.storage[0].mode, "bf16") && r.storage[0].bits_per_value == 16, "storage");
    CHECK(!strcmp(r.scales.sha256, "22") && !strcmp(r.calibration.gate_rule, "paper") && !strcmp(r.calibration.aggregator, "rms"),
          "scales");
    CHECK(r.has_shard && r.shard_k == 1 && r.shard_n == 3 && r.seed == 1234 && r.limit == 70 && r.has_replicas &&
          r.replicas == 2, "shard %d/%d, seed, limit, replicas %d", r.shard_k, r.shard_n, r.replicas);
    CHECK(r.n_tasks == 2 && r.tasks[0].items == 23 && r.tasks[0].n_items == 70 && r.tasks[0].has_acc_norm &&
          !r.tasks[0].is_ppl && r.tasks[0].n_tokens == 900 && r.tasks[0].n_truncated == -1, "task 0");
    CHECK(r.tasks[1].is_ppl && r.tasks[1].items == 4 && r.tasks[1].item_lo == -1 && run_rec_task(&r, "wiki") == &r.tasks[1] &&
          !run_rec_task(&r, "mmlu"), "task 1");
    CHECK(!strcmp(r.resume_key, "44") && r.complete && !strcmp(r.gemm_arithmetic, "fma-chain-v1") &&
          !strcmp(r.host_libm, "glibc 2.36") && cJSON_IsObject(r.timings) && !r.prefix_cache, "top level");
    CHECK(cJSON_IsObject(r.json) && cJSON_GetObjectItem(r.json, "command"), "the parsed object is kept");
    run_rec_free(&r);
}

// An error naming the file, the field and (when given) the value.
static void expect_error(const char *dir, int code, const char *what, const char *value) {
    struct run_rec r;
    struct err e = {0};
    char path[1300];
    snprintf(path, sizeof path, "%s/run.json", dir);
    int rc = run_rec_load(&r, dir, &e);
    CHECK(rc == code && strstr(e.msg, path) && strstr(e.msg, what) && (!value || strstr(e.msg, value)),
          "%s: rc %d, want %d naming '%s': %s", dir, rc, code, what, e.msg);
    run_rec_free(&r);
}

static void test_errors(void) {
    expect_error(edited("no_modes", NULL, "modes", NULL), ERR_FORMAT, "missing field 'modes'", NULL);
    expect_error(edited("no_tasks", NULL, "tasks", NULL), ERR_FORMAT, "missing field 'tasks'", NULL);
    expect_error(edited("no_task_name", NULL, "tasks", "[{\"n_items\": 3}]"), ERR_FORMAT, "missing field 'tasks[0].name'", NULL);
    expect_error(edited("empty_modes", NULL, "modes", "[]"), ERR_FORMAT, "field 'modes': empty", NULL);
    expect_error(edited("mode_type", NULL, "modes", "[\"bf16\", \"direct\", 3]"), ERR_FORMAT,
                 "field 'modes[2]': expected a string, got 3", NULL);
    expect_error(edited("hash_type", "model", "hash", "5"), ERR_FORMAT, "field 'model.hash': expected a string", "got 5");
    expect_error(edited("limit_type", NULL, "limit", "\"all\""), ERR_FORMAT, "field 'limit'", "got \"all\"");
    expect_error(edited("tile_type", "attention", "tile", "1.5"), ERR_FORMAT, "field 'attention.tile'", "1.5");
    expect_error(edited("items_type", NULL, "tasks", "[{\"name\": \"t\", \"n_items\": \"x\"}]"), ERR_FORMAT,
                 "field 'tasks[0].n_items'", "got \"x\"");
    expect_error(edited("metric_type", NULL, "tasks", "[{\"name\": \"t\", \"metrics\": [\"acc\", 7]}]"), ERR_FORMAT,
                 "field 'tasks[0].metrics[1]'", "got 7");
    expect_error(edited("replicas_range", NULL, "replicas", "{\"k\": 1000}"), ERR_FORMAT, "field 'replicas.k'", "1000");
    expect_error(edited("shard_missing", NULL, "shard", "{\"n\": 2}"), ERR_FORMAT, "missing field 'shard.k'", NULL);
    expect_error(edited("complete_type", NULL, "complete", "\"yes\""), ERR_FORMAT, "field 'complete': expected true/false",
                 "\"yes\"");
    // a newer schema: refused naming its version and the versions this binary reads
    char want[64];
    snprintf(want, sizeof want, "versions 1 to %d", RUN_SCHEMA);
    expect_error(edited("schema_new", NULL, "schema", "99"), ERR_UNSUPPORTED, "schema version 99", want);
}

// Schema 1: the good file without "schema" and without what schema 2 added, and every run
// committed to the repository.
static void test_schema1(void) {
    cJSON *j = cJSON_Parse(good);
    cJSON_DeleteItemFromObject(j, "schema");
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(j, "model"), "fingerprint");
    char *t = cJSON_Print(j);
    const char *dir = put_run("schema1", t);
    free(t);
    cJSON_Delete(j);
    struct run_rec r;
    struct err e = {0};
    int rc = run_rec_load(&r, dir, &e);
    CHECK(rc == 0 && r.schema == 1 && r.model.fingerprint_version == 0 && !r.model.fingerprint, "schema 1: %s", e.msg);
    run_rec_free(&r);
    static const char *const committed[] = {
        "studies/qwen25/0.5b/arc_easy-bc", "studies/qwen25/0.5b/arc_easy-ade", "studies/qwen25/0.5b/arc_challenge-bc",
        "studies/qwen25/0.5b/arc_challenge-ade", "tests/data/tables/inputs/run-ablation", "tests/data/tables/inputs/run-agg-mean",
        "tests/data/tables/inputs/run-agg-p99", "tests/data/tables/inputs/run-agg-rms", "tests/data/tables/inputs/run-niah"};
    for (size_t i = 0; i < sizeof committed / sizeof committed[0]; i++) {
        rc = run_rec_load(&r, committed[i], &e);
        CHECK(rc == 0 && r.schema == 1 && r.n_modes >= 1 && r.n_tasks >= 1 && r.complete && r.model.hash && r.resume_key,
              "%s: %s", committed[i], e.msg);
        run_rec_free(&r);
    }
    rc = run_rec_load(&r, committed[0], &e);
    CHECK(rc == 0 && r.n_modes == 3 && !strcmp(r.modes[1].display, "direct+qmean (channel)") && r.attention.qmean_revision == 2 &&
          r.limit == 500 && r.seed == 1234 && r.tasks[0].items == 500 && !strcmp(r.tasks[0].name, "arc_easy") &&
          r.tasks[0].has_acc_norm && !strncmp(r.model.hash, "ad981b194087", 12), "%s fields", committed[0]);
    run_rec_free(&r);
    // a run.json that is not there: the file's error
    rc = run_rec_load(&r, tmp, &e);
    CHECK(rc != 0 && strstr(e.msg, "run.json"), "no run.json: %s", e.msg);
    run_rec_free(&r);
}

int main(void) {
    const char *t = getenv("HIFA4_TMP");
    snprintf(tmp, sizeof tmp, "%s/run_rec", t ? t : "build/tmp");
    struct err e = {0};
    mkdir_p(tmp, &e);
    log_set_level(LOG_WARN);
    test_good();
    test_errors();
    test_schema1();
    return test_summary("test_run_rec");
}
