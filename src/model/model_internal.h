// model_internal.h: the state of an opened model, shared by the files of src/model/ that build
// it (not a public API; nothing outside src/model/ includes it):
//   model.c    open / free / accessors: the order of the steps below
//   weights.c  binding the tensor names of each architecture (config flags) to struct wref,
//              the norms and biases converted into one arena
//   linear.c   packing (resident binary32 panels) or streaming weights, and every GEMM
//   runstate.c the dims, the run-state buffers (sized once) and the RoPE tables
//   forward.c  the batched forward pass (model_forward)
//   kvcache.c  the store and the KV-cache rule of model.h (stamps, checks, stores)
#ifndef HIFA4_MODEL_INTERNAL_H
#define HIFA4_MODEL_INTERNAL_H

#include <stdatomic.h>

#include "io/safetensors.h"
#include "model/gemm.h"
#include "model/kvcache.h"
#include "model/model.h"

// The sizes every file needs, computed once from the config (runstate.c).
struct model_dims {
    int D;        // dim (residual width)
    int hd;       // head_dim
    int H, Hkv;   // query and kv heads
    int qd, kd;   // H * hd, Hkv * hd
    int F;        // hidden_dim (MLP)
    int V;        // vocab_size
    int n_layers;
};
void model_dims_init(struct model_dims *d, const struct model_config *c);

// A matrix (rows, cols) inside a checkpoint tensor (fused tensors hold several, at element
// offset `off`). pw: its packed binary32 copy (gemm.h) when resident; pw.p NULL when streamed.
struct wref {
    const struct st_tensor *t;
    size_t off, n;
    int rows, cols;
    struct gemm_w pw;
};

enum { W_Q, W_K, W_V, W_O, W_GATE, W_UP, W_DOWN, W_COUNT };
enum { B_Q, B_K, B_V, B_O, B_GATE, B_UP, B_DOWN, B_COUNT };

struct layer_w {
    struct wref w[W_COUNT];
    const float *b[B_COUNT];   // biases or NULL, (rows of w[i])
    const float *in_norm;      // (dim) input_layernorm
    const float *post_attn_norm; // (dim) post_attention_layernorm (pre-MLP norm except Gemma2, Gemma3)
    const float *pre_ffn_norm, *post_ffn_norm; // (dim) Gemma2, Gemma3 only
    const float *q_norm, *k_norm; // (head_dim) Qwen3, Gemma3 only
};

// The activations of one packed batch (one zeroed allocation of run_state_floats floats) and
// its row indices, sized once at open for max_tokens rows; the RoPE tables for max_seq.
struct run_state {
    float *mem;
    float *x, *xb, *tmp;      // (max_tokens, D)
    float *q, *att;           // (max_tokens, qd)
    float *k, *v;             // (max_tokens, kd)
    float *gate, *up;         // (max_tokens, F)
    int *seq_off, *seq_len;   // (max_tokens) per sequence: packed row, new rows
    int *pos, *lng;           // (max_tokens) per row: absolute position, LongRoPE long factors
    struct attn_past *past;   // (max_tokens) per sequence (the batch's, or none)
    double *rope;             // cos | sin (max_seq, rope_dim/2) [| long cos | long sin] [| local cos | local sin]
    double *rope_local;       // Gemma3: the sliding layers' cos | sin (rope_local_theta), or NULL
    size_t rope_tab;          // max_seq * rope_dim/2: the offset of one table
};
size_t run_state_floats(const struct model_dims *d, int max_tokens);
int run_state_alloc(struct model *m, struct err *e);
void run_state_free(struct run_state *rs);

struct model {
    struct model_config cfg;
    struct model_dims dims;
    struct model_opts opts;
    struct safetensors st;
    char hash[65];
    int weights;                 // resolved: F32 or STREAM
    const char *prefix;          // of every tensor name: "" or "language_model." (Gemma3ForConditionalGeneration)
    struct layer_w *layers;      // (n_layers)
    const struct st_tensor *embed; // (vocab, dim)
    struct wref head;            // lm_head (or embed when tied)
    const float *final_norm;     // (dim)
    float *small;                // norms and biases (one allocation of weights_small_floats)
    size_t small_n, small_used;
    void *wbuf;                  // resident packed matrices (one 64-byte aligned allocation)
    void *sbuf;                  // stream scratch: one packed chunk of panels
    size_t stream_bytes;
    struct run_state rs;
    struct model_stats stats;
};

// ---- weights.c ----
// Exact widening of n elements of t starting at element off; returns how many are not finite.
size_t weights_convert(float *dst, const struct st_tensor *t, size_t off, size_t n);
// The error for a tensor holding a non-finite value among elements [off, off + n).
int weights_nonfinite_err(const struct st_tensor *t, size_t off, size_t n, struct err *e);
// Binds every tensor of the checkpoint (names per architecture) and converts the small ones.
int weights_bind(struct model *m, struct err *e);

// ---- linear.c ----
// Packs every matrix (F32) or sizes the stream scratch (STREAM); AUTO decides by MemAvailable.
// *res_bytes: resident bytes.
int weights_setup(struct model *m, size_t *res_bytes, struct err *e);
// y (M, r->rows) = x (M, r->cols) W^T (+ bias), rounded to bf16 under opts.act_bf16; ldy: row
// stride of y. A row's bits depend on nothing but that row (gemm.h): any M, any offset.
struct linear_out {
    float *y;
    int ldy;
};
int linear(struct model *m, struct linear_out y, const float *x, const struct wref *r, const float *bias, int M,
           struct err *e);
double cpu_now(void); // process CPU seconds (all threads)

// ---- kvcache.c: the cache rule of model.h ----
// Sequence s's stored range and past rows against the store (rows inside it, stamps of ctx).
int kv_check_seq(const struct model *m, const struct attn_ctx *ctx, const struct model_kv *kv,
                 const struct model_seq *q, int s, struct err *e);
// After layer l's attention: the kernel-input K and V of the rows each sequence stores.
void kv_store_rows(const struct model *m, const struct attn_ctx *ctx, struct model_kv *kv,
                   const struct model_batch *b, int l);

#endif
