// diagnose.c: `hifa4-eval diagnose` - outlier diagnostics of a model (spec/calibration.md
// sections 2-6): Table 1 row, Table 8 per layer, Jaccard stability over the built-in prompts,
// diagnose.json and the Figure 3/4/6 SVGs. The logic is in src/diag/diagnose.c.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/pool.h"
#include "cli/cli.h"
#include "base/out_path.h"
#include "diag/diagnose.h"
#include "diag/gate_plane.h"
#include "runplan/model_arg.h"
#include "cli/calib_rule_opts.h"
#include "runplan/run_calib.h"

// --plane: the gate planes of several calibrations (diag/gate_plane.h)
static int plane_command(const char *plane, const char *plane_labels, const char *out, struct err *e) {
    if (!out) return err_set(e, ERR_USAGE, "--plane needs --out DIR");
    char fb[8192], lb[8192];
    const char *files[32], *labels[32];
    snprintf(fb, sizeof fb, "%s", plane);
    int n = cli_split(fb, files, 32, e), nl = 0;
    if (n < 0) return e->code;
    if (plane_labels) {
        snprintf(lb, sizeof lb, "%s", plane_labels);
        if ((nl = cli_split(lb, labels, 32, e)) < 0) return e->code;
        if (nl != n) return err_set(e, ERR_USAGE, "--plane-labels: %d labels for %d files", nl, n);
    }
    int rc = gate_plane_write(files, plane_labels ? labels : NULL, n, out, e);
    if (!rc) printf("wrote %s/{fig6_gate_plane_paper.svg, fig6_gate_plane_measured.svg}\n", out);
    return rc;
}

int cmd_diagnose(int argc, char **argv, struct err *e) {
    const char *model_arg = NULL, *calib = NULL, *out = NULL, *agg_s = "rms", *tokenizer = NULL, *plane = NULL,
               *plane_labels = NULL;
    int samples = 1024, len = 512, help = 0, force = 0, threads = 0, batch_tokens = 8192, offline = 0;
    double rho_min = 6, t_strong = 3, t_mild = 2;
    int64_t seed = 0;
    struct calib_rule_args ra;
    calib_rule_args_default(&ra);
    struct cli_opt opts[] = {
        {"model", CLI_STR, &model_arg, "M: checkpoint directory, ORG/NAME[@REVISION] (Hugging Face cache, else downloaded), FILE.gguf or a name from configs/models (required)"},
        {"calib", CLI_STR, &calib, "SOURCE: statistics from this text file/directory, or brown (the Brown corpus, found like task data; default: the 8 built-in prompts)"},
        {"calib-samples", CLI_INT, &samples, "N: samples from --calib (default 1024)"},
        {"calib-len", CLI_INT, &len, "N: tokens per --calib sample (default 512)"},
        {"seed", CLI_I64, &seed, "S: --calib sample selection seed (default 0)"},
        {"agg", CLI_STR, &agg_s, "rms|mean|p99|max: aggregation over samples (default rms)"},
        {"rho-min", CLI_DBL, &rho_min, "X: gate threshold on rho_K (default 6)"},
        {"t-strong", CLI_DBL, &t_strong, "X: Strong if T_KQ > X (default 3)"},
        {"t-mild", CLI_DBL, &t_mild, "X: Mild if X <= T_KQ <= t-strong (default 2)"},
        CALIB_RULE_CLI_OPTS(ra),
        {"plane", CLI_STR, &plane, "F1,F2,..: no model: Figure 6's gate plane of these scales files under both rules "
                                   "(--out DIR; docs/results/gate.md)"},
        {"plane-labels", CLI_STR, &plane_labels, "a,b,..: the --plane points' labels (default: each file's model id)"},
        {"tokenizer", CLI_STR, &tokenizer, "DIR: tokenizer for the built-in prompts (default: the model's)"},
        {"out", CLI_STR, &out, "DIR: diagnose.json and SVGs (default results/diagnose-<model>)"},
        {"force", CLI_FLAG, &force, "allow a --calib source that is evaluation data"},
        {"threads", CLI_THREADS, &threads, CLI_THREADS_HELP},
        {"batch-tokens", CLI_INT, &batch_tokens, "N: tokens per forward batch (default 8192)"},
        {"offline", CLI_FLAG, &offline, "never download a named model"},
        {"help", CLI_FLAG, &help, "show this help"},
    };
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    int rc = cli_parse(argc, argv, opts, n_opts, e);
    if (rc) return rc;
    if (help) { cli_usage("diagnose", "--model M [--calib SOURCE] [--out DIR]", opts, n_opts); return 0; }
    if (plane) return plane_command(plane, plane_labels, out, e);
    if (!model_arg) return err_set(e, ERR_USAGE, "diagnose needs --model");
    struct diag_opts o;
    diag_opts_default(&o);
    if (calib_agg_parse(agg_s, &o.run.agg)) return err_set(e, ERR_USAGE, "--agg '%s': expected rms, mean, p99 or max", agg_s);
    if (samples < 1 || len < 2 || batch_tokens < 16)
        return err_set(e, ERR_USAGE, "--calib-samples >= 1, --calib-len >= 2 and --batch-tokens >= 16");
    if (calib && tokenizer) return err_set(e, ERR_USAGE, "--tokenizer applies to the built-in prompts only, not --calib");
    if (calib && batch_tokens < len) return err_set(e, ERR_USAGE, "--batch-tokens %d < --calib-len %d", batch_tokens, len);
    o.calib = calib;
    o.run.samples = samples;
    o.run.len = len;
    o.run.seed = (uint64_t)seed;
    o.run.force = force;
    o.run.threads = threads;
    if (threads > 0) pool_set_threads(threads); // the command owns the pool's size
    o.run.batch_tokens = batch_tokens;
    o.run.gate.rho_min = rho_min;
    o.run.gate.t_strong = t_strong;
    o.run.gate.t_mild = t_mild;
    if ((rc = calib_rule_args_apply(&ra, &o.run, e))) return rc;
    if ((rc = calib_gate_check(&o.run.gate, e))) return rc;
    char def[4400];
    struct model_ref mref;
    if ((rc = model_resolve(&mref, model_arg, offline, e))) return rc;
    if ((rc = out_path_check("--out", out, (const char *[]){model_arg, mref.dir, calib, tokenizer}, 4, e))) return rc;
    // --calib brown: the default calibration text, found and fetched as `calibrate` finds it
    char text[4096];
    if (calib && !strcmp(calib, RUN_CALIB_SOURCE) && !file_exists(calib) && !dir_exists(calib)) {
        if ((rc = run_calib_text(text, sizeof text, NULL, offline, e))) return rc;
        o.calib = text;
    }
    struct diagnose d;
    if ((rc = diag_run(&d, mref.dir, tokenizer, &o, e))) return rc;
    // a name, hub id or GGUF names the model (its directory is a revision, commit or hash)
    if (mref.origin != MODEL_ORIGIN_PATH) snprintf(d.model_id, sizeof d.model_id, "%s", mref.name);
    if (!out) {
        snprintf(def, sizeof def, "results/diagnose-%s", d.model_id);
        out = def;
    }
    diag_print(stdout, &d);
    calib_print_rules(stdout, &d.stats.result);
    if (!(rc = diag_write(&d, out, e)))
        printf("wrote %s/{diagnose.json, %sfig3_layer0_heatmap.svg, fig4_layer_k_stats.svg, fig6_gate_plane.svg}\n", out,
               d.gains.n_layers ? "fig2_k_norm_gains.svg, " : "");
    diag_free(&d);
    return rc;
}
