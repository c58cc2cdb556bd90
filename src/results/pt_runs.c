// pt_runs.c: the paper's tables built from run directories - Table 2 (scale aggregation),
// Table 3 (flip rate and Quant Hurts), Table 5 (accuracy under the gate), Table 6 (Hurts and
// Helps of the bypass models) and Tables 7 / 9 (the stepwise ablation, rows A-E). Every number
// comes from summary.json (and the gate from run.json's scales_calibration).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "results/pt_internal.h"
#include "results/results.h"

// The paper's name of a task in each table (NULL: the table has no such column) and the
// order of its columns; tasks the paper has not come after these, named as in the run.
struct pt_task_name { const char *task, *t2, *t3, *t5, *t7, *t9, *t9n; };
static const struct pt_task_name task_names[] = {
    {"mmlu", "MMLU", "MMLU", "MMLU", "MMLU", NULL, NULL},
    {"hellaswag", "Hella", "HellaSwag", "Hella", "HellaSwag", NULL, NULL},
    {"arc_challenge", "ARC", "ARC-C", "ARC", "ARC", "ARC", "ARC (295)"},
    {"truthfulqa_mc1", "TQA", "TruthfulQA", "TQA", "TruthfulQA", "TQA", "TQA (817)"},
    {"gpqa_diamond", "GPQA", NULL, NULL, NULL, "GPQA", "GPQA (198)"},
    {"bbh", "BBH", NULL, NULL, NULL, NULL, NULL},
};
#define N_NAMES ((int)(sizeof task_names / sizeof task_names[0]))

static const struct pt_task_name *task_name(const char *task) {
    for (int i = 0; i < N_NAMES; i++)
        if (!strcmp(task_names[i].task, task)) return &task_names[i];
    return NULL;
}

// Each table's column order: Table 3 ARC, TQA, MMLU, Hella; Table 5 MMLU, ARC, TQA, Hella;
// Table 2 ARC, TQA, GPQA, BBH, Hella, MMLU; Tables 6, 7 MMLU, Hella, ARC, TQA.
static const char *const order3[] = {"arc_challenge", "truthfulqa_mc1", "mmlu", "hellaswag", NULL};
static const char *const order5[] = {"mmlu", "arc_challenge", "truthfulqa_mc1", "hellaswag", NULL};
static const char *const order2[] = {"arc_challenge", "truthfulqa_mc1", "gpqa_diamond", "bbh", "hellaswag", "mmlu", NULL};
static const char *const order7[] = {"mmlu", "hellaswag", "arc_challenge", "truthfulqa_mc1", "gpqa_diamond", NULL};

static int is_ppl(const cJSON *t) {
    const cJSON *x;
    cJSON_ArrayForEach(x, pt_get(t, "metrics")) if (cJSON_IsString(x) && !strcmp(x->valuestring, "ppl")) return 1;
    return 0;
}
// niah is Table 4's task: no accuracy column of the other tables
static int is_niah(const cJSON *t) { return !strcmp(t->string, "niah"); }

// The multiple-choice tasks of the runs in rs[0..nr) in `order`, then the others in first-seen
// order. Returns how many (at most max).
int pt_task_list(const struct pt_ctx *c, const int *rs, int nr, const char *const *order, const char **out, int max) {
    int n = 0;
    for (int k = 0; order[k]; k++)
        for (int i = 0; i < nr; i++)
            if (pt_task(c, rs[i], order[k]) && n < max) { out[n++] = order[k]; break; }
    for (int i = 0; i < nr; i++) {
        const cJSON *t;
        cJSON_ArrayForEach(t, pt_get(c->in->sum[rs[i]], "tasks")) {
            int seen = is_ppl(t) || is_niah(t);
            for (int k = 0; k < n && !seen; k++) seen = !strcmp(out[k], t->string);
            if (!seen && n < max) out[n++] = t->string;
        }
    }
    return n;
}

// the reference mode (always bf16: paper_tables.c leaves out runs with another)
static const char *ref_of(const struct pt_ctx *c, int r) { return pt_str(c->in->sum[r], "reference", "?"); }
// vs_reference of mode in task (NULL when the mode or task is not there)
const cJSON *pt_vs(const struct pt_ctx *c, int r, const char *task, const char *mode) {
    return pt_get(pt_get(pt_task(c, r, task), "vs_reference"), mode);
}
// (pt_internal.h) "-" when the task has no such mode: a joined run can hold a mode for one of
// its tasks only (ARC-Easy's rows A-E beside ARC-Challenge's D, E), and (int)NAN is undefined
// (it printed -2147483648)
int pt_count_cell(struct grid *g, int col, const cJSON *v, const char *key) {
    double x = pt_num(v, key);
    return isfinite(x) ? grid_set(g, col, "%d", (int)x) : grid_set(g, col, "-");
}
// Table 3's `7.46%(22)`, "-" when the task has no such mode
static int flip_cell(struct grid *g, int col, const cJSON *v) {
    double p = pt_num(v, "pfr"), n = pt_num(v, "flips");
    return isfinite(p) && isfinite(n) ? grid_set(g, col, "%.2f%%(%d)", 100 * p, (int)n) : grid_set(g, col, "-");
}
double pt_acc(const struct pt_ctx *c, int r, const char *task, const char *mode) {
    const cJSON *s = pt_get(pt_get(pt_task(c, r, task), "modes"), mode);
    double a = pt_num(s, "acc");
    return isfinite(a) ? a : pt_num(s, "acc_norm");
}
static int n_mc_tasks(const struct pt_ctx *c, int r) {
    const char *t[64];
    return pt_task_list(c, &r, 1, (const char *const[]){NULL}, t, 64);
}
static int same_model(const struct pt_ctx *c, int a, int b) {
    const struct run_rec *ra = c->in->run[a], *rb = c->in->run[b];
    return ra->model.hash && rb->model.hash && !strcmp(ra->model.hash, rb->model.hash) &&
           !strcmp(run_rec_qmean(ra), run_rec_qmean(rb));
}
// Runs with every mode of `modes` (the reference first) and a multiple-choice task: per model
// (and Q-Mean form) the one with the most tasks, the first of equals; they become c->shown.
// Indices into rs, count returned.
static int runs_with(struct pt_ctx *c, const char *const *modes, int *rs) {
    int n = 0;
    for (int r = 0; r < c->in->n_run; r++) {
        int ok = pt_mode_index(c, r, modes[0]) == 0 && n_mc_tasks(c, r) > 0, k = 0;
        for (k = 1; modes[k] && ok; k++) ok = pt_mode_index(c, r, modes[k]) >= 1;
        for (k = 0; ok && k < n && !same_model(c, rs[k], r); k++) {}
        if (!ok) continue;
        if (k == n) rs[n++] = r;
        else if (n_mc_tasks(c, r) > n_mc_tasks(c, rs[k])) rs[k] = r;
    }
    memcpy(c->shown.r, rs, (size_t)n * sizeof *rs);
    c->shown.n = n;
    return n;
}
// " (channel)" for a run of the channel Q-Mean form, on modes with Q-Mean
static const char *form(const struct pt_ctx *c, int r, const char *mode) {
    int qm = strstr(mode, "qmean") || !strcmp(mode, "hifa4");
    return qm && !strcmp(run_rec_qmean(c->in->run[r]), "channel") ? " (channel)" : "";
}

// ---- Table 3: per dataset, Flip Rate `7.46%(22)` and Quant Hurts of Direct HIF4 and HiFA4 ----
// With replicas each of the four value columns k = 1..4 is followed by its P(x) column.
static int table3_run(struct pt_ctx *c, int r) {
    const char *model = pt_model_name(c, r), *pm = pt_paper_only(c, model, "Qwen3-8B");
    const char *tasks[64];
    const int rep = pt_replicas(c, r) > 0, w = 1 + rep; // columns per value: 1, or 2 with P(x)
    int nt = pt_task_list(c, &r, 1, order3, tasks, 64), rc = 0;
    char title[1024], name[768], p[96];
    pt_run_name(c, r, name, sizeof name);
    snprintf(title, sizeof title, "Table 3: flip rate and Quant Hurts, %s, Direct HIF4 vs HiFA4%s", name, form(c, r, "hifa4"));
    struct grid *g = pt_grid(c, 3, title, 1 + 4 * w);
    if (!g) return ERR_RANGE;
    if (rep) rc |= pt_prob_note(g, pt_replicas(c, r));
    static const char *const hdr[5] = {"Dataset", "Flip Rate Direct", "Flip Rate HiFA4", "Quant Hurts Direct", "Quant Hurts HiFA4"};
    static const char *const phdr[4] = {"P(Flip) Direct", "P(Flip) HiFA4", "P(Hurt) Direct", "P(Hurt) HiFA4"};
    rc |= grid_row(g) | grid_set(g, 0, "%s", hdr[0]);
    for (int k = 1; k < 5; k++) {
        rc |= grid_set(g, 1 + (k - 1) * w, "%s", hdr[k]) | grid_set_ckey(g, 1 + (k - 1) * w, hdr[k]);
        if (rep) rc |= grid_set(g, k * w, "%s", phdr[k - 1]);
    }
    for (int i = 0; i < nt; i++) {
        const struct pt_task_name *tn = task_name(tasks[i]);
        const cJSON *a = pt_vs(c, r, tasks[i], "direct"), *h = pt_vs(c, r, tasks[i], "hifa4");
        rc |= grid_row(g);
        rc |= grid_set(g, 0, "%s (%d)", tn && tn->t3 ? tn->t3 : tasks[i], (int)pt_num(pt_task(c, r, tasks[i]), "n"));
        if (pm && tn && tn->t3) {
            char key[96];
            snprintf(key, sizeof key, "%s (*)", tn->t3);
            rc |= grid_set_rkey(g, key);
        }
        rc |= flip_cell(g, 1, a) | flip_cell(g, 1 + w, h);
        rc |= pt_count_cell(g, 1 + 2 * w, a, "hurts") | pt_count_cell(g, 1 + 3 * w, h, "hurts");
        for (int k = 1; rep && k < 5; k++) {
            pt_prob_cell(p, sizeof p, c, r, tasks[i], k % 2 ? "direct" : "hifa4", k < 3 ? PT_PROB_FLIP : PT_PROB_HURT);
            rc |= grid_set(g, 2 * k, "%s", p);
        }
    }
    return rc;
}

int pt_table3(struct pt_ctx *c) {
    static const char *const modes[] = {"bf16", "direct", "hifa4", NULL};
    int rs[PT_MAX_IN], n = runs_with(c, modes, rs), rc = 0;
    if (!n) pt_missing(c, 3, "no run with modes bf16 (reference), direct and hifa4");
    for (int i = 0; i < n && !rc; i++) rc = table3_run(c, rs[i]);
    return rc;
}

// ---- Table 5: accuracy of BF16 and HiFA4 per model under its gate, D_avg and D_w ----
// The gate of run r: run.json scales_calibration.gate, else a diagnose input of the same model.
static void gate_of(const struct pt_ctx *c, int r, char *out, size_t n) {
    const char *g = c->in->run[r]->calibration.gate;
    const char *hash = c->in->run[r]->model.hash ? c->in->run[r]->model.hash : "";
    for (int d = 0; !g && d < c->in->n_diag; d++)
        if (!strcmp(pt_str(pt_get(c->in->diag[d], "model"), "hash", "-"), hash)) g = pt_str(pt_get(c->in->diag[d], "table1"), "gate", NULL);
    snprintf(out, n, "%s", g ? g : "gate ?");
    if (out[0] >= 'a' && out[0] <= 'z') out[0] = (char)(out[0] - 'a' + 'A');
    // scales whose alpha is not the gate's own (calibrate --alpha A forced it): the label says so
    const char *rg = c->in->run[r]->calibration.gate;
    const char *alpha = rg ? c->in->run[r]->calibration.alpha : NULL;
    const double forced = alpha ? strtod(alpha, NULL) : NAN;
    if (!alpha || forced == pt_gate_alpha(rg, 0)) return;
    char a[40];
    num_shortest(a, sizeof a, forced); // a scales file writes %.17g: 0.1 is 0.10000000000000001
    size_t u = strlen(out);
    snprintf(out + u, n - u, ", alpha %s", a);
}

static int table5_rows(struct pt_ctx *c, struct grid *g, int r, const char **tasks, int nt) {
    const char *model = pt_model_name(c, r), *pm = pt_paper_model(c, model, "Qwen3-8B");
    const cJSON *x = pt_get(pt_get(c->in->sum[r], "across_tasks"), "hifa4");
    char gate[64], a[32], key[128], name[768];
    gate_of(c, r, gate, sizeof gate);
    pt_run_name(c, r, name, sizeof name);
    int rc = 0;
    for (int row = 0; row < 2; row++) {
        const char *mode = row ? "hifa4" : ref_of(c, r);
        rc |= grid_row(g);
        if (!row) rc |= grid_set(g, 0, "%s (%s)", name, gate);
        if (!row) rc |= grid_set(g, 1, "BF16");
        else rc |= grid_set(g, 1, "HiFA4%s", form(c, r, "hifa4"));
        if (pm) {
            snprintf(key, sizeof key, "%s (*) / %s", pm, row ? "HiFA4" : "BF16");
            rc |= grid_set_rkey(g, key);
        }
        for (int k = 0; k < nt; k++) {
            pt_frac(a, sizeof a, pt_task(c, r, tasks[k]) ? pt_acc(c, r, tasks[k], mode) : NAN, 3);
            rc |= grid_set(g, 2 + k, "%s", a);
        }
        if (!row) { rc |= grid_set(g, 2 + nt, "-"); rc |= grid_set(g, 3 + nt, "-"); continue; }
        rc |= grid_set(g, 2 + nt, "%+.1f pp", 100 * pt_num(x, "D_avg"));
        rc |= grid_set(g, 3 + nt, "%+.1f pp", 100 * pt_num(x, "D_w"));
    }
    return rc;
}

int pt_table5(struct pt_ctx *c) {
    static const char *const modes[] = {"bf16", "hifa4", NULL};
    int rs[PT_MAX_IN], n = runs_with(c, modes, rs), rc = 0;
    if (!n) { pt_missing(c, 5, "no run with modes bf16 (reference) and hifa4"); return 0; }
    const char *tasks[32];
    int nt = pt_task_list(c, rs, n, order5, tasks, 32);
    struct grid *g = pt_grid(c, 5, "Table 5: accuracy under each model's gate-assigned configuration", 4 + nt);
    if (!g) return ERR_RANGE;
    g->n_left = 2;
    snprintf(g->note, sizeof g->note, "Accuracy is acc (acc_norm for a task without acc). \xce\x94" "avg = mean of the "
             "per-benchmark gaps, \xce\x94w = gaps weighted by each set's items (this run's sizes).");
    rc |= grid_row(g);
    rc |= grid_set(g, 0, "Model (Gate)");
    rc |= grid_set(g, 1, "Method");
    for (int k = 0; k < nt; k++) {
        const struct pt_task_name *tn = task_name(tasks[k]);
        rc |= grid_set(g, 2 + k, "%s", tn && tn->t5 ? tn->t5 : tasks[k]);
        if (tn && tn->t5) rc |= grid_set_ckey(g, 2 + k, tn->t5);
    }
    rc |= grid_set(g, 2 + nt, "\xce\x94" "avg") | grid_set_ckey(g, 2 + nt, "Delta_avg");
    rc |= grid_set(g, 3 + nt, "\xce\x94w") | grid_set_ckey(g, 3 + nt, "Delta_w");
    for (int i = 0; i < n; i++) rc |= table5_rows(c, g, rs[i], tasks, nt);
    return rc;
}

// ---- Table 6: per model and dataset, BF16 / Direct HIF4 / HiFA4: Acc, Fl, Hu, He, D Hu ----
// With replicas (rep = 1) Fl, Hu and He are each followed by their P(x) column.
static int table6_task(struct pt_ctx *c, struct grid *g, int r, const char *task, int first) {
    static const char *const methods[3] = {"BF16", "Direct HIF4", "HiFA4"};
    const char *modes[3] = {ref_of(c, r), "direct", "hifa4"};
    const char *model = pt_model_name(c, r), *pm = pt_paper_model(c, model, "LLaMA3.1-8B");
    const struct pt_task_name *tn = task_name(task);
    const char *label = tn && tn->t3 ? tn->t3 : task; // Table 6 names MMLU and HellaSwag as Table 3 does
    const int w = g->n_cols == 11 ? 2 : 1;           // columns per count: with its P(x) or alone
    char a[32], key[160], name[768], p[96];
    pt_run_name(c, r, name, sizeof name);
    int rc = 0;
    for (int k = 0; k < 3; k++) {
        const cJSON *v = pt_vs(c, r, task, modes[k]);
        rc |= grid_row(g);
        if (first && !k) rc |= grid_set(g, 0, "%s", name);
        if (!k) rc |= grid_set(g, 1, "%s (%d)", label, (int)pt_num(pt_task(c, r, task), "n"));
        rc |= grid_set(g, 2, "%s%s", methods[k], form(c, r, modes[k]));
        if (pm && tn && tn->t3) {
            snprintf(key, sizeof key, "%s / %s / %s", pm, tn->t3, methods[k]);
            rc |= grid_set_rkey(g, key);
        }
        pt_frac(a, sizeof a, pt_acc(c, r, task, modes[k]), 4);
        rc |= grid_set(g, 3, "%s", a);
        for (int q = 0; q < 3; q++) {
            static const char *const f[3] = {"flips", "hurts", "helps"};
            if (k) rc |= pt_count_cell(g, 4 + w * q, v, f[q]);
            else rc |= grid_set(g, 4 + w * q, "-");
            if (w == 1) continue;
            if (k) pt_prob_cell(p, sizeof p, c, r, task, modes[k], (enum pt_prob)q);
            rc |= grid_set(g, 5 + w * q, "%s", k ? p : "-");
        }
        double hd = pt_num(pt_vs(c, r, task, "direct"), "hurts"), hh = pt_num(v, "hurts");
        if (k == 2 && hd > 0) rc |= grid_set(g, 4 + 3 * w, "%+.1f%%", 100 * (hh - hd) / hd);
        else rc |= grid_set(g, 4 + 3 * w, "-");
    }
    return rc;
}

int pt_table6(struct pt_ctx *c) {
    static const char *const modes[] = {"bf16", "direct", "hifa4", NULL};
    int rs[PT_MAX_IN], n = runs_with(c, modes, rs), rc = 0;
    if (!n) { pt_missing(c, 6, "no run with modes bf16 (reference), direct and hifa4"); return 0; }
    const int k_rep = pt_shown_replicas(c), rep = k_rep != 0, nc = rep ? 11 : 8;
    struct grid *g = pt_grid(c, 6, "Table 6: Direct HIF4 vs HiFA4 per model and dataset: accuracy, flips (Fl), Quant Hurts "
                             "(Hu) and Helps (He)", nc);
    if (!g) return ERR_RANGE;
    g->n_left = 3;
    snprintf(g->note, sizeof g->note, "\xce\x94Hu = HiFA4's Quant Hurts relative to Direct HIF4's.");
    if (rep) rc |= pt_prob_note(g, k_rep);
    static const char *const hdr[8] = {"Model", "Dataset", "Method", "Acc", "Fl", "Hu", "He", "\xce\x94Hu"};
    static const char *const key[8] = {NULL, NULL, NULL, "Acc", "Fl", "Hu", "He", "Delta Hu"};
    rc |= grid_row(g);
    for (int k = 0, col = 0; k < 8; k++, col++) {
        rc |= grid_set(g, col, "%s", hdr[k]) | (key[k] ? grid_set_ckey(g, col, key[k]) : 0);
        if (rep && k >= 4 && k <= 6) rc |= grid_set(g, ++col, "P(%s)", hdr[k]);
    }
    static const char *const order6[] = {"mmlu", "hellaswag", "arc_challenge", "truthfulqa_mc1", NULL};
    for (int i = 0; i < n; i++) {
        const char *tasks[64];
        int nt = pt_task_list(c, &rs[i], 1, order6, tasks, 64);
        for (int k = 0; k < nt; k++) rc |= table6_task(c, g, rs[i], tasks[k], k == 0);
    }
    return rc;
}

// ---- Tables 7 and 9: the stepwise ablation, rows A-E, Flip and Hurt per dataset ----
static const char *const abl_mode[5] = {"direct", "direct+qmean", "direct+qmean+sqk", "direct+qmean+preorder", "hifa4"};
static const char *const abl_row[5] = {"A. Direct HIF4", "B. +Q-Mean", "C. +Smooth-QK", "D. +P-Reordering", "E. Both (HiFA4)"};

// Columns per dataset: Flip and Hurt (w = 2), each followed by its P(x) with replicas (w = 4).
static int ablation_header(struct grid *g, int table, const struct pt_ctx *c, int r, const char **tasks, int nt) {
    g->n_left = 3; // Config, SQK, PRe
    const int w = (g->n_cols - 3) / (nt ? nt : 1), s = w / 2; // s: columns per value
    int rc = grid_row(g);
    rc |= grid_set(g, 0, "Config") | grid_set(g, 1, "SQK") | grid_set(g, 2, "PRe");
    for (int k = 0; k < nt; k++) {
        const struct pt_task_name *tn = task_name(tasks[k]);
        const int c0 = 3 + w * k, c1 = c0 + s;
        char h[128], key[128];
        int n = (int)pt_num(pt_task(c, r, tasks[k]), "n");
        const char *l = table == 7 ? (tn && tn->t7 ? tn->t7 : tasks[k]) : tn->t9;
        if (table == 7) {
            snprintf(h, sizeof h, "%s Flip", l);
            rc |= grid_set(g, c0, "%s", h) | (tn && tn->t7 ? grid_set_ckey(g, c0, h) : 0);
            snprintf(h, sizeof h, "%s Hurt", l);
            rc |= grid_set(g, c1, "%s", h) | (tn && tn->t7 ? grid_set_ckey(g, c1, h) : 0);
        } else {
            rc |= grid_set(g, c0, "%s (%d) Fl", l, n);
            snprintf(key, sizeof key, "%s Fl", tn->t9n);
            rc |= grid_set_ckey(g, c0, key);
            snprintf(h, sizeof h, "%s Hu", l);
            rc |= grid_set(g, c1, "%s", h) | grid_set_ckey(g, c1, h);
        }
        if (s == 2) {
            rc |= grid_set(g, c0 + 1, table == 7 ? "%s P(Flip)" : "%s P(Fl)", l);
            rc |= grid_set(g, c1 + 1, table == 7 ? "%s P(Hurt)" : "%s P(Hu)", l);
        }
    }
    return rc;
}

static int ablation(struct pt_ctx *c, int table, int r, const char **tasks, int nt) {
    const char *model = pt_model_name(c, r), *pm = pt_paper_only(c, model, table == 7 ? "Qwen3-8B" : "Gemma2-9B");
    const int rep = pt_replicas(c, r) > 0, s = 1 + rep, w = 2 * s; // s: columns per value, w: per dataset
    char title[1024], name[768], p[96];
    pt_run_name(c, r, name, sizeof name);
    snprintf(title, sizeof title, "Table %d: stepwise ablation, %s (rows B-E include Q-Mean, %s form)", table, name,
             run_rec_qmean(c->in->run[r]));
    struct grid *g = pt_grid(c, table, title, 3 + w * nt);
    if (!g) return ERR_RANGE;
    int rc = ablation_header(g, table, c, r, tasks, nt) | (rep ? pt_prob_note(g, pt_replicas(c, r)) : 0);
    for (int a = 0; a < 5; a++) {
        int present = pt_mode_index(c, r, abl_mode[a]) > 0;
        rc |= grid_row(g);
        rc |= grid_set(g, 0, "%s%s", abl_row[a], form(c, r, abl_mode[a]));
        if (pm) rc |= grid_set_rkey(g, abl_row[a]);
        rc |= grid_set(g, 1, "%s", a == 2 || a == 4 ? "\xe2\x9c\x93" : "-");
        rc |= grid_set(g, 2, "%s", a == 3 || a == 4 ? "\xe2\x9c\x93" : "-");
        for (int k = 0; k < nt; k++) {
            const cJSON *v = pt_vs(c, r, tasks[k], abl_mode[a]);
            const int c0 = 3 + w * k, c1 = c0 + s;
            for (int q = 0; q < w && !present; q++) rc |= grid_set(g, c0 + q, "-");
            if (!present) continue;
            rc |= pt_count_cell(g, c0, v, "flips") | pt_count_cell(g, c1, v, "hurts");
            if (!rep) continue;
            pt_prob_cell(p, sizeof p, c, r, tasks[k], abl_mode[a], PT_PROB_FLIP);
            rc |= grid_set(g, c0 + 1, "%s", p);
            pt_prob_cell(p, sizeof p, c, r, tasks[k], abl_mode[a], PT_PROB_HURT);
            rc |= grid_set(g, c1 + 1, "%s", p);
        }
    }
    return rc;
}

static int is_ablation(const struct pt_ctx *c, int r) {
    int have = 0;
    for (int a = 0; a < 5; a++) have += pt_mode_index(c, r, abl_mode[a]) > 0;
    return have >= 3 && pt_mode_index(c, r, "direct") >= 1;
}

int pt_table7_9(struct pt_ctx *c) {
    int rc = 0, n7 = 0, n9 = 0;
    c->shown.n = 0;
    for (int r = 0; r < c->in->n_run; r++)
        if (is_ablation(c, r)) c->shown.r[c->shown.n++] = r;
    for (int r = 0; r < c->in->n_run && !rc; r++) {
        if (!is_ablation(c, r)) continue;
        const char *tasks[64], *t9[8];
        int nt = pt_task_list(c, &r, 1, order7, tasks, 64), n = 0;
        rc = ablation(c, 7, r, tasks, nt);
        n7++;
        for (int k = 0; k < nt; k++) {
            const struct pt_task_name *tn = task_name(tasks[k]);
            if (tn && tn->t9 && n < 8) t9[n++] = tasks[k];
        }
        if (n && !rc) { rc = ablation(c, 9, r, t9, n); n9++; }
    }
    if (!n7) pt_missing(c, 7, "no run with direct and at least two more of the rows A-E (direct+qmean, direct+qmean+sqk, "
                        "direct+qmean+preorder, hifa4)");
    if (!n9) pt_missing(c, 9, "no run of the rows A-E with any of arc_challenge, truthfulqa_mc1, gpqa_diamond");
    return rc;
}

// ---- Table 2: calibration aggregation - BF16, Direct HIF4, then HiFA4 per aggregator ----
static const char *agg_label(const char *agg) {
    static const char *const m[][2] = {{"mean", "Mean"}, {"rms", "RMS (used)"}, {"p99", "99th percentile"}, {"max", "Max"}};
    for (int i = 0; i < 4; i++)
        if (!strcmp(m[i][0], agg)) return m[i][1];
    return agg;
}

static double ppl_of(const struct pt_ctx *c, int r, const char *mode) {
    const cJSON *t;
    cJSON_ArrayForEach(t, pt_get(c->in->sum[r], "tasks")) if (is_ppl(t)) return pt_num(pt_get(pt_get(t, "modes"), mode), "ppl");
    return NAN;
}

// One row: `mode` of run r under the label; columns tasks, delta_w (pp lost vs BF16), PPL.
struct t2_cols { const char **tasks; int nt, paper, has_ppl; };
static int table2_row(struct pt_ctx *c, struct grid *g, int r, const char *mode, const char *label, const struct t2_cols *cols) {
    const char **tasks = cols->tasks;
    const int nt = cols->nt, pm = cols->paper, has_ppl = cols->has_ppl;
    char a[32];
    int rc = grid_row(g) | grid_set(g, 0, "%s", label);
    if (pm) rc |= grid_set_rkey(g, label);
    for (int k = 0; k < nt; k++) {
        pt_frac(a, sizeof a, pt_task(c, r, tasks[k]) ? pt_acc(c, r, tasks[k], mode) : NAN, 3);
        rc |= grid_set(g, 1 + k, "%s", a);
    }
    double dw = -100 * pt_num(pt_get(pt_get(c->in->sum[r], "across_tasks"), mode), "D_w"), ppl = ppl_of(c, r, mode);
    if (fabs(dw) < 0.005) dw = 0; // "0.00", not "-0.00"
    if (!strcmp(mode, ref_of(c, r))) rc |= grid_set(g, 1 + nt, "0");
    else rc |= grid_set(g, 1 + nt, isfinite(dw) ? "%.2f" : "-", dw);
    if (has_ppl) rc |= grid_set(g, 2 + nt, !isfinite(ppl) ? "-" : ppl < 1e6 ? "%.2f" : "%.3g", ppl);
    return rc;
}

static const char *agg_of(const struct pt_ctx *c, int r) {
    return c->in->run[r]->calibration.aggregator;
}
// Every task of ta that Table 2 shows (not niah) is in tb with as many items
static int agg_tasks_in(const cJSON *ta, const cJSON *tb) {
    const cJSON *t, *u;
    cJSON_ArrayForEach(t, ta) {
        if (is_niah(t)) continue;
        if (!(u = pt_get(tb, t->string)) || pt_num(t, "n") != pt_num(u, "n")) return 0;
    }
    return 1;
}
// Runs a and b differ at most in their scales: same model and Q-Mean form, and the same tasks
// of Table 2 with as many items each (a run joined with a NIAH run, or with runs of another
// --limit on other tasks, is compared on the tasks Table 2 shows).
static int agg_compatible(const struct pt_ctx *c, int a, int b) {
    const cJSON *ta = pt_get(c->in->sum[a], "tasks"), *tb = pt_get(c->in->sum[b], "tasks");
    return same_model(c, a, b) && agg_tasks_in(ta, tb) && agg_tasks_in(tb, ta);
}
// The runs of Table 2: among runs with hifa4 and a recorded aggregator, the largest set of
// mutually compatible ones (most distinct aggregators; the first of equals). Count returned.
static int table2_runs(struct pt_ctx *c, int *rs) {
    int best = -1, best_aggs = 0;
    for (int r = 0; r < c->in->n_run; r++) {
        if (!agg_of(c, r) || pt_mode_index(c, r, "hifa4") < 1) continue;
        int aggs = 0;
        for (int q = 0; q < c->in->n_run; q++) {
            int fresh = agg_of(c, q) && pt_mode_index(c, q, "hifa4") > 0 && agg_compatible(c, r, q);
            for (int p = 0; p < q && fresh; p++)
                fresh = !(agg_of(c, p) && agg_compatible(c, r, p) && !strcmp(agg_of(c, p), agg_of(c, q)));
            aggs += fresh;
        }
        if (aggs > best_aggs) { best = r; best_aggs = aggs; }
    }
    int n = 0;
    for (int r = 0; best >= 0 && r < c->in->n_run; r++) {
        if (!agg_of(c, r) || pt_mode_index(c, r, "hifa4") < 1) continue;
        if (agg_compatible(c, best, r)) rs[n++] = r;
        else pt_missing(c, 2, "run %s differs from %s in more than its scales: left out of Table 2", c->in->run_dir[r],
                        c->in->run_dir[best]);
    }
    return n;
}

int pt_table2(struct pt_ctx *c, struct err *e) {
    (void)e;
    int rs[PT_MAX_IN], n = table2_runs(c, rs), rc = 0, has_ppl = 0;
    if (!n) { pt_missing(c, 2, "no run with hifa4 whose run.json records its scales' aggregator (scales_calibration)"); return 0; }
    const int first = rs[0];
    for (int i = 0; i < n; i++) has_ppl |= isfinite(ppl_of(c, rs[i], "hifa4"));
    const char *tasks[32];
    struct t2_cols cols = {tasks, pt_task_list(c, rs, n, order2, tasks, 32),
                           pt_paper_only(c, pt_model_name(c, first), "Qwen3-8B") != NULL, has_ppl};
    char title[512];
    snprintf(title, sizeof title, "Table 2: calibration aggregation (%s); delta_w = sample-weighted accuracy loss vs BF16 (pp)",
             pt_model_name(c, first));
    struct grid *g = pt_grid(c, 2, title, 2 + cols.nt + has_ppl);
    if (!g) return ERR_RANGE;
    rc |= grid_row(g) | grid_set(g, 0, "Strategy");
    for (int k = 0; k < cols.nt; k++) {
        const struct pt_task_name *tn = task_name(tasks[k]);
        rc |= grid_set(g, 1 + k, "%s", tn && tn->t2 ? tn->t2 : tasks[k]);
        if (tn && tn->t2) rc |= grid_set_ckey(g, 1 + k, tn->t2);
    }
    rc |= grid_set(g, 1 + cols.nt, "delta_w") | grid_set_ckey(g, 1 + cols.nt, "delta_w");
    if (has_ppl) rc |= grid_set(g, 2 + cols.nt, "PPL") | grid_set_ckey(g, 2 + cols.nt, "PPL");
    rc |= table2_row(c, g, rs[0], ref_of(c, rs[0]), "BF16", &cols);
    int rd = -1;
    for (int i = 0; i < n && rd < 0; i++) rd = pt_mode_index(c, rs[i], "direct") > 0 ? rs[i] : -1;
    if (rd >= 0) rc |= table2_row(c, g, rd, "direct", "Direct HIF4", &cols);
    static const char *const aggs[] = {"mean", "rms", "p99", "max"};
    for (int a = 0; a < 4; a++)
        for (int i = 0; i < n; i++)
            if (agg_of(c, rs[i]) && !strcmp(agg_of(c, rs[i]), aggs[a])) {
                rc |= table2_row(c, g, rs[i], "hifa4", agg_label(aggs[a]), &cols);
                break;
            }
    return rc;
}
