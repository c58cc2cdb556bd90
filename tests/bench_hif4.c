// bench_hif4.c: HiF4 QDQ throughput in elements/s, single thread, for the shapes attention
// uses: contiguous rows (P rows, Q/K along head_dim: hif4_qdq / hif4_qdq_group) and strided
// columns (V along tokens: hif4_qdq_strided per column and hif4_qdq_cols per head), rows with
// a per-row tail (hif4_qdq_rows), for the
// normative and the A6 recipe, plus the literal reference for scale. Run by `make bench`.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/common.h"
#include "attention/hif4.h"

static uint64_t rng_state = 42;
static double rng_normal(void) {
    // splitmix64 + Box-Muller: the data only has to look like activations
    uint64_t z[2];
    for (int i = 0; i < 2; i++) {
        uint64_t s = (rng_state += 0x9e3779b97f4a7c15ull);
        s = (s ^ (s >> 30)) * 0xbf58476d1ce4e5b9ull;
        s = (s ^ (s >> 27)) * 0x94d049bb133111ebull;
        z[i] = s ^ (s >> 31);
    }
    double u1 = ((double)(z[0] >> 11) + 0.5) * 0x1p-53, u2 = (double)(z[1] >> 11) * 0x1p-53;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * HIFA4_PI * u2);
}

static volatile float sink;

enum { T = 4096, HEAD_DIM = 128, LD = 1024 }; // V of one layer: [T][Hkv*d] = [4096][8*128]
enum { NC = 1 << 18 };                         // contiguous buffer: 1 MiB, L2-resident

#define MIN_TIME 0.25

// The machine is shared: besides wall-clock rates, report rates per second of this thread's
// CPU time, which time-slicing by other processes does not inflate.
static double cpu_t0;
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double bench_start(void) {
    cpu_t0 = cpu_now();
    return time_now();
}

static void report(const char *what, const char *recipe, double elems, double secs) {
    double cpu = cpu_now() - cpu_t0;
    printf("bench_hif4: %-36s %-10s %8.1f Melem/s wall %8.1f Melem/s cpu\n", what, recipe,
           elems / secs * 1e-6, elems / cpu * 1e-6);
}

int main(void) {
    float *x = malloc(sizeof(float) * NC), *y = malloc(sizeof(float) * NC);
    float *v = malloc(sizeof(float) * (size_t)T * LD), *vo = malloc(sizeof(float) * (size_t)T * LD);
    if (!x || !y || !v || !vo) {
        fprintf(stderr, "bench_hif4: out of memory\n");
        return 1;
    }
    for (int i = 0; i < NC; i++) x[i] = (float)rng_normal();
    for (size_t i = 0; i < (size_t)T * LD; i++) v[i] = (float)rng_normal();
    const char *names[2] = {"normative", "a6"};
    for (int r = 0; r < 2; r++) {
        enum hif4_recipe rc = (enum hif4_recipe)r;
        double t0, dt;
        long reps;
        // contiguous array
        reps = 0;
        t0 = bench_start();
        do { hif4_qdq(y, x, NC, rc); reps++; } while ((dt = time_now() - t0) < MIN_TIME);
        report("contiguous hif4_qdq", names[r], (double)NC * reps, dt);
        sink = y[reps % NC];
        // one call per 64-float row (how P rows and Q/K head_dim slices are quantized)
        reps = 0;
        t0 = bench_start();
        do {
            for (int g = 0; g < NC; g += 64) hif4_qdq_group(y + g, x + g, 64, rc, NULL, NULL);
            reps++;
        } while ((dt = time_now() - t0) < MIN_TIME);
        report("rows of 64 hif4_qdq_group", names[r], (double)NC * reps, dt);
        // in place, with metadata and codes (the encode path)
        reps = 0;
        t0 = bench_start();
        do {
            struct hif4_meta m;
            uint8_t codes[64];
            for (int g = 0; g < NC; g += 64) {
                hif4_qdq_group(y + g, x + g, 64, rc, &m, codes);
                sink += codes[3];
            }
            reps++;
        } while ((dt = time_now() - t0) < MIN_TIME);
        report("group + meta + codes", names[r], (double)NC * reps, dt);
        // rows of head_dim 96 (Phi-3: tail group per row), batched across rows
        reps = 0;
        t0 = bench_start();
        do { hif4_qdq_rows(y, 96, x, 96, NC / 96, 96, rc); reps++; } while ((dt = time_now() - t0) < MIN_TIME);
        report("hif4_qdq_rows [2730][96]", names[r], (double)(NC / 96) * 96 * reps, dt);
        // V along tokens, one kv head (128 columns of ld 1024): a 128-token tile (512 KiB,
        // cache-resident, what a FlashAttention kernel quantizes) and a whole 4096-token head
        // (16 MiB matrix: bound by memory; a 4 KiB stride thrashes cache sets)
        for (int whole = 0; whole < 2; whole++) {
            int rows = whole ? T : 128;
            const char *lab_s = whole ? "strided cols, 4096 tok, stride 1024" : "strided cols, 128-tok tile";
            const char *lab_c = whole ? "hif4_qdq_cols, 4096 tok, ld 1024" : "hif4_qdq_cols, 128-tok tile";
            reps = 0;
            t0 = bench_start();
            do {
                for (int c = 0; c < HEAD_DIM; c++) hif4_qdq_strided(vo + c, v + c, rows, LD, rc);
                reps++;
            } while ((dt = time_now() - t0) < MIN_TIME);
            report(lab_s, names[r], (double)rows * HEAD_DIM * reps, dt);
            reps = 0;
            t0 = bench_start();
            do {
                hif4_qdq_cols(vo, LD, v, LD, rows, HEAD_DIM, rc);
                reps++;
            } while ((dt = time_now() - t0) < MIN_TIME);
            report(lab_c, names[r], (double)rows * HEAD_DIM * reps, dt);
        }
        // literal scalar reference, for scale
        reps = 0;
        t0 = bench_start();
        do {
            for (int g = 0; g < NC / 16; g += 64) hif4_qdq_group_ref(y + g, x + g, rc, NULL, NULL);
            reps++;
        } while ((dt = time_now() - t0) < MIN_TIME);
        report("reference (literal section 4)", names[r], (double)(NC / 16) * reps, dt);
    }
    free(x);
    free(y);
    free(v);
    free(vo);
    return 0;
}
