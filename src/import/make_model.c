// make_model.c: synthetic checkpoints (see make_model.h; the byte-level BPE tokenizer they
// ship is make_tokenizer.c). Weights: each tensor from its own splitmix64 stream (seed ^ hash(name)), so
// a tensor does not depend on the others; Gaussian via Box-Muller in binary64, stored bf16.
#include "import/make_model.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/json_util.h"
#include "base/pool.h"
#include "import/make_internal.h"
#include "io/safetensors.h"

void make_model_opts_default(struct make_model_opts *o) {
    memset(o, 0, sizeof *o);
    o->arch = ARCH_QWEN3;
    o->n_layers = 2, o->dim = 128, o->n_heads = 4, o->n_kv_heads = 2, o->head_dim = 0;
    o->hidden_dim = 256, o->vocab_size = 0, o->max_seq = 4096, o->tied = -1, o->seed = 1;
}

// ---- PRNG ----
static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double uniform01(uint64_t *s) { return ((splitmix(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

// dst[i] = bf16(mean + std * N(0,1)) from one splitmix64 stream seeded by (seed, name): pair
// (2p, 2p+1) uses draws 2p and 2p+1. splitmix64's state is a counter, so a block starting at
// element i0 starts at state base + i0 * increment: blocks fill in parallel and the bytes are
// those of the sequential stream (checkpoints stay identical to earlier builds' ones).
#define FILL_BLOCK ((size_t)1 << 16)
struct fill_job { uint16_t *dst; size_t n; double mean, std; uint64_t base; };
static void fill_block(void *ctx, int b, int slot) {
    (void)slot;
    const struct fill_job *j = ctx;
    const size_t i0 = (size_t)b * FILL_BLOCK, i1 = i0 + FILL_BLOCK < j->n ? i0 + FILL_BLOCK : j->n;
    uint64_t s = j->base + 0x9e3779b97f4a7c15ull * (uint64_t)i0;
    for (size_t i = i0; i < i1; i += 2) {
        double u1 = uniform01(&s), u2 = uniform01(&s), r = sqrt(-2.0 * log(u1));
        j->dst[i] = f32_to_bf16((float)(j->mean + j->std * r * cos(2 * HIFA4_PI * u2)));
        if (i + 1 < i1) j->dst[i + 1] = f32_to_bf16((float)(j->mean + j->std * r * sin(2 * HIFA4_PI * u2)));
    }
}
static void fill_normal(uint16_t *dst, size_t n, double mean, double std, uint64_t seed, const char *name) {
    struct fill_job j = {dst, n, mean, std, seed ^ fnv1a(name)};
    pool_for((int)((n + FILL_BLOCK - 1) / FILL_BLOCK), fill_block, &j, 0);
}

// ---- config ----
int make_model_config(const struct make_model_opts *o, struct model_config *c, struct err *e) {
    memset(c, 0, sizeof *c);
    if (o->arch < 0 || o->arch >= ARCH_COUNT) return err_set(e, ERR_USAGE, "make-model: bad architecture %d", o->arch);
    if (o->n_layers <= 0 || o->n_layers > CFG_MAX_LAYERS || o->dim <= 0 || o->dim > 65536 || o->n_heads <= 0 ||
        o->n_kv_heads <= 0 || o->hidden_dim <= 0 || o->hidden_dim > 1 << 20 || o->vocab_size < 257 ||
        o->vocab_size > 1 << 22 || o->max_seq <= 0)
        return err_set(e, ERR_USAGE, "make-model: sizes out of range (layers %d, dim %d, heads %d/%d, ffn %d, vocab %d >= 257)",
                       o->n_layers, o->dim, o->n_heads, o->n_kv_heads, o->hidden_dim, o->vocab_size);
    if (o->n_heads % o->n_kv_heads)
        return err_set(e, ERR_USAGE, "make-model: --heads %d not a multiple of --kv-heads %d", o->n_heads, o->n_kv_heads);
    int hd = o->head_dim ? o->head_dim : o->dim / o->n_heads;
    if (hd <= 0 || hd % 8 || hd > 1024)
        return err_set(e, ERR_USAGE, "make-model: head_dim %d must be a positive multiple of 8 (<= 1024)", hd);
    c->arch = (enum model_arch)o->arch;
    c->dim = o->dim, c->hidden_dim = o->hidden_dim, c->n_layers = o->n_layers, c->n_heads = o->n_heads;
    c->n_kv_heads = o->n_kv_heads, c->head_dim = hd, c->vocab_size = o->vocab_size, c->max_seq = o->max_seq;
    c->norm_eps = 1e-6;
    c->act = ACT_SILU;
    c->rope_theta = 10000.0, c->rope_dim = hd, c->rope_type = ROPE_DEFAULT, c->rope_factor = 1, c->rope_attn_factor = 1;
    c->query_pre_attn_scalar = hd;
    c->bos_id = c->eos_id = o->vocab_size - 1; // our tokenizer's <|endoftext|>
    int tied = 0;
    switch (c->arch) {
    case ARCH_QWEN3: c->qk_norm = 1; c->rope_theta = 1e6; tied = 1; break;
    case ARCH_QWEN2: c->qkv_bias = 1; c->rope_theta = 1e6; tied = 1; break;
    case ARCH_LLAMA: // Llama 3.1 rope scaling
        c->rope_theta = 500000.0, c->rope_type = ROPE_LLAMA3, c->rope_factor = 8, c->rope_low_freq = 1;
        c->rope_high_freq = 4, c->rope_orig_max = o->max_seq >= 16 ? o->max_seq / 16 : 1;
        break;
    case ARCH_MISTRAL:
        for (int l = 0; l < c->n_layers; l++) c->window[l] = 4096;
        break;
    case ARCH_GEMMA2:
        c->norm_plus_one = c->sandwich_norm = 1, c->embed_scale = EMBED_SQRT;
        c->act = ACT_GELU_TANH, c->attn_softcap = 50, c->final_softcap = 30;
        for (int l = 0; l < c->n_layers; l += 2) c->window[l] = 4096;
        tied = 1;
        break;
    case ARCH_GEMMA3: // Gemma 3 270M style: q/k norms, window 512 but on every 6th layer, two RoPE bases
        c->qk_norm = c->norm_plus_one = c->sandwich_norm = 1, c->embed_scale = EMBED_SQRT_F32;
        c->act = ACT_GELU_TANH, c->rope_theta = 1e6, c->rope_local_theta = 10000.0;
        for (int l = 0; l < c->n_layers; l++) c->window[l] = (l + 1) % 6 ? 512 : 0;
        tied = 1;
        break;
    case ARCH_PHI3: { // Phi-4-mini style: partial rotary 0.75 + longrope
        c->fused_qkv = c->fused_gate_up = 1;
        c->norm_eps = 1e-5;
        c->rope_dim = hd * 3 / 4;
        if (c->rope_dim % 2) return err_set(e, ERR_USAGE, "make-model: phi3 needs head_dim*0.75 even (head_dim %d)", hd);
        c->rope_type = ROPE_LONGROPE;
        c->n_rope_factors = c->rope_dim / 2;
        c->rope_orig_max = o->max_seq >= 32 ? o->max_seq / 32 : 1;
        c->rope_factor = (double)o->max_seq / c->rope_orig_max;
        c->rope_attn_factor = c->rope_factor <= 1 ? 1.0 : sqrt(1 + log(c->rope_factor) / log((double)c->rope_orig_max));
        for (int i = 0; i < c->n_rope_factors; i++) {
            c->rope_short[i] = 1.0 + 0.5 * i / c->n_rope_factors;
            c->rope_long[i] = 1.0 + 8.0 * i / c->n_rope_factors;
        }
        tied = 1;
        break;
    }
    default: break;
    }
    c->tie_embeddings = o->tied >= 0 ? o->tied : tied;
    if (o->n_outliers && !c->qk_norm)
        return err_set(e, ERR_USAGE, "make-model: --plant-outlier sets q/k norm weights (qwen3, gemma3); arch %s has none",
                       cfg_arch_short(c->arch));
    for (int i = 0; i < o->n_outliers; i++)
        if (o->outliers[i].layer < 0 || o->outliers[i].layer >= c->n_layers || o->outliers[i].channel < 0 ||
            o->outliers[i].channel >= hd || !isfinite(o->outliers[i].gamma))
            return err_set(e, ERR_USAGE, "make-model: --plant-outlier %d:%d:%g outside %d layers x head_dim %d",
                           o->outliers[i].layer, o->outliers[i].channel, o->outliers[i].gamma, c->n_layers, hd);
    if (o->n_k_bias && !c->qkv_bias)
        return err_set(e, ERR_USAGE, "make-model: --plant-k-bias sets k_proj biases (qwen2); arch %s has none",
                       cfg_arch_short(c->arch));
    for (int i = 0; i < o->n_k_bias; i++)
        if (o->k_bias[i].layer < 0 || o->k_bias[i].layer >= c->n_layers || o->k_bias[i].channel < 0 ||
            o->k_bias[i].channel >= c->n_kv_heads * hd || !isfinite(o->k_bias[i].value))
            return err_set(e, ERR_USAGE, "make-model: --plant-k-bias %d:%d:%g outside %d layers x %d kv channels",
                           o->k_bias[i].layer, o->k_bias[i].channel, o->k_bias[i].value, c->n_layers, c->n_kv_heads * hd);
    return 0;
}

// ---- weights ----
// Tensor specs first (names, shapes, distributions), data generated shard by shard so memory
// stays bounded by one shard (an 8B model is written in ~2 GB pieces).
struct wspec {
    char name[128];
    int64_t rows, cols;   // cols 0: vector
    double mean, std;
    int plant_layer;      // >= 0: q_norm / k_norm of this layer (outliers applied)
    int plant_k;          // 1: k_norm (gain of the channel = gamma), 0: q_norm (gain 0.1), 2: k_proj bias
};
struct wlist {
    struct wspec *t;
    int n, cap;
};

// Appends a (rows, cols) matrix (cols 0: a vector) of N(mean, std) values; no outlier planted
// (the caller sets plant_layer / plant_k of the q_norm and k_norm entries).
static int add_tensor(struct wlist *w, const char *name, int64_t rows, int64_t cols, double mean, double std,
                      struct err *e) {
    if (w->n == w->cap) return err_set(e, ERR_INTERNAL, "make-model: tensor list full");
    struct wspec *t = &w->t[w->n++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->rows = rows, t->cols = cols, t->mean = mean, t->std = std, t->plant_layer = -1;
    return 0;
}

static size_t spec_bytes(const struct wspec *t) { return (size_t)t->rows * (size_t)(t->cols ? t->cols : 1) * 2; }

static int build_specs(const struct model_config *c, struct wlist *w, struct err *e) {
    const int D = c->dim, hd = c->head_dim, qd = c->n_heads * hd, kd = c->n_kv_heads * hd, F = c->hidden_dim;
    w->cap = 16 * c->n_layers + 8;
    w->t = calloc((size_t)w->cap, sizeof *w->t);
    if (!w->t) return err_set(e, ERR_NOMEM, "make-model: out of memory");
    // norm weights: 1 + 0.1 N(0,1) (Gemma2 stores w of (1 + w): 0.1 N(0,1)); matrices N(0, 1/fan_in)
    const double nm = c->norm_plus_one ? 0.0 : 1.0, ns = 0.1;
    const double sD = 1 / sqrt((double)D), sF = 1 / sqrt((double)F), sQ = 1 / sqrt((double)qd);
    char n[128];
    int rc = 0;
#define T2(fmt, r, cc, mean, std)                                                        \
    do {                                                                                 \
        snprintf(n, sizeof n, fmt, l);                                                   \
        if ((rc = add_tensor(w, n, r, cc, mean, std, e))) return rc;                \
    } while (0)
    if ((rc = add_tensor(w, "model.embed_tokens.weight", c->vocab_size, D, 0, 1.0, e))) return rc;
    for (int l = 0; l < c->n_layers; l++) {
        T2("model.layers.%d.input_layernorm.weight", D, 0, nm, ns);
        if (c->fused_qkv) T2("model.layers.%d.self_attn.qkv_proj.weight", qd + 2 * kd, D, 0, sD);
        else {
            T2("model.layers.%d.self_attn.q_proj.weight", qd, D, 0, sD);
            T2("model.layers.%d.self_attn.k_proj.weight", kd, D, 0, sD);
            T2("model.layers.%d.self_attn.v_proj.weight", kd, D, 0, sD);
        }
        if (c->qkv_bias) {
            T2("model.layers.%d.self_attn.q_proj.bias", qd, 0, 0, 0.1);
            T2("model.layers.%d.self_attn.k_proj.bias", kd, 0, 0, 0.1);
            w->t[w->n - 1].plant_layer = l;
            w->t[w->n - 1].plant_k = 2;
            T2("model.layers.%d.self_attn.v_proj.bias", kd, 0, 0, 0.1);
        }
        T2("model.layers.%d.self_attn.o_proj.weight", D, qd, 0, sQ);
        if (c->o_bias) T2("model.layers.%d.self_attn.o_proj.bias", D, 0, 0, 0.1);
        if (c->qk_norm) {
            // A planted K outlier mirrors Qwen3-8B (paper Table 1/8: gamma_K,51 ~ 34 while the
            // query channel stays small, T_KQ ~ 14) and the goldens' qwen3-outlier generator:
            // k_norm[c] = gamma and q_norm[c] = 0.1. Without the small q_norm the outlier
            // channel dominates every score and no 4-bit mode can be told apart. Gamma and 0.1
            // are the gains: Gemma 3 stores w of (1 + w), so there w = gamma - 1 and -0.9.
            T2("model.layers.%d.self_attn.q_norm.weight", hd, 0, nm, ns);
            w->t[w->n - 1].plant_layer = l;
            T2("model.layers.%d.self_attn.k_norm.weight", hd, 0, nm, ns);
            w->t[w->n - 1].plant_layer = l;
            w->t[w->n - 1].plant_k = 1;
        }
        T2("model.layers.%d.post_attention_layernorm.weight", D, 0, nm, ns);
        if (c->sandwich_norm) {
            T2("model.layers.%d.pre_feedforward_layernorm.weight", D, 0, nm, ns);
            T2("model.layers.%d.post_feedforward_layernorm.weight", D, 0, nm, ns);
        }
        if (c->fused_gate_up) T2("model.layers.%d.mlp.gate_up_proj.weight", 2 * F, D, 0, sD);
        else {
            T2("model.layers.%d.mlp.gate_proj.weight", F, D, 0, sD);
            T2("model.layers.%d.mlp.up_proj.weight", F, D, 0, sD);
        }
        T2("model.layers.%d.mlp.down_proj.weight", D, F, 0, sF);
        if (c->mlp_bias) {
            T2("model.layers.%d.mlp.gate_proj.bias", F, 0, 0, 0.1);
            T2("model.layers.%d.mlp.up_proj.bias", F, 0, 0, 0.1);
            T2("model.layers.%d.mlp.down_proj.bias", D, 0, 0, 0.1);
        }
    }
#undef T2
    if ((rc = add_tensor(w, "model.norm.weight", D, 0, nm, ns, e))) return rc;
    if (!c->tie_embeddings && (rc = add_tensor(w, "lm_head.weight", c->vocab_size, D, 0, sD, e))) return rc;
    return 0;
}

// Writes tensors [i0, i1) of w to path (data generated here and freed after writing).
static int write_shard(const struct make_model_opts *o, const struct wlist *w, int i0, int i1, const char *path,
                       struct err *e) {
    const int n = i1 - i0;
    struct st_wtensor *ts = calloc((size_t)n, sizeof *ts);
    uint16_t **bufs = calloc((size_t)n, sizeof *bufs);
    int rc = 0;
    if (!ts || !bufs) { rc = err_set(e, ERR_NOMEM, "make-model: out of memory"); goto done; }
    for (int k = 0; k < n; k++) {
        const struct wspec *t = &w->t[i0 + k];
        const size_t numel = spec_bytes(t) / 2;
        if (!(bufs[k] = malloc(numel * 2))) {
            rc = err_set(e, ERR_NOMEM, "make-model: out of memory for %s (%zu elements)", t->name, numel);
            goto done;
        }
        fill_normal(bufs[k], numel, t->mean, t->std, o->seed, t->name);
        for (int p = 0; t->plant_k == 2 && p < o->n_k_bias; p++)
            if (o->k_bias[p].layer == t->plant_layer) bufs[k][o->k_bias[p].channel] = f32_to_bf16(o->k_bias[p].value);
        for (int p = 0; t->plant_layer >= 0 && t->plant_k < 2 && p < o->n_outliers; p++)
            if (o->outliers[p].layer == t->plant_layer)
                // stored = gain - (1 - mean): a norm's mean weight is its gain-1 value (1 for w, 0 for Gemma's w of 1 + w)
                bufs[k][o->outliers[p].channel] = f32_to_bf16((t->plant_k ? o->outliers[p].gamma : 0.1f) - (float)(1 - t->mean));
        ts[k] = (struct st_wtensor){.name = t->name, .dtype = ST_BF16, .ndim = t->cols ? 2 : 1,
                                    .shape = {t->rows, t->cols}, .data = bufs[k]};
    }
    char seed_s[32];
    snprintf(seed_s, sizeof seed_s, "%llu", (unsigned long long)o->seed);
    const char *meta[] = {"format", "pt", "generator", "hifa4-eval make-model", "seed", seed_s};
    rc = st_write(path, ts, n, meta, 3, e);
done:
    for (int k = 0; bufs && k < n; k++) free(bufs[k]);
    free(bufs);
    free(ts);
    return rc;
}

// model.safetensors, or model-0000K-of-0000N.safetensors + model.safetensors.index.json when
// the weights exceed the shard size (HF layout).
static int write_weights(const struct make_model_opts *o, const struct model_config *c, const char *dir, struct err *e) {
    struct wlist w = {0};
    cJSON *idx = NULL;
    char *txt = NULL;
    int rc = build_specs(c, &w, e);
    if (rc) goto done;
    const size_t limit = o->shard_bytes ? o->shard_bytes : MAKE_SHARD_BYTES;
    int starts[ST_MAX_FILES + 1], n_sh = 0;
    size_t acc = 0, total = 0;
    for (int i = 0; i < w.n; i++) {
        const size_t b = spec_bytes(&w.t[i]);
        if (i == 0 || (acc + b > limit && acc > 0)) {
            if (n_sh == ST_MAX_FILES) { rc = err_set(e, ERR_RANGE, "make-model: more than %d shards", ST_MAX_FILES); goto done; }
            starts[n_sh++] = i;
            acc = 0;
        }
        acc += b;
        total += b;
    }
    starts[n_sh] = w.n;
    char path[4096], fname[64];
    if (n_sh == 1) {
        if ((rc = path_join(path, sizeof path, dir, "model.safetensors", e))) goto done;
        rc = write_shard(o, &w, 0, w.n, path, e);
        goto done;
    }
    idx = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(idx, "metadata");
    cJSON_AddNumberToObject(meta, "total_size", (double)total);
    cJSON *map = cJSON_AddObjectToObject(idx, "weight_map");
    for (int s = 0; s < n_sh; s++) {
        snprintf(fname, sizeof fname, "model-%05d-of-%05d.safetensors", s + 1, n_sh);
        if ((rc = path_join(path, sizeof path, dir, fname, e))) goto done;
        if ((rc = write_shard(o, &w, starts[s], starts[s + 1], path, e))) goto done;
        for (int i = starts[s]; i < starts[s + 1]; i++) cJSON_AddStringToObject(map, w.t[i].name, fname);
    }
    if (!(txt = cJSON_Print(idx))) { rc = err_set(e, ERR_NOMEM, "make-model: out of memory"); goto done; }
    if ((rc = path_join(path, sizeof path, dir, "model.safetensors.index.json", e))) goto done;
    rc = file_write_atomic(path, txt, strlen(txt), e);
done:
    free(txt);
    cJSON_Delete(idx);
    free(w.t);
    return rc;
}

// ---- copying a real tokenizer ----
static const char *tok_files[] = {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"};

// Vocabulary size of a tokenizer.json: 1 + the largest id in model.vocab and added_tokens.
static int tokenizer_vocab(const cJSON *root, const char *ctx, int *n, struct err *e) {
    const cJSON *model = NULL, *vocab = NULL, *added = NULL, *x;
    int rc;
    if ((rc = json_need_obj(root, "model", &model, ctx, e))) return rc;
    vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    int mx = -1;
    if (cJSON_IsObject(vocab)) {
        cJSON_ArrayForEach(x, vocab) if (cJSON_IsNumber(x) && x->valuedouble > mx) mx = (int)x->valuedouble;
    } else if (cJSON_IsArray(vocab)) { // Unigram: [[piece, score], ...]
        mx = cJSON_GetArraySize(vocab) - 1;
    } else {
        return err_set(e, ERR_FORMAT, "%s: field 'model.vocab': expected object or array", ctx);
    }
    if ((rc = json_opt_arr(root, "added_tokens", &added, ctx, e))) return rc;
    if (added) {
        cJSON_ArrayForEach(x, added) {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(x, "id");
            if (cJSON_IsNumber(id) && id->valuedouble > mx) mx = (int)id->valuedouble;
        }
    }
    if (mx < 0 || mx >= 1 << 22) return err_set(e, ERR_FORMAT, "%s: cannot determine the vocabulary size", ctx);
    *n = mx + 1;
    return 0;
}

// id of a special token named in tokenizer_config.json ("bos_token": "..." or {"content": ...}).
static int special_id(const cJSON *tcfg, const cJSON *tok, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(tcfg, key);
    if (cJSON_IsObject(v)) v = cJSON_GetObjectItemCaseSensitive(v, "content");
    if (!cJSON_IsString(v)) return -1;
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(tok, "added_tokens"), *x;
    cJSON_ArrayForEach(x, added) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(x, "content"), *id = cJSON_GetObjectItemCaseSensitive(x, "id");
        if (cJSON_IsString(c) && cJSON_IsNumber(id) && !strcmp(c->valuestring, v->valuestring)) return (int)id->valuedouble;
    }
    return -1;
}

// Reads src's tokenizer.json (or .json.zst): vocabulary size and the bos/eos ids named in
// tokenizer_config.json; with `write`, copies the tokenizer files into dst.
static int copy_tokenizer(const char *src, const char *dst, int write, int *vocab, int *bos, int *eos, struct err *e) {
    char p[4096], q[4096];
    int rc = 0;
    char *buf = NULL;
    size_t len = 0;
    cJSON *tok = NULL, *tcfg = NULL;
    *bos = *eos = -1;
    if ((rc = path_join(p, sizeof p, src, "tokenizer.json", e))) return rc;
    if (!file_exists(p) && (rc = path_join(p, sizeof p, src, "tokenizer.json.zst", e))) return rc;
    if ((rc = file_read_all(p, &buf, &len, e))) return rc;
    if ((rc = json_parse(&tok, buf, len, p, e))) goto done;
    if ((rc = tokenizer_vocab(tok, p, vocab, e))) goto done;
    if (write && ((rc = path_join(q, sizeof q, dst, "tokenizer.json", e)) || (rc = file_write_atomic(q, buf, len, e))))
        goto done;
    for (size_t i = 1; i < sizeof tok_files / sizeof *tok_files; i++) {
        if ((rc = path_join(p, sizeof p, src, tok_files[i], e))) goto done;
        if (!file_exists(p)) continue;
        free(buf);
        buf = NULL;
        if ((rc = file_read_all(p, &buf, &len, e))) goto done;
        if (write && ((rc = path_join(q, sizeof q, dst, tok_files[i], e)) || (rc = file_write_atomic(q, buf, len, e))))
            goto done;
        if (i == 1 && !json_parse(&tcfg, buf, len, p, e)) {
            *bos = special_id(tcfg, tok, "bos_token");
            *eos = special_id(tcfg, tok, "eos_token");
        }
    }
done:
    cJSON_Delete(tcfg);
    cJSON_Delete(tok);
    free(buf);
    return rc;
}

int make_model(const struct make_model_opts *o, const char *out_dir, struct err *e) {
    struct make_model_opts oo = *o;
    struct model_config c;
    char path[4096], *json = NULL, extra[256];
    int rc, bos = -1, eos = -1, tv = 0;
    if ((rc = mkdir_p(out_dir, e))) return rc;
    if (o->tokenizer_dir) {
        if ((rc = copy_tokenizer(o->tokenizer_dir, out_dir, !o->config_only, &tv, &bos, &eos, e))) return rc;
        if (oo.vocab_size && oo.vocab_size < tv)
            return err_set(e, ERR_USAGE, "make-model: --vocab %d smaller than the tokenizer's %d tokens (%s)", oo.vocab_size,
                           tv, o->tokenizer_dir);
        if (!oo.vocab_size) oo.vocab_size = tv;
    }
    if (!oo.vocab_size) oo.vocab_size = 512;
    if ((rc = make_model_config(&oo, &c, e))) return rc;
    if (o->tokenizer_dir) c.bos_id = bos, c.eos_id = eos;
    if (!o->tokenizer_dir && !o->config_only) {
        if ((rc = make_tokenizer_json(c.vocab_size, &json, e))) return rc;
        if ((rc = path_join(path, sizeof path, out_dir, "tokenizer.json", e)) ||
            (rc = file_write_atomic(path, json, strlen(json), e)))
            goto done;
        free(json);
        json = NULL;
    }
    snprintf(extra, sizeof extra, "{\"_synthetic\": {\"generator\": \"hifa4-eval make-model\", \"seed\": %llu, \"n_outliers\": %d}}",
             (unsigned long long)o->seed, o->n_outliers);
    if ((rc = cfg_to_json(&c, extra, &json, e))) goto done;
    if ((rc = path_join(path, sizeof path, out_dir, "config.json", e)) ||
        (rc = file_write_atomic(path, json, strlen(json), e)))
        goto done;
    if (o->config_only) goto done;
    rc = write_weights(&oo, &c, out_dir, e);
done:
    free(json);
    return rc;
}
