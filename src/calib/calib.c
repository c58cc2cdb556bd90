// calib.c: Smooth-QK statistics, aggregation, scales and gate (spec/calibration.md; see calib.h).
#include "calib/calib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "base/pool.h"
#include "calib/gate_err.h"
#include "io/safetensors.h"

void calib_gate_opts_default(struct calib_gate_opts *g) {
    g->rho_min = 6;
    g->t_strong = 3;
    g->t_mild = 2;
    g->alpha_strong = 0.5;
    g->alpha_mild = 0.25;
    g->alpha_forced = -1;
    g->mode = CALIB_GATE_MODEL;
    g->rule = CALIB_RULE_PAPER;
    gate_opts_default(&g->meas);
}

int calib_gate_check(const struct calib_gate_opts *g, struct err *e) {
    if (!(g->rho_min > 0)) return err_set(e, ERR_USAGE, "--rho-min %g: expected a positive number", g->rho_min);
    if (!(g->t_mild > 0) || !(g->t_mild <= g->t_strong))
        return err_set(e, ERR_USAGE, "--t-mild %g above --t-strong %g: the Mild band t-mild <= T_KQ <= t-strong would be "
                       "empty; expected 0 < t-mild <= t-strong", g->t_mild, g->t_strong);
    return 0;
}

const char *calib_branch_name(int b) {
    return b == CALIB_STRONG ? "strong" : b == CALIB_MILD ? "mild" : "bypass";
}

static const char *agg_names[] = {"rms", "mean", "p99", "max"};
const char *calib_agg_name(int agg) { return (agg >= 0 && agg < 4) ? agg_names[agg] : "?"; }
int calib_agg_parse(const char *s, int *agg) {
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, agg_names[i])) { *agg = i; return 0; }
    return -1;
}

// ---- statistics store ----
void calib_stats_free(struct calib_stats *s) {
    if (!s) return;
    free(s->kmax);
    free(s->qmax);
    free(s->kp99);
    free(s->qp99);
    free(s->kp999);
    free(s->kstd);
    free(s->scratch);
    free(s->seen);
    free(s->hist);
    memset(s, 0, sizeof *s);
}

int calib_stats_init(struct calib_stats *s, struct calib_shape shape, int max_samples, int max_T, struct err *e) {
    memset(s, 0, sizeof *s);
    const int n_layers = shape.n_layers, H = shape.H, Hkv = shape.Hkv, d = shape.d;
    if (n_layers <= 0 || H <= 0 || Hkv <= 0 || H % Hkv || d <= 0 || max_samples <= 0 || max_T <= 0)
        return err_set(e, ERR_RANGE, "calibration: bad sizes layers=%d H=%d Hkv=%d d=%d samples=%d T=%d",
                       n_layers, H, Hkv, d, max_samples, max_T);
    s->n_layers = n_layers; s->H = H; s->Hkv = Hkv; s->d = d; s->max_samples = max_samples; s->max_T = max_T;
    size_t per = (size_t)max_samples * n_layers, big, scr;
    if (mul_size(per, (size_t)Hkv * d, &big) || mul_size((size_t)max_T * H, (size_t)d, &scr))
        return err_set(e, ERR_RANGE, "calibration: statistics too large");
    s->kmax = calloc(big, sizeof(float));
    s->qmax = calloc(big, sizeof(float));
    s->kp99 = calloc(per, sizeof(float));
    s->qp99 = calloc(per, sizeof(float));
    s->kp999 = calloc(per, sizeof(float));
    s->kstd = calloc(per, sizeof(float));
    s->scratch = malloc(scr * sizeof(float));
    s->seen = calloc(per, 1);
    if (!s->kmax || !s->qmax || !s->kp99 || !s->qp99 || !s->kp999 || !s->kstd || !s->scratch || !s->seen) {
        calib_stats_free(s);
        return err_set(e, ERR_NOMEM, "calibration: cannot allocate statistics for %d samples", max_samples);
    }
    return 0;
}

// k-th smallest (0-based) by quickselect with a three-way partition (duplicates are common:
// bf16 values); v is permuted. Median-of-three pivot keeps sorted input linear.
static float select_kth(float *v, size_t n, size_t k) {
    size_t lo = 0, hi = n; // search in [lo, hi)
    while (hi - lo > 1) {
        float a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi - 1];
        float piv = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        size_t lt = lo, i = lo, gt = hi;
        while (i < gt) {
            float x = v[i];
            if (x < piv) { v[i++] = v[lt]; v[lt++] = x; }
            else if (x > piv) { v[i] = v[--gt]; v[gt] = x; }
            else i++;
        }
        if (k < lt) hi = lt;
        else if (k >= gt) lo = gt;
        else return piv;
    }
    return v[lo];
}

float calib_percentile(float *v, size_t n, double p) {
    if (n == 0) return 0;
    double r = ceil(p * (double)n);
    size_t k = r < 1 ? 0 : (size_t)r - 1;
    if (k >= n) k = n - 1;
    return select_kth(v, n, k);
}

int calib_observe(struct calib_stats *s, int sample, int layer, const float *q, const float *k, int T,
                  struct err *e) {
    if (sample < 0 || sample >= s->max_samples || layer < 0 || layer >= s->n_layers || T <= 0 || T > s->max_T)
        return err_set(e, ERR_RANGE, "calibration: sample %d layer %d T %d outside the sizes given at init",
                       sample, layer, T);
    const int H = s->H, Hkv = s->Hkv, d = s->d, g = H / Hkv;
    size_t li = (size_t)sample * s->n_layers + layer;
    float *km = s->kmax + li * Hkv * d, *qm = s->qmax + li * Hkv * d;
    for (int i = 0; i < Hkv * d; i++) km[i] = qm[i] = 0;
    for (int t = 0; t < T; t++) {
        const float *kt = k + (size_t)t * Hkv * d, *qt = q + (size_t)t * H * d;
        for (int i = 0; i < Hkv * d; i++) km[i] = fmaxf(km[i], fabsf(kt[i]));
        for (int h = 0; h < H; h++) {
            float *dst = qm + (size_t)(h / g) * d;
            for (int c = 0; c < d; c++) dst[c] = fmaxf(dst[c], fabsf(qt[(size_t)h * d + c]));
        }
    }
    // layer-wide percentiles of |K| and |Q| elements, and K std (binary64)
    size_t nk = (size_t)T * Hkv * d, nq = (size_t)T * H * d;
    double sum = 0, sum2 = 0;
    for (size_t i = 0; i < nk; i++) {
        s->scratch[i] = fabsf(k[i]);
        sum += k[i];
        sum2 += (double)k[i] * k[i];
    }
    double mean = sum / (double)nk, var = sum2 / (double)nk - mean * mean;
    s->kstd[li] = (float)sqrt(var > 0 ? var : 0);
    s->kp99[li] = calib_percentile(s->scratch, nk, 0.99);
    s->kp999[li] = calib_percentile(s->scratch, nk, 0.999);
    for (size_t i = 0; i < nq; i++) s->scratch[i] = fabsf(q[i]);
    s->qp99[li] = calib_percentile(s->scratch, nq, 0.99);
    s->seen[li] = 1;
    if (sample + 1 > s->n_samples) s->n_samples = sample + 1;
    return 0;
}

// ---- the same statistics for a batch of sequences, on the pool (calib_observe_seqs) ----
// dst[i] = fmaxf(dst[i], |x[i]|) for i < n. The comparison is fmaxf exactly here: dst starts at
// +0 and only ever takes a non-NaN |x| (so it is never NaN), a NaN |x| loses as in fmaxf, and
// |x| has no -0. Unlike the libm call it vectorizes.
static void absmax_row(float *restrict dst, const float *restrict x, int n) {
    for (int i = 0; i < n; i++) {
        float a = fabsf(x[i]);
        dst[i] = a > dst[i] ? a : dst[i];
    }
}

// Counts |x[0..n)| by their upper 16 bits (the order of the bins is the order of the values:
// non-negative binary32 compare as their bit patterns). *top = highest bin used. Returns 0 when
// every |x| is a non-NaN bf16 value (low 16 bits zero), i.e. a bin holds one value only.
static int hist_add(uint32_t *restrict hist, const float *restrict x, size_t n, uint32_t *top) {
    uint32_t low = 0, hi = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u = f32_bits(x[i]) & 0x7fffffffu;
        low |= u & 0xffffu;
        hi = u > hi ? u : hi;
        hist[u >> 16]++;
    }
    *top = hi >> 16;
    return low || hi > 0x7f800000u ? -1 : 0;
}

// calib_percentile's element (sorted[k], k = ceil(p*n) - 1 clamped to [0, n)) from the counts
// of bins 0..top: the highest bin b whose suffix count (bins >= b) reaches n - k.
static float hist_percentile(const uint32_t *hist, uint32_t top, size_t n, double p) {
    double r = ceil(p * (double)n);
    size_t k = r < 1 ? 0 : (size_t)r - 1;
    if (k >= n) k = n - 1;
    size_t need = n - k, above = 0;
    for (uint32_t b = top + 1; b-- > 0;) {
        above += hist[b];
        if (above >= need) return bits_f32(b << 16);
    }
    return 0; // not reached: the bins hold all n values
}

// calib_observe's statistics of one (sample, layer) at li with histogram percentiles; hist is
// all zero on entry and on return. Returns -1 when the histogram cannot stand for the values
// (the caller then runs calib_observe); kmax/qmax are written either way.
static int observe_hist(struct calib_stats *s, size_t li, const float *q, const float *k, int T, uint32_t *hist) {
    const int H = s->H, Hkv = s->Hkv, d = s->d, g = H / Hkv;
    float *km = s->kmax + li * Hkv * d, *qm = s->qmax + li * Hkv * d;
    for (int i = 0; i < Hkv * d; i++) km[i] = qm[i] = 0;
    for (int t = 0; t < T; t++) {
        const float *kt = k + (size_t)t * Hkv * d, *qt = q + (size_t)t * H * d;
        absmax_row(km, kt, Hkv * d);
        for (int h = 0; h < H; h++) absmax_row(qm + (size_t)(h / g) * d, qt + (size_t)h * d, d);
    }
    size_t nk = (size_t)T * Hkv * d, nq = (size_t)T * H * d;
    uint32_t top;
    int bad = hist_add(hist, k, nk, &top);
    float kp99 = hist_percentile(hist, top, nk, 0.99), kp999 = hist_percentile(hist, top, nk, 0.999);
    memset(hist, 0, ((size_t)top + 1) * sizeof *hist);
    if (bad) return -1;
    // K std: calib_observe's binary64 sums, the same expressions in the same order
    double sum = 0, sum2 = 0;
    for (size_t i = 0; i < nk; i++) {
        sum += k[i];
        sum2 += (double)k[i] * k[i];
    }
    bad = hist_add(hist, q, nq, &top);
    float qp99 = hist_percentile(hist, top, nq, 0.99);
    memset(hist, 0, ((size_t)top + 1) * sizeof *hist);
    if (bad) return -1;
    double mean = sum / (double)nk, var = sum2 / (double)nk - mean * mean;
    s->kstd[li] = (float)sqrt(var > 0 ? var : 0);
    s->kp99[li] = kp99;
    s->kp999[li] = kp999;
    s->qp99[li] = qp99;
    return 0;
}

struct seqs_job {
    struct calib_stats *s;
    int first, layer;
    const float *const *q, *const *k;
    const int *T;
};

// Task i: sequence i (its own statistics rows; the slot's histogram). seen stays 0 on a
// fallback.
static void seqs_task(void *ctx, int i, int slot) {
    struct seqs_job *j = ctx;
    size_t li = (size_t)(j->first + i) * j->s->n_layers + j->layer;
    uint32_t *hist = j->s->hist + (size_t)slot * CALIB_HIST_BINS;
    if (!observe_hist(j->s, li, j->q[i], j->k[i], j->T[i], hist)) j->s->seen[li] = 1;
}

int calib_observe_seqs(struct calib_stats *s, int first_sample, int layer, struct calib_seqs seqs, int max_threads,
                       struct err *e) {
    const int n_seq = seqs.n_seq, *T = seqs.T;
    const float *const *q = seqs.q, *const *k = seqs.k;
    for (int i = 0; i < n_seq; i++)
        if (first_sample < 0 || first_sample + i >= s->max_samples || layer < 0 || layer >= s->n_layers ||
            T[i] <= 0 || T[i] > s->max_T)
            return err_set(e, ERR_RANGE, "calibration: sample %d layer %d T %d outside the sizes given at init",
                           first_sample + i, layer, T[i]);
    if (n_seq <= 0) return 0;
    int slots = pool_slots();
    if (slots > s->hist_slots) {
        uint32_t *h = calloc((size_t)slots * CALIB_HIST_BINS, sizeof *h);
        if (!h) return err_set(e, ERR_NOMEM, "calibration: out of memory for %d histograms", slots);
        free(s->hist);
        s->hist = h;
        s->hist_slots = slots;
    }
    for (int i = 0; i < n_seq; i++) s->seen[(size_t)(first_sample + i) * s->n_layers + layer] = 0;
    struct seqs_job j = {s, first_sample, layer, q, k, T};
    pool_for(n_seq, seqs_task, &j, max_threads);
    for (int i = 0; i < n_seq; i++) {
        if (s->seen[(size_t)(first_sample + i) * s->n_layers + layer]) continue;
        s->n_fallback++;
        int rc = calib_observe(s, first_sample + i, layer, q[i], k[i], T[i], e);
        if (rc) return rc;
    }
    if (first_sample + n_seq > s->n_samples) s->n_samples = first_sample + n_seq;
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double calib_aggregate(const float *x, int n, ptrdiff_t stride, int agg, double *scratch) {
    if (n <= 0) return 0;
    double acc = 0;
    switch (agg) {
    case CALIB_AGG_RMS:
        for (int i = 0; i < n; i++) acc += (double)x[i * stride] * x[i * stride];
        return sqrt(acc / n);
    case CALIB_AGG_MEAN:
        for (int i = 0; i < n; i++) acc += x[i * stride];
        return acc / n;
    case CALIB_AGG_MAX:
        acc = x[0];
        for (int i = 1; i < n; i++) acc = fmax(acc, x[i * stride]);
        return acc;
    default: { // p99 over samples, nearest rank
        for (int i = 0; i < n; i++) scratch[i] = x[i * stride];
        qsort(scratch, (size_t)n, sizeof *scratch, cmp_double);
        int k = (int)ceil(0.99 * n) - 1;
        return scratch[k < 0 ? 0 : k];
    }
    }
}

void calib_result_free(struct calib_result *r) {
    if (!r) return;
    free(r->scales);
    free(r->kagg);
    free(r->qagg);
    free(r->layer);
    gate_result_free(&r->gate);
    memset(r, 0, sizeof *r);
}

// Scales of layer l (spec section 4) into out[Hkv * d]; all 1 when bypass.
static void layer_scales(const struct calib_result *r, int l, double alpha, int bypass, float *out) {
    for (int i = 0; i < r->Hkv * r->d; i++) {
        size_t o = (size_t)l * r->Hkv * r->d + i;
        double ka = r->kagg[o], qa = r->qagg[o], sc = 1;
        if (!bypass && ka > 0 && qa > 0 && isfinite(ka) && isfinite(qa)) {
            sc = pow(ka, alpha) / pow(qa, 1 - alpha);
            if (!isfinite(sc) || sc <= 0) sc = 1;
        }
        out[i] = (float)sc;
    }
}

static int decide(double rho, double t, const struct calib_gate_opts *g) {
    if (rho >= g->rho_min && t > g->t_strong) return CALIB_STRONG;
    if (rho >= g->rho_min && t >= g->t_mild && t <= g->t_strong) return CALIB_MILD;
    return CALIB_BYPASS;
}

int calib_compute(struct calib_result *r, const struct calib_stats *s, int agg, const struct calib_gate_opts *g,
                  struct err *e) {
    memset(r, 0, sizeof *r);
    const int L = s->n_layers, Hkv = s->Hkv, d = s->d, n = s->n_samples;
    if (n <= 0) return err_set(e, ERR_RANGE, "calibration: no samples observed");
    for (int smp = 0; smp < n; smp++)
        for (int l = 0; l < L; l++)
            if (!s->seen[(size_t)smp * L + l])
                return err_set(e, ERR_INTERNAL, "calibration: sample %d layer %d never observed", smp, l);
    r->n_layers = L; r->Hkv = Hkv; r->d = d; r->n_samples = n; r->agg = agg;
    size_t m = (size_t)L * Hkv * d;
    r->scales = malloc(m * sizeof(float));
    r->kagg = malloc(m * sizeof(double));
    r->qagg = malloc(m * sizeof(double));
    r->layer = calloc((size_t)L, sizeof *r->layer);
    double *scr = malloc((size_t)n * sizeof(double));
    if (!r->scales || !r->kagg || !r->qagg || !r->layer || !scr) {
        free(scr);
        calib_result_free(r);
        return err_set(e, ERR_NOMEM, "calibration: out of memory");
    }
    const ptrdiff_t st_big = (ptrdiff_t)L * Hkv * d, st_small = L;
    r->rho_k = -INFINITY; r->t_kq = -INFINITY;
    for (int l = 0; l < L; l++) {
        struct calib_layer_stats *ls = &r->layer[l];
        ls->maxabs_k = ls->maxabs_q = 0;
        for (int i = 0; i < Hkv * d; i++) {
            size_t o = (size_t)l * Hkv * d + i;
            r->kagg[o] = calib_aggregate(s->kmax + o, n, st_big, agg, scr);
            r->qagg[o] = calib_aggregate(s->qmax + o, n, st_big, agg, scr);
            ls->maxabs_k = fmax(ls->maxabs_k, r->kagg[o]);
            ls->maxabs_q = fmax(ls->maxabs_q, r->qagg[o]);
        }
        ls->kp99 = calib_aggregate(s->kp99 + l, n, st_small, agg, scr);
        ls->qp99 = calib_aggregate(s->qp99 + l, n, st_small, agg, scr);
        ls->kp999 = calib_aggregate(s->kp999 + l, n, st_small, agg, scr);
        ls->kstd = calib_aggregate(s->kstd + l, n, st_small, agg, scr);
        ls->rho_k = ls->kp99 > 0 ? ls->maxabs_k / ls->kp99 : 0;
        ls->t_kq = ls->maxabs_q > 0 ? ls->maxabs_k / ls->maxabs_q : 0;
        ls->branch = decide(ls->rho_k, ls->t_kq, g);
        if (ls->rho_k > r->rho_k) { r->rho_k = ls->rho_k; r->rho_layer = l; }
        if (ls->t_kq > r->t_kq) { r->t_kq = ls->t_kq; r->t_layer = l; }
    }
    free(scr);
    r->branch = r->paper_branch = decide(r->rho_k, r->t_kq, g);
    r->rule = CALIB_RULE_PAPER;
    double alpha_of[3] = {0, g->alpha_mild, g->alpha_strong};
    r->alpha = g->alpha_forced >= 0 ? g->alpha_forced : alpha_of[r->branch];
    for (int l = 0; l < L; l++) {
        struct calib_layer_stats *ls = &r->layer[l];
        int br = g->mode == CALIB_GATE_LAYER ? ls->branch : r->branch;
        int bypass = g->alpha_forced < 0 && br == CALIB_BYPASS;
        ls->alpha = g->alpha_forced >= 0 ? g->alpha_forced : alpha_of[br];
        layer_scales(r, l, ls->alpha, bypass, r->scales + (size_t)l * Hkv * d);
    }
    return 0;
}

void calib_scales_alpha(const struct calib_result *r, int l, double alpha, float *out) {
    layer_scales(r, l, alpha, 0, out);
}

int calib_branch_of_alpha(double alpha) {
    return alpha <= 0 ? CALIB_BYPASS : alpha < 0.5 ? CALIB_MILD : CALIB_STRONG;
}

void calib_apply_measured(struct calib_result *r, const struct calib_gate_opts *g) {
    if (!r->gate.layer || g->alpha_forced >= 0) return;
    r->rule = CALIB_RULE_MEASURED;
    r->alpha = r->gate.alpha_model;
    r->branch = calib_branch_of_alpha(r->alpha);
    const size_t hd = (size_t)r->Hkv * r->d;
    for (int l = 0; l < r->n_layers; l++) {
        struct calib_layer_stats *ls = &r->layer[l];
        ls->alpha = g->mode == CALIB_GATE_LAYER ? r->gate.layer[l].alpha : r->alpha;
        layer_scales(r, l, ls->alpha, ls->alpha <= 0, r->scales + (size_t)l * hd);
    }
}

// ---- scales file ----
static cJSON *numbers(const double *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

// The measured rule's statistics (docs/results/gate.md): candidates, per-layer and model ratios.
static cJSON *measured_json(const struct gate_result *g) {
    cJSON *root = cJSON_CreateObject(), *pl = cJSON_AddArrayToObject(root, "per_layer");
    cJSON_AddItemToObject(root, "alphas", numbers(g->alpha, g->n_cand));
    cJSON_AddNumberToObject(root, "samples", g->n_samples);
    cJSON_AddStringToObject(root, "qmean", gate_qmean_name(g->qmean));
    cJSON_AddNumberToObject(root, "max_ratio", g->max_ratio);
    for (int l = 0; l < g->n_layers; l++) {
        const struct gate_layer *gl = &g->layer[l];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "rel_err", numbers(gl->rel, g->n_cand));
        cJSON_AddItemToObject(o, "ratio", numbers(gl->ratio, g->n_cand));
        cJSON_AddNumberToObject(o, "best_alpha", g->alpha[gl->best]);
        cJSON_AddNumberToObject(o, "lo", gl->lo);
        cJSON_AddNumberToObject(o, "hi", gl->hi);
        cJSON_AddNumberToObject(o, "alpha", gl->alpha);
        cJSON_AddItemToArray(pl, o);
    }
    cJSON_AddItemToObject(root, "rel_err", numbers(g->rel, g->n_cand));
    cJSON_AddItemToObject(root, "ratio", numbers(g->ratio, g->n_cand));
    cJSON_AddNumberToObject(root, "best_alpha", g->alpha[g->best]);
    cJSON_AddNumberToObject(root, "lo", g->lo);
    cJSON_AddNumberToObject(root, "hi", g->hi);
    cJSON_AddStringToObject(root, "decision", g->smooth ? "smooth" : "bypass");
    cJSON_AddNumberToObject(root, "alpha", g->alpha_model);
    cJSON_AddNumberToObject(root, "layers_smooth", g->n_layers_smooth);
    return root;
}

static cJSON *stats_json(const struct calib_result *r) {
    cJSON *root = cJSON_CreateObject(), *pl = cJSON_AddArrayToObject(root, "per_layer");
    for (int l = 0; l < r->n_layers; l++) {
        const struct calib_layer_stats *ls = &r->layer[l];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "MaxAbs_K", ls->maxabs_k);
        cJSON_AddNumberToObject(o, "MaxAbs_Q", ls->maxabs_q);
        cJSON_AddNumberToObject(o, "Kp99", ls->kp99);
        cJSON_AddNumberToObject(o, "Qp99", ls->qp99);
        cJSON_AddNumberToObject(o, "Kp999", ls->kp999);
        cJSON_AddNumberToObject(o, "Kstd", ls->kstd);
        cJSON_AddNumberToObject(o, "rho_K", ls->rho_k);
        cJSON_AddNumberToObject(o, "T_KQ", ls->t_kq);
        cJSON_AddStringToObject(o, "branch", calib_branch_name(ls->branch));
        cJSON_AddNumberToObject(o, "alpha", ls->alpha);
        cJSON_AddItemToArray(pl, o);
    }
    cJSON_AddNumberToObject(root, "rho_K", r->rho_k);
    cJSON_AddNumberToObject(root, "rho_K_layer", r->rho_layer);
    cJSON_AddNumberToObject(root, "T_KQ", r->t_kq);
    cJSON_AddNumberToObject(root, "T_KQ_layer", r->t_layer);
    cJSON_AddStringToObject(root, "decision", calib_branch_name(r->branch));
    cJSON_AddNumberToObject(root, "alpha", r->alpha);
    cJSON_AddStringToObject(root, "aggregator", calib_agg_name(r->agg));
    cJSON_AddStringToObject(root, "gate_rule", calib_rule_name(r->rule));
    cJSON_AddStringToObject(root, "paper_decision", calib_branch_name(r->paper_branch));
    if (r->gate.layer) cJSON_AddItemToObject(root, "measured", measured_json(&r->gate));
    return root;
}

int calib_write(const char *path, const struct calib_result *r, const struct calib_meta *m, struct err *e) {
    cJSON *sj = stats_json(r);
    char *stats = sj ? cJSON_PrintUnformatted(sj) : NULL;
    cJSON_Delete(sj);
    if (!stats) return err_set(e, ERR_NOMEM, "%s: out of memory", path);
    char samples[32], length[32], seed[32], alpha[32];
    snprintf(samples, sizeof samples, "%d", m->samples);
    snprintf(length, sizeof length, "%d", m->length);
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)m->seed);
    snprintf(alpha, sizeof alpha, "%.17g", r->alpha);
    const char *meta[] = {
        "model_id", m->model_id ? m->model_id : "", "model_hash", m->model_hash ? m->model_hash : "",
        "source", m->source ? m->source : "", "samples", samples, "length", length, "seed", seed,
        "aggregator", calib_agg_name(r->agg), "alpha", alpha, "gate", calib_branch_name(r->branch),
        "gate_rule", calib_rule_name(r->rule), "smooth_qk", stats,
    };
    struct st_wtensor t = {"smooth_qk.scales", ST_F32, 3, {r->n_layers, r->Hkv, r->d}, r->scales};
    int rc = st_write(path, &t, 1, meta, 11, e);
    free(stats);
    return rc;
}
