// calib_dist.h: a calibration over the ranks of an MPI job (base/dist.h). Each rank runs the
// forward passes of its share of the batches (batch b on rank b mod N; calibration batches
// are of equal size) and records their per-sample statistics; then every rank sends the
// statistics of its samples to rank 0, which holds all of them as one process would have
// recorded them - a sample's statistics depend only on the sample - and aggregates alone, so
// the scales file is the same bytes for any number of ranks.
#ifndef HIFA4_CALIB_DIST_H
#define HIFA4_CALIB_DIST_H

#include "calib/calib.h"

// 1: this rank runs batch b.
int calib_dist_mine(int batch);
// Sends the statistics of the samples this rank observed to rank 0 (workers), or receives
// every worker's into s (rank 0). Every rank calls it once, after its last batch; a no-op in
// a job of one process. ERR_IO on a message that does not fit s.
int calib_dist_gather(struct calib_stats *s, struct err *e);

#endif
