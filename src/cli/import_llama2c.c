// import_llama2c.c: `hifa4-eval import-llama2c MODEL.bin TOKENIZER.bin --out DIR` - llama2.c
// checkpoint + tokenizer -> HF Llama directory (llama2c.h). A tokenizer that cannot be
// converted is a warning (weights and config are still written; see llama2c.h).
#include <stdio.h>

#include "cli/cli.h"
#include "base/out_path.h"
#include "import/llama2c.h"
#include "import/out_dir.h"

int cmd_import_llama2c(int argc, char **argv, struct err *e) {
    int help = 0, force = 0;
    const char *out = NULL;
    struct cli_opt opts[] = {
        {"help", CLI_FLAG, &help, "show this help"},
        {"out", CLI_STR, &out, "DIR: output directory (created; must be empty)"},
        {"force", CLI_FLAG, &force, "import into a non-empty --out: first remove its model files (weights, config, tokenizer)"}};
    const char *pos[2];
    struct cli_pos pa = {pos, 2, 0};
    int rc = cli_parse_pos(argc, argv, opts, 3, &pa, e);
    const int np = pa.n;
    if (rc) return rc;
    if (help || np < 1 || !out) {
        cli_usage("import-llama2c", "MODEL.bin [TOKENIZER.bin] --out DIR [--force]", opts, 3);
        return help ? 0 : err_set(e, ERR_USAGE, "import-llama2c needs MODEL.bin and --out DIR");
    }
    if ((rc = import_out_dir(out, force ? IMPORT_DIR_FORCE : IMPORT_DIR_EMPTY, e))) return rc;
    if ((rc = out_path_check("--out", out, pos, np, e))) return rc;
    int tok_ok = 0;
    if ((rc = llama2c_import(pos[0], np > 1 ? pos[1] : NULL, out, &tok_ok, e))) return rc;
    log_info("import-llama2c: wrote %s (config.json, model.safetensors%s)", out, tok_ok ? ", tokenizer.json" : "");
    return 0;
}
