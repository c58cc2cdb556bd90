// llama_logits.c: the logits of llama.cpp for given token ids, and their comparison with
// hifa4-eval's (scripts/llama_logits.sh; docs/results/gemma3_refs.md). Never part of `make test`:
// built by that script against the static libraries of scripts/llama_build.sh.
//   llama_logits run GGUF IDS OUT.f32 [--kv f16|f32] [--fa auto|on|off] [--threads N]
//       IDS: comma-separated token ids (one line). The whole sequence is one llama_decode
//       (n_ctx = n_batch = n_ubatch >= T, full-size SWA cache), logits at every position,
//       written as T x n_vocab float32 little-endian.
//   llama_logits compare OURS.safetensors OTHER.f32|OTHER.safetensors
//       OURS: `hifa4-eval logits --out` (one F32 tensor "logits" [T][vocab]); OTHER: the same
//       kind, or raw float32 of the same shape (`run`'s output). Prints T, vocab,
//       rel-L2 over all logits, the worst position's rel-L2, argmax agreement, max |d|, and
//       the max |d| of the per-position log-sum-exp (float64), and the largest top-1 - top-2 gap
//       of OURS at a position where the two argmaxes differ (0 when none does).
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

static void die(const char *msg, const char *arg) {
    fprintf(stderr, "llama_logits: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
    exit(1);
}

static int read_ids(const char *path, llama_token **ids) {
    FILE *f = fopen(path, "r");
    if (!f) die("cannot open", path);
    int n = 0, cap = 1024;
    *ids = malloc(sizeof **ids * cap);
    long v;
    while (fscanf(f, "%ld", &v) == 1) {
        if (n == cap) *ids = realloc(*ids, sizeof **ids * (cap *= 2));
        (*ids)[n++] = (llama_token)v;
        int c = fgetc(f);
        if (c != ',' && c != '\n' && c != EOF) die("ids: expected a comma-separated list", path);
    }
    fclose(f);
    if (!n) die("no ids in", path);
    return n;
}

static void quiet(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level >= GGML_LOG_LEVEL_WARN) fputs(text, stderr);
}

static int cmd_run(int argc, char **argv) {
    if (argc < 3) die("usage: run GGUF IDS OUT.f32 [--kv f16|f32] [--fa auto|on|off] [--threads N]", NULL);
    enum ggml_type kv = GGML_TYPE_F16;
    enum llama_flash_attn_type fa = LLAMA_FLASH_ATTN_TYPE_AUTO;
    int threads = 2;
    for (int i = 3; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--kv")) kv = !strcmp(argv[i + 1], "f32") ? GGML_TYPE_F32 : GGML_TYPE_F16;
        else if (!strcmp(argv[i], "--fa"))
            fa = !strcmp(argv[i + 1], "on")    ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                 : !strcmp(argv[i + 1], "off") ? LLAMA_FLASH_ATTN_TYPE_DISABLED
                                               : LLAMA_FLASH_ATTN_TYPE_AUTO;
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else die("unknown option", argv[i]);
    }
    llama_token *ids;
    int T = read_ids(argv[1], &ids);
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    struct llama_model *model = llama_model_load_from_file(argv[0], mp);
    if (!model) die("cannot load", argv[0]);
    struct llama_context_params cp = llama_context_default_params();
    uint32_t n = (uint32_t)((T + 255) / 256 * 256);
    cp.n_ctx = cp.n_batch = cp.n_ubatch = n;
    cp.n_threads = cp.n_threads_batch = threads;
    cp.type_k = cp.type_v = kv;
    cp.flash_attn_type = fa;
    cp.swa_full = true;
    cp.no_perf = true;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) die("cannot create the context", NULL);
    int V = llama_vocab_n_tokens(llama_model_get_vocab(model));
    struct llama_batch b = llama_batch_init(T, 0, 1);
    for (int i = 0; i < T; i++) {
        b.token[i] = ids[i];
        b.pos[i] = i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = 1;
    }
    b.n_tokens = T;
    if (llama_decode(ctx, b)) die("llama_decode failed", NULL);
    FILE *out = fopen(argv[2], "wb");
    if (!out) die("cannot write", argv[2]);
    for (int i = 0; i < T; i++) {
        const float *row = llama_get_logits_ith(ctx, i);
        if (!row || fwrite(row, sizeof *row, (size_t)V, out) != (size_t)V) die("cannot write logits", argv[2]);
    }
    if (fclose(out)) die("cannot write", argv[2]);
    fprintf(stderr, "llama_logits: %d positions x %d logits (kv %s, flash_attn %s) -> %s\n", T, V,
            kv == GGML_TYPE_F32 ? "f32" : "f16", llama_flash_attn_type_name(fa), argv[2]);
    llama_batch_free(b);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    free(ids);
    return 0;
}

static float *slurp(const char *path, long *bytes) {
    FILE *f = fopen(path, "rb");
    if (!f) die("cannot open", path);
    fseek(f, 0, SEEK_END);
    *bytes = ftell(f);
    rewind(f);
    char *p = malloc((size_t)*bytes);
    if (!p || fread(p, 1, (size_t)*bytes, f) != (size_t)*bytes) die("cannot read", path);
    fclose(f);
    return (float *)p;
}

static double lse(const float *r, int V) {
    double m = -INFINITY, s = 0;
    for (int j = 0; j < V; j++) m = r[j] > m ? r[j] : m;
    for (int j = 0; j < V; j++) s += exp((double)r[j] - m);
    return m + log(s);
}

static int argmax(const float *r, int V) {
    int a = 0;
    for (int j = 1; j < V; j++)
        if (r[j] > r[a]) a = j;
    return a;
}

// The gap between the largest and the second largest logit of a row.
static double top2_margin(const float *r, int V) {
    int a = argmax(r, V);
    double second = -INFINITY;
    for (int j = 0; j < V; j++)
        if (j != a && r[j] > second) second = r[j];
    return r[a] - second;
}

// The logits of a file: `hifa4-eval logits --out` safetensors (one F32 tensor "logits"
// [T][vocab]; *T, *V from it) or raw T x V float32 (*V must be set: *T from the size).
static const float *load_logits(const char *path, char **buf, long *T, long *V) {
    long nb;
    *buf = (char *)slurp(path, &nb);
    size_t n = strlen(path);
    if (n < 12 || strcmp(path + n - 12, ".safetensors")) {
        if (*V <= 0 || nb % (*V * 4)) die("raw logits: size is not a multiple of the vocabulary", path);
        *T = nb / (*V * 4);
        return (const float *)*buf;
    }
    uint64_t hlen;
    memcpy(&hlen, *buf, 8);
    if (nb < 8 || hlen > (uint64_t)nb - 8) die("not a safetensors file", path);
    char *hdr = strndup(*buf + 8, (size_t)hlen);
    char *sh = strstr(hdr, "\"shape\"");
    if (!strstr(hdr, "\"logits\"") || !strstr(hdr, "\"F32\"") || !sh || sscanf(sh, "\"shape\":[%ld,%ld]", T, V) != 2)
        die("expected one F32 tensor logits [T][vocab] in", path);
    free(hdr);
    if ((long)(8 + hlen) + *T * *V * 4 != nb) die("size does not match T x vocab", path);
    return (const float *)(*buf + 8 + hlen);
}

static int cmd_compare(int argc, char **argv) {
    if (argc != 2) die("usage: compare OURS.safetensors OTHER.f32|OTHER.safetensors", NULL);
    char *b1, *b2;
    long T = 0, V = 0, T2 = 0, V2;
    const float *O = load_logits(argv[0], &b1, &T, &V);
    V2 = V;
    const float *L = load_logits(argv[1], &b2, &T2, &V2);
    if (T2 != T || V2 != V) die("the two files differ in T or vocab", argv[1]);
    double num = 0, den = 0, worst = 0, maxd = 0, maxlse = 0, flip_margin = 0;
    int agree = 0, worst_t = 0;
    for (long t = 0; t < T; t++) {
        const float *o = O + t * V, *l = L + t * V;
        double n1 = 0, d1 = 0;
        for (long j = 0; j < V; j++) {
            double d = (double)o[j] - l[j];
            n1 += d * d;
            d1 += (double)o[j] * o[j];
            if (fabs(d) > maxd) maxd = fabs(d);
        }
        num += n1;
        den += d1;
        if (sqrt(n1 / d1) > worst) worst = sqrt(n1 / d1), worst_t = (int)t;
        if (argmax(o, (int)V) == argmax(l, (int)V)) agree++;
        else flip_margin = fmax(flip_margin, top2_margin(o, (int)V));
        double dl = fabs(lse(o, (int)V) - lse(l, (int)V));
        if (dl > maxlse) maxlse = dl;
    }
    printf("T %ld vocab %ld rel_l2 %.3e worst_pos_rel_l2 %.3e (pos %d) argmax %d/%ld max_abs %.3e max_lse %.3e "
           "flip_margin %.3f\n", T, V, sqrt(num / den), worst, worst_t, agree, T, maxd, maxlse, flip_margin);
    free(b1);
    free(b2);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "run")) return cmd_run(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "compare")) return cmd_compare(argc - 2, argv + 2);
    die("usage: llama_logits run|compare ...", NULL);
    return 1;
}
