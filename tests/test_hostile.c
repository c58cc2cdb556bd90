// test_hostile.c: the tool used as a hostile user would, driving ./hifa4-eval
// (HIFA4_BIN) on small synthetic checkpoints made here with make-model. Each case failed (or
// crashed) before its fix:
//  - prompts --task niah crashed; now a usage error that says what niah needs;
//  - report on a run whose modes hold different item counts overflowed the heap; report and
//    diff now refuse it naming the file, and refuse a killed (incomplete) run outright;
//  - a non-finite log-likelihood was scored as pred 0; now the run stops naming task, item and
//    mode (--nonfinite count: recorded, excluded, shown in the report); a scales file of 1e38
//    is refused naming layer / head / channel before the model loads;
//  - cost overflowed 64-bit counters for a 70B shape at T = 4M;
//  - an empty task file failed after every other task was scored; now before the model loads;
//  - two processes on one --out corrupted it; a lock refuses the second (a killed holder frees it);
//  - a run that failed while writing its report said complete: true;
//  - --version, and --task-file as the one name of a task's data file.
// Paths into ../shared go through shared_path() only.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/common.h"
#include "io/safetensors.h"
#include "results/stamp.h"
#include "test.h"
#include "cli_util.h"

static char model[1200], mc[1200];

// The one place that names ../shared (HIFA4_TEST_DATA may move it).
static const char *shared_path(const char *rel) {
    static char buf[4][2048];
    static int k;
    const char *root = getenv("HIFA4_TEST_DATA");
    char *b = buf[k++ % 4];
    snprintf(b, sizeof buf[0], "%s/%s", root && root[0] ? root : "../shared", rel);
    return b;
}

// Byte equality of two files as stored (a samples file's stamp frame included).
static int same_raw(const char *a, const char *b) {
    char *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    struct err e = {0};
    int same = !file_read_raw(a, &x, &nx, &e) && !file_read_raw(b, &y, &ny, &e) && nx == ny && !memcmp(x, y, nx);
    free(x), free(y);
    return same;
}

static int one_line(const char *s) { return s && strchr(s, '\n') == s + strlen(s) - 1; }

static cJSON *json_at(const char *fmt, const char *dir) {
    char *s = slurp(fmt, dir);
    cJSON *j = s ? cJSON_Parse(s) : NULL;
    free(s);
    return j;
}

static int run_complete(const char *dir) {
    cJSON *j = json_at("%s/run.json", dir);
    int c = j && cJSON_IsTrue(cJSON_GetObjectItem(j, "complete"));
    cJSON_Delete(j);
    return c;
}

static int same_file(const char *a, const char *b) {
    char *x = slurp("%s", a), *y = slurp("%s", b);
    int same = x && y && !strcmp(x, y);
    free(x), free(y);
    return same;
}

// An edit of a checkpoint: elements [at, at + n) of tensor `poison` set to v (NULL: none), and
// a tensor `add` of add_n zeros (binary32, 1-D) appended (NULL: none).
struct st_edit {
    const char *poison;
    size_t at, n;
    float v;
    const char *add;
    int64_t add_n;
};

// Rewrites dir/model.safetensors with the edit applied.
static int rewrite_st(const char *dir, const struct st_edit *ed) {
    char path[1400], tmpf[1500];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    snprintf(tmpf, sizeof tmpf, "%s.new", path);
    struct safetensors st;
    struct err e = {0};
    if (st_open(&st, path, &e)) return -1;
    const int n = st.n_tensors + (ed->add != NULL);
    struct st_wtensor *w = calloc((size_t)n, sizeof *w);
    void **data = calloc((size_t)n, sizeof *data);
    for (int i = 0; i < st.n_tensors; i++) {
        const struct st_tensor *t = &st.tensors[i];
        w[i] = (struct st_wtensor){t->name, t->dtype, t->ndim, {0}, NULL};
        memcpy(w[i].shape, t->shape, sizeof t->shape);
        data[i] = malloc(t->nbytes);
        memcpy(data[i], t->data, t->nbytes);
        for (size_t k = ed->at; ed->poison && !strcmp(t->name, ed->poison) && k < ed->at + ed->n; k++) {
            if (t->dtype == ST_F32) ((float *)data[i])[k] = ed->v;
            else { uint16_t h = f32_to_bf16(ed->v); memcpy((char *)data[i] + 2 * k, &h, 2); }
        }
        w[i].data = data[i];
    }
    if (ed->add) {
        data[n - 1] = calloc((size_t)ed->add_n, sizeof(float));
        w[n - 1] = (struct st_wtensor){ed->add, ST_F32, 1, {ed->add_n}, data[n - 1]};
    }
    int rc = st_write(tmpf, w, n, NULL, 0, &e);
    for (int i = 0; i < n; i++) free(data[i]);
    free(data), free(w);
    st_close(&st);
    return rc ? rc : rename(tmpf, path);
}

// Rewrites dir/model.safetensors with elements [at, at + n) of tensor `name` set to v.
static int poison(const char *dir, const char *name, size_t at, size_t n, float v) {
    return rewrite_st(dir, &(struct st_edit){.poison = name, .at = at, .n = n, .v = v});
}

// Rewrites dir/model.safetensors with a tensor `name` of n zeros (binary32, 1-D) added.
static int add_tensor(const char *dir, const char *name, int64_t n) {
    return rewrite_st(dir, &(struct st_edit){.add = name, .add_n = n});
}

// Writes to dst the item frames of src under the stamp frame dst has now (stamp.h).
static int restamp(const char *src, const char *dst) {
    char *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    struct err e = {0};
    if (file_read_raw(dst, &a, &na, &e) || file_read_raw(src, &b, &nb, &e)) { free(a); free(b); return -1; }
    const size_t sa = results_stamp_size(a, na), sb = results_stamp_size(b, nb);
    char *c = malloc(sa + nb - sb + 1);
    memcpy(c, a, sa);
    memcpy(c + sa, b + sb, nb - sb);
    int rc = sa ? file_write_atomic(dst, c, sa + nb - sb, &e) : -1;
    free(a), free(b), free(c);
    return rc;
}



// ---- helpers of the unlucky-user inputs (expect, write_text: cli_util.h) ----
// Sets dir/config.json's field key to the JSON value (NULL: removes it).
static void set_cfg(const char *dir, const char *key, const char *value) {
    cJSON *j = json_at("%s/config.json", dir);
    cJSON_DeleteItemFromObjectCaseSensitive(j, key);
    if (value) cJSON_AddItemToObject(j, key, cJSON_Parse(value));
    char *t = cJSON_Print(j), path[1400];
    snprintf(path, sizeof path, "%s/config.json", dir);
    write_text(path, t, strlen(t));
    free(t);
    cJSON_Delete(j);
}

// ---- crashes ----
static void test_prompts_niah(void) {
    char err[1400];
    snprintf(err, sizeof err, "%s/niah.err", tmp);
    int rc = sh("%s prompts --task niah --limit 1 >/dev/null 2>%s", bin, err);
    char *s = slurp("%s", err);
    CHECK(rc == 2 && one_line(s) && strstr(s, "niah") && strstr(s, "--tokenizer"), "prompts --task niah --limit 1: exit %d: %s",
          rc, s ? s : "");
    free(s);
    rc = sh("%s prompts --task niah >/dev/null 2>&1", bin);
    CHECK(rc == 2, "prompts --task niah: exit %d (was free(): invalid pointer)", rc);
    rc = sh("%s prompts --task niah --task-file tests/data/tasks/haystack.txt --tokenizer %s --niah-lengths 64 "
            "--niah-per-cell 1 >%s/niah.out 2>/dev/null", bin, model, tmp);
    s = slurp("%s/niah.out", tmp);
    CHECK(rc == 0 && s && strstr(s, "\"id\":\"T64/d0/0\""), "prompts niah with --tokenizer: exit %d", rc);
    free(s);
}

// A run of 300 items whose bf16 samples file holds only 130 (a killed run leaves modes with
// different counts; more than 256 items made report overflow the heap).
static void test_report_short_mode(void) {
    char a[1300], b[1300], err[1400];
    snprintf(a, sizeof a, "%s/r300", tmp);
    snprintf(b, sizeof b, "%s/r130", tmp);
    snprintf(err, sizeof err, "%s/short.err", tmp);
    sh("rm -rf %s %s", a, b);
    int rc = sh("%s --quiet run --model %s --task mc_jsonl --task-file %s --attn f32,bf16 --threads 1 --out %s >/dev/null", bin,
                model, mc, a);
    rc |= sh("%s --quiet run --model %s --task mc_jsonl --task-file %s --attn f32,bf16 --threads 1 --limit 130 --out %s "
             ">/dev/null", bin, model, mc, b);
    CHECK(rc == 0, "the two runs");
    // b's 130 items under a's stamp (a's own file cut short; a copy of b's file is named as
    // foreign by its stamp: test_foreign_samples)
    char pa[1400], pb[1400];
    snprintf(pa, sizeof pa, "%s/samples-mc_jsonl-bf16.jsonl.zst", a);
    snprintf(pb, sizeof pb, "%s/samples-mc_jsonl-bf16.jsonl.zst", b);
    CHECK(restamp(pb, pa) == 0, "a's stamp on b's items");
    rc = sh("%s report %s >/dev/null 2>%s", bin, a, err);
    char *s = slurp("%s", err);
    CHECK(rc == 1 && one_line(s) && strstr(s, "samples-mc_jsonl-bf16.jsonl.zst: 130 items") && strstr(s, "300"),
          "report, one mode short: exit %d: %s", rc, s ? s : "");
    free(s);
    rc = sh("%s diff %s %s >/dev/null 2>%s", bin, a, a, err);
    s = slurp("%s", err);
    CHECK(rc == 1 && strstr(s, "130 items") && strstr(s, "incomplete"), "diff, one mode short: exit %d: %s", rc, s ? s : "");
    free(s);
}

// A killed run (the in-process hook leaves the files as SIGKILL would): report, diff and tables
// refuse it and say how to finish it; after --resume all three work.
static void test_killed_run(void) {
    char d[1300], err[1400];
    snprintf(d, sizeof d, "%s/killed", tmp);
    snprintf(err, sizeof err, "%s/killed.err", tmp);
    sh("rm -rf %s", d);
    const char *args = "--task mc_jsonl --attn f32,bf16 --threads 1";
    int rc = sh("HIFA4_STOP_AFTER_ITEMS=100 %s --quiet run --model %s %s --task-file %s --out %s >/dev/null 2>&1", bin, model,
                args, mc, d);
    CHECK(rc == 1 && !run_complete(d), "killed run: exit %d, complete %d", rc, run_complete(d));
    const char *cmds[3] = {"report %s", "diff %s %s", "tables %s"};
    for (int k = 0; k < 3; k++) {
        char c[3000];
        snprintf(c, sizeof c, cmds[k], d, d);
        rc = sh("%s %s >/dev/null 2>%s", bin, c, err);
        char *s = slurp("%s", err);
        CHECK(rc == 1 && one_line(s) && strstr(s, "not a complete run") && strstr(s, "--resume"), "%s on a killed run: exit %d: %s",
              c, rc, s ? s : "");
        free(s);
    }
    rc = sh("%s --quiet run --model %s %s --task-file %s --out %s --resume >/dev/null 2>&1", bin, model, args, mc, d);
    CHECK(rc == 0 && run_complete(d), "resumed: exit %d", rc);
    for (int k = 0; k < 3; k++) {
        char c[3000];
        snprintf(c, sizeof c, cmds[k], d, d);
        rc = sh("%s %s >/dev/null 2>&1", bin, c);
        CHECK(rc == 0, "%s after --resume: exit %d", c, rc);
    }
}

// ---- silent wrong results ----
static void test_nonfinite(void) {
    char m[1300], d[1300], err[1400], scales[1400];
    snprintf(m, sizeof m, "%s/nanmodel", tmp);
    snprintf(d, sizeof d, "%s/nanrun", tmp);
    snprintf(err, sizeof err, "%s/nan.err", tmp);
    sh("rm -rf %s %s && cp -r %s %s", m, d, model, m);
    // finite weights, non-finite logits: a final norm weight of 3e38 overflows the normed
    // hidden state (any |x| > 1.13 times it is inf), and with it every logit row
    CHECK(poison(m, "model.norm.weight", 0, 64, 3e38f) == 0, "poison the final norm");
    int rc = sh("%s run --model %s --task mc_jsonl --task-file %s --limit 5 --attn f32,bf16 --threads 1 --out %s >/dev/null 2>%s",
                bin, m, mc, d, err);
    char *s = slurp("%s", err);
    const char *last = s ? strstr(s, "hifa4-eval run:") : NULL;
    CHECK(rc == 1 && last && strstr(last, "task mc_jsonl, item '0', mode f32") && strstr(last, "not finite") &&
          strstr(last, "--nonfinite count"), "non-finite log-likelihood: exit %d: %s", rc, last ? last : s ? s : "");
    free(s);
    CHECK(!run_complete(d), "a stopped run is not complete");
    // --nonfinite count resumes it: every item recorded, left out of the statistics, reported
    rc = sh("%s --quiet run --model %s --task mc_jsonl --task-file %s --limit 5 --attn f32,bf16 --threads 1 --nonfinite count "
            "--resume --out %s >/dev/null 2>&1", bin, m, mc, d);
    CHECK(rc == 0 && run_complete(d), "--nonfinite count: exit %d", rc);
    cJSON *sum = json_at("%s/summary.json", d);
    const cJSON *t = cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "tasks"), "mc_jsonl");
    const cJSON *nf = cJSON_GetObjectItem(t, "nonfinite");
    CHECK(nf && cJSON_GetObjectItem(nf, "excluded")->valueint == 5 &&
              cJSON_GetObjectItem(cJSON_GetObjectItem(nf, "modes"), "bf16")->valueint == 5 &&
              cJSON_GetObjectItem(t, "n")->valueint == 0,
          "summary: 5 excluded, n 0");
    cJSON_Delete(sum);
    s = slurp("%s/report.md", d);
    CHECK(s && strstr(s, "Non-finite items") && strstr(s, "| mc_jsonl | 5 | f32 5, bf16 5 |"), "report shows them");
    free(s);
    s = slurp("%s/samples-mc_jsonl-bf16.jsonl.zst", d);
    CHECK(s && strstr(s, "\"nonfinite\":1"), "samples mark them");
    free(s);

    // a scales file of 1e38 (finite) is refused naming layer, head and channel, before the weights load
    float sc[1 * 1 * 32]; // [layers][kv heads][head_dim] of the model
    for (int i = 0; i < 32; i++) sc[i] = 1;
    sc[3] = 1e38f;
    struct st_wtensor w = {"smooth_qk.scales", ST_F32, 3, {1, 1, 32}, sc};
    struct err e = {0};
    snprintf(scales, sizeof scales, "%s/huge-scales.safetensors", tmp);
    CHECK(st_write(scales, &w, 1, NULL, 0, &e) == 0, "%s", e.msg);
    sh("rm -rf %s", d);
    rc = sh("%s run --model %s --task mc_jsonl --task-file %s --attn bf16,hifa4 --scales %s --threads 1 --out %s >/dev/null 2>%s",
            bin, model, mc, scales, d, err);
    s = slurp("%s", err);
    CHECK(rc == 1 && s && strstr(s, "layer 0, kv head 0, channel 3 = 1e+38") && !strstr(s, MODEL_LOADED),
          "scales 1e38: exit %d: %s", rc, s ? s : "");
    free(s);
    CHECK(!dir_exists(d), "no run directory is left by a run refused before it started");
}

static void test_cost(void) {
    char out[1400];
    snprintf(out, sizeof out, "%s/cost.out", tmp);
    int rc = sh("%s cost --shape 80:64:8:128 --seq 4194304 --params configs/ascend/paper-fit.json >%s 2>&1", bin, out);
    char *s = slurp("%s", out);
    int neg = 0;
    for (const char *p = s; p && (p = strstr(p, "| ")); p += 2) neg |= p[2] == '-' || (p[2] == ' ' && p[3] == '-');
    CHECK(rc == 0 && s && !neg && !strstr(s, "cube -") && strstr(s, "cycles: cube 2.81484e+15") /* (qk + pv) / 4096 MACs per cycle */, "70B shape at T = 4M: exit %d\n%s", rc,
          s ? s : "");
    free(s);
    rc = sh("%s cost --shape 4096:1024:1:65536 --seq 4194304 --params configs/ascend/paper-fit.json >/dev/null 2>%s", bin, out);
    s = slurp("%s", out);
    CHECK(rc == 1 && one_line(s) && strstr(s, "cube_macs.qk16") && strstr(s, "2^63"), "beyond 64 bits: exit %d: %s", rc,
          s ? s : "");
    free(s);
}

// An empty task file: refused before the weights load, naming the task and the file; nothing
// is scored, no directory is left. Two tasks: the first (truthfulqa_mc1, real data) is not
// scored either.
static void test_empty_task(void) {
    char root[1300], d[1300], err[1400];
    snprintf(root, sizeof root, "%s/emptyroot", tmp);
    snprintf(d, sizeof d, "%s/emptyrun", tmp);
    snprintf(err, sizeof err, "%s/empty.err", tmp);
    sh("rm -rf %s %s && mkdir -p %s/wikitext2/raw %s/truthfulqa && : > %s/wikitext2/raw/wiki.test.raw && cp -r "
       "tests/data/tasks/datasets/truthfulqa/data %s/truthfulqa/", root, d, root, root, root, root);
    int rc = sh("%s run --model %s --task truthfulqa_mc1,ppl --data-dir %s --attn f32,bf16 --threads 1 --out %s >/dev/null 2>%s",
                bin, model, root, d, err);
    char *s = slurp("%s", err);
    const char *last = s ? strstr(s, "hifa4-eval run:") : NULL;
    CHECK(rc == 1 && last && one_line(last) && strstr(last, "task ppl") && strstr(last, "wiki.test.raw") && strstr(last, "empty") &&
              !strstr(s, MODEL_LOADED),
          "empty ppl text: exit %d: %s", rc, s ? s : "");
    free(s);
    CHECK(!dir_exists(d), "nothing scored, no directory left");
    // before a named model is fetched, too (a download takes hours; here: offline, not cached)
    rc = sh("HIFA4_CACHE=%s/nocache %s run --model qwen3-8b --task ppl --data-dir %s --offline --out %s >/dev/null 2>%s", tmp, bin,
            root, d, err);
    s = slurp("%s", err);
    last = s ? strstr(s, "hifa4-eval run:") : NULL;
    CHECK(rc == 1 && last && strstr(last, "task ppl") && strstr(last, "empty") && !strstr(s, "offline: missing"),
          "data checked before the download: exit %d: %s", rc, last ? last : s ? s : "");
    free(s);
    rc = sh("%s prompts --task mc_jsonl --task-file %s/wikitext2/raw/wiki.test.raw >/dev/null 2>%s", bin, root, err);
    s = slurp("%s", err);
    CHECK(rc == 1 && s && strstr(s, "mc_jsonl") && strstr(s, "wiki.test.raw"), "prompts on an empty file: %s", s ? s : "");
    free(s);
}

// ---- runs marked complete that are not ----
static void concurrent_round(const char *d, const char *ref, const char *err, const char *args);

static void test_lock(void) {
    char d[1300], ref[1300], err[1400], lock[1400];
    snprintf(d, sizeof d, "%s/locked", tmp);
    snprintf(ref, sizeof ref, "%s/lockref", tmp);
    snprintf(err, sizeof err, "%s/lock.err", tmp);
    snprintf(lock, sizeof lock, "%s/run.lock", d);
    sh("rm -rf %s %s", d, ref);
    const char *args = "--task mc_jsonl --attn f32,bf16 --threads 1";
    int rc = sh("%s --quiet run --model %s %s --task-file %s --out %s >/dev/null", bin, model, args, mc, ref);
    rc |= sh("HIFA4_STOP_AFTER_ITEMS=100 %s --quiet run --model %s %s --task-file %s --out %s >/dev/null 2>&1; exit 0", bin, model,
             args, mc, d);
    CHECK(rc == 0, "reference and partial runs");
    // another process holds the directory: a second run is refused before it touches anything
    int fd = open(lock, O_RDWR);
    CHECK(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0, "take the lock: %s", strerror(errno));
    char *before = slurp("%s/samples-mc_jsonl-f32.jsonl.zst", d);
    rc = sh("%s run --model %s %s --task-file %s --out %s --resume >/dev/null 2>%s", bin, model, args, mc, d, err);
    char *s = slurp("%s", err), *after = slurp("%s/samples-mc_jsonl-f32.jsonl.zst", d);
    CHECK(rc == 1 && s && strstr(s, "in use by another hifa4-eval process") && !strstr(s, MODEL_LOADED),
          "locked directory: exit %d: %s", rc, s ? s : "");
    CHECK(before && after && !strcmp(before, after), "the locked run's files are untouched");
    free(s), free(before), free(after);
    rc = sh("%s report %s >/dev/null 2>&1", bin, ref);
    CHECK(rc == 0, "report of another, unlocked run");
    if (fd >= 0) close(fd);
    // a holder killed with SIGKILL leaves no stuck lock
    pid_t pid = fork();
    if (pid == 0) {
        int f = open(lock, O_RDWR);
        if (f >= 0 && flock(f, LOCK_EX) == 0) pause();
        _exit(1);
    }
    usleep(200000);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    rc = sh("%s --quiet run --model %s %s --task-file %s --out %s --resume >/dev/null 2>&1", bin, model, args, mc, d);
    CHECK(rc == 0 && run_complete(d), "resume after the holder was killed: exit %d", rc);
    char *js = slurp("%s/run.json", d);
    CHECK(js && strstr(js, "resumed: timings"), "a resumed run says its timings cover the last invocation");
    free(js);
    char pa[1500], pb[1500];
    for (int m = 0; m < 2; m++) {
        snprintf(pa, sizeof pa, "%s/samples-mc_jsonl-%s.jsonl.zst", ref, m ? "bf16" : "f32");
        snprintf(pb, sizeof pb, "%s/samples-mc_jsonl-%s.jsonl.zst", d, m ? "bf16" : "f32");
        CHECK(same_file(pa, pb), "resumed %s samples identical to an uninterrupted run", m ? "bf16" : "f32");
    }
    // two --resume runs started together on one fresh directory: one does the work, the other is
    // refused (or finds it done); the files equal an uninterrupted run's and run.json is complete.
    // Repeated: the refused run once removed the holder's lock and directory when both had seen
    // it missing (4 of 20 tries on a 2-core machine; CI hit it), so one try proves little
    for (int round = 0; round < 8; round++) concurrent_round(d, ref, err, args);
}

static void concurrent_round(const char *d, const char *ref, const char *err, const char *args) {
    char pa[1500], pb[1500];
    sh("rm -rf %s", d);
    pid_t p[2];
    for (int k = 0; k < 2; k++) {
        p[k] = fork();
        if (p[k] == 0) {
            char c[8192];
            snprintf(c, sizeof c, "%s --quiet run --model %s %s --task-file %s --out %s --resume >/dev/null 2>%s.%d", bin, model,
                     args, mc, d, err, k);
            _exit(sh("%s", c));
        }
    }
    int st[2], ok = 0, busy = 0;
    for (int k = 0; k < 2; k++) {
        waitpid(p[k], &st[k], 0);
        ok += WIFEXITED(st[k]) && WEXITSTATUS(st[k]) == 0;
        char *x = slurp("%s.%d", err, k);
        busy += x && strstr(x, "in use by another") != NULL;
        free(x);
    }
    CHECK(ok >= 1 && ok + busy == 2 && run_complete(d), "concurrent runs: %d succeeded, %d refused as busy", ok, busy);
    char *js = slurp("%s/run.json", d);
    CHECK(js && !strstr(js, "resumed: timings"), "--resume on a fresh directory is a new run, not noted as resumed");
    free(js);
    for (int m = 0; m < 2; m++) {
        snprintf(pa, sizeof pa, "%s/samples-mc_jsonl-%s.jsonl.zst", ref, m ? "bf16" : "f32");
        snprintf(pb, sizeof pb, "%s/samples-mc_jsonl-%s.jsonl.zst", d, m ? "bf16" : "f32");
        CHECK(same_file(pa, pb), "concurrent %s samples identical to an uninterrupted run", m ? "bf16" : "f32");
    }
}

// complete: true is written last: a run whose report cannot be written (here plots/ is a file;
// a full disk is the same) is not complete, and finishing it with --resume makes it so
static void test_complete_last(void) {
    char d[1300], err[1400];
    snprintf(d, sizeof d, "%s/nocomplete", tmp);
    snprintf(err, sizeof err, "%s/nocomplete.err", tmp);
    sh("rm -rf %s && mkdir -p %s && touch %s/plots", d, d, d);
    const char *args = "--task mc_jsonl --limit 10 --attn f32,bf16 --threads 1";
    int rc = sh("%s --quiet run --model %s %s --task-file %s --out %s >/dev/null 2>%s", bin, model, args, mc, d, err);
    char *s = slurp("%s", err);
    CHECK(rc == 1 && s && strstr(s, "plots") && !run_complete(d), "report not written: exit %d, complete %d: %s", rc,
          run_complete(d), s ? s : "");
    free(s);
    sh("rm -f %s/plots", d);
    rc = sh("%s --quiet run --model %s %s --task-file %s --out %s --resume >/dev/null 2>&1", bin, model, args, mc, d);
    s = slurp("%s/report.md", d);
    CHECK(rc == 0 && run_complete(d) && s, "finished by --resume: exit %d", rc);
    free(s);
    // a file size limit (what a full disk does to a write): exit 1, not complete
    sh("rm -rf %s", d);
    rc = sh("trap '' XFSZ; ulimit -f 4; %s --quiet run --model %s --task mc_jsonl --attn f32,bf16 --threads 1 --task-file %s "
            "--out %s >/dev/null 2>%s", bin, model, mc, d, err);
    s = slurp("%s", err);
    CHECK(rc == 1 && one_line(s) && strstr(s, d) && !run_complete(d), "file size limit: exit %d: %s", rc, s ? s : "");
    free(s);
}

static void test_cli_names(void) {
    char out[1400];
    snprintf(out, sizeof out, "%s/version.out", tmp);
    int rc = sh("%s --version >%s 2>&1", bin, out);
    char *s = slurp("%s", out);
    CHECK(rc == 0 && s && !strncmp(s, "hifa4-eval ", 11) && strstr(s, "(git ") && one_line(s), "--version: %s", s ? s : "");
    free(s);
    // mc_jsonl's question file is --task-file in run, prompts, list and every message
    rc = sh("%s prompts --task mc_jsonl --task-file tests/data/tasks/mc_mini.jsonl --skip-bad-rows >/dev/null 2>&1", bin);
    CHECK(rc == 0, "prompts --task-file: exit %d", rc);
    rc = sh("%s prompts --task mc_jsonl --file tests/data/tasks/mc_mini.jsonl >/dev/null 2>&1", bin);
    CHECK(rc == 2, "prompts --file is not an option any more: exit %d", rc);
    rc = sh("%s prompts --task mc_jsonl 2>%s >/dev/null; %s list >>%s 2>&1; %s prompts --help >>%s", bin, out, bin, out, bin, out);
    s = slurp("%s", out);
    CHECK(s && strstr(s, "--task-file FILE.jsonl") && !strstr(s, "--file "), "one name everywhere:\n%s", s ? s : "");
    free(s);
}

// --subjects through the CLI: a name no task has is refused before anything runs; the filter is
// recorded in run.json and is part of the configuration (a resume with other subjects is refused).
static void test_subjects(void) {
    char f[1300], d[1300], err[1400];
    snprintf(f, sizeof f, "%s/subj.jsonl", tmp);
    snprintf(d, sizeof d, "%s/subj", tmp);
    snprintf(err, sizeof err, "%s/subj.err", tmp);
    FILE *fp = fopen(f, "w");
    for (int i = 0; fp && i < 9; i++)
        fprintf(fp, "{\"subject\": \"s%d\", \"question\": \"Q%d?\", \"choices\": [\"a\", \"b\"], \"answer\": 0}\n", i % 3, i);
    if (fp) fclose(fp);
    sh("rm -rf %s", d);
    const char *args = "--task mc_jsonl --attn f32 --threads 1";
    int rc = sh("%s --quiet run --model %s %s --task-file %s --subjects s1,s9 --out %s >/dev/null 2>%s", bin, model, args, f, d, err);
    char *s = slurp("%s", err);
    CHECK(rc == 1 && one_line(s) && strstr(s, "'s9'") && !file_exists(d), "unknown subject: exit %d: %s", rc, s ? s : "");
    free(s);
    rc = sh("%s --quiet run --model %s %s --task-file %s --subjects s2,s0 --out %s >/dev/null 2>&1", bin, model, args, f, d);
    s = slurp("%s/run.json", d);
    CHECK(rc == 0 && s && strstr(s, "\"subjects\":\t\"s2,s0\"") && strstr(s, "\"n_items\":\t6"), "run with --subjects s2,s0: exit %d",
          rc);
    free(s);
    rc = sh("%s --quiet run --model %s %s --task-file %s --subjects s2 --out %s --resume >/dev/null 2>%s", bin, model, args, f, d, err);
    s = slurp("%s", err);
    CHECK(rc != 0 && s && strstr(s, "resume"), "resume with other --subjects refused: exit %d: %s", rc, s ? s : "");
    free(s);
}

// ---- no silent wrong result ----
#define Q2 "\"choices\": [\"a\", \"b\"], \"answer\": 0}"

// JSONL: one JSON value per line, LF or CRLF, no NUL, unique ids - each a case and its boundary
static void test_jsonl_rows(void) {
    char f[1300];
    snprintf(f, sizeof f, "%s/rows.jsonl", tmp);
    struct { const char *text; size_t n; int rc; const char *needles; } c[] = {
        // two objects on one line scored only the first
        {"{\"question\": \"Q1?\", " Q2 "{\"question\": \"Q2?\", " Q2 "\n", 0, 1, "rows.jsonl:1: a second JSON value at byte 55"},
        // an object followed by garbage
        {"{\"question\": \"Q1?\", " Q2 " junk\n", 0, 1, "rows.jsonl:1: other characters after the JSON value at byte 56"},
        {"{\"question\": \"Q1?\", " Q2 ",\n", 0, 1, "rows.jsonl:1: other characters"},
        // CR-only line endings were one item
        {"{\"question\": \"Q1?\", " Q2 "\r{\"question\": \"Q2?\", " Q2 "\r", 0, 1, "rows.jsonl:1: a carriage return (CR) without a line feed at column 56"},
        {"{\"question\": \"Q1?\", " Q2 "\n{\"question\": \"Q2\r?\", " Q2 "\n", 0, 1, "rows.jsonl:2: a carriage return"},
        // a NUL in a question cut it short: raw and escaped
        {"{\"question\": \"Q1\\u0000 more?\", " Q2 "\n", 0, 1, "rows.jsonl:1: a NUL character at column 17"},
        {"{\"question\": \"Q1\0 more?\", " Q2 "\n", 39, 1, "rows.jsonl:1: a NUL character at column 17"},
        {"{\"question\": \"Q1?\", " Q2 "\n\0\n", 59, 1, "rows.jsonl:2: a NUL character at column 1"},
        // duplicate ids (a string and a number that print alike, too)
        {"{\"id\": \"x\", \"question\": \"Q1?\", " Q2 "\n{\"id\": \"x\", \"question\": \"Q2?\", " Q2 "\n", 0, 1,
         "item id 'x' is used by items 0 and 1"},
        {"{\"id\": \"7\", \"question\": \"Q1?\", " Q2 "\n{\"id\": 7, \"question\": \"Q2?\", " Q2 "\n", 0, 1, "item id '7' is used by items 0 and 1"},
        // boundaries that stay valid: CRLF, trailing blanks, an escaped backslash before "u0000", distinct ids
        {"{\"question\": \"Q1?\", " Q2 "\r\n{\"question\": \"Q2?\", " Q2 "\r\n", 0, 0, NULL},
        {"{\"question\": \"Q1?\", " Q2 "  \t \n", 0, 0, NULL},
        {"{\"question\": \"Q1\\\\u0000?\", " Q2 "\n", 0, 0, NULL},
        {"{\"id\": \"x\", \"question\": \"Q1?\", " Q2 "\n{\"id\": \"y\", \"question\": \"Q2?\", " Q2 "\n", 0, 0, NULL},
    };
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        write_text(f, c[k].text, c[k].n ? c[k].n : strlen(c[k].text));
        expect(c[k].rc, c[k].needles ? c[k].needles : "", ANY_TIME, "%s prompts --task mc_jsonl --task-file %s", bin, f);
    }
    // --skip-bad-rows counts such rows (the CR-only file is one bad row: then nothing is left)
    write_text(f, c[0].text, strlen(c[0].text));
    expect(1, "no usable items|all 1 rows are malformed", ANY_TIME, "%s prompts --task mc_jsonl --task-file %s --skip-bad-rows", bin, f);
    // through run: refused before the weights load
    write_text(f, c[3].text, strlen(c[3].text));
    expect(1, "a carriage return", BEFORE_WEIGHTS, "%s run --model %s --task mc_jsonl --task-file %s --attn f32 --out %s/rowsrun", bin,
           model, f, tmp);
}

// Inputs are regular files: a FIFO, a link to one, a device - an error naming it, never a hang
static void test_regular_files(void) {
    char fifo[1300], m[1300], link[1400];
    snprintf(fifo, sizeof fifo, "%s/fifo", tmp);
    snprintf(m, sizeof m, "%s/fifomodel", tmp);
    snprintf(link, sizeof link, "%s/fifolink.jsonl", tmp);
    sh("rm -rf %s %s %s && mkfifo %s && ln -s fifo %s", fifo, m, link, fifo, link);
    expect(1, "fifo: a FIFO (named pipe), not a regular file", ANY_TIME, "%s prompts --task mc_jsonl --task-file %s", bin, fifo);
    expect(1, "fifolink.jsonl: a FIFO (named pipe), not a regular file", ANY_TIME, "%s prompts --task mc_jsonl --task-file %s", bin,
           link);
    expect(1, "/dev/zero: a character device", ANY_TIME, "%s prompts --task mc_jsonl --task-file /dev/zero", bin);
    expect(1, "--scales|a FIFO", BEFORE_WEIGHTS, "%s run --model %s --task mc_jsonl --task-file %s --attn bf16 --scales %s --out %s/fiforun",
           bin, model, mc, fifo, tmp);
    const char *files[] = {"config.json", "tokenizer.json", "model.safetensors"};
    for (int k = 0; k < 3; k++) {
        sh("rm -rf %s && cp -r %s %s && rm %s/%s && ln -s ../fifo %s/%s", m, model, m, m, files[k], m, files[k]);
        char nd[200];
        snprintf(nd, sizeof nd, "%s: a FIFO (named pipe), not a regular file", files[k]);
        expect(1, nd, BEFORE_WEIGHTS, "%s run --model %s --task mc_jsonl --task-file %s --attn f32 --out %s/fiforun", bin, m, mc, tmp);
    }
    // documented streaming input stays: tokenize reads '-' from a pipe
    expect(0, "", ANY_TIME, "echo hello | %s tokenize --tokenizer %s -", bin, model);
}

// Every option counts: twice is an error, a list with an empty element is an error
static void test_options_count(void) {
    const char *run = "run --model %s --task mc_jsonl --task-file %s --out %s/optrun";
    char base[4000];
    snprintf(base, sizeof base, run, model, mc, tmp);
    const char *bad[][2] = {
        {"--attn ''", "--attn: empty list"},
        {"--attn ,,", "--attn: list element 1 is empty"},
        {"--attn bf16,direct,", "--attn: list element 3 is empty"},
        {"--attn ,bf16", "--attn: list element 1 is empty"},
        {"--task ppl", "--task given twice"},
        {"--limit 1 --limit 2", "--limit given twice"},
        {"--resume --resume", "--resume given twice"},
        {"--attn bf16 --attn=f32", "--attn given twice"},
        {"--subjects s1,", "--subjects 's1,'"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        expect(2, bad[k][1], BEFORE_WEIGHTS, "%s %s %s", bin, base, bad[k][0]);
    expect(2, "--plant-outlier: list element 2 is empty", ANY_TIME, "%s make-model --out %s/pl --plant-outlier 0:1:2,", bin, tmp);
    expect(2, "--attn: list element 2 is empty", ANY_TIME, "%s cost --shape 2:64:1:32 --seq 128 --attn bf16,", bin);
    expect(2, "bad haystack length ''", ANY_TIME, "%s prompts --task niah --task-file tests/data/tasks/haystack.txt --tokenizer %s "
           "--niah-lengths 64,", bin, model);
    // the boundary: one list, each element once
    expect(0, "", ANY_TIME, "%s --quiet %s --attn f32,bf16 --limit 2 --threads 1", bin, base);
}

// Values that are valid JSON but meaningless: a window of 0 switched on, eps outside (0, 1)
static void test_config_meaning(void) {
    char q[1300], mi[1300];
    snprintf(q, sizeof q, "%s/cfgq2", tmp);
    snprintf(mi, sizeof mi, "%s/cfgmistral", tmp);
    int rc = sh("%s --quiet make-model --arch qwen2 --layers 1 --dim 64 --heads 2 --kv-heads 1 --ffn 128 --out %s >/dev/null && "
                "%s --quiet make-model --arch mistral --layers 1 --dim 64 --heads 2 --kv-heads 1 --ffn 128 --out %s >/dev/null",
                bin, q, bin, mi);
    CHECK(rc == 0, "make-model qwen2, mistral");
    char run[4000];
    snprintf(run, sizeof run, "%s --quiet run --task mc_jsonl --task-file %s --limit 2 --attn f32 --threads 1 --out %s/cfgrun --model",
             bin, mc, tmp);
    // qwen2: use_sliding_window true, sliding_window 0, max_window_layers 0 (every layer slides)
    set_cfg(q, "use_sliding_window", "true");
    set_cfg(q, "sliding_window", "0");
    set_cfg(q, "max_window_layers", "0");
    expect(1, "field 'sliding_window': 0 while use_sliding_window is true", BEFORE_WEIGHTS, "rm -rf %s/cfgrun; %s %s", tmp, run, q);
    set_cfg(q, "max_window_layers", "1"); // boundary: no layer at or past max_window_layers slides
    expect(0, "", ANY_TIME, "rm -rf %s/cfgrun; %s %s", tmp, run, q);
    set_cfg(q, "max_window_layers", "0");
    set_cfg(q, "use_sliding_window", "false"); // boundary: switched off
    expect(0, "", ANY_TIME, "rm -rf %s/cfgrun; %s %s", tmp, run, q);
    set_cfg(q, "use_sliding_window", "true");
    set_cfg(q, "sliding_window", "1"); // boundary: the smallest window
    expect(0, "", ANY_TIME, "rm -rf %s/cfgrun; %s %s", tmp, run, q);
    set_cfg(q, "sliding_window", "0");
    set_cfg(q, "layer_types", "[\"sliding_attention\"]");
    expect(1, "field 'sliding_window': 0 while layer_types holds sliding_attention", BEFORE_WEIGHTS, "rm -rf %s/cfgrun; %s %s", tmp, run, q);
    // mistral: a number switches it on; null is full attention
    set_cfg(mi, "sliding_window", "0");
    expect(1, "field 'sliding_window': 0 while a number switches it on", BEFORE_WEIGHTS, "rm -rf %s/cfgrun; %s %s", tmp, run, mi);
    set_cfg(mi, "sliding_window", "null");
    expect(0, "", ANY_TIME, "rm -rf %s/cfgrun; %s %s", tmp, run, mi);
    // rms_norm_eps: (0, 1) open at both ends
    const char *eps[][2] = {{"0", "1"}, {"1", "1"}, {"-1e-6", "1"}, {"2", "1"}, {"1e-30", "0"}, {"0.999", "0"}};
    for (int k = 0; k < 6; k++) {
        set_cfg(mi, "rms_norm_eps", eps[k][0]);
        expect(atoi(eps[k][1]), atoi(eps[k][1]) ? "field 'rms_norm_eps'|is outside (0, 1)" : "", BEFORE_WEIGHTS, "rm -rf %s/cfgrun; %s %s",
               tmp, run, mi);
    }
}

// More values valid as JSON but meaningless for the architecture, each with its boundary
// (config.c, config_check.c); through `logits`, refused before the weights load
static void test_config_values(void) {
    char d[1300], logits[3000];
    snprintf(d, sizeof d, "%s/cfgval", tmp);
    snprintf(logits, sizeof logits, "%s --quiet logits --ids 1,2 --attn f32 --out %s/cfgval.safetensors --model %s", bin, tmp, d);
#define FRESH(arch)                                                                                                     \
    CHECK(sh("rm -rf %s && %s --quiet make-model --arch %s --layers 2 --dim 64 --heads 2 --kv-heads 1 --ffn 128 --out %s " \
             ">/dev/null", d, bin, arch, d) == 0, "make-model %s", arch)
    const struct { const char *arch, *key, *value, *needles; } c[] = {
        {"mistral", "rope_theta", "0", "field 'rope_theta': 0 must be > 1"},
        {"mistral", "rope_theta", "-10000", "field 'rope_theta': -10000 must be > 1"},
        {"mistral", "rope_theta", "1", "field 'rope_theta': 1 must be > 1"},
        {"mistral", "rope_theta", "1.5", NULL},
        {"mistral", "head_dim", "31", "field 'head_dim': 31 must be even"},
        {"mistral", "head_dim", "32", NULL},
        {"phi3", "partial_rotary_factor", "0", "field 'partial_rotary_factor': 0 not in (0, 1]"},
        {"phi3", "partial_rotary_factor", "0.03125", "rotary dimension 1 (head_dim 32 x partial_rotary_factor 0.03125) must be even"},
        {"phi3", "partial_rotary_factor", "0.75", NULL}, // make-model's phi3: rotary 24 of 32, 12 longrope factors
        {"gemma2", "attn_logit_softcapping", "0", "field 'attn_logit_softcapping': 0 caps every logit at 0"},
        {"gemma2", "final_logit_softcapping", "0", "field 'final_logit_softcapping': 0 caps every logit at 0"},
        {"gemma2", "attn_logit_softcapping", "null", NULL},
        {"gemma2", "final_logit_softcapping", "0.5", NULL},
        {"gemma2", "query_pre_attn_scalar", "0", "query_pre_attn_scalar 0"},
        {"qwen2", "max_window_layers", "-1", "field 'max_window_layers': -1 is negative"},
        {"qwen2", "max_window_layers", "0", NULL},
        {"phi3", "rope_scaling", "{\"type\": \"longrope\", \"factor\": -2, \"short_factor\": [1,1,1,1,1,1,1,1,1,1,1,1], "
                 "\"long_factor\": [1,1,1,1,1,1,1,1,1,1,1,1]}", "rope_scaling (longrope): factor -2"},
        {"phi3", "rope_scaling", "{\"type\": \"longrope\", \"factor\": 2, \"short_factor\": [1,1,1,1,1,1,1,1,1,1,1,1], "
                 "\"long_factor\": [1,1,1,1,1,1,1,1,1,1,1,1]}", NULL},
    };
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        FRESH(c[k].arch);
        set_cfg(d, c[k].key, c[k].value);
        if (!strcmp(c[k].key, "rope_scaling")) set_cfg(d, "original_max_position_embeddings", NULL);
        expect(c[k].needles ? 1 : 0, c[k].needles ? c[k].needles : "", BEFORE_WEIGHTS, "%s", logits);
    }
#undef FRESH
}

// A llama2.c checkpoint (dim 16, hidden 32, 1 layer, heads 2/2, vocab 32, seq_len 8, shared
// classifier) with deterministic weights, written to path.
static void write_llama2c(const char *path) {
    const int32_t hdr[7] = {16, 32, 1, 2, 2, 32, 8};
    const size_t D = 16, F = 32, L = 1, kvd = 16, V = 32, S = 8, hs = 8;
    const size_t n = V * D + L * (D + D * D + 2 * D * kvd + D * D + D + 3 * D * F) + D + S * hs;
    float *w = malloc(4 * n);
    uint32_t x = 7;
    for (size_t i = 0; i < n; i++) x = x * 1664525u + 1013904223u, w[i] = ((float)(x >> 8) / 16777216.0f - 0.5f) * 0.2f;
    FILE *f = fopen(path, "wb");
    if (f) fwrite(hdr, 4, 7, f), fwrite(w, 4, n, f), fclose(f);
    free(w);
}

// Imports never mix models: a non-empty --out is refused unless --force, which removes the
// model files first (the old tokenizer_config.json made the new model run without BOS)
static void test_import_dir(void) {
    char ck[1300], d[1300];
    snprintf(ck, sizeof ck, "%s/tiny-l2c.bin", tmp);
    snprintf(d, sizeof d, "%s/importdir", tmp);
    write_llama2c(ck);
    sh("rm -rf %s && cp -r %s %s && echo keep > %s/notes.txt && echo '{}' > %s/tokenizer_config.json", d, model, d, d, d);
    expect(2, "--out|is not empty|--force", ANY_TIME, "%s import-llama2c %s --out %s", bin, ck, d);
    expect(2, "--out|is not empty|--force", ANY_TIME, "%s import-gguf %s --out %s", bin, ck, d);
    char p[1400];
    snprintf(p, sizeof p, "%s/tokenizer_config.json", d);
    CHECK(file_exists(p), "a refused import leaves the directory alone");
    expect(0, "kept 1 file(s) that are not model files|notes.txt", ANY_TIME, "%s import-llama2c %s --force --out %s", bin, ck, d);
    CHECK(!file_exists(p), "--force removed the old model's tokenizer_config.json");
    snprintf(p, sizeof p, "%s/tokenizer.json", d);
    CHECK(!file_exists(p), "--force removed the old model's tokenizer.json (this import writes none)");
    snprintf(p, sizeof p, "%s/notes.txt", d);
    CHECK(file_exists(p), "--force keeps files that are not model files");
    cJSON *c = json_at("%s/config.json", d);
    CHECK(c && cJSON_GetObjectItem(c, "hidden_size") && cJSON_GetObjectItem(c, "hidden_size")->valueint == 16, "the new model's config");
    cJSON_Delete(c);
    // boundaries: an empty directory and a missing one are fine; a file is not a directory
    sh("rm -rf %s && mkdir -p %s", d, d);
    expect(0, "", ANY_TIME, "%s import-llama2c %s --out %s", bin, ck, d);
    sh("rm -rf %s", d);
    expect(0, "", ANY_TIME, "%s import-llama2c %s --out %s", bin, ck, d);
    expect(2, "a file, not a directory", ANY_TIME, "%s import-llama2c %s --out %s", bin, ck, ck);
    // a tokenizer given but unusable: an error before anything is written (was a warning, exit 0)
    sh("rm -rf %s && echo garbage > %s/bad-tok.bin", d, tmp);
    expect(1, "import-llama2c: tokenizer|bad-tok.bin is unusable|nothing written", ANY_TIME, "%s import-llama2c %s %s/bad-tok.bin --out %s",
           bin, ck, tmp, d);
    CHECK(!dir_exists(d), "a refused import-llama2c created %s", d);
}

// Runs the command between the first pair of backticks in the file err (the fix an error
// suggests) with hifa4-eval found on PATH as the binary under test; its exit status.
static int run_suggested(const char *err) {
    char *s = slurp("%s", err), bindir[2048] = ".", cmd[8192];
    const char *a = s ? strchr(s, '`') : NULL, *b = a ? strchr(a + 1, '`') : NULL;
    if (!b) { free(s); return -1; }
    if (realpath(bin, bindir)) *strrchr(bindir, '/') = 0;
    snprintf(cmd, sizeof cmd, "PATH='%s':\"$PATH\"; %.*s >/dev/null 2>&1", bindir, (int)(b - a - 1), a + 1);
    free(s);
    return sh("%s", cmd);
}

// Samples files carry their run's key and model: report, diff, tables, merge and --resume name
// a foreign (or renamed) file, and the command the error suggests resolves it
static void test_foreign_samples(void) {
    char a[1300], b[1300], err[1400], ma[1400], mb[1400];
    snprintf(a, sizeof a, "%s/fa", tmp);
    snprintf(b, sizeof b, "%s/fb", tmp);
    snprintf(err, sizeof err, "%s/expect.err", tmp);
    sh("rm -rf %s %s", a, b);
    const char *args = "--task mc_jsonl --attn f32,bf16 --threads 1";
    int rc = sh("%s --quiet run --model %s %s --task-file %s --limit 80 --out %s >/dev/null", bin, model, args, mc, a);
    rc |= sh("%s --quiet run --model %s %s --task-file %s --limit 70 --out %s >/dev/null", bin, model, args, mc, b);
    CHECK(rc == 0, "two runs");
    snprintf(ma, sizeof ma, "%s/samples-mc_jsonl-bf16.jsonl.zst", a);
    snprintf(mb, sizeof mb, "%s/samples-mc_jsonl-bf16.jsonl.zst", b);
    sh("cp %s %s.orig && cp %s %s", ma, ma, mb, ma);
    const char *cmds[4] = {"report %s", "diff %s %s", "tables %s", "--quiet run --model %s --task mc_jsonl --attn f32,bf16 "
                           "--threads 1 --task-file %s --limit 80 --resume --out %s"};
    for (int k = 0; k < 4; k++) {
        char c[4000];
        if (k < 3) snprintf(c, sizeof c, cmds[k], a, a);
        else snprintf(c, sizeof c, cmds[k], model, mc, a);
        expect(1, "samples-mc_jsonl-bf16.jsonl.zst is not a file of this run|its stamp says config_key|rm ", ANY_TIME, "%s %s", bin, c);
    }
    // the suggested fix: remove the file and resume; then every reader accepts the run
    CHECK(run_suggested(err) == 0, "the suggested `rm ... && hifa4-eval run ... --resume` works");
    char orig[1500];
    snprintf(orig, sizeof orig, "%s.orig", ma);
    CHECK(same_raw(ma, orig), "re-scored to the bytes the run first wrote");
    expect(0, "", ANY_TIME, "%s report %s", bin, a);
    // a mode's file renamed as another mode's (same run, same key)
    char mf[1400];
    snprintf(mf, sizeof mf, "%s/samples-mc_jsonl-f32.jsonl.zst", a);
    sh("cp %s %s.orig && cp %s %s", mf, mf, ma, mf);
    expect(1, "samples-mc_jsonl-f32.jsonl.zst is not a file of this run|its stamp says mode bf16, this run's is f32", ANY_TIME,
           "%s report %s", bin, a);
    sh("mv %s.orig %s", mf, mf);
    expect(0, "", ANY_TIME, "%s tables %s %s", bin, a, b);
    // merge: a shard whose file came from another shard
    char s0[1300], s1[1300], mo[1300];
    snprintf(s0, sizeof s0, "%s/fs0", tmp);
    snprintf(s1, sizeof s1, "%s/fs1", tmp);
    snprintf(mo, sizeof mo, "%s/fmerged", tmp);
    sh("rm -rf %s %s %s", s0, s1, mo);
    rc = sh("%s --quiet run --model %s %s --task-file %s --limit 80 --shard 0/2 --out %s >/dev/null && %s --quiet run --model %s "
            "%s --task-file %s --limit 80 --shard 1/2 --out %s >/dev/null", bin, model, args, mc, s0, bin, model, args, mc, s1);
    CHECK(rc == 0, "two shards");
    sh("cp %s/samples-mc_jsonl-f32.jsonl.zst %s/", s0, s1);
    expect(1, "fs1/samples-mc_jsonl-f32.jsonl.zst is not a file of this run|config_key", ANY_TIME, "%s merge %s %s --out %s", bin, s0,
           s1, mo);
    // boundary: unmodified shards merge to the unsharded run's bytes (stamp included)
    sh("rm -rf %s %s && %s --quiet run --model %s %s --task-file %s --limit 80 --shard 1/2 --out %s >/dev/null", s1, mo, bin, model,
       args, mc, s1);
    expect(0, "", ANY_TIME, "%s --quiet merge %s %s --out %s", bin, s0, s1, mo);
    char pm[1400];
    snprintf(pm, sizeof pm, "%s/samples-mc_jsonl-bf16.jsonl.zst", mo);
    CHECK(same_raw(pm, ma), "merged samples (with their stamp) byte-identical to the unsharded run's");
}

// Identity by content: the same model, tokenizer and task file under other spellings resume;
// the resume command printed for an --out with a space and a quote is shell-quoted and works
static void test_resume_identity(void) {
    char d[1300], absm[2048], absmc[2048], q[1300];
    snprintf(d, sizeof d, "%s/spell", tmp);
    sh("rm -rf %s", d);
    CHECK(realpath(model, absm) && realpath(mc, absmc), "realpath");
    const char *args = "--task mc_jsonl --attn f32,bf16 --threads 1 --limit 70";
    int rc = sh("HIFA4_STOP_AFTER_ITEMS=64 %s --quiet run --model %s %s --task-file %s --out %s >/dev/null 2>&1", bin, model, args, mc, d);
    CHECK(rc == 1 && !run_complete(d), "a killed run");
    const char *models[3] = {"%s/", "./%s", "%s"};
    for (int k = 0; k < 3; k++) {
        char m[2100];
        snprintf(m, sizeof m, models[k], k == 2 ? absm : model);
        expect(0, "", ANY_TIME, "%s --quiet run --model %s %s --task-file %s --tokenizer %s/ --out %s --resume", bin, m, args,
               k == 2 ? mc : absmc, k == 1 ? absm : model, d);
        CHECK(run_complete(d), "resumed with the model spelled '%s'", m);
    }
    // a different model (same shape, another seed) is still refused
    char other[1300];
    snprintf(other, sizeof other, "%s/othermodel", tmp);
    sh("rm -rf %s && %s --quiet make-model --arch llama --layers 1 --dim 64 --heads 2 --kv-heads 1 --ffn 128 --tied 0 --seed 2 --out %s "
       ">/dev/null", other, bin, other);
    expect(1, "--resume|model fingerprint version 2", ANY_TIME, "%s run --model %s %s --task-file %s --out %s --resume", bin, other, args, mc, d);
    // the printed resume command, for an --out holding a space and a quote, pasted into a shell
    snprintf(q, sizeof q, "%s/it's a run", tmp);
    sh("rm -rf \"%s\"", q);
    rc = sh("HIFA4_STOP_AFTER_ITEMS=64 %s --quiet run --model %s %s --task-file %s --out \"%s\" >/dev/null 2>&1", bin, model, args, mc, q);
    CHECK(rc == 1 && !run_complete(q), "a killed run in a directory with a space");
    char err[1400];
    snprintf(err, sizeof err, "%s/expect.err", tmp);
    char nd[1500];
    snprintf(nd, sizeof nd, "is not a complete run|'%s/it'\\''s a run'", tmp); // HIFA4_TMP may move tmp (make asan)
    expect(1, nd, ANY_TIME, "%s report \"%s\"", bin, q);
    CHECK(run_suggested(err) == 0 && run_complete(q), "the printed resume command, pasted, finishes the run");
}

// ---- identity (run_identity.h): every input that can change a number, named when it differs ----
// A killed run of model copy m in d (70 items, stopped after 64).
static int killed_run(const char *m, const char *d, const char *args) {
    sh("rm -rf %s", d);
    return sh("HIFA4_STOP_AFTER_ITEMS=64 %s --quiet run --model %s %s --task-file %s --out %s >/dev/null 2>&1", bin, m, args, mc, d);
}

// config.json edited, then --resume: refused naming the field and both values; the same value
// spelled another way (5e5 for 500000, keys in another order) resumes. Weights edited where the
// version-1 fingerprint never looked (rows 16-23 of q_proj), then --resume: refused.
static void test_identity_resume(void) {
    char m[1300], d[1300];
    snprintf(m, sizeof m, "%s/idm", tmp);
    snprintf(d, sizeof d, "%s/idrun", tmp);
    const char *args = "--task mc_jsonl --attn f32,bf16 --threads 1 --limit 70";
    // dim 128: q_proj is 128 x 128 bf16 = 32 KiB, so version 1's three 4 KiB windows leave rows 16-23 out
    CHECK(sh("rm -rf %s && %s --quiet make-model --arch llama --layers 1 --dim 128 --heads 2 --kv-heads 1 --ffn 256 --tied 0 "
             "--out %s >/dev/null", m, bin, m) == 0, "make-model dim 128");
    CHECK(killed_run(m, d, args) == 1 && !run_complete(d), "a killed run");
    cJSON *c = json_at("%s/config.json", m);
    const double theta = cJSON_GetNumberValue(cJSON_GetObjectItem(c, "rope_theta"));
    cJSON_Delete(c);
    CHECK(theta == 500000, "make-model's llama rope_theta is 500000 (got %g)", theta);
    set_cfg(m, "rope_theta", "10000");
    expect(1, "--resume|config.json rope_theta 500000 vs 10000|another --out", BEFORE_WEIGHTS,
           "%s run --model %s %s --task-file %s --out %s --resume", bin, m, args, mc, d);
    set_cfg(m, "rope_theta", "5e5"); // the same number, spelled otherwise and moved to the end
    expect(0, "", ANY_TIME, "%s --quiet run --model %s %s --task-file %s --out %s --resume", bin, m, args, mc, d);
    CHECK(run_complete(d), "resumed over config.json with the same values");
    CHECK(killed_run(m, d, args) == 1, "a killed run");
    // rows 16-23 of q_proj: bytes 4096-6143, between version 1's start and middle windows
    CHECK(poison(m, "model.layers.0.self_attn.q_proj.weight", 16 * 128, 8 * 128, 0.5f) == 0, "edit q_proj rows 16-23");
    expect(1, "--resume|model fingerprint version 2", BEFORE_WEIGHTS, "%s run --model %s %s --task-file %s --out %s --resume",
           bin, m, args, mc, d);
    // a run.json written before identities (schema 1): refused for --resume naming its versions
    CHECK(killed_run(m, d, args) == 1, "a killed run");
    cJSON *j = json_at("%s/run.json", d);
    cJSON_DeleteItemFromObject(j, "schema");
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(j, "model"), "fingerprint");
    char *t = cJSON_Print(j), path[1400];
    snprintf(path, sizeof path, "%s/run.json", d);
    write_text(path, t, strlen(t));
    free(t);
    expect(1, "--resume|schema 1|fingerprint, version 1|model fingerprint version 1", BEFORE_WEIGHTS,
           "%s run --model %s %s --task-file %s --out %s --resume", bin, m, args, mc, d);
    // a run.json of a newer schema: refused by every reader, naming its version
    cJSON_AddNumberToObject(j, "schema", 99);
    t = cJSON_Print(j);
    write_text(path, t, strlen(t));
    free(t);
    cJSON_Delete(j);
    expect(1, "schema version 99|reads versions 1 to", ANY_TIME, "%s run --model %s %s --task-file %s --out %s --resume", bin,
           m, args, mc, d);
    expect(1, "schema version 99", ANY_TIME, "%s report %s", bin, d);
    // run.json deleted, samples left: refused with and without --resume, the samples kept
    sh("rm -f %s/run.json", d);
    expect(1, "but no run.json|samples-mc_jsonl-", BEFORE_WEIGHTS, "%s run --model %s %s --task-file %s --out %s --resume", bin,
           m, args, mc, d);
    expect(1, "but no run.json", BEFORE_WEIGHTS, "%s run --model %s %s --task-file %s --out %s", bin, m, args, mc, d);
    CHECK(sh("ls %s/samples-mc_jsonl-f32.jsonl.zst >/dev/null 2>&1", d) == 0, "the orphaned samples are left alone");
}

// Shards of models whose config.json differ do not merge (naming the field); diff of two runs
// over task data that differ in one question says so; a summary.json copied from another run is
// refused by tables and report.
static void test_identity_compare(void) {
    char m[1300], s0[1300], s1[1300], mg[1300], a[1300], b[1300], mc2[1300];
    snprintf(m, sizeof m, "%s/idm2", tmp);
    snprintf(s0, sizeof s0, "%s/ids0", tmp), snprintf(s1, sizeof s1, "%s/ids1", tmp), snprintf(mg, sizeof mg, "%s/idmg", tmp);
    const char *args = "--task mc_jsonl --attn f32,bf16 --threads 1 --limit 70";
    CHECK(sh("rm -rf %s %s %s %s && cp -r %s %s", m, s0, s1, mg, model, m) == 0, "copy the model");
    int rc = sh("%s --quiet run --model %s %s --task-file %s --shard 0/2 --out %s >/dev/null 2>&1", bin, model, args, mc, s0);
    set_cfg(m, "rms_norm_eps", "1e-5"); // make-model's is 1e-6
    rc |= sh("%s --quiet run --model %s %s --task-file %s --shard 1/2 --out %s >/dev/null 2>&1", bin, m, args, mc, s1);
    CHECK(rc == 0, "two shards");
    expect(1, "merge|config.json rms_norm_eps 1e-06 vs 1e-05", ANY_TIME,
           "%s merge %s %s --out %s", bin, s0, s1, mg);
    snprintf(a, sizeof a, "%s/ida", tmp), snprintf(b, sizeof b, "%s/idb", tmp), snprintf(mc2, sizeof mc2, "%s/mc300b.jsonl", tmp);
    rc = sh("sed 's/Question number 7?/Question number seven?/' %s > %s", mc, mc2);
    rc |= sh("rm -rf %s %s && %s --quiet run --model %s %s --task-file %s --out %s >/dev/null 2>&1 && "
             "%s --quiet run --model %s %s --task-file %s --out %s >/dev/null 2>&1", a, b, bin, model, args, mc, a, bin, model, args, mc2, b);
    CHECK(rc == 0, "two runs over task files differing in one question");
    expect(0, "made from different inputs|task mc_jsonl items sha256", ANY_TIME, "%s diff %s %s", bin, a, b);
    expect(0, "", ANY_TIME, "%s diff %s %s:bf16", bin, a, a); // within one run: nothing to say
    char *err = slurp("%s/expect.err", tmp);
    CHECK(err && !strstr(err, "different inputs"), "diff within one run names no input: %s", err ? err : "");
    free(err);
    // b's summary.json into a: another run's (another key), refused by tables and report, naming the fix
    CHECK(sh("cp %s/summary.json %s/summary.json", b, a) == 0, "copy summary.json");
    expect(1, "summary.json is another run's|hifa4-eval report", ANY_TIME, "%s tables %s", bin, a);
    expect(1, "summary.json is another run's", ANY_TIME, "%s report --keep-summary %s", bin, a);
    expect(0, "", ANY_TIME, "%s --quiet report %s", bin, a); // recomputed from a's samples: a's again
    expect(0, "", ANY_TIME, "%s tables %s", bin, a);
}

// The bare form (bf16,direct,hifa4) with no scales and no calibration text: exit 1 before the
// weights load, one message naming the three ways out and no ../shared; nothing dropped silently.
static void test_no_mode_dropped(void) {
    char d[1300], cache[1300];
    snprintf(d, sizeof d, "%s/bare", tmp);
    snprintf(cache, sizeof cache, "%s/emptycache", tmp);
    sh("rm -rf %s %s && mkdir -p %s", d, cache, cache);
    expect(1, "need Smooth-QK scales|--calib FILE|--scales F|--scales none", BEFORE_WEIGHTS,
           "env -u HIFA4_DATA HIFA4_CACHE=%s %s run --model %s --task mc_jsonl --task-file %s --limit 4 --threads 1 --offline "
           "--out %s", cache, bin, model, mc, d);
    char *err = slurp("%s/expect.err", tmp);
    const char *once = err ? strstr(err, "Three ways out") : NULL;
    CHECK(once && !strstr(once + 1, "Three ways out") && !strstr(err, "skipping") && !strstr(err, "../shared") &&
              !strstr(err, "SOURCE.md"),
          "said once, nothing skipped, no advice a clone cannot follow:\n%s", err ? err : "");
    free(err);
    CHECK(sh("test -e %s/run.json", d) != 0, "no run started");
}

// Every tensor is used or named: a layer past num_hidden_layers, a bias or norm the declared
// architecture does not have, an untied head under tie_word_embeddings, a name of no supported
// architecture - each an error naming the tensor and the config field; rotary inv_freq buffers
// are known unused. Through `logits` (the model loads, nothing else).
static void test_bound_tensors(void) {
    char d[1300], logits[3000];
    snprintf(d, sizeof d, "%s/bound", tmp);
    snprintf(logits, sizeof logits, "%s --quiet logits --ids 1,2 --attn f32 --out %s/bound.safetensors --model %s", bin, tmp, d);
#define FRESH(arch, layers, extra)                                                                                        \
    CHECK(sh("rm -rf %s && %s --quiet make-model --arch %s --layers %d --dim 64 --heads 2 --kv-heads 1 --ffn 128 %s --out %s " \
             ">/dev/null", d, bin, arch, layers, extra, d) == 0, "make-model %s", arch)
    // the example: num_hidden_layers 3 over a 5-layer checkpoint ran a 3-layer model
    FRESH("llama", 5, "--tied 0");
    set_cfg(d, "num_hidden_layers", "3");
    expect(1, "model.layers.3.input_layernorm.weight: layer 3 >= num_hidden_layers 3 (config.json)", ANY_TIME, "%s", logits);
    set_cfg(d, "num_hidden_layers", "4");
    expect(1, "model.layers.4.input_layernorm.weight: layer 4 >= num_hidden_layers 4 (config.json)", ANY_TIME, "%s", logits);
    set_cfg(d, "num_hidden_layers", "5"); // boundary: every layer declared
    expect(0, "", ANY_TIME, "%s", logits);
    set_cfg(d, "num_hidden_layers", "6"); // and one too many is the missing tensor it always was
    expect(1, "model.layers.5.", ANY_TIME, "%s", logits);
    // a stray tensor per class, each on a fresh checkpoint of its architecture
    const struct { const char *arch, *extra, *name; int64_t n; const char *needles; } c[] = {
        {"llama", "--tied 0", "model.layers.0.self_attn.q_proj.bias", 64,
         "model.layers.0.self_attn.q_proj.bias: attention_bias is false in config.json, so LlamaForCausalLM has no q/k/v projection biases"},
        {"llama", "--tied 0", "model.layers.0.mlp.down_proj.bias", 64,
         "model.layers.0.mlp.down_proj.bias: mlp_bias is false in config.json, so LlamaForCausalLM has no MLP biases"},
        {"qwen2", "", "model.layers.0.self_attn.o_proj.bias", 64,
         "model.layers.0.self_attn.o_proj.bias: Qwen2ForCausalLM has no o_proj bias (architectures in config.json)"},
        {"mistral", "", "model.layers.0.self_attn.q_proj.bias", 64, "MistralForCausalLM has no q/k/v projection biases (architectures in"},
        {"llama", "--tied 0", "model.layers.0.self_attn.q_norm.weight", 32, "model.layers.0.self_attn.q_norm.weight: LlamaForCausalLM has no q/k norms"},
        {"mistral", "", "model.layers.0.pre_feedforward_layernorm.weight", 64,
         "MistralForCausalLM has no pre/post-feedforward (sandwich) norms (architectures in config.json)"},
        {"phi3", "", "model.layers.0.self_attn.q_proj.weight", 64, "Phi3ForCausalLM has no separate q/k/v projections"},
        {"qwen3", "", "model.layers.0.mlp.gate_up_proj.weight", 64, "Qwen3ForCausalLM has no fused gate_up_proj"},
        {"llama", "--tied 1", "lm_head.weight", 64, "lm_head.weight: tie_word_embeddings is true in config.json"},
        {"llama", "--tied 0", "model.layers.0.mlp.experts.0.weight", 8, "model.layers.0.mlp.experts.0.weight: not a tensor of LlamaForCausalLM"},
        {"llama", "--tied 0", "vision_tower.patch_embed.weight", 8, "vision_tower.patch_embed.weight: not a tensor of LlamaForCausalLM"},
        {"llama", "--tied 0", "model.layers.00.input_layernorm.weight", 64, "model.layers.00.input_layernorm.weight: not a tensor of"},
        {"llama", "--tied 0", "model.layers.1.self_attn.rotary_emb.inv_freq", 16, "layer 1 >= num_hidden_layers 1"},
        // boundaries: the known-unused rotary buffers load
        {"llama", "--tied 0", "model.layers.0.self_attn.rotary_emb.inv_freq", 16, NULL},
        {"qwen3", "", "model.rotary_emb.inv_freq", 16, NULL},
    };
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        FRESH(c[k].arch, 1, c[k].extra);
        CHECK(add_tensor(d, c[k].name, c[k].n) == 0, "add %s", c[k].name);
        expect(c[k].needles ? 1 : 0, c[k].needles ? c[k].needles : "", ANY_TIME, "%s", logits);
    }
    // boundary: every architecture's own checkpoint binds every tensor it holds (biases and
    // norms included: qwen2's q/k/v biases, qwen3's q/k norms, gemma2's sandwich norms, phi3's fused)
    const char *archs[] = {"qwen3", "qwen2", "llama", "mistral", "gemma2", "phi3"};
    for (int k = 0; k < 6; k++) {
        FRESH(archs[k], 2, "");
        expect(0, "", ANY_TIME, "%s", logits);
    }
    // boundary: llama with attention_bias and mlp_bias true binds (and names) all seven biases
    FRESH("llama", 1, "--tied 0");
    set_cfg(d, "attention_bias", "true");
    set_cfg(d, "mlp_bias", "true");
    const struct { const char *n; int64_t len; } bias[] = {{"self_attn.q_proj", 64}, {"self_attn.k_proj", 32}, {"self_attn.v_proj", 32},
        {"self_attn.o_proj", 64}, {"mlp.gate_proj", 128}, {"mlp.up_proj", 128}, {"mlp.down_proj", 64}};
    for (int k = 0; k < 7; k++) {
        char bn[200];
        snprintf(bn, sizeof bn, "model.layers.0.%s.bias", bias[k].n);
        CHECK(add_tensor(d, bn, bias[k].len) == 0, "add %s", bn);
    }
    expect(0, "", ANY_TIME, "%s", logits);
    // an imported checkpoint is held to the same rule
    char ck[1300];
    snprintf(ck, sizeof ck, "%s/bound-l2c.bin", tmp);
    write_llama2c(ck);
    CHECK(sh("rm -rf %s && %s --quiet import-llama2c %s --out %s >/dev/null", d, bin, ck, d) == 0, "import-llama2c");
    expect(0, "", ANY_TIME, "%s", logits);
    CHECK(add_tensor(d, "model.layers.1.mlp.up_proj.weight", 8) == 0, "add a layer-1 tensor");
    expect(1, "model.layers.1.mlp.up_proj.weight: layer 1 >= num_hidden_layers 1 (config.json)", ANY_TIME, "%s", logits);
#undef FRESH
}

// tables: runs that differ only in --limit or --tile (or format, Q-Mean form) are told apart
// by the labels diff uses too (results/run_label.h): Table 7 (one per ablation run) titled
// "model [limit 70, tile 128]", only the fields that vary among the runs shown, none for one run
static void test_table_labels(void) {
    char d[3][1300], out[1400];
    const char *extra[3] = {"--limit 70", "--limit 80", "--limit 80 --tile 64"};
    for (int k = 0; k < 3; k++) {
        snprintf(d[k], sizeof d[k], "%s/label%d", tmp, k);
        sh("rm -rf %s", d[k]);
        CHECK(sh("%s --quiet run --model %s --task mc_jsonl --task-file %s --attn bf16,direct,direct+qmean,direct+qmean+preorder "
                 "--threads 1 %s --out %s >/dev/null", bin, model, mc, extra[k], d[k]) == 0, "run %s", extra[k]);
    }
    snprintf(out, sizeof out, "%s/labels.md", tmp);
    const char *t7 = "### Table 7: stepwise ablation, model [%s] (rows B-E";
    const char *want3[3] = {"limit 70, tile 128", "limit 80, tile 128", "limit 80, tile 64"};
    int rc = sh("%s tables %s %s %s >%s 2>/dev/null", bin, d[0], d[1], d[2], out);
    char *s = slurp("%s", out);
    for (int k = 0; k < 3; k++) {
        char nd[300];
        snprintf(nd, sizeof nd, t7, want3[k]);
        CHECK(rc == 0 && s && strstr(s, nd), "tables over three runs: '%s' in:\n%s", nd, s ? s : "");
    }
    free(s);
    // two runs that differ in the limit only: the tile is not named
    rc = sh("%s tables %s %s >%s 2>/dev/null", bin, d[0], d[1], out);
    s = slurp("%s", out);
    CHECK(rc == 0 && s && strstr(s, "model [limit 70] (rows") && strstr(s, "model [limit 80] (rows") && !strstr(s, "tile 128"),
          "tables over two runs:\n%s", s ? s : "");
    free(s);
    // boundary: one run has no label
    rc = sh("%s tables %s >%s 2>/dev/null", bin, d[1], out);
    s = slurp("%s", out);
    CHECK(rc == 0 && s && strstr(s, "### Table 7: stepwise ablation, model (rows") && !strstr(s, "[limit"), "tables over one run:\n%s",
          s ? s : "");
    free(s);
    // diff says the same under its title; two modes of one run differ in nothing else
    rc = sh("%s diff %s:direct %s:direct >%s 2>/dev/null", bin, d[0], d[2], out);
    s = slurp("%s", out);
    CHECK(rc == 0 && s && strstr(s, "A and B differ in: limit 70 vs 80, tile 128 vs 64\n"), "diff header:\n%s", s ? s : "");
    free(s);
    rc = sh("%s diff %s %s >%s 2>/dev/null", bin, d[0], d[0], out);
    s = slurp("%s", out);
    CHECK(rc == 0 && s && !strstr(s, "differ in"), "diff within one run:\n%s", s ? s : "");
    free(s);
}

int main(void) {
    if (cli_begin("hostile")) return test_summary("test_hostile");
    snprintf(model, sizeof model, "%s/model", tmp);
    snprintf(mc, sizeof mc, "%s/mc300.jsonl", tmp);
    int rc = sh("%s --quiet make-model --arch llama --layers 1 --dim 64 --heads 2 --kv-heads 1 --ffn 128 --tied 0 --out %s "
                ">/dev/null", bin, model);
    CHECK(rc == 0, "make-model");
    FILE *f = fopen(mc, "w");
    for (int i = 0; f && i < 300; i++)
        fprintf(f, "{\"question\": \"Question number %d?\", \"choices\": [\"yes\", \"no\", \"maybe\"], \"answer\": %d}\n", i, i % 3);
    if (f) fclose(f);
    (void)shared_path;
    TEST_PROGRESS("subjects");
    test_subjects();
    TEST_PROGRESS("prompts niah");
    test_prompts_niah();
    TEST_PROGRESS("report short mode");
    test_report_short_mode();
    TEST_PROGRESS("killed run");
    test_killed_run();
    TEST_PROGRESS("nonfinite");
    test_nonfinite();
    TEST_PROGRESS("cost");
    test_cost();
    TEST_PROGRESS("empty task");
    test_empty_task();
    TEST_PROGRESS("lock");
    test_lock();
    TEST_PROGRESS("complete last");
    test_complete_last();
    TEST_PROGRESS("cli names");
    test_cli_names();
    TEST_PROGRESS("JSONL rows");
    test_jsonl_rows();
    TEST_PROGRESS("regular files");
    test_regular_files();
    TEST_PROGRESS("options");
    test_options_count();
    TEST_PROGRESS("config meaning");
    test_config_meaning();
    test_config_values();
    TEST_PROGRESS("import directory");
    test_import_dir();
    TEST_PROGRESS("foreign samples files");
    test_foreign_samples();
    TEST_PROGRESS("resume identity and command");
    test_resume_identity();
    TEST_PROGRESS("identity");
    test_identity_resume();
    test_identity_compare();
    test_no_mode_dropped();
    TEST_PROGRESS("every tensor bound or named");
    test_bound_tensors();
    TEST_PROGRESS("table labels");
    test_table_labels();
    return test_summary("test_hostile");
}
