// test_diagnose.c: outlier diagnostics (src/diag/diagnose.c, src/results/plot_xy.c): Jaccard, top-N and CV
// on hand-worked statistics; plot_xy output well-formed and deterministic; diagnose's Table 8
// numbers equal calib_compute's on the same samples and the golden gate statistics of
// qwen3-outlier; the CLI on a planted-outlier make-model checkpoint (Strong, layer 0, channel
// 51) and on the imported stories260K; the q/k norm gains of Figure 2 (qk_gains.c) on hand-worked
// gains and on planted qwen3 and gemma3 (1 + w) checkpoints, their ratios recomputed from the files.
#include <stdlib.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "calib/calib.h"
#include "calib/calib_run.h"
#include "diag/diagnose.h"
#include "diag/qk_gains.h"
#include "results/plot_xy.h"
#include "io/safetensors.h"
#include "test.h"

static char tmp[1024];
static const char *bin;

static int run(const char *cmd) {
    int s = system(cmd);
    return WIFEXITED(s) ? WEXITSTATUS(s) : -1;
}

// ---- a minimal XML well-formedness check: every tag closed in order, quotes balanced ----
static int svg_ok(const char *s, char *why, size_t n) {
    if (strncmp(s, "<svg", 4)) { snprintf(why, n, "does not start with <svg"); return 0; }
    size_t len = strlen(s);
    if (len < 7 || strcmp(s + len - 7, "</svg>\n")) { snprintf(why, n, "does not end with </svg>"); return 0; }
    char stack[64][32];
    int depth = 0;
    for (const char *p = s; *p; p++) {
        if (*p == '&') { // entity must be one of ours
            if (strncmp(p, "&amp;", 5) && strncmp(p, "&lt;", 4) && strncmp(p, "&gt;", 4) && strncmp(p, "&quot;", 6)) {
                snprintf(why, n, "bad entity at %ld", (long)(p - s));
                return 0;
            }
            continue;
        }
        if (*p == '>') { snprintf(why, n, "stray '>' at %ld", (long)(p - s)); return 0; }
        if (*p != '<') continue;
        const char *q = p + 1;
        int closing = *q == '/';
        if (closing) q++;
        char name[32];
        int k = 0;
        while ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9')) {
            if (k < 31) name[k++] = *q;
            q++;
        }
        name[k] = 0;
        if (!k) { snprintf(why, n, "empty tag name at %ld", (long)(p - s)); return 0; }
        int inq = 0;
        while (*q && (inq || *q != '>')) {
            if (*q == '"') inq = !inq;
            if (!inq && *q == '<') { snprintf(why, n, "'<' inside tag at %ld", (long)(q - s)); return 0; }
            q++;
        }
        if (!*q) { snprintf(why, n, "unterminated tag"); return 0; }
        int self = q[-1] == '/';
        if (closing) {
            if (!depth || strcmp(stack[depth - 1], name)) { snprintf(why, n, "</%s> does not close the open tag", name); return 0; }
            depth--;
        } else if (!self) {
            if (depth == 64) { snprintf(why, n, "too deep"); return 0; }
            snprintf(stack[depth++], 32, "%s", name);
        }
        p = q;
    }
    if (depth) { snprintf(why, n, "%d tags left open (%s)", depth, stack[depth - 1]); return 0; }
    return 1;
}

static int count_str(const char *s, const char *w) {
    int c = 0;
    for (const char *p = strstr(s, w); p; p = strstr(p + 1, w)) c++;
    return c;
}

static void test_plot_xy(void) {
    struct err e = {0};
    char why[256];
    double x[6] = {0, 1, 2, 3, 4, 5}, y1[6] = {1, 10, 100, NAN, 5, 7}, y2[6] = {2, 3, -1, 4, 0, 8};
    struct plot_xy_series s[2] = {{"max |K| <a&b>", x, y1, 6, 1}, {"second", x, y2, 6, 0}};
    struct plot_axis xa = {"layer", 0, 0, 0}, ya = {"value", 0, 0, 1};
    char *a = NULL, *b = NULL;
    CHECK(plot_line_svg(&a, "t <1>", &xa, &ya, s, 2, &e) == 0, "line: %s", e.msg);
    CHECK(plot_line_svg(&b, "t <1>", &xa, &ya, s, 2, &e) == 0, "line again: %s", e.msg);
    if (a && b) {
        CHECK(svg_ok(a, why, sizeof why), "line svg: %s", why);
        CHECK(!strcmp(a, b), "line svg deterministic");
        CHECK(strstr(a, "max |K| &lt;a&amp;b&gt;") && strstr(a, ">second<"), "legend holds both series, escaped");
        CHECK(strstr(a, "t &lt;1&gt;") != NULL, "title escaped");
        // series 1: NaN at index 3 breaks the line: two sub-paths; 5 markers (NaN skipped)
        const char *p1 = strstr(a, "<path");
        CHECK(p1 && count_str(p1, "<circle") == 5, "5 markers for the 5 finite points (%d)", p1 ? count_str(p1, "<circle") : -1);
        // series 2 on a log axis: -1 and 0 cannot be drawn -> 3 sub-paths (0,1 | 3 | 5)
        const char *p2 = p1 ? strstr(p1 + 1, "<path") : NULL;
        char *end = p2 ? strstr(p2, "/>") : NULL;
        int moves = 0;
        for (const char *q = p2; q && q < end; q++) moves += *q == 'M';
        CHECK(moves == 3, "log axis: non-positive values break the line (%d sub-paths)", moves);
        // drawable y values span 1..100: decade ticks 1, 10, 100 and no more
        CHECK(strstr(a, ">1000<") == NULL && strstr(a, ">0.1<") == NULL && strstr(a, ">100<") && strstr(a, ">10<"),
              "log ticks at the decades 1..100");
    }
    free(a); free(b);
    a = b = NULL;
    double hv[2 * 3] = {0, 1, 2, 3, NAN, 6};
    CHECK(plot_heatmap_svg(&a, "heat", "channel", "head", "max", (struct plot_grid){hv, 2, 3}, &e) == 0, "heat: %s", e.msg);
    if (a) {
        CHECK(svg_ok(a, why, sizeof why), "heat svg: %s", why);
        CHECK(count_str(a, "#999999") == 1, "one grey (non-finite) cell");
        CHECK(strstr(a, "fill=\"#fde725\"") != NULL, "max cell at the top of the ramp");
        CHECK(strstr(a, ">6<") != NULL, "colour bar labelled with the max");
    }
    free(a);
    a = NULL;
    CHECK(plot_heatmap_svg(&a, "x", "c", "h", "v", (struct plot_grid){hv, 0, 3}, &e) == ERR_RANGE, "heat: 0 rows refused");
    struct plot_region reg[2] = {{-INFINITY, 6, -INFINITY, INFINITY, "Bypass", "#eee"},
                                 {6, INFINITY, 3, INFINITY, "Strong", "#dfd"}};
    struct plot_point pts[2] = {{14.15, 14.47, "Qwen3-8B", 0}, {35, 24, "mine", 1}};
    struct plot_axis px = {"rho", 0, 0, 0}, py = {"T", 0, 0, 0};
    CHECK(plot_plane_svg(&a, "gate", &px, &py, &(struct plot_plane){reg, 2, pts, 2}, &e) == 0, "plane: %s", e.msg);
    if (a) {
        CHECK(svg_ok(a, why, sizeof why), "plane svg: %s", why);
        CHECK(strstr(a, ">Bypass<") && strstr(a, ">Strong<") && strstr(a, ">mine<") && strstr(a, ">Qwen3-8B<"),
              "plane has regions and points");
        CHECK(count_str(a, "fill=\"#d62728\"") == 1, "one emphasised point");
    }
    free(a);
}

// ---- hand-worked stability ----
static void test_stability(void) {
    int s1[3] = {1, 2, 3}, s2[3] = {2, 3, 4}, s3[2] = {7, 8};
    CHECK_CLOSE(diag_jaccard(s1, 3, s2, 3), 0.5, 0, 0);
    CHECK_CLOSE(diag_jaccard(s1, 3, s1, 3), 1.0, 0, 0);
    CHECK_CLOSE(diag_jaccard(s1, 3, s3, 2), 0.0, 0, 0);
    CHECK_CLOSE(diag_jaccard(s1, 0, s3, 0), 1.0, 0, 0);
    CHECK_CLOSE(diag_jaccard(s1, 3, s2, 1), 1.0 / 3, 0, 1e-15); // {1,2,3} vs {2}
    CHECK(diag_top_count(2, 128) == 13 && diag_top_count(4, 8) == 2 && diag_top_count(1, 100) == 5 &&
              diag_top_count(8, 128) == 52 && diag_top_count(1, 4) == 1,
          "N = ceil(5%% of Hkv*d): %d %d %d %d %d", diag_top_count(2, 128), diag_top_count(4, 8),
          diag_top_count(1, 100), diag_top_count(8, 128), diag_top_count(1, 4));
    float v[5] = {3, 1, 3, NAN, 2};
    int idx[5] = {-1, -1, -1, -1, -1};
    CHECK(diag_top_n(idx, v, 5, 3) == 3 && idx[0] == 0 && idx[1] == 2 && idx[2] == 4, "top 3 with ties: %d %d %d",
          idx[0], idx[1], idx[2]);
    CHECK(diag_top_n(idx, v, 5, 9) == 5 && idx[4] == 3, "k > n clamps; NaN last");

    // 3 samples, 2 layers, Hkv 2, d 30: 60 pairs, N = 3. Layer 1 holds large decoys.
    struct calib_stats st;
    struct err e = {0};
    if (calib_stats_init(&st, (struct calib_shape){2, 2, 2, 30}, 3, 4, &e)) { CHECK(0, "%s", e.msg); return; }
    st.n_samples = 3;
    const int n = 60;
    for (int p = 0; p < 3; p++)
        for (int l = 0; l < 2; l++)
            for (int i = 0; i < n; i++) st.kmax[((size_t)p * 2 + l) * n + i] = l ? 100 + i : 1;
    float *k0 = st.kmax, *k1 = st.kmax + 2 * n, *k2 = st.kmax + 4 * n; // layer 0 of each sample
    k0[5] = 10; k0[10] = 9; k0[20] = 8;
    k1[5] = 12; k1[10] = 7; k1[30] = 8.5f;
    k2[40] = 20; k2[41] = 19; k2[42] = 18; k2[5] = 8;
    struct diag_stability sb;
    if (diag_stability_compute(&sb, &st, &e)) { CHECK(0, "%s", e.msg); calib_stats_free(&st); return; }
    CHECK(sb.top_n == 3, "top_n %d", sb.top_n);
    int want[3][3] = {{5, 10, 20}, {5, 30, 10}, {40, 41, 42}}; // by value, descending
    int ok = 1;
    for (int p = 0; p < 3; p++)
        for (int k = 0; k < 3; k++) ok &= sb.top[p * 3 + k] == want[p][k];
    CHECK(ok, "per-sample top-3 sets at layer 0");
    CHECK_CLOSE(sb.jaccard[0 * 3 + 1], 0.5, 0, 0);  // {5,10,20} vs {5,10,30}: 2/4
    CHECK_CLOSE(sb.jaccard[1 * 3 + 0], 0.5, 0, 0);
    CHECK_CLOSE(sb.jaccard[0 * 3 + 2], 0.0, 0, 0);
    CHECK_CLOSE(sb.jaccard[2 * 3 + 2], 1.0, 0, 0);
    CHECK_CLOSE(sb.jaccard_mean, 0.5 / 3, 0, 1e-15);
    // means: [5] (10+12+8)/3 = 10, [40] 22/3, [41] 21/3, [10] 17/3 ...
    CHECK(sb.cv_idx[0] == 5 && sb.cv_idx[1] == 40 && sb.cv_idx[2] == 41, "top by mean: %d %d %d", sb.cv_idx[0],
          sb.cv_idx[1], sb.cv_idx[2]);
    CHECK_CLOSE(sb.cv_mean[0], 10, 0, 1e-12);
    CHECK_CLOSE(sb.cv[0], sqrt(8.0 / 3) / 10, 0, 1e-7);   // deviations 0, +2, -2 (population std)
    double m40 = 22.0 / 3, v40 = (2 * (1 - m40) * (1 - m40) + (20 - m40) * (20 - m40)) / 3;
    CHECK_CLOSE(sb.cv[1], sqrt(v40) / m40, 0, 1e-7);
    double m41 = 21.0 / 3, v41 = (2 * (1 - m41) * (1 - m41) + (19 - m41) * (19 - m41)) / 3;
    CHECK_CLOSE(sb.cv_max, sqrt(v40) / m40 > sqrt(v41) / m41 ? sqrt(v40) / m40 : sqrt(v41) / m41, 0, 1e-7);
    diag_stability_free(&sb);
    calib_stats_free(&st);
}

// ---- diagnose numbers vs calib_compute and the golden gate statistics ----
static void test_golden(void) {
    const char *gpath = TEST_NEED("goldens/logits/qwen3-outlier.safetensors");
    const char *mdir = gpath ? TEST_NEED("goldens/models/qwen3-outlier") : NULL;
    if (!mdir) return;
    struct safetensors g;
    struct err e = {0};
    if (st_open(&g, gpath, &e)) { CHECK(0, "%s", e.msg); return; }
    const struct st_tensor *ti = st_find(&g, "calib.input_ids"), *ts = st_find(&g, "smooth_qk.scales");
    if (!ti || !ts) { CHECK(0, "golden tensors"); st_close(&g); return; }
    int n = (int)ti->shape[0], len = (int)ti->shape[1];
    int32_t *ids = malloc((size_t)n * len * sizeof *ids);
    float *want = malloc((size_t)ts->numel * sizeof *want);
    int lens[8];
    st_to_i32(ids, ti, &e);
    st_to_f32(want, ts, &e);
    for (int i = 0; i < n; i++) lens[i] = len;
    struct diag_opts o;
    diag_opts_default(&o);
    o.run.batch_tokens = 3 * len; // several batches
    struct diagnose d;
    int rc = diag_run_ids(&d, mdir, (struct diag_seqs){ids, lens, n}, (struct diag_seqs){0}, NULL, &o, &e);
    CHECK(rc == 0, "diag_run_ids: %s", e.msg);
    struct calib_run cr;
    struct calib_run_opts co;
    calib_run_opts_default(&co);
    int rc2 = calib_run_ids(&cr, mdir, ids, n, len, &co, &e);
    CHECK(rc2 == 0, "calib_run_ids: %s", e.msg);
    if (!rc && !rc2) {
        const struct calib_result *a = &d.stats.result, *b = &cr.result;
        int same = a->n_layers == b->n_layers && a->branch == b->branch && a->rho_k == b->rho_k && a->t_kq == b->t_kq;
        for (int l = 0; same && l < a->n_layers; l++)
            same = a->layer[l].maxabs_k == b->layer[l].maxabs_k && a->layer[l].kp99 == b->layer[l].kp99 &&
                   a->layer[l].rho_k == b->layer[l].rho_k && a->layer[l].t_kq == b->layer[l].t_kq &&
                   a->layer[l].maxabs_q == b->layer[l].maxabs_q;
        for (size_t i = 0; same && i < (size_t)a->n_layers * a->Hkv * a->d; i++) same = a->scales[i] == b->scales[i];
        CHECK(same, "diagnose's gate statistics and scales equal calib_compute's on the same samples");
        // the golden statistics (binary64 non-attention math): 4e-3 as in test_calibrate
        cJSON *j = cJSON_Parse(st_meta(&g, "smooth_qk"));
        const cJSON *pl = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "gate"), "per_layer");
        for (int l = 0; l < a->n_layers && pl; l++) {
            const cJSON *o2 = cJSON_GetArrayItem(pl, l);
            CHECK_CLOSE(a->layer[l].maxabs_k, cJSON_GetObjectItem(o2, "MaxAbs_K")->valuedouble, 0, 4e-3);
            CHECK_CLOSE(a->layer[l].maxabs_q, cJSON_GetObjectItem(o2, "MaxAbs_Q")->valuedouble, 0, 4e-3);
            CHECK_CLOSE(a->layer[l].kp99, cJSON_GetObjectItem(o2, "Kp99")->valuedouble, 0, 4e-3);
            CHECK_CLOSE(a->layer[l].rho_k, cJSON_GetObjectItem(o2, "rho_K")->valuedouble, 0, 4e-3);
            CHECK_CLOSE(a->layer[l].t_kq, cJSON_GetObjectItem(o2, "T_KQ")->valuedouble, 0, 4e-3);
        }
        cJSON_Delete(j);
        // the alpha-0.5 column: the golden scales are rms with alpha 0.5 forced
        int bad = 0;
        for (int64_t i = 0; i < ts->numel; i++)
            if (fabs((double)d.s05.scales[i] - want[i]) > 4e-3 * want[i]) bad++;
        CHECK(bad == 0, "%d alpha-0.5 scales differ from the golden by > 4e-3", bad);
        // the planted channel: (kv head h, 51) in every prompt's layer-0 top N; heat map at its max there
        int all51 = 1;
        for (int p = 0; p < d.stab.n_samples; p++) {
            int f0 = 0, f1 = 0;
            for (int k = 0; k < d.stab.top_n; k++) {
                f0 |= d.stab.top[p * d.stab.top_n + k] == 51;
                f1 |= d.stab.top[p * d.stab.top_n + k] == 128 + 51;
            }
            all51 &= f0 && f1;
        }
        CHECK(all51, "(0,51) and (1,51) are in every sample's top %d", d.stab.top_n);
        CHECK(d.stab.n_samples == 8 && d.stab.top_n == 13, "8 samples, N = 13");
        double hmax = 0;
        int hat = -1, hok = 1;
        for (int i = 0; i < 2 * 128; i++) {
            if (d.heat[i] > hmax) { hmax = d.heat[i]; hat = i; }
            hok &= d.heat[i] >= a->kagg[i] * (1 - 1e-12); // max over samples >= rms over samples
        }
        CHECK(hat % 128 == 51 && hok, "heat map: max at channel %d, >= the rms aggregate everywhere", hat % 128);
        char *f3, *f4, *f6, why[256];
        if (diag_svgs(&d, &f3, &f4, &f6, &e) == 0) {
            CHECK(svg_ok(f3, why, sizeof why), "fig3: %s", why);
            CHECK(svg_ok(f4, why, sizeof why), "fig4: %s", why);
            CHECK(svg_ok(f6, why, sizeof why), "fig6: %s", why);
            CHECK(count_str(f3, "<rect") >= 256, "fig3 has a cell per (head, channel)");
            CHECK(strstr(f4, ">p99.9 |K|<") && strstr(f6, ">Strong<"), "fig4 series, fig6 regions");
            free(f3); free(f4); free(f6);
        } else CHECK(0, "diag_svgs: %s", e.msg);
        calib_run_free(&cr);
    }
    if (!rc) diag_free(&d);
    // a separate statistics set: the first 4 samples; stability stays over all 8
    rc = diag_run_ids(&d, mdir, (struct diag_seqs){ids, lens, n}, (struct diag_seqs){ids, lens, 4}, "first four", &o, &e);
    CHECK(rc == 0, "diag_run_ids with a statistics set: %s", e.msg);
    if (!rc) {
        rc2 = calib_run_ids(&cr, mdir, ids, 4, len, &co, &e);
        if (!rc2) {
            CHECK(d.stats.result.n_samples == 4 && d.stab.n_samples == 8 &&
                      d.stats.result.rho_k == cr.result.rho_k && d.stats.result.t_kq == cr.result.t_kq,
                  "statistics from the 4-sample set, stability from 8 prompts");
            calib_run_free(&cr);
        }
        diag_free(&d);
    }
    free(ids);
    free(want);
    st_close(&g);
}

// ---- the command ----
static cJSON *read_json(const char *path) {
    char *buf = NULL;
    size_t n = 0;
    struct err e = {0};
    if (file_read_all(path, &buf, &n, &e)) return NULL;
    cJSON *j = cJSON_Parse(buf);
    free(buf);
    return j;
}

static void check_svg_file(const char *dir, const char *name) {
    char path[2048], why[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *buf = NULL;
    size_t n = 0;
    struct err e = {0};
    if (file_read_all(path, &buf, &n, &e)) { CHECK(0, "%s", e.msg); return; }
    CHECK(svg_ok(buf, why, sizeof why), "%s: %s", path, why);
    free(buf);
}

// ---- Figure 2: q/k norm gains ----
static void test_gain_summary(void) {
    // mean |gain| (1 + 1 + 1 + 5) / 4 = 2, so channel 3's 5 is 2.5x the mean
    const float k1[4] = {1, -1, 1, 5}, q1[4] = {0.5f, 0.5f, 0.5f, 0.1f};
    struct qk_gain_layer s = qk_gain_summary(k1, q1, 4);
    CHECK(s.channel == 3 && s.k_gain == 5 && s.k_mean_abs == 2 && s.ratio == 2.5 && s.q_gain == 0.1f,
          "gains {1,-1,1,5}: channel %d gain %g mean %g ratio %g q %g (want 3, 5, 2, 2.5, 0.1)", s.channel, s.k_gain,
          s.k_mean_abs, s.ratio, s.q_gain);
    // a negative outlier counts by magnitude: (1 + 6 + 1 + 2) / 4 = 2.5, 6 / 2.5 = 2.4
    const float k2[4] = {1, -6, 1, 2};
    s = qk_gain_summary(k2, q1, 4);
    CHECK(s.channel == 1 && s.k_gain == -6 && s.k_mean_abs == 2.5 && s.ratio == 2.4, "gains {1,-6,1,2}: channel %d ratio %g",
          s.channel, s.ratio);
    // ties go to the lowest channel; all-zero gains have ratio 0
    const float k3[4] = {3, 3, -3, 1}, k4[4] = {0, 0, 0, 0};
    s = qk_gain_summary(k3, q1, 4);
    CHECK(s.channel == 0 && s.ratio == 1.2, "tie: channel %d ratio %g (want 0, 1.2)", s.channel, s.ratio);
    s = qk_gain_summary(k4, q1, 4);
    CHECK(s.channel == 0 && s.ratio == 0, "zero gains: ratio %g", s.ratio);
}

// The k_norm gains of layer l straight from mdir/model.safetensors (stored w plus `offset`:
// 1 for Gemma's 1 + w), their largest |gain|'s channel and max / mean |gain|, computed here.
static int file_gain_ratio(const char *mdir, int l, float offset, int *channel, double *ratio) {
    char path[2048], name[128];
    snprintf(path, sizeof path, "%s/model.safetensors", mdir);
    snprintf(name, sizeof name, "model.layers.%d.self_attn.k_norm.weight", l);
    struct safetensors st;
    struct err e = {0};
    if (st_open(&st, path, &e)) return -1;
    const struct st_tensor *t = st_find(&st, name);
    float w[1024];
    int n = t && t->numel <= 1024 ? (int)t->numel : 0, rc = n ? st_to_f32(w, t, &e) : -1;
    st_close(&st);
    if (rc) return -1;
    double sum = 0, best = -1;
    for (int c = 0; c < n; c++) {
        double g = fabs((double)(offset + w[c]));
        sum += g;
        if (g > best) best = g, *channel = c;
    }
    *ratio = best / (sum / n);
    return 0;
}

static const cJSON *gain_layer(const cJSON *j, int l) {
    return cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "fig2_qk_gains"), "per_layer"), l);
}
static double gnum(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

// A planted layer's Figure 2 entry in diagnose.json: the planted channel, gain and q gain
// exactly, the ratio as file_gain_ratio recomputes it from the checkpoint. Returns that ratio.
struct plant {
    int layer, channel;
    float offset;          // file_gain_ratio's
    double gain, q_gain;   // the exact gains planted (bf16 values)
};
static double check_planted(const cJSON *j, const char *mdir, struct plant p) {
    const cJSON *o = gain_layer(j, p.layer);
    int ch = -1;
    double want = 0;
    CHECK(file_gain_ratio(mdir, p.layer, p.offset, &ch, &want) == 0 && ch == p.channel,
          "file: layer %d's largest gain at channel %d (planted %d)", p.layer, ch, p.channel);
    CHECK(gnum(o, "channel") == p.channel && gnum(o, "k_gain") == p.gain && gnum(o, "q_gain") == p.q_gain,
          "layer %d: channel %g, gain %g, q gain %g (want %d, %g, %.10g)", p.layer, gnum(o, "channel"), gnum(o, "k_gain"),
          gnum(o, "q_gain"), p.channel, p.gain, p.q_gain);
    CHECK_CLOSE(gnum(o, "ratio"), want, 0, 1e-12);
    return want;
}

// make-model MAKE_ARGS into tmp/NAME, then diagnose it (built-in prompts) into tmp/diag-NAME,
// output in tmp/diag-NAME.txt; the three paths back in mdir, out, log. The exit status.
static int make_diagnose(const char *name, const char *make_args, char mdir[1100], char out[1100], char log[1200]) {
    char cmd[8192];
    snprintf(mdir, 1100, "%s/%s", tmp, name);
    snprintf(out, 1100, "%s/diag-%s", tmp, name);
    snprintf(log, 1200, "%s/diag-%s.txt", tmp, name);
    snprintf(cmd, sizeof cmd,
             "%s make-model %s --force --out %s >/dev/null 2>&1 && %s --quiet diagnose --model %s --out %s > %s 2>&1", bin,
             make_args, mdir, bin, mdir, out, log);
    return run(cmd);
}

// A gemma3 make-model checkpoint with gain 24 planted at layer 1, channel 37 (stored w = 23):
// Figure 2 shows that layer's channel 37 with gain 24 exactly, q_norm gain 1 + bf16(-0.9) =
// 1 - 0.8984375 = 0.1015625, and max / mean |gain| as recomputed from the file - about
// 24 / ((63 + 24) / 64) = 17.7 by hand, the 63 other gains being 1 + 0.1 N(0, 1).
static void test_cli_gains_gemma3(void) {
    char mdir[1100], out[1100], log[1200], path[2048];
    CHECK(make_diagnose("g3-planted", "--arch gemma3 --layers 3 --dim 128 --heads 2 --kv-heads 1 --head-dim 64 --ffn 256 "
                        "--plant-outlier 1:37:24", mdir, out, log) == 0,
          "make-model gemma3 + diagnose (see %s)", log);
    snprintf(path, sizeof path, "%s/diagnose.json", out);
    cJSON *j = read_json(path);
    if (!j) { CHECK(0, "%s missing", path); return; }
    const cJSON *l0 = gain_layer(j, 0);
    double want = check_planted(j, mdir, (struct plant){1, 37, 1.0f, 24, 0.1015625});
    CHECK(fabs(want - 17.7) < 0.5, "ratio %g near the hand estimate 17.7", want);
    int ch = -1;
    double r0 = 0;
    CHECK(file_gain_ratio(mdir, 0, 1.0f, &ch, &r0) == 0 && gnum(l0, "channel") == ch, "layer 0: channel %g vs the file's %d",
          gnum(l0, "channel"), ch);
    CHECK_CLOSE(gnum(l0, "ratio"), r0, 0, 1e-12);
    CHECK(r0 < 2, "layer 0 (nothing planted): ratio %g < 2", r0);
    cJSON_Delete(j);
    char *txt = NULL;
    size_t n = 0;
    struct err e = {0};
    if (!file_read_all(log, &txt, &n, &e)) {
        CHECK(strstr(txt, "Figure 2 (stored q/k norm gains"), "Figure 2 printed");
        free(txt);
    }
    check_svg_file(out, "fig2_k_norm_gains.svg");
}

static void test_cli(void) {
    char cmd[16384], mdir[1100], out[1100], log[1200];
    CHECK(make_diagnose("q3-planted", "--arch qwen3 --layers 2 --dim 256 --heads 4 --kv-heads 2 --head-dim 128 --ffn 512 "
                        "--plant-outlier 0:51:34", mdir, out, log) == 0,
          "make-model + diagnose (see %s)", log);
    char path[2048];
    snprintf(path, sizeof path, "%s/diagnose.json", out);
    cJSON *j = read_json(path);
    CHECK(j != NULL, "diagnose.json parses");
    if (j) {
        const cJSON *t1 = cJSON_GetObjectItem(j, "table1"), *t8 = cJSON_GetObjectItem(j, "table8");
        const char *gate = cJSON_GetStringValue(cJSON_GetObjectItem(t1, "gate"));
        CHECK(gate && !strcmp(gate, "strong"), "planted outlier: gate %s", gate ? gate : "-");
        CHECK(cJSON_GetObjectItem(t1, "rho_K_layer")->valueint == 0, "largest rho_K at layer 0");
        const cJSON *l0 = cJSON_GetArrayItem(t8, 0), *l1 = cJSON_GetArrayItem(t8, 1);
        CHECK(cJSON_GetObjectItem(l0, "max_scale_channel")->valueint == 51, "layer-0 max scale at channel 51");
        CHECK(cJSON_GetObjectItem(l0, "rho_K")->valuedouble > cJSON_GetObjectItem(l1, "rho_K")->valuedouble,
              "layer 0 tops rho_K");
        const cJSON *jm = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "stability"), "jaccard");
        CHECK(cJSON_GetArraySize(jm) == 8 && cJSON_GetArraySize(cJSON_GetArrayItem(jm, 0)) == 8, "8 x 8 Jaccard");
        // Figure 2: qwen3 stores the gain itself; q_norm 0.1 is bf16(0.1) = 0.10009765625
        check_planted(j, mdir, (struct plant){0, 51, 0.0f, 34, 0.10009765625});
        cJSON_Delete(j);
    }
    char *txt = NULL;
    size_t n = 0;
    struct err e = {0};
    if (!file_read_all(log, &txt, &n, &e)) {
        CHECK(strstr(txt, "Table 1") && strstr(txt, "Table 8") && strstr(txt, "gate: strong"), "printed tables");
        free(txt);
    }
    check_svg_file(out, "fig3_layer0_heatmap.svg");
    check_svg_file(out, "fig4_layer_k_stats.svg");
    check_svg_file(out, "fig6_gate_plane.svg");

    // a checkpoint without a tokenizer (the golden qwen3-outlier) takes another one of 512 ids
    const char *golden = TEST_NEED("goldens/models/qwen3-outlier");
    if (golden) {
        snprintf(out, sizeof out, "%s/diag-golden", tmp);
        snprintf(cmd, sizeof cmd, "%s --quiet diagnose --model %s --tokenizer %s --out %s > %s 2>&1", bin, golden, mdir, out,
                 log);
        CHECK(run(cmd) == 0, "diagnose --tokenizer (see %s)", log);
        snprintf(path, sizeof path, "%s/diagnose.json", out);
        j = read_json(path);
        if (j) {
            const cJSON *t1 = cJSON_GetObjectItem(j, "table1");
            CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(t1, "gate")), "strong") &&
                      cJSON_GetObjectItem(t1, "rho_K_layer")->valueint == 0 &&
                      cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "table8"), 0), "max_scale_channel")->valueint == 51,
                  "golden qwen3-outlier: strong, layer 0, channel 51");
            cJSON_Delete(j);
        } else CHECK(0, "%s missing", path);
    }

    // statistics from a calibration source; stability still over the 8 built-in prompts
    const char *text = test_text(), *text_name = strstr(text, "brown") ? "brown" : "README";
    snprintf(out, sizeof out, "%s/diag-planted-calib", tmp);
    snprintf(cmd, sizeof cmd,
             "%s --quiet diagnose --model %s --gate-rule paper --calib %s --calib-samples 4 "
             "--calib-len 64 --out %s > %s 2>&1",
             bin, mdir, text, out, log);
    CHECK(run(cmd) == 0, "diagnose --calib (see %s)", log);
    snprintf(path, sizeof path, "%s/diagnose.json", out);
    j = read_json(path);
    if (j) {
        const cJSON *st = cJSON_GetObjectItem(j, "statistics");
        CHECK(cJSON_GetObjectItem(st, "samples")->valueint == 4 && cJSON_IsFalse(cJSON_GetObjectItem(st, "from_builtin_prompts")) &&
                  strstr(cJSON_GetStringValue(cJSON_GetObjectItem(st, "source")), text_name),
              "--calib: 4 %s samples", text_name);
        const cJSON *jm = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "stability"), "jaccard");
        CHECK(cJSON_GetArraySize(jm) == 8, "--calib: Jaccard still over the 8 prompts");
        CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "table1"), "gate")), "strong"),
              "--calib: still strong");
        cJSON_Delete(j);
    } else CHECK(0, "%s missing", path);
    const char *anatomy = TEST_NEED("datasets/mmlu/data/test/anatomy_test.csv");
    if (anatomy) {
        snprintf(cmd, sizeof cmd, "%s diagnose --model %s --calib %s --out %s/x > %s 2>&1", bin, mdir, anatomy, tmp, log);
        CHECK(run(cmd) == 2, "an evaluation split as --calib is refused (exit 2)");
    }

    // the imported stories260K (a real trained model): tables and plots
    const char *s260k = TEST_NEED("models/stories260K");
    if (!s260k) return;
    snprintf(mdir, sizeof mdir, "%s/s260k", tmp);
    snprintf(out, sizeof out, "%s/diag-s260k", tmp);
    snprintf(log, sizeof log, "%s/diag-s260k.txt", tmp);
    snprintf(cmd, sizeof cmd,
             "%s import-llama2c %s/stories260K.bin %s/tok512.bin "
             "--force --out %s >/dev/null 2>&1 && %s --quiet diagnose --model %s --out %s > %s 2>&1",
             bin, s260k, s260k, mdir, bin, mdir, out, log);
    CHECK(run(cmd) == 0, "import + diagnose stories260K (see %s)", log);
    snprintf(path, sizeof path, "%s/diagnose.json", out);
    j = read_json(path);
    CHECK(j && cJSON_GetArraySize(cJSON_GetObjectItem(j, "table8")) == 5, "stories260K: 5 layers in Table 8");
    CHECK(j && cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "fig2_qk_gains"), "qk_norm")),
          "stories260K: no q/k norm gains");
    cJSON_Delete(j);
    check_svg_file(out, "fig6_gate_plane.svg");
}

// A band of 7 of 128 K channels at layer 0 (the Qwen2.5-Coder-1.5B shape): the paper's rule
// bypasses it, the measured rule (the default) smooths it. diagnose.json and the printout say
// which rule decided and why, with the paper rule's decision beside it, and `tables` marks
// Table 1's Action as the measured rule's, not the Gate condition column's.
static void test_measured_reason(void) {
    char mdir[1100], out[1100], log[1200], path[2048], spec[512] = "--arch qwen3 --layers 2 --dim 256 --heads 4 "
        "--kv-heads 2 --head-dim 128 --ffn 512 --seed 5 --plant-outlier ";
    for (int c = 40; c < 47; c++) {
        size_t l = strlen(spec);
        snprintf(spec + l, sizeof spec - l, "%s0:%d:34", c > 40 ? "," : "", c);
    }
    CHECK(make_diagnose("q3-band", spec, mdir, out, log) == 0, "make-model + diagnose, band (see %s)", log);
    snprintf(path, sizeof path, "%s/diagnose.json", out);
    cJSON *j = read_json(path);
    const cJSON *t1 = cJSON_GetObjectItem(j, "table1");
    const char *rule = cJSON_GetStringValue(cJSON_GetObjectItem(t1, "rule")),
               *gate = cJSON_GetStringValue(cJSON_GetObjectItem(t1, "gate")),
               *pgate = cJSON_GetStringValue(cJSON_GetObjectItem(t1, "paper_gate")),
               *why = cJSON_GetStringValue(cJSON_GetObjectItem(t1, "reason")),
               *pwhy = cJSON_GetStringValue(cJSON_GetObjectItem(t1, "paper_reason"));
    CHECK(rule && !strcmp(rule, "measured") && gate && strcmp(gate, "bypass") && pgate && !strcmp(pgate, "bypass"),
          "band: rule %s, gate %s, paper_gate %s (want measured, smoothing, bypass)", rule ? rule : "-",
          gate ? gate : "-", pgate ? pgate : "-");
    CHECK(why && !strncmp(why, "measured rule: attention-output error ratio", 43) && strstr(why, " meets ratio <= 0.95"),
          "band: reason '%s'", why ? why : "-");
    CHECK(pwhy && !strncmp(pwhy, "rho_K ", 6) && strstr(pwhy, " < 6 "), "band: paper_reason '%s'", pwhy ? pwhy : "-");
    cJSON_Delete(j);
    char *txt = NULL;
    size_t n = 0;
    struct err e = {0};
    if (!file_read_all(log, &txt, &n, &e)) {
        CHECK(strstr(txt, "because measured rule: ") && strstr(txt, "\npaper rule: bypass, because rho_K "),
              "band: the printout gives both rules' reasons");
        free(txt);
    } else CHECK(0, "%s unreadable", log);
    char cmd[4096], tab[1200];
    snprintf(tab, sizeof tab, "%s/tables-band.md", tmp);
    snprintf(cmd, sizeof cmd, "%s tables %s > %s 2>&1", bin, out, tab);
    CHECK(run(cmd) == 0, "tables over the band's diagnose (see %s)", tab);
    if (!file_read_all(tab, &txt, &n, &e)) {
        CHECK(strstr(txt, "| rho_K < 6 | Strong (alpha=0.5, measured) |") || strstr(txt, "| rho_K < 6 | Mild (alpha=0.25, measured) |") ||
                  strstr(txt, "| rho_K < 6 | Strong (alpha=1, measured) |"),
              "Table 1: the paper's condition beside the measured rule's action");
        CHECK(strstr(txt, "the paper's rule gives q3-band Bypass (s=1).") != NULL, "Table 1's note: the paper rule's decision");
        free(txt);
    } else CHECK(0, "%s unreadable", tab);
}

int main(void) {
    const char *t = getenv("HIFA4_TMP");
    bin = getenv("HIFA4_BIN");
    snprintf(tmp, sizeof tmp, "%s/diagnose", t ? t : "build/tmp");
    struct err e = {0};
    mkdir_p(tmp, &e);
    if (!bin) bin = "./hifa4-eval";
    test_plot_xy();
    test_stability();
    test_golden();
    test_gain_summary();
    test_cli();
    test_cli_gains_gemma3();
    test_measured_reason();
    return test_summary("test_diagnose");
}
