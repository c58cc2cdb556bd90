// gate_err.h: the attention error that HiF4 quantization of Q and K puts into one sequence's
// attention output, with and without Smooth-QK (docs/results/gate.md section 1, the measured gate's
// statistic). Per query head h and row i: O_ref = softmax(sm * q_i . k_j) V over the visible
// keys, from the kernel-input (unsmoothed) q, k, v; O_c the same with the scores of candidate c:
// qs = bf16(q * s), ks = bf16(k / s) (spec/attention.md section 4; s = 1 for a bypass
// candidate), Q-Mean's subtraction as the kernel does it, qx = qdq(qz), kx = qdq(ks) (hif4.h,
// the kernels' codec) and the Q-Mean correction added back. P and V are not quantized: the error
// is the part Smooth-QK can change. Knows no model: callers give Q, K, V as the hook sees them.
#ifndef HIFA4_GATE_ERR_H
#define HIFA4_GATE_ERR_H

#include "base/common.h"

// Q-Mean in the measured scores: none (qdq(qs)), the token form (paper Alg. 1: one mean per
// row), or the channel form (per-channel mean over query tiles of `tile` rows from position 0).
enum gate_qmean { GATE_QMEAN_NONE = 0, GATE_QMEAN_TOKEN = 1, GATE_QMEAN_CHANNEL = 2 };
const char *gate_qmean_name(int q);
int gate_qmean_parse(const char *s, int *out); // "none" | "token" | "channel"; -1 otherwise

// One sequence of one layer as the kernel sees it.
struct gate_seq {
    const float *q, *k, *v; // q [T][H][d], k and v [T][Hkv][d]
    int T, H, Hkv, d;
    float sm;               // score scale
    float softcap;          // 0 = none; else cap * tanh(S / cap)
    int window;             // 0 = causal; else key j visible to query i iff i - j < window
};

struct gate_err_cfg {
    int qmean; // enum gate_qmean
    int tile;  // rows of a query tile (channel form; the kernels' Br = Bc, default 128)
    int max_threads; // gate_err_seq's heads on the pool: up to this many threads (the reference is serial)
};

// Arithmetic (both implementations, so they agree bit for bit): dot products in binary32 from
// +0 in channel order, S = f32(sm * f32(dot + corr)) where corr is the Q-Mean correction
// (binary32: token form mu_i * kappa_j with kappa_j = sum_c ks_jc; channel form sum_c mu_c ks_jc;
// the kernels' fp16 roundings of it are not modelled), soft-cap in binary64; softmax and PV in
// binary64 (keys ascending); error summed in binary64.
// cand[c] (c < n_cand): scales [Hkv][d], or NULL for the bypass candidate (qs = q, ks = k).
// Adds sum_{h,i} ||O_c - O_ref||^2 to err2[c] and sum_{h,i} ||O_ref||^2 to *ref2.
// Heads run as tasks on the pool (up to g->max_threads); per-head sums are added in head order, so
// the result does not depend on the thread count. Errors: ERR_RANGE for bad sizes, ERR_NOMEM.
int gate_err_seq(const struct gate_seq *s, const struct gate_err_cfg *g, const float *const *cand, int n_cand,
                 double *err2, double *ref2, struct err *e);
// The literal scalar reference of the same (one loop nest per formula, no transposes, serial);
// equal to gate_err_seq bit for bit (tests/test_gate.c).
int gate_err_seq_ref(const struct gate_seq *s, const struct gate_err_cfg *g, const float *const *cand, int n_cand,
                     double *err2, double *ref2, struct err *e);

#endif
