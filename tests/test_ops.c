// test_ops.c: the forward-pass kernels against scalar long-double references written
// independently here (STYLE.md section 7): RMSNorm (plain and 1+w, f32 and bf16 rounding),
// RoPE (rotate half, partial rotary), SiLU / GELU-tanh / GELU gates, soft-capping, residual add,
// and sgemm against the naive reference.
#include <stdlib.h>

#include "base/common.h"
#include "model/config.h"
#include "model/gemm.h"
#include "model/ops.h"
#include "test.h"

static uint64_t rng = 88172645463325252ull;
static double urand(void) { // xorshift64, uniform in [-1, 1)
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 4503599627370496.0 - 1.0;
}
static void fill(float *x, size_t n, double scale) {
    for (size_t i = 0; i < n; i++) x[i] = (float)(scale * urand());
}
static void fill_nan(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = NAN;
}

static void test_rmsnorm(void) {
    const int sizes[] = {1, 7, 64, 128, 1000};
    for (int si = 0; si < 5; si++) {
        const int n = sizes[si];
        float *x = malloc(sizeof(float) * n), *w = malloc(sizeof(float) * n), *o = malloc(sizeof(float) * n);
        fill(x, n, 3.0);
        fill(w, n, 1.0);
        for (int p1 = 0; p1 < 2; p1++) {
            long double ss = 0;
            for (int i = 0; i < n; i++) ss += (long double)x[i] * x[i];
            const long double r = 1.0L / sqrtl(ss / n + 1e-6L);
            fill_nan(o, n);
            ops_rmsnorm(o, x, w, n, 1e-6, p1, 0);
            int bad = 0;
            for (int i = 0; i < n; i++) {
                long double ref = x[i] * r * (p1 ? 1.0L + w[i] : (long double)w[i]);
                bad += !(fabsl(o[i] - ref) <= 1e-6L * fabsl(ref) + 1e-30L);
            }
            CHECK(bad == 0, "rmsnorm n=%d plus_one=%d: %d values off", n, p1, bad);
            // bf16: Llama rounds x*r, then the product; Gemma2 rounds once
            fill_nan(o, n);
            ops_rmsnorm(o, x, w, n, 1e-6, p1, 1);
            bad = 0;
            for (int i = 0; i < n; i++) {
                float xn = (float)(x[i] * r);
                float ref = p1 ? round_bf16(xn * (1.0f + w[i])) : round_bf16(w[i] * round_bf16(xn));
                bad += o[i] != ref;
            }
            CHECK(bad == 0, "rmsnorm bf16 n=%d plus_one=%d: %d values differ from the HF rounding", n, p1, bad);
        }
        // in place and eps dominating
        float z[4] = {0, 0, 0, 0}, wz[4] = {1, 1, 1, 1};
        ops_rmsnorm(z, z, wz, 4, 1e-6, 0, 0);
        CHECK(z[0] == 0 && z[3] == 0, "rmsnorm of zeros: %g", z[0]);
        free(x), free(w), free(o);
    }
}

static void test_rope(void) {
    const int H = 3, hd = 64;
    for (int rot = 64; rot >= 48; rot -= 16) { // full and Phi3-style partial (0.75)
        float x[3 * 64], o[3 * 64];
        double cs[32], sn[32];
        fill(x, (size_t)H * hd, 2.0);
        const int pos = 37;
        const double af = rot == 48 ? 1.1 : 1.0; // attention factor folded into the tables
        for (int i = 0; i < rot / 2; i++) {
            double a = pos * pow(10000.0, -2.0 * i / rot);
            cs[i] = cos(a) * af;
            sn[i] = sin(a) * af;
        }
        memcpy(o, x, sizeof x);
        ops_rope(o, cs, sn, H, hd, rot, 0);
        int bad = 0;
        for (int h = 0; h < H; h++)
            for (int i = 0; i < hd; i++) {
                const float *v = x + h * hd;
                long double ref;
                if (i >= rot) ref = v[i];
                else {
                    int j = i % (rot / 2);
                    long double a = (long double)pos * powl(10000.0L, -2.0L * j / rot);
                    long double c = cosl(a) * af, s = sinl(a) * af;
                    // rotate_half: first half pairs with -second half, second half with first half
                    ref = i < rot / 2 ? v[i] * c - v[i + rot / 2] * s : v[i] * c + v[i - rot / 2] * s;
                }
                bad += !(fabsl(o[h * hd + i] - ref) <= 1e-6L * (fabsl(ref) + 1e-3L));
            }
        CHECK(bad == 0, "rope rot=%d: %d values off the reference", rot, bad);
        // pass-through channels exactly untouched
        int moved = 0;
        for (int h = 0; h < H; h++)
            for (int i = rot; i < hd; i++) moved += o[h * hd + i] != x[h * hd + i];
        CHECK(moved == 0, "rope rot=%d changed %d pass-through channels", rot, moved);
        // bf16 path: bf16-valued outputs, close to the f32 result
        memcpy(o, x, sizeof x);
        ops_rope(o, cs, sn, H, hd, rot, 1);
        int nb = 0;
        double md = 0;
        float ref32[3 * 64];
        memcpy(ref32, x, sizeof x);
        ops_rope(ref32, cs, sn, H, hd, rot, 0);
        for (int i = 0; i < H * hd; i++) {
            nb += i % hd < rot && o[i] != round_bf16(o[i]);
            double d = fabs(o[i] - ref32[i]) / (fabs(ref32[i]) + 0.05);
            if (d > md) md = d;
        }
        CHECK(nb == 0, "rope bf16: %d outputs not bf16", nb);
        CHECK(md < 0.03, "rope bf16 vs f32: max relative difference %.3g", md); // 3 bf16 roundings ~ 3 * 2^-9
        // and exactly HF's bf16 order: cos/sin rounded, each product and the sum rounded
        int ne = 0;
        for (int h = 0; h < H; h++)
            for (int i = 0; i < rot / 2; i++) {
                const float a = x[h * hd + i], b = x[h * hd + i + rot / 2];
                const float c = round_bf16((float)cs[i]), sv = round_bf16((float)sn[i]);
                ne += f32_bits(o[h * hd + i]) != f32_bits(round_bf16(round_bf16(a * c) + round_bf16(-b * sv)));
                ne += f32_bits(o[h * hd + i + rot / 2]) != f32_bits(round_bf16(round_bf16(b * c) + round_bf16(a * sv)));
            }
        CHECK(ne == 0, "rope bf16 rot=%d: %d values differ in bits from the bf16 formula", rot, ne);
    }
    // position 0 is the identity
    float x[64], y[64];
    double c1[32], s0[32];
    fill(x, 64, 1.0);
    memcpy(y, x, sizeof x);
    for (int i = 0; i < 32; i++) c1[i] = 1, s0[i] = 0;
    ops_rope(y, c1, s0, 1, 64, 64, 0);
    CHECK(!memcmp(x, y, sizeof x), "rope at position 0 is not the identity");
}

static void test_act(void) {
    CHECK_CLOSE(ops_silu64(0), 0, 0, 0);
    CHECK_CLOSE(ops_silu64(1), 0.7310585786300049, 1e-15, 0);
    CHECK_CLOSE(ops_gelu64(1), 0.8413447460685429, 1e-15, 0);
    CHECK_CLOSE(ops_gelu_tanh64(1), 0.8411919906082768, 1e-15, 0);
    CHECK_CLOSE(ops_gelu_tanh64(-10), 0, 1e-15, 0);
    const size_t n = 999;
    float *g = malloc(sizeof(float) * n), *u = malloc(sizeof(float) * n), *o = malloc(sizeof(float) * n);
    fill(g, n, 8.0);
    fill(u, n, 2.0);
    for (int act = 0; act < 3; act++) {
        fill_nan(o, n);
        ops_act_mul(o, g, u, n, act, 0);
        int bad = 0;
        for (size_t i = 0; i < n; i++) {
            long double x = g[i], a;
            if (act == ACT_SILU) a = x / (1 + expl(-x));
            else if (act == ACT_GELU_TANH) a = 0.5L * x * (1 + tanhl(sqrtl(2 / 3.14159265358979323846L) * (x + 0.044715L * x * x * x)));
            else a = 0.5L * x * (1 + erfl(x / sqrtl(2)));
            long double ref = a * u[i];
            bad += !(fabsl(o[i] - ref) <= 1e-6L * fabsl(ref) + 1e-12L);
        }
        CHECK(bad == 0, "act %d: %d values off", act, bad);
        fill_nan(o, n);
        ops_act_mul(o, g, u, n, act, 1);
        bad = 0;
        int far = 0;
        for (size_t i = 0; i < n; i++) {
            // the binary32 activation PyTorch computes for a bf16 tensor, rounded like HF
            const float x = g[i];
            float a32 = act == ACT_SILU ? x / (1.0f + expf(-x))
                      : act == ACT_GELU_TANH ? 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)))
                                             : 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
            bad += o[i] != round_bf16(round_bf16(a32) * u[i]);
            // and within two bf16 roundings of the binary64 value, plus the binary32 cancellation
            // of 1 + tanh / 1 + erf for negative x (absolute ~ 2^-24 |x| |up|, as in PyTorch)
            double a = act == ACT_SILU ? ops_silu64(x) : act == ACT_GELU_TANH ? ops_gelu_tanh64(x) : ops_gelu64(x);
            far += !(fabs(o[i] - a * u[i]) <= 2 * 0.00390625 * fabs(a * u[i]) + 2.4e-7 * fabs(x * u[i]));
        }
        CHECK(bad == 0, "act %d bf16: %d values differ from bf16(bf16(act32) * up)", act, bad);
        CHECK(far == 0, "act %d bf16: %d values further than two bf16 roundings from binary64", act, far);
    }
    // in place (out aliases gate)
    memcpy(o, g, sizeof(float) * n);
    ops_act_mul(o, o, u, n, ACT_SILU, 0);
    CHECK_CLOSE(o[5], ops_silu64(g[5]) * u[5], 1e-6, 1e-6);
    free(g), free(u), free(o);
}

// The bf16 path's table: every one of the 65,536 bf16 gate values (NaN payloads, infinities,
// subnormals, -0) against the binary32 formula computed here, bit for bit, under four up values,
// in place and out of place; a gate with low bits set takes the direct path.
static void test_act_table(void) {
    const size_t n = 65536 + 4;
    float *g = malloc(sizeof(float) * n), *u = malloc(sizeof(float) * n), *o = malloc(sizeof(float) * n);
    const float ups[4] = {1.0f, -0.30078125f, 3.5f, 1e-30f};
    for (int act = 0; act < 3; act++) {
        int bad = 0;
        for (int k = 0; k < 4; k++) {
            for (uint32_t h = 0; h < 65536; h++) g[h] = bits_f32(h << 16), u[h] = ups[k];
            for (uint32_t j = 0; j < 4; j++) g[65536 + j] = bits_f32(0x3f800001u + 0x01230000u * j), u[65536 + j] = ups[k];
            if (k & 1) memcpy(o, g, sizeof(float) * n);
            ops_act_mul(o, k & 1 ? o : g, u, n, act, 1);
            for (size_t i = 0; i < n; i++) {
                const float x = g[i];
                float a32 = act == ACT_SILU ? x / (1.0f + expf(-x))
                          : act == ACT_GELU_TANH ? 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)))
                                                 : 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
                bad += f32_bits(o[i]) != f32_bits(round_bf16(round_bf16(a32) * u[i]));
            }
        }
        CHECK(bad == 0, "act %d bf16 table: %d of 4 x 65,540 values differ from bf16(bf16(act32(x)) * up) in bits", act, bad);
    }
    free(g), free(u), free(o);
}

static void test_softcap_add(void) {
    float x[6] = {-1000, -3, -0.1f, 0, 2.5f, 1e30f};
    float y[6];
    memcpy(y, x, sizeof x);
    ops_softcap(y, 6, 30.0, 0);
    for (int i = 0; i < 6; i++) {
        long double ref = 30.0L * tanhl((long double)x[i] / 30.0L);
        CHECK_CLOSE(y[i], (double)ref, 1e-6, 1e-7);
        CHECK(fabsf(y[i]) <= 30.0f, "softcap exceeds cap: %g", y[i]);
    }
    memcpy(y, x, sizeof x);
    ops_softcap(y, 6, 30.0, 1);
    for (int i = 0; i < 6; i++) {
        float t = round_bf16(x[i] / 30.0f);
        CHECK(y[i] == round_bf16(round_bf16((float)tanh(t)) * 30.0f), "softcap bf16 at %g: %g", x[i], y[i]);
    }
    float a[3] = {1, 1e-3f, -2}, b[3] = {1.0f / 512, 1, 2};
    ops_add(a, b, 3, 1);
    CHECK(a[0] == 1.0f && a[1] == round_bf16(1.001f) && a[2] == 0, "add bf16: %g %g %g", a[0], a[1], a[2]);
}

// The deterministic GEMM of the forward pass (gemm.h, bit-exact against its fmaf reference in
// test_gemm) against the independent binary64 product: same math, different rounding; error
// bounded by ~sqrt(K) eps |x||w| for these inputs.
static void test_matmul(void) {
    const int Ms[] = {1, 7, 33}, Ns[] = {5, 64, 129}, Ks[] = {3, 128, 301};
    for (int mi = 0; mi < 3; mi++)
        for (int ni = 0; ni < 3; ni++)
            for (int ki = 0; ki < 3; ki++) {
                const int M = Ms[mi], N = Ns[ni], K = Ks[ki], ldy = N + 3;
                float *x = malloc(sizeof(float) * M * K), *w = malloc(sizeof(float) * N * K);
                float *y = malloc(sizeof(float) * M * ldy), *r = malloc(sizeof(float) * M * ldy);
                fill(x, (size_t)M * K, 1.0);
                fill(w, (size_t)N * K, 1.0);
                for (int i = 0; i < M * ldy; i++) r[i] = y[i] = -7.0f; // padding columns stay untouched
                struct gemm_w pw = {0};
                const struct gemm_mat src = {w, GEMM_SRC_F32, (size_t)K, N, K};
                const struct gemm_io io = {y, (size_t)ldy, x, (size_t)K, M, NULL, GEMM_ROUND_NONE};
                CHECK(gemm_pack(&pw, GEMM_FMT_F32, &src, 1) == 0, "pack %dx%d", N, K);
                CHECK(gemm_run(&io, &pw, 0, N, 1) == 0, "gemm %dx%dx%d", M, N, K);
                ops_matmul_ref(r, x, w, M, N, K, ldy);
                int bad = 0;
                double num = 0, den = 0;
                for (int m = 0; m < M; m++)
                    for (int n = 0; n < ldy; n++) {
                        float g = y[m * ldy + n], f = r[m * ldy + n];
                        bad += !(fabs(g - f) <= 1e-5 * sqrt((double)K));
                        num += (double)(g - f) * (g - f);
                        den += (double)f * f;
                    }
                CHECK(bad == 0, "matmul %dx%dx%d: %d entries off (NMSE %.3g)", M, N, K, bad, num / den);
                gemm_w_free(&pw);
                free(x), free(w), free(y), free(r);
            }
    // the reference itself on a hand case: [1 2; 3 4] * [5 6; 7 8]^T = [17 23; 39 53]
    float x[4] = {1, 2, 3, 4}, w[4] = {5, 6, 7, 8}, y[4];
    ops_matmul_ref(y, x, w, 2, 2, 2, 2);
    CHECK(y[0] == 17 && y[1] == 23 && y[2] == 39 && y[3] == 53, "matmul_ref: %g %g %g %g", y[0], y[1], y[2], y[3]);
}

int main(void) {
    test_rmsnorm();
    test_rope();
    test_act();
    test_act_table();
    test_softcap_add();
    test_matmul();
    return test_summary("test_ops");
}
