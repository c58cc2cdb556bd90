// logits.c: `hifa4-eval logits` - one sequence through the model, logits at every position
// into a safetensors file (tensor `logits`, F32 [T][vocab]); how goldens are checked.
#include <stdio.h>
#include <stdlib.h>

#include "attention/scales.h"
#include "cli/cli.h"
#include "base/out_path.h"
#include "base/pool.h"
#include "runplan/model_arg.h"
#include "model/model.h"
#include "io/safetensors.h"

#define LOGITS_MAX_IDS 1000000

// Reads tensor input_ids (any integer dtype, any shape: flattened) from a safetensors file.
static int read_ids_file(const char *path, int32_t **ids, int *T, struct err *e) {
    struct safetensors st;
    int rc = st_open(&st, path, e);
    if (rc) return rc;
    const struct st_tensor *t = st_find(&st, "input_ids");
    if (!t) rc = err_set(e, ERR_NOTFOUND, "%s: no tensor 'input_ids'", path);
    else if (t->numel <= 0 || t->numel > LOGITS_MAX_IDS)
        rc = err_set(e, ERR_RANGE, "%s: input_ids has %lld elements (1..%d)", path, (long long)t->numel, LOGITS_MAX_IDS);
    else if (!(*ids = malloc(sizeof(int32_t) * (size_t)t->numel))) rc = err_set(e, ERR_NOMEM, "out of memory");
    else if ((rc = st_to_i32(*ids, t, e))) { free(*ids); *ids = NULL; }
    else *T = (int)t->numel;
    st_close(&st);
    return rc;
}

static int parse_ids(const char *s, int32_t **ids, int *T, struct err *e) {
    size_t n = 1;
    for (const char *p = s; *p; p++) n += *p == ',';
    if (n > LOGITS_MAX_IDS) return err_set(e, ERR_USAGE, "--ids: too many ids");
    *ids = malloc(sizeof(int32_t) * n);
    if (!*ids) return err_set(e, ERR_NOMEM, "out of memory");
    int k = 0;
    const char *p = s;
    while (1) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 0x7fffffff || (*end && *end != ',')) {
            free(*ids);
            *ids = NULL;
            return err_set(e, ERR_USAGE, "--ids: bad token id near '%.20s' (expected comma-separated integers)", p);
        }
        (*ids)[k++] = (int32_t)v;
        if (!*end) break;
        p = end + 1;
    }
    *T = k;
    return 0;
}

int cmd_logits(int argc, char **argv, struct err *e) {
    int help = 0, tile = 128, threads = 0;
    const char *model_dir = NULL, *ids_s = NULL, *ids_file = NULL, *attn = "f32", *act = "bf16", *scales = NULL;
    const char *weights = "auto", *out = NULL, *qmean = "token";
    struct cli_opt opts[] = {
        {"help", CLI_FLAG, &help, "show this help"},
        {"model", CLI_STR, &model_dir, "M: checkpoint directory, ORG/NAME[@REVISION], FILE.gguf or a name from configs/models"},
        {"ids", CLI_STR, &ids_s, "LIST: comma-separated token ids"},
        {"ids-file", CLI_STR, &ids_file, "F: safetensors file with tensor input_ids"},
        {"attn", CLI_STR, &attn, "MODE: attention mode (default f32)"},
        {"act", CLI_STR, &act, "bf16|f32: activation rounding (default bf16)"},
        {"tile", CLI_INT, &tile, "N: attention tile Bc (default 128)"},
        {"qmean", CLI_STR, &qmean, "token|channel: Q-Mean form of modes with Q-Mean (default token)"},
        {"scales", CLI_STR, &scales, "F: Smooth-QK scales file (modes with sqk: hifa4, direct+qmean+sqk)"},
        {"weights", CLI_STR, &weights,
         "auto|f32|stream|bf16: weight residency (default auto; bf16: resident bf16 panels, half the memory, "
         "vdpbf16ps under --act bf16: docs/results/speed.md)"},
        {"threads", CLI_THREADS, &threads, CLI_THREADS_HELP},
        {"out", CLI_STR, &out, "F: output safetensors (tensor logits F32 [T][vocab])"},
    };
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    int rc = cli_parse(argc, argv, opts, n_opts, e);
    if (rc) return rc;
    const char *syn = "--model DIR (--ids 1,2,3 | --ids-file F) --attn MODE [--act bf16|f32] --out OUT.safetensors";
    if (help) { cli_usage("logits", syn, opts, n_opts); return 0; }
    if (!model_dir || !out || (!ids_s == !ids_file))
        return err_set(e, ERR_USAGE, "logits needs --model, --out and exactly one of --ids / --ids-file");
    struct model_ref mref;
    if ((rc = model_resolve(&mref, model_dir, 0, e))) return rc;
    if ((rc = out_path_check("--out", out, (const char *[]){model_dir, mref.dir, ids_file, scales}, 4, e))) return rc;
    model_dir = mref.dir;
    struct model_opts mo;
    model_opts_default(&mo);
    if (!strcmp(act, "bf16")) mo.act_bf16 = 1;
    else if (!strcmp(act, "f32")) mo.act_bf16 = 0;
    else return err_set(e, ERR_USAGE, "--act '%s': expected bf16 or f32", act);
    if ((mo.weights = model_weights_parse(weights)) < 0)
        return err_set(e, ERR_USAGE, "--weights '%s': expected auto, f32, stream or bf16", weights);
    mo.n_threads = threads;
    if (threads > 0) pool_set_threads(threads); // the command owns the pool's size
    struct attn_opts ao;
    attn_opts_default(&ao);
    ao.tile = tile;
    if ((rc = attn_parse_qmean(qmean, &ao.qmean, e))) return rc;

    int32_t *ids = NULL;
    int T = 0;
    if ((rc = ids_file ? read_ids_file(ids_file, &ids, &T, e) : parse_ids(ids_s, &ids, &T, e))) return rc;
    mo.max_tokens = T;
    mo.max_seq = T;
    struct model *m = NULL;
    struct attn_ctx *ctx = NULL;
    float *lg = NULL, *sc = NULL;
    int *pos = NULL;
    if ((rc = model_open(&m, model_dir, &mo, e))) goto done;
    const struct model_config *c = model_cfg(m);
    // scales file: checked against the model's shape and fingerprint (attn_scales_load)
    if (scales && (rc = attn_scales_load(&sc, scales, c->n_layers, c->n_kv_heads, c->head_dim, model_hash(m), e)))
        goto done;
    ao.n_threads = model_get_opts(m)->n_threads;
    if ((rc = model_attn_open(&ctx, m, attn, &ao, sc, e))) goto done;
    const int V = c->vocab_size;
    lg = malloc(sizeof(float) * (size_t)T * V);
    pos = malloc(sizeof(int) * (size_t)T);
    if (!lg || !pos) { rc = err_set(e, ERR_NOMEM, "logits: out of memory for %d x %d logits", T, V); goto done; }
    for (int i = 0; i < T; i++) pos[i] = i;
    const struct model_batch b = {.tokens = ids, .n_seq = 1, .seq_len = &T, .out_pos = pos, .n_out = T};
    if ((rc = model_forward(m, ctx, NULL, &b, lg, e))) goto done;
    struct st_wtensor t = {.name = "logits", .dtype = ST_F32, .ndim = 2, .shape = {T, V}, .data = lg};
    const char *meta[] = {"model", model_dir, "model_hash", model_hash(m), "attn", attn, "act", act,
                          "qmean", attn_qmean_name(ao.qmean)};
    if ((rc = st_write(out, &t, 1, meta, 5, e))) goto done;
    const struct model_stats *s = model_stats(m);
    log_info("logits: %d positions x %d vocab -> %s (%.3f s, %.0f tokens/s)", T, V, out, s->forward_s,
             T / (s->forward_s > 0 ? s->forward_s : 1e-9));
done:
    free(pos);
    free(lg);
    free(ids);
    attn_ctx_free(ctx); // before the scales it borrows
    model_free(m);
    free(sc);
    return rc;
}
