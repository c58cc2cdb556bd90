// run.h: the life cycle of a run (DESIGN.md sections 1 and 4) - plan the items of every task,
// open the model, score ranges of items under every attention mode, resume, finish - as one
// small API that the `run` and `merge` commands, the tests and a distributed driver share.
//
//   run_open            the run directory (locked), config, tokenizer, modes, scales, every
//                       task's data -> requests and the --resume key are checked before the
//                       weights load; then the model, and run.json (complete: false)
//   run_task_begin      opens a task's samples files, at the resume point of a killed run
//   run_task_score      scores the next items of that task (every mode on each batch, so
//                       token-level KL against the first mode needs no stored logits)
//   run_task_end        closes the samples files (only whole frames are ever on disk)
//   run_finish          timings, hook coverage and cost counts into run.json; run_publish
//   run_publish         summary.json, report.md, tables and plots, then run.json with
//                       complete: true - last, atomically
//   run_merge           joins the directories of `run --shard K/N` into one run
//
// Results do not depend on how items are split into calls, batches, threads, shards or
// resumed invocations: samples files end byte-identical (results.h frame rule).
#ifndef HIFA4_RUN_H
#define HIFA4_RUN_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "attention/attn.h"
#include "base/common.h"
#include "eval/tasks/task.h"
#include "model/model.h"

#define RUN_MAX_MODES 16
#define RUN_MAX_TASKS 64

// Every task's data as loaded before the model (run_precheck), for run_open to take: sets[t]
// belongs to run_opts.tasks[t]; NULL for a task run_open loads itself (niah is sized in tokens
// and needs the tokenizer). A set run_open takes is removed from here.
struct run_tasks {
    struct task_set *sets[RUN_MAX_TASKS];
};
void run_tasks_free(struct run_tasks *t); // the sets still held; safe on NULL

struct run_opts {
    // model (the caller resolves registry names to a directory)
    const char *model_dir;       // checkpoint directory
    const char *model_name;      // run.json model.name, report title, default run directory
    const char *model_arg;       // as the user gave it (run.json model.arg)
    const char *tokenizer_dir;   // NULL: model_dir
    struct model_opts model;     // act, weights, batch capacity (max_tokens), threads
    // attention
    const char *modes[RUN_MAX_MODES]; // first = reference for flips and KL
    int n_modes;
    struct attn_opts attn;
    const char *scales;          // Smooth-QK scales file, or NULL
    int scales_later;            // 1: the caller finds or makes the scales before run_open (run's
                                 // automatic calibration), so run_select_modes keeps the modes
                                 // that need them although scales is still NULL
    const cJSON *model_source;   // optional: where the model came from (run.json model.source: hub
                                 // repo, revision and commit; GGUF file and sha256); copied
    const cJSON *calibration;    // optional: the calibration that made `scales` in this invocation
                                 // (run.json calibration; not part of the configuration key); copied
    // tasks
    const char *tasks[RUN_MAX_TASKS];
    int n_tasks;
    struct task_opts task;       // data lookup, limit, seed, niah options (count_tokens is set by run_open)
    struct run_tasks *loaded;    // optional: the task data run_precheck loaded; run_open takes each
                                 // set from it (so no task is read twice), NULL: run_open loads them
    int bos_policy;              // enum eval_bos
    const char *bos_arg;         // the --bos text (run.json tokenizer.bos_policy)
    int ppl_ctx;                 // tokens per perplexity window (capped at the model's window)
    int ppl_half;                // 1: llama-perplexity's windows, second half scored (eval_plan_build_ppl_half);
                                 // 0 (default): every token scored once (eval_plan_build_ppl)
    int shard_k, shard_n;        // score items [k*n/N, (k+1)*n/N) of every task (0, 1: all)
    int prefix_cache;            // 1 (default): share prefixes through the exact KV cache (eval/cached.h);
                                 // 0: every sequence whole (--no-prefix-cache). Never changes a result.
    int n_threads;               // resolved thread count (> 0)
    // run directory
    const char *out_dir;         // NULL: results/<model_name>-<UTC time>
    int resume;                  // continue the run in out_dir
    int argc;                    // the command line, recorded in run.json
    char **argv;
    int replicas;                // K (--replicas): every mode K more times under the null perturbation
                                 // (model_perturb); 0: the plain run. Part of the configuration key.
    uint64_t replica_seed;       // the perturbation's seed (--replica-seed; part of the key)
    int nonfinite;               // enum run_nonfinite: what a non-finite log-likelihood does
    int role;                    // enum run_role: a whole run, or a worker rank of a distributed one
    int stop_after_items;        // test hook: fail like a SIGKILL after this many items (0: off)
    void (*at_stop)(void);       // test hook: called first when stop_after_items is reached (the CLI
                                 // freezes itself there so a test can SIGKILL it at a known point)
};
// A log-likelihood that is not finite (NaN/inf logits: an overflowing weight, scale or
// activation) is never scored as a prediction. STOP (default): the run stops naming task, item
// id and mode. COUNT: the item is written with "nonfinite": 1 and left out of every statistic
// of its task in every mode (summary.json "nonfinite", a table in report.md). Not part of the
// configuration key: a stopped run may be resumed with --nonfinite count.
enum run_nonfinite { RUN_NONFINITE_STOP = 0, RUN_NONFINITE_COUNT = 1 };
void run_opts_default(struct run_opts *o);
// WHOLE: the run directory is this process's (every run but a distributed one's workers).
// WORKER: a rank of a distributed run (eval/run_dist.h) that computes items for rank 0: it
// opens the model, the tokenizer and every task's plan exactly as rank 0 does, but touches no
// run directory (no lock, no run.json, no samples files) and scores only through
// run_task_score_lines.
enum run_role { RUN_ROLE_WHOLE = 0, RUN_ROLE_WORKER = 1 };

// Fills o->modes from the --attn list (n names; pointers kept): none -> bf16,direct,hifa4 (as
// registered; modes that need Smooth-QK scales are skipped with a warning when o->scales is
// NULL and !o->scales_later; f32 if none is left); the single name "all" -> every registered mode but the binary64
// `exact`, with bf16 (else f32) first; else the modes named. Unknown or repeated mode, or more
// than RUN_MAX_MODES: ERR_USAGE listing the modes.
int run_select_modes(struct run_opts *o, const char *const *names, int n, struct err *e);
// Fills o->tasks from the --task list. Unknown or repeated task: ERR_USAGE listing the tasks.
int run_select_tasks(struct run_opts *o, const char *const *names, int n, struct err *e);

// Progress of scoring, reported before each mode's forward of a batch and after each batch:
// done counts the run's finished items (resumed ones too; fractional inside a batch: the share
// of its modes computed), resumed the part that earlier invocations scored; task_done/task_total
// the same within the task; mode the mode being computed (NULL between batches: all modes done);
// final = 1 once per task at its end.
struct run_progress {
    const char *task, *mode;
    double done, task_done;
    int64_t total, task_total, resumed; // resumed: items of total done before this process
    int replica, replicas;              // the replica being scored, of --replicas (0: the plain run)
    int final;
};
typedef void (*run_progress_fn)(void *user, const struct run_progress *p);

struct run;

// The checks of run_open that need no model, for a caller about to fetch one (a download can
// take hours): an existing run.json without o->resume, an --out that is a file, a missing
// scales file, and every task's data loaded and refused when empty (niah, sized in tokens,
// waits for run_open), and a --subjects name that no task has. Nothing is written. loaded (may
// be NULL: checked, then freed) keeps the sets for run_open (run_opts.loaded); on error it
// holds none.
int run_precheck(const struct run_opts *o, struct run_tasks *loaded, struct err *e);

// Creates (or opens) the run directory and locks it for this process (another process holding
// it: ERR_IO naming it; a killed holder leaves no lock), then checks, before the weights load:
// config.json, the tokenizer, every mode with its options and the scales file (values, shape,
// model hash), every task's data (an empty task is an error naming task and file) tokenized
// into requests, and the configuration key: with o->resume an existing run.json must have the
// same key (else ERR_MISMATCH); without it an existing run.json is ERR_USAGE. Then opens the
// model and writes run.json with complete: false. A directory this call created is removed
// again if it fails before run.json. *out is NULL on error. Strings in o must outlive the run.
int run_open(struct run **out, const struct run_opts *o, struct err *e);
void run_free(struct run *r); // safe on NULL; aborts open samples files (whole frames stay)

void run_set_progress(struct run *r, run_progress_fn fn, void *user);
const char *run_dir(const struct run *r);      // valid until run_free
int run_n_tasks(const struct run *r);
const char *run_task_name(const struct run *r, int t);
int run_task_items(const struct run *r, int t); // items of task t in this shard

// Replicas: K of run_opts.replicas. run_set_replica(r, k) moves the model's weights
// to replica k's perturbation (model_perturb; 0: unperturbed, every bit restored) and sends the
// task calls that follow to replica k's samples files, "<mode>@r<k>" (noise.h; replica 0's
// are the plain run's files, byte-identical to a run without --replicas). Call it with no task
// open; a driver scores every task for k = 0..K. Hook coverage, cost counts and forward times
// in run.json are replica 0's; the replicas' forward seconds are recorded beside them.
int run_n_replicas(const struct run *r);
int run_set_replica(struct run *r, int k, struct err *e);

// Opens task t's samples files. *next = the first item to score: 0, or with --resume the
// number of items every mode's file already holds in whole frames; n (the task is complete,
// nothing is opened, progress counts it) when all are there.
int run_task_begin(struct run *r, int t, int *next, struct err *e);
// Scores items from the task's current position up to item_end (exclusive; at most the task's
// items), every mode per batch, appending to the samples files. Errors name the task, mode and
// items. The stop_after_items hook ends here with ERR_INTERNAL, leaving the files as a kill would.
int run_task_score(struct run *r, int t, int item_end, struct err *e);
int run_task_end(struct run *r, int t, struct err *e);
// Where task t resumes: the items every mode's samples file holds in whole frames with
// --resume (n when the task is complete), else 0. Opens nothing.
int run_task_resume_point(struct run *r, int t, int *keep, struct err *e);
// Scores items [item0, item1) of task t under every mode like run_task_score, but appends each
// item's samples-file line to lines[m] (one buffer per mode, in item order) instead of the
// samples files, and reports no progress: the lines a distributed run's rank 0 writes through
// its own writers (results_writer_add_line). Items need not follow the task's position.
struct results_buf;
int run_task_score_lines(struct run *r, int t, int item0, int item1, struct results_buf *lines, struct err *e);
// Records timings, hook coverage and cost counts in run.json, then run_publish. *headline (may
// be NULL) receives the report's headline table (caller frees).
int run_finish(struct run *r, char **headline, struct err *e);

// Writes run.json (the object `run`, modified) with complete: false into dir, then
// summary.json, report.md, tables and plots; only when all of them exist, run.json with
// complete: true (atomically: temp file + rename), so a run that fails on the way (disk full)
// never says it is complete. report, diff and tables refuse a run that is not. *headline as
// above.
int run_publish(const char *dir, cJSON *run, char **headline, struct err *e);

// Joins complete shard run directories (one per k of the same N, same configuration key) into
// out (which must not hold a run; locked while merging): samples concatenated in item order and re-framed, so the
// files equal an unsharded run's byte for byte; run.json sums the hook coverage, cost counts
// and request/token counts and keeps every shard's timings.
int run_merge(const char *const *shards, int n_shards, const char *out, char **headline, struct err *e);

#endif
