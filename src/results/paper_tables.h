// paper_tables.h: `hifa4-eval tables INPUT...` - the HiFA4 paper's Tables 1-10 in the paper's
// own layout (row and column order, number formats, check marks, gate actions) from what the
// other commands leave behind: run directories (run.json + summary.json), diagnose outputs
// (diagnose.json), trace outputs (trace.json) and `cost --json` files. Never runs a model.
// A table its inputs cannot fill is listed with the command that would produce them. With the
// paper's values (configs/paper/) beside ours and their difference when a model is one of the
// paper's, or with --paper. Beyond the paper's ten: Table A, the Smooth-QK alpha sweep (pt_sweep.c).
#ifndef HIFA4_PAPER_TABLES_H
#define HIFA4_PAPER_TABLES_H

#include "base/common.h"

enum pt_beside { PT_BESIDE_AUTO = 0, PT_BESIDE_ALWAYS = 1 };

struct pt_opts {
    int beside;               // enum pt_beside: AUTO = only for the paper's models
    const char *paper_model;  // Tables 1, 5, 6 with --paper: the paper's row to compare with
                              // (e.g. "LLaMA3.1-8B"); NULL = each table's first model
    const char *layer_groups; // Table 8 rows, e.g. "0,1-4,5-35"; NULL = the rho_K layer alone, then ranges
    const char *paper_dir;    // NULL = configs/paper (paper_load_default)
};
void pt_opts_default(struct pt_opts *o);

struct pt_result {
    char *md;                 // every table and the missing list, Markdown (malloc'd)
    int n_tables;             // tables produced
};

// Reads the inputs, builds every table they fill. With csv_dir / latex_dir non-NULL also writes
// tableN.csv / tableN.tex (tableA.*) (one booktabs table environment per file) there. Errors name the
// input and field: an input of no known kind, an incomplete run (with its --resume command),
// a Table 2 set of runs over different models.
int pt_render(const char *const *inputs, int n, const struct pt_opts *o, const char *csv_dir, const char *latex_dir,
              struct pt_result *out, struct err *e);

#endif
