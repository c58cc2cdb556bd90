// run.c: `hifa4-eval run` (and the bare `hifa4-eval --model M --task T`): scores tasks under
// several attention modes in one process (DESIGN.md sections 1 and 4). For every batch of
// items the model runs once per mode, so token-level KL against the reference (first mode)
// needs no stored logits. Writes run.json, samples-<task>-<mode>.jsonl.zst, summary.json,
// report.md, tables/*.csv and plots/*.svg. --resume continues a killed run; the samples
// files then end byte-identical to an uninterrupted run (results.h frame rule). --shard K/N
// scores a contiguous slice of every task's items; `merge` (merge.c) joins the shards.
// The git revision is read at run time from the .git next to the executable (or the current
// directory): HEAD, following a symbolic ref through the worktree's common dir/packed-refs.
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "attention/attn.h"
#if defined(__has_include)
#if __has_include("attention/scales.h")
#include "attention/scales.h"
#define HAVE_SCALES 1
#endif
#endif
#include "cli/cli.h"
#include "attention/cost.h"
#include "eval/eval.h"
#include "net/fetch.h"
#include "base/json_util.h"
#include "model/model.h"
#include "results/report.h"
#include "results/results.h"
#include "base/sha256.h"
#include "eval/tasks/task.h"
#include "tokenizer/tokenizer.h"

#define MAX_MODES 16
#define MAX_TASKS 64
// logits rows per batch: keep each of the two logits buffers near 256 MiB
#define LOGITS_BYTES (256u << 20)

// ---- git revision ----
static int read_line(const char *path, char *out, size_t n) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int ok = fgets(out, (int)n, f) != NULL;
    fclose(f);
    if (!ok) return -1;
    out[strcspn(out, "\r\n")] = 0;
    return 0;
}

// snprintf into a local array; a path that does not fit means "no revision"
#define PJ(buf, ...) do { if (snprintf(buf, sizeof buf, __VA_ARGS__) >= (int)sizeof buf) return -1; } while (0)
static void copy_rev(char *rev, size_t n, const char *s) {
    size_t l = strlen(s);
    if (l >= n) l = n - 1;
    memcpy(rev, s, l);
    rev[l] = 0;
}

static int git_rev_in(const char *root, char *rev, size_t n) {
    char git[4096], line[4096], gitdir[4096], common[4096], p[8192];
    PJ(git, "%s/.git", root);
    if (dir_exists(git)) PJ(gitdir, "%s", git);
    else if (file_exists(git) && !read_line(git, line, sizeof line) && !strncmp(line, "gitdir: ", 8)) {
        if (line[8] == '/') PJ(gitdir, "%s", line + 8);
        else PJ(gitdir, "%s/%s", root, line + 8);
    } else return -1;
    PJ(common, "%s", gitdir);
    PJ(p, "%s/commondir", gitdir);
    if (!read_line(p, line, sizeof line)) {
        if (line[0] == '/') PJ(common, "%s", line);
        else PJ(common, "%s/%s", gitdir, line);
    }
    PJ(p, "%s/HEAD", gitdir);
    if (read_line(p, line, sizeof line)) return -1;
    if (strncmp(line, "ref: ", 5)) { copy_rev(rev, n, line); return 0; }
    const char *ref = line + 5;
    char val[256];
    PJ(p, "%s/%s", gitdir, ref);
    if (!read_line(p, val, sizeof val)) { copy_rev(rev, n, val); return 0; }
    PJ(p, "%s/%s", common, ref);
    if (!read_line(p, val, sizeof val)) { copy_rev(rev, n, val); return 0; }
    PJ(p, "%s/packed-refs", common);
    FILE *f = fopen(p, "r");
    if (!f) return -1;
    char buf[1024];
    int found = 0;
    while (!found && fgets(buf, sizeof buf, f)) {
        buf[strcspn(buf, "\r\n")] = 0;
        char *sp = strchr(buf, ' ');
        if (sp && !strcmp(sp + 1, ref)) { *sp = 0; copy_rev(rev, n, buf); found = 1; }
    }
    fclose(f);
    return found ? 0 : -1;
}

static void git_revision(char *rev, size_t n) {
    char exe[4096];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    copy_rev(rev, n, "unknown");
    if (k > 0) {
        exe[k] = 0;
        char *sl = strrchr(exe, '/');
        if (sl) *sl = 0;
        if (!git_rev_in(exe, rev, n)) return;
    }
    git_rev_in(".", rev, n);
}

// ---- options ----
struct run_opts {
    const char *model, *task, *tasks, *attn, *out, *data_dir, *scales, *act, *bos, *tokenizer;
    const char *task_file, *subject, *weights, *v_group, *qformat, *niah_lengths, *shard;
    int limit, threads, resume, tile, batch_tokens, skip_bad_rows, offline, help, ppl_ctx, niah_per_cell;
    int64_t seed;
};

struct mode_acc {                  // per mode, over the whole run
    double forward_s;
    int64_t calls, tokens;         // attention hook coverage (sequence x layer x head calls)
    int64_t calls_per_layer[ATTN_MAX_LAYERS];
    struct cost_counts cost;       // emulated Ascend work counts (spec/cost.md section 1)
};

struct tok_user { const struct tokenizer *t; };
static int encode_cb(void *user, const char *text, size_t len, int32_t **ids, int *n, struct err *e) {
    return tok_encode(((struct tok_user *)user)->t, text, len, 0, ids, n, e);
}

// task_count_tokens_fn for niah: tokens of s without BOS
static int count_cb(void *user, const char *s, size_t n) {
    int32_t *ids = NULL;
    int k = 0;
    struct err e = {0};
    int rc = tok_encode(((struct tok_user *)user)->t, s, n, 0, &ids, &k, &e);
    free(ids);
    return rc ? rc : k;
}

static int stop_after(void) {
    const char *s = getenv("HIFA4_STOP_AFTER_ITEMS"); // test hook: simulate a kill after N items
    return s ? atoi(s) : 0;
}

// ---- progress ----
// done counts items finished in earlier invocations too (resumed); skipped is that part, which
// took no time here and is left out of the rate (else a resumed run shows 100+ items/s and a
// far too short ETA)
struct progress { double t0, last; int64_t done, total, shown, skipped; int tty; };
static void progress_show(struct progress *p, const char *task, int force) {
    double now = time_now();
    if (!force && now - p->last < (p->tty ? 0.5 : 10.0)) return;
    if (force && p->shown == p->done) return;
    p->last = now;
    p->shown = p->done;
    double el = now - p->t0, rate = el > 0 ? (double)(p->done - p->skipped) / el : 0;
    double eta = rate > 0 ? (p->total - p->done) / rate : 0;
    if (log_get_level() < LOG_INFO) return;
    fprintf(stderr, "%s[%s] %lld/%lld items  %.1f items/s  ETA %d:%02d%s", p->tty ? "\r" : "", task,
            (long long)p->done, (long long)p->total, rate, (int)(eta / 60), (int)fmod(eta, 60), p->tty ? "   " : "\n");
    fflush(stderr);
}

static int parse_list(char *buf, const char **items, int max, const char *what, int *n, struct err *e) {
    int k = cli_split(buf, items, max, e);
    if (k < 0) return err_prefix(e, "%s", what);
    *n = k;
    return 0;
}

static cJSON *str_array(const char *const *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
    return a;
}

static int file_sha256(const char *path, char hex[65], struct err *e) {
    char *buf;
    size_t n;
    int rc = file_read_all(path, &buf, &n, e);
    if (rc) return rc;
    sha256_hex(buf, n, hex);
    free(buf);
    return 0;
}

int cmd_run(int argc, char **argv, struct err *e) {
    struct run_opts o = {.ppl_ctx = 2048, .limit = 0, .threads = 0, .tile = 128, .batch_tokens = 4096, .seed = 1234, .act = "bf16", .bos = "auto"};
    struct cli_opt opts[] = {
        {"model", CLI_STR, &o.model, "M: model directory or name from configs/models (required)"},
        {"task", CLI_STR, &o.task, "a,b: tasks (see `hifa4-eval list`)"},
        {"tasks", CLI_STR, &o.tasks, "a,b: same as --task"},
        {"attn", CLI_STR, &o.attn, "m1,m2|all: attention modes, first = reference (default: bf16,direct,hifa4 as available)"},
        {"limit", CLI_INT, &o.limit, "N: first N items of each task - of each subject/subtask for mmlu and bbh, like lm-eval (0 = all)"},
        {"out", CLI_STR, &o.out, "DIR: run directory (default results/<model>-<utc time>)"},
        {"seed", CLI_I64, &o.seed, "S: seed for tasks that shuffle (default 1234)"},
        {"threads", CLI_INT, &o.threads, "N: threads (default: all cores)"},
        {"resume", CLI_FLAG, &o.resume, "continue an interrupted run in --out"},
        {"shard", CLI_STR, &o.shard, "K/N: score only shard K (0-based) of N contiguous item ranges; join with `merge`"},
        {"data-dir", CLI_STR, &o.data_dir, "D: dataset root (layout of ../shared/datasets)"},
        {"task-file", CLI_STR, &o.task_file, "F: data file/dir for mc_jsonl, ppl, exam"},
        {"subject", CLI_STR, &o.subject, "S: subject for mc_jsonl"},
        {"ppl-ctx", CLI_INT, &o.ppl_ctx, "N: tokens per perplexity window (ppl; default 2048, capped at the model's window)"},
        {"niah-lengths", CLI_STR, &o.niah_lengths, "T1,T2: haystack sizes in tokens (niah; default 1024,2048,4096)"},
        {"niah-per-cell", CLI_INT, &o.niah_per_cell, "N: items per (length, depth) cell (niah; default 4)"},
        {"scales", CLI_STR, &o.scales, "F: Smooth-QK scales file (default configs/scales/<model>.safetensors if present)"},
        {"tile", CLI_INT, &o.tile, "N: attention key tile Bc (default 128)"},
        {"v-group", CLI_STR, &o.v_group, "token|channel: HiF4 grouping of V (default token)"},
        {"qformat", CLI_STR, &o.qformat, "hif4|hif4-a6: 4-bit rounding (default hif4, normative)"},
        {"act", CLI_STR, &o.act, "bf16|f32: activation rounding (default bf16)"},
        {"weights", CLI_STR, &o.weights, "auto|f32|stream: weight residency (default auto)"},
        {"batch-tokens", CLI_INT, &o.batch_tokens, "N: tokens per forward batch (default 4096)"},
        {"bos", CLI_STR, &o.bos, "auto|on|off: BOS policy (default auto = the tokenizer's post-processor)"},
        {"tokenizer", CLI_STR, &o.tokenizer, "DIR: tokenizer (default: the model directory)"},
        {"skip-bad-rows", CLI_FLAG, &o.skip_bad_rows, "skip malformed dataset rows (counted in the report)"},
        {"offline", CLI_FLAG, &o.offline, "never download"},
        {"help", CLI_FLAG, &o.help, "show this help"},
    };
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    const char *syn = "--model M --task a,b [--attn bf16,direct,hifa4] [--limit N] [--out DIR] [--resume]";
    int rc = cli_parse(argc, argv, 1, opts, n_opts, NULL, 0, NULL, e);
    if (rc) return rc;
    if (o.help) { cli_usage("run", syn, opts, n_opts); return 0; }
    if (!o.model) return err_set(e, ERR_USAGE, "--model is required");
    if (o.task && o.tasks) return err_set(e, ERR_USAGE, "give --task or --tasks, not both");
    if (!o.task) o.task = o.tasks;
    if (!o.task) return err_set(e, ERR_USAGE, "--task is required (e.g. --task mmlu,hellaswag)");
    if (o.limit < 0) return err_set(e, ERR_USAGE, "--limit %d: must be >= 0", o.limit);
    if (o.ppl_ctx < 2) return err_set(e, ERR_USAGE, "--ppl-ctx %d: must be >= 2", o.ppl_ctx);
    if (o.niah_per_cell < 0) return err_set(e, ERR_USAGE, "--niah-per-cell %d: must be >= 0", o.niah_per_cell);
    if (o.batch_tokens < 16) return err_set(e, ERR_USAGE, "--batch-tokens %d: must be >= 16", o.batch_tokens);
    int bos_policy;
    if (!strcmp(o.bos, "auto")) bos_policy = EVAL_BOS_AUTO;
    else if (!strcmp(o.bos, "on")) bos_policy = EVAL_BOS_ON;
    else if (!strcmp(o.bos, "off")) bos_policy = EVAL_BOS_OFF;
    else return err_set(e, ERR_USAGE, "--bos '%s': expected auto, on or off", o.bos);
    int act_bf16;
    if (!strcmp(o.act, "bf16")) act_bf16 = 1;
    else if (!strcmp(o.act, "f32")) act_bf16 = 0;
    else return err_set(e, ERR_USAGE, "--act '%s': expected bf16 or f32", o.act);
    int shard_k = 0, shard_n = 1;
    if (o.shard) {
        char extra;
        if (sscanf(o.shard, "%d/%d%c", &shard_k, &shard_n, &extra) != 2 || shard_n < 1 || shard_k < 0 || shard_k >= shard_n)
            return err_set(e, ERR_USAGE, "--shard '%s': expected K/N with 0 <= K < N", o.shard);
    }
    int v_group = 0, qformat = 0;
    if (o.v_group && (rc = attn_parse_vgroup(o.v_group, &v_group, e))) return rc;
    if (o.qformat && (rc = attn_parse_qformat(o.qformat, &qformat, e))) return rc;
    if (o.threads > 0) omp_set_num_threads(o.threads);
    int n_threads = o.threads > 0 ? o.threads : omp_get_max_threads();

    // Smooth-QK scales: --scales, else the file `calibrate` writes by default for this model
    // (configs/scales/<model directory name>.safetensors), when present
    char auto_scales[4096];
    if (!o.scales) {
        char model_id[1024];
        path_basename(model_id, sizeof model_id, o.model);
        if (attn_scales_default(auto_scales, sizeof auto_scales, model_id)) {
            o.scales = auto_scales;
            log_info("run: using Smooth-QK scales %s (calibrate's default output for this model; --scales overrides)", auto_scales);
        }
    }

    // ---- modes ----
    char modes_buf[1024], tasks_buf[2048];
    const char *modes[MAX_MODES], *task_names[MAX_TASKS];
    int n_modes = 0, n_tasks = 0;
    if (o.attn && !strcmp(o.attn, "all")) {
        // every registered mode but the slow binary64 `exact`; bf16 (else f32) is the reference
        const char *ref = attn_mode_find("bf16") ? "bf16" : "f32";
        modes[n_modes++] = ref;
        for (int i = 0; i < attn_mode_count() && n_modes < MAX_MODES; i++) {
            const struct attn_mode *m = attn_mode_at(i);
            if (!strcmp(m->name, "exact") || !strcmp(m->name, ref)) continue;
            if ((m->flags & ATTN_F_SQK) && !o.scales) {
                log_warn("run: --attn all: skipping '%s': it needs a Smooth-QK scales file (--scales)", m->name);
                continue;
            }
            modes[n_modes++] = m->name;
        }
    } else if (o.attn) {
        if (strlen(o.attn) >= sizeof modes_buf) return err_set(e, ERR_USAGE, "--attn: list too long");
        strcpy(modes_buf, o.attn);
        if ((rc = parse_list(modes_buf, modes, MAX_MODES, "--attn", &n_modes, e))) return rc;
        for (int i = 0; i < n_modes; i++) {
            if (!attn_mode_find(modes[i]))
                return err_set(e, ERR_USAGE, "--attn: unknown mode '%s' (known: %s)", modes[i], attn_mode_names());
            for (int j = 0; j < i; j++)
                if (!strcmp(modes[i], modes[j])) return err_set(e, ERR_USAGE, "--attn: mode '%s' given twice", modes[i]);
        }
    } else {
        static const char *const defaults[] = {"bf16", "direct", "hifa4"};
        for (int i = 0; i < 3; i++) {
            const struct attn_mode *m = attn_mode_find(defaults[i]);
            if (!m) continue;
            if ((m->flags & ATTN_F_SQK) && !o.scales) {
                log_warn("run: skipping default mode '%s': it needs a Smooth-QK scales file (--scales)", defaults[i]);
                continue;
            }
            modes[n_modes++] = defaults[i];
        }
        if (!n_modes) modes[n_modes++] = "f32";
        log_info("run: modes %s%s%s%s%s (reference %s)", modes[0], n_modes > 1 ? "," : "", n_modes > 1 ? modes[1] : "",
                 n_modes > 2 ? "," : "", n_modes > 2 ? modes[2] : "", modes[0]);
    }
    if (strlen(o.task) >= sizeof tasks_buf) return err_set(e, ERR_USAGE, "--task: list too long");
    strcpy(tasks_buf, o.task);
    if ((rc = parse_list(tasks_buf, task_names, MAX_TASKS, "--task", &n_tasks, e))) return rc;
    for (int i = 0; i < n_tasks; i++) {
        // an unknown name is a usage error (exit 2, like an unknown --attn mode), found before the model loads
        if (!task_find(task_names[i])) {
            char list[512] = "";
            size_t k = 0;
            for (int j = 0; j < task_count() && k < sizeof list; j++)
                k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", j ? ", " : "", task_at(j)->name);
            return err_set(e, ERR_USAGE, "--task: unknown task '%s' (known: %s)", task_names[i], list);
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(task_names[i], task_names[j])) return err_set(e, ERR_USAGE, "--task: '%s' given twice", task_names[i]);
    }

    // ---- everything below is released at `done` ----
    double t_start = time_now();
    struct model *model = NULL;
    struct tokenizer *tok = NULL;
    struct task_set *sets = calloc((size_t)n_tasks, sizeof *sets);
    struct eval_plan *plans = calloc((size_t)n_tasks, sizeof *plans);
    struct eval_item *items = NULL;
    float *scales = NULL, *logits_ref = NULL, *logits_q = NULL;
    struct eval_score *scores = NULL;
    struct results_writer *writers = calloc(MAX_MODES, sizeof *writers);
    struct mode_acc *acc = calloc(MAX_MODES, sizeof *acc);
    struct eval_batch batch = {0};
    cJSON *run = NULL, *summary = NULL;
    cJSON *carry = NULL; // --resume of a complete run: its created/timings/coverage/cost, kept
    char *headline = NULL;
    int n_scores = 0;
    int *item_lo = NULL; // first item of each task in this shard
    double *tok_s = NULL; // tokenization seconds per task
    if (!sets || !plans || !writers || !acc) { rc = err_set(e, ERR_NOMEM, "run: out of memory"); goto done; }

    char model_dir[4096], out_dir[4096], path[4096];
    if ((rc = fetch_resolve_model(model_dir, sizeof model_dir, o.model, o.offline, e))) goto done;
    // The run's model name (report title, `tables` rows, default run directory): the registry
    // name for a model from configs/models (its cache directory ends in the revision, e.g.
    // .../Qwen3-8B/main, which would name every downloaded model "main"), else the directory name.
    char model_name[256];
    if (strcmp(model_dir, o.model)) snprintf(model_name, sizeof model_name, "%s", o.model);
    else {
        const char *b = model_dir + strlen(model_dir);
        while (b > model_dir && b[-1] == '/') b--;
        const char *end = b;
        while (b > model_dir && b[-1] != '/') b--;
        snprintf(model_name, sizeof model_name, "%.*s", (int)(end - b), b);
    }
    struct model_opts mo;
    model_opts_default(&mo);
    mo.act_bf16 = act_bf16;
    mo.n_threads = o.threads;
    mo.max_tokens = o.batch_tokens;
    if (o.weights) {
        mo.weights = model_weights_parse(o.weights);
        if (mo.weights < 0) { rc = err_set(e, ERR_USAGE, "--weights '%s': expected auto, f32 or stream", o.weights); goto done; }
    }
    double t0 = time_now();
    if ((rc = model_open(&model, model_dir, &mo, e))) goto done;
    const struct model_config *cfg = model_cfg(model);
    if ((rc = tok_load(&tok, o.tokenizer ? o.tokenizer : model_dir, e))) goto done;
    double t_load = time_now() - t0;
    char tok_hex[65];
    tok_hash(tok, tok_hex);
    int vocab = cfg->vocab_size;
    if (tok_vocab_size(tok) > vocab) {
        rc = err_set(e, ERR_MISMATCH, "tokenizer has %d tokens but the model's vocabulary is %d", tok_vocab_size(tok), vocab);
        goto done;
    }
    int add_bos = bos_policy == EVAL_BOS_AUTO ? tok_adds_bos(tok) : bos_policy == EVAL_BOS_ON;
    if (add_bos && tok_bos_id(tok) < 0) { rc = err_set(e, ERR_UNSUPPORTED, "--bos on: the tokenizer has no BOS token"); goto done; }
    char scales_hex[65] = "";
    if (o.scales) {
#ifdef HAVE_SCALES
        if ((rc = attn_scales_load(&scales, o.scales, cfg->n_layers, cfg->n_kv_heads, cfg->head_dim, model_hash(model), e))) goto done;
#else
        rc = err_set(e, ERR_UNSUPPORTED, "--scales: this build has no Smooth-QK scales loader (attention/scales.h)");
        goto done;
#endif
        if ((rc = file_sha256(o.scales, scales_hex, e))) goto done;
    }
    struct attn_opts ao;
    attn_opts_default(&ao);
    ao.tile = o.tile;
    if (o.v_group) ao.v_group = v_group;
    if (o.qformat) ao.qformat = qformat;
    ao.n_threads = o.threads;
    // validate every mode before any work (unknown mode, missing scales, bad tile)
    for (int m = n_modes - 1; m >= 0; m--)
        if ((rc = model_set_attn(model, modes[m], &ao, scales, e))) goto done;

    // ---- tasks and requests ----
    struct task_opts to = {.data_dir = o.data_dir, .file = o.task_file, .subject = o.subject,
                           .skip_bad_rows = o.skip_bad_rows, .seed = (uint64_t)o.seed, .limit = o.limit,
                           .niah_lengths = o.niah_lengths, .niah_per_cell = o.niah_per_cell};
    struct tok_user tu = {tok};
    to.count_tokens = count_cb;
    to.count_ctx = &tu;
    int ppl_ctx = o.ppl_ctx < cfg->max_seq ? o.ppl_ctx : cfg->max_seq;
    int window = model_get_opts(model)->max_seq;
    struct eval_plan_opts po = {.add_bos = add_bos, .bos_id = tok_bos_id(tok), .eos_id = tok_eos_id(tok),
                                .window = cfg->max_seq, .n_threads = n_threads};
    tok_s = calloc((size_t)n_tasks, sizeof *tok_s);
    if (!tok_s) { rc = err_set(e, ERR_NOMEM, "run: out of memory"); goto done; }
    int longest = 0, max_items = 0, max_item = 0;
    item_lo = calloc((size_t)n_tasks, sizeof *item_lo);
    if (!item_lo) { rc = err_set(e, ERR_NOMEM, "run: out of memory"); goto done; }
    for (int t = 0; t < n_tasks; t++) {
        if ((rc = task_load(task_names[t], &sets[t], &to, e))) { goto done; }
        if (sets[t].is_ppl && shard_n > 1) {
            rc = err_set(e, ERR_UNSUPPORTED, "--shard: not supported for the perplexity task '%s'", task_names[t]);
            goto done;
        }
        if (sets[t].is_ppl) {
            // perplexity: the whole text as one token list, cut into windows (eval.h)
            double ts = time_now();
            int32_t *ids = NULL;
            int nid = 0;
            int prefix = tok_bos_id(tok) >= 0 ? tok_bos_id(tok) : tok_eos_id(tok);
            rc = tok_encode(tok, sets[t].text, sets[t].text_len, 0, &ids, &nid, e);
            if (!rc) rc = eval_plan_build_ppl(&plans[t], ids, nid, ppl_ctx, prefix, o.limit, e);
            // bytes per window (bits per byte): the decoded predicted tokens
            for (int k = 0; !rc && k < plans[t].n_items; k++) {
                char *txt = NULL;
                size_t tl = 0;
                rc = tok_decode(tok, plans[t].req[k].cont, plans[t].req[k].n_cont, &txt, &tl, e);
                plans[t].req[k].n_chars = (int)tl;
                free(txt);
            }
            free(ids);
            if (rc) { err_prefix(e, "task %s", task_names[t]); goto done; }
            tok_s[t] = time_now() - ts;
            if (plans[t].max_item_tokens > max_item) max_item = plans[t].max_item_tokens;
            if (plans[t].max_seq_len > longest) longest = plans[t].max_seq_len;
            if (plans[t].n_items > max_items) max_items = plans[t].n_items;
            log_info("run: %s: %d tokens, %d windows of %d (%.2fs)", task_names[t], nid, plans[t].n_items, ppl_ctx, tok_s[t]);
            continue;
        }
        // shard K of N: items [K*n/N, (K+1)*n/N) (contiguous, so `merge` restores the order)
        int n_all = sets[t].n_items;
        item_lo[t] = (int)((int64_t)shard_k * n_all / shard_n);
        int n = (int)((int64_t)(shard_k + 1) * n_all / shard_n) - item_lo[t];
        free(items);
        items = calloc((size_t)(n ? n : 1), sizeof *items);
        if (!items) { rc = err_set(e, ERR_NOMEM, "run: out of memory"); goto done; }
        for (int i = 0; i < n; i++) {
            const struct task_item *it = &sets[t].items[item_lo[t] + i];
            items[i] = (struct eval_item){it->id, it->context, it->n_choices, it->choices, it->gold};
        }
        po.delim = sets[t].delim;
        double ts = time_now();
        if ((rc = eval_plan_build(&plans[t], items, n, &po, encode_cb, &tu, e))) { err_prefix(e, "task %s", task_names[t]); goto done; }
        tok_s[t] = time_now() - ts;
        if (plans[t].max_seq_len > longest) longest = plans[t].max_seq_len;
        if (plans[t].max_item_tokens > max_item) max_item = plans[t].max_item_tokens;
        if (n > max_items) max_items = n;
        log_info("run: %s: %d items, %d requests, %d sequences, %lld tokens, %d truncated (%.2fs)", task_names[t], n,
                 plans[t].n_req, plans[t].n_seq, (long long)plans[t].n_tokens, plans[t].n_truncated, tok_s[t]);
    }
    if (longest > window || max_item > model_get_opts(model)->max_tokens) {
        // one item must fit in one batch: reopen with room for it (the window caps sequences)
        int need = max_item > o.batch_tokens ? max_item : o.batch_tokens;
        log_info("run: an item needs %d tokens (batch capacity %d): reopening the model with max_tokens %d", max_item,
                 model_get_opts(model)->max_tokens, need);
        model_free(model);
        model = NULL;
        mo.max_tokens = need;
        if ((rc = model_open(&model, model_dir, &mo, e))) { goto done; }
        cfg = model_cfg(model);
    }
    int max_tokens = model_get_opts(model)->max_tokens;
    int max_out = (int)(LOGITS_BYTES / ((size_t)vocab * sizeof(float)));
    if (max_out < 1) max_out = 1;
    int out_cap = max_out; // a batch always holds one whole item
    for (int t = 0; t < n_tasks; t++)
        if (plans[t].max_item_rows > out_cap) out_cap = plans[t].max_item_rows;

    // ---- run directory and run.json ----
    if (o.out) snprintf(out_dir, sizeof out_dir, "%s", o.out);
    else if ((rc = results_default_dir(out_dir, sizeof out_dir, model_name, e))) { goto done; }
    if ((rc = mkdir_p(out_dir, e))) { goto done; }
    if ((rc = path_join(path, sizeof path, out_dir, "run.json", e))) { goto done; }
    cJSON *old = NULL;
    if (file_exists(path)) {
        if (!o.resume) { rc = err_set(e, ERR_USAGE, "%s exists: pass --resume to continue that run, or another --out", path); goto done; }
        if ((rc = json_parse_file(&old, path, e))) { goto done; }
    } else if (o.resume) {
        log_warn("run: --resume: no run.json in %s, starting a new run", out_dir);
    }
    char rev[128], host[256] = "?";
    git_revision(rev, sizeof rev);
    gethostname(host, sizeof host - 1);
    struct utsname un;
    uname(&un);
    run = cJSON_CreateObject();
    cJSON_AddStringToObject(run, "tool", "hifa4-eval");
    cJSON_AddStringToObject(run, "git_revision", rev);
    {
        time_t now = time(NULL);
        struct tm tm;
        char ts[64];
        gmtime_r(&now, &tm);
        strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
        cJSON_AddStringToObject(run, "created", ts);
    }
    cJSON *cmd = cJSON_AddArrayToObject(run, "command");
    for (int i = 0; i < argc; i++) cJSON_AddItemToArray(cmd, cJSON_CreateString(argv[i]));
    cJSON *hj = cJSON_AddObjectToObject(run, "host");
    cJSON_AddStringToObject(hj, "name", host);
    cJSON_AddStringToObject(hj, "system", un.sysname);
    cJSON_AddStringToObject(hj, "release", un.release);
    cJSON_AddStringToObject(hj, "machine", un.machine);
    cJSON_AddNumberToObject(hj, "cpus", (double)sysconf(_SC_NPROCESSORS_ONLN));
    cJSON_AddNumberToObject(hj, "threads", n_threads);
    cJSON *mj = cJSON_AddObjectToObject(run, "model");
    cJSON_AddStringToObject(mj, "name", model_name);
    cJSON_AddStringToObject(mj, "arg", o.model);
    cJSON_AddStringToObject(mj, "path", model_dir);
    cJSON_AddStringToObject(mj, "hash", model_hash(model));
    cJSON *cj = cJSON_AddObjectToObject(mj, "config");
    cJSON_AddNumberToObject(cj, "dim", cfg->dim);
    cJSON_AddNumberToObject(cj, "n_layers", cfg->n_layers);
    cJSON_AddNumberToObject(cj, "n_heads", cfg->n_heads);
    cJSON_AddNumberToObject(cj, "n_kv_heads", cfg->n_kv_heads);
    cJSON_AddNumberToObject(cj, "head_dim", cfg->head_dim);
    cJSON_AddNumberToObject(cj, "vocab_size", cfg->vocab_size);
    cJSON_AddNumberToObject(cj, "max_seq", cfg->max_seq);
    cJSON_AddStringToObject(mj, "act", act_bf16 ? "bf16" : "f32");
    cJSON *tj = cJSON_AddObjectToObject(run, "tokenizer");
    cJSON_AddStringToObject(tj, "path", o.tokenizer ? o.tokenizer : model_dir);
    cJSON_AddStringToObject(tj, "hash", tok_hex);
    cJSON_AddStringToObject(tj, "bos_policy", o.bos);
    cJSON_AddBoolToObject(tj, "add_bos", add_bos);
    cJSON_AddNumberToObject(tj, "bos_id", tok_bos_id(tok));
    cJSON_AddNumberToObject(tj, "eos_id", tok_eos_id(tok));
    cJSON_AddItemToObject(run, "modes", str_array(modes, n_modes));
    cJSON_AddStringToObject(run, "reference", modes[0]);
    cJSON *aj = cJSON_AddObjectToObject(run, "attention");
    cJSON_AddNumberToObject(aj, "tile", ao.tile);
    cJSON_AddStringToObject(aj, "v_group", attn_vgroup_name(ao.v_group));
    cJSON_AddStringToObject(aj, "qformat", attn_qformat_name(ao.qformat));
    cJSON *lj = cJSON_AddObjectToObject(aj, "labels");
    for (int m = 0; m < n_modes; m++) cJSON_AddStringToObject(lj, modes[m], attn_mode_find(modes[m])->label);
    if (o.scales) {
        cJSON *sj = cJSON_AddObjectToObject(run, "scales");
        cJSON_AddStringToObject(sj, "path", o.scales);
        cJSON_AddStringToObject(sj, "sha256", scales_hex);
    } else {
        cJSON_AddNullToObject(run, "scales");
    }
    if (shard_n > 1) {
        cJSON *sh = cJSON_AddObjectToObject(run, "shard");
        cJSON_AddNumberToObject(sh, "k", shard_k);
        cJSON_AddNumberToObject(sh, "n", shard_n);
    }
    cJSON_AddNumberToObject(run, "seed", (double)o.seed);
    cJSON_AddNumberToObject(run, "limit", o.limit);
    cJSON_AddNumberToObject(run, "batch_tokens", max_tokens);
    cJSON_AddNumberToObject(run, "window", cfg->max_seq);
    cJSON *tasks_j = cJSON_AddArrayToObject(run, "tasks");
    for (int t = 0; t < n_tasks; t++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "name", sets[t].name);
        cJSON_AddNumberToObject(x, "n_items", sets[t].is_ppl ? plans[t].n_items : sets[t].n_items);
        if (shard_n > 1) {
            cJSON *ir = cJSON_AddArrayToObject(x, "item_range");
            cJSON_AddItemToArray(ir, cJSON_CreateNumber(item_lo[t]));
            cJSON_AddItemToArray(ir, cJSON_CreateNumber(item_lo[t] + plans[t].n_items));
        }
        cJSON *ml = cJSON_AddArrayToObject(x, "metrics");
        if (sets[t].is_ppl) {
            cJSON_AddItemToArray(ml, cJSON_CreateString("ppl"));
            cJSON_AddItemToArray(ml, cJSON_CreateString("bits_per_byte"));
            cJSON_AddNumberToObject(x, "ppl_ctx", ppl_ctx);
            cJSON_AddNumberToObject(x, "text_bytes", (double)sets[t].text_len);
        }
        if (sets[t].metrics & TASK_METRIC_ACC) cJSON_AddItemToArray(ml, cJSON_CreateString("acc"));
        if (sets[t].metrics & TASK_METRIC_ACC_NORM) cJSON_AddItemToArray(ml, cJSON_CreateString("acc_norm"));
        cJSON_AddStringToObject(x, "template_version", sets[t].template_version);
        cJSON_AddStringToObject(x, "source", sets[t].source);
        cJSON_AddNumberToObject(x, "n_bad_rows", sets[t].n_bad_rows);
        cJSON_AddNumberToObject(x, "seed", (double)sets[t].seed);
        cJSON_AddNumberToObject(x, "n_requests", plans[t].n_req);
        cJSON_AddNumberToObject(x, "n_sequences", plans[t].n_seq);
        cJSON_AddNumberToObject(x, "n_tokens", (double)plans[t].n_tokens);
        cJSON_AddNumberToObject(x, "n_truncated", plans[t].n_truncated);
        cJSON_AddNumberToObject(x, "tokenize_s", tok_s[t]);
        cJSON_AddItemToArray(tasks_j, x);
    }
    char key[65];
    results_config_key(key, run, 1);
    cJSON_AddStringToObject(run, "resume_key", key);
    if (old) {
        const cJSON *ok = cJSON_GetObjectItem(old, "resume_key");
        int same = cJSON_IsString(ok) && !strcmp(ok->valuestring, key);
        if (same && cJSON_IsTrue(cJSON_GetObjectItem(old, "complete"))) {
            // if nothing is left to score, the measurements of the run that did the work stay
            static const char *const keep_fields[] = {"created", "timings", "hook_coverage", "cost_counts", "note"};
            carry = cJSON_CreateObject();
            for (size_t k = 0; carry && k < sizeof keep_fields / sizeof keep_fields[0]; k++) {
                const cJSON *x = cJSON_GetObjectItem(old, keep_fields[k]);
                if (x) cJSON_AddItemToObject(carry, keep_fields[k], cJSON_Duplicate(x, 1));
            }
        }
        cJSON_Delete(old);
        if (!same) {
            rc = err_set(e, ERR_MISMATCH, "--resume: %s was made with a different model, tokenizer, modes, options or task data; "
                         "use another --out", path);
            goto done;
        }
    }
    cJSON_AddBoolToObject(run, "complete", 0);
    if ((rc = results_write_json(path, run, e))) goto done;

    // ---- scoring ----
    scores = calloc((size_t)(max_items ? max_items : 1), sizeof *scores);
    logits_ref = malloc(sizeof(float) * (size_t)out_cap * (size_t)vocab);
    logits_q = n_modes > 1 ? malloc(sizeof(float) * (size_t)out_cap * (size_t)vocab) : NULL;
    if (!scores || !logits_ref || (n_modes > 1 && !logits_q)) { rc = err_set(e, ERR_NOMEM, "run: out of memory for logits (%d rows x %d)", out_cap, vocab); goto done; }
    n_scores = max_items;
    struct progress pr = {.t0 = time_now(), .tty = isatty(2), .shown = -1};
    for (int t = 0; t < n_tasks; t++) pr.total += plans[t].n_items;
    int stop = stop_after(), processed = 0;
    for (int t = 0; t < n_tasks && !rc; t++) {
        const struct eval_plan *p = &plans[t];
        int n = p->n_items, keep = 0;
        if (o.resume) {
            keep = n;
            for (int m = 0; m < n_modes; m++) {
                char sp[4096];
                int cnt;
                if ((rc = results_samples_path(sp, sizeof sp, out_dir, sets[t].name, modes[m], e)) ||
                    (rc = results_samples_count(sp, &cnt, e)))
                    goto done;
                if (cnt > n) { rc = err_set(e, ERR_MISMATCH, "%s: %d items, the task has %d", sp, cnt, n); goto done; }
                if (cnt < n) cnt -= cnt % RESULTS_FRAME_ITEMS;
                if (cnt < keep) keep = cnt;
            }
            if (keep == n && n > 0) { log_info("run: %s: complete, skipped", sets[t].name); pr.done += n; pr.skipped += n; continue; }
            if (keep > 0) log_info("run: %s: resuming at item %d", sets[t].name, keep);
        }
        for (int m = 0; m < n_modes; m++) {
            char sp[4096];
            if ((rc = results_samples_path(sp, sizeof sp, out_dir, sets[t].name, modes[m], e)) ||
                (rc = results_writer_open(&writers[m], sp, keep, e)))
                goto done;
        }
        pr.done += keep;
        pr.skipped += keep;
        int item = keep;
        while (item < n && !rc) {
            if ((rc = eval_batch_next(&batch, p, item, max_tokens, max_out, e))) break;
            for (int m = 0; m < n_modes && !rc; m++) {
                if (n_modes > 1 && (rc = model_set_attn(model, modes[m], &ao, scales, e))) break;
                float *lg = m == 0 ? logits_ref : logits_q;
                double tf = time_now();
                rc = model_forward(model, batch.tok, batch.seq_len, batch.n_seq, batch.out_pos, batch.n_out, lg, e);
                acc[m].forward_s += time_now() - tf;
                if (rc) { err_prefix(e, "task %s, mode %s, items %d..%d", sets[t].name, modes[m], batch.item0, batch.item1 - 1); break; }
                const struct attn_stats *st = attn_ctx_stats(model_attn(model));
                acc[m].calls += st->calls;
                acc[m].tokens += st->tokens;
                for (int l = 0; l < cfg->n_layers && l < ATTN_MAX_LAYERS; l++) acc[m].calls_per_layer[l] += st->calls_per_layer[l];
                attn_ctx_reset_stats(model_attn(model));
                // cost counts are exact functions of the call shapes (spec/cost.md 1)
                unsigned fl = attn_mode_find(modes[m])->flags;
                for (int s = 0; s < batch.n_seq; s++)
                    for (int l = 0; l < cfg->n_layers; l++)
                        cost_count_call(&acc[m].cost, fl, batch.seq_len[s], cfg->n_heads, cfg->n_kv_heads, cfg->head_dim,
                                        cfg->window[l], COST_BR_DEFAULT, COST_BC_DEFAULT);
                struct eval_score *sc = scores + batch.item0;
                if ((rc = eval_batch_score(sc, p, &batch, lg, vocab, n_threads, e))) break;
                if (m > 0 && (rc = eval_batch_compare(sc, p, &batch, logits_ref, logits_q, vocab, n_threads, e))) break;
                for (int i = batch.item0; i < batch.item1 && !rc; i++) {
                    char wid[32];
                    snprintf(wid, sizeof wid, "window/%d", i);
                    const struct task_item *it = sets[t].is_ppl ? NULL : &sets[t].items[item_lo[t] + i];
                    struct eval_score *s = &scores[i];
                    struct results_sample rs = {.idx = item_lo[t] + i, .id = it ? it->id : wid, .subject = it ? it->subject : NULL, .gold = s->gold,
                                                .n_choices = s->n_choices, .ll = s->ll, .n_chars = s->n_chars,
                                                .n_tok = s->n_tok, .greedy = s->greedy, .pred = s->pred,
                                                .pred_norm = s->pred_norm, .margin = s->margin,
                                                .n_kl = m > 0 ? s->n_kl : 0, .kl = s->kl, .top1_same = s->top1_same};
                    rc = results_writer_add(&writers[m], &rs, e);
                }
                for (int i = batch.item0; i < batch.item1; i++) eval_score_free(&scores[i]);
            }
            if (rc) break;
            pr.done += batch.item1 - batch.item0;
            processed += batch.item1 - batch.item0;
            item = batch.item1;
            progress_show(&pr, sets[t].name, 0);
            if (stop > 0 && processed >= stop) {
                // test hook: leave the files as a SIGKILL would (pending lines lost)
                for (int m = 0; m < n_modes; m++) results_writer_abort(&writers[m]);
                rc = err_set(e, ERR_INTERNAL, "stopped after %d items (HIFA4_STOP_AFTER_ITEMS)", processed);
                goto done;
            }
        }
        if (rc) break; // writers are aborted at `done`: only complete frames stay on disk
        for (int m = 0; m < n_modes && !rc; m++) rc = results_writer_close(&writers[m], e);
        progress_show(&pr, sets[t].name, 1);
        if (pr.tty && log_get_level() >= LOG_INFO) fputc('\n', stderr);
    }
    if (rc) goto done;

    // ---- run.json final, summary, report ----
    double t_total = time_now() - t_start;
    cJSON *tm = cJSON_AddObjectToObject(run, "timings");
    cJSON_AddNumberToObject(tm, "load_s", t_load);
    cJSON_AddNumberToObject(tm, "total_s", t_total);
    cJSON *fj = cJSON_AddObjectToObject(tm, "forward_s");
    for (int m = 0; m < n_modes; m++) cJSON_AddNumberToObject(fj, modes[m], acc[m].forward_s);
    cJSON *hc = cJSON_AddObjectToObject(run, "hook_coverage");
    for (int m = 0; m < n_modes; m++) {
        cJSON *x = cJSON_AddObjectToObject(hc, modes[m]);
        cJSON_AddNumberToObject(x, "calls", (double)acc[m].calls);
        cJSON_AddNumberToObject(x, "tokens", (double)acc[m].tokens);
        cJSON *pl = cJSON_AddArrayToObject(x, "calls_per_layer");
        for (int l = 0; l < cfg->n_layers && l < ATTN_MAX_LAYERS; l++) cJSON_AddItemToArray(pl, cJSON_CreateNumber((double)acc[m].calls_per_layer[l]));
    }
    cJSON *cc = cJSON_AddObjectToObject(run, "cost_counts");
    for (int m = 0; m < n_modes; m++) cJSON_AddItemToObject(cc, modes[m], cost_counts_json(&acc[m].cost));
    if (carry && processed == 0) {
        // re-running --resume on a finished run scored nothing: keep what the finished run measured
        // (before, its timings, hook coverage and cost counts were replaced by zeros)
        const cJSON *x;
        cJSON_ArrayForEach(x, carry) {
            if (cJSON_GetObjectItem(run, x->string)) cJSON_ReplaceItemInObject(run, x->string, cJSON_Duplicate(x, 1));
            else cJSON_AddItemToObject(run, x->string, cJSON_Duplicate(x, 1));
        }
    } else if (o.resume) {
        cJSON_AddStringToObject(run, "note", "resumed: timings, hook coverage and cost counts cover the last invocation only");
    }
    cJSON_ReplaceItemInObject(run, "complete", cJSON_CreateBool(1));
    if ((rc = results_write_json(path, run, e))) goto done;
    if ((rc = results_summarize(out_dir, &summary, e))) goto done;
    if ((rc = path_join(path, sizeof path, out_dir, "summary.json", e)) || (rc = results_write_json(path, summary, e))) goto done;
    if ((rc = report_render(out_dir, &headline, e))) goto done;
    printf("report: %s/report.md\n\n%s", out_dir, headline ? headline : "");
    log_info("run: done in %.1fs", t_total);
done:
    for (int m = 0; writers && m < MAX_MODES; m++) results_writer_abort(&writers[m]);
    for (int i = 0; scores && i < n_scores; i++) eval_score_free(&scores[i]);
    for (int t = 0; t < n_tasks; t++) {
        if (plans) eval_plan_free(&plans[t]);
        if (sets) task_set_free(&sets[t]);
    }
    eval_batch_free(&batch);
    free(item_lo); free(tok_s);
    free(headline); free(scores); free(writers); free(acc); free(items); free(plans); free(sets);
    free(scales); free(logits_ref); free(logits_q);
    cJSON_Delete(run); cJSON_Delete(summary); cJSON_Delete(carry);
    tok_free(tok);
    model_free(model);
    return rc;
}
