// degenerate.h: flags a mode whose answers carry no information about the questions: one that
// puts its prediction on the same option position for most items (a model that always answers
// "A" scores the share of A among the gold answers), or whose accuracy's Wilson 95% interval
// contains the chance accuracy (mean of 1/choices over the items). Such a mode's accuracy is
// not a measure of knowledge, and a flip rate of 0 against another degenerate mode means
// nothing. The report lists every flagged (task, mode) before its tables.
#ifndef HIFA4_DEGENERATE_H
#define HIFA4_DEGENERATE_H

#include <cjson/cJSON.h>

#include "base/common.h"
#include "results/results.h"
#include "results/run_rec.h"

#define DEGENERATE_SHARE 0.8   // "most items": the most picked option position on >= 80% of them
#define DEGENERATE_MAX_POS 26  // option positions counted (A..Z); later ones count as one

struct degenerate {
    int n;                 // items counted (non-finite ones left out)
    int top_pos;           // the most picked option position (0 = A)
    double top_share;      // its share of the items
    double acc, acc_lo, acc_hi; // accuracy and its Wilson 95% interval
    double chance;         // mean of 1/n_choices
    int same_position;     // top_share >= DEGENERATE_SHARE
    int at_chance;         // acc_lo <= chance <= acc_hi
};

// The check over n samples (s may be NULL with n = 0: nothing flagged).
void degenerate_check(struct degenerate *d, const struct results_sample *s, int n);

// The report's section: one line per flagged (task, mode) of the run in dir (multiple-choice
// tasks; perplexity tasks have no decisions), or one line saying none is. Reads the samples files.
int degenerate_md(struct results_buf *o, const char *dir, const struct run_rec *run, const cJSON *sum, struct err *e);

#endif
