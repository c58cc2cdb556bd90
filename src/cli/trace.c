// trace.c: `hifa4-eval trace` - attention diagnostics of several modes on the same inputs
// (spec/attention.md section 5; paper Table 4, Figure 8): trace.json, SVGs and a Table 4-style
// summary. The logic is in src/diag/trace.c.
#include <stdio.h>
#include <stdlib.h>

#include "attention/scales.h"
#include "base/pool.h"
#include "cli/cli.h"
#include "base/out_path.h"
#include "model/config.h"
#include "runplan/model_arg.h"
#include "diag/trace.h"

int cmd_trace(int argc, char **argv, struct err *e) {
    const char *model_arg = NULL, *task = NULL, *data_dir = NULL, *text = NULL, *ctx_s = NULL, *attn = NULL;
    const char *scales = NULL, *out = NULL, *tokenizer = NULL, *act = "bf16", *vgroup = "token", *qformat = "hif4";
    const char *qmean = "token", *qdq_skip = "none";
    int limit = -1, tile = 128, threads = 0, batch_tokens = 8192, offline = 0, help = 0;
    struct cli_opt opts[] = {
        {"model", CLI_STR, &model_arg, "M: checkpoint directory, ORG/NAME[@REVISION] (Hugging Face cache, else downloaded), FILE.gguf or a name from configs/models (required)"},
        {"task", CLI_STR, &task, "T: trace the model inputs of this task (as `run` builds them)"},
        {"data-dir", CLI_STR, &data_dir, "D: dataset root for --task"},
        {"text", CLI_STR, &text, "FILE: trace windows of this text (plain or .zst)"},
        {"ctx", CLI_STR, &ctx_s, "N,M: --text window lengths (default 4096,16384, capped to the model's)"},
        {"limit", CLI_INT, &limit, "N: task items (default all) or windows per length (default 4)"},
        {"attn", CLI_STR, &attn, "m1,m2: attention modes (default bf16,direct,hifa4)"},
        {"tokenizer", CLI_STR, &tokenizer, "DIR: tokenizer for --text/--task (default: the model directory)"},
        {"scales", CLI_STR, &scales, "F: Smooth-QK scales (default: the ones calibrate wrote for the model, if any)"},
        {"tile", CLI_INT, &tile, "N: key tile Bc (default 128)"},
        {"v-group", CLI_STR, &vgroup, "token|channel: V grouping (default token)"},
        {"qformat", CLI_STR, &qformat, "hif4|hif4-a6|nvfp4|mxfp4: 4-bit format (default hif4)"},
        {"qmean", CLI_STR, &qmean, "token|channel|both: Q-Mean form of modes with Q-Mean (default token; both = each "
                                   "such mode in both forms, side by side)"},
        {"qdq-skip", CLI_STR, &qdq_skip, "q,k,v,p|none: operands left unquantized (default none)"},
        {"act", CLI_STR, &act, "bf16|f32: activation rounding (default bf16)"},
        {"threads", CLI_THREADS, &threads, CLI_THREADS_HELP},
        {"batch-tokens", CLI_INT, &batch_tokens, "N: tokens per forward batch (default 8192)"},
        {"out", CLI_STR, &out, "DIR: trace.json and SVGs (default results/trace-<model>)"},
        {"offline", CLI_FLAG, &offline, "never download a named model"},
        {"help", CLI_FLAG, &help, "show this help"},
    };
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    const char *syn = "--model M (--task T [--data-dir D] [--limit N] | --text FILE [--ctx 4096,16384]) "
                      "[--attn direct,hifa4] [--qmean token|channel|both] [--scales F] [--out DIR]";
    int rc = cli_parse(argc, argv, opts, n_opts, e);
    if (rc) return rc;
    if (help) { cli_usage("trace", syn, opts, n_opts); return 0; }
    if (!model_arg) return err_set(e, ERR_USAGE, "trace needs --model");
    if (!task == !text) return err_set(e, ERR_USAGE, "trace needs exactly one of --task and --text");
    if (task && ctx_s) return err_set(e, ERR_USAGE, "--ctx applies to --text only");
    if (batch_tokens < 16) return err_set(e, ERR_USAGE, "--batch-tokens %d: must be >= 16", batch_tokens);
    struct trace_opts o;
    trace_opts_default(&o);
    if (!strcmp(act, "bf16")) o.act_bf16 = 1;
    else if (!strcmp(act, "f32")) o.act_bf16 = 0;
    else return err_set(e, ERR_USAGE, "--act '%s': expected bf16 or f32", act);
    if ((rc = attn_parse_vgroup(vgroup, &o.v_group, e)) || (rc = attn_parse_qformat(qformat, &o.qformat, e)) ||
        (rc = attn_parse_qdq_skip(qdq_skip, &o.qdq_skip, e)))
        return rc;
    if (!strcmp(qmean, "both")) o.qmean = TRACE_QMEAN_BOTH;
    else if (attn_parse_qmean(qmean, &o.qmean, e)) return err_set(e, ERR_USAGE, "--qmean '%s': expected token, channel or both", qmean);
    o.tile = tile;
    o.threads = threads;
    if (threads > 0) pool_set_threads(threads); // the command owns the pool's size
    o.batch_tokens = batch_tokens;
    o.scales = scales;
    char modes_buf[1024];
    const char *modes[TRACE_MAX_MODES];
    snprintf(modes_buf, sizeof modes_buf, "%s", attn ? attn : "bf16,direct,hifa4");
    int n_modes = cli_split(modes_buf, modes, TRACE_MAX_MODES, e);
    if (n_modes < 0) return err_prefix(e, "--attn");

    char def[4400];
    struct model_ref mref;
    if ((rc = model_resolve(&mref, model_arg, offline, e))) return rc;
    const char *model_dir = mref.dir;
    if ((rc = out_path_check("--out", out, (const char *[]){model_arg, model_dir, text, tokenizer, scales}, 5, e))) return rc;
    // a name, hub id or GGUF: its directory's name says nothing (a revision, a commit, a hash),
    // so the default scales are the ones calibrate writes for it (attn_scales_default of its id)
    // and the trace is named after it
    int named = mref.origin != MODEL_ORIGIN_PATH;
    char named_scales[4400];
    if (named && !o.scales && attn_scales_default(named_scales, sizeof named_scales, mref.scales_id, mref.dir))
        o.scales = named_scales;
    struct trace_set *sets = NULL;
    int n_sets = 0;
    if (task) {
        if ((rc = trace_sets_task(&sets, model_dir, tokenizer, task, data_dir, limit > 0 ? limit : 0, e))) return rc;
        n_sets = 1;
    } else {
        char ctx_buf[256];
        const char *items[8];
        int ctx[8], n_ctx;
        snprintf(ctx_buf, sizeof ctx_buf, "%s", ctx_s ? ctx_s : "4096,16384");
        if ((n_ctx = cli_split(ctx_buf, items, 8, e)) < 0) return err_prefix(e, "--ctx");
        for (int i = 0; i < n_ctx; i++) {
            long long v;
            if (str_to_int(items[i], 2, 1 << 24, &v))
                return err_set(e, ERR_USAGE, "--ctx '%s': expected lengths 2..16777216", items[i]);
            for (int k = 0; k < i; k++)
                if (ctx[k] == v) return err_set(e, ERR_USAGE, "--ctx: length %lld given twice", v);
            ctx[i] = (int)v;
        }
        if (!ctx_s) { // the defaults adapt to the model; explicit lengths are checked by trace_sets_text
            struct model_config cfg;
            if ((rc = cfg_load(&cfg, model_dir, e))) return rc;
            int k = 0;
            for (int i = 0; i < n_ctx; i++)
                if (ctx[i] <= cfg.max_seq) ctx[k++] = ctx[i];
                else log_warn("trace: default --ctx %d exceeds the model's max_position_embeddings %d: dropped", ctx[i], cfg.max_seq);
            if (!k) ctx[k++] = cfg.max_seq;
            n_ctx = k;
        }
        if ((rc = trace_sets_text(&sets, model_dir, tokenizer, text,
                                   (struct trace_windows){ctx, n_ctx, limit >= 0 ? limit : 4}, e))) return rc;
        n_sets = n_ctx;
    }
    struct trace_result r;
    if ((rc = trace_run(&r, model_dir, sets, n_sets, (struct trace_modes){modes, n_modes}, &o, e))) goto done;
    if (named) snprintf(r.model_id, sizeof r.model_id, "%s", mref.name);
    if (!out) {
        snprintf(def, sizeof def, "results/trace-%s", r.model_id);
        out = def;
    }
    trace_print(stdout, &r);
    if (!(rc = trace_write(&r, out, e))) printf("wrote %s/trace.json and SVGs\n", out);
    trace_result_free(&r);
done:
    trace_sets_free(sets, n_sets);
    return rc;
}
