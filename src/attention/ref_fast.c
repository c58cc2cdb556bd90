// ref_fast.c: the binary64 reference attention (modes `exact` and `f32`, spec/attention.md 7.7)
// arranged for speed: K in panels of 16 keys and V row-major, both widened to binary64 once per
// kv head; blocks of BR query rows share every K/V load; SIMD lanes hold keys (scores) or
// channels (PV); a vectorizable binary64 exp. Same mathematics as the literal version in ref.c,
// which the tests compare it to (only the binary64 summation order and the last ulps of exp
// differ). It is the ground truth of the error diagnostics, so it must stay fast at 16K tokens.
// Computes the rows [r0, r1) of a call against keys [0, r1) (positions are absolute; keys below
// q0 come from a cached prefix, attn.h).
#include <math.h>
#include <string.h>

#include "attention/kern.h"
#include "attention/modes.h"

typedef double v8d __attribute__((vector_size(64)));
#define DL 8            // binary64 lanes
#define KW (2 * DL)     // keys per K panel
#define BR 4            // query rows per block

static inline v8d ld8(const double *p) { v8d r; memcpy(&r, p, sizeof r); return r; }
static inline void st8(double *p, v8d x) { memcpy(p, &x, sizeof x); }
static inline size_t up(size_t x, size_t m) { return (x + m - 1) / m * m; }

struct rlayout {
    size_t Tp, dp;
    double *kP;  // (Tp/KW, d, KW) K in panels of KW keys
    double *vx;  // (Tp, dp) V, zero padded
    double *qx;  // (BR, dp) the block's query rows
    double *S;   // (BR, Tp) scores, then weights
    double *acc; // (BR, dp) PV accumulators
};

static size_t rlayout_doubles(const struct attn_call *c, struct rlayout *L, double *base) {
    size_t Tp = up((size_t)c->T, KW), dp = up((size_t)c->d, KW), d = (size_t)c->d, n = 0;
#define TAKE(f, cnt)                                                                               \
    do {                                                                                           \
        if (L) L->f = base + n;                                                                    \
        n += up((cnt), DL);                                                                        \
    } while (0)
    TAKE(kP, Tp * d);
    TAKE(vx, Tp * dp);
    TAKE(qx, BR * dp);
    TAKE(S, BR * Tp);
    TAKE(acc, BR * dp);
#undef TAKE
    if (L) L->Tp = Tp, L->dp = dp;
    return n;
}

size_t attn_ref_scratch(const struct attn_call *c) { return rlayout_doubles(c, NULL, NULL) * sizeof(double) + 64; }

// exp(x) for x <= 0 in binary64 within a few ulps (argument reduction by ln2 in two parts, a
// degree-13 Taylor polynomial on |r| <= 0.35); x < -700 gives exp(-700) ~ 1e-304, which next to
// the row maximum's weight 1 changes nothing. Branch-free, so the row loop vectorizes.
static inline double exp_neg(double x) { return kern_exp64(x < -700.0 ? -700.0 : x); }

// S[r][j] = dot(q_r, k_j) for keys [ja, jb), ja a multiple of KW (S, qx and kP are L's)
static void scores(const struct rlayout *L, int d, int ja, int jb) {
    double *S = L->S;
    const double *qx = L->qx, *kP = L->kP;
    const size_t Tp = L->Tp, dp = L->dp;
    for (int j = ja; j < jb; j += KW) {
        const double *kp = kP + (size_t)(j / KW) * d * KW;
        v8d a[BR] = {{0}}, b[BR] = {{0}};
        for (int ch = 0; ch < d; ch++) {
            v8d ka = ld8(kp + (size_t)ch * KW), kb = ld8(kp + (size_t)ch * KW + DL);
            for (int rr = 0; rr < BR; rr++) {
                double qv = qx[rr * dp + ch];
                a[rr] += ka * qv;
                b[rr] += kb * qv;
            }
        }
        for (int rr = 0; rr < BR; rr++) {
            st8(S + rr * Tp + j, a[rr]);
            st8(S + rr * Tp + j + DL, b[rr]);
        }
    }
}

void attn_ref_forward(const struct attn_operands *x, const struct attn_call *c, int h0, int h1, void *scratch) {
    float *out = x->out;
    const float *q = x->q, *k = x->k, *v = x->v;
    const int H = c->H, Hkv = c->Hkv, d = c->d, g = H / Hkv, W = c->window, T = c->r1;
    const double sm = c->sm64, cap = (double)c->softcap;
    struct rlayout L;
    rlayout_doubles(c, &L, (double *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63));
    const size_t Tp = L.Tp, dp = L.dp, Tk = up((size_t)T, KW); // keys [0, r1), whole panels
    for (int kh = h0 / g; kh <= (h1 - 1) / g; kh++) {
        for (size_t j = 0; j < Tk; j++) {
            double *kp = L.kP + (j / KW) * d * KW + j % KW;
            double *vr = L.vx + j * dp;
            const float *kr = j < (size_t)T ? attn_kv_row(c, k, c->past_k, (int)j) + (size_t)kh * d : NULL;
            const float *vs = j < (size_t)T ? attn_kv_row(c, v, c->past_v, (int)j) + (size_t)kh * d : NULL;
            for (int ch = 0; ch < d; ch++) {
                kp[(size_t)ch * KW] = kr ? (double)kr[ch] : 0.0;
                vr[ch] = vs ? (double)vs[ch] : 0.0;
            }
            for (size_t ch = (size_t)d; ch < dp; ch++) vr[ch] = 0;
        }
        int ha = h0 > kh * g ? h0 : kh * g, hb = h1 < (kh + 1) * g ? h1 : (kh + 1) * g;
        for (int h = ha; h < hb; h++)
            for (int i0 = c->r0; i0 < T; i0 += BR) {
                const int nr = T - i0 < BR ? T - i0 : BR, ilast = i0 + nr - 1;
                int jlo[BR];
                for (int rr = 0; rr < BR; rr++) {
                    const int i = i0 + rr;
                    for (int ch = 0; ch < (int)dp; ch++)
                        L.qx[rr * dp + ch] = rr < nr && ch < d ? (double)q[attn_q_off(c, i, h) + (size_t)ch] : 0.0;
                    jlo[rr] = W > 0 && i - W + 1 > 0 ? i - W + 1 : 0;
                }
                const int ka = jlo[0] / KW * KW, kb = ilast + 1;
                scores(&L, d, ka, (int)up((size_t)kb, KW));
                double sum[BR] = {0};
                for (int rr = 0; rr < nr; rr++) {
                    const int i = i0 + rr;
                    double *s = L.S + rr * Tp, mx = -INFINITY;
                    for (int j = jlo[rr]; j <= i; j++) {
                        double x = s[j] * sm;
                        if (cap > 0) x = cap * tanh(x / cap);
                        s[j] = x;
                        mx = x > mx ? x : mx;
                    }
                    for (int j = jlo[rr]; j <= i; j++) s[j] = exp_neg(s[j] - mx);
                    double sr = 0;
                    for (int j = jlo[rr]; j <= i; j++) sr += s[j];
                    sum[rr] = sr;
                    // weights outside the row's visible keys but inside the block's range are 0
                    for (int j = ka; j < jlo[rr]; j++) s[j] = 0;
                    for (int j = i + 1; j < kb; j++) s[j] = 0;
                }
                for (int rr = nr; rr < BR; rr++)
                    for (int j = ka; j < kb; j++) L.S[rr * Tp + j] = 0;
                // PV: 2 vectors of channels x BR rows per pass, keys ascending
                for (size_t cc = 0; cc < dp; cc += KW) {
                    v8d a[BR] = {{0}}, b[BR] = {{0}};
                    for (int j = ka; j < kb; j++) {
                        const double *vp = L.vx + (size_t)j * dp + cc;
                        v8d va = ld8(vp), vb = ld8(vp + DL);
                        for (int rr = 0; rr < BR; rr++) {
                            double p = L.S[rr * Tp + j];
                            a[rr] += va * p;
                            b[rr] += vb * p;
                        }
                    }
                    for (int rr = 0; rr < BR; rr++) {
                        st8(L.acc + rr * dp + cc, a[rr]);
                        st8(L.acc + rr * dp + cc + DL, b[rr]);
                    }
                }
                for (int rr = 0; rr < nr; rr++) {
                    float *oi = out + attn_q_off(c, i0 + rr, h);
                    for (int ch = 0; ch < d; ch++) oi[ch] = (float)(L.acc[rr * dp + ch] / sum[rr]);
                }
            }
    }
}
