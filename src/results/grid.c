// grid.c: text-cell tables and their Markdown, CSV and LaTeX forms (see grid.h).
#include "results/grid.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int grid_init(struct grid *g, const char *name, const char *title, int n_cols) {
    memset(g, 0, sizeof *g);
    if (n_cols < 1 || n_cols > GRID_MAX_COLS) return ERR_RANGE;
    snprintf(g->name, sizeof g->name, "%s", name);
    snprintf(g->title, sizeof g->title, "%s", title);
    g->n_cols = n_cols;
    g->n_left = 1;
    return 0;
}

void grid_free(struct grid *g) {
    for (int i = 0; i < g->n_rows * g->n_cols; i++) free(g->cell[i]);
    for (int i = 0; g->rkey && i < g->n_rows; i++) free(g->rkey[i]);
    for (int c = 0; c < GRID_MAX_COLS; c++) free(g->ckey[c]);
    free(g->cell);
    free(g->rkey);
    memset(g, 0, sizeof *g);
}

int grid_row(struct grid *g) {
    if (g->n_rows == g->cap_rows) {
        int nc = g->cap_rows ? g->cap_rows * 2 : 16;
        char **t = realloc(g->cell, sizeof *t * (size_t)nc * (size_t)g->n_cols);
        if (!t) return ERR_NOMEM;
        g->cell = t;
        char **k = realloc(g->rkey, sizeof *k * (size_t)nc);
        if (!k) return ERR_NOMEM;
        g->rkey = k;
        g->cap_rows = nc;
    }
    for (int c = 0; c < g->n_cols; c++) g->cell[g->n_rows * g->n_cols + c] = NULL;
    g->rkey[g->n_rows] = NULL;
    g->n_rows++;
    return 0;
}

int grid_set(struct grid *g, int col, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (col < 0 || col >= g->n_cols || g->n_rows < 1) return ERR_RANGE;
    char **c = &g->cell[(g->n_rows - 1) * g->n_cols + col];
    free(*c);
    *c = str_dup(buf);
    return *c ? 0 : ERR_NOMEM;
}

int grid_set_rkey(struct grid *g, const char *key) {
    if (g->n_rows < 1) return ERR_RANGE;
    free(g->rkey[g->n_rows - 1]);
    g->rkey[g->n_rows - 1] = str_dup(key);
    return g->rkey[g->n_rows - 1] ? 0 : ERR_NOMEM;
}

int grid_set_ckey(struct grid *g, int col, const char *key) {
    if (col < 0 || col >= g->n_cols) return ERR_RANGE;
    free(g->ckey[col]);
    g->ckey[col] = str_dup(key);
    return g->ckey[col] ? 0 : ERR_NOMEM;
}

int grid_is_text(const struct grid *g, int c) { return c < g->n_left || (c < GRID_MAX_COLS && g->text[c]); }

const char *grid_get(const struct grid *g, int row, int col) {
    if (row < 0 || row >= g->n_rows || col < 0 || col >= g->n_cols) return "";
    const char *s = g->cell[row * g->n_cols + col];
    return s ? s : "";
}

int grid_md(struct results_buf *o, const struct grid *g) {
    if (g->n_rows <= 1) return 0; // header only (e.g. accuracy in a perplexity-only run): no empty table
    int rc = results_buf_printf(o, "### %s\n\n", g->title);
    for (int r = 0; r < g->n_rows && !rc; r++) {
        rc |= results_buf_put(o, "|", 1);
        for (int c = 0; c < g->n_cols; c++) rc |= results_buf_printf(o, " %s |", grid_get(g, r, c));
        rc |= results_buf_put(o, "\n", 1);
        if (r == 0) {
            rc |= results_buf_put(o, "|", 1);
            for (int c = 0; c < g->n_cols; c++) rc |= results_buf_put(o, grid_is_text(g, c) ? "---|" : "---:|", grid_is_text(g, c) ? 4 : 5);
            rc |= results_buf_put(o, "\n", 1);
        }
    }
    if (g->note[0]) rc |= results_buf_printf(o, "\n%s\n", g->note);
    return rc | results_buf_put(o, "\n", 1);
}

static int csv_cell(struct results_buf *o, const char *s) {
    if (!strpbrk(s, ",\"\n\r")) return results_buf_put(o, s, strlen(s));
    int rc = results_buf_put(o, "\"", 1);
    for (const char *p = s; *p; p++) rc |= *p == '"' ? results_buf_put(o, "\"\"", 2) : results_buf_put(o, p, 1);
    return rc | results_buf_put(o, "\"", 1);
}

int grid_csv_text(struct results_buf *o, const struct grid *g) {
    int rc = 0;
    for (int r = 0; r < g->n_rows; r++) {
        for (int c = 0; c < g->n_cols; c++) {
            if (c) rc |= results_buf_put(o, ",", 1);
            rc |= csv_cell(o, grid_get(g, r, c));
        }
        rc |= results_buf_put(o, "\n", 1);
    }
    return rc;
}

int grid_csv(const struct grid *g, const char *dir, struct err *e) {
    struct results_buf o = {0};
    if (grid_csv_text(&o, g)) { free(o.p); return err_set(e, ERR_NOMEM, "report: out of memory"); }
    char path[4096], file[128];
    snprintf(file, sizeof file, "%s.csv", g->name);
    int rc = path_join(path, sizeof path, dir, file, e);
    if (!rc) rc = file_write_atomic(path, o.p ? o.p : "", o.n, e);
    free(o.p);
    return rc;
}

// UTF-8 signs the tables print, and their LaTeX
static const char *const latex_utf8[][2] = {
    {"\xe2\x9c\x93", "\\checkmark{}"}, {"\xce\x94", "$\\Delta$"}, {"\xcf\x81", "$\\rho$"}, {"\xce\xb1", "$\\alpha$"},
    {"\xe2\x89\xa5", "$\\geq$"},       {"\xe2\x89\xa4", "$\\leq$"}, {"\xc3\x97", "$\\times$"},
};

int latex_escape(struct results_buf *o, const char *s) {
    int rc = 0;
    for (const char *p = s; *p && !rc; p++) {
        const char *rep = NULL;
        switch (*p) {
        case '\\': rep = "\\textbackslash{}"; break;
        case '~': rep = "\\textasciitilde{}"; break;
        case '^': rep = "\\textasciicircum{}"; break;
        case '<': rep = "\\textless{}"; break;
        case '>': rep = "\\textgreater{}"; break;
        case '|': rep = "\\textbar{}"; break;
        case '&': case '%': case '$': case '#': case '_': case '{': case '}': {
            char b[3] = {'\\', *p, 0};
            rc = results_buf_put(o, b, 2);
            continue;
        }
        default: break;
        }
        if (!rep && (unsigned char)*p >= 0x80) {
            for (size_t k = 0; k < sizeof latex_utf8 / sizeof latex_utf8[0]; k++) {
                size_t n = strlen(latex_utf8[k][0]);
                if (!strncmp(p, latex_utf8[k][0], n)) { rep = latex_utf8[k][1]; p += n - 1; break; }
            }
        }
        rc = rep ? results_buf_put(o, rep, strlen(rep)) : results_buf_put(o, p, 1);
    }
    return rc;
}

int grid_latex(struct results_buf *o, const struct grid *g) {
    int rc = results_buf_printf(o, "%% %s: generated by hifa4-eval tables\n\\begin{table}[t]\n\\centering\n\\caption{", g->name);
    const char *t = g->title; // "Table 7: ..." - LaTeX numbers its tables itself
    if (!strncmp(t, "Table ", 6) && t[6] >= '0' && t[6] <= '9') {
        const char *colon = strstr(t, ": ");
        if (colon) t = colon + 2;
    }
    rc |= latex_escape(o, t);
    if (g->note[0]) { rc |= results_buf_put(o, " ", 1); rc |= latex_escape(o, g->note); }
    rc |= results_buf_printf(o, "}\n\\label{tab:%s}\n\\begin{tabular}{", g->name);
    for (int c = 0; c < g->n_cols; c++) rc |= results_buf_put(o, grid_is_text(g, c) ? "l" : "r", 1);
    rc |= results_buf_put(o, "}\n\\toprule\n", 11);
    for (int r = 0; r < g->n_rows && !rc; r++) {
        for (int c = 0; c < g->n_cols; c++) {
            if (c) rc |= results_buf_put(o, " & ", 3);
            rc |= latex_escape(o, grid_get(g, r, c));
        }
        rc |= results_buf_put(o, " \\\\\n", 4);
        if (r == 0) rc |= results_buf_put(o, "\\midrule\n", 9);
    }
    return rc | results_buf_put(o, "\\bottomrule\n\\end{tabular}\n\\end{table}\n", 38);
}
