// attn.h: the attention kernel interface and registry (DESIGN.md section 2,
// spec/attention.md). model/forward.c calls attn_forward() once per layer for a packed batch of
// sequences and never knows which mode runs; adding a mode is one file in src/attention/ plus
// one line in the registry (attn.c). Calibration and diagnostics hook in here, so no caller
// ever copies the forward pass; the emulated cost counter (cost.h) is a function of the call
// shapes only, and the run counts it (eval/run.c).
#ifndef HIFA4_ATTN_H
#define HIFA4_ATTN_H

#include <stdint.h>

#include "base/common.h"

#define ATTN_MAX_LAYERS 256

// ---- mode flags (spec/attention.md section 3-4) ----
enum attn_flag {
    ATTN_F_ROUND_INPUT = 1u << 0, // Q, K, V rounded to bf16 before the kernel (all but `exact`)
    ATTN_F_TILED = 1u << 1,       // FlashAttention tiling with fp16 online-softmax state
    ATTN_F_QUANT = 1u << 2,       // HiF4 qdq of Q, K, V and P (Direct HIF4 and every HiFA4 ablation)
    ATTN_F_QMEAN = 1u << 3,       // Q-Mean
    ATTN_F_SQK = 1u << 4,         // Smooth-QK (needs scales)
    ATTN_F_PREORDER = 1u << 5,    // P-Reordering (row sum of qdq(P))
    // Q-Mean in its channel form `qmean-ch` (spec section 4; only together with ATTN_F_QMEAN).
    // No registered mode carries it: a run picks the form with attn_opts.qmean, and
    // attn_mode_run_flags() adds this bit to every mode that includes Q-Mean.
    ATTN_F_QMEAN_CH = 1u << 6,
    // SageAttention3's recipe (spec/fp4.md section 5, modes sage3 and sage3+preorder): its own
    // kernel (sage3.c) with fixed formats (NVFP4 single-level Q/K/V, two-level P), Bc = 128, no
    // Q-Mean option, no soft-capping, and no exact cached prefix.
    ATTN_F_SAGE3 = 1u << 7,
};

enum attn_vgroup { ATTN_VGROUP_TOKEN = 0, ATTN_VGROUP_CHANNEL = 1 };
// 4-bit format of the quantized modes (CLI --qformat): HiF4 (spec/hif4.md, normative or the A6
// recipe) or the OCP FP4 formats of spec/fp4.md (NVFP4: 16-element E4M3 blocks under a
// per-tensor scale; MXFP4: 32-element E8M0 blocks), same axes and modes (fp4.md section 4).
enum attn_qformat { ATTN_QFORMAT_HIF4 = 0, ATTN_QFORMAT_HIF4_A6 = 1, ATTN_QFORMAT_NVFP4 = 2, ATTN_QFORMAT_MXFP4 = 3 };
// Q-Mean form of every mode that includes Q-Mean (CLI --qmean): `token` is the paper's Alg. 1
// (one scalar mean over d per query row, spec `qmean`), `channel` the per-channel mean over the
// rows of a query tile (SageAttention2's Q smoothing, spec `qmean-ch`).
enum attn_qmean { ATTN_QMEAN_TOKEN = 0, ATTN_QMEAN_CHANNEL = 1 };
// The revision of the channel form's arithmetic these kernels implement (spec section 4); run.json
// records it for channel-form runs, and a run of another revision is not resumed or merged into.
#define ATTN_QMEAN_CHANNEL_REVISION 2

// ---- query tiles of the channel form (spec/attention.md section 4, `qmean-ch`) ----
// The rows of a sequence are cut into query tiles of Br = Bc (the --tile) rows aligned to the
// sequence's absolute position 0: tile b holds rows [b*Br, min((b+1)*Br, T)), so a partial tile
// can only be the last one, and its mean is over its n < Br rows. The channel mean mu_c of a
// tile is over all of the tile's rows, and its correction delta_j = mu . ks_j is added to the
// score of every row of the tile. Choices the spec leaves open (written down here):
//  - Br = Bc: the spec's Br is the row block of section 2, which the other modes do not see;
//    one --tile fixes both, so `--tile 64|128` names the whole tiling;
//  - mu_c = fp16(f32(sum_i qs_{i,c}) / (float)n): a binary32 sum over the tile's rows in
//    ascending order from +0, one binary32 division by the row count n, then fp16 (spec 7.5);
//    masked keys do not matter (the mean is over query rows, the window only masks keys);
//  - delta_j = fp16(sm * f32(sum_c f32(mu_c * ks_{j,c}))) (the spec's revision 2,
//    ATTN_QMEAN_CHANNEL_REVISION): ks is the smoothed K *before* qdq (as kappa of the token
//    form), the binary32 sum runs c = 0..d-1 from +0, is scaled by sm and rounded to fp16 once
//    (a kernel folds sm into this GEMV; revision 1 rounded the unscaled sum, which overflows fp16
//    on Qwen2.5-Coder-1.5B), then added: S_ij = f32(f32(sm * dot(qx_i, kx_j)) + delta_j).
// A continuation of a cached prefix (below) forms the same tiles: a call whose first query row
// is absolute position q0 > 0, with keys [0, q0 + n), still cuts tiles at multiples of Br from
// position 0. The tile's mean over min(Br, T - start) rows changes when rows are added to it,
// so like V's 64-token groups (section 8.6) outputs are prefix-exact only for prefixes that end
// on a multiple of Br, and a continuation must start on one (the alignment rule below).

// ---- continuations of a cached prefix: the alignment rule (spec/attention.md 8.6) ----
// A KV cache keeps the kernel inputs K and V of positions [0, p) of a sequence (after RoPE and
// q/k-norm, bf16-rounded by attn_forward for modes with ATTN_F_ROUND_INPUT: exactly what the
// kernel consumed) and later computes rows [p, T) against them (struct attn_past). That is
// exact only if no output of a row < p depends on a position >= p, and no quantity a row >= p
// uses is formed over a group that straddles p differently from the one-call run. Over the
// whole sequence the spec forms, per mode:
//  - per row, or per key <= row only: Q and K qdq along d per (token, head); P's 64-key groups
//    along one row's keys (masked keys enter as 0); Smooth-QK (static scales); the token form
//    of Q-Mean (per row); the online-softmax state (per row, key tiles at multiples of Bc from
//    position 0); the untiled binary64 modes. None crosses to later positions.
//  - V's HiF4 groups along tokens [64k, 64k + 63] from position 0 (quantized modes with
//    --v-group token and V quantized): a row's output depends on V up to the end of its group.
//  - the channel form of Q-Mean: one mean over all rows of a query tile [b*Br, (b+1)*Br).
// So the alignment of a mode under its options is
//    attn_prefix_align = Bc   with the channel form of Q-Mean (Bc is a multiple of 64, so this
//                              also closes V's groups);
//                      = 64   for quantized modes with V grouped along tokens (not skipped);
//                      = 1    otherwise (exact, f32, bf16; v-group channel or V skipped with
//                              the token form).
// THE RULE: for p a multiple of the alignment, the rows [p, T) of a call with q0 = p whose past
// holds the kernel inputs K, V of rows [0, p) of the same sequence are bit-identical to rows
// [p, T) of one call over [0, T); and rows [0, p) of a call over [0, T') are the same for every
// T' >= p (their groups and tiles end at or before p). attn_forward refuses a past whose length
// is not a multiple of the alignment (ERR_USAGE): for such p the cache is not exact (8.6).
// A model built on this kernel inherits the rule layer by layer: a prefix row's K and V at
// layer l depend only on that row's attention outputs of layers < l (every other operation of
// the forward pass is per row), so a prefix [0, p) computed alone, or as rows of any longer
// run, caches exactly what the full sequence computes (model.h states the cache's rule).
// Query tiles of rows >= p start at p (p is a multiple of Br whenever the tile matters), so no
// query row of the prefix is ever needed.
#define ATTN_PAST_SEGS 4
// The cached positions [0, n) of one sequence of a batch: n_seg runs of rows of a store, in
// order: positions [sum of len[0..g), + len[g]) are store rows [row[g], row[g] + len[g]). The
// store of a layer is attn_io.past_k / past_v: rows of [Hkv][d] floats, contiguous. n = 0: no
// past (the sequence starts at position 0, as without a cache). The model's KV cache
// (model/model.h) addresses its rows with the same type.
struct attn_past {
    int n, n_seg;
    int row[ATTN_PAST_SEGS], len[ATTN_PAST_SEGS];
};

// The shape a context is made for: n_layers layers of H query heads, Hkv kv heads of d
// channels, sequences of at most max_T positions (cached ones included).
struct attn_shape {
    int n_layers, H, Hkv, d, max_T;
};

// A packed batch, shared by the model and attention: sequence s occupies the packed rows
// [seq_off[s], seq_off[s] + seq_len[s]), its positions [past[s].n, past[s].n + seq_len[s])
// (past NULL: every sequence starts at position 0). attn_batch_check is the one check.
struct attn_batch {
    int n_seq;
    const int *seq_off, *seq_len;
    const struct attn_past *past;
};

// The tensors of one layer call: q [Ttot][H][d], k, v [Ttot][Hkv][d], out [Ttot][H][d] in the
// packed rows of the batch; past_k / past_v: the layer's store of cached rows (NULL when no
// sequence has a past).
struct attn_io {
    float *out, *q, *k, *v;
    const float *past_k, *past_v;
};

struct attn_ctx; // opaque: scratch, statistics, hooks (allocated once, see attn_ctx_init)

// Operands whose HiF4 qdq is replaced by the identity: the invariants of spec/attention.md 8.1
// and 8.4, and a research option (--qdq-skip q,k,v,p, attn_opts.qdq_skip) that isolates one
// operand's quantization error (e.g. only P quantized). 0 = every operand quantized.
enum attn_qdq_skip {
    ATTN_QDQ_SKIP_Q = 1u << 0,
    ATTN_QDQ_SKIP_K = 1u << 1,
    ATTN_QDQ_SKIP_V = 1u << 2,
    ATTN_QDQ_SKIP_P = 1u << 3,
    ATTN_QDQ_SKIP_ALL = 0xfu,
};

// ---- diagnostics (spec/attention.md section 5; only with attn_opts.diag) ----
// eps_bar = sum_j qdq(P)_j / sum_j P_j - 1 per (query row, head, tile), quantized modes only
// (sums in binary32 as the kernel forms them, ratio in binary64).
// Histogram: ATTN_EPS_BINS equal bins over [ATTN_EPS_LO, ATTN_EPS_HI), plus bin 0 for values
// below ATTN_EPS_LO and bin ATTN_EPS_BINS+1 for values >= ATTN_EPS_HI.
#define ATTN_EPS_BINS 1000
#define ATTN_EPS_LO (-0.5)
#define ATTN_EPS_HI 0.5
// What one kernel call adds (filled by the mode's forward when attn_call.diag != NULL;
// integer counts and a max, so the merge order over threads does not matter).
struct attn_diag_acc {
    int64_t eps_hist[ATTN_EPS_BINS + 2];
    int64_t eps_tiles;      // (query row, head, tile) triples with sum P > 0
    int64_t eps_below_zero; // of those, eps_bar < 0
    double eps_min, eps_max;
    float k_maxabs;         // max |K| after smoothing (kernel input, bf16) of the call's kv heads
};
// Adds a's counts into dst (histogram, tile counts, min/max, K max-abs): order-independent.
void attn_diag_acc_merge(struct attn_diag_acc *dst, const struct attn_diag_acc *a);
struct attn_diag_layer {
    int64_t calls;              // attn_forward calls that fed this layer
    int64_t n;                  // output elements compared against f32
    double err2, ref2, out2, dot; // sums of (O-R)^2, R^2, O^2, O*R in binary64
    double rel_l2, cosine;      // sqrt(err2/ref2), dot/sqrt(out2*ref2) (updated per call)
    struct attn_diag_acc acc;
};
struct attn_diag {
    int n_layers;
    struct attn_diag_layer layer[ATTN_MAX_LAYERS];
};

// One sequence-layer call of a mode. The sequence has T positions; the call holds rows
// [q0, T): q [T-q0][H][d], k and v [T-q0][Hkv][d], out [T-q0][H][d], all contiguous and
// addressing position q0 at row 0; keys [0, q0) come from `past` (q0 = past->n; q0 = 0 and
// past NULL without a cache). The forward computes the output rows [r0, r1) (q0 <= r0 < r1 <=
// T; whole calls have r0 = q0, r1 = T) for query heads [h0, h1), reading only the keys and
// values those rows need (keys [0, min(T, r1 rounded up to Bc)): whole V groups and Q-Mean
// tiles); the dispatcher splits work over (sequence, kv head, heads, query tiles) with r0 and
// r1 on multiples of Bc, and no split changes a bit. `scratch` is this thread's buffer of
// scratch_bytes() (sized for T); `diag` (may be NULL) receives diagnostics.
struct attn_call {
    int T, H, Hkv, d;
    int q0, r0, r1;          // first row held by q/k/v/out; rows to compute [r0, r1)
    const struct attn_past *past; // keys/values [0, q0), or NULL when q0 = 0
    const float *past_k, *past_v; // the store past's rows index (attn_io)
    int layer;
    float sm;          // binary32 score scale (attention.md 7.4)
    double sm64;       // binary64 score scale (f32 / exact modes)
    float softcap;     // 0 = none (Gemma2: cap * tanh(S / cap))
    int window;        // 0 = none; key j visible to i iff j <= i and i - j < window
    int tile;          // Bc, multiple of 64
    int v_group;       // enum attn_vgroup
    int qformat;       // enum attn_qformat
    int qmean;         // enum attn_qmean: the form of modes with ATTN_F_QMEAN
    const float *scales; // Smooth-QK scales of this layer [Hkv][d] (required with ATTN_F_SQK)
    unsigned qdq_skip;   // enum attn_qdq_skip (0: every operand quantized)
    struct attn_diag_acc *diag; // NULL unless diagnostics are on; this thread's accumulator
};

// The operands of one kernel call (struct attn_call): q [T-q0][H][d], k and v [T-q0][Hkv][d],
// out [T-q0][H][d], all addressing position q0 at row 0.
struct attn_operands {
    float *out;
    const float *q, *k, *v;
};

struct attn_mode {
    const char *name;        // CLI name: "bf16", "direct", "hifa4", "direct+qmean", ...
    const char *label;       // paper label: "BF16 (C16V16)", "Direct HIF4 (A)", ...
    unsigned flags;          // enum attn_flag
    // bytes of per-thread scratch for one call of this shape
    size_t (*scratch_bytes)(const struct attn_call *c);
    // computes x->out for query heads [h0, h1) of one sequence; out rows of other heads untouched
    void (*forward)(const struct attn_operands *x, const struct attn_call *c, int h0, int h1, void *scratch);
};

// ---- registry ----
int attn_mode_count(void);
const struct attn_mode *attn_mode_at(int i);
const struct attn_mode *attn_mode_find(const char *name); // NULL if unknown
// "exact, f32, bf16, direct, ..." for error messages and `list` (static storage).
const char *attn_mode_names(void);
// The flags a mode runs with under a Q-Mean form: m->flags, plus ATTN_F_QMEAN_CH when the mode
// includes Q-Mean and qmean is ATTN_QMEAN_CHANNEL (for the cost counter and reports).
unsigned attn_mode_run_flags(const struct attn_mode *m, int qmean);

// ---- run-level options ----
struct attn_opts {
    int tile;        // Bc (default 128)
    int v_group;     // enum attn_vgroup (default token)
    int qformat;     // enum attn_qformat (default hif4)
    int qmean;       // enum attn_qmean (default token, the paper's Algorithm 1)
    unsigned qdq_skip; // enum attn_qdq_skip (default 0: all quantized; quantized modes only)
    int n_threads;   // pool threads (base/pool.h) for the (sequence, head) tasks; <= 0: all of the pool
    int diag;        // 1: collect diagnostics of spec/attention.md section 5 (slower)
};
void attn_opts_default(struct attn_opts *o);
// CLI spellings: "token" | "channel" (--v-group), "hif4" | "hif4-a6" (--qformat). 0 or
// ERR_USAGE naming the option, the value and the accepted ones.
int attn_parse_vgroup(const char *s, int *out, struct err *e);
int attn_parse_qformat(const char *s, int *out, struct err *e);
// "token" | "channel" (--qmean).
int attn_parse_qmean(const char *s, int *out, struct err *e);
// --qdq-skip: a comma list of q, k, v, p (each at most once; order free) or "none".
int attn_parse_qdq_skip(const char *s, unsigned *out, struct err *e);
const char *attn_vgroup_name(int v);
const char *attn_qformat_name(int q);
// Storage bits per value of a 4-bit operand (reports; spec/fp4.md 4.3, hif4.md): HiF4 4.5,
// NVFP4 4.5 (plus one binary32 per-tensor scale per head and operand), MXFP4 4.25.
double attn_qformat_bits(int q);
const char *attn_qmean_name(int q);
// "none" or the skipped operands in the order q,k,v,p, e.g. "k,p" (static storage per mask).
const char *attn_qdq_skip_name(unsigned skip);
// The name reports and tables show for mode m under a Q-Mean form and a qdq skip: the mode's
// name, "(token)" or "(channel)" after it for modes with Q-Mean, and "[qdq-skip k,p]" for
// quantized modes with operands left unquantized, e.g. "hifa4 (channel) [qdq-skip p]". At most
// n bytes, NUL-terminated.
// The 4-bit format follows in brackets for quantized modes under a format other than hif4,
// e.g. "direct [nvfp4]", "hifa4 (channel) [mxfp4] [qdq-skip p]".
void attn_mode_display(char *buf, size_t n, const struct attn_mode *m, int qformat, int qmean, unsigned qdq_skip);

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
// mode rounds its inputs). Runs on the calling thread, sequences in batch order. Every
// sequence of an attn_forward call is hooked before the call's kernel runs, so the pointers
// given for earlier sequences of the call still hold the kernel inputs when the last sequence's
// hook runs (calib_run hands a layer's sequences to its statistics together at that point).
struct attn_hook_call {
    int layer, seq;              // sequence index within the batch
    const float *q, *k, *v;      // q [T][H][d], k and v [T][Hkv][d]
    int T, H, Hkv, d;
};
typedef void (*attn_hook_fn)(void *user, const struct attn_hook_call *c);

// ---- statistics kept by the context (always on unless noted) ----
struct attn_stats {
    int64_t calls;                       // every (layer, head, sequence) the kernels computed
    int64_t calls_per_layer[ATTN_MAX_LAYERS];
    int64_t tokens;                      // sum of T over (sequence, layer) calls
};

// ---- context ----
// Allocates scratch for sequences up to shape->max_T tokens once; attn_forward never
// allocates. `mode` is looked up in the registry (error lists the known names). `scales`
// ([n_layers][Hkv][d], may be NULL) is required for modes with ATTN_F_SQK; the pointer is
// borrowed and must outlive the context. A run makes one context per mode (eval/run.h).
int attn_ctx_init(struct attn_ctx **out, const char *mode, const struct attn_opts *o, const struct attn_shape *shape,
                  const float *scales, struct err *e);
void attn_ctx_free(struct attn_ctx *ctx);
const struct attn_mode *attn_ctx_mode(const struct attn_ctx *ctx);
void attn_ctx_set_hook(struct attn_ctx *ctx, attn_hook_fn fn, void *user);
const struct attn_stats *attn_ctx_stats(const struct attn_ctx *ctx);
void attn_ctx_reset_stats(struct attn_ctx *ctx); // also clears the diagnostics
// Diagnostics collected so far (spec/attention.md section 5), or NULL unless the context was
// made with attn_opts.diag. Owned by the context, valid until attn_ctx_free. The rel-L2 and
// cosine compare against mode `f32` run inside the context on the same (bf16) inputs.
const struct attn_diag *attn_ctx_diag(const struct attn_ctx *ctx);
// Replaces attn_opts.qdq_skip of the context (enum attn_qdq_skip) for every later attn_forward
// call (tests of spec/attention.md 8.1, 8.4).
void attn_ctx_set_qdq_skip(struct attn_ctx *ctx, unsigned skip);
// The alignment of the rule above for mode m under options o (qdq skip from o), and for a
// context (its current qdq skip): 1, 32 (MXFP4's V blocks), 64 or the tile Bc; ATTN_ALIGN_NONE
// (0) when no cached prefix is exact (NVFP4 with Q, K or V quantized: its per-tensor scales
// look at every row of the sequence, spec/fp4.md 4.3), and attn_forward refuses any past.
#define ATTN_ALIGN_NONE 0
int attn_prefix_align(const struct attn_mode *m, const struct attn_opts *o);
int attn_ctx_align(const struct attn_ctx *ctx);
// A 64-bit key of everything that fixes a context's outputs (mode, tile, V grouping, format,
// Q-Mean form, qdq skip, the scales pointer): a cache may feed a context only the K and V that
// a context with the same key produced (model/kvcache.c stamps cached rows with it).
uint64_t attn_ctx_key(const struct attn_ctx *ctx);

// The batch against the context (every attn_forward call checks it; the model checks it once
// per forward before layer 0): packed rows at offsets >= 0, sequences of 1 or more new rows
// whose past + new rows fit max_T (ERR_RANGE), a past whose length is not a multiple of
// attn_ctx_align (ERR_USAGE, the rule above), segments that do not sum to n or more than
// ATTN_PAST_SEGS of them (ERR_RANGE), a past under a hook (ERR_USAGE: calibration and traces
// see whole sequences).
int attn_batch_check(const struct attn_ctx *ctx, const struct attn_batch *b, struct err *e);

// One layer for a packed batch (io: its tensors, l: the layer's constants). Rows outside every
// sequence (padding) are left untouched. Results are bit-identical for any thread count, batch
// composition and order (spec/attention.md section 8.5). The model must not rely on q, k, v
// being unmodified: modes that round their inputs round them in place. With a past, sequence
// s's packed rows are its positions [past[s].n, ...) (RoPE'd at those positions by the caller)
// and its keys [0, past[s].n) come from the store rows of io->past_k / past_v. Only the new
// rows are rounded, hooked and counted in the statistics. Never allocates, except with
// attn_opts.diag, where the f32 comparison buffer grows to the largest batch.
int attn_forward(struct attn_ctx *ctx, const struct attn_batch *b, const struct attn_io *io, const struct attn_layer *l,
                 struct err *e);

#endif
