// run_plan.h: a run made once, then driven. The plan holds everything run_open consumes - the
// model resolved (model_arg.h), the Smooth-QK scales found or calibrated first (run_calib.h),
// the modes that remain, every task with its data loaded - so `run`, the tests, the ranks of an
// MPI job and any other caller get the same run from the same arguments. run_plan_drive then
// opens it, scores every task under every mode (and replica) and finishes it.
//
// Under MPI (base/dist.h) every rank makes the plan: rank 0 resolves the model and calibrates
// (downloading and importing as needed) while the others wait, then they find all of it in the
// caches, offline; a failure on any rank fails every rank at the same point.
#ifndef HIFA4_RUN_PLAN_H
#define HIFA4_RUN_PLAN_H

#include <cjson/cJSON.h>

#include "base/common.h"
#include "eval/run.h"
#include "runplan/model_arg.h"

// What the plan is made from besides the run's options, as the user gave it.
struct run_plan_args {
    const char *model;               // --model (model_arg.h)
    const char *const *modes;        // --attn names (the single name "all": every mode; none: the
    int n_modes;                     // defaults), first = reference (run_select_modes)
    const char *const *tasks;        // --task names (run_select_tasks)
    int n_tasks;
    const char *scales;              // --scales FILE, "none" (the modes that need scales are dropped),
                                     // or NULL: calibrate's default file, else a calibration first
    const char *calib;               // --calib FILE: the text of that calibration (NULL: the default)
    const char *gate_rule;           // its --gate-rule (NULL: CALIB_RULE_DEFAULT)
    const char *qmean;               // --qmean as given (NULL: token): the measured rule's error uses it
    int offline;                     // never download (rank 0's model and calibration text)
    int threads;                     // --threads, 0: all cores; the one thread count of the run
};

struct run_plan {
    struct run_opts o;               // run_open's options, complete (o.loaded points into this plan:
                                     // a made plan is not copied)
    struct run_tasks tasks;          // every task's data but niah's, until run_open takes it
    struct model_ref model;          // the resolved --model (o.model_dir, o.model_name point here)
    cJSON *source;                   // run.json model.source (o.model_source)
    cJSON *calibration;              // run.json calibration when this plan calibrated, else NULL
    char scales[4096];               // the scales file found or made (o.scales points here)
};

// Makes the plan from o (the run's other options, copied: model_arg, task options, attention
// options, run directory, ...) and a. In order, so every check a user can fail comes before a
// download: the thread count, the modes and tasks, run_precheck (run directory, --scales file,
// every task's data loaded once and kept, --subjects), then the model and the scales (modes
// that need scales dropped in one warning when --scales none, or --attn all finds none). Every
// rank of an MPI job calls it and the ranks meet inside whether it fails or not. Errors: the
// first failing step's (ERR_USAGE for lists, ERR_NOTFOUND for data and models, calibrate's).
// Free with run_plan_free, made or not.
int run_plan_make(struct run_plan *p, const struct run_opts *o, const struct run_plan_args *a, struct err *e);
void run_plan_free(struct run_plan *p); // safe on a zeroed or failed plan

// The end of a driven run: where it was written and its report's headline table.
struct run_done {
    int written;                     // 1: this process wrote the run (0: a worker rank of an MPI job)
    char dir[4096];                  // the run directory
    char *headline;                  // the report's headline table (caller frees), or NULL
    double seconds;                  // wall time of the drive
};
// Opens the plan's run (on every rank; a failure to open on any rank ends all of them alike),
// scores every task to its end for replica 0..K (K = o.replicas) - alone, or under MPI over the
// ranks (eval/run_dist.h) - shows progress on rank 0 (base/progress.h) and finishes the run
// (run_finish). Consumes the plan's task data. *done is zeroed first.
int run_plan_drive(struct run_plan *p, struct run_done *done, struct err *e);

#endif
