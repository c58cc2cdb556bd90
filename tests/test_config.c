// test_config.c: config.json parsing for the seven architectures (the seven golden configs in
// goldens/models of the test data), HF defaults, the writer's round trip, the parameter count
// against the checkpoints, and one-line errors for bad configs.
#include <stdio.h>
#include <stdlib.h>

#include "model/config.h"
#include "io/safetensors.h"
#include "test.h"

// The directory of golden model `name` (test data), or NULL after a SKIP line.
#define golden(name) TEST_NEED("goldens/models/%s", name)

// Loads the config of dir; 1 when dir is NULL (skipped).
static int load(struct model_config *c, const char *dir) {
    if (!dir) return 1;
    struct err e = {0};
    int rc = cfg_load(c, dir, &e);
    CHECK(rc == 0, "%s: %s", dir, e.msg);
    return rc;
}

static void test_goldens(void) {
    struct model_config c;
    if (!load(&c, golden("qwen3-tiny"))) {
        CHECK(c.arch == ARCH_QWEN3 && c.dim == 128 && c.n_layers == 3 && c.n_heads == 4 && c.n_kv_heads == 2 &&
              c.head_dim == 128 && c.hidden_dim == 256 && c.vocab_size == 512, "qwen3-tiny sizes");
        CHECK(c.qk_norm && c.tie_embeddings && !c.qkv_bias && c.rope_theta == 1e6 && c.rope_dim == 128 &&
              c.window[0] == 0 && c.norm_eps == 1e-6 && c.act == ACT_SILU, "qwen3-tiny details");
        CHECK(c.query_pre_attn_scalar == 128 && c.bos_id == 1 && c.eos_id == 2, "qwen3-tiny scale / ids");
    }
    if (!load(&c, golden("qwen2-tiny"))) // use_sliding_window false: sliding_window 4096 ignored
        CHECK(c.arch == ARCH_QWEN2 && c.qkv_bias && !c.o_bias && c.window[0] == 0 && c.window[1] == 0 && c.head_dim == 32,
              "qwen2-tiny: bias %d window %d", c.qkv_bias, c.window[1]);
    if (!load(&c, golden("llama-tiny")))
        CHECK(c.arch == ARCH_LLAMA && c.rope_type == ROPE_LLAMA3 && c.rope_factor == 8 && c.rope_low_freq == 1 &&
              c.rope_high_freq == 4 && c.rope_orig_max == 64 && !c.tie_embeddings, "llama-tiny rope");
    if (!load(&c, golden("mistral-tiny")))
        CHECK(c.arch == ARCH_MISTRAL && c.window[0] == 32 && c.window[1] == 32, "mistral windows %d %d", c.window[0], c.window[1]);
    if (!load(&c, golden("gemma2-tiny"))) {
        CHECK(c.arch == ARCH_GEMMA2 && c.window[0] == 32 && c.window[1] == 0 && c.window[2] == 32, "gemma2 windows");
        CHECK(c.attn_softcap == 10 && c.final_softcap == 3 && c.query_pre_attn_scalar == 48 && c.norm_plus_one &&
              c.sandwich_norm && c.embed_scale && c.tie_embeddings && c.act == ACT_GELU_TANH, "gemma2 details");
    }
    if (!load(&c, golden("phi3-tiny"))) {
        CHECK(c.arch == ARCH_PHI3 && c.fused_qkv && c.fused_gate_up && c.rope_dim == 48 && c.rope_type == ROPE_LONGROPE,
              "phi3 structure: rope_dim %d", c.rope_dim);
        CHECK(c.n_rope_factors == 24 && c.rope_short[1] == 1.03125 && c.rope_long[23] == 6.75 && c.rope_orig_max == 64 &&
              c.rope_factor == 4.0, "phi3 longrope lists");
        CHECK_CLOSE(c.rope_attn_factor, sqrt(1 + log(4.0) / log(64.0)), 1e-15, 0);
        CHECK(c.window[0] == 262144, "phi3 window %d", c.window[0]);
    }
}

// Every golden config survives cfg_to_json -> cfg_parse unchanged, and cfg_n_params matches
// the element count of its checkpoint.
static void test_roundtrip(void) {
    const char *names[] = {"qwen3-tiny", "qwen3-outlier", "qwen2-tiny", "llama-tiny", "mistral-tiny", "gemma2-tiny", "phi3-tiny"};
    for (int i = 0; i < 7; i++) {
        struct model_config a, b;
        const char *dir = golden(names[i]);
        if (load(&a, dir)) continue;
        char *json = NULL;
        struct err e = {0};
        int rc = cfg_to_json(&a, "{\"_note\": 1}", &json, &e);
        CHECK(rc == 0, "%s: %s", names[i], e.msg);
        if (rc) continue;
        rc = cfg_parse(&b, json, strlen(json), names[i], &e);
        CHECK(rc == 0 && !memcmp(&a, &b, sizeof a), "%s: round trip differs (%s)", names[i], e.msg);
        CHECK(strstr(json, "\"_note\"") != NULL, "%s: extra member missing", names[i]);
        free(json);
        struct safetensors st;
        if (!st_open(&st, dir, &e)) {
            int64_t n = 0;
            for (int t = 0; t < st.n_tensors; t++) n += st.tensors[t].numel;
            CHECK(n == cfg_n_params(&a), "%s: %lld parameters in the checkpoint, config implies %lld", names[i],
                  (long long)n, (long long)cfg_n_params(&a));
            st_close(&st);
        }
    }
}

static int parse(struct model_config *c, const char *json, struct err *e) {
    memset(e, 0, sizeof *e);
    return cfg_parse(c, json, strlen(json), "cfg.json", e);
}

#define BASE "\"hidden_size\": 64, \"intermediate_size\": 128, \"num_hidden_layers\": 4, \"num_attention_heads\": 4, " \
             "\"vocab_size\": 300, \"max_position_embeddings\": 256"

static void test_defaults_and_variants(void) {
    struct model_config c;
    struct err e;
    // Gemma2 HF defaults: caps 50/30, window 4096 on even layers; explicit null caps: none
    CHECK(!parse(&c, "{\"architectures\": [\"Gemma2ForCausalLM\"], " BASE "}", &e) && c.attn_softcap == 50 &&
          c.final_softcap == 30 && c.window[0] == 4096 && c.window[1] == 0 && c.tie_embeddings && c.head_dim == 16,
          "gemma2 defaults (%s)", e.msg);
    CHECK(!parse(&c, "{\"architectures\": [\"Gemma2ForCausalLM\"], " BASE ", \"attn_logit_softcapping\": null, "
                     "\"final_logit_softcapping\": null}", &e) && c.attn_softcap == 0 && c.final_softcap == 0,
          "gemma2 null caps (%s)", e.msg);
    // Qwen2 sliding window on layers >= max_window_layers
    CHECK(!parse(&c, "{\"architectures\": [\"Qwen2ForCausalLM\"], " BASE ", \"use_sliding_window\": true, "
                     "\"sliding_window\": 16, \"max_window_layers\": 2}", &e) &&
          c.window[1] == 0 && c.window[2] == 16 && c.window[3] == 16, "qwen2 max_window_layers (%s)", e.msg);
    // layer_types overrides the parity rule
    CHECK(!parse(&c, "{\"architectures\": [\"Gemma2ForCausalLM\"], " BASE ", \"sliding_window\": 8, \"layer_types\": "
                     "[\"full_attention\", \"sliding_attention\", \"full_attention\", \"full_attention\"]}", &e) &&
          c.window[0] == 0 && c.window[1] == 8 && c.window[2] == 0, "layer_types (%s)", e.msg);
    // Llama: eos list -> first, kv heads default to heads, head_dim = dim / heads, no window
    CHECK(!parse(&c, "{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"eos_token_id\": [7, 8], "
                     "\"bos_token_id\": null, \"sliding_window\": 3}", &e) &&
          c.eos_id == 7 && c.bos_id == -1 && c.n_kv_heads == 4 && c.head_dim == 16 && c.window[0] == 0,
          "llama defaults (%s)", e.msg);
    // Phi3 "su" alias and explicit attention_factor
    char buf[2048];
    snprintf(buf, sizeof buf, "{\"architectures\": [\"Phi3ForCausalLM\"], " BASE ", \"partial_rotary_factor\": 0.5, "
             "\"rope_scaling\": {\"type\": \"su\", \"short_factor\": [1,1,1,1], \"long_factor\": [2,2,2,2], "
             "\"attention_factor\": 1.5}}");
    CHECK(!parse(&c, buf, &e) && c.rope_dim == 8 && c.rope_type == ROPE_LONGROPE && c.rope_attn_factor == 1.5 &&
          c.rope_orig_max == 256, "phi3 su (%s)", e.msg);
    CHECK(!strcmp(cfg_arch_short(ARCH_GEMMA2), "gemma2") && cfg_arch_from_short("phi3") == ARCH_PHI3 &&
          cfg_arch_from_short("bert") == -1, "arch names");
}

// Gemma 3: the released 270M config (google/gemma-3-270m, transformers 4.55) and the text_config
// of the 4B's Gemma3ForConditionalGeneration config, which leaves most fields to
// Gemma3TextConfig's defaults; then the writer's round trip.
#define G3_270M "{\"_sliding_window_pattern\": 6, \"architectures\": [\"Gemma3ForCausalLM\"], \"attention_bias\": false, " \
    "\"attn_logit_softcapping\": null, \"bos_token_id\": 2, \"eos_token_id\": 1, \"final_logit_softcapping\": null, " \
    "\"head_dim\": 256, \"hidden_activation\": \"gelu_pytorch_tanh\", \"hidden_size\": 640, \"intermediate_size\": 2048, " \
    "\"layer_types\": [\"sliding_attention\", \"sliding_attention\", \"sliding_attention\", \"sliding_attention\", " \
    "\"sliding_attention\", \"full_attention\", \"sliding_attention\", \"sliding_attention\", \"sliding_attention\", " \
    "\"sliding_attention\", \"sliding_attention\", \"full_attention\", \"sliding_attention\", \"sliding_attention\", " \
    "\"sliding_attention\", \"sliding_attention\", \"sliding_attention\", \"full_attention\"], " \
    "\"max_position_embeddings\": 32768, \"model_type\": \"gemma3_text\", \"num_attention_heads\": 4, " \
    "\"num_hidden_layers\": 18, \"num_key_value_heads\": 1, \"pad_token_id\": 0, \"query_pre_attn_scalar\": 256, " \
    "\"rms_norm_eps\": 1e-06, \"rope_local_base_freq\": 10000.0, \"rope_scaling\": null, \"rope_theta\": 1000000.0, " \
    "\"sliding_window\": 512, \"use_bidirectional_attention\": false, \"vocab_size\": 262144}"
#define G3_4B "{\"architectures\": [\"Gemma3ForConditionalGeneration\"], \"eos_token_id\": [1, 106], \"text_config\": " \
    "{\"hidden_size\": 2560, \"intermediate_size\": 10240, \"model_type\": \"gemma3_text\", \"num_attention_heads\": 8, " \
    "\"num_hidden_layers\": 34, \"num_key_value_heads\": 4, \"rope_scaling\": {\"factor\": 8.0, \"rope_type\": \"linear\"}, " \
    "\"sliding_window\": 1024}}"

static void test_gemma3(void) {
    struct model_config c, b;
    struct err e;
    int rc = parse(&c, G3_270M, &e);
    CHECK(rc == 0 && c.arch == ARCH_GEMMA3 && c.dim == 640 && c.n_layers == 18 && c.n_heads == 4 && c.n_kv_heads == 1 &&
          c.head_dim == 256 && c.vocab_size == 262144 && c.hidden_dim == 2048, "gemma3 270M sizes (%s)", e.msg);
    CHECK(c.qk_norm && c.norm_plus_one && c.sandwich_norm && c.embed_scale == EMBED_SQRT_F32 && c.tie_embeddings &&
          c.act == ACT_GELU_TANH && !c.qkv_bias && c.attn_softcap == 0 && c.final_softcap == 0 &&
          c.query_pre_attn_scalar == 256, "gemma3 270M structure");
    CHECK(c.rope_theta == 1e6 && c.rope_local_theta == 10000 && c.rope_type == ROPE_DEFAULT && c.rope_dim == 256 &&
          c.bos_id == 2 && c.eos_id == 1, "gemma3 270M rope / ids");
    for (int l = 0; l < 18; l++)
        CHECK(c.window[l] == ((l + 1) % 6 ? 512 : 0), "gemma3 270M layer %d: window %d", l, c.window[l]);
    char *json = NULL;
    rc = cfg_to_json(&c, NULL, &json, &e);
    CHECK(rc == 0 && !cfg_parse(&b, json, strlen(json), "rt", &e) && !memcmp(&c, &b, sizeof c), "gemma3 round trip (%s)", e.msg);
    free(json);
    rc = parse(&c, G3_4B, &e);
    CHECK(rc == 0 && c.arch == ARCH_GEMMA3 && c.dim == 2560 && c.n_layers == 34 && c.vocab_size == 262208 &&
          c.head_dim == 256 && c.max_seq == 131072 && c.query_pre_attn_scalar == 256 && c.rope_theta == 1e6,
          "gemma3 4B text_config defaults (%s)", e.msg);
    CHECK(c.rope_type == ROPE_LINEAR && c.rope_factor == 8 && c.rope_local_theta == 10000 && c.window[0] == 1024 &&
          c.window[5] == 0 && c.window[6] == 1024 && c.window[33] == 1024 && c.eos_id == 1 && c.bos_id == 2,
          "gemma3 4B rope / windows / ids");
    rc = cfg_to_json(&c, NULL, &json, &e);
    CHECK(rc == 0 && !cfg_parse(&b, json, strlen(json), "rt", &e) && !memcmp(&c, &b, sizeof c), "gemma3 4B round trip (%s)", e.msg);
    free(json);
    // no layer_types: sliding_window_pattern (HF 4.50), every P-th layer global
    CHECK(!parse(&c, "{\"architectures\": [\"Gemma3ForCausalLM\"], " BASE ", \"sliding_window\": 8, "
                     "\"sliding_window_pattern\": 2}", &e) && c.window[0] == 8 && c.window[1] == 0 && c.window[2] == 8 &&
          c.window[3] == 0 && c.head_dim == 256, "gemma3 pattern 2 (%s)", e.msg);
}

// Each bad config: an error whose one-line message names the file and the problem.
static void bad(const char *json, int code, const char *needle) {
    struct model_config c;
    struct err e;
    int rc = parse(&c, json, &e);
    CHECK(rc == code && strstr(e.msg, needle) && strstr(e.msg, "cfg.json") && !strchr(e.msg, '\n'),
          "config %.60s: rc %d (want %d), message '%s' lacks '%s'", json, rc, code, e.msg, needle);
}

static void test_errors(void) {
    bad("{\"architectures\": [\"BertModel\"], " BASE "}", ERR_UNSUPPORTED, "Qwen3ForCausalLM, Qwen2ForCausalLM");
    bad("{\"architectures\": [\"BertModel\"], " BASE "}", ERR_UNSUPPORTED, "BertModel");
    bad("{\"architectures\": [\"LlamaForCausalLM\"], \"intermediate_size\": 128, \"num_hidden_layers\": 4, "
        "\"num_attention_heads\": 4, \"vocab_size\": 300, \"max_position_embeddings\": 256}", ERR_FORMAT, "hidden_size");
    bad("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"rms_norm_eps\": \"small\"}", ERR_FORMAT, "rms_norm_eps");
    bad("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"num_key_value_heads\": 3}", ERR_FORMAT, "num_key_value_heads 3");
    bad("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"rope_scaling\": {\"rope_type\": \"yarn\"}}", ERR_UNSUPPORTED, "yarn");
    bad("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8}}",
        ERR_FORMAT, "low_freq_factor");
    bad("{\"architectures\": [\"Phi3ForCausalLM\"], " BASE ", \"rope_scaling\": {\"type\": \"longrope\", "
        "\"short_factor\": [1, 1], \"long_factor\": [1, 1]}}", ERR_FORMAT, "short_factor has 2 entries");
    bad("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"hidden_act\": \"relu\"}", ERR_UNSUPPORTED, "relu");
    bad("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"head_dim\": 7}", ERR_FORMAT, "head_dim");
    bad("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64, \"intermediate_size\": 128, \"num_hidden_layers\": 0, "
        "\"num_attention_heads\": 4, \"vocab_size\": 300, \"max_position_embeddings\": 256}", ERR_FORMAT, "layers 0");
    // sizes beyond config.h's bounds name their field (they were multiplied into
    // allocation sizes unchecked; fuzz_config found a max_position_embeddings of 1.75e9 that
    // the round trip through cfg_to_json could not read back)
#define SZ(h, f, l, n, v, p) "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": " h ", \"intermediate_size\": " f \
    ", \"num_hidden_layers\": " l ", \"num_attention_heads\": " n ", \"vocab_size\": " v ", \"max_position_embeddings\": " p "}"
    bad(SZ("262144", "128", "4", "4", "300", "256"), ERR_RANGE, "'hidden_size': 262144 exceeds");
    bad(SZ("64", "2097152", "4", "4", "300", "256"), ERR_RANGE, "'intermediate_size'");
    bad(SZ("64", "128", "300", "4", "300", "256"), ERR_RANGE, "'num_hidden_layers': 300");
    bad(SZ("8192", "128", "4", "8192", "300", "256"), ERR_RANGE, "'num_attention_heads': 8192");
    bad(SZ("64", "128", "4", "4", "33554432", "256"), ERR_RANGE, "'vocab_size'");
    bad(SZ("64", "128", "4", "4", "300", "1754255595"), ERR_RANGE, "'max_position_embeddings': 1754255595");
    bad(SZ("64", "128", "4", "4", "300", "99999999999"), ERR_RANGE, "max_position_embeddings");
    bad("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64, \"intermediate_size\": 128, \"num_hidden_layers\": 4, "
        "\"num_attention_heads\": 1024, \"vocab_size\": 300, \"max_position_embeddings\": 256, \"head_dim\": 1024, "
        "\"num_key_value_heads\": 1}", ERR_RANGE, "'num_attention_heads' x 'head_dim' = 1024 x 1024");
    bad("{\"architectures\": [\"Gemma3ForConditionalGeneration\"], " BASE "}", ERR_FORMAT, "text_config");
    bad("{\"architectures\": [\"Gemma3ForConditionalGeneration\"], \"text_config\": {" BASE ", \"model_type\": \"siglip\"}}",
        ERR_FORMAT, "(text_config): field 'model_type': 'siglip'");
    bad("{\"architectures\": [\"Gemma3ForCausalLM\"], " BASE ", \"sliding_window_pattern\": 0}", ERR_FORMAT,
        "'sliding_window_pattern': 0");
    bad("{\"architectures\": [\"Gemma3ForCausalLM\"], " BASE ", \"sliding_window\": null}", ERR_FORMAT, "'sliding_window'");
    bad("{\"architectures\": [\"Gemma3ForCausalLM\"], " BASE ", \"layer_types\": [\"full_attention\"]}", ERR_FORMAT,
        "'layer_types' has 1 entries for 4 layers");
    bad("{\"architectures\": [\"Gemma3ForCausalLM\"], " BASE ", \"rope_local_base_freq\": 0.5}", ERR_FORMAT,
        "'rope_local_base_freq': 0.5");
    bad("{\"architectures\": [\"Gemma3ForCausalLM\"], " BASE ", \"rope_scaling\": {\"rope_type\": \"linear\", "
        "\"factor\": 0.5}}", ERR_FORMAT, "'factor': 0.5");
    bad("{\"architectures\": [\"Gemma3ForCausalLM\"], " BASE ", \"use_bidirectional_attention\": true}", ERR_UNSUPPORTED,
        "use_bidirectional_attention");
    bad("[1, 2]", ERR_FORMAT, "object");
    bad("{\"architectures\": \"LlamaForCausalLM\"}", ERR_FORMAT, "architectures");
    bad("{\"architectures\": [", ERR_FORMAT, "invalid JSON");
    struct model_config c;
    struct err e = {0};
    CHECK(cfg_load(&c, "tests/data/no-such-model", &e) == ERR_NOTFOUND && strstr(e.msg, "config.json"),
          "missing config: %s", e.msg);
}

int main(void) {
    test_goldens();
    test_roundtrip();
    test_defaults_and_variants();
    test_gemma3();
    test_errors();
    return test_summary("test_config");
}
