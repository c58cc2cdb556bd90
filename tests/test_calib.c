// test_calib.c: calibration statistics on hand-worked cases (spec/calibration.md): nearest-rank
// percentiles, aggregators, per-sample maxima under GQA, gate boundaries, scale factors, the
// scales file round trip (same inputs -> same bytes), and the batched statistics
// (calib_observe_seqs) bit for bit against the reference calib_observe on any thread count.
#include <stdlib.h>

#include "base/pool.h"
#include "calib/calib.h"
#include "io/safetensors.h"
#include "test.h"

static int cmpf(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static void test_percentile(void) {
    float v[5] = {5, 1, 4, 2, 3};
    CHECK(calib_percentile(v, 5, 0.99) == 5, "p99 of 5 values is the max (ceil(4.95)=5)");
    float w[5] = {5, 1, 4, 2, 3};
    CHECK(calib_percentile(w, 5, 0.5) == 3, "p50 -> sorted[2]");
    float x[5] = {5, 1, 4, 2, 3};
    CHECK(calib_percentile(x, 5, 0.2) == 1, "p20 -> ceil(1.0)-1 = sorted[0]");
    // against a full sort on data with many duplicates
    int bad = 0;
    uint32_t seed = 12345;
    for (int trial = 0; trial < 50; trial++) {
        size_t n = 1 + (size_t)(trial * 97 % 3000);
        float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1664525u + 1013904223u;
            a[i] = b[i] = (float)((seed >> 8) % (trial % 3 ? 50 : 100000)) * 0.25f;
        }
        qsort(b, n, sizeof *b, cmpf);
        double ps[3] = {0.99, 0.999, 0.5};
        for (int k = 0; k < 3; k++) {
            float *c = malloc(n * sizeof *c);
            memcpy(c, a, n * sizeof *c);
            size_t r = (size_t)ceil(ps[k] * (double)n);
            if (calib_percentile(c, n, ps[k]) != b[r - 1]) bad++;
            free(c);
        }
        free(a);
        free(b);
    }
    CHECK(bad == 0, "%d quickselect percentiles differ from sorting", bad);
}

static void test_aggregate(void) {
    float x[4] = {3, 99, 4, 99}; // stride 2 picks 3, 4
    double scr[4];
    CHECK_CLOSE(calib_aggregate(x, 2, 2, CALIB_AGG_RMS, scr), sqrt(12.5), 0, 1e-15);
    CHECK_CLOSE(calib_aggregate(x, 2, 2, CALIB_AGG_MEAN, scr), 3.5, 0, 0);
    CHECK_CLOSE(calib_aggregate(x, 2, 2, CALIB_AGG_MAX, scr), 4, 0, 0);
    float y[100];
    double s100[100];
    for (int i = 0; i < 100; i++) y[i] = (float)(100 - i);
    CHECK_CLOSE(calib_aggregate(y, 100, 1, CALIB_AGG_P99, s100), 99, 0, 0); // sorted[ceil(99)-1]
}

static void test_observe_and_gate(void) {
    // 1 layer, H=2 query heads sharing Hkv=1, d=2, two samples of T=2
    struct calib_stats s;
    struct err e = {0};
    CHECK(calib_stats_init(&s, (struct calib_shape){1, 2, 1, 2}, 2, 4, &e) == 0, "init: %s", e.msg);
    float q0[2 * 2 * 2] = {1, -2, 0.5f, 3, /*t1*/ -4, 1, 0, 0};  // (T, H, d)
    float k0[2 * 1 * 2] = {10, -1, /*t1*/ -20, 2};               // (T, Hkv, d)
    CHECK(calib_observe(&s, 0, 0, q0, k0, 2, &e) == 0, "observe 0");
    // Qmax over tokens and the group's heads: ch0 max(1,.5,4,0)=4, ch1 max(2,3,1,0)=3
    CHECK(s.qmax[0] == 4 && s.qmax[1] == 3, "qmax %g %g", s.qmax[0], s.qmax[1]);
    CHECK(s.kmax[0] == 20 && s.kmax[1] == 2, "kmax %g %g", s.kmax[0], s.kmax[1]);
    // |K| elements {10,1,20,2}: p99 -> ceil(3.96)=4 -> 20
    CHECK(s.kp99[0] == 20, "kp99 %g", s.kp99[0]);
    float q1[8] = {1, 1, 1, 1, 1, 1, 1, 1}, k1[4] = {5, 5, 5, 5};
    CHECK(calib_observe(&s, 1, 0, q1, k1, 2, &e) == 0, "observe 1");
    CHECK(calib_observe(&s, 2, 0, q1, k1, 2, &e) == ERR_RANGE, "sample beyond init refused");
    struct calib_gate_opts g;
    calib_gate_opts_default(&g);
    g.alpha_forced = 0.5;
    struct calib_result r;
    CHECK(calib_compute(&r, &s, CALIB_AGG_MAX, &g, &e) == 0, "compute: %s", e.msg);
    // max aggregate: Kagg = {20, 5}, Qagg = {4, 3}; s = sqrt(K)/sqrt(Q)
    CHECK_CLOSE(r.scales[0], (float)(sqrt(20.0) / sqrt(4.0)), 0, 0);
    CHECK_CLOSE(r.scales[1], (float)(sqrt(5.0) / sqrt(3.0)), 0, 0);
    CHECK_CLOSE(r.layer[0].rho_k, 20.0 / 20.0, 0, 1e-15);
    CHECK_CLOSE(r.layer[0].t_kq, 20.0 / 4.0, 0, 1e-15);
    calib_result_free(&r);
    // rms aggregate of Kmax ch0 over samples {20, 5}: sqrt((400+25)/2)
    CHECK(calib_compute(&r, &s, CALIB_AGG_RMS, &g, &e) == 0, "compute rms");
    CHECK_CLOSE(r.kagg[0], sqrt(425.0 / 2), 0, 1e-15);
    calib_result_free(&r);
    calib_stats_free(&s);
}

// Builds stats with chosen layer maxima so rho and T land exactly where wanted.
static int gate_for(double rho, double t) {
    struct calib_stats s;
    struct err e = {0};
    calib_stats_init(&s, (struct calib_shape){1, 1, 1, 2}, 1, 1, &e);
    s.n_samples = 1;
    s.seen[0] = 1;
    s.kmax[0] = (float)(rho * 1.0); s.kmax[1] = 0.5f; // MaxAbs_K = rho (Kp99 = 1)
    s.qmax[0] = (float)(rho / t); s.qmax[1] = 0.25f;  // MaxAbs_Q = rho / t
    s.kp99[0] = 1.0f;
    struct calib_gate_opts g;
    calib_gate_opts_default(&g);
    struct calib_result r;
    calib_compute(&r, &s, CALIB_AGG_MAX, &g, &e);
    int b = r.branch;
    if (b == CALIB_BYPASS) CHECK(r.scales[0] == 1.0f && r.scales[1] == 1.0f, "bypass scales are 1");
    calib_result_free(&r);
    calib_stats_free(&s);
    return b;
}

static void test_gate(void) {
    CHECK(gate_for(8, 4) == CALIB_STRONG, "rho 8 T 4 -> strong");
    CHECK(gate_for(8, 3) == CALIB_MILD, "T = 3 exactly is mild (T > 3 for strong)");
    CHECK(gate_for(8, 2) == CALIB_MILD, "T = 2 exactly is mild");
    CHECK(gate_for(8, 1.5) == CALIB_BYPASS, "T < 2 -> bypass");
    CHECK(gate_for(6, 4) == CALIB_STRONG, "rho = 6 exactly qualifies");
    CHECK(gate_for(5.5, 10) == CALIB_BYPASS, "rho < 6 -> bypass");
}

static void test_file(void) {
    struct calib_stats s;
    struct err e = {0};
    calib_stats_init(&s, (struct calib_shape){2, 2, 1, 3}, 1, 2, &e);
    float q[2 * 2 * 3], k[2 * 1 * 3];
    for (int l = 0; l < 2; l++) {
        for (int i = 0; i < 12; i++) q[i] = (float)(i + 1 + l) * 0.5f;
        for (int i = 0; i < 6; i++) k[i] = (float)(i * 3 + 1 + l);
        calib_observe(&s, 0, l, q, k, 2, &e);
    }
    struct calib_gate_opts g;
    calib_gate_opts_default(&g);
    g.alpha_forced = 0.5;
    struct calib_result r;
    calib_compute(&r, &s, CALIB_AGG_RMS, &g, &e);
    const char *tmp = getenv("HIFA4_TMP");
    char p1[1024], p2[1024];
    snprintf(p1, sizeof p1, "%s/calib-a.safetensors", tmp ? tmp : "build/tmp");
    snprintf(p2, sizeof p2, "%s/calib-b.safetensors", tmp ? tmp : "build/tmp");
    struct calib_meta m = {"toy", "feedbeef", "unit test", 1, 2, 7};
    CHECK(calib_write(p1, &r, &m, &e) == 0 && calib_write(p2, &r, &m, &e) == 0, "write: %s", e.msg);
    char *a = NULL, *b = NULL;
    size_t la = 0, lb = 0;
    file_read_all(p1, &a, &la, &e);
    file_read_all(p2, &b, &lb, &e);
    CHECK(a && b && la == lb && !memcmp(a, b, la), "same inputs, same bytes");
    free(a);
    free(b);
    struct safetensors st;
    CHECK(st_open(&st, p1, &e) == 0, "reopen: %s", e.msg);
    int64_t shp[3] = {2, 1, 3};
    const struct st_tensor *t;
    CHECK(st_check(&st, "smooth_qk.scales", ST_FLOATING, 3, shp, &t, &e) == 0, "shape: %s", e.msg);
    float back[6];
    st_to_f32(back, t, &e);
    CHECK(!memcmp(back, r.scales, sizeof back), "scales round trip");
    const char *h = st_meta(&st, "model_hash");
    CHECK(h && !strcmp(h, "feedbeef"), "hash in metadata");
    const char *agg = st_meta(&st, "aggregator");
    CHECK(agg && !strcmp(agg, "rms"), "aggregator in metadata");
    st_close(&st);
    calib_result_free(&r);
    calib_stats_free(&s);
}

// ---- calib_observe_seqs against calib_observe ----
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void) {
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return rng_state;
}

// Kernel-input-like values: kind 0 bf16 values (few distinct magnitudes, so many duplicates,
// a few large outliers, signed zeros, some scaled by 2^-32..2^31 to spread the histogram over
// many exponents), 1 arbitrary binary32, 2 bf16 with a NaN, 3 bf16 with +-inf.
static void fill_values(float *x, size_t n, int kind) {
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rng();
        float v = (float)((int)(r % 2001) - 1000) * (r >> 40 & 1 ? 0.01f : 0.37f);
        if (r % 997 == 0) v *= 300;
        if (r % 101 == 0) v = r >> 20 & 1 ? 0.0f : -0.0f;
        if (r % 89 == 0) v = ldexpf(v, (int)(r >> 50 & 63) - 32);
        x[i] = kind == 1 ? v * 1.0001f : bf16_to_f32(f32_to_bf16(v));
    }
    if (kind == 2) x[n / 2] = NAN;
    if (kind == 3) x[n / 3] = INFINITY, x[n - 1] = -INFINITY;
}

static int stats_equal(const struct calib_stats *a, const struct calib_stats *b) {
    size_t per = (size_t)a->max_samples * a->n_layers, big = per * a->Hkv * a->d;
    return a->n_samples == b->n_samples && !memcmp(a->kmax, b->kmax, big * sizeof(float)) &&
           !memcmp(a->qmax, b->qmax, big * sizeof(float)) && !memcmp(a->kp99, b->kp99, per * sizeof(float)) &&
           !memcmp(a->qp99, b->qp99, per * sizeof(float)) && !memcmp(a->kp999, b->kp999, per * sizeof(float)) &&
           !memcmp(a->kstd, b->kstd, per * sizeof(float)) && !memcmp(a->seen, b->seen, per);
}

// One case: n_seq sequences of assorted lengths (1, odd, the maximum) at every layer, through
// the reference and through calib_observe_seqs on 1 and 2 threads.
static void seqs_case(int H, int Hkv, int d, int n_seq, int max_T, int kind) {
    struct calib_stats ref, fast[2];
    struct err e = {0};
    const int L = 2;
    const struct calib_shape shape = {L, H, Hkv, d};
    if (calib_stats_init(&ref, shape, n_seq, max_T, &e) || calib_stats_init(&fast[0], shape, n_seq, max_T, &e) ||
        calib_stats_init(&fast[1], shape, n_seq, max_T, &e)) {
        CHECK(0, "init: %s", e.msg);
        return;
    }
    const float **q = malloc((size_t)n_seq * sizeof *q), **k = malloc((size_t)n_seq * sizeof *k);
    int *T = malloc((size_t)n_seq * sizeof *T);
    for (int i = 0; i < n_seq; i++) {
        T[i] = i == 0 ? 1 : i == 1 ? max_T : 1 + (int)(rng() % (uint64_t)max_T);
        float *qi = malloc((size_t)T[i] * H * d * sizeof *qi), *ki = malloc((size_t)T[i] * Hkv * d * sizeof *ki);
        fill_values(qi, (size_t)T[i] * H * d, kind == 2 && i == 1 ? 0 : kind); // kind 2: K NaN in seq 1, Q NaN elsewhere
        fill_values(ki, (size_t)T[i] * Hkv * d, kind == 2 && i != 1 ? 0 : kind);
        q[i] = qi, k[i] = ki;
    }
    int ok = 1;
    for (int l = 0; l < L; l++)
        for (int i = 0; i < n_seq; i++) ok &= calib_observe(&ref, i, l, q[i], k[i], T[i], &e) == 0;
    for (int th = 0; th < 2; th++) {
        pool_set_threads(th + 1);
        for (int l = 0; l < L; l++) ok &= calib_observe_seqs(&fast[th], 0, l, (struct calib_seqs){n_seq, q, k, T}, 0, &e) == 0;
        CHECK(stats_equal(&ref, &fast[th]), "H=%d Hkv=%d d=%d n_seq=%d kind %d, %d thread(s): statistics differ from "
              "calib_observe", H, Hkv, d, n_seq, kind, th + 1);
        int64_t want = kind == 0 || kind == 3 ? 0 : (int64_t)L * n_seq;
        CHECK(fast[th].n_fallback == want, "kind %d: %lld fallbacks, want %lld", kind, (long long)fast[th].n_fallback,
              (long long)want);
    }
    CHECK(ok, "observe calls: %s", e.msg);
    // out-of-range sequences are refused before anything is recorded
    int Tbad[1] = {max_T + 1};
    CHECK(calib_observe_seqs(&fast[0], 0, 0, (struct calib_seqs){1, q, k, Tbad}, 0, &e) == ERR_RANGE, "T beyond init refused");
    CHECK(calib_observe_seqs(&fast[0], n_seq - 1, 0, (struct calib_seqs){2, q, k, T}, 0, &e) == ERR_RANGE, "sample beyond init refused");
    CHECK(stats_equal(&ref, &fast[0]), "a refused call changes nothing");
    for (int i = 0; i < n_seq; i++) free((void *)q[i]), free((void *)k[i]);
    free(q), free(k), free(T);
    calib_stats_free(&ref), calib_stats_free(&fast[0]), calib_stats_free(&fast[1]);
}

static void test_observe_seqs(void) {
    seqs_case(9, 3, 64, 5, 97, 0);  // SmolLM2's heads, duplicates, outliers, a 1-token sequence
    seqs_case(4, 4, 13, 3, 40, 0);  // MHA, d not a multiple of the vector width
    seqs_case(8, 2, 128, 4, 64, 0); // Qwen3's group of 4
    seqs_case(6, 2, 16, 3, 50, 1);  // not bf16 values: every (sample, layer) falls back
    seqs_case(6, 2, 16, 3, 50, 2);  // a NaN in K or in Q: falls back
    seqs_case(6, 3, 32, 3, 50, 3);  // +-inf are bf16 values: the histogram holds them
    pool_set_threads(0);
}

int main(void) {
    test_percentile();
    test_aggregate();
    test_observe_and_gate();
    test_gate();
    test_file();
    test_observe_seqs();
    return test_summary("test_calib");
}
