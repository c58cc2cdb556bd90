// config.h: HF config.json -> one struct model_config (DESIGN.md section 3) for the seven
// supported architectures (config.c), and the reverse (config.json text from a struct, used by
// make-model and import-llama2c; config_write.c). Knows nothing about weights or tensors.
#ifndef HIFA4_CONFIG_H
#define HIFA4_CONFIG_H

#include "base/common.h"

#define CFG_MAX_LAYERS 256      // = ATTN_MAX_LAYERS
// Upper bounds of the sizes a config.json may declare. They sit far above every released model
// (hidden 16384, FFN 53248, 128 heads, vocabularies of 256k, contexts of 10M) and keep every
// product the runtime forms - rows x columns of a weight, tokens x dims of the run state,
// heads x head_dim in an int - inside its type; beyond them the config is refused naming the
// field (sizes from files multiplied into allocations unchecked).
#define CFG_MAX_DIM (1 << 17)       // hidden_size, and num_attention_heads x head_dim
#define CFG_MAX_FFN (1 << 20)       // intermediate_size
#define CFG_MAX_HEADS 4096          // num_attention_heads
#define CFG_MAX_VOCAB (1 << 24)     // vocab_size
#define CFG_MAX_POSITIONS (1 << 24) // max_position_embeddings (16M tokens)
#define CFG_MAX_HEAD_DIM 1024       // head_dim (so rotary halves hold <= 512 entries)
#define CFG_MAX_ROPE_FACTORS 512 // longrope short/long factor lists (rotary_dim / 2 entries)

enum model_arch { ARCH_QWEN3 = 0, ARCH_QWEN2, ARCH_LLAMA, ARCH_MISTRAL, ARCH_GEMMA2, ARCH_PHI3, ARCH_GEMMA3,
                  ARCH_COUNT };
enum rope_type { ROPE_DEFAULT = 0, ROPE_LLAMA3 = 1, ROPE_LONGROPE = 2, ROPE_LINEAR = 3 };
// How the embedding rows are scaled: not, by sqrt(hidden) exactly (Gemma2; the goldens'
// binary64 normalizer), or by sqrt(hidden) rounded to binary32 (Gemma3: HF 4.50's
// Gemma3TextScaledWordEmbedding multiplies by a float32 buffer). bf16 activations round the
// factor to bf16 in both (HF casts it to the weight dtype).
enum embed_scale { EMBED_NONE = 0, EMBED_SQRT = 1, EMBED_SQRT_F32 = 2 };
enum act_fn { ACT_SILU = 0, ACT_GELU_TANH = 1, ACT_GELU = 2 };

struct model_config {
    enum model_arch arch;
    int dim;              // hidden_size
    int hidden_dim;       // intermediate_size (FFN)
    int n_layers;
    int n_heads;
    int n_kv_heads;
    int head_dim;         // explicit head_dim or dim / n_heads
    int vocab_size;
    int max_seq;          // max_position_embeddings
    double norm_eps;      // rms_norm_eps
    enum act_fn act;      // hidden_act / hidden_activation
    // ---- per-architecture structure ----
    int qk_norm;          // Qwen3, Gemma3: per-head RMSNorm of q and k (q_norm, k_norm) before RoPE
                          // (Gemma3's with (1 + w), as norm_plus_one says for every norm)
    int qkv_bias;         // q/k/v projection biases (Qwen2 always; attention_bias elsewhere)
    int o_bias;           // o_proj bias (attention_bias for Llama/Mistral/Qwen3/Gemma2)
    int mlp_bias;         // gate/up/down biases (Llama mlp_bias)
    int fused_qkv;        // Phi3: self_attn.qkv_proj rows = [q; k; v]
    int fused_gate_up;    // Phi3: mlp.gate_up_proj rows = [gate; up]
    int norm_plus_one;    // Gemma2, Gemma3: RMSNorm scales by (1 + w)
    int sandwich_norm;    // Gemma2, Gemma3: post_attention / pre_feedforward / post_feedforward norms
    enum embed_scale embed_scale; // Gemma2, Gemma3: embeddings multiplied by sqrt(dim)
    int tie_embeddings;   // lm_head = embed_tokens
    // ---- RoPE (rotate-half convention on the first rope_dim channels of each head) ----
    double rope_theta;    // the base (Gemma3: of the global layers)
    double rope_local_theta; // Gemma3: base of the sliding-window layers, which take no rope_scaling
                          // (rope_local_base_freq); 0: every layer uses rope_theta and the scaling
    int rope_dim;         // head_dim * partial_rotary_factor (even)
    enum rope_type rope_type;
    double rope_factor;           // llama3, linear: factor; longrope: max_pos / original_max
    double rope_low_freq, rope_high_freq; // llama3 low_freq_factor / high_freq_factor
    int rope_orig_max;            // original_max_position_embeddings (llama3, longrope)
    double rope_attn_factor;      // longrope cos/sin multiplier (1 when unused)
    int n_rope_factors;           // longrope: rope_dim / 2
    double rope_short[CFG_MAX_ROPE_FACTORS], rope_long[CFG_MAX_ROPE_FACTORS];
    // ---- attention ----
    double query_pre_attn_scalar; // score scale is query_pre_attn_scalar^-1/2 (= head_dim if unset)
    double attn_softcap;          // 0 = none (Gemma2 attn_logit_softcapping)
    double final_softcap;         // 0 = none (Gemma2 final_logit_softcapping)
    int window[CFG_MAX_LAYERS];   // sliding window per layer, 0 = full causal
    int bos_id, eos_id;           // -1 when absent
};

// Supported `architectures[0]` names, comma separated (static storage).
const char *cfg_arch_names(void);
const char *cfg_arch_name(enum model_arch a); // "Qwen3ForCausalLM", ...
// Short lowercase names used by make-model --arch: qwen3, qwen2, llama, mistral, gemma2, phi3,
// gemma3.
const char *cfg_arch_short(enum model_arch a);
int cfg_arch_from_short(const char *s); // enum value or -1

// Parses a config.json text; `ctx` (the path) names the file in errors. A
// Gemma3ForConditionalGeneration config is read through its `text_config` (the language model,
// Gemma3ForCausalLM). Unknown architecture:
// ERR_UNSUPPORTED listing the supported ones; missing or ill-typed required field:
// ERR_FORMAT naming file and field; inconsistent values (heads not dividing, bad rope
// factors): ERR_FORMAT with the value. *c is zeroed first.
int cfg_parse(struct model_config *c, const char *json, size_t len, const char *ctx, struct err *e);
// Values valid as JSON but meaningless for the architecture (config_check.c; cfg_parse calls
// it last): a softcap of the number 0, a negative max_window_layers, a longrope factor <= 0.
struct cJSON;
int cfg_check_meaning(const struct model_config *c, const struct cJSON *root, const char *ctx, struct err *e);
// Loads DIR/config.json (or `path` itself when it names a .json file).
int cfg_load(struct model_config *c, const char *path, struct err *e);

// Serializes c as an HF-style config.json (fields the parser reads, in the HF names).
// *out is a malloc'd NUL-terminated string owned by the caller. `extra_json` (may be NULL)
// is an object text whose members are appended (e.g. "_synthetic" provenance; a
// "torch_dtype" there replaces the default "bfloat16").
int cfg_to_json(const struct model_config *c, const char *extra_json, char **out, struct err *e);

// Number of parameters implied by the config (embedding + layers + final norm + untied head).
int64_t cfg_n_params(const struct model_config *c);

#endif
