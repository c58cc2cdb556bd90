// tensor_names.c: the names a checkpoint of a config may hold (tensor_names.h). The table
// mirrors weights.c's binding: the same config flags select the same names; a test binds every
// architecture's make-model checkpoint through both (test_hostile), so a name bound but missing
// here fails loudly instead of passing silently.
#include "model/tensor_names.h"

#include <stdio.h>
#include <stdlib.h>

// What switches a per-layer tensor on.
enum cond { ALWAYS, UNFUSED_QKV, FUSED_QKV, UNFUSED_GATE_UP, FUSED_GATE_UP, QKV_BIAS, O_BIAS, MLP_BIAS, SANDWICH,
            QK_NORM, UNUSED };

static const struct {
    const char *suffix; // after "model.layers.N."
    enum cond when;
    const char *what;   // "<arch> has no <what>"
} layer_names[] = {
    {"self_attn.q_proj.weight", UNFUSED_QKV, "separate q/k/v projections (it fuses them as self_attn.qkv_proj)"},
    {"self_attn.k_proj.weight", UNFUSED_QKV, "separate q/k/v projections (it fuses them as self_attn.qkv_proj)"},
    {"self_attn.v_proj.weight", UNFUSED_QKV, "separate q/k/v projections (it fuses them as self_attn.qkv_proj)"},
    {"self_attn.qkv_proj.weight", FUSED_QKV, "fused qkv_proj (it has separate q/k/v projections)"},
    {"self_attn.o_proj.weight", ALWAYS, ""},
    {"mlp.gate_proj.weight", UNFUSED_GATE_UP, "separate gate/up projections (it fuses them as mlp.gate_up_proj)"},
    {"mlp.up_proj.weight", UNFUSED_GATE_UP, "separate gate/up projections (it fuses them as mlp.gate_up_proj)"},
    {"mlp.gate_up_proj.weight", FUSED_GATE_UP, "fused gate_up_proj (it has separate gate/up projections)"},
    {"mlp.down_proj.weight", ALWAYS, ""},
    {"self_attn.q_proj.bias", QKV_BIAS, "q/k/v projection biases"},
    {"self_attn.k_proj.bias", QKV_BIAS, "q/k/v projection biases"},
    {"self_attn.v_proj.bias", QKV_BIAS, "q/k/v projection biases"},
    {"self_attn.o_proj.bias", O_BIAS, "o_proj bias"},
    {"mlp.gate_proj.bias", MLP_BIAS, "MLP biases"},
    {"mlp.up_proj.bias", MLP_BIAS, "MLP biases"},
    {"mlp.down_proj.bias", MLP_BIAS, "MLP biases"},
    {"input_layernorm.weight", ALWAYS, ""},
    {"post_attention_layernorm.weight", ALWAYS, ""},
    {"pre_feedforward_layernorm.weight", SANDWICH, "pre/post-feedforward (sandwich) norms"},
    {"post_feedforward_layernorm.weight", SANDWICH, "pre/post-feedforward (sandwich) norms"},
    {"self_attn.q_norm.weight", QK_NORM, "q/k norms"},
    {"self_attn.k_norm.weight", QK_NORM, "q/k norms"},
    {"self_attn.rotary_emb.inv_freq", UNUSED, ""}, // a buffer some exporters save; RoPE is computed (runstate.c)
};

static int cond_on(const struct model_config *c, enum cond w) {
    switch (w) {
    case ALWAYS: case UNUSED: return 1;
    case UNFUSED_QKV: return !c->fused_qkv;
    case FUSED_QKV: return c->fused_qkv;
    case UNFUSED_GATE_UP: return !c->fused_gate_up;
    case FUSED_GATE_UP: return c->fused_gate_up;
    case QKV_BIAS: return c->qkv_bias;
    case O_BIAS: return c->o_bias;
    case MLP_BIAS: return c->mlp_bias;
    case SANDWICH: return c->sandwich_norm;
    case QK_NORM: return c->qk_norm;
    }
    return 0;
}

// The config.json field that would switch the tensor on for this architecture (config.c reads
// attention_bias for Qwen3, Llama and Gemma2, mlp_bias for Llama), or NULL: the architecture
// itself rules it out.
static const char *cond_field(const struct model_config *c, enum cond w) {
    const int reads_attn_bias = c->arch == ARCH_QWEN3 || c->arch == ARCH_LLAMA || c->arch == ARCH_GEMMA2;
    if ((w == QKV_BIAS || w == O_BIAS) && reads_attn_bias) return "attention_bias";
    if (w == MLP_BIAS && c->arch == ARCH_LLAMA) return "mlp_bias";
    return NULL;
}

// "model.layers.N." with N a decimal without leading zeros: N, and *rest the suffix; else -1.
static long layer_of(const char *name, const char **rest) {
    static const char pre[] = "model.layers.";
    if (strncmp(name, pre, sizeof pre - 1)) return -1;
    const char *p = name + sizeof pre - 1, *q = p;
    while (*q >= '0' && *q <= '9') q++;
    if (q == p || q - p > 9 || *q != '.' || (*p == '0' && q - p > 1)) return -1;
    *rest = q + 1;
    return strtol(p, NULL, 10);
}

static int unknown(const struct model_config *c, const char *name, const char *cfg_file, struct err *e) {
    return err_set(e, ERR_FORMAT, "%s: not a tensor of %s (architectures in %s) nor a known-unused one (rotary inv_freq): "
                   "the checkpoint holds weights this model would not use", name, cfg_arch_name(c->arch), cfg_file);
}

static int check_layer(const struct model_config *c, const char *name, long l, const char *suffix, const char *cfg_file,
                       enum tensor_use *use, struct err *e) {
    for (size_t i = 0; i < sizeof layer_names / sizeof layer_names[0]; i++) {
        if (strcmp(suffix, layer_names[i].suffix)) continue;
        if (l >= c->n_layers)
            return err_set(e, ERR_FORMAT, "%s: layer %ld >= num_hidden_layers %d (%s)", name, l, c->n_layers, cfg_file);
        const enum cond w = layer_names[i].when;
        if (cond_on(c, w)) {
            *use = w == UNUSED ? TENSOR_KNOWN_UNUSED : TENSOR_BOUND;
            return 0;
        }
        const char *field = cond_field(c, w);
        if (field)
            return err_set(e, ERR_FORMAT, "%s: %s is false in %s, so %s has no %s: the tensor would be unused", name, field,
                           cfg_file, cfg_arch_name(c->arch), layer_names[i].what);
        return err_set(e, ERR_FORMAT, "%s: %s has no %s (architectures in %s): the tensor would be unused", name,
                       cfg_arch_name(c->arch), layer_names[i].what, cfg_file);
    }
    return unknown(c, name, cfg_file, e);
}

int tensor_name_check(const struct model_config *c, const char *name, const char *cfg_file, enum tensor_use *use,
                      struct err *e) {
    *use = TENSOR_BOUND;
    const char *suffix = NULL;
    const long l = layer_of(name, &suffix);
    if (l >= 0) return check_layer(c, name, l, suffix, cfg_file, use, e);
    if (!strcmp(name, "model.embed_tokens.weight") || !strcmp(name, "model.norm.weight")) return 0;
    if (!strcmp(name, "lm_head.weight")) {
        if (!c->tie_embeddings) return 0;
        return err_set(e, ERR_FORMAT, "%s: tie_word_embeddings is true in %s, so the head is model.embed_tokens.weight "
                       "and this tensor would be unused (set tie_word_embeddings to false to use it)", name, cfg_file);
    }
    if (!strcmp(name, "model.rotary_emb.inv_freq")) {
        *use = TENSOR_KNOWN_UNUSED;
        return 0;
    }
    return unknown(c, name, cfg_file, e);
}
