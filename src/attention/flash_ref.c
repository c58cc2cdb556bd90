// flash_ref.c: the tiled attention of spec/attention.md sections 2-4 and 7 written literally,
// one query row, one tile and one key at a time, with plain scalar loops. It is the reference
// the fast kernel (flash.c) is tested against bit for bit (STYLE.md section 5); it is not
// registered as a mode and is far too slow for evaluation.
#include <math.h>

#include "attention/kern.h"
#include "attention/modes.h"
#include "attention/hif4.h"

// scratch: K/V of one kv head after smoothing/quantization plus one row's buffers
size_t attn_flash_ref_scratch(const struct attn_call *c) {
    size_t T = (size_t)c->T, d = (size_t)c->d, Bc = (size_t)c->tile;
    return (2 * T * d + T + 3 * d + 3 * Bc + 64) * sizeof(float);
}

static float fp16(float x) { return round_fp16(x); }
static float bf16(float x) { return round_bf16(x); }
static float exp_cr(float x) { return (float)exp((double)x); }
static float tanh_cr(float x) { return (float)tanh((double)x); }

void attn_flash_ref_forward(float *out, const float *q, const float *k, const float *v,
                            const struct attn_call *c, int h0, int h1, void *scratch,
                            unsigned flags) {
    const int T = c->T, H = c->H, Hkv = c->Hkv, d = c->d, g = H / Hkv, Bc = c->tile;
    const int quant = (flags & ATTN_F_QUANT) != 0, qmean = (flags & ATTN_F_QMEAN) != 0;
    const int sqk = (flags & ATTN_F_SQK) != 0, preorder = (flags & ATTN_F_PREORDER) != 0;
    const int st32 = (flags & ATTN_FI_STATE_F32) != 0;
    const enum hif4_recipe rec = c->qformat == ATTN_QFORMAT_HIF4_A6 ? HIF4_RECIPE_A6 : HIF4_RECIPE_NORMATIVE;
    const int qq = quant && !(c->qdq_skip & ATTN_QDQ_SKIP_Q), qk = quant && !(c->qdq_skip & ATTN_QDQ_SKIP_K);
    const int qv = quant && !(c->qdq_skip & ATTN_QDQ_SKIP_V), qp = quant && !(c->qdq_skip & ATTN_QDQ_SKIP_P);
    float *ks = scratch;        // (T, d) smoothed K
    float *vx = ks + (size_t)T * d; // (T, d) V operand
    float *kappa = vx + (size_t)T * d; // (T)
    float *qs = kappa + T;      // (d)
    float *qx = qs + d;         // (d)
    float *o = qx + d;          // (d)
    float *S = o + d;           // (Bc)
    float *P = S + Bc;          // (Bc)
    float *Pc = P + Bc;         // (Bc)
    float *kx = Pc + Bc;        // (64) unused slack
    (void)kx;
    for (int kh = h0 / g; kh <= (h1 - 1) / g; kh++) {
        const float *s = c->scales ? c->scales + (size_t)kh * d : NULL;
        // ---- K: smoothing (bf16(k/s)), kappa, qdq along d ----
        for (int j = 0; j < T; j++) {
            float *kr = ks + (size_t)j * d;
            for (int ch = 0; ch < d; ch++) {
                float x = k[((size_t)j * Hkv + kh) * d + ch];
                kr[ch] = sqk ? bf16(x / s[ch]) : x;
            }
            float sum = 0;
            for (int ch = 0; ch < d; ch++) sum += kr[ch];
            kappa[j] = fp16(sum);
            if (c->diag)
                for (int ch = 0; ch < d; ch++)
                    if (fabsf(kr[ch]) > c->diag->k_maxabs) c->diag->k_maxabs = fabsf(kr[ch]);
            if (qk)
                for (int g0 = 0; g0 < d; g0 += 64)
                    hif4_qdq_group(kr + g0, kr + g0, d - g0 < 64 ? d - g0 : 64, rec, NULL, NULL);
        }
        // ---- V: qdq along tokens from position 0 (or along d with --v-group channel) ----
        for (int j = 0; j < T; j++)
            for (int ch = 0; ch < d; ch++) vx[(size_t)j * d + ch] = v[((size_t)j * Hkv + kh) * d + ch];
        if (qv && c->v_group == ATTN_VGROUP_CHANNEL) {
            for (int j = 0; j < T; j++)
                for (int g0 = 0; g0 < d; g0 += 64)
                    hif4_qdq_group(vx + (size_t)j * d + g0, vx + (size_t)j * d + g0,
                                   d - g0 < 64 ? d - g0 : 64, rec, NULL, NULL);
        } else if (qv) {
            float grp[64];
            for (int ch = 0; ch < d; ch++)
                for (int t0 = 0; t0 < T; t0 += 64) {
                    int n = T - t0 < 64 ? T - t0 : 64;
                    for (int t = 0; t < n; t++) grp[t] = vx[(size_t)(t0 + t) * d + ch];
                    hif4_qdq_group(grp, grp, n, rec, NULL, NULL);
                    for (int t = 0; t < n; t++) vx[(size_t)(t0 + t) * d + ch] = grp[t];
                }
        }
        int ha = h0 > kh * g ? h0 : kh * g, hb = h1 < (kh + 1) * g ? h1 : (kh + 1) * g;
        for (int h = ha; h < hb; h++)
            for (int i = 0; i < T; i++) {
                // ---- Q: smoothing, Q-Mean, qdq ----
                const float *qi = q + ((size_t)i * H + h) * d;
                for (int ch = 0; ch < d; ch++) qs[ch] = sqk ? bf16(qi[ch] * s[ch]) : qi[ch];
                float mu = 0;
                if (qmean) {
                    float sum = 0;
                    for (int ch = 0; ch < d; ch++) sum += qs[ch];
                    mu = fp16(sum / (float)d);
                }
                for (int ch = 0; ch < d; ch++) qx[ch] = qmean ? qs[ch] - mu : qs[ch];
                if (qq)
                    for (int g0 = 0; g0 < d; g0 += 64)
                        hif4_qdq_group(qx + g0, qx + g0, d - g0 < 64 ? d - g0 : 64, rec, NULL, NULL);
                // ---- online softmax over tiles ----
                float m = -INFINITY, l = 0;
                for (int ch = 0; ch < d; ch++) o[ch] = 0;
                int jlo = c->window > 0 && i - c->window + 1 > 0 ? i - c->window + 1 : 0;
                for (int J0 = 0; J0 <= i; J0 += Bc) {
                    if (J0 + Bc - 1 < jlo) continue; // no visible key in this tile
                    float mt = -INFINITY;
                    for (int u = 0; u < Bc; u++) {
                        int j = J0 + u;
                        if (j < jlo || j > i) { S[u] = -INFINITY; continue; }
                        const float *kr = ks + (size_t)j * d;
                        float dot = 0;
                        for (int ch = 0; ch < d; ch++) dot += qx[ch] * kr[ch];
                        float sc = qmean ? c->sm * (dot + fp16(mu * kappa[j])) : c->sm * dot;
                        if (c->softcap > 0) sc = c->softcap * tanh_cr(sc / c->softcap);
                        S[u] = sc;
                        if (sc > mt) mt = sc;
                    }
                    float mtile = st32 ? mt : fp16(mt);
                    float mnew = m > mtile ? m : mtile;
                    float r = m == -INFINITY ? 0.0f : (st32 ? exp_cr(m - mnew) : fp16(exp_cr(m - mnew)));
                    for (int u = 0; u < Bc; u++) {
                        if (S[u] == -INFINITY) { P[u] = 0; continue; }
                        P[u] = st32 ? exp_cr(S[u] - mnew) : fp16(exp_cr(S[u] - mnew));
                    }
                    if (qp) {
                        for (int u = 0; u < Bc; u += 64) hif4_qdq_group(Pc + u, P + u, 64, rec, NULL, NULL);
                    } else if (quant) {
                        for (int u = 0; u < Bc; u++) Pc[u] = P[u];
                    } else {
                        for (int u = 0; u < Bc; u++) Pc[u] = bf16(P[u]);
                    }
                    float sumP = 0, sumPc = 0;
                    for (int u = 0; u < Bc; u++) {
                        sumP += P[u];
                        sumPc += Pc[u];
                    }
                    float rowsum = preorder ? sumPc : sumP;
                    l = st32 ? r * l + rowsum : fp16(r * l + fp16(rowsum));
                    for (int ch = 0; ch < d; ch++) {
                        float acc = 0;
                        for (int u = 0; u < Bc && J0 + u < T; u++)
                            acc += Pc[u] * vx[(size_t)(J0 + u) * d + ch];
                        o[ch] = r * o[ch] + acc;
                    }
                    m = mnew;
                    if (c->diag && quant && sumP > 0) kern_eps_add(c->diag, (double)sumPc / (double)sumP - 1.0);
                }
                float *oi = out + ((size_t)i * H + h) * d;
                for (int ch = 0; ch < d; ch++)
                    oi[ch] = (flags & ATTN_FI_RAW_OUT) ? o[ch] / l : bf16(fp16(o[ch] / l));
            }
    }
}
