// test_run.c: end-to-end checks of `hifa4-eval run` on the real stories260K model
// (import-llama2c into $HIFA4_TMP) and real task data from the test data (datasets/):
//  - a 4-task f32,bf16 run writes every file; flips / hurts / helps and acc recomputed here by
//    hand from the two samples files (plain zstd + cJSON, no results/ / metrics.c) match
//    summary.json;
//  - a run killed with SIGKILL part-way and continued with --resume ends with samples files
//    byte-identical to an uninterrupted run;
//  - batch size and thread count do not change a single byte of the samples files;
//  - `report` re-renders, `diff` and `tables` run, bad usage exits 2.
// The must-show command uses --limit 50; here the 4-task run uses --limit 8 to keep the test
// within seconds on 2 shared cores (the reference attention dominates, O(T^2) in binary64).
// The invariance checks (resume, batch size and threads, shard + merge) compare runs of the
// same inputs, whatever the task, on a make-model checkpoint of SmolLM2-135M's layer shapes
// (dim 576, 9 query / 3 KV heads of 64, FFN 1536; 2 layers): tiny models never reach the GEMM
// shapes where BLAS kernels once made a row's bits depend on the batch. Without the
// benchmark data they use the `exam` pools of the Debian packages hamexam/fccexam (installed
// by .ci/run), so that a bare clone checks them too.
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attention/attn.h"
#include "base/common.h"
#include "test.h"

static const char *bin, *tmp;
static char model[1024];  // the 4-task and ppl runs: stories260K, or a tiny make-model
static char imodel[1024]; // the invariance checks: SmolLM2's layer shapes
static const char *qm = "bf16"; // second mode: bf16, or exact while bf16 is not in the registry
static const char *datasets;    // the test data's datasets/ (NULL without the benchmark data)
static char data[1100];         // "--data-dir <datasets>", or "" for exam from /usr/share
// Tasks of the invariance checks: the benchmark tasks with the test data, else exam.
static struct { const char *resume, *batch, *shard; } tk = {"arc_challenge", "mmlu,hellaswag", "arc_challenge,mmlu"};
static int real_data; // stories260K and the benchmark data are there

static char *slurp(const char *path, size_t *n) {
    char *b = NULL;
    struct err e = {0};
    if (file_read_all(path, &b, n, &e)) return NULL; // .zst decompressed
    return b;
}

// pred and gold of every line of a samples file, parsed here with cJSON
static int read_preds(const char *path, int *pred, int *gold, int max) {
    size_t n;
    char *txt = slurp(path, &n);
    if (!txt) return -1;
    int k = 0;
    for (char *line = strtok(txt, "\n"); line && k < max; line = strtok(NULL, "\n")) {
        cJSON *j = cJSON_Parse(line);
        if (!j) { free(txt); return -1; }
        pred[k] = cJSON_GetObjectItem(j, "pred")->valueint;
        gold[k] = cJSON_GetObjectItem(j, "gold")->valueint;
        k++;
        cJSON_Delete(j);
    }
    free(txt);
    return k;
}

// Splits a comma list into at most n names (pointers into buf); returns the count.
static int split_tasks(char *buf, size_t size, const char *list, const char **out, int n) {
    snprintf(buf, size, "%s", list);
    int k = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && k < n; t = strtok_r(NULL, ",", &save)) out[k++] = t;
    return k;
}

static void test_four_tasks(void) {
    if (!real_data) {
        TEST_SKIP("stories260K and datasets/{arc,hellaswag,mmlu,truthfulqa} not under HIFA4_TEST_DATA=%s", test_data_root());
        return;
    }
    static const char *tasks[] = {"arc_challenge", "hellaswag", "mmlu", "truthfulqa_mc1"};
    char out[1024], p[2048];
    snprintf(out, sizeof out, "%s/run_r1", tmp);
    test_sh("rm -rf %s", out);
    int rc = test_sh("%s --quiet run --model %s --task arc_challenge,hellaswag,mmlu,truthfulqa_mc1 %s "
                "--limit 8 --attn f32,%s --out %s > %s/r1.stdout", bin, model, data, qm, out, tmp);
    CHECK(rc == 0, "run exit status %d", rc);
    const char *files[] = {"run.json", "summary.json", "report.md", "tables/accuracy.csv", "tables/flips.csv",
                           "tables/hurts_helps.csv", "plots/margins-mmlu.svg"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", out, files[i]);
        CHECK(file_exists(p), "%s written", p);
    }
    size_t n;
    snprintf(p, sizeof p, "%s/summary.json", out);
    char *txt = slurp(p, &n);
    cJSON *sum = txt ? cJSON_Parse(txt) : NULL;
    free(txt);
    CHECK(sum != NULL, "summary.json parses");
    if (!sum) return;
    for (int t = 0; t < 4; t++) {
        // --limit 8 keeps 8 items of each of MMLU's 57 subjects (lm-eval's per-subtask limit)
        const int want = strcmp(tasks[t], "mmlu") ? 8 : 57 * 8;
        int pr[512], pq[512], g[512], g2[512];
        snprintf(p, sizeof p, "%s/samples-%s-f32.jsonl.zst", out, tasks[t]);
        int na = read_preds(p, pr, g, 512);
        snprintf(p, sizeof p, "%s/samples-%s-%s.jsonl.zst", out, tasks[t], qm);
        int nb = read_preds(p, pq, g2, 512);
        CHECK(na == want && nb == want, "%s: %d and %d samples (want %d)", tasks[t], na, nb, want);
        if (na != want || nb != want) continue;
        int flips = 0, hurts = 0, helps = 0, cr = 0;
        for (int i = 0; i < na; i++) {
            flips += pr[i] != pq[i];
            hurts += pr[i] == g[i] && pq[i] != g[i];
            helps += pr[i] != g[i] && pq[i] == g[i];
            cr += pr[i] == g[i];
        }
        const cJSON *tj = cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "tasks"), tasks[t]);
        const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(tj, "vs_reference"), qm);
        CHECK(v && cJSON_GetObjectItem(v, "flips")->valueint == flips, "%s flips want %d", tasks[t], flips);
        CHECK(v && cJSON_GetObjectItem(v, "hurts")->valueint == hurts, "%s hurts want %d", tasks[t], hurts);
        CHECK(v && cJSON_GetObjectItem(v, "helps")->valueint == helps, "%s helps want %d", tasks[t], helps);
        const cJSON *m = cJSON_GetObjectItem(cJSON_GetObjectItem(tj, "modes"), "f32");
        double acc = (double)cr / na;
        CHECK_CLOSE(cJSON_GetObjectItem(m, "acc")->valuedouble, acc, 1e-15, 0);
        CHECK_CLOSE(cJSON_GetObjectItem(m, "acc_stderr")->valuedouble, sqrt(acc * (1 - acc) / (na - 1)), 1e-15, 1e-12);
        CHECK((cJSON_GetObjectItem(m, "acc_norm") != NULL) == (t < 2), "%s: acc_norm present iff the task reports it", tasks[t]);
    }
    cJSON_Delete(sum);
    // report re-renders the same report.md
    char a[2048], b[2048];
    snprintf(a, sizeof a, "%s/report.md", out);
    snprintf(b, sizeof b, "%s/report.first.md", tmp);
    test_sh("cp %s %s", a, b);
    CHECK(test_sh("%s --quiet report %s > /dev/null", bin, out) == 0, "report");
    CHECK(test_same_bytes(a, b), "re-rendered report.md identical");
    CHECK(test_sh("%s diff %s %s:%s > %s/diff.txt", bin, out, out, qm, tmp) == 0, "diff");
    snprintf(p, sizeof p, "%s/diff.txt", tmp);
    txt = slurp(p, &n);
    CHECK(txt && strstr(txt, "| mmlu | 456 |"), "diff lists mmlu: %s", txt ? txt : "");
    free(txt);
    CHECK(test_sh("%s tables %s %s --csv %s/tables > /dev/null", bin, out, out, tmp) == 0, "tables");
    CHECK(test_sh("%s --quiet run --model %s --task mmlu --bos maybe 2>/dev/null", bin, model) == 2, "bad --bos exits 2");
    CHECK(test_sh("%s --quiet run --model %s --task mmlu --attn nosuch 2>/dev/null", bin, model) == 2, "unknown mode exits 2");
    CHECK(test_sh("%s --quiet run --model %s --task mmlu %s --limit 1 --attn f32 --out %s 2>/dev/null",
             bin, model, data, out) == 2, "existing run dir without --resume refused");
}

// Perplexity: summary's ppl and bits per byte recomputed from the window samples.
static void test_ppl(void) {
    if (!real_data) {
        TEST_SKIP("stories260K and datasets/{arc,hellaswag,mmlu,truthfulqa} not under HIFA4_TEST_DATA=%s", test_data_root());
        return;
    }
    if (!TEST_NEED("datasets/wikitext2")) return;
    char out[1024], p[2048];
    snprintf(out, sizeof out, "%s/run_ppl", tmp);
    test_sh("rm -rf %s", out);
    CHECK(test_sh("%s --quiet run --model %s --task ppl %s --limit 3 --ppl-ctx 64 --attn f32,%s "
             "--out %s > /dev/null", bin, model, data, qm, out) == 0, "ppl run");
    size_t n;
    snprintf(p, sizeof p, "%s/samples-ppl-%s.jsonl.zst", out, qm);
    char *txt = slurp(p, &n);
    double ll = 0;
    long tokens = 0, bytes = 0;
    int lines = 0;
    for (char *line = txt ? strtok(txt, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        cJSON *j = cJSON_Parse(line);
        if (!j) break;
        ll += cJSON_GetArrayItem(cJSON_GetObjectItem(j, "logliks"), 0)->valuedouble;
        tokens += cJSON_GetArrayItem(cJSON_GetObjectItem(j, "tok_lens"), 0)->valueint;
        bytes += cJSON_GetArrayItem(cJSON_GetObjectItem(j, "char_lens"), 0)->valueint;
        CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(j, "kl")) == 64, "a KL value per scored position");
        lines++;
        cJSON_Delete(j);
    }
    free(txt);
    CHECK(lines == 3 && tokens == 3 * 64, "3 windows of 64 tokens (%d, %ld)", lines, tokens);
    snprintf(p, sizeof p, "%s/summary.json", out);
    txt = slurp(p, &n);
    cJSON *sum = txt ? cJSON_Parse(txt) : NULL;
    free(txt);
    const cJSON *m = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "tasks"), "ppl"), "modes"), qm);
    CHECK(m != NULL, "summary has ppl for %s", qm);
    if (m) {
        CHECK_CLOSE(cJSON_GetObjectItem(m, "ppl")->valuedouble, exp(-ll / tokens), 0, 1e-12);
        CHECK_CLOSE(cJSON_GetObjectItem(m, "bits_per_byte")->valuedouble, -ll / (log(2.0) * bytes), 0, 1e-12);
    }
    cJSON_Delete(sum);
    // llama-perplexity's definition: 64-token windows, 31 scored each (positions 32..62)
    char half[1024];
    snprintf(half, sizeof half, "%s/run_ppl_half", tmp);
    test_sh("rm -rf %s", half);
    CHECK(test_sh("%s --quiet run --model %s --task ppl %s --limit 3 --ppl-ctx 64 --ppl-score second-half --attn f32 "
             "--out %s > /dev/null", bin, model, data, half) == 0, "ppl run, second half");
    snprintf(p, sizeof p, "%s/samples-ppl-f32.jsonl.zst", half);
    txt = slurp(p, &n);
    tokens = 0, lines = 0;
    for (char *line = txt ? strtok(txt, "\n") : NULL; line; line = strtok(NULL, "\n"), lines++) {
        cJSON *j = cJSON_Parse(line);
        tokens += j ? cJSON_GetArrayItem(cJSON_GetObjectItem(j, "tok_lens"), 0)->valueint : 0;
        cJSON_Delete(j);
    }
    free(txt);
    CHECK(lines == 3 && tokens == 3 * 31, "second half: 3 windows of 31 scored tokens (%d, %ld)", lines, tokens);
    snprintf(p, sizeof p, "%s/run.json", half);
    txt = slurp(p, &n);
    CHECK(txt && strstr(txt, "\"ppl_score\":\t\"second-half\""), "run.json records ppl_score second-half");
    free(txt);
    CHECK(test_sh("%s --quiet run --model %s --task ppl %s --limit 3 --ppl-ctx 64 --attn f32 --out %s --resume 2>/dev/null",
             bin, model, data, half) != 0, "--resume with the other ppl definition refused");
    CHECK(test_sh("%s --quiet run --model %s --task ppl %s --ppl-score half 2>/dev/null", bin, model, data) == 2,
          "bad --ppl-score exits 2");
}

static void samples_path(char *p, size_t n, const char *dir, const char *task, const char *mode) {
    snprintf(p, n, "%s/samples-%s-%s.jsonl.zst", dir, task, mode);
}

static void test_resume(void) {
    const int limit = 70; // a full frame of 64 items and a partial one
    char full[1024], part[1024], pa[2048], pb[2048];
    snprintf(full, sizeof full, "%s/run_full", tmp);
    snprintf(part, sizeof part, "%s/run_part", tmp);
    test_sh("rm -rf %s %s", full, part);
    char args[2048];
    snprintf(args, sizeof args, "--task %s %s --attn f32,%s --threads 1", tk.resume, data, qm);
    char attn[64];
    snprintf(attn, sizeof attn, "f32,%s", qm);
    CHECK(test_sh("%s --quiet run --model %s %s --limit %d --out %s > /dev/null", bin, imodel, args, limit, full) == 0, "full run");
    // A real SIGKILL at a known point: the run freezes itself (SIGSTOP) where it has scored 64
    // items, with the first frame of 64 lines on disk and the rest pending in memory. Polling for
    // the file and killing raced: with the prefix cache all 70 items are one batch, and the run
    // often finished its last 6 lines before the kill arrived (a CI failure).
    pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stdout);
        freopen("/dev/null", "w", stderr);
        setenv("HIFA4_STOP_AFTER_ITEMS", "64", 1);
        setenv("HIFA4_FREEZE_AT_STOP", "1", 1);
        char lim[16];
        snprintf(lim, sizeof lim, "%d", limit);
        const char *argv[20] = {bin, "--quiet", "run", "--model", imodel, "--task", tk.resume, "--attn", attn, "--threads",
                                "1", "--limit", lim, "--out", part};
        if (datasets) argv[15] = "--data-dir", argv[16] = datasets;
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    int st = 0, killed = 0;
    if (waitpid(pid, &st, WUNTRACED) == pid && WIFSTOPPED(st)) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        killed = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
    }
    CHECK(killed, "the run froze at item 64 and was killed with SIGKILL");
    samples_path(pa, sizeof pa, part, tk.resume, qm);
    CHECK(!file_exists(pa) || !test_same_bytes(pa, (samples_path(pb, sizeof pb, full, tk.resume, qm), pb)), "the killed run is incomplete");
    CHECK(test_sh("%s --quiet run --model %s %s --limit %d --out %s --resume > /dev/null", bin, imodel, args, limit, part) == 0, "resume");
    for (int m = 0; m < 2; m++) {
        const char *mode = m ? qm : "f32";
        samples_path(pa, sizeof pa, full, tk.resume, mode);
        samples_path(pb, sizeof pb, part, tk.resume, mode);
        CHECK(test_same_bytes(pa, pb), "resumed %s samples byte-identical after the SIGKILL", mode);
    }
    // resuming a finished run changes nothing
    CHECK(test_sh("%s --quiet run --model %s %s --limit %d --out %s --resume > /dev/null", bin, imodel, args, limit, part) == 0, "resume done run");
    CHECK(test_same_bytes(pa, pb), "still identical");
    // resuming with other options is refused
    CHECK(test_sh("%s --quiet run --model %s %s --limit %d --out %s --resume 2>/dev/null", bin, imodel, args, limit + 1, part) == 1,
          "resume with another --limit refused");
}

static void test_batch_threads(void) {
    char a[1024], b[1024], pa[2048], pb[2048];
    snprintf(a, sizeof a, "%s/run_bt_a", tmp);
    snprintf(b, sizeof b, "%s/run_bt_b", tmp);
    test_sh("rm -rf %s %s", a, b);
    // with a quantized mode too when the registry has it (the product's modes must be batch-invariant)
    int has_direct = attn_mode_find("direct") != NULL;
    char args[2048];
    snprintf(args, sizeof args, "--task %s %s --limit 6 --attn f32,%s%s", tk.batch, data, qm, has_direct ? ",direct" : "");
    CHECK(test_sh("%s --quiet run --model %s %s --batch-tokens 256 --threads 1 --out %s > /dev/null", bin, imodel, args, a) == 0, "run a");
    CHECK(test_sh("%s --quiet run --model %s %s --batch-tokens 20000 --threads 2 --out %s > /dev/null", bin, imodel, args, b) == 0, "run b");
    const char *tasks[2], *modes[] = {"f32", qm, "direct"};
    char buf[256];
    const int n_tasks = split_tasks(buf, sizeof buf, tk.batch, tasks, 2);
    for (int t = 0; t < n_tasks; t++)
        for (int m = 0; m < 2 + has_direct; m++) {
            samples_path(pa, sizeof pa, a, tasks[t], modes[m]);
            samples_path(pb, sizeof pb, b, tasks[t], modes[m]);
            CHECK(test_same_bytes(pa, pb), "%s/%s: batch 256 x 1 thread == batch 20000 x 2 threads", tasks[t], modes[m]);
        }
}

// --shard K/N + merge: the merged samples files and summary.json equal an unsharded run's.
static void test_shard_merge(void) {
    char full[1024], s0[1024], s1[1024], mg[1024], pa[2048], pb[2048];
    snprintf(full, sizeof full, "%s/run_sh_full", tmp);
    snprintf(s0, sizeof s0, "%s/run_sh_0", tmp);
    snprintf(s1, sizeof s1, "%s/run_sh_1", tmp);
    snprintf(mg, sizeof mg, "%s/run_sh_merged", tmp);
    test_sh("rm -rf %s %s %s %s", full, s0, s1, mg);
    char args[4096];
    snprintf(args, sizeof args, "--model %s --task %s %s --limit 3 --attn f32,%s", imodel, tk.shard, data, qm);
    CHECK(test_sh("%s --quiet run %s --out %s > /dev/null", bin, args, full) == 0, "unsharded run");
    CHECK(test_sh("%s --quiet run %s --shard 1/2 --out %s > /dev/null", bin, args, s1) == 0, "shard 1/2");
    CHECK(test_sh("%s --quiet merge %s --out %s 2>/dev/null", bin, s1, mg) == 1, "merge with a shard missing refused");
    CHECK(test_sh("%s --quiet run %s --shard 0/2 --out %s > /dev/null", bin, args, s0) == 0, "shard 0/2");
    CHECK(test_sh("%s --quiet run %s --shard 2/2 2>/dev/null", bin, args) == 2, "--shard 2/2 is a usage error");
    CHECK(test_sh("%s --quiet merge %s %s --out %s > /dev/null", bin, s1, s0, mg) == 0, "merge");
    // every task's f32 samples, summary.json, and the last task's second-mode samples
    const char *tasks[2];
    char buf[256], files[3][256];
    const int n_tasks = split_tasks(buf, sizeof buf, tk.shard, tasks, 2);
    for (int t = 0; t < n_tasks; t++) snprintf(files[t], sizeof files[t], "samples-%s-f32.jsonl.zst", tasks[t]);
    snprintf(files[n_tasks], sizeof files[n_tasks], "summary.json");
    for (int i = 0; i <= n_tasks; i++) {
        snprintf(pa, sizeof pa, "%s/%s", full, files[i]);
        snprintf(pb, sizeof pb, "%s/%s", mg, files[i]);
        CHECK(test_same_bytes(pa, pb), "merged %s identical to the unsharded run's", files[i]);
    }
    samples_path(pa, sizeof pa, full, tasks[n_tasks - 1], qm);
    samples_path(pb, sizeof pb, mg, tasks[n_tasks - 1], qm);
    CHECK(test_same_bytes(pa, pb), "merged %s samples identical", qm);
}

int main(void) {
    bin = getenv("HIFA4_BIN");
    tmp = getenv("HIFA4_TMP");
    if (!bin) bin = "./hifa4-eval";
    if (!tmp) tmp = "build/tmp";
    mkdir_p(tmp, NULL);
    if (!attn_mode_find("bf16")) qm = "exact";
    const char *s260k = test_data("models/stories260K");
    real_data = s260k && test_data("datasets/arc") && test_data("datasets/hellaswag") && test_data("datasets/mmlu") &&
                test_data("datasets/truthfulqa");
    if (real_data) {
        datasets = test_data("datasets");
        snprintf(data, sizeof data, "--data-dir %s", datasets);
        snprintf(model, sizeof model, "%s/s260k", tmp);
        char cfg[1100];
        snprintf(cfg, sizeof cfg, "%s/tokenizer.json", model);
        if (!file_exists(cfg))
            CHECK(test_sh("%s --quiet import-llama2c %s/stories260K.bin %s/tok512.bin --out %s > /dev/null", bin, s260k, s260k,
                     model) == 0, "import-llama2c");
    } else {
        tk.resume = tk.batch = tk.shard = "exam";
        snprintf(model, sizeof model, "%s/run-mm", tmp);
        CHECK(test_sh("%s --quiet make-model --arch llama --layers 2 --dim 64 --heads 2 --kv-heads 1 --ffn 128 --seed 9 --out %s "
                 "> /dev/null", bin, model) == 0, "make-model");
    }
    snprintf(imodel, sizeof imodel, "%s/run-smollm2-shape", tmp);
    char icfg[1100];
    snprintf(icfg, sizeof icfg, "%s/model.safetensors", imodel);
    if (!file_exists(icfg))
        CHECK(test_sh("%s --quiet make-model --arch llama --layers 2 --dim 576 --heads 9 --kv-heads 3 --head-dim 64 --ffn 1536 "
                 "--seed 11 --out %s > /dev/null", bin, imodel) == 0, "make-model (SmolLM2 shape)");
    TEST_PROGRESS("4 tasks x 2 modes, flips / hurts / helps recomputed by hand");
    test_four_tasks();
    TEST_PROGRESS("perplexity");
    test_ppl();
    if (real_data || dir_exists("/usr/share/hamexam")) {
        TEST_PROGRESS("SIGKILL + --resume: byte-identical samples");
        test_resume();
        TEST_PROGRESS("batch size and thread count invariance");
        test_batch_threads();
        TEST_PROGRESS("--shard K/N + merge");
        test_shard_merge();
    } else {
        TEST_SKIP("no stories260K and benchmark data under HIFA4_TEST_DATA=%s, and no exam pools in /usr/share/hamexam "
                  "(apt-get install hamexam fccexam) for resume / batch / shard checks", test_data_root());
    }
    return test_summary("test_run");
}
