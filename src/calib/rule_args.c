// rule_args.c: the gate rule's options checked and applied (see rule_args.h).
#include "calib/rule_args.h"

#include <stdlib.h>

#include "calib/gate.h"
#include "calib/gate_err.h"

void calib_rule_args_default(struct calib_rule_args *a) {
    a->rule = CALIB_RULE_DEFAULT;
    a->qmean = "token";
    a->samples = 0;
    a->max_ratio = 0.95;
    a->alphas = NULL;
}

// "A,B,...": increasing alphas in (0, 1], at most GATE_MAX_CAND - 1 of them.
static int parse_alphas(const char *s, struct gate_opts *g, struct err *e) {
    int n = 0;
    for (const char *p = s;; n++) {
        char *end;
        double a = strtod(p, &end);
        if (end == p || (*end && *end != ',') || !(a > 0 && a <= 1) || (n && a <= g->alpha[n - 1]) ||
            n == GATE_MAX_CAND - 1)
            return err_set(e, ERR_USAGE, "--gate-alphas '%s': expected up to %d increasing numbers in (0, 1], e.g. "
                           "0.25,0.5,1", s, GATE_MAX_CAND - 1);
        g->alpha[n] = a;
        if (!*end) break;
        p = end + 1;
    }
    g->n_alpha = n + 1;
    return 0;
}

int calib_rule_args_apply(const struct calib_rule_args *a, struct calib_run_opts *o, struct err *e) {
    if (calib_rule_parse(a->rule, &o->gate.rule))
        return err_set(e, ERR_USAGE, "--gate-rule '%s': expected paper or measured", a->rule);
    if (gate_qmean_parse(a->qmean, &o->gate.meas.qmean))
        return err_set(e, ERR_USAGE, "--gate-qmean '%s': expected none, token or channel", a->qmean);
    if (a->samples < 0) return err_set(e, ERR_USAGE, "--gate-samples %d: expected >= 0 (0 = all)", a->samples);
    if (!(a->max_ratio > 0 && a->max_ratio <= 1))
        return err_set(e, ERR_USAGE, "--gate-max-ratio %g: expected in (0, 1]", a->max_ratio);
    if (a->alphas && parse_alphas(a->alphas, &o->gate.meas, e)) return e->code;
    o->gate.meas.samples = a->samples;
    o->gate.meas.max_ratio = a->max_ratio;
    o->measure = 1;
    return 0;
}
