// pt_stats.c: the paper's tables built from the statistics commands - Table 1 (outlier
// diagnostics and gate) and Table 8 (per-layer K statistics and Smooth-QK scale) from
// diagnose.json, Table 4 (needle in a haystack) from a niah run and trace.json, Table 10
// (relative latency per stage) from `cost --json`.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "results/pt_internal.h"

// ---- Table 1 ----
// The gate condition as the paper prints it, from the values and the thresholds used.
static void gate_condition(char *b, size_t n, double rho, double t, const cJSON *go) {
    double rmin = pt_num(go, "rho_min"), ts = pt_num(go, "t_strong"), tm = pt_num(go, "t_mild");
    if (!isfinite(rmin)) rmin = 6;
    if (!isfinite(ts)) ts = 3;
    if (!isfinite(tm)) tm = 2;
    if (rho >= rmin && t > ts) snprintf(b, n, "rho_K >= %g & T_K/Q > %g", rmin, ts);
    else if (rho >= rmin && t >= tm) snprintf(b, n, "rho_K >= %g & %g <= T_K/Q <= %g", rmin, tm, ts);
    else if (rho >= rmin) snprintf(b, n, "rho_K >= %g & T_K/Q < %g", rmin, tm);
    else if (t < tm) snprintf(b, n, "rho_K < %g & T_K/Q < %g", rmin, tm);
    else snprintf(b, n, "rho_K < %g", rmin);
}

// The paper's Action cell for a decision (gate name, alpha); how (PT_ACT_*) said in brackets.
enum pt_act { PT_ACT_PAPER, PT_ACT_FORCED, PT_ACT_MEASURED };
static void gate_action(char *b, size_t n, const char *gate, double alpha, enum pt_act how) {
    const char *why = how == PT_ACT_FORCED ? ", forced" : how == PT_ACT_MEASURED ? ", measured" : "";
    if (!strcmp(gate, "bypass") && how != PT_ACT_FORCED) snprintf(b, n, "Bypass (s=1%s)", why);
    else snprintf(b, n, "%c%s (alpha=%g%s)", gate[0] - 'a' + 'A', gate + 1, alpha, why);
}

static int is_measured(const cJSON *t1) { return !strcmp(pt_str(t1, "rule", "paper"), "measured"); }

static int table1_row(struct pt_ctx *c, struct grid *g, const cJSON *d) {
    const cJSON *t1 = pt_get(d, "table1"), *go = pt_get(d, "gate_options");
    const char *model = pt_str(pt_get(d, "model"), "id", "?"), *pm = pt_paper_model(c, model, "Qwen3-8B");
    double rho = pt_num(t1, "rho_K"), t = pt_num(t1, "T_KQ");
    char cond[128], act[96];
    gate_condition(cond, sizeof cond, rho, t, go);
    const enum pt_act how = cJSON_IsNumber(pt_get(go, "alpha_forced")) ? PT_ACT_FORCED
                            : is_measured(t1)                        ? PT_ACT_MEASURED
                                                                     : PT_ACT_PAPER;
    gate_action(act, sizeof act, pt_str(t1, "gate", "?"), pt_num(t1, "alpha"), how);
    int rc = grid_row(g);
    if (pm) rc |= grid_set_rkey(g, pm);
    rc |= grid_set(g, 0, "%s", model) | grid_set(g, 1, "%.2f", rho) | grid_set(g, 2, "%.2f", t);
    rc |= grid_set(g, 3, "%.3f", pt_num(t1, "jaccard")) | grid_set(g, 4, "%s", cond) | grid_set(g, 5, "%s", act);
    return rc;
}

// Under the table: what "measured" means and the paper rule's own decision for those models
// (the paper's strengths: Strong alpha 0.5, Mild 0.25).
static int table1_note(struct pt_ctx *c, struct grid *g) {
    size_t u = 0;
    for (int k = 0; k < c->in->n_diag; k++) {
        const cJSON *d = c->in->diag[k], *t1 = pt_get(d, "table1");
        if (!is_measured(t1)) continue;
        const char *pg = pt_str(t1, "paper_gate", "?");
        char act[96];
        gate_action(act, sizeof act, pg, pt_gate_alpha(pg, 0.5), PT_ACT_PAPER);
        int w = snprintf(g->note + u, sizeof g->note - u, "%s%s %s", u ? ", " : "Action (measured): the measured "
                         "rule's decision (from the attention error Smooth-QK removes on the calibration set), not the "
                         "Gate condition's; the paper's rule gives ", pt_str(pt_get(d, "model"), "id", "?"), act);
        if (w < 0 || (size_t)w >= sizeof g->note - u) return ERR_RANGE;
        u += (size_t)w;
    }
    if (u && u + 2 < sizeof g->note) strcat(g->note, ".");
    return 0;
}

int pt_table1(struct pt_ctx *c) {
    if (!c->in->n_diag) { pt_missing(c, 1, "no diagnose output"); return 0; }
    struct grid *g = pt_grid(c, 1, "Table 1: outlier diagnostics (max-layer values) and gate", 6);
    if (!g) return ERR_RANGE;
    static const char *const hdr[6] = {"Model", "rho_K", "T_K/Q", "Jaccard", "Gate condition", "Action"};
    g->text[4] = g->text[5] = 1;
    int rc = grid_row(g);
    for (int k = 0; k < 6; k++) rc |= grid_set(g, k, "%s", hdr[k]) | (k ? grid_set_ckey(g, k, hdr[k]) : 0);
    for (int d = 0; d < c->in->n_diag; d++) rc |= table1_row(c, g, c->in->diag[d]);
    return rc | table1_note(c, g);
}

// ---- Table 8 ----
// Layer groups: the option's "0,1-4,5-35", else the rho_K layer alone between the ranges
// before and after it. Returns the count (at most max) or -1 on a malformed option.
static int layer_groups(const char *opt, int n_layers, int star, int (*grp)[2], int max) {
    int n = 0;
    if (!opt) {
        if (star > 0) { grp[n][0] = 0; grp[n++][1] = star - 1; }
        grp[n][0] = grp[n][1] = star; n++;
        if (star + 1 < n_layers) { grp[n][0] = star + 1; grp[n++][1] = n_layers - 1; }
        return n;
    }
    for (const char *p = opt; *p && n < max;) {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (end == p) return -1;
        if (*end == '-') { p = end + 1; b = strtol(p, &end, 10); if (end == p) return -1; }
        if (a < 0 || b < a || b >= n_layers || (*end && *end != ',')) return -1;
        grp[n][0] = (int)a;
        grp[n++][1] = (int)b;
        p = *end ? end + 1 : end;
    }
    return n;
}

// One cell: a single layer's value in its own precision, a range "lo-hi" (2 significant
// digits), "~v" when the range rounds to one value.
static int range_cell(struct grid *g, int col, double lo, double hi, int single_digits, const char *unit) {
    if (!isfinite(lo) || !isfinite(hi)) return grid_set(g, col, "-");
    if (single_digits >= 0) return grid_set(g, col, "%.*f%s", single_digits, hi, unit);
    char a[32], b[32];
    snprintf(a, sizeof a, "%.2g", lo);
    snprintf(b, sizeof b, "%.2g", hi);
    return strcmp(a, b) ? grid_set(g, col, "%s-%s%s", a, b, unit) : grid_set(g, col, "~%s%s", a, unit);
}

static int table8_group(struct grid *g, const cJSON *t8, int a, int b) {
    static const char *const f[4] = {"MaxAbs_K", "P99_K", "rho_K", "max_scale"};
    static const int digits[4] = {1, 1, 1, 2};
    double lo[5], hi[5];
    for (int k = 0; k < 5; k++) { lo[k] = INFINITY; hi[k] = -INFINITY; }
    for (int l = a; l <= b; l++) {
        const cJSON *x = cJSON_GetArrayItem(t8, l);
        for (int k = 0; k < 4; k++) { lo[k] = fmin(lo[k], pt_num(x, f[k])); hi[k] = fmax(hi[k], pt_num(x, f[k])); }
        lo[4] = fmin(lo[4], pt_num(x, "min_scale")); // Q expansion: the range of s_c over channels
        hi[4] = fmax(hi[4], pt_num(x, "max_scale"));
    }
    int rc = grid_row(g);
    if (a == b) rc |= grid_set(g, 0, "%d", a);
    else rc |= grid_set(g, 0, "%d-%d", a, b);
    rc |= grid_set_rkey(g, grid_get(g, g->n_rows - 1, 0));
    for (int k = 0; k < 4; k++) rc |= range_cell(g, 1 + k, lo[k], hi[k], a == b ? digits[k] : -1, "");
    if (a == b && isfinite(lo[4]) && isfinite(hi[4])) rc |= grid_set(g, 5, "%.2f-%.2fx", lo[4], hi[4]);
    else rc |= range_cell(g, 5, lo[4], hi[4], -1, "x");
    return rc;
}

int pt_table8(struct pt_ctx *c, struct err *e) {
    if (!c->in->n_diag) { pt_missing(c, 8, "no diagnose output"); return 0; }
    int rc = 0;
    for (int d = 0; d < c->in->n_diag && !rc; d++) {
        const cJSON *j = c->in->diag[d], *t8 = pt_get(j, "table8");
        const char *model = pt_str(pt_get(j, "model"), "id", "?");
        int L = cJSON_GetArraySize(t8), grp[256][2];
        int n = layer_groups(c->o->layer_groups, L, (int)pt_num(pt_get(j, "table1"), "rho_K_layer"), grp, 256);
        if (n < 0) return err_set(e, ERR_USAGE, "--layer-groups '%s': expected layers or ranges like 0,1-4,5-%d within 0..%d",
                                  c->o->layer_groups, L - 1, L - 1);
        char title[512];
        snprintf(title, sizeof title, "Table 8: K outlier statistics and Smooth-QK scale, %s, by layer (calibration-set %s "
                 "aggregate)", model, pt_str(pt_get(j, "statistics"), "aggregator", "?"));
        struct grid *g = pt_grid(c, 8, title, 6);
        if (!g) return ERR_RANGE;
        snprintf(g->note, sizeof g->note, "s = the largest Smooth-QK scale of the layer (gate %s); Q Expand = the range of "
                 "max|q~_c| / max|q_c| = s_c over (kv head, channel).", pt_str(pt_get(j, "table1"), "gate", "?"));
        static const char *const hdr[6] = {"Layer", "MaxAbs", "P99", "rho_K", "s", "Q Expand"};
        rc |= grid_row(g);
        for (int k = 0; k < 6; k++) rc |= grid_set(g, k, "%s", hdr[k]) | (k ? grid_set_ckey(g, k, hdr[k]) : 0);
        for (int i = 0; i < n; i++) rc |= table8_group(g, t8, grp[i][0], grp[i][1]);
        if (!pt_paper_only(c, model, "Qwen3-8B"))
            for (int r = 0; r < g->n_rows; r++) { free(g->rkey[r]); g->rkey[r] = NULL; }
    }
    return rc;
}

// ---- Table 4 ----
static const char *const t4_mode[3] = {"bf16", "direct", "hifa4"};
static const char *const t4_col[3] = {"BF16", "Direct HIF4", "HiFA4"};

static void tok_label(char *b, size_t n, int T) {
    if (T >= 1024 && T % 1024 == 0) snprintf(b, n, "%dK", T / 1024);
    else snprintf(b, n, "%d", T);
}

// Retrieval per haystack length of mode k: the items of the subjects "T<len>/d<depth>".
static int niah_row(struct pt_ctx *c, struct grid *g, int r, const char *pm) {
    const cJSON *t = pt_task(c, r, "niah");
    int lens[32], nl = 0, rc = 0;
    const cJSON *s;
    cJSON_ArrayForEach(s, pt_get(pt_get(pt_get(t, "modes"), t4_mode[0]), "subjects")) {
        int T = atoi(s->string + (s->string[0] == 'T'));
        int seen = 0;
        for (int k = 0; k < nl; k++) seen |= lens[k] == T;
        if (!seen && nl < 32) lens[nl++] = T;
    }
    char label[256] = "", b[16];
    for (int k = 0; k < nl; k++) {
        tok_label(b, sizeof b, lens[k]);
        snprintf(label + strlen(label), sizeof label - strlen(label), "%s%s", k ? " / " : "", b);
    }
    rc |= grid_row(g) | grid_set(g, 0, "%s retrieval", label);
    if (pm) rc |= grid_set_rkey(g, "* retrieval");
    for (int m = 0; m < 3; m++) {
        char cell[256] = "", v[32];
        int same = 1;
        double first = NAN;
        for (int k = 0; k < nl; k++) {
            double hit = 0, n = 0;
            cJSON_ArrayForEach(s, pt_get(pt_get(pt_get(t, "modes"), t4_mode[m]), "subjects")) {
                if (atoi(s->string + 1) != lens[k]) continue;
                hit += pt_num(s, "acc") * pt_num(s, "n");
                n += pt_num(s, "n");
            }
            double a = n > 0 ? 100 * hit / n : NAN;
            if (k == 0) first = a;
            same &= a == first;
            snprintf(v, sizeof v, "%.0f%%", a);
            snprintf(cell + strlen(cell), sizeof cell - strlen(cell), "%s%s", k ? " / " : "", v);
        }
        if (same && nl) snprintf(cell, sizeof cell, "%.0f%%", first);
        rc |= grid_set(g, 1 + m, "%s", nl ? cell : "-");
    }
    return rc;
}

static const cJSON *trace_mode(const cJSON *tr, const char *mode) {
    const cJSON *m;
    cJSON_ArrayForEach(m, pt_get(tr, "modes")) if (!strcmp(pt_str(m, "mode", ""), mode)) return m;
    return NULL;
}

// One row per context length: attention rel-L2 vs the trace's reference, mean over layers;
// then the K cache max-abs (largest over the lengths).
static int trace_rows(struct grid *g, const cJSON *tr, int paper) {
    int rc = 0;
    const cJSON *in;
    cJSON_ArrayForEach(in, pt_get(tr, "inputs")) {
        char b[16], label[64];
        tok_label(b, sizeof b, (int)pt_num(in, "ctx"));
        snprintf(label, sizeof label, "%s attn. rel. L2", b);
        rc |= grid_row(g) | grid_set(g, 0, "%s", label);
        if (paper) rc |= grid_set_rkey(g, label);
        for (int m = 0; m < 3; m++) {
            const cJSON *cell, *l;
            double sum = 0;
            int n = 0;
            cJSON_ArrayForEach(cell, pt_get(trace_mode(tr, t4_mode[m]), "inputs")) {
                if (strcmp(pt_str(cell, "input", ""), pt_str(in, "name", "?"))) continue;
                cJSON_ArrayForEach(l, pt_get(cell, "layers")) { sum += pt_num(l, "rel_l2"); n++; }
                break;
            }
            rc |= grid_set(g, 1 + m, n ? "%.1f%%" : "-", 100 * sum / (n ? n : 1));
        }
    }
    rc |= grid_row(g) | grid_set(g, 0, "K cache max-abs");
    if (paper) rc |= grid_set_rkey(g, "K cache max-abs");
    for (int m = 0; m < 3; m++) {
        const cJSON *cell;
        double mx = -1;
        cJSON_ArrayForEach(cell, pt_get(trace_mode(tr, t4_mode[m]), "inputs")) mx = fmax(mx, pt_num(cell, "k_maxabs"));
        rc |= grid_set(g, 1 + m, mx >= 0 ? "%.2f" : "-", mx);
    }
    return rc;
}

int pt_table4(struct pt_ctx *c) {
    int rn = -1, rc = 0;
    for (int r = 0; r < c->in->n_run && rn < 0; r++)
        if (pt_task(c, r, "niah") && pt_mode_index(c, r, "direct") > 0 && pt_mode_index(c, r, "hifa4") > 0) rn = r;
    if (rn < 0) pt_missing(c, 4, "no niah run with modes direct and hifa4 (retrieval row)");
    if (!c->in->n_trace) pt_missing(c, 4, "no trace output (attention rel-L2 and K max-abs rows)");
    if (rn < 0 && !c->in->n_trace) return 0;
    const char *model = rn >= 0 ? pt_model_name(c, rn) : pt_str(pt_get(c->in->trace[0], "model"), "id", "?");
    const char *pm = pt_paper_only(c, model, "Qwen3-8B");
    char title[512]; // what the table holds: the retrieval row needs a niah run, the rest a trace
    if (rn >= 0) snprintf(title, sizeof title, "Table 4: needle in a haystack, %s", model);
    else snprintf(title, sizeof title, "Table 4 (trace rows only, no niah run): attention error and K range, %s", model);
    struct grid *g = pt_grid(c, 4, title, 4);
    if (!g) return ERR_RANGE;
    if (c->in->n_trace)
        snprintf(g->note, sizeof g->note, "rel. L2 = ||O_mode - O_ref|| / ||O_ref|| against the trace's %s reference, mean over "
                 "layers; K cache max-abs: the largest |K| the kernel quantizes.", "f32");
    rc |= grid_row(g) | grid_set(g, 0, "%s", "");
    for (int m = 0; m < 3; m++) rc |= grid_set(g, 1 + m, "%s", t4_col[m]) | grid_set_ckey(g, 1 + m, t4_col[m]);
    if (rn >= 0) rc |= niah_row(c, g, rn, pm);
    for (int t = 0; t < c->in->n_trace; t++) rc |= trace_rows(g, c->in->trace[t], pm != NULL);
    return rc;
}

// ---- Table 10 ----
static int cost_grid(struct pt_ctx *c, const cJSON *j) {
    const cJSON *sh = pt_get(j, "shape"), *m;
    const int qwen_shape = pt_num(sh, "n_layers") == 36 && pt_num(sh, "n_heads") == 32 && pt_num(sh, "n_kv_heads") == 8 &&
                           pt_num(sh, "head_dim") == 128;
    const int paper = qwen_shape || c->o->beside == PT_BESIDE_ALWAYS;
    char title[512];
    const char *src = pt_str(j, "source", "?"), *base = strrchr(src, '/');
    snprintf(title, sizeof title, "Table 10: relative latency per stage, T = %.0f tokens, BF16 = 1.0 (emulated cost model; %s)",
             pt_num(j, "seq"), base && base[1] ? base + 1 : src);
    struct grid *g = pt_grid(c, 10, title, 6);
    if (!g) return ERR_RANGE;
    static const char *const hdr[6] = {"Variant", "QK+PV Cube", "Softmax", "Other VL", "Bottleneck", "Relative"};
    g->text[4] = 1;
    int rc = grid_row(g);
    for (int k = 0; k < 6; k++) rc |= grid_set(g, k, "%s", hdr[k]) | (k ? grid_set_ckey(g, k, hdr[k]) : 0);
    cJSON_ArrayForEach(m, pt_get(j, "modes")) {
        const char *mode = pt_str(m, "mode", "?"), *qm = pt_str(m, "qmean", NULL);
        const cJSON *t = pt_get(m, "table10");
        char label[128];
        if (!strcmp(mode, "bf16")) snprintf(label, sizeof label, "BF16 (C16V16)");
        else if (!strcmp(mode, "direct")) snprintf(label, sizeof label, "Direct (C4V16)");
        else if (!strcmp(mode, "hifa4")) snprintf(label, sizeof label, "HiFA4");
        else snprintf(label, sizeof label, "%s", mode);
        if (qm && strcmp(qm, "token")) snprintf(label + strlen(label), sizeof label - strlen(label), " [qmean %s]", qm);
        rc |= grid_row(g) | grid_set(g, 0, "%s", label);
        if (paper) rc |= grid_set_rkey(g, label);
        rc |= grid_set(g, 1, "%.2f", pt_num(t, "cube")) | grid_set(g, 2, "%.2f", pt_num(t, "softmax"));
        rc |= grid_set(g, 3, "%.2f", pt_num(t, "other")) | grid_set(g, 4, "%s", pt_str(t, "bottleneck", "?"));
        rc |= grid_set(g, 5, "%.2f", pt_num(t, "relative"));
    }
    return rc;
}

int pt_table10(struct pt_ctx *c) {
    if (!c->in->n_cost) { pt_missing(c, 10, "no `cost --json` output"); return 0; }
    int rc = 0;
    for (int i = 0; i < c->in->n_cost && !rc; i++) rc = cost_grid(c, c->in->cost[i]);
    return rc;
}
