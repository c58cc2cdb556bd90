// cli.h: command-line option parsing shared by the subcommands in src/cli/ (the CLI layer,
// DESIGN.md section 2). Parsing never exits or prints: errors come back as ERR_USAGE.
#ifndef HIFA4_CLI_H
#define HIFA4_CLI_H

#include "base/common.h"

enum cli_type {
    CLI_STR,    // const char *       (points into argv)
    CLI_INT,    // int                (decimal, range-checked)
    CLI_I64,    // int64_t
    CLI_DBL,    // double             (finite)
    CLI_FLAG,   // int, set to 1; takes no value
};

struct cli_opt {
    const char *name;  // long name without "--"
    enum cli_type type;
    void *dst;
    const char *help;  // "ARG: text" for usage output
};

#define CLI_MAX_OPTS 128 // options of one command

// Parses argv[first..argc) against opts (n <= CLI_MAX_OPTS entries). Each option may be given
// once (twice is ERR_USAGE: no option is repeatable). Options take "--name value" or
// "--name=value"; anything not starting with "--" is positional and collected into pos
// (capacity max_pos; *n_pos set). "--" ends option parsing. Unknown option, missing value,
// bad number or too many positionals: ERR_USAGE with a message naming the option and value.
int cli_parse(int argc, char **argv, int first, const struct cli_opt *opts, int n,
              const char **pos, int max_pos, int *n_pos, struct err *e);
// Prints "usage: hifa4-eval <cmd> <synopsis>" and the option table to stdout (CLI layer only;
// called for --help, whose output is the result, like the top-level `hifa4-eval --help`).
void cli_usage(const char *cmd, const char *synopsis, const struct cli_opt *opts, int n);

// Splits a comma list into at most max items (pointers into buf, which is modified); returns
// the count. An empty list or an empty element ("a,,b", "a,") is ERR_USAGE.
int cli_split(char *buf, const char **items, int max, struct err *e);

#define CMD(name, help) int cmd_##name(int argc, char **argv, struct err *e);
#include "cli/commands.h"
#undef CMD

#endif
