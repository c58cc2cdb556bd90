// import_gguf.c: `hifa4-eval import-gguf FILE.gguf --out DIR [--dtype f32|bf16]
// [--tokenizer-policy published|transformers]` - a llama.cpp GGUF model -> HF directory
// (gguf_import.h): dequantized weights, config.json, tokenizer.json, tokenizer_config.json.
#include <stdio.h>

#include "cli/cli.h"
#include "base/out_path.h"
#include "import/gguf_import.h"
#include "import/out_dir.h"

int cmd_import_gguf(int argc, char **argv, struct err *e) {
    int help = 0, force = 0;
    const char *out = NULL, *dtype = "f32", *policy = "published";
    struct cli_opt opts[] = {
        {"help", CLI_FLAG, &help, "show this help"},
        {"out", CLI_STR, &out, "DIR: output directory (created; must be empty)"},
        {"force", CLI_FLAG, &force, "import into a non-empty --out: first remove its model files (weights, config, tokenizer)"},
        {"dtype", CLI_STR, &dtype, "f32|bf16: weights as dequantized (f32, default, exact) or rounded to bf16"},
        {"tokenizer-policy", CLI_STR, &policy,
         "published|transformers: the GGUF's own tokenizer (default), or the ids transformers 4.45 gives for it"},
    };
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    const char *pos[1];
    struct cli_pos pa = {pos, 1, 0};
    int rc = cli_parse_pos(argc, argv, opts, n_opts, &pa, e);
    const int np = pa.n;
    if (rc) return rc;
    if (help || np < 1 || !out) {
        cli_usage("import-gguf", "FILE.gguf --out DIR [--force] [--dtype f32|bf16] [--tokenizer-policy published|transformers]",
                  opts, n_opts);
        return help ? 0 : err_set(e, ERR_USAGE, "import-gguf needs FILE.gguf and --out DIR");
    }
    struct gguf_import_opts o = {0};
    if (!strcmp(dtype, "bf16")) o.bf16 = 1;
    else if (strcmp(dtype, "f32")) return err_set(e, ERR_USAGE, "--dtype '%s': expected f32 or bf16", dtype);
    if (!strcmp(policy, "transformers")) o.tok_policy = GGUF_TOK_TRANSFORMERS;
    else if (strcmp(policy, "published"))
        return err_set(e, ERR_USAGE, "--tokenizer-policy '%s': expected published or transformers", policy);
    if ((rc = import_out_dir(out, force ? IMPORT_DIR_FORCE : IMPORT_DIR_EMPTY, e))) return rc;
    if ((rc = out_path_check("--out", out, pos, 1, e))) return rc;
    struct gguf_import_info info;
    double t0 = time_now();
    if ((rc = gguf_import(pos[0], out, &o, &info, e))) return rc;
    log_info("import-gguf: %s -> %s (%s, %d tensors: %s -> %s%s, %d tokens) in %.1fs", pos[0], out, info.arch,
             info.n_tensors, info.types, o.bf16 ? "BF16" : "F32", info.tied ? ", tied embeddings" : "", info.n_vocab,
             time_now() - t0);
    return 0;
}
