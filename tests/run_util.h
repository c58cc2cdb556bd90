// run_util.h: a whole run through the run API (eval/run.h) for tests that drive it in-process
// (test_run_api, test_prefix_run): open, every task scored, finish, free.
#ifndef HIFA4_TEST_RUN_UTIL_H
#define HIFA4_TEST_RUN_UTIL_H

#include <stdlib.h>

#include "eval/run.h"

// Scores every task of the run o describes (in every replica of run_opts.replicas); ranges (NULL: one call per task) split each task
// into run_task_score calls ending at ranges[0], ranges[1], ... (the last >= the task size).
// Returns run_open's or the first failing call's code with e set.
static inline int test_run_all(const struct run_opts *o, const int *ranges, struct err *e) {
    struct run *r = NULL;
    int rc = run_open(&r, o, e);
    for (int rep = 0; !rc && rep <= run_n_replicas(r); rep++) {
    if ((rc = run_set_replica(r, rep, e))) break;
    for (int t = 0; !rc && t < run_n_tasks(r); t++) {
        int next;
        if ((rc = run_task_begin(r, t, &next, e))) break;
        for (int k = 0; !rc && next < run_task_items(r, t); k++) {
            const int end = ranges ? ranges[k] : run_task_items(r, t);
            rc = run_task_score(r, t, end, e);
            if (end >= run_task_items(r, t)) break;
        }
        if (!rc) rc = run_task_end(r, t, e);
    }
    }
    if (!rc) rc = run_set_replica(r, 0, e);
    char *head = NULL;
    if (!rc) rc = run_finish(r, &head, e);
    free(head);
    run_free(r);
    return rc;
}

#endif
