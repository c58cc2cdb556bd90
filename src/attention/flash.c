// flash.c: the fast FlashAttention-tiled kernel behind every tiled mode (`bf16`, `direct`,
// `hifa4` and the ablations), parametrized by the mode flags (spec/attention.md sections 2-4,
// arithmetic of section 7). Bit-identical to the literal scalar reference in flash_ref.c:
// every binary32 operation and its order is the same, only the loops are arranged so that
// SIMD lanes hold different keys (QK^T) or different output channels (PV), each lane
// accumulating in the spec's fixed sequential order (7.2). Quantization goes through hif4.h.
#include <math.h>
#include <string.h>

#include "attention/kern.h"
#include "attention/modes.h"
#include "attention/hif4.h"

// 16 binary32 lanes (one AVX-512 register, two AVX2 registers). -ffp-contract=off keeps
// every `a += x * y` as a separate multiply and add (spec 7.1).
typedef float v16 __attribute__((vector_size(64)));
#define VL 16
static inline v16 ld16(const float *p) { v16 r; memcpy(&r, p, sizeof r); return r; }
static inline void st16(float *p, v16 x) { memcpy(p, &x, sizeof x); }

#define BR 4 // query rows per block: each K/V vector loaded once serves BR rows
#define PW (2 * VL) // panel width (keys of K, channels of V): contiguous inner-loop reads

static inline size_t up(size_t x, size_t m) { return (x + m - 1) / m * m; }

struct layout {
    size_t Tp, dp;         // T rounded up to 64, d rounded up to PW
    float *kP;             // (Tp/PW, d, PW) K operand in panels of PW keys: kP[(j/PW)*d*PW + c*PW + j%PW]
    float *kappa;          // (Tp)      fp16(sum_c ks_j) (Q-Mean)
    float *vP;             // (dp/PW, Tp, PW) V operand in panels of PW channels, zero padded
    float *tmp;            // (Tp + dp + 64) row / column staging
    float *qx;             // (BR, dp)  Q operand of the block's rows
    float *S;              // (BR, Bc)  scores of one tile
    float *P;              // (BR, Bc)  fp16 probabilities
    float *Pc;             // (BR, Bc)  PV operand
    float *O;              // (BR, dp)  binary32 output accumulators
};

static size_t layout_floats(const struct attn_call *c, struct layout *L, float *base) {
    size_t Tp = up((size_t)c->T, 64), dp = up((size_t)c->d, PW), d = (size_t)c->d;
    size_t Bc = (size_t)c->tile, n = 0;
#define TAKE(f, cnt)                                                                               \
    do {                                                                                           \
        if (L) L->f = base + n;                                                                    \
        n += up((cnt), VL);                                                                        \
    } while (0)
    TAKE(kP, d * Tp);
    TAKE(kappa, Tp);
    TAKE(vP, Tp * dp);
    TAKE(tmp, Tp + dp + 64);
    TAKE(qx, BR * dp);
    TAKE(S, BR * Bc);
    TAKE(P, BR * Bc);
    TAKE(Pc, BR * Bc);
    TAKE(O, BR * dp);
#undef TAKE
    if (L) L->Tp = Tp, L->dp = dp;
    return n;
}

size_t attn_flash_scratch(const struct attn_call *c) {
    return layout_floats(c, NULL, NULL) * sizeof(float) + 64;
}

// qdq of n contiguous values in 64-groups from element 0, zero-padded tail
static void qdq_row(float *x, int n, enum hif4_recipe rec) { hif4_qdq(x, x, n, rec); }

// ---- K and V of one kv head: smoothing, kappa, qdq, layout for the GEMM loops ----
static void prep_kv(const struct layout *L, const float *k, const float *v, const struct attn_call *c,
                    int kh, unsigned flags, enum hif4_recipe rec, int qk, int qv) {
    const int T = c->T, Hkv = c->Hkv, d = c->d;
    const size_t Tp = L->Tp, dp = L->dp;
    const float *s = (flags & ATTN_F_SQK) ? c->scales + (size_t)kh * d : NULL;
    float *row = L->tmp;
    float kmax = 0;
    for (int j = 0; j < T; j++) {
        const float *kr = k + ((size_t)j * Hkv + kh) * d;
        if (s)
            for (int ch = 0; ch < d; ch++) row[ch] = round_bf16(kr[ch] / s[ch]); // bf16(k/s), 7.6
        else
            memcpy(row, kr, (size_t)d * sizeof(float));
        if (flags & ATTN_F_QMEAN) {
            float sum = 0; // sequential, 7.6
            for (int ch = 0; ch < d; ch++) sum += row[ch];
            L->kappa[j] = kern_fp16(sum);
        }
        if (c->diag)
            for (int ch = 0; ch < d; ch++) kmax = fabsf(row[ch]) > kmax ? fabsf(row[ch]) : kmax;
        if (qk) qdq_row(row, d, rec);
        float *kp = L->kP + (size_t)(j / PW) * d * PW + j % PW;
        for (int ch = 0; ch < d; ch++) kp[(size_t)ch * PW] = row[ch];
    }
    for (size_t j = (size_t)T; j < Tp; j++)
        for (int ch = 0; ch < d; ch++) L->kP[(j / PW) * d * PW + (size_t)ch * PW + j % PW] = 0;
    if (c->diag && kmax > c->diag->k_maxabs) c->diag->k_maxabs = kmax;

    for (int j = 0; j < T; j++) {
        const float *vr = v + ((size_t)j * Hkv + kh) * d;
        if (qv && c->v_group == ATTN_VGROUP_CHANNEL) { // groups along d per token
            memcpy(row, vr, (size_t)d * sizeof(float));
            qdq_row(row, d, rec);
            vr = row;
        }
        for (size_t p = 0; p < dp / PW; p++) {
            float *dst = L->vP + p * Tp * PW + (size_t)j * PW;
            size_t c0 = p * PW, w = (size_t)d - c0 < PW ? (size_t)d - c0 : PW;
            memcpy(dst, vr + c0, w * sizeof(float));
            memset(dst + w, 0, (PW - w) * sizeof(float));
        }
    }
    for (size_t p = 0; p < dp / PW; p++) {
        float *panel = L->vP + p * Tp * PW;
        memset(panel + (size_t)T * PW, 0, (Tp - (size_t)T) * PW * sizeof(float));
        // groups of 64 positions from position 0 per channel (spec section 3, V)
        int w = (int)((size_t)d - p * PW < PW ? (size_t)d - p * PW : PW);
        if (qv && c->v_group != ATTN_VGROUP_CHANNEL) hif4_qdq_cols(panel, PW, panel, PW, T, w, rec);
    }
}

// ---- Q of one row: smoothing, Q-Mean, qdq (spec section 4) ----
static float prep_q(float *qx, const float *qi, const float *s, int d, unsigned flags,
                    enum hif4_recipe rec, int qq) {
    if (s)
        for (int ch = 0; ch < d; ch++) qx[ch] = round_bf16(qi[ch] * s[ch]); // bf16(q*s), 7.6
    else
        memcpy(qx, qi, (size_t)d * sizeof(float));
    float mu = 0;
    if (flags & ATTN_F_QMEAN) {
        float sum = 0;
        for (int ch = 0; ch < d; ch++) sum += qx[ch];
        mu = kern_fp16(sum / (float)d);
        for (int ch = 0; ch < d; ch++) qx[ch] = qx[ch] - mu;
    }
    if (qq) qdq_row(qx, d, rec);
    return mu;
}

// S[r][j - t0] = dot(qx_r, kx_j) for keys [ja, jb) (multiples of VL), c = 0..d-1 in order.
// Two key vectors x BR rows = 8 independent accumulation chains hide the add latency.
static void qk_block(float *S, size_t Bc, const float *qx, size_t dp, const float *kP, int d, int t0, int ja,
                     int jb) {
    const float *q0 = qx, *q1 = qx + dp, *q2 = qx + 2 * dp, *q3 = qx + 3 * dp;
    int j = ja;
    while (j < jb) {
        const float *kp = kP + (size_t)(j / PW) * d * PW + j % PW;
        float *s0 = S + (j - t0);
        if (j % PW == 0 && j + PW <= jb) {
            v16 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, b0 = {0}, b1 = {0}, b2 = {0}, b3 = {0};
            for (int ch = 0; ch < d; ch++) {
                v16 ka = ld16(kp + (size_t)ch * PW), kb = ld16(kp + (size_t)ch * PW + VL);
                a0 += ka * q0[ch], b0 += kb * q0[ch];
                a1 += ka * q1[ch], b1 += kb * q1[ch];
                a2 += ka * q2[ch], b2 += kb * q2[ch];
                a3 += ka * q3[ch], b3 += kb * q3[ch];
            }
            st16(s0, a0), st16(s0 + VL, b0);
            st16(s0 + Bc, a1), st16(s0 + Bc + VL, b1);
            st16(s0 + 2 * Bc, a2), st16(s0 + 2 * Bc + VL, b2);
            st16(s0 + 3 * Bc, a3), st16(s0 + 3 * Bc + VL, b3);
            j += PW;
        } else {
            v16 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
            for (int ch = 0; ch < d; ch++) {
                v16 kv = ld16(kp + (size_t)ch * PW);
                a0 += kv * q0[ch];
                a1 += kv * q1[ch];
                a2 += kv * q2[ch];
                a3 += kv * q3[ch];
            }
            st16(s0, a0);
            st16(s0 + Bc, a1);
            st16(s0 + 2 * Bc, a2);
            st16(s0 + 3 * Bc, a3);
            j += VL;
        }
    }
}

// O_r = r_r * O_r + sum_{j in [ja, jb)} Pc_r[j] * vx_j for the active rows (keys ascending,
// one fresh binary32 accumulator per channel and tile, spec 7.2); one panel of 32 channels x
// BR rows per pass = 8 independent chains
static void pv_block(float *O, const float *Pc, size_t Bc, const float *vP, size_t Tp, size_t dp, int t0,
                     int ja, int jb, const float *r, const int *active) {
    const float *p0 = Pc - t0, *p1 = Pc + Bc - t0, *p2 = Pc + 2 * Bc - t0, *p3 = Pc + 3 * Bc - t0;
    for (size_t cc = 0; cc < dp; cc += PW) {
        const float *panel = vP + (cc / PW) * Tp * PW;
        v16 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, b0 = {0}, b1 = {0}, b2 = {0}, b3 = {0};
        for (int j = ja; j < jb; j++) {
            const float *vp = panel + (size_t)j * PW;
            v16 va = ld16(vp), vb = ld16(vp + VL);
            a0 += p0[j] * va, b0 += p0[j] * vb;
            a1 += p1[j] * va, b1 += p1[j] * vb;
            a2 += p2[j] * va, b2 += p2[j] * vb;
            a3 += p3[j] * va, b3 += p3[j] * vb;
        }
        v16 acc[BR][2] = {{a0, b0}, {a1, b1}, {a2, b2}, {a3, b3}};
        for (int rr = 0; rr < BR; rr++)
            if (active[rr]) {
                float *o = O + rr * dp + cc;
                st16(o, ld16(o) * r[rr] + acc[rr][0]);
                st16(o + VL, ld16(o + VL) * r[rr] + acc[rr][1]);
            }
    }
}

// sums[r] += x_r[j] for j in [ja, jb) ascending, rows interleaved (independent chains)
static void rowsums(float *sums, const float *x, size_t Bc, int t0, int ja, int jb) {
    const float *x0 = x - t0, *x1 = x + Bc - t0, *x2 = x + 2 * Bc - t0, *x3 = x + 3 * Bc - t0;
    float s0 = sums[0], s1 = sums[1], s2 = sums[2], s3 = sums[3];
    for (int j = ja; j < jb; j++) {
        s0 += x0[j];
        s1 += x1[j];
        s2 += x2[j];
        s3 += x3[j];
    }
    sums[0] = s0, sums[1] = s1, sums[2] = s2, sums[3] = s3;
}

// max of x[0..n) (n >= 1, no NaN): order-independent, so lanes may split it
static float vmax(const float *x, int n) {
    typedef int32_t v16i __attribute__((vector_size(64)));
    float m = -INFINITY;
    int i = 0;
    if (n >= VL) {
        v16 acc = ld16(x);
        for (i = VL; i + VL <= n; i += VL) {
            v16 v = ld16(x + i);
            v16i gt = v > acc;
            acc = (v16)(((v16i)v & gt) | ((v16i)acc & ~gt));
        }
        for (int k = 0; k < VL; k++) m = acc[k] > m ? acc[k] : m;
    }
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

void attn_flash_forward(float *out, const float *q, const float *k, const float *v,
                        const struct attn_call *c, int h0, int h1, void *scratch, unsigned flags) {
    const int T = c->T, H = c->H, Hkv = c->Hkv, d = c->d, g = H / Hkv, Bc = c->tile;
    const int W = c->window;
    const int quant = (flags & ATTN_F_QUANT) != 0, qmean = (flags & ATTN_F_QMEAN) != 0;
    const int preorder = (flags & ATTN_F_PREORDER) != 0, st32 = (flags & ATTN_FI_STATE_F32) != 0;
    const enum hif4_recipe rec = c->qformat == ATTN_QFORMAT_HIF4_A6 ? HIF4_RECIPE_A6 : HIF4_RECIPE_NORMATIVE;
    const int qq = quant && !(c->qdq_skip & ATTN_QDQ_SKIP_Q), qk = quant && !(c->qdq_skip & ATTN_QDQ_SKIP_K);
    const int qv = quant && !(c->qdq_skip & ATTN_QDQ_SKIP_V), qp = quant && !(c->qdq_skip & ATTN_QDQ_SKIP_P);
    const float sm = c->sm, cap = c->softcap;
    struct layout L;
    float *base = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    layout_floats(c, &L, base);
    const size_t dp = L.dp;

    for (int kh = h0 / g; kh <= (h1 - 1) / g; kh++) {
        prep_kv(&L, k, v, c, kh, flags, rec, qk, qv);
        const float *s = (flags & ATTN_F_SQK) ? c->scales + (size_t)kh * d : NULL;
        int ha = h0 > kh * g ? h0 : kh * g, hb = h1 < (kh + 1) * g ? h1 : (kh + 1) * g;
        for (int h = ha; h < hb; h++)
            for (int i0 = 0; i0 < T; i0 += BR) {
                const int nr = T - i0 < BR ? T - i0 : BR;
                float mu[BR] = {0}, m[BR], l[BR], r[BR] = {0};
                int jlo[BR], active[BR];
                for (int rr = 0; rr < BR; rr++) {
                    float *qr = L.qx + rr * dp;
                    if (rr < nr) mu[rr] = prep_q(qr, q + ((size_t)(i0 + rr) * H + h) * d, s, d, flags, rec, qq);
                    else memset(qr, 0, dp * sizeof(float));
                    m[rr] = -INFINITY;
                    l[rr] = 0;
                    int i = i0 + rr;
                    jlo[rr] = W > 0 && i - W + 1 > 0 ? i - W + 1 : 0;
                }
                memset(L.O, 0, BR * dp * sizeof(float));
                const int ilast = i0 + nr - 1;
                for (int t0 = jlo[0] / Bc * Bc; t0 <= ilast; t0 += Bc) {
                    // keys any row of the block sees in this tile, widened to whole vectors
                    int ka = jlo[0] > t0 ? jlo[0] : t0, kb = ilast + 1 < t0 + Bc ? ilast + 1 : t0 + Bc;
                    qk_block(L.S, (size_t)Bc, L.qx, dp, L.kP, d, t0, ka / VL * VL,
                             (int)up((size_t)kb, VL));
                    int ua = kb, ub = ka; // union of the active rows' visible keys
                    for (int rr = 0; rr < BR; rr++) {
                        const int i = i0 + rr;
                        float *Sr = L.S + (size_t)rr * Bc, *Pr = L.P + (size_t)rr * Bc;
                        float *Pcr = L.Pc + (size_t)rr * Bc;
                        const int va = jlo[rr] > t0 ? jlo[rr] : t0, vb = i < t0 + Bc - 1 ? i : t0 + Bc - 1;
                        active[rr] = rr < nr && va <= vb;
                        if (!active[rr]) continue;
                        if (va < ua) ua = va;
                        if (vb + 1 > ub) ub = vb + 1;
                        // scores: Q-Mean correction, scale, soft-cap (7.4, 7.6); masked -> P = 0
                        const int nv = vb - va + 1;
                        float *Sv = Sr + (va - t0), *Pv = Pr + (va - t0);
                        if (qmean) {
                            const float *kap = L.kappa + va, mur = mu[rr];
                            for (int j = 0; j < nv; j++) Sv[j] = sm * (Sv[j] + kern_fp16(mur * kap[j]));
                        } else {
                            for (int j = 0; j < nv; j++) Sv[j] = sm * Sv[j];
                        }
                        if (cap > 0) { // cap * tanh(S / cap), true division (7.4)
                            float *u = Pv; // P of this row is written only below: free as staging
                            for (int j = 0; j < nv; j++) u[j] = Sv[j] / cap;
                            kern_tanh_n(Sv, u, nv);
                            for (int j = 0; j < nv; j++) Sv[j] = cap * Sv[j];
                        }
                        const float mt = vmax(Sv, nv);
                        const float mtile = st32 ? mt : kern_fp16(mt);
                        const float mnew = m[rr] > mtile ? m[rr] : mtile;
                        r[rr] = m[rr] == -INFINITY ? 0.0f
                              : st32 ? kern_exp(m[rr] - mnew) : kern_fp16(kern_exp(m[rr] - mnew));
                        m[rr] = mnew;
                        for (int j = 0; j < nv; j++) Sv[j] = Sv[j] - mnew;
                        kern_exp_n(Pv, Sv, nv);
                        if (!st32)
                            for (int j = 0; j < nv; j++) Pv[j] = kern_fp16(Pv[j]);
                        memset(Pr, 0, (size_t)(va - t0) * sizeof(float));
                        memset(Pv + nv, 0, (size_t)(t0 + Bc - 1 - vb) * sizeof(float));
                        if (!quant)
                            for (int u = 0; u < Bc; u++) Pcr[u] = kern_bf16(Pr[u]);
                        else if (!qp)
                            memcpy(Pcr, Pr, (size_t)Bc * sizeof(float));
                    }
                    // PV operand: qdq(P) in 64-key groups of the tile, masked keys enter as 0;
                    // groups with no visible key quantize to 0 and are skipped
                    for (int rr = 0; qp && rr < BR; rr++) {
                        if (!active[rr]) continue;
                        const int i = i0 + rr;
                        const int va = jlo[rr] > t0 ? jlo[rr] : t0, vb = i < t0 + Bc - 1 ? i : t0 + Bc - 1;
                        const int ga = (va - t0) / HIF4_GROUP * HIF4_GROUP;
                        const int gb = (vb - t0) / HIF4_GROUP * HIF4_GROUP + HIF4_GROUP;
                        float *Pcr = L.Pc + (size_t)rr * Bc;
                        memset(Pcr, 0, (size_t)ga * sizeof(float));
                        hif4_qdq(Pcr + ga, L.P + (size_t)rr * Bc + ga, gb - ga, rec);
                        memset(Pcr + gb, 0, (size_t)(Bc - gb) * sizeof(float));
                    }
                    for (int rr = 0; rr < BR; rr++) // inactive rows: PV operand 0 (their O is not updated)
                        if (!active[rr]) memset(L.Pc + (size_t)rr * Bc, 0, (size_t)Bc * sizeof(float));
                    // row sums, sequential over the tile's keys (7.2). Run over the union of the
                    // rows' visible keys: the others hold +0, and adding +0 to a sum of
                    // non-negative terms changes no bit; the BR rows are independent chains.
                    float sumP[BR] = {0}, sumPc[BR] = {0};
                    if (!preorder || c->diag) rowsums(sumP, L.P, (size_t)Bc, t0, ua, ub);
                    if (preorder || (c->diag && quant)) rowsums(sumPc, L.Pc, (size_t)Bc, t0, ua, ub);
                    for (int rr = 0; rr < BR; rr++) {
                        if (!active[rr]) continue;
                        const float rowsum = preorder ? sumPc[rr] : sumP[rr];
                        l[rr] = st32 ? r[rr] * l[rr] + rowsum : kern_fp16(r[rr] * l[rr] + kern_fp16(rowsum));
                        if (c->diag && quant && sumP[rr] > 0)
                            kern_eps_add(c->diag, (double)sumPc[rr] / (double)sumP[rr] - 1.0);
                    }
                    if (ua < ub) pv_block(L.O, L.Pc, (size_t)Bc, L.vP, L.Tp, dp, t0, ua, ub, r, active);
                }
                for (int rr = 0; rr < nr; rr++) {
                    float *oi = out + ((size_t)(i0 + rr) * H + h) * d;
                    const float *o = L.O + rr * dp;
                    if (flags & ATTN_FI_RAW_OUT)
                        for (int ch = 0; ch < d; ch++) oi[ch] = o[ch] / l[rr];
                    else
                        for (int ch = 0; ch < d; ch++) oi[ch] = kern_bf16(kern_fp16(o[ch] / l[rr]));
                }
            }
    }
}
