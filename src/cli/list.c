// list.c: `hifa4-eval list` - what this build knows: attention modes, tasks, named models.
#include <stdio.h>

#include "cli.h"

int cmd_list(int argc, char **argv, struct err *e) {
    int help = 0;
    struct cli_opt opts[] = {{"help", CLI_FLAG, &help, "show this help"}};
    int rc = cli_parse(argc, argv, 1, opts, 1, NULL, 0, NULL, e);
    if (rc) return rc;
    if (help) { cli_usage("list", "", opts, 1); return 0; }
    printf("(registries are filled in as modules land)\n");
    return 0;
}
