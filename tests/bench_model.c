// bench_model.c (`make bench`): forward-pass throughput of a synthetic Qwen3-0.6B-shaped model
// (28 layers, dim 1024, 16/8 heads of 128, FFN 3072, vocab 151936, tied; ~0.6B parameters,
// bf16 on disk, made once in $HIFA4_TMP and reused) on one packed batch of 512 tokens
// (4 sequences x 128, logits at 8 rows per sequence). Prints forward tokens/s and the
// forward's total GEMM time as a ratio to the same GEMM shapes timed alone: with the forward's
// own deterministic kernel on the worker pool (1.00 means the forward loses nothing around its
// GEMMs), and with OpenBLAS's cblas_sgemm on its own threads for comparison (bench-only link).
#include <cblas.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>

#include "import/make_model.h"
#include "attention/attn.h"
#include "base/pool.h"
#include "model/gemm.h"
#include "model/model.h"
#include "model/ops.h"
#include "bench_peak.h"

static void fill(float *x, size_t n, uint64_t s) {
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        x[i] = (float)((double)(s >> 11) / 9007199254740992.0 - 0.5);
    }
}

// Seconds for `count` GEMMs Y(M,N) = X(M,K) W(N,K)^T on fresh buffers (after one warm-up):
// nt = 0 calls cblas_sgemm with OpenBLAS's own threads, nt > 0 the forward's kernel (gemm.h
// on packed W, tasks on the pool with nt threads; packing not timed).
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void gemm_task(void *p, int t, int slot) {
    (void)slot;
    gemm_plan_task(p, t);
}

// *cpu receives the process CPU seconds of the same calls.
static double time_gemm(int M, int N, int K, int count, int nt, double *cpu) {
    float *x = malloc(sizeof(float) * (size_t)M * K), *w = malloc(sizeof(float) * (size_t)N * K);
    float *y = malloc(sizeof(float) * (size_t)M * N);
    if (!x || !w || !y) { free(x), free(w), free(y); return -1; }
    fill(x, (size_t)M * K, 1);
    fill(w, (size_t)N * K, 2);
    struct gemm_w pw = {0};
    const struct gemm_mat src = {w, GEMM_SRC_F32, (size_t)K, N, K};
    const struct gemm_io io = {y, (size_t)N, x, (size_t)K, M, NULL, GEMM_ROUND_NONE};
    if (nt && gemm_pack(&pw, GEMM_FMT_F32, &src, 1)) { free(x), free(w), free(y); return -1; }
    double t0 = 0, c0 = 0;
    for (int i = -1; i < count; i++) {
        if (i == 0) t0 = time_now(), c0 = cpu_now();
        if (nt) {
            struct gemm_plan p;
            gemm_plan_init(&p, &io, &pw, 0, N);
            pool_for(p.n_tasks, gemm_task, &p, nt < p.max_threads ? nt : p.max_threads);
        } else {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, x, K, w, K, 0.0f, y, N);
        }
    }
    double t = time_now() - t0;
    *cpu = cpu_now() - c0;
    gemm_w_free(&pw);
    free(x), free(w), free(y);
    return t;
}

static const char *load_avg(void) {
    static char buf[128] = "?\n";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (!fgets(buf, sizeof buf, f)) snprintf(buf, sizeof buf, "?\n");
        fclose(f);
    }
    return buf;
}

// Streamed weights (binary32 panels packed per layer during the forward) or resident bf16
// weights (--weights bf16: the dp contract, vdpbf16ps where the CPU has it) against resident
// packed f32 weights on the same batch: forwards alternated, fastest of 3 each, wall and
// process CPU.
static int weights_vs_resident(const char *dir, const struct model_opts *base, struct model *res,
                               const struct model_batch *b, float *lg, int weights) {
    struct model_opts o = *base;
    o.weights = weights;
    struct model *st = NULL;
    struct attn_ctx *ctx[2] = {NULL, NULL};
    struct err e = {0};
    const char *mode = attn_mode_find("bf16") ? "bf16" : "f32";
    int rc = model_open(&st, dir, &o, &e);
    if (!rc) rc = model_attn_open(&ctx[0], res, mode, NULL, NULL, &e);
    if (!rc) rc = model_attn_open(&ctx[1], st, mode, NULL, NULL, &e);
    double w[2] = {1e30, 1e30}, c[2] = {1e30, 1e30}, pack = 1e30;
    for (int r = -1; r < 3 && !rc; r++) // r = -1: warm-up of the streaming model's buffers
        for (int k = 0; k < 2 && !rc; k++) {
            struct model *m = k ? st : res;
            if (r < 0 && !k) continue;
            model_reset_stats(m);
            if ((rc = model_forward(m, ctx[k], NULL, b, lg, &e)) || r < 0) continue;
            if (model_stats(m)->forward_s < w[k]) w[k] = model_stats(m)->forward_s;
            if (model_stats(m)->forward_cpu_s < c[k]) c[k] = model_stats(m)->forward_cpu_s;
            if (k && model_stats(m)->convert_s < pack) pack = model_stats(m)->convert_s;
        }
    if (rc) fprintf(stderr, "bench_model: %s\n", e.msg);
    else
        printf("  weights %s vs resident f32 (same batch, alternated, fastest of 3): f32 %.3f s (%.3f CPU-s), "
               "%s %.3f s (%.3f CPU-s): %.3fx wall, %.3fx CPU", model_weights_name(weights), w[0], c[0],
               model_weights_name(weights), w[1], c[1], w[1] / w[0], c[1] / c[0]);
    if (!rc && weights == MODEL_WEIGHTS_STREAM) printf("; packing %.3f s wall", pack);
    if (!rc) printf("\n");
    attn_ctx_free(ctx[0]);
    attn_ctx_free(ctx[1]);
    model_free(st);
    return rc ? 1 : 0;
}

int main(int argc, char **argv) {
    // --weights: only the weights comparison (stream and bf16 against resident f32)
    const int weights_only = argc > 1 && !strcmp(argv[1], "--weights");
    const char *tmp = getenv("HIFA4_TMP") ? getenv("HIFA4_TMP") : "build/tmp";
    char dir[512], cfgp[600], stp[600];
    snprintf(dir, sizeof dir, "%s/bench-qwen3-0.6b", tmp);
    snprintf(cfgp, sizeof cfgp, "%s/config.json", dir);
    snprintf(stp, sizeof stp, "%s/model.safetensors", dir);
    struct err e = {0};
    struct make_model_opts mo;
    make_model_opts_default(&mo);
    mo.arch = ARCH_QWEN3, mo.n_layers = 28, mo.dim = 1024, mo.n_heads = 16, mo.n_kv_heads = 8, mo.head_dim = 128;
    mo.hidden_dim = 3072, mo.vocab_size = 151936, mo.max_seq = 40960, mo.tied = 1, mo.seed = 1;
    if (!file_exists(cfgp) || !file_exists(stp)) {
        fprintf(stderr, "bench_model: making %s (once, ~1.2 GB)\n", dir);
        double t0 = time_now();
        if (make_model(&mo, dir, &e)) { fprintf(stderr, "bench_model: %s\n", e.msg); return 1; }
        fprintf(stderr, "bench_model: made in %.1f s\n", time_now() - t0);
    }
    enum { N_SEQ = 4, SEQ = 128, OUT_PER_SEQ = 8, T = N_SEQ * SEQ };
    struct model_opts o;
    model_opts_default(&o);
    o.max_tokens = T;
    o.max_seq = T; // the mode comparison below also runs one sequence of all T tokens
    struct model *m = NULL;
    double t0 = time_now();
    if (model_open(&m, dir, &o, &e)) { fprintf(stderr, "bench_model: %s\n", e.msg); return 1; }
    const double t_open = time_now() - t0;
    const char *mode = attn_mode_find("bf16") ? "bf16" : "f32";
    struct attn_ctx *ctx = NULL;
    if (model_attn_open(&ctx, m, mode, NULL, NULL, &e)) { fprintf(stderr, "bench_model: %s\n", e.msg); model_free(m); return 1; }
    const struct model_config *c = model_cfg(m);
    int32_t *tok = malloc(sizeof(int32_t) * T);
    int lens[N_SEQ], pos[N_SEQ * OUT_PER_SEQ];
    for (int i = 0; i < T; i++) tok[i] = (int32_t)((i * 7919u + 13u) % (unsigned)c->vocab_size);
    for (int s = 0; s < N_SEQ; s++) {
        lens[s] = SEQ;
        for (int j = 0; j < OUT_PER_SEQ; j++) pos[s * OUT_PER_SEQ + j] = s * SEQ + SEQ - OUT_PER_SEQ + j;
    }
    const int n_out = N_SEQ * OUT_PER_SEQ;
    float *lg = malloc(sizeof(float) * (size_t)n_out * c->vocab_size);
    if (!tok || !lg) return 1;
    // warm-up (first touch of the run state and weights), then timed runs
    if (model_forward(m, ctx, NULL, &(struct model_batch){.tokens = tok, .n_seq = N_SEQ, .seq_len = lens, .out_pos = pos, .n_out = n_out}, lg, &e)) { fprintf(stderr, "bench_model: %s\n", e.msg); return 1; }
    // the fastest of 3 runs (the machine is shared: the minimum is the least disturbed)
    const struct model_batch bt = {.tokens = tok, .n_seq = N_SEQ, .seq_len = lens, .out_pos = pos, .n_out = n_out};
    if (weights_only) {
        const int rc = model_weights_mode(m) != MODEL_WEIGHTS_F32 ||
                       weights_vs_resident(dir, &o, m, &bt, lg, MODEL_WEIGHTS_STREAM) ||
                       weights_vs_resident(dir, &o, m, &bt, lg, MODEL_WEIGHTS_BF16);
        printf("  load average while running: %s", load_avg());
        attn_ctx_free(ctx);
        model_free(m);
        free(tok);
        free(lg);
        return rc;
    }
    struct model_stats best = {0};
    for (int r = 0; r < 3; r++) {
        model_reset_stats(m);
        if (model_forward(m, ctx, NULL, &(struct model_batch){.tokens = tok, .n_seq = N_SEQ, .seq_len = lens, .out_pos = pos, .n_out = n_out}, lg, &e)) { fprintf(stderr, "bench_model: %s\n", e.msg); return 1; }
        if (r == 0 || model_stats(m)->forward_s < best.forward_s) best = *model_stats(m);
    }
    const struct model_stats *s = &best;
    const int reps = 1;
    const double fwd = s->forward_s, gemm = s->gemm_s, attn = s->attn_s;

    // the same GEMM shapes alone (per forward: 7 per layer + the vocab projection)
    const int D = c->dim, qd = c->n_heads * c->head_dim, kd = c->n_kv_heads * c->head_dim, F = c->hidden_dim, L = c->n_layers;
    struct { int M, N, K, count; } shapes[] = {
        {T, qd, D, L}, {T, kd, D, 2 * L}, {T, D, qd, L}, {T, F, D, 2 * L}, {T, D, F, L}, {n_out, c->vocab_size, D, 1},
    };
    // the ceiling: the same shapes alone with cblas_sgemm on OpenBLAS's own threads (same core
    // count), and with the forward's own kernel and split (gemm.h tasks on the pool)
    const int nt = model_get_opts(m)->n_threads;
    double ceiling = 0, ceiling_mt = 0, flop = 0, ceiling_cpu = 0, ceiling_mt_cpu = 0;
    for (int pass = 0; pass < 2; pass++) {
        openblas_set_num_threads(pass == 0 ? nt : 1);
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
            double t = 1e30, tc = 1e30;
            for (int r = 0; r < 2; r++) { // fastest of 2
                double c;
                double tr = time_gemm(shapes[i].M, shapes[i].N, shapes[i].K, shapes[i].count, pass == 0 ? 0 : nt, &c);
                if (tr < 0) { fprintf(stderr, "bench_model: out of memory\n"); return 1; }
                if (tr < t) t = tr;
                if (c < tc) tc = c;
            }
            if (pass == 0) {
                ceiling += t;
                ceiling_cpu += tc;
                flop += 2.0 * shapes[i].M * shapes[i].N * (double)shapes[i].K * shapes[i].count;
            } else {
                ceiling_mt += t;
                ceiling_mt_cpu += tc;
            }
        }
    }
    printf("bench_model: Qwen3-0.6B shape (%.2fB params, %s weights), %d threads, attention %s, act bf16\n",
           cfg_n_params(c) * 1e-9, model_weights_mode(m) == MODEL_WEIGHTS_F32 ? "f32" : "stream",
           model_get_opts(m)->n_threads, mode);
    printf("  open (mmap + bf16 -> packed f32): %.2f s; GEMM path %s\n", t_open, gemm_isa_name());
    printf("  forward (fastest of 3), %d packed tokens (%d x %d), logits at %d rows: %.3f s = %.1f tokens/s\n", T, N_SEQ, SEQ, n_out, fwd,
           T / fwd);
    printf("  of which GEMMs %.3f s (%.1f GFLOP/s), attention %.3f s, other %.3f s\n", gemm, s->gemm_flop / reps / gemm * 1e-9,
           attn, fwd - gemm - attn);
    printf("  same GEMM shapes alone, cblas_sgemm on %d OpenBLAS threads: %.3f s (%.1f GFLOP/s)\n", nt, ceiling,
           flop / ceiling * 1e-9);
    printf("  same GEMM shapes alone, gemm.h on %d pool threads (as the forward): %.3f s (%.1f GFLOP/s)\n", nt,
           ceiling_mt, flop / ceiling_mt * 1e-9);
    printf("  forward GEMM time / ceiling: %.3f (vs OpenBLAS threads), %.3f (vs the same split alone)\n",
           gemm / ceiling, gemm / ceiling_mt);
    printf("  in process CPU seconds (robust to other load): forward %.3f (%.1f tokens per CPU-s), GEMMs %.3f;\n"
           "    GEMM CPU / ceiling CPU: %.3f (vs OpenBLAS threads, %.3f CPU-s), %.3f (vs the same split, %.3f CPU-s)\n",
           s->forward_cpu_s, T / s->forward_cpu_s, s->gemm_cpu_s, s->gemm_cpu_s / ceiling_cpu, ceiling_cpu,
           s->gemm_cpu_s / ceiling_mt_cpu, ceiling_mt_cpu);
    const double peak = bench_peak_isa(gemm_isa_name(), 10);
    printf("  FMA peak of the %s path %.1f GFLOP per CPU-s per thread: forward GEMMs %.2f of it (GEMM flop / GEMM "
           "CPU-s), whole forward %.2f (GEMM flop / forward CPU-s)\n", gemm_isa_name(), peak,
           s->gemm_flop / s->gemm_cpu_s * 1e-9 / peak, s->gemm_flop / s->forward_cpu_s * 1e-9 / peak);
    printf("  load average while running: %s", load_avg());
    if (model_weights_mode(m) == MODEL_WEIGHTS_F32 && (weights_vs_resident(dir, &o, m, &bt, lg, MODEL_WEIGHTS_STREAM) ||
                                                       weights_vs_resident(dir, &o, m, &bt, lg, MODEL_WEIGHTS_BF16)))
        return 1;

    // Attention modes on the same packed batches (a hifa4 forward <= 1.3x a bf16
    // forward). The 4 x 128 batch above, and one 512-token sequence where attention weighs
    // more. Smooth-QK scales of 1 cost what real scales cost. Fastest of 2, modes interleaved.
    const char *modes[] = {"bf16", "direct", "hifa4"};
    const int n_modes = attn_mode_find("hifa4") ? 3 : 1;
    size_t ns = (size_t)c->n_layers * c->n_kv_heads * c->head_dim;
    float *ones = malloc(ns * sizeof *ones);
    for (size_t i = 0; i < ns; i++) ones[i] = 1.0f;
    int lens2[1] = {T}, pos2[1] = {T - 1};
    struct { const int *lens, *pos; int n_seq, n_out; const char *what; } batches[] = {
        {lens, pos, N_SEQ, n_out, "4 x 128"}, {lens2, pos2, 1, 1, "1 x 512"}};
    struct attn_ctx *ctx0 = ctx, *mctx[3] = {NULL, NULL, NULL}; // one context per mode, made once
    for (int k = 0; k < n_modes && n_modes > 1; k++)
        if (model_attn_open(&mctx[k], m, modes[k], NULL, ones, &e)) { fprintf(stderr, "bench_model: %s\n", e.msg); return 1; }
    for (size_t b = 0; b < 2 && n_modes > 1; b++) {
        double best_w[3] = {1e30, 1e30, 1e30}, best_c[3] = {1e30, 1e30, 1e30}, best_a[3] = {1e30, 1e30, 1e30};
        for (int r = 0; r < 2; r++)
            for (int k = 0; k < n_modes; k++) {
                ctx = mctx[k];
                if (r == 0 && model_forward(m, ctx, NULL, &(struct model_batch){.tokens = tok, .n_seq = batches[b].n_seq, .seq_len = batches[b].lens, .out_pos = batches[b].pos, .n_out = batches[b].n_out}, lg, &e)) {
                    fprintf(stderr, "bench_model: %s\n", e.msg);
                    return 1;
                }
                model_reset_stats(m);
                if (model_forward(m, ctx, NULL, &(struct model_batch){.tokens = tok, .n_seq = batches[b].n_seq, .seq_len = batches[b].lens, .out_pos = batches[b].pos, .n_out = batches[b].n_out}, lg, &e)) {
                    fprintf(stderr, "bench_model: %s\n", e.msg);
                    return 1;
                }
                const struct model_stats *st = model_stats(m);
                if (st->forward_s < best_w[k]) best_w[k] = st->forward_s;
                if (st->forward_cpu_s < best_c[k]) best_c[k] = st->forward_cpu_s;
                if (st->attn_s < best_a[k]) best_a[k] = st->attn_s;
            }
        printf("  attention modes, batch %s: ", batches[b].what);
        for (int k = 0; k < n_modes; k++)
            printf("%s%s %.3f s (attention %.3f s)", k ? ", " : "", modes[k], best_w[k], best_a[k]);
        printf("\n    forward vs bf16: direct %.3fx, hifa4 %.3fx wall; %.3fx, %.3fx process CPU\n", best_w[1] / best_w[0],
               best_w[2] / best_w[0], best_c[1] / best_c[0], best_c[2] / best_c[0]);
    }
    free(ones);
    free(tok);
    free(lg);
    attn_ctx_free(ctx0);
    for (int k = 0; k < 3; k++) attn_ctx_free(mctx[k]);
    model_free(m);
    return 0;
}
