// bench_attention.c: wall time of one attn_forward call (one layer, one sequence) per mode for
// Qwen3-8B / Llama-3-8B attention shapes (H 32, Hkv 8, d 128), single thread and 2 threads,
// and the ratio of each mode to `bf16` (target: hifa4 <= 1.3x bf16). Run by `make
// bench`; never part of `make test`. Env BENCH_T="512,2048" overrides the lengths.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attention/attn.h"
#include "base/common.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float urand(void) { // uniform in [-1, 1)
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 40) * (1.0 / 8388608.0)) - 1.0f;
}

// one timed attn_forward of ctx on fresh copies of the inputs; returns wall seconds and sets
// *cpu to the process CPU seconds (robust against other load on a shared machine)
static double run_once(struct attn_ctx *ctx, int T, int H, int Hkv, int d, const float *q0, const float *k0,
                       const float *v0, float *q, float *k, float *v, float *out, double *cpu) {
    struct err e = {0};
    int off = 0, len = T;
    struct attn_layer l = {.layer = 0, .sm = (float)(1.0 / sqrt((double)d)), .sm64 = 1.0 / sqrt((double)d)};
    memcpy(q, q0, (size_t)T * H * d * sizeof(float));
    memcpy(k, k0, (size_t)T * Hkv * d * sizeof(float));
    memcpy(v, v0, (size_t)T * Hkv * d * sizeof(float));
    struct timespec c0, c1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    double t0 = time_now();
    if (attn_forward(ctx, &(struct attn_batch){1, &off, &len, NULL}, &(struct attn_io){out, q, k, v, NULL, NULL}, &l, &e)) fprintf(stderr, "bench_attention: %s\n", e.msg);
    double dt = time_now() - t0;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    *cpu = (double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec);
    return dt;
}

int main(void) {
    const int H = 32, Hkv = 8, d = 128;
    // the first four run at every length, the ablations at the short one; /ch = the channel form
    const struct { const char *mode; int qmean; } modes[] = {
        {"bf16", ATTN_QMEAN_TOKEN},         {"direct", ATTN_QMEAN_TOKEN},
        {"hifa4", ATTN_QMEAN_TOKEN},        {"hifa4", ATTN_QMEAN_CHANNEL},
        {"direct+qmean", ATTN_QMEAN_TOKEN}, {"direct+qmean", ATTN_QMEAN_CHANNEL},
        {"direct+qmean+sqk", ATTN_QMEAN_TOKEN}, {"direct+qmean+sqk", ATTN_QMEAN_CHANNEL},
        {"direct+qmean+preorder", ATTN_QMEAN_TOKEN}, {"direct+qmean+preorder", ATTN_QMEAN_CHANNEL},
    };
    const int n_modes = (int)(sizeof modes / sizeof modes[0]);
    int Ts[8], nT = 0;
    const char *env = getenv("BENCH_T");
    char buf[128];
    snprintf(buf, sizeof buf, "%s", env ? env : "512,2048");
    for (char *t = strtok(buf, ","); t && nT < 8; t = strtok(NULL, ",")) Ts[nT++] = atoi(t);
    printf("bench_attention: one attn_forward (layer, sequence), H=%d Hkv=%d d=%d, tile 128, best of reps\n", H,
           Hkv, d);
    for (int ti = 0; ti < nT; ti++) {
        int T = Ts[ti];
        size_t nq = (size_t)T * H * d, nkv = (size_t)T * Hkv * d;
        float *q0 = malloc(nq * 4), *k0 = malloc(nkv * 4), *v0 = malloc(nkv * 4), *q = malloc(nq * 4),
              *k = malloc(nkv * 4), *v = malloc(nkv * 4), *out = malloc(nq * 4), *sc = malloc((size_t)Hkv * d * 4);
        for (size_t i = 0; i < nq; i++) q0[i] = 2 * urand();
        for (size_t i = 0; i < nkv; i++) k0[i] = 2 * urand() + ((i % d) == 51 ? 8.0f : 0.0f); // one outlier channel
        for (size_t i = 0; i < nkv; i++) v0[i] = urand();
        for (int i = 0; i < Hkv * d; i++) sc[i] = (i % d) == 51 ? 2.8f : 1.0f + 0.1f * urand();
        // modes interleaved, best of reps: a fair ratio even when other jobs share the cores
        int reps = T <= 512 ? 5 : 2;
        for (int th = 1; th <= 2; th++) {
            struct attn_ctx *ctx[16] = {0};
            double wall[16], cpu[16];
            int nm = 0;
            for (int m = 0; m < n_modes; m++) {
                if (T > 512 && m >= 4) break; // ablations only at the short length
                struct attn_opts o;
                attn_opts_default(&o);
                o.n_threads = th;
                o.qmean = modes[m].qmean;
                struct err e = {0};
                if (attn_ctx_init(&ctx[m], modes[m].mode, &o, &(struct attn_shape){1, H, Hkv, d, T}, sc, &e)) {
                    fprintf(stderr, "bench_attention: %s\n", e.msg);
                    return 1;
                }
                wall[m] = cpu[m] = 1e30;
                nm = m + 1;
            }
            for (int r = 0; r < reps; r++)
                for (int m = 0; m < nm; m++) {
                    double c, w = run_once(ctx[m], T, H, Hkv, d, q0, k0, v0, q, k, v, out, &c);
                    wall[m] = w < wall[m] ? w : wall[m];
                    cpu[m] = c < cpu[m] ? c : cpu[m];
                }
            for (int m = 0; m < nm; m++) {
                char name[64];
                snprintf(name, sizeof name, "%s%s", modes[m].mode, modes[m].qmean == ATTN_QMEAN_CHANNEL ? "/ch" : "");
                printf("  T=%-5d threads=%d  %-24s wall %8.1f ms (%5.2fx bf16)  cpu %8.1f ms (%5.2fx bf16)", T, th, name,
                       wall[m] * 1e3, wall[m] / wall[0], cpu[m] * 1e3, cpu[m] / cpu[0]);
                if (modes[m].qmean == ATTN_QMEAN_CHANNEL) // the token form is the entry before
                    printf("  channel/token cpu %.3f", cpu[m] / cpu[m - 1]);
                printf("\n");
                attn_ctx_free(ctx[m]);
            }
            fflush(stdout);
        }
        free(q0), free(k0), free(v0), free(q), free(k), free(v), free(out), free(sc);
    }
    return 0;
}
