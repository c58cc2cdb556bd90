// modes.h: the mode descriptors each src/attention/<mode>.c file defines, for the registry
// in attn.c, and the shared tiled kernel they are built on. Internal to src/attention/ (and
// its tests): nothing outside the attention module includes this header.
#ifndef HIFA4_ATTN_MODES_H
#define HIFA4_ATTN_MODES_H

#include "attention/attn.h"

extern const struct attn_mode attn_mode_exact; // ref.c
extern const struct attn_mode attn_mode_f32;   // ref.c
// tiled.c: the FlashAttention-tiled modes (spec/attention.md sections 2-4)
extern const struct attn_mode attn_mode_bf16;
extern const struct attn_mode attn_mode_direct;
extern const struct attn_mode attn_mode_hifa4;
extern const struct attn_mode attn_mode_direct_qmean;
extern const struct attn_mode attn_mode_direct_qmean_sqk;
extern const struct attn_mode attn_mode_direct_qmean_preorder;
// sage3.c: SageAttention3's FP4 recipe (spec/fp4.md section 5)
extern const struct attn_mode attn_mode_sage3;
extern const struct attn_mode attn_mode_sage3_preorder;

// ---- rows of a call (attn.h struct attn_call): absolute positions ----
// K or V of position j < T ([Hkv][d] floats): for j < q0 from the past segments' rows of
// `store` (c->past_k or c->past_v), else row j - q0 of x (the call's k or v). The dispatcher
// checked that the segments sum to q0.
static inline const float *attn_kv_row(const struct attn_call *c, const float *x, const float *store, int j) {
    const size_t w = (size_t)c->Hkv * (size_t)c->d;
    if (j >= c->q0) return x + (size_t)(j - c->q0) * w;
    const struct attn_past *p = c->past;
    int s = 0;
    while (s + 1 < p->n_seg && j >= p->len[s]) j -= p->len[s++];
    return store + ((size_t)p->row[s] + (size_t)j) * w;
}
// Q or out row of position i (q0 <= i < T) of query head h: x addresses position q0.
static inline size_t attn_q_off(const struct attn_call *c, int i, int h) {
    return ((size_t)(i - c->q0) * (size_t)c->H + (size_t)h) * (size_t)c->d;
}

// ---- internal kernel flags (tests only; never set by a registered mode) ----
// Beside the public enum attn_flag bits. They exist so tests can check spec section 8
// invariants (Theorem 1) on the same code path the modes run.
enum attn_iflag {
    ATTN_FI_STATE_F32 = 1u << 16, // m, l, r, P kept in binary32 (no fp16 rounding of the state)
    ATTN_FI_RAW_OUT = 1u << 17,   // out = O / l in binary32 (no final fp16/bf16 rounding)
};

// ---- the tiled kernel (flash.c: fast; flash_ref.c: the literal scalar reference) ----
// Same contract as struct attn_mode.forward, with the mode's flags (enum attn_flag plus
// enum attn_iflag) passed explicitly; the Q-Mean form is the flag ATTN_F_QMEAN_CH (tiled.c sets
// it from attn_call.qmean). Both must agree bit for bit for every flag set. Query tiles of the
// channel form are aligned to position 0 of the sequence (attn.h); both compute the rows [r0,
// r1) of a call, which may continue a cached prefix (q0 > 0, attn_call.past).
size_t attn_flash_scratch(const struct attn_call *c);
void attn_flash_forward(const struct attn_operands *x, const struct attn_call *c, int h0, int h1, void *scratch,
                        unsigned flags);
size_t attn_flash_ref_scratch(const struct attn_call *c);
void attn_flash_ref_forward(const struct attn_operands *x, const struct attn_call *c, int h0, int h1, void *scratch,
                            unsigned flags);
// The literal reference's scores of query row i of query head h, S[j] for keys j in [0, T)
// (-inf where masked): the values its online softmax consumes, after the Q-Mean correction, the
// scale and the soft-cap (tests: the algebraic identity of spec section 4). scratch as for
// attn_flash_ref_forward.
void attn_flash_ref_scores(float *S, const struct attn_operands *x, const struct attn_call *c, int h, int i,
                           void *scratch, unsigned flags);

// ---- the SageAttention3 kernel (sage3.c: fast; sage3_ref.c: literal reference) ----
// Same contract as struct attn_mode.forward with the flags (ATTN_F_PREORDER, ATTN_FI_RAW_OUT)
// explicit; the call never continues a prefix (q0 = 0); rows [r0, r1) with r0 a multiple of 128.
size_t attn_sage3_scratch(const struct attn_call *c);
void attn_sage3_forward(const struct attn_operands *x, const struct attn_call *c, int h0, int h1, void *scratch,
                        unsigned flags);
size_t attn_sage3_ref_scratch(const struct attn_call *c);
void attn_sage3_ref_forward(const struct attn_operands *x, const struct attn_call *c, int h0, int h1, void *scratch,
                            unsigned flags);

// ---- the binary64 reference (modes exact and f32) ----
// ref_fast.c: blocked SIMD version the modes run; ref.c: the literal version for tests.
size_t attn_ref_scratch(const struct attn_call *c);
void attn_ref_forward(const struct attn_operands *x, const struct attn_call *c, int h0, int h1, void *scratch);
size_t attn_ref_literal_scratch(const struct attn_call *c);
void attn_ref_literal_forward(const struct attn_operands *x, const struct attn_call *c, int h0, int h1,
                              void *scratch);

#endif
