// model.h: a loaded checkpoint and its batched forward pass (DESIGN.md section 3). Binds
// the tensor names of the seven architectures to weight pointers, owns the run state (sized
// once at open) and runs sequences packed into one token matrix: every linear layer is one
// sgemm over all tokens, attention runs per sequence through attn_forward in the context the
// caller passes (the model holds no attention mode; a run owns one context per mode),
// logits only at the rows the caller asks for. Files: model_internal.h.
#ifndef HIFA4_MODEL_H
#define HIFA4_MODEL_H

#include <stdint.h>

#include "attention/attn.h"
#include "base/common.h"
#include "model/config.h"

enum model_weights { MODEL_WEIGHTS_AUTO = 0, MODEL_WEIGHTS_F32 = 1, MODEL_WEIGHTS_STREAM = 2, MODEL_WEIGHTS_BF16 = 3 };

struct model_opts {
    int act_bf16;        // 1 (default): round activations to bf16 where a BF16 PyTorch model rounds; 0: f32
    int weights;         // enum model_weights (default auto)
    int max_tokens;      // capacity of one packed batch in tokens (default 4096)
    int max_seq;         // longest single sequence, cached positions included (default max_position_embeddings)
    int n_threads;       // loops use up to this many pool threads; <= 0: all of the pool (base/pool.h)
};
void model_opts_default(struct model_opts *o);
// Parses "auto" / "f32" / "stream" / "bf16" (-1 if unknown); model_weights_name is the inverse.
int model_weights_parse(const char *s);
const char *model_weights_name(int weights);

struct model;
struct model_kv; // the exact KV cache (below)

// Opens DIR (config.json + model.safetensors or its sharded index). Weights: with
// MODEL_WEIGHTS_F32 every matrix is packed once into binary32 GEMM panels (gemm.h, from its
// dtype); with STREAM each matrix is packed into one scratch buffer just before its GEMM (in
// chunks of panels), so an 8B bf16 checkpoint needs ~1 GB beyond the mapping; AUTO picks F32
// when the packed weights fit in 60% of MemAvailable; BF16 packs every matrix once into bf16
// panels (half the memory of F32; a binary32 or f16 checkpoint is rounded to bf16, RNE), which
// the GEMM runs by its bf16 dot-product contract when act_bf16 is set (vdpbf16ps where the CPU
// has it; gemm.h: the fmaf chain except where subnormals are flushed), else by the fmaf chain
// on the rounded weights. model_gemm_arithmetic names the contract. Threads: every loop runs on the worker
// pool (base/pool.h) with up to n_threads threads; the pool's size is its owner's (main /
// the command: pool_set_threads), never changed here. Errors name the file, tensor and shape;
// *out is NULL on error.
int model_open(struct model **out, const char *dir, const struct model_opts *o, struct err *e);
void model_free(struct model *m); // safe on NULL
// model_open for reading what is bound at open (config, norms, gains, biases) and nothing else:
// weights streamed (no matrix packed), a one-token run state. For diagnostics over the weights.
int model_open_bound(struct model **out, const char *dir, struct err *e);

const struct model_config *model_cfg(const struct model *m);
const struct model_opts *model_get_opts(const struct model *m); // resolved values
int model_weights_mode(const struct model *m);  // MODEL_WEIGHTS_F32, _STREAM or _BF16 (resolved)
// The GEMM contract the linear layers run under (gemm.h GEMM_ARITHMETIC or GEMM_ARITHMETIC_DP).
const char *model_gemm_arithmetic(const struct model *m);
// The null perturbation of run --replicas (model/perturb.h) on every resident
// binary32 weight: each packed matrix (q, k, v, o, gate, up, down of every layer and lm_head)
// and the norms and biases, element directions from (seed, replica, tensor, element). The
// input embedding rows, read from the checkpoint per token, are not moved. An involution:
// calling it again with the same seed and replica restores every bit. replica 0 does nothing.
// Streamed weights (MODEL_WEIGHTS_STREAM): ERR_USAGE. Not during a forward pass.
int model_perturb(struct model *m, uint64_t seed, int replica, struct err *e);
// The q/k RMSNorm gains of layer l (Qwen 3, Gemma 3; paper Figure 2): the factor each of the
// head_dim channels of every head is multiplied by - the checkpoint's w, or 1 + w (binary32)
// where the config's norm_plus_one says so (Gemma) - into q[0..head_dim) and k[0..head_dim).
// Returns head_dim; 0 when the model has no q/k norm (q, k untouched); -1 for l out of range.
int model_qk_gains(const struct model *m, int l, float *q, float *k);
// The k_proj bias of layer l (n_kv_heads x head_dim values, head-major, before RoPE) into b:
// returns that count, 0 for a model without q/k/v biases, -1 for l out of range.
int model_k_bias(const struct model *m, int l, float *b);
// Hex sha256 fingerprint of the checkpoint (st_fingerprint); valid until model_free.
const char *model_hash(const struct model *m);
// The checkpoint's safetensors "__metadata__" (first shard) as parsed JSON, or NULL; e.g. the
// provenance import-gguf writes (GGUF file, sha256, tensor types). Valid until model_free.
struct cJSON;
const struct cJSON *model_st_metadata(const struct model *m);

// The attention shape of this model (layers, heads, head_dim, max_T = opts.max_seq), and a
// context of that shape: mode name, options (NULL: defaults with the model's thread count),
// Smooth-QK scales [n_layers][Hkv][head_dim] or NULL (borrowed; must outlive the context).
// Unknown mode: ERR_USAGE listing the modes. The caller owns it (attn_ctx_free).
struct attn_shape model_attn_shape(const struct model *m);
int model_attn_open(struct attn_ctx **out, const struct model *m, const char *mode, const struct attn_opts *ao,
                    const float *scales, struct err *e);

// One sequence of a batch: its n new tokens are positions [past.n, past.n + n). save_n > 0
// stores the K and V of the first save_n new positions at store rows [save_row, save_row +
// save_n) (past.n + save_n must be a multiple of the alignment). past.n = 0: no past (the
// sequence starts at position 0); otherwise past's rows index the KV cache (attn.h struct
// attn_past, the one past type of the model and attention).
struct model_seq {
    int n;
    struct attn_past past;
    int save_row, save_n;
};
// The batch descriptor of model_forward: n_seq sequences packed in `tokens` (their new tokens,
// in order, no padding), given either as seq_len[] (plain sequences from position 0; seqs
// NULL) or as seqs[] (with cached pasts and stored rows; seq_len NULL). Logits are written for
// the packed row indices out_pos[] (n_out may be 0).
struct model_batch {
    const int32_t *tokens;
    int n_seq;
    const int *seq_len;
    const struct model_seq *seqs;
    const int *out_pos;
    int n_out;
};

// Runs batch b under the attention context ctx (made for this model's shape, e.g. by
// model_attn_open) with the KV cache kv (NULL when no sequence has a past or saves rows).
// Writes logits [n_out][vocab]. No allocation inside; errors (ERR_RANGE) if the batch exceeds
// the capacities or a token id / row index is out of range. A sequence's logits are
// bit-identical whatever else is in the batch, its position in it, the batch size, the thread
// count and the CPU (every GEMM is gemm.h's canonical fmaf chain per element; the attention
// kernels' order is fixed by spec/attention.md): tested at SmolLM2's shape under every GEMM
// ISA path; and bit-identical to a run over its whole sequence when it continues a cached past
// (the cache rule below). Stores happen after each layer's attention, so a sequence may read
// rows another sequence of the same batch stores only if they were stored by an earlier call.
// Logits of sequences longer than a Phi3 longrope original_max use the long factors (HF).
int model_forward(struct model *m, struct attn_ctx *ctx, struct model_kv *kv, const struct model_batch *b,
                  float *logits, struct err *e);

// ---- the exact KV cache ----
// THE CACHE RULE. A cached row holds the K and V of one position at every layer exactly as the
// attention kernel consumed them (after RoPE and q/k-norm, bf16-rounded when the mode rounds its
// inputs). Every operation of the forward pass but attention is per row (the GEMMs of gemm.h:
// a row's bits depend only on that row), so a position's K and V at layer l depend only on its
// own attention outputs at layers < l. By the alignment rule of attention/attn.h those are final
// - equal to what the whole sequence computes - for every position below a multiple p of the
// alignment A (attn_ctx_align of the context: 1, 64 or the tile) once the run that computed them reached p.
// Hence, with p a multiple of A:
//  - the rows [0, p) of any run of a sequence (alone, or the first rows of a longer run, or a
//    continuation that itself ended at or beyond p) may be stored and reused;
//  - a continuation with past = those rows computes the positions [p, T) - K, V, attention and
//    the logits of every row - bit for bit as one model_forward over [0, T);
//  - so a context of length c is shared by its continuations at p = floor(c' / A) * A for any
//    c' <= c whose rows up to c' need no logits; the rows [p, c) are recomputed together with
//    each continuation (the row that predicts the first continuation token included).
// Decoding (greedy or otherwise) is one continuation per step: with tokens [0, T) known, the
// step computes the rows [p, T), p = floor((T - 1) / A) * A, against the cached [0, p) and takes
// the logits of row T - 1; it may then store the rows [p, floor(T / A) * A), which are final.
// Each step's logits equal one model_forward over [0, T) (tests/test_kvcache.c checks every
// step against full runs). model_forward refuses what the rule does not cover: a past or a
// stored range that does not end on a multiple of A (ERR_USAGE), rows stamped by another
// attention configuration (ERR_MISMATCH: every stored row carries attn_ctx_key of the context
// that computed it; a cache is never fed to another mode), and, for Phi-3 LongRoPE models whose
// RoPE factors switch with the total length, rows whose run sat on the other side of
// rope_orig_max (ERR_MISMATCH: the stamp includes the factor set).
struct model_kv;
// Bytes one cached position takes: n_layers x 2 (K, V) x n_kv_heads x head_dim x 4.
size_t model_kv_row_bytes(const struct model *m);
// Allocates room for `rows` positions once (rows x model_kv_row_bytes). Refuses (ERR_NOMEM,
// naming the bytes, the rows and the available memory) when it exceeds MemAvailable or the
// allocation fails: a cache is sized up front and never grows.
int model_kv_open(struct model_kv **out, const struct model *m, int rows, struct err *e);
void model_kv_free(struct model_kv *kv); // safe on NULL
int model_kv_rows(const struct model_kv *kv);
size_t model_kv_bytes(const struct model_kv *kv);
// ---- timing (accumulated over forward calls; reset with model_reset_stats) ----
struct model_stats {
    int64_t n_forward, tokens, n_gemm; // tokens: positions computed (cached ones not counted)
    double forward_s; // whole model_forward
    double gemm_s;    // inside the GEMMs
    double attn_s;    // inside attn_forward
    double convert_s; // packing bf16/f16/f32 weights into GEMM panels (stream mode)
    double gemm_flop; // 2*M*N*K summed
    // process CPU seconds (all threads) of the whole forward and of the sgemm calls: robust
    // against other processes on a shared machine, where wall time is not
    double forward_cpu_s, gemm_cpu_s, attn_cpu_s;
};
const struct model_stats *model_stats(const struct model *m);
void model_reset_stats(struct model *m);

#endif
