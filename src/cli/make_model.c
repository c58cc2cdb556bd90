// make_model.c: `hifa4-eval make-model` - deterministic synthetic checkpoint of any supported
// architecture and size (make_model.h): config.json + bf16 model.safetensors + tokenizer.json.
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "base/out_path.h"
#include "import/make_model.h"
#include "import/out_dir.h"

// "LAYER:CHANNEL:VALUE" of option opt, the n-th of at most MAKE_MAX_OUTLIERS plants.
static int parse_triple(const char *s, const char *opt, int n_have, int *l, int *c, float *v, struct err *e) {
    if (n_have >= MAKE_MAX_OUTLIERS) return err_set(e, ERR_USAGE, "%s: at most %d", opt, MAKE_MAX_OUTLIERS);
    int n = 0;
    if (sscanf(s, "%d:%d:%f%n", l, c, v, &n) != 3 || s[n])
        return err_set(e, ERR_USAGE, "%s '%s': expected LAYER:CHANNEL:VALUE", opt, s);
    return 0;
}

static int parse_plant(const char *s, struct make_model_opts *o, struct err *e) {
    int rc = parse_triple(s, "--plant-outlier", o->n_outliers, &o->outliers[o->n_outliers].layer,
                          &o->outliers[o->n_outliers].channel, &o->outliers[o->n_outliers].gamma, e);
    o->n_outliers += !rc;
    return rc;
}

static int parse_k_bias(const char *s, struct make_model_opts *o, struct err *e) {
    int rc = parse_triple(s, "--plant-k-bias", o->n_k_bias, &o->k_bias[o->n_k_bias].layer,
                          &o->k_bias[o->n_k_bias].channel, &o->k_bias[o->n_k_bias].value, e);
    o->n_k_bias += !rc;
    return rc;
}

// A comma list of plants, each parsed by one().
static int parse_list(const char *list, const char *opt, int (*one)(const char *, struct make_model_opts *, struct err *),
                      struct make_model_opts *o, struct err *e) {
    char buf[1024];
    const char *items[64];
    snprintf(buf, sizeof buf, "%s", list);
    int n = cli_split(buf, items, 64, e), rc = 0;
    if (n < 0) return err_prefix(e, "%s", opt);
    for (int i = 0; i < n && !rc; i++) rc = one(items[i], o, e);
    return rc;
}

int cmd_make_model(int argc, char **argv, struct err *e) {
    struct make_model_opts o;
    make_model_opts_default(&o);
    int help = 0, tied = -1, force = 0;
    int64_t seed = 1;
    const char *arch = "qwen3", *out = NULL, *plant = NULL, *k_bias = NULL;
    struct cli_opt opts[] = {
        {"help", CLI_FLAG, &help, "show this help"},
        {"arch", CLI_STR, &arch, "A: qwen3|qwen2|llama|mistral|gemma2|phi3|gemma3 (default qwen3)"},
        {"layers", CLI_INT, &o.n_layers, "N: layers (default 2)"},
        {"dim", CLI_INT, &o.dim, "N: hidden size (default 128)"},
        {"heads", CLI_INT, &o.n_heads, "N: attention heads (default 4)"},
        {"kv-heads", CLI_INT, &o.n_kv_heads, "N: key/value heads (default 2)"},
        {"head-dim", CLI_INT, &o.head_dim, "N: head dimension (default dim/heads)"},
        {"ffn", CLI_INT, &o.hidden_dim, "N: intermediate size (default 256)"},
        {"vocab", CLI_INT, &o.vocab_size, "N: vocabulary (default 512, or the tokenizer's)"},
        {"max-seq", CLI_INT, &o.max_seq, "N: max_position_embeddings (default 4096)"},
        {"tied", CLI_INT, &tied, "0|1: tie lm_head to the embedding (default: per architecture)"},
        {"seed", CLI_I64, &seed, "N: PRNG seed (default 1)"},
        {"tokenizer", CLI_STR, &o.tokenizer_dir, "DIR: copy this tokenizer and take its vocab size"},
        {"plant-outlier", CLI_STR, &plant, "L:C:G: k_norm gain of layer L, channel C = G and q_norm gain 0.1 there, like Qwen3-8B (qwen3, gemma3: stored as G - 1; comma list)"},
        {"plant-k-bias", CLI_STR, &k_bias, "L:C:V: k_proj bias of layer L, kv channel C (head * head_dim + channel) = V, "
         "a K outlier from the bias as in Qwen2.5 (qwen2; comma list)"},
        {"config-only", CLI_FLAG, &o.config_only, "write config.json only"},
        {"out", CLI_STR, &out, "DIR: output directory (created; must be empty)"},
        {"force", CLI_FLAG, &force, "write into a non-empty --out: first remove its model files (weights, config, tokenizer)"},
    };
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    int rc = cli_parse(argc, argv, opts, n_opts, e);
    if (rc) return rc;
    if (help) { cli_usage("make-model", "--arch A [sizes] [--seed N] --out DIR", opts, n_opts); return 0; }
    if (!out) return err_set(e, ERR_USAGE, "make-model needs --out DIR");
    if ((o.arch = cfg_arch_from_short(arch)) < 0)
        return err_set(e, ERR_USAGE, "--arch '%s': expected qwen3, qwen2, llama, mistral, gemma2, phi3 or gemma3", arch);
    if (seed < 0) return err_set(e, ERR_USAGE, "--seed %lld: must be >= 0", (long long)seed);
    o.seed = (uint64_t)seed;
    o.tied = tied;
    if ((plant && (rc = parse_list(plant, "--plant-outlier", parse_plant, &o, e))) ||
        (k_bias && (rc = parse_list(k_bias, "--plant-k-bias", parse_k_bias, &o, e))))
        return rc;
    // as the imports: a non-empty directory kept the old model's other files
    if ((rc = out_path_check("--out", out, (const char *[]){o.tokenizer_dir}, 1, e)) ||
        (rc = import_out_dir(out, force ? IMPORT_DIR_FORCE : IMPORT_DIR_EMPTY, e)))
        return rc;
    if ((rc = make_model(&o, out, e))) return rc;
    log_info("make-model: wrote %s", out);
    return 0;
}
