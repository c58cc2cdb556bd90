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
// channel form are aligned to position 0 of the sequence (attn.h); inside flash.c the query loop
// already takes absolute row ranges [q0, q1) against keys [0, q1), the shape a KV-cache
// continuation needs.
size_t attn_flash_scratch(const struct attn_call *c);
void attn_flash_forward(float *out, const float *q, const float *k, const float *v,
                        const struct attn_call *c, int h0, int h1, void *scratch, unsigned flags);
size_t attn_flash_ref_scratch(const struct attn_call *c);
void attn_flash_ref_forward(float *out, const float *q, const float *k, const float *v,
                            const struct attn_call *c, int h0, int h1, void *scratch,
                            unsigned flags);
// The literal reference's scores of query row i of query head h, S[j] for keys j in [0, T)
// (-inf where masked): the values its online softmax consumes, after the Q-Mean correction, the
// scale and the soft-cap (tests: the algebraic identity of spec section 4). scratch as for
// attn_flash_ref_forward.
void attn_flash_ref_scores(float *S, const float *q, const float *k, const struct attn_call *c, int h, int i,
                           void *scratch, unsigned flags);

// ---- the binary64 reference (modes exact and f32) ----
// ref_fast.c: blocked SIMD version the modes run; ref.c: the literal version for tests.
size_t attn_ref_scratch(const struct attn_call *c);
void attn_ref_forward(float *out, const float *q, const float *k, const float *v, const struct attn_call *c,
                      int h0, int h1, void *scratch);
size_t attn_ref_literal_scratch(const struct attn_call *c);
void attn_ref_literal_forward(float *out, const float *q, const float *k, const float *v,
                              const struct attn_call *c, int h0, int h1, void *scratch);

#endif
