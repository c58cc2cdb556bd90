// ref.c: the untiled binary64 reference modes `exact` and `f32` (spec/attention.md section 3,
// 7.7): scores, soft-cap, softmax and PV in binary64 with a binary64 scale, rounded once to
// binary32. `f32` sees bf16-rounded inputs (the dispatcher rounds them, ATTN_F_ROUND_INPUT);
// `exact` sees the unrounded ones (for comparison with binary32 implementations).
// Two implementations: the literal one (one row, one key at a time) and the blocked, SIMD one
// the modes run (ref_fast.c), which differs only in binary64 summation order and its exp
// (a few binary64 ulps); tests compare them at rel-L2 1e-12.
#include <math.h>

#include "attention/modes.h"

size_t attn_ref_literal_scratch(const struct attn_call *c) {
    return (size_t)c->T * sizeof(double) + (size_t)c->d * sizeof(double);
}

// rows [r0, r1) of heads [h0, h1) (attn_call: positions absolute, keys below q0 cached)
void attn_ref_literal_forward(const struct attn_operands *x, const struct attn_call *c, int h0, int h1,
                              void *scratch) {
    float *out = x->out;
    const float *q = x->q, *k = x->k, *v = x->v;
    const int T = c->T, H = c->H, Hkv = c->Hkv, d = c->d, g = H / Hkv;
    double *p = scratch;       // (T)
    double *acc = p + T;       // (d)
    for (int h = h0; h < h1; h++) {
        const int kh = h / g;
        for (int i = c->r0; i < c->r1; i++) {
            const float *qi = q + attn_q_off(c, i, h);
            int j0 = c->window > 0 && i - c->window + 1 > 0 ? i - c->window + 1 : 0;
            double mx = -INFINITY;
            for (int j = j0; j <= i; j++) {
                const float *kj = attn_kv_row(c, k, c->past_k, j) + (size_t)kh * d;
                double s = 0;
                for (int ch = 0; ch < d; ch++) s += (double)qi[ch] * (double)kj[ch];
                s *= c->sm64;
                if (c->softcap > 0) s = (double)c->softcap * tanh(s / (double)c->softcap);
                p[j] = s;
                if (s > mx) mx = s;
            }
            double sum = 0;
            for (int j = j0; j <= i; j++) {
                p[j] = exp(p[j] - mx);
                sum += p[j];
            }
            for (int ch = 0; ch < d; ch++) acc[ch] = 0;
            for (int j = j0; j <= i; j++) {
                const float *vj = attn_kv_row(c, v, c->past_v, j) + (size_t)kh * d;
                for (int ch = 0; ch < d; ch++) acc[ch] += p[j] * (double)vj[ch];
            }
            float *oi = out + attn_q_off(c, i, h);
            for (int ch = 0; ch < d; ch++) oi[ch] = (float)(acc[ch] / sum);
        }
    }
}

const struct attn_mode attn_mode_exact = {
    .name = "exact", .label = "exact (binary64, unrounded inputs)", .flags = 0,
    .scratch_bytes = attn_ref_scratch, .forward = attn_ref_forward,
};

const struct attn_mode attn_mode_f32 = {
    .name = "f32", .label = "f32 reference (binary64 softmax, bf16 inputs)",
    .flags = ATTN_F_ROUND_INPUT, .scratch_bytes = attn_ref_scratch, .forward = attn_ref_forward,
};
