// report_noise.h: report.md's "How much is noise" section from summary.json's
// "noise" objects (results.h, noise.h): null flip rates, flip and hurt probabilities with
// their intervals beside the single-run figures, and the paired differences of every pair of
// non-reference modes (up to REPORT_NOISE_MAX_MODES modes) with p and the items needed.
#ifndef HIFA4_REPORT_NOISE_H
#define HIFA4_REPORT_NOISE_H

#include <cjson/cJSON.h>

#include "results/results.h"
#include "results/run_rec.h"

#define REPORT_NOISE_MAX_MODES 8

// Appends the section to o (nothing when the summary has no "noise" or fewer than two
// non-reference modes and no replicas). Returns 0, or nonzero when o ran out of memory.
int report_noise_md(struct results_buf *o, const cJSON *sum, const struct run_rec *run);

#endif
