// calibrate.c: `hifa4-eval calibrate` - Smooth-QK calibration (spec/calibration.md): runs the
// unquantized model (bf16 attention, f32 activations) over calibration samples, collecting
// Q/K statistics through the attention hook, then prints the gate table and writes the
// scales file.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/pool.h"
#include "attention/attn.h"
#include "attention/scales.h"
#include "calib/calib.h"
#include "calib/calib_run.h"
#include "calib/calib_source.h"
#include "base/dist.h"
#include "cli/cli.h"
#include "base/out_path.h"
#include "model/config.h"
#include "runplan/model_arg.h"
#include "cli/calib_rule_opts.h"
#include "runplan/run_calib.h"
#include "model/model.h"

static void print_gate(const struct calib_result *r) {
    printf("layer  MaxAbs_K   MaxAbs_Q   K_p99     rho_K    T_KQ    branch  alpha  max s (h,c)\n");
    for (int l = 0; l < r->n_layers; l++) {
        const struct calib_layer_stats *ls = &r->layer[l];
        float smax = 0;
        int at = 0;
        for (int i = 0; i < r->Hkv * r->d; i++)
            if (r->scales[(size_t)l * r->Hkv * r->d + i] > smax) { smax = r->scales[(size_t)l * r->Hkv * r->d + i]; at = i; }
        printf("%5d  %9.4g  %9.4g  %8.4g  %7.3f  %6.3f  %-6s  %.2f   %.4g (%d,%d)\n", l, ls->maxabs_k, ls->maxabs_q,
               ls->kp99, ls->rho_k, ls->t_kq, calib_branch_name(ls->branch), ls->alpha, smax, at / r->d, at % r->d);
    }
    // the decision is the one that made the scales: the paper rule's from these statistics, or
    // the measured rule's (whose statistics follow below)
    printf("model: rho_K %.3f (layer %d), T_KQ %.3f (layer %d) -> %s, alpha %.2f (%s rule)\n", r->rho_k, r->rho_layer,
           r->t_kq, r->t_layer, calib_branch_name(r->branch), r->alpha, r->rule == CALIB_RULE_MEASURED ? "measured" : "paper");
}

// *met = 1 once the ranks of an MPI job have met (dist_agree) after the checks.
static int calibrate_command(int argc, char **argv, int *met, struct err *e) {
    const char *model_arg = NULL, *calib = NULL, *out = NULL, *agg_s = "rms", *gate_s = "model", *weights = "auto",
               *bos_s = "auto";
    struct calib_rule_args ra;
    calib_rule_args_default(&ra);
    int samples = 1024, len = 512, help = 0, force = 0, threads = 0, batch_tokens = 8192, offline = 0;
    double alpha = NAN, rho_min = 6, t_strong = 3, t_mild = 2; // NAN: --alpha not given
    int64_t seed = 0;
    struct cli_opt opts[] = {
        {"model", CLI_STR, &model_arg, "M: checkpoint directory, ORG/NAME[@REVISION], FILE.gguf or a name from configs/models"},
        {"calib", CLI_STR, &calib, "SOURCE: text file (.txt/.zst) or directory, or brown (the Brown corpus, found like task data); never an evaluation split"},
        {"calib-samples", CLI_INT, &samples, "N: number of samples (default 1024)"},
        {"calib-len", CLI_INT, &len, "N: tokens per sample (default 512)"},
        {"agg", CLI_STR, &agg_s, "rms|mean|p99|max: aggregation over samples (default rms)"},
        {"gate", CLI_STR, &gate_s, "model|layer: one decision for the model or per layer (default model)"},
        {"alpha", CLI_DBL, &alpha, "A: force this alpha (sweeps); default: the gate decides"},
        {"rho-min", CLI_DBL, &rho_min, "X: gate threshold on rho_K (default 6)"},
        {"t-strong", CLI_DBL, &t_strong, "X: Strong if T_KQ > X (default 3)"},
        {"t-mild", CLI_DBL, &t_mild, "X: Mild if X <= T_KQ <= t-strong (default 2)"},
        {"seed", CLI_I64, &seed, "S: sample selection seed (default 0)"},
        {"calib-bos", CLI_STR, &bos_s, "auto|yes|no: each sample starts with BOS as the tokenizer adds it (auto), "
         "always, or never (robustness checks; the scales file's source says which)"},
        CALIB_RULE_CLI_OPTS(ra),
        {"out", CLI_STR, &out, "FILE: scales file (default: the cache, <cache>/scales/<model>-<fingerprint>.safetensors, where run and trace look)"},
        {"force", CLI_FLAG, &force, "allow a source that is evaluation data"},
        {"threads", CLI_THREADS, &threads, CLI_THREADS_HELP},
        {"batch-tokens", CLI_INT, &batch_tokens, "N: tokens per forward batch (default 8192)"},
        {"weights", CLI_STR, &weights, "auto|f32|stream|bf16: how the weights are held (default auto; stream when memory is short)"},
        {"offline", CLI_FLAG, &offline, "never download a named model"},
        {"help", CLI_FLAG, &help, "show this help"},
    };
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    int rc = cli_parse(argc, argv, opts, n_opts, e);
    if (rc) return rc;
    if (help) { cli_usage("calibrate", "--model M --calib SOURCE [options]", opts, n_opts); return 0; }
    if (!model_arg || !calib) return err_set(e, ERR_USAGE, "calibrate needs --model and --calib");
    struct calib_run_opts co;
    calib_run_opts_default(&co);
    if (calib_agg_parse(agg_s, &co.agg)) return err_set(e, ERR_USAGE, "--agg '%s': expected rms, mean, p99 or max", agg_s);
    if (!strcmp(gate_s, "model")) co.gate.mode = CALIB_GATE_MODEL;
    else if (!strcmp(gate_s, "layer")) co.gate.mode = CALIB_GATE_LAYER;
    else return err_set(e, ERR_USAGE, "--gate '%s': expected model or layer", gate_s);
    // a given --alpha outside 0..1 is an error (a negative one used to mean "the gate decides" silently)
    if (!isnan(alpha) && !(alpha >= 0 && alpha <= 1)) return err_set(e, ERR_USAGE, "--alpha %g: expected 0..1", alpha);
    if (samples < 1 || len < 2 || batch_tokens < len)
        return err_set(e, ERR_USAGE, "--calib-samples >= 1, --calib-len >= 2 and --batch-tokens >= --calib-len");
    if ((co.weights = model_weights_parse(weights)) < 0 || co.weights == MODEL_WEIGHTS_BF16)
        return err_set(e, ERR_USAGE, "--weights '%s': expected auto, f32 or stream (calibration runs f32 activations)", weights);
    co.gate.alpha_forced = isnan(alpha) ? -1 : alpha; // < 0: not forced (calib.h)
    co.gate.rho_min = rho_min;
    co.gate.t_strong = t_strong;
    co.gate.t_mild = t_mild;
    if ((rc = calib_rule_args_apply(&ra, &co, e))) return rc;
    if ((rc = calib_gate_check(&co.gate, e))) return rc;
    co.samples = samples;
    co.len = len;
    co.seed = (uint64_t)seed;
    co.bos = !strcmp(bos_s, "auto") ? -1 : !strcmp(bos_s, "yes") ? 1 : !strcmp(bos_s, "no") ? 0 : -2;
    if (co.bos == -2) return err_set(e, ERR_USAGE, "--calib-bos '%s': expected auto, yes or no", bos_s);
    co.force = force;
    co.threads = threads;
    if (threads > 0) pool_set_threads(threads); // the command owns the pool's size
    co.batch_tokens = batch_tokens;
    // a name from configs/models (as the README's `calibrate --model qwen3-8b`) resolves to its
    // cache directory like `run` does; the scales are then named after the registry name, which
    // is where `run --model qwen3-8b` looks for them (attn_scales_cache_path: the cache, keyed by
    // the weights' fingerprint; a hub id or GGUF file: NAME@commit12 or FILE-sha12);
    // under MPI rank 0 resolves (and fetches), the other ranks then find all of it in the caches
    struct model_ref mref;
    char text[4096];
    const int fetch_text = !strcmp(calib, RUN_CALIB_SOURCE) && !file_exists(calib) && !dir_exists(calib);
    rc = dist_rank() == 0 ? model_resolve(&mref, model_arg, offline, e) : 0;
    // --calib brown: the default calibration text, found and fetched as `run` finds it
    if (!rc && dist_rank() == 0 && fetch_text) rc = run_calib_text(text, sizeof text, NULL, offline, e);
    *met = 1;
    if ((rc = dist_agree(rc, e))) return rc;
    if (dist_rank() > 0 && !(rc = model_resolve(&mref, model_arg, 1, e)) && fetch_text)
        rc = run_calib_text(text, sizeof text, NULL, 1, e);
    if (rc) return rc;
    if (fetch_text) calib = text;
    if ((rc = out_path_check("--out", out, (const char *[]){model_arg, mref.dir, calib}, 3, e))) return rc;
    struct calib_run run;
    if ((rc = calib_run_source(&run, mref.dir, calib, &co, e))) return rc;
    if (dist_rank() > 0) { calib_run_free(&run); return 0; } // rank 0 aggregates and writes
    if (mref.origin != MODEL_ORIGIN_PATH) snprintf(run.model_id, sizeof run.model_id, "%s", mref.scales_id);
    print_gate(&run.result);
    calib_print_rules(stdout, &run.result);
    char def[4096], dir[4096];
    if (!out) { // the cache (attn_scales_cache_path), never the source tree
        if ((rc = attn_scales_cache_path(def, sizeof def, mref.scales_id, mref.dir, e))) goto done;
        snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(def, '/') - def), def);
        if ((rc = mkdir_p(dir, e))) goto done;
        out = def;
    }
    struct calib_meta m = {run.model_id, run.model_hash, run.source_desc, run.result.n_samples, len, (uint64_t)seed};
    if ((rc = calib_write(out, &run.result, &m, e))) goto done;
    printf("scales: %s\n", out);
done:
    calib_run_free(&run);
    return rc;
}

int cmd_calibrate(int argc, char **argv, struct err *e) {
    int met = 0;
    const int rc = calibrate_command(argc, argv, &met, e);
    return rc && !met ? dist_agree(rc, e) : rc; // failed before the ranks met: meet them there
}
