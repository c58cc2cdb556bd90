// pool.c: worker threads with task claiming (see pool.h). One job at a time: the caller
// publishes (fn, ctx, n) under the mutex with a new generation, and every thread claims task
// indices by compare-and-swap on one 64-bit counter tagged with that generation, so a worker
// that wakes late can never run an old job's function on a new job's index. The caller waits
// for the finished count, not for the threads. Idle workers spin briefly, then sleep.
#include "base/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_THREADS 256
#define SPIN_CHECKS 4000 // ~20-50 us of polling before a worker or the caller sleeps

struct job {
    pool_fn fn;
    void *ctx;
    int n, max_threads;
    uint32_t gen;
};

static struct {
    pthread_mutex_t mu;
    pthread_cond_t wake, idle;
    int n_threads, started, stop, registered;
    pthread_t th[MAX_THREADS];
    struct job job;                // under mu
    _Atomic uint32_t gen;          // the current job's generation (also readable without mu)
    _Atomic uint64_t claim;        // gen << 32 | next task index
    _Atomic int done;              // tasks of the current job finished
} P = {.mu = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER, .idle = PTHREAD_COND_INITIALIZER};

static _Thread_local int in_task, my_slot;

static int default_threads(void) {
    const char *s = getenv("OMP_NUM_THREADS");
    int n = s ? atoi(s) : 0;
    if (n <= 0) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n;
}

void pool_set_threads(int n) {
    pool_shutdown();
    P.n_threads = n > 0 ? (n > MAX_THREADS ? MAX_THREADS : n) : default_threads();
}

int pool_threads(void) {
    if (!P.n_threads) P.n_threads = default_threads();
    return P.n_threads;
}
int pool_slots(void) { return pool_threads(); }

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

// Claims and runs tasks of job j (generation j->gen) until none is left.
static void run_tasks(const struct job *j, int slot) {
    for (;;) {
        uint64_t v = atomic_load_explicit(&P.claim, memory_order_acquire);
        if ((uint32_t)(v >> 32) != j->gen || (int)(uint32_t)v >= j->n) return;
        if (!atomic_compare_exchange_weak_explicit(&P.claim, &v, v + 1, memory_order_acq_rel, memory_order_relaxed))
            continue;
        in_task = 1;
        j->fn(j->ctx, (int)(uint32_t)v, slot);
        in_task = 0;
        if (atomic_fetch_add_explicit(&P.done, 1, memory_order_acq_rel) + 1 == j->n) {
            pthread_mutex_lock(&P.mu);
            pthread_cond_signal(&P.idle);
            pthread_mutex_unlock(&P.mu);
        }
    }
}

static void *worker(void *arg) {
    const int slot = (int)(intptr_t)arg;
    my_slot = slot;
    uint32_t seen = atomic_load(&P.gen);
    for (;;) {
        for (int i = 0; i < SPIN_CHECKS && atomic_load_explicit(&P.gen, memory_order_acquire) == seen; i++) cpu_relax();
        pthread_mutex_lock(&P.mu);
        while (!P.stop && P.job.gen == seen) pthread_cond_wait(&P.wake, &P.mu);
        if (P.stop) { pthread_mutex_unlock(&P.mu); return NULL; }
        struct job j = P.job;
        seen = j.gen;
        pthread_mutex_unlock(&P.mu);
        if (slot < j.max_threads) run_tasks(&j, slot);
    }
}

static void start(void) {
    if (!P.registered) { atexit(pool_shutdown); P.registered = 1; }
    P.stop = 0;
    int i = 1;
    while (i < P.n_threads && pthread_create(&P.th[i], NULL, worker, (void *)(intptr_t)i) == 0) i++;
    P.started = i; // threads running, the caller included (fewer if a create failed)
}

void pool_shutdown(void) {
    if (P.started <= 1) { P.started = 0; return; }
    pthread_mutex_lock(&P.mu);
    P.stop = 1;
    pthread_cond_broadcast(&P.wake);
    pthread_mutex_unlock(&P.mu);
    for (int i = 1; i < P.started; i++) pthread_join(P.th[i], NULL);
    P.started = 0;
}

void pool_for(int n, pool_fn fn, void *ctx, int max_threads) {
    if (n <= 0) return;
    const int nt = pool_threads();
    if (max_threads <= 0 || max_threads > nt) max_threads = nt;
    if (in_task || max_threads == 1 || n == 1) {
        const int slot = in_task ? my_slot : 0;
        for (int i = 0; i < n; i++) fn(ctx, i, slot);
        return;
    }
    if (!P.started) start();
    pthread_mutex_lock(&P.mu);
    struct job j = {fn, ctx, n, max_threads, P.job.gen + 1};
    P.job = j;
    atomic_store(&P.done, 0);
    atomic_store(&P.claim, (uint64_t)j.gen << 32);
    atomic_store(&P.gen, j.gen);
    pthread_cond_broadcast(&P.wake);
    pthread_mutex_unlock(&P.mu);
    my_slot = 0;
    run_tasks(&j, 0);
    for (int i = 0; i < SPIN_CHECKS && atomic_load_explicit(&P.done, memory_order_acquire) < n; i++) cpu_relax();
    if (atomic_load_explicit(&P.done, memory_order_acquire) < n) {
        pthread_mutex_lock(&P.mu);
        while (atomic_load(&P.done) < n) pthread_cond_wait(&P.idle, &P.mu);
        pthread_mutex_unlock(&P.mu);
    }
}
