// rule_args.h: the options of the Smooth-QK gate rule (--gate-rule, --gate-qmean, --gate-samples,
// --gate-max-ratio, --gate-alphas; docs/results/gate.md) as given, checked and applied to a
// calibration's options. Shared by calibrate, diagnose and run's automatic calibration, so each
// refuses the same values with the same words; the option table of the commands is cli's
// (cli/calib_rule_opts.h).
#ifndef HIFA4_RULE_ARGS_H
#define HIFA4_RULE_ARGS_H

#include "base/common.h"
#include "calib/calib_run.h"

// The Smooth-QK gate rule a calibration applies unless --gate-rule says otherwise, and why:
// docs/results/gate.md ("Which rule is the default").
#define CALIB_RULE_DEFAULT "measured"

struct calib_rule_args {
    const char *rule, *qmean;
    const char *alphas; // NULL: gate_opts_default's grid
    int samples;
    double max_ratio;
};
void calib_rule_args_default(struct calib_rule_args *a);
// Checks the arguments and sets o->gate.rule, o->gate.meas and o->measure = 1 (ERR_USAGE naming
// the option and value).
int calib_rule_args_apply(const struct calib_rule_args *a, struct calib_run_opts *o, struct err *e);

#endif
