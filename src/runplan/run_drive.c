// run_drive.c: a made plan driven to its end (see run_plan.h): opened on every rank, every
// task scored for every replica - in this process, or over the ranks of an MPI job - with one
// live progress line, then finished by rank 0.
#include "runplan/run_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dist.h"
#include "base/progress.h"
#include "eval/run_dist.h"

// ---- progress ----
// One live line (base/progress.h): the task, the mode being computed (and the replica, with
// --replicas), items of the task and the run's ETA. Resumed items took no time here and are left
// out of the rate; their count grows as later replicas find their tasks complete.
struct run_line { struct progress *p; const char *task; int replica; };
static void progress_show(void *user, const struct run_progress *rp) {
    struct run_line *l = user;
    if (!l->p) {
        l->p = progress_open(rp->task, PROGRESS_COUNT, "items", (double)rp->task_total, -1, NULL);
    } else if (l->task != rp->task || l->replica != rp->replica) { // a task starts its count again in each replica
        progress_retitle(l->p, rp->task, (double)rp->task_total);
    }
    l->task = rp->task;
    l->replica = rp->replica;
    char detail[80];
    const char *mode = rp->mode ? rp->mode : "all modes";
    if (rp->replicas > 0) snprintf(detail, sizeof detail, "%s, replica %d/%d", mode, rp->replica, rp->replicas);
    else snprintf(detail, sizeof detail, "%s", mode);
    progress_set_skipped(l->p, (double)rp->resumed);
    progress_set_outer(l->p, rp->done, (double)rp->total);
    progress_set(l->p, rp->task_done, detail);
    if (rp->final) progress_end_part(l->p); // each task's last line stays; the clock runs on
}

// ---- scoring ----
// Every task in one process.
static int score_alone(struct run *r, struct err *e) {
    int rc = 0;
    for (int t = 0; t < run_n_tasks(r) && !rc; t++) {
        int next;
        if ((rc = run_task_begin(r, t, &next, e))) break;
        if (next == run_task_items(r, t) && next > 0) continue; // complete (resumed)
        if (!(rc = run_task_score(r, t, run_task_items(r, t), e))) rc = run_task_end(r, t, e);
    }
    return rc;
}

// Under MPI every rank opens the run; a failure to open on any rank ends all of them alike.
static int open_ranks(struct run **r, struct run_opts *ro, struct err *e) {
    if (dist_size() == 1) return run_open(r, ro, e);
    if (dist_rank() > 0) ro->role = RUN_ROLE_WORKER;
    int rc = dist_agree(run_open(r, ro, e), e);
    if (rc) {
        run_free(*r);
        *r = NULL;
    }
    return rc;
}

int run_plan_drive(struct run_plan *p, struct run_done *done, struct err *e) {
    memset(done, 0, sizeof *done);
    const double t_start = time_now();
    struct run *r = NULL;
    struct run_opts ro = p->o;
    int rc = open_ranks(&r, &ro, e);
    if (rc) return rc;
    struct run_line pr = {0};
    if (dist_rank() == 0) run_set_progress(r, progress_show, &pr); // rank 0 reports
    for (int k = 0; k <= run_n_replicas(r) && !rc; k++) { // replica 0 is the plain run (--replicas K)
        if (!(rc = run_set_replica(r, k, e))) rc = dist_size() > 1 ? run_dist_score(r, e) : score_alone(r, e);
    }
    progress_close(pr.p); // the last task's line stays (a failed one's too)
    pr.p = NULL;
    if (!rc) rc = run_set_replica(r, 0, e); // every weight bit restored
    if (!rc && dist_rank() == 0) { // a worker is done: rank 0 writes the run
        snprintf(done->dir, sizeof done->dir, "%s", run_dir(r));
        if (!(rc = run_finish(r, &done->headline, e))) done->written = 1;
    }
    done->seconds = time_now() - t_start;
    run_free(r);
    return rc;
}
