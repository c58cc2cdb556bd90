// ops.c: the forward pass's stateless kernels (see ops.h). The binary64 paths are the
// reference numerics (goldens README: non-attention math in binary64); the bf16 paths mirror
// where HF PyTorch rounds a bf16 tensor.
#include "model/ops.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>

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

// bf16: the rounded cos/sin of the position once, then each head (HF's order: each product and
// the sum rounded; a branch-free loop the compiler vectorizes). half <= CFG_MAX_HEAD_DIM / 2.
static void rope_bf16(float *x, const double *cos, const double *sin, int n_heads, int head_dim, int half) {
    float c[CFG_MAX_HEAD_DIM / 2], s[CFG_MAX_HEAD_DIM / 2];
    for (int i = 0; i < half; i++) c[i] = round_bf16((float)cos[i]), s[i] = round_bf16((float)sin[i]);
    for (int h = 0; h < n_heads; h++) {
        float *v = x + (size_t)h * head_dim, *w = v + half;
        for (int i = 0; i < half; i++) {
            const float a = v[i], b = w[i];
            v[i] = round_bf16(round_bf16(a * c[i]) + round_bf16(-b * s[i]));
            w[i] = round_bf16(round_bf16(b * c[i]) + round_bf16(a * s[i]));
        }
    }
}

void ops_rope(float *x, const double *cos, const double *sin, int n_heads, int head_dim, int rot_dim, int bf16) {
    const int half = rot_dim / 2;
    if (bf16) {
        rope_bf16(x, cos, sin, n_heads, head_dim, half);
        return;
    }
    for (int h = 0; h < n_heads; h++) {
        float *v = x + (size_t)h * head_dim;
        for (int i = 0; i < half; i++) {
            const float a = v[i], b = v[i + half];
            v[i] = (float)((double)a * cos[i] - (double)b * sin[i]);
            v[i + half] = (float)((double)b * cos[i] + (double)a * sin[i]);
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

float ops_act32(int act, float x) {
    const float a = act == ACT_SILU ? silu32(x) : act == ACT_GELU_TANH ? gelu_tanh32(x) : gelu32(x);
    return round_bf16(a);
}

// Under --act bf16 the gate is bf16-valued (the GEMM rounds its output), so round_bf16(act(x))
// takes one of 65,536 values: a table of exactly those values, built once per activation from
// ops_act32 itself, gives the same bits as calling it (libm's tanhf/expf/erff were most of
// Gemma's MLP time). A gate that is not bf16-valued is computed directly.
enum { N_ACT_TAB = 3 };
static float act_tab[N_ACT_TAB][65536];
static pthread_once_t act_once[N_ACT_TAB] = {PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT};
static void tab_fill(int act) {
    for (uint32_t h = 0; h < 65536; h++) act_tab[act][h] = ops_act32(act, bits_f32(h << 16));
}
static void tab_silu(void) { tab_fill(ACT_SILU); }
static void tab_gelu_tanh(void) { tab_fill(ACT_GELU_TANH); }
static void tab_gelu(void) { tab_fill(ACT_GELU); }

static const float *act_table(int act) {
    static void (*const fill[N_ACT_TAB])(void) = {[ACT_SILU] = tab_silu, [ACT_GELU_TANH] = tab_gelu_tanh, [ACT_GELU] = tab_gelu};
    pthread_once(&act_once[act], fill[act]);
    return act_tab[act];
}

void ops_act_mul(float *out, const float *gate, const float *up, size_t n, int act, int bf16) {
    if (!bf16) {
        if (act == ACT_SILU)
            for (size_t i = 0; i < n; i++) out[i] = (float)(ops_silu64((double)gate[i]) * (double)up[i]);
        else if (act == ACT_GELU_TANH)
            for (size_t i = 0; i < n; i++) out[i] = (float)(ops_gelu_tanh64((double)gate[i]) * (double)up[i]);
        else
            for (size_t i = 0; i < n; i++) out[i] = (float)(ops_gelu64((double)gate[i]) * (double)up[i]);
        return;
    }
    const float *tab = act_table(act);
    for (size_t i = 0; i < n; i++) {
        const uint32_t b = f32_bits(gate[i]);
        const float a = (b & 0xffffu) ? ops_act32(act, gate[i]) : tab[b >> 16];
        out[i] = round_bf16(a * up[i]);
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
