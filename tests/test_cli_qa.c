// test_cli_qa.c: acceptance checks of the command line found while testing it as a user would
// (the qa branch): `<command> --help` prints its usage on stdout (so `| less` works) and exits
// 0; calibrate's progress lines end with a newline when stderr is not a terminal; a model
// named from configs/models (resolved from the cache, offline) is recorded under its registry
// name, not the cache's revision directory, and calibrate accepts such a name too.
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "base/common.h"
#include "io/safetensors.h"
#include "cli_util.h"

// "--task T --data-dir D" for runs whose checks do not depend on the task: MMLU of the test
// data, else the TruthfulQA miniature committed in tests/data/tasks/datasets.
static const char *task_args(void) {
    static char args[4200];
    if (test_data("datasets/mmlu"))
        snprintf(args, sizeof args, "--task mmlu --data-dir %s", test_data("datasets"));
    else
        snprintf(args, sizeof args, "--task truthfulqa_mc1 --data-dir tests/data/tasks/datasets");
    return args;
}

static size_t file_size_of(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n > 0 ? (size_t)n : 0;
}

static void test_help_on_stdout(void) {
    static const char *const cmds[] = {"list", "tokenize", "download", "cost", "inspect", "calibrate", "attn",
                                       "run", "diff", "report", "tables", "prompts", "logits", "import-llama2c",
                                       "make-model", "diagnose", "trace", "merge"};
    char cmd[4096], out[1200], errf[1200];
    snprintf(out, sizeof out, "%s/help.out", tmp);
    snprintf(errf, sizeof errf, "%s/help.err", tmp);
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s %s --help >%s 2>%s", bin, cmds[i], out, errf);
        int rc = sh("%s", cmd);
        CHECK(rc == 0, "%s --help: exit %d", cmds[i], rc);
        char *s = slurp("%s", out);
        CHECK(s && !strncmp(s, "usage: hifa4-eval ", 18), "%s --help: stdout does not start with the usage line", cmds[i]);
        free(s);
        CHECK(file_size_of(errf) == 0, "%s --help: %zu bytes on stderr", cmds[i], file_size_of(errf));
    }
}

// make-model checkpoint laid out as the download cache holds qwen3-8b, with an index that maps
// every tensor to the single model.safetensors (the index decides the shard list).
static int make_cached_model(char *root, size_t n) {
    char dir[2048], cmd[4096], path[2200];
    snprintf(root, n, "%s/cache", tmp);
    snprintf(dir, sizeof dir, "%s/models/Qwen/Qwen3-8B/main", root);
    snprintf(cmd, sizeof cmd,
             "rm -rf %s && %s --quiet make-model --arch qwen3 --layers 2 --dim 64 --heads 2 --kv-heads 1 --head-dim 64 "
             "--ffn 128 --seed 3 --plant-outlier 0:51:34 --out %s >/dev/null",
             root, bin, dir);
    if (sh("%s", cmd)) return -1;
    struct safetensors st;
    struct err e = {0};
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (st_open(&st, path, &e)) { fprintf(stderr, "%s\n", e.msg); return -1; }
    cJSON *idx = cJSON_CreateObject(), *wm = cJSON_CreateObject();
    cJSON_AddItemToObject(idx, "metadata", cJSON_CreateObject());
    for (int i = 0; i < st.n_tensors; i++) cJSON_AddStringToObject(wm, st.tensors[i].name, "model.safetensors");
    cJSON_AddItemToObject(idx, "weight_map", wm);
    st_close(&st);
    char *s = cJSON_PrintUnformatted(idx);
    cJSON_Delete(idx);
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    int rc = file_write_atomic(path, s, strlen(s), &e);
    free(s);
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    if (!rc) rc = file_write_atomic(path, "{}\n", 3, &e);
    return rc;
}

static void test_named_model(void) {
    char cache[1200], cmd[32768], path[1400], errf[1200];
    if (make_cached_model(cache, sizeof cache)) { CHECK(0, "could not lay out the cached model"); return; }
    snprintf(errf, sizeof errf, "%s/named.err", tmp);
    // calibrate accepts the registry name (offline from the cache)
    snprintf(cmd, sizeof cmd,
             "HIFA4_CACHE=%s HIFA4_OFFLINE=1 %s calibrate --model qwen3-8b --calib %s "
             "--calib-samples 4 --calib-len 64 --threads 1 --out %s/named-scales.safetensors >/dev/null 2>%s",
             cache, bin, test_text(), tmp, errf);
    int rc = sh("%s", cmd);
    CHECK(rc == 0, "calibrate --model qwen3-8b (cached, offline): exit %d", rc);
    // progress lines end with a newline when stderr is a file: no "tok/scalibrate" run-on
    char *err = slurp("%s", errf);
    CHECK(err && !strstr(err, "tok/scalibrate") && !strchr(err, '\r'), "calibrate progress on a non-terminal:\n%s", err ? err : "");
    free(err);
    snprintf(path, sizeof path, "%s/named-scales.safetensors", tmp);
    struct safetensors st;
    struct err e = {0};
    if (!st_open(&st, path, &e)) {
        const char *id = st_meta(&st, "model_id");
        CHECK(id && !strcmp(id, "qwen3-8b"), "scales model_id '%s', expected the registry name qwen3-8b", id ? id : "(none)");
        st_close(&st);
    } else {
        CHECK(0, "%s", e.msg);
    }
    // run records the registry name (report title, tables rows), not the revision directory
    snprintf(cmd, sizeof cmd,
             "rm -rf %s/named-run && HIFA4_CACHE=%s %s --quiet run --model qwen3-8b --offline %s --limit 2 "
             "--attn f32 --threads 1 --out %s/named-run >/dev/null 2>%s",
             tmp, cache, bin, task_args(), tmp, errf);
    rc = sh("%s", cmd);
    CHECK(rc == 0, "run --model qwen3-8b (cached, offline): exit %d", rc);
    snprintf(path, sizeof path, "%s/named-run/run.json", tmp);
    char *js = slurp("%s", path);
    cJSON *run = js ? cJSON_Parse(js) : NULL;
    free(js);
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(run, "model"), "name"));
    CHECK(name && !strcmp(name, "qwen3-8b"), "run.json model.name '%s', expected qwen3-8b", name ? name : "(none)");
    cJSON_Delete(run);
    // calibrate's default scales for the name are picked up by trace (and run), from any cwd
    char acache[4096], abin[4096], abrown[4096], cwd[1200];
    snprintf(cwd, sizeof cwd, "%s/cwd", tmp);
    if (realpath(cache, acache) && realpath(bin, abin) && realpath(test_text(), abrown)) {
        snprintf(cmd, sizeof cmd,
                 "rm -rf %s && mkdir -p %s && cd %s && export HIFA4_CACHE=%s && %s --quiet calibrate --model qwen3-8b --offline "
                 "--calib %s --calib-samples 4 --calib-len 64 --threads 1 >/dev/null 2>&1 && %s --quiet trace --model qwen3-8b "
                 "--offline --text %s --ctx 128 --limit 1 --attn hifa4 --threads 1 --out trace >/dev/null 2>&1",
                 cwd, cwd, cwd, acache, abin, abrown, abin, abrown);
        rc = sh("%s", cmd);
        CHECK(rc == 0, "calibrate + trace of qwen3-8b from a fresh cwd: exit %d", rc);
        snprintf(path, sizeof path, "%s/trace/trace.json", cwd);
        js = slurp("%s", path);
        cJSON *tj = js ? cJSON_Parse(js) : NULL;
        free(js);
        const char *tid = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(tj, "model"), "id"));
        const char *tsc = cJSON_GetStringValue(cJSON_GetObjectItem(tj, "scales"));
        CHECK(tid && !strcmp(tid, "qwen3-8b"), "trace model id '%s'", tid ? tid : "(none)");
        char want_sc[4200];
        snprintf(want_sc, sizeof want_sc, "%s/scales/qwen3-8b-", acache);
        CHECK(tsc && !strncmp(tsc, want_sc, strlen(want_sc)), "trace used calibrate's default scales (in the cache): '%s'",
              tsc ? tsc : "(none)");
        // calibrate wrote nothing into the directory it ran in (the source tree, for a user)
        snprintf(path, sizeof path, "%s/configs", cwd);
        CHECK(!dir_exists(path), "calibrate created %s", path);
        cJSON_Delete(tj);
    } else {
        CHECK(0, "realpath of the cache, binary or text");
    }
    // cost takes the shape of a named model from its cached config.json (no weights needed)
    char outf[1200];
    snprintf(outf, sizeof outf, "%s/cost.out", tmp);
    snprintf(cmd, sizeof cmd, "HIFA4_CACHE=%s %s cost --model qwen3-8b --seq 4096 >%s 2>/dev/null", cache, bin, outf);
    rc = sh("%s", cmd);
    char *co = slurp("%s", outf);
    CHECK(rc == 0 && co && strstr(co, "2 layers, 2 query heads, 1 kv heads, head_dim 64"), "cost --model qwen3-8b (cached): exit %d\n%s",
          rc, co ? co : "");
    free(co);
    snprintf(cmd, sizeof cmd, "HIFA4_CACHE=%s/nothing %s cost --model qwen3-8b --seq 4096 >/dev/null 2>%s", tmp, bin, outf);
    rc = sh("%s", cmd);
    co = slurp("%s", outf);
    CHECK(rc == 1 && co && strstr(co, "download --model qwen3-8b") && strstr(co, "--shape"), "cost, not cached: exit %d: %s", rc, co ? co : "");
    free(co);
}

// unknown names given to run are usage errors: exit 2 with one line naming the value
static void test_run_usage_errors(void) {
    char cmd[8192], errf[1200];
    const char *model = TEST_NEED("goldens/models/qwen3-tiny");
    if (!model) return;
    snprintf(errf, sizeof errf, "%s/usage.err", tmp);
    snprintf(cmd, sizeof cmd, "%s run --model %s --task mmlu,nosuchtask --attn f32 --out %s/u 2>%s",
             bin, model, tmp, errf);
    int rc = sh("%s", cmd);
    CHECK(rc == 2, "run --task nosuchtask: exit %d, expected 2", rc);
    char *s = slurp("%s", errf);
    CHECK(s && strstr(s, "'nosuchtask'") && strstr(s, "mmlu") && strchr(s, '\n') == s + strlen(s) - 1,
          "one line naming the task and the known ones: %s", s ? s : "");
    free(s);
    snprintf(cmd, sizeof cmd, "%s calibrate --model %s --calib %s --alpha -0.5 "
             "--out %s/neg.safetensors 2>/dev/null", bin, model, test_text(), tmp);
    rc = sh("%s", cmd);
    CHECK(rc == 2, "calibrate --alpha -0.5: exit %d, expected 2 (it used to mean 'the gate decides')", rc);
    snprintf(cmd, sizeof cmd, "%s --model %s --task nosuchtask --out %s/u 2>/dev/null", bin, model, tmp);
    rc = sh("%s", cmd);
    CHECK(rc == 2, "bare form --task nosuchtask: exit %d, expected 2", rc);
}

// --threads is N >= 1 or 0 (all cores) in every command that has it; anything else is a usage
// error naming the value, before any file is read (the model and data named here do not exist)
static void test_threads_option(void) {
    const char *cmds[] = {"run --model nomodel --task exam", "calibrate --model nomodel --calib nofile",
                          "diagnose --model nomodel", "trace --model nomodel --task exam",
                          "logits --model nomodel --ids-file x --attn bf16 --out x", "attn --case x --attn bf16 --out x"};
    const char *bad[] = {"-1", "1.5", "x", ""};
    char cmd[1400], errf[1200];
    snprintf(errf, sizeof errf, "%s/threads.err", tmp);
    for (size_t c = 0; c < sizeof cmds / sizeof *cmds; c++)
        for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
            snprintf(cmd, sizeof cmd, "%s %s --threads '%s' 2>%s", bin, cmds[c], bad[b], errf);
            int rc = sh("%s", cmd);
            char *s = slurp("%s", errf);
            CHECK(rc == 2 && s && strstr(s, "--threads") && strstr(s, "0 for all cores"),
                  "%s --threads '%s': exit %d: %s", cmds[c], bad[b], rc, s ? s : "");
            free(s);
        }
    // 0 and N >= 1 pass the option check (the command then fails on the missing model: exit 1)
    const char *good[] = {"0", "1", "3"};
    for (size_t g = 0; g < 3; g++) {
        snprintf(cmd, sizeof cmd, "%s run --model %s/nomodel --task exam --threads %s 2>/dev/null", bin, tmp, good[g]);
        int rc = sh("%s", cmd);
        CHECK(rc == 1, "run --threads %s: exit %d, expected 1 (no such model)", good[g], rc);
    }
}

// `tables` compares with bf16 as the paper does: a run with another reference is listed as left
// out (with why), never mixed into a table; a run of rows A, B, D fills Table 7's rows
static void test_tables_mixed_reference(void) {
    char cmd[8192], outf[1200];
    const char *refs[2] = {"f32,direct,direct+qmean,direct+qmean+preorder", "bf16,direct,direct+qmean,direct+qmean+preorder"};
    snprintf(cmd, sizeof cmd, "rm -rf %s/tabmodel && %s --quiet make-model --arch qwen3 --layers 1 --dim 64 --heads 2 --kv-heads 1 "
             "--ffn 128 --out %s/tabmodel >/dev/null", tmp, bin, tmp);
    CHECK(sh("%s", cmd) == 0, "make-model for tables");
    for (int r = 0; r < 2; r++) {
        snprintf(cmd, sizeof cmd, "rm -rf %s/tab%d && %s --quiet run --model %s/tabmodel %s "
                 "--limit 2 --attn %s --threads 1 --out %s/tab%d >/dev/null 2>&1", tmp, r, bin, tmp, task_args(), refs[r], tmp, r);
        CHECK(sh("%s", cmd) == 0, "run --attn %s", refs[r]);
    }
    snprintf(outf, sizeof outf, "%s/tables.out", tmp);
    snprintf(cmd, sizeof cmd, "%s tables %s/tab0 %s/tab1 >%s 2>/dev/null", bin, tmp, tmp, outf);
    CHECK(sh("%s", cmd) == 0, "tables over two runs");
    char *s = slurp("%s", outf);
    CHECK(s && strstr(s, "/tab0`: its reference mode is f32") && !strstr(s, "/tab1`: its reference") &&
              strstr(s, "| A. Direct HIF4 | - | - |") && strstr(s, "| C. +Smooth-QK | \xe2\x9c\x93 | - | - |"),
          "f32 run left out, rows A-E of the bf16 run (C not run):\n%s", s ? s : "");
    free(s);
    snprintf(cmd, sizeof cmd, "%s tables %s/tab1 %s/tab1 >%s 2>/dev/null", bin, tmp, tmp, outf);
    CHECK(sh("%s", cmd) == 0, "tables over one reference");
    s = slurp("%s", outf);
    CHECK(s && !strstr(s, "Inputs left out"), "bf16 reference: nothing left out:\n%s", s ? s : "");
    free(s);
}

static void test_ppl_report(void) {
    char cmd[8192], path[1200];
    snprintf(path, sizeof path, "%s/ppl.txt", tmp);
    struct err e = {0};
    const char *text = "Once upon a time there was a little dog. It liked to run in the park with its friends.\n";
    CHECK(file_write_atomic(path, text, strlen(text), &e) == 0, "%s", e.msg);
    snprintf(cmd, sizeof cmd, "rm -rf %s/pplmodel %s/pplrun && %s --quiet make-model --arch llama --layers 1 --dim 64 --heads 2 "
             "--kv-heads 1 --ffn 128 --out %s/pplmodel >/dev/null && %s --quiet run --model %s/pplmodel --task ppl --task-file %s "
             "--attn f32,bf16 --threads 1 --out %s/pplrun >/dev/null 2>&1", tmp, tmp, bin, tmp, bin, tmp, path, tmp);
    CHECK(sh("%s", cmd) == 0, "ppl run");
    snprintf(path, sizeof path, "%s/pplrun/report.md", tmp);
    char *md = slurp("%s", path);
    CHECK(md && strstr(md, "Perplexity") && !strstr(md, "### Accuracy (%"), "ppl-only report without an empty accuracy table:\n%s",
          md ? md : "");
    free(md);
}

// `--resume` on a run that is already complete scores nothing and keeps the finished run's
// created time, timings, hook coverage and cost counts (they were replaced by zeros)
static void test_resume_complete(void) {
    char cmd[8192], path[1200];
    const char *fields[] = {"created", "timings", "hook_coverage", "cost_counts"};
    cJSON *before = NULL, *after = NULL;
    for (int pass = 0; pass < 2; pass++) {
        if (!pass) {
            char pre[2400];
            snprintf(pre, sizeof pre, "rm -rf %s/rmodel %s/rrun && %s", tmp, tmp, bin);
            snprintf(cmd, sizeof cmd, "%s --quiet make-model --arch llama --layers 1 --dim 64 --heads 2 --kv-heads 1 --ffn 128 "
                     "--out %s/rmodel >/dev/null 2>&1 && %s --quiet run --model %s/rmodel %s "
                     "--limit 3 --attn f32,bf16 --threads 1 --out %s/rrun >/dev/null 2>&1", pre, tmp, bin, tmp, task_args(), tmp);
        } else {
            snprintf(cmd, sizeof cmd, "sleep 1 && %s --quiet run --model %s/rmodel %s "
                     "--limit 3 --attn f32,bf16 --threads 1 --out %s/rrun --resume >/dev/null 2>&1", bin, tmp, task_args(), tmp);
        }
        CHECK(sh("%s", cmd) == 0, "run (pass %d)", pass);
        snprintf(path, sizeof path, "%s/rrun/run.json", tmp);
        char *js = slurp("%s", path);
        cJSON *j = js ? cJSON_Parse(js) : NULL;
        if (pass) after = j;
        else before = j;
        free(js);
    }
    CHECK(before && after, "run.json readable");
    for (size_t k = 0; before && after && k < sizeof fields / sizeof fields[0]; k++)
        CHECK(cJSON_Compare(cJSON_GetObjectItem(before, fields[k]), cJSON_GetObjectItem(after, fields[k]), 1),
              "'%s' kept by --resume of a complete run", fields[k]);
    const cJSON *hc = cJSON_GetObjectItem(cJSON_GetObjectItem(after, "hook_coverage"), "bf16");
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(hc, "calls")) > 0, "hook coverage not zero after the resume");
    cJSON_Delete(before);
    cJSON_Delete(after);
}

// `diff RUN_A RUN_B` with no mode named compares every mode the two runs share, one section
// each (it used to compare the references only and report 0 flips); a mode one run lacks is
// not listed.
static void test_diff_every_mode(void) {
    char cmd[8192], outf[1200];
    snprintf(cmd, sizeof cmd, "rm -rf %s/dmodel %s/drun0 %s/drun1 && %s --quiet make-model --arch qwen3 --layers 1 --dim 64 "
             "--heads 2 --kv-heads 1 --ffn 128 --out %s/dmodel >/dev/null", tmp, tmp, tmp, bin, tmp);
    CHECK(sh("%s", cmd) == 0, "make-model for diff");
    const char *modes[2] = {"bf16,direct,direct+qmean", "bf16,direct,direct+qmean,direct+qmean+preorder"};
    for (int r = 0; r < 2; r++) {
        snprintf(cmd, sizeof cmd, "%s --quiet run --model %s/dmodel %s --limit 3 --attn %s --threads 1 --out %s/drun%d "
                 ">/dev/null 2>&1", bin, tmp, task_args(), modes[r], tmp, r);
        CHECK(sh("%s", cmd) == 0, "run --attn %s", modes[r]);
    }
    snprintf(outf, sizeof outf, "%s/diff_all.out", tmp);
    snprintf(cmd, sizeof cmd, "%s diff %s/drun0 %s/drun1 >%s 2>/dev/null", bin, tmp, tmp, outf);
    CHECK(sh("%s", cmd) == 0, "diff of two runs");
    char *s = slurp("%s", outf);
    const char *want[3] = {"## mode bf16 ", "## mode direct ", "## mode direct+qmean "};
    for (int k = 0; k < 3; k++) CHECK(s && strstr(s, want[k]), "diff lists '%s':\n%s", want[k], s ? s : "");
    int tables = 0;
    for (const char *p = s; p && (p = strstr(p, "| task | n | acc A |")); p++) tables++;
    CHECK(tables == 3, "diff: %d comparison tables, expected 3 (one per shared mode)", tables);
    CHECK(s && !strstr(s, "## mode direct+qmean+preorder"), "a mode only B has is not listed");
    free(s);
}

// A model that answers "A" to every question is flagged in report.md and in the lines run prints:
// the four options are the same text, so their log-likelihoods tie and the first (A) is taken.
static void test_degenerate_flag(void) {
    char cmd[8192], path[1200];
    snprintf(path, sizeof path, "%s/always_a.jsonl", tmp);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "write %s", path);
    if (!f) return;
    for (int i = 0; i < 40; i++)
        fprintf(f, "{\"id\": \"q%d\", \"question\": {\"stem\": \"Question %d: which one?\", \"choices\": [{\"text\": "
                   "\"same\", \"label\": \"A\"}, {\"text\": \"same\", \"label\": \"B\"}, {\"text\": \"same\", \"label\": \"C\"}, "
                   "{\"text\": \"same\", \"label\": \"D\"}]}, \"answerKey\": \"%c\"}\n", i, i, 'A' + i % 4);
    fclose(f);
    snprintf(cmd, sizeof cmd, "rm -rf %s/amodel %s/arun && %s --quiet make-model --arch llama --layers 1 --dim 64 --heads 2 "
             "--kv-heads 1 --ffn 128 --out %s/amodel >/dev/null && %s run --model %s/amodel --task arc_easy --task-file %s "
             "--attn f32,bf16 --threads 1 --out %s/arun >%s/arun.out 2>/dev/null", tmp, tmp, bin, tmp, bin, tmp, path, tmp, tmp);
    CHECK(sh("%s", cmd) == 0, "always-A run");
    snprintf(path, sizeof path, "%s/arun/report.md", tmp);
    char *md = slurp("%s", path);
    CHECK(md && strstr(md, "### Degenerate modes") && strstr(md, "| arc_easy | f32 | 40 | picks option A on 100% of the items"),
          "always-A model flagged in report.md:\n%s", md ? md : "");
    free(md);
    snprintf(path, sizeof path, "%s/arun.out", tmp);
    char *out = slurp("%s", path);
    CHECK(out && strstr(out, "picks option A on 100% of the items"), "flag in the lines run prints:\n%s", out ? out : "");
    free(out);
}

int main(void) {
    if (cli_begin("cli_qa")) return test_summary("test_cli_qa");
    test_help_on_stdout();
    test_named_model();
    test_run_usage_errors();
    test_threads_option();
    test_tables_mixed_reference();
    test_ppl_report();
    test_resume_complete();
    test_diff_every_mode();
    test_degenerate_flag();
    return test_summary("test_cli_qa");
}
