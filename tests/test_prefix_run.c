// test_prefix_run.c: scoring through the exact KV cache (eval/cached.h) changes no byte. Runs
// of a make-model checkpoint (Qwen3 layout, head_dim 64) over ARC-format questions written here (arc_challenge --task-file)
// - groups of items sharing few-shot prefixes of different lengths, unrelated questions of 1 to
// ~300 tokens, 2 to 5 options of different lengths, some sharing their first words - under
// every registered attention mode, with the prefix cache (the default) and with
// --no-prefix-cache: the samples files of every mode are byte-identical. Configurations: tile
// 64 and 128, Q-Mean token and channel forms, and a batch of 256 tokens (contexts longer than a
// batch are prefilled in chunks; the cache is filled in several sub-batches). run.json's
// prefix_cache block is checked too: every mode computes fewer positions than it scores with
// alignment 1, and no mode computes more than an uncached run.
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attn.h"
#include "attention/scales.h"
#include "eval/generate.h"
#include "eval/run.h"
#include "model_util.h"
#include "import/make_model.h"
#include "run_util.h"
#include "test.h"

static char tmp[1024], model_dir[1200], qfile[1200], scales[1200], hayfile[1200];
static const char *modes[RUN_MAX_MODES];
static int n_modes;

static uint64_t rng_state = 0x1234567;
static double urand(void) { // [0, 1)
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * 0x1p-53;
}

static const char *const words[] = {"the", "cat", "sat", "on", "a", "mat", "while", "seven", "dogs", "ran",
                                    "across", "green", "fields", "under", "bright", "stars", "and", "quiet", "rivers", "flow"};
static void put_words(FILE *f, int n) {
    for (int i = 0; i < n; i++) fprintf(f, "%s%s", i ? " " : "", words[(int)(urand() * 20)]);
}

// 48 items in AI2 ARC JSONL (arc_challenge --task-file): 16 after a long shared prefix (~3
// tiles), 12 after a short one (~1 tile), 20 unrelated; 2..5 options of 1..10 words, the first
// two of an item sharing their first word.
static int write_questions(void) {
    FILE *f = fopen(qfile, "w");
    if (!f) return -1;
    char shots[2][2048];
    for (int k = 0; k < 2; k++) {
        FILE *m = fmemopen(shots[k], sizeof shots[k], "w");
        for (int s = 0; s < (k ? 1 : 3); s++) {
            fprintf(m, "Question: ");
            put_words(m, 20 + (int)(urand() * 30));
            fprintf(m, "? Answer: %s. ", words[(int)(urand() * 20)]);
        }
        fclose(m);
    }
    for (int i = 0; i < 48; i++) {
        fprintf(f, "{\"id\": \"q%d\", \"question\": {\"stem\": \"%s", i, i < 16 ? shots[0] : i < 28 ? shots[1] : "");
        put_words(f, 1 + (int)(urand() * (i < 28 ? 60 : 220)));
        const int nc = 2 + (int)(urand() * 4);
        fprintf(f, "?\", \"choices\": [");
        for (int c = 0; c < nc; c++) {
            fprintf(f, "%s{\"label\": \"%c\", \"text\": \"%s ", c ? ", " : "", 'A' + c, c < 2 ? "seven" : words[(int)(urand() * 20)]);
            put_words(f, (int)(urand() * 10));
            fprintf(f, "\"}");
        }
        fprintf(f, "]}, \"answerKey\": \"%c\"}\n", 'A' + i % nc);
    }
    return fclose(f);
}

// Smooth-QK scales in [0.5, 2.5) for every layer, kv head and channel (safetensors, F32).
static int write_scales(int L, int Hkv, int d) {
    const int n = L * Hkv * d;
    char hdr[256];
    int hl = snprintf(hdr, sizeof hdr, "{\"smooth_qk.scales\":{\"dtype\":\"F32\",\"shape\":[%d,%d,%d],\"data_offsets\":[0,%d]}}",
                      L, Hkv, d, 4 * n);
    while (hl % 8) hdr[hl++] = ' ';
    FILE *f = fopen(scales, "wb");
    if (!f) return -1;
    const uint64_t h = (uint64_t)hl;
    fwrite(&h, 8, 1, f);
    fwrite(hdr, 1, (size_t)hl, f);
    for (int i = 0; i < n; i++) {
        const float s = (float)(0.5 + 2.0 * urand());
        fwrite(&s, 4, 1, f);
    }
    return fclose(f);
}

struct cfg { int tile, qmean, max_tokens, qformat; };
static const char *niah_lengths = "100,300";
static char last_err[1024]; // the message of score's last failure

static int score(const char *out, const struct cfg *c, int cache, const char *task) {
    struct run_opts o;
    run_opts_default(&o);
    o.model_dir = o.model_arg = model_dir;
    o.model_name = "tiny";
    o.model.max_tokens = c->max_tokens;
    o.n_threads = 2;
    o.out_dir = out;
    o.task.file = strcmp(task, "niah") ? qfile : hayfile;
    o.task.niah_generate = !strcmp(task, "niah");
    o.task.niah_lengths = niah_lengths;
    o.task.niah_per_cell = 2;
    o.scales = scales;
    o.attn.tile = c->tile;
    o.attn.qmean = c->qmean;
    o.attn.qformat = c->qformat;
    o.prefix_cache = cache;
    static char *argv0[] = {"test_prefix_run"};
    o.argc = 1, o.argv = argv0;
    const char *tasks[] = {task};
    struct err e = {0};
    int rc = run_select_modes(&o, modes, n_modes, &e);
    if (!rc) rc = run_select_tasks(&o, tasks, 1, &e);
    if (!rc) rc = test_run_all(&o, NULL, &e);
    if (rc) fprintf(stderr, "run %s: %s\n", out, e.msg), snprintf(last_err, sizeof last_err, "%s", e.msg);
    return rc;
}

// run.json prefix_cache of the cached run: enabled; per mode computed <= input, and < input / 2
// at alignment 1 (the long shared prefixes are computed once).
static void check_counts(const char *dir, const char *what) {
    char path[1400], *txt = NULL;
    size_t n = 0;
    struct err e = {0};
    snprintf(path, sizeof path, "%s/run.json", dir);
    if (file_read_all(path, &txt, &n, &e)) { CHECK(0, "%s", e.msg); return; }
    cJSON *j = cJSON_Parse(txt), *pc = cJSON_GetObjectItem(j, "prefix_cache");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(pc, "enabled")), "%s: prefix_cache.enabled", what);
    for (int m = 0; m < n_modes; m++) {
        const cJSON *x = cJSON_GetObjectItem(cJSON_GetObjectItem(pc, "modes"), modes[m]);
        const double in = cJSON_GetNumberValue(cJSON_GetObjectItem(x, "tokens_input"));
        const double co = cJSON_GetNumberValue(cJSON_GetObjectItem(x, "tokens_computed"));
        const double st = cJSON_GetNumberValue(cJSON_GetObjectItem(x, "tokens_stored"));
        const int align = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(x, "align"));
        CHECK(in > 0 && co > 0 && co <= in, "%s %s: computed %.0f of %.0f", what, modes[m], co, in);
        if (align == 1) CHECK(co < in / 2, "%s %s (align 1): computed %.0f of %.0f", what, modes[m], co, in);
        if (m == 0 || align > 1) printf("  %s %-22s align %3d: computed %6.0f of %6.0f input positions (%.2f), %.0f stored\n",
                                        what, modes[m], align, co, in, co / in, st);
    }
    cJSON_Delete(j);
    free(txt);
}

// ==== greedy decoding (eval/generate.h) ====
// Cached decoding (a model with a batch of 128 tokens: longer contexts are prefilled in chunks)
// against recomputing the whole sequence every step (a model with room for it): the same
// tokens, for every mode, tiles 64/128, both Q-Mean forms, contexts around the alignments.
// The decoding tests' models: mk decodes through a 512-position cache in calls of at most 128
// rows (so contexts are prefilled in chunks), mr recomputes whole sequences; sc their scales.
struct gen_models {
    struct model *mk, *mr;
    struct attn_ctx *ck, *cr; // the current mode's context of each
    struct model_kv *kv;
    float *sc;
};

static void gen_models_free(struct gen_models *g) {
    attn_ctx_free(g->ck), attn_ctx_free(g->cr);
    free(g->sc);
    model_kv_free(g->kv);
    model_free(g->mk), model_free(g->mr);
}

// Both models' contexts for mode under ao (replacing the previous ones).
static int gen_models_mode(struct gen_models *g, const char *mode, const struct attn_opts *ao, struct err *e) {
    int rc = test_attn_reopen(&g->ck, g->mk, mode, ao, g->sc, e);
    return rc ? rc : test_attn_reopen(&g->cr, g->mr, mode, ao, g->sc, e);
}

static int gen_models_open(struct gen_models *g, struct err *e) {
    struct model_opts mo;
    model_opts_default(&mo);
    mo.n_threads = 2, mo.max_tokens = 128;
    *g = (struct gen_models){0};
    int rc = model_open(&g->mk, model_dir, &mo, e);
    mo.max_tokens = 512;
    if (!rc) rc = model_open(&g->mr, model_dir, &mo, e);
    if (!rc) rc = model_kv_open(&g->kv, g->mk, 512, e);
    const struct model_config *c = rc ? NULL : model_cfg(g->mk);
    if (!rc) rc = attn_scales_load(&g->sc, scales, c->n_layers, c->n_kv_heads, c->head_dim, NULL, e);
    if (rc) gen_models_free(g);
    return rc;
}

static void test_generate(void) {
    struct gen_models g;
    struct err e = {0};
    if (gen_models_open(&g, &e)) { CHECK(0, "%s", e.msg); return; }
    const struct cached_model gk = {g.mk, NULL, g.kv}, gr = {g.mr, NULL, NULL};
    const int lens[] = {1, 63, 64, 65, 127, 128, 129, 200, 0};
    int32_t ctx[300], a[48], b[48];
    int same = 0, cases = 0;
    int64_t tok_kv = 0, tok_full = 0;
    for (int k = 0; k < attn_mode_count(); k++)
        for (int f = 0; f < 4; f++)
            for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
                const char *mode = attn_mode_at(k)->name;
                struct attn_opts ao;
                attn_opts_default(&ao);
                ao.tile = f & 1 ? 128 : 64, ao.qmean = f & 2 ? ATTN_QMEAN_CHANNEL : ATTN_QMEAN_TOKEN;
                if (f && !strcmp(mode, "exact")) continue;
                if (attn_mode_at(k)->flags & ATTN_F_SAGE3) continue; // no cached prefix to decode through
                const int n = lens[li] ? lens[li] : 1 + (int)(urand() * 250);
                for (int i = 0; i < n; i++) ctx[i] = (int32_t)(urand() * 500);
                int na = 0, nb = 0;
                struct gen_stats sa = {0}, sb = {0};
                const struct gen_req rq = {ctx, n, 40, -1};
                if (gen_models_mode(&g, mode, &ao, &e) ||
                    gen_greedy(&(struct cached_model){gk.m, g.ck, gk.kv}, &rq, a, &na, &sa, &e) ||
                    gen_greedy(&(struct cached_model){gr.m, g.cr, NULL}, &rq, b, &nb, &sb, &e)) {
                    CHECK(0, "%s tile %d length %d: %s", mode, ao.tile, n, e.msg);
                    continue;
                }
                const int ok = na == 40 && nb == 40 && !memcmp(a, b, sizeof(int32_t) * 40);
                CHECK(ok, "%s tile %d qmean %d context %d: cached decoding differs from recomputation", mode, ao.tile, ao.qmean, n);
                same += ok, cases++, tok_kv += sa.tokens, tok_full += sb.tokens;
            }
    printf("greedy decoding: %d of %d (mode, tile, form, context) cases decode the same 40 tokens cached and recomputed; "
           "positions computed %lld cached, %lld recomputed\n", same, cases, (long long)tok_kv, (long long)tok_full);
    CHECK(tok_kv < tok_full / 4, "the cache computed %lld of %lld positions", (long long)tok_kv, (long long)tok_full);
    gen_models_free(&g);
}

// Consecutive contexts through one cache (gen_greedy_after): each shares a prefix of length k
// with the previous sequence (its context and decoded tokens) - k around the alignments, 0, the
// whole context, and the previous context plus its decoded tokens - and must decode what a
// recomputation decodes, while computing fewer positions than starting from an empty cache.
static int next_context(int32_t *ctx, const int32_t *prev, int n_prev, int j) {
    static const int share[] = {0, 1, 63, 64, 65, 128, 129, 200, 260, -1};
    const int k = share[j] < 0 ? n_prev : share[j] < n_prev ? share[j] : n_prev;
    const int n = share[j] == 260 ? k : k + 1 + (int)(urand() * 120);
    memcpy(ctx, prev, sizeof(int32_t) * (size_t)k);
    for (int i = k; i < n; i++) ctx[i] = (int32_t)(urand() * 500);
    return n;
}

static void test_generate_after(void) {
    struct gen_models g;
    struct err e = {0};
    if (gen_models_open(&g, &e)) { CHECK(0, "%s", e.msg); return; }
    const struct cached_model gk = {g.mk, NULL, g.kv}, gr = {g.mr, NULL, NULL};
    int same = 0, cases = 0;
    int64_t tok_after = 0, tok_fresh = 0;
    for (int k = 0; k < attn_mode_count(); k++)
        for (int f = 0; f < 3; f++) {
            const char *mode = attn_mode_at(k)->name;
            struct attn_opts ao;
            attn_opts_default(&ao);
            ao.tile = f == 1 ? 128 : 64, ao.qmean = f == 2 ? ATTN_QMEAN_CHANNEL : ATTN_QMEAN_TOKEN;
            if (f && !strcmp(mode, "exact")) continue;
            if (attn_mode_at(k)->flags & ATTN_F_SAGE3) continue;
            if (gen_models_mode(&g, mode, &ao, &e)) { CHECK(0, "%s", e.msg); continue; }
            const struct cached_model ck = {gk.m, g.ck, gk.kv}, cr = {gr.m, g.cr, NULL};
            struct gen_prev prev = {0};
            int32_t base[400], ctx[400], a[12], b[12];
            int n_base = 260;
            for (int i = 0; i < n_base; i++) base[i] = (int32_t)(urand() * 500);
            for (int j = 0; j < 10; j++) {
                const int n = next_context(ctx, j == 9 && prev.tok ? prev.tok : base, j == 9 && prev.tok ? prev.n : n_base, j);
                int na = 0, nb = 0;
                struct gen_stats sa = {0}, sb = {0};
                const struct gen_req rq = {ctx, n, 12, -1};
                if (gen_greedy_after(&ck, &prev, &rq, a, &na, &sa, &e) || gen_greedy(&cr, &rq, b, &nb, &sb, &e)) {
                    CHECK(0, "%s tile %d context %d (share case %d): %s", mode, ao.tile, n, j, e.msg);
                    break;
                }
                const int ok = na == 12 && nb == 12 && !memcmp(a, b, sizeof a);
                CHECK(ok, "%s tile %d qmean %d share case %d: decoding after a cached sequence differs from recomputation",
                      mode, ao.tile, ao.qmean, j);
                same += ok, cases++, tok_after += sa.tokens;
                struct gen_stats sf = {0};
                struct gen_prev none = {0};
                if (gen_greedy_after(&ck, &none, &rq, b, &nb, &sf, &e)) CHECK(0, "%s", e.msg);
                CHECK(nb == 12 && !memcmp(a, b, sizeof a), "%s share case %d: a fresh cache decodes otherwise", mode, j);
                tok_fresh += sf.tokens;
                gen_prev_free(&prev); // the fresh run overwrote the rows: chain from what it stored
                prev = none;
                memcpy(base, ctx, sizeof(int32_t) * (size_t)n), n_base = n;
            }
            gen_prev_free(&prev);
        }
    printf("greedy decoding after a cached sequence: %d of %d (mode, tile, form, shared prefix) cases decode as "
           "recomputation; positions computed %lld reusing, %lld from an empty cache\n", same, cases,
           (long long)tok_after, (long long)tok_fresh);
    CHECK(cases > 0 && tok_after < tok_fresh, "reusing computed %lld of %lld positions", (long long)tok_after, (long long)tok_fresh);
    gen_models_free(&g);
}

// A haystack for niah: numbered sentences.
static int write_haystack(void) {
    FILE *f = fopen(hayfile, "w");
    if (!f) return -1;
    for (int i = 0; i < 1600; i++) { // long enough for a context that overflows the 4096 window
        fprintf(f, "Sentence %d tells that ", i);
        put_words(f, 4 + (int)(urand() * 10));
        fprintf(f, ". ");
    }
    return fclose(f);
}

// run.json's decoding record of a niah generation run (20 items): per mode 20 contexts, at most
// 7 tokens after each first one, and seconds that are not negative.
static void check_decoding(const char *dir) {
    char path[1400], *txt = NULL;
    size_t n = 0;
    struct err e = {0};
    snprintf(path, sizeof path, "%s/run.json", dir);
    if (file_read_all(path, &txt, &n, &e)) { CHECK(0, "%s", e.msg); return; }
    cJSON *j = cJSON_Parse(txt);
    const cJSON *pm = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "prefix_cache"), "modes");
    for (int m = 0; m < n_modes; m++) {
        const cJSON *g = cJSON_GetObjectItem(cJSON_GetObjectItem(pm, modes[m]), "decoding");
        const double ctx = cJSON_GetNumberValue(cJSON_GetObjectItem(g, "contexts"));
        const double after = cJSON_GetNumberValue(cJSON_GetObjectItem(g, "tokens_after_first"));
        const double ps = cJSON_GetNumberValue(cJSON_GetObjectItem(g, "prefill_s"));
        const double ds = cJSON_GetNumberValue(cJSON_GetObjectItem(g, "decode_s"));
        CHECK(g && ctx == 20 && after >= 0 && after <= 7 * ctx && ps > 0 && ds >= 0,
              "%s: decoding record (contexts %.0f, after first %.0f, %.3f s + %.3f s)", modes[m], ctx, after, ps, ds);
    }
    cJSON_Delete(j);
    free(txt);
}

// niah in the generation form, with and without the cache: byte-identical samples files.
static void test_niah_generate(void) {
    const struct cfg c = {64, ATTN_QMEAN_CHANNEL, 4096, 0};
    char on[1300], off[1300];
    snprintf(on, sizeof on, "%s/niah-on", tmp);
    snprintf(off, sizeof off, "%s/niah-off", tmp);
    if (score(on, &c, 1, "niah") || score(off, &c, 0, "niah")) { CHECK(0, "niah generate: a run failed"); return; }
    int same = 0;
    for (int m = 0; m < n_modes; m++) {
        char a[1500], b[1500], *txt = NULL;
        size_t n = 0;
        struct err e = {0};
        snprintf(a, sizeof a, "%s/samples-niah-%s.jsonl.zst", on, modes[m]);
        snprintf(b, sizeof b, "%s/samples-niah-%s.jsonl.zst", off, modes[m]);
        const int ok = test_same_bytes(a, b);
        CHECK(ok, "niah generate %s: samples with and without the cache differ", modes[m]);
        same += ok;
        if (m == 0 && !file_read_all(a, &txt, &n, &e)) CHECK(strstr(txt, "\"generated\":") != NULL, "no decoded text in %s", a);
        free(txt);
    }
    printf("niah generation form: %d of %d modes' samples byte-identical with and without the cache\n", same, n_modes);
    check_decoding(on);
    // a context that leaves no room for the 8 decoded tokens in the window (4096) is refused
    // before any forward, naming the longest allowed context
    snprintf(on, sizeof on, "%s/niah-long", tmp);
    niah_lengths = "100,4093"; // contexts of 4090 tokens: they fit the window, not with 8 more
    fprintf(stderr, "(the next \"run\" error is expected)\n");
    CHECK(score(on, &c, 1, "niah") == ERR_RANGE && strstr(last_err, "window of 4096 minus 8 decoded") &&
              strstr(last_err, "--niah-lengths"), "niah generate with 4090-token contexts in a 4096 window: %s", last_err);
    niah_lengths = "100,300";
}

// The FP4 formats and sage3 (spec/fp4.md 4.3, 5.5), cache on and off: byte-identical samples.
// NVFP4 (Q, K, V quantized) and sage3 have no exact cached prefix: they score whole sequences
// (reuse false, every input position computed) while bf16 keeps its cache; MXFP4 reuses
// prefixes at its alignment of 32 (channel form: the tile). A 256-token batch splits the cached
// run's batches into several whole-sequence forwards.
static void test_fp4_cache(void) {
    const char *save[RUN_MAX_MODES];
    const int n_save = n_modes;
    memcpy(save, modes, sizeof save);
    static const char *const nv[] = {"bf16", "direct", "hifa4", "sage3", "sage3+preorder"}, *const mx[] = {"bf16", "direct", "hifa4"};
    const struct cfg cfgs[] = {{128, ATTN_QMEAN_TOKEN, 4096, ATTN_QFORMAT_NVFP4}, {128, ATTN_QMEAN_TOKEN, 256, ATTN_QFORMAT_NVFP4},
                               {64, ATTN_QMEAN_TOKEN, 4096, ATTN_QFORMAT_MXFP4}, {64, ATTN_QMEAN_CHANNEL, 4096, ATTN_QFORMAT_MXFP4}};
    for (int c = 0; c < 4; c++) {
        const int is_nv = cfgs[c].qformat == ATTN_QFORMAT_NVFP4;
        n_modes = is_nv ? 5 : 3;
        for (int m = 0; m < n_modes; m++) modes[m] = is_nv ? nv[m] : mx[m];
        char on[1300], off[1300], path[1400], *txt = NULL;
        snprintf(on, sizeof on, "%s/fp4-on%d", tmp, c);
        snprintf(off, sizeof off, "%s/fp4-off%d", tmp, c);
        if (score(on, &cfgs[c], 1, "arc_challenge") || score(off, &cfgs[c], 0, "arc_challenge")) {
            CHECK(0, "fp4 config %d: a run failed: %s", c, last_err);
            continue;
        }
        snprintf(path, sizeof path, "%s/run.json", on);
        size_t n = 0;
        struct err e = {0};
        cJSON *j = file_read_all(path, &txt, &n, &e) ? NULL : cJSON_Parse(txt);
        const cJSON *pm = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "prefix_cache"), "modes");
        for (int m = 0; m < n_modes; m++) {
            char a[1500], b[1500];
            snprintf(a, sizeof a, "%s/samples-arc_challenge-%s.jsonl.zst", on, modes[m]);
            snprintf(b, sizeof b, "%s/samples-arc_challenge-%s.jsonl.zst", off, modes[m]);
            CHECK(test_same_bytes(a, b), "fp4 config %d: %s: samples with and without the prefix cache differ", c, modes[m]);
            const cJSON *x = cJSON_GetObjectItem(pm, modes[m]);
            const int reuse = cJSON_IsTrue(cJSON_GetObjectItem(x, "reuse")), want = !is_nv || m == 0;
            const double in = cJSON_GetNumberValue(cJSON_GetObjectItem(x, "tokens_input"));
            const double co = cJSON_GetNumberValue(cJSON_GetObjectItem(x, "tokens_computed"));
            CHECK(reuse == want && (want ? co < in : co == in), "fp4 config %d %s: reuse %d (want %d), computed %.0f of %.0f",
                  c, modes[m], reuse, want, co, in);
            if (!is_nv && m > 0) { // direct: V's 32-token blocks; hifa4 in the channel form: the tile
                const int align = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(x, "align"));
                const int want_a = m == 2 && cfgs[c].qmean == ATTN_QMEAN_CHANNEL ? cfgs[c].tile : 32;
                CHECK(align == want_a, "mxfp4 %s align %d, want %d", modes[m], align, want_a);
            }
        }
        cJSON_Delete(j);
        free(txt);
    }
    n_modes = n_save;
    memcpy(modes, save, sizeof save);
}

int main(void) {
    const char *t = getenv("HIFA4_TMP");
    snprintf(tmp, sizeof tmp, "%s/prefix_run", t ? t : "build/tmp");
    snprintf(model_dir, sizeof model_dir, "%s/model", tmp);
    snprintf(qfile, sizeof qfile, "%s/questions.jsonl", tmp);
    snprintf(scales, sizeof scales, "%s/scales.safetensors", tmp);
    snprintf(hayfile, sizeof hayfile, "%s/haystack.txt", tmp);
    char cmd[2200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", tmp, tmp);
    CHECK(system(cmd) == 0, "%s", cmd);
    log_set_level(LOG_WARN);
    struct make_model_opts mo;
    make_model_opts_default(&mo);
    mo.arch = ARCH_QWEN3;
    mo.n_heads = 2, mo.n_kv_heads = 1, mo.head_dim = 64;
    struct err e = {0};
    CHECK(make_model(&mo, model_dir, &e) == 0, "make_model: %s", e.msg);
    CHECK(write_questions() == 0 && write_scales(mo.n_layers, mo.n_kv_heads, mo.head_dim) == 0 && write_haystack() == 0,
          "cannot write %s", tmp);
    for (int k = 0; k < attn_mode_count(); k++)
        if (!(attn_mode_at(k)->flags & ATTN_F_SAGE3)) modes[n_modes++] = attn_mode_at(k)->name; // fixed tile 128 (below)
    const struct cfg cfgs[] = {{64, ATTN_QMEAN_TOKEN, 4096, 0}, {128, ATTN_QMEAN_TOKEN, 4096, 0}, {64, ATTN_QMEAN_CHANNEL, 4096, 0},
                               {128, ATTN_QMEAN_CHANNEL, 4096, 0}, {64, ATTN_QMEAN_CHANNEL, 256, 0}};
    int same = 0, total = 0;
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
        char on[1300], off[1300], what[64];
        snprintf(what, sizeof what, "tile %d, qmean %s, batch %d", cfgs[c].tile, cfgs[c].qmean ? "channel" : "token",
                 cfgs[c].max_tokens);
        TEST_PROGRESS("%s", what);
        snprintf(on, sizeof on, "%s/on%zu", tmp, c);
        snprintf(off, sizeof off, "%s/off%zu", tmp, c);
        if (score(on, &cfgs[c], 1, "arc_challenge") || score(off, &cfgs[c], 0, "arc_challenge")) { CHECK(0, "%s: a run failed", what); continue; }
        for (int m = 0; m < n_modes; m++) {
            char a[1500], b[1500];
            snprintf(a, sizeof a, "%s/samples-arc_challenge-%s.jsonl.zst", on, modes[m]);
            snprintf(b, sizeof b, "%s/samples-arc_challenge-%s.jsonl.zst", off, modes[m]);
            const int ok = test_same_bytes(a, b);
            CHECK(ok, "%s: %s: samples with and without the prefix cache differ", what, modes[m]);
            same += ok, total++;
        }
        check_counts(on, what);
    }
    TEST_PROGRESS("FP4 formats and sage3, cache on and off");
    test_fp4_cache();
    TEST_PROGRESS("greedy decoding, cached and recomputed");
    test_generate();
    TEST_PROGRESS("greedy decoding after a cached sequence");
    test_generate_after();
    TEST_PROGRESS("niah generation form, cache on and off");
    test_niah_generate();
    printf("prefix cache on/off: %d of %d samples files byte-identical (%d modes x %zu configurations)\n", same, total,
           n_modes, sizeof cfgs / sizeof cfgs[0]);
    return test_summary("test_prefix_run");
}
