// tables.c: `hifa4-eval tables INPUT...` - the paper's Tables 1-10 in its own layout (and Table
// A, the Smooth-QK alpha sweep) from run directories, diagnose / trace outputs and `cost --json` files; Markdown on stdout, CSV and
// LaTeX files on request. The logic is in src/results/paper_tables.c.
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "results/paper_tables.h"

#define MAX_INPUTS 256

int cmd_tables(int argc, char **argv, struct err *e) {
    int help = 0, paper = 0;
    const char *csv = NULL, *latex = NULL;
    struct pt_opts o;
    pt_opts_default(&o);
    struct cli_opt opts[] = {
        {"csv", CLI_STR, &csv, "DIR: also write table1.csv ... table10.csv, tableA.csv there"},
        {"latex", CLI_STR, &latex, "DIR: also write table1.tex ... (booktabs; \\usepackage{booktabs,amssymb})"},
        {"paper", CLI_FLAG, &paper, "show the paper's values and the difference beside every table (default: only "
                                    "for inputs of the paper's models)"},
        {"paper-model", CLI_STR, &o.paper_model, "NAME: with --paper, the paper's model for Tables 1, 5, 6 (Qwen3-8B, "
                                                 "Gemma2-9B, LLaMA3.1-8B, Mistral-7B, Phi-4B)"},
        {"paper-dir", CLI_STR, &o.paper_dir, "DIR: the paper's values (default configs/paper)"},
        {"layer-groups", CLI_STR, &o.layer_groups, "L,A-B,...: Table 8's rows (default: the rho_K layer alone, then the "
                                                   "ranges before and after it)"},
        {"help", CLI_FLAG, &help, "show this help"},
    };
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    const char *pos[MAX_INPUTS];
    struct cli_pos pa = {pos, MAX_INPUTS, 0};
    int rc = cli_parse_pos(argc, argv, opts, n_opts, &pa, e);
    const int n_pos = pa.n;
    if (rc) return rc;
    if (help) {
        cli_usage("tables", "INPUT... [--csv DIR] [--latex DIR] [--paper]   (INPUT: run directory, diagnose or trace "
                  "output, cost --json file)\n  the paper's Tables 1-10, each from the inputs that hold it: 1 and 8 diagnose; "
                  "2, 3, 5, 6, 7 and 9 runs;\n  4 a niah run and/or trace; 10 cost --json; A (the Smooth-QK alpha sweep) runs of one "
                  "model at two or more alphas", opts, n_opts);
        return 0;
    }
    if (n_pos < 1) return err_set(e, ERR_USAGE, "expected at least one input (run directory, diagnose.json, trace.json, cost --json file)");
    o.beside = paper ? PT_BESIDE_ALWAYS : PT_BESIDE_AUTO;
    struct pt_result res;
    if ((rc = pt_render(pos, n_pos, &o, csv, latex, &res, e))) return rc;
    fputs(res.md, stdout);
    free(res.md);
    return 0;
}
