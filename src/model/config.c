// config.c: HF config.json -> struct model_config and back (see config.h). Defaults follow
// the HF configuration classes of each architecture (transformers 4.4x); every value that
// changes the numerics (eps, rope, windows, caps) is read explicitly when present.
#include "model/config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/json_util.h"

static const struct {
    const char *hf, *short_name;
} arch_names[ARCH_COUNT] = {
    [ARCH_QWEN3] = {"Qwen3ForCausalLM", "qwen3"},       [ARCH_QWEN2] = {"Qwen2ForCausalLM", "qwen2"},
    [ARCH_LLAMA] = {"LlamaForCausalLM", "llama"},       [ARCH_MISTRAL] = {"MistralForCausalLM", "mistral"},
    [ARCH_GEMMA2] = {"Gemma2ForCausalLM", "gemma2"},    [ARCH_PHI3] = {"Phi3ForCausalLM", "phi3"},
    [ARCH_GEMMA3] = {"Gemma3ForCausalLM", "gemma3"},
};

const char *cfg_arch_names(void) {
    return "Qwen3ForCausalLM, Qwen2ForCausalLM, LlamaForCausalLM, MistralForCausalLM, "
           "Gemma2ForCausalLM, Phi3ForCausalLM, Gemma3ForCausalLM (or Gemma3ForConditionalGeneration's text_config)";
}
const char *cfg_arch_name(enum model_arch a) { return a < ARCH_COUNT ? arch_names[a].hf : "?"; }
const char *cfg_arch_short(enum model_arch a) { return a < ARCH_COUNT ? arch_names[a].short_name : "?"; }
int cfg_arch_from_short(const char *s) {
    for (int i = 0; i < ARCH_COUNT; i++)
        if (!strcmp(s, arch_names[i].short_name)) return i;
    return -1;
}

// ---- helpers ----
// Optional number where JSON null means "off" (returns 0) and absence means the default.
static int num_or_null(const cJSON *o, const char *key, double def, double *out, const char *ctx,
                       struct err *e) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) { *out = def; return 0; }
    if (cJSON_IsNull(v)) { *out = 0; return 0; }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return err_set(e, ERR_FORMAT, "%s: field '%s': expected number or null, got %s", ctx, key, json_brief(v));
    *out = v->valuedouble;
    return 0;
}

// Token id that may be an int, null or an array of ints (first one is used).
static int token_id(const cJSON *o, const char *key, int *out, const char *ctx, struct err *e) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = -1;
    if (!v || cJSON_IsNull(v)) return 0;
    if (cJSON_IsArray(v)) v = cJSON_GetArrayItem(v, 0);
    if (!v) return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 || v->valuedouble > 1e9)
        return err_set(e, ERR_FORMAT, "%s: field '%s': expected token id, got %s", ctx, key, json_brief(v));
    *out = (int)v->valuedouble;
    return 0;
}

static int factor_list(const cJSON *rs, const char *key, double *dst, int n, const char *ctx, struct err *e) {
    const cJSON *a;
    int rc = json_need_arr(rs, key, &a, ctx, e);
    if (rc) return err_prefix(e, "rope_scaling (longrope)");
    if (cJSON_GetArraySize(a) != n)
        return err_set(e, ERR_FORMAT, "%s: rope_scaling.%s has %d entries, expected rotary_dim/2 = %d", ctx, key,
                       cJSON_GetArraySize(a), n);
    int i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, a) {
        if (!cJSON_IsNumber(x) || !(x->valuedouble > 0) || !isfinite(x->valuedouble))
            return err_set(e, ERR_FORMAT, "%s: rope_scaling.%s[%d]: expected positive number, got %s", ctx, key, i,
                           json_brief(x));
        dst[i++] = x->valuedouble;
    }
    return 0;
}

static int parse_rope(struct model_config *c, const cJSON *root, const char *ctx, struct err *e) {
    int rc;
    // Gemma3TextConfig: rope_theta 1e6
    if ((rc = json_opt_num(root, "rope_theta", &c->rope_theta, c->arch == ARCH_GEMMA3 ? 1e6 : 10000.0, ctx, e))) return rc;
    if (!(c->rope_theta > 1)) return err_set(e, ERR_FORMAT, "%s: field 'rope_theta': %g must be > 1", ctx, c->rope_theta);
    if (c->arch == ARCH_GEMMA3) { // the sliding layers' own base (HF rotary_emb_local: default rope)
        if ((rc = json_opt_num(root, "rope_local_base_freq", &c->rope_local_theta, 10000.0, ctx, e))) return rc;
        if (!(c->rope_local_theta > 1))
            return err_set(e, ERR_FORMAT, "%s: field 'rope_local_base_freq': %g must be > 1", ctx, c->rope_local_theta);
    }
    double prf = 1.0;
    if (c->arch == ARCH_PHI3 && (rc = json_opt_num(root, "partial_rotary_factor", &prf, 1.0, ctx, e))) return rc;
    if (!(prf > 0 && prf <= 1))
        return err_set(e, ERR_FORMAT, "%s: field 'partial_rotary_factor': %g not in (0, 1]", ctx, prf);
    c->rope_dim = (int)(c->head_dim * prf); // HF: int(head_dim * partial_rotary_factor)
    if (c->rope_dim < 2 || c->rope_dim % 2)
        return err_set(e, ERR_FORMAT, "%s: rotary dimension %d (head_dim %d x partial_rotary_factor %g) must be even",
                       ctx, c->rope_dim, c->head_dim, prf);
    c->rope_type = ROPE_DEFAULT;
    c->rope_attn_factor = 1.0;
    c->rope_factor = 1.0;
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
    if (!rs || cJSON_IsNull(rs)) return 0;
    if (!cJSON_IsObject(rs))
        return err_set(e, ERR_FORMAT, "%s: field 'rope_scaling': expected object or null, got %s", ctx, json_brief(rs));
    const char *type = NULL;
    if ((rc = json_opt_str(rs, "rope_type", &type, NULL, ctx, e))) return rc;
    if (!type && (rc = json_opt_str(rs, "type", &type, NULL, ctx, e))) return rc;
    if (!type) return err_set(e, ERR_FORMAT, "%s: field 'rope_scaling': missing 'rope_type'", ctx);
    if (!strcmp(type, "default")) return 0;
    if (!strcmp(type, "linear")) { // HF _compute_linear_scaling_rope_parameters: inv_freq / factor
        c->rope_type = ROPE_LINEAR;
        if ((rc = json_need_num(rs, "factor", &c->rope_factor, ctx, e))) return err_prefix(e, "rope_scaling (linear)");
        if (!(c->rope_factor >= 1) || c->rope_factor > 1e6)
            return err_set(e, ERR_FORMAT, "%s: rope_scaling (linear): field 'factor': %g not in [1, 1e6]", ctx, c->rope_factor);
        return 0;
    }
    if (!strcmp(type, "llama3")) {
        c->rope_type = ROPE_LLAMA3;
        if ((rc = json_need_num(rs, "factor", &c->rope_factor, ctx, e)) ||
            (rc = json_need_num(rs, "low_freq_factor", &c->rope_low_freq, ctx, e)) ||
            (rc = json_need_num(rs, "high_freq_factor", &c->rope_high_freq, ctx, e)) ||
            (rc = json_need_int(rs, "original_max_position_embeddings", &c->rope_orig_max, ctx, e)))
            return err_prefix(e, "rope_scaling (llama3)");
        if (!(c->rope_factor >= 1) || !(c->rope_low_freq > 0) || !(c->rope_high_freq > c->rope_low_freq) ||
            c->rope_orig_max <= 0)
            return err_set(e, ERR_FORMAT, "%s: rope_scaling (llama3): bad factor %g / low %g / high %g / original %d",
                           ctx, c->rope_factor, c->rope_low_freq, c->rope_high_freq, c->rope_orig_max);
        return 0;
    }
    if (!strcmp(type, "longrope") || !strcmp(type, "su")) {
        c->rope_type = ROPE_LONGROPE;
        c->n_rope_factors = c->rope_dim / 2;
        if (c->n_rope_factors > CFG_MAX_ROPE_FACTORS)
            return err_set(e, ERR_RANGE, "%s: rotary dimension %d too large for longrope", ctx, c->rope_dim);
        if ((rc = factor_list(rs, "short_factor", c->rope_short, c->n_rope_factors, ctx, e)) ||
            (rc = factor_list(rs, "long_factor", c->rope_long, c->n_rope_factors, ctx, e)))
            return rc;
        // HF _compute_longrope_parameters: factor = max_pos / original_max when the config
        // has original_max_position_embeddings, else rope_scaling.factor.
        int orig = 0;
        if ((rc = json_opt_int(root, "original_max_position_embeddings", &orig, 0, ctx, e))) return rc;
        if (orig <= 0 && (rc = json_opt_int(rs, "original_max_position_embeddings", &orig, orig, ctx, e))) return rc;
        if (orig > 0) {
            c->rope_orig_max = orig;
            c->rope_factor = (double)c->max_seq / orig;
        } else {
            c->rope_orig_max = c->max_seq;
            if ((rc = json_opt_num(rs, "factor", &c->rope_factor, 1.0, ctx, e))) return rc;
        }
        double af = -1;
        if ((rc = json_opt_num(rs, "attention_factor", &af, -1, ctx, e))) return rc;
        if (af > 0) c->rope_attn_factor = af;
        else if (c->rope_factor <= 1.0) c->rope_attn_factor = 1.0;
        else c->rope_attn_factor = sqrt(1.0 + log(c->rope_factor) / log((double)c->rope_orig_max));
        return 0;
    }
    return err_set(e, ERR_UNSUPPORTED, "%s: rope_scaling type '%s' is not supported (supported: default, linear, llama3, longrope/su)",
                   ctx, type);
}

// Gemma3: sliding_window (default 4096) on the layers `layer_types` names sliding_attention, or
// without it by HF 4.50's `sliding_window_pattern` P (default 6; the released configs write it
// as `_sliding_window_pattern`): layer i is global iff (i + 1) % P == 0.
static int gemma3_windows(struct model_config *c, const cJSON *root, const char *ctx, struct err *e) {
    int rc, P = 6;
    double w = 4096;
    const cJSON *lt = NULL;
    if ((rc = json_opt_arr(root, "layer_types", &lt, ctx, e)) || (rc = num_or_null(root, "sliding_window", 4096, &w, ctx, e)))
        return rc;
    if (!(w >= 1 && w <= 1e9 && w == floor(w)))
        return err_set(e, ERR_FORMAT, "%s: field 'sliding_window': %g (Gemma3's sliding layers need a window of >= 1 token)",
                       ctx, w);
    const char *pk = cJSON_GetObjectItemCaseSensitive(root, "sliding_window_pattern") ? "sliding_window_pattern"
                                                                                       : "_sliding_window_pattern";
    if ((rc = json_opt_int(root, pk, &P, 6, ctx, e))) return rc;
    if (P < 1) return err_set(e, ERR_FORMAT, "%s: field '%s': %d must be >= 1", ctx, pk, P);
    int bidir = 0; // EmbeddingGemma's encoder: no causal mask
    if ((rc = json_opt_bool(root, "use_bidirectional_attention", &bidir, 0, ctx, e))) return rc;
    if (bidir) return err_set(e, ERR_UNSUPPORTED, "%s: field 'use_bidirectional_attention': true is not supported "
                              "(a causal language model only)", ctx);
    if (lt && cJSON_GetArraySize(lt) != c->n_layers)
        return err_set(e, ERR_FORMAT, "%s: field 'layer_types' has %d entries for %d layers", ctx, cJSON_GetArraySize(lt),
                       c->n_layers);
    for (int i = 0; i < c->n_layers; i++) {
        const cJSON *x = lt ? cJSON_GetArrayItem(lt, i) : NULL;
        if (lt && !cJSON_IsString(x)) return err_set(e, ERR_FORMAT, "%s: layer_types[%d]: expected string", ctx, i);
        int slide = (i + 1) % P != 0;
        if (x && !strcmp(x->valuestring, "sliding_attention")) slide = 1;
        else if (x && !strcmp(x->valuestring, "full_attention")) slide = 0;
        else if (x)
            return err_set(e, ERR_UNSUPPORTED, "%s: layer_types[%d] = '%s' (supported: sliding_attention, full_attention)",
                           ctx, i, x->valuestring);
        c->window[i] = slide ? (int)w : 0;
    }
    return 0;
}

// A window of 0 tokens that is switched on attends to nothing: window 0 means full attention
// here, so such a config ran full attention silently.
static int parse_windows(struct model_config *c, const cJSON *root, const char *ctx, struct err *e) {
    int rc;
    double w = 0;
    const cJSON *lt = NULL;
    if ((rc = json_opt_arr(root, "layer_types", &lt, ctx, e))) return rc;
    if (c->arch == ARCH_LLAMA) return 0; // no sliding window in Llama
    if (c->arch == ARCH_GEMMA3) return gemma3_windows(c, root, ctx, e);
    double def = c->arch == ARCH_GEMMA2 ? 4096 : 0;
    if ((rc = num_or_null(root, "sliding_window", def, &w, ctx, e))) return rc;
    if (w < 0 || w > 1e9 || w != floor(w))
        return err_set(e, ERR_FORMAT, "%s: field 'sliding_window': bad value %g", ctx, w);
    int W = (int)w, mwl = c->n_layers;
    const char *on = NULL; // what switches the window on, if it is 0
    if (c->arch == ARCH_QWEN2 || c->arch == ARCH_QWEN3) {
        int use = 0;
        if ((rc = json_opt_bool(root, "use_sliding_window", &use, 0, ctx, e))) return rc;
        if ((rc = json_opt_int(root, "max_window_layers", &mwl, c->n_layers, ctx, e))) return rc;
        if (!use) return 0; // HF: sliding_window = None unless use_sliding_window
        on = lt ? NULL : mwl < c->n_layers ? "use_sliding_window is true" : NULL;
    } else if (!lt && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(root, "sliding_window"))) {
        on = c->arch == ARCH_GEMMA2 ? "Gemma2's even layers slide" : "a number switches it on (null: full attention)";
    }
    for (int i = 0; lt && i < cJSON_GetArraySize(lt) && !on; i++) {
        const cJSON *x = cJSON_GetArrayItem(lt, i);
        if (cJSON_IsString(x) && !strcmp(x->valuestring, "sliding_attention")) on = "layer_types holds sliding_attention";
    }
    if (W == 0 && on)
        return err_set(e, ERR_FORMAT, "%s: field 'sliding_window': 0 while %s: a window of 0 tokens attends to nothing "
                       "(give the window in tokens, or switch it off)", ctx, on);
    if (c->arch == ARCH_QWEN2 || c->arch == ARCH_QWEN3) {
        if (!lt) {
            for (int i = 0; i < c->n_layers; i++) c->window[i] = i >= mwl ? W : 0;
            return 0;
        }
    }
    if (lt) {
        if (cJSON_GetArraySize(lt) != c->n_layers)
            return err_set(e, ERR_FORMAT, "%s: field 'layer_types' has %d entries for %d layers", ctx,
                           cJSON_GetArraySize(lt), c->n_layers);
        int i = 0;
        const cJSON *x;
        cJSON_ArrayForEach(x, lt) {
            if (!cJSON_IsString(x)) return err_set(e, ERR_FORMAT, "%s: layer_types[%d]: expected string", ctx, i);
            if (!strcmp(x->valuestring, "sliding_attention")) c->window[i] = W;
            else if (!strcmp(x->valuestring, "full_attention")) c->window[i] = 0;
            else return err_set(e, ERR_UNSUPPORTED, "%s: layer_types[%d] = '%s' (supported: sliding_attention, full_attention)",
                                ctx, i, x->valuestring);
            i++;
        }
        return 0;
    }
    for (int i = 0; i < c->n_layers; i++)
        c->window[i] = c->arch == ARCH_GEMMA2 ? (i % 2 == 0 ? W : 0) : W; // Gemma2: even layers slide
    return 0;
}

// The bounds of config.h, each error naming its field.
static int check_sizes(const struct model_config *c, const char *ctx, struct err *e) {
    const struct { const char *field; int v, max; } lim[] = {
        {"hidden_size", c->dim, CFG_MAX_DIM},           {"intermediate_size", c->hidden_dim, CFG_MAX_FFN},
        {"num_hidden_layers", c->n_layers, CFG_MAX_LAYERS}, {"num_attention_heads", c->n_heads, CFG_MAX_HEADS},
        {"vocab_size", c->vocab_size, CFG_MAX_VOCAB},    {"max_position_embeddings", c->max_seq, CFG_MAX_POSITIONS},
    };
    for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++)
        if (lim[i].v > lim[i].max)
            return err_set(e, ERR_RANGE, "%s: field '%s': %d exceeds the supported maximum %d", ctx, lim[i].field, lim[i].v,
                           lim[i].max);
    return 0;
}

// The architecture of architectures[0]; *o: the object holding the model's fields (root, or a
// Gemma3ForConditionalGeneration's text_config, whose errors then say so in *ctx_o).
enum { CTX_CAP = 4200 }; // a path of 4096 and what follows it

static int parse_arch(struct model_config *c, const cJSON *root, const cJSON **o, char *ctx_o, const char *ctx,
                      struct err *e) {
    const cJSON *archs = NULL;
    int rc;
    *o = root;
    snprintf(ctx_o, CTX_CAP, "%s", ctx);
    if ((rc = json_need_arr(root, "architectures", &archs, ctx, e))) return rc;
    const cJSON *a0 = cJSON_GetArrayItem(archs, 0);
    if (!cJSON_IsString(a0)) return err_set(e, ERR_FORMAT, "%s: field 'architectures': expected a list of strings", ctx);
    int arch = -1;
    for (int i = 0; i < ARCH_COUNT; i++)
        if (!strcmp(a0->valuestring, arch_names[i].hf)) arch = i;
    if (!strcmp(a0->valuestring, "Gemma3ForConditionalGeneration")) {
        arch = ARCH_GEMMA3;
        if ((rc = json_need_obj(root, "text_config", o, ctx, e))) return err_prefix(e, "Gemma3ForConditionalGeneration");
        snprintf(ctx_o, CTX_CAP, "%s (text_config)", ctx);
    }
    if (arch < 0)
        return err_set(e, ERR_UNSUPPORTED, "%s: architecture '%s' is not supported (supported: %s)", ctx, a0->valuestring,
                       cfg_arch_names());
    c->arch = (enum model_arch)arch;
    const char *mt = NULL;
    if (arch == ARCH_GEMMA3 && (rc = json_opt_str(*o, "model_type", &mt, NULL, ctx_o, e))) return rc;
    if (mt && strcmp(mt, "gemma3_text"))
        return err_set(e, ERR_FORMAT, "%s: field 'model_type': '%s', expected 'gemma3_text' (Gemma 3's language model)",
                       ctx_o, mt);
    return 0;
}

// The sizes and head_dim. Gemma3's default to Gemma3TextConfig's (a released text_config states
// only what differs from them: the 4B's has no vocab_size, head_dim or max_position_embeddings).
static int parse_sizes(struct model_config *c, const cJSON *o, const char *ctx, struct err *e) {
    const int g3 = c->arch == ARCH_GEMMA3;
    int rc = 0;
    if (g3) *c = (struct model_config){.arch = c->arch, .dim = 2304, .hidden_dim = 9216, .n_layers = 26, .n_heads = 8,
                                       .vocab_size = 262208, .max_seq = 131072, .head_dim = 256};
    static const char *const key[] = {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                                      "vocab_size", "max_position_embeddings"};
    int *const val[] = {&c->dim, &c->hidden_dim, &c->n_layers, &c->n_heads, &c->vocab_size, &c->max_seq};
    // required, but Gemma 3's default to the values just set
    for (int i = 0; i < 6 && !rc; i++)
        rc = g3 ? json_opt_int(o, key[i], val[i], *val[i], ctx, e) : json_need_int(o, key[i], val[i], ctx, e);
    if (rc) return rc;
    if ((rc = json_opt_int(o, "num_key_value_heads", &c->n_kv_heads, g3 ? 4 : c->n_heads, ctx, e))) return rc;
    if (c->dim <= 0 || c->hidden_dim <= 0 || c->n_layers <= 0 || c->n_heads <= 0 || c->n_kv_heads <= 0 ||
        c->vocab_size <= 0 || c->max_seq <= 0)
        return err_set(e, ERR_FORMAT, "%s: sizes must be positive (hidden_size %d, intermediate_size %d, layers %d, heads %d, "
                       "kv heads %d, vocab %d, max_position_embeddings %d)", ctx, c->dim, c->hidden_dim, c->n_layers,
                       c->n_heads, c->n_kv_heads, c->vocab_size, c->max_seq);
    if ((rc = check_sizes(c, ctx, e))) return rc;
    if (c->n_heads % c->n_kv_heads)
        return err_set(e, ERR_FORMAT, "%s: num_attention_heads %d not a multiple of num_key_value_heads %d", ctx, c->n_heads,
                       c->n_kv_heads);
    if (!g3) c->head_dim = 0;
    if ((rc = json_opt_int(o, "head_dim", &c->head_dim, c->head_dim, ctx, e))) return rc;
    if (c->head_dim == 0) {
        if (c->dim % c->n_heads)
            return err_set(e, ERR_FORMAT, "%s: no head_dim and hidden_size %d not divisible by heads %d", ctx, c->dim, c->n_heads);
        c->head_dim = c->dim / c->n_heads;
    }
    if (c->head_dim <= 0 || c->head_dim % 2 || c->head_dim > CFG_MAX_HEAD_DIM)
        return err_set(e, ERR_FORMAT, "%s: field 'head_dim': %d must be even and in (0, %d]", ctx, c->head_dim,
                       CFG_MAX_HEAD_DIM);
    if ((int64_t)c->n_heads * c->head_dim > CFG_MAX_DIM)
        return err_set(e, ERR_RANGE, "%s: field 'num_attention_heads' x 'head_dim' = %d x %d exceeds %d", ctx, c->n_heads,
                       c->head_dim, CFG_MAX_DIM);
    return 0;
}

// Activation, biases and the structure flags of each architecture.
static int parse_structure(struct model_config *c, const cJSON *o, const char *ctx, struct err *e) {
    const int gemma = c->arch == ARCH_GEMMA2 || c->arch == ARCH_GEMMA3;
    const char *act = NULL; // the Gemmas read hidden_activation first
    int rc;
    if (gemma && (rc = json_opt_str(o, "hidden_activation", &act, NULL, ctx, e))) return rc;
    if (!act && (rc = json_opt_str(o, "hidden_act", &act, NULL, ctx, e))) return rc;
    if (!act) act = gemma ? "gelu_pytorch_tanh" : "silu";
    if (!strcmp(act, "silu") || !strcmp(act, "swish")) c->act = ACT_SILU;
    else if (!strcmp(act, "gelu_pytorch_tanh") || !strcmp(act, "gelu_new") || !strcmp(act, "gelu_fast")) c->act = ACT_GELU_TANH;
    else if (!strcmp(act, "gelu")) c->act = ACT_GELU;
    else return err_set(e, ERR_UNSUPPORTED, "%s: hidden_act '%s' not supported (silu, gelu_pytorch_tanh, gelu)", ctx, act);
    if ((rc = json_opt_bool(o, "tie_word_embeddings", &c->tie_embeddings, gemma, ctx, e))) return rc;
    int attn_bias = 0;
    if ((rc = json_opt_bool(o, "attention_bias", &attn_bias, 0, ctx, e))) return rc;
    switch (c->arch) {
    case ARCH_QWEN3: c->qk_norm = 1; c->qkv_bias = c->o_bias = attn_bias; break;
    case ARCH_QWEN2: c->qkv_bias = 1; break;
    case ARCH_LLAMA:
        c->qkv_bias = c->o_bias = attn_bias;
        if ((rc = json_opt_bool(o, "mlp_bias", &c->mlp_bias, 0, ctx, e))) return rc;
        break;
    case ARCH_MISTRAL: break;
    case ARCH_GEMMA2:
    case ARCH_GEMMA3:
        c->qkv_bias = c->o_bias = attn_bias;
        c->norm_plus_one = c->sandwich_norm = 1;
        c->embed_scale = c->arch == ARCH_GEMMA3 ? EMBED_SQRT_F32 : EMBED_SQRT;
        c->qk_norm = c->arch == ARCH_GEMMA3;
        break;
    case ARCH_PHI3: c->fused_qkv = c->fused_gate_up = 1; break;
    default: break;
    }
    return 0;
}

// query_pre_attn_scalar and the soft-caps: Gemma2's default to (head_dim, 50, 30), Gemma3's to
// (256, none, none) (Gemma3TextConfig); the others use head_dim and no caps.
static int parse_scores(struct model_config *c, const cJSON *o, const char *ctx, struct err *e) {
    const int g3 = c->arch == ARCH_GEMMA3;
    int rc;
    c->query_pre_attn_scalar = g3 ? 256 : c->head_dim;
    if (c->arch != ARCH_GEMMA2 && !g3) return 0;
    if ((rc = json_opt_num(o, "query_pre_attn_scalar", &c->query_pre_attn_scalar, c->query_pre_attn_scalar, ctx, e)) ||
        (rc = num_or_null(o, "attn_logit_softcapping", g3 ? 0 : 50.0, &c->attn_softcap, ctx, e)) ||
        (rc = num_or_null(o, "final_logit_softcapping", g3 ? 0 : 30.0, &c->final_softcap, ctx, e)))
        return rc;
    if (!(c->query_pre_attn_scalar > 0) || c->attn_softcap < 0 || c->final_softcap < 0)
        return err_set(e, ERR_FORMAT, "%s: query_pre_attn_scalar %g / softcaps %g, %g must be positive", ctx,
                       c->query_pre_attn_scalar, c->attn_softcap, c->final_softcap);
    return 0;
}

int cfg_parse(struct model_config *c, const char *json, size_t len, const char *ctx, struct err *e) {
    memset(c, 0, sizeof *c);
    cJSON *root = NULL;
    int rc = json_parse(&root, json, len, ctx, e);
    if (rc) return rc;
    const cJSON *o = root;
    char cx[CTX_CAP];
    if (!cJSON_IsObject(root)) { rc = err_set(e, ERR_FORMAT, "%s: expected a JSON object", ctx); goto done; }
    if ((rc = parse_arch(c, root, &o, cx, ctx, e)) || (rc = parse_sizes(c, o, cx, e))) goto done;
    if ((rc = json_opt_num(o, "rms_norm_eps", &c->norm_eps, c->arch == ARCH_PHI3 ? 1e-5 : 1e-6, cx, e))) goto done;
    if (!(c->norm_eps > 0 && c->norm_eps < 1)) { // 0 divides by zero on an all-zero row; >= 1 swamps the variance
        rc = err_set(e, ERR_FORMAT, "%s: field 'rms_norm_eps': %g is outside (0, 1)", cx, c->norm_eps);
        goto done;
    }
    if ((rc = parse_structure(c, o, cx, e)) || (rc = parse_rope(c, o, cx, e)) || (rc = parse_scores(c, o, cx, e)) ||
        (rc = parse_windows(c, o, cx, e)))
        goto done;
    if ((rc = token_id(o, "bos_token_id", &c->bos_id, cx, e)) || (rc = token_id(o, "eos_token_id", &c->eos_id, cx, e)))
        goto done;
    if (o != root && c->bos_id < 0 && (rc = token_id(root, "bos_token_id", &c->bos_id, ctx, e))) goto done;
    if (o != root && c->eos_id < 0 && (rc = token_id(root, "eos_token_id", &c->eos_id, ctx, e))) goto done;
    if (c->arch == ARCH_GEMMA3 && !cJSON_GetObjectItemCaseSensitive(o, "bos_token_id") && c->bos_id < 0) c->bos_id = 2;
    if (c->arch == ARCH_GEMMA3 && !cJSON_GetObjectItemCaseSensitive(o, "eos_token_id") && c->eos_id < 0) c->eos_id = 1;
    rc = cfg_check_meaning(c, o, cx, e);
done:
    cJSON_Delete(root);
    if (rc) memset(c, 0, sizeof *c);
    return rc;
}

int cfg_load(struct model_config *c, const char *path, struct err *e) {
    char p[4096];
    int rc;
    if (dir_exists(path) || !str_ends_with(path, ".json")) {
        if ((rc = path_join(p, sizeof p, path, "config.json", e))) return rc;
    } else if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p) {
        return err_set(e, ERR_RANGE, "path too long: %s", path);
    }
    char *buf = NULL;
    size_t len = 0;
    if ((rc = file_read_all(p, &buf, &len, e))) return rc;
    rc = cfg_parse(c, buf, len, p, e);
    free(buf);
    return rc;
}
