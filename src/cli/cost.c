// cost.c (CLI): `hifa4-eval cost` - the emulated Ascend cost of one sequence of T tokens
// through every attention layer of a model, per mode, in the layout of the paper's Table 10
// (spec/cost.md) with the published values beside ours, then the absolute counts. Needs only
// the model's config.json (or --shape), never weights.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attention/attn.h"
#include "cli/cli.h"
#include "runplan/model_arg.h"
#include "attention/cost.h"
#include "model/config.h"
#include "results/paper.h"

#define DEFAULT_PARAMS "configs/ascend/paper-fit.json" // relative to cwd or to the binary
#define DEFAULT_MODES "bf16,direct,hifa4"
#define MAX_MODES 16
#define MAX_LAYERS 4096
#define MAX_SEQ (1 << 22) // 4M tokens; counts are checked against 2^63 (cost_count_call), and JSON
                          // prints them exactly up to 2^53

// ---- model shape ----
struct mshape {
    int n_layers, n_heads, n_kv_heads, head_dim;
    int *window; // [n_layers], 0 = full causal; owned
};

// The config.json of --model: a config.json file as given, else the checkpoint directory
// model_resolve finds offline (the cost needs no weights, so nothing is downloaded).
static int config_path(char *path, size_t n, const char *model, struct err *e) {
    struct stat st;
    if (stat(model, &st) == 0 && S_ISREG(st.st_mode) && !str_ends_with(model, ".gguf")) {
        if (snprintf(path, n, "%s", model) >= (int)n) return err_set(e, ERR_RANGE, "--model: path too long");
        return 0;
    }
    struct model_ref mref;
    int rc = model_resolve(&mref, model, 1, e);
    if (rc) {
        char why[ERR_MSG_MAX];
        snprintf(why, sizeof why, "%s", e->msg);
        return err_set(e, rc, "--model %s: %s (cost reads only its config.json and downloads nothing: run `hifa4-eval "
                       "download --model %s`, or give the shape with --shape LAYERS:HEADS:KV_HEADS:HEAD_DIM)", model, why, model);
    }
    if (stat(mref.dir, &st) != 0) return err_set(e, ERR_NOTFOUND, "--model %s: no such file or directory", model);
    return path_join(path, n, mref.dir, "config.json", e);
}

// The shape and per-layer sliding windows of --model's config.json, through the model's own
// config reader (cfg_load: the transformers semantics of each architecture's windows).
static int read_shape(struct mshape *s, const char *model, struct err *e) {
    char path[4096];
    static struct model_config c; // large (per-layer tables): not on the stack
    int rc = config_path(path, sizeof path, model, e);
    if (rc || (rc = cfg_load(&c, path, e))) return rc;
    s->n_layers = c.n_layers; s->n_heads = c.n_heads; s->n_kv_heads = c.n_kv_heads; s->head_dim = c.head_dim;
    s->window = calloc((size_t)c.n_layers, sizeof *s->window);
    if (!s->window) return err_set(e, ERR_NOMEM, "cost: out of memory");
    memcpy(s->window, c.window, (size_t)c.n_layers * sizeof *s->window);
    return 0;
}

static int parse_shape(struct mshape *s, const char *spec, int window, struct err *e) {
    long long v[4]; // sscanf's %d wrapped: 4294967328 layers were 32
    if (str_to_ints(spec, ':', 4, 1, 1 << 20, v) || v[0] > MAX_LAYERS || v[1] % v[2] || v[3] > 65536)
        return err_set(e, ERR_USAGE, "--shape '%s': expected L:H:Hkv:d (L <= %d, H <= 2^20 a multiple of Hkv, d <= 65536)",
                       spec, MAX_LAYERS);
    const int L = (int)v[0], H = (int)v[1], Hkv = (int)v[2], d = (int)v[3];
    s->n_layers = L; s->n_heads = H; s->n_kv_heads = Hkv; s->head_dim = d;
    s->window = calloc((size_t)L, sizeof *s->window);
    if (!s->window) return err_set(e, ERR_NOMEM, "cost: out of memory");
    for (int i = 0; i < L; i++) s->window[i] = window;
    return 0;
}

// ---- modes ----
static int mode_flags(const char *name, unsigned *flags, struct err *e) {
    const struct attn_mode *m = attn_mode_find(name);
    if (!m) return err_set(e, ERR_USAGE, "--attn: unknown mode '%s' (known: %s)", name, attn_mode_names());
    *flags = m->flags;
    return 0;
}

// ---- the paper's Table 10 (configs/paper/table10.csv through paper.h) ----
// It is measured on Qwen3-8B's attention shape at T = 40960; beside another shape its values
// compare nothing, so they are shown only for that shape.
#define PAPER_SHAPE_L 36
#define PAPER_SHAPE_H 32
#define PAPER_SHAPE_HKV 8
#define PAPER_SHAPE_D 128
#define PAPER_T 40960

static int is_paper_shape(const struct mshape *s) {
    int win = 0;
    for (int l = 0; l < s->n_layers; l++) win |= s->window[l];
    return s->n_layers == PAPER_SHAPE_L && s->n_heads == PAPER_SHAPE_H && s->n_kv_heads == PAPER_SHAPE_HKV &&
           s->head_dim == PAPER_SHAPE_D && !win;
}

// Table 10's row of a mode ("BF16 (C16V16)"...), or NULL for a mode the paper does not list.
static const char *paper_row(const char *mode) {
    if (!strcmp(mode, "bf16")) return "BF16 (C16V16)";
    if (!strcmp(mode, "direct")) return "Direct (C4V16)";
    if (!strcmp(mode, "hifa4")) return "HiFA4";
    return NULL;
}

// ---- params file lookup ----
static int find_params(char *out, size_t n, const char *given, struct err *e) {
    if (given) { snprintf(out, n, "%s", given); return 0; }
    if (file_exists(DEFAULT_PARAMS)) { snprintf(out, n, "%s", DEFAULT_PARAMS); return 0; }
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            if (snprintf(out, n, "%s/%s", exe, DEFAULT_PARAMS) < (int)n && file_exists(out)) return 0;
        }
    }
    return err_set(e, ERR_NOTFOUND, "cost parameters: %s not found in the current directory nor beside the binary; "
                   "pass --params FILE", DEFAULT_PARAMS);
}

// Counts of one sequence through every layer; a count beyond 64 bits is refused naming it.
static int counts_for(struct cost_counts *c, unsigned flags, const struct mshape *s, int T, int br, int bc, struct err *e) {
    memset(c, 0, sizeof *c);
    for (int l = 0; l < s->n_layers; l++) {
        const struct cost_shape sh = {T, s->n_heads, s->n_kv_heads, s->head_dim, s->window[l], br, bc};
        int rc = cost_count_call(c, flags, &sh, e);
        if (rc) return err_prefix(e, "--seq %d with %d layers: the shape is beyond what 64-bit counts hold", T, s->n_layers);
    }
    return 0;
}

static void print_counts(const char *mode, const struct cost_counts *c, const struct cost_cycles *cy) {
    printf("\n[%s]\n", mode);
    printf("  cycles: cube %.6g  softmax %.6g  other %.6g  critical %.6g (%s-bound)\n", cy->cube,
           cy->softmax, cy->other, cy->critical, cy->vector_bound ? "vector" : "cube");
    printf("  calls %lld  tokens %lld  visited tiles (x heads) %lld\n", (long long)c->calls,
           (long long)c->tokens, (long long)c->tiles);
    printf("  cube MACs 16-bit: qk %lld  pv %lld  ones %lld\n", (long long)c->mac16_qk,
           (long long)c->mac16_pv, (long long)c->mac16_ones);
    printf("  cube MACs 4-bit:  qk %lld  pv %lld  ones %lld\n", (long long)c->mac4_qk,
           (long long)c->mac4_pv, (long long)c->mac4_ones);
    printf("  vector ops (softmax):");
    for (int k = 0; k < COST_V_FIRST_OTHER; k++) {
        if (k == COST_V_FIRST_ROW) printf("\n   ");
        printf(" %s %lld", cost_vop_name(k), (long long)c->vop[k]);
    }
    printf("\n  vector ops (other):");
    for (int k = COST_V_FIRST_OTHER; k < COST_V_COUNT; k++) printf(" %s %lld", cost_vop_name(k), (long long)c->vop[k]);
    printf("\n  bytes moved: 16-bit %lld (%lld elements)  HiF4 %.1f (%lld elements)\n", (long long)c->bytes16,
           (long long)c->elems16, c->bytes4, (long long)c->elems4);
}

// ---- one cost computation: what cmd_cost parsed, and every row's counts and cycles ----
// A row is a mode, and for modes with Q-Mean one row per form asked for (--qmean).
struct row {
    const char *mode;
    int qmean;             // enum attn_qmean, or -1 for a mode without Q-Mean
    char name[64];         // "hifa4", "hifa4 [qmean channel]"
    unsigned flags;        // with ATTN_F_QMEAN_CH for the channel form
    struct cost_counts c;
    struct cost_cycles cy;
};

struct cost_job {
    const char *source;             // --model or --shape as given (printed as "model ...")
    int T, br, bc;                  // tokens, cost tiling
    int forms;                      // Q-Mean forms: 0 token, 1 channel, 2 both
    char ppath[4096];               // the parameter file used
    struct cost_params p;
    struct mshape s;                // s.window owned
    char mbuf[1024];                // storage of the mode names
    struct row rows[MAX_MODES * 2];
    int n_rows;
    unsigned bf16_flags;
    double norm, rnorm;             // bf16 Cube cycles and bf16 critical path: Table 10's units
    int n_win;                      // layers with a sliding window < T
    struct paper_values paper;      // Table 10's printed cells (n = 0: not shown)
};

// The rows of one mode: once, or per Q-Mean form (token first) for a mode with Q-Mean.
static void add_rows(struct cost_job *j, const char *mode, unsigned flags) {
    for (int q = 0; q < 2; q++) {
        const int has = (flags & ATTN_F_QMEAN) != 0;
        if (has ? !(j->forms == 2 || j->forms == q) : q > 0) continue;
        struct row *r = &j->rows[j->n_rows++];
        memset(r, 0, sizeof *r);
        r->mode = mode;
        r->qmean = has ? q : -1;
        r->flags = flags | (has && q == ATTN_QMEAN_CHANNEL ? ATTN_F_QMEAN_CH : 0);
        if (has && j->forms == 2) snprintf(r->name, sizeof r->name, "%s [qmean %s]", mode, attn_qmean_name(q));
        else snprintf(r->name, sizeof r->name, "%s", mode);
    }
}

// Splits --attn into rows (each mode's flags looked up) and finds bf16's (the reference row).
static int parse_modes(struct cost_job *j, const char *modes_arg, struct err *e) {
    const char *modes[MAX_MODES];
    snprintf(j->mbuf, sizeof j->mbuf, "%s", modes_arg);
    int n = cli_split(j->mbuf, modes, MAX_MODES, e), rc;
    if (n < 0) return err_prefix(e, "--attn");
    if (n == 0) return err_set(e, ERR_USAGE, "--attn: no modes given");
    for (int i = 0; i < n; i++) {
        unsigned f = 0;
        if ((rc = mode_flags(modes[i], &f, e))) return rc;
        if (f & ATTN_F_SAGE3) { // NVFP4 operands: outside the model (spec/fp4.md 4.3)
            printf("cost: %s: the Ascend cost model covers HiF4 only (spec/cost.md); no numbers for SageAttention3's NVFP4 "
                   "recipe\n", modes[i]);
            continue;
        }
        add_rows(j, modes[i], f);
    }
    return mode_flags("bf16", &j->bf16_flags, e);
}

// Counts and cycles of bf16 (the normalisation) and of every row over all layers of j->s.
static int compute(struct cost_job *j, struct err *e) {
    struct cost_counts base;
    struct cost_cycles base_cy;
    int rc = counts_for(&base, j->bf16_flags, &j->s, j->T, j->br, j->bc, e);
    if (rc) return rc;
    cost_cycles(&base_cy, &base, &j->p);
    for (int i = 0; i < j->n_rows; i++) {
        if ((rc = counts_for(&j->rows[i].c, j->rows[i].flags, &j->s, j->T, j->br, j->bc, e))) return rc;
        cost_cycles(&j->rows[i].cy, &j->rows[i].c, &j->p);
    }
    j->norm = base_cy.cube;
    j->rnorm = base_cy.critical;
    j->n_win = 0;
    for (int l = 0; l < j->s.n_layers; l++) j->n_win += j->s.window[l] > 0 && j->s.window[l] < j->T;
    return 0;
}

// ---- output ----
static int print_json(const struct cost_job *j, struct err *e) {
    const struct mshape *s = &j->s;
    const double norm = j->norm, rnorm = j->rnorm;
    cJSON *o = cJSON_CreateObject(), *arr = NULL;
    int bad = !o;
    if (o) {
        cJSON *sh = cJSON_AddObjectToObject(o, "shape");
        bad |= !sh || !cJSON_AddStringToObject(o, "source", j->source) ||
               !cJSON_AddNumberToObject(sh, "n_layers", s->n_layers) || !cJSON_AddNumberToObject(sh, "n_heads", s->n_heads) ||
               !cJSON_AddNumberToObject(sh, "n_kv_heads", s->n_kv_heads) ||
               !cJSON_AddNumberToObject(sh, "head_dim", s->head_dim) ||
               !cJSON_AddNumberToObject(sh, "windowed_layers", j->n_win) || !cJSON_AddNumberToObject(o, "seq", j->T) ||
               !cJSON_AddNumberToObject(o, "tile_br", j->br) || !cJSON_AddNumberToObject(o, "tile_bc", j->bc) ||
               !cJSON_AddStringToObject(o, "params", j->ppath) || !(arr = cJSON_AddArrayToObject(o, "modes"));
    }
    for (int i = 0; !bad && i < j->n_rows; i++) {
        const struct row *r = &j->rows[i];
        cJSON *m = cJSON_CreateObject();
        bad |= !m || !cJSON_AddItemToArray(arr, m);
        if (bad) { cJSON_Delete(m); break; }
        cJSON *cj = cost_counts_json(&r->c), *yj = cost_cycles_json(&r->cy);
        bad |= !cJSON_AddStringToObject(m, "mode", r->mode) || !cj || !yj ||
               !(r->qmean >= 0 ? cJSON_AddStringToObject(m, "qmean", attn_qmean_name(r->qmean)) : cJSON_AddNullToObject(m, "qmean"));
        if (bad) { cJSON_Delete(cj); cJSON_Delete(yj); break; }
        cJSON_AddItemToObject(m, "counts", cj);
        cJSON_AddItemToObject(m, "cycles", yj);
        cJSON *t = cJSON_AddObjectToObject(m, "table10");
        bad |= !t || !cJSON_AddNumberToObject(t, "cube", r->cy.cube / norm) ||
               !cJSON_AddNumberToObject(t, "softmax", r->cy.softmax / norm) ||
               !cJSON_AddNumberToObject(t, "other", r->cy.other / norm) ||
               !cJSON_AddStringToObject(t, "bottleneck", r->cy.vector_bound ? "Vector" : "Cube") ||
               !cJSON_AddNumberToObject(t, "relative", r->cy.critical / rnorm);
    }
    char *txt = bad ? NULL : cJSON_Print(o);
    cJSON_Delete(o);
    if (!txt) return err_set(e, ERR_NOMEM, "cost: out of memory building JSON");
    printf("%s\n", txt);
    free(txt);
    return 0;
}

// Table 10: one row per mode (and Q-Mean form), the paper's values beside ours.
static void print_table10(const struct cost_job *j) {
    const double norm = j->norm, rnorm = j->rnorm;
    int w = 22; // the longest row name
    for (int i = 0; i < j->n_rows; i++) w = (int)strlen(j->rows[i].name) > w ? (int)strlen(j->rows[i].name) : w;
    printf("%-*s | %-14s | %-14s | %-14s | %-16s | %-14s\n", w, "mode", "QK+PV Cube", "Softmax", "Other VL",
           "Bottleneck", "Relative");
    printf("%.*s-+-%-14s-+-%-14s-+-%-14s-+-%-16s-+-%-14s\n", w, "----------------------------------------------------------",
           "--------------", "--------------", "--------------", "----------------", "--------------");
    for (int i = 0; i < j->n_rows; i++) {
        const struct row *r = &j->rows[i];
        const char *pr = j->paper.n ? paper_row(r->mode) : NULL;
        const char *bn = r->cy.vector_bound ? "Vector" : "Cube";
        const char *pc = "", *ps = "", *po = "", *pb = "", *pl = "", *v;
        if (pr) {
            pc = (v = paper_get(&j->paper, 10, pr, "QK+PV Cube")) ? v : "";
            ps = (v = paper_get(&j->paper, 10, pr, "Softmax")) ? v : "";
            po = (v = paper_get(&j->paper, 10, pr, "Other VL")) ? v : "";
            pb = (v = paper_get(&j->paper, 10, pr, "Bottleneck")) ? v : "";
            pl = (v = paper_get(&j->paper, 10, pr, "Relative")) ? v : "";
        }
        printf("%-*s | %6.3f %-7s | %6.3f %-7s | %6.3f %-7s | %-6s %-9s | %6.3f %-7s\n", w, r->name, r->cy.cube / norm, pc,
               r->cy.softmax / norm, ps, r->cy.other / norm, po, bn, pb, r->cy.critical / rnorm, pl);
    }
}

// Table 10 with the paper's values beside ours, the critical-path summary, then every count.
static void print_text(const struct cost_job *j) {
    const struct mshape *s = &j->s;
    const struct row *rw = j->rows;
    const double rnorm = j->rnorm;
    printf("emulated Ascend attention cost (spec/cost.md)\n");
    printf("model %s: %d layers, %d query heads, %d kv heads, head_dim %d", j->source,
           s->n_layers, s->n_heads, s->n_kv_heads, s->head_dim);
    if (j->n_win) printf(", %d layers with a sliding window < T", j->n_win);
    printf("\nT = %d, cost tiles %d x %d, params %s (%s)\n", j->T, j->br, j->bc, j->ppath, j->p.name);
    printf("stages / bf16 Cube cycles; Relative = critical path / bf16 critical path; "
           "critical = max(Cube, Softmax / %d)\n", j->p.n_vector_units);
    if (j->paper.n)
        printf("ours | paper (Table 10: Qwen3-8B's shape, %d:%d:%d:%d, at T = %d%s)\n\n", PAPER_SHAPE_L, PAPER_SHAPE_H,
               PAPER_SHAPE_HKV, PAPER_SHAPE_D, PAPER_T, j->T == PAPER_T ? "" : "; this T differs");
    else
        printf("ours (the paper's Table 10 is Qwen3-8B's shape, %d:%d:%d:%d at T = %d: not shown beside another shape)\n\n",
               PAPER_SHAPE_L, PAPER_SHAPE_H, PAPER_SHAPE_HKV, PAPER_SHAPE_D, PAPER_T);
    print_table10(j);
    const char *prel = j->paper.n ? paper_get(&j->paper, 10, "HiFA4", "Relative") : NULL;
    double pv = 0;
    int unit = 0, dec = 0;
    const int paper_hifa4 = prel && paper_number(prel, &pv, &unit, &dec);
    for (int i = 0; i < j->n_rows; i++) {
        if (!strcmp(rw[i].mode, "bf16")) continue;
        printf("%s: critical path %.1f%% %s bf16", rw[i].name, fabs(1 - rw[i].cy.critical / rnorm) * 100,
               rw[i].cy.critical <= rnorm ? "below" : "above");
        if (paper_hifa4 && !strcmp(rw[i].mode, "hifa4")) printf(" (paper, Qwen3-8B's shape: %.0f%% below)", (1 - pv) * 100);
        printf("\n");
    }
    for (int i = 0; i < j->n_rows; i++) // the channel form against the token form of the same mode
        for (int k = 0; rw[i].qmean == ATTN_QMEAN_CHANNEL && k < j->n_rows; k++)
            if (rw[k].qmean == ATTN_QMEAN_TOKEN && !strcmp(rw[k].mode, rw[i].mode))
                printf("%s: channel form / token form critical path %.3f, softmax %.3f\n", rw[i].mode,
                       rw[i].cy.critical / rw[k].cy.critical, rw[i].cy.softmax / rw[k].cy.softmax);
    printf("\n(Other VL: ours = HiF4 of Q/K/V, Smooth-QK, Q-Mean means, O/l, O(T) work; the paper's is undefined, not "
           "fitted. The paper's values sit beside both Q-Mean forms; the fit used the token form.)\n");
    for (int i = 0; i < j->n_rows; i++) print_counts(rw[i].name, &rw[i].c, &rw[i].cy);
}

// ---- the command ----
int cmd_cost(int argc, char **argv, struct err *e) {
    const char *model = NULL, *modes_arg = DEFAULT_MODES, *params_arg = NULL, *shape_arg = NULL, *qmean_arg = "both";
    const char *qformat = "hif4";
    int T = 0, br = 128, bc = 128, window = 0, as_json = 0, help = 0;
    struct cli_opt opts[] = {
        {"model", CLI_STR, &model, "M: model directory, config.json, ORG/NAME[@REVISION] or a name from configs/models, read from the caches (shape only: no weights, nothing downloaded)"},
        {"shape", CLI_STR, &shape_arg, "L:H:Hkv:d: shape without a file (layers, query heads, kv heads, head dim)"},
        {"window", CLI_INT, &window, "W: sliding window of every layer with --shape (0 = none)"},
        {"seq", CLI_INT, &T, "T: tokens of the sequence (required)"},
        {"attn", CLI_STR, &modes_arg, "MODES: comma list (default " DEFAULT_MODES ")"},
        {"qmean", CLI_STR, &qmean_arg, "token|channel|both: Q-Mean form(s) of modes with Q-Mean (default both)"},
        {"params", CLI_STR, &params_arg, "FILE: cost-model parameters (default " DEFAULT_PARAMS ")"},
        {"tile-br", CLI_INT, &br, "N: cost tiling query rows (default 128)"},
        {"tile-bc", CLI_INT, &bc, "N: cost tiling keys (default 128)"},
        {"qformat", CLI_STR, &qformat, "hif4|hif4-a6|nvfp4|mxfp4: 4-bit format (the model covers HiF4 only; default hif4)"},
        {"json", CLI_FLAG, &as_json, "print JSON (counts, cycles, normalised table) instead of text"},
        {"help", CLI_FLAG, &help, "show this help"},
    };
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    const char *synopsis = "--model M | --shape L:H:Hkv:d  --seq T [--attn MODES] [--qmean both] [--params FILE]";
    int rc = cli_parse(argc, argv, opts, n_opts, e);
    if (rc) return rc;
    if (help) { cli_usage("cost", synopsis, opts, n_opts); return 0; }
    if (!model == !shape_arg) return err_set(e, ERR_USAGE, "give exactly one of --model and --shape");
    if (T <= 0 || T > MAX_SEQ) return err_set(e, ERR_USAGE, "--seq %d: must be in [1, %d]", T, MAX_SEQ);
    if (br <= 0 || br > 65536 || bc <= 0 || bc > 65536)
        return err_set(e, ERR_USAGE, "--tile-br %d / --tile-bc %d: must be in [1, 65536]", br, bc);
    if (window < 0) return err_set(e, ERR_USAGE, "--window %d: must be >= 0", window);
    if (window && !shape_arg) return err_set(e, ERR_USAGE, "--window goes with --shape (a model's windows come from its config)");
    int qf = 0;
    if ((rc = attn_parse_qformat(qformat, &qf, e))) return rc;
    if (qf == ATTN_QFORMAT_NVFP4 || qf == ATTN_QFORMAT_MXFP4) { // one line instead of numbers it does not have
        printf("cost: the Ascend cost model covers HiF4 only (spec/cost.md); it has no numbers for --qformat %s "
               "(storage: %.4g bits per value%s)\n", qformat, attn_qformat_bits(qf),
               qf == ATTN_QFORMAT_NVFP4 ? " plus one binary32 per-tensor scale per head and operand" : "");
        return 0;
    }

    static struct cost_job j; // large (rows of counts): not on the stack
    memset(&j, 0, sizeof j);
    j.source = model ? model : shape_arg, j.T = T, j.br = br, j.bc = bc, j.forms = 2;
    if (strcmp(qmean_arg, "both") && attn_parse_qmean(qmean_arg, &j.forms, e))
        return err_set(e, ERR_USAGE, "--qmean '%s': expected token, channel or both", qmean_arg);
    if ((rc = parse_modes(&j, modes_arg, e))) return rc;
    if (j.n_rows == 0) return 0; // only modes the model does not cover (said above)
    if ((rc = find_params(j.ppath, sizeof j.ppath, params_arg, e)) || (rc = cost_params_load(&j.p, j.ppath, e))) return rc;
    rc = shape_arg ? parse_shape(&j.s, shape_arg, window, e) : read_shape(&j.s, model, e);
    if (!rc) rc = compute(&j, e);
    struct err pe = {0};
    if (!rc && !as_json && is_paper_shape(&j.s) && paper_load_default(&j.paper, &pe))
        log_warn("cost: the paper's Table 10 values are not shown: %s", pe.msg);
    if (!rc) {
        if (as_json) rc = print_json(&j, e);
        else print_text(&j);
    }
    free(j.s.window);
    j.s.window = NULL;
    paper_free(&j.paper);
    return rc;
}
