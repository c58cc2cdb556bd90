// bench_calib_samples.c: how Smooth-QK's gate statistics and scales move with the
// number of calibration samples - the measurement behind run's default sample count
// (runplan/run_calib.h, docs/design/calibration.md). One calibration over a pool of M samples keeps every
// per-sample statistic; for each size N the pool is cut (after a seeded shuffle) into M/N
// disjoint subsets, each aggregated with calib_compute as `calibrate` would, and the spread
// across subsets is reported: coefficient of variation (std/mean) of the model's rho_K and
// T_KQ, of every layer's rho_K and T_KQ (median and max over layers), of the aggregated K
// channel maxima (median and p95 over layer x head x channel), of the scales with alpha forced
// to 0.5 (what a Strong gate would apply; the gate itself gives 1 on Bypass models), and how
// often the gate decision differs from the full pool's. Also the per-sample CV of the K
// channel maxima (spread over single samples; the paper's "inter-sample CV").
//   bench_calib_samples [--model DIR] [--calib SRC] [--pool M] [--len L] [--sizes 4,8,16] [--threads N]
// Defaults (what `make bench` runs): the synthetic demo's planted-outlier Qwen3 made once in
// $HIFA4_TMP, the Brown corpus of $HIFA4_TEST_DATA (else README.md), a pool of 64 x 256 tokens,
// sizes 4,8,16,32. docs/design/calibration.md has the runs on SmolLM2 and this model at 128 x 512.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib/calib.h"
#include "calib/calib_run.h"
#include "import/make_model.h"

static double cv(const double *v, int n) {
    if (n < 2) return NAN;
    double m = 0, s = 0;
    for (int i = 0; i < n; i++) m += v[i];
    m /= n;
    for (int i = 0; i < n; i++) s += (v[i] - m) * (v[i] - m);
    return m != 0 ? sqrt(s / (n - 1)) / fabs(m) : NAN;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(double *v, int n, double p) {
    int k = 0;
    for (int i = 0; i < n; i++) if (isfinite(v[i])) v[k++] = v[i];
    if (!k) return NAN;
    qsort(v, (size_t)k, sizeof *v, cmp_d);
    int i = (int)ceil(p * k) - 1;
    return v[i < 0 ? 0 : i];
}

// sub: the samples idx[0..n) of full, as a statistics store of its own
static int subset(struct calib_stats *sub, const struct calib_stats *f, const int *idx, int n, struct err *e) {
    int rc = calib_stats_init(sub, (struct calib_shape){f->n_layers, f->H, f->Hkv, f->d}, n, 2, e);
    if (rc) return rc;
    size_t per = (size_t)f->n_layers * f->Hkv * f->d, pl = (size_t)f->n_layers;
    for (int i = 0; i < n; i++) {
        size_t s = (size_t)idx[i];
        memcpy(sub->kmax + i * per, f->kmax + s * per, per * sizeof(float));
        memcpy(sub->qmax + i * per, f->qmax + s * per, per * sizeof(float));
        memcpy(sub->kp99 + i * pl, f->kp99 + s * pl, pl * sizeof(float));
        memcpy(sub->qp99 + i * pl, f->qp99 + s * pl, pl * sizeof(float));
        memcpy(sub->kp999 + i * pl, f->kp999 + s * pl, pl * sizeof(float));
        memcpy(sub->kstd + i * pl, f->kstd + s * pl, pl * sizeof(float));
        memcpy(sub->seen + i * pl, f->seen + s * pl, pl);
    }
    sub->n_samples = n;
    return 0;
}

struct agg { double *rho, *t, *lrho, *lt, *kagg, *sc; int *branch; };

// One size N: n_sub subsets of the shuffled pool, their statistics into a (n_sub rows).
static int one_size(const struct calib_stats *f, const int *perm, int N, int n_sub, struct agg *a, struct err *e) {
    struct calib_gate_opts g, g5;
    calib_gate_opts_default(&g);
    g5 = g;
    g5.alpha_forced = 0.5;
    size_t per = (size_t)f->n_layers * f->Hkv * f->d;
    for (int s = 0; s < n_sub; s++) {
        struct calib_stats sub;
        struct calib_result r = {0}, r5 = {0};
        int rc = subset(&sub, f, perm + (size_t)s * N, N, e);
        if (!rc) rc = calib_compute(&r, &sub, CALIB_AGG_RMS, &g, e);
        if (!rc) rc = calib_compute(&r5, &sub, CALIB_AGG_RMS, &g5, e);
        if (!rc) {
            a->rho[s] = r.rho_k, a->t[s] = r.t_kq, a->branch[s] = r.branch;
            for (int l = 0; l < f->n_layers; l++)
                a->lrho[(size_t)l * n_sub + s] = r.layer[l].rho_k, a->lt[(size_t)l * n_sub + s] = r.layer[l].t_kq;
            for (size_t i = 0; i < per; i++) a->kagg[i * n_sub + s] = r.kagg[i], a->sc[i * n_sub + s] = r5.scales[i];
        }
        calib_result_free(&r);
        calib_result_free(&r5);
        calib_stats_free(&sub);
        if (rc) return rc;
    }
    return 0;
}

static void report(const struct calib_stats *f, int N, int n_sub, struct agg *a, int full_branch) {
    size_t per = (size_t)f->n_layers * f->Hkv * f->d;
    double *tmp = malloc(sizeof(double) * (per > (size_t)f->n_layers ? per : (size_t)f->n_layers));
    int differ = 0;
    for (int s = 0; s < n_sub; s++) differ += a->branch[s] != full_branch;
    double m_rho = 0, m_t = 0;
    for (int s = 0; s < n_sub; s++) m_rho += a->rho[s] / n_sub, m_t += a->t[s] / n_sub;
    printf("| %d | %d | %.3f | %.1f%% | %.3f | %.1f%% |", N, n_sub, m_rho, 100 * cv(a->rho, n_sub), m_t,
           100 * cv(a->t, n_sub));
    for (int l = 0; l < f->n_layers; l++) tmp[l] = cv(a->lrho + (size_t)l * n_sub, n_sub);
    double lr_med = quantile(tmp, f->n_layers, 0.5), lr_max = quantile(tmp, f->n_layers, 1.0);
    for (int l = 0; l < f->n_layers; l++) tmp[l] = cv(a->lt + (size_t)l * n_sub, n_sub);
    double lt_med = quantile(tmp, f->n_layers, 0.5), lt_max = quantile(tmp, f->n_layers, 1.0);
    printf(" %.1f%% / %.1f%% | %.1f%% / %.1f%% |", 100 * lr_med, 100 * lr_max, 100 * lt_med, 100 * lt_max);
    for (size_t i = 0; i < per; i++) tmp[i] = cv(a->kagg + i * n_sub, n_sub);
    double k_med = quantile(tmp, (int)per, 0.5);
    for (size_t i = 0; i < per; i++) tmp[i] = cv(a->kagg + i * n_sub, n_sub);
    double k_95 = quantile(tmp, (int)per, 0.95);
    for (size_t i = 0; i < per; i++) tmp[i] = cv(a->sc + i * n_sub, n_sub);
    double s_med = quantile(tmp, (int)per, 0.5);
    for (size_t i = 0; i < per; i++) tmp[i] = cv(a->sc + i * n_sub, n_sub);
    double s_95 = quantile(tmp, (int)per, 0.95);
    printf(" %.1f%% / %.1f%% | %.1f%% / %.1f%% | %d/%d |\n", 100 * k_med, 100 * k_95, 100 * s_med, 100 * s_95, differ,
           n_sub);
    free(tmp);
}

// CV over single samples of each K channel maximum (median, p95 over layer x head x channel)
static void per_sample_cv(const struct calib_stats *f) {
    size_t per = (size_t)f->n_layers * f->Hkv * f->d;
    int M = f->n_samples;
    double *v = malloc(sizeof(double) * (size_t)M), *c = malloc(sizeof(double) * per);
    for (size_t i = 0; i < per; i++) {
        for (int s = 0; s < M; s++) v[s] = f->kmax[(size_t)s * per + i];
        c[i] = cv(v, M);
    }
    double med = quantile(c, (int)per, 0.5);
    for (size_t i = 0; i < per; i++) {
        for (int s = 0; s < M; s++) v[s] = f->kmax[(size_t)s * per + i];
        c[i] = cv(v, M);
    }
    printf("per-sample CV of the K channel maxima over %d samples: median %.1f%%, p95 %.1f%%\n", M, 100 * med,
           100 * quantile(c, (int)per, 0.95));
    free(v);
    free(c);
}

// the synthetic demo's shape: Qwen3, 2 layers, dim 128, head_dim 128, K outlier at layer 0 channel 51
static int outlier_model(char *dir, size_t n, struct err *e) {
    const char *tmp = getenv("HIFA4_TMP") ? getenv("HIFA4_TMP") : "build/tmp";
    snprintf(dir, n, "%s/bench-calib-samples-outlier", tmp);
    char cfg[700];
    snprintf(cfg, sizeof cfg, "%s/model.safetensors", dir);
    if (file_exists(cfg)) return 0;
    struct make_model_opts mo;
    make_model_opts_default(&mo);
    mo.head_dim = 128, mo.seed = 7, mo.n_outliers = 1;
    mo.outliers[0].layer = 0, mo.outliers[0].channel = 51, mo.outliers[0].gamma = 34;
    return make_model(&mo, dir, e);
}

static int parse_sizes(const char *s, int *v, int max) {
    int n = 0;
    while (*s && n < max) {
        v[n++] = atoi(s);
        s += strcspn(s, ",");
        if (*s) s++;
    }
    return n;
}

int main(int argc, char **argv) {
    const char *model = NULL, *calib = NULL, *sizes_s = "4,8,16,32";
    int M = 64, len = 256, threads = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--model")) model = argv[i + 1];
        else if (!strcmp(argv[i], "--calib")) calib = argv[i + 1];
        else if (!strcmp(argv[i], "--pool")) M = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--len")) len = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--sizes")) sizes_s = argv[i + 1];
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
    }
    if (M < 2 || len < 2) {
        fprintf(stderr, "usage: bench_calib_samples [--model DIR] [--calib SRC] [--pool M] [--len L] [--sizes a,b] [--threads N]\n");
        return 2;
    }
    struct err e = {0};
    char mdir[600], brown[1200];
    if (!model && outlier_model(mdir, sizeof mdir, &e)) { fprintf(stderr, "%s\n", e.msg); return 1; }
    if (!model) model = mdir;
    snprintf(brown, sizeof brown, "%s/datasets/brown/brown.txt.zst", getenv("HIFA4_TEST_DATA") ? getenv("HIFA4_TEST_DATA") : "../shared");
    if (!calib) calib = file_exists(brown) ? brown : "README.md";
    struct calib_run_opts co;
    calib_run_opts_default(&co);
    co.samples = M;
    co.len = len;
    co.threads = threads;
    struct calib_run cr;
    double t0 = time_now();
    if (calib_run_source(&cr, model, calib, &co, &e)) { fprintf(stderr, "%s\n", e.msg); return 1; }
    const struct calib_stats *f = &cr.stats;
    M = f->n_samples;
    printf("model %s, source %s: pool of %d samples x %d tokens in %.0f s; full pool: rho_K %.3f, T_KQ %.3f -> %s\n",
           model, cr.source_desc, M, len, time_now() - t0, cr.result.rho_k, cr.result.t_kq,
           calib_branch_name(cr.result.branch));
    per_sample_cv(f);
    int perm[4096], sizes[16], n_sizes = parse_sizes(sizes_s, sizes, 16);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < M && i < 4096; i++) perm[i] = i;
    for (int i = M - 1; i > 0; i--) { // seeded Fisher-Yates (xorshift64)
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        int j = (int)(x % (uint64_t)(i + 1)), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    printf("\n| N | subsets | rho_K | CV | T_KQ | CV | layer rho_K CV med / max | layer T_KQ CV med / max | "
           "K channel max CV med / p95 | scales (alpha 0.5) CV med / p95 | gate differs |\n"
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    size_t per = (size_t)f->n_layers * f->Hkv * f->d;
    for (int k = 0; k < n_sizes; k++) {
        int N = sizes[k], n_sub = M / N;
        if (N < 1 || n_sub < 2) continue;
        struct agg a = {calloc(n_sub, 8), calloc(n_sub, 8), calloc((size_t)f->n_layers * n_sub, 8),
                        calloc((size_t)f->n_layers * n_sub, 8), calloc(per * n_sub, 8), calloc(per * n_sub, 8),
                        calloc(n_sub, sizeof(int))};
        if (one_size(f, perm, N, n_sub, &a, &e)) { fprintf(stderr, "%s\n", e.msg); return 1; }
        report(f, N, n_sub, &a, cr.result.branch);
        free(a.rho); free(a.t); free(a.lrho); free(a.lt); free(a.kagg); free(a.sc); free(a.branch);
    }
    calib_run_free(&cr);
    return 0;
}
