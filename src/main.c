// main.c: the hifa4-eval entry point. Picks the subcommand (DESIGN.md section 1), runs it,
// prints its error and maps it to the exit status: 0 ok, 1 error, 2 usage. The only file
// that exits. The bare form `hifa4-eval --model M --task T` is `run`.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "base/dist.h"
#include "base/host.h"
#include "cli/cli.h"
#include "model/gemm.h"

struct command {
    const char *name;
    int (*run)(int argc, char **argv, struct err *e);
    const char *help;
};

static const struct command commands[] = {
#define CMD(n, h) {#n, cmd_##n, h},
#include "cli/commands.h"
#undef CMD
};
static const int n_commands = (int)(sizeof commands / sizeof commands[0]);

static void usage(FILE *f) {
    fprintf(f, "hifa4-eval: does 4-bit attention change what a model decides?\n\n"
               "usage: hifa4-eval <command> [--option value]...\n"
               "       hifa4-eval --model M --task T [run options]   (same as 'run')\n\n"
               "commands:\n");
    for (int i = 0; i < n_commands; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s", commands[i].name);
        for (char *p = name; *p; p++) if (*p == '_') *p = '-';
        fprintf(f, "  %-16s %s\n", name, commands[i].help);
    }
    fprintf(f, "\nglobal: --quiet, --verbose (before the command), --version; 'hifa4-eval <command> --help' "
               "for its options\n");
}

// Commands that split their work over the ranks of an MPI job; any other runs as one process.
static int distributed(const char *name) { return !strcmp(name, "run") || !strcmp(name, "calibrate"); }

static int run_main(int argc, char **argv) {
    int i = 1;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "--quiet")) log_set_level(LOG_WARN);
        else if (!strcmp(argv[i], "--verbose")) log_set_level(LOG_DEBUG);
        else break;
    }
    if (i < argc && (!strcmp(argv[i], "--version") || !strcmp(argv[i], "version"))) {
        char rev[128];
        host_git_revision(rev, sizeof rev);
        printf("hifa4-eval %s (git %s, MPI: %s)\n", HIFA4_VERSION, rev, dist_built() ? "yes" : "no");
        return 0;
    }
    if (i >= argc || !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h") || !strcmp(argv[i], "help")) {
        usage(i >= argc ? stderr : stdout);
        return i >= argc ? 2 : 0;
    }
    const struct command *cmd = NULL;
    int sub_argc = argc - i;
    char **sub_argv = argv + i;
    char **bare = NULL;
    if (argv[i][0] == '-' && argv[i][1] == '-') {
        // bare form: treat as `run` with the same options
        for (int k = 0; k < n_commands; k++)
            if (!strcmp(commands[k].name, "run")) cmd = &commands[k];
        if (!cmd) { fprintf(stderr, "hifa4-eval: 'run' is not available in this build\n"); return 2; }
        bare = malloc(sizeof(char *) * (size_t)(sub_argc + 2));
        if (!bare) { fprintf(stderr, "hifa4-eval: out of memory\n"); return 1; }
        bare[0] = "run";
        for (int k = 0; k < sub_argc; k++) bare[k + 1] = sub_argv[k];
        bare[sub_argc + 1] = NULL;
        sub_argv = bare;
        sub_argc++;
    } else {
        // Command names are C identifiers (X-macro); the CLI spells them with dashes
        // (make-model, import-llama2c): compare with '-' read as '_'.
        for (int k = 0; k < n_commands && !cmd; k++) {
            const char *a = argv[i], *b = commands[k].name;
            while (*a && *b && (*a == *b || (*a == '-' && *b == '_'))) a++, b++;
            if (!*a && !*b) cmd = &commands[k];
        }
        if (!cmd) {
            fprintf(stderr, "hifa4-eval: unknown command '%s'\n\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    struct err e = {0};
    int rc;
    char isa_msg[256];
    if (gemm_isa_init(isa_msg, sizeof isa_msg)) { // an environment variable: named before any work, not at the first GEMM
        fprintf(stderr, "hifa4-eval %s: environment variable HIFA4_GEMM_ISA='%s': %s; unset it for the best path this CPU "
                "has\n", cmd->name, getenv("HIFA4_GEMM_ISA") ? getenv("HIFA4_GEMM_ISA") : "", isa_msg);
        free(bare);
        return 2;
    }
    if (dist_size() > 1 && !distributed(cmd->name)) {
        rc = dist_agree(err_set(&e, ERR_USAGE, "runs as one process (only run and calibrate use the ranks of an MPI "
                                "job)"), &e);
    } else {
        rc = cmd->run(sub_argc, sub_argv, &e);
    }
    free(bare);
    if (rc == 0) return 0;
    if (dist_size() == 1) fprintf(stderr, "hifa4-eval %s: %s\n", cmd->name, e.msg[0] ? e.msg : err_code_name(rc));
    else if (dist_failed_together() != 2)
        fprintf(stderr, "hifa4-eval %s: rank %d (%s): %s\n", cmd->name, dist_rank(), dist_host(),
                e.msg[0] ? e.msg : err_code_name(rc));
    return rc == ERR_USAGE ? 2 : 1;
}

// Under MPI: a failure every rank agreed on ends the ranks normally; any other (one rank failed
// while the others wait for it) ends the whole job at once (MPI_Abort), which mpirun and srun
// report naming the rank.
int main(int argc, char **argv) {
    struct err e = {0};
    if (dist_init(&argc, &argv, &e)) {
        fprintf(stderr, "hifa4-eval: %s\n", e.msg);
        dist_abort(1);
        return 1;
    }
    const int status = run_main(argc, argv);
    if (status && dist_size() > 1 && !dist_failed_together()) dist_abort(status);
    dist_finalize();
    return status;
}
