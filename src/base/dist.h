// dist.h: the processes of one job - MPI ranks - behind a thin wrapper, so that only dist.c
// includes <mpi.h>. Built with `make MPI=1` (HIFA4_MPI defined, mpicc) the job is whatever
// mpirun/srun started; in the default build, or an MPI build started alone, it is one process of
// rank 0 and every call below is a no-op that succeeds.
//
// Messages are byte strings with a tag. Waiting for one polls (MPI_Iprobe + 1 ms sleeps) rather
// than blocking in MPI_Recv: Open MPI's blocking receive spins a core, and rank 0 computes
// beside its dispatcher on machines with few cores. Only one thread of a process may call
// dist_* at a time (MPI_THREAD_SERIALIZED).
#ifndef HIFA4_DIST_H
#define HIFA4_DIST_H

#include <stddef.h>

#include "base/common.h"

int dist_built(void);               // 1: this binary was built with MPI
// Starts MPI when built with it (MPI_Init_thread, SERIALIZED). Call first in main. ERR_INTERNAL
// if MPI cannot give the thread level.
int dist_init(int *argc, char ***argv, struct err *e);
void dist_finalize(void);           // safe without dist_init
int dist_rank(void);                // 0 without MPI
int dist_size(void);                // 1 without MPI
const char *dist_host(void);        // this process's host name (static storage)
// Ends every rank of the job at once (a rank that fails while the others wait for it).
void dist_abort(int code);
// Every rank calls it with its own status at the same point: 0 where every rank's rc is 0;
// else the job fails together - every rank returns an error (its own, or "another rank
// failed") and main then ends the ranks normally instead of aborting the job, printing the
// error of rank 0 if rank 0 failed, else the workers' own.
int dist_agree(int rc, struct err *e);
int dist_failed_together(void); // dist_agree failed: 1 (print this rank's error), 2 (stay silent)

int dist_send(int to, int tag, const void *buf, size_t n, struct err *e);
// Waits for a message of tag (or any tag when tag < 0) from rank from (any when from < 0):
// *from_out, *tag_out, *n_out describe it; it is still to be received with dist_recv. timeout_s
// <= 0 waits forever; on timeout returns 1 (no message), else 0.
int dist_wait(int from, int tag, double timeout_s, int *from_out, int *tag_out, size_t *n_out);
// Receives the message dist_wait announced (exactly n bytes) into buf.
int dist_recv(int from, int tag, void *buf, size_t n, struct err *e);
// The largest v over all ranks (every rank calls it): agreeing on failure before a collective step.
int dist_max_int(int v);
// Gathers n bytes from every rank at rank 0: out (rank 0 only, dist_size() * n bytes).
int dist_gather(const void *buf, size_t n, void *out, struct err *e);

#endif
