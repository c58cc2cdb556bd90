// test_gemm.c: bit-exactness of every available ISA path of gemm_run against gemm_ref (the
// literal fmaf chain), for random shapes, strides, column ranges, thread counts, block
// shapes and special values; packing from bf16/f16 equal to packing their f32 values
// (exhaustive over all 65536 codes); row invariance (a row's bits do not depend on the
// batch it is in); argument errors and ISA selection. Ends with "N passed, M failed".
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gemm.h"
#include "model/gemm_internal.h"
#include "test.h"

// ---- random data ----
static unsigned long long rng = 0x9e3779b97f4a7c15ull;
static unsigned long long next(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}
static int irand(int lo, int hi) { return lo + (int)(next() % (unsigned long long)(hi - lo + 1)); } // [lo, hi]
static float frand(void) { return (float)((double)(next() >> 11) * (2.0 / 9007199254740992.0) - 1.0); }

// special: 0 = plain values; 1 = sprinkle NaN, +-Inf, +-0, subnormals, huge values.
static float value(int special) {
    if (special && next() % 16 == 0) {
        switch (next() % 8) {
        case 0: return NAN;
        case 1: return (next() & 1) ? INFINITY : -INFINITY;
        case 2: return -0.0f;
        case 3: return 0.0f;
        case 4: return gemm_float((uint32_t)(next() & 0x807fffffu)); // subnormal (or +-0)
        case 5: return (next() & 1) ? 3e38f : -3e38f;               // overflowing products
        case 6: return frand() * 1e-30f;                             // subnormal products
        default: return gemm_float(0x7f800001u | (uint32_t)(next() & 0x3fffffu)); // NaN payloads
        }
    }
    // a spread of magnitudes makes rounding matter at every step
    return frand() * ldexpf(1.0f, irand(-6, 6));
}
static void fill(float *a, size_t n, int special) {
    for (size_t i = 0; i < n; i++) a[i] = value(special);
}

static const char *isas[3];
static int n_isas;

// First differing element of two arrays, or -1.
static long first_diff(const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (gemm_bits(a[i]) != gemm_bits(b[i])) return (long)i;
    return -1;
}

// ---- one random case ----
// Computes columns [n0, n1) of an (M, N, K) product with strides ldx/ldy on every ISA and
// thread count, into NaN-sentinel buffers, and compares whole buffers with the reference.
static void one_case(int M, int N, int K, int special, int mc, int pc, int kc) {
    const size_t ldx = (size_t)K + (next() % 3 ? 0 : (size_t)irand(1, 5));
    const size_t ldy = (size_t)N + (next() % 3 ? 0 : (size_t)irand(1, 5));
    int n0 = 0, n1 = N;
    if (next() % 3 == 0) n0 = irand(0, N), n1 = irand(n0, N);
    const int use_bias = next() % 2, bf16 = next() % 2;
    float *x = malloc(((size_t)M * ldx + 1) * 4), *w = malloc(((size_t)N * K + 1) * 4), *b = malloc(((size_t)N + 1) * 4);
    float *ref = malloc(((size_t)M * ldy + 1) * 4), *full = malloc(((size_t)M * N + 1) * 4),
          *y = malloc(((size_t)M * ldy + 1) * 4);
    fill(x, (size_t)M * ldx, special), fill(w, (size_t)N * K, special), fill(b, (size_t)N, special);
    const float sentinel = gemm_float(0x7fbadbadu);
    for (size_t i = 0; i < (size_t)M * ldy; i++) ref[i] = sentinel;
    gemm_ref(&(struct gemm_io){full, (size_t)N, x, ldx, M, use_bias ? b : NULL, bf16}, w, (size_t)K, N, K);
    for (int m = 0; m < M; m++) memcpy(ref + (size_t)m * ldy + n0, full + (size_t)m * N + n0, (size_t)(n1 - n0) * 4);
    gemm_set_blocking(mc, pc, 0);
    gemm_set_kc(kc);
    for (int s = 0; s < n_isas; s++) {
        gemm_isa_set(isas[s]);
        struct gemm_w pw;
        int rc = gemm_pack(&pw, GEMM_FMT_F32, &(struct gemm_mat){w, GEMM_SRC_F32, (size_t)K, N, K}, irand(1, 3));
        CHECK(rc == 0, "pack rc %d", rc);
        for (int nt = 1; nt <= 4; nt++) {
            for (size_t i = 0; i < (size_t)M * ldy; i++) y[i] = sentinel;
            rc = gemm_run(&(struct gemm_io){y, ldy, x, ldx, M, use_bias ? b : NULL, bf16}, &pw, n0, n1, nt);
            long d = first_diff(y, ref, (size_t)M * ldy);
            CHECK(rc == 0 && d < 0,
                  "%s t=%d M=%d N=%d K=%d ldx=%zu ldy=%zu cols [%d,%d) bias %d bf16 %d special %d blk %d,%d,%d: "
                  "rc %d, element %ld (row %ld col %ld) got %08x ref %08x",
                  isas[s], nt, M, N, K, ldx, ldy, n0, n1, use_bias, bf16, special, mc, pc, kc, rc, d,
                  d < 0 ? -1 : d / (long)ldy, d < 0 ? -1 : d % (long)ldy, d < 0 ? 0 : gemm_bits(y[d]),
                  d < 0 ? 0 : gemm_bits(ref[d]));
        }
        // the task interface: every block once, in a shuffled order, equals gemm_run
        struct gemm_plan pl;
        for (size_t i = 0; i < (size_t)M * ldy; i++) y[i] = sentinel;
        rc = gemm_plan_init(&pl, &(struct gemm_io){y, ldy, x, ldx, M, use_bias ? b : NULL, bf16}, &pw, n0, n1);
        int order[4096], nt = pl.n_tasks < 4096 ? pl.n_tasks : 0;
        for (int t = 0; t < nt; t++) order[t] = t;
        for (int t = nt - 1; t > 0; t--) {
            int u = irand(0, t), v = order[t];
            order[t] = order[u], order[u] = v;
        }
        for (int t = 0; t < nt; t++) gemm_plan_task(&pl, order[t]);
        long d = first_diff(y, ref, (size_t)M * ldy);
        CHECK(rc == 0 && pl.n_tasks == nt && d < 0, "%s plan (%d tasks, shuffled) M=%d N=%d K=%d: element %ld",
              isas[s], pl.n_tasks, M, N, K, d);
        gemm_w_free(&pw);
    }
    gemm_set_blocking(0, 0, -1);
    gemm_set_kc(0);
    free(x), free(w), free(b), free(ref), free(full), free(y);
}

static const int primes[] = {1, 2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73,
                             79, 83, 89, 97, 101, 127, 131, 251, 257, 263, 293};
static int pick_dim(int max) {
    switch (next() % 4) {
    case 0: return primes[next() % (sizeof primes / sizeof primes[0])];
    case 1: { int m = 16 * irand(1, max / 16); return m + irand(-1, 1) > 0 ? m + irand(-1, 1) : 1; } // tile edges
    default: return irand(1, max);
    }
}

static void test_random(int n) {
    for (int i = 0; i < n; i++) {
        const int M = pick_dim(300), N = pick_dim(300), K = next() % 8 == 0 ? irand(250, 600) : pick_dim(300);
        // block shapes: the default, or small blocks so that several threads share the work
        // and K blocks: the default (one block up to 1024), or short ones (partial sums in y)
        const int mc = next() % 2 ? 0 : irand(1, 40), pc = next() % 2 ? 0 : irand(1, 5);
        const int kc = next() % 2 ? 0 : irand(1, 100);
        one_case(M, N, K, next() % 3 == 0, mc, pc, kc);
    }
}

static void test_fixed(void) {
    // K across the K-block boundaries, tails of every tile, a few real shapes (cut in M)
    static const int shapes[][3] = {{1, 1, 1},     {1, 16, 1},     {14, 32, 256},  {15, 33, 257}, {13, 31, 255},
                                    {6, 16, 512},  {7, 17, 513},   {28, 64, 1},    {29, 65, 2},   {300, 300, 300},
                                    {3, 1024, 1024}, {64, 576, 576}, {37, 192, 576}, {5, 1536, 576}, {33, 1024, 3072}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        one_case(shapes[i][0], shapes[i][1], shapes[i][2], 0, 0, 0, 0);
        one_case(shapes[i][0], shapes[i][1], shapes[i][2], 1, 7, 2, 0);
        one_case(shapes[i][0], shapes[i][1], shapes[i][2], 1, 0, 0, 256);
        one_case(shapes[i][0], shapes[i][1], shapes[i][2], 0, 3, 1, 17);
    }
}

// ---- special cases ----
static void test_zero_sign_nan(void) {
    enum { M = 3, N = 20, K = 9 };
    float x[M * K], w[N * K], y[M * N], b[N];
    for (int i = 0; i < M * K; i++) x[i] = -1.0f;
    for (int i = 0; i < N * K; i++) w[i] = 0.0f; // every product is -0.0
    for (int s = 0; s < n_isas; s++) {
        gemm_isa_set(isas[s]);
        for (int i = 0; i < N; i++) b[i] = -0.0f;
        struct gemm_w pw;
        gemm_pack(&pw, GEMM_FMT_F32, &(struct gemm_mat){w, GEMM_SRC_F32, K, N, K}, 1);
        gemm_run(&(struct gemm_io){y, N, x, K, M, NULL, 0}, &pw, 0, N, 1);
        int pos = 1;
        for (int i = 0; i < M * N; i++) pos &= gemm_bits(y[i]) == 0u;
        CHECK(pos, "%s: all-(-0.0) products must give +0.0 (chain starts at +0.0)", isas[s]);
        gemm_run(&(struct gemm_io){y, N, x, K, M, b, 0}, &pw, 0, N, 1); // +0.0 + -0.0 = +0.0
        pos = 1;
        for (int i = 0; i < M * N; i++) pos &= gemm_bits(y[i]) == 0u;
        CHECK(pos, "%s: +0.0 + bias -0.0 must give +0.0", isas[s]);
        // NaN in one x row propagates to that row only, canonical; Inf*0 and Inf-Inf give NaN
        x[K + 4] = NAN;
        w[2 * K + 1] = INFINITY; // row 0 col 2: -1*Inf = -Inf; row 2 too
        w[3 * K + 1] = INFINITY, w[3 * K + 2] = -INFINITY; // col 3: -Inf + Inf = NaN
        gemm_w_free(&pw);
        gemm_pack(&pw, GEMM_FMT_F32, &(struct gemm_mat){w, GEMM_SRC_F32, K, N, K}, 1);
        gemm_run(&(struct gemm_io){y, N, x, K, M, NULL, 1}, &pw, 0, N, 1);
        int ok = 1;
        for (int n = 0; n < N; n++) ok &= gemm_bits(y[N + n]) == GEMM_QNAN;
        CHECK(ok, "%s: NaN in x row 1 must give canonical NaN in every column of row 1", isas[s]);
        CHECK(y[2] == -INFINITY && y[2 * N + 2] == -INFINITY, "%s: -Inf expected, got %g", isas[s], y[2]);
        CHECK(gemm_bits(y[3]) == GEMM_QNAN && gemm_bits(y[2 * N + 3]) == GEMM_QNAN, "%s: Inf-Inf must be NaN",
              isas[s]);
        CHECK(gemm_bits(y[0]) == 0u && gemm_bits(y[2 * N]) == 0u, "%s: other columns stay +0.0", isas[s]);
        x[K + 4] = -1.0f;
        w[2 * K + 1] = w[3 * K + 1] = w[3 * K + 2] = 0.0f;
        gemm_w_free(&pw);
        // K = 0: y = +0.0 + bias
        for (int i = 0; i < N; i++) b[i] = (float)i - 3.5f;
        gemm_pack(&pw, GEMM_FMT_F32, &(struct gemm_mat){w, GEMM_SRC_F32, 0, N, 0}, 1);
        gemm_run(&(struct gemm_io){y, N, x, 0, M, b, 0}, &pw, 0, N, 2);
        ok = 1;
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) ok &= y[m * N + n] == b[n] && gemm_bits(y[m * N + n]) == gemm_bits(b[n] + 0.0f);
        CHECK(ok, "%s: K = 0 must give bias", isas[s]);
        gemm_w_free(&pw);
    }
}

// The epilogue's bf16 rounding against the definition in common.h, on edge patterns
// (ties, carries into the exponent, overflow to Inf, NaN) and random bits.
static uint16_t f32_to_bf16_ref(float x) { // common.h, verbatim semantics
    uint32_t u = gemm_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static void test_bf16_epilogue(void) {
    enum { N = 64 };
    static const uint32_t pats[] = {0x3f808000u, 0x3f818000u, 0x3f807fffu, 0x3f80ffffu, 0x7f7fffffu, 0x7f7f8000u,
                                    0x7f7f7fffu, 0xff7fffffu, 0x00008000u, 0x00018000u, 0x80008000u, 0x7f800000u,
                                    0xff800000u, 0x00000000u, 0x80000000u, 0x3effffffu, 0x7fc00000u, 0x7f800001u};
    float b[N], w[N], y[N], x[1] = {1.0f}, r[N];
    for (int n = 0; n < N; n++) b[n] = n < 18 ? gemm_float(pats[n]) : gemm_float((uint32_t)next());
    for (int n = 0; n < N; n++) w[n] = 0.0f; // y = +0.0 + bias[n], then rounded
    for (int s = 0; s < n_isas; s++) {
        gemm_isa_set(isas[s]);
        struct gemm_w pw;
        gemm_pack(&pw, GEMM_FMT_F32, &(struct gemm_mat){w, GEMM_SRC_F32, 1, N, 1}, 1);
        gemm_run(&(struct gemm_io){y, N, x, 1, 1, b, 1}, &pw, 0, N, 1);
        int bad = -1;
        for (int n = 0; n < N; n++) {
            float v = 0.0f + b[n];
            r[n] = isnan(v) ? gemm_float(GEMM_QNAN) : gemm_float((uint32_t)f32_to_bf16_ref(v) << 16);
            if (gemm_bits(y[n]) != gemm_bits(r[n]) && bad < 0) bad = n;
        }
        CHECK(bad < 0, "%s: bf16 epilogue of %08x: got %08x want %08x", isas[s], bad < 0 ? 0 : gemm_bits(b[bad]),
              bad < 0 ? 0 : gemm_bits(y[bad]), bad < 0 ? 0 : gemm_bits(r[bad]));
        gemm_w_free(&pw);
    }
}

// ---- packing from bf16 / f16: all 65536 codes, several shapes, every path ----
static float f16_ref(uint16_t h) { // common.c f16_to_f32, verbatim semantics
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return gemm_float(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        float v = (float)m * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return gemm_float(sign | ((e + 112) << 23) | (m << 13));
}
static void test_pack_16bit(void) {
    static const int shapes[][2] = {{256, 256}, {4096, 16}, {65536, 1}, {300, 219}, {17, 3856}};
    for (int t = 0; t < 2; t++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            const int N = shapes[si][0], K = shapes[si][1];
            const size_t n = (size_t)N * K, ld = (size_t)K + (si % 2);
            uint16_t *h = malloc((size_t)N * ld * 2);
            float *f = malloc((size_t)N * ld * 4);
            for (size_t i = 0; i < (size_t)N * ld; i++) {
                h[i] = (uint16_t)(i < n ? i * 40503u : next()); // a permutation of all codes when n = 65536
                f[i] = t == 0 ? gemm_float((uint32_t)h[i] << 16) : f16_ref(h[i]);
            }
            const size_t bytes = gemm_packed_bytes(GEMM_FMT_F32, N, K);
            float *p16 = aligned_alloc(64, bytes), *p32 = aligned_alloc(64, bytes);
            for (int s = 0; s < n_isas; s++) {
                gemm_isa_set(isas[s]);
                struct gemm_w a, b;
                memset(p16, 0xff, bytes), memset(p32, 0xee, bytes);
                int rc1 = gemm_pack_into(&a, GEMM_FMT_F32, p16, bytes, &(struct gemm_mat){h, t == 0 ? GEMM_SRC_BF16 : GEMM_SRC_F16, ld, N, K}, 2);
                int rc2 = gemm_pack_into(&b, GEMM_FMT_F32, p32, bytes, &(struct gemm_mat){f, GEMM_SRC_F32, ld, N, K}, 2);
                CHECK(rc1 == 0 && rc2 == 0 && memcmp(p16, p32, bytes) == 0, "%s: %s packing of (%d,%d) differs from f32",
                      isas[s], t == 0 ? "bf16" : "f16", N, K);
                // and the packed layout itself: panel p, k, lane c = row p*16+c, column k
                long bad = -1;
                for (int r = 0; r < N && bad < 0; r++)
                    for (int k = 0; k < K; k++)
                        if (gemm_bits(p32[((size_t)(r / 16) * K + k) * 16 + r % 16]) != gemm_bits(f[(size_t)r * ld + k])) {
                            bad = (long)r * K + k;
                            break;
                        }
                CHECK(bad < 0, "%s: packed layout wrong at %ld", isas[s], bad);
            }
            free(h), free(f), free(p16), free(p32);
        }
}

// gemm_w_init + gemm_pack_panels in random chunks, in reverse order, equals gemm_pack.
static void test_pack_panels(void) {
    for (int it = 0; it < 20; it++) {
        const int N = pick_dim(300), K = pick_dim(300), np = (N + 15) / 16;
        float *w = malloc((size_t)N * K * 4);
        fill(w, (size_t)N * K, 1);
        const size_t bytes = gemm_packed_bytes(GEMM_FMT_F32, N, K);
        float *mem = aligned_alloc(64, bytes + 64);
        for (int s = 0; s < n_isas; s++) {
            gemm_isa_set(isas[s]);
            struct gemm_w a, b;
            gemm_pack(&a, GEMM_FMT_F32, &(struct gemm_mat){w, GEMM_SRC_F32, (size_t)K, N, K}, 1);
            int rc = gemm_w_init(&b, GEMM_FMT_F32, mem, bytes, N, K);
            for (int pb = np; pb > 0 && !rc;) {
                const int step = irand(1, 5), pa = pb - step < 0 ? 0 : pb - step;
                rc = gemm_pack_panels(&b, &(struct gemm_mat){w, GEMM_SRC_F32, (size_t)K, N, K}, pa, pb);
                pb = pa;
            }
            CHECK(rc == 0 && memcmp(a.p, b.p, bytes) == 0, "%s: pack_panels (%d,%d) rc %d", isas[s], N, K, rc);
            float row[300];
            int same = 1;
            for (int n = 0; n < N; n++) {
                gemm_w_row(&a, n, row);
                same &= memcmp(row, w + (size_t)n * K, (size_t)K * 4) == 0;
            }
            CHECK(same, "%s: gemm_w_row differs from the source rows", isas[s]);
            CHECK(gemm_pack_panels(&b, &(struct gemm_mat){w, GEMM_SRC_F32, (size_t)K, N, K}, 0, np + 1) == GEMM_ERR_RANGE, "pb > panels");
            CHECK(gemm_w_init(&b, GEMM_FMT_F32, mem, bytes - 1, N, K) == GEMM_ERR_RANGE || bytes == 0, "short");
            gemm_w_free(&a);
        }
        free(w), free(mem);
    }
}

// ---- row invariance ----
// Row r of x gives the same bits as the only row of an M=1 product, as row 3 of M=7 and at
// several offsets of an M=4096 batch (neighbours random), on every path and thread count.
static void test_row_invariance(void) {
    enum { N = 1024, K = 1024, MBIG = 4096 };
    float *w = malloc((size_t)N * K * 4), *x = malloc((size_t)MBIG * K * 4), *y = malloc((size_t)MBIG * N * 4);
    float *row = malloc(K * 4), *ref = malloc(N * 4), *b = malloc(N * 4);
    fill(w, (size_t)N * K, 0), fill(row, K, 0), fill(b, N, 0);
    gemm_ref(&(struct gemm_io){ref, N, row, K, 1, b, 1}, w, K, N, K);
    static const int offs[] = {0, 1, 11, 12, 13, 1234, 4095};
    for (int s = 0; s < n_isas; s++) {
        gemm_isa_set(isas[s]);
        struct gemm_w pw;
        gemm_pack(&pw, GEMM_FMT_F32, &(struct gemm_mat){w, GEMM_SRC_F32, K, N, K}, 2);
        gemm_run(&(struct gemm_io){y, N, row, K, 1, b, 1}, &pw, 0, N, 1);
        CHECK(first_diff(y, ref, N) < 0, "%s: M=1 row differs from reference", isas[s]);
        fill(x, (size_t)7 * K, 0);
        memcpy(x + 3 * K, row, K * 4);
        gemm_run(&(struct gemm_io){y, N, x, K, 7, b, 1}, &pw, 0, N, 2);
        CHECK(first_diff(y + 3 * N, ref, N) < 0, "%s: row 3 of M=7 differs", isas[s]);
        if (!strcmp(isas[s], "scalar")) { // the scalar path is slow; M=4096 twice is enough
            gemm_w_free(&pw);
            continue;
        }
        for (size_t o = 0; o < sizeof offs / sizeof offs[0]; o++) {
            const int nt = 1 + (int)(o % 4);
            fill(x, (size_t)MBIG * K, 0);
            memcpy(x + (size_t)offs[o] * K, row, K * 4);
            gemm_run(&(struct gemm_io){y, N, x, K, MBIG, b, 1}, &pw, 0, N, nt);
            CHECK(first_diff(y + (size_t)offs[o] * N, ref, N) < 0, "%s: row at offset %d of M=%d (t=%d) differs",
                  isas[s], offs[o], MBIG, nt);
        }
        gemm_w_free(&pw);
    }
    free(w), free(x), free(y), free(row), free(ref), free(b);
}

// gemm_ref against a double-precision dot product (guards against a reference that agrees
// with the kernels for a wrong reason, e.g. a transposed operand).
static void test_ref_sane(void) {
    enum { M = 5, N = 7, K = 300 };
    float x[M * K], w[N * K], y[M * N];
    fill(x, M * K, 0), fill(w, N * K, 0);
    gemm_ref(&(struct gemm_io){y, N, x, K, M, NULL, 0}, w, K, N, K);
    double worst = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double s = 0, a = 0;
            for (int k = 0; k < K; k++) s += (double)x[m * K + k] * w[n * K + k], a += fabs((double)x[m * K + k] * w[n * K + k]);
            double e = fabs(y[m * N + n] - s) / a;
            if (e > worst) worst = e;
        }
    CHECK(worst < 1e-5, "gemm_ref vs double: relative error %.3g", worst);
}

// ---- arguments and ISA selection ----
static void test_errors(void) {
    float w[32 * 8] = {0}, x[8] = {0}, y[32];
    struct gemm_w pw;
    CHECK(gemm_pack(&pw, GEMM_FMT_F32, &(struct gemm_mat){w, GEMM_SRC_F32, 8, 32, 8}, 1) == 0, "pack");
    CHECK(gemm_run(&(struct gemm_io){y, 32, x, 7, 1, NULL, 0}, &pw, 0, 32, 1) == GEMM_ERR_RANGE, "ldx < K");
    CHECK(gemm_run(&(struct gemm_io){y, 32, x, 8, 1, NULL, 0}, &pw, 0, 33, 1) == GEMM_ERR_RANGE, "n1 > N");
    CHECK(gemm_run(&(struct gemm_io){y, 32, x, 8, 1, NULL, 0}, &pw, 5, 4, 1) == GEMM_ERR_RANGE, "n1 < n0");
    CHECK(gemm_run(&(struct gemm_io){y, 31, x, 8, 1, NULL, 0}, &pw, 0, 32, 1) == GEMM_ERR_RANGE, "ldy < n1");
    CHECK(gemm_run(&(struct gemm_io){y, 32, x, 8, -1, NULL, 0}, &pw, 0, 32, 1) == GEMM_ERR_RANGE, "M < 0");
    CHECK(gemm_run(&(struct gemm_io){y, 32, x, 8, 0, NULL, 0}, &pw, 0, 32, 1) == 0, "M = 0 is a no-op");
    gemm_w_free(&pw);
    struct gemm_w q;
    char *mem = aligned_alloc(64, 64 * 1024);
    CHECK(gemm_pack_into(&q, GEMM_FMT_F32, mem + 4, 60000, &(struct gemm_mat){w, GEMM_SRC_F32, 8, 32, 8}, 1) == GEMM_ERR_RANGE, "misaligned mem");
    CHECK(gemm_pack_into(&q, GEMM_FMT_F32, mem, gemm_packed_bytes(GEMM_FMT_F32, 32, 8) - 1, &(struct gemm_mat){w, GEMM_SRC_F32, 8, 32, 8}, 1) == GEMM_ERR_RANGE,
          "short mem");
    CHECK(gemm_pack_into(&q, GEMM_FMT_F32, mem, 65536, &(struct gemm_mat){w, GEMM_SRC_F32, 7, 32, 8}, 1) == GEMM_ERR_RANGE, "ld < K");
    CHECK(gemm_pack_into(&q, GEMM_FMT_F32, mem, 65536, &(struct gemm_mat){w, 9, 8, 32, 8}, 1) == GEMM_ERR_RANGE, "bad type");
    CHECK(gemm_packed_bytes(GEMM_FMT_F32, 17, 3) == 2 * 3 * 16 * 4, "packed bytes %zu", gemm_packed_bytes(GEMM_FMT_F32, 17, 3));
    CHECK(gemm_packed_bytes(GEMM_FMT_F32, -1, 3) == 0 && gemm_packed_bytes(GEMM_FMT_F32, 0x7fffffff, 0x7fffffff) != 0, "packed bytes edge");
    free(mem);
    CHECK(gemm_isa_set("bogus") == GEMM_ERR_RANGE, "unknown ISA name");
    CHECK(gemm_isa_set("scalar") == 0 && !strcmp(gemm_isa_name(), "scalar"), "force scalar");
}

// Before anything else selects a path: the environment override and its errors.
static void test_env(void) {
    char msg[256] = "";
    setenv("HIFA4_GEMM_ISA", "bogus", 1);
    CHECK(gemm_isa_init(msg, sizeof msg) == GEMM_ERR_RANGE && strstr(msg, "bogus"), "env bogus: %s", msg);
    CHECK(!strcmp(gemm_isa_name(), "none"), "nothing selected after an error");
    const char *names[] = {"avx512", "avx2"};
    for (int i = 0; i < 2; i++)
        if (!gemm_isa_supported(names[i])) {
            setenv("HIFA4_GEMM_ISA", names[i], 1);
            CHECK(gemm_isa_init(msg, sizeof msg) == GEMM_ERR_UNSUPPORTED, "forced unsupported %s", names[i]);
        }
    setenv("HIFA4_GEMM_ISA", "avx2", 1);
    if (gemm_isa_supported("avx2"))
        CHECK(gemm_isa_init(msg, sizeof msg) == 0 && !strcmp(gemm_isa_name(), "avx2"), "env avx2: %s",
              gemm_isa_name());
    unsetenv("HIFA4_GEMM_ISA");
    gemm_isa_set(NULL);
    printf("automatic ISA on this CPU: %s\n", gemm_isa_name());
}

int main(int argc, char **argv) {
    const int n_random = argc > 1 ? atoi(argv[1]) : 400;
    test_env();
    static const char *const all[] = {"avx512", "avx2", "scalar"};
    for (int i = 0; i < 3; i++)
        if (gemm_isa_supported(all[i])) isas[n_isas++] = all[i];
    printf("paths under test:");
    for (int i = 0; i < n_isas; i++) printf(" %s", isas[i]);
    printf("\n");
    test_ref_sane();
    test_errors();
    test_zero_sign_nan();
    test_bf16_epilogue();
    test_pack_16bit();
    test_pack_panels();
    test_fixed();
    test_random(n_random);
    test_row_invariance();
    return test_summary("test_gemm");
}
