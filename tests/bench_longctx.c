// bench_longctx.c (`make bench`): how much of a long-context forward is attention, per
// attention mode, and whether attention keeps every core busy. One sequence of T tokens (logits
// at its last row only, as a needle-in-a-haystack prefill) per length and mode; prints the wall
// seconds of the forward and of attention, attention's share of the forward, and attention's
// process CPU seconds / wall seconds (2.0 on 2 threads means both cores busy inside attention).
//
//   bench_longctx [--model DIR] [--len 4096,16384] [--attn bf16,direct,hifa4] [--threads N]
//
// Default model: the Qwen3-0.6B shape (dim 1024, 16/8 heads of 128, FFN 3072, vocab 151936) with
// 2 of its 28 layers, made once in $HIFA4_TMP. Every layer has the same shapes, so attention's
// share of a layer - and of the whole forward, up to the embedding and one logits row - is the
// same with 2 layers as with 28; the 2-layer model only makes 16K tokens affordable here.
// A real model (--model) runs whole, up to its own window. Smooth-QK scales of 1 (hifa4 costs
// the same with any scales).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attn.h"
#include "base/common.h"
#include "base/pool.h"
#include "import/make_model.h"
#include "model/model.h"

static int make_default(char *dir, size_t n, struct err *e) {
    const char *tmp = getenv("HIFA4_TMP") ? getenv("HIFA4_TMP") : "build/tmp";
    snprintf(dir, n, "%s/bench-qwen3-0.6b-2layers", tmp);
    char cfg[600];
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    if (file_exists(cfg)) return 0;
    struct make_model_opts mo;
    make_model_opts_default(&mo);
    mo.arch = ARCH_QWEN3, mo.n_layers = 2, mo.dim = 1024, mo.n_heads = 16, mo.n_kv_heads = 8, mo.head_dim = 128;
    mo.hidden_dim = 3072, mo.vocab_size = 151936, mo.max_seq = 40960, mo.tied = 1, mo.seed = 1;
    return make_model(&mo, dir, e);
}

// One timed forward of tok[0..T) in `mode` (a context made for it); *st receives its statistics.
static int run_once(struct model *m, const char *mode, const float *ones, const int32_t *tok, int T, float *lg,
                    struct model_stats *st, struct err *e) {
    struct attn_ctx *ctx = NULL;
    int rc = model_attn_open(&ctx, m, mode, NULL, ones, e);
    int lens[1] = {T}, pos[1] = {T - 1};
    model_reset_stats(m);
    if (!rc) rc = model_forward(m, ctx, NULL, &(struct model_batch){.tokens = tok, .n_seq = 1, .seq_len = lens, .out_pos = pos, .n_out = 1}, lg, e);
    *st = *model_stats(m);
    attn_ctx_free(ctx);
    return rc;
}

static int bench_len(struct model *m, int T, char **modes, int n_modes, const float *ones, struct err *e) {
    const struct model_config *c = model_cfg(m);
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)T);
    float *lg = malloc(sizeof(float) * (size_t)c->vocab_size);
    if (!tok || !lg) { free(tok), free(lg); return err_set(e, ERR_NOMEM, "out of memory"); }
    for (int i = 0; i < T; i++) tok[i] = (int32_t)((i * 7919u + 13u) % (unsigned)c->vocab_size);
    int rc = 0;
    for (int k = 0; k < n_modes && !rc; k++) {
        struct model_stats st;
        if ((rc = run_once(m, modes[k], ones, tok, T, lg, &st, e))) break;
        printf("  %6d tokens  %-8s forward %8.2f s  attention %8.2f s = %5.1f%%  attention CPU/wall %.2f  forward CPU/wall %.2f\n",
               T, modes[k], st.forward_s, st.attn_s, 100.0 * st.attn_s / st.forward_s, st.attn_cpu_s / st.attn_s,
               st.forward_cpu_s / st.forward_s);
        fflush(stdout);
    }
    free(tok), free(lg);
    return rc;
}

static int split_list(char *s, char **out, int max) {
    int n = 0;
    for (char *p = strtok(s, ","); p && n < max; p = strtok(NULL, ",")) out[n++] = p;
    return n;
}

int main(int argc, char **argv) {
    const char *model_dir = NULL;
    char lens_s[256] = "4096,16384", modes_s[256] = "bf16,direct,hifa4";
    int threads = 0;
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc) { // a lone option, e.g. --help
            fprintf(stderr, "usage: bench_longctx [--model DIR] [--len N,N] [--attn MODE,MODE] [--threads N]\n");
            return 2;
        }
        if (!strcmp(argv[i], "--model")) model_dir = argv[i + 1];
        else if (!strcmp(argv[i], "--len")) snprintf(lens_s, sizeof lens_s, "%s", argv[i + 1]);
        else if (!strcmp(argv[i], "--attn")) snprintf(modes_s, sizeof modes_s, "%s", argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else { fprintf(stderr, "bench_longctx: unknown option %s\n", argv[i]); return 2; }
    }
    struct err e = {0};
    char dir[512];
    if (!model_dir && make_default(dir, sizeof dir, &e)) { fprintf(stderr, "bench_longctx: %s\n", e.msg); return 1; }
    if (!model_dir) model_dir = dir;
    char *lens_p[16], *modes[16];
    const int n_lens = split_list(lens_s, lens_p, 16), n_modes = split_list(modes_s, modes, 16);
    int max_T = 0;
    for (int i = 0; i < n_lens; i++) max_T = atoi(lens_p[i]) > max_T ? atoi(lens_p[i]) : max_T;
    if (threads > 0) pool_set_threads(threads);
    struct model_opts o;
    model_opts_default(&o);
    o.max_tokens = max_T, o.max_seq = max_T, o.n_threads = threads;
    struct model *m = NULL;
    if (model_open(&m, model_dir, &o, &e)) { fprintf(stderr, "bench_longctx: %s\n", e.msg); return 1; }
    const struct model_config *c = model_cfg(m);
    size_t ns = (size_t)c->n_layers * c->n_kv_heads * c->head_dim;
    float *ones = malloc(ns * sizeof *ones);
    for (size_t i = 0; ones && i < ns; i++) ones[i] = 1.0f;
    printf("bench_longctx: %s (%d layers, dim %d, %d/%d heads of %d), %d threads, one sequence, logits at its last row\n",
           model_dir, c->n_layers, c->dim, c->n_heads, c->n_kv_heads, c->head_dim, pool_threads());
    int rc = ones ? 0 : err_set(&e, ERR_NOMEM, "out of memory");
    // warm-up (not timed): first touch of the weights and of much of the run state
    const int wT = max_T < 2048 ? max_T : 2048;
    int32_t *warm = calloc((size_t)wT, sizeof *warm);
    float *wl = malloc(sizeof(float) * (size_t)c->vocab_size);
    int wlen[1] = {wT}, wpos[1] = {wT - 1};
    if (!rc && (!warm || !wl)) rc = err_set(&e, ERR_NOMEM, "out of memory");
    struct attn_ctx *wctx = NULL;
    if (!rc) rc = model_attn_open(&wctx, m, "f32", NULL, NULL, &e);
    if (!rc) rc = model_forward(m, wctx, NULL, &(struct model_batch){.tokens = warm, .n_seq = 1, .seq_len = wlen, .out_pos = wpos, .n_out = 1}, wl, &e);
    attn_ctx_free(wctx);
    free(warm), free(wl);
    for (int i = 0; i < n_lens && !rc; i++) rc = bench_len(m, atoi(lens_p[i]), modes, n_modes, ones, &e);
    if (rc) fprintf(stderr, "bench_longctx: %s\n", e.msg);
    free(ones);
    model_free(m);
    return rc ? 1 : 0;
}
