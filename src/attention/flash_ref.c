// flash_ref.c: the tiled attention of spec/attention.md sections 2-4 and 7 written literally,
// one query row, one tile and one key at a time, with plain scalar loops. It is the reference
// the fast kernel (flash.c) is tested against bit for bit (STYLE.md section 5); it is not
// registered as a mode and is far too slow for evaluation. Both Q-Mean forms: `qmean` (a
// scalar mean per row) and `qmean-ch` (a channel mean per query tile of Br = Bc rows aligned to
// position 0; the choices the spec leaves open are written down in attn.h). Positions are
// absolute: a call may continue a cached prefix (keys below q0 from attn_call.past) and computes
// the rows [r0, r1), preparing every key of the sequence (the fast kernel prepares fewer).
// qdq is the --qformat's literal per-block reference (quant.h); NVFP4's per-tensor amax is taken
// over each operand's whole set before any of it is quantized (spec/fp4.md 4.2).
#include <math.h>

#include "attention/kern.h"
#include "attention/modes.h"
#include "attention/quant.h"

static float fp16(float x) { return round_fp16(x); }
static float bf16(float x) { return round_bf16(x); }
static float exp_cr(float x) { return (float)exp((double)x); }
static float tanh_cr(float x) { return (float)tanh((double)x); }

// scratch: K and V of one kv head, the channel form's tile mean and corrections, one row's buffers
size_t attn_flash_ref_scratch(const struct attn_call *c) {
    size_t T = (size_t)c->T, d = (size_t)c->d, Bc = (size_t)c->tile;
    return (3 * T * d + 2 * T + 4 * d + 3 * Bc) * sizeof(float);
}

struct ref {
    const struct attn_call *c;
    int T, d, quant, qmean, channel, sqk, preorder, st32;
    int qq, qk, qv, qp;  // qdq applied to Q, K, V, P (not skipped)
    struct attn_q4 zq, zk, zv, zp; // the operands' quantizers (P: At = 1)
    const float *s;      // Smooth-QK scales of the current kv head [d]
    float *ks;           // (T, d) smoothed K: bf16(k / s), or k
    float *kx;           // (T, d) K operand: qdq(ks)
    float *vx;           // (T, d) V operand
    float *kappa;        // (T) token form: fp16(sum_c ks_j)
    float *delta;        // (T) channel form: fp16(mu . ks_j) of the current query tile
    float *mu;           // (d) channel form: mu_c of the current query tile
    float *qs, *qx, *o;  // (d) one query row: smoothed, operand, output accumulator
    float *S, *P, *Pc;   // (Bc) one tile of one row
};

static void ref_init(struct ref *R, const struct attn_call *c, void *scratch, unsigned flags) {
    R->c = c;
    R->T = c->T, R->d = c->d;
    R->quant = (flags & ATTN_F_QUANT) != 0, R->qmean = (flags & ATTN_F_QMEAN) != 0;
    R->channel = R->qmean && (flags & ATTN_F_QMEAN_CH) != 0;
    R->sqk = (flags & ATTN_F_SQK) != 0, R->preorder = (flags & ATTN_F_PREORDER) != 0;
    R->st32 = (flags & ATTN_FI_STATE_F32) != 0;
    R->qq = R->quant && !(c->qdq_skip & ATTN_QDQ_SKIP_Q), R->qk = R->quant && !(c->qdq_skip & ATTN_QDQ_SKIP_K);
    R->qv = R->quant && !(c->qdq_skip & ATTN_QDQ_SKIP_V), R->qp = R->quant && !(c->qdq_skip & ATTN_QDQ_SKIP_P);
    attn_q4_init(&R->zq, c->qformat), attn_q4_init(&R->zk, c->qformat);
    attn_q4_init(&R->zv, c->qformat), attn_q4_init(&R->zp, c->qformat);
    size_t T = (size_t)c->T, d = (size_t)c->d;
    R->ks = scratch;
    R->kx = R->ks + T * d;
    R->vx = R->kx + T * d;
    R->kappa = R->vx + T * d;
    R->delta = R->kappa + T;
    R->mu = R->delta + T;
    R->qs = R->mu + d;
    R->qx = R->qs + d;
    R->o = R->qx + d;
    R->S = R->o + d;
    R->P = R->S + c->tile;
    R->Pc = R->P + c->tile;
}

// amax of n values (the NVFP4 tensor scale's set)
static float amax_of(const float *x, size_t n) {
    float a = 0;
    for (size_t i = 0; i < n; i++)
        if (fabsf(x[i]) > a) a = fabsf(x[i]);
    return a;
}

// ---- K of kv head kh: smoothing (bf16(k/s)), kappa, qdq along d ----
static void ref_prep_k(struct ref *R, const float *k, int kh) {
    const int T = R->T, d = R->d;
    R->s = R->c->scales ? R->c->scales + (size_t)kh * d : NULL;
    for (int j = 0; j < T; j++) {
        float *kr = R->ks + (size_t)j * d, *kq = R->kx + (size_t)j * d;
        const float *src = attn_kv_row(R->c, k, R->c->past_k, j) + (size_t)kh * d;
        for (int ch = 0; ch < d; ch++) {
            float x = src[ch];
            kr[ch] = R->sqk ? bf16(x / R->s[ch]) : x;
        }
        float sum = 0;
        for (int ch = 0; ch < d; ch++) sum += kr[ch];
        R->kappa[j] = fp16(sum);
        if (R->c->diag)
            for (int ch = 0; ch < d; ch++)
                if (fabsf(kr[ch]) > R->c->diag->k_maxabs) R->c->diag->k_maxabs = fabsf(kr[ch]);
        for (int ch = 0; ch < d; ch++) kq[ch] = kr[ch];
    }
    if (R->qk && attn_q4_has_tensor_scale(&R->zk)) attn_q4_set_amax(&R->zk, amax_of(R->ks, (size_t)T * d));
    if (R->qk)
        for (int j = 0; j < T; j++) attn_q4_vec_ref(&R->zk, R->kx + (size_t)j * d, d);
}

// ---- V: qdq along tokens in groups from position 0 (or along d with --v-group channel) ----
static void ref_prep_v(struct ref *R, const float *v, int kh) {
    const int T = R->T, d = R->d;
    float *vx = R->vx;
    for (int j = 0; j < T; j++)
        for (int ch = 0; ch < d; ch++) vx[(size_t)j * d + ch] = attn_kv_row(R->c, v, R->c->past_v, j)[(size_t)kh * d + ch];
    if (R->qv && attn_q4_has_tensor_scale(&R->zv)) attn_q4_set_amax(&R->zv, amax_of(vx, (size_t)T * d));
    if (R->qv && R->c->v_group == ATTN_VGROUP_CHANNEL) {
        for (int j = 0; j < T; j++) attn_q4_vec_ref(&R->zv, vx + (size_t)j * d, d);
    } else if (R->qv) {
        float grp[64];
        const int B = R->zv.block;
        for (int ch = 0; ch < d; ch++)
            for (int t0 = 0; t0 < T; t0 += B) {
                int n = T - t0 < B ? T - t0 : B;
                for (int t = 0; t < n; t++) grp[t] = vx[(size_t)(t0 + t) * d + ch];
                attn_q4_vec_ref(&R->zv, grp, n);
                for (int t = 0; t < n; t++) vx[(size_t)(t0 + t) * d + ch] = grp[t];
            }
    }
}

// qs of query row i, head h: bf16(q * s) with Smooth-QK, else q
static float q_smoothed(const struct ref *R, const float *q, int i, int h, int ch) {
    float x = q[attn_q_off(R->c, i, h) + (size_t)ch];
    return R->sqk ? bf16(x * R->s[ch]) : x;
}

// ---- channel form: the query tile [ts, te) of head h ----
// mu_c = fp16(f32(sum_{i in tile} qs_{i,c}) / n), the rows summed in ascending order;
// delta_j = fp16(sm * f32(sum_c f32(mu_c * ks_{j,c}))) for every key j < te (revision 2)
static void ref_tile_mean(struct ref *R, const float *q, int h, int ts, int te) {
    const int d = R->d;
    for (int ch = 0; ch < d; ch++) {
        float sum = 0;
        for (int i = ts; i < te; i++) sum += q_smoothed(R, q, i, h, ch);
        R->mu[ch] = fp16(sum / (float)(te - ts));
    }
    for (int j = 0; j < te; j++) {
        float sum = 0;
        for (int ch = 0; ch < d; ch++) sum += R->mu[ch] * R->ks[(size_t)j * d + ch];
        R->delta[j] = fp16(R->c->sm * sum);
    }
}

// ---- Q row i of head h: smoothing, Q-Mean, qdq; returns the token form's mu (else 0) ----
static float ref_q_row(struct ref *R, const float *q, int i, int h, int quantize) {
    const int d = R->d;
    for (int ch = 0; ch < d; ch++) R->qs[ch] = q_smoothed(R, q, i, h, ch);
    float mu = 0;
    if (R->qmean && !R->channel) {
        float sum = 0;
        for (int ch = 0; ch < d; ch++) sum += R->qs[ch];
        mu = fp16(sum / (float)d);
    }
    for (int ch = 0; ch < d; ch++)
        R->qx[ch] = !R->qmean ? R->qs[ch] : R->channel ? R->qs[ch] - R->mu[ch] : R->qs[ch] - mu;
    if (R->qq && quantize) attn_q4_vec_ref(&R->zq, R->qx, d);
    return mu;
}

// NVFP4: the amax of head h's Q as handed to qdq, over every row of the sequence (query tiles'
// channel means included), before any row is quantized
static void ref_q_scale(struct ref *R, const float *q, int h) {
    const int T = R->T, Br = R->c->tile;
    float a = 0;
    for (int i = R->c->q0; i < T; i++) {
        if (R->channel && i % Br == 0) ref_tile_mean(R, q, h, i, i + Br < T ? i + Br : T);
        ref_q_row(R, q, i, h, 0);
        const float m = amax_of(R->qx, (size_t)R->d);
        if (m > a) a = m;
    }
    attn_q4_set_amax(&R->zq, a);
}

// ---- the score of query row i (operand R->qx, token mu) and key j; -inf when j is masked ----
static float ref_score(const struct ref *R, int i, int j, float mu) {
    const struct attn_call *c = R->c;
    int jlo = c->window > 0 && i - c->window + 1 > 0 ? i - c->window + 1 : 0;
    if (j < jlo || j > i) return -INFINITY;
    const float *kr = R->kx + (size_t)j * R->d;
    float dot = 0;
    for (int ch = 0; ch < R->d; ch++) dot += R->qx[ch] * kr[ch];
    float sc = !R->qmean ? c->sm * dot : R->channel ? c->sm * dot + R->delta[j] : c->sm * (dot + fp16(mu * R->kappa[j]));
    if (c->softcap > 0) sc = c->softcap * tanh_cr(sc / c->softcap);
    return sc;
}

// ---- online softmax of row i over its tiles (section 2) into out_i ----
static void ref_row(struct ref *R, float *oi, int i, float mu, unsigned flags) {
    const struct attn_call *c = R->c;
    const int d = R->d, Bc = c->tile;
    float m = -INFINITY, l = 0, *o = R->o, *S = R->S, *P = R->P, *Pc = R->Pc;
    for (int ch = 0; ch < d; ch++) o[ch] = 0;
    int jlo = c->window > 0 && i - c->window + 1 > 0 ? i - c->window + 1 : 0;
    for (int J0 = 0; J0 <= i; J0 += Bc) {
        if (J0 + Bc - 1 < jlo) continue; // no visible key in this tile
        float mt = -INFINITY;
        for (int u = 0; u < Bc; u++) {
            S[u] = ref_score(R, i, J0 + u, mu);
            if (S[u] > mt) mt = S[u];
        }
        float mtile = R->st32 ? mt : fp16(mt);
        float mnew = m > mtile ? m : mtile;
        float r = m == -INFINITY ? 0.0f : (R->st32 ? exp_cr(m - mnew) : fp16(exp_cr(m - mnew)));
        for (int u = 0; u < Bc; u++) {
            if (S[u] == -INFINITY) { P[u] = 0; continue; }
            P[u] = R->st32 ? exp_cr(S[u] - mnew) : fp16(exp_cr(S[u] - mnew));
        }
        if (R->qp) {
            for (int u = 0; u < Bc; u++) Pc[u] = P[u];
            attn_q4_vec_ref(&R->zp, Pc, Bc);
        } else {
            for (int u = 0; u < Bc; u++) Pc[u] = R->quant ? P[u] : bf16(P[u]);
        }
        float sumP = 0, sumPc = 0;
        for (int u = 0; u < Bc; u++) {
            sumP += P[u];
            sumPc += Pc[u];
        }
        float rowsum = R->preorder ? sumPc : sumP;
        l = R->st32 ? r * l + rowsum : fp16(r * l + fp16(rowsum));
        for (int ch = 0; ch < d; ch++) {
            float acc = 0;
            for (int u = 0; u < Bc && J0 + u < R->T; u++) acc += Pc[u] * R->vx[(size_t)(J0 + u) * d + ch];
            o[ch] = r * o[ch] + acc;
        }
        m = mnew;
        if (c->diag && R->quant && sumP > 0) kern_eps_add(c->diag, (double)sumPc / (double)sumP - 1.0);
    }
    for (int ch = 0; ch < d; ch++) oi[ch] = (flags & ATTN_FI_RAW_OUT) ? o[ch] / l : bf16(fp16(o[ch] / l));
}

void attn_flash_ref_forward(const struct attn_operands *x, const struct attn_call *c, int h0, int h1, void *scratch,
                            unsigned flags) {
    float *out = x->out;
    const float *q = x->q, *k = x->k, *v = x->v;
    const int T = c->T, g = c->H / c->Hkv, Br = c->tile;
    struct ref R;
    ref_init(&R, c, scratch, flags);
    for (int kh = h0 / g; kh <= (h1 - 1) / g; kh++) {
        ref_prep_k(&R, k, kh);
        ref_prep_v(&R, v, kh);
        int ha = h0 > kh * g ? h0 : kh * g, hb = h1 < (kh + 1) * g ? h1 : (kh + 1) * g;
        for (int h = ha; h < hb; h++) {
            if (R.qq && attn_q4_has_tensor_scale(&R.zq)) ref_q_scale(&R, q, h);
            for (int i = c->r0; i < c->r1; i++) {
                // query tiles of Br rows from position 0; the last one may be partial. With the
                // channel form r0 is a tile start (the alignment rule of attn.h).
                if (R.channel && (i % Br == 0 || i == c->r0))
                    ref_tile_mean(&R, q, h, i / Br * Br, i / Br * Br + Br < T ? i / Br * Br + Br : T);
                float mu = ref_q_row(&R, q, i, h, 1);
                ref_row(&R, out + attn_q_off(c, i, h), i, mu, flags);
            }
        }
    }
}

void attn_flash_ref_scores(float *S, const struct attn_operands *x, const struct attn_call *c, int h, int i,
                           void *scratch, unsigned flags) {
    const float *q = x->q, *k = x->k;
    const int T = c->T, Br = c->tile;
    struct ref R;
    ref_init(&R, c, scratch, flags);
    ref_prep_k(&R, k, h / (c->H / c->Hkv));
    if (R.qq && attn_q4_has_tensor_scale(&R.zq)) ref_q_scale(&R, q, h);
    if (R.channel) ref_tile_mean(&R, q, h, i / Br * Br, i / Br * Br + Br < T ? i / Br * Br + Br : T);
    float mu = ref_q_row(&R, q, i, h, 1);
    for (int j = 0; j < T; j++) S[j] = ref_score(&R, i, j, mu);
}
