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
    int max_seq;         // longest single sequence (default min(max_tokens, max_position_embeddings))
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

// ---- timing (accumulated over forward calls; reset with model_reset_stats) ----
struct model_stats {
    int64_t n_forward, tokens, n_gemm;
    double forward_s; // whole model_forward
    double gemm_s;    // inside the GEMMs
    double attn_s;    // inside attn_forward
    double convert_s; // packing bf16/f16/f32 weights into GEMM panels (stream mode)
    double gemm_flop; // 2*M*N*K summed
    // process CPU seconds (all threads) of the whole forward and of the sgemm calls: robust
    // against other processes on a shared machine, where wall time is not
    double forward_cpu_s, gemm_cpu_s;
};
const struct model_stats *model_stats(const struct model *m);
void model_reset_stats(struct model *m);

#endif
