// bench_calib.c (`make bench`): what a calibration costs against a plain forward over
// the same tokens, measured back to back in one process. The same samples (calib_run_samples)
// run through (a) a plain forward - model_open with calibration's options (f32 activations,
// bf16 attention, the same packed batches, logits at each sample's last row), no hook - (b)
// calib_run_ids with the reference statistics (calib_observe per sequence, the code before
// the exact KV cache) and (c) calib_run_ids as `calibrate` runs it. Per repetition (order a b c, then
// c b a, so a drifting machine load favours neither): wall and process CPU seconds, whole (open
// included) and the batch loop alone, the ratios to (a), where calibration's time went, and
// whether (b) and (c) agree bit for bit (exit 1 if not).
//   bench_calib [--model DIR | --shape smollm2|qwen3-0.6b] [--calib SRC] [--samples N] [--len N]
//               [--reps R] [--threads N] [--no-ref 1]
// Defaults: a synthetic SmolLM2-135M-shaped Llama made once in $HIFA4_TMP (--shape qwen3-0.6b:
// bench_model's Qwen3-0.6B-shaped checkpoint, ~1.2 GB), the Brown corpus of $HIFA4_TEST_DATA
// (else README.md), 16 samples x 512 tokens, 1 repetition, all cores; --no-ref 1 skips (b).
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/pool.h"
#include "calib/calib_run.h"
#include "import/make_model.h"
#include "model/model.h"

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *load_avg(void) {
    static char buf[128];
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f || !fgets(buf, sizeof buf, f)) snprintf(buf, sizeof buf, "?\n");
    if (f) fclose(f);
    return buf;
}

// wall and CPU seconds of a whole run (open included) and of its batch loop
struct times { double whole, whole_cpu, loop, loop_cpu; };

// (a) The plain forward: calib_run_seqs's model options, attention mode and packing, no hook.
static int plain_forward(const char *dir, const int32_t *ids, int n, int len, const struct calib_run_opts *co,
                         struct times *t, struct err *e) {
    double w0 = time_now(), c0 = cpu_now();
    int per = co->batch_tokens / len < 1 ? 1 : co->batch_tokens / len;
    if (per > n) per = n;
    struct model_opts mo;
    model_opts_default(&mo);
    mo.act_bf16 = 0;
    mo.max_tokens = per * len;
    mo.max_seq = len;
    mo.n_threads = co->threads;
    struct model *m = NULL;
    int rc = model_open(&m, dir, &mo, e);
    if (rc) return rc;
    struct attn_opts ao;
    attn_opts_default(&ao);
    ao.n_threads = co->threads;
    float *logits = malloc((size_t)per * model_cfg(m)->vocab_size * sizeof *logits);
    int *lens = malloc((size_t)per * sizeof *lens), *pos = malloc((size_t)per * sizeof *pos);
    if (!logits || !lens || !pos) rc = err_set(e, ERR_NOMEM, "out of memory");
    struct attn_ctx *ctx = NULL;
    if (!rc) rc = model_attn_open(&ctx, m, "bf16", &ao, NULL, e);
    double w1 = time_now(), c1 = cpu_now();
    for (int s0 = 0; s0 < n && !rc; s0 += per) {
        int nb = n - s0 < per ? n - s0 : per;
        for (int i = 0; i < nb; i++) lens[i] = len, pos[i] = (i + 1) * len - 1;
        rc = model_forward(m, ctx, NULL, &(struct model_batch){.tokens = ids + (size_t)s0 * len, .n_seq = nb, .seq_len = lens, .out_pos = pos, .n_out = nb}, logits, e);
    }
    t->loop = time_now() - w1;
    t->loop_cpu = cpu_now() - c1;
    free(logits);
    free(lens);
    free(pos);
    attn_ctx_free(ctx);
    model_free(m);
    t->whole = time_now() - w0;
    t->whole_cpu = cpu_now() - c0;
    return rc;
}

// (b) / (c): a calibration; *cr holds its result and statistics.
static int calibration(const char *dir, const int32_t *ids, int n, int len, struct calib_run_opts *co, int ref,
                       struct calib_run *cr, struct times *t, struct err *e) {
    co->stats_ref = ref;
    double w0 = time_now(), c0 = cpu_now();
    int rc = calib_run_ids(cr, dir, ids, n, len, co, e);
    t->whole = time_now() - w0;
    t->whole_cpu = cpu_now() - c0;
    t->loop = cr->time.forward_s;
    t->loop_cpu = cr->time.forward_cpu_s;
    return rc;
}

static int same_result(const struct calib_run *x, const struct calib_run *y) {
    const struct calib_result *a = &x->result, *b = &y->result;
    size_t m = (size_t)a->n_layers * a->Hkv * a->d;
    return !memcmp(a->scales, b->scales, m * sizeof *a->scales) && !memcmp(a->kagg, b->kagg, m * sizeof *a->kagg) &&
           !memcmp(a->qagg, b->qagg, m * sizeof *a->qagg) &&
           !memcmp(a->layer, b->layer, (size_t)a->n_layers * sizeof *a->layer) && a->rho_k == b->rho_k &&
           a->t_kq == b->t_kq && a->branch == b->branch;
}

static const char *names[3] = {"forward        ", "calibrate (ref)", "calibrate      "};

// One repetition: runs (a), (b), (c) in the given order; adds the times to sum[3].
static int repetition(int r, const int order[3], const char *dir, const int32_t *ids, int n, int len,
                      struct calib_run_opts *co, struct times sum[3], struct err *e) {
    struct times t[3] = {{0}};
    struct calib_run cr[3];
    memset(cr, 0, sizeof cr);
    for (int j = 0; j < 3; j++) {
        int v = order[j], rc = 0;
        if (v < 0) continue;
        rc = v == 0 ? plain_forward(dir, ids, n, len, co, &t[v], e) : calibration(dir, ids, n, len, co, v == 1, &cr[v], &t[v], e);
        if (rc) return rc;
        printf("  rep %d: %s %7.2f s wall %7.2f CPU-s; loop %7.2f s %7.2f CPU-s = %6.1f tokens/s", r, names[v], t[v].whole,
               t[v].whole_cpu, t[v].loop, t[v].loop_cpu, (double)n * len / t[v].loop);
        if (v) printf("; statistics %.2f s, open %.2f s, compute %.3f s", cr[v].time.stats_s, cr[v].time.open_s, cr[v].time.compute_s);
        printf("\n");
        sum[v].whole += t[v].whole, sum[v].whole_cpu += t[v].whole_cpu, sum[v].loop += t[v].loop, sum[v].loop_cpu += t[v].loop_cpu;
    }
    for (int v = 1; v < 3; v++)
        if (t[v].whole > 0)
            printf("         %s / forward: %.3f wall, %.3f CPU (whole); %.3f wall, %.3f CPU (loop)\n", names[v],
                   t[v].whole / t[0].whole, t[v].whole_cpu / t[0].whole_cpu, t[v].loop / t[0].loop, t[v].loop_cpu / t[0].loop_cpu);
    int same = 1;
    if (t[1].whole > 0) {
        same = same_result(&cr[1], &cr[2]);
        printf("         reference and batched statistics: %s (%lld fallbacks)\n", same ? "bit-identical" : "DIFFER",
               (long long)cr[2].stats.n_fallback);
    }
    calib_run_free(&cr[1]);
    calib_run_free(&cr[2]);
    return same ? 0 : err_set(e, ERR_INTERNAL, "the batched statistics differ from the reference");
}

// Synthetic checkpoints of real shapes, made once in tmp.
static int synthetic_model(char *dir, size_t n, const char *tmp, const char *shape, struct err *e) {
    struct make_model_opts mo;
    make_model_opts_default(&mo);
    if (!strcmp(shape, "smollm2")) { // SmolLM2-135M: Llama, 30 layers, dim 576, 9/3 heads of 64, tied
        snprintf(dir, n, "%s/bench-smollm2-shape", tmp);
        mo.arch = ARCH_LLAMA, mo.n_layers = 30, mo.dim = 576, mo.n_heads = 9, mo.n_kv_heads = 3, mo.head_dim = 64;
        mo.hidden_dim = 1536, mo.vocab_size = 49152, mo.max_seq = 8192, mo.tied = 1, mo.seed = 1;
    } else if (!strcmp(shape, "qwen3-0.6b")) { // bench_model.c's checkpoint (same directory and options)
        snprintf(dir, n, "%s/bench-qwen3-0.6b", tmp);
        mo.arch = ARCH_QWEN3, mo.n_layers = 28, mo.dim = 1024, mo.n_heads = 16, mo.n_kv_heads = 8, mo.head_dim = 128;
        mo.hidden_dim = 3072, mo.vocab_size = 151936, mo.max_seq = 40960, mo.tied = 1, mo.seed = 1;
    } else {
        return err_set(e, ERR_USAGE, "--shape %s: expected smollm2 or qwen3-0.6b", shape);
    }
    char cfg[600], st[600];
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    snprintf(st, sizeof st, "%s/model.safetensors", dir);
    if (file_exists(cfg) && file_exists(st)) return 0;
    fprintf(stderr, "bench_calib: making %s (once)\n", dir);
    return make_model(&mo, dir, e);
}

int main(int argc, char **argv) {
    const char *tmp = getenv("HIFA4_TMP") ? getenv("HIFA4_TMP") : "build/tmp";
    const char *root = getenv("HIFA4_TEST_DATA") ? getenv("HIFA4_TEST_DATA") : "../shared";
    char dir[512], brown[600];
    const char *model = NULL, *calib = NULL, *shape = "smollm2";
    int samples = 16, len = 512, reps = 1, threads = 0, no_ref = 0;
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc) { // a lone option, e.g. --help
            fprintf(stderr, "usage: bench_calib [--model DIR | --shape NAME] [--calib FILE] [--samples N] [--len N]"
                            " [--reps N] [--threads N] [--no-ref 0|1]\n");
            return 2;
        }
        if (!strcmp(argv[i], "--model")) model = argv[i + 1];
        else if (!strcmp(argv[i], "--shape")) shape = argv[i + 1];
        else if (!strcmp(argv[i], "--calib")) calib = argv[i + 1];
        else if (!strcmp(argv[i], "--samples")) samples = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--len")) len = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--no-ref")) no_ref = atoi(argv[i + 1]);
        else { fprintf(stderr, "bench_calib: unknown option %s\n", argv[i]); return 2; }
    }
    setvbuf(stdout, NULL, _IOLBF, 0); // progress visible when redirected to a log
    struct err e = {0};
    if (!model) {
        if (synthetic_model(dir, sizeof dir, tmp, shape, &e)) { fprintf(stderr, "bench_calib: %s\n", e.msg); return 1; }
        model = dir;
    }
    snprintf(brown, sizeof brown, "%s/datasets/brown/brown.txt.zst", root);
    if (!calib) calib = file_exists(brown) ? brown : "README.md";
    struct calib_run_opts co;
    calib_run_opts_default(&co);
    co.samples = samples, co.len = len, co.threads = threads;
    pool_set_threads(threads);
    int32_t *ids = NULL;
    int n = 0;
    char desc[1024];
    double t_samples = time_now();
    struct calib_samples made = {0};
    if (calib_run_samples(model, calib, &co, &made, desc, sizeof desc, &e)) {
        fprintf(stderr, "bench_calib: %s\n", e.msg);
        return 1;
    }
    ids = made.ids, n = made.n;
    printf("bench_calib: %s, %d samples x %d tokens of %s, %d threads, batches of %d tokens\n", model, n, len, desc,
           pool_threads(), co.batch_tokens);
    printf("  reading, tokenizing and cutting the samples (not in the times below): %.2f s\n", time_now() - t_samples);
    printf("  load average before: %s", load_avg());
    struct times sum[3] = {{0}};
    for (int r = 0; r < reps; r++) {
        int order[3] = {0, no_ref ? -1 : 1, 2};
        if (r % 2) order[0] = 2, order[2] = 0;
        if (repetition(r, order, model, ids, n, len, &co, sum, &e)) { fprintf(stderr, "bench_calib: %s\n", e.msg); return 1; }
    }
    for (int v = 1 + no_ref; v < 3 && reps > 0; v++)
        printf("  all reps, %s / forward: %.3f wall, %.3f CPU (whole); %.3f wall, %.3f CPU (loop)\n", names[v],
               sum[v].whole / sum[0].whole, sum[v].whole_cpu / sum[0].whole_cpu, sum[v].loop / sum[0].loop,
               sum[v].loop_cpu / sum[0].loop_cpu);
    printf("  load average after: %s", load_avg());
    free(ids);
    return 0;
}
