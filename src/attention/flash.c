// flash.c: the fast FlashAttention-tiled kernel behind every tiled mode (`bf16`, `direct`,
// `hifa4` and the ablations), parametrized by the mode flags (spec/attention.md sections 2-4,
// arithmetic of section 7). Bit-identical to the literal scalar reference in flash_ref.c:
// every binary32 operation and its order is the same, only the loops are arranged so that
// SIMD lanes hold different keys (QK^T) or different output channels (PV), each lane
// accumulating in the spec's fixed sequential order (7.2). Quantization goes through quant.h
// (--qformat: HiF4, NVFP4 or MXFP4; NVFP4's per-tensor scales over the whole call, fp4.md 4.2).
// Q-Mean runs in either form (token: a scalar per row; channel: per query tile of Br = Bc rows
// aligned to position 0, attn.h). Layout: per kv head prep_k/prep_v (keys [0, kend)), then per
// query head head_rows (rows [r0, r1)) -> query tiles (tile_qmean) -> blocks of BR rows
// (block_begin, block_tile per key tile, block_end). Positions are absolute: keys below q0 come
// from a cached prefix (attn_kv_row), q and out address position q0 (attn_q_off).
#include <math.h>
#include <string.h>

#include "attention/kern.h"
#include "attention/modes.h"
#include "attention/quant.h"

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
    float *ksP;            // (Tp/PW, d, PW) smoothed K before qdq, same panels (channel form: delta)
    float *kappa;          // (Tp)      fp16(sum_c ks_j) (token form)
    float *delta;          // (Tp)      fp16(mu . ks_j) of the current query tile (channel form)
    float *mu;             // (dp)      mu_c of the current query tile (channel form)
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
    TAKE(ksP, d * Tp);
    TAKE(kappa, Tp);
    TAKE(delta, Tp);
    TAKE(mu, dp);
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

// ---- one call's constants ----
enum { QM_NONE, QM_TOKEN, QM_CHANNEL }; // Q-Mean form (spec section 4: `qmean`, `qmean-ch`)

struct fwd {
    const struct attn_call *c;
    struct layout L;
    const float *s;        // Smooth-QK scales of the current kv head [d], or NULL
    int H, Hkv, d, Bc, W;
    int kend;              // keys prepared: [0, min(T, r1 rounded up to Bc))
    int quant, qm, preorder, st32;
    int qq, qk, qv, qp;    // qdq applied to Q, K, V, P (not skipped)
    struct attn_q4 zq, zk, zv, zp; // the operands' quantizers (NVFP4: per-tensor scale of the head)
    float sm, cap;
};

static void fwd_init(struct fwd *F, const struct attn_call *c, void *scratch, unsigned flags) {
    memset(F, 0, sizeof *F);
    F->c = c;
    layout_floats(c, &F->L, (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63));
    F->H = c->H, F->Hkv = c->Hkv, F->d = c->d, F->Bc = c->tile, F->W = c->window;
    // whole V groups (64 | Bc) and whole query tiles (Br = Bc) of the rows computed
    const int kend = (int)up((size_t)c->r1, (size_t)c->tile);
    F->kend = kend < c->T ? kend : c->T;
    F->quant = (flags & ATTN_F_QUANT) != 0;
    F->qm = !(flags & ATTN_F_QMEAN) ? QM_NONE : (flags & ATTN_F_QMEAN_CH) ? QM_CHANNEL : QM_TOKEN;
    F->preorder = (flags & ATTN_F_PREORDER) != 0;
    F->st32 = (flags & ATTN_FI_STATE_F32) != 0;
    F->qq = F->quant && !(c->qdq_skip & ATTN_QDQ_SKIP_Q), F->qk = F->quant && !(c->qdq_skip & ATTN_QDQ_SKIP_K);
    F->qv = F->quant && !(c->qdq_skip & ATTN_QDQ_SKIP_V), F->qp = F->quant && !(c->qdq_skip & ATTN_QDQ_SKIP_P);
    attn_q4_init(&F->zq, c->qformat), attn_q4_init(&F->zk, c->qformat);
    attn_q4_init(&F->zv, c->qformat), attn_q4_init(&F->zp, c->qformat); // P: At = 1 (fp4.md 4.2)
    F->sm = c->sm, F->cap = c->softcap;
}

// ks_j of one key: bf16(k_j / s) (7.6) with Smooth-QK, else k_j
static void smooth_k(float *row, const float *kr, const float *s, int d) {
    if (s)
        for (int ch = 0; ch < d; ch++) row[ch] = round_bf16(kr[ch] / s[ch]);
    else
        memcpy(row, kr, (size_t)d * sizeof(float));
}

// NVFP4's per-tensor amax of K (ks) and V of one kv head over all keys [0, T) of the sequence
// (fp4.md 4.2: computed over the whole set, whatever rows this task computes)
static float kv_amax(const struct fwd *F, const float *x, int kh, int is_v) {
    const int d = F->d;
    float *row = F->L.tmp, a = 0;
    for (int j = 0; j < F->c->T; j++) {
        const float *xr = attn_kv_row(F->c, x, is_v ? F->c->past_v : F->c->past_k, j) + (size_t)kh * d;
        if (!is_v) smooth_k(row, xr, F->s, d), xr = row;
        const float m = fp4_amax(xr, d);
        a = m > a ? m : a;
    }
    return a;
}

// ---- K and V of one kv head (keys [0, kend)): smoothing, kappa, qdq, layout for the GEMM loops ----
// ks_j = bf16(k_j / s) (7.6) or k_j; kappa_j = fp16(sum_c ks_j) (token form); the channel form
// keeps ks in ksP for its delta GEMV; kx = qdq(ks) into kP. Keys past kend up to the next panel
// edge are zero (the vector loops read whole panels' lanes).
static void prep_k(struct fwd *F, const float *k, int kh) {
    const int T = F->kend, d = F->d;
    const struct layout *L = &F->L;
    float *row = L->tmp, kmax = 0;
    if (F->qk && attn_q4_has_tensor_scale(&F->zk)) attn_q4_set_amax(&F->zk, kv_amax(F, k, kh, 0));
    for (int j = 0; j < T; j++) {
        smooth_k(row, attn_kv_row(F->c, k, F->c->past_k, j) + (size_t)kh * d, F->s, d);
        if (F->qm == QM_TOKEN) {
            float sum = 0; // sequential, 7.6
            for (int ch = 0; ch < d; ch++) sum += row[ch];
            L->kappa[j] = kern_fp16(sum);
        }
        if (F->c->diag)
            for (int ch = 0; ch < d; ch++) kmax = fabsf(row[ch]) > kmax ? fabsf(row[ch]) : kmax;
        float *kp = L->kP + (size_t)(j / PW) * d * PW + j % PW;
        if (F->qm == QM_CHANNEL)
            for (int ch = 0; ch < d; ch++) L->ksP[(size_t)(j / PW) * d * PW + (size_t)ch * PW + j % PW] = row[ch];
        if (F->qk) attn_q4_vec(&F->zk, row, d);
        for (int ch = 0; ch < d; ch++) kp[(size_t)ch * PW] = row[ch];
    }
    for (size_t j = (size_t)T; j < up((size_t)T, PW); j++)
        for (int ch = 0; ch < d; ch++) {
            L->kP[(j / PW) * d * PW + (size_t)ch * PW + j % PW] = 0;
            if (F->qm == QM_CHANNEL) L->ksP[(j / PW) * d * PW + (size_t)ch * PW + j % PW] = 0;
        }
    if (F->c->diag && kmax > F->c->diag->k_maxabs) F->c->diag->k_maxabs = kmax;
}

// V of one kv head into panels; qdq along tokens in groups from position 0 (spec section 3), or
// along d per token with --v-group channel
static void prep_v(struct fwd *F, const float *v, int kh) {
    const int T = F->kend, d = F->d;
    const struct layout *L = &F->L;
    const size_t Tp = L->Tp, dp = L->dp;
    const int by_channel = F->c->v_group == ATTN_VGROUP_CHANNEL;
    float *row = L->tmp;
    if (F->qv && attn_q4_has_tensor_scale(&F->zv)) attn_q4_set_amax(&F->zv, kv_amax(F, v, kh, 1));
    for (int j = 0; j < T; j++) {
        const float *vr = attn_kv_row(F->c, v, F->c->past_v, j) + (size_t)kh * d;
        if (F->qv && by_channel) { // groups along d per token
            memcpy(row, vr, (size_t)d * sizeof(float));
            attn_q4_vec(&F->zv, row, d);
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
        memset(panel + (size_t)T * PW, 0, (up((size_t)T, 64) - (size_t)T) * PW * sizeof(float));
        int w = (int)((size_t)d - p * PW < PW ? (size_t)d - p * PW : PW);
        if (F->qv && !by_channel) attn_q4_cols(&F->zv, panel, PW, T, w);
    }
}

// ---- Q (spec section 4) ----
// qs of one row: bf16(q * s) with Smooth-QK (7.6), else q
static void smooth_q(float *qs, const float *qi, const float *s, int d) {
    if (s)
        for (int ch = 0; ch < d; ch++) qs[ch] = round_bf16(qi[ch] * s[ch]);
    else
        memcpy(qs, qi, (size_t)d * sizeof(float));
}

// delta[j] = fp16(sm * f32(sum_c f32(mu_c * ks_{j,c}))) for keys [ja, jb) (multiples of VL;
// spec section 4, channel form revision 2: scaled before the fp16 rounding): lanes hold keys, each
// accumulating c = 0..d-1 in order from +0 (attn.h); two panels per pass = four independent
// chains (one chain is add-latency bound)
static void delta_gemv(float *delta, const float *ksP, const float *mu, float sm, int d, int ja, int jb) {
    int j = ja;
    for (; j % PW == 0 && j + 2 * PW <= jb; j += 2 * PW) {
        const float *p0 = ksP + (size_t)(j / PW) * d * PW, *p1 = p0 + (size_t)d * PW;
        v16 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
        for (int ch = 0; ch < d; ch++) {
            const float m = mu[ch];
            a0 += ld16(p0 + (size_t)ch * PW) * m, a1 += ld16(p0 + (size_t)ch * PW + VL) * m;
            a2 += ld16(p1 + (size_t)ch * PW) * m, a3 += ld16(p1 + (size_t)ch * PW + VL) * m;
        }
        v16 acc[4] = {a0, a1, a2, a3};
        for (int u = 0; u < 4 * VL; u++) delta[j + u] = kern_fp16(sm * acc[u / VL][u % VL]);
    }
    for (; j < jb; j += VL) {
        const float *kp = ksP + (size_t)(j / PW) * d * PW + j % PW;
        v16 a = {0};
        for (int ch = 0; ch < d; ch++) a += ld16(kp + (size_t)ch * PW) * mu[ch];
        for (int u = 0; u < VL; u++) delta[j + u] = kern_fp16(sm * a[u]);
    }
}

// Channel form: mu_c of the query tile [ts, te) of head h (absolute rows; lanes hold channels,
// each summing the rows in ascending order from +0) into L.mu
static void tile_mu(const struct fwd *F, const float *q, int h, int ts, int te) {
    const int d = F->d;
    float *mu = F->L.mu, *row = F->L.tmp;
    for (int ch = 0; ch < d; ch++) mu[ch] = 0;
    for (int i = ts; i < te; i++) {
        smooth_q(row, q + attn_q_off(F->c, i, h), F->s, d);
        for (int ch = 0; ch < d; ch++) mu[ch] += row[ch];
    }
    const float n = (float)(te - ts);
    for (int ch = 0; ch < d; ch++) mu[ch] = kern_fp16(mu[ch] / n);
}
// ... and delta_j for every key a row of the tile can see, [max(0, ts - W + 1), te)
static void tile_qmean(const struct fwd *F, const float *q, int h, int ts, int te) {
    tile_mu(F, q, h, ts, te);
    const int ka = F->W > 0 && ts - F->W + 1 > 0 ? ts - F->W + 1 : 0;
    delta_gemv(F->L.delta, F->L.ksP, F->L.mu, F->sm, F->d, ka / VL * VL, (int)up((size_t)te, VL));
}

// qx = qs - mu of one row (the value qdq is handed); returns the token form's mu (0 otherwise)
static float q_operand(const struct fwd *F, float *qx, const float *qi) {
    const int d = F->d;
    smooth_q(qx, qi, F->s, d);
    float mu = 0;
    if (F->qm == QM_TOKEN) {
        float sum = 0;
        for (int ch = 0; ch < d; ch++) sum += qx[ch];
        mu = kern_fp16(sum / (float)d);
        for (int ch = 0; ch < d; ch++) qx[ch] = qx[ch] - mu;
    } else if (F->qm == QM_CHANNEL) {
        for (int ch = 0; ch < d; ch++) qx[ch] = qx[ch] - F->L.mu[ch];
    }
    return mu;
}
// qx = qdq(qs - mu)
static float prep_q(const struct fwd *F, float *qx, const float *qi) {
    const float mu = q_operand(F, qx, qi);
    if (F->qq) attn_q4_vec(&F->zq, qx, F->d);
    return mu;
}

// NVFP4's per-tensor amax of Q of head h: the values handed to qdq over all rows [0, T) of
// the sequence (fp4.md 4.2; such calls never continue a prefix, so q holds every row). Leaves
// the channel form's mu of the last tile in L.mu (head_rows recomputes every tile's).
static float q_amax(const struct fwd *F, const float *q, int h) {
    const int T = F->c->T, Br = F->Bc;
    float a = 0, *row = F->L.qx; // the block's rows are prepared only after this
    for (int i = F->c->q0; i < T; i++) {
        if (F->qm == QM_CHANNEL && i % Br == 0) tile_mu(F, q, h, i, i + Br < T ? i + Br : T);
        q_operand(F, row, q + attn_q_off(F->c, i, h));
        const float m = fp4_amax(row, F->d);
        a = m > a ? m : a;
    }
    return a;
}

// S[r][j - t0] = dot(qx_r, kx_j) for keys [ja, jb) (multiples of VL), c = 0..d-1 in order.
// Two key vectors x BR rows = 8 independent accumulation chains hide the add latency.
// (S, qx, dp and kP are L's; the tile holds keys [t0, t0 + Bc))
static void qk_block(const struct layout *L, size_t Bc, int d, int t0, int ja, int jb) {
    float *S = L->S;
    const float *qx = L->qx, *kP = L->kP;
    const size_t dp = L->dp;
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
// BR rows per pass = 8 independent chains (O, Pc, vP, Tp and dp are L's)
static void pv_block(const struct layout *L, size_t Bc, int t0, int ja, int jb, const float *r,
                     const int *active) {
    float *O = L->O;
    const float *Pc = L->Pc, *vP = L->vP;
    const size_t Tp = L->Tp, dp = L->dp;
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

// ---- a block of BR query rows through its key tiles ----
struct blk {
    int i0, nr;            // rows [i0, i0 + nr), nr <= BR, inside one query tile
    float mu[BR];          // token form: each row's mu
    float m[BR], l[BR], r[BR]; // online-softmax state (section 2)
    int jlo[BR];           // each row's first visible key (sliding window)
    int va[BR], vb[BR], active[BR]; // each row's visible keys [va, vb] in the current key tile
};

static void block_begin(const struct fwd *F, struct blk *B, const float *q, int h, int i0, int nr) {
    const size_t dp = F->L.dp;
    B->i0 = i0, B->nr = nr;
    for (int rr = 0; rr < BR; rr++) {
        float *qr = F->L.qx + rr * dp;
        B->mu[rr] = 0;
        if (rr < nr) B->mu[rr] = prep_q(F, qr, q + attn_q_off(F->c, i0 + rr, h));
        else memset(qr, 0, dp * sizeof(float));
        B->m[rr] = -INFINITY;
        B->l[rr] = 0;
        B->r[rr] = 0;
        const int i = i0 + rr;
        B->jlo[rr] = F->W > 0 && i - F->W + 1 > 0 ? i - F->W + 1 : 0;
    }
    memset(F->L.O, 0, BR * dp * sizeof(float));
}

// Row rr's scores over its visible keys of the tile at t0 (Q-Mean correction, scale, soft-cap;
// 7.4, 7.6), the state update (m, r), P = fp16(exp(S - m_new)) (0 for masked keys) and the PV
// operand Pc unless it is qdq(P), which the tile forms for all rows at once
static void row_softmax(const struct fwd *F, struct blk *B, int rr, int t0) {
    const int Bc = F->Bc, va = B->va[rr], vb = B->vb[rr], nv = vb - va + 1;
    const float sm = F->sm, cap = F->cap;
    float *Pr = F->L.P + (size_t)rr * Bc, *Pcr = F->L.Pc + (size_t)rr * Bc;
    float *Sv = F->L.S + (size_t)rr * Bc + (va - t0), *Pv = Pr + (va - t0);
    if (F->qm == QM_TOKEN) {
        const float *kap = F->L.kappa + va, mur = B->mu[rr];
        for (int j = 0; j < nv; j++) Sv[j] = sm * (Sv[j] + kern_fp16(mur * kap[j]));
    } else if (F->qm == QM_CHANNEL) {
        const float *dl = F->L.delta + va;
        for (int j = 0; j < nv; j++) Sv[j] = sm * Sv[j] + dl[j]; // revision 2: delta is scaled
    } else {
        for (int j = 0; j < nv; j++) Sv[j] = sm * Sv[j];
    }
    if (cap > 0) { // cap * tanh(S / cap), true division (7.4)
        float *u = Pv; // P of this row is written only below: free as staging
        for (int j = 0; j < nv; j++) u[j] = Sv[j] / cap;
        kern_tanh_n(Sv, u, nv);
        for (int j = 0; j < nv; j++) Sv[j] = cap * Sv[j];
    }
    const float mt = vmax(Sv, nv), mtile = F->st32 ? mt : kern_fp16(mt);
    const float mnew = B->m[rr] > mtile ? B->m[rr] : mtile;
    B->r[rr] = B->m[rr] == -INFINITY ? 0.0f
             : F->st32 ? kern_exp(B->m[rr] - mnew) : kern_fp16(kern_exp(B->m[rr] - mnew));
    B->m[rr] = mnew;
    for (int j = 0; j < nv; j++) Sv[j] = Sv[j] - mnew;
    kern_exp_n(Pv, Sv, nv);
    if (!F->st32)
        for (int j = 0; j < nv; j++) Pv[j] = kern_fp16(Pv[j]);
    memset(Pr, 0, (size_t)(va - t0) * sizeof(float));
    memset(Pv + nv, 0, (size_t)(t0 + Bc - 1 - vb) * sizeof(float));
    if (!F->quant)
        for (int u = 0; u < Bc; u++) Pcr[u] = kern_bf16(Pr[u]);
    else if (!F->qp)
        memcpy(Pcr, Pr, (size_t)Bc * sizeof(float));
}

// PV operand qdq(P) in 64-key groups of the tile (masked keys enter as 0; groups with no visible
// key quantize to 0 and are skipped); inactive rows get 0 (their O is not updated)
static void tile_pc(const struct fwd *F, const struct blk *B, int t0) {
    const int Bc = F->Bc;
    for (int rr = 0; rr < BR; rr++) {
        float *Pcr = F->L.Pc + (size_t)rr * Bc;
        if (!B->active[rr]) {
            memset(Pcr, 0, (size_t)Bc * sizeof(float));
            continue;
        }
        if (!F->qp) continue;
        // 64-key spans hold whole blocks of every format (64, 32, 16); all-zero blocks give +0
        const int ga = (B->va[rr] - t0) / HIF4_GROUP * HIF4_GROUP;
        const int gb = (B->vb[rr] - t0) / HIF4_GROUP * HIF4_GROUP + HIF4_GROUP;
        memset(Pcr, 0, (size_t)ga * sizeof(float));
        memcpy(Pcr + ga, F->L.P + (size_t)rr * Bc + ga, (size_t)(gb - ga) * sizeof(float));
        attn_q4_vec(&F->zp, Pcr + ga, gb - ga);
        memset(Pcr + gb, 0, (size_t)(Bc - gb) * sizeof(float));
    }
}

// One key tile [t0, t0 + Bc) for the block: QK^T, softmax rows, PV operand, l and O updates
static void block_tile(const struct fwd *F, struct blk *B, int t0) {
    const struct layout *L = &F->L;
    const int Bc = F->Bc, ilast = B->i0 + B->nr - 1;
    // keys any row of the block sees in this tile, widened to whole vectors
    const int ka = B->jlo[0] > t0 ? B->jlo[0] : t0, kb = ilast + 1 < t0 + Bc ? ilast + 1 : t0 + Bc;
    qk_block(L, (size_t)Bc, F->d, t0, ka / VL * VL, (int)up((size_t)kb, VL));
    int ua = kb, ub = ka; // union of the active rows' visible keys
    for (int rr = 0; rr < BR; rr++) {
        const int i = B->i0 + rr;
        B->va[rr] = B->jlo[rr] > t0 ? B->jlo[rr] : t0;
        B->vb[rr] = i < t0 + Bc - 1 ? i : t0 + Bc - 1;
        B->active[rr] = rr < B->nr && B->va[rr] <= B->vb[rr];
        if (!B->active[rr]) continue;
        if (B->va[rr] < ua) ua = B->va[rr];
        if (B->vb[rr] + 1 > ub) ub = B->vb[rr] + 1;
        row_softmax(F, B, rr, t0);
    }
    tile_pc(F, B, t0);
    // row sums, sequential over the tile's keys (7.2). Run over the union of the rows' visible
    // keys: the others hold +0, and adding +0 to a sum of non-negative terms changes no bit;
    // the BR rows are independent chains.
    const struct attn_call *c = F->c;
    float sumP[BR] = {0}, sumPc[BR] = {0};
    if (!F->preorder || c->diag) rowsums(sumP, L->P, (size_t)Bc, t0, ua, ub);
    if (F->preorder || (c->diag && F->quant)) rowsums(sumPc, L->Pc, (size_t)Bc, t0, ua, ub);
    for (int rr = 0; rr < BR; rr++) {
        if (!B->active[rr]) continue;
        const float rowsum = F->preorder ? sumPc[rr] : sumP[rr];
        B->l[rr] = F->st32 ? B->r[rr] * B->l[rr] + rowsum : kern_fp16(B->r[rr] * B->l[rr] + kern_fp16(rowsum));
        if (c->diag && F->quant && sumP[rr] > 0) kern_eps_add(c->diag, (double)sumPc[rr] / (double)sumP[rr] - 1.0);
    }
    if (ua < ub) pv_block(L, (size_t)Bc, t0, ua, ub, B->r, B->active);
}

// out = bf16(fp16(O / l)) of the block's rows (binary32 O / l with ATTN_FI_RAW_OUT)
static void block_end(const struct fwd *F, const struct blk *B, float *out, int h, int raw) {
    const int d = F->d;
    for (int rr = 0; rr < B->nr; rr++) {
        float *oi = out + attn_q_off(F->c, B->i0 + rr, h);
        const float *o = F->L.O + rr * F->L.dp;
        if (raw)
            for (int ch = 0; ch < d; ch++) oi[ch] = o[ch] / B->l[rr];
        else
            for (int ch = 0; ch < d; ch++) oi[ch] = kern_bf16(kern_fp16(o[ch] / B->l[rr]));
    }
}

// Query rows [r0, r1) of query head h against keys [0, r1) (prepared by prep_k/prep_v). Rows are
// absolute positions (q and out address position q0). Query tiles of Br = Bc rows start at
// multiples of Br from position 0 (attn.h) and end at T, and a channel-form mean is over the
// whole tile, so with the channel form r0 is a tile start >= q0 (the alignment rule) and the
// tile's rows up to min(start + Br, T) are read; row blocks never straddle a query tile.
static void head_rows(struct fwd *F, float *out, const float *q, int h, int r0, int r1, int raw) {
    const int Br = F->Bc, T = F->c->T;
    if (F->qq && attn_q4_has_tensor_scale(&F->zq)) attn_q4_set_amax(&F->zq, q_amax(F, q, h));
    for (int ts = r0 / Br * Br; ts < r1; ts += Br) {
        const int te = ts + Br < r1 ? ts + Br : r1;
        if (F->qm == QM_CHANNEL) tile_qmean(F, q, h, ts, ts + Br < T ? ts + Br : T);
        for (int i0 = ts > r0 ? ts : r0; i0 < te; i0 += BR) {
            struct blk B;
            block_begin(F, &B, q, h, i0, te - i0 < BR ? te - i0 : BR);
            for (int t0 = B.jlo[0] / F->Bc * F->Bc; t0 < B.i0 + B.nr; t0 += F->Bc) block_tile(F, &B, t0);
            block_end(F, &B, out, h, raw);
        }
    }
}

void attn_flash_forward(const struct attn_operands *x, const struct attn_call *c, int h0, int h1, void *scratch,
                        unsigned flags) {
    float *out = x->out;
    const float *q = x->q, *k = x->k, *v = x->v;
    const int g = c->H / c->Hkv;
    struct fwd F;
    fwd_init(&F, c, scratch, flags);
    for (int kh = h0 / g; kh <= (h1 - 1) / g; kh++) {
        F.s = (flags & ATTN_F_SQK) ? c->scales + (size_t)kh * c->d : NULL;
        prep_k(&F, k, kh);
        prep_v(&F, v, kh);
        const int ha = h0 > kh * g ? h0 : kh * g, hb = h1 < (kh + 1) * g ? h1 : (kh + 1) * g;
        for (int h = ha; h < hb; h++) head_rows(&F, out, q, h, c->r0, c->r1, (flags & ATTN_FI_RAW_OUT) != 0);
    }
}
