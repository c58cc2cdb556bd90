// pt_internal.h: what the table builders of paper_tables share (not a public interface).
#ifndef HIFA4_PT_INTERNAL_H
#define HIFA4_PT_INTERNAL_H

#include <cjson/cJSON.h>

#include "results/grid.h"
#include "results/paper.h"
#include "results/paper_tables.h"
#include "results/run_rec.h"

#define PT_MAX_IN 64
#define PT_MAX_GRIDS 48
// Tables beyond the paper's 1-10 are lettered: Table A (pt_sweep.c) is table number PT_TABLE_A
// inside, "A" in headings, the missing list and file names (tableA.csv).
#define PT_TABLE_A (PAPER_TABLES + 1)
#define PT_N_TABLES PT_TABLE_A

struct pt_in {
    int n_run, n_diag, n_trace, n_cost;
    const char *run_dir[PT_MAX_IN];
    struct run_rec *run[PT_MAX_IN];           // run.json (owned)
    cJSON *sum[PT_MAX_IN];                    // summary.json
    cJSON *diag[PT_MAX_IN], *trace[PT_MAX_IN], *cost[PT_MAX_IN];
    char skipped[2048];                       // inputs left out and why (Markdown list lines), or ""
    char joined[2048];                        // runs read as one (pt_join.c; Markdown list lines), or ""
};

// 1 when the identities (run_identity.h) of a and b differ only in modes, mode labels, the
// tasks one of them lacks and entries starting with a prefix of `also` (NULL-terminated, or
// NULL) - e.g. "scales sha256" for runs of one model at two Smooth-QK alphas (pt_join.c).
int pt_same_config(const struct run_rec *a, const struct run_rec *b, const char *const *also);

// Joins the input runs of one configuration split over several directories (rows or tasks in
// separate runs) into one run each (pt_join.c). ERR_NOMEM only.
int pt_join_runs(struct pt_in *in, struct err *e);

// The runs the table being built shows (indices into the inputs): pt_run_name labels them apart.
struct pt_shown {
    int r[PT_MAX_IN];
    int n;
};

struct pt_ctx {
    const struct pt_in *in;
    const struct pt_opts *o;
    const struct paper_values *pv;
    struct grid g[PT_MAX_GRIDS];
    int table[PT_MAX_GRIDS];                  // table number of g[i] (1-10 or PT_TABLE_A)
    int n_g;
    char missing[PT_N_TABLES + 1][768];       // why table t was not (fully) produced, or ""
    struct pt_shown shown;                    // the runs of the table being built
};

// ---- shared helpers (paper_tables.c) ----
const cJSON *pt_get(const cJSON *o, const char *k);
double pt_num(const cJSON *o, const char *k);
const char *pt_str(const cJSON *o, const char *k, const char *def);
// "3" or "A": table t as headings, the missing list and file names call it.
const char *pt_table_id(int t);
// A new grid for table `table` (file stem "table3", "table3-2", "tableA"; NULL when
// PT_MAX_GRIDS are in use: ERR_RANGE).
struct grid *pt_grid(struct pt_ctx *c, int table, const char *title, int n_cols);
// The paper model whose values go beside a row of model `name` in table `table`: the model
// itself when it is one of the paper's, else with --paper the option's model or `def`; NULL
// when no paper values are shown for it.
const char *pt_paper_model(const struct pt_ctx *c, const char *name, const char *def);
// The paper model of a table printed for one model only (Tables 2-4, 7-9): `only` when the
// model is it or with --paper, else NULL.
const char *pt_paper_only(const struct pt_ctx *c, const char *name, const char *only);
// Records why table t (or part of it) is missing and the command that produces its input.
void pt_missing(struct pt_ctx *c, int t, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
// ".714" (digits after the point; no leading 0 below 1), "-" when not finite.
void pt_frac(char *b, size_t n, double v, int digits);
// The run's name for its model (run.json model.name, else the directory).
const char *pt_model_name(const struct pt_ctx *c, int r);
// The model name as a table shows it: with "[limit 70, tile 128]" - run r's value of every
// field of run_label.h that varies among the runs of this model name the table shows - when
// they differ (two rows never carry the same label), else the name alone.
// The table being built sets c->shown first.
void pt_run_name(const struct pt_ctx *c, int r, char *out, size_t n);
// The multiple-choice tasks of the runs rs[0..nr) (no ppl, no niah) in `order` (NULL-terminated),
// then the others in first-seen order; how many, at most max (pt_runs.c).
int pt_task_list(const struct pt_ctx *c, const int *rs, int nr, const char *const *order, const char **out, int max);
// summary.json tasks.<task>.vs_reference.<mode> of run r, or NULL.
const cJSON *pt_vs(const struct pt_ctx *c, int r, const char *task, const char *mode);
// acc of mode in task of run r, acc_norm for a task that reports only that (BBH); NAN if neither.
double pt_acc(const struct pt_ctx *c, int r, const char *task, const char *mode);
// Cell col = the count v.key (flips, hurts, helps of a vs_reference object), "-" when absent.
int pt_count_cell(struct grid *g, int col, const cJSON *v, const char *key);
// The paper gate's own Smooth-QK alpha: bypass 0, mild 0.25, strong 0.5; `other` for NULL or
// another name.
double pt_gate_alpha(const char *gate, double other);
// Index of mode `mode` in summary.json's "modes" of run r, or -1.
int pt_mode_index(const struct pt_ctx *c, int r, const char *mode);
// The task object of run r (summary.json tasks.<t>), or NULL.
const cJSON *pt_task(const struct pt_ctx *c, int r, const char *task);

// ---- the replicas' probabilities beside the counts (pt_noise.c) ----
enum pt_prob { PT_PROB_FLIP = 0, PT_PROB_HURT = 1, PT_PROB_HELP = 2 };
// K of run r (summary.json noise.replicas.k; 0 for a run without --replicas).
int pt_replicas(const struct pt_ctx *c, int r);
// K shared by the runs of c->shown that have replicas: 0 when none has, -1 when they differ.
int pt_shown_replicas(const struct pt_ctx *c);
// "33.33% [16.67, 50.00]": mode's mean flip (hurt, help) probability over task's items in run r
// with its 95% bootstrap interval (summary.json tasks.<task>.noise); "-" without replicas.
void pt_prob_cell(char *b, size_t n, const struct pt_ctx *c, int r, const char *task, const char *mode, enum pt_prob what);
// Appends to g's note what the P(x) columns are (k = pt_shown_replicas). ERR_RANGE if it does not fit.
int pt_prob_note(struct grid *g, int k);

// ---- the tables ----
int pt_table1(struct pt_ctx *c);
int pt_table8(struct pt_ctx *c, struct err *e);
int pt_table4(struct pt_ctx *c);
int pt_table10(struct pt_ctx *c);
int pt_table2(struct pt_ctx *c, struct err *e);
int pt_table3(struct pt_ctx *c);
int pt_table5(struct pt_ctx *c);
int pt_table6(struct pt_ctx *c);
int pt_table7_9(struct pt_ctx *c);
int pt_table_sweep(struct pt_ctx *c);

#endif
