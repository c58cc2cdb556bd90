// merge.c: `hifa4-eval merge SHARD_DIR... --out DIR` joins the run directories of
// `run --shard K/N` into one run (run_merge in src/eval/run.h: byte-identical to an unsharded
// run's samples and summary).
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "base/out_path.h"
#include "eval/run.h"

#define MAX_SHARDS 1024

int cmd_merge(int argc, char **argv, struct err *e) {
    int help = 0;
    const char *out = NULL;
    struct cli_opt opts[] = {
        {"out", CLI_STR, &out, "DIR: the merged run directory (required, must not hold a run)"},
        {"help", CLI_FLAG, &help, "show this help"},
    };
    const char *pos[MAX_SHARDS];
    struct cli_pos pa = {pos, MAX_SHARDS, 0};
    int rc = cli_parse_pos(argc, argv, opts, 2, &pa, e);
    const int n_pos = pa.n;
    if (rc) return rc;
    if (help) { cli_usage("merge", "SHARD_DIR... --out DIR", opts, 2); return 0; }
    if (n_pos < 1) return err_set(e, ERR_USAGE, "expected the shard run directories");
    if (!out) return err_set(e, ERR_USAGE, "--out is required");
    if ((rc = out_path_check("--out", out, pos, n_pos, e))) return rc;
    char *head = NULL;
    if (!(rc = run_merge(pos, n_pos, out, &head, e))) printf("merged %d shards: %s/report.md\n\n%s", n_pos, out, head ? head : "");
    free(head);
    return rc;
}
