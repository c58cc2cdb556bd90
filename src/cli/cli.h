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
    CLI_THREADS,// int: N >= 1 threads, or 0 = all cores (anything else is an error); every
                // command's --threads is this type, and 0 is also what an absent --threads means
};
// The help text of every --threads option.
#define CLI_THREADS_HELP "N: threads, N >= 1, or 0 = all cores (default 0)"

struct cli_opt {
    const char *name;  // long name without "--"
    enum cli_type type;
    void *dst;
    const char *help;  // "ARG: text" for usage output
};

#define CLI_MAX_OPTS 128 // options of one command

// Parses argv[1..argc) (argv[0] is the command) against opts (n <= CLI_MAX_OPTS entries). Each option may be given
// once (twice is ERR_USAGE: no option is repeatable). Options take "--name value" or
// "--name=value"; anything not starting with "--" is positional, which cli_parse refuses.
// "--" ends option parsing. Unknown option, missing value, bad number or an unexpected
// positional: ERR_USAGE with a message naming the option and value.
int cli_parse(int argc, char **argv, const struct cli_opt *opts, int n, struct err *e);
// Where cli_parse_pos collects the positional arguments: v[0..max), n set to their count.
struct cli_pos {
    const char **v; // (max)
    int max, n;
};
// cli_parse for a command with positional arguments: more than pos->max is ERR_USAGE.
int cli_parse_pos(int argc, char **argv, const struct cli_opt *opts, int n, struct cli_pos *pos, struct err *e);
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
