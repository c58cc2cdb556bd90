// gemm.c: argument checks, ISA selection, the reference, the scalar path, packing and the
// threaded driver of the deterministic SGEMM (gemm.h). The vector micro-kernels live in
// gemm_avx512.c and gemm_avx2.c; work is split into (rows x panels) blocks that threads take
// from a shared counter, and no block boundary can change a bit (each output element is
// computed whole by one micro-tile).
#include <omp.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gemm_internal.h"

// ---- reference ----
void gemm_ref(float *y, size_t ldy, const float *x, size_t ldx, const float *w, size_t ldw, int M, int N, int K,
              const float *bias, int bf16_round) {
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float acc = +0.0f;
            for (int k = 0; k < K; k++) acc = fmaf(x[(size_t)m * ldx + k], w[(size_t)n * ldw + k], acc);
            y[(size_t)m * ldy + n] = gemm_epi1(acc, bias, n, bf16_round);
        }
}

// ---- scalar path (CPUs without FMA or AVX2; also a third witness in the tests) ----
#define SC_MR 4
static void scalar_block(const struct gemm_args *a, int m0, int m1, int p0, int p1) {
    const size_t ws = (size_t)a->K * 16;
    for (int i = m0; i < m1; i += SC_MR) {
        const int mr = m1 - i < SC_MR ? m1 - i : SC_MR;
        for (int p = p0; p < p1; p++) {
            float acc[SC_MR][16] = {{0}};
            const float *wp = a->w + (size_t)p * ws;
            for (int k = 0; k < a->K; k++)
                for (int r = 0; r < mr; r++) {
                    const float xv = a->x[(size_t)(i + r) * a->ldx + k];
                    for (int c = 0; c < 16; c++) acc[r][c] = fmaf(xv, wp[(size_t)k * 16 + c], acc[r][c]);
                }
            const int c0 = a->n0 > p * 16 ? a->n0 : p * 16, c1 = a->n1 < p * 16 + 16 ? a->n1 : p * 16 + 16;
            for (int r = 0; r < mr; r++)
                for (int n = c0; n < c1; n++)
                    a->y[(size_t)(i + r) * a->ldy + n] = gemm_epi1(acc[r][n - p * 16], a->bias, n, a->bf16);
        }
    }
}

static void scalar_pack(float *dst, const void *src, int type, size_t ld, int N, int K, int pa, int pb) {
    for (int p = pa; p < pb; p++) {
        float *d = dst + (size_t)(p - pa) * K * 16;
        for (int c = 0; c < 16; c++) {
            const int n = p * 16 + c;
            const void *row = n < N ? gemm_src_row(src, type, ld, (size_t)n) : NULL;
            for (int k = 0; k < K; k++) d[(size_t)k * 16 + c] = row ? gemm_src_at(row, type, (size_t)k) : 0.0f;
        }
    }
}

const struct gemm_isa gemm_isa_scalar = {"scalar", SC_MR, 16 * SC_MR, 16, GEMM_KC_MAX, scalar_block, scalar_pack};

// ---- ISA selection ----
static const struct gemm_isa *sel; // read and written with __atomic builtins

// clang before 15 knows no "f16c" for __builtin_cpu_supports (a compile error, which broke
// `make fuzz` with Debian's clang 14); every AVX2 CPU shipped has F16C, so there avx2 implies it.
#if defined(__clang__) && __clang_major__ < 15
#define CPU_HAS_F16C() __builtin_cpu_supports("avx2")
#else
#define CPU_HAS_F16C() __builtin_cpu_supports("f16c")
#endif

int gemm_isa_supported(const char *name) {
    __builtin_cpu_init();
    if (!strcmp(name, "avx512"))
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               CPU_HAS_F16C();
    if (!strcmp(name, "avx2"))
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && CPU_HAS_F16C();
    return !strcmp(name, "scalar");
}

static int resolve(const char *name, const struct gemm_isa **out, char *msg, size_t msg_n) {
    static const struct gemm_isa *const all[] = {&gemm_isa_avx512, &gemm_isa_avx2, &gemm_isa_scalar};
    for (int i = 0; i < 3; i++) {
        if (name ? strcmp(name, all[i]->name) != 0 : !gemm_isa_supported(all[i]->name)) continue;
        if (!gemm_isa_supported(all[i]->name)) {
            if (msg) snprintf(msg, msg_n, "gemm: ISA '%s' is not supported by this CPU", name);
            return GEMM_ERR_UNSUPPORTED;
        }
        *out = all[i];
        return 0;
    }
    if (msg) snprintf(msg, msg_n, "gemm: unknown ISA '%s' (avx512, avx2, scalar)", name ? name : "");
    return GEMM_ERR_RANGE;
}

int gemm_isa_init(char *msg, size_t msg_n) {
    if (__atomic_load_n(&sel, __ATOMIC_ACQUIRE)) return 0;
    const char *env = getenv("HIFA4_GEMM_ISA");
    const struct gemm_isa *s = NULL;
    int rc = resolve(env && *env ? env : NULL, &s, msg, msg_n);
    if (rc) return rc;
    __atomic_store_n(&sel, s, __ATOMIC_RELEASE); // racing initialisers store the same value
    return 0;
}

int gemm_isa_set(const char *name) {
    const struct gemm_isa *s = NULL;
    int rc = resolve(name, &s, NULL, 0);
    if (!rc) __atomic_store_n(&sel, s, __ATOMIC_RELEASE);
    return rc;
}

const char *gemm_isa_name(void) {
    const struct gemm_isa *s = __atomic_load_n(&sel, __ATOMIC_ACQUIRE);
    return s ? s->name : "none";
}

static const struct gemm_isa *isa_get(int *rc) {
    const struct gemm_isa *s = __atomic_load_n(&sel, __ATOMIC_ACQUIRE);
    if (s) return s;
    *rc = gemm_isa_init(NULL, 0);
    return *rc ? NULL : __atomic_load_n(&sel, __ATOMIC_ACQUIRE);
}

// ---- packing ----
size_t gemm_packed_bytes(int N, int K) {
    if (N < 0 || K < 0) return 0;
    const size_t np = ((size_t)N + GEMM_NR - 1) / GEMM_NR, per = (size_t)K * GEMM_NR * sizeof(float);
    if (per && np > SIZE_MAX / per) return 0;
    return np * per;
}

int gemm_w_init(struct gemm_w *w, void *mem, size_t bytes, int N, int K) {
    const size_t need = gemm_packed_bytes(N, K);
    memset(w, 0, sizeof *w);
    if (N < 0 || K < 0 || (need == 0 && N > 0 && K > 0) || bytes < need || ((uintptr_t)mem % 64) != 0)
        return GEMM_ERR_RANGE;
    w->N = N;
    w->K = K;
    w->p = (float *)mem;
    return 0;
}

int gemm_pack_panels(struct gemm_w *w, const void *src, int type, size_t ld, int pa, int pb) {
    int rc = 0;
    const struct gemm_isa *s = isa_get(&rc);
    if (!s) return rc;
    const int np = (w->N + GEMM_NR - 1) / GEMM_NR;
    if (ld < (size_t)w->K || pa < 0 || pb < pa || pb > np ||
        (type != GEMM_SRC_F32 && type != GEMM_SRC_BF16 && type != GEMM_SRC_F16))
        return GEMM_ERR_RANGE;
    if (pa < pb && w->K > 0) s->pack(w->p + (size_t)pa * w->K * GEMM_NR, src, type, ld, w->N, w->K, pa, pb);
    return 0;
}

int gemm_pack_into(struct gemm_w *w, void *mem, size_t bytes, const void *src, int type, size_t ld, int N, int K,
                   int n_threads) {
    int rc = gemm_w_init(w, mem, bytes, N, K);
    if (!rc) rc = gemm_pack_panels(w, src, type, ld, 0, 0); // checks ld, type and the ISA
    if (rc) return rc;
    const int np = (N + GEMM_NR - 1) / GEMM_NR;
    // chunks of 4 panels: at K = 1024, 256 KB of output per chunk
    const int nchunk = (np + 3) / 4;
    const int nt = (double)np * K < 65536.0 || n_threads < 1 ? 1 : n_threads;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) if (nt > 1)
    for (int c = 0; c < nchunk; c++) gemm_pack_panels(w, src, type, ld, 4 * c, 4 * c + 4 < np ? 4 * c + 4 : np);
    return 0;
}

int gemm_pack(struct gemm_w *w, const void *src, int type, size_t ld, int N, int K, int n_threads) {
    memset(w, 0, sizeof *w);
    const size_t need = gemm_packed_bytes(N, K);
    if (N < 0 || K < 0 || (need == 0 && N > 0 && K > 0)) return GEMM_ERR_RANGE;
    void *mem = NULL;
    if (need && !(mem = aligned_alloc(64, need))) return GEMM_ERR_NOMEM;
    int rc = gemm_pack_into(w, mem, need, src, type, ld, N, K, n_threads);
    if (rc) {
        free(mem);
        memset(w, 0, sizeof *w);
        return rc;
    }
    w->own = 1;
    return 0;
}

void gemm_w_row(const struct gemm_w *w, int n, float *out) {
    const float *p = w->p + (size_t)(n / GEMM_NR) * w->K * GEMM_NR + n % GEMM_NR;
    for (int k = 0; k < w->K; k++) out[k] = p[(size_t)k * GEMM_NR];
}

void gemm_w_free(struct gemm_w *w) {
    if (!w) return;
    if (w->own) free(w->p);
    memset(w, 0, sizeof *w);
}

// ---- driver ----
// Block shape (rows x panels); tunable by the benchmark through gemm_set_blocking.
static int blk_mc = 0, blk_pc = 0;
static int blk_kc = 0, sched_static = 0;
void gemm_set_static(int on) { sched_static = on; }
void gemm_set_kc(int kc) { blk_kc = kc > 0 && kc <= GEMM_KC_MAX ? kc : 0; }
static double par_min = 262144.0; // multiply-adds below which one thread runs the call
void gemm_set_blocking(int mc, int pc, double min_par) {
    blk_mc = mc;
    blk_pc = pc;
    par_min = min_par >= 0 ? min_par : 262144.0;
}

// Rows x panels per task. Big blocks amortise the X packing (once per row group and K block,
// reused across the block's panels); at least 8 tasks keep two threads balanced with dynamic
// claiming (a late or descheduled thread costs at most one block).
static void block_shape(const struct gemm_isa *s, int M, int np, int *mc, int *pc) {
    int r = blk_mc > 0 ? blk_mc : s->mc, c = blk_pc > 0 ? blk_pc : s->pc;
    if (M <= 2 * r) { // small batches: one row block; ~16 column blocks when memory-bound
        r = M;          // (M <= mr), else ~4 (the packed X of the block is reused across them)
        if (blk_pc <= 0 && M > s->mr) c = ((np + 3) / 4 + 1) & ~1; // even: whole panel pairs
        else if (blk_pc <= 0) c = (np + 15) / 16 < 1 ? 1 : (np + 15) / 16;
    }
    if (r > M) r = M;
    if (c > np) c = np;
    if (blk_mc <= 0 && blk_pc <= 0) {
        while (((M + r - 1) / r) * ((np + c - 1) / c) < 8 && c > 8) c = (c / 2 + 1) & ~1;
        while (((M + r - 1) / r) * ((np + c - 1) / c) < 8 && r > s->mr) r -= s->mr;
    }
    *mc = r;
    *pc = c;
}

int gemm_plan_init(struct gemm_plan *p, float *y, size_t ldy, const float *x, size_t ldx, const struct gemm_w *w,
                   int M, int n0, int n1, const float *bias, int bf16_round) {
    memset(p, 0, sizeof *p);
    int rc = 0;
    const struct gemm_isa *s = isa_get(&rc);
    if (!s) return rc;
    if (M < 0 || n0 < 0 || n1 < n0 || n1 > w->N || ldx < (size_t)w->K || ldy < (size_t)n1) return GEMM_ERR_RANGE;
    if (M == 0 || n0 == n1) return 0;
    p->isa = s;
    p->y = y, p->ldy = ldy, p->x = x, p->ldx = ldx, p->w = w->p, p->K = w->K;
    p->M = M, p->n0 = n0, p->n1 = n1, p->bias = bias, p->bf16 = bf16_round, p->kc = blk_kc > 0 ? blk_kc : s->kc;
    p->p0 = n0 / GEMM_NR;
    p->np = (n1 + GEMM_NR - 1) / GEMM_NR - p->p0;
    block_shape(s, M, p->np, &p->mc, &p->pc);
    p->nrb = (M + p->mc - 1) / p->mc;
    p->n_tasks = p->nrb * ((p->np + p->pc - 1) / p->pc);
    p->max_threads = (double)M * p->np * GEMM_NR * p->K < par_min ? 1 : p->n_tasks;
    return 0;
}

// Blocks in column-block-major order: consecutive tasks share their W columns.
void gemm_plan_task(const struct gemm_plan *p, int task) {
    const struct gemm_isa *s = p->isa;
    const struct gemm_args a = {p->y, p->ldy, p->x, p->ldx, p->w, p->K, p->n0, p->n1, p->bias, p->bf16, p->kc};
    const int rb = task % p->nrb, cb = task / p->nrb, m0 = rb * p->mc, q0 = p->p0 + cb * p->pc;
    const int m1 = m0 + p->mc < p->M ? m0 + p->mc : p->M, q1 = q0 + p->pc < p->p0 + p->np ? q0 + p->pc : p->p0 + p->np;
    s->block(&a, m0, m1, q0, q1);
}

int gemm_run(float *y, size_t ldy, const float *x, size_t ldx, const struct gemm_w *w, int M, int n0, int n1,
             const float *bias, int bf16_round, int n_threads) {
    struct gemm_plan p;
    int rc = gemm_plan_init(&p, y, ldy, x, ldx, w, M, n0, n1, bias, bf16_round);
    if (rc) return rc;
    int nt = n_threads < p.max_threads ? n_threads : p.max_threads;
    if (nt <= 1 || omp_in_parallel()) {
        for (int b = 0; b < p.n_tasks; b++) gemm_plan_task(&p, b);
        return 0;
    }
    int next = 0;
#pragma omp parallel num_threads(nt)
    for (int i = 0;; i++) {
        // dynamic: a shared counter hands out blocks, so a thread that was descheduled (or
        // starts late) takes fewer; the static variant (experiments only) deals them in turn
        const int b = sched_static ? omp_get_thread_num() + i * omp_get_num_threads()
                                   : __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);
        if (b >= p.n_tasks) break;
        gemm_plan_task(&p, b);
    }
    return 0;
}
