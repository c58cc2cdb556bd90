// gate_report.c: the paper's and the measured gate's decisions side by side (calib.h).
#include <stdio.h>

#include "calib/calib.h"
#include "calib/gate_err.h"

int calib_rules_disagree(const struct calib_result *r) {
    if (!r->gate.layer) return 0;
    const int paper_smooths = r->paper_branch != CALIB_BYPASS;
    return paper_smooths != r->gate.smooth;
}

void calib_print_rules(FILE *f, const struct calib_result *r) {
    const struct gate_result *g = &r->gate;
    if (!g->layer) return;
    fprintf(f, "gate rules per layer: paper = rho_K, T_KQ (its own layer's decision); measured = rel-L2 attention-output "
               "error of HiF4 Q/K (Q-Mean %s) at bypass, and its ratio to bypass per alpha [95%% interval at the best]\n",
            gate_qmean_name(g->qmean));
    fprintf(f, "layer   rho_K    T_KQ  paper   err_bypass");
    for (int c = 1; c < g->n_cand; c++) fprintf(f, "  ratio@%-4g", g->alpha[c]);
    fprintf(f, "  [95%% best]       measured\n");
    for (int l = 0; l < g->n_layers; l++) {
        const struct calib_layer_stats *ls = &r->layer[l];
        const struct gate_layer *gl = &g->layer[l];
        fprintf(f, "%5d  %6.3f  %6.3f  %-6s  %10.4g", l, ls->rho_k, ls->t_kq, calib_branch_name(ls->branch), gl->rel[0]);
        for (int c = 1; c < g->n_cand; c++) fprintf(f, "  %10.3f", gl->ratio[c]);
        fprintf(f, "  [%.3f, %.3f]  %s", gl->lo, gl->hi, gl->smooth ? "smooth" : "bypass");
        if (gl->smooth) fprintf(f, " %.2f", gl->alpha);
        fprintf(f, "\n");
    }
    fprintf(f, "model, paper rule:    rho_K %.3f (layer %d), T_KQ %.3f (layer %d) -> %s\n", r->rho_k, r->rho_layer,
            r->t_kq, r->t_layer, calib_branch_name(r->paper_branch));
    fprintf(f, "model, measured rule: mean error over layers %.4g at bypass, ratio", g->rel[0]);
    for (int c = 1; c < g->n_cand; c++) fprintf(f, " %.3f (alpha %g)", g->ratio[c], g->alpha[c]);
    fprintf(f, "; best alpha %g [%.3f, %.3f] over %d samples; %d of %d layers helped -> %s", g->alpha[g->best], g->lo,
            g->hi, g->n_samples, g->n_layers_smooth, g->n_layers, g->smooth ? "smooth" : "bypass");
    if (g->smooth) fprintf(f, ", alpha %g", g->alpha_model);
    fprintf(f, " (helps: ratio <= %g and 95%% upper bound < 1)\n", g->max_ratio);
    fprintf(f, "scales made by the %s rule\n", calib_rule_name(r->rule));
    if (calib_rules_disagree(r)) {
        char meas[64] = "bypass";
        if (g->smooth) snprintf(meas, sizeof meas, "smooth at alpha %g", g->alpha_model);
        fprintf(f, "warning: the gate rules disagree: paper %s, measured %s (--gate-rule chooses; docs/results/gate.md)\n",
                calib_branch_name(r->paper_branch), meas);
    }
}
