// run.c: `hifa4-eval run` (and the bare `hifa4-eval --model M --task T`): parses the options
// into the run's options and the plan's arguments, then makes the plan (model, scales, modes,
// tasks with their data: runplan/run_plan.h) and drives it; prints where the report is. Progress
// lines go to stderr.
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dist.h"
#include "base/out_path.h"
#include "calib/rule_args.h"
#include "cli/cli.h"
#include "eval/eval.h"
#include "eval/run.h"
#include "results/results.h"
#include "runplan/run_plan.h"

// ---- options ----
struct run_cli {
    const char *model, *task, *tasks, *attn, *out, *data_dir, *scales, *calib, *act, *bos, *tokenizer, *ppl_score;
    const char *gate_rule;
    const char *task_file, *subject, *subjects, *weights, *v_group, *qformat, *qmean, *qdq_skip, *niah_lengths, *niah_form, *shard, *nonfinite;
    int limit, threads, resume, tile, batch_tokens, skip_bad_rows, offline, help, ppl_ctx, niah_per_cell, no_prefix_cache;
    int replicas;
    int64_t seed, replica_seed;
};

static int stop_after(void) {
    const char *s = getenv("HIFA4_STOP_AFTER_ITEMS"); // test hook: simulate a kill after N items
    const char *k = getenv("HIFA4_STOP_RANK");         // of an MPI job: on this rank only (default 0)
    if (dist_rank() != (k ? atoi(k) : 0)) return 0;
    return s ? atoi(s) : 0;
}

// Test hook (HIFA4_FREEZE_AT_STOP=1): stop the process with SIGSTOP where HIFA4_STOP_AFTER_ITEMS
// would end the run, so a test can deliver a real SIGKILL at a known point instead of racing.
static void freeze_self(void) { raise(SIGSTOP); }


static int slurm_int(const char *name, int *v, struct err *e) {
    const char *s = getenv(name);
    if (!s) return err_set(e, ERR_USAGE, "--shard auto: %s is not set (run it as a task of a Slurm array job: sbatch --array)", name);
    long long x;
    if (str_to_int(s, 0, 1000000, &x))
        return err_set(e, ERR_USAGE, "--shard auto: %s='%s' is not a task index", name, s);
    *v = (int)x;
    return 0;
}

// --shard auto: K/N of this task of a Slurm array job (indices MIN..MAX with step 1).
static int shard_from_slurm(int *k, int *n, struct err *e) {
    int id = 0, count = 0, lo = 0, hi = 0, rc;
    if ((rc = slurm_int("SLURM_ARRAY_TASK_ID", &id, e)) || (rc = slurm_int("SLURM_ARRAY_TASK_COUNT", &count, e)) ||
        (rc = slurm_int("SLURM_ARRAY_TASK_MIN", &lo, e)) || (rc = slurm_int("SLURM_ARRAY_TASK_MAX", &hi, e)))
        return rc;
    if (count < 1 || hi - lo + 1 != count || id < lo || id > hi)
        return err_set(e, ERR_USAGE, "--shard auto: the array is %d..%d with %d tasks: it needs consecutive indices "
                       "(sbatch --array=0-%d, no step or list)", lo, hi, count, count - 1);
    *k = id - lo;
    *n = count;
    log_info("run: --shard auto: shard %d/%d (Slurm array task %d)", *k, *n, id);
    return 0;
}

// Checks of single flags, in the order a user reads them in --help.
static int check_flags(struct run_cli *o, struct err *e) {
    if (!o->model) return err_set(e, ERR_USAGE, "--model is required");
    if (o->task && o->tasks) return err_set(e, ERR_USAGE, "give --task or --tasks, not both");
    if (!o->task) o->task = o->tasks;
    if (!o->task) return err_set(e, ERR_USAGE, "--task is required (e.g. --task mmlu,hellaswag)");
    if (o->calib && o->scales) return err_set(e, ERR_USAGE, "--calib and --scales: give one (--calib makes the scales)");
    if (o->limit < 0) return err_set(e, ERR_USAGE, "--limit %d: must be >= 0", o->limit);
    if (o->subjects && (!*o->subjects || strlen(o->subjects) > 1000 || strstr(o->subjects, ",,") || *o->subjects == ',' ||
                        o->subjects[strlen(o->subjects) - 1] == ','))
        return err_set(e, ERR_USAGE, "--subjects '%.40s': expected a comma list of names (at most 1000 characters)", o->subjects);
    if (o->ppl_ctx < 2) return err_set(e, ERR_USAGE, "--ppl-ctx %d: must be >= 2", o->ppl_ctx);
    if (strcmp(o->ppl_score, "all") && strcmp(o->ppl_score, "second-half"))
        return err_set(e, ERR_USAGE, "--ppl-score '%s': expected all or second-half", o->ppl_score);
    if (!strcmp(o->ppl_score, "second-half") && o->ppl_ctx < 4)
        return err_set(e, ERR_USAGE, "--ppl-ctx %d: --ppl-score second-half needs >= 4", o->ppl_ctx);
    if (o->niah_per_cell < 0) return err_set(e, ERR_USAGE, "--niah-per-cell %d: must be >= 0", o->niah_per_cell);
    if (o->batch_tokens < 16) return err_set(e, ERR_USAGE, "--batch-tokens %d: must be >= 16", o->batch_tokens);
    if (o->replicas < 0 || o->replicas > RESULTS_MAX_REPLICAS)
        return err_set(e, ERR_USAGE, "--replicas %d: must be in [0, %d]", o->replicas, RESULTS_MAX_REPLICAS);
    if (o->replica_seed < 0) return err_set(e, ERR_USAGE, "--replica-seed %lld: must be >= 0", (long long)o->replica_seed);
    return 0;
}

// The parsed flags -> the run module's options (the plan adds the model, scales, modes, tasks
// and the thread count).
static int to_run_opts(const struct run_cli *o, struct run_opts *ro, struct err *e) {
    int rc;
    run_opts_default(ro);
    ro->model_arg = o->model;
    ro->tokenizer_dir = o->tokenizer;
    ro->bos_arg = o->bos;
    if (!strcmp(o->bos, "auto")) ro->bos_policy = EVAL_BOS_AUTO;
    else if (!strcmp(o->bos, "on")) ro->bos_policy = EVAL_BOS_ON;
    else if (!strcmp(o->bos, "off")) ro->bos_policy = EVAL_BOS_OFF;
    else return err_set(e, ERR_USAGE, "--bos '%s': expected auto, on or off", o->bos);
    if (!strcmp(o->act, "bf16")) ro->model.act_bf16 = 1;
    else if (!strcmp(o->act, "f32")) ro->model.act_bf16 = 0;
    else return err_set(e, ERR_USAGE, "--act '%s': expected bf16 or f32", o->act);
    if (o->shard && !strcmp(o->shard, "auto")) {
        if ((rc = shard_from_slurm(&ro->shard_k, &ro->shard_n, e))) return rc;
    } else if (o->shard) {
        long long kn[2]; // sscanf's %d wrapped: 1/4294967298 was shard 1 of 2
        if (str_to_ints(o->shard, '/', 2, 0, 1000000, kn) || kn[1] < 1 || kn[0] >= kn[1])
            return err_set(e, ERR_USAGE, "--shard '%s': expected K/N with 0 <= K < N <= 1000000, or auto", o->shard);
        ro->shard_k = (int)kn[0];
        ro->shard_n = (int)kn[1];
    }
    ro->attn.tile = o->tile;
    if (o->v_group && (rc = attn_parse_vgroup(o->v_group, &ro->attn.v_group, e))) return rc;
    if (o->qformat && (rc = attn_parse_qformat(o->qformat, &ro->attn.qformat, e))) return rc;
    if (o->qmean && (rc = attn_parse_qmean(o->qmean, &ro->attn.qmean, e))) return rc;
    if (o->qdq_skip && (rc = attn_parse_qdq_skip(o->qdq_skip, &ro->attn.qdq_skip, e))) return rc;
    ro->model.max_tokens = o->batch_tokens;
    if (o->weights) {
        ro->model.weights = model_weights_parse(o->weights);
        if (ro->model.weights < 0)
            return err_set(e, ERR_USAGE, "--weights '%s': expected auto, f32, stream or bf16", o->weights);
    }
    ro->task = (struct task_opts){.data_dir = o->data_dir, .file = o->task_file, .subject = o->subject, .subjects = o->subjects,
                                  .skip_bad_rows = o->skip_bad_rows, .seed = (uint64_t)o->seed, .limit = o->limit,
                                  .niah_lengths = o->niah_lengths, .niah_per_cell = o->niah_per_cell};
    if (o->niah_form && strcmp(o->niah_form, "likelihood") && strcmp(o->niah_form, "generate"))
        return err_set(e, ERR_USAGE, "--niah-form '%s': expected likelihood or generate", o->niah_form);
    ro->task.niah_generate = o->niah_form && !strcmp(o->niah_form, "generate");
    ro->ppl_ctx = o->ppl_ctx;
    ro->ppl_half = !strcmp(o->ppl_score, "second-half");
    if (!strcmp(o->nonfinite, "stop")) ro->nonfinite = RUN_NONFINITE_STOP;
    else if (!strcmp(o->nonfinite, "count")) ro->nonfinite = RUN_NONFINITE_COUNT;
    else return err_set(e, ERR_USAGE, "--nonfinite '%s': expected stop or count", o->nonfinite);
    ro->out_dir = o->out;
    ro->resume = o->resume;
    ro->stop_after_items = stop_after();
    if (getenv("HIFA4_FREEZE_AT_STOP")) ro->at_stop = freeze_self;
    ro->prefix_cache = !o->no_prefix_cache;
    ro->replicas = o->replicas;
    ro->replica_seed = (uint64_t)o->replica_seed;
    return 0;
}

static int split(char *buf, const char *s, const char **items, int max, const char *what, int *n, struct err *e) {
    if (strlen(s) >= 2048) return err_set(e, ERR_USAGE, "%s: list too long", what);
    strcpy(buf, s);
    int k = cli_split(buf, items, max, e);
    if (k < 0) return err_prefix(e, "%s", what);
    *n = k;
    return 0;
}

// *met = 1 once run_plan_make is reached: the ranks of an MPI job meet inside it, failing or not.
static int run_command(int argc, char **argv, int *met, struct err *e) {
    struct run_cli o = {.ppl_ctx = 2048, .limit = 0, .threads = 0, .tile = 128, .batch_tokens = 4096, .seed = 1234, .act = "bf16", .bos = "auto",
                         .ppl_score = "all", .nonfinite = "stop", .replica_seed = 1};
    struct cli_opt opts[] = {
        {"model", CLI_STR, &o.model, "M: checkpoint directory, ORG/NAME[@REVISION] (Hugging Face cache, else downloaded), FILE.gguf or a name from configs/models (required)"},
        {"task", CLI_STR, &o.task, "a,b: tasks (see `hifa4-eval list`)"},
        {"tasks", CLI_STR, &o.tasks, "a,b: same as --task"},
        {"attn", CLI_STR, &o.attn, "m1,m2|all: attention modes, first = reference (default: bf16,direct,hifa4 as available; all: every "
                                 "mode but exact and the sage3 modes)"},
        {"limit", CLI_INT, &o.limit, "N: first N items of each task - of each subject/subtask for mmlu and bbh, like lm-eval (0 = all)"},
        {"out", CLI_STR, &o.out, "DIR: run directory (default results/<model>-<utc time>)"},
        {"seed", CLI_I64, &o.seed, "S: seed for tasks that shuffle (default 1234)"},
        {"threads", CLI_THREADS, &o.threads, CLI_THREADS_HELP},
        {"resume", CLI_FLAG, &o.resume, "continue an interrupted run in --out"},
        {"shard", CLI_STR, &o.shard, "K/N: score only shard K (0-based) of N contiguous item ranges; join with `merge`; auto: K/N of this Slurm array task"},
        {"data-dir", CLI_STR, &o.data_dir, "D: dataset root (layout of ../shared/datasets)"},
        {"task-file", CLI_STR, &o.task_file, "F: data file/dir for mc_jsonl, ppl, exam"},
        {"subject", CLI_STR, &o.subject, "S: subject for mc_jsonl"},
        {"subjects", CLI_STR, &o.subjects, "a,b: only these subjects (mmlu) / subtasks (bbh) of the tasks that have them; --limit applies within each"},
        {"ppl-ctx", CLI_INT, &o.ppl_ctx, "N: tokens per perplexity window (ppl; default 2048, capped at the model's window)"},
        {"ppl-score", CLI_STR, &o.ppl_score, "all|second-half: every token once (default; lm-eval's rolling windows), or "
                                             "llama-perplexity's definition: BOS-led windows of --ppl-ctx, their second half scored"},
        {"niah-lengths", CLI_STR, &o.niah_lengths, "T1,T2: haystack sizes in tokens (niah; default 1024,2048,4096)"},
        {"niah-per-cell", CLI_INT, &o.niah_per_cell, "N: items per (length, depth) cell (niah; default 4)"},
        {"niah-form", CLI_STR, &o.niah_form, "likelihood|generate: niah scored by the magic number's likelihood among 10 "
                                             "(default) or by greedy decoding of 8 tokens (the paper's form)"},
        {"calib", CLI_STR, &o.calib, "FILE: calibrate on this text when the model has no scales file yet (default: the Brown corpus; the scales are cached apart per text)"},
        {"scales", CLI_STR, &o.scales, "F|none: Smooth-QK scales file (default: the model's file in the cache, calibrated first on the Brown corpus when missing); none skips the modes that need them"},
        {"gate-rule", CLI_STR, &o.gate_rule, "paper|measured: the Smooth-QK gate rule of the automatic calibration "
                                             "(default " CALIB_RULE_DEFAULT "; docs/results/gate.md)"},
        {"tile", CLI_INT, &o.tile, "N: attention key tile Bc (default 128)"},
        {"v-group", CLI_STR, &o.v_group, "token|channel: HiF4 grouping of V (default token)"},
        {"qformat", CLI_STR, &o.qformat, "hif4|hif4-a6|nvfp4|mxfp4: 4-bit format of the quantized modes (default hif4, normative; spec/fp4.md)"},
        {"qmean", CLI_STR, &o.qmean, "token|channel: Q-Mean form of every mode with Q-Mean (default token = paper Alg. 1; "
                                     "channel = per-channel mean per query tile, SageAttention2)"},
        {"qdq-skip", CLI_STR, &o.qdq_skip, "q,k,v,p|none: operands left unquantized in the HiF4 modes (default none; "
                                           "e.g. q,k,v quantizes only P)"},
        {"act", CLI_STR, &o.act, "bf16|f32: activation rounding (default bf16)"},
        {"weights", CLI_STR, &o.weights,
         "auto|f32|stream|bf16: weight residency (default auto; bf16: resident bf16 panels, half the memory, "
         "vdpbf16ps under --act bf16: docs/results/speed.md)"},
        {"batch-tokens", CLI_INT, &o.batch_tokens, "N: tokens per forward batch (default 4096)"},
        {"no-prefix-cache", CLI_FLAG, &o.no_prefix_cache, "run every sequence whole instead of sharing prefixes through "
                                                          "the exact KV cache (same results bit for bit; for comparisons)"},
        {"bos", CLI_STR, &o.bos, "auto|on|off: BOS policy (default auto = the tokenizer's post-processor)"},
        {"tokenizer", CLI_STR, &o.tokenizer, "DIR: tokenizer (default: the model directory)"},
        {"skip-bad-rows", CLI_FLAG, &o.skip_bad_rows, "skip malformed dataset rows (counted in the report)"},
        {"replicas", CLI_INT, &o.replicas, "K: besides the run, every mode (the reference too) K more times, replica r "
                                           "with every binary32 weight one ulp up or down (seeded): flip probabilities, "
                                           "null flip rates, paired tests (default 0; costs K more passes)"},
        {"replica-seed", CLI_I64, &o.replica_seed, "S: seed of the replicas' perturbation (default 1)"},
        {"nonfinite", CLI_STR, &o.nonfinite, "stop|count: a NaN/inf log-likelihood stops the run naming task, item and "
                                             "mode (default stop), or is counted and left out of every statistic"},
        {"offline", CLI_FLAG, &o.offline, "never download"},
        {"help", CLI_FLAG, &o.help, "show this help"},
    };
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    const char *syn = "--model M --task a,b [--attn bf16,direct,hifa4|all] [--qmean token|channel] [--limit N] [--out DIR] "
                      "[--resume]";
    int rc = cli_parse(argc, argv, opts, n_opts, e);
    if (rc) return rc;
    if (o.help) { cli_usage("run", syn, opts, n_opts); return 0; }
    struct run_opts ro;
    char lists[2][2048];
    const char *modes[RUN_MAX_MODES], *tasks[RUN_MAX_TASKS];
    if ((rc = check_flags(&o, e)) || (rc = to_run_opts(&o, &ro, e))) return rc;
    if ((rc = out_path_check("--out", o.out, (const char *[]){o.model, o.task_file, o.scales, o.tokenizer}, 4, e))) return rc;
    int n_modes = 0, n_tasks = 0;
    if (o.attn && strcmp(o.attn, "all") && (rc = split(lists[0], o.attn, modes, RUN_MAX_MODES, "--attn", &n_modes, e))) return rc;
    if (o.attn && !strcmp(o.attn, "all")) modes[n_modes++] = "all";
    if ((rc = split(lists[1], o.task, tasks, RUN_MAX_TASKS, "--task", &n_tasks, e))) return rc;
    ro.argc = argc;
    ro.argv = argv;
    const struct run_plan_args pa = {.model = o.model, .modes = modes, .n_modes = n_modes, .tasks = tasks,
                                     .n_tasks = n_tasks, .scales = o.scales, .calib = o.calib, .gate_rule = o.gate_rule,
                                     .qmean = o.qmean, .offline = o.offline, .threads = o.threads};
    *met = 1;
    struct run_plan plan;
    struct run_done done = {0};
    if (!(rc = run_plan_make(&plan, &ro, &pa, e)) && !(rc = run_plan_drive(&plan, &done, e)) && done.written) {
        printf("report: %s/report.md\n\n%s", done.dir, done.headline ? done.headline : "");
        log_info("run: done in %.1fs", done.seconds);
    }
    free(done.headline);
    run_plan_free(&plan);
    return rc;
}

int cmd_run(int argc, char **argv, struct err *e) {
    int met = 0;
    const int rc = run_command(argc, argv, &met, e);
    return rc && !met ? dist_agree(rc, e) : rc; // failed before the ranks met: meet them there
}
