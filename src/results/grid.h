// grid.h: a table as a grid of text cells (row 0 = header), written as Markdown, CSV or a
// LaTeX booktabs table. Every report and paper table is built once as a grid, so its formats
// never disagree. Optional keys per row and column name the paper's printed row and column a
// cell corresponds to (paper_tables.c puts the paper's values beside ours through them).
#ifndef HIFA4_GRID_H
#define HIFA4_GRID_H

#include "base/common.h"
#include "results/results.h"

#define GRID_MAX_COLS 64

struct grid {
    char name[64];      // file stem (CSV, LaTeX)
    char title[512];
    char note[1024];    // text under the table (Markdown, LaTeX caption's second sentence), or ""
    int n_cols, n_rows, cap_rows;
    int n_left;         // leading text columns (left-aligned); the rest are numbers unless
    unsigned char text[GRID_MAX_COLS]; // text[c] = 1: a text column after them (left-aligned)
    char **cell;        // [n_rows][n_cols], row 0 = header
    char **rkey;        // [n_rows] paper row key, or NULL
    char *ckey[GRID_MAX_COLS]; // paper column key per column, or NULL
};

// n_cols <= GRID_MAX_COLS (ERR_RANGE otherwise; the grid is then empty and safe to free).
int grid_init(struct grid *g, const char *name, const char *title, int n_cols);
void grid_free(struct grid *g);
// Appends an empty row; the grid_set calls that follow fill it.
int grid_row(struct grid *g);
// Cell `col` of the last row. 0 or ERR_NOMEM.
int grid_set(struct grid *g, int col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
// Paper key of the last row / of column col (copied).
int grid_set_rkey(struct grid *g, const char *key);
int grid_set_ckey(struct grid *g, int col, const char *key);
// 1 when column c is text (left-aligned): c < n_left or text[c].
int grid_is_text(const struct grid *g, int c);
// Cell text or "" (never NULL).
const char *grid_get(const struct grid *g, int row, int col);

// "### title", the table, the note. A grid with a header only writes nothing.
int grid_md(struct results_buf *o, const struct grid *g);
// RFC 4180 CSV (header row first).
int grid_csv_text(struct results_buf *o, const struct grid *g);
// <dir>/<name>.csv
int grid_csv(const struct grid *g, const char *dir, struct err *e);
// A LaTeX table environment: \caption{title} (without a leading "Table N: ": LaTeX numbers
// its tables), \label{tab:name}, booktabs tabular (\toprule, \midrule,
// \bottomrule), text columns l, value columns r. Every cell escaped (latex_escape).
int grid_latex(struct results_buf *o, const struct grid *g);
// Appends s escaped for LaTeX text: \ & % $ # _ { } ~ ^ and the few non-ASCII signs the
// tables print (check mark, Delta, rho, alpha, >=, <=, ~) as commands.
int latex_escape(struct results_buf *o, const char *s);

#endif
