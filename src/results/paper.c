// paper.c: the paper's printed values (see paper.h).
#include "results/paper.h"

#include <ctype.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/paths.h"

void paper_free(struct paper_values *p) {
    for (int i = 0; i < p->n; i++) { free(p->cell[i].row); free(p->cell[i].col); free(p->cell[i].value); }
    free(p->cell);
    memset(p, 0, sizeof *p);
}

// Splits one CSV line (RFC 4180 quotes) into at most max fields, unquoted in place.
static int csv_fields(char *line, char **f, int max) {
    int n = 0;
    char *p = line;
    while (n < max) {
        char *w = p;
        f[n++] = w;
        if (*p == '"') {
            p++;
            for (;;) {
                if (!*p) return -1; // unterminated quote
                if (*p == '"' && p[1] == '"') { *w++ = '"'; p += 2; continue; }
                if (*p == '"') { p++; break; }
                *w++ = *p++;
            }
            if (*p && *p != ',') return -1;
        } else {
            while (*p && *p != ',') *w++ = *p++;
        }
        int more = *p == ',';
        if (*p) p++;
        *w = 0;
        if (!more) return n;
    }
    return -1; // more fields than max
}

static int add_cell(struct paper_values *p, int table, char **f) {
    struct paper_cell *t = realloc(p->cell, sizeof *t * (size_t)(p->n + 1));
    if (!t) return ERR_NOMEM;
    p->cell = t;
    struct paper_cell *c = &p->cell[p->n];
    c->table = table;
    c->row = str_dup(f[1]);
    c->col = str_dup(f[2]);
    c->value = str_dup(f[3]);
    if (!c->row || !c->col || !c->value) { free(c->row); free(c->col); free(c->value); return ERR_NOMEM; }
    p->n++;
    return 0;
}

static int load_table(struct paper_values *p, const char *path, int table, struct err *e) {
    size_t len;
    char *buf = NULL;
    int rc = file_read_all(path, &buf, &len, e);
    if (rc) return rc;
    int line = 0;
    for (char *s = buf, *nl; s && *s && !rc; s = nl ? nl + 1 : NULL) {
        nl = strchr(s, '\n');
        if (nl) *nl = 0;
        line++;
        if (line == 1) {
            if (strcmp(s, "table,row,column,value"))
                rc = err_set(e, ERR_FORMAT, "%s:1: header '%s': expected 'table,row,column,value'", path, s);
            continue;
        }
        char *f[4];
        if (csv_fields(s, f, 4) != 4) { rc = err_set(e, ERR_FORMAT, "%s:%d: expected 4 fields: table,row,column,value", path, line); break; }
        char *end;
        long t = strtol(f[0], &end, 10);
        if (*end || t != table) rc = err_set(e, ERR_FORMAT, "%s:%d: field 'table' '%s': expected %d", path, line, f[0], table);
        else if (!*f[3]) rc = err_set(e, ERR_FORMAT, "%s:%d: field 'value' is empty (the paper's empty cell is '-')", path, line);
        else if ((rc = add_cell(p, table, f))) rc = err_set(e, ERR_NOMEM, "%s: out of memory", path);
    }
    free(buf);
    return rc;
}

int paper_load(struct paper_values *p, const char *dir, struct err *e) {
    memset(p, 0, sizeof *p);
    for (int t = 1; t <= PAPER_TABLES; t++) {
        char path[4096], file[32];
        snprintf(file, sizeof file, "table%d.csv", t);
        int rc = path_join(path, sizeof path, dir, file, e);
        if (!rc && !file_exists(path)) continue;
        if (!rc) rc = load_table(p, path, t, e);
        if (rc) { paper_free(p); return rc; }
    }
    return 0;
}

int paper_load_default(struct paper_values *p, struct err *e) {
    char home[4096], dir[4200];
    if (file_exists("configs/paper/table1.csv")) return paper_load(p, "configs/paper", e);
    struct err ignored = {0};
    if (paths_home(home, sizeof home, &ignored) == 0) {
        snprintf(dir, sizeof dir, "%s/configs/paper", home);
        if (file_exists(dir)) return paper_load(p, dir, e);
    }
    memset(p, 0, sizeof *p); // no values installed: no paper columns
    return 0;
}

const char *paper_get(const struct paper_values *p, int table, const char *row, const char *col) {
    for (int i = 0; p && i < p->n; i++) {
        const struct paper_cell *c = &p->cell[i];
        if (c->table == table && !strcmp(c->col, col) && !fnmatch(row, c->row, 0)) return c->value;
    }
    return NULL;
}

static void squash(char *out, size_t n, const char *s) {
    size_t k = 0;
    for (; *s && k + 1 < n; s++)
        if (isalnum((unsigned char)*s)) out[k++] = (char)tolower((unsigned char)*s);
    out[k] = 0;
}

const char *paper_model_of(const char *name) {
    static const char *const models[][3] = {
        {"Qwen3-8B", "qwen38b", NULL},           {"Gemma2-9B", "gemma29b", NULL}, {"LLaMA3.1-8B", "llama318b", NULL},
        {"Mistral-7B", "mistral7b", NULL},       {"Phi-4B", "phi4mini", "phi4b"},
    };
    char s[256];
    if (!name) return NULL;
    squash(s, sizeof s, name);
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++)
        for (int k = 1; k < 3 && models[i][k]; k++)
            if (strstr(s, models[i][k])) return models[i][0];
    return NULL;
}

int paper_number(const char *s, double *v, int *unit, int *decimals) {
    const char *p = s;
    if (*p == '~') p++;
    const char *num = p;
    if (*p == '+' || *p == '-') p++;
    if (!isdigit((unsigned char)*p) && !(*p == '.' && isdigit((unsigned char)p[1]))) return 0;
    while (isdigit((unsigned char)*p)) p++;
    int dec = 0;
    if (*p == '.') for (p++; isdigit((unsigned char)*p); p++) dec++;
    char *end;
    double x = strtod(num, &end);
    if (end != p) return 0;
    int u;
    if (!*p) u = 0;
    else if (!strcmp(p, "%")) u = 1;
    else if (p[0] == '%' && p[1] == '(') {
        const char *q = p + 2;
        if (!isdigit((unsigned char)*q)) return 0;
        while (isdigit((unsigned char)*q)) q++;
        if (strcmp(q, ")")) return 0;
        u = 1;
    } else if (!strcmp(p, " pp") || !strcmp(p, "pp")) u = 2;
    else if (!strcmp(p, "x")) u = 3;
    else return 0;
    *v = x;
    *unit = u;
    *decimals = dec;
    return 1;
}

void paper_diff(char *out, size_t n, const char *ours, const char *paper) {
    double a, b;
    int ua, ub, da, db;
    out[0] = 0;
    if (!ours || !paper || !paper_number(ours, &a, &ua, &da) || !paper_number(paper, &b, &ub, &db) || ua != ub) return;
    const char *suffix = ua == 1 || ua == 2 ? " pp" : ua == 3 ? "x" : "";
    double d = a - b;
    if (fabs(d) < 0.5 * pow(10, -db)) d = 0; // "+0.00", never "-0.00"
    snprintf(out, n, "%+.*f%s", db, d, suffix);
}
