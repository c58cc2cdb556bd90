// pt_sweep.c: Table A of `tables`, not one of the paper's - the Smooth-QK alpha sweep of one
// model: row E (hifa4) at the alpha of each run's scales file (run.json scales_calibration),
// and alpha 0 = row D (direct+qmean+preorder, Smooth-QK bypassed). The runs of one sweep differ
// only in their scales file, modes and the tasks one of them lacks (pt_same_config), and their
// bf16 results agree. Per task: accuracy, flips vs bf16 with the Wilson 95% interval, Quant
// Hurts / Helps and the token KL, all read from summary.json (vs_reference), none recomputed.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "results/pt_internal.h"
#include "results/run_identity.h"

#define SW_MODE_D "direct+qmean+preorder"
#define SW_MAX_ROWS (2 * PT_MAX_IN)
#define SW_LEFT 4      // Task, alpha, Row, Scales
#define SW_COLS 6      // Acc, Flips, Flip 95% CI, Hu, He, KL
#define SW_MAX_TASKS 64

struct sw_row {
    int r;              // run index
    const char *mode;   // SW_MODE_D or "hifa4"
    double alpha;
    char alpha_txt[32]; // as run.json records it ("0.25"); "0" for row D; "per layer" (sorted last)
    char scales[256];   // where the alpha comes from
};

struct sw_group {
    int member[PT_MAX_IN], n; // runs of one model that differ in their scales (and modes, tasks)
    struct sw_row row[SW_MAX_ROWS];
    int n_rows, n_alphas;     // rows sorted by alpha; distinct alphas among them
};

static int is_sweep_run(const struct pt_ctx *c, int r) {
    return pt_mode_index(c, r, SW_MODE_D) > 0 || pt_mode_index(c, r, "hifa4") > 0;
}

// Where row E's alpha comes from, as run.json's scales_calibration records it: the measured
// gate's choice, the paper gate's own alpha (bypass 0, mild 0.25, strong 0.5), or an alpha that
// `calibrate --alpha` forced over the gate's decision.
static void scales_label(const struct run_rec *run, double alpha, char *out, size_t n) {
    const char *gate = run->calibration.gate, *rule = run->calibration.gate_rule;
    if (rule && !strcmp(rule, "measured")) { snprintf(out, n, "gate (measured): %s", gate ? gate : "?"); return; }
    const double own = pt_gate_alpha(gate, NAN);
    if (alpha == own) snprintf(out, n, "gate (paper): %s", gate);
    else snprintf(out, n, "forced (gate: %s)", gate ? gate : "?");
}

// Adds a row unless one of the same mode, alpha and scales label is there (the first run of equals).
static void add_row(struct sw_group *g, const struct sw_row *w) {
    for (int i = 0; i < g->n_rows; i++)
        if (!strcmp(g->row[i].mode, w->mode) && g->row[i].alpha == w->alpha && !strcmp(g->row[i].scales, w->scales)) return;
    if (g->n_rows < SW_MAX_ROWS) g->row[g->n_rows++] = *w;
}

// Run r's rows D and E. A hifa4 whose run.json records no readable alpha is no row: said in the missing list.
static void add_run_rows(struct pt_ctx *c, struct sw_group *g, int r) {
    struct sw_row w = {.r = r, .mode = SW_MODE_D, .alpha = 0};
    if (pt_mode_index(c, r, SW_MODE_D) > 0) {
        snprintf(w.alpha_txt, sizeof w.alpha_txt, "0");
        snprintf(w.scales, sizeof w.scales, "Smooth-QK bypassed");
        add_row(g, &w);
    }
    if (pt_mode_index(c, r, "hifa4") < 1) return;
    const char *a = c->in->run[r]->calibration.alpha;
    char *end = NULL;
    w.mode = "hifa4";
    w.alpha = a ? strtod(a, &end) : NAN;
    if (!a || end == a || *end || !isfinite(w.alpha)) {
        pt_missing(c, PT_TABLE_A, "run `%s`: mode hifa4 without a readable scales alpha (run.json scales_calibration.alpha "
                   "%s): not a row", c->in->run_dir[r], a ? a : "absent");
        return;
    }
    num_shortest(w.alpha_txt, sizeof w.alpha_txt, w.alpha); // scales files write %.17g: 0.1 is 0.10000000000000001
    scales_label(c->in->run[r], w.alpha, w.scales, sizeof w.scales);
    const char *layers = c->in->run[r]->calibration.layer_alphas;
    if (layers) { // a per-layer gate: the file's alpha is not every layer's
        size_t u = strlen(w.scales);
        snprintf(w.scales + u, sizeof w.scales - u, ", model %s; layers %s", w.alpha_txt, layers);
        snprintf(w.alpha_txt, sizeof w.alpha_txt, "per layer");
        w.alpha = INFINITY;
    }
    add_row(g, &w);
}

static int cmp_row(const void *pa, const void *pb) {
    const struct sw_row *a = pa, *b = pb;
    if (a->alpha != b->alpha) return a->alpha < b->alpha ? -1 : 1;
    int m = strcmp(a->mode, b->mode); // row D ("direct...") before row E ("hifa4") at one alpha
    return m ? m : strcmp(a->scales, b->scales);
}

// Run r0's sweep among the runs not taken yet: each member is checked against every other,
// since two members may share a task the first lacks. Then its rows, sorted.
static void collect(struct pt_ctx *c, int r0, int *taken, struct sw_group *g) {
    static const char *const other_scales[] = {"scales sha256", NULL};
    g->n = g->n_rows = g->n_alphas = 0;
    for (int r = r0; r < c->in->n_run; r++) {
        if (taken[r] || !is_sweep_run(c, r)) continue;
        int ok = 1;
        for (int k = 0; k < g->n && ok; k++) ok = pt_same_config(c->in->run[g->member[k]], c->in->run[r], other_scales);
        if (!ok) continue;
        g->member[g->n++] = r;
        taken[r] = 1;
    }
    for (int k = 0; k < g->n; k++) add_run_rows(c, g, g->member[k]);
    qsort(g->row, (size_t)g->n_rows, sizeof *g->row, cmp_row);
    for (int i = 0; i < g->n_rows; i++) g->n_alphas += !i || g->row[i].alpha != g->row[i - 1].alpha;
}

// The first of items, correct, acc, correct_norm, acc_norm in which bf16 of task ta (run a) and
// tb differ, or NULL; u, v its values.
static const char *ref_differs(const cJSON *ta, const cJSON *tb, double *u, double *v) {
    static const char *const f[] = {"n", "correct", "acc", "correct_norm", "acc_norm"};
    for (int k = 0; k < 5; k++) {
        const cJSON *xa = k ? pt_get(pt_get(ta, "modes"), "bf16") : ta, *xb = k ? pt_get(pt_get(tb, "modes"), "bf16") : tb;
        *u = pt_num(xa, f[k]);
        *v = pt_num(xb, f[k]);
        if ((isfinite(*u) || isfinite(*v)) && *u != *v) return f[k];
    }
    return NULL;
}

// 1 when the bf16 results of runs a and b agree on every task both hold; else 0 and `why`
// names the first difference.
static int ref_agrees(const struct pt_ctx *c, int a, int b, char *why, size_t n) {
    const cJSON *tb;
    cJSON_ArrayForEach(tb, pt_get(c->in->sum[b], "tasks")) {
        const cJSON *ta = pt_task(c, a, tb->string);
        double u, v;
        const char *f = ta ? ref_differs(ta, tb, &u, &v) : NULL;
        if (!f) continue;
        snprintf(why, n, "runs `%s` and `%s` (one model, other scales): task %s, bf16 %s %.6g vs %.6g - their sweep is "
                 "left out", c->in->run_dir[a], c->in->run_dir[b], tb->string, f, u, v);
        return 0;
    }
    return 1;
}

// 1 when runs a and b hold a task with the same bf16 results (items and all): meant as one evaluation.
static int ref_shared(const struct pt_ctx *c, int a, int b) {
    const cJSON *tb;
    cJSON_ArrayForEach(tb, pt_get(c->in->sum[b], "tasks")) {
        const cJSON *ta = pt_task(c, a, tb->string);
        double u, v;
        if (ta && !ref_differs(ta, tb, &u, &v)) return 1;
    }
    return 0;
}

// ---- the table: one block of rows per task (alphas in order), so that any number of tasks fits a page ----
static const char *const sw_head[SW_LEFT + SW_COLS] = {"Task", "alpha", "Row", "Scales", "Acc", "Flips", "Flip 95% CI", "Hu", "He", "KL"};

// Row w of task's block (first: the block's first row, which names the task and its items).
static int sweep_row(const struct pt_ctx *c, struct grid *gr, const struct sw_row *w, const char *task, int first) {
    const cJSON *v = pt_vs(c, w->r, task, w->mode);
    int rc = grid_row(gr);
    if (first) rc |= grid_set(gr, 0, "%s", task);
    rc |= grid_set(gr, 1, "%s", w->alpha_txt) | grid_set(gr, 3, "%s", w->scales);
    rc |= grid_set(gr, 2, "%s", strcmp(w->mode, SW_MODE_D) ? "E. Both (HiFA4)" : "D. +P-Reordering");
    if (!v) {
        for (int q = 0; q < SW_COLS; q++) rc |= grid_set(gr, SW_LEFT + q, "-");
        return rc;
    }
    char a[32];
    double lo = pt_num(v, "pfr_lo"), hi = pt_num(v, "pfr_hi"), kl = pt_num(pt_get(v, "token"), "kl_mean");
    pt_frac(a, sizeof a, pt_acc(c, w->r, task, w->mode), 3);
    rc |= grid_set(gr, SW_LEFT, "%s", a) | pt_count_cell(gr, SW_LEFT + 1, v, "flips");
    rc |= grid_set(gr, SW_LEFT + 2, isfinite(lo) && isfinite(hi) ? "%.1f-%.1f%%" : "-", 100 * lo, 100 * hi);
    rc |= pt_count_cell(gr, SW_LEFT + 3, v, "hurts") | pt_count_cell(gr, SW_LEFT + 4, v, "helps");
    rc |= grid_set(gr, SW_LEFT + 5, isfinite(kl) ? "%.3g" : "-", kl);
    return rc;
}

// The note: what the columns are, bf16's accuracy per task, and the lowest-KL alpha per task.
static void sweep_note(const struct pt_ctx *c, struct grid *gr, const struct sw_group *g, const char **tasks, int nt) {
    size_t u = (size_t)snprintf(gr->note, sizeof gr->note, "Acc = accuracy (acc_norm for a task without acc); Flips = "
                                "items whose prediction differs from BF16's, with the Wilson 95%% interval of the flip rate; "
                                "Hu / He = Quant Hurts / Helps; KL = mean token KL against BF16 over the scored positions "
                                "(summary.json token.kl_mean). BF16 accuracy:");
    for (int k = 0; k < nt && u < sizeof gr->note; k++) {
        int m = 0;
        while (m + 1 < g->n && !pt_task(c, g->member[m], tasks[k])) m++;
        const cJSON *t = pt_task(c, g->member[m], tasks[k]);
        char a[32];
        pt_frac(a, sizeof a, pt_acc(c, g->member[m], tasks[k], "bf16"), 3);
        u += (size_t)snprintf(gr->note + u, sizeof gr->note - u, "%s %s %s (%.0f items)", k ? "," : "", tasks[k], a, pt_num(t, "n"));
    }
    for (int k = 0; k < nt && u < sizeof gr->note; k++) {
        int best = -1;
        for (int i = 0; i < g->n_rows; i++) {
            double kl = pt_num(pt_get(pt_vs(c, g->row[i].r, tasks[k], g->row[i].mode), "token"), "kl_mean");
            if (isfinite(kl) && (best < 0 || kl < pt_num(pt_get(pt_vs(c, g->row[best].r, tasks[k], g->row[best].mode), "token"), "kl_mean")))
                best = i;
        }
        if (best >= 0)
            u += (size_t)snprintf(gr->note + u, sizeof gr->note - u, "%s %s at alpha %s%s", k ? "," : ". Lowest KL:", tasks[k],
                                  g->row[best].alpha_txt, strcmp(g->row[best].mode, SW_MODE_D) ? "" : " (row D)");
    }
    if (u < sizeof gr->note) snprintf(gr->note + u, sizeof gr->note - u, ".");
}

// pt_run_name without the scales' fingerprint ("q0.5b [limit 70, scales 436d96fc]" -> "q0.5b
// [limit 70]"): every row of a sweep has its own scales file, so it tells no sweep apart.
static void sweep_name(const struct pt_ctx *c, int r, char *out, size_t n) {
    pt_run_name(c, r, out, n);
    char *b = strrchr(out, '['), *s = b ? strstr(b, "scales ") : NULL, *e = s;
    if (!s || (s[-1] != '[' && s[-1] != ' ')) return;
    while (*e && *e != ',' && *e != ']') e++;
    if (*e == ',') e += 2;         // the ", " after it
    else if (s[-1] == ' ') s -= 2; // the last: the ", " before it
    memmove(s, e, strlen(e) + 1);
    if (b[1] == ']' && b > out) memmove(b - 1, b + 2, strlen(b + 2) + 1); // " []"
}

static int sweep_table(struct pt_ctx *c, const struct sw_group *g) {
    const char *tasks[SW_MAX_TASKS];
    int nt = pt_task_list(c, g->member, g->n, (const char *const[]){NULL}, tasks, SW_MAX_TASKS), rc = 0;
    char title[1024], name[768];
    sweep_name(c, g->member[0], name, sizeof name);
    snprintf(title, sizeof title, "Table A: Smooth-QK alpha sweep, %s (row E at each alpha, Q-Mean %s form; alpha 0 = "
             "row D, Smooth-QK bypassed)", name, run_rec_qmean(c->in->run[g->member[0]]));
    struct grid *gr = pt_grid(c, PT_TABLE_A, title, SW_LEFT + SW_COLS);
    if (!gr) return ERR_RANGE;
    gr->n_left = SW_LEFT;
    sweep_note(c, gr, g, tasks, nt);
    rc |= grid_row(gr);
    for (int k = 0; k < SW_LEFT + SW_COLS; k++) rc |= grid_set(gr, k, "%s", sw_head[k]);
    for (int k = 0; k < nt; k++)
        for (int i = 0; i < g->n_rows; i++) rc |= sweep_row(c, gr, &g->row[i], tasks[k], i == 0);
    return rc;
}

// Sweeps of one model's weights (model.hash) with the same bf16 results on a task, kept apart
// by another difference, are named with it in the missing list: a user who meant them as one
// sweep learns why they are not.
static void note_apart(struct pt_ctx *c, const struct sw_group *gs, int ng) {
    static const char *const skip[] = {"modes", "mode ", "scales sha256", NULL};
    for (int i = 0; i < ng; i++)
        for (int j = i + 1; j < ng; j++) {
            const struct run_rec *a = c->in->run[gs[i].member[0]], *b = c->in->run[gs[j].member[0]];
            if (!a->model.hash || !b->model.hash || strcmp(a->model.hash, b->model.hash) ||
                !ref_shared(c, gs[i].member[0], gs[j].member[0]))
                continue;
            char d[600];
            if (run_json_diff(d, sizeof d, a->json, b->json, 0, skip) <= 0) continue;
            pt_missing(c, PT_TABLE_A, "runs `%s` and `%s` (the same weights) are not one sweep: %s%s", c->in->run_dir[gs[i].member[0]],
                       c->in->run_dir[gs[j].member[0]], a->schema != b->schema ? "run.json schema 1 vs 2 (a run made before the "
                       "schema-2 fields is not matched entry by entry); " : "", d);
        }
}

int pt_table_sweep(struct pt_ctx *c) {
    struct sw_group *gs = calloc(PT_MAX_IN, sizeof *gs);
    int taken[PT_MAX_IN] = {0}, ng = 0, rc = 0, made = 0, refused = 0;
    if (!gs) return ERR_NOMEM;
    for (int r = 0; r < c->in->n_run; r++) // every sweep first: pt_run_name labels them apart
        if (!taken[r] && is_sweep_run(c, r)) collect(c, r, taken, &gs[ng++]);
    c->shown.n = 0;
    for (int i = 0; i < ng; i++) {
        char why[640];
        int ok = gs[i].n_alphas >= 2;
        for (int k = 1; k < gs[i].n && ok; k++) ok = ref_agrees(c, gs[i].member[0], gs[i].member[k], why, sizeof why);
        if (gs[i].n_alphas >= 2 && !ok) { pt_missing(c, PT_TABLE_A, "%s", why); refused++; }
        if (ok) c->shown.r[c->shown.n++] = gs[i].member[0];
        else gs[i].n_rows = 0;
    }
    note_apart(c, gs, ng);
    for (int i = 0; i < ng && !rc; i++)
        if (gs[i].n_rows) { rc = sweep_table(c, &gs[i]); made++; }
    if (!made && !refused)
        pt_missing(c, PT_TABLE_A, "no model with runs at two or more Smooth-QK alphas (mode hifa4 at its scales' recorded "
                   "alpha; direct+qmean+preorder = alpha 0)");
    free(gs);
    return rc;
}
