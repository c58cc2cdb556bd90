// run_label.h: what tells runs apart (report and table labels say what distinguishes
// two runs). One list of the recorded options that change a result - limit, tile, format,
// Q-Mean form, v-group, qdq-skip, activations, subjects, seed, and the model, scales and
// tokenizer fingerprints (hashes cut to 8 hex digits) - read from run.json, and two views of
// it: `diff`'s title ("limit 70 vs 80, tile 128 vs 64") and the row and title labels of the
// paper-layout `tables` ("limit 70, tile 128": this run's value of every field that varies
// among the runs shown of its model).
#ifndef HIFA4_RUN_LABEL_H
#define HIFA4_RUN_LABEL_H

#include <stddef.h>

#include "results/run_rec.h"

// The fields in which run.json records a and b differ, as "label A vs B" joined by ", "; ""
// when none.
void run_label_differences(char *out, size_t n, const struct run_rec *a, const struct run_rec *b);
// Run `run`'s value of every field that is not the same in all of group[0..n_group) (run among
// them or not), as "label value" joined by ", "; "" when the group agrees on all of them.
void run_label_in_group(char *out, size_t n, const struct run_rec *run, const struct run_rec *const *group, int n_group);

#endif
