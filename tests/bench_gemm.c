// bench_gemm.c: throughput of gemm_run against cblas_sgemm(RowMajor, NoTrans, Trans) on the
// forward-pass shapes, plus packing speed. Wall and process-CPU time; each sample is the
// best of several, and the two libraries alternate in one run so their ratio sees the same
// machine load. Timings only, never part of `make test`.
//   bench_gemm [--set 06b|135m|decode|head|frac|all] [--threads 1,2] [--reps R] [--min-time S]
//              [--shape M,N,K] [--no-blas] [--blocking MC,PC] [--pack]
//              [--shape M,N,K --tune "mc,pc,kc mc,pc,kc ..."]
//              [--seq dyn|pool|blas|blas-omp --seq-m M --seq-layers L]   (forward-like)
// HIFA4_GEMM_ISA selects our path, OPENBLAS_CORETYPE OpenBLAS's kernel.
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "model/gemm.h"
#include "model/gemm_internal.h"
#include "base/pool.h"
#include "bench_peak.h"

void openblas_set_num_threads(int);
char *openblas_get_corename(void);

static double now(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static unsigned long long rng = 88172645463325252ull;
static float frand(void) { // xorshift64, uniform in [-1, 1)
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((double)(rng >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

struct shape { const char *name; int M, N, K; };
static const struct shape set_06b[] = {
    {"q", 512, 2048, 1024},       {"k/v", 512, 1024, 1024},  {"o", 512, 1024, 2048},
    {"gate/up", 512, 3072, 1024}, {"down", 512, 1024, 3072},
    {"q", 4096, 2048, 1024},      {"k/v", 4096, 1024, 1024}, {"o", 4096, 1024, 2048},
    {"gate/up", 4096, 3072, 1024},   {"down", 4096, 1024, 3072}};
static const struct shape set_head[] = {{"lm_head", 32, 151936, 1024}};
static const struct shape set_decode[] = {{"decode", 1, 3072, 1024}, {"decode", 4, 3072, 1024},
                                          {"decode", 16, 3072, 1024}};
// The issue-20 range: rows >= 64, K and N of 576..12288 (SmolLM2-135M to Qwen3-8B).
static const struct shape set_frac[] = {
    {"135m q/o", 64, 576, 576},    {"135m ffn", 64, 1536, 576},  {"8b ffn", 64, 12288, 4096},
    {"8b down", 64, 4096, 12288},  {"135m q/o", 512, 576, 576},  {"135m up", 512, 1536, 576},
    {"135m dn", 512, 576, 1536},   {"8b q", 512, 4096, 4096},    {"8b ffn", 512, 12288, 4096},
    {"8b down", 512, 4096, 12288}, {"135m q/o", 4096, 576, 576}, {"135m up", 4096, 1536, 576},
    {"135m dn", 4096, 576, 1536},  {"135m head", 4096, 49152, 576}};
static enum gemm_fmt bfmt = GEMM_FMT_F32; // --fmt f32|bf16|dp: the packed format timed
static double peak = 0; // this path's FMA peak, GFLOP per CPU-second of one thread
static const struct shape set_135m[] = {{"q/o", 4096, 576, 576}, {"k/v", 4096, 192, 576},
                                        {"gate/up", 4096, 1536, 576}, {"down", 4096, 576, 1536},
                                        {"lm_head", 4096, 49152, 576}};

struct opts { int threads[4], n_threads, reps, blas, pack; double min_time; };

// Best over reps of (wall, cpu) seconds per call; each sample repeats the call until
// min_time has passed.
struct t2 { double wall, cpu; };
static struct t2 time_calls(int lib, int nt, const struct shape *s, float *y, const float *x, const float *w,
                            const struct gemm_w *pw, double min_time) {
    int iters = 0;
    double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID), w1;
    do {
        const struct gemm_io io = {y, (size_t)s->N, x, (size_t)s->K, s->M, NULL, GEMM_ROUND_NONE};
        if (lib == 0) gemm_run(&io, pw, 0, s->N, nt);
        else cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s->M, s->N, s->K, 1.0f, x, s->K, w, s->K, 0.0f, y, s->N);
        iters++;
        w1 = now(CLOCK_MONOTONIC);
    } while (w1 - w0 < min_time);
    struct t2 t = {(w1 - w0) / iters, (now(CLOCK_PROCESS_CPUTIME_ID) - c0) / iters};
    return t;
}

static void bench_shape(const struct shape *s, const struct opts *o) {
    const size_t nx = (size_t)s->M * s->K, nw = (size_t)s->N * s->K, ny = (size_t)s->M * s->N;
    float *x = malloc(nx * 4), *w = malloc(nw * 4), *y = malloc(ny * 4);
    struct gemm_w pw;
    if (!x || !w || !y) { fprintf(stderr, "out of memory\n"); exit(1); }
    for (size_t i = 0; i < nx; i++) x[i] = frand();
    for (size_t i = 0; i < nw; i++) w[i] = frand();
    const struct gemm_mat src = {w, GEMM_SRC_F32, (size_t)s->K, s->N, s->K};
    if (gemm_pack(&pw, bfmt, &src, 2)) { fprintf(stderr, "pack failed\n"); exit(1); }
    const double flop = 2.0 * s->M * s->N * s->K;
    for (int ti = 0; ti < o->n_threads; ti++) {
        const int nt = o->threads[ti];
        openblas_set_num_threads(nt);
        struct t2 best[2] = {{1e30, 1e30}, {1e30, 1e30}};
        for (int r = 0; r < o->reps; r++)
            for (int lib = 0; lib < (o->blas ? 2 : 1); lib++) {
                // the other library's idle threads spin for a while after a call (libgomp
                // GOMP_SPINCOUNT, OpenBLAS thread timeout): let them fall asleep first
                if (o->blas) usleep(150000);
                time_calls(lib, nt, s, y, x, w, &pw, 0.0); // warm-up call
                struct t2 t = time_calls(lib, nt, s, y, x, w, &pw, o->min_time);
                if (t.wall < best[lib].wall) best[lib].wall = t.wall;
                if (t.cpu < best[lib].cpu) best[lib].cpu = t.cpu;
            }
        printf("%-10s M=%5d N=%6d K=%5d  t=%d  gemm %7.1f GF/s (cpu %6.1f = %.2f of peak)", s->name, s->M, s->N,
               s->K, nt, flop / best[0].wall * 1e-9, flop / best[0].cpu * 1e-9, flop / best[0].cpu * 1e-9 / peak);
        if (o->blas)
            printf("  blas %7.1f GF/s (cpu %6.1f)  ratio %.3f", flop / best[1].wall * 1e-9, flop / best[1].cpu * 1e-9,
                   best[1].wall / best[0].wall);
        printf("\n");
        fflush(stdout);
    }
    gemm_w_free(&pw);
    free(x), free(w), free(y);
}

// Packing speed for an (N, K) matrix from f32, bf16 and f16 rows, against memcpy of the
// packed bytes and the project's bf16 -> row-major f32 conversion loop.
static void bench_pack(int N, int K, int nt, int reps) {
    const size_t n = (size_t)N * K, bytes = gemm_packed_bytes(GEMM_FMT_F32, N, K);
    float *w = malloc(n * 4), *dst = aligned_alloc(64, bytes), *cpy = aligned_alloc(64, bytes);
    uint16_t *h = malloc(n * 2), *hf = malloc(n * 2);
    if (!w || !dst || !cpy || !h || !hf) { fprintf(stderr, "out of memory\n"); exit(1); }
    for (size_t i = 0; i < n; i++) w[i] = frand(), h[i] = (uint16_t)(gemm_bits(w[i]) >> 16), hf[i] = 0x3c00 ^ (i & 0x3ff);
    memset(dst, 0, bytes), memset(cpy, 0, bytes);
    double best[5] = {1e30, 1e30, 1e30, 1e30, 1e30};
    for (int r = 0; r < reps; r++) {
        struct gemm_w pw;
        double t0 = now(CLOCK_MONOTONIC);
        const struct gemm_mat sf = {w, GEMM_SRC_F32, (size_t)K, N, K}, sb = {h, GEMM_SRC_BF16, (size_t)K, N, K},
                              sh = {hf, GEMM_SRC_F16, (size_t)K, N, K};
        gemm_pack_into(&pw, GEMM_FMT_F32, dst, bytes, &sf, nt);
        double t1 = now(CLOCK_MONOTONIC);
        gemm_pack_into(&pw, GEMM_FMT_F32, dst, bytes, &sb, nt);
        double t2 = now(CLOCK_MONOTONIC);
        gemm_pack_into(&pw, GEMM_FMT_F32, dst, bytes, &sh, nt);
        double t3 = now(CLOCK_MONOTONIC);
#pragma omp parallel for schedule(static) num_threads(nt)
        for (int c = 0; c < nt; c++) {
            size_t a = bytes / 4 * c / nt, b = bytes / 4 * (c + 1) / nt;
            memcpy(cpy + a, w + a, (b - a) * 4);
        }
        double t4 = now(CLOCK_MONOTONIC);
        const long long nn = (long long)n; // model.c convert(): bf16 rows -> f32 rows
#pragma omp parallel for schedule(static) num_threads(nt)
        for (long long i = 0; i < nn; i++) cpy[i] = gemm_bf16_f32(h[i]);
        double t5 = now(CLOCK_MONOTONIC);
        const double d[5] = {t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4};
        for (int i = 0; i < 5; i++) if (d[i] < best[i]) best[i] = d[i];
    }
    printf("pack N=%d K=%d t=%d (GB/s of packed f32 written): f32 %.1f  bf16 %.1f  f16 %.1f  | memcpy %.1f  "
           "bf16->f32 rows (today) %.1f\n", N, K, nt, bytes / best[0] * 1e-9, bytes / best[1] * 1e-9,
           bytes / best[2] * 1e-9, bytes / best[3] * 1e-9, bytes / best[4] * 1e-9);
    free(w), free(dst), free(cpy), free(h), free(hf);
}

// Tuning: alternates block shapes "mc,pc,kc" on one shape and threads count, best of reps.
static void tune(const struct shape *s, const char *list, int nt, int reps, double min_time) {
    int cfg[32][3], n = 0;
    for (const char *p = list; n < 32 && *p;) {
        if (sscanf(p, "%d,%d,%d", &cfg[n][0], &cfg[n][1], &cfg[n][2]) == 3) n++;
        while (*p && *p != ' ') p++;
        while (*p == ' ') p++;
    }
    const size_t nx = (size_t)s->M * s->K, nw = (size_t)s->N * s->K, ny = (size_t)s->M * s->N;
    float *x = malloc(nx * 4), *w = malloc(nw * 4), *y = malloc(ny * 4);
    struct gemm_w pw;
    for (size_t i = 0; i < nx; i++) x[i] = frand();
    for (size_t i = 0; i < nw; i++) w[i] = frand();
    const struct gemm_mat src = {w, GEMM_SRC_F32, (size_t)s->K, s->N, s->K};
    gemm_pack(&pw, bfmt, &src, 2);
    struct t2 best[32];
    for (int c = 0; c < n; c++) best[c].wall = best[c].cpu = 1e30;
    for (int r = 0; r < reps; r++)
        for (int c = 0; c < n; c++) {
            gemm_set_blocking(cfg[c][0], cfg[c][1], -1);
            gemm_set_kc(cfg[c][2]);
            struct t2 t = time_calls(0, nt, s, y, x, w, &pw, min_time);
            if (t.wall < best[c].wall) best[c].wall = t.wall;
            if (t.cpu < best[c].cpu) best[c].cpu = t.cpu;
        }
    const double flop = 2.0 * s->M * s->N * s->K;
    for (int c = 0; c < n; c++)
        printf("tune M=%d N=%d K=%d t=%d mc=%3d pc=%3d kc=%3d: %6.1f GF/s (cpu %6.1f)\n", s->M, s->N, s->K, nt,
               cfg[c][0], cfg[c][1], cfg[c][2], flop / best[c].wall * 1e-9, flop / best[c].cpu * 1e-9);
    gemm_set_blocking(0, 0, -1);
    gemm_set_kc(0);
    gemm_w_free(&pw);
    free(x), free(w), free(y);
}

// A forward-like sequence: L layers (default 28) of Qwen3-0.6B's 7 matrices (4 distinct layers of
// weights, cycled, 240 MB: more than the L3) at batch M. mode: dyn (ours, shared-counter
// blocks), static (ours, blocks dealt in turn), pool (ours as tasks on the project's pool),
// blas (OpenBLAS threads), blas-omp (OpenBLAS at 1 thread inside an OpenMP static column
// split, as ops.c does today).
static void pool_task(void *ctx, int task, int slot) {
    (void)slot;
    gemm_plan_task((const struct gemm_plan *)ctx, task);
}

static void bench_seq(int M, int layers, const char *mode, int nt, int reps) {
    enum { NL = 4, NM = 7 };
    static const int nk[NM][2] = {{2048, 1024}, {1024, 1024}, {1024, 1024}, {1024, 2048},
                                  {3072, 1024}, {3072, 1024}, {1024, 3072}};
    float *w[NL][NM], *x = malloc((size_t)M * 3072 * 4), *y = malloc((size_t)M * 3072 * 4);
    struct gemm_w pw[NL][NM];
    const int blas = !strncmp(mode, "blas", 4);
    for (size_t i = 0; i < (size_t)M * 3072; i++) x[i] = frand();
    double flop = 0;
    for (int l = 0; l < NL; l++)
        for (int j = 0; j < NM; j++) {
            const size_t n = (size_t)nk[j][0] * nk[j][1];
            w[l][j] = malloc(n * 4);
            for (size_t i = 0; i < n; i++) w[l][j][i] = frand();
            if (!blas) {
                const struct gemm_mat src = {w[l][j], GEMM_SRC_F32, (size_t)nk[j][1], nk[j][0], nk[j][1]};
                gemm_pack(&pw[l][j], bfmt, &src, 2);
                free(w[l][j]);
            }
        }
    for (int j = 0; j < NM; j++) flop += layers * 2.0 * M * nk[j][0] * nk[j][1];
    openblas_set_num_threads(!strcmp(mode, "blas") ? nt : 1);
    double best_w = 1e30, best_c = 1e30, sum_w = 0;
    for (int r = 0; r < reps; r++) {
        double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
        for (int L = 0; L < layers; L++)
            for (int j = 0; j < NM; j++) {
                const int N = nk[j][0], K = nk[j][1], l = L % NL;
                const struct gemm_io io = {y, (size_t)N, x, (size_t)K, M, NULL, GEMM_ROUND_NONE};
                if (!strcmp(mode, "pool")) {
                    struct gemm_plan pl;
                    gemm_plan_init(&pl, &io, &pw[l][j], 0, N);
                    pool_for(pl.n_tasks, pool_task, &pl, nt < pl.max_threads ? nt : pl.max_threads);
                } else if (!blas) gemm_run(&io, &pw[l][j], 0, N, nt);
                else if (!strcmp(mode, "blas"))
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, x, K, w[l][j], K, 0.0f, y, N);
                else {
#pragma omp parallel num_threads(nt)
                    { // ops.c ops_matmul_mt_ex: slices of multiples of 16 columns
                        const int t = omp_get_thread_num(), n = omp_get_num_threads();
                        const int per = ((N + n - 1) / n + 15) / 16 * 16, n0 = t * per, n1 = n0 + per < N ? n0 + per : N;
                        if (n0 < n1)
                            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, n1 - n0, K, 1.0f, x, K,
                                        w[l][j] + (size_t)n0 * K, K, 0.0f, y + n0, N);
                    }
                }
            }
        double dw = now(CLOCK_MONOTONIC) - w0, dc = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
        if (dw < best_w) best_w = dw;
        if (dc < best_c) best_c = dc;
        sum_w += dw;
    }
    const char *pol = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
    printf("seq M=%4d L=%2d mode %-8s t=%d wait=%s spin=%s: best %8.2f ms (mean %8.2f, cpu %8.2f)  %6.1f GF/s\n", M, layers, mode, nt,
           pol ? pol : "-", spin ? spin : "-", best_w * 1e3, sum_w / reps * 1e3, best_c * 1e3, flop / best_w * 1e-9);
    for (int l = 0; l < NL; l++)
        for (int j = 0; j < NM; j++) {
            if (blas) free(w[l][j]);
            else gemm_w_free(&pw[l][j]);
        }
    free(x), free(y);
}

static void run_set(const struct shape *s, int n, const struct opts *o) {
    for (int i = 0; i < n; i++) bench_shape(&s[i], o);
}

int main(int argc, char **argv) {
    struct opts o = {{1, 2}, 2, 3, 1, 0, 0.3};
    const char *set = "all", *tune_list = NULL, *seq_mode = NULL;
    int seq_m = 16, seq_layers = 28;
    struct shape one = {"custom", 0, 0, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "--set")) set = v, i++;
        else if (!strcmp(a, "--threads")) {
            o.n_threads = sscanf(v, "%d,%d,%d,%d", &o.threads[0], &o.threads[1], &o.threads[2], &o.threads[3]), i++;
        } else if (!strcmp(a, "--reps")) o.reps = atoi(v), i++;
        else if (!strcmp(a, "--min-time")) o.min_time = atof(v), i++;
        else if (!strcmp(a, "--shape")) sscanf(v, "%d,%d,%d", &one.M, &one.N, &one.K), set = "one", i++;
        else if (!strcmp(a, "--no-blas")) o.blas = 0;
        else if (!strcmp(a, "--tune")) tune_list = v, i++;
        else if (!strcmp(a, "--seq")) seq_mode = v, i++;
        else if (!strcmp(a, "--seq-m")) seq_m = atoi(v), i++;
        else if (!strcmp(a, "--seq-layers")) seq_layers = atoi(v), i++;
        else if (!strcmp(a, "--pack")) o.pack = 1;
        else if (!strcmp(a, "--fmt")) {
            bfmt = !strcmp(v, "bf16") ? GEMM_FMT_BF16 : !strcmp(v, "dp") ? GEMM_FMT_BF16_DP : GEMM_FMT_F32, i++;
            o.blas = 0; // the bf16 formats have no OpenBLAS counterpart here
        }
        else if (!strcmp(a, "--blocking")) {
            int mc = 0, pc = 0;
            sscanf(v, "%d,%d", &mc, &pc), i++;
            gemm_set_blocking(mc, pc, -1);
        } else {
            fprintf(stderr, "usage: %s [--set 06b|135m|decode|head|frac|all] [--threads 1,2] [--reps R] [--min-time S] "
                            "[--shape M,N,K] [--no-blas] [--blocking MC,PC] [--pack] [--fmt f32|bf16|dp]\n", argv[0]);
            return 2;
        }
    }
    char msg[256];
    if (gemm_isa_init(msg, sizeof msg)) { fprintf(stderr, "%s\n", msg); return 1; }
    peak = bench_peak_isa(gemm_isa_name(), 10);
    printf("# gemm isa %s, format %s (%s), OpenBLAS core %s, reps %d, min-time %.2f s; FMA peak of this path %.1f "
           "GFLOP/CPU-s (one thread, 12 chains)\n", gemm_isa_name(), bfmt == GEMM_FMT_F32 ? "f32" : bfmt == GEMM_FMT_BF16 ? "bf16" : "dp",
           gemm_arithmetic(bfmt), openblas_get_corename(), o.reps, o.min_time, peak);
    if (seq_mode) {
        for (int t = 0; t < o.n_threads; t++) bench_seq(seq_m, seq_layers, seq_mode, o.threads[t], o.reps);
        return 0;
    }
    if (tune_list) {
        for (int t = 0; t < o.n_threads; t++) tune(&one, tune_list, o.threads[t], o.reps, o.min_time);
        return 0;
    }
    if (o.pack) {
        for (int t = 0; t < o.n_threads; t++) bench_pack(3072, 1024, o.threads[t], 5);
        for (int t = 0; t < o.n_threads; t++) bench_pack(151936, 1024, o.threads[t], 3);
    }
    const int all = !strcmp(set, "all");
    if (!strcmp(set, "one")) bench_shape(&one, &o);
    if (all || !strcmp(set, "06b")) run_set(set_06b, 10, &o);
    if (all || !strcmp(set, "decode")) run_set(set_decode, 3, &o);
    if (all || !strcmp(set, "head")) run_set(set_head, 1, &o);
    if (all || !strcmp(set, "135m")) run_set(set_135m, 5, &o);
    if (!strcmp(set, "frac")) run_set(set_frac, sizeof set_frac / sizeof set_frac[0], &o);
    return 0;
}
