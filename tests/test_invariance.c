// test_invariance.c: a sequence's logits are bit-identical whatever else is in the batch, its
// position in it, the thread count, the weight residency (f32 / stream), the GEMM's ISA path
// (AVX-512, AVX2+FMA, scalar: every path computes each element as the same fmaf chain) - at
// real shapes: a make-model checkpoint of SmolLM2-135M's layer shapes with its vocabulary
// (dim 576, 9 query / 3 KV heads of 64, FFN 1536, vocab 49152; 2 layers). Tiny models never
// reach the GEMM shapes where BLAS kernels made a row's bits depend on its offset and on the
// batch. Also: the rows of a prefix call equal the same rows of a longer call where
// spec/attention.md 8.6 says they must (any prefix for the unquantized modes, 64-aligned
// prefixes for the HiF4 ones). Logits are compared at every 8th row, the last 4 rows of each
// sequence and the last row of each prefix (the vocabulary projection is the costly part, and
// it is itself one of the row-invariant GEMMs). Needs no data outside the repository.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attn.h"
#include "base/pool.h"
#include "import/make_model.h"
#include "model/gemm.h"
#include "model/model.h"
#include "model_util.h"
#include "test.h"

enum { LA = 300, LB = 77, LC = 1, V = 49152 };
static char dir[1024];
static int32_t tokA[LA], tokB[LB], tokC[LC];
static float *ones; // Smooth-QK scales of 1 (hifa4 needs a scales buffer)
static int n_cmp;   // logits rows compared bit for bit

static struct model *open_model(int threads, int weights) {
    struct model_opts o;
    model_opts_default(&o);
    o.max_tokens = 512;
    o.n_threads = threads;
    o.weights = weights;
    pool_set_threads(threads); // the test owns the pool: as many threads as the model asks for
    struct model *m = NULL;
    struct err e = {0};
    CHECK(model_open(&m, dir, &o, &e) == 0, "model_open: %s", e.msg);
    return m;
}

// Replaces *ctx by a context of `mode` for model m.
static int set_mode(struct attn_ctx **ctx, const struct model *m, const char *mode) {
    struct err e = {0};
    int rc = test_attn_reopen(ctx, m, mode, NULL, ones, &e);
    CHECK(rc == 0, "model_attn_open %s: %s", mode, e.msg);
    return rc;
}

// The rows of a sequence of len tokens whose logits are compared (see the header comment).
static int keep_row(int i, int len) {
    static const int prefix_last[] = {0, 62, 63, 99, 127, 199, 255};
    if (i % 8 == 0 || i >= len - 4) return 1;
    for (size_t k = 0; k < sizeof prefix_last / sizeof *prefix_last; k++)
        if (i == prefix_last[k]) return 1;
    return 0;
}

// Logits [T][V] of the packed batch, filled at the kept rows only (caller frees).
static float *forward(struct model *m, struct attn_ctx *ctx, const int32_t *tok, const int *len, int n_seq) {
    int T = 0, n = 0;
    for (int s = 0; s < n_seq; s++) T += len[s];
    int *pos = malloc(sizeof(int) * (size_t)T);
    float *lg = calloc((size_t)T * V, sizeof(float)), *out = malloc(sizeof(float) * (size_t)T * V);
    for (int s = 0, o = 0; s < n_seq; o += len[s], s++)
        for (int i = 0; i < len[s]; i++)
            if (keep_row(i, len[s])) pos[n++] = o + i;
    struct err e = {0};
    const struct model_batch b = test_batch(tok, len, n_seq, pos, n);
    int rc = model_forward(m, ctx, NULL, &b, out, &e);
    CHECK(rc == 0, "model_forward: %s", e.msg);
    for (int k = 0; k < n; k++) memcpy(lg + (size_t)pos[k] * V, out + (size_t)k * V, sizeof(float) * V);
    free(pos), free(out);
    return lg;
}

// Rows [0, rows) of two logits arrays, compared at the rows kept in both (a: len_a tokens).
static int same_rows_n(const float *a, const float *b, int rows, int len_a, int len_b) {
    int same = 1;
    for (int i = 0; i < rows; i++)
        if (keep_row(i, len_a) && keep_row(i, len_b)) {
            n_cmp++;
            same &= memcmp(a + (size_t)i * V, b + (size_t)i * V, sizeof(float) * V) == 0;
        }
    return same;
}
static int same_rows(const float *a, const float *b, int rows) { return same_rows_n(a, b, rows, rows, rows); }

// A alone; then [B, A, C] and [C, A] packed: A's rows (and B's, C's) must not change.
static float *check_batches(struct model *m, struct attn_ctx *ctx, const char *what) {
    int la = LA, lb = LB, lc = LC;
    float *a = forward(m, ctx, tokA, &la, 1), *b = forward(m, ctx, tokB, &lb, 1), *c = forward(m, ctx, tokC, &lc, 1);
    int32_t tok[LA + LB + LC];
    memcpy(tok, tokB, sizeof tokB), memcpy(tok + LB, tokA, sizeof tokA), memcpy(tok + LB + LA, tokC, sizeof tokC);
    int lens[3] = {LB, LA, LC};
    float *x = forward(m, ctx, tok, lens, 3);
    CHECK(same_rows(x, b, LB) && same_rows(x + (size_t)LB * V, a, LA) && same_rows(x + (size_t)(LB + LA) * V, c, LC),
          "%s: a sequence's logits change when it is packed with others at another offset", what);
    memcpy(tok, tokC, sizeof tokC), memcpy(tok + LC, tokA, sizeof tokA);
    int lens2[2] = {LC, LA};
    float *y = forward(m, ctx, tok, lens2, 2);
    CHECK(same_rows(y + (size_t)LC * V, a, LA), "%s: offset 1 changes the logits", what);
    free(b), free(c), free(x), free(y);
    return a;
}

// Rows of a prefix call equal the longer call's rows: any prefix without HiF4 V groups (8.6).
static void check_prefix(struct model *m, struct attn_ctx *ctx, const float *a, const char *mode, const char *what) {
    const int quant = strcmp(mode, "f32") && strcmp(mode, "bf16");
    const int lens[] = {1, 63, 64, 100, 128, 200, 256};
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
        int l = lens[i];
        if (quant && l % 64) continue;
        float *p = forward(m, ctx, tokA, &l, 1);
        CHECK(same_rows_n(p, a, l, l, LA), "%s: the %d-token prefix's rows differ from the 300-token call's", what, l);
        free(p);
    }
}

// Every check on the vector paths; on the (slow) scalar path the batch check and the equality
// with the other paths' bits, for bf16 and hifa4.
static void run_isa(const char *isa, float **ref_out) {
    const char *modes[] = {"f32", "bf16", "direct", "hifa4"};
    const int scalar = !strcmp(isa, "scalar");
    struct model *m1 = open_model(1, MODEL_WEIGHTS_F32);
    struct attn_ctx *ctx1 = NULL, *ctx2 = NULL;
    for (int k = 0; k < 4 && m1; k++) {
        char what[128];
        snprintf(what, sizeof what, "%s, %s", isa, modes[k]);
        if (scalar && (k == 0 || k == 2)) continue;
        if (set_mode(&ctx1, m1, modes[k])) continue;
        float *a = check_batches(m1, ctx1, what);
        if (!scalar) check_prefix(m1, ctx1, a, modes[k], what);
        // threads and residency: the same rows from a model with 2 and 3 threads, streamed weights
        const int cfg[][2] = {{2, MODEL_WEIGHTS_F32}, {3, MODEL_WEIGHTS_STREAM}};
        for (int c = 0; c < 2 && !scalar; c++) {
            struct model *m2 = open_model(cfg[c][0], cfg[c][1]);
            if (m2 && !set_mode(&ctx2, m2, modes[k])) {
                int la = LA;
                float *b = forward(m2, ctx2, tokA, &la, 1);
                CHECK(same_rows(b, a, LA), "%s: %d threads, %s weights change the logits", what, cfg[c][0],
                      cfg[c][1] == MODEL_WEIGHTS_STREAM ? "streamed" : "f32");
                free(b);
            }
            attn_ctx_free(ctx2);
            ctx2 = NULL;
            model_free(m2);
        }
        // across ISA paths: the same bits as the first path's
        if (!ref_out[k]) ref_out[k] = a;
        else {
            CHECK(same_rows(a, ref_out[k], LA), "%s: logits differ from the %s path's", what, gemm_isa_name());
            free(a);
        }
    }
    attn_ctx_free(ctx1);
    model_free(m1);
}

int main(void) {
    const char *t = getenv("HIFA4_TMP");
    snprintf(dir, sizeof dir, "%s/invariance-smollm2-shape", t ? t : "build/tmp");
    log_set_level(LOG_WARN);
    char probe[1100];
    snprintf(probe, sizeof probe, "%s/model.safetensors", dir);
    if (!file_exists(probe)) {
        struct make_model_opts mo;
        make_model_opts_default(&mo);
        mo.arch = ARCH_LLAMA, mo.n_layers = 2, mo.dim = 576, mo.n_heads = 9, mo.n_kv_heads = 3, mo.head_dim = 64;
        mo.hidden_dim = 1536, mo.vocab_size = V, mo.seed = 11;
        struct err e = {0};
        CHECK(make_model(&mo, dir, &e) == 0, "make_model: %s", e.msg);
    }
    uint32_t x = 7;
    for (int i = 0; i < LA; i++) tokA[i] = (int32_t)((x = x * 1664525u + 1013904223u) >> 8) % V;
    for (int i = 0; i < LB; i++) tokB[i] = (int32_t)((x = x * 1664525u + 1013904223u) >> 8) % V;
    tokC[0] = 17;
    ones = malloc(sizeof(float) * 2 * 3 * 64);
    for (int i = 0; i < 2 * 3 * 64; i++) ones[i] = 1.0f;
    float *ref[4] = {0};
    const char *isas[] = {"avx512", "avx2", "scalar"};
    char first[16] = "";
    for (int i = 0; i < 3; i++) {
        if (!gemm_isa_supported(isas[i])) { TEST_SKIP("GEMM path %s: this CPU cannot run it", isas[i]); continue; }
        CHECK(gemm_isa_set(isas[i]) == 0, "gemm_isa_set %s", isas[i]);
        if (!first[0]) snprintf(first, sizeof first, "%s", isas[i]);
        run_isa(isas[i], ref);
    }
    printf("test_invariance: %d logits rows of %d floats compared bit for bit (GEMM paths from %s down)\n", n_cmp, V,
           first);
    for (int k = 0; k < 4; k++) free(ref[k]);
    free(ones);
    pool_shutdown();
    return test_summary("test_invariance");
}
