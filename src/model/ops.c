// ops.c: the forward pass's stateless kernels (see ops.h). The binary64 paths are the
// reference numerics (goldens README: non-attention math in binary64); the bf16 paths mirror
// where HF PyTorch rounds a bf16 tensor.
#include "model/ops.h"

#include <math.h>

#include "base/common.h"
#include "model/config.h"

void ops_rmsnorm(float *out, const float *x, const float *w, int n, double eps, int plus_one, int bf16) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (double)x[i] * (double)x[i];
    const double r = 1.0 / sqrt(ss / n + eps);
    if (!bf16) {
        for (int i = 0; i < n; i++) out[i] = (float)((double)x[i] * r * (plus_one ? 1.0 + (double)w[i] : (double)w[i]));
    } else if (plus_one) {
        // Gemma2RMSNorm: (x * rsqrt(...)) * (1 + w) in f32, then .type_as(x)
        for (int i = 0; i < n; i++) out[i] = round_bf16((float)((double)x[i] * r) * (1.0f + w[i]));
    } else {
        // LlamaRMSNorm: weight * hidden.to(bf16): the normalized value and the product round
        for (int i = 0; i < n; i++) out[i] = round_bf16(w[i] * round_bf16((float)((double)x[i] * r)));
    }
}

void ops_rope(float *x, const double *cos, const double *sin, int n_heads, int head_dim, int rot_dim, int bf16) {
    const int half = rot_dim / 2;
    for (int h = 0; h < n_heads; h++) {
        float *v = x + (size_t)h * head_dim;
        for (int i = 0; i < half; i++) {
            const float a = v[i], b = v[i + half];
            if (!bf16) {
                v[i] = (float)((double)a * cos[i] - (double)b * sin[i]);
                v[i + half] = (float)((double)b * cos[i] + (double)a * sin[i]);
            } else {
                const float c = round_bf16((float)cos[i]), s = round_bf16((float)sin[i]);
                v[i] = round_bf16(round_bf16(a * c) + round_bf16(-b * s));
                v[i + half] = round_bf16(round_bf16(b * c) + round_bf16(a * s));
            }
        }
    }
}

double ops_silu64(double x) { return x / (1.0 + exp(-x)); }
double ops_gelu_tanh64(double x) {
    return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); // sqrt(2/pi)
}
double ops_gelu64(double x) { return 0.5 * x * (1.0 + erf(x * 0.7071067811865476)); }

// bf16 activations: PyTorch computes the activation of a bf16 tensor in binary32 and rounds
// once (x / (1 + exp(-x)) for SiLU), so the bf16 path uses binary32 libm; the f32 path is the
// binary64 reference rounded once.
static inline float silu32(float x) { return x / (1.0f + expf(-x)); }
static inline float gelu_tanh32(float x) {
    return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}
static inline float gelu32(float x) { return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f)); }

void ops_act_mul(float *out, const float *gate, const float *up, size_t n, int act, int bf16) {
    if (!bf16) {
        if (act == ACT_SILU)
            for (size_t i = 0; i < n; i++) out[i] = (float)(ops_silu64((double)gate[i]) * (double)up[i]);
        else if (act == ACT_GELU_TANH)
            for (size_t i = 0; i < n; i++) out[i] = (float)(ops_gelu_tanh64((double)gate[i]) * (double)up[i]);
        else
            for (size_t i = 0; i < n; i++) out[i] = (float)(ops_gelu64((double)gate[i]) * (double)up[i]);
    } else {
        if (act == ACT_SILU)
            for (size_t i = 0; i < n; i++) out[i] = round_bf16(round_bf16(silu32(gate[i])) * up[i]);
        else if (act == ACT_GELU_TANH)
            for (size_t i = 0; i < n; i++) out[i] = round_bf16(round_bf16(gelu_tanh32(gate[i])) * up[i]);
        else
            for (size_t i = 0; i < n; i++) out[i] = round_bf16(round_bf16(gelu32(gate[i])) * up[i]);
    }
}

void ops_softcap(float *x, size_t n, double cap, int bf16) {
    if (!bf16) {
        for (size_t i = 0; i < n; i++) x[i] = (float)(cap * tanh((double)x[i] / cap));
    } else {
        const float c = round_bf16((float)cap);
        for (size_t i = 0; i < n; i++) {
            float t = round_bf16(x[i] / c);
            t = round_bf16((float)tanh((double)t));
            x[i] = round_bf16(t * c);
        }
    }
}

void ops_add(float *x, const float *y, size_t n, int bf16) {
    if (!bf16)
        for (size_t i = 0; i < n; i++) x[i] += y[i];
    else
        for (size_t i = 0; i < n; i++) x[i] = round_bf16(x[i] + y[i]);
}

void ops_matmul_ref(float *y, const float *x, const float *w, int M, int N, int K, int ldy) {
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double s = 0;
            for (int k = 0; k < K; k++) s += (double)x[(size_t)m * K + k] * (double)w[(size_t)n * K + k];
            y[(size_t)m * ldy + n] = (float)s;
        }
}
