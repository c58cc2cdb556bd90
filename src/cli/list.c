// list.c: `hifa4-eval list` - what this build knows: attention modes (registry), tasks
// (registry) and named models (configs/models/*.json).
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attn.h"
#include "cli/cli.h"
#include "base/json_util.h"
#include "base/paths.h"
#include "eval/tasks/task.h"

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void list_models(void) {
    char home[4096], dir[4200];
    struct err e = {0};
    if (paths_home(home, sizeof home, &e) || path_join(dir, sizeof dir, home, "configs/models", &e)) {
        printf("  (configs/models not found: %s)\n", e.msg);
        return;
    }
    DIR *d = opendir(dir);
    if (!d) { printf("  (no %s)\n", dir); return; }
    char *names[256];
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 256)
        if (str_ends_with(de->d_name, ".json")) names[n++] = str_dup(de->d_name);
    closedir(d);
    if (n > 1) qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 0; i < n; i++) {
        char p[4400];
        cJSON *j = NULL;
        const char *repo = "?", *arch = "", *src = "hub", *disp = "";
        char where[300];
        if (!path_join(p, sizeof p, dir, names[i], &e) && !json_parse_file(&j, p, &e)) {
            json_opt_str(j, "repo", &repo, "?", p, &e);
            json_opt_str(j, "architecture", &arch, "", p, &e);
            json_opt_str(j, "source", &src, "hub", p, &e);
            json_opt_str(j, "display_name", &disp, "", p, &e);
        }
        names[i][strlen(names[i]) - 5] = 0;
        if (!strcmp(src, "pypi")) snprintf(where, sizeof where, "PyPI: %s", disp); // a GGUF, imported when first used
        else snprintf(where, sizeof where, "%s", repo);
        printf("  %-14s %-38s %s\n", names[i], where, arch);
        cJSON_Delete(j);
        free(names[i]);
    }
}

int cmd_list(int argc, char **argv, struct err *e) {
    int help = 0;
    struct cli_opt opts[] = {{"help", CLI_FLAG, &help, "show this help"}};
    int rc = cli_parse(argc, argv, opts, 1, e);
    if (rc) return rc;
    if (help) { cli_usage("list", "", opts, 1); return 0; }
    printf("attention modes (--attn):\n");
    for (int i = 0; i < attn_mode_count(); i++) {
        const struct attn_mode *m = attn_mode_at(i);
        printf("  %-24s %s%s%s\n", m->name, m->label, (m->flags & ATTN_F_QMEAN) ? "  [--qmean token|channel]" : "",
               (m->flags & ATTN_F_SQK) ? "  [needs --scales]" : "");
    }
    printf("  Q-Mean forms (--qmean): token = per-row scalar mean (paper Alg. 1, default); channel = per-channel mean\n"
           "  over each query tile of --tile rows (SageAttention2's Q smoothing, spec qmean-ch)\n");
    printf("\ntasks (--task):\n");
    for (int i = 0; i < task_count(); i++) printf("  %-16s %s\n", task_at(i)->name, task_at(i)->desc);
    printf("\nnamed models (--model NAME; also ORG/NAME[@REVISION] from the Hugging Face Hub, FILE.gguf, or a checkpoint directory):\n");
    list_models();
    return 0;
}
