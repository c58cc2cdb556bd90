// sage3_ref.c: spec/fp4.md section 5 written literally for tests: one query row, one tile and
// one key at a time, the quantizers through fp4_ref.c's per-block transcriptions, every mean and
// correction recomputed where the spec defines it. Not registered as a mode; sage3.c is tested
// against it bit for bit (tests/test_sage3.c), and both against fp4_attention_ref.py's cases.
#include <math.h>
#include <string.h>

#include "attention/fp4.h"
#include "attention/modes.h"

#define TB FP4_SAGE3_TILE

size_t attn_sage3_ref_scratch(const struct attn_call *c) {
    const size_t T = (size_t)c->T, d = (size_t)c->d;
    return (3 * T * d + 4 * d + 3 * TB + 16) * sizeof(float);
}

// q1 (3.3) of x[n] in 16-element blocks from element 0, in place, unless skipped
static void q1(float *x, int n, int quantize) {
    for (int b = 0; quantize && b < n; b += 16) fp4_qdq_block_ref(x + b, x + b, n - b < 16 ? n - b : 16, FP4_NVFP4_1L, NULL, NULL, NULL);
}

static float bf16(float x) { return round_bf16(x); }
static float fp16(float x) { return round_fp16(x); }

void attn_sage3_ref_forward(const struct attn_operands *x, const struct attn_call *c, int h0, int h1, void *scratch,
                            unsigned flags) {
    float *out = x->out;
    const float *q = x->q, *k = x->k, *v = x->v;
    const int T = c->T, d = c->d, g = c->H / c->Hkv, W = c->window;
    const size_t wq = (size_t)c->H * d, wk = (size_t)c->Hkv * d;
    const int pre = (flags & ATTN_F_PREORDER) != 0, raw = (flags & ATTN_FI_RAW_OUT) != 0;
    const float cs = fp4_sage3_c(c->sm);
    float *kz = scratch, *kx = kz + (size_t)T * d, *vx = kx + (size_t)T * d, *km = vx + (size_t)T * d;
    float *mq = km + d, *qx = mq + d, *O = qx + d, *S = O + d, *pt = S + TB, *pc = pt + TB;
    for (int kh = h0 / g; kh <= (h1 - 1) / g; kh++) {
        for (int ch = 0; ch < d; ch++) { // P1
            float sum = 0;
            for (int t = 0; t < T; t++) sum += k[(size_t)t * wk + (size_t)kh * d + ch];
            km[ch] = bf16(sum / (float)T);
        }
        for (int t = 0; t < T; t++)
            for (int ch = 0; ch < d; ch++) {
                kz[(size_t)t * d + ch] = bf16(k[(size_t)t * wk + (size_t)kh * d + ch] - km[ch]);
                kx[(size_t)t * d + ch] = kz[(size_t)t * d + ch];
            }
        for (int t = 0; t < T; t++) q1(kx + (size_t)t * d, d, !(c->qdq_skip & ATTN_QDQ_SKIP_K)); // P4
        for (int ch = 0; ch < d; ch++) {
            float col[TB];
            for (int t0 = 0; t0 < T; t0 += 16) {
                const int n = T - t0 < 16 ? T - t0 : 16;
                for (int t = 0; t < n; t++) col[t] = v[(size_t)(t0 + t) * wk + (size_t)kh * d + ch];
                q1(col, n, !(c->qdq_skip & ATTN_QDQ_SKIP_V));
                for (int t = 0; t < n; t++) vx[(size_t)(t0 + t) * d + ch] = col[t];
            }
        }
        for (int h = (h0 > kh * g ? h0 : kh * g); h < h1 && h < (kh + 1) * g; h++)
            for (int i = c->r0; i < c->r1; i++) {
                const int b0 = i / TB * TB, b1 = b0 + TB < T ? b0 + TB : T;
                for (int ch = 0; ch < d; ch++) { // P2 for the row's group
                    float sum = 0;
                    for (int r = b0; r < b1; r++) sum += q[(size_t)r * wq + (size_t)h * d + ch];
                    mq[ch] = sum / 128.0f;
                }
                for (int ch = 0; ch < d; ch++) qx[ch] = bf16(q[(size_t)i * wq + (size_t)h * d + ch] - mq[ch]);
                q1(qx, d, !(c->qdq_skip & ATTN_QDQ_SKIP_Q));
                float m = -INFINITY, l = 0;
                for (int ch = 0; ch < d; ch++) O[ch] = 0;
                for (int J = 0; J * TB < T; J++) {
                    int any = 0;
                    for (int u = 0; u < TB; u++) {
                        const int j = J * TB + u;
                        S[u] = -INFINITY;
                        if (j >= T || j > i || (W > 0 && i - j >= W)) continue;
                        float ds = 0; // P3
                        for (int ch = 0; ch < d; ch++) ds += bf16(mq[ch]) * kz[(size_t)j * d + ch];
                        float s = bf16(ds); // T1
                        for (int ch = 0; ch < d; ch++) s += qx[ch] * kx[(size_t)j * d + ch];
                        S[u] = s, any = 1;
                    }
                    if (!any) continue;
                    float mnew = m;
                    for (int u = 0; u < TB; u++)
                        if (S[u] > mnew) mnew = S[u];
                    const struct fp4_sage3_row o = {pt, pc, NULL, NULL, NULL};
                    fp4_sage3_p_ref(&o, S, TB, mnew, cs);
                    if (c->qdq_skip & ATTN_QDQ_SKIP_P) memcpy(pc, pt, sizeof(float) * TB);
                    float rowsum = 0;
                    for (int u = 0; u < TB; u++) rowsum += pre ? pc[u] : pt[u];
                    const float r = m == -INFINITY ? 0.0f : (float)exp2((double)((m - mnew) * cs));
                    l = l * r + rowsum;
                    for (int ch = 0; ch < d; ch++) {
                        float acc = 0;
                        for (int u = 0; u < TB && J * TB + u < T; u++) acc += pc[u] * vx[(size_t)(J * TB + u) * d + ch];
                        O[ch] = O[ch] * r + acc;
                    }
                    m = mnew;
                }
                const float inv = (l == 0 || isnan(l)) ? 0.0f : 1.0f / l;
                for (int ch = 0; ch < d; ch++)
                    out[(size_t)i * wq + (size_t)h * d + ch] = raw ? O[ch] * inv : bf16(fp16(O[ch] * inv));
            }
    }
}
