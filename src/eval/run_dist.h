// run_dist.h: one run over the ranks of an MPI job (base/dist.h) - the same run directory,
// byte for byte, as one process writes.
//
// Every rank opens the run with the same options (rank 0 as RUN_ROLE_WHOLE, the others as
// RUN_ROLE_WORKER), so every rank holds the same plans. Rank 0 cuts the items still to score
// (after the resume point of every task) into work units of consecutive items (at most one
// samples frame, about 8 units per rank per task), queues them largest first by positions to
// compute, and hands them out on request; a worker returns each unit's samples lines under
// every mode and asks for the next with the same message. Rank 0 computes units itself beside
// a dispatcher thread and writes the lines of every task in item order through the crash-safe
// writer (results.h), so a killed job leaves whole frames that --resume under any number of
// ranks completes. Workers write nothing.
#ifndef HIFA4_RUN_DIST_H
#define HIFA4_RUN_DIST_H

#include "base/common.h"
#include "eval/run.h"

// Scores every task of r to its end over all ranks (every rank calls it once after run_open).
// On rank 0 the run is then ready for run_finish, with the ranks' counts summed and run.json
// "distributed" describing the execution (ranks, hosts, busy seconds, units, imbalance); the
// final log line gives each rank's busy seconds and the load imbalance (max/mean). On a
// worker, the run is only to be freed. An error on any rank is returned there (the caller ends
// the job: dist_abort).
int run_dist_score(struct run *r, struct err *e);

#endif
