// paper_tables.c: `tables` - inputs, the paper's values beside ours, the three formats and the
// list of missing tables (see paper_tables.h). The tables themselves: pt_runs.c (Tables 2, 3,
// 5, 6, 7, 9 from runs), pt_stats.c (Tables 1, 4, 8, 10 from diagnose, niah + trace, cost) and
// pt_sweep.c (Table A, the Smooth-QK alpha sweep, not one of the paper's).
#include "results/paper_tables.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "base/json_util.h"
#include "results/pt_internal.h"
#include "results/results.h"
#include "results/run_identity.h"
#include "results/run_label.h"
#include "results/stamp.h"

void pt_opts_default(struct pt_opts *o) { memset(o, 0, sizeof *o); }

const cJSON *pt_get(const cJSON *o, const char *k) { return o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL; }
double pt_num(const cJSON *o, const char *k) {
    const cJSON *x = pt_get(o, k);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}
const char *pt_str(const cJSON *o, const char *k, const char *def) {
    const cJSON *x = pt_get(o, k);
    return cJSON_IsString(x) ? x->valuestring : def;
}

double pt_gate_alpha(const char *gate, double other) {
    return !gate ? other : !strcmp(gate, "strong") ? 0.5 : !strcmp(gate, "mild") ? 0.25 : !strcmp(gate, "bypass") ? 0 : other;
}

const char *pt_table_id(int t) {
    static const char *const id[PT_N_TABLES + 1] = {"?", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "A"};
    return t >= 1 && t <= PT_N_TABLES ? id[t] : "?";
}

struct grid *pt_grid(struct pt_ctx *c, int table, const char *title, int n_cols) {
    if (c->n_g == PT_MAX_GRIDS) return NULL;
    struct grid *g = &c->g[c->n_g];
    char name[32];
    int k = 0;
    for (int i = 0; i < c->n_g; i++) k += c->table[i] == table;
    if (k) snprintf(name, sizeof name, "table%s-%d", pt_table_id(table), k + 1);
    else snprintf(name, sizeof name, "table%s", pt_table_id(table));
    if (grid_init(g, name, title, n_cols)) return NULL;
    c->table[c->n_g++] = table;
    return g;
}

const char *pt_paper_model(const struct pt_ctx *c, const char *name, const char *def) {
    const char *m = paper_model_of(name);
    if (m) return m;
    if (c->o->beside != PT_BESIDE_ALWAYS) return NULL;
    return c->o->paper_model ? paper_model_of(c->o->paper_model) : def;
}

const char *pt_paper_only(const struct pt_ctx *c, const char *name, const char *only) {
    const char *m = paper_model_of(name);
    if (m && !strcmp(m, only)) return only;
    return c->o->beside == PT_BESIDE_ALWAYS ? only : NULL;
}

void pt_missing(struct pt_ctx *c, int t, const char *fmt, ...) {
    char *m = c->missing[t];
    size_t used = strlen(m);
    if (used && used + 3 < sizeof c->missing[t]) { strcat(m, "; "); used += 2; }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m + used, sizeof c->missing[t] - used, fmt, ap);
    va_end(ap);
}

void pt_frac(char *b, size_t n, double v, int digits) {
    if (!isfinite(v)) { snprintf(b, n, "-"); return; }
    snprintf(b, n, "%.*f", digits, v);
    if (b[0] == '0' && b[1] == '.') memmove(b, b + 1, strlen(b));
    else if (b[0] == '-' && b[1] == '0' && b[2] == '.') memmove(b + 1, b + 2, strlen(b + 1));
}

const char *pt_model_name(const struct pt_ctx *c, int r) {
    return c->in->run[r]->model.name ? c->in->run[r]->model.name : c->in->run_dir[r];
}

void pt_run_name(const struct pt_ctx *c, int r, char *out, size_t n) {
    const struct pt_shown *shown = &c->shown;
    const char *name = pt_model_name(c, r);
    const struct run_rec *group[PT_MAX_IN];
    int ng = 0;
    for (int q = 0; q < shown->n; q++)
        if (!strcmp(pt_model_name(c, shown->r[q]), name)) group[ng++] = c->in->run[shown->r[q]];
    char label[512];
    run_label_in_group(label, sizeof label, c->in->run[r], group, ng);
    snprintf(out, n, label[0] ? "%s [%s]" : "%s", name, label);
}

int pt_mode_index(const struct pt_ctx *c, int r, const char *mode) {
    const cJSON *m;
    int k = 0;
    cJSON_ArrayForEach(m, pt_get(c->in->sum[r], "modes")) {
        if (cJSON_IsString(m) && !strcmp(m->valuestring, mode)) return k;
        k++;
    }
    return -1;
}

const cJSON *pt_task(const struct pt_ctx *c, int r, const char *task) { return pt_get(pt_get(c->in->sum[r], "tasks"), task); }

// ---- inputs ----
static int add_json(struct pt_in *in, cJSON *j, const char *path, struct err *e);

// Every samples file of a run is its own (stamp.h): a file copied in after the summary was
// written is named here too, though tables reads only summary.json.
static int check_stamps(const char *dir, const struct run_rec *run, struct err *e) {
    for (int t = 0; t < run->n_tasks; t++) for (int m = 0; m < run->n_modes; m++) {
        const char *task = run->tasks[t].name, *mode = run->modes[m].name;
        char path[4096];
        struct results_stamp want;
        results_stamp_expect(&want, run->json, dir, task, mode);
        int rc = results_samples_path(path, sizeof path, dir, task, mode, e);
        if (!rc) rc = results_stamp_check_file(path, &want, e);
        if (rc) return rc;
    }
    return 0;
}

// Runs of different weights, config.json or tokenizer side by side: said, naming what differs
// (run_identity.h), since each table compares rows as measurements of one model.
static void warn_other_model(const char *dir0, const struct run_rec *run0, const char *dir, const struct run_rec *run) {
    static const char *const not_model[] = {"--", "modes", "mode ", "replicas", "shard", "scales", "task ", "seed", "limit",
                                            "window", "numerics", "GEMM", "Q-Mean", NULL};
    char d[1600];
    if (run_json_diff(d, sizeof d, run0->json, run->json, 0, not_model) > 0)
        log_warn("tables: %s and %s are runs of different models or configurations (%s vs %s): %s", dir0, dir, dir0, dir, d);
}

static int add_run(struct pt_in *in, const char *dir, struct err *e) {
    if (in->n_run == PT_MAX_IN) return err_set(e, ERR_RANGE, "tables: more than %d runs", PT_MAX_IN);
    char path[4096];
    struct run_rec *run = calloc(1, sizeof *run);
    cJSON *sum = NULL;
    int rc = run ? run_rec_load(run, dir, e) : err_set(e, ERR_NOMEM, "tables: out of memory");
    if (!rc) rc = results_check_complete(dir, run, e); // a partial run's numbers are not comparable
    if (!rc) rc = check_stamps(dir, run, e);
    if (!rc) rc = path_join(path, sizeof path, dir, "summary.json", e);
    if (!rc) rc = json_parse_file(&sum, path, e);
    if (!rc) rc = results_summary_check(dir, run, sum, e);
    if (!rc && in->n_run > 0) warn_other_model(in->run_dir[0], in->run[0], dir, run);
    if (!rc && (!cJSON_IsArray(pt_get(sum, "modes")) || !cJSON_IsObject(pt_get(sum, "tasks"))))
        rc = err_set(e, ERR_FORMAT, "%s: expected fields 'modes' (array) and 'tasks' (object)", path);
    if (rc) { run_rec_free(run); free(run); cJSON_Delete(sum); return rc; }
    const char *ref = pt_str(sum, "reference", "?");
    if (strcmp(ref, "bf16")) { // every comparison of the paper is against BF16
        size_t u = strlen(in->skipped);
        snprintf(in->skipped + u, sizeof in->skipped - u, "- `%s`: its reference mode is %s; the paper's tables compare "
                 "with bf16 (run it with `--attn bf16,...`)\n", dir, ref);
        run_rec_free(run);
        free(run);
        cJSON_Delete(sum);
        return 0;
    }
    in->run_dir[in->n_run] = dir;
    in->run[in->n_run] = run;
    in->sum[in->n_run++] = sum;
    return 0;
}

// One INPUT: a run directory, a directory holding diagnose.json or trace.json, or such a file
// (or a `cost --json` file, or a run.json).
static int add_input(struct pt_in *in, const char *path, struct err *e) {
    struct stat st;
    char p[4096];
    if (stat(path, &st)) return err_set(e, ERR_NOTFOUND, "tables: input '%s': no such file or directory", path);
    if (S_ISDIR(st.st_mode)) {
        static const char *const files[] = {"run.json", "diagnose.json", "trace.json"};
        for (int k = 0; k < 3; k++) {
            int rc = path_join(p, sizeof p, path, files[k], e);
            if (rc) return rc;
            if (!file_exists(p)) continue;
            if (k == 0) return add_run(in, path, e);
            cJSON *j = NULL;
            if ((rc = json_parse_file(&j, p, e))) return rc;
            return add_json(in, j, p, e);
        }
        return err_set(e, ERR_FORMAT, "tables: input '%s': a directory without run.json, diagnose.json or trace.json", path);
    }
    cJSON *j = NULL;
    int rc = json_parse_file(&j, path, e);
    if (rc) return rc;
    if (cJSON_IsObject(pt_get(j, "model")) && cJSON_IsArray(pt_get(j, "tasks")) && cJSON_IsArray(pt_get(j, "modes"))) {
        cJSON_Delete(j); // a run.json: its directory is the run
        snprintf(p, sizeof p, "%s", path);
        char *slash = strrchr(p, '/');
        if (slash) *slash = 0;
        else snprintf(p, sizeof p, ".");
        char *dir = str_dup(p); // kept for the process's life (input names are not freed)
        return dir ? add_run(in, dir, e) : err_set(e, ERR_NOMEM, "tables: out of memory");
    }
    return add_json(in, j, path, e);
}

static int add_json(struct pt_in *in, cJSON *j, const char *path, struct err *e) {
    const cJSON *m0 = cJSON_GetArrayItem(pt_get(j, "modes"), 0);
    cJSON **slot = NULL;
    int *n = NULL;
    if (cJSON_IsObject(pt_get(j, "table1")) && cJSON_IsArray(pt_get(j, "table8"))) slot = in->diag, n = &in->n_diag;
    else if (cJSON_IsObject(pt_get(m0, "table10"))) slot = in->cost, n = &in->n_cost;
    else if (cJSON_IsArray(pt_get(m0, "inputs")) && cJSON_IsArray(pt_get(j, "inputs"))) slot = in->trace, n = &in->n_trace;
    if (!slot) {
        cJSON_Delete(j);
        return err_set(e, ERR_FORMAT, "tables: input '%s': not a run directory, diagnose.json (fields table1, table8), "
                       "trace.json (inputs, modes[].inputs) or `cost --json` output (modes[].table10)", path);
    }
    if (*n == PT_MAX_IN) { cJSON_Delete(j); return err_set(e, ERR_RANGE, "tables: more than %d inputs of one kind", PT_MAX_IN); }
    slot[(*n)++] = j;
    return 0;
}

static void free_inputs(struct pt_in *in) {
    for (int i = 0; i < in->n_run; i++) { run_rec_free(in->run[i]); free(in->run[i]); cJSON_Delete(in->sum[i]); }
    for (int i = 0; i < in->n_diag; i++) cJSON_Delete(in->diag[i]);
    for (int i = 0; i < in->n_trace; i++) cJSON_Delete(in->trace[i]);
    for (int i = 0; i < in->n_cost; i++) cJSON_Delete(in->cost[i]);
}

// ---- the paper's values beside ours ----
// Each value column with a paper key becomes three: ours, "(paper)" and the difference; rows
// without a paper key get "-" there. g is replaced by the wider grid.
static int beside(struct grid *g, const struct paper_values *pv, int table) {
    int any = 0, nc = 0;
    for (int r = 1; r < g->n_rows; r++) any |= g->rkey[r] != NULL;
    if (!any) return 0;
    for (int c = 0; c < g->n_cols; c++) nc += c >= g->n_left && g->ckey[c] ? (g->text[c] ? 2 : 3) : 1;
    struct grid w;
    if (grid_init(&w, g->name, g->title, nc)) return ERR_RANGE;
    snprintf(w.note, sizeof w.note, "%s%s(paper) = the paper's value as printed; \xce\x94 = ours minus the paper's.",
             g->note, g->note[0] ? " " : "");
    w.n_left = g->n_left;
    for (int c = 0, k = 0; c < g->n_cols; c++) { // a text column gets the paper's text beside it, no difference
        w.text[k++] = g->text[c];
        if (c >= g->n_left && g->ckey[c]) { w.text[k++] = g->text[c]; k += !g->text[c]; }
    }
    int rc = 0;
    for (int r = 0; r < g->n_rows && !rc; r++) {
        rc |= grid_row(&w);
        for (int c = 0, k = 0; c < g->n_cols; c++) {
            rc |= grid_set(&w, k++, "%s", grid_get(g, r, c));
            if (c < g->n_left || !g->ckey[c]) continue;
            const char *pvv = r && g->rkey[r] ? paper_get(pv, table, g->rkey[r], g->ckey[c]) : NULL;
            char d[64];
            paper_diff(d, sizeof d, grid_get(g, r, c), pvv);
            rc |= grid_set(&w, k++, r ? "%s" : "%s (paper)", r ? (pvv ? pvv : "-") : grid_get(g, 0, c));
            if (!g->text[c]) rc |= grid_set(&w, k++, "%s", r ? (d[0] ? d : "-") : "\xce\x94");
        }
    }
    if (rc) { grid_free(&w); return ERR_NOMEM; }
    grid_free(g);
    *g = w;
    return 0;
}

// ---- output ----
static const char *const needs[PT_N_TABLES + 1] = {
    NULL,
    "`hifa4-eval diagnose --model M --calib SOURCE` (its directory or diagnose.json)",
    "runs whose scales differ only in `--agg`: `hifa4-eval calibrate --model M --calib SOURCE --agg AGG --out "
    "S-AGG.safetensors` for AGG = mean, rms, p99, then per file `hifa4-eval run --model M --task arc_challenge,truthfulqa_mc1,hellaswag,mmlu,ppl "
    "--attn bf16,direct,hifa4 --scales S-AGG.safetensors`",
    "`hifa4-eval run --model M --task arc_challenge,truthfulqa_mc1,mmlu,hellaswag --attn bf16,direct,hifa4`",
    "`hifa4-eval run --model M --task niah --attn bf16,direct,hifa4` and `hifa4-eval trace --model M --text FILE --ctx "
    "4096,16384 --attn bf16,direct,hifa4`",
    "`hifa4-eval run --model M --task mmlu,arc_challenge,truthfulqa_mc1,hellaswag --attn bf16,hifa4` per model (scales from "
    "`calibrate`)",
    "`hifa4-eval run --model M --task mmlu,hellaswag --attn bf16,direct,hifa4`",
    "`hifa4-eval run --model M --task mmlu,hellaswag,arc_challenge,truthfulqa_mc1 --attn "
    "bf16,direct,direct+qmean,direct+qmean+sqk,direct+qmean+preorder,hifa4`",
    "`hifa4-eval diagnose --model M --calib SOURCE` (its directory or diagnose.json)",
    "`hifa4-eval run --model M --task arc_challenge,truthfulqa_mc1,gpqa_diamond --attn "
    "bf16,direct,direct+qmean,direct+qmean+sqk,direct+qmean+preorder,hifa4`",
    "`hifa4-eval cost --model M --seq 40960 --json > cost.json`",
    "runs of one model at two or more Smooth-QK alphas: per alpha A `hifa4-eval calibrate --model M --calib SOURCE "
    "--alpha A --out S-A.safetensors` and `hifa4-eval run --model M --task T --attn bf16,hifa4 --scales S-A.safetensors`; "
    "alpha 0 (row D) from `--attn bf16,direct+qmean+preorder`",
};

static int write_files(const struct pt_ctx *c, const char *csv_dir, const char *latex_dir, struct err *e) {
    int rc = 0;
    if (csv_dir && !(rc = mkdir_p(csv_dir, e)))
        for (int i = 0; i < c->n_g && !rc; i++) rc = grid_csv(&c->g[i], csv_dir, e);
    if (latex_dir && !rc && !(rc = mkdir_p(latex_dir, e))) {
        for (int i = 0; i < c->n_g && !rc; i++) {
            struct results_buf o = {0};
            char path[4096], file[96];
            if (grid_latex(&o, &c->g[i])) { free(o.p); return err_set(e, ERR_NOMEM, "tables: out of memory"); }
            snprintf(file, sizeof file, "%s.tex", c->g[i].name);
            rc = path_join(path, sizeof path, latex_dir, file, e);
            if (!rc) rc = file_write_atomic(path, o.p, o.n, e);
            free(o.p);
        }
    }
    return rc;
}

static int markdown(const struct pt_ctx *c, struct results_buf *o) {
    int rc = 0, any = 0;
    if (c->in->skipped[0]) rc |= results_buf_printf(o, "### Inputs left out\n\n%s\n", c->in->skipped);
    if (c->in->joined[0])
        rc |= results_buf_printf(o, "### Runs read as one\n\nEach line: runs whose run.json differ only in their modes and "
                                 "tasks (no mode but bf16 in two of them for one task; bf16 the same there), read as one "
                                 "run:\n\n%s\n", c->in->joined);
    for (int t = 1; t <= PT_N_TABLES; t++)
        for (int i = 0; i < c->n_g; i++)
            if (c->table[i] == t) rc |= grid_md(o, &c->g[i]);
    for (int t = 1; t <= PT_N_TABLES; t++) {
        if (!c->missing[t][0]) continue;
        if (!any++) rc |= results_buf_printf(o, "### Not produced from these inputs (or inputs left out)\n\n| table | why | what produces it |\n|---|---|---|\n");
        rc |= results_buf_printf(o, "| Table %s | %s | %s |\n", pt_table_id(t), c->missing[t], needs[t]);
    }
    return rc;
}

static int build(struct pt_ctx *c, struct err *e) {
    int rc = 0;
    if ((rc = pt_table1(c)) || (rc = pt_table2(c, e)) || (rc = pt_table3(c)) || (rc = pt_table4(c)) ||
        (rc = pt_table5(c)) || (rc = pt_table6(c)) || (rc = pt_table7_9(c)) || (rc = pt_table8(c, e)) ||
        (rc = pt_table10(c)) || (rc = pt_table_sweep(c)))
        return e->code ? rc : err_set(e, rc, "tables: out of memory or too many tables (%d at most)", PT_MAX_GRIDS);
    for (int i = 0; i < c->n_g; i++)
        if ((rc = beside(&c->g[i], c->pv, c->table[i]))) return err_set(e, rc, "tables: out of memory");
    return 0;
}

int pt_render(const char *const *inputs, int n, const struct pt_opts *o, const char *csv_dir, const char *latex_dir,
              struct pt_result *out, struct err *e) {
    memset(out, 0, sizeof *out);
    struct pt_in in;
    memset(&in, 0, sizeof in);
    struct paper_values pv = {0};
    struct pt_ctx *c = calloc(1, sizeof *c);
    struct results_buf md = {0};
    int rc = c ? 0 : err_set(e, ERR_NOMEM, "tables: out of memory");
    if (!rc && o->paper_model && !paper_model_of(o->paper_model))
        rc = err_set(e, ERR_USAGE, "--paper-model '%s': not one of the paper's models (Qwen3-8B, Gemma2-9B, LLaMA3.1-8B, "
                     "Mistral-7B, Phi-4B)", o->paper_model);
    for (int i = 0; i < n && !rc; i++) rc = add_input(&in, inputs[i], e);
    if (!rc) rc = pt_join_runs(&in, e);
    if (!rc) rc = o->paper_dir ? paper_load(&pv, o->paper_dir, e) : paper_load_default(&pv, e);
    if (!rc) {
        c->in = &in;
        c->o = o;
        c->pv = &pv;
        e->code = 0;
        rc = build(c, e);
    }
    if (!rc && markdown(c, &md)) rc = err_set(e, ERR_NOMEM, "tables: out of memory");
    if (!rc) rc = write_files(c, csv_dir, latex_dir, e);
    if (!rc) { out->md = md.p ? md.p : str_dup(""); md.p = NULL; out->n_tables = c->n_g; }
    for (int i = 0; c && i < c->n_g; i++) grid_free(&c->g[i]);
    free(c);
    free(md.p);
    paper_free(&pv);
    free_inputs(&in);
    return rc;
}
