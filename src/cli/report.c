// report.c (CLI): `hifa4-eval report RUN` - recomputes summary.json from the samples files and
// re-renders report.md, tables/*.csv and plots/*.svg (src/results/report.c).
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "results/lock.h"
#include "results/report.h"
#include "results/results.h"
#include "results/run_rec.h"

static int render(const char *dir, int keep, struct err *e);

int cmd_report(int argc, char **argv, struct err *e) {
    int help = 0, keep = 0;
    struct cli_opt opts[] = {
        {"keep-summary", CLI_FLAG, &keep, "render from the existing summary.json instead of recomputing it"},
        {"help", CLI_FLAG, &help, "show this help"},
    };
    const char *pos[1];
    struct cli_pos pa = {pos, 1, 0};
    int rc = cli_parse_pos(argc, argv, opts, 2, &pa, e);
    const int n_pos = pa.n;
    if (rc) return rc;
    if (help) { cli_usage("report", "RUN_DIR", opts, 2); return 0; }
    if (n_pos != 1) return err_set(e, ERR_USAGE, "expected one run directory");
    // a run still writing (or killed) is refused: its samples files may differ in length per
    // mode; the lock keeps a --resume of this directory from starting while we write into it
    struct run_rec run;
    if (!(rc = run_rec_load(&run, pos[0], e))) rc = results_check_complete(pos[0], &run, e);
    run_rec_free(&run);
    if (rc) return rc;
    int lock = -1;
    if ((rc = results_lock(pos[0], &lock, e))) return rc;
    rc = render(pos[0], keep, e);
    results_unlock(lock);
    return rc;
}

// summary.json (unless keep) and report.md, tables, plots; the headline on stdout.
static int render(const char *dir, int keep, struct err *e) {
    int rc;
    const char *pos[1] = {dir};
    if (!keep) {
        cJSON *sum = NULL;
        char path[4096];
        if ((rc = results_summarize(pos[0], &sum, e))) return rc;
        rc = path_join(path, sizeof path, pos[0], "summary.json", e);
        if (!rc) rc = results_write_json(path, sum, e);
        cJSON_Delete(sum);
        if (rc) return rc;
    }
    char *head = NULL;
    if ((rc = report_render(pos[0], &head, e))) return rc;
    printf("report: %s/report.md\n\n%s", pos[0], head ? head : "");
    free(head);
    return 0;
}
