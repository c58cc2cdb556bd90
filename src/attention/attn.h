// attn.h: the attention kernel interface and registry (DESIGN.md section 2,
// spec/attention.md). model.c calls attn_forward() once per layer for a packed batch of
// sequences and never knows which mode runs; adding a mode is one file in src/attention/ plus
// one line in the registry (attn.c). Calibration, diagnostics and the cost counter hook in
// here, so no caller ever copies the forward pass.
#ifndef HIFA4_ATTN_H
#define HIFA4_ATTN_H

#include <stdint.h>

#include "common.h"

// ---- mode flags (spec/attention.md section 3-4) ----
enum attn_flag {
    ATTN_F_ROUND_INPUT = 1u << 0, // Q, K, V rounded to bf16 before the kernel (all but `exact`)
    ATTN_F_TILED = 1u << 1,       // FlashAttention tiling with fp16 online-softmax state
    ATTN_F_QUANT = 1u << 2,       // HiF4 qdq of Q, K, V and P (Direct HIF4 and every HiFA4 ablation)
    ATTN_F_QMEAN = 1u << 3,       // Q-Mean
    ATTN_F_SQK = 1u << 4,         // Smooth-QK (needs scales)
    ATTN_F_PREORDER = 1u << 5,    // P-Reordering (row sum of qdq(P))
};

enum attn_vgroup { ATTN_VGROUP_TOKEN = 0, ATTN_VGROUP_CHANNEL = 1 };
enum attn_qformat { ATTN_QFORMAT_HIF4 = 0, ATTN_QFORMAT_HIF4_A6 = 1 };

struct attn_ctx; // opaque: scratch, statistics, hooks (allocated once, see attn_ctx_init)

// One sequence-layer call of a mode. q [T][H][d], k and v [T][Hkv][d], out [T][H][d], all
// contiguous; the sequence starts at position 0. `scratch` is this thread's buffer of
// scratch_bytes(); `stats` (may be NULL) receives diagnostics. forward processes query heads
// [h0, h1) so the dispatcher can split work over (sequence, head) deterministically.
struct attn_call {
    int T, H, Hkv, d;
    int layer;
    float sm;          // binary32 score scale (attention.md 7.4)
    double sm64;       // binary64 score scale (f32 / exact modes)
    float softcap;     // 0 = none (Gemma2: cap * tanh(S / cap))
    int window;        // 0 = none; key j visible to i iff j <= i and i - j < window
    int tile;          // Bc, multiple of 64
    int v_group;       // enum attn_vgroup
    int qformat;       // enum attn_qformat
    const float *scales; // Smooth-QK scales of this layer [Hkv][d] (required with ATTN_F_SQK)
};

struct attn_mode {
    const char *name;        // CLI name: "bf16", "direct", "hifa4", "direct+qmean", ...
    const char *label;       // paper label: "BF16 (C16V16)", "Direct HIF4 (A)", ...
    unsigned flags;          // enum attn_flag
    // bytes of per-thread scratch for one call of this shape
    size_t (*scratch_bytes)(const struct attn_call *c);
    // computes out for query heads [h0, h1) of one sequence; out rows of other heads untouched
    void (*forward)(float *out, const float *q, const float *k, const float *v,
                    const struct attn_call *c, int h0, int h1, void *scratch);
};

// ---- registry ----
int attn_mode_count(void);
const struct attn_mode *attn_mode_at(int i);
const struct attn_mode *attn_mode_find(const char *name); // NULL if unknown
// "exact, f32, bf16, direct, ..." for error messages and `list` (static storage).
const char *attn_mode_names(void);

// ---- run-level options ----
struct attn_opts {
    int tile;        // Bc (default 128)
    int v_group;     // enum attn_vgroup (default token)
    int qformat;     // enum attn_qformat (default hif4)
    int n_threads;   // OpenMP threads for the (sequence, head) loop; <= 0: omp default
    int diag;        // 1: collect diagnostics of spec/attention.md section 5 (slower)
};
void attn_opts_default(struct attn_opts *o);

// Per-layer constants supplied by the model for each attn_forward call.
struct attn_layer {
    int layer;
    float sm;
    double sm64;
    float softcap;
    int window;
};

// Calibration / tracing hook: called once per (sequence, layer) before the kernel with the
// kernel-input Q [T][H][d] and K [T][Hkv][d] (after RoPE and q/k-norm; bf16-rounded when the
// mode rounds its inputs). Runs on the calling thread, sequences in batch order.
typedef void (*attn_hook_fn)(void *user, int layer, int seq, const float *q, const float *k,
                             const float *v, int T, int H, int Hkv, int d);

// ---- statistics kept by the context (always on unless noted) ----
#define ATTN_MAX_LAYERS 256
struct attn_stats {
    int64_t calls;                       // hook coverage: (layer, head, sequence) invocations
    int64_t calls_per_layer[ATTN_MAX_LAYERS];
    int64_t tokens;                      // sum of T over (sequence, layer) calls
};

// ---- context ----
// Allocates scratch for sequences up to max_T tokens for the given shape once; attn_forward
// never allocates. `mode` is looked up in the registry (error lists the known names).
// `scales` ([n_layers][Hkv][d], may be NULL) is required for modes with ATTN_F_SQK; the
// pointer is borrowed and must outlive the context.
int attn_ctx_init(struct attn_ctx **out, const char *mode, const struct attn_opts *o,
                  int n_layers, int H, int Hkv, int d, int max_T, const float *scales,
                  struct err *e);
void attn_ctx_free(struct attn_ctx *ctx);
const struct attn_mode *attn_ctx_mode(const struct attn_ctx *ctx);
void attn_ctx_set_hook(struct attn_ctx *ctx, attn_hook_fn fn, void *user);
const struct attn_stats *attn_ctx_stats(const struct attn_ctx *ctx);
void attn_ctx_reset_stats(struct attn_ctx *ctx);

// One layer for a packed batch. q [Ttot][H][d], k, v [Ttot][Hkv][d], out [Ttot][H][d];
// sequence s occupies rows [seq_off[s], seq_off[s] + seq_len[s]). Rows outside every sequence
// (padding) are left untouched. Results are bit-identical for any thread count, batch
// composition and order (spec/attention.md section 8.5). The model must not rely on q, k, v
// being unmodified: modes that round their inputs round them in place.
int attn_forward(struct attn_ctx *ctx, float *out, float *q, float *k, float *v,
                 const int *seq_off, const int *seq_len, int n_seq, const struct attn_layer *l,
                 struct err *e);

#endif
