// test_fp4.c: the FP4 codecs against spec/fp4.md: every record of fp4_vectors.jsonl bit for
// bit through the fast block path, the literal reference, the tensor path and the column path
// (codes, scale bytes, outputs, NVFP4 tensor scales; sage3-p rows: P~, s, scale bytes, codes,
// Pc); every record of fp4_vectors_special.jsonl rejected; E2M1, E4M3 and E8M0 decode checked
// exhaustively against their tables and encode against an exact nearest search (invariant 1);
// the fast paths against the reference on random and adversarial blocks; the properties of
// section 3.5 (MXFP4 idempotence, scaling by 2^k, NMSE on N(0,1)).
#include <float.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "attention/fp4.h"
#include "base/json_util.h"
#include "rng.h"
#include "test.h"

// ---- JSONL records ----
#define MAXN 4096
struct rec {
    char name[128], format[16];
    int n, block, ns;
    uint32_t in[MAXN], out[MAXN], amax, s_enc, s_dec;
    int codes[MAXN], scales[MAXN / 16 + 1];
    // sage3-p
    uint32_t m, c, pt[128], s[8];
};

static int bits_arr(const cJSON *j, const char *key, uint32_t *out, int cap) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, key);
    int n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, a) {
        if (n >= cap || !cJSON_IsString(it)) return -1;
        out[n++] = (uint32_t)strtoul(it->valuestring, NULL, 16);
    }
    return a ? n : -1;
}
static int int_arr(const cJSON *j, const char *key, int *out, int cap) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, key);
    int n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, a) {
        if (n >= cap || !cJSON_IsNumber(it)) return -1;
        out[n++] = it->valueint;
    }
    return a ? n : -1;
}
static uint32_t bits1(const cJSON *j, const char *key) {
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, key));
    return s ? (uint32_t)strtoul(s, NULL, 16) : 0;
}

static int parse_rec(const cJSON *j, struct rec *r) {
    memset(r, 0, sizeof *r);
    const char *nm = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "name"));
    const char *fm = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "format"));
    if (!nm || !fm) return -1;
    snprintf(r->name, sizeof r->name, "%s", nm);
    snprintf(r->format, sizeof r->format, "%s", fm);
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(j, "block");
    r->block = b ? b->valueint : 0;
    if (!strcmp(fm, "sage3-p")) {
        r->n = bits_arr(j, "scores_bits", r->in, 128);
        r->m = bits1(j, "m_bits"), r->c = bits1(j, "c_bits");
        if (bits_arr(j, "ptilde_bits", r->pt, 128) != r->n || bits_arr(j, "s_bits", r->s, 8) != 8 ||
            bits_arr(j, "pc_bits", r->out, 128) != r->n)
            return -1;
    } else {
        r->n = bits_arr(j, "input_bits", r->in, MAXN);
        if (cJSON_GetObjectItemCaseSensitive(j, "expect")) return r->n > 0 ? 0 : -1;
        if (bits_arr(j, "output_bits", r->out, MAXN) != r->n) return -1;
        r->amax = bits1(j, "tensor_amax_bits"), r->s_enc = bits1(j, "s_enc_bits"), r->s_dec = bits1(j, "s_dec_bits");
    }
    if (int_arr(j, "codes", r->codes, MAXN) != r->n) return -1;
    r->ns = int_arr(j, "scale_bytes", r->scales, MAXN / 16 + 1);
    if (!strcmp(fm, "nvfp4-1l") && cJSON_GetObjectItemCaseSensitive(j, "tensor_amax_bits")) return -1;
    return r->n > 0 ? 0 : -1;
}

// Calls fn on every record of the file; returns the count, -1 on a parse error.
static int each_rec(const char *path, void (*fn)(const struct rec *, void *), void *u) {
    struct err e = {0};
    char *buf;
    size_t len;
    if (file_read_all(path, &buf, &len, &e)) return -1;
    static struct rec r;
    int n = 0, line = 0;
    char *save = NULL;
    for (char *s = strtok_r(buf, "\n", &save); s; s = strtok_r(NULL, "\n", &save)) {
        line++;
        cJSON *j = cJSON_Parse(s);
        if (!j || parse_rec(j, &r)) {
            fprintf(stderr, "%s:%d: cannot parse record\n", path, line);
            cJSON_Delete(j);
            free(buf);
            return -1;
        }
        cJSON_Delete(j);
        fn(&r, u);
        n++;
    }
    free(buf);
    return n;
}

static enum fp4_format fmt_of(const char *s) {
    return !strcmp(s, "mxfp4") ? FP4_MXFP4 : !strcmp(s, "nvfp4") ? FP4_NVFP4 : FP4_NVFP4_1L;
}

// ---- the vectors ----
struct vstat { int counts[4], bad; };

static void check_block_rec(const struct rec *r, struct vstat *st) {
    const enum fp4_format f = fmt_of(r->format);
    const int B = fp4_block(f), n = r->n;
    struct fp4_tscale ts;
    fp4_nv_tscale(&ts, bits_f32(r->amax));
    if (f == FP4_NVFP4 && (f32_bits(ts.s_enc) != r->s_enc || f32_bits(ts.s_dec) != r->s_dec)) st->bad++;
    static float x[MAXN], y[MAXN], y2[MAXN], y3[MAXN], y4[MAXN];
    static uint8_t c[MAXN], c2[MAXN];
    uint8_t sb[MAXN / 16 + 1], sb2[MAXN / 16 + 1];
    for (int i = 0; i < n; i++) x[i] = bits_f32(r->in[i]);
    int nb = 0, bad = r->block != B || r->ns != (n + B - 1) / B;
    for (int i = 0; i < n; i += B, nb++) {
        const int m = n - i < B ? n - i : B;
        bad |= fp4_qdq_block(y + i, x + i, m, f, &ts, c + i, sb + nb) != 0;
        bad |= fp4_qdq_block_ref(y2 + i, x + i, m, f, &ts, c2 + i, sb2 + nb) != 0;
    }
    bad |= fp4_qdq(y3, x, n, f, &ts) != 0;
    bad |= fp4_qdq_cols(y4, x, 1, n, 1, f, &ts) != 0; // one column of n rows
    for (int i = 0; i < n && !bad; i++)
        bad |= c[i] != r->codes[i] || c2[i] != r->codes[i] || f32_bits(y[i]) != r->out[i] || f32_bits(y2[i]) != r->out[i] ||
               f32_bits(y3[i]) != r->out[i] || f32_bits(y4[i]) != r->out[i];
    for (int b = 0; b < nb && !bad; b++) bad |= sb[b] != r->scales[b] || sb2[b] != r->scales[b];
    if (bad && st->bad < 5) fprintf(stderr, "  vector %s (%s) differs\n", r->name, r->format);
    st->bad += bad;
    st->counts[f]++;
}

static void check_sage3_rec(const struct rec *r, struct vstat *st) {
    float S[128], pt[128], pc[128], s[8], pt2[128], pc2[128], s2[8];
    uint8_t sb[8], cd[128], sb2[8], cd2[128];
    for (int j = 0; j < r->n; j++) S[j] = bits_f32(r->in[j]);
    const struct fp4_sage3_row o = {pt, pc, s, sb, cd}, o2 = {pt2, pc2, s2, sb2, cd2};
    fp4_sage3_p(&o, S, r->n, bits_f32(r->m), bits_f32(r->c), FP4_P_QUANT);
    fp4_sage3_p_ref(&o2, S, r->n, bits_f32(r->m), bits_f32(r->c));
    int bad = r->n != 128 || r->ns != 8;
    for (int j = 0; j < r->n && !bad; j++)
        bad |= f32_bits(pt[j]) != r->pt[j] || f32_bits(pc[j]) != r->out[j] || cd[j] != r->codes[j] ||
               f32_bits(pt2[j]) != r->pt[j] || f32_bits(pc2[j]) != r->out[j] || cd2[j] != r->codes[j];
    for (int u = 0; u < 8 && !bad; u++)
        bad |= f32_bits(s[u]) != r->s[u] || sb[u] != r->scales[u] || f32_bits(s2[u]) != r->s[u] || sb2[u] != r->scales[u];
    if (bad && st->bad < 5) fprintf(stderr, "  vector %s (sage3-p) differs\n", r->name);
    st->bad += bad;
    st->counts[3]++;
}

static void check_rec(const struct rec *r, void *u) {
    if (!strcmp(r->format, "sage3-p")) check_sage3_rec(r, u);
    else check_block_rec(r, u);
}

static void test_vectors(void) {
    const char *path = TEST_NEED("spec/fp4_vectors.jsonl");
    if (!path) return;
    struct vstat st = {{0}, 0};
    int n = each_rec(path, check_rec, &st);
    CHECK(n == 1091, "%s: %d records (spec section 7: 1,091)", path, n);
    CHECK(st.counts[FP4_MXFP4] == 327 && st.counts[FP4_NVFP4] == 335 && st.counts[FP4_NVFP4_1L] == 329 &&
              st.counts[3] == 100,
          "record counts %d mxfp4, %d nvfp4, %d nvfp4-1l, %d sage3-p", st.counts[0], st.counts[1], st.counts[2],
          st.counts[3]);
    CHECK(st.bad == 0, "%d of %d records not reproduced bit for bit", st.bad, n);
    printf("vectors: %d records bit-exact (fast, reference, tensor and column paths)\n", n - st.bad);
}

static void check_special(const struct rec *r, void *u) {
    int *bad = u;
    const enum fp4_format f = fmt_of(r->format);
    const int B = fp4_block(f);
    float x[MAXN], y[MAXN];
    struct fp4_tscale ts;
    fp4_nv_tscale(&ts, 1.0f);
    for (int i = 0; i < r->n; i++) x[i] = bits_f32(r->in[i]);
    int rejected = 0;
    for (int i = 0; i < r->n; i += B) {
        const int m = r->n - i < B ? r->n - i : B;
        rejected |= fp4_qdq_block(x + i, x + i, m, f, &ts, NULL, NULL) != 0;
    }
    for (int i = 0; i < r->n; i++) x[i] = bits_f32(r->in[i]);
    rejected &= fp4_qdq(y, x, r->n, f, &ts) != 0 && fp4_qdq_cols(y, x, 1, r->n, 1, f, &ts) != 0;
    *bad += !rejected;
}

static void test_special(void) {
    const char *path = TEST_NEED("spec/fp4_vectors_special.jsonl");
    if (!path) return;
    int bad = 0, n = each_rec(path, check_special, &bad);
    CHECK(n == 9, "%s: %d records", path, n);
    CHECK(bad == 0, "%d special records not rejected", bad);
}

// ---- codecs (invariant 1) ----
static void test_codecs(void) {
    static const float e2m1[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
    int bad = 0;
    for (int c = 0; c < 16; c++) {
        const float v = fp4_e2m1_value(c);
        bad |= f32_bits(v) != f32_bits(c & 8 ? -e2m1[c & 7] : e2m1[c & 7]) || fp4_e2m1_encode(v) != c;
    }
    CHECK(!bad && f32_bits(fp4_e2m1_value(8)) == 0x80000000u, "E2M1 table / round trip (code 8 = -0.0)");
    static const float ties[][2] = {{0.25f, 0}, {0.75f, 1}, {1.25f, 1}, {1.75f, 2}, {2.5f, 2}, {3.5f, 4}, {5, 4}, {6.1f, 6},
                                    {7, 6}, {1e30f, 6}, {-0.2f, -0.0f}};
    for (size_t i = 0; i < sizeof ties / sizeof *ties; i++) {
        const int c = fp4_e2m1_encode(ties[i][0]);
        CHECK(f32_bits(fp4_e2m1_value(c)) == f32_bits(ties[i][1]), "e2m1(%g) -> code %d", ties[i][0], c);
    }
    // E4M3: every finite byte against the spec's formula, round trip, midpoints to the even byte
    bad = 0;
    for (int b = 0; b <= 0x7e; b++) {
        const int e = b >> 3, m = b & 7;
        const double ref = e ? (1 + m / 8.0) * ldexp(1, e - 7) : m * ldexp(1, -9);
        const float v = fp4_e4m3_value(b);
        bad |= (double)v != ref || fp4_e4m3_encode(v) != b;
        if (b < 0x7e) {
            const float mid = (float)((ref + ((b + 1) >> 3 ? (1 + ((b + 1) & 7) / 8.0) * ldexp(1, ((b + 1) >> 3) - 7)
                                                           : ((b + 1) & 7) * ldexp(1, -9))) / 2);
            bad |= fp4_e4m3_encode(mid) != (b & 1 ? b + 1 : b);
            bad |= fp4_e4m3_encode(nextafterf(mid, 0)) != b || fp4_e4m3_encode(nextafterf(mid, INFINITY)) != b + 1;
        }
    }
    CHECK(!bad, "E4M3: decode table, round trip, midpoints");
    CHECK(fp4_e4m3_value(0x7e) == 448 && fp4_e4m3_value(0x08) == 0x1p-6f && fp4_e4m3_value(1) == 0x1p-9f &&
              fp4_e4m3_value(0x38) == 1.0f && isnan(fp4_e4m3_value(0x7f)),
          "E4M3 landmarks");
    CHECK(fp4_e4m3_encode(448) == 0x7e && fp4_e4m3_encode(470) == 0x7e && fp4_e4m3_encode(1e30f) == 0x7e &&
              fp4_e4m3_encode(INFINITY) == 0x7e && fp4_e4m3_encode(0x1p-10f) == 0 && fp4_e4m3_encode(0) == 0,
          "E4M3 satfinite and underflow");
    bad = 0;
    for (int b = 0; b < 255; b++) bad |= (double)fp4_e8m0_value(b) != ldexp(1, b - 127);
    CHECK(!bad && isnan(fp4_e8m0_value(255)) && f32_bits(fp4_e8m0_value(0)) == 0x00400000u, "E8M0 decode of all bytes");
}

// E2M1 encode against an exact nearest search on every binary32 near its 7 rounding
// boundaries and a sample of all others; E4M3 on every 61st binary32 in [2^-11, 512) plus
// every one near a midpoint. HIFA4_EXHAUSTIVE=1: every binary32 of both ranges.
static int e4m3_search(float x) {
    if (x >= 448) return 0x7e;
    int best = 0;
    double bd = INFINITY;
    for (int b = 0; b <= 0x7e; b++) {
        const double d = fabs((double)x - fp4_e4m3_value(b));
        if (d < bd || (d == bd && !(b & 1))) best = b, bd = d;
    }
    return best;
}
static int e2m1_search(float v) {
    if (fabs((double)v) >= 6.0) return 7 | (signbit(v) ? 8 : 0);
    int best = 0;
    double bd = INFINITY;
    for (int c = 0; c < 8; c++) {
        const double d = fabs(fabs((double)v) - fp4_e2m1_value(c));
        if (d < bd || (d == bd && !(c & 1))) best = c, bd = d;
    }
    return best | (signbit(v) ? 8 : 0);
}

static void test_encode_sweep(void) {
    const char *ex = getenv("HIFA4_EXHAUSTIVE");
    const int full = ex && *ex == '1';
    int64_t n = 0, bad = 0;
    static const float bounds[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
    for (int k = 0; k < 7; k++) // every binary32 within 2^16 ulps of each rounding boundary
        for (uint32_t u = f32_bits(bounds[k]) - 65536; u <= f32_bits(bounds[k]) + 65536; u++, n += 2) {
            const float v = bits_f32(u);
            bad += fp4_e2m1_encode(v) != e2m1_search(v) || fp4_e2m1_encode(-v) != e2m1_search(-v);
        }
    for (uint32_t u = 0; u < 0x7f800000u; u += full ? 1 : 4099, n++) bad += fp4_e2m1_encode(bits_f32(u)) != e2m1_search(bits_f32(u));
    CHECK(bad == 0, "E2M1 encode: %lld of %lld values differ from the nearest search", (long long)bad, (long long)n);
    int64_t n4 = 0, bad4 = 0;
    const uint32_t step = full ? 1 : 61;
    for (uint32_t u = 0x3a000000u; u < 0x44000000u; u += step, n4++) bad4 += fp4_e4m3_encode(bits_f32(u)) != e4m3_search(bits_f32(u));
    for (uint32_t u = 0; u < 0x3a000000u; u += full ? 1 : 65537, n4++) bad4 += fp4_e4m3_encode(bits_f32(u)) != e4m3_search(bits_f32(u));
    CHECK(bad4 == 0, "E4M3 encode: %lld of %lld values differ from the nearest search", (long long)bad4, (long long)n4);
    printf("encode sweep: E2M1 %lld values, E4M3 %lld values%s\n", (long long)n, (long long)n4, full ? " (exhaustive)" : "");
}

// ---- fast vs reference on random blocks ----
static double nrm(void) { // Box-Muller from the shared stream
    double u1 = urand(), u2 = urand();
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2 * log(u1)) * cos(2 * HIFA4_PI * u2);
}
static float rand_val(int kind) {
    switch (kind % 6) {
    case 0: return (float)nrm();
    case 1: return (float)(nrm() * pow(10, (int)(urand() * 60) - 30));
    case 2: return (float)(nrm() / (urand() + 1e-3)); // heavy tail
    case 3: return fp4_e2m1_value((int)(urand() * 16)) * ldexpf(1, (int)(urand() * 20) - 10); // exact grid points
    case 4: return bits_f32((uint32_t)(urand() * 4294967296.0) & 0xff7fffffu); // random finite bits
    default: return urand() < 0.3 ? 0.0f : urand() < 0.5 ? -0.0f : (float)(nrm() * 1e-40);
    }
}

static void test_fast_vs_ref(void) {
    rng_seed(4);
    int bad = 0, n = 0;
    for (int it = 0; it < 60000; it++) {
        const enum fp4_format f = (enum fp4_format)(it % 3);
        const int B = fp4_block(f), m = it % 7 ? B : 1 + it % B;
        float x[32], y[32], y2[32];
        uint8_t c[32], c2[32], s, s2;
        for (int i = 0; i < m; i++) x[i] = rand_val(it / 3);
        struct fp4_tscale ts;
        const float At = fp4_amax(x, m);
        fp4_nv_tscale(&ts, it % 5 == 0 ? At * (float)(urand() * 4) : At); // also broken contracts
        int r1 = fp4_qdq_block(y, x, m, f, &ts, c, &s), r2 = fp4_qdq_block_ref(y2, x, m, f, &ts, c2, &s2);
        int b = r1 || r2 || s != s2;
        for (int i = 0; i < m && !b; i++) b |= f32_bits(y[i]) != f32_bits(y2[i]) || c[i] != c2[i];
        if (b && bad < 3) fprintf(stderr, "  fast != ref: format %d, m %d, it %d\n", f, m, it);
        bad += b, n++;
    }
    CHECK(bad == 0, "%d of %d random blocks differ between the fast path and the reference", bad, n);
    // tensor and column paths equal block by block, with tails, and sage3 P fast vs ref
    bad = 0;
    for (int it = 0; it < 300; it++) {
        const enum fp4_format f = (enum fp4_format)(it % 3);
        const int rows = 1 + it % 77, cols = 1 + (it * 7) % 45, B = fp4_block(f);
        float *x = malloc(sizeof(float) * rows * cols), *y = malloc(sizeof(float) * rows * cols), col[77], yc[77];
        for (int i = 0; i < rows * cols; i++) x[i] = rand_val(it);
        struct fp4_tscale ts;
        fp4_nv_tscale(&ts, fp4_amax(x, rows * cols));
        bad += fp4_qdq_cols(y, x, cols, rows, cols, f, &ts) != 0;
        for (int cc = 0; cc < cols; cc++) {
            for (int i = 0; i < rows; i++) col[i] = x[i * cols + cc];
            for (int i = 0; i < rows; i += B) fp4_qdq_block(yc + i, col + i, rows - i < B ? rows - i : B, f, &ts, NULL, NULL);
            for (int i = 0; i < rows; i++) bad += f32_bits(yc[i]) != f32_bits(y[i * cols + cc]);
        }
        fp4_qdq(y, x, rows * cols, f, &ts);
        for (int i = 0; i < rows * cols; i += B) {
            float yb[32];
            const int m = rows * cols - i < B ? rows * cols - i : B;
            fp4_qdq_block(yb, x + i, m, f, &ts, NULL, NULL);
            for (int k = 0; k < m; k++) bad += f32_bits(yb[k]) != f32_bits(y[i + k]);
        }
        free(x);
        free(y);
    }
    CHECK(bad == 0, "tensor/column paths differ from the block path in %d elements", bad);
    bad = 0;
    for (int it = 0; it < 2000; it++) {
        float S[128], pc[128], pc2[128], pt[128], pt2[128];
        const int n = it % 3 ? 128 : 1 + it % 128;
        float m = -INFINITY;
        for (int j = 0; j < n; j++) {
            S[j] = urand() < 0.2 ? -INFINITY : (float)(nrm() * (1 + it % 20));
            m = S[j] > m ? S[j] : m;
        }
        if (m == -INFINITY) S[0] = m = 0;
        if (it % 4 == 0) m += (float)(urand() * 30); // an earlier tile's larger max
        const float c = fp4_sage3_c(it % 2 ? 0.125f : 0.08838835f);
        const struct fp4_sage3_row o = {pt, pc, NULL, NULL, NULL}, o2 = {pt2, pc2, NULL, NULL, NULL};
        fp4_sage3_p(&o, S, n, m, c, FP4_P_QUANT);
        fp4_sage3_p_ref(&o2, S, n, m, c);
        for (int j = 0; j < n; j++) bad += f32_bits(pc[j]) != f32_bits(pc2[j]) || f32_bits(pt[j]) != f32_bits(pt2[j]);
    }
    CHECK(bad == 0, "sage3 P: %d keys differ between the fast path and the reference", bad);
    CHECK(f32_bits(fp4_sage3_c(0.125f)) == 0x3e38aa3bu && f32_bits(fp4_sage3_c(0.08838835f)) == 0x3e0293eeu,
          "sage3 c for d = 64 and 128 (spec 5.1)");
    struct fp4_tscale P;
    fp4_nv_tscale(&P, 1.0f);
    CHECK(f32_bits(P.s_enc) == 0x45280000u && f32_bits(P.s_dec) == 0x39c30c31u && P.t == 448.0f,
          "P's fixed NVFP4 scale (spec 4.2)");
}

// ---- section 3.5 properties ----
static void test_properties(void) {
    rng_seed(35);
    enum { N = 1 << 20 };
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float)), *z = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) x[i] = (float)nrm();
    const double ref[3] = {0.0132, 0.00905, 0.00904};
    for (int f = 0; f < 3; f++) {
        struct fp4_tscale ts;
        fp4_nv_tscale(&ts, fp4_amax(x, N));
        fp4_qdq(y, x, N, (enum fp4_format)f, &ts);
        double num = 0, den = 0, zeros = 0;
        for (int i = 0; i < N; i++) num += (double)(y[i] - x[i]) * (y[i] - x[i]), den += (double)x[i] * x[i], zeros += y[i] == 0;
        CHECK_CLOSE(num / den, ref[f], 0, 0.02); // spec 3.5 (6.4M elements; here 1M of our own)
        printf("NMSE on N(0,1), %d elements, format %d: %.5f (spec %.5f), zeros %.1f%%\n", N, f, num / den, ref[f],
               100 * zeros / N);
        if (f == FP4_MXFP4) {
            fp4_qdq(z, y, N, FP4_MXFP4, NULL);
            int bad = 0;
            for (int i = 0; i < N; i++) bad += f32_bits(z[i]) != f32_bits(y[i]);
            CHECK(bad == 0, "MXFP4 idempotence: %d elements change", bad);
        }
    }
    // scaling by 2^k: MXFP4 outputs scale; two-level NVFP4 with x and At scaled keeps codes and
    // scale bytes and scales outputs (no subnormal, overflow or clamp involved)
    int bad = 0;
    for (int it = 0; it < 2000; it++) {
        float a[32], b[32], ya[32], yb[32];
        uint8_t ca[32], cb[32], sa, sb;
        const int k = (int)(urand() * 40) - 20;
        for (int i = 0; i < 32; i++) a[i] = (float)nrm(), b[i] = ldexpf(a[i], k);
        fp4_qdq_block(ya, a, 32, FP4_MXFP4, NULL, ca, &sa);
        fp4_qdq_block(yb, b, 32, FP4_MXFP4, NULL, cb, &sb);
        for (int i = 0; i < 32; i++) bad += f32_bits(yb[i]) != f32_bits(ldexpf(ya[i], k)) || ca[i] != cb[i];
        bad += sb != sa + k;
        struct fp4_tscale ta, tb;
        const float At = fp4_amax(a, 32) * (float)(1 + urand());
        fp4_nv_tscale(&ta, At);
        fp4_nv_tscale(&tb, ldexpf(At, k));
        fp4_qdq_block(ya, a, 16, FP4_NVFP4, &ta, ca, &sa);
        fp4_qdq_block(yb, b, 16, FP4_NVFP4, &tb, cb, &sb);
        for (int i = 0; i < 16; i++) bad += f32_bits(yb[i]) != f32_bits(ldexpf(ya[i], k)) || ca[i] != cb[i];
        bad += sa != sb;
    }
    CHECK(bad == 0, "scaling by 2^k: %d differences", bad);
    free(x);
    free(y);
    free(z);
}

// ---- the qdq command (a vectors file reproduced byte for byte from its inputs) ----
static int sh(const char *cmd) {
    const int s = system(cmd);
    return WIFEXITED(s) ? WEXITSTATUS(s) : -1;
}

static void test_qdq_cli(void) {
    const char *bin = getenv("HIFA4_BIN"), *tmp = getenv("HIFA4_TMP");
    if (!bin || !tmp) {
        TEST_SKIP("HIFA4_BIN / HIFA4_TMP not set (run through make test)");
        return;
    }
    const char *vec = TEST_NEED("spec/fp4_vectors.jsonl"), *spec = TEST_NEED("spec/fp4_vectors_special.jsonl");
    const char *h4 = TEST_NEED("spec/hif4_vectors.jsonl");
    if (!vec || !spec || !h4) return;
    char cmd[16384], out[2048], errf[2048];
    snprintf(out, sizeof out, "%s/fp4_qdq.jsonl", tmp);
    snprintf(errf, sizeof errf, "%s/fp4_qdq.err", tmp);
    snprintf(cmd, sizeof cmd, "%s qdq %s > %s", bin, vec, out);
    CHECK(sh(cmd) == 0 && test_same_bytes(out, vec), "qdq %s does not reproduce the file byte for byte", vec);
    snprintf(cmd, sizeof cmd, "%s qdq %s > %s 2> %s", bin, spec, out, errf);
    char *msg = NULL;
    size_t n = 0;
    struct err e = {0};
    const int rc = sh(cmd);
    CHECK(rc == 1 && !file_read_all(errf, &msg, &n, &e) && strstr(msg, ":1: field 'input_bits': block 0") &&
              strstr(msg, "NaN or Inf"),
          "qdq of the special vectors: exit %d, message %s", rc, msg ? msg : "(none)");
    free(msg);
    // HiF4 lines (spec/hif4.md): outputs and the 4 metadata bytes per group equal the file's
    snprintf(cmd, sizeof cmd, "%s qdq --format hif4 %s > %s", bin, h4, out);
    char *buf = NULL, *ref = NULL;
    size_t nb = 0, nr = 0;
    int lines = 0, bad = sh(cmd) != 0 || file_read_all(out, &buf, &nb, &e) || file_read_all(h4, &ref, &nr, &e);
    for (char *s1 = buf, *s2 = ref, *p1, *p2; !bad && s1 && s2 && *s1; s1 = p1 ? p1 + 1 : NULL, s2 = p2 ? p2 + 1 : NULL) {
        p1 = strchr(s1, '\n'), p2 = strchr(s2, '\n');
        if (p1) *p1 = 0;
        if (p2) *p2 = 0;
        cJSON *a = cJSON_Parse(s1), *b = cJSON_Parse(s2);
        const cJSON *sb = cJSON_GetObjectItemCaseSensitive(a, "scale_bytes");
        bad |= !a || !b || cJSON_GetArraySize(sb) != 4 ||
               !cJSON_Compare(cJSON_GetObjectItemCaseSensitive(a, "output_bits"), cJSON_GetObjectItemCaseSensitive(b, "output_bits"), 1) ||
               cJSON_GetArrayItem(sb, 0)->valueint != cJSON_GetObjectItemCaseSensitive(b, "ea")->valueint ||
               cJSON_GetArrayItem(sb, 1)->valueint != cJSON_GetObjectItemCaseSensitive(b, "eb")->valueint ||
               (cJSON_GetArrayItem(sb, 2)->valueint | cJSON_GetArrayItem(sb, 3)->valueint << 8) !=
                   cJSON_GetObjectItemCaseSensitive(b, "ec")->valueint;
        cJSON_Delete(a);
        cJSON_Delete(b);
        lines++;
    }
    CHECK(!bad && lines == 35, "qdq --format hif4 on %s: %d lines, bad %d", h4, lines, bad);
    free(buf);
    free(ref);
    snprintf(cmd, sizeof cmd, "%s qdq --format fp8 %s > %s 2> %s", bin, vec, out, errf);
    CHECK(sh(cmd) == 2, "qdq --format fp8 is a usage error");
    // cost: the Ascend model covers HiF4 only - one line, no numbers, for the other formats
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd, "%s cost --shape 30:9:3:64 --seq 256 %s > %s", bin, k ? "--attn sage3" : "--qformat mxfp4", out);
        char *txt = NULL;
        size_t nt = 0;
        int lines = 0;
        const int ok = sh(cmd) == 0 && !file_read_all(out, &txt, &nt, &e);
        for (size_t i = 0; ok && i < nt; i++) lines += txt[i] == '\n';
        CHECK(ok && lines == 1 && strstr(txt, "covers HiF4 only") && !strstr(txt, "Cube"), "cost %s: %s",
              k ? "--attn sage3" : "--qformat mxfp4", txt ? txt : "(no output)");
        free(txt);
    }
}

int main(void) {
    test_codecs();
    test_vectors();
    test_special();
    test_encode_sweep();
    test_fast_vs_ref();
    test_properties();
    test_qdq_cli();
    return test_summary("test_fp4");
}
