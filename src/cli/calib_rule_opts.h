// calib_rule_opts.h: the option-table entries of the Smooth-QK gate rule's options, shared by
// calibrate and diagnose (the values are checked by calib/rule_args.h, which knows no option table).
#ifndef HIFA4_CALIB_RULE_OPTS_H
#define HIFA4_CALIB_RULE_OPTS_H

#include "calib/rule_args.h"
#include "cli/cli.h"

// Entries of a struct cli_opt table writing into a (a struct calib_rule_args).
#define CALIB_RULE_CLI_OPTS(a) \
    {"gate-rule", CLI_STR, &(a).rule, "paper|measured: the rule that decides Smooth-QK (default " CALIB_RULE_DEFAULT \
     "; both decisions are printed; docs/results/gate.md)"}, \
    {"gate-qmean", CLI_STR, &(a).qmean, "none|token|channel: Q-Mean form in the measured rule's error (default token)"}, \
    {"gate-samples", CLI_INT, &(a).samples, "N: calibration samples the measured rule runs on (default all)"}, \
    {"gate-max-ratio", CLI_DBL, &(a).max_ratio, "X: the measured rule smooths when the error ratio to bypass is <= X " \
     "and its 95% upper bound < 1 (default 0.95)"}, \
    {"gate-alphas", CLI_STR, &(a).alphas, "A,B,..: the measured rule's smoothing candidates, increasing, in (0, 1] " \
     "(default 0.25,0.5,1; each one more costs one more error pass)"}

#endif
