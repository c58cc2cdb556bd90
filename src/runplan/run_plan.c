// run_plan.c: making a run's plan (see run_plan.h): modes and tasks, the checks that need no
// model with every task's data loaded once, then the model and its Smooth-QK scales - on rank 0
// first under MPI, then on the other ranks from the caches.
#include "runplan/run_plan.h"

#include <string.h>

#include "base/dist.h"
#include "base/pool.h"
#include "runplan/run_calib.h"

// The one thread count: the pool's size, and what the tokenizer, the model and the attention
// use of it (<= 0 there: all of the pool).
static void set_threads(struct run_opts *o, int threads) {
    if (threads > 0) pool_set_threads(threads);
    o->n_threads = pool_threads();
    o->attn.n_threads = threads;
    o->model.n_threads = threads;
}

// Smooth-QK scales once the model is known: --scales F as given; --scales none drops the modes
// that need them; else calibrate's default file for the model, or a calibration first
// (run_calib.h), recorded in p->calibration.
static int resolve_scales(struct run_plan *p, const struct run_plan_args *a, int offline, struct err *e) {
    if (a->scales && strcmp(a->scales, "none")) return 0;
    if (!run_calib_needed(&p->o)) return 0;
    if (a->scales) { run_calib_drop_modes(&p->o, "--scales none"); return 0; }
    const int all = a->n_modes == 1 && !strcmp(a->modes[0], "all");
    struct run_calib_opts co = {.data_dir = p->o.task.data_dir, .offline = offline, .threads = a->threads,
                                .required = !all, .calib_text = a->calib, .gate_rule = a->gate_rule, .qmean = a->qmean};
    int rc = run_calib_default(p->scales, sizeof p->scales, &p->calibration, &p->model, &co, e);
    if (rc) return rc;
    if (p->scales[0]) p->o.scales = p->scales;
    else run_calib_drop_modes(&p->o, "--attn all: no Smooth-QK scales for this model and no calibration text (--calib FILE "
                                     "or --scales F adds them)");
    return 0;
}

// The model (downloading, importing as allowed), its record in run.json and its scales.
static int resolve(struct run_plan *p, const struct run_plan_args *a, int offline, struct err *e) {
    int rc = model_resolve(&p->model, a->model, offline, e);
    if (rc) return rc;
    if (!(p->source = model_ref_json(&p->model))) return err_set(e, ERR_NOMEM, "run: out of memory");
    return resolve_scales(p, a, offline, e);
}

// Everything before the ranks meet: the lists, the checks and the task data on every rank; the
// model and the scales on rank 0 (downloading, importing, calibrating as needed).
static int before_meeting(struct run_plan *p, const struct run_plan_args *a, struct err *e) {
    // modes that need scales are kept while the scales are still to be found or made
    p->o.scales = a->scales && strcmp(a->scales, "none") ? a->scales : NULL;
    p->o.scales_later = p->o.scales == NULL;
    int rc;
    if ((rc = run_select_modes(&p->o, a->modes, a->n_modes, e)) || (rc = run_select_tasks(&p->o, a->tasks, a->n_tasks, e)))
        return rc;
    if ((rc = run_precheck(&p->o, &p->tasks, e))) return rc;
    return dist_rank() > 0 ? 0 : resolve(p, a, a->offline, e);
}

int run_plan_make(struct run_plan *p, const struct run_opts *o, const struct run_plan_args *a, struct err *e) {
    memset(p, 0, sizeof *p);
    p->o = *o;
    set_threads(&p->o, a->threads);
    int rc = dist_agree(before_meeting(p, a, e), e);
    // the other ranks only read what rank 0 put in the caches; one that cannot fails them all
    // (every rank takes this branch or none: they agreed above)
    if (!rc && dist_size() > 1) rc = dist_agree(dist_rank() > 0 ? resolve(p, a, 1, e) : 0, e);
    if (rc) return rc;
    p->o.model_dir = p->model.dir;
    p->o.model_name = p->model.name;
    p->o.model_source = p->source;
    p->o.calibration = p->calibration;
    p->o.loaded = &p->tasks;
    return 0;
}

void run_plan_free(struct run_plan *p) {
    if (!p) return;
    run_tasks_free(&p->tasks);
    cJSON_Delete(p->source);
    cJSON_Delete(p->calibration);
    p->source = p->calibration = NULL;
}
