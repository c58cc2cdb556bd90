// test_gguf_import.c: import-gguf. (1) Round trips: a make-model checkpoint of each architecture
// is written as a GGUF the way llama.cpp's convert_hf_to_gguf.py writes one (names, Q/K row
// permutation for llama, Gemma's +1 norms, Llama 3 rope_freqs, Phi-3 LongRoPE factor tensors,
// the tokenizer as tokenizer.ggml.*), imported back, and must give the original's tensors and
// logits. (2) Refusals of GGUF files that parse but are not a model we can run. (3) The
// SentencePiece path on stories260K's vocabulary (../shared). (4) The real SmolLM2-135M Q4_1
// (looked up in the demo's cache; skipped with the reason when absent): every tensor's
// dequantization against gguf-py hashes, logits against transformers float32, tokenizer ids of
// 320 strings against transformers / the published tokenizer, ARC-Easy option log-likelihoods
// against lm-eval (references in tests/data/gguf/, generators in tests/gen/smollm2/).
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "base/json_util.h"
#include "base/paths.h"
#include "base/sha256.h"
#include "eval/eval.h"
#include "eval/tasks/task.h"
#include "import/gguf_import.h"
#include "import/make_model.h"
#include "io/ggml_quants.h"
#include "io/gguf.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "tokenizer/llama2c_vocab.h"
#include "tokenizer/tokenizer.h"
#include "gguf_build.h"
#include "runplan/model_arg.h"
#include "net/pypi.h"
#include "test.h"

static char tmp[1024];
static const char *tpath(const char *name) {
    static char buf[8][1200];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmp, name);
    return buf[k];
}

// ---- outside data: the one place tests look for files that are not in the repository ----
// SmolLM2 lives where `make demo` caches it ($HIFA4_CACHE or ~/.cache/hifa4, gguf/); ../shared
// holds stories260K. Returns the path, or NULL after printing why the test is skipped.
static const char *outside_data(const char *what, char *buf, size_t n) {
    struct err e = {0};
    char root[1024];
    if (!strcmp(what, "smollm2")) {
        if (paths_cache(root, sizeof root, &e)) { printf("skip SmolLM2 tests: no cache directory (%s)\n", e.msg); return NULL; }
        snprintf(buf, n, "%s/gguf/SmolLM2-135M-Instruct.Q4_1.gguf", root);
        if (!file_exists(buf)) { TEST_NEED_REAL_MODEL("SmolLM2-135M", buf, "scripts/fetch_smollm2.sh"); return NULL; }
        return buf;
    }
    if (!strcmp(what, "arc_easy")) {
        snprintf(buf, n, "../shared/datasets");
        if (!file_exists("../shared/datasets/arc/genmc/arc_easy/official/test.jsonl")) {
            printf("skip ARC-Easy request tokens: ../shared/datasets/arc/genmc/arc_easy/official/test.jsonl not found\n");
            return NULL;
        }
        return buf;
    }
    snprintf(buf, n, "../shared/models/stories260K/tok512.bin");
    if (!file_exists(buf)) { printf("skip SentencePiece GGUF test: %s not found\n", buf); return NULL; }
    return buf;
}

// ---- a GGUF writer in llama.cpp's conventions (independent of src/import/) ----
struct hf {
    struct model_config c;
    struct safetensors st;
    cJSON *tok; // tokenizer.json
};

static float *tensor_f32(const struct safetensors *st, const char *name, int64_t *n) {
    const struct st_tensor *t = st_find(st, name);
    if (!t) return NULL;
    float *f = malloc(sizeof(float) * (size_t)(t->numel ? t->numel : 1));
    struct err e = {0};
    st_to_f32(f, t, &e);
    *n = t->numel;
    return f;
}

// HF name -> llama.cpp name ("blk.L.x" for layer tensors), or NULL to leave the tensor out.
static int gguf_name(char *out, size_t n, const char *hf, enum model_arch arch) {
    static const char *const map[][2] = {
        {"input_layernorm.weight", "attn_norm.weight"}, {"self_attn.q_proj.weight", "attn_q.weight"},
        {"self_attn.k_proj.weight", "attn_k.weight"}, {"self_attn.v_proj.weight", "attn_v.weight"},
        {"self_attn.o_proj.weight", "attn_output.weight"}, {"self_attn.q_proj.bias", "attn_q.bias"},
        {"self_attn.k_proj.bias", "attn_k.bias"}, {"self_attn.v_proj.bias", "attn_v.bias"},
        {"self_attn.qkv_proj.weight", "attn_qkv.weight"}, {"self_attn.q_norm.weight", "attn_q_norm.weight"},
        {"self_attn.k_norm.weight", "attn_k_norm.weight"}, {"mlp.gate_proj.weight", "ffn_gate.weight"},
        {"mlp.up_proj.weight", "ffn_up.weight"}, {"mlp.gate_up_proj.weight", "ffn_up.weight"},
        {"mlp.down_proj.weight", "ffn_down.weight"}, {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
    };
    int l;
    char rest[128];
    if (!strcmp(hf, "model.embed_tokens.weight")) return snprintf(out, n, "token_embd.weight"), 1;
    if (!strcmp(hf, "model.norm.weight")) return snprintf(out, n, "output_norm.weight"), 1;
    if (!strcmp(hf, "lm_head.weight")) return snprintf(out, n, "output.weight"), 1;
    if (sscanf(hf, "model.layers.%d.%127s", &l, rest) != 2) return 0;
    const char *g = NULL;
    if (!strcmp(rest, "post_attention_layernorm.weight"))
        g = arch == ARCH_GEMMA2 || arch == ARCH_GEMMA3 ? "post_attention_norm.weight" : "ffn_norm.weight";
    else if (!strcmp(rest, "pre_feedforward_layernorm.weight")) g = "ffn_norm.weight";
    for (size_t i = 0; !g && i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(rest, map[i][0])) g = map[i][1];
    if (!g) return 0;
    snprintf(out, n, "blk.%d.%s", l, g);
    return 1;
}

// convert_hf_to_gguf.py LlamaModel.permute: GGUF row h*hd + 2i + j <- HF row h*hd + j*hd/2 + i.
static void permute_fwd(float *dst, const float *src, int heads, int64_t rows, int64_t cols) {
    int64_t hd = rows / heads;
    for (int64_t h = 0; h < heads; h++)
        for (int64_t i = 0; i < hd / 2; i++)
            for (int j = 0; j < 2; j++)
                memcpy(dst + (h * hd + 2 * i + j) * cols, src + (h * hd + j * (hd / 2) + i) * cols, sizeof(float) * (size_t)cols);
}

static const char *arch_key(enum model_arch a) {
    return a == ARCH_QWEN2 ? "qwen2" : a == ARCH_QWEN3 ? "qwen3" : a == ARCH_GEMMA2 ? "gemma2" : a == ARCH_PHI3 ? "phi3"
           : a == ARCH_GEMMA3 ? "gemma3" : "llama";
}

static void meta_kvs(struct gb *kv, uint64_t *n, const struct model_config *c) {
    const char *A = arch_key(c->arch);
    char k[128];
#define KU(name, v) (snprintf(k, sizeof k, "%s." name, A), gb_kv_u32(kv, k, (uint32_t)(v)), (*n)++)
#define KF(name, v) (snprintf(k, sizeof k, "%s." name, A), gb_kv_f32(kv, k, (float)(v)), (*n)++)
    gb_kv_str(kv, "general.architecture", A), (*n)++;
    gb_kv_str(kv, "general.name", "round trip"), (*n)++;
    KU("block_count", c->n_layers);
    KU("context_length", c->max_seq);
    KU("embedding_length", c->dim);
    KU("feed_forward_length", c->hidden_dim);
    KU("attention.head_count", c->n_heads);
    KU("attention.head_count_kv", c->n_kv_heads);
    KU("attention.key_length", c->head_dim);
    KU("attention.value_length", c->head_dim);
    KU("rope.dimension_count", c->rope_dim);
    KF("rope.freq_base", c->rope_theta);
    KF("attention.layer_norm_rms_epsilon", c->norm_eps);
    if (c->arch == ARCH_GEMMA2) {
        KF("attn_logit_softcapping", c->attn_softcap);
        KF("final_logit_softcapping", c->final_softcap);
        KU("attention.sliding_window", c->window[0]);
    }
    if (c->arch == ARCH_GEMMA3) KU("attention.sliding_window", c->window[0]); // llama.cpp's pattern 6 = make-model's
    if (c->rope_type == ROPE_LLAMA3) KU("rope.scaling.original_context_length", c->rope_orig_max);
    if (c->rope_type == ROPE_LONGROPE) {
        KU("rope.scaling.original_context_length", c->rope_orig_max);
        KF("rope.scaling.attn_factor", c->rope_attn_factor);
    }
#undef KU
#undef KF
}

// What to break in the written file (test_refusals).
struct breakage {
    const char *drop;        // leave this GGUF tensor out
    const char *extra;       // add an unknown tensor of this name
    const char *reshape;     // give this tensor one row too many
    const char *retype;      // store this tensor as GGML_Q8_1 (not dequantizable)
    const char *arch;        // general.architecture override
    const char *pre;         // tokenizer.ggml.pre (default "gpt-2")
    int nan_score;           // add tokenizer.ggml.scores with token 5's NaN
    int byte_type;           // type token 5 (not of the form <0xXX>) BYTE
    const char *inf_scale;   // store this tensor as GGML_Q8_0 whose first block scale is inf
    int many_keys;           // add this many metadata keys (a quadratic scan of them took minutes)
};

// tokenizer.ggml.* from a byte-level tokenizer.json (make-model's).
static void tok_kvs(struct gb *kv, uint64_t *n, const cJSON *tj, int bos, const struct breakage *br) {
    const char *pre = br && br->pre ? br->pre : "gpt-2";
    const cJSON *model = cJSON_GetObjectItem(tj, "model"), *voc = cJSON_GetObjectItem(model, "vocab");
    int V = cJSON_GetArraySize(voc);
    const char **toks = calloc((size_t)V, sizeof *toks);
    int32_t *types = malloc(sizeof(int32_t) * (size_t)V);
    const cJSON *it;
    cJSON_ArrayForEach(it, voc) toks[it->valueint] = it->string;
    for (int i = 0; i < V; i++) types[i] = 1;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(tj, "added_tokens")) types[cJSON_GetObjectItem(it, "id")->valueint] = 3;
    const cJSON *mg = cJSON_GetObjectItem(model, "merges");
    int nm = cJSON_GetArraySize(mg), k = 0;
    char **merges = malloc(sizeof(char *) * (size_t)(nm ? nm : 1));
    cJSON_ArrayForEach(it, mg) {
        if (cJSON_IsString(it)) merges[k++] = strdup(it->valuestring);
        else {
            const char *a = cJSON_GetArrayItem(it, 0)->valuestring, *b = cJSON_GetArrayItem(it, 1)->valuestring;
            merges[k] = malloc(strlen(a) + strlen(b) + 2);
            sprintf(merges[k++], "%s %s", a, b);
        }
    }
    gb_kv_str(kv, "tokenizer.ggml.model", "gpt2"), (*n)++;
    if (pre) gb_kv_str(kv, "tokenizer.ggml.pre", pre), (*n)++;
    gb_kv_strs(kv, "tokenizer.ggml.tokens", toks, (size_t)V), (*n)++;
    if (br && br->byte_type) types[5] = 6;
    gb_kv_i32s(kv, "tokenizer.ggml.token_type", types, (size_t)V), (*n)++;
    if (br && br->nan_score) {
        float *sc = calloc((size_t)V, sizeof *sc);
        sc[5] = NAN;
        gb_kv_f32s(kv, "tokenizer.ggml.scores", sc, (size_t)V), (*n)++;
        free(sc);
    }
    for (int i = 0; br && i < br->many_keys; i++) {
        char key[32];
        snprintf(key, sizeof key, "hostile.key.%d", i);
        gb_kv_u32(kv, key, (uint32_t)i), (*n)++;
    }
    gb_kv_strs(kv, "tokenizer.ggml.merges", (const char *const *)merges, (size_t)nm), (*n)++;
    gb_kv_u32(kv, "tokenizer.ggml.bos_token_id", (uint32_t)bos), (*n)++;
    gb_kv_u32(kv, "tokenizer.ggml.eos_token_id", (uint32_t)bos), (*n)++;
    gb_kv_bool(kv, "tokenizer.ggml.add_bos_token", 0), (*n)++;
    for (int i = 0; i < nm; i++) free(merges[i]);
    free(merges), free(toks), free(types);
}


// Llama 3 rope factors as convert_hf_to_gguf.py computes rope_freqs.
static float *llama3_freqs(const struct model_config *c) {
    int n = c->rope_dim / 2;
    float *f = malloc(sizeof(float) * (size_t)n);
    double lw = c->rope_orig_max / c->rope_low_freq, hw = c->rope_orig_max / c->rope_high_freq;
    for (int i = 0; i < n; i++) {
        double freq = 1.0 / pow(c->rope_theta, 2.0 * i / c->rope_dim), wl = 2 * HIFA4_PI / freq;
        if (wl < hw) f[i] = 1;
        else if (wl > lw) f[i] = (float)c->rope_factor;
        else {
            double s = (c->rope_orig_max / wl - c->rope_low_freq) / (c->rope_high_freq - c->rope_low_freq);
            f[i] = (float)(1 / ((1 - s) / c->rope_factor + s));
        }
    }
    return f;
}

// Writes hf_dir (a make-model checkpoint) as out.gguf, all tensors F32, optionally broken.
static int write_gguf(const char *hf_dir, const char *out, const struct breakage *br) {
    struct model_config c;
    struct safetensors st;
    struct err e = {0};
    char p[2048];
    cJSON *tj = NULL;
    snprintf(p, sizeof p, "%s/tokenizer.json", hf_dir);
    if (cfg_load(&c, hf_dir, &e) || st_open(&st, hf_dir, &e) || json_parse_file(&tj, p, &e)) {
        CHECK(0, "write_gguf %s: %s", hf_dir, e.msg);
        return -1;
    }
    struct gb kv = {0};
    uint64_t n_kv = 0;
    meta_kvs(&kv, &n_kv, &c);
    if (br && br->arch) { // replace the first pair (general.architecture)
        struct gb k2 = {0};
        gb_kv_str(&k2, "general.architecture", br->arch);
        size_t first = 8 + strlen("general.architecture") + 4 + 8 + strlen(arch_key(c.arch));
        gb_raw(&k2, kv.b + first, kv.n - first);
        free(kv.b);
        kv = k2;
    }
    tok_kvs(&kv, &n_kv, tj, c.bos_id, br);
    int n = 0, cap = st.n_tensors + 4;
    struct gb_tensor *ts = calloc((size_t)cap, sizeof *ts);
    char (*names)[96] = calloc((size_t)cap, sizeof *names);
    float **bufs = calloc((size_t)cap, sizeof *bufs);
    for (int i = 0; i < st.n_tensors; i++) {
        const struct st_tensor *t = &st.tensors[i];
        if (!gguf_name(names[n], sizeof names[n], t->name, c.arch)) continue;
        if (br && br->drop && !strcmp(br->drop, names[n])) continue;
        int64_t cnt = 0;
        float *f = tensor_f32(&st, t->name, &cnt);
        const char *s = strstr(names[n], ".attn_");
        if (c.arch == ARCH_LLAMA && s && (!strncmp(s, ".attn_q.", 8) || !strncmp(s, ".attn_k.", 8))) {
            float *g = malloc(sizeof(float) * (size_t)cnt);
            int64_t rows = t->shape[0], cols = t->ndim == 2 ? t->shape[1] : 1;
            permute_fwd(g, f, s[6] == 'q' ? c.n_heads : c.n_kv_heads, rows, cols);
            free(f);
            f = g;
        }
        if ((c.arch == ARCH_GEMMA2 || c.arch == ARCH_GEMMA3) && str_ends_with(t->name, "norm.weight"))
            for (int64_t k = 0; k < cnt; k++) f[k] += 1.0f; // convert_hf_to_gguf.py Gemma2Model/Gemma3Model: norm + 1
        bufs[n] = f;
        ts[n] = (struct gb_tensor){names[n], t->ndim, {1, 1, 1, 1}, GGML_F32, f, (size_t)cnt * 4};
        for (int d = 0; d < t->ndim; d++) ts[n].ne[d] = t->shape[t->ndim - 1 - d];
        if (br && br->reshape && !strcmp(br->reshape, names[n])) ts[n].ne[t->ndim - 1]--, ts[n].nbytes = (size_t)(cnt - ts[n].ne[0]) * 4;
        if (br && br->retype && !strcmp(br->retype, names[n])) ts[n].type = GGML_Q8_1, ts[n].nbytes = (size_t)cnt / 32 * 40;
        if (br && br->inf_scale && !strcmp(br->inf_scale, names[n])) { // Q8_0 blocks: f16 scale, 32 int8; all zero
            ts[n].type = GGML_Q8_0, ts[n].nbytes = (size_t)cnt / 32 * 34;
            free(f);
            bufs[n] = f = calloc(ts[n].nbytes, 1);
            ((uint8_t *)f)[1] = 0x7c, ((uint8_t *)f)[2] = 1; // scale +inf (f16 0x7c00), q[0] = 1: inf
            ts[n].data = f;
        }
        n++;
    }
    if (c.rope_type == ROPE_LLAMA3) {
        bufs[n] = llama3_freqs(&c);
        snprintf(names[n], sizeof names[n], "rope_freqs.weight");
        ts[n] = (struct gb_tensor){names[n], 1, {c.rope_dim / 2, 1, 1, 1}, GGML_F32, bufs[n], (size_t)c.rope_dim / 2 * 4};
        n++;
    }
    for (int w = 0; c.rope_type == ROPE_LONGROPE && w < 2; w++) {
        bufs[n] = malloc(sizeof(float) * (size_t)c.n_rope_factors);
        for (int i = 0; i < c.n_rope_factors; i++) bufs[n][i] = (float)(w ? c.rope_short[i] : c.rope_long[i]);
        snprintf(names[n], sizeof names[n], w ? "rope_factors_short.weight" : "rope_factors_long.weight");
        ts[n] = (struct gb_tensor){names[n], 1, {c.n_rope_factors, 1, 1, 1}, GGML_F32, bufs[n], (size_t)c.n_rope_factors * 4};
        n++;
    }
    static float extra[64];
    if (br && br->extra) ts[n++] = (struct gb_tensor){br->extra, 1, {64, 1, 1, 1}, GGML_F32, extra, 256};
    size_t size;
    uint8_t *file = gguf_build(&kv, n_kv, ts, n, 32, &size);
    int rc = file_write_atomic(out, file, size, &e);
    CHECK(rc == 0, "write %s: %s", out, e.msg);
    for (int i = 0; i < cap; i++) free(bufs[i]);
    free(file), free(kv.b), free(ts), free(names), free(bufs);
    cJSON_Delete(tj);
    st_close(&st);
    return rc;
}

// ---- running models ----
static float *logits(const char *dir, const int32_t *ids, int T, const char *attn, int *V) {
    struct err e = {0};
    struct model_opts o;
    model_opts_default(&o);
    o.act_bf16 = 0;
    o.max_tokens = T;
    o.n_threads = 2;
    struct model *m = NULL;
    struct attn_ctx *ctx = NULL;
    if (model_open(&m, dir, &o, &e) || model_attn_open(&ctx, m, attn, NULL, NULL, &e)) {
        CHECK(0, "model %s: %s", dir, e.msg);
        model_free(m);
        return NULL;
    }
    *V = model_cfg(m)->vocab_size;
    int *pos = malloc(sizeof(int) * (size_t)T);
    float *lg = malloc(sizeof(float) * (size_t)T * (size_t)*V);
    for (int i = 0; i < T; i++) pos[i] = i;
    const struct model_batch b = {.tokens = ids, .n_seq = 1, .seq_len = &T, .out_pos = pos, .n_out = T};
    int rc = model_forward(m, ctx, NULL, &b, lg, &e);
    CHECK(rc == 0, "forward %s: %s", dir, e.msg);
    free(pos);
    attn_ctx_free(ctx);
    model_free(m);
    if (rc) { free(lg); return NULL; }
    return lg;
}

static int encode(const char *dir, const char *text, int32_t **ids, int *n) {
    struct tokenizer *t = NULL;
    struct err e = {0};
    int rc = tok_load(&t, dir, &e) || tok_encode(t, text, strlen(text), 0, ids, n, &e);
    CHECK(rc == 0, "tokenizer %s: %s", dir, e.msg);
    tok_free(t);
    return rc;
}

// ---- (1) round trips ----
static void roundtrip(enum model_arch arch) {
    struct make_model_opts mo;
    make_model_opts_default(&mo);
    mo.arch = arch;
    mo.seed = 11 + arch;
    if (arch == ARCH_PHI3) mo.head_dim = 32, mo.dim = 128;
    if (arch == ARCH_GEMMA3) mo.n_layers = 6; // layer 5 global (llama.cpp's pattern 6)
    char src[1200], gg[1300], dst[1300];
    snprintf(src, sizeof src, "%s", tpath(arch_key(arch)));
    snprintf(gg, sizeof gg, "%s.gguf", src);
    snprintf(dst, sizeof dst, "%s-imported", src);
    struct err e = {0};
    if (make_model(&mo, src, &e)) { CHECK(0, "make_model %s: %s", arch_key(arch), e.msg); return; }
    if (write_gguf(src, gg, NULL)) return;
    struct gguf_import_info info;
    int rc = gguf_import(gg, dst, NULL, &info, &e);
    CHECK(rc == 0, "import %s: %s", arch_key(arch), e.msg);
    if (rc) return;
    struct model_config a, b;
    CHECK(!cfg_load(&a, src, &e) && !cfg_load(&b, dst, &e), "configs");
    CHECK(a.arch == b.arch && a.n_layers == b.n_layers && a.head_dim == b.head_dim && a.rope_dim == b.rope_dim &&
              a.rope_type == b.rope_type && a.tie_embeddings == b.tie_embeddings && a.qkv_bias == b.qkv_bias &&
              !memcmp(a.window, b.window, sizeof a.window) && a.query_pre_attn_scalar == b.query_pre_attn_scalar &&
              a.rope_local_theta == b.rope_local_theta && a.qk_norm == b.qk_norm && a.embed_scale == b.embed_scale &&
              fabs(a.rope_factor - b.rope_factor) < 1e-9 && a.rope_orig_max == b.rope_orig_max &&
              (float)a.norm_eps == (float)b.norm_eps && a.bos_id == b.bos_id,
          "%s: config differs after the round trip", arch_key(arch));
    // every tensor back bit for bit (the GGUF held the bf16 values exactly)
    struct safetensors s1, s2;
    int same = 0, total = 0;
    if (!st_open(&s1, src, &e) && !st_open(&s2, dst, &e)) {
        for (int i = 0; i < s1.n_tensors; i++) {
            int64_t n1 = 0, n2 = 0;
            float *x = tensor_f32(&s1, s1.tensors[i].name, &n1), *y = tensor_f32(&s2, s1.tensors[i].name, &n2);
            total++;
            same += x && y && n1 == n2 && !memcmp(x, y, sizeof(float) * (size_t)n1);
            if (!(x && y && n1 == n2 && !memcmp(x, y, sizeof(float) * (size_t)n1))) fprintf(stderr, "  %s differs\n", s1.tensors[i].name);
            free(x), free(y);
        }
        CHECK(same == total && s1.n_tensors == s2.n_tensors, "%s: %d/%d tensors identical (%d vs %d tensors)",
              arch_key(arch), same, total, s1.n_tensors, s2.n_tensors);
        st_close(&s1), st_close(&s2);
    }
    // the same model: logits at every position (exact attention, f32 activations)
    int32_t *ids = NULL;
    int T = 0, V1 = 0, V2 = 0;
    if (encode(src, "The quick brown fox jumps over the lazy dog, 12345 times!", &ids, &T)) return;
    float *l1 = logits(src, ids, T, "exact", &V1), *l2 = logits(dst, ids, T, "exact", &V2);
    if (l1 && l2 && V1 == V2) {
        double rel = test_rel_l2(l2, l1, (size_t)T * V1);
        // phi3's LongRoPE factors pass through float32 in the GGUF, as they do in llama.cpp
        CHECK(arch == ARCH_PHI3 ? rel < 1e-6 : rel == 0, "%s: logits rel-L2 %.3g after the round trip", arch_key(arch), rel);
        printf("round trip %-6s: %d/%d tensors identical, logits rel-L2 %.2g (%d positions)\n", arch_key(arch), same, total, rel, T);
    }
    int32_t *ids2 = NULL;
    int T2 = 0;
    if (!encode(dst, "The quick brown fox jumps over the lazy dog, 12345 times!", &ids2, &T2))
        CHECK(T2 == T && !memcmp(ids, ids2, sizeof(int32_t) * (size_t)T), "%s: tokenizer ids differ", arch_key(arch));
    free(ids), free(ids2), free(l1), free(l2);
}

// ---- (2) files that parse but are not a model we can run ----
static void test_refusals(void) {
    const char *bin = getenv("HIFA4_BIN");
    static const struct {
        struct breakage b;
        int code;
        const char *must;
    } cases[] = {
        {{.drop = "blk.1.attn_k.weight"}, ERR_FORMAT, "missing tensor 'blk.1.attn_k.weight'"},
        {{.drop = "output_norm.weight"}, ERR_FORMAT, "missing tensor 'output_norm.weight'"},
        {{.drop = "token_embd.weight"}, ERR_FORMAT, "missing tensor 'token_embd.weight'"},
        {{.extra = "blk.0.mystery.weight"}, ERR_UNSUPPORTED, "tensor 'blk.0.mystery.weight' is not part of a llama model"},
        {{.extra = "blk.7.attn_norm.weight"}, ERR_UNSUPPORTED, "tensor 'blk.7.attn_norm.weight' is not part of a llama model with 2 layers"},
        {{.reshape = "blk.0.attn_q.weight"}, ERR_FORMAT, "tensor 'blk.0.attn_q.weight' has ne [128, 127], expected [128, 128]"},
        {{.retype = "blk.0.ffn_down.weight"}, ERR_UNSUPPORTED, "tensor 'blk.0.ffn_down.weight' has type Q8_1, which is not supported"},
        {{.arch = "gpt2"}, ERR_UNSUPPORTED, "key 'general.architecture' = 'gpt2' is not supported (supported: llama, qwen2"},
        {{.pre = "deepseek-llm"}, ERR_UNSUPPORTED, "key 'tokenizer.ggml.pre' = 'deepseek-llm' is not supported"},
        {{.nan_score = 1}, ERR_FORMAT, "key 'tokenizer.ggml.scores': token 5 '"},
        {{.byte_type = 1}, ERR_FORMAT, "is typed BYTE (6) but is not of the form <0xXX>"},
        {{.inf_scale = "blk.0.ffn_down.weight"}, ERR_FORMAT, "tensor 'blk.0.ffn_down.weight' (Q8_0): element 0 dequantizes to inf"},
    };
    char src[1300];
    snprintf(src, sizeof src, "%s", tpath("llama"));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char gg[1300], out[1300];
        snprintf(gg, sizeof gg, "%s/refuse-%zu.gguf", tmp, i);
        snprintf(out, sizeof out, "%s/refuse-%zu", tmp, i);
        if (write_gguf(src, gg, &cases[i].b)) continue;
        struct err e = {0};
        char rm[1400];
        snprintf(rm, sizeof rm, "rm -rf '%s'", out); // an earlier test run's
        CHECK(system(rm) == 0, "%s", rm);
        int rc = gguf_import(gg, out, NULL, NULL, &e);
        CHECK(rc == cases[i].code && strstr(e.msg, cases[i].must) && strstr(e.msg, gg),
              "case %zu: rc %d '%s' (want %d '%s')", i, rc, e.msg, cases[i].code, cases[i].must);
        CHECK(!dir_exists(out), "case %zu: refused, yet %s was created", i, out);
        if (!bin) continue;
        char cmd[4096], errf[1400];
        snprintf(errf, sizeof errf, "%s/stderr.txt", tmp);
        snprintf(cmd, sizeof cmd, "%s import-gguf %s --out %s >/dev/null 2>%s", bin, gg, out, errf);
        int st = system(cmd);
        char *txt = NULL;
        size_t len = 0;
        file_read_all(errf, &txt, &len, &e);
        int lines = 0; // the error's lines; progress lines ("[import-gguf] ...") may come before it
        for (size_t k = 0; txt && k < len; k++)
            if (txt[k] == '\n' || k == 0) {
                const size_t b = txt[k] == '\n' ? k + 1 : 0;
                lines += b < len && strncmp(txt + b, "[import-gguf]", 13) != 0;
            }
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1 && lines == 1 && txt && strstr(txt, cases[i].must),
              "case %zu via the CLI: exit %d, %d lines: %s", i, WEXITSTATUS(st), lines, txt ? txt : "");
        free(txt);
    }
}

// 300,000 metadata keys import in seconds (the duplicate-key scan was quadratic: minutes).
static void test_many_keys(void) {
    const char *bin = getenv("HIFA4_BIN");
    char gg[1300], out[1300];
    snprintf(gg, sizeof gg, "%s/many-keys.gguf", tmp);
    snprintf(out, sizeof out, "%s/many-keys", tmp);
    if (!bin || write_gguf(tpath("llama"), gg, &(struct breakage){.many_keys = 300000})) return;
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "rm -rf %s && timeout 60 %s --quiet import-gguf %s --out %s >/dev/null 2>&1", out, bin, gg, out);
    const double t0 = time_now();
    const int st = system(cmd);
    const double dt = time_now() - t0;
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && dt < 20, "300,000 metadata keys: exit %d after %.1f s", WEXITSTATUS(st), dt);
    printf("import-gguf with 300,000 metadata keys: %.2f s\n", dt);
}

// --dtype bf16: the dequantized values rounded to bf16 (exact here: they were bf16 to begin with)
static void test_bf16_option(void) {
    struct gguf_import_opts o = {.bf16 = 1};
    struct err e = {0};
    int rc = gguf_import(tpath("qwen3.gguf"), tpath("qwen3-bf16"), &o, NULL, &e);
    CHECK(rc == 0, "bf16 import: %s", e.msg);
    struct safetensors a, b;
    if (rc || st_open(&a, tpath("qwen3"), &e) || st_open(&b, tpath("qwen3-bf16"), &e)) return;
    int same = 0;
    for (int i = 0; i < a.n_tensors; i++) {
        const struct st_tensor *x = &a.tensors[i], *y = st_find(&b, x->name);
        same += y && y->dtype == ST_BF16 && x->dtype == ST_BF16 && x->nbytes == y->nbytes && !memcmp(x->data, y->data, x->nbytes);
    }
    CHECK(same == a.n_tensors && a.n_tensors == b.n_tensors, "bf16 import: %d/%d tensors equal", same, a.n_tensors);
    const char *w = st_meta(&b, "weights");
    CHECK(w && strstr(w, "BF16") && st_meta(&b, "gguf_sha256") && st_meta(&b, "gguf_tensor_types"), "provenance metadata");
    st_close(&a), st_close(&b);
}

// --model FILE.gguf (runplan/model_arg.h): imported once into <cache>/gguf-import/<sha256>/, the
// same directory reused without importing again; another file (one byte changed) is another
// import; a file that cannot be imported leaves no directory behind.
static void test_model_arg(void) {
    char cache[1200], want[1400], p[1500];
    snprintf(cache, sizeof cache, "%s", tpath("resolve-cache"));
    snprintf(p, sizeof p, "rm -rf '%s'", cache); // imports of an earlier test run
    if (system(p) != 0) { CHECK(0, "%s failed", p); return; }
    setenv("HIFA4_CACHE", cache, 1);
    struct err e = {0};
    struct safetensors st;
    if (st_open(&st, tpath("qwen3-bf16"), &e)) { CHECK(0, "bf16 import missing: %s", e.msg); return; }
    char sha[65];
    snprintf(sha, sizeof sha, "%s", st_meta(&st, "gguf_sha256") ? st_meta(&st, "gguf_sha256") : "");
    st_close(&st);
    snprintf(want, sizeof want, "%s/gguf-import/%s", cache, sha);
    struct model_ref m;
    int rc = model_resolve(&m, tpath("qwen3.gguf"), 1, &e);
    CHECK(rc == 0 && m.imported == 1 && m.origin == MODEL_ORIGIN_GGUF && !strcmp(m.dir, want) && !strcmp(m.gguf_sha256, sha),
          "first resolve: rc %d imported %d dir %s (want %s): %s", rc, m.imported, m.dir, want, e.msg);
    snprintf(p, sizeof p, "%s/config.json", want);
    CHECK(file_exists(p) && !strcmp(m.name, "qwen3"), "imported checkpoint: %s, name '%s'", p, m.name);
    rc = model_resolve(&m, tpath("qwen3.gguf"), 1, &e);
    CHECK(rc == 0 && m.imported == 0 && !strcmp(m.dir, want), "second resolve imported again (%d) or moved: %s", m.imported, m.dir);
    // one byte of a tensor changed: another sha256, another directory
    char *buf = NULL;
    size_t len = 0;
    if (file_read_raw(tpath("qwen3.gguf"), &buf, &len, &e)) { CHECK(0, "read: %s", e.msg); return; }
    buf[len - 1] ^= 1;
    FILE *f = fopen(tpath("qwen3-changed.gguf"), "wb");
    if (f) { fwrite(buf, 1, len, f); fclose(f); }
    rc = model_resolve(&m, tpath("qwen3-changed.gguf"), 1, &e);
    CHECK(rc == 0 && m.imported == 1 && strcmp(m.dir, want) && strcmp(m.gguf_sha256, sha), "changed file: %s", m.dir);
    // a truncated file fails to import and leaves nothing that a later call would take for an import
    f = fopen(tpath("qwen3-cut.gguf"), "wb");
    if (f) { fwrite(buf, 1, len / 2, f); fclose(f); }
    free(buf);
    rc = model_resolve(&m, tpath("qwen3-cut.gguf"), 1, &e);
    CHECK(rc != 0 && !dir_exists(m.dir), "truncated GGUF: rc %d, dir %s exists %d", rc, m.dir, dir_exists(m.dir));
    CHECK(model_resolve(&m, tpath("nosuch.gguf"), 1, &e) == ERR_NOTFOUND && strstr(e.msg, "nosuch.gguf"), "missing: %s", e.msg);
    unsetenv("HIFA4_CACHE");
}

// Two processes' first use of one GGUF at once leave one cache entry and no temporary copy;
// a damaged entry is named with its fix; a killed import's temporary is cleared by the next.
static void test_cache_races(void) {
    const char *bin = getenv("HIFA4_BIN");
    if (!bin) return;
    char cache[1200], cmd[6000], errf[1300];
    snprintf(cache, sizeof cache, "%s", tpath("race-cache"));
    snprintf(errf, sizeof errf, "%s/race.err", tmp);
    const char *gg = tpath("qwen3.gguf");
    // a killed import of this GGUF left its temporary (process 999999 is not running)
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p \"%s/gguf-import/$(sha256sum '%s' | cut -c1-64).tmp-999999\" && "
             "export HIFA4_CACHE='%s' && { %s --quiet logits --model %s --ids 1,2 --out '%s/a.st' >/dev/null 2>&1 & "
             "%s --quiet logits --model %s --ids 1,2 --out '%s/b.st' >/dev/null 2>&1 & wait; }",
             cache, cache, gg, cache, bin, gg, tmp, bin, gg, tmp);
    int st = system(cmd);
    snprintf(cmd, sizeof cmd, "test \"$(ls '%s/gguf-import' | grep -v '[.]lock$' | wc -l)\" = 1", cache);
    CHECK(WIFEXITED(st) && system(cmd) == 0, "two concurrent first imports: not exactly one cache entry (%s)", cmd);
    // damage the entry: a missing file
    snprintf(cmd, sizeof cmd, "rm \"$(ls -d '%s'/gguf-import/*/ | head -1)tokenizer.json\" && "
             "HIFA4_CACHE='%s' %s logits --model %s --ids 1,2 --out '%s/c.st' >/dev/null 2>'%s'", cache, cache, bin, gg, tmp, errf);
    st = system(cmd);
    char *txt = NULL;
    size_t len = 0;
    struct err e = {0};
    file_read_all(errf, &txt, &len, &e);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1 && txt && strstr(txt, "GGUF cache entry") &&
          strstr(txt, "is damaged: tokenizer.json is missing") && strstr(txt, "remove that directory"),
          "damaged cache entry: exit %d: %s", WEXITSTATUS(st), txt ? txt : "");
    free(txt);
}

// ---- (3) SentencePiece vocabulary (tokenizer.ggml.model "llama") ----
static int test_file_sha256(const char *path, char hex[65]) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    struct sha256 h;
    sha256_init(&h);
    static unsigned char buf[1 << 20];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0) sha256_update(&h, buf, k);
    fclose(f);
    uint8_t d[32];
    sha256_final(&h, d);
    sha256_to_hex(d, hex);
    return 0;
}

static void put_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (f) { fputs(text, f); fclose(f); }
}

// A PyPI model of the registry (configs/models/<name>.json, "source": "pypi") without a
// download: a fake registry and fetch script in a temporary home, the test GGUF as its file.
static void test_model_arg_pypi(void) {
    char home[1200], cache[1200], p[4400], cmd[8192], sha[65];
    struct err e = {0};
    snprintf(home, sizeof home, "%s", tpath("pypi-home"));
    snprintf(cache, sizeof cache, "%s", tpath("pypi-cache"));
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s' && mkdir -p '%s/configs/models' '%s/scripts'", home, cache, home, home);
    if (system(cmd) != 0) { CHECK(0, "%s failed", cmd); return; }
    struct model_ref m;
    if (model_resolve(&m, tpath("qwen3.gguf"), 1, &e)) { CHECK(0, "%s", e.msg); return; }
    snprintf(sha, sizeof sha, "%s", m.gguf_sha256);
    // the fetch script copies the test GGUF where the registry says the file goes
    snprintf(p, sizeof p, "%s/scripts/fetch_fake.sh", home);
    snprintf(cmd, sizeof cmd, "set -e\nmkdir -p \"$HIFA4_CACHE/gguf\"\necho fetched \"$1\" >> '%s/calls'\n"
             "cp '%s' \"$HIFA4_CACHE/gguf/fake.gguf\"\necho \"$HIFA4_CACHE/gguf/fake.gguf\"\n", home, tpath("qwen3.gguf"));
    put_text(p, cmd);
    snprintf(p, sizeof p, "%s/configs/models/fake-0.1b.json", home);
    snprintf(cmd, sizeof cmd, "{\"name\": \"fake-0.1b\", \"display_name\": \"Fake 0.1B\", \"source\": \"pypi\", "
             "\"architecture\": \"Qwen3ForCausalLM\", \"packages\": [\"fake-part1\"], \"version\": \"0.1\", "
             "\"file\": \"fake.gguf\", \"size\": 1, \"sha256\": \"%s\", \"fetch\": [\"scripts/fetch_fake.sh\", \"0.1b\"]}", sha);
    put_text(p, cmd);
    setenv("HIFA4_HOME", home, 1);
    setenv("HIFA4_CACHE", cache, 1);
    // offline and not cached: names the file and the command that fetches it, runs nothing
    int rc = model_resolve(&m, "fake-0.1b", 1, &e);
    CHECK(rc == ERR_NOTFOUND && strstr(e.msg, "fake.gguf") && strstr(e.msg, "scripts/fetch_fake.sh 0.1b"), "offline: rc %d %s", rc, e.msg);
    snprintf(p, sizeof p, "%s/calls", home);
    CHECK(!file_exists(p), "the fetch script ran offline");
    // online: the script fetches it once, then it is imported as any FILE.gguf (by its sha256)
    rc = model_resolve(&m, "fake-0.1b", 0, &e);
    snprintf(p, sizeof p, "%s/gguf-import/%s/config.json", cache, sha);
    CHECK(rc == 0 && m.origin == MODEL_ORIGIN_GGUF && m.imported == 1 && !strcmp(m.name, "fake-0.1b") && file_exists(p),
          "online: rc %d origin %d imported %d name %s: %s", rc, m.origin, m.imported, m.name, e.msg);
    rc = model_resolve(&m, "fake-0.1b", 1, &e);
    CHECK(rc == 0 && m.imported == 0, "cached: rc %d imported %d: %s", rc, m.imported, e.msg);
    char *calls = NULL;
    size_t n = 0;
    snprintf(p, sizeof p, "%s/calls", home);
    CHECK(!file_read_raw(p, &calls, &n, &e) && n == strlen("fetched 0.1b\n"), "the script ran %zu bytes of times", n);
    free(calls);
    // a cached file that is not the pinned one is refused, naming both hashes
    snprintf(cmd, sizeof cmd, "printf x >> '%s/gguf/fake.gguf'", cache);
    if (system(cmd) != 0) CHECK(0, "%s", cmd);
    rc = model_resolve(&m, "fake-0.1b", 1, &e);
    CHECK(rc == ERR_MISMATCH && strstr(e.msg, sha) && strstr(e.msg, "fake-0.1b"), "changed file: rc %d %s", rc, e.msg);
    // a registry entry with a bad field is an error naming file and field
    snprintf(p, sizeof p, "%s/configs/models/bad.json", home);
    put_text(p, "{\"source\": \"pypi\", \"display_name\": \"x\", \"architecture\": \"a\", \"file\": \"x.gguf\", \"size\": 1, "
                "\"sha256\": \"abc\", \"fetch\": [\"scripts/x.sh\"]}");
    rc = model_resolve(&m, "bad", 1, &e);
    CHECK(rc == ERR_FORMAT && strstr(e.msg, "bad.json") && strstr(e.msg, "sha256"), "bad entry: rc %d %s", rc, e.msg);
    unsetenv("HIFA4_HOME");
    unsetenv("HIFA4_CACHE");
}

// The repository's PyPI models: each registry entry agrees with its fetch script (the same
// file sha256 and wheel sha256s), and where the file is in the download cache, its sha256 is
// the pinned one (the 1.5B model is only hashed, never imported here: 7 GB of f32).
static void test_named_pypi_real(void) {
    static const char *const names[] = {"smollm2-135m", "gemma3-270m", "qwen2.5-0.5b", "qwen2.5-1.5b"};
    for (int i = 0; i < 4; i++) {
        struct pypi_model pm;
        struct err e = {0};
        int found = 0;
        int rc = pypi_model_find(&pm, names[i], &found, &e);
        CHECK(rc == 0 && found, "%s: rc %d found %d: %s", names[i], rc, found, e.msg);
        if (rc || !found) continue;
        char *script = NULL, cfg[256];
        size_t n = 0;
        snprintf(cfg, sizeof cfg, "configs/models/%s.json", names[i]);
        cJSON *j = NULL;
        if (file_read_raw(pm.script, &script, &n, &e) || json_parse_file(&j, cfg, &e)) { CHECK(0, "%s", e.msg); free(script); continue; }
        CHECK(strstr(script, pm.sha256) != NULL, "%s: %s does not pin the registry's file sha256", names[i], pm.script);
        const cJSON *w;
        cJSON_ArrayForEach(w, cJSON_GetObjectItem(j, "wheel_sha256"))
            CHECK(strstr(script, w->valuestring) != NULL, "%s: wheel sha256 %s not in %s", names[i], w->valuestring, pm.script);
        cJSON_Delete(j);
        free(script);
        if (!file_exists(pm.file)) {
            TEST_NEED_REAL_MODEL(names[i], pm.file, pm.fetch_cmd);
            continue;
        }
        char hex[65];
        CHECK(!test_file_sha256(pm.file, hex) && !strcmp(hex, pm.sha256), "%s: %s has sha256 %s, the registry pins %s",
              names[i], pm.file, hex, pm.sha256);
        if (i < 2) { // the small ones through the whole rule (the others: imports of GBs)
            struct model_ref m;
            rc = model_resolve(&m, names[i], 1, &e);
            CHECK(rc == 0 && !strcmp(m.name, names[i]) && !strcmp(m.gguf_sha256, pm.sha256), "%s: rc %d: %s", names[i], rc, e.msg);
        }
    }
}

static void test_spm(void) {
    char path[1024];
    if (!outside_data("stories260K", path, sizeof path)) return;
    char *buf = NULL;
    size_t len = 0;
    struct err e = {0};
    if (file_read_all(path, &buf, &len, &e)) { CHECK(0, "%s", e.msg); return; }
    enum { N = 512 };
    char *tok[N];
    float score[N];
    int32_t type[N];
    size_t off = 4;
    for (int i = 0; i < N; i++) {
        int32_t l;
        memcpy(&score[i], buf + off, 4);
        memcpy(&l, buf + off + 4, 4);
        off += 8;
        tok[i] = malloc((size_t)l * 3 + 8);
        size_t o = 0;
        for (int k = 0; k < l; k++) {
            if (buf[off + k] == ' ') memcpy(tok[i] + o, "\xe2\x96\x81", 3), o += 3;
            else tok[i][o++] = buf[off + k];
        }
        tok[i][o] = 0;
        off += (size_t)l;
        type[i] = i == 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1;
    }
    strcpy(tok[0], "<unk>"), strcpy(tok[1], "<s>"), strcpy(tok[2], "</s>");
    struct gb kv = {0};
    gb_kv_str(&kv, "tokenizer.ggml.model", "llama");
    gb_kv_strs(&kv, "tokenizer.ggml.tokens", (const char *const *)tok, N);
    gb_kv_f32s(&kv, "tokenizer.ggml.scores", score, N);
    gb_kv_i32s(&kv, "tokenizer.ggml.token_type", type, N);
    gb_kv_u32(&kv, "tokenizer.ggml.bos_token_id", 1);
    gb_kv_u32(&kv, "tokenizer.ggml.eos_token_id", 2);
    size_t size;
    uint8_t *file = gguf_build(&kv, 6, NULL, 0, 32, &size);
    struct gguf g;
    struct gguf_tok_out to;
    struct tokenizer *a = NULL, *b = NULL;
    char *ref_json = NULL;
    int rc = gguf_parse(&g, file, size, "spm.gguf", &e) || gguf_tokenizer_build(&g, GGUF_TOK_PUBLISHED, &to, &e) ||
             tok_load_json(&a, to.tokenizer_json, strlen(to.tokenizer_json), to.config_json, "spm", &e) ||
             tok_llama2c_to_json(path, N, &ref_json, &e) ||
             tok_load_json(&b, ref_json, strlen(ref_json), NULL, "llama2c", &e);
    CHECK(rc == 0, "SentencePiece GGUF tokenizer: %s", e.msg);
    const char *texts[] = {"Once upon a time, there was a little girl named Lily.", "  two spaces", "", "a\nb",
                           "Tom said: \"I can't!\" 123 4567", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "the the the"};
    int same = 0, n = (int)(sizeof texts / sizeof texts[0]);
    for (int i = 0; !rc && i < n; i++) {
        int32_t *x = NULL, *y = NULL;
        int nx = 0, ny = 0;
        if (!tok_encode(a, texts[i], strlen(texts[i]), 1, &x, &nx, &e) && !tok_encode(b, texts[i], strlen(texts[i]), 1, &y, &ny, &e))
            same += nx == ny && !memcmp(x, y, sizeof(int32_t) * (size_t)nx);
        free(x), free(y);
    }
    CHECK(rc || same == n, "SentencePiece GGUF vs llama2.c tokenizer: %d/%d strings equal", same, n);
    if (!rc) printf("SentencePiece vocabulary (stories260K): %d/%d strings as llama2.c's encode\n", same, n);
    tok_free(a), tok_free(b), free(ref_json), gguf_tok_out_free(&to), gguf_close(&g), free(file), free(kv.b), free(buf);
    for (int i = 0; i < N; i++) free(tok[i]);
}

// ---- (4) the real SmolLM2-135M-Instruct Q4_1 ----
// Every tensor dequantized as gguf-py does (hashes of its float32 output).
static void smollm2_dequant(const char *gguf_path) {
    char *ref = NULL;
    size_t len = 0;
    struct err e = {0};
    struct gguf g;
    if (file_read_all("tests/data/gguf/smollm2_dequant_sha256.txt", &ref, &len, &e) || gguf_open(&g, gguf_path, &e)) {
        CHECK(0, "%s", e.msg);
        free(ref);
        return;
    }
    int same = 0, n = 0;
    char types[GGML_TYPE_MAX] = {0};
    for (char *line = strtok(ref, "\n"); line; line = strtok(NULL, "\n"), n++) {
        char name[128], type[16], hex[65], got[65] = "";
        if (sscanf(line, "%127s %15s %64s", name, type, hex) != 3) continue;
        const struct gguf_tensor *t = gguf_find_tensor(&g, name);
        float *f = t ? malloc(sizeof(float) * (size_t)t->numel) : NULL;
        if (f && !ggml_dequantize(f, t->data, t->type, t->numel, &e)) sha256_hex(f, sizeof(float) * (size_t)t->numel, got);
        if (!strcmp(got, hex) && !strcmp(ggml_type_name(t->type), type)) same++, types[t->type] = 1;
        else fprintf(stderr, "  %s (%s): sha256 %s, gguf-py %s\n", name, type, got, hex);
        free(f);
    }
    CHECK(same == n && n == g.n_tensors, "SmolLM2: %d/%d tensors dequantize exactly as gguf-py (%lld in the file)", same, n,
          (long long)g.n_tensors);
    printf("SmolLM2 dequantization: %d/%d tensors bit-exact with gguf-py (types%s%s%s)\n", same, n,
           types[GGML_F32] ? " F32" : "", types[GGML_Q8_0] ? " Q8_0" : "", types[GGML_Q4_1] ? " Q4_1" : "");
    gguf_close(&g);
    free(ref);
}

// The committed logits reference: rel-L2 of the stored full rows, argmax and logsumexp at every
// position, the logit of each of the reference's top 10 tokens.
static void smollm2_logits(const char *dir) {
    cJSON *ref = NULL;
    struct err e = {0};
    char *rows = NULL;
    size_t rows_len = 0;
    if (json_parse_file(&ref, "tests/data/gguf/smollm2_logits_ref.json.zst", &e) ||
        file_read_all("tests/data/gguf/smollm2_logit_rows.bin.zst", &rows, &rows_len, &e)) {
        CHECK(0, "%s", e.msg);
        cJSON_Delete(ref);
        return;
    }
    size_t row_off = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(ref, "prompts")) {
        const cJSON *ids_j = cJSON_GetObjectItem(p, "ids"), *rp = cJSON_GetObjectItem(p, "rows");
        int T = cJSON_GetArraySize(ids_j), V = 0, nr = cJSON_GetArraySize(rp);
        int32_t *ids = malloc(sizeof(int32_t) * (size_t)T);
        for (int i = 0; i < T; i++) ids[i] = cJSON_GetArrayItem(ids_j, i)->valueint;
        float *lg = logits(dir, ids, T, "exact", &V);
        if (!lg) { free(ids); continue; }
        int am = 0;
        double lse_max = 0, top_max = 0, rel_max = 0;
        for (int t = 0; t < T; t++) {
            const float *r = lg + (size_t)t * V;
            int best = 0;
            double mx = r[0], s = 0;
            for (int v = 1; v < V; v++) if (r[v] > r[best]) best = v;
            mx = r[best];
            for (int v = 0; v < V; v++) s += exp((double)r[v] - mx);
            am += best == cJSON_GetArrayItem(cJSON_GetObjectItem(p, "argmax"), t)->valueint;
            double d = fabs(mx + log(s) - cJSON_GetArrayItem(cJSON_GetObjectItem(p, "logsumexp"), t)->valuedouble);
            lse_max = d > lse_max ? d : lse_max;
            for (int k = 0; k < 10; k++) {
                int id = cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(p, "topk_ids"), t), k)->valueint;
                double rv = cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(p, "topk_vals"), t), k)->valuedouble;
                top_max = fabs(r[id] - rv) > top_max ? fabs(r[id] - rv) : top_max;
            }
        }
        // stored rows: float32, low 7 mantissa bits zeroed, byte planes of the prompt's block
        size_t nb = (size_t)nr * V * 4;
        for (int k = 0; k < nr && row_off + nb <= rows_len; k++) {
            float *row = malloc(sizeof(float) * (size_t)V);
            for (int v = 0; v < V; v++) {
                uint32_t u = 0;
                for (int b = 0; b < 4; b++) u |= (uint32_t)(uint8_t)rows[row_off + (size_t)b * nb / 4 + (size_t)k * V + v] << (8 * b);
                row[v] = bits_f32(u);
            }
            int pos = cJSON_GetArrayItem(rp, k)->valueint;
            double rel = test_rel_l2(lg + (size_t)pos * V, row, (size_t)V);
            rel_max = rel > rel_max ? rel : rel_max;
            free(row);
        }
        row_off += nb;
        const char *name = cJSON_GetObjectItem(p, "name")->valuestring;
        CHECK(rel_max <= 1e-4 && am == T && lse_max < 1e-3 && top_max < 1e-3,
              "SmolLM2 '%s': rel-L2 %.3g, argmax %d/%d, logsumexp diff %.3g, top-10 logit diff %.3g", name, rel_max, am, T,
              lse_max, top_max);
        printf("SmolLM2 logits '%s' (%d tokens) vs transformers f32: rel-L2 %.2e (rows %d), argmax %d/%d, "
               "logsumexp max diff %.1e, top-10 logits max diff %.1e\n", name, T, rel_max, nr, am, T, lse_max, top_max);
        free(lg), free(ids);
    }
    CHECK(row_off == rows_len, "row file: %zu of %zu bytes used", row_off, rows_len);
    free(rows);
    cJSON_Delete(ref);
}

// The reference's text as bytes: its "utf8_hex" field (cJSON would cut "text" at a \u0000).
static size_t hex_text(const cJSON *j, char *out, size_t cap) {
    const cJSON *h = cJSON_GetObjectItem(j, "utf8_hex");
    size_t n = cJSON_IsString(h) ? strlen(h->valuestring) / 2 : 0;
    for (size_t i = 0; i < n && i < cap; i++) {
        unsigned v = 0;
        sscanf(h->valuestring + 2 * i, "%2x", &v);
        out[i] = (char)v;
    }
    return n < cap ? n : cap;
}

static int ids_equal(const int32_t *a, int n, const cJSON *ref) {
    if (!ref || cJSON_GetArraySize(ref) != n) return 0;
    for (int i = 0; i < n; i++) if (cJSON_GetArrayItem(ref, i)->valueint != a[i]) return 0;
    return 1;
}

// `hifa4-eval tokenize --no-special --ids-only` on one string: the ids it prints.
static int cli_ids(const char *bin, const char *dir, const char *text, size_t len, int32_t *ids, int cap) {
    char in[1300], outf[1300], cmd[4096];
    struct err e = {0};
    snprintf(in, sizeof in, "%s/tok-in.txt", tmp);
    snprintf(outf, sizeof outf, "%s/tok-out.txt", tmp);
    file_write_atomic(in, text, len, &e);
    snprintf(cmd, sizeof cmd, "%s tokenize --tokenizer %s --no-special --ids-only %s >%s 2>/dev/null", bin, dir, in, outf);
    if (system(cmd) != 0) return -1;
    char *txt = NULL;
    size_t n = 0;
    if (file_read_all(outf, &txt, &n, &e)) return -1;
    int k = 0;
    for (char *p = txt, *end; k < cap; p = end) {
        long v = strtol(p, &end, 10);
        if (end == p) break;
        ids[k++] = (int32_t)v;
    }
    free(txt);
    return k;
}

// 320 strings: the published tokenizer (GGUF metadata, llama.cpp's smollm splitting) against
// the reference built with the `tokenizers` library from the same vocabulary, merges and
// pre-tokenizer, and --tokenizer-policy transformers against transformers 4.45.2 itself.
static void smollm2_tokenizer(const char *gguf_path, const char *dir) {
    char *ref = NULL, *text = malloc(1 << 16);
    size_t len = 0;
    struct err e = {0};
    struct gguf g;
    struct gguf_tok_out to;
    struct tokenizer *pub = NULL, *tf = NULL;
    if (file_read_all("tests/data/gguf/smollm2_tokenizer_ref.jsonl.zst", &ref, &len, &e) || tok_load(&pub, dir, &e) ||
        gguf_open(&g, gguf_path, &e) || gguf_tokenizer_build(&g, GGUF_TOK_TRANSFORMERS, &to, &e) ||
        tok_load_json(&tf, to.tokenizer_json, strlen(to.tokenizer_json), to.config_json, "transformers policy", &e)) {
        CHECK(0, "SmolLM2 tokenizer: %s", e.msg);
        free(ref), free(text);
        return;
    }
    const char *bin = getenv("HIFA4_BIN");
    int n = 0, ok_pub = 0, ok_tf = 0, same_as_tf = 0, n_cli = 0, ok_cli = 0;
    for (char *line = strtok(ref, "\n"); line; line = strtok(NULL, "\n"), n++) {
        cJSON *j = cJSON_Parse(line);
        size_t tl = hex_text(j, text, 1 << 16);
        const cJSON *ids_tf = cJSON_GetObjectItem(j, "ids"), *alt = cJSON_GetObjectItem(j, "ids_smollm_pre");
        int32_t *a = NULL, *b = NULL, cli[4096];
        int na = 0, nb = 0;
        if (!tok_encode(pub, text, tl, 0, &a, &na, &e) && ids_equal(a, na, alt ? alt : ids_tf)) ok_pub++;
        else fprintf(stderr, "  published differs: %s\n", line);
        if (!tok_encode(tf, text, tl, 0, &b, &nb, &e) && ids_equal(b, nb, ids_tf)) ok_tf++;
        else fprintf(stderr, "  transformers policy differs: %s\n", line);
        same_as_tf += !alt;
        if (bin && (n % 16 == 0 || memchr(text, 0, tl) || alt)) { // the CLI on a sample, every string that differs, NUL
            int k = cli_ids(bin, dir, text, tl, cli, 4096);
            n_cli++;
            ok_cli += k == na && !memcmp(cli, a, sizeof(int32_t) * (size_t)na);
        }
        free(a), free(b);
        cJSON_Delete(j);
    }
    CHECK(n >= 300 && ok_pub == n && ok_tf == n && ok_cli == n_cli,
          "SmolLM2 tokenizer: published %d/%d, transformers policy %d/%d, CLI %d/%d", ok_pub, n, ok_tf, n, ok_cli, n_cli);
    printf("SmolLM2 tokenizer, %d strings: published tokenizer %d/%d (%d of them identical to transformers' ids), "
           "--tokenizer-policy transformers %d/%d transformers 4.45.2 ids; tokenize --no-special CLI %d/%d\n", n, ok_pub, n,
           same_as_tf, ok_tf, n, ok_cli, n_cli);
    tok_free(pub), tok_free(tf), gguf_tok_out_free(&to), gguf_close(&g);
    free(ref), free(text);
}

static int enc_fn(void *user, const char *text, size_t len, int32_t **ids, int *n, struct err *e) {
    return tok_encode(user, text, len, 0, ids, n, e);
}

// ARC-Easy under lm-eval's protocol (context + " " + choice; the continuation is what the
// whole string adds to the context's tokens): (a) our request tokens equal the ones lm-eval's
// HFLM built (needs the ARC data from ../shared), (b) the option log-likelihoods of the first
// SMOLLM2_ARC_ITEMS items (all 200 with HIFA4_ARC_ITEMS=200), computed from those tokens with
// exact attention and f32 activations, equal lm-eval's (transformers float32) within 1e-3.
#define SMOLLM2_ARC_ITEMS 100
// (a) our request tokens for the ARC-Easy items against lm-eval's.
static void arc_requests(const char *dir, cJSON **items, int n_items) {
    char data[1024];
    struct err e = {0};
    struct tokenizer *tok = NULL;
    struct task_set ts = {0};
    struct task_opts to = {.limit = n_items};
    if (!outside_data("arc_easy", data, sizeof data)) return;
    to.data_dir = data;
    if (tok_load(&tok, dir, &e) || task_load("arc_easy", &ts, &to, &e)) {
        CHECK(0, "ARC-Easy: %s", e.msg);
        tok_free(tok);
        return;
    }
    struct eval_plan_opts po = {.delim = " ", .add_bos = 0, .bos_id = -1, .eos_id = 2, .window = 8192, .n_threads = 1};
    int n_req = 0, same = 0;
    for (int i = 0; i < n_items && i < ts.n_items; i++) {
        const cJSON *ctx = cJSON_GetObjectItem(items[i], "ctx_ids"), *conts = cJSON_GetObjectItem(items[i], "cont_ids");
        int nc = cJSON_GetArraySize(ctx);
        for (int k = 0; k < ts.items[i].n_choices; k++, n_req++) {
            struct eval_req_tokens rt;
            if (eval_request_tokens(ts.items[i].context, ts.items[i].choices[k], &po, enc_fn, tok, &rt, &e)) continue;
            int32_t *inp = rt.inp, *cont = rt.cont;
            const int ni = rt.n_inp, nco = rt.n_cont;
            int ok = ids_equal(cont, nco, cJSON_GetArrayItem(conts, k)) && ni == nc + nco - 1;
            for (int t = 0; ok && t < nc; t++) ok = inp[t] == cJSON_GetArrayItem(ctx, t)->valueint;
            same += ok;
            free(inp), free(cont);
        }
    }
    CHECK(same == n_req && n_req > 0, "ARC-Easy: %d/%d requests tokenized as lm-eval's HFLM did", same, n_req);
    printf("ARC-Easy requests: %d/%d (%d items) token-identical to lm-eval 0.4.5 HFLM\n", same, n_req, ts.n_items);
    task_set_free(&ts);
    tok_free(tok);
}

// Log-likelihood of every option of one reference item (all options in one packed forward).
static int arc_item(struct model *m, struct attn_ctx *actx, const cJSON *item, float *lg, double *max_diff, int *n_opt, int *greedy_same,
                    struct err *e) {
    const cJSON *ctx = cJSON_GetObjectItem(item, "ctx_ids"), *conts = cJSON_GetObjectItem(item, "cont_ids");
    int nc = cJSON_GetArraySize(ctx), no = cJSON_GetArraySize(conts), tot = 0, nrow = 0, seq_len[16], V = model_cfg(m)->vocab_size;
    int32_t tokens[2048];
    int pos[1024];
    for (int k = 0; k < no && k < 16; k++) {
        const cJSON *c = cJSON_GetArrayItem(conts, k);
        int ncont = cJSON_GetArraySize(c);
        for (int t = 0; t < nc; t++) tokens[tot + t] = cJSON_GetArrayItem(ctx, t)->valueint;
        for (int t = 0; t < ncont; t++) tokens[tot + nc + t] = cJSON_GetArrayItem(c, t)->valueint;
        for (int t = 0; t < ncont; t++) pos[nrow++] = tot + nc - 1 + t; // the row predicting cont[t]
        seq_len[k] = nc + ncont;
        tot += nc + ncont;
    }
    const struct model_batch b = {.tokens = tokens, .n_seq = no, .seq_len = seq_len, .out_pos = pos, .n_out = nrow};
    int rc = model_forward(m, actx, NULL, &b, lg, e);
    if (rc) return rc;
    nrow = 0;
    for (int k = 0; k < no; k++, (*n_opt)++) {
        const cJSON *c = cJSON_GetArrayItem(conts, k);
        double ll = 0;
        int greedy = 1;
        for (int t = 0; t < cJSON_GetArraySize(c); t++, nrow++) {
            int is_max = 0;
            ll += eval_logprob(lg + (size_t)nrow * V, V, cJSON_GetArrayItem(c, t)->valueint, &is_max);
            greedy &= is_max;
        }
        double d = fabs(ll - cJSON_GetArrayItem(cJSON_GetObjectItem(item, "ll"), k)->valuedouble);
        *max_diff = d > *max_diff ? d : *max_diff;
        *greedy_same += greedy == cJSON_IsTrue(cJSON_GetArrayItem(cJSON_GetObjectItem(item, "is_greedy"), k));
    }
    return 0;
}

static void smollm2_arc(const char *dir) {
    const int want = getenv("HIFA4_ARC_ITEMS") ? atoi(getenv("HIFA4_ARC_ITEMS")) : SMOLLM2_ARC_ITEMS;
    char *ref = NULL;
    size_t len = 0;
    struct err e = {0};
    if (file_read_all("tests/data/gguf/smollm2_arc_easy_ref.jsonl.zst", &ref, &len, &e)) { CHECK(0, "%s", e.msg); return; }
    cJSON *items[256];
    int n_items = 0;
    for (char *line = strtok(ref, "\n"); line && n_items < 256; line = strtok(NULL, "\n")) items[n_items++] = cJSON_Parse(line);
    arc_requests(dir, items, n_items);
    struct model_opts mo;
    model_opts_default(&mo);
    mo.act_bf16 = 0, mo.max_tokens = 2048, mo.n_threads = 2;
    struct model *m = NULL;
    struct attn_ctx *actx = NULL;
    int n_opt = 0, greedy_same = 0, n_done = 0;
    double max_diff = 0;
    float *lg = NULL;
    if (model_open(&m, dir, &mo, &e) || model_attn_open(&actx, m, "exact", NULL, NULL, &e)) { CHECK(0, "%s", e.msg); goto out; }
    lg = malloc(sizeof(float) * 1024 * (size_t)model_cfg(m)->vocab_size);
    for (; n_done < n_items && n_done < want; n_done++)
        if (arc_item(m, actx, items[n_done], lg, &max_diff, &n_opt, &greedy_same, &e)) { CHECK(0, "item %d: %s", n_done, e.msg); break; }
    CHECK(n_done >= want && want >= SMOLLM2_ARC_ITEMS && max_diff <= 1e-3 && greedy_same == n_opt,
          "ARC-Easy log-likelihoods: max |diff| %.3g over %d options of %d items, is_greedy %d/%d", max_diff, n_opt, n_done,
          greedy_same, n_opt);
    printf("ARC-Easy option log-likelihoods vs lm-eval/transformers f32: max |diff| %.2e over %d options of %d items, "
           "is_greedy %d/%d\n", max_diff, n_opt, n_done, greedy_same, n_opt);
out:
    free(lg);
    attn_ctx_free(actx);
    model_free(m);
    for (int i = 0; i < n_items; i++) cJSON_Delete(items[i]);
    free(ref);
}

static void test_smollm2(void) {
    char path[2048];
    if (!outside_data("smollm2", path, sizeof path)) return;
    smollm2_dequant(path);
    const char *dir = tpath("smollm2");
    struct gguf_import_info info;
    struct err e = {0};
    double t0 = time_now();
    int rc = gguf_import(path, dir, NULL, &info, &e);
    CHECK(rc == 0, "import SmolLM2: %s", e.msg);
    if (rc) return;
    CHECK(!strcmp(info.arch, "LlamaForCausalLM") && info.tied && info.n_tensors == 272 && info.n_vocab == 49152 &&
              !strcmp(info.file_type, "MOSTLY_Q4_1") && strstr(info.types, "Q4_1 x210"),
          "import info: %s %d tensors, %s, %s", info.arch, info.n_tensors, info.types, info.file_type);
    printf("SmolLM2 import: %.1f s (%s)\n", time_now() - t0, info.types);
    smollm2_logits(dir);
    smollm2_tokenizer(path, dir);
    smollm2_arc(dir);
    char st[1300];
    snprintf(st, sizeof st, "%s/model.safetensors", dir);
    remove(st); // 540 MB of scratch
}

int main(void) {
    const char *t = getenv("HIFA4_TMP");
    snprintf(tmp, sizeof tmp, "%s/gguf_import", t ? t : "build/tmp");
    struct err e = {0};
    mkdir_p(tmp, &e);
    log_set_level(LOG_WARN);
    const enum model_arch archs[] = {ARCH_LLAMA, ARCH_QWEN2, ARCH_QWEN3, ARCH_GEMMA2, ARCH_PHI3, ARCH_GEMMA3};
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++) roundtrip(archs[i]);
    test_refusals();
    test_many_keys();
    test_bf16_option();
    test_model_arg();
    test_model_arg_pypi();
    test_named_pypi_real();
    test_cache_races();
    test_spm();
    test_smollm2();
    return test_summary("test_gguf_import");
}
