// sage3.c: the modes `sage3` and `sage3+preorder` - SageAttention3's FP4 recipe as the
// idealized binary32 algorithm of spec/fp4.md section 5: K smoothed by its mean over all T
// tokens, Q by its 128-row group mean with the bf16 score correction dS, single-level NVFP4
// Q, K (along d) and V (16-token blocks from position 0), 128x128 tiles in ascending order,
// P~ = exp2 with the fixed 2688 scale quantized in two levels (fp4.h fp4_sage3_p), and the row
// sum of the unquantized P~ (sage3: the normalizer mismatch of the paper's Theorem 1) or of the
// quantized Pc (sage3+preorder). Loops put keys (scores, dS) or channels (PV) in the inner loop,
// each accumulating in the spec's order; sage3_ref.c is the literal version it is tested
// against bit for bit. No cached prefix is exact (5.5): attn.c refuses a past.
#include <math.h>
#include <string.h>

#include "attention/fp4.h"
#include "attention/kern.h"
#include "attention/modes.h"

#define TB FP4_SAGE3_TILE // Br = Bc = Q-mean group = 128

static size_t up(size_t x, size_t m) { return (x + m - 1) / m * m; }

struct s3 {
    const struct attn_call *c;
    int T, d, kend, preorder, raw;
    int qq, qk, qv, qp;
    float cs;           // c = sm * log2 e (5.1)
    size_t Tp;          // T rounded up to 128
    float *kzT, *kxT;   // (d, Tp) kz and its operand kx, channel-major (keys in the inner loop)
    float *vx;          // (Tp, d) V operand
    float *kz;          // (T, d) staging of one kv head's kz rows
    float *dS, *qm, *qx, *qz; // (Tp) correction of the current group; (d) its bf16 mean; (d) one row
    float *S, *pt, *pc, *O, *pv; // (TB) one tile row; (d) accumulators
};

size_t attn_sage3_scratch(const struct attn_call *c) {
    const size_t Tp = up((size_t)c->T, TB), d = (size_t)c->d;
    return (3 * d * Tp + (size_t)c->T * d + Tp + 5 * d + 3 * TB + 16) * sizeof(float);
}

static void s3_init(struct s3 *F, const struct attn_call *c, void *scratch, unsigned flags) {
    memset(F, 0, sizeof *F);
    F->c = c, F->T = c->T, F->d = c->d;
    const int kend = (int)up((size_t)c->r1, TB);
    F->kend = kend < c->T ? kend : c->T;
    F->preorder = (flags & ATTN_F_PREORDER) != 0, F->raw = (flags & ATTN_FI_RAW_OUT) != 0;
    F->qq = !(c->qdq_skip & ATTN_QDQ_SKIP_Q), F->qk = !(c->qdq_skip & ATTN_QDQ_SKIP_K);
    F->qv = !(c->qdq_skip & ATTN_QDQ_SKIP_V), F->qp = !(c->qdq_skip & ATTN_QDQ_SKIP_P);
    F->cs = fp4_sage3_c(c->sm);
    F->Tp = up((size_t)c->T, TB);
    const size_t d = (size_t)c->d, Tp = F->Tp;
    float *p = scratch;
    F->kzT = p, p += d * Tp;
    F->kxT = p, p += d * Tp;
    F->vx = p, p += d * Tp;
    F->kz = p, p += (size_t)c->T * d;
    F->dS = p, p += Tp;
    F->qm = p, p += d;
    F->qx = p, p += d;
    F->qz = p, p += d;
    F->O = p, p += d;
    F->pv = p, p += d;
    F->S = p, p += TB;
    F->pt = p, p += TB;
    F->pc = p;
}

// P1 and P4 for kv head kh: K-mean over all T tokens, kz, kx = q1(kz) along d, vx = q1(v) in
// 16-token blocks along tokens (keys [0, kend) of the layout; the mean needs every key)
static void s3_prep_kv(struct s3 *F, const float *k, const float *v, int kh) {
    const int T = F->T, d = F->d, kend = F->kend;
    const size_t Tp = F->Tp, w = (size_t)F->c->Hkv * d;
    float *km = F->qz; // staging (d)
    for (int ch = 0; ch < d; ch++) km[ch] = 0;
    for (int t = 0; t < T; t++)
        for (int ch = 0; ch < d; ch++) km[ch] += k[(size_t)t * w + (size_t)kh * d + ch];
    for (int ch = 0; ch < d; ch++) km[ch] = round_bf16(km[ch] / (float)T);
    float kmax = 0;
    for (int t = 0; t < kend; t++) {
        float *kr = F->kz + (size_t)t * d;
        for (int ch = 0; ch < d; ch++) kr[ch] = round_bf16(k[(size_t)t * w + (size_t)kh * d + ch] - km[ch]);
        for (int ch = 0; ch < d; ch++) F->kzT[(size_t)ch * Tp + t] = kr[ch], kmax = fabsf(kr[ch]) > kmax ? fabsf(kr[ch]) : kmax;
        if (F->qk) fp4_qdq(kr, kr, d, FP4_NVFP4_1L, NULL);
        for (int ch = 0; ch < d; ch++) F->kxT[(size_t)ch * Tp + t] = kr[ch];
    }
    for (int t = 0; t < kend; t++) memcpy(F->vx + (size_t)t * d, v + (size_t)t * w + (size_t)kh * d, (size_t)d * sizeof(float));
    if (F->qv) fp4_qdq_cols(F->vx, F->vx, d, kend, d, FP4_NVFP4_1L, NULL);
    if (F->c->diag && kmax > F->c->diag->k_maxabs) F->c->diag->k_maxabs = kmax;
}

// P2-P3 for the group [g0, g1) of query head h: mq (unrounded, divisor 128), qm = bf16(mq), and
// dS_j = bf16(sum_c f32(qm_c * kz_jc)) for keys [ka, g1) (lanes hold keys, c ascending)
static void s3_group(struct s3 *F, const float *q, int h, int g0, int g1, int ka) {
    const int d = F->d;
    const size_t wq = (size_t)F->c->H * d;
    float *mq = F->qm;
    for (int ch = 0; ch < d; ch++) mq[ch] = 0;
    for (int i = g0; i < g1; i++)
        for (int ch = 0; ch < d; ch++) mq[ch] += q[(size_t)i * wq + (size_t)h * d + ch];
    for (int ch = 0; ch < d; ch++) mq[ch] = mq[ch] / (float)TB; // kept unrounded in qm until qz is formed
    for (int j = ka; j < g1; j++) F->dS[j] = 0;
    for (int ch = 0; ch < d; ch++) {
        const float m = round_bf16(mq[ch]), *kz = F->kzT + (size_t)ch * F->Tp;
        for (int j = ka; j < g1; j++) F->dS[j] += m * kz[j];
    }
    for (int j = ka; j < g1; j++) F->dS[j] = round_bf16(F->dS[j]);
}

// T1-T6 of row i over its visible tiles, then the output row
static void s3_row(struct s3 *F, float *oi, const float *qi, int i) {
    const int d = F->d, T = F->T, W = F->c->window;
    const size_t Tp = F->Tp;
    for (int ch = 0; ch < d; ch++) F->qx[ch] = round_bf16(qi[ch] - F->qm[ch]); // qz with the unrounded mean
    if (F->qq) fp4_qdq(F->qx, F->qx, d, FP4_NVFP4_1L, NULL);
    const int jlo = W > 0 && i - W + 1 > 0 ? i - W + 1 : 0;
    float m = -INFINITY, l = 0;
    for (int ch = 0; ch < d; ch++) F->O[ch] = 0;
    for (int t0 = jlo / TB * TB; t0 <= i; t0 += TB) {
        const int n = T - t0 < TB ? T - t0 : TB, va = jlo > t0 ? jlo : t0, vb = i < t0 + n - 1 ? i : t0 + n - 1;
        float *S = F->S;
        for (int u = 0; u < n; u++) S[u] = F->dS[t0 + u]; // T1: the accumulator starts at dS
        for (int ch = 0; ch < d; ch++) {
            const float qc = F->qx[ch], *kx = F->kxT + (size_t)ch * Tp + t0;
            for (int u = va - t0; u <= vb - t0; u++) S[u] += qc * kx[u];
        }
        float mt = -INFINITY;
        for (int u = 0; u < n; u++) {
            if (t0 + u < va || t0 + u > vb) S[u] = -INFINITY;
            mt = S[u] > mt ? S[u] : mt;
        }
        const float mnew = m > mt ? m : mt; // T2
        const struct fp4_sage3_row o = {F->pt, F->pc, NULL, NULL, NULL};
        fp4_sage3_p(&o, S, n, mnew, F->cs, F->qp ? FP4_P_QUANT : FP4_P_SKIP);
        float sp = 0, spc = 0; // T5, keys ascending from +0
        for (int u = 0; u < n; u++) sp += F->pt[u], spc += F->pc[u];
        const float r = m == -INFINITY ? 0.0f : fp4_exp2cr((m - mnew) * F->cs); // T6
        l = l * r + (F->preorder ? spc : sp);
        for (int ch = 0; ch < d; ch++) F->pv[ch] = 0;
        for (int u = 0; u < n; u++) {
            const float p = F->pc[u], *vr = F->vx + (size_t)(t0 + u) * d;
            for (int ch = 0; ch < d; ch++) F->pv[ch] += p * vr[ch];
        }
        for (int ch = 0; ch < d; ch++) F->O[ch] = F->O[ch] * r + F->pv[ch];
        m = mnew;
        if (F->c->diag && sp > 0) kern_eps_add(F->c->diag, (double)spc / (double)sp - 1.0);
    }
    const float inv = (l == 0 || isnan(l)) ? 0.0f : 1.0f / l;
    for (int ch = 0; ch < d; ch++) oi[ch] = F->raw ? F->O[ch] * inv : kern_bf16(kern_fp16(F->O[ch] * inv));
}

void attn_sage3_forward(const struct attn_operands *x, const struct attn_call *c, int h0, int h1, void *scratch,
                        unsigned flags) {
    float *out = x->out;
    const float *q = x->q, *k = x->k, *v = x->v;
    const int g = c->H / c->Hkv, T = c->T, W = c->window;
    const size_t wq = (size_t)c->H * c->d;
    struct s3 F;
    s3_init(&F, c, scratch, flags);
    for (int kh = h0 / g; kh <= (h1 - 1) / g; kh++) {
        s3_prep_kv(&F, k, v, kh);
        const int ha = h0 > kh * g ? h0 : kh * g, hb = h1 < (kh + 1) * g ? h1 : (kh + 1) * g;
        for (int h = ha; h < hb; h++)
            for (int g0 = c->r0 / TB * TB; g0 < c->r1; g0 += TB) {
                const int g1 = g0 + TB < T ? g0 + TB : T, ka = W > 0 && g0 - W + 1 > 0 ? (g0 - W + 1) / TB * TB : 0;
                s3_group(&F, q, h, g0, g1, ka);
                const int ia = g0 > c->r0 ? g0 : c->r0, ib = g1 < c->r1 ? g1 : c->r1;
                for (int i = ia; i < ib; i++)
                    s3_row(&F, out + (size_t)i * wq + (size_t)h * c->d, q + (size_t)i * wq + (size_t)h * c->d, i);
            }
    }
}

static void fwd_sage3(const struct attn_operands *x, const struct attn_call *c, int h0, int h1, void *scratch) {
    attn_sage3_forward(x, c, h0, h1, scratch, ATTN_F_SAGE3);
}
static void fwd_sage3_pre(const struct attn_operands *x, const struct attn_call *c, int h0, int h1, void *scratch) {
    attn_sage3_forward(x, c, h0, h1, scratch, ATTN_F_SAGE3 | ATTN_F_PREORDER);
}

#define S3_FLAGS (ATTN_F_ROUND_INPUT | ATTN_F_TILED | ATTN_F_QUANT | ATTN_F_SAGE3)
const struct attn_mode attn_mode_sage3 = {
    .name = "sage3", .label = "SageAttention3 FP4, port", .flags = S3_FLAGS,
    .scratch_bytes = attn_sage3_scratch, .forward = fwd_sage3,
};
const struct attn_mode attn_mode_sage3_preorder = {
    .name = "sage3+preorder", .label = "SageAttention3 FP4 + P-Reordering", .flags = S3_FLAGS | ATTN_F_PREORDER,
    .scratch_bytes = attn_sage3_scratch, .forward = fwd_sage3_pre,
};
