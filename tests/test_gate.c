// test_gate.c: the measured Smooth-QK gate (docs/results/gate.md). The error kernel's fast path against
// its scalar reference, bit for bit (Q-Mean none/token/channel, head_dim with a tail group,
// windows, soft-cap, 1 and 2 threads); what the error says on planted K outliers; the decision
// rule on constructed measurements (threshold, interval, model aggregation over layers); and
// `calibrate` on three make-model checkpoints - one concentrated K channel, a band of 5% of the
// channels, no outlier - giving smooth / smooth / bypass under the measured rule while the
// paper's rule bypasses the band.
#include <math.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "base/pool.h"
#include "calib/calib.h"
#include "calib/gate.h"
#include "calib/gate_err.h"
#include "io/safetensors.h"
#include "cli_util.h"

static uint64_t rng = 0x1234567;
static double urand(void) { // [0, 1)
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) * (1.0 / 9007199254740992.0);
}
static float nrand(void) { // ~N(0, 1), bf16-rounded by the caller
    double u = urand() + 1e-12, v = urand();
    return (float)(sqrt(-2 * log(u)) * cos(6.283185307179586 * v));
}

// q, k, v of one sequence: bf16 values (the kernel inputs); K channels hot, hot + stride, ... of
// every kv head scaled by `gain` (no outlier for gain 1); Q with a per-channel offset (Q-Mean has
// work).
struct seq_buf {
    float *q, *k, *v;
};
static struct seq_buf make_seq(int T, int H, int Hkv, int d, int hot, int stride, float gain) {
    struct seq_buf b = {malloc((size_t)T * H * d * sizeof(float)), malloc((size_t)T * Hkv * d * sizeof(float)),
                        malloc((size_t)T * Hkv * d * sizeof(float))};
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < H * d; i++) b.q[(size_t)t * H * d + i] = round_bf16(nrand() + 0.5f * (float)(i % 7));
        for (int i = 0; i < Hkv * d; i++) {
            float g = i % d >= hot && (i % d - hot) % stride == 0 ? gain : 1;
            b.k[(size_t)t * Hkv * d + i] = round_bf16(g * nrand());
            b.v[(size_t)t * Hkv * d + i] = round_bf16(nrand());
        }
    }
    return b;
}
static void free_seq(struct seq_buf *b) { free(b->q); free(b->k); free(b->v); }

static void test_fast_vs_ref(void) {
    const int shapes[][5] = {{1, 4, 2, 64, 0}, {37, 4, 2, 80, 0}, {130, 4, 2, 64, 0}, {70, 2, 1, 64, 20}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int T = shapes[si][0], H = shapes[si][1], Hkv = shapes[si][2], d = shapes[si][3], win = shapes[si][4];
        struct seq_buf b = make_seq(T, H, Hkv, d, 5, d, 30);
        float *s1 = malloc((size_t)Hkv * d * sizeof *s1), *s2 = malloc((size_t)Hkv * d * sizeof *s2);
        for (int i = 0; i < Hkv * d; i++) {
            s1[i] = (float)(0.5 + urand());
            s2[i] = i % d == 5 ? 6.0f : (float)(0.8 + 0.4 * urand());
        }
        const float *cand[3] = {NULL, s1, s2};
        for (int qm = 0; qm < 3; qm++)
            for (int cap = 0; cap < 2; cap++) {
                const struct gate_seq s = {b.q, b.k, b.v, T, H, Hkv, d, (float)(1 / sqrt((double)d)), cap ? 30.0f : 0, win};
                struct gate_err_cfg g = {qm, 64, 1};
                double er[3] = {0.5, 0, 0}, rr = 1, ef[3] = {0.5, 0, 0}, rf = 1; // start from non-zero sums
                struct err e = {0};
                int rc = gate_err_seq_ref(&s, &g, cand, 3, er, &rr, &e);
                CHECK(rc == 0, "reference: %s", e.msg);
                for (int th = 1; th <= 2; th++) {
                    double ef2[3] = {0.5, 0, 0}, rf2 = 1;
                    g.max_threads = th;
                    rc = gate_err_seq(&s, &g, cand, 3, ef2, &rf2, &e);
                    CHECK(rc == 0, "fast: %s", e.msg);
                    CHECK(!memcmp(er, ef2, sizeof er) && rr == rf2,
                          "T=%d d=%d window %d qmean %s cap %d threads %d: fast %.17g %.17g %.17g / %.17g, "
                          "reference %.17g %.17g %.17g / %.17g", T, d, win, gate_qmean_name(qm), cap, th, ef2[0],
                          ef2[1], ef2[2], rf2, er[0], er[1], er[2], rr);
                    memcpy(ef, ef2, sizeof ef);
                    rf = rf2;
                }
                if (T > 1) // one token: its output is its own v whatever the scores
                    CHECK(er[0] > 0.5 && er[1] > 0 && er[2] > 0 && rr > 1, "errors counted (%g %g %g, ref %g)", er[0],
                      er[1], er[2], rr);
                (void)ef; (void)rf;
            }
        free(s1); free(s2);
        free_seq(&b);
    }
    // bad sizes are refused
    double x[1] = {0}, r = 0;
    struct err e = {0};
    const struct gate_seq bad = {NULL, NULL, NULL, 0, 4, 2, 64, 1, 0, 0};
    const struct gate_err_cfg g = {0, 64, 1};
    const float *c0[1] = {NULL};
    CHECK(gate_err_seq(&bad, &g, c0, 1, x, &r, &e) == ERR_RANGE, "T = 0 refused");
}

// What the error says: K with one channel 40x the others (HiF4's micro-exponents absorb part of
// a lone outlier), with a band of 4 such channels of 64 (one in each 16) and with none; the
// candidate divides exactly those channels by 6.3 (about sqrt(40), as alpha 0.5 would) and
// multiplies Q's by it. Scales = 1 equal the bypass bit for bit (bf16(q * 1) = q).
static void test_error_meaning(void) {
    const int T = 96, H = 4, Hkv = 2, d = 64;
    const char *what[3] = {"no outlier", "one 40x K channel", "a band of 4 40x K channels"};
    double ratios[3];
    for (int kind = 0; kind < 3; kind++) {
        const int stride = kind == 2 ? 16 : d;
        struct seq_buf b = make_seq(T, H, Hkv, d, 9, stride, kind ? 40.0f : 1.0f);
        float *ones = malloc((size_t)Hkv * d * sizeof *ones), *sm = malloc((size_t)Hkv * d * sizeof *sm);
        for (int i = 0; i < Hkv * d; i++) {
            ones[i] = 1;
            sm[i] = i % d >= 9 && (i % d - 9) % stride == 0 ? 6.3f : 1.0f;
        }
        const float *cand[3] = {NULL, ones, sm};
        const struct gate_seq s = {b.q, b.k, b.v, T, H, Hkv, d, 0.125f, 0, 0};
        const struct gate_err_cfg g = {GATE_QMEAN_TOKEN, 128, 2};
        double err2[3] = {0}, ref2 = 0;
        struct err e = {0};
        CHECK(gate_err_seq(&s, &g, cand, 3, err2, &ref2, &e) == 0, "%s", e.msg);
        CHECK(err2[1] == err2[0], "scales of 1 = bypass (%.17g vs %.17g)", err2[1], err2[0]);
        ratios[kind] = sqrt(err2[2] / err2[0]);
        printf("error ratio of the smoothing candidate with %s: %.3f (bypass rel-L2 %.4f)\n", what[kind], ratios[kind],
               sqrt(err2[0] / ref2));
        free(ones); free(sm);
        free_seq(&b);
    }
    CHECK(ratios[0] > 1, "no outlier: smoothing makes the error larger (ratio %.3f)", ratios[0]);
    CHECK(ratios[1] < 1, "one channel: smoothing reduces the error (ratio %.3f)", ratios[1]);
    CHECK(ratios[2] < 0.8, "band: smoothing removes a quarter of the error or more (ratio %.3f)", ratios[2]);
}

// gate_decide on constructed measurements: 3 layers, 20 samples, candidates bypass/0.25/0.5.
// Layer 0: alpha 0.5 halves the error in every sample (smooth, 0.5). Layer 1: ratio 0.97 in every
// sample (below 1 but above max_ratio 0.95: bypass). Layer 2: pooled ratio 0.92 but 1.3 on half
// the samples and 0.1 on the other half (upper bound >= 1: bypass).
static void test_decide(void) {
    struct gate_meas m;
    struct err e = {0};
    const int n = 20, L = 3, C = 3;
    CHECK(gate_meas_init(&m, n, L, C, &e) == 0, "%s", e.msg);
    for (int s = 0; s < n; s++)
        for (int l = 0; l < L; l++) {
            double *er = m.err2 + ((size_t)s * L + l) * C, base = 1 + 0.1 * (s % 3);
            m.ref2[(size_t)s * L + l] = 100;
            er[0] = base;
            if (l == 0) { er[1] = base * 0.49; er[2] = base * 0.25; }
            if (l == 1) { er[1] = base * 0.9409; er[2] = base * 0.9409 * 1.01; }
            if (l == 2) { er[1] = base * 2; er[2] = base * (s % 2 ? 1.69 : 0.01); }
        }
    struct gate_opts o;
    gate_opts_default(&o);
    o.n_alpha = 2; // the measurements above are of bypass, 0.25 and 0.5
    struct gate_result r;
    CHECK(gate_decide(&r, &m, &o, &e) == 0, "%s", e.msg);
    if (r.layer) {
        CHECK(r.layer[0].smooth && r.layer[0].alpha == 0.5 && fabs(r.layer[0].ratio[2] - 0.5) < 1e-12,
              "layer 0: smooth at 0.5 (ratio %.4f, %d, alpha %g)", r.layer[0].ratio[2], r.layer[0].smooth, r.layer[0].alpha);
        CHECK(r.layer[0].hi < 1 && r.layer[0].lo <= 0.5 && r.layer[0].hi >= 0.5, "layer 0 interval [%g, %g]",
              r.layer[0].lo, r.layer[0].hi);
        CHECK(!r.layer[1].smooth && r.layer[1].best == 1 && fabs(r.layer[1].ratio[1] - 0.97) < 1e-12,
              "layer 1: 0.97 is not enough (best %d ratio %.4f smooth %d)", r.layer[1].best, r.layer[1].ratio[1],
              r.layer[1].smooth);
        CHECK(!r.layer[2].smooth && r.layer[2].best == 2 && r.layer[2].ratio[2] < 0.95 && r.layer[2].hi >= 1,
              "layer 2: unstable over samples is not smoothed (ratio %.3f [%.3f, %.3f] smooth %d)", r.layer[2].ratio[2],
              r.layer[2].lo, r.layer[2].hi, r.layer[2].smooth);
        CHECK(r.n_layers_smooth == 1, "one layer smooths (%d)", r.n_layers_smooth);
        // the model: mean over layers of each layer's rel error, not one layer's statistic
        double rel0 = 0, rel2 = 0;
        for (int l = 0; l < L; l++) rel0 += r.layer[l].rel[0] / L, rel2 += r.layer[l].rel[2] / L;
        CHECK(fabs(r.ratio[2] - rel2 / rel0) < 1e-12 && r.best == 2, "model ratio %.4f = %.4f", r.ratio[2], rel2 / rel0);
        CHECK(r.smooth && r.alpha_model == 0.5 && r.hi < 1, "model: smooth at 0.5 (ratio %.3f [%.3f, %.3f])", r.ratio[2],
              r.lo, r.hi);
        // a stricter threshold bypasses the model
        gate_result_free(&r);
        o.max_ratio = 0.6;
        CHECK(gate_decide(&r, &m, &o, &e) == 0 && !r.smooth && r.alpha_model == 0 && r.layer[0].smooth,
              "max_ratio 0.6: model bypass (ratio %.3f), layer 0 still smooth", r.ratio[2]);
        gate_result_free(&r);
    }
    gate_meas_free(&m);
}

// ---- calibrate on planted make-model checkpoints ----

static void make_model(const char *dir, const char *extra) {
    CHECK(test_sh("%s make-model --arch qwen3 --layers 2 --dim 256 --heads 4 --kv-heads 2 --head-dim 128 --ffn 512 "
                  "--seed 5 %s --force --out %s >/dev/null 2>&1", bin, extra, dir) == 0, "make-model %s", dir);
}

struct decision {
    char gate[16], rule[16], paper[16], measured[16];
    double ratio, alpha;
    int warned, n_cand; // n_cand: the measured candidates in the file, bypass included
    float max_scale;
};

// per-layer maximum scale of the file (2 layers)
static float layer_max[2];

static struct decision calibrate(const char *model, const char *name, const char *rule, const char *extra) {
    struct decision d = {0};
    char out[1300];
    char opt[64] = "";
    if (*rule) snprintf(opt, sizeof opt, "--gate-rule %s", rule); // "": the default rule
    snprintf(out, sizeof out, "%s/%s-%s%s.safetensors", tmp, name, *rule ? rule : "default", *extra ? "-x" : "");
    CHECK(test_sh("%s --quiet calibrate --model %s --calib %s --calib-samples 12 --calib-len 128 --seed 3 %s "
                  "%s --out %s > %s.log 2>&1", bin, model, test_text(), opt, extra, out, out) == 0, "calibrate %s", name);
    char log[1400], *text = NULL;
    size_t n = 0;
    struct err e = {0};
    snprintf(log, sizeof log, "%s.log", out);
    if (!file_read_all(log, &text, &n, &e)) {
        d.warned = strstr(text, "warning: the gate rules disagree") != NULL;
        free(text);
    }
    struct safetensors st;
    if (st_open(&st, out, &e)) { CHECK(0, "%s", e.msg); return d; }
    const char *g = st_meta(&st, "gate"), *r = st_meta(&st, "gate_rule");
    snprintf(d.gate, sizeof d.gate, "%s", g ? g : "-");
    snprintf(d.rule, sizeof d.rule, "%s", r ? r : "-");
    cJSON *j = cJSON_Parse(st_meta(&st, "smooth_qk"));
    const cJSON *pd = cJSON_GetObjectItem(j, "paper_decision"), *me = cJSON_GetObjectItem(j, "measured");
    snprintf(d.paper, sizeof d.paper, "%s", cJSON_IsString(pd) ? pd->valuestring : "-");
    const cJSON *md = cJSON_GetObjectItem(me, "decision"), *ba = cJSON_GetObjectItem(me, "best_alpha");
    snprintf(d.measured, sizeof d.measured, "%s", cJSON_IsString(md) ? md->valuestring : "-");
    const cJSON *ratio = cJSON_GetObjectItem(me, "ratio"), *alphas = cJSON_GetObjectItem(me, "alphas");
    d.n_cand = cJSON_GetArraySize(alphas);
    d.ratio = -1;
    for (int c = 0; c < d.n_cand && cJSON_IsNumber(ba) && cJSON_GetArraySize(ratio) == d.n_cand; c++)
        if (cJSON_GetArrayItem(alphas, c)->valuedouble == ba->valuedouble) d.ratio = cJSON_GetArrayItem(ratio, c)->valuedouble;
    d.alpha = cJSON_IsNumber(cJSON_GetObjectItem(me, "alpha")) ? cJSON_GetObjectItem(me, "alpha")->valuedouble : -1;
    cJSON_Delete(j);
    const struct st_tensor *t = st_find(&st, "smooth_qk.scales");
    float *sc = t ? malloc((size_t)t->numel * sizeof *sc) : NULL;
    layer_max[0] = layer_max[1] = 0;
    if (sc && !st_to_f32(sc, t, &e))
        for (int64_t i = 0; i < t->numel; i++) {
            d.max_scale = sc[i] > d.max_scale ? sc[i] : d.max_scale;
            float *lm = &layer_max[i * 2 / t->numel];
            *lm = sc[i] > *lm ? sc[i] : *lm;
        }
    free(sc);
    st_close(&st);
    return d;
}

static void test_planted(void) {
    char one[1200], band[1200], plain[1200], spec[512] = "--plant-outlier ";
    snprintf(one, sizeof one, "%s/one", tmp);
    snprintf(band, sizeof band, "%s/band", tmp);
    snprintf(plain, sizeof plain, "%s/plain", tmp);
    // the band: channels 40..46 of layer 0, 7 of 128 = 5.5% (Qwen2.5-Coder-1.5B: ~13 of 256)
    for (int c = 40; c < 47; c++) {
        size_t l = strlen(spec);
        snprintf(spec + l, sizeof spec - l, "%s0:%d:34", c > 40 ? "," : "", c);
    }
    make_model(one, "--plant-outlier 0:51:34");
    make_model(band, spec);
    make_model(plain, "");
    const char *names[3] = {"one", "band", "plain"}, *dirs[3] = {one, band, plain};
    const char *want_paper[3] = {"strong", "bypass", "bypass"}, *want_meas[3] = {"smooth", "smooth", "bypass"};
    double band_alpha = 0;
    for (int i = 0; i < 3; i++) {
        struct decision p = calibrate(dirs[i], names[i], "paper", ""), m = calibrate(dirs[i], names[i], "measured", "");
        if (i == 1) band_alpha = m.alpha;
        printf("%-5s paper rule: %s; measured rule: %s (ratio %.3f, alpha %g)%s\n", names[i], p.paper, m.measured,
               m.ratio, m.alpha, p.warned ? "; warned" : "");
        // both runs print and record both decisions; the file says which rule made it
        CHECK(!strcmp(p.paper, want_paper[i]) && !strcmp(m.paper, want_paper[i]), "%s: paper rule %s / %s, want %s",
              names[i], p.paper, m.paper, want_paper[i]);
        CHECK(!strcmp(p.measured, want_meas[i]) && !strcmp(m.measured, want_meas[i]),
              "%s: measured rule %s / %s, want %s", names[i], p.measured, m.measured, want_meas[i]);
        CHECK(!strcmp(p.rule, "paper") && !strcmp(m.rule, "measured"), "%s: gate_rule %s, %s", names[i], p.rule, m.rule);
        CHECK(!strcmp(p.gate, want_paper[i]), "%s: paper-rule file gate %s", names[i], p.gate);
        const int smooth = !strcmp(want_meas[i], "smooth");
        CHECK(!strcmp(m.gate, smooth ? (m.alpha < 0.5 ? "mild" : "strong") : "bypass"), "%s: measured-rule file gate %s",
              names[i], m.gate);
        CHECK(smooth ? m.max_scale > 2 : m.max_scale == 1, "%s: measured-rule scales up to %g", names[i], m.max_scale);
        CHECK(smooth ? m.ratio < 0.8 : m.ratio > 0.9, "%s: error ratio %.3f", names[i], m.ratio);
        const int disagree = (strcmp(want_paper[i], "bypass") != 0) != smooth;
        CHECK(p.warned == disagree && m.warned == disagree, "%s: disagreement warning %d / %d, want %d", names[i],
              p.warned, m.warned, disagree);
    }
    // the default rule is the measured one (docs/results/gate.md "Which rule is the default"):
    // the band, which the paper's rule bypasses, is smoothed without --gate-rule
    struct decision d = calibrate(band, "band", "", "");
    CHECK(!strcmp(d.rule, "measured") && d.max_scale > 2 && d.warned, "default rule on the band: %s, scales up to %g",
          d.rule, d.max_scale);
    // --gate layer: the band's layer 0 is smoothed, layer 1 (no outlier) stays all ones
    struct decision l = calibrate(band, "band", "measured", "--gate layer");
    CHECK(layer_max[0] > 2 && layer_max[1] == 1 && !strcmp(l.measured, "smooth"),
          "band, --gate layer: layer maxima %g, %g (want > 2, 1)", layer_max[0], layer_max[1]);
    // --gate-alphas: the default grid is 0.25, 0.5, 1 (four candidates with bypass); another grid is
    // measured as given; a list out of order is refused
    struct decision a3 = calibrate(band, "band-a3", "measured", "--gate-alphas 0.25,0.5");
    CHECK(d.n_cand == 4 && a3.n_cand == 3 && !strcmp(a3.measured, "smooth") && a3.ratio > 0 && a3.ratio < 0.8,
          "default grid: %d candidates (want 4); --gate-alphas 0.25,0.5: %d, %s, ratio %.3f", d.n_cand, a3.n_cand,
          a3.measured, a3.ratio);
    CHECK(test_sh("%s calibrate --model %s --calib %s --gate-alphas 0.5,0.25 --out %s/bad.safetensors > %s/bad.log 2>&1",
                  bin, band, test_text(), tmp, tmp) == 2 &&
              test_sh("grep -q -- \"--gate-alphas '0.5,0.25': expected\" %s/bad.log", tmp) == 0,
          "--gate-alphas 0.5,0.25 refused with a usage error naming the value");
    // --calib-bos: a rule other than the tokenizer's is named in the file's source; a BOS the
    // tokenizer does not have is a usage error naming the model
    calibrate(band, "band-nobos", "measured", "--calib-bos no");
    CHECK(test_sh("grep -qa 'no BOS (--calib-bos no)' %s/band-nobos-measured-x.safetensors", tmp) == 0,
          "--calib-bos no: recorded in the scales file's source");
    CHECK(test_sh("%s calibrate --model %s --calib %s --calib-bos yes --out %s/bad2.safetensors > %s/bad2.log 2>&1", bin,
                  band, test_text(), tmp, tmp) == 2 &&
              test_sh("grep -q 'calib-bos yes: the tokenizer of .* has no BOS token' %s/bad2.log", tmp) == 0,
          "--calib-bos yes without a BOS token: refused, naming the model");
    // Figure 6 of the three under both rules: each point labelled with both decisions
    CHECK(test_sh("%s diagnose --plane %s/one-measured.safetensors,%s/band-measured.safetensors,%s/plain-paper.safetensors "
                  "--plane-labels one,band,plain --out %s/plane > %s/plane.log 2>&1", bin, tmp, tmp, tmp, tmp, tmp) == 0,
          "diagnose --plane");
    // the band's label names the alpha its measured decision chose (which candidate wins depends on
    // the calibration text: ../shared's Brown or, in a bare clone, the committed fallback text)
    const char *svgs[2] = {"fig6_gate_plane_paper.svg", "fig6_gate_plane_measured.svg"};
    char band_label[96];
    snprintf(band_label, sizeof band_label, "band: paper bypass, measured smooth %g (", band_alpha);
    for (int i = 0; i < 2; i++) {
        char path[1400], *text = NULL;
        size_t n = 0;
        struct err e = {0};
        snprintf(path, sizeof path, "%s/plane/%s", tmp, svgs[i]);
        CHECK(!file_read_all(path, &text, &n, &e) && text && strstr(text, band_label) &&
              strstr(text, "plain: paper bypass, measured bypass") && strstr(text, "one: paper strong, measured smooth"),
              "%s labels both rules' decisions", svgs[i]);
        free(text);
    }
    // a scales file without the measured statistics is refused by name
    CHECK(test_sh("%s diagnose --plane %s/nothing.safetensors --out %s/plane2 > %s/plane2.log 2>&1", bin, tmp, tmp, tmp) != 0,
          "diagnose --plane of a missing file fails");
}

// run's automatic calibration caches the measured rule's file; one made with another candidate
// grid (an older default) is measured again, not reused
static void test_cache_grid(void) {
    char band[1100], c[1100];
    snprintf(band, sizeof band, "%s/band", tmp);
    snprintf(c, sizeof c, "%s/cachegrid", tmp);
    CHECK(test_sh("rm -rf %s && mkdir -p %s && printf '%%s\\n' "
                  "'{\"question\": \"Which is a fruit?\", \"choices\": [\"apple\", \"stone\"], \"answer\": 0}' "
                  "'{\"question\": \"Which is cold?\", \"choices\": [\"fire\", \"ice\"], \"answer\": 1}' > %s/two.jsonl",
                  c, c, c) == 0 &&
              test_sh("zstdcat -f %s | head -c 12000 > %s/text.txt", test_text(), c) == 0, // a few samples: run calibrates fast
          "a two-item JSONL task and a short calibration text");
    char text[1200];
    snprintf(text, sizeof text, "%s/text.txt", c);
    const char *run = "HIFA4_CACHE=%s/cache %s run --model %s --task mc_jsonl --task-file %s/two.jsonl --attn bf16,hifa4 "
                      "--calib %s --threads 1 --out %s/r%d > %s/r%d.log 2>&1";
    CHECK(test_sh(run, c, bin, band, c, text, c, 1, c, 1) == 0 &&
              test_sh("grep -q 'calibrating first' %s/r1.log", c) == 0,
          "first run calibrates");
    // the cached file replaced by one measured on another grid, as an older default made it
    CHECK(test_sh("f=$(ls %s/cache/scales/*-measured*.safetensors) && %s --quiet calibrate --model %s --calib %s "
                  "--calib-samples 8 --calib-len 64 --gate-alphas 0.25,0.5,0.75 --out \"$f\" > /dev/null 2>&1",
                  c, bin, band, text) == 0,
          "the cached file remade on the grid 0.25,0.5,0.75");
    CHECK(test_sh(run, c, bin, band, c, text, c, 2, c, 2) == 0 &&
              test_sh("grep -q 'measured with candidate alphas 0,0.25,0.5,0.75 .*calibrating again' %s/r2.log", c) == 0,
          "a cached file of another grid is measured again, saying why");
    CHECK(test_sh(run, c, bin, band, c, text, c, 3, c, 3) == 0 &&
              test_sh("grep -q 'calibrated earlier' %s/r3.log", c) == 0 &&
              test_sh("grep -q 'calibrating' %s/r3.log", c) != 0,
          "the file made again is reused");
}

int main(void) {
    if (cli_begin("gate")) return test_summary("test_gate");
    pool_set_threads(2);
    test_fast_vs_ref();
    test_error_meaning();
    test_decide();
    test_planted();
    test_cache_grid();
    return test_summary("test_gate");
}
