// gguf_import.c: GGUF -> HF directory (see gguf_import.h). Three steps, all validation before
// any file is written: the config from the metadata, the tensor plan (every GGUF tensor mapped
// to its HF name, shape checked against the config, nothing left over, nothing missing), the
// tokenizer; then config.json, tokenizer files and model.safetensors (streamed).
#include "import/gguf_import.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/progress.h"
#include "io/ggml_quants.h"
#include "io/gguf.h"
#include "io/safetensors.h"
#include "model/config.h"

enum { A_LLAMA = 1, A_QWEN2 = 2, A_QWEN3 = 4, A_GEMMA2 = 8, A_PHI3 = 16, A_GEMMA3 = 32, A_ALL = 63 };
enum { A_GEMMAS = A_GEMMA2 | A_GEMMA3 };
static const struct { const char *gguf; enum model_arch arch; unsigned bit; } archs[] = {
    {"llama", ARCH_LLAMA, A_LLAMA}, {"qwen2", ARCH_QWEN2, A_QWEN2}, {"qwen3", ARCH_QWEN3, A_QWEN3},
    {"gemma2", ARCH_GEMMA2, A_GEMMA2}, {"phi3", ARCH_PHI3, A_PHI3}, {"gemma3", ARCH_GEMMA3, A_GEMMA3},
};
const char *gguf_import_arch_names(void) { return "llama, qwen2, qwen3, gemma2, phi3, gemma3"; }

// Shapes in config terms. HF shape = [rows, cols] (cols = 0: a vector); GGUF ne = [cols, rows].
enum dimx { D_0, D_DIM, D_QD, D_KVD, D_QKV, D_FFN, D_FFN2, D_HD, D_VOCAB, D_ROPE2 };
enum need { N_REQ, N_OPT_BIAS, N_OPT, N_CONFIG }; // N_CONFIG: read into config.json, not written

struct tmap {
    const char *gguf, *hf; // per-layer names are suffixes of "blk.%d." / "model.layers.%d."
    enum dimx rows, cols;
    unsigned archs;
    enum need need;
};

static const struct tmap global_map[] = {
    {"token_embd.weight", "model.embed_tokens.weight", D_VOCAB, D_DIM, A_ALL, N_REQ},
    {"output_norm.weight", "model.norm.weight", D_DIM, D_0, A_ALL, N_REQ},
    {"output.weight", "lm_head.weight", D_VOCAB, D_DIM, A_ALL, N_OPT},
    {"rope_freqs.weight", NULL, D_ROPE2, D_0, A_LLAMA, N_CONFIG},
    {"rope_factors_long.weight", NULL, D_ROPE2, D_0, A_PHI3, N_CONFIG},
    {"rope_factors_short.weight", NULL, D_ROPE2, D_0, A_PHI3, N_CONFIG},
};

static const struct tmap layer_map[] = {
    {"attn_norm.weight", "input_layernorm.weight", D_DIM, D_0, A_ALL, N_REQ},
    {"attn_q.weight", "self_attn.q_proj.weight", D_QD, D_DIM, A_ALL & ~A_PHI3, N_REQ},
    {"attn_k.weight", "self_attn.k_proj.weight", D_KVD, D_DIM, A_ALL & ~A_PHI3, N_REQ},
    {"attn_v.weight", "self_attn.v_proj.weight", D_KVD, D_DIM, A_ALL & ~A_PHI3, N_REQ},
    {"attn_qkv.weight", "self_attn.qkv_proj.weight", D_QKV, D_DIM, A_PHI3, N_REQ},
    {"attn_q.bias", "self_attn.q_proj.bias", D_QD, D_0, A_QWEN2, N_REQ},
    {"attn_k.bias", "self_attn.k_proj.bias", D_KVD, D_0, A_QWEN2, N_REQ},
    {"attn_v.bias", "self_attn.v_proj.bias", D_KVD, D_0, A_QWEN2, N_REQ},
    {"attn_q.bias", "self_attn.q_proj.bias", D_QD, D_0, A_LLAMA | A_QWEN3, N_OPT_BIAS},
    {"attn_k.bias", "self_attn.k_proj.bias", D_KVD, D_0, A_LLAMA | A_QWEN3, N_OPT_BIAS},
    {"attn_v.bias", "self_attn.v_proj.bias", D_KVD, D_0, A_LLAMA | A_QWEN3, N_OPT_BIAS},
    {"attn_output.bias", "self_attn.o_proj.bias", D_DIM, D_0, A_LLAMA | A_QWEN3, N_OPT_BIAS},
    {"attn_output.weight", "self_attn.o_proj.weight", D_DIM, D_QD, A_ALL, N_REQ},
    {"attn_q_norm.weight", "self_attn.q_norm.weight", D_HD, D_0, A_QWEN3 | A_GEMMA3, N_REQ},
    {"attn_k_norm.weight", "self_attn.k_norm.weight", D_HD, D_0, A_QWEN3 | A_GEMMA3, N_REQ},
    {"ffn_norm.weight", "post_attention_layernorm.weight", D_DIM, D_0, A_ALL & ~A_GEMMAS, N_REQ},
    {"post_attention_norm.weight", "post_attention_layernorm.weight", D_DIM, D_0, A_GEMMAS, N_REQ},
    {"ffn_norm.weight", "pre_feedforward_layernorm.weight", D_DIM, D_0, A_GEMMAS, N_REQ},
    {"post_ffw_norm.weight", "post_feedforward_layernorm.weight", D_DIM, D_0, A_GEMMAS, N_REQ},
    {"ffn_gate.weight", "mlp.gate_proj.weight", D_FFN, D_DIM, A_ALL & ~A_PHI3, N_REQ},
    {"ffn_up.weight", "mlp.up_proj.weight", D_FFN, D_DIM, A_ALL & ~A_PHI3, N_REQ},
    {"ffn_up.weight", "mlp.gate_up_proj.weight", D_FFN2, D_DIM, A_PHI3, N_REQ},
    {"ffn_down.weight", "mlp.down_proj.weight", D_DIM, D_FFN, A_ALL, N_REQ},
};
#define N_LAYER_MAP ((int)(sizeof layer_map / sizeof layer_map[0]))
#define N_GLOBAL_MAP ((int)(sizeof global_map / sizeof global_map[0]))

// One output tensor: where it comes from and what happens to it.
enum xform { X_NONE, X_PERM, X_MINUS_ONE };
struct job {
    const struct gguf_tensor *t;
    char hf[96];
    enum xform xf;
    int perm_heads; // X_PERM: heads whose rows are interleaved (llama.cpp permute)
};

struct plan {
    struct progress *pg;      // the live line of write_all (tensors written)
    struct gguf own;          // the file gguf_import opened (g points here), or unused
    const struct gguf *g;
    struct model_config c;
    const char *A;            // general.architecture (NUL-terminated copy in arch_buf)
    char arch_buf[32];
    unsigned abit;
    struct job *jobs;
    int n_jobs;
    const struct gguf_tensor *cfg_t[N_GLOBAL_MAP]; // N_CONFIG tensors found
    int bias;                 // llama/qwen3: attention biases present
    int bf16;
    float *scratch, *perm;    // fill buffers (largest tensor)
};

static int64_t dimval(const struct model_config *c, enum dimx d) {
    switch (d) {
    case D_DIM: return c->dim;
    case D_QD: return (int64_t)c->n_heads * c->head_dim;
    case D_KVD: return (int64_t)c->n_kv_heads * c->head_dim;
    case D_QKV: return (int64_t)(c->n_heads + 2 * c->n_kv_heads) * c->head_dim;
    case D_FFN: return c->hidden_dim;
    case D_FFN2: return 2 * (int64_t)c->hidden_dim;
    case D_HD: return c->head_dim;
    case D_VOCAB: return c->vocab_size;
    case D_ROPE2: return c->rope_dim / 2;
    default: return 0;
    }
}

// ---- config from the metadata ----
// Whether a metadata key must be present (absent: an error) or may be (absent: *out kept).
enum meta_need { META_OPTIONAL, META_REQUIRED };

static int meta_int(struct plan *p, const char *suffix, int *out, enum meta_need need, int64_t lo, int64_t hi,
                    struct err *e) {
    const int required = need == META_REQUIRED;
    char key[128];
    snprintf(key, sizeof key, "%s.%s", p->A, suffix);
    int64_t v = *out;
    int rc = gguf_get_int(p->g, key, &v, required, e);
    if (rc) return rc;
    if (!gguf_find_kv(p->g, key)) return 0;
    if (v < lo || v > hi)
        return err_set(e, ERR_FORMAT, "%s: key '%s' = %lld is out of range [%lld, %lld]", p->g->path, key, (long long)v,
                       (long long)lo, (long long)hi);
    *out = (int)v;
    return 0;
}

static int meta_float(struct plan *p, const char *suffix, double *out, int required, struct err *e) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", p->A, suffix);
    int rc = gguf_get_float(p->g, key, out, required, e);
    if (!rc && !isfinite(*out)) return err_set(e, ERR_FORMAT, "%s: key '%s' = %g is not finite", p->g->path, key, *out);
    return rc;
}

static int read_sizes(struct plan *p, struct err *e) {
    struct model_config *c = &p->c;
    const int64_t BIG = 1 << 20;
    int rc, key_len = 0, val_len = 0, window = 0;
    c->n_kv_heads = 0;
    if ((rc = meta_int(p, "block_count", &c->n_layers, META_REQUIRED, 1, CFG_MAX_LAYERS, e)) ||
        (rc = meta_int(p, "context_length", &c->max_seq, META_REQUIRED, 1, 1 << 30, e)) ||
        (rc = meta_int(p, "embedding_length", &c->dim, META_REQUIRED, 1, BIG, e)) ||
        (rc = meta_int(p, "feed_forward_length", &c->hidden_dim, META_REQUIRED, 1, BIG, e)) ||
        (rc = meta_int(p, "attention.head_count", &c->n_heads, META_REQUIRED, 1, 4096, e)) ||
        (rc = meta_int(p, "attention.head_count_kv", &c->n_kv_heads, META_OPTIONAL, 1, 4096, e)) ||
        (rc = meta_int(p, "attention.key_length", &key_len, META_OPTIONAL, 2, 1024, e)) ||
        (rc = meta_int(p, "attention.value_length", &val_len, META_OPTIONAL, 2, 1024, e)) ||
        (rc = meta_int(p, "attention.sliding_window", &window, META_OPTIONAL, 0, 1 << 30, e)))
        return rc;
    if (!c->n_kv_heads) c->n_kv_heads = c->n_heads;
    c->head_dim = key_len ? key_len : c->dim / c->n_heads;
    if ((!key_len && c->dim % c->n_heads) || (val_len && val_len != c->head_dim) || c->n_heads % c->n_kv_heads ||
        c->head_dim % 2)
        return err_set(e, ERR_FORMAT, "%s: inconsistent attention sizes: embedding %d, heads %d/%d, key_length %d, "
                       "value_length %d", p->g->path, c->dim, c->n_heads, c->n_kv_heads, key_len, val_len);
    c->rope_dim = c->head_dim;
    if ((rc = meta_int(p, "rope.dimension_count", &c->rope_dim, META_OPTIONAL, 2, c->head_dim, e))) return rc;
    if (c->rope_dim % 2 || (c->rope_dim != c->head_dim && c->arch != ARCH_PHI3))
        return err_set(e, ERR_UNSUPPORTED, "%s: key '%s.rope.dimension_count' = %d: partial rotary (head_dim %d) is "
                       "supported for phi3 only", p->g->path, p->A, c->rope_dim, c->head_dim);
    // Gemma3: llama.cpp's hparams.set_swa_pattern(6) (the files carry no pattern key; one named
    // attention.sliding_window_pattern is read when it is an integer): layer l is global iff
    // (l + 1) % P == 0; the window is required there (llama.cpp's get_key without a default).
    int P = 6;
    if (c->arch == ARCH_GEMMA3 && ((rc = meta_int(p, "attention.sliding_window", &window, META_REQUIRED, 1, 1 << 30, e)) ||
                                   (rc = meta_int(p, "attention.sliding_window_pattern", &P, META_OPTIONAL, 1, CFG_MAX_LAYERS, e))))
        return rc;
    if (window)
        for (int l = 0; l < c->n_layers; l++)
            c->window[l] = c->arch == ARCH_GEMMA2   ? (l % 2 == 0 ? window : 0)
                           : c->arch == ARCH_GEMMA3 ? ((l + 1) % P ? window : 0)
                           : c->arch == ARCH_PHI3   ? window
                                                    : 0;
    return 0;
}

// Gemma3 (llama.cpp's gemma3 graph): q/k norms and the four Gemma norms with (1 + w), the
// embedding x sqrt(n_embd), queries x 1/sqrt(head_dim) except the 27B (62 layers): 1/sqrt(n_embd /
// n_head), HF's query_pre_attn_scalar 168; local RoPE base 10000 (llama.cpp's hard-coded
// rope_freq_base_train_swa); no soft-caps unless the metadata has them.
static int gemma3_config(struct plan *p, struct err *e) {
    struct model_config *c = &p->c;
    c->qk_norm = c->norm_plus_one = c->sandwich_norm = 1, c->embed_scale = EMBED_SQRT_F32;
    c->query_pre_attn_scalar = c->n_layers == 62 ? (double)c->dim / c->n_heads : c->head_dim;
    c->rope_local_theta = 10000.0;
    int rc;
    if ((rc = meta_float(p, "attn_logit_softcapping", &c->attn_softcap, 0, e)) ||
        (rc = meta_float(p, "final_logit_softcapping", &c->final_softcap, 0, e)))
        return rc;
    if (c->attn_softcap < 0 || c->final_softcap < 0)
        return err_set(e, ERR_FORMAT, "%s: soft-caps %g / %g must be >= 0", p->g->path, c->attn_softcap, c->final_softcap);
    return 0;
}

static int read_config(struct plan *p, struct err *e) {
    struct model_config *c = &p->c;
    int rc = read_sizes(p, e);
    if (rc) return rc;
    c->rope_theta = 10000.0;
    c->norm_eps = 0;
    if ((rc = meta_float(p, "rope.freq_base", &c->rope_theta, 0, e)) ||
        (rc = meta_float(p, "attention.layer_norm_rms_epsilon", &c->norm_eps, 1, e)))
        return rc;
    if (!(c->rope_theta > 0) || !(c->norm_eps > 0 && c->norm_eps < 1))
        return err_set(e, ERR_FORMAT, "%s: rope.freq_base %g / layer_norm_rms_epsilon %g out of range", p->g->path,
                       c->rope_theta, c->norm_eps);
    struct gguf_str st = {0};
    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.type", p->A);
    if ((rc = gguf_get_str(p->g, key, &st, 0, e))) return rc;
    double factor = 1;
    if ((rc = meta_float(p, "rope.scaling.factor", &factor, 0, e))) return rc;
    const int linear = st.len == 6 && !memcmp(st.s, "linear", 6);
    int plain = !st.len || (st.len == 4 && !memcmp(st.s, "none", 4)) ||
                ((linear || (st.len == 4 && !memcmp(st.s, "yarn", 4))) && factor == 1);
    // Gemma3 (4B and up): linear x8 on the global layers (llama.cpp: freq_scale_train_swa = 1)
    const int g3_linear = c->arch == ARCH_GEMMA3 && linear && factor > 1 && factor <= 1e6;
    if (!plain && !g3_linear && !(c->arch == ARCH_PHI3 && ((st.len == 8 && !memcmp(st.s, "longrope", 8)) || (st.len == 2 && !memcmp(st.s, "su", 2)))))
        return err_set(e, ERR_UNSUPPORTED, "%s: key '%s' = '%.*s' (factor %g) is not supported (none; llama3 and longrope "
                       "factors come as tensors)", p->g->path, key, (int)(st.len < 40 ? st.len : 40), st.s, factor);
    c->act = c->arch == ARCH_GEMMA2 || c->arch == ARCH_GEMMA3 ? ACT_GELU_TANH : ACT_SILU;
    c->rope_type = ROPE_DEFAULT, c->rope_factor = 1, c->rope_attn_factor = 1;
    if (g3_linear) c->rope_type = ROPE_LINEAR, c->rope_factor = factor;
    c->query_pre_attn_scalar = c->head_dim;
    c->qk_norm = c->arch == ARCH_QWEN3;
    c->qkv_bias = c->arch == ARCH_QWEN2;
    c->fused_qkv = c->fused_gate_up = c->arch == ARCH_PHI3;
    if (c->arch == ARCH_GEMMA2) {
        c->norm_plus_one = c->sandwich_norm = 1, c->embed_scale = EMBED_SQRT;
        // llama.cpp (gemma2 graph): queries scaled by 1/sqrt(head_dim), except the 27B model
        // (46 layers): 1/sqrt(n_embd / n_head) - HF's query_pre_attn_scalar 256 / 144
        c->query_pre_attn_scalar = c->n_layers == 46 ? (double)c->dim / c->n_heads : c->head_dim;
        c->attn_softcap = 50, c->final_softcap = 30;
        if ((rc = meta_float(p, "attn_logit_softcapping", &c->attn_softcap, 0, e)) ||
            (rc = meta_float(p, "final_logit_softcapping", &c->final_softcap, 0, e)))
            return rc;
    }
    if (c->arch == ARCH_GEMMA3 && (rc = gemma3_config(p, e))) return rc;
    c->bos_id = c->eos_id = -1;
    return 0;
}

// Llama 3.x rope scaling: llama.cpp stores 1/factor per frequency (rope_freqs.weight); HF
// config.json stores the parameters. Accept the tensor only if HF's formula (factor = its
// largest entry, low 1, high 4, original context from the metadata or 8192) reproduces it.
static int rope_llama3(struct plan *p, const struct gguf_tensor *t, struct err *e) {
    struct model_config *c = &p->c;
    int n = c->rope_dim / 2, orig = 8192;
    float f[CFG_MAX_ROPE_FACTORS];
    int rc = meta_int(p, "rope.scaling.original_context_length", &orig, META_OPTIONAL, 1, 1 << 30, e);
    if (rc || (rc = ggml_dequantize(f, t->data, t->type, n, e))) return rc;
    double F = 0;
    for (int i = 0; i < n; i++) F = f[i] > F ? f[i] : F;
    const double lo = 1, hi = 4, lw = orig / lo, hw = orig / hi;
    for (int i = 0; i < n; i++) {
        double inv = 1.0 / pow(c->rope_theta, 2.0 * i / c->rope_dim), wl = 2 * HIFA4_PI / inv, want;
        if (wl < hw) want = 1;
        else if (wl > lw) want = F;
        else {
            double s = (orig / wl - lo) / (hi - lo);
            want = 1 / ((1 - s) / F + s);
        }
        if (!(fabs(f[i] - want) <= 1e-5 * want))
            return err_set(e, ERR_UNSUPPORTED, "%s: tensor 'rope_freqs.weight'[%d] = %g is not Llama 3 rope scaling "
                           "(factor %g, low 1, high 4, original %d gives %g)", p->g->path, i, f[i], F, orig, want);
    }
    if (F > 1) {
        c->rope_type = ROPE_LLAMA3;
        c->rope_factor = F, c->rope_low_freq = lo, c->rope_high_freq = hi, c->rope_orig_max = orig;
    }
    return 0;
}

static int rope_longrope(struct plan *p, const struct gguf_tensor *lt, const struct gguf_tensor *st, struct err *e) {
    struct model_config *c = &p->c;
    if (!lt || !st)
        return err_set(e, ERR_FORMAT, "%s: tensor 'rope_factors_%s.weight' is missing (LongRoPE needs both)", p->g->path,
                       lt ? "short" : "long");
    int n = c->rope_dim / 2, orig = 0, rc;
    float fl[CFG_MAX_ROPE_FACTORS], fs[CFG_MAX_ROPE_FACTORS];
    if ((rc = meta_int(p, "rope.scaling.original_context_length", &orig, META_REQUIRED, 1, c->max_seq, e)) ||
        (rc = ggml_dequantize(fl, lt->data, lt->type, n, e)) || (rc = ggml_dequantize(fs, st->data, st->type, n, e)))
        return rc;
    c->rope_type = ROPE_LONGROPE;
    c->n_rope_factors = n;
    for (int i = 0; i < n; i++) c->rope_long[i] = fl[i], c->rope_short[i] = fs[i];
    c->rope_orig_max = orig;
    c->rope_factor = (double)c->max_seq / orig;
    c->rope_attn_factor = c->rope_factor <= 1 ? 1 : sqrt(1 + log(c->rope_factor) / log((double)orig));
    return meta_float(p, "rope.scaling.attn_factor", &c->rope_attn_factor, 0, e);
}

// ---- the tensor plan ----
static int check_shape(struct plan *p, const struct gguf_tensor *t, const struct tmap *m, struct err *e) {
    int64_t rows = dimval(&p->c, m->rows), cols = dimval(&p->c, m->cols);
    int ok = m->cols == D_0 ? t->n_dims == 1 && t->ne[0] == rows : t->n_dims == 2 && t->ne[0] == cols && t->ne[1] == rows;
    if (ok) return 0;
    char got[96] = "";
    for (int d = 0, o = 0; d < t->n_dims; d++) o += snprintf(got + o, sizeof got - (size_t)o, "%s%lld", d ? ", " : "", (long long)t->ne[d]);
    if (m->cols == D_0)
        return err_set(e, ERR_FORMAT, "%s: tensor '%s' has ne [%s], expected [%lld] from the metadata", p->g->path, t->name,
                       got, (long long)rows);
    return err_set(e, ERR_FORMAT, "%s: tensor '%s' has ne [%s], expected [%lld, %lld] from the metadata", p->g->path,
                   t->name, got, (long long)cols, (long long)rows);
}

// "blk.<l>.<suffix>" -> l and suffix; -1 when the name is not a layer tensor.
static int layer_of(const char *name, const char **suffix) {
    if (strncmp(name, "blk.", 4)) return -1;
    const char *s = name + 4;
    long l = 0;
    int nd = 0;
    for (; *s >= '0' && *s <= '9' && nd < 6; s++, nd++) l = l * 10 + (*s - '0');
    if (!nd || *s != '.' || (nd > 1 && name[4] == '0')) return -1;
    *suffix = s + 1;
    return (int)l;
}

static int add_job(struct plan *p, const struct gguf_tensor *t, const char *hf, int layer) {
    struct job *j = &p->jobs[p->n_jobs++];
    j->t = t;
    if (layer >= 0) snprintf(j->hf, sizeof j->hf, "model.layers.%d.%s", layer, hf);
    else snprintf(j->hf, sizeof j->hf, "%s", hf);
    j->xf = X_NONE;
    const char *s = NULL;
    if (p->c.arch == ARCH_LLAMA && layer >= 0 && layer_of(t->name, &s) >= 0 &&
        (!strncmp(s, "attn_q.", 7) || !strncmp(s, "attn_k.", 7))) {
        j->xf = X_PERM; // convert_hf_to_gguf.py LlamaModel.permute, undone as transformers does
        j->perm_heads = s[5] == 'q' ? p->c.n_heads : p->c.n_kv_heads;
    }
    // Gemma's +1 (convert_hf_to_gguf.py adds it to every norm.weight, Gemma3's q/k norms too)
    if ((p->c.arch == ARCH_GEMMA2 || p->c.arch == ARCH_GEMMA3) && str_ends_with(j->hf, "norm.weight")) j->xf = X_MINUS_ONE;
    return 0;
}

static const struct tmap *find_map(const struct tmap *m, int n, const char *name, unsigned abit) {
    for (int i = 0; i < n; i++)
        if ((m[i].archs & abit) && !strcmp(m[i].gguf, name)) return &m[i];
    return NULL;
}

// Maps every GGUF tensor (an unknown one is an error), checks shapes, then that every
// required tensor of every layer is there.
static int map_tensors(struct plan *p, unsigned char *seen, struct err *e) {
    for (int64_t i = 0; i < p->g->n_tensors; i++) {
        const struct gguf_tensor *t = &p->g->tensors[i];
        const char *suffix = NULL;
        int l = layer_of(t->name, &suffix);
        const struct tmap *m = l >= 0 ? find_map(layer_map, N_LAYER_MAP, suffix, p->abit)
                                      : find_map(global_map, N_GLOBAL_MAP, t->name, p->abit);
        if (!m || l >= p->c.n_layers)
            return err_set(e, ERR_UNSUPPORTED, "%s: tensor '%s' is not part of a %s model with %d layers (as llama.cpp "
                           "names them)", p->g->path, t->name, p->A, p->c.n_layers);
        int rc = check_shape(p, t, m, e);
        if (rc) return rc;
        if (l >= 0) seen[(size_t)l * N_LAYER_MAP + (size_t)(m - layer_map)] = 1;
        if (m->need == N_CONFIG) p->cfg_t[m - global_map] = t;
        else add_job(p, t, m->hf, l);
    }
    if (!gguf_find_tensor(p->g, "output_norm.weight"))
        return err_set(e, ERR_FORMAT, "%s: missing tensor 'output_norm.weight'", p->g->path);
    const struct tmap *qb = find_map(layer_map, N_LAYER_MAP, "attn_q.bias", p->abit);
    p->bias = qb && qb->need == N_OPT_BIAS && seen[qb - layer_map]; // layer 0 decides for all
    for (int l = 0; l < p->c.n_layers; l++)
        for (int k = 0; k < N_LAYER_MAP; k++) {
            const struct tmap *m = &layer_map[k];
            if (!(m->archs & p->abit) || seen[(size_t)l * N_LAYER_MAP + k] ||
                (m->need != N_REQ && !(m->need == N_OPT_BIAS && p->bias)))
                continue;
            return err_set(e, ERR_FORMAT, "%s: missing tensor 'blk.%d.%s'%s", p->g->path, l, m->gguf,
                           m->need == N_OPT_BIAS ? " (other layers have attention biases)" : "");
        }
    return 0;
}

static int build_plan(struct plan *p, struct err *e) {
    const struct gguf_tensor *emb = gguf_find_tensor(p->g, "token_embd.weight");
    if (!emb) return err_set(e, ERR_FORMAT, "%s: missing tensor 'token_embd.weight'", p->g->path);
    if (emb->n_dims != 2 || emb->ne[1] < 1 || emb->ne[1] > (1 << 24))
        return err_set(e, ERR_FORMAT, "%s: tensor 'token_embd.weight' must be 2-D with 1..16777216 rows", p->g->path);
    p->c.vocab_size = (int)emb->ne[1];
    int vs = p->c.vocab_size, rc;
    if ((rc = meta_int(p, "vocab_size", &vs, META_OPTIONAL, 1, 1 << 24, e))) return rc;
    if (vs != p->c.vocab_size)
        return err_set(e, ERR_FORMAT, "%s: key '%s.vocab_size' = %d but token_embd.weight has %d rows", p->g->path, p->A, vs,
                       p->c.vocab_size);
    p->jobs = calloc((size_t)(p->g->n_tensors ? p->g->n_tensors : 1), sizeof *p->jobs);
    unsigned char *seen = calloc((size_t)p->c.n_layers * N_LAYER_MAP, 1);
    if (!p->jobs || !seen) { free(seen); return err_set(e, ERR_NOMEM, "%s: out of memory", p->g->path); }
    rc = map_tensors(p, seen, e);
    free(seen);
    if (rc) return rc;
    p->c.tie_embeddings = !gguf_find_tensor(p->g, "output.weight");
    p->c.qkv_bias |= p->bias;
    p->c.o_bias = p->bias;
    const struct gguf_tensor *rf = p->cfg_t[3], *fl = p->cfg_t[4], *fs = p->cfg_t[5]; // global_map order
    if (rf && (rc = rope_llama3(p, rf, e))) return rc;
    if ((fl || fs) && (rc = rope_longrope(p, fl, fs, e))) return rc;
    for (int i = 0; i < p->n_jobs; i++) {
        const struct gguf_tensor *t = p->jobs[i].t;
        if (!ggml_can_dequantize(t->type))
            return err_set(e, ERR_UNSUPPORTED, "%s: tensor '%s' has type %s, which is not supported (supported: %s)",
                           p->g->path, t->name, ggml_type_name(t->type), ggml_supported_names());
    }
    return 0;
}

// ---- writing ----
static int fill(void *ctx, int i, void *dst, struct err *e) {
    struct plan *p = ctx;
    const struct job *j = &p->jobs[i];
    const struct gguf_tensor *t = j->t;
    size_t n = (size_t)t->numel;
    int rc = ggml_dequantize(p->scratch, t->data, t->type, t->numel, e);
    if (rc) return err_prefix(e, "%s: tensor '%s'", p->g->path, t->name);
    for (size_t k = 0; k < n; k++) // an inf or NaN block scale (or weight) would be written as weights
        if (!isfinite(p->scratch[k]))
            return err_set(e, ERR_FORMAT, "%s: tensor '%s' (%s): element %zu dequantizes to %g (a non-finite weight or "
                           "quantization scale): the file is damaged", p->g->path, t->name, ggml_type_name(t->type), k,
                           (double)p->scratch[k]);
    float *src = p->scratch;
    if (j->xf == X_PERM) { // HF row h*hd + i <- row h*hd + 2i, HF row h*hd + hd/2 + i <- row h*hd + 2i + 1
        size_t rows = (size_t)(t->n_dims == 2 ? t->ne[1] : t->ne[0]), cols = n / rows, hd = rows / (size_t)j->perm_heads;
        for (size_t h = 0; h < (size_t)j->perm_heads; h++)
            for (size_t r = 0; r < hd; r++) {
                size_t from = h * hd + (r < hd / 2 ? 2 * r : 2 * (r - hd / 2) + 1);
                memcpy(p->perm + (h * hd + r) * cols, src + from * cols, cols * sizeof(float));
            }
        src = p->perm;
    } else if (j->xf == X_MINUS_ONE) {
        for (size_t k = 0; k < n; k++) src[k] -= 1.0f;
    }
    progress_set(p->pg, i + 1, NULL);
    unsigned char *o = dst;
    if (!p->bf16) {
        for (size_t k = 0; k < n; k++) {
            uint32_t u = f32_bits(src[k]);
            o[4 * k] = (unsigned char)u, o[4 * k + 1] = (unsigned char)(u >> 8);
            o[4 * k + 2] = (unsigned char)(u >> 16), o[4 * k + 3] = (unsigned char)(u >> 24);
        }
    } else {
        for (size_t k = 0; k < n; k++) {
            uint16_t h = f32_to_bf16(src[k]);
            o[2 * k] = (unsigned char)h, o[2 * k + 1] = (unsigned char)(h >> 8);
        }
    }
    return 0;
}

static const char *file_type_name(int64_t ft, char *buf, size_t n) {
    static const struct { int id; const char *name; } names[] = {
        {0, "ALL_F32"}, {1, "MOSTLY_F16"}, {2, "MOSTLY_Q4_0"}, {3, "MOSTLY_Q4_1"}, {7, "MOSTLY_Q8_0"},
        {8, "MOSTLY_Q5_0"}, {9, "MOSTLY_Q5_1"}, {10, "MOSTLY_Q2_K"}, {11, "MOSTLY_Q3_K_S"}, {12, "MOSTLY_Q3_K_M"},
        {13, "MOSTLY_Q3_K_L"}, {14, "MOSTLY_Q4_K_S"}, {15, "MOSTLY_Q4_K_M"}, {16, "MOSTLY_Q5_K_S"},
        {17, "MOSTLY_Q5_K_M"}, {18, "MOSTLY_Q6_K"}, {32, "MOSTLY_BF16"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].id == ft) return snprintf(buf, n, "%s", names[i].name), buf;
    if (ft < 0) snprintf(buf, n, "unknown");
    else snprintf(buf, n, "file_type %lld", (long long)ft);
    return buf;
}

// "Q4_1 x210, F32 x61, Q8_0 x1": the types of the written tensors, most frequent first.
static void type_counts(const struct plan *p, char *out, size_t n) {
    int cnt[GGML_TYPE_MAX] = {0};
    for (int i = 0; i < p->n_jobs; i++) cnt[p->jobs[i].t->type]++;
    size_t o = 0;
    out[0] = 0;
    for (;;) {
        int best = -1;
        for (int t = 0; t < GGML_TYPE_MAX; t++)
            if (cnt[t] && (best < 0 || cnt[t] > cnt[best])) best = t;
        if (best < 0 || o + 32 >= n) break;
        o += (size_t)snprintf(out + o, n - o, "%s%s x%d", o ? ", " : "", ggml_type_name((uint32_t)best), cnt[best]);
        cnt[best] = 0;
    }
}

static int write_text(const char *dir, const char *name, const char *text, struct err *e) {
    char path[4096];
    int rc = path_join(path, sizeof path, dir, name, e);
    return rc ? rc : file_write_atomic(path, text, strlen(text), e);
}

// config.json: the config plus the GGUF provenance; parsed back to make sure the runtime reads
// what was meant.
static int config_text(struct plan *p, const char *prov_json, char **out, struct err *e) {
    size_t n = strlen(prov_json) + 64;
    char *extra = malloc(n);
    if (!extra) return err_set(e, ERR_NOMEM, "%s: out of memory", p->g->path);
    snprintf(extra, n, "{\"torch_dtype\": \"%s\", \"_gguf\": %s}", p->bf16 ? "bfloat16" : "float32", prov_json);
    int rc = cfg_to_json(&p->c, extra, out, e);
    free(extra);
    if (rc) return rc;
    struct model_config back;
    if ((rc = cfg_parse(&back, *out, strlen(*out), "config.json (import-gguf)", e))) return err_prefix(e, "%s", p->g->path);
    if (back.dim != p->c.dim || back.n_layers != p->c.n_layers || back.head_dim != p->c.head_dim ||
        back.rope_dim != p->c.rope_dim || back.tie_embeddings != p->c.tie_embeddings || back.vocab_size != p->c.vocab_size)
        return err_set(e, ERR_INTERNAL, "%s: config.json does not read back as written", p->g->path);
    return 0;
}

static int write_all(struct plan *p, const char *out_dir, const struct gguf_tok_out *tok, const char *const *meta,
                     int n_meta, const char *prov_json, struct err *e) {
    struct st_wtensor *ts = calloc((size_t)p->n_jobs, sizeof *ts);
    char *cfg = NULL, path[4096];
    size_t maxn = 1, maxperm = 1;
    int rc = 0;
    const int created = !dir_exists(out_dir); // a refused import leaves nothing (a bad tensor is found while writing)
    for (int i = 0; i < p->n_jobs; i++) {
        const struct gguf_tensor *t = p->jobs[i].t;
        if ((size_t)t->numel > maxn) maxn = (size_t)t->numel;
        if (p->jobs[i].xf == X_PERM && (size_t)t->numel > maxperm) maxperm = (size_t)t->numel;
    }
    p->scratch = malloc(maxn * sizeof(float));
    p->perm = malloc(maxperm * sizeof(float));
    if (!ts || !p->scratch || !p->perm) { rc = err_set(e, ERR_NOMEM, "%s: out of memory", p->g->path); goto done; }
    for (int i = 0; i < p->n_jobs; i++) {
        const struct gguf_tensor *t = p->jobs[i].t;
        ts[i] = (struct st_wtensor){.name = p->jobs[i].hf, .dtype = p->bf16 ? ST_BF16 : ST_F32, .ndim = t->n_dims};
        for (int d = 0; d < t->n_dims; d++) ts[i].shape[d] = t->ne[t->n_dims - 1 - d]; // ggml ne is reversed
    }
    p->pg = progress_open("import-gguf", PROGRESS_COUNT, "tensors", p->n_jobs, -1, NULL);
    if ((rc = config_text(p, prov_json, &cfg, e)) || (rc = mkdir_p(out_dir, e)) ||
        (rc = path_join(path, sizeof path, out_dir, "model.safetensors", e)) ||
        (rc = st_write_stream(path, ts, p->n_jobs, meta, n_meta, (struct st_fill){fill, p}, e)) ||
        (rc = write_text(out_dir, "config.json", cfg, e)) ||
        (rc = write_text(out_dir, "tokenizer.json", tok->tokenizer_json, e)) ||
        (rc = write_text(out_dir, "tokenizer_config.json", tok->config_json, e)))
        goto done;
done:
    progress_close(p->pg);
    p->pg = NULL;
    for (int i = 0; rc && created && i < 4; i++) {
        static const char *const written[] = {"model.safetensors", "config.json", "tokenizer.json", "tokenizer_config.json"};
        struct err le = {0};
        if (!path_join(path, sizeof path, out_dir, written[i], &le)) unlink(path);
        if (i == 3) rmdir(out_dir);
    }
    free(cfg);
    free(ts);
    return rc;
}

static void plan_free(struct plan *p) {
    free(p->jobs);
    free(p->scratch);
    free(p->perm);
    gguf_close(&p->own);
}

// Architecture, config and tensor plan of p->g (already parsed).
static int make_plan(struct plan *p, struct err *e) {
    int rc;
    struct gguf_str a = {0};
    if ((rc = gguf_get_str(p->g, "general.architecture", &a, 1, e))) return rc;
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (strlen(archs[i].gguf) == a.len && !memcmp(archs[i].gguf, a.s, a.len)) {
            snprintf(p->arch_buf, sizeof p->arch_buf, "%s", archs[i].gguf);
            p->A = p->arch_buf, p->abit = archs[i].bit, p->c.arch = archs[i].arch;
        }
    if (!p->A)
        return err_set(e, ERR_UNSUPPORTED, "%s: key 'general.architecture' = '%.*s' is not supported (supported: %s)",
                       p->g->path, (int)(a.len < 40 ? a.len : 40), a.s, gguf_import_arch_names());
    if ((rc = read_config(p, e)) || (rc = build_plan(p, e))) return rc;
    return 0;
}

int gguf_import(const char *gguf_path, const char *out_dir, const struct gguf_import_opts *o,
                struct gguf_import_info *info, struct err *e) {
    struct plan p;
    struct gguf_tok_out tok = {0};
    struct gguf_import_info inf = {0};
    memset(&p, 0, sizeof p);
    p.bf16 = o && o->bf16;
    p.g = &p.own;
    int rc = gguf_open(&p.own, gguf_path, e);
    if (rc || (rc = make_plan(&p, e))) goto done;
    if ((rc = gguf_tokenizer_build(p.g, o ? o->tok_policy : GGUF_TOK_PUBLISHED, &tok, e))) goto done;
    if (tok.n_vocab > p.c.vocab_size) {
        rc = err_set(e, ERR_FORMAT, "%s: %d tokens but token_embd.weight has only %d rows", p.g->path, tok.n_vocab,
                     p.c.vocab_size);
        goto done;
    }
    p.c.bos_id = tok.bos_id, p.c.eos_id = tok.eos_id;
    int64_t ft = -1;
    struct err ig = {0};
    gguf_get_int(p.g, "general.file_type", &ft, 0, &ig);
    char base[256], ver[16];
    path_basename(base, sizeof base, gguf_path);
    snprintf(inf.arch, sizeof inf.arch, "%s", cfg_arch_name(p.c.arch));
    gguf_sha256(p.g, inf.sha256);
    type_counts(&p, inf.types, sizeof inf.types);
    file_type_name(ft, inf.file_type, sizeof inf.file_type);
    snprintf(ver, sizeof ver, "%u", p.g->version);
    inf.n_tensors = p.n_jobs, inf.tied = p.c.tie_embeddings, inf.n_vocab = tok.n_vocab;
    const char *wdt = p.bf16 ? "BF16 (dequantized to F32, then rounded to nearest even)" : "F32 (dequantized exactly)";
    const char *perm = p.c.arch == ARCH_LLAMA ? "llama.cpp Q/K row permutation undone" : "none";
    const char *pol = o && o->tok_policy == GGUF_TOK_TRANSFORMERS ? "transformers" : "published";
    const char *meta[] = {"format", "pt", "source", "GGUF import (hifa4-eval import-gguf)", "gguf_file", base,
                          "gguf_sha256", inf.sha256, "gguf_version", ver, "gguf_architecture", p.A,
                          "gguf_file_type", inf.file_type, "gguf_tensor_types", inf.types, "weights", wdt,
                          "qk_permutation", perm, "tokenizer_policy", pol};
    cJSON *pj = cJSON_CreateObject();
    for (int i = 4; i < 22; i += 2) cJSON_AddStringToObject(pj, meta[i], meta[i + 1]);
    char *pjs = cJSON_PrintUnformatted(pj);
    cJSON_Delete(pj);
    if (!pjs) { rc = err_set(e, ERR_NOMEM, "%s: out of memory", p.g->path); goto done; }
    rc = write_all(&p, out_dir, &tok, meta, 11, pjs, e);
    free(pjs);
    if (!rc && info) *info = inf;
done:
    gguf_tok_out_free(&tok);
    plan_free(&p);
    return rc;
}

int gguf_import_check(const struct gguf *g, enum gguf_tok_policy policy, struct err *e) {
    struct plan p;
    struct gguf_tok_out tok = {0};
    memset(&p, 0, sizeof p);
    p.g = g;
    int rc = make_plan(&p, e);
    if (!rc) rc = gguf_tokenizer_build(g, policy, &tok, e);
    gguf_tok_out_free(&tok);
    plan_free(&p);
    return rc;
}
