// test_replicas.c: `run --replicas K` end to end on a make-model checkpoint:
//  - replica 0's samples files are byte-identical to a run without --replicas, and the
//    replicas' files differ from them (the perturbation reaches the logits) and from each other;
//  - every replica file is the same for batch 256 x 1 thread and batch 20000 x 2 threads;
//  - a run stopped inside replica 1 and continued with --resume ends byte-identical;
//  - --shard 0/2 + 1/2 and merge give the unsharded run's replica files and summary.json;
//  - the replica count and seed are in the configuration key (--resume with others refused);
//  - model_perturb applied twice gives the unperturbed logits bit for bit;
//  - `tables` prints the replicas' flip / hurt / help probabilities beside the counts: a 4-item,
//    2-replica run whose predictions the test writes itself, every cell worked by hand below.
// Tasks: arc_easy from the test data, else the Debian exam pools; skipped without either (the
// `tables` check uses its own mc_jsonl file and runs on a bare clone).
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_util.h"
#include "model/model.h"
#include "results/noise.h"
#include "results/results.h"
#include "results/stamp.h"
#include "test.h"
#include "model_util.h"

static const char *bin, *tmp, *task = "arc_easy";
static char model[1024], data[1200];

static const char *const modes[] = {"f32", "bf16", "direct"};
#define N_MODES 3
#define ATTN "f32,bf16,direct"

// samples file of mode m, replica k (k = 0: the mode's own file)
static void spath(char *p, size_t n, const char *dir, int m, int k) {
    if (k) snprintf(p, n, "%s/samples-%s-%s_r%d.jsonl.zst", dir, task, modes[m], k);
    else snprintf(p, n, "%s/samples-%s-%s.jsonl.zst", dir, task, modes[m]);
}

static int same_replicas(const char *a, const char *b, int K, const char *what) {
    int bad = 0;
    for (int k = 0; k <= K; k++)
        for (int m = 0; m < N_MODES; m++) {
            char pa[2048], pb[2048];
            spath(pa, sizeof pa, a, m, k);
            spath(pb, sizeof pb, b, m, k);
            if (!test_same_bytes(pa, pb)) { bad++; fprintf(stderr, "  %s: %s differs from %s\n", what, pb, pa); }
        }
    return bad;
}

static void test_replica0_and_spread(void) {
    char plain[1024], rep[1024], pa[2048], pb[2048];
    snprintf(plain, sizeof plain, "%s/rep_plain", tmp);
    snprintf(rep, sizeof rep, "%s/rep_k2", tmp);
    test_sh("rm -rf %s %s", plain, rep);
    CHECK(test_sh("%s --quiet run --model %s --task %s %s --limit 70 --attn " ATTN " --threads 2 --out %s > /dev/null", bin, model,
             task, data, plain) == 0, "plain run");
    CHECK(test_sh("%s --quiet run --model %s --task %s %s --limit 70 --attn " ATTN " --threads 2 --replicas 2 --out %s > /dev/null",
             bin, model, task, data, rep) == 0, "run --replicas 2");
    for (int m = 0; m < N_MODES; m++) {
        spath(pa, sizeof pa, plain, m, 0);
        spath(pb, sizeof pb, rep, m, 0);
        CHECK(test_same_bytes(pa, pb), "%s: replica 0's samples file byte-identical to the plain run's (stamp included)", modes[m]);
        for (int k = 1; k <= 2; k++) {
            spath(pb, sizeof pb, rep, m, k);
            CHECK(file_exists(pb) && !test_same_bytes(pa, pb), "%s: replica %d exists and differs from replica 0", modes[m], k);
        }
        spath(pa, sizeof pa, rep, m, 1);
        CHECK(!test_same_bytes(pa, pb), "%s: replicas 1 and 2 differ", modes[m]);
    }
    // run.json records the replicas; summary.json has the noise statistics with K = 2
    snprintf(pa, sizeof pa, "%s/summary.json", rep);
    char *txt = NULL;
    size_t n;
    struct err e = {0};
    cJSON *s = file_read_all(pa, &txt, &n, &e) ? NULL : cJSON_Parse(txt);
    const cJSON *nz = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(s, "tasks"), task), "noise");
    CHECK(cJSON_GetObjectItem(nz, "replicas") && cJSON_GetObjectItem(nz, "replicas")->valueint == 2, "summary noise.replicas");
    const cJSON *bf = cJSON_GetObjectItem(cJSON_GetObjectItem(nz, "modes"), "bf16");
    CHECK(cJSON_IsObject(cJSON_GetObjectItem(bf, "null_flip")), "null flip rate of bf16");
    cJSON_Delete(s);
    free(txt);
    // report.md, `tables` and `diff` carry it
    snprintf(pa, sizeof pa, "%s/report.md", rep);
    char *md = NULL;
    CHECK(file_read_all(pa, &md, &n, &e) == 0 && strstr(md, "### How much is noise") && strstr(md, "#### Null flip rate") &&
              strstr(md, "Paired differences of the hurt probability"), "report.md has the noise section");
    free(md);
    // `tables` (the paper's layout) with the probabilities: test_tables_probs below
    CHECK(test_sh("%s --quiet diff %s:bf16 %s:direct | grep -q '| %s | 70 | 2 / 0 |'", bin, rep, plain, task) == 0,
          "diff of a 2-replica mode against a single-run mode");
    // the configuration key holds K and the seed
    CHECK(test_sh("%s --quiet run --model %s --task %s %s --limit 70 --attn " ATTN " --replicas 3 --resume --out %s 2>/dev/null",
             bin, model, task, data, rep) == 1, "--resume with another --replicas refused");
    CHECK(test_sh("%s --quiet run --model %s --task %s %s --limit 70 --attn " ATTN " --replicas 2 --replica-seed 5 --resume "
             "--out %s 2>/dev/null", bin, model, task, data, rep) == 1, "--resume with another --replica-seed refused");
    CHECK(test_sh("%s --quiet run --model %s --task %s %s --limit 70 --attn " ATTN " --replicas 2 --resume --out %s > /dev/null",
             bin, model, task, data, rep) == 0, "--resume of the finished run with the same key");
    for (int m = 0; m < N_MODES; m++) {
        spath(pa, sizeof pa, plain, m, 0);
        spath(pb, sizeof pb, rep, m, 0);
        CHECK(test_same_bytes(pa, pb), "%s: replica 0 unchanged by resuming the finished run", modes[m]);
    }
    CHECK(test_sh("%s --quiet run --model %s --task %s %s --limit 5 --attn f32 --replicas -1 2>/dev/null", bin, model, task, data) == 2,
          "--replicas -1 is a usage error");
    CHECK(test_sh("%s --quiet run --model %s --task %s %s --limit 5 --attn f32 --replicas 1 --weights stream --out %s/rep_st "
             "2>/dev/null", bin, model, task, data, tmp) == 2, "--replicas with streamed weights refused");
}

static void test_batch_threads_resume(void) {
    char a[1024], b[1024], c[1024];
    snprintf(a, sizeof a, "%s/rep_k2", tmp);   // batch 4096 (default) x 2 threads, from above
    snprintf(b, sizeof b, "%s/rep_bt", tmp);
    snprintf(c, sizeof c, "%s/rep_resume", tmp);
    test_sh("rm -rf %s %s", b, c);
    CHECK(test_sh("%s --quiet run --model %s --task %s %s --limit 70 --attn " ATTN " --threads 1 --batch-tokens 256 --replicas 2 "
             "--out %s > /dev/null", bin, model, task, data, b) == 0, "batch 256, 1 thread");
    CHECK(same_replicas(a, b, 2, "batch/threads") == 0, "every replica file: batch 256 x 1 thread == batch 4096 x 2 threads");
    // stopped (as a kill leaves the files) after 70 items of replica 0 and ~70 of replica 1
    CHECK(test_sh("HIFA4_STOP_AFTER_ITEMS=140 %s --quiet run --model %s --task %s %s --limit 70 --attn " ATTN " --threads 2 "
             "--batch-tokens 256 --replicas 2 --out %s > /dev/null 2>&1", bin, model, task, data, c) != 0, "stopped run");
    char p[2048];
    spath(p, sizeof p, c, 0, 2);
    CHECK(!file_exists(p), "the stop came before replica 2");
    CHECK(test_sh("%s --quiet run --model %s --task %s %s --limit 70 --attn " ATTN " --threads 2 --replicas 2 --resume --out %s "
             "> /dev/null", bin, model, task, data, c) == 0, "--resume");
    CHECK(same_replicas(a, c, 2, "resume") == 0, "every replica file of the resumed run identical");
}

// What a long replica run shows (stderr off a terminal): each line names the replica; a run
// resumed after replica 0 puts the resumed items with the run's count, not beside a task count
// that has none ("0/70 items (70 resumed)" read as if replica 1 had them); a mode without the
// prefix cache moves the count within one batch (one batch of 70 items here), not only at its
// start and end.
static void test_progress_line(void) {
    char d[1024], log[1100];
    snprintf(d, sizeof d, "%s/rep_progress", tmp);
    snprintf(log, sizeof log, "%s/rep_progress.log", tmp);
    test_sh("rm -rf %s", d);
    const char *args = "--limit 70 --attn f32,direct --threads 1 --batch-tokens 256 --replicas 1";
    CHECK(test_sh("HIFA4_STOP_AFTER_ITEMS=100 %s run --model %s --task %s %s %s --out %s > /dev/null 2>&1", bin, model, task,
             data, args, d) != 0, "stopped in replica 1, before its first whole frame");
    CHECK(test_sh("%s run --model %s --task %s %s %s --resume --out %s > /dev/null 2> %s", bin, model, task, data, args, d,
             log) == 0, "--resume");
    CHECK(test_sh("grep -q '^\\[%s\\] direct, replica 1/1  .* items  .*, run .*(.*/140, 70 resumed)$' %s", task, log) == 0,
          "a line of replica 1 with the run's count and its 70 resumed items (%s)", log);
    CHECK(test_sh("grep -q 'items (70 resumed)' %s", log) != 0, "no resumed count beside the task's count (%s)", log);
    CHECK(test_sh("test $(grep 'direct, replica 1/1' %s | awk '{print $5}' | sort -u | wc -l) -ge 3", log) == 0,
          "direct's count moves within its batch: 3+ distinct counts (%s)", log);
}

static void test_shard_merge(void) {
    char full[1024], s0[1024], s1[1024], mg[1024];
    snprintf(full, sizeof full, "%s/rep_sh_full", tmp);
    snprintf(s0, sizeof s0, "%s/rep_sh_0", tmp);
    snprintf(s1, sizeof s1, "%s/rep_sh_1", tmp);
    snprintf(mg, sizeof mg, "%s/rep_sh_merged", tmp);
    test_sh("rm -rf %s %s %s %s", full, s0, s1, mg);
    char args[4096];
    snprintf(args, sizeof args, "--model %s --task %s %s --limit 9 --attn " ATTN " --replicas 1", model, task, data);
    CHECK(test_sh("%s --quiet run %s --out %s > /dev/null", bin, args, full) == 0, "unsharded");
    CHECK(test_sh("%s --quiet run %s --shard 0/2 --out %s > /dev/null", bin, args, s0) == 0, "shard 0/2");
    CHECK(test_sh("%s --quiet run %s --shard 1/2 --out %s > /dev/null", bin, args, s1) == 0, "shard 1/2");
    CHECK(test_sh("%s --quiet merge %s %s --out %s > /dev/null", bin, s0, s1, mg) == 0, "merge");
    CHECK(same_replicas(full, mg, 1, "merge") == 0, "merged replica files identical to the unsharded run's");
    char pa[2048], pb[2048];
    snprintf(pa, sizeof pa, "%s/summary.json", full);
    snprintf(pb, sizeof pb, "%s/summary.json", mg);
    CHECK(test_same_bytes(pa, pb), "merged summary.json identical");
}

// model_perturb twice restores every bit of the logits; once changes them
static void test_involution(void) {
    struct model *m = NULL;
    struct model_opts mo;
    model_opts_default(&mo);
    mo.weights = MODEL_WEIGHTS_F32;
    mo.max_tokens = 64;
    mo.act_bf16 = 0; // binary32 activations: the move's size is seen, not bf16 rounding flips (2^-8 each)
    struct err e = {0};
    struct attn_ctx *ctx = NULL;
    if (model_open(&m, model, &mo, &e) || model_attn_open(&ctx, m, "exact", NULL, NULL, &e)) { // exact: no bf16 inputs either
        CHECK(0, "model_open: %s", e.msg);
        model_free(m);
        return;
    }
    const int V = model_cfg(m)->vocab_size, T = 12;
    int32_t tok[12];
    int pos[12];
    for (int i = 0; i < T; i++) { tok[i] = (i * 37 + 5) % V; pos[i] = i; }
    float *a = malloc(sizeof(float) * (size_t)T * V), *b = malloc(sizeof(float) * (size_t)T * V),
          *c = malloc(sizeof(float) * (size_t)T * V);
    const struct model_batch mb = test_batch(tok, &T, 1, pos, T);
    int rc = model_forward(m, ctx, NULL, &mb, a, &e);
    rc |= model_perturb(m, 7, 1, &e) | model_forward(m, ctx, NULL, &mb, b, &e);
    rc |= model_perturb(m, 7, 1, &e) | model_forward(m, ctx, NULL, &mb, c, &e);
    CHECK(rc == 0, "%s", e.msg);
    CHECK(memcmp(a, b, sizeof(float) * (size_t)T * V) != 0, "the perturbation changes the logits");
    CHECK(memcmp(a, c, sizeof(float) * (size_t)T * V) == 0, "applied twice: the unperturbed logits bit for bit");
    // one ulp is 2^-24 = 6e-8 relative per weight; with binary32 activations and exact attention
    // the logits move by about ten times that (5e-7 measured): 1e-5 catches anything of a bf16 step
    fprintf(stderr, "  rel-L2 of the logits under replica 1: %.3g\n", test_rel_l2(b, a, (size_t)T * V));
    CHECK(test_rel_l2(b, a, (size_t)T * V) < 1e-5, "and changes them only slightly (rel-L2 %g)", test_rel_l2(b, a, (size_t)T * V));
    CHECK(model_perturb(m, 7, 0, &e) == 0, "replica 0 does nothing");
    free(a); free(b); free(c);
    attn_ctx_free(ctx);
    model_free(m);
}

// ---- `tables` with replicas: the P(x) columns, worked by hand ----
// Four items with gold answers 0, 1, 2, 3 (items 1..4), K = 2. The test overwrites every samples
// file's predictions (pred = pred_norm) with these, replica r of each mode:
//              r0          r1          r2
//   bf16       0 1 2 0     0 1 2 0     0 1 1 0     (item 4 always wrong, item 3 wrong in r2)
//   direct     0 2 2 3     1 1 2 0     0 1 2 0
//   d+qmean    0 1 2 0     0 1 3 0     0 1 1 0
//   hifa4      0 1 2 3     0 1 2 3     0 1 1 3
// Against bf16 of the same replica:
//   direct:  r0 item 2 (hurt: bf16 right) and item 4 (help: bf16 wrong, direct right); r1 item 1
//            (hurt); r2 item 3 (help: bf16's 1 is wrong, direct's 2 right). Per item over the 3
//            runs: flip 1/3 1/3 1/3 1/3, hurt 1/3 1/3 0 0, help 0 0 1/3 1/3.
//   d+qmean: r1 item 3 only (hurt): flip = hurt = 0 0 1/3 0, help 0.
//   hifa4:   item 4 in every replica (help): flip = help = 0 0 0 1, hurt 0.
// Means: direct flip 33.33%, hurt 16.67% (1/6), help 16.67%; d+qmean 8.33% (1/12); hifa4 25.00%.
// The 95% intervals (2000 resamples of 4 items, nearest ranks 50 and 1950):
//   - all four values equal (direct's flip): every resample mean is 1/3: [33.33, 33.33];
//   - two of four values 1/3 (direct's hurt, help): a resample's mean is j/12, j ~ Bin(4, 1/2)
//     the draws of those two items; P(j = 0) = P(j = 4) = 1/16, ~125 resamples each side, far
//     more than the 50 below rank 50 / above rank 1950: [0.00, 33.33];
//   - one value v of four (d+qmean v = 1/3, hifa4 v = 1): mean j v / 4, j ~ Bin(4, 1/4);
//     P(j = 0) = 81/256 (~630 resamples) gives lo = 0; P(j = 4) = 1/256 (~8) < 50 / 2000 <
//     P(j >= 3) = 13/256 (~100) gives hi = 3 v / 4: [0.00, 25.00] and [0.00, 75.00];
//   - all zero: [0.00, 0.00].
// Replica 0's counts: direct 2 flips (50.00%), 1 hurt, 1 help; d+qmean none; hifa4 1 flip
// (25.00%), 0 hurts, 1 help (dHu = (0 - 1) / 1 = -100.0%); accuracy bf16 / direct / d+qmean
// .7500, hifa4 1.0000.
static const char *const tab_modes[] = {"bf16", "direct", "direct+qmean", "hifa4"};
static const int tab_pred[4][3][4] = {
    {{0, 1, 2, 0}, {0, 1, 2, 0}, {0, 1, 1, 0}},
    {{0, 2, 2, 3}, {1, 1, 2, 0}, {0, 1, 2, 0}},
    {{0, 1, 2, 0}, {0, 1, 3, 0}, {0, 1, 1, 0}},
    {{0, 1, 2, 3}, {0, 1, 2, 3}, {0, 1, 1, 3}},
};

// Rewrites replica r of mode m's samples file in dir with tab_pred (its stamp kept valid).
static int set_preds(const char *dir, const cJSON *run, int m, int r) {
    char mode[256], path[4096];
    struct err e = {0};
    struct results_sample *s = NULL;
    struct results_stamp st;
    struct results_writer w;
    int n = 0, rc = noise_replica_name(mode, sizeof mode, tab_modes[m], r, &e);
    if (!rc) rc = results_samples_path(path, sizeof path, dir, "mc_jsonl", mode, &e);
    if (!rc) rc = results_samples_read(path, &s, &n, &e);
    if (!rc && n != 4) rc = err_set(&e, ERR_MISMATCH, "%s: %d items, expected 4", path, n);
    for (int i = 0; !rc && i < n; i++) s[i].pred = s[i].pred_norm = tab_pred[m][r][i];
    results_stamp_expect(&st, run, dir, "mc_jsonl", mode);
    if (!rc) rc = results_writer_open(&w, path, 0, &st, &e);
    for (int i = 0; !rc && i < n; i++) rc = results_writer_add(&w, &s[i], &e);
    if (!rc) rc = results_writer_close(&w, &e);
    for (int i = 0; i < n; i++) results_sample_free(&s[i]);
    free(s);
    if (rc) fprintf(stderr, "  set_preds: %s\n", e.msg);
    return rc;
}

// Writes tab_pred into every samples file of run directory dir (replicas 0..K), then `report`
// recomputes its summary.json. 0 when done.
static int write_hand_preds(const char *dir, int K) {
    char p[2048];
    snprintf(p, sizeof p, "%s/run.json", dir);
    cJSON *run = NULL;
    struct err e = {0};
    int bad = json_parse_file(&run, p, &e);
    for (int m = 0; m < 4 && !bad; m++)
        for (int r = 0; r <= K && !bad; r++) bad = set_preds(dir, run, m, r);
    cJSON_Delete(run);
    if (!bad) bad = test_sh("%s --quiet report %s > /dev/null", bin, dir);
    return bad;
}

// The runs of the hand-worked case: dir with --replicas 2, plain without (replica 0's
// predictions only). 0 when both are ready.
static int hand_runs(const char *dir, const char *plain) {
    char tf[1024], sc[1024], args[4096];
    snprintf(tf, sizeof tf, "%s/rep_tab.jsonl", tmp);
    snprintf(sc, sizeof sc, "%s/rep_tab_scales.safetensors", tmp);
    test_sh("rm -rf %s %s", dir, plain);
    FILE *f = fopen(tf, "w");
    for (int i = 0; f && i < 4; i++)
        fprintf(f, "{\"question\": \"Item %d?\", \"choices\": [\"a\", \"b\", \"c\", \"d\"], \"answer\": %d, \"id\": \"i%d\"}\n",
                i + 1, i, i + 1);
    CHECK(f && fclose(f) == 0, "task file %s", tf);
    snprintf(args, sizeof args, "--model %s --task mc_jsonl --task-file %s --attn bf16,direct,direct+qmean,hifa4 --scales %s "
             "--threads 1", model, tf, sc);
    int bad = test_sh("%s --quiet calibrate --model %s --calib %s --calib-samples 4 --calib-len 64 --threads 1 --out %s "
                      "> /dev/null 2>&1", bin, model, test_text(), sc);
    CHECK(!bad, "calibrate");
    if (!bad) CHECK(!(bad = test_sh("%s --quiet run %s --replicas 2 --out %s > /dev/null", bin, args, dir)), "run --replicas 2");
    if (!bad) CHECK(!(bad = test_sh("%s --quiet run %s --out %s > /dev/null", bin, args, plain)), "run without replicas");
    if (!bad) CHECK(!(bad = write_hand_preds(dir, 2) || write_hand_preds(plain, 0)), "hand-made predictions, summaries");
    return bad;
}

// 1 when the file at path holds every string of want[0..n)
static int has_all(const char *path, const char *const *want, int n) {
    char *txt = NULL;
    size_t len = 0;
    struct err e = {0};
    int ok = file_read_all(path, &txt, &len, &e) == 0;
    for (int k = 0; ok && k < n; k++)
        if (!strstr(txt, want[k])) { fprintf(stderr, "  %s lacks: %s\n", path, want[k]); ok = 0; }
    free(txt);
    return ok;
}

static void test_tables_probs(const char *dir, const char *plain) {
    char p[2048];
    snprintf(p, sizeof p, "%s/tables.md", dir);
    CHECK(test_sh("%s --quiet tables %s --latex %s/tex > %s", bin, dir, dir, p) == 0, "tables");
    static const char *const rows[] = {
        "| Dataset | Flip Rate Direct | P(Flip) Direct | Flip Rate HiFA4 | P(Flip) HiFA4 | Quant Hurts Direct | "
        "P(Hurt) Direct | Quant Hurts HiFA4 | P(Hurt) HiFA4 |\n",
        "| mc_jsonl (4) | 50.00%(2) | 33.33% [33.33, 33.33] | 25.00%(1) | 25.00% [0.00, 75.00] | 1 | 16.67% [0.00, 33.33] | 0 "
        "| 0.00% [0.00, 0.00] |\n",
        "| Model | Dataset | Method | Acc | Fl | P(Fl) | Hu | P(Hu) | He | P(He) | \xce\x94Hu |\n",
        " | mc_jsonl (4) | BF16 | .7500 | - | - | - | - | - | - | - |\n",
        "|  |  | Direct HIF4 | .7500 | 2 | 33.33% [33.33, 33.33] | 1 | 16.67% [0.00, 33.33] | 1 | 16.67% [0.00, 33.33] | - |\n",
        "|  |  | HiFA4 | 1.0000 | 1 | 25.00% [0.00, 75.00] | 0 | 0.00% [0.00, 0.00] | 1 | 25.00% [0.00, 75.00] | -100.0% |\n",
        "| Config | SQK | PRe | mc_jsonl Flip | mc_jsonl P(Flip) | mc_jsonl Hurt | mc_jsonl P(Hurt) |\n",
        "| A. Direct HIF4 | - | - | 2 | 33.33% [33.33, 33.33] | 1 | 16.67% [0.00, 33.33] |\n",
        "| B. +Q-Mean | - | - | 0 | 8.33% [0.00, 25.00] | 0 | 8.33% [0.00, 25.00] |\n",
        "| C. +Smooth-QK | \xe2\x9c\x93 | - | - | - | - | - |\n",
        "| E. Both (HiFA4) | \xe2\x9c\x93 | \xe2\x9c\x93 | 1 | 25.00% [0.00, 75.00] | 0 | 0.00% [0.00, 0.00] |\n",
        "(`run --replicas K`, K = 2): per item, the fraction of the K + 1 runs",
    };
    CHECK(has_all(p, rows, (int)(sizeof rows / sizeof rows[0])), "tables: every hand-worked row");
    static const char *const tex[] = {"& 33.33\\% [33.33, 33.33] &"};
    snprintf(p, sizeof p, "%s/tex/table3.tex", dir);
    CHECK(has_all(p, tex, 1), "LaTeX: the new cells escaped");
    // the same predictions without replicas: the paper's columns alone (byte identity for K = 0
    // runs is test_tables.sh's: its fixtures have no replicas and match the expected files)
    snprintf(p, sizeof p, "%s/tables.md", plain);
    static const char *const t3[] = {"| Dataset | Flip Rate Direct | Flip Rate HiFA4 | Quant Hurts Direct | Quant Hurts HiFA4 |\n"
                                     "|---|---:|---:|---:|---:|\n| mc_jsonl (4) | 50.00%(2) | 25.00%(1) | 1 | 0 |\n"};
    CHECK(test_sh("%s --quiet tables %s > %s", bin, plain, p) == 0 && has_all(p, t3, 1) &&
          test_sh("grep -q 'P(\\|replicas' %s", p) == 1, "no P(x) column or note without replicas");
}

// `diff RUN_A:m RUN_B:m'`'s paired row of the same case, B - A per item:
//  - direct vs hifa4, K = 2 (and direct of the K = 2 run vs hifa4 of the plain run: hifa4's
//    flip over its 3 replicas, 0 0 0 1, is its replica 0's flip indicator too): flip d = -1/3
//    -1/3 -1/3 2/3, mean -1/12 = -8.33; its bootstrap mean is (3j - 4) / 12 with j ~ Bin(4, 1/4)
//    the draws of item 4: lo (j = 0, 31.6%) -33.33, hi (j = 3: P(j = 4) 0.39% < 2.5% <
//    P(j >= 3) 5.08%) +41.67; sign flips of (1/3, 1/3, 1/3, 2/3) never sum below |1/3|: p = 1;
//    sd = 1/2, delta = 0.2 / 3: ceil((2.8015852 * 7.5)^2) = ceil(441.4995) = 442. Hurt d = -1/3
//    -1/3 0 0, mean -1/6 = -16.67; [-33.33, +0.00] (j ~ Bin(4, 1/2), P(j = 0) = P(j = 4) = 1/16);
//    p = 2/4 = 0.5 (two nonzero terms: sums +-2/3 twice, 0 twice); sd = sqrt(1/27), delta =
//    1/30: ceil(261.63) = 262.
//  - the plain runs (K = 0, the exact McNemar test on the indicators): flip direct 0 1 0 1, hifa4
//    0 0 0 1: d = 0 -1 0 0, mean -25.00, [-75.00, +0.00] (j ~ Bin(4, 1/4) draws of item 2),
//    McNemar(b = 1, c = 0) = min(1, 2 * 1/2) = 1, sd 1/2, delta 0.1: ceil(196.22) = 197. Hurt
//    direct 0 1 0 0, hifa4 0: the same d, delta 0.05: ceil(784.89) = 785.
static void test_diff_probs(const char *dir, const char *plain) {
    static const char *const rep[] = {
        "| mc_jsonl | 4 | 2 / 2 | 33.33 | 25.00 | -8.33 [-33.33, +41.67] | 1 | 442 | 16.67 | 0.00 | -16.67 [-33.33, +0.00] | 0.5 "
        "| 262 |\n"};
    static const char *const mixed[] = {
        "| mc_jsonl | 4 | 2 / 0 | 33.33 | 25.00 | -8.33 [-33.33, +41.67] | 1 | 442 | 16.67 | 0.00 | -16.67 [-33.33, +0.00] | 0.5 "
        "| 262 |\n"};
    static const char *const single[] = {
        "| mc_jsonl | 4 | 0 / 0 | 50.00 | 25.00 | -25.00 [-75.00, +0.00] | 1 | 197 | 25.00 | 0.00 | -25.00 [-75.00, +0.00] | 1 "
        "| 785 |\n"};
    char p[2048];
    snprintf(p, sizeof p, "%s/diff.txt", dir);
    CHECK(test_sh("%s --quiet diff %s:direct %s:hifa4 > %s", bin, dir, dir, p) == 0 && has_all(p, rep, 1), "diff, K = 2");
    CHECK(test_sh("%s --quiet diff %s:direct %s:hifa4 > %s", bin, dir, plain, p) == 0 && has_all(p, mixed, 1),
          "diff, K = 2 against K = 0");
    CHECK(test_sh("%s --quiet diff %s:direct %s:hifa4 > %s", bin, plain, plain, p) == 0 && has_all(p, single, 1),
          "diff, K = 0: McNemar");
}

// report.md's "How much is noise" of the same case (run.json's display names: hifa4 and
// direct+qmean in the token form). Null flip = moves against the mode's own replica 0 over
// r = 1, 2: bf16 0 0 1/2 0 (item 3 in r2) and hifa4 the same, direct+qmean 0 0 1 0, direct
// 1/2 1 0 1 (mean 62.50; its 2.5% point lies in a value of mass 5.5% after 1.95% below, too close
// to call by hand: only its mean and its upper end 100 - all four draws among the two 1s, 1/16 -
// are checked). The flip and hurt rows are the tables' (above); the paired rows are b - a of the
// per-item values: direct+qmean - direct flip -1/3 -1/3 0 -1/3: -25.00, j ~ Bin(4, 1/4) draws of
// the 0: [-33.33 (31.6%), -8.33 (j = 3: 0.39% < 2.5% < 5.08%)], p = 2/8 = 0.25 (three equal
// terms), sd 1/6, delta 1/15: ceil(49.06) = 50; its hurt -1/3 -1/3 1/3 0: -8.33, p = 1, sd
// sqrt(44/432) = 0.3191, delta 1/30: ceil(719.5) = 720 (interval ends too close to call: prefix
// only). hifa4 - direct: diff's row. hifa4 - direct+qmean flip 0 0 -1/3 1: +16.67, p = 1
// (sums +-2/3, +-4/3), n = 9419 (interval not checked); hurt 0 0 -1/3 0: -8.33 [-25.00, +0.00]
// (j = 3 of the nonzero item: 5.08% > 2.5% > 0.39%; j = 0 31.6%), p = 1, n = 785. hifa4's hurt
// probability is 0 on all 4 items: the Wilson interval of 0/4, [0, 3.8415/7.8415] = [0, 48.99],
// marked W (a bootstrap gives the point [0, 0]).
static void test_report_probs(const char *dir) {
    static const char *const rows[] = {
        "| bf16 | 12.50 [0.00, 37.50] |\n", "| direct | 62.50 [", ", 100.00] |\n",
        "| direct+qmean (token) | 25.00 [0.00, 75.00] |\n", "| hifa4 (token) | 12.50 [0.00, 37.50] |\n",
        "| direct | 33.33 [33.33, 33.33] (PFR 50.00) |\n", "| direct+qmean (token) | 8.33 [0.00, 25.00] (PFR 0.00) |\n",
        "| hifa4 (token) | 25.00 [0.00, 75.00] (PFR 25.00) |\n", "| direct | 16.67 [0.00, 33.33] (1) |\n",
        "| direct+qmean (token) | 8.33 [0.00, 25.00] (0) |\n", "| hifa4 (token) | 0.00 [0.00, 48.99] W (0) |\n",
        "| direct+qmean (token) - direct | -25.00 [-33.33, -8.33] p=0.25, n=50 |\n",
        "| hifa4 (token) - direct | -8.33 [-33.33, +41.67] p=1, n=442 |\n",
        "| hifa4 (token) - direct+qmean (token) | +16.67 [", "] p=1, n=9419 |\n",
        "| direct+qmean (token) - direct | -8.33 [-33.33, ", "] p=1, n=720 |\n",
        "| hifa4 (token) - direct | -16.67 [-33.33, +0.00] p=0.5, n=262 |\n",
        "| hifa4 (token) - direct+qmean (token) | -8.33 [-25.00, +0.00] p=1, n=785 |\n",
    };
    char p[2048];
    snprintf(p, sizeof p, "%s/report.md", dir);
    CHECK(has_all(p, rows, (int)(sizeof rows / sizeof rows[0])), "report.md: the hand-worked noise rows");
}

// report.md lists every pair of non-reference modes for up to 8 modes (7 * 6 / 2 = 21 rows in
// each paired table) and says where they are for more.
static void test_report_modes(void) {
    char tf[1024], sc[1024], d8[1024], d9[1024], cmd[4096];
    snprintf(tf, sizeof tf, "%s/rep_tab.jsonl", tmp);
    snprintf(sc, sizeof sc, "%s/rep_tab_scales.safetensors", tmp);
    snprintf(d8, sizeof d8, "%s/rep_m8", tmp);
    snprintf(d9, sizeof d9, "%s/rep_m9", tmp);
    test_sh("rm -rf %s %s", d8, d9);
    snprintf(cmd, sizeof cmd, "%s --quiet run --model %s --task mc_jsonl --task-file %s --scales %s --threads 1 --replicas 1 "
             "--attn bf16,exact,f32,direct,direct+qmean,direct+qmean+sqk,direct+qmean+preorder,hifa4", bin, model, tf, sc);
    CHECK(test_sh("%s --out %s > /dev/null", cmd, d8) == 0 && test_sh("%s,sage3 --out %s > /dev/null", cmd, d9) == 0,
          "runs of 8 and 9 modes");
    CHECK(test_sh("test $(sed -n '/^#### Paired differences of the flip/,/^#### Paired differences of the hurt/p' %s/report.md "
                  "| grep -c ' p=') = 21", d8) == 0, "8 modes: the 21 pairs of the 7 non-reference modes");
    CHECK(test_sh("grep -q '^(9 modes: the paired differences of every pair are in summary.json.)' %s/report.md && "
                  "! grep -q '^#### Paired differences' %s/report.md", d9, d9) == 0, "9 modes: pairs in summary.json only");
}

// What the run says up front and records: the plan line's cost (K + 1 passes), run.json's
// replicas record (K, seed, the perturbation's name), the refusal of bf16-held weights.
static void test_plan_and_record(const char *dir) {
    char tf[1024], out[1024], p[2048];
    snprintf(tf, sizeof tf, "%s/rep_tab.jsonl", tmp);
    snprintf(out, sizeof out, "%s/rep_plan", tmp);
    test_sh("rm -rf %s", out);
    CHECK(test_sh("%s run --model %s --task mc_jsonl --task-file %s --attn bf16,direct --replicas 2 --threads 1 --out %s 2>&1 "
                  ">/dev/null | grep -qF 'every mode, the reference included, 2 more times under the null perturbation "
                  "weight-ulp (seed 1): 3 passes over 4 items x 2 modes instead of 1'", bin, model, tf, out) == 0,
          "the plan line says the cost");
    snprintf(p, sizeof p, "%s/run.json", dir);
    cJSON *run = NULL;
    struct err e = {0};
    const cJSON *r = json_parse_file(&run, p, &e) ? NULL : cJSON_GetObjectItem(run, "replicas");
    const cJSON *pt = cJSON_GetObjectItem(r, "perturbation");
    CHECK(cJSON_GetObjectItem(r, "k") && cJSON_GetObjectItem(r, "k")->valueint == 2 && cJSON_GetObjectItem(r, "seed") &&
          cJSON_GetObjectItem(r, "seed")->valueint == 1 && cJSON_IsString(pt) && !strcmp(pt->valuestring, "weight-ulp"),
          "run.json replicas: k 2, seed 1, perturbation weight-ulp");
    cJSON_Delete(run);
    CHECK(test_sh("%s --quiet run --model %s --task mc_jsonl --task-file %s --attn bf16 --replicas 1 --weights bf16 --out %s/rep_wb "
                  "2>&1 | grep -q 'use --weights f32'", bin, model, tf, tmp) == 0 &&
          test_sh("%s --quiet run --model %s --task mc_jsonl --task-file %s --attn bf16 --replicas 1 --weights bf16 --out "
                  "%s/rep_wb > /dev/null 2>&1", bin, model, tf, tmp) == 2, "--replicas with bf16 weights refused");
}

int main(void) {
    bin = getenv("HIFA4_BIN");
    tmp = getenv("HIFA4_TMP");
    if (!bin) bin = "./hifa4-eval";
    if (!tmp) tmp = "build/tmp";
    mkdir_p(tmp, NULL);
    snprintf(model, sizeof model, "%s/rep-model", tmp);
    char st[1100];
    snprintf(st, sizeof st, "%s/model.safetensors", model);
    if (!file_exists(st))
        CHECK(test_sh("%s --quiet make-model --arch llama --layers 2 --dim 128 --heads 4 --kv-heads 2 --head-dim 32 --ffn 256 "
                 "--seed 21 --out %s > /dev/null", bin, model) == 0, "make-model");
    TEST_PROGRESS("model_perturb is an involution");
    test_involution();
    TEST_PROGRESS("tables and diff: the probabilities of a hand-made replica set");
    char hd[1024], hp[1024];
    snprintf(hd, sizeof hd, "%s/rep_tab", tmp);
    snprintf(hp, sizeof hp, "%s/rep_tab_plain", tmp);
    if (!hand_runs(hd, hp)) {
        test_tables_probs(hd, hp);
        test_diff_probs(hd, hp);
        test_report_probs(hd);
        test_report_modes();
        test_plan_and_record(hd);
    }
    const char *ds = test_data("datasets/arc") ? test_data("datasets") : NULL;
    if (ds) snprintf(data, sizeof data, "--data-dir %s", ds);
    else if (dir_exists("/usr/share/hamexam")) task = "exam";
    else {
        TEST_SKIP("no ARC under HIFA4_TEST_DATA=%s and no exam pools (apt-get install hamexam fccexam): run checks",
                  test_data_root());
        return test_summary("test_replicas");
    }
    TEST_PROGRESS("replica 0 == the plain run; replicas differ");
    test_replica0_and_spread();
    TEST_PROGRESS("batch size, threads, resume");
    test_batch_threads_resume();
    TEST_PROGRESS("shard + merge");
    test_shard_merge();
    TEST_PROGRESS("the progress line of a resumed replica run");
    test_progress_line();
    return test_summary("test_replicas");
}
