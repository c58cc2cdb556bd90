// tables.c: `hifa4-eval tables RUN...` - the paper's Tables 3/5/6/7 layout (rows model x mode,
// columns tasks) from the summary.json of several runs, as Markdown on stdout and CSV files.
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "results/report.h"

#define MAX_RUNS 256

int cmd_tables(int argc, char **argv, struct err *e) {
    int help = 0;
    const char *csv = NULL;
    struct cli_opt opts[] = {
        {"csv", CLI_STR, &csv, "DIR: also write table3.csv ... table7.csv there"},
        {"help", CLI_FLAG, &help, "show this help"},
    };
    const char *pos[MAX_RUNS];
    int n_pos = 0;
    int rc = cli_parse(argc, argv, 1, opts, 2, pos, MAX_RUNS, &n_pos, e);
    if (rc) return rc;
    if (help) { cli_usage("tables", "RUN_DIR... [--csv DIR]", opts, 2); return 0; }
    if (n_pos < 1) return err_set(e, ERR_USAGE, "expected at least one run directory");
    char *md = NULL;
    if ((rc = report_tables(pos, n_pos, csv, &md, e))) return rc;
    fputs(md, stdout);
    free(md);
    return 0;
}
