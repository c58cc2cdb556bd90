// run_dist.c: a run over the ranks of a job (see run_dist.h). Rank 0: a dispatcher thread
// (every MPI call of rank 0 is its) answers the workers and the main thread computes units;
// both hand finished units to one writer that keeps item order. Workers: ask, compute, return.
#include "eval/run_dist.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/dist.h"
#include "eval/run_internal.h"
#include "results/stamp.h"

enum { TAG_REQ = 1, TAG_UNIT, TAG_RESULT, TAG_DONE, TAG_FINAL };
#define UNITS_PER_RANK 8 // per task: enough for the largest-first queue to even out the ranks

struct unit { int t, a, b; int64_t cost; };
struct unit_msg { int32_t u, t, a, b; };       // rank 0 -> worker: compute items [a, b) of task t
struct result_head { int32_t u, n_modes; uint64_t len[RUN_MAX_MODES]; }; // worker -> rank 0, lines follow
struct final_msg {                             // worker -> rank 0 after DONE
    struct run_mode_acc acc[RUN_MAX_MODES];
    double busy_s, cpu_s, wait_s; // computing (wall, process CPU), waiting for rank 0 (workers)
    int64_t items, units;
    char host[64];
};

struct dist {
    struct run *r;
    int n_ranks;
    struct unit *units;           // in item order, task by task
    int n_units;
    int *queue, n_queued, next;   // unit ids, largest first
    struct results_buf *lines;    // [n_units][n_modes] once a unit is done
    char *ready;                  // [n_units]
    int flush, open_task;         // next unit to write; task whose writers are open (-1: none)
    int *keep;                    // [n_tasks] resume point
    pthread_mutex_t mu;
    int failed;                   // under mu; 2: the dispatcher failed (d->err)
    _Atomic int stop;             // rank 0's computing failed: the dispatcher ends
    struct err err;               // the dispatcher's error
    int64_t done;
    struct final_msg *fin;        // [n_ranks]: index 0 is rank 0's own
};

// ---- the queue ----
static int64_t unit_cost(const struct eval_plan *p, int a, int b) {
    int64_t c = 0;
    for (int s = p->item_seq[a]; s < p->item_seq[b]; s++) c += p->seq[s].n;
    return c;
}

struct ranked { int64_t cost; int id; };
static int by_cost(const void *x, const void *y) {
    const struct ranked *a = x, *b = y;
    if (a->cost != b->cost) return a->cost > b->cost ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id; // ties in item order: the same queue on every run
}

// d->queue = the unit ids, largest first
static int rank_units(struct dist *d, struct err *e) {
    struct ranked *rk = malloc(((size_t)d->n_units + 1) * sizeof *rk);
    if (!rk) return err_set(e, ERR_NOMEM, "run: out of memory");
    for (int u = 0; u < d->n_units; u++) rk[u] = (struct ranked){d->units[u].cost, u};
    qsort(rk, (size_t)d->n_units, sizeof *rk, by_cost);
    for (int u = 0; u < d->n_units; u++) d->queue[u] = rk[u].id;
    free(rk);
    d->n_queued = d->n_units;
    return 0;
}

static int plan_units(struct dist *d, struct err *e) {
    struct run *r = d->r;
    int cap = 0, rc;
    for (int t = 0; t < r->o.n_tasks; t++) {
        if ((rc = run_task_resume_point(r, t, &d->keep[t], e))) return rc;
        const int n = r->plans[t].n_items, rem = n - d->keep[t];
        if (r->o.resume && d->keep[t] == n && n > 0) log_info("run: %s: complete, skipped", r->sets[t].name);
        else if (d->keep[t] > 0) log_info("run: %s: resuming at item %d", r->sets[t].name, d->keep[t]);
        d->done += d->keep[t];
        cap += rem;
    }
    d->units = calloc((size_t)cap + 1, sizeof *d->units);
    d->queue = calloc((size_t)cap + 1, sizeof *d->queue);
    if (!d->units || !d->queue) return err_set(e, ERR_NOMEM, "run: out of memory");
    for (int t = 0; t < r->o.n_tasks; t++) {
        const int n = r->plans[t].n_items, rem = n - d->keep[t];
        int size = (rem + UNITS_PER_RANK * d->n_ranks - 1) / (UNITS_PER_RANK * d->n_ranks);
        size = size < 1 ? 1 : size > RESULTS_FRAME_ITEMS ? RESULTS_FRAME_ITEMS : size;
        for (int a = d->keep[t]; a < n; a += size) {
            const int b = a + size < n ? a + size : n;
            d->units[d->n_units++] = (struct unit){t, a, b, unit_cost(&r->plans[t], a, b)};
        }
    }
    if ((rc = rank_units(d, e))) return rc;
    d->lines = calloc((size_t)d->n_units * (size_t)r->o.n_modes + 1, sizeof *d->lines);
    d->ready = calloc((size_t)d->n_units + 1, 1);
    return d->lines && d->ready ? 0 : err_set(e, ERR_NOMEM, "run: out of memory");
}

static int pop_unit(struct dist *d) {
    pthread_mutex_lock(&d->mu);
    const int u = d->next < d->n_queued && !d->failed ? d->queue[d->next++] : -1;
    pthread_mutex_unlock(&d->mu);
    return u;
}

// ---- the writer: finished units in item order ----
static int open_task(struct dist *d, int t, struct err *e) {
    struct run *r = d->r;
    int rc;
    for (int m = 0; m < r->o.n_modes; m++) {
        char sp[4096];
        struct results_stamp st;
        if ((rc = run_samples_file(sp, sizeof sp, &st, r, t, m, e)) || (rc = results_writer_open(&r->writers[m], sp, d->keep[t], &st, e)))
            return rc;
    }
    d->open_task = t;
    return 0;
}

static int write_unit(struct dist *d, int u, struct err *e) {
    struct run *r = d->r;
    int rc = 0;
    for (int m = 0; m < r->o.n_modes && !rc; m++) {
        struct results_buf *b = &d->lines[(size_t)u * (size_t)r->o.n_modes + (size_t)m];
        for (size_t i = 0; i < b->n && !rc;) {
            const char *nl = memchr(b->p + i, '\n', b->n - i);
            const size_t len = nl ? (size_t)(nl - (b->p + i)) + 1 : b->n - i;
            rc = results_writer_add_line(&r->writers[m], b->p + i, len, e);
            i += len;
        }
        free(b->p);
        *b = (struct results_buf){0};
    }
    return rc;
}

// Writes every finished unit that continues the files (caller holds d->mu).
static int flush_ready(struct dist *d, struct err *e) {
    struct run *r = d->r;
    int rc = 0;
    while (!rc && d->flush < d->n_units && d->ready[d->flush]) {
        const struct unit *u = &d->units[d->flush];
        if (d->open_task != u->t && (rc = open_task(d, u->t, e))) break;
        if ((rc = write_unit(d, d->flush, e))) break;
        d->done += u->b - u->a;
        d->flush++;
        const int last = d->flush == d->n_units || d->units[d->flush].t != u->t;
        for (int m = 0; last && m < r->o.n_modes && !rc; m++) rc = results_writer_close(&r->writers[m], e);
        if (last) d->open_task = -1;
        const struct run_progress pg = {.task = r->sets[u->t].name, .done = (double)d->done, .task_done = (double)u->b,
                                        .total = r->total, .task_total = r->plans[u->t].n_items, .replica = r->rep,
                                        .replicas = r->o.replicas, .final = last};
        if (r->progress) r->progress(r->progress_user, &pg);
    }
    return rc;
}

// Takes the lines of unit u (moved out of lines[]) and writes what can be written.
static int finish_unit(struct dist *d, int u, struct results_buf *lines, struct err *e) {
    const int n_modes = d->r->o.n_modes;
    pthread_mutex_lock(&d->mu);
    for (int m = 0; m < n_modes; m++) {
        d->lines[(size_t)u * (size_t)n_modes + (size_t)m] = lines[m];
        lines[m] = (struct results_buf){0};
    }
    d->ready[u] = 1;
    int rc = d->failed ? ERR_INTERNAL : flush_ready(d, e);
    if (rc && !d->failed) d->failed = 1;
    pthread_mutex_unlock(&d->mu);
    return rc;
}

// ---- rank 0: the dispatcher thread ----
static int take_result(struct dist *d, const char *msg, size_t n, int from, struct err *e) {
    struct result_head h;
    const int n_modes = d->r->o.n_modes;
    if (n < sizeof h) return err_set(e, ERR_IO, "rank %d: a result of %zu bytes", from, n);
    memcpy(&h, msg, sizeof h);
    if (h.u < 0 || h.u >= d->n_units || h.n_modes != n_modes)
        return err_set(e, ERR_IO, "rank %d: a result for unit %d of %d modes", from, h.u, h.n_modes);
    struct results_buf lines[RUN_MAX_MODES] = {{0}};
    size_t off = sizeof h;
    for (int m = 0; m < n_modes; m++) {
        if (h.len[m] > n - off) return err_set(e, ERR_IO, "rank %d: unit %d's lines are cut short", from, h.u);
        if (h.len[m] && results_buf_put(&lines[m], msg + off, h.len[m])) return err_set(e, ERR_NOMEM, "run: out of memory");
        off += h.len[m];
    }
    return finish_unit(d, h.u, lines, e);
}

static int answer(struct dist *d, int to, struct err *e) {
    const int u = pop_unit(d);
    if (u < 0) return dist_send(to, TAG_DONE, "", 0, e);
    const struct unit *x = &d->units[u];
    const struct unit_msg msg = {u, x->t, x->a, x->b};
    return dist_send(to, TAG_UNIT, &msg, sizeof msg, e);
}

static int serve(struct dist *d, struct err *e) {
    int finals = 0, rc = 0;
    char *buf = NULL;
    while (finals < d->n_ranks - 1 && !rc && !d->stop) {
        int from, tag;
        size_t n;
        if (dist_wait(-1, -1, 0.2, &from, &tag, &n)) continue;
        char *nb = realloc(buf, n + 1);
        if (!nb) { rc = err_set(e, ERR_NOMEM, "run: out of memory"); break; }
        buf = nb;
        if ((rc = dist_recv(from, tag, buf, n, e))) break;
        if (tag == TAG_FINAL) {
            if (n != sizeof *d->fin) rc = err_set(e, ERR_IO, "rank %d: a final report of %zu bytes", from, n);
            else memcpy(&d->fin[from], buf, n), finals++;
            continue;
        }
        if (tag == TAG_RESULT && (rc = take_result(d, buf, n, from, e))) break;
        if (tag == TAG_REQ || tag == TAG_RESULT) rc = answer(d, from, e);
        else rc = err_set(e, ERR_IO, "rank %d: unexpected message tag %d", from, tag);
    }
    free(buf);
    return rc;
}

static void *dispatcher(void *arg) {
    struct dist *d = arg;
    if (serve(d, &d->err)) {
        pthread_mutex_lock(&d->mu);
        d->failed = 2; // 2: the dispatcher's error is in d->err
        pthread_mutex_unlock(&d->mu);
    }
    return NULL;
}

// ---- computing units (every rank) ----
static double cpu_now(void) { // process CPU seconds, all threads
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int compute(struct run *r, const struct unit_msg *m, struct results_buf *lines, struct final_msg *me,
                   struct err *e) {
    const double t0 = time_now(), c0 = cpu_now();
    int rc = run_task_score_lines(r, m->t, m->a, m->b, lines, e);
    me->busy_s += time_now() - t0;
    me->cpu_s += cpu_now() - c0;
    me->items += m->b - m->a;
    me->units++;
    return rc;
}

static int worker(struct run *r, struct err *e) {
    struct final_msg me = {0};
    snprintf(me.host, sizeof me.host, "%s", dist_host());
    struct results_buf lines[RUN_MAX_MODES] = {{0}};
    char *msg = NULL;
    int rc = dist_send(0, TAG_REQ, "", 0, e), tag = -1;
    while (!rc) {
        int from;
        size_t n;
        const double tw = time_now();
        dist_wait(0, -1, 0, &from, &tag, &n);
        me.wait_s += time_now() - tw;
        struct unit_msg u;
        if (tag != TAG_UNIT) break;
        if (n != sizeof u) { rc = err_set(e, ERR_IO, "rank 0 sent a unit of %zu bytes", n); break; }
        if ((rc = dist_recv(0, TAG_UNIT, &u, sizeof u, e)) || (rc = compute(r, &u, lines, &me, e))) break;
        struct result_head h = {.u = u.u, .n_modes = r->o.n_modes};
        size_t total = sizeof h;
        for (int m = 0; m < r->o.n_modes; m++) total += (h.len[m] = lines[m].n);
        free(msg);
        if (!(msg = malloc(total))) { rc = err_set(e, ERR_NOMEM, "run: out of memory"); break; }
        memcpy(msg, &h, sizeof h);
        for (size_t m = 0, off = sizeof h; m < (size_t)r->o.n_modes; m++) {
            if (lines[m].n) memcpy(msg + off, lines[m].p, lines[m].n);
            off += lines[m].n;
            lines[m].n = 0;
        }
        rc = dist_send(0, TAG_RESULT, msg, total, e);
    }
    if (!rc && tag != TAG_DONE) rc = err_set(e, ERR_IO, "rank 0 sent message tag %d, expected a unit or the end", tag);
    if (!rc && (rc = dist_recv(0, TAG_DONE, NULL, 0, e)) == 0) {
        memcpy(me.acc, r->acc, sizeof me.acc);
        memset(r->acc, 0, sizeof r->acc); // rank 0 has them now: the next call (replica) sends only its own
        rc = dist_send(0, TAG_FINAL, &me, sizeof me, e);
    }
    for (int m = 0; m < RUN_MAX_MODES; m++) free(lines[m].p);
    free(msg);
    return rc;
}

static int rank0_compute(struct dist *d, struct err *e) {
    struct results_buf lines[RUN_MAX_MODES] = {{0}};
    struct final_msg *me = &d->fin[0];
    snprintf(me->host, sizeof me->host, "%s", dist_host());
    int rc = 0, u;
    while (!rc && (u = pop_unit(d)) >= 0) {
        const struct unit *x = &d->units[u];
        const struct unit_msg m = {u, x->t, x->a, x->b};
        if (!(rc = compute(d->r, &m, lines, me, e))) rc = finish_unit(d, u, lines, e);
    }
    for (int m = 0; m < RUN_MAX_MODES; m++) free(lines[m].p);
    return rc;
}

// ---- rank 0: the end ----
// Sums the workers' counts into the run and records the execution in run.json "distributed".
static int absorb(struct dist *d, struct err *e) {
    struct run *r = d->r;
    cJSON *dj = cJSON_CreateObject(), *hosts = cJSON_AddArrayToObject(dj, "hosts");
    cJSON *busy = cJSON_AddArrayToObject(dj, "busy_s"), *wait = cJSON_AddArrayToObject(dj, "wait_s");
    cJSON *cpu = cJSON_AddArrayToObject(dj, "cpu_s");
    cJSON *units = cJSON_AddArrayToObject(dj, "units");
    double max = 0, sum = 0;
    int rc = 0;
    for (int k = 0; k < d->n_ranks && !rc; k++) {
        const struct final_msg *f = &d->fin[k];
        for (int m = 0; k > 0 && m < r->o.n_modes && !rc; m++) rc = run_acc_add(&r->acc[m], &f->acc[m], e);
        if (k > 0) r->processed += f->items;
        cJSON_AddItemToArray(hosts, cJSON_CreateString(f->host));
        cJSON_AddItemToArray(busy, cJSON_CreateNumber(f->busy_s));
        cJSON_AddItemToArray(wait, cJSON_CreateNumber(f->wait_s));
        cJSON_AddItemToArray(cpu, cJSON_CreateNumber(f->cpu_s));
        cJSON_AddItemToArray(units, cJSON_CreateNumber((double)f->units));
        max = f->busy_s > max ? f->busy_s : max;
        sum += f->busy_s;
    }
    const double imb = sum > 0 ? max / (sum / d->n_ranks) : 1;
    cJSON_AddNumberToObject(dj, "ranks", d->n_ranks);
    cJSON_AddNumberToObject(dj, "work_units", d->n_units);
    cJSON_AddNumberToObject(dj, "imbalance", imb);
    cJSON_DeleteItemFromObjectCaseSensitive(r->json, "distributed");
    cJSON_AddItemToObject(r->json, "distributed", dj);
    char line[2048];
    size_t k = (size_t)snprintf(line, sizeof line, "run: %d ranks, %d units; busy s", d->n_ranks, d->n_units);
    for (int i = 0; i < d->n_ranks && k < sizeof line; i++)
        k += (size_t)snprintf(line + k, sizeof line - k, " %d:%.1f/%.1f CPU (%s)", i, d->fin[i].busy_s, d->fin[i].cpu_s,
                              d->fin[i].host);
    log_info("%s; imbalance max/mean %.3f", line, imb);
    return rc;
}

static void dist_free(struct dist *d) {
    for (size_t i = 0; d->lines && i < (size_t)d->n_units * (size_t)d->r->o.n_modes; i++) free(d->lines[i].p);
    free(d->lines);
    free(d->ready);
    free(d->units);
    free(d->queue);
    free(d->keep);
    free(d->fin);
}

static int rank0(struct run *r, struct err *e) {
    struct dist d = {.r = r, .n_ranks = dist_size(), .open_task = -1};
    pthread_mutex_init(&d.mu, NULL);
    d.keep = calloc((size_t)r->o.n_tasks, sizeof *d.keep);
    d.fin = calloc((size_t)d.n_ranks, sizeof *d.fin);
    int rc = d.keep && d.fin ? plan_units(&d, e) : err_set(e, ERR_NOMEM, "run: out of memory");
    for (int t = 0; t < r->o.n_tasks && !rc; t++) // a task of no items (an empty shard) still has its files
        if (r->plans[t].n_items == 0 && !(rc = open_task(&d, t, e)))
            for (int m = 0; m < r->o.n_modes && !rc; m++) rc = results_writer_close(&r->writers[m], e);
    pthread_t th;
    if (!rc && pthread_create(&th, NULL, dispatcher, &d) != 0) rc = err_set(e, ERR_INTERNAL, "run: cannot start a thread");
    else if (!rc) {
        rc = rank0_compute(&d, e);
        if (rc) d.stop = 1; // the workers end with the job (the caller aborts it)
        pthread_join(th, NULL);
        if (d.failed == 2) { *e = d.err; rc = e->code ? e->code : ERR_INTERNAL; } // the first error, not its echo
        if (!rc && d.flush < d.n_units) rc = err_set(e, ERR_INTERNAL, "run: %d of %d units unwritten", d.n_units - d.flush, d.n_units);
        if (!rc) rc = absorb(&d, e);
    }
    dist_free(&d);
    pthread_mutex_destroy(&d.mu);
    return rc;
}

int run_dist_score(struct run *r, struct err *e) {
    if (dist_rank() != 0) return worker(r, e);
    return rank0(r, e);
}
