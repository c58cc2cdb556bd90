// make_model.h: deterministic synthetic checkpoints of any supported architecture and size
// (`hifa4-eval make-model`): config.json + bf16 model.safetensors + tokenizer.json (a small
// byte-level BPE of our own, or a copy of a real tokenizer). Same options and seed give
// byte-identical files. Also the byte-level BPE tokenizer.json writer on its own.
#ifndef HIFA4_MAKE_MODEL_H
#define HIFA4_MAKE_MODEL_H

#include <stdint.h>

#include "base/common.h"
#include "model/config.h"

#define MAKE_MAX_OUTLIERS 16
#define MAKE_SHARD_BYTES ((size_t)2 << 30) // weights above 2 GiB: sharded (bounded memory)

struct make_model_opts {
    int arch;                 // enum model_arch
    int n_layers, dim, n_heads, n_kv_heads, head_dim, hidden_dim; // head_dim 0: dim / n_heads
    int vocab_size;           // 0: the tokenizer's size with tokenizer_dir, else 512
    int max_seq;              // max_position_embeddings (default 4096)
    int tied;                 // -1: the architecture's usual choice
    uint64_t seed;
    const char *tokenizer_dir; // NULL: own byte-level BPE; else copy its tokenizer files, vocab from it
    int n_outliers;           // q/k-norm plants (qwen3, gemma3): gain of k_norm[layer][channel] = gamma, of q_norm there 0.1
                              // (Gemma's stored w = gain - 1)
    struct { int layer, channel; float gamma; } outliers[MAKE_MAX_OUTLIERS];
    int n_k_bias;             // k_proj bias plants (qwen2): k_proj.bias[layer][channel] = value, channel over
                              // n_kv_heads * head_dim (Qwen2.5's band of K outliers comes from this bias)
    struct { int layer, channel; float value; } k_bias[MAKE_MAX_OUTLIERS];
    int config_only;          // write config.json only
    size_t shard_bytes;       // 0: MAKE_SHARD_BYTES; weights above it go to HF-style shards
};
// Tiny defaults: 2 layers, dim 128, 4 heads / 2 kv heads, head_dim 32, ffn 256, vocab 512, seed 1.
// make_model_config needs vocab_size set (make_model resolves 0).
void make_model_opts_default(struct make_model_opts *o);

// The config make-model writes for these options (per-architecture details: Qwen2 biases,
// Llama llama3 rope scaling, Mistral window, Gemma2 caps/window/(1+w), Phi3 partial rotary +
// longrope). Errors: sizes out of range, head counts not dividing, bad plants.
int make_model_config(const struct make_model_opts *o, struct model_config *c, struct err *e);

// Writes out_dir/{config.json, model.safetensors, tokenizer.json} (see header comment); weights
// larger than the shard size go to model-0000K-of-0000N.safetensors + model.safetensors.index.json,
// generated one shard at a time (peak memory ~ one shard).
int make_model(const struct make_model_opts *o, const char *out_dir, struct err *e);

// A byte-level BPE tokenizer.json in the HF layout: ids 0..255 are the bytes in GPT-2
// ByteLevel encoding, then merges learned deterministically from a built-in English text,
// then systematic merges until vocab_size - 1 tokens; id vocab_size - 1 is the special
// token "<|endoftext|>". vocab_size >= 257. *json malloc'd, owned by the caller.
int make_tokenizer_json(int vocab_size, char **json, struct err *e);

#endif
