// gemm.c: argument checks, ISA selection, the reference, the scalar path, packing and the
// threaded driver of the deterministic SGEMM (gemm.h). The vector micro-kernels live in
// gemm_avx512.c and gemm_avx2.c; work is split into (rows x panels) blocks that threads take
// from a shared counter, and no block boundary can change a bit (each output element is
// computed whole by one micro-tile).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/pool.h"
#include "model/gemm_internal.h"

// ---- references ----
void gemm_ref(const struct gemm_io *io, const float *w, size_t ldw, int N, int K) {
    for (int m = 0; m < io->M; m++)
        for (int n = 0; n < N; n++) {
            float acc = +0.0f;
            for (int k = 0; k < K; k++) acc = fmaf(io->x[(size_t)m * io->ldx + k], w[(size_t)n * ldw + k], acc);
            io->y[(size_t)m * io->ldy + n] = gemm_epi1(acc, io->bias, n, io->round);
        }
}

void gemm_ref_dp(const struct gemm_io *io, const float *w, size_t ldw, int N, int K) {
    for (int m = 0; m < io->M; m++)
        for (int n = 0; n < N; n++) {
            float acc = +0.0f;
            for (int k = 0; k < K; k++) {
                const float xv = gemm_daz(gemm_float(gemm_bf16_bits(io->x[(size_t)m * io->ldx + k])));
                const float wv = gemm_daz(gemm_float(gemm_bf16_bits(w[(size_t)n * ldw + k])));
                acc = gemm_dp_step(acc, xv, wv);
            }
            io->y[(size_t)m * io->ldy + n] = gemm_epi1(gemm_dp_bias(acc, io->bias, n), NULL, n, io->round);
        }
}

const char *gemm_arithmetic(enum gemm_fmt fmt) {
    return fmt == GEMM_FMT_BF16_DP ? GEMM_ARITHMETIC_DP : GEMM_ARITHMETIC;
}

// ---- scalar path (CPUs without FMA or AVX2; also a third witness in the tests) ----
#define SC_MR 4
// Weight k of column c of panel p, as f32 (any format).
static inline float sc_w(const struct gemm_args *a, int p, int k, int c) {
    if (a->fmt == GEMM_FMT_F32) return a->w[(size_t)p * a->K * 16 + (size_t)k * 16 + c];
    const uint32_t u = a->q[(size_t)p * ((a->K + 1) / 2) * 16 + (size_t)(k / 2) * 16 + c];
    return gemm_float(k % 2 ? u << 16 : u & 0xffff0000u);
}

static void scalar_tile(const struct gemm_args *a, int i, int mr, int p) {
    float acc[SC_MR][16] = {{0}};
    const int dp = a->fmt == GEMM_FMT_BF16_DP;
    for (int k = 0; k < a->K; k++)
        for (int r = 0; r < mr; r++) {
            float xv = a->x[(size_t)(i + r) * a->ldx + k];
            if (dp) xv = gemm_daz(gemm_float(gemm_bf16_bits(xv)));
            for (int c = 0; c < 16; c++) {
                const float wv = sc_w(a, p, k, c);
                acc[r][c] = dp ? gemm_dp_step(acc[r][c], xv, gemm_daz(wv)) : fmaf(xv, wv, acc[r][c]);
            }
        }
    const int c0 = a->n0 > p * 16 ? a->n0 : p * 16, c1 = a->n1 < p * 16 + 16 ? a->n1 : p * 16 + 16;
    for (int r = 0; r < mr; r++)
        for (int n = c0; n < c1; n++) {
            const float v = acc[r][n - p * 16];
            a->y[(size_t)(i + r) * a->ldy + n] =
                dp ? gemm_epi1(gemm_dp_bias(v, a->bias, n), NULL, n, a->bf16) : gemm_epi1(v, a->bias, n, a->bf16);
        }
}

static void scalar_block(const struct gemm_args *a, int m0, int m1, int p0, int p1) {
    for (int i = m0; i < m1; i += SC_MR)
        for (int p = p0; p < p1; p++) scalar_tile(a, i, m1 - i < SC_MR ? m1 - i : SC_MR, p);
}

static void scalar_pack(float *dst, const struct gemm_mat *src, int pa, int pb) {
    const int N = src->N, K = src->K;
    for (int p = pa; p < pb; p++) {
        float *d = dst + (size_t)(p - pa) * K * 16;
        for (int c = 0; c < 16; c++) {
            const int n = p * 16 + c;
            const void *row = n < N ? gemm_src_row(src, (size_t)n) : NULL;
            for (int k = 0; k < K; k++) d[(size_t)k * 16 + c] = row ? gemm_src_at(row, src->type, (size_t)k) : 0.0f;
        }
    }
}

// The bf16 formats' packing of the scalar path: pair panels (gemm.h), one column at a time;
// the vector paths' pack_q give the same bits (tests/test_gemm.c).
static void pack_pairs(uint32_t *dst, const struct gemm_mat *src, int pa, int pb) {
    const int N = src->N, K = src->K, K2 = (K + 1) / 2;
    for (int p = pa; p < pb; p++) {
        uint32_t *d = dst + (size_t)(p - pa) * K2 * 16;
        for (int c = 0; c < 16; c++) {
            const int n = p * 16 + c;
            if (n >= N) {
                for (int j = 0; j < K2; j++) d[(size_t)j * 16 + c] = 0;
                continue;
            }
            const void *row = gemm_src_row(src, (size_t)n);
            for (int j = 0; j < K2; j++) {
                const uint32_t hi = gemm_bf16_bits(gemm_src_at(row, src->type, (size_t)2 * j));
                const uint32_t lo = 2 * j + 1 < K ? gemm_bf16_bits(gemm_src_at(row, src->type, (size_t)2 * j + 1)) : 0;
                d[(size_t)j * 16 + c] = hi | lo >> 16;
            }
        }
    }
}

const struct gemm_isa gemm_isa_scalar = {"scalar", SC_MR, 16 * SC_MR, 16, GEMM_KC_MAX, scalar_block, scalar_pack, pack_pairs};

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
    if (!strcmp(name, "avx512") || !strcmp(name, "avx512f"))
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               CPU_HAS_F16C();
    if (!strcmp(name, "avx2"))
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && CPU_HAS_F16C();
    return !strcmp(name, "scalar");
}

static int resolve(const char *name, const struct gemm_isa **out, char *msg, size_t msg_n) {
    static const struct gemm_isa *const all[] = {&gemm_isa_avx512, &gemm_isa_avx2, &gemm_isa_scalar, &gemm_isa_avx512f};
    for (int i = 0; i < 4; i++) {
        if (name ? strcmp(name, all[i]->name) != 0 : i == 3 || !gemm_isa_supported(all[i]->name)) continue;
        if (!gemm_isa_supported(all[i]->name)) {
            if (msg) snprintf(msg, msg_n, "gemm: ISA '%s' is not supported by this CPU", name);
            return GEMM_ERR_UNSUPPORTED;
        }
        *out = all[i];
        return 0;
    }
    if (msg) snprintf(msg, msg_n, "gemm: unknown ISA '%s' (avx512, avx512f, avx2, scalar)", name ? name : "");
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
size_t gemm_packed_bytes(enum gemm_fmt fmt, int N, int K) {
    if (N < 0 || K < 0 || (unsigned)fmt > GEMM_FMT_BF16_DP) return 0;
    const size_t np = ((size_t)N + GEMM_NR - 1) / GEMM_NR;
    const size_t per = fmt == GEMM_FMT_F32 ? (size_t)K * GEMM_NR * 4 : ((size_t)K + 1) / 2 * GEMM_NR * 4;
    if (per && np > SIZE_MAX / per) return 0;
    return np * per;
}

int gemm_w_init(struct gemm_w *w, enum gemm_fmt fmt, void *mem, size_t bytes, int N, int K) {
    const size_t need = gemm_packed_bytes(fmt, N, K);
    memset(w, 0, sizeof *w);
    if (N < 0 || K < 0 || (unsigned)fmt > GEMM_FMT_BF16_DP || (need == 0 && N > 0 && K > 0) || bytes < need ||
        ((uintptr_t)mem % 64) != 0)
        return GEMM_ERR_RANGE;
    w->N = N;
    w->K = K;
    w->fmt = fmt;
    if (fmt == GEMM_FMT_F32) w->p = (float *)mem;
    else w->q = (uint32_t *)mem;
    return 0;
}

int gemm_pack_panels(struct gemm_w *w, const struct gemm_mat *src, int pa, int pb) {
    int rc = 0;
    const struct gemm_isa *s = isa_get(&rc);
    if (!s) return rc;
    const int np = (w->N + GEMM_NR - 1) / GEMM_NR;
    if (src->N != w->N || src->K != w->K || src->ld < (size_t)w->K || pa < 0 || pb < pa || pb > np ||
        (src->type != GEMM_SRC_F32 && src->type != GEMM_SRC_BF16 && src->type != GEMM_SRC_F16))
        return GEMM_ERR_RANGE;
    if (pa == pb || w->K == 0) return 0;
    if (w->fmt == GEMM_FMT_F32) s->pack(w->p + (size_t)pa * w->K * GEMM_NR, src, pa, pb);
    else s->pack_q(w->q + (size_t)pa * ((w->K + 1) / 2) * GEMM_NR, src, pa, pb);
    return 0;
}

// One chunk of 4 panels of gemm_pack_into (a pool task; chunks write disjoint panels).
struct pack_job { struct gemm_w *w; const struct gemm_mat *src; int np; };
static void pack_chunk(void *ctx, int c, int slot) {
    (void)slot;
    const struct pack_job *j = ctx;
    gemm_pack_panels(j->w, j->src, 4 * c, 4 * c + 4 < j->np ? 4 * c + 4 : j->np);
}

int gemm_pack_into(struct gemm_w *w, enum gemm_fmt fmt, void *mem, size_t bytes, const struct gemm_mat *src,
                   int n_threads) {
    int rc = gemm_w_init(w, fmt, mem, bytes, src->N, src->K);
    if (!rc) rc = gemm_pack_panels(w, src, 0, 0); // checks ld, type and the ISA
    if (rc) return rc;
    const int np = (src->N + GEMM_NR - 1) / GEMM_NR;
    // chunks of 4 panels: at K = 1024, 256 KB of output per chunk
    const int nchunk = (np + 3) / 4;
    const int nt = (double)np * src->K < 65536.0 || n_threads < 1 ? 1 : n_threads;
    struct pack_job job = {w, src, np};
    pool_for(nchunk, pack_chunk, &job, nt);
    return 0;
}

int gemm_pack(struct gemm_w *w, enum gemm_fmt fmt, const struct gemm_mat *src, int n_threads) {
    memset(w, 0, sizeof *w);
    const size_t need = gemm_packed_bytes(fmt, src->N, src->K);
    if (src->N < 0 || src->K < 0 || (unsigned)fmt > GEMM_FMT_BF16_DP || (need == 0 && src->N > 0 && src->K > 0))
        return GEMM_ERR_RANGE;
    void *mem = NULL;
    if (need && !(mem = aligned_alloc(64, (need + 63) & ~(size_t)63))) return GEMM_ERR_NOMEM;
    int rc = gemm_pack_into(w, fmt, mem, need, src, n_threads);
    if (rc) {
        free(mem);
        memset(w, 0, sizeof *w);
        return rc;
    }
    w->own = 1;
    return 0;
}

void gemm_w_row(const struct gemm_w *w, int n, float *out) {
    if (w->fmt == GEMM_FMT_F32) {
        const float *p = w->p + (size_t)(n / GEMM_NR) * w->K * GEMM_NR + n % GEMM_NR;
        for (int k = 0; k < w->K; k++) out[k] = p[(size_t)k * GEMM_NR];
        return;
    }
    const uint32_t *q = w->q + (size_t)(n / GEMM_NR) * ((w->K + 1) / 2) * GEMM_NR + n % GEMM_NR;
    for (int k = 0; k < w->K; k++) {
        const uint32_t u = q[(size_t)(k / 2) * GEMM_NR];
        out[k] = gemm_float(k % 2 ? u << 16 : u & 0xffff0000u);
    }
}

void gemm_w_free(struct gemm_w *w) {
    if (!w) return;
    if (w->own) free(w->p ? (void *)w->p : (void *)w->q);
    memset(w, 0, sizeof *w);
}

// ---- driver ----
// Block shape (rows x panels); tunable by the benchmark through gemm_set_blocking.
static int blk_mc = 0, blk_pc = 0;
static int blk_kc = 0;
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

int gemm_plan_init(struct gemm_plan *p, const struct gemm_io *io, const struct gemm_w *w, int n0, int n1) {
    memset(p, 0, sizeof *p);
    int rc = 0;
    const struct gemm_isa *s = isa_get(&rc);
    if (!s) return rc;
    const int M = io->M;
    if (M < 0 || n0 < 0 || n1 < n0 || n1 > w->N || io->ldx < (size_t)w->K || io->ldy < (size_t)n1)
        return GEMM_ERR_RANGE;
    if (M == 0 || n0 == n1) return 0;
    p->isa = s;
    p->io = *io;
    p->w = w;
    p->n0 = n0, p->n1 = n1, p->kc = blk_kc > 0 ? blk_kc : s->kc;
    if (w->fmt != GEMM_FMT_F32) p->kc = (p->kc + 1) & ~1; // K blocks start at even k (whole pairs)
    if (p->kc > GEMM_KC_MAX) p->kc = GEMM_KC_MAX;
    p->p0 = n0 / GEMM_NR;
    p->np = (n1 + GEMM_NR - 1) / GEMM_NR - p->p0;
    block_shape(s, M, p->np, &p->mc, &p->pc);
    p->nrb = (M + p->mc - 1) / p->mc;
    p->n_tasks = p->nrb * ((p->np + p->pc - 1) / p->pc);
    p->max_threads = (double)M * p->np * GEMM_NR * w->K < par_min ? 1 : p->n_tasks;
    return 0;
}

// Blocks in column-block-major order: consecutive tasks share their W columns.
void gemm_plan_task(const struct gemm_plan *p, int task) {
    const struct gemm_isa *s = p->isa;
    const struct gemm_io *io = &p->io;
    const struct gemm_args a = {io->y, io->ldy, io->x, io->ldx, p->w->p, p->w->q, p->w->fmt, p->w->K,
                                p->n0, p->n1, io->bias, io->round, p->kc};
    const int rb = task % p->nrb, cb = task / p->nrb, m0 = rb * p->mc, q0 = p->p0 + cb * p->pc;
    const int m1 = m0 + p->mc < io->M ? m0 + p->mc : io->M;
    const int q1 = q0 + p->pc < p->p0 + p->np ? q0 + p->pc : p->p0 + p->np;
    s->block(&a, m0, m1, q0, q1);
}

static void plan_task(void *ctx, int task, int slot) {
    (void)slot;
    gemm_plan_task(ctx, task);
}

int gemm_run(const struct gemm_io *io, const struct gemm_w *w, int n0, int n1, int n_threads) {
    struct gemm_plan p;
    int rc = gemm_plan_init(&p, io, w, n0, n1);
    if (rc) return rc;
    // the pool hands out blocks from a shared counter (a thread that was descheduled takes
    // fewer); serial for one thread and inside another pool task
    const int nt = n_threads < p.max_threads ? n_threads : p.max_threads;
    pool_for(p.n_tasks, plan_task, &p, nt < 1 ? 1 : nt);
    return 0;
}
