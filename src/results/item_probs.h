// item_probs.h: one mode's per-item flip and hurt probabilities read from a run directory
//: the samples files of the mode and of the run's reference in replica 0 and in
// every replica of run --replicas K, turned into noise.h's probabilities. What `diff
// RUN_A:m RUN_B:m'` pairs by item id.
#ifndef HIFA4_ITEM_PROBS_H
#define HIFA4_ITEM_PROBS_H

#include "base/common.h"
#include "results/run_rec.h"

struct item_probs {
    int n;          // items (those non-finite in any file read are left out)
    int n_rep;      // runs per mode: K + 1
    char **ids;     // [n] item ids (owned)
    double *flip;   // [n] fraction of replicas in which mode differs from the same replica's reference
    double *hurt;   // [n] fraction in which the reference is right and mode wrong
};

// Reads task's samples of mode and of the reference (run.json "modes"[0]) in every replica of
// the run in dir (run is its run.json record). A file with another item count than run.json's, or
// items that differ between files, is ERR_MISMATCH naming the file. *out is zeroed on error.
int item_probs_load(struct item_probs *out, const char *dir, const struct run_rec *run, const char *task, const char *mode,
                    struct err *e);
void item_probs_free(struct item_probs *p); // safe on a zeroed struct

#endif
