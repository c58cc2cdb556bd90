// test_calibrate.c: calibration end to end through the attention hook (spec/calibration.md):
// the golden Smooth-QK scales and gate statistics of qwen3-tiny / qwen3-outlier from their own
// calibration ids; the planted-outlier checks on make-model checkpoints (Strong,
// layer 0, channel 51, layer-0 attention error of hifa4 far below direct); Bypass/Mild without
// the outlier; same seed -> same file bytes; the batched statistics against the
// reference ones, on 1 and 2 threads, to the byte of the scales file; the evaluation-data
// refusal.
#include <stdlib.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "attention/attn.h"
#include "attention/scales.h"
#include "calib/calib.h"
#include "calib/calib_run.h"
#include "calib/calib_source.h"
#include "model/config.h"
#include "model/model.h"
#include "io/safetensors.h"
#include "test.h"

static char tmp[1024];
static const char *bin;

static int run(const char *cmd) {
    int s = system(cmd);
    return WIFEXITED(s) ? WEXITSTATUS(s) : -1;
}

// Golden scales were computed from binary64 non-attention math; ours runs f32 activations.
// Every Kmax/Qmax entry is a bf16 value (kernel input) that can move by one bf16 step
// (2^-8 relative) when a 1e-7 upstream difference flips a rounding; a scale is
// sqrt(Kagg)/sqrt(Qagg), so it moves by at most ~2^-8 relative: rtol 4e-3.
static void test_golden(const char *name) {
    const char *path = TEST_NEED("goldens/logits/%s.safetensors", name);
    const char *mdir = path ? TEST_NEED("goldens/models/%s", name) : NULL;
    if (!mdir) return;
    struct safetensors g;
    struct err e = {0};
    if (st_open(&g, path, &e)) { CHECK(0, "%s", e.msg); return; }
    const struct st_tensor *ti = st_find(&g, "calib.input_ids"), *ts = st_find(&g, "smooth_qk.scales");
    CHECK(ti && ts, "golden tensors present");
    if (!ti || !ts) { st_close(&g); return; }
    int n = (int)ti->shape[0], len = (int)ti->shape[1];
    int32_t *ids = malloc((size_t)n * len * sizeof *ids);
    float *want = malloc((size_t)ts->numel * sizeof *want);
    st_to_i32(ids, ti, &e);
    st_to_f32(want, ts, &e);
    struct calib_run_opts o;
    calib_run_opts_default(&o);
    o.gate.alpha_forced = 0.5; // the goldens force alpha 0.5 (metadata alpha_forced)
    o.batch_tokens = 4 * len;  // two batches: exercises the sample offset of the hook
    struct calib_run r;
    int rc = calib_run_ids(&r, mdir, ids, n, len, &o, &e);
    CHECK(rc == 0, "%s: calib_run_ids: %s", name, e.msg);
    if (!rc) {
        int bad = 0;
        double worst = 0;
        for (int64_t i = 0; i < ts->numel; i++) {
            double rel = fabs((double)r.result.scales[i] - want[i]) / fabs((double)want[i]);
            if (rel > worst) worst = rel;
            if (rel > 4e-3) bad++;
        }
        CHECK(bad == 0, "%s: %d of %lld scales differ from the golden by > 4e-3 (worst %.3g)", name, bad,
              (long long)ts->numel, worst);
        // gate statistics against the golden metadata
        const char *meta = st_meta(&g, "smooth_qk");
        cJSON *j = meta ? cJSON_Parse(meta) : NULL;
        const cJSON *gate = j ? cJSON_GetObjectItem(j, "gate") : NULL;
        double rho = gate ? cJSON_GetObjectItem(gate, "rho_K")->valuedouble : -1;
        double tkq = gate ? cJSON_GetObjectItem(gate, "T_KQ")->valuedouble : -1;
        const char *dec = gate ? cJSON_GetObjectItem(gate, "decision")->valuestring : "?";
        CHECK_CLOSE(r.result.rho_k, rho, 0, 4e-3);
        CHECK_CLOSE(r.result.t_kq, tkq, 0, 4e-3);
        CHECK(!strcmp(calib_branch_name(r.result.branch), dec), "%s: decision %s, golden %s", name,
              calib_branch_name(r.result.branch), dec);
        cJSON_Delete(j);
        calib_run_free(&r);
    }
    free(ids);
    free(want);
    st_close(&g);
}

static void make_model(const char *dir, const char *extra) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "%s make-model --arch qwen3 --layers 2 --dim 256 --heads 4 --kv-heads 2 --head-dim 128 --ffn 512 "
             "--seed 5 %s --force --out %s >/dev/null 2>&1",
             bin, extra, dir);
    CHECK(run(cmd) == 0, "make-model %s", dir);
}

// Calibration text: test_text() (any English prose gives the planted outlier's Strong gate;
// measured rho_K 31.4 on the README, 32.2 on Brown).
static int calibrate(const char *dir, const char *out, const char *extra) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "%s --quiet calibrate --model %s --calib %s --calib-samples 12 "
             "--calib-len 128 --seed 3 %s --out %s > %s.log 2>&1",
             bin, dir, test_text(), extra, out, out);
    return run(cmd);
}

// Layer-0 attention-output rel-L2 against f32 for a mode, on the calibration-like text.
static double layer0_err(const char *dir, const char *mode, const float *scales) {
    struct model_opts mo;
    model_opts_default(&mo);
    mo.act_bf16 = 0;
    mo.max_tokens = 512;
    mo.max_seq = 256;
    struct model *m = NULL;
    struct err e = {0};
    if (model_open(&m, dir, &mo, &e)) { CHECK(0, "open: %s", e.msg); return -1; }
    struct attn_opts ao;
    attn_opts_default(&ao);
    ao.diag = 1;
    struct attn_ctx *ctx = NULL;
    if (model_attn_open(&ctx, m, mode, &ao, scales, &e)) { CHECK(0, "attn %s: %s", mode, e.msg); model_free(m); return -1; }
    int32_t tok[512];
    uint32_t s = 99;
    for (int i = 0; i < 512; i++) { s = s * 1664525u + 1013904223u; tok[i] = (int32_t)((s >> 8) % 500); }
    int lens[2] = {256, 256}, pos[2] = {255, 511};
    float *logits = malloc(2 * (size_t)model_cfg(m)->vocab_size * sizeof *logits);
    const struct model_batch b = {.tokens = tok, .n_seq = 2, .seq_len = lens, .out_pos = pos, .n_out = 2};
    int rc = model_forward(m, ctx, NULL, &b, logits, &e);
    CHECK(rc == 0, "forward: %s", e.msg);
    double v = attn_ctx_diag(ctx)->layer[0].rel_l2;
    free(logits);
    attn_ctx_free(ctx);
    model_free(m);
    return v;
}

static void test_planted(void) {
    char with[1200], without[1200], s1[1300], s2[1300], s3[1300];
    snprintf(with, sizeof with, "%s/qwen3-outlier-mm", tmp);
    snprintf(without, sizeof without, "%s/qwen3-plain-mm", tmp);
    make_model(with, "--plant-outlier 0:51:34");
    make_model(without, "");
    snprintf(s1, sizeof s1, "%s/scales-a.safetensors", tmp);
    snprintf(s2, sizeof s2, "%s/scales-b.safetensors", tmp);
    snprintf(s3, sizeof s3, "%s/scales-plain.safetensors", tmp);
    CHECK(calibrate(with, s1, "") == 0, "calibrate (outlier)");
    CHECK(calibrate(with, s2, "") == 0, "calibrate again");
    CHECK(calibrate(without, s3, "") == 0, "calibrate (plain)");
    char *a = NULL, *b = NULL;
    size_t la = 0, lb = 0;
    struct err e = {0};
    file_read_all(s1, &a, &la, &e);
    file_read_all(s2, &b, &lb, &e);
    CHECK(a && b && la == lb && !memcmp(a, b, la), "same seed -> identical scales file");
    free(a);
    free(b);
    struct safetensors st;
    if (st_open(&st, s1, &e)) { CHECK(0, "%s", e.msg); return; }
    const char *gate = st_meta(&st, "gate");
    CHECK(gate && !strcmp(gate, "strong"), "planted outlier: gate %s, want strong", gate ? gate : "-");
    cJSON *j = cJSON_Parse(st_meta(&st, "smooth_qk"));
    const cJSON *pl = cJSON_GetObjectItem(j, "per_layer");
    double rho0 = cJSON_GetObjectItem(cJSON_GetArrayItem(pl, 0), "rho_K")->valuedouble;
    double rho1 = cJSON_GetObjectItem(cJSON_GetArrayItem(pl, 1), "rho_K")->valuedouble;
    CHECK(rho0 > rho1, "layer 0 has the largest rho_K (%.2f vs %.2f)", rho0, rho1);
    cJSON_Delete(j);
    const struct st_tensor *t = st_find(&st, "smooth_qk.scales");
    float *sc = malloc((size_t)t->numel * sizeof *sc);
    st_to_f32(sc, t, &e);
    int best = 0;
    for (int i = 0; i < 2 * 128; i++)
        if (sc[i] > sc[best]) best = i;
    CHECK(best % 128 == 51, "largest layer-0 scale at channel %d (kv head %d), want 51", best % 128, best / 128);
    st_close(&st);
    // the scales load back through the attention module's loader with the model's hash
    float *loaded = NULL;
    struct model_opts mo;
    model_opts_default(&mo);
    mo.max_tokens = 64;
    mo.max_seq = 64;
    struct model *m = NULL;
    if (!model_open(&m, with, &mo, &e)) {
        CHECK(attn_scales_load(&loaded, s1, 2, 2, 128, model_hash(m), &e) == 0, "scales load: %s", e.msg);
        model_free(m);
    }
    if (loaded) {
        double ed = layer0_err(with, "direct", NULL), eh = layer0_err(with, "hifa4", loaded);
        CHECK(eh > 0 && ed > 0 && eh < 0.5 * ed, "layer-0 rel-L2 vs f32: hifa4 %.4g, direct %.4g", eh, ed);
        printf("planted outlier 0:51:34: layer-0 attention rel-L2 vs f32: direct %.4g, hifa4 %.4g\n", ed, eh);
        free(loaded);
    }
    free(sc);
    if (!st_open(&st, s3, &e)) {
        const char *g2 = st_meta(&st, "gate");
        CHECK(g2 && (!strcmp(g2, "bypass") || !strcmp(g2, "mild")), "no outlier: gate %s", g2 ? g2 : "-");
        j = cJSON_Parse(st_meta(&st, "smooth_qk"));
        printf("no outlier: gate %s (rho_K %.3f, T_KQ %.3f)\n", g2 ? g2 : "-",
               cJSON_GetObjectItem(j, "rho_K")->valuedouble, cJSON_GetObjectItem(j, "T_KQ")->valuedouble);
        cJSON_Delete(j);
        st_close(&st);
    }
    // a scales file of another model is refused by hash
    if (!model_open(&m, without, &mo, &e)) {
        float *x = NULL;
        int rc = attn_scales_load(&x, s1, 2, 2, 128, model_hash(m), &e);
        CHECK(rc != 0 && strstr(e.msg, "hash"), "foreign scales refused: %s", e.msg);
        free(x);
        model_free(m);
    }
}

// The statistics path `calibrate` takes (calib_observe_seqs per layer, on the pool) against the
// reference (calib_observe per sequence on the hook's thread, the code before the KV cache), on the
// planted-outlier model: every per-sample statistic and the scales file's bytes are the same,
// on 1 and 2 threads, with batches of 5, 5 and 2 samples.
static void test_stats_paths(void) {
    char dir[1200], path[3][1300];
    snprintf(dir, sizeof dir, "%s/qwen3-outlier-mm", tmp);
    struct calib_run r[3];
    struct err e = {0};
    const char *what[3] = {"reference, 2 threads", "batched, 1 thread", "batched, 2 threads"};
    for (int v = 0; v < 3; v++) {
        struct calib_run_opts o;
        calib_run_opts_default(&o);
        o.samples = 12, o.len = 128, o.seed = 3, o.batch_tokens = 5 * 128;
        o.stats_ref = v == 0;
        o.threads = v == 1 ? 1 : 2;
        if (calib_run_source(&r[v], dir, test_text(), &o, &e)) {
            CHECK(0, "%s: %s", what[v], e.msg);
            for (int u = 0; u < v; u++) calib_run_free(&r[u]);
            return;
        }
        snprintf(path[v], sizeof path[v], "%s/scales-path%d.safetensors", tmp, v);
        struct calib_meta m = {r[v].model_id, r[v].model_hash, r[v].source_desc, r[v].result.n_samples, 128, 3};
        CHECK(calib_write(path[v], &r[v].result, &m, &e) == 0, "write: %s", e.msg);
    }
    char *a = NULL;
    size_t la = 0;
    file_read_all(path[0], &a, &la, &e);
    const struct calib_stats *s0 = &r[0].stats;
    size_t per = (size_t)s0->max_samples * s0->n_layers, big = per * s0->Hkv * s0->d;
    for (int v = 1; v < 3; v++) {
        const struct calib_stats *s = &r[v].stats;
        int same = s->n_samples == s0->n_samples && s->n_samples == 12 && !memcmp(s->kmax, s0->kmax, big * 4) &&
                   !memcmp(s->qmax, s0->qmax, big * 4) && !memcmp(s->kp99, s0->kp99, per * 4) &&
                   !memcmp(s->qp99, s0->qp99, per * 4) && !memcmp(s->kp999, s0->kp999, per * 4) &&
                   !memcmp(s->kstd, s0->kstd, per * 4);
        CHECK(same, "%s: per-sample statistics differ from the reference", what[v]);
        CHECK(s->n_fallback == 0, "%s: %lld (sample, layer)s fell back (bf16 kernel inputs need none)", what[v],
              (long long)s->n_fallback);
        char *b = NULL;
        size_t lb = 0;
        file_read_all(path[v], &b, &lb, &e);
        CHECK(a && b && la == lb && !memcmp(a, b, la), "%s: scales file differs from the reference's", what[v]);
        free(b);
    }
    free(a);
    for (int v = 0; v < 3; v++) calib_run_free(&r[v]);
}

// The evaluation-data refusal on the real dataset files (skipped without them).
static void test_refusal(void) {
    const char *anatomy = TEST_NEED("datasets/mmlu/data/test/anatomy_test.csv");
    const char *brown = anatomy ? TEST_NEED("datasets/brown/brown.txt.zst") : NULL;
    const char *mmlu = brown ? TEST_NEED("datasets/mmlu") : NULL;
    const char *wiki = mmlu ? TEST_NEED("datasets/wikitext2/raw/wiki.test.raw") : NULL;
    if (!wiki) return;
    const char *task = NULL;
    CHECK(calib_source_is_eval(anatomy, &task) && !strcmp(task, "mmlu"), "mmlu test split recognised");
    CHECK(!calib_source_is_eval(brown, &task), "brown is calibration text");
    CHECK(calib_source_is_eval(mmlu, &task) && !strcmp(task, "mmlu"), "a task's data directory is refused like its files");
    char *t = NULL, d[256];
    size_t l = 0;
    struct err e = {0};
    int rc = calib_source_read(wiki, 0, &t, &l, d, sizeof d, &e);
    CHECK(rc == ERR_USAGE && strstr(e.msg, "--force"), "wikitext test refused: %s", e.msg);
    free(t);
    // a copy of evaluation data under another name is refused by content (manifest sha256)
    char copy[1200];
    snprintf(copy, sizeof copy, "%s/notes-anatomy.csv", tmp);
    char *csv = NULL;
    size_t cl = 0;
    file_read_all(anatomy, &csv, &cl, &e);
    file_write_atomic(copy, csv, cl, &e);
    t = NULL;
    rc = calib_source_read(copy, 0, &t, &l, d, sizeof d, &e);
    CHECK(rc == ERR_USAGE && strstr(e.msg, "mmlu") && strstr(e.msg, "--force"), "renamed MMLU copy refused: %s", e.msg);
    free(t);
    t = NULL;
    rc = calib_source_read(copy, 1, &t, &l, d, sizeof d, &e);
    CHECK(rc == 0 && l == cl, "--force accepts it: %s", e.msg);
    free(t);
    free(csv);
}

static void test_samples(void) {
    struct err e = {0};
    // sample cutting: BOS first, consecutive chunks, seeded choice in stream order
    int32_t ids[100];
    for (int i = 0; i < 100; i++) ids[i] = i;
    struct calib_samples made = {0};
    CHECK(calib_make_samples(ids, 100, (struct calib_cut){.len = 10, .samples = 3, .seed = 7, .bos = 1}, &made, &e) == 0 &&
          made.n == 3, "make samples");
    const int32_t *out = made.ids;
    if (out) {
        int ok = 1;
        for (int s = 0; s < 3; s++) {
            ok &= out[s * 10] == 1;
            int first = out[s * 10 + 1];
            ok &= first % 9 == 0;
            for (int k = 1; k < 10; k++) ok &= out[s * 10 + k] == first + k - 1;
            if (s) ok &= out[s * 10 + 1] > out[(s - 1) * 10 + 1];
        }
        CHECK(ok, "chunks are BOS + 9 consecutive ids, in stream order");
        free(made.ids);
    }
}

int main(void) {
    const char *t = getenv("HIFA4_TMP");
    bin = getenv("HIFA4_BIN");
    snprintf(tmp, sizeof tmp, "%s/calibrate", t ? t : "build/tmp");
    struct err e = {0};
    mkdir_p(tmp, &e);
    if (!bin) bin = "./hifa4-eval";
    test_refusal();
    test_samples();
    test_golden("qwen3-tiny");
    test_golden("qwen3-outlier");
    test_planted();
    test_stats_paths();
    return test_summary("test_calibrate");
}
