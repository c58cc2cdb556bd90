// pool.h: the process's worker threads for data-parallel loops (GEMM column blocks, rows of
// element-wise ops, attention heads, scored items). A loop is n independent tasks; the calling
// thread and the workers claim tasks one at a time from a shared counter, and the call returns
// as soon as every task has finished - it never waits for a thread that has not started one.
// That is what keeps a loaded machine at its fair share: under OpenMP, every parallel region
// ends in a barrier that waits for each team member to be scheduled again (measured: a 2-core
// machine with 3 other CPU-bound processes made `make test` 20x slower), while here a
// descheduled worker only delays the task it holds, and idle workers sleep instead of spinning.
//
// Results must never depend on which thread runs a task or how many threads there are: tasks
// write disjoint outputs and each task's arithmetic is fixed. Calls from inside a task run
// their loop serially on the calling thread (no nesting). Thread-safe for one caller at a time
// per process (the forward pass, scoring and calibration call it from the main thread).
#ifndef HIFA4_POOL_H
#define HIFA4_POOL_H

// fn(ctx, task, slot): task in [0, n); slot in [0, pool_slots()) identifies the executing
// thread (for per-thread scratch); the same slot never runs two tasks at once.
typedef void (*pool_fn)(void *ctx, int task, int slot);

// Sets the number of threads loops may use (the caller included; <= 0: the number of online
// CPUs, or $OMP_NUM_THREADS when set). Workers start lazily at the first parallel loop.
// Call before any loop runs or between loops, never from inside a task.
void pool_set_threads(int n);
int pool_threads(void); // resolved count (>= 1)
int pool_slots(void);   // slot indices are < this (= pool_threads())

// Runs tasks 0..n-1 on up to max_threads threads (<= 0: all), the caller among them; returns
// when all have finished. n <= 0 returns at once. Serial when max_threads == 1, when only one
// task exists, or when called from inside a task.
void pool_for(int n, pool_fn fn, void *ctx, int max_threads);

// Stops the workers (tests; also registered at exit). Later loops restart them.
void pool_shutdown(void);

#endif
