// test_perturb.c: the one-ulp null perturbation of run --replicas (model/perturb.h): each
// element moves to an adjacent binary32 value of the same sign, applying it twice restores
// every bit (specials, subnormals, FLT_MAX, random patterns), the hash bits are pinned to an
// independent implementation (so every machine moves the same elements the same way), and the
// packed-panel form equals the row-major form whatever N is.
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "model/perturb.h"
#include "test.h"

static uint32_t bits_of(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static float of_bits(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static void test_one(void) {
    // 1.0 = 0x3f800000 (even magnitude): bit 0 -> 0x3f800001 (one ulp up), bit 1 -> 0x3f7fffff
    CHECK(bits_of(perturb_one(1.0f, 0)) == 0x3f800001u, "%08x", bits_of(perturb_one(1.0f, 0)));
    CHECK(bits_of(perturb_one(1.0f, 1)) == 0x3f7fffffu, "%08x", bits_of(perturb_one(1.0f, 1)));
    CHECK(perturb_one(-1.0f, 0) == -nextafterf(1.0f, 2.0f), "negative: magnitude up = value down");
    // zeros, subnormals and the smallest normal's pairing with a subnormal stay (revision 2)
    CHECK(bits_of(perturb_one(0.0f, 0)) == 0u && bits_of(perturb_one(0.0f, 1)) == 0u, "zero stays");
    CHECK(bits_of(perturb_one(-0.0f, 0)) == 0x80000000u && bits_of(perturb_one(-0.0f, 1)) == 0x80000000u, "-0 stays");
    CHECK(bits_of(perturb_one(of_bits(1u), 0)) == 1u && bits_of(perturb_one(of_bits(0x007fffffu), 1)) == 0x007fffffu, "subnormals stay");
    CHECK(bits_of(perturb_one(FLT_MIN, 0)) == 0x00800001u && perturb_one(FLT_MIN, 1) == FLT_MIN, "FLT_MIN: up, never down");
    CHECK(perturb_one(FLT_MAX, 1) == FLT_MAX, "FLT_MAX never reaches inf");
    CHECK(perturb_one(FLT_MAX, 0) == nextafterf(FLT_MAX, 0.0f), "FLT_MAX down");
    CHECK(isinf(perturb_one(INFINITY, 0)) && isinf(perturb_one(-INFINITY, 1)), "inf unchanged");
    CHECK(isnan(perturb_one(NAN, 0)) && bits_of(perturb_one(NAN, 1)) == bits_of(NAN), "NaN unchanged");
    // an involution that moves by exactly one ulp (or not at all at the edges), sign kept
    uint32_t edges[] = {0, 1, 2, 3, 0x007fffff, 0x00800000, 0x3f800000, 0x7f7ffffd, 0x7f7ffffe, 0x7f7fffff, 0x7f800000,
                        0x7f800001, 0x7fc00000, 0x7fffffff};
    uint64_t s = 12345;
    int bad = 0, moved = 0, up = 0;
    for (int i = 0; i < 2000000; i++) {
        uint32_t u;
        if (i < 28) u = edges[i % 14] | (i >= 14 ? 0x80000000u : 0);
        else { s = s * 6364136223846793005ull + 1442695040888963407ull; u = (uint32_t)(s >> 32); }
        for (int b = 0; b < 2; b++) {
            float x = of_bits(u), y = perturb_one(x, b);
            uint32_t v = bits_of(y), m = u & 0x7fffffffu, mv = v & 0x7fffffffu;
            bad += bits_of(perturb_one(y, b)) != u;                    // restores every bit
            bad += (v & 0x80000000u) != (u & 0x80000000u);             // sign kept
            bad += !(mv == m || mv == m + 1 || mv + 1 == m);           // at most one ulp
            bad += isfinite(x) && !isfinite(y);                        // never inf or NaN
            bad += mv != m && mv < 0x00800000u;                        // never subnormal
            bad += mv == m && m < 0x7f7fffffu && m > 0x00800000u;      // only the edges stay
            moved += mv != m;
            up += mv > m;
        }
    }
    CHECK(bad == 0, "%d violations", bad);
    CHECK(up > 0.49 * moved && up < 0.51 * moved, "up %d of %d", up, moved);
}

static void test_bits(void) {
    // from an independent implementation of the hash (Python, integers mod 2^64)
    const int a[16] = {1, 1, 0, 1, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0, 1, 1};
    const int b[16] = {1, 1, 1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1};
    const int c[16] = {1, 0, 1, 1, 0, 0, 0, 0, 1, 0, 1, 1, 0, 1, 0, 0};
    const int d[8] = {1, 0, 1, 1, 1, 1, 1, 0};
    struct perturb_key ka = {21, 1, 0}, kb = {21, 2, 0}, kc = {7, 1, 5};
    int bad = 0;
    for (int e = 0; e < 16; e++) bad += perturb_bit(&ka, e) != a[e] || perturb_bit(&kb, e) != b[e] || perturb_bit(&kc, e) != c[e];
    for (int e = 0; e < 8; e++) bad += perturb_bit(&kc, 1000000 + e) != d[e];
    CHECK(bad == 0, "%d hash bits differ from the reference", bad);
    // balanced, and replicas are independent draws (agreement about one half)
    int ones = 0, agree = 0;
    for (int e = 0; e < 100000; e++) {
        ones += perturb_bit(&ka, e);
        agree += perturb_bit(&ka, e) == perturb_bit(&kb, e);
    }
    CHECK(ones > 49000 && ones < 51000, "ones %d", ones);
    CHECK(agree > 49000 && agree < 51000, "agree %d", agree);
}

static void test_packed(void) {
    enum { N = 37, K = 11 };   // N not a multiple of GEMM_NR: a padded last panel
    float w[N * K], ref[N * K], row[K];
    for (int i = 0; i < N * K; i++) w[i] = ref[i] = sinf(0.37f * i + 0.1f) * 3.0f; // no zero: zeros stay
    struct gemm_w pw;
    const struct gemm_mat src = {w, GEMM_SRC_F32, K, N, K};
    CHECK(gemm_pack(&pw, GEMM_FMT_F32, &src, 1) == 0, "pack");
    struct perturb_key k = {99, 3, 42};
    perturb_packed(&pw, &k);
    perturb_array(ref, N * K, &k, 0);
    int bad = 0, moved = 0;
    for (int n = 0; n < N; n++) {
        gemm_w_row(&pw, n, row);
        for (int j = 0; j < K; j++) {
            bad += bits_of(row[j]) != bits_of(ref[n * K + j]);
            moved += bits_of(row[j]) != bits_of(w[n * K + j]);
        }
    }
    CHECK(bad == 0 && moved == N * K, "packed vs row-major: %d differ, %d of %d moved", bad, moved, N * K);
    const int n_pad = (GEMM_NR - N % GEMM_NR) % GEMM_NR;   // padding past N stays zero
    int pad_bad = 0;
    for (int kk = 0; kk < K; kk++)
        for (int j = GEMM_NR - n_pad; j < GEMM_NR; j++) pad_bad += pw.p[((size_t)(N / GEMM_NR) * K + kk) * GEMM_NR + j] != 0;
    CHECK(pad_bad == 0, "padding moved: %d", pad_bad);
    perturb_packed(&pw, &k);   // twice: every bit back
    for (int n = 0; n < N; n++) {
        gemm_w_row(&pw, n, row);
        for (int j = 0; j < K; j++) bad += bits_of(row[j]) != bits_of(w[n * K + j]);
    }
    CHECK(bad == 0, "restored: %d differ", bad);
    gemm_w_free(&pw);
}

int main(void) {
    test_one();
    test_bits();
    test_packed();
    return test_summary("test_perturb");
}
