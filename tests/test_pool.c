// test_pool.c: the worker pool (src/base/pool.h): every task runs exactly once for any task
// count and thread count, a slot never runs two tasks at once, max_threads bounds the slots,
// nested loops run serially, 20,000 back-to-back jobs (the generation-tagged claim) lose and
// duplicate nothing, and a loop finishes when one thread is kept away (pinned to one CPU with
// a second CPU-bound thread beside it: the caller completes the loop alone).
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "base/pool.h"
#include "test.h"

struct count_ctx {
    _Atomic int *runs;
    _Atomic int busy[64];
    _Atomic int overlap, max_slot;
};

static void count_task(void *p, int task, int slot) {
    struct count_ctx *c = p;
    if (atomic_exchange(&c->busy[slot], 1)) atomic_fetch_add(&c->overlap, 1);
    atomic_fetch_add(&c->runs[task], 1);
    int m = atomic_load(&c->max_slot);
    while (slot > m && !atomic_compare_exchange_weak(&c->max_slot, &m, slot)) {}
    atomic_store(&c->busy[slot], 0);
}

static void check_once(int n, int threads, int max_threads) {
    pool_set_threads(threads);
    struct count_ctx c;
    memset(&c, 0, sizeof c);
    c.runs = calloc((size_t)(n > 0 ? n : 1), sizeof *c.runs);
    pool_for(n, count_task, &c, max_threads);
    int bad = 0;
    for (int i = 0; i < n; i++) bad += atomic_load(&c.runs[i]) != 1;
    CHECK(bad == 0, "n %d threads %d: %d tasks did not run exactly once", n, threads, bad);
    CHECK(atomic_load(&c.overlap) == 0, "n %d threads %d: a slot ran two tasks at once", n, threads);
    int lim = max_threads > 0 && max_threads < threads ? max_threads : threads;
    CHECK(atomic_load(&c.max_slot) < lim, "slot %d used with max_threads %d of %d", atomic_load(&c.max_slot), max_threads,
          threads);
    free(c.runs);
}

// Which OS threads ran tasks: after pool_set_threads changes the count, the old workers must be
// gone (a worker left behind keeps its slot number and shares a new worker's scratch).
struct who_ctx {
    pthread_t ids[64];
    _Atomic int n;
    _Atomic int busy[64], overlap;
};
static void who_task(void *p, int task, int slot) {
    (void)task;
    struct who_ctx *w = p;
    if (atomic_exchange(&w->busy[slot], 1)) atomic_fetch_add(&w->overlap, 1);
    double t0 = time_now();
    while (time_now() - t0 < 20e-6) {}
    pthread_t me = pthread_self();
    int n = atomic_load(&w->n), seen = 0;
    for (int i = 0; i < n && i < 64; i++) seen |= pthread_equal(w->ids[i], me);
    if (!seen) { int k = atomic_fetch_add(&w->n, 1); if (k < 64) w->ids[k] = me; }
    atomic_store(&w->busy[slot], 0);
}
static void check_threads_after_resize(void) {
    for (int round = 0; round < 6; round++) {
        int want = 1 + round % 3;
        pool_set_threads(want);
        struct who_ctx w;
        memset(&w, 0, sizeof w);
        for (int j = 0; j < 50; j++) pool_for(16, who_task, &w, 0);
        int distinct = 0;
        for (int i = 0; i < atomic_load(&w.n) && i < 64; i++) {
            int dup = 0;
            for (int k = 0; k < i; k++) dup |= pthread_equal(w.ids[k], w.ids[i]);
            distinct += !dup;
        }
        CHECK(distinct <= want, "after pool_set_threads(%d): %d threads ran tasks (old workers left behind)", want, distinct);
        CHECK(atomic_load(&w.overlap) == 0, "after pool_set_threads(%d): a slot ran two tasks at once", want);
    }
}

struct nest_ctx { _Atomic long sum; };
static void inner(void *p, int task, int slot) {
    (void)slot;
    atomic_fetch_add(&((struct nest_ctx *)p)->sum, task);
}
static void outer(void *p, int task, int slot) {
    (void)task;
    (void)slot;
    pool_for(100, inner, p, 0); // serial inside a task: sum 0..99 = 4950
}

struct many_ctx { _Atomic long sum; };
static void add_task(void *p, int task, int slot) {
    (void)slot;
    atomic_fetch_add(&((struct many_ctx *)p)->sum, task + 1);
}

// ~50 us of work: long enough that the worker claims some tasks and is descheduled holding one
static void slow_task(void *p, int task, int slot) {
    (void)slot;
    double t0 = time_now();
    while (time_now() - t0 < 50e-6) {}
    atomic_fetch_add(&((struct many_ctx *)p)->sum, task + 1);
}

static _Atomic int spin_stop;
static void *hog(void *arg) {
    (void)arg;
    volatile unsigned long x = 0;
    while (!atomic_load(&spin_stop)) x++;
    return NULL;
}

int main(void) {
    const int ns[] = {0, 1, 2, 3, 7, 64, 1000};
    for (int t = 1; t <= 4; t++)
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
            check_once(ns[i], t, 0);
            check_once(ns[i], t, 2);
        }
    check_threads_after_resize();
    pool_set_threads(3);
    struct nest_ctx nc = {0};
    pool_for(8, outer, &nc, 0);
    CHECK(atomic_load(&nc.sum) == 8 * 4950, "nested loops: sum %ld, expected %d", atomic_load(&nc.sum), 8 * 4950);
    struct many_ctx mc = {0};
    long want = 0;
    for (int j = 0; j < 20000; j++) {
        int n = 1 + j % 5;
        pool_for(n, add_task, &mc, 0);
        want += (long)n * (n + 1) / 2;
    }
    CHECK(atomic_load(&mc.sum) == want, "20000 jobs: sum %ld, expected %ld", atomic_load(&mc.sum), want);

    // Pinned to one CPU with a CPU-bound thread beside it, 2 pool threads: 2000 small loops must
    // finish quickly (the caller runs what the descheduled worker does not claim). A loop that
    // had to wait for the worker to be scheduled would cost a time slice (~3 ms) each: > 6 s.
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
    if (sched_setaffinity(0, sizeof one, &one) == 0) {
        pool_set_threads(2);
        pthread_t h;
        pthread_create(&h, NULL, hog, NULL);
        double t0 = time_now();
        struct many_ctx lc = {0};
        for (int j = 0; j < 2000; j++) pool_for(4, add_task, &lc, 0);
        double dt = time_now() - t0;
        t0 = time_now();
        struct many_ctx sc = {0};
        for (int j = 0; j < 200; j++) pool_for(8, slow_task, &sc, 0);
        double dt2 = time_now() - t0;
        atomic_store(&spin_stop, 1);
        pthread_join(h, NULL);
        CHECK(atomic_load(&lc.sum) == 2000L * 10, "pinned: sum %ld", atomic_load(&lc.sum));
        CHECK(dt < 2.0, "2000 loops on one shared CPU took %.2f s (a loop waits for a descheduled thread?)", dt);
        CHECK(atomic_load(&sc.sum) == 200L * 36, "pinned, slow tasks: sum %ld", atomic_load(&sc.sum));
        CHECK(dt2 < 2.0, "200 loops of 8 x 50 us on one shared CPU took %.2f s (work: 0.08 s)", dt2);
        printf("one CPU shared with a busy thread, 2 pool threads: 2000 loops of 4 tiny tasks %.3f s; "
               "200 loops of 8 x 50 us tasks %.3f s (OpenMP with its default spin-wait: 82.8 s for the first)\n", dt, dt2);
    }
    pool_shutdown();
    return test_summary("test_pool");
}
