// lock.h: one process at a time per run directory. A run, a merge into it and a report of it
// take an advisory flock(2) on DIR/run.lock; the kernel drops it when the process exits or is
// killed (SIGKILL, OOM, power loss), so a killed run never leaves the directory stuck and
// --resume needs no manual clean-up. The holder's pid is written into the file for the message.
#ifndef HIFA4_RESULTS_LOCK_H
#define HIFA4_RESULTS_LOCK_H

#include "base/common.h"

#define RESULTS_LOCK_FILE "run.lock"

// Takes the lock of run directory dir (which must exist) without waiting. *fd receives the
// descriptor to pass to results_unlock (-1 on error). Held by another process: ERR_IO naming
// the directory and, when known, the holder's pid ("in use by another hifa4-eval process").
int results_lock(const char *dir, int *fd, struct err *e);
// Releases the lock (closes fd); safe on -1. The lock file stays (harmless, reused next time).
void results_unlock(int fd);

#endif
