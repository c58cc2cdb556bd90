// model.h: a loaded checkpoint and its batched forward pass (DESIGN.md section 3). Binds
// the tensor names of the six architectures to weight pointers, owns the run state (sized
// once at open) and runs sequences packed into one token matrix: every linear layer is one
// sgemm over all tokens, attention runs per sequence through attn_forward (the mode is
// chosen by name, model.c never knows which), logits only at the rows the caller asks for.
#ifndef HIFA4_MODEL_H
#define HIFA4_MODEL_H

#include <stdint.h>

#include "attention/attn.h"
#include "base/common.h"
#include "model/config.h"

enum model_weights { MODEL_WEIGHTS_AUTO = 0, MODEL_WEIGHTS_F32 = 1, MODEL_WEIGHTS_STREAM = 2 };

struct model_opts {
    int act_bf16;        // 1 (default): round activations to bf16 where a BF16 PyTorch model rounds; 0: f32
    int weights;         // enum model_weights (default auto)
    int max_tokens;      // capacity of one packed batch in tokens (default 4096)
    int max_seq;         // longest single sequence, cached positions included (default max_position_embeddings)
    int n_threads;       // <= 0: OMP_NUM_THREADS if set, else all cores
};
void model_opts_default(struct model_opts *o);
// Parses "auto" / "f32" / "stream" (-1 if unknown).
int model_weights_parse(const char *s);

struct model;

// Opens DIR (config.json + model.safetensors or its sharded index). Weights: with
// MODEL_WEIGHTS_F32 every matrix is packed once into binary32 GEMM panels (gemm.h, from its
// dtype); with STREAM each matrix is packed into one scratch buffer just before its GEMM (in
// chunks of panels), so an 8B bf16 checkpoint needs ~1 GB beyond the mapping; AUTO picks F32
// when the packed weights fit in 60% of MemAvailable. The attention context is created with
// mode "f32" and default options (change it with model_set_attn). Threads: every loop runs on
// the worker pool (base/pool.h) with up to n_threads threads. Errors name the file, tensor
// and shape; *out is NULL on error.
int model_open(struct model **out, const char *dir, const struct model_opts *o, struct err *e);
void model_free(struct model *m); // safe on NULL

const struct model_config *model_cfg(const struct model *m);
const struct model_opts *model_get_opts(const struct model *m); // resolved values
int model_weights_mode(const struct model *m);  // MODEL_WEIGHTS_F32 or MODEL_WEIGHTS_STREAM
// The null perturbation of run --replicas (model/perturb.h, issue 21) on every resident
// binary32 weight: each packed matrix (q, k, v, o, gate, up, down of every layer and lm_head)
// and the norms and biases, element directions from (seed, replica, tensor, element). The
// input embedding rows, read from the checkpoint per token, are not moved. An involution:
// calling it again with the same seed and replica restores every bit. replica 0 does nothing.
// Streamed weights (MODEL_WEIGHTS_STREAM): ERR_USAGE. Not during a forward pass.
int model_perturb(struct model *m, uint64_t seed, int replica, struct err *e);
// Hex sha256 fingerprint of the checkpoint (st_fingerprint); valid until model_free.
const char *model_hash(const struct model *m);
// The checkpoint's safetensors "__metadata__" (first shard) as parsed JSON, or NULL; e.g. the
// provenance import-gguf writes (GGUF file, sha256, tensor types). Valid until model_free.
struct cJSON;
const struct cJSON *model_st_metadata(const struct model *m);

// (Re)creates the attention context: mode name, options (NULL: defaults with the model's
// thread count), Smooth-QK scales [n_layers][Hkv][head_dim] or NULL (borrowed; must outlive
// the context). Unknown mode: ERR_USAGE listing the modes. On error the old context is kept.
int model_set_attn(struct model *m, const char *mode, const struct attn_opts *ao, const float *scales, struct err *e);
struct attn_ctx *model_attn(struct model *m); // for hooks and statistics

// Packed batch: n_seq sequences concatenated in tokens (seq_len[s] each, positions from 0, no
// padding between them). Writes logits [n_out][vocab] for the packed row indices out_pos[]
// (n_out may be 0). No allocation inside; errors (ERR_RANGE) if the batch exceeds the
// capacities or a token id / row index is out of range. A sequence's logits are bit-identical
// whatever else is in the batch, its position in it, the batch size, the thread count and the
// CPU (every GEMM is gemm.h's canonical fmaf chain per element; the attention kernels' order
// is fixed by spec/attention.md): tested at SmolLM2's shape under every GEMM ISA path.
// Logits of sequences longer than a Phi3 longrope original_max use the long factors (HF).
int model_forward(struct model *m, const int32_t *tokens, const int *seq_len, int n_seq,
                  const int *out_pos, int n_out, float *logits, struct err *e);

// ---- the exact KV cache (issue 13) ----
// THE CACHE RULE. A cached row holds the K and V of one position at every layer exactly as the
// attention kernel consumed them (after RoPE and q/k-norm, bf16-rounded when the mode rounds its
// inputs). Every operation of the forward pass but attention is per row (the GEMMs of gemm.h:
// a row's bits depend only on that row), so a position's K and V at layer l depend only on its
// own attention outputs at layers < l. By the alignment rule of attention/attn.h those are final
// - equal to what the whole sequence computes - for every position below a multiple p of the
// alignment A (model_attn_align: 1, 64 or the tile) once the run that computed them reached p.
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
// step against full runs). model_forward_kv refuses what the rule does not cover: a past or a
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
// The alignment A of the rule above for the current attention context (attn_ctx_align).
int model_attn_align(const struct model *m);

// A cached prefix: positions [0, n) as n_seg runs of store rows, in order: positions
// [sum of len[0..g), + len[g]) are store rows [row[g], row[g] + len[g]).
struct model_past {
    int n, n_seg;
    int row[ATTN_PAST_SEGS], len[ATTN_PAST_SEGS];
};
// One sequence of a cached batch: its n new tokens are positions [past.n, past.n + n).
// save_n > 0 stores the K and V of the first save_n new positions at store rows [save_row,
// save_row + save_n) (past.n + save_n must be a multiple of the alignment).
struct model_seq {
    int n;
    struct model_past past;  // past.n = 0: none (the sequence starts at position 0)
    int save_row, save_n;
};
// model_forward with a cache: tokens holds the new tokens of every sequence, packed in order;
// out_pos index those packed rows. kv may be NULL when no sequence has a past or saves rows.
// A sequence's logits are bit-identical to model_forward over its whole sequence (the rule
// above); stores happen after each layer's attention, so a sequence may read rows another
// sequence of the same batch stores only if they were stored by an earlier call.
int model_forward_kv(struct model *m, struct model_kv *kv, const int32_t *tokens, const struct model_seq *seqs,
                     int n_seq, const int *out_pos, int n_out, float *logits, struct err *e);

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
