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
#include "eval/run.h"
#include "import/make_model.h"
#include "test.h"

static char tmp[1024], model_dir[1200], qfile[1200], scales[1200];
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

struct cfg { int tile, qmean, max_tokens; };

static int score(const char *out, const struct cfg *c, int cache) {
    struct run_opts o;
    run_opts_default(&o);
    o.model_dir = o.model_arg = model_dir;
    o.model_name = "tiny";
    o.model.max_tokens = c->max_tokens;
    o.n_threads = 2;
    o.out_dir = out;
    o.task.file = qfile;
    o.scales = scales;
    o.attn.tile = c->tile;
    o.attn.qmean = c->qmean;
    o.prefix_cache = cache;
    static char *argv0[] = {"test_prefix_run"};
    o.argc = 1, o.argv = argv0;
    const char *tasks[] = {"arc_challenge"};
    struct err e = {0};
    struct run *r = NULL;
    int rc = run_select_modes(&o, modes, n_modes, &e);
    if (!rc) rc = run_select_tasks(&o, tasks, 1, &e);
    if (!rc) rc = run_open(&r, &o, &e);
    int next = 0;
    if (!rc) rc = run_task_begin(r, 0, &next, &e);
    if (!rc) rc = run_task_score(r, 0, run_task_items(r, 0), &e);
    if (!rc) rc = run_task_end(r, 0, &e);
    char *head = NULL;
    if (!rc) rc = run_finish(r, &head, &e);
    free(head);
    run_free(r);
    if (rc) fprintf(stderr, "run %s: %s\n", out, e.msg);
    return rc;
}

static int same_file(const char *a, const char *b) {
    char *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    struct err e = {0};
    int ok = !file_read_all(a, &x, &nx, &e) && !file_read_all(b, &y, &ny, &e) && nx == ny && !memcmp(x, y, nx);
    free(x), free(y);
    return ok;
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

int main(void) {
    const char *t = getenv("HIFA4_TMP");
    snprintf(tmp, sizeof tmp, "%s/prefix_run", t ? t : "build/tmp");
    snprintf(model_dir, sizeof model_dir, "%s/model", tmp);
    snprintf(qfile, sizeof qfile, "%s/questions.jsonl", tmp);
    snprintf(scales, sizeof scales, "%s/scales.safetensors", tmp);
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
    CHECK(write_questions() == 0 && write_scales(mo.n_layers, mo.n_kv_heads, mo.head_dim) == 0, "cannot write %s", tmp);
    for (int k = 0; k < attn_mode_count(); k++) modes[n_modes++] = attn_mode_at(k)->name;
    const struct cfg cfgs[] = {{64, ATTN_QMEAN_TOKEN, 4096}, {128, ATTN_QMEAN_TOKEN, 4096}, {64, ATTN_QMEAN_CHANNEL, 4096},
                               {128, ATTN_QMEAN_CHANNEL, 4096}, {64, ATTN_QMEAN_CHANNEL, 256}};
    int same = 0, total = 0;
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
        char on[1300], off[1300], what[64];
        snprintf(what, sizeof what, "tile %d, qmean %s, batch %d", cfgs[c].tile, cfgs[c].qmean ? "channel" : "token",
                 cfgs[c].max_tokens);
        TEST_PROGRESS("%s", what);
        snprintf(on, sizeof on, "%s/on%zu", tmp, c);
        snprintf(off, sizeof off, "%s/off%zu", tmp, c);
        if (score(on, &cfgs[c], 1) || score(off, &cfgs[c], 0)) { CHECK(0, "%s: a run failed", what); continue; }
        for (int m = 0; m < n_modes; m++) {
            char a[1500], b[1500];
            snprintf(a, sizeof a, "%s/samples-arc_challenge-%s.jsonl.zst", on, modes[m]);
            snprintf(b, sizeof b, "%s/samples-arc_challenge-%s.jsonl.zst", off, modes[m]);
            const int ok = same_file(a, b);
            CHECK(ok, "%s: %s: samples with and without the prefix cache differ", what, modes[m]);
            same += ok, total++;
        }
        check_counts(on, what);
    }
    printf("prefix cache on/off: %d of %d samples files byte-identical (%d modes x %zu configurations)\n", same, total,
           n_modes, sizeof cfgs / sizeof cfgs[0]);
    return test_summary("test_prefix_run");
}
