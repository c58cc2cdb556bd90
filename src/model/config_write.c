// config_write.c: struct model_config -> an HF-style config.json and the parameter count (see
// config.h); the parser is config.c. What the writer emits reads back to the same struct.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/json_util.h"
#include "model/config.h"

static cJSON *num_list(const double *x, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(x[i]));
    return a;
}

// A partial_rotary_factor that the parser (HF: int(head_dim * factor)) turns back into rope_dim
// after cJSON prints it (15 significant digits when they read back within an ulp or so):
// rope_dim / head_dim itself unless rounding makes the product fall just below rope_dim (head_dim
// 164, rope_dim 90: 164 * 0.548780487804878 = 89.99999999999999, found by fuzz_config), then the
// next doubles up.
static double rotary_factor(int rope_dim, int head_dim) {
    double f = (double)rope_dim / head_dim;
    for (int k = 0; k < 256; k++, f = nextafter(f, 2.0)) {
        char b[64];
        snprintf(b, sizeof b, "%1.15g", f);
        if ((int)(head_dim * strtod(b, NULL)) == rope_dim && (int)(head_dim * f) == rope_dim) break;
    }
    return f;
}

int cfg_to_json(const struct model_config *c, const char *extra_json, char **out, struct err *e) {
    *out = NULL;
    cJSON *r = cJSON_CreateObject();
    if (!r) return err_set(e, ERR_NOMEM, "config: out of memory");
    cJSON *archs = cJSON_AddArrayToObject(r, "architectures");
    cJSON_AddItemToArray(archs, cJSON_CreateString(cfg_arch_name(c->arch)));
    cJSON_AddStringToObject(r, "model_type", c->arch == ARCH_GEMMA3 ? "gemma3_text" : cfg_arch_short(c->arch));
    cJSON_AddNumberToObject(r, "vocab_size", c->vocab_size);
    cJSON_AddNumberToObject(r, "hidden_size", c->dim);
    cJSON_AddNumberToObject(r, "intermediate_size", c->hidden_dim);
    cJSON_AddNumberToObject(r, "num_hidden_layers", c->n_layers);
    cJSON_AddNumberToObject(r, "num_attention_heads", c->n_heads);
    cJSON_AddNumberToObject(r, "num_key_value_heads", c->n_kv_heads);
    cJSON_AddNumberToObject(r, "head_dim", c->head_dim);
    cJSON_AddNumberToObject(r, "max_position_embeddings", c->max_seq);
    cJSON_AddNumberToObject(r, "rms_norm_eps", c->norm_eps);
    cJSON_AddNumberToObject(r, "rope_theta", c->rope_theta);
    if (c->rope_local_theta > 0) cJSON_AddNumberToObject(r, "rope_local_base_freq", c->rope_local_theta);
    if (c->rope_type == ROPE_LINEAR) {
        cJSON *rs = cJSON_AddObjectToObject(r, "rope_scaling");
        cJSON_AddStringToObject(rs, "rope_type", "linear");
        cJSON_AddNumberToObject(rs, "factor", c->rope_factor);
    } else if (c->rope_type == ROPE_LLAMA3) {
        cJSON *rs = cJSON_AddObjectToObject(r, "rope_scaling");
        cJSON_AddStringToObject(rs, "rope_type", "llama3");
        cJSON_AddNumberToObject(rs, "factor", c->rope_factor);
        cJSON_AddNumberToObject(rs, "low_freq_factor", c->rope_low_freq);
        cJSON_AddNumberToObject(rs, "high_freq_factor", c->rope_high_freq);
        cJSON_AddNumberToObject(rs, "original_max_position_embeddings", c->rope_orig_max);
    } else if (c->rope_type == ROPE_LONGROPE) {
        cJSON *rs = cJSON_AddObjectToObject(r, "rope_scaling");
        cJSON_AddStringToObject(rs, "type", "longrope");
        cJSON_AddItemToObject(rs, "short_factor", num_list(c->rope_short, c->n_rope_factors));
        cJSON_AddItemToObject(rs, "long_factor", num_list(c->rope_long, c->n_rope_factors));
        cJSON_AddNumberToObject(rs, "attention_factor", c->rope_attn_factor);
        cJSON_AddNumberToObject(r, "original_max_position_embeddings", c->rope_orig_max);
    } else {
        cJSON_AddNullToObject(r, "rope_scaling");
    }
    if (c->arch == ARCH_PHI3) cJSON_AddNumberToObject(r, "partial_rotary_factor", rotary_factor(c->rope_dim, c->head_dim));
    cJSON_AddBoolToObject(r, "tie_word_embeddings", c->tie_embeddings);
    const char *act = c->act == ACT_SILU ? "silu" : c->act == ACT_GELU_TANH ? "gelu_pytorch_tanh" : "gelu";
    cJSON_AddStringToObject(r, "hidden_act", act);
    if (c->arch == ARCH_GEMMA2 || c->arch == ARCH_GEMMA3) cJSON_AddStringToObject(r, "hidden_activation", act);
    if (c->arch == ARCH_LLAMA) cJSON_AddBoolToObject(r, "mlp_bias", c->mlp_bias);
    if (c->arch != ARCH_QWEN2 && c->arch != ARCH_MISTRAL && c->arch != ARCH_PHI3)
        cJSON_AddBoolToObject(r, "attention_bias", c->qkv_bias);
    // sliding windows, per the architecture's own convention
    int first = -1, W = 0;
    for (int i = 0; i < c->n_layers; i++)
        if (c->window[i] && first < 0) { first = i; W = c->window[i]; }
    if (c->arch == ARCH_QWEN2 || c->arch == ARCH_QWEN3) {
        cJSON_AddBoolToObject(r, "use_sliding_window", first >= 0);
        cJSON_AddNumberToObject(r, "sliding_window", first >= 0 ? W : c->max_seq);
        cJSON_AddNumberToObject(r, "max_window_layers", first >= 0 ? first : c->n_layers);
    } else if (c->arch == ARCH_GEMMA3) { // every layer named, so any pattern reads back
        cJSON_AddNumberToObject(r, "sliding_window", first >= 0 ? W : 4096);
        cJSON *lt = cJSON_AddArrayToObject(r, "layer_types");
        for (int i = 0; i < c->n_layers; i++)
            cJSON_AddItemToArray(lt, cJSON_CreateString(c->window[i] ? "sliding_attention" : "full_attention"));
    } else if (c->arch != ARCH_LLAMA) {
        if (first >= 0) cJSON_AddNumberToObject(r, "sliding_window", W);
        else cJSON_AddNullToObject(r, "sliding_window");
    }
    if (c->arch == ARCH_GEMMA2 || c->arch == ARCH_GEMMA3) {
        cJSON_AddNumberToObject(r, "query_pre_attn_scalar", c->query_pre_attn_scalar);
        if (c->attn_softcap > 0) cJSON_AddNumberToObject(r, "attn_logit_softcapping", c->attn_softcap);
        else cJSON_AddNullToObject(r, "attn_logit_softcapping");
        if (c->final_softcap > 0) cJSON_AddNumberToObject(r, "final_logit_softcapping", c->final_softcap);
        else cJSON_AddNullToObject(r, "final_logit_softcapping");
    }
    if (c->bos_id >= 0) cJSON_AddNumberToObject(r, "bos_token_id", c->bos_id);
    else cJSON_AddNullToObject(r, "bos_token_id");
    if (c->eos_id >= 0) cJSON_AddNumberToObject(r, "eos_token_id", c->eos_id);
    else cJSON_AddNullToObject(r, "eos_token_id");
    cJSON *x = extra_json ? cJSON_Parse(extra_json) : NULL;
    if (extra_json && !cJSON_IsObject(x)) {
        cJSON_Delete(x);
        cJSON_Delete(r);
        return err_set(e, ERR_INTERNAL, "config: extra JSON is not an object");
    }
    if (!cJSON_GetObjectItemCaseSensitive(x, "torch_dtype")) cJSON_AddStringToObject(r, "torch_dtype", "bfloat16");
    if (x) {
        while (x->child) {
            cJSON *it = cJSON_DetachItemViaPointer(x, x->child);
            cJSON_AddItemToObject(r, it->string, it); // cJSON copies the key before freeing it
        }
        cJSON_Delete(x);
    }
    *out = cJSON_Print(r);
    cJSON_Delete(r);
    if (!*out) return err_set(e, ERR_NOMEM, "config: out of memory");
    return 0;
}

int64_t cfg_n_params(const struct model_config *c) {
    int64_t D = c->dim, hd = c->head_dim, H = c->n_heads, Hkv = c->n_kv_heads, F = c->hidden_dim;
    int64_t per = D * hd * (H + 2 * Hkv) + H * hd * D + 3 * D * F + 2 * D;
    if (c->qkv_bias) per += hd * (H + 2 * Hkv);
    if (c->o_bias) per += D;
    if (c->mlp_bias) per += 2 * F + D;
    if (c->qk_norm) per += 2 * hd;
    if (c->sandwich_norm) per += 2 * D;
    int64_t n = (int64_t)c->vocab_size * D + c->n_layers * per + D;
    if (!c->tie_embeddings) n += (int64_t)c->vocab_size * D;
    return n;
}
