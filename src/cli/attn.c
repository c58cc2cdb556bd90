// attn.c: `hifa4-eval attn` - runs one attention kernel on a case file (q, k, v, scales,
// metadata params; ../shared/goldens/README.md attention/ section) and writes `out` [T][H][d]
// as F32 safetensors. This is how the attention goldens are checked from the command line.
#include <stdio.h>
#include <stdlib.h>

#include "base/pool.h"
#include "attention/attn.h"
#include "attention/case.h"
#include "cli/cli.h"
#include "base/out_path.h"
#include "io/safetensors.h"

int cmd_attn(int argc, char **argv, struct err *e) {
    const char *case_path = NULL, *mode = "bf16", *out_path = NULL, *vgroup = "token", *qformat = "hif4";
    const char *qmean = "token", *qdq_skip = "none";
    int tile = 128, threads = 0, help = 0;
    struct cli_opt opts[] = {
        {"case", CLI_STR, &case_path, "FILE: case safetensors (q, k, v, scales, metadata params)"},
        {"attn", CLI_STR, &mode, "MODE: attention mode (default bf16; see `hifa4-eval list`)"},
        {"tile", CLI_INT, &tile, "N: key tile Bc, a multiple of 64 (default 128)"},
        {"v-group", CLI_STR, &vgroup, "token|channel: HiF4 grouping axis of V (default token)"},
        {"qformat", CLI_STR, &qformat, "hif4|hif4-a6|nvfp4|mxfp4: 4-bit format (default hif4; spec/fp4.md for the FP4 formats)"},
        {"qmean", CLI_STR, &qmean, "token|channel: Q-Mean form of modes with Q-Mean (default token = paper Alg. 1)"},
        {"qdq-skip", CLI_STR, &qdq_skip, "q,k,v,p|none: operands left unquantized (default none)"},
        {"threads", CLI_THREADS, &threads, CLI_THREADS_HELP},
        {"out", CLI_STR, &out_path, "FILE: output safetensors with tensor out [T][H][d]"},
        {"help", CLI_FLAG, &help, "show this help"},
    };
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    int rc = cli_parse(argc, argv, opts, n_opts, e);
    if (rc) return rc;
    if (help) {
        cli_usage("attn", "--case F.safetensors --attn MODE [--tile N] [--qmean token|channel] --out OUT.safetensors",
                  opts, n_opts);
        return 0;
    }
    if (!case_path || !out_path) return err_set(e, ERR_USAGE, "attn: --case and --out are required");
    if ((rc = out_path_check("--out", out_path, (const char *[]){case_path}, 1, e))) return rc;
    struct attn_opts o;
    attn_opts_default(&o);
    o.tile = tile;
    o.n_threads = threads;
    if (threads > 0) pool_set_threads(threads); // the command owns the pool's size
    if ((rc = attn_parse_vgroup(vgroup, &o.v_group, e)) || (rc = attn_parse_qformat(qformat, &o.qformat, e)) ||
        (rc = attn_parse_qmean(qmean, &o.qmean, e)) || (rc = attn_parse_qdq_skip(qdq_skip, &o.qdq_skip, e)))
        return rc;
    if (!attn_mode_find(mode))
        return err_set(e, ERR_USAGE, "--attn '%s': unknown mode (known: %s)", mode, attn_mode_names());
    struct attn_case c;
    if ((rc = attn_case_load(&c, case_path, e))) return rc;
    size_t n = (size_t)c.T * c.H * c.d;
    float *out = malloc(n * sizeof(float));
    if (!out) {
        attn_case_free(&c);
        return err_set(e, ERR_NOMEM, "attn: out of memory");
    }
    double t0 = time_now();
    rc = attn_case_run(out, &c, mode, &o, e);
    double dt = time_now() - t0;
    if (!rc) {
        char tile_s[32];
        snprintf(tile_s, sizeof tile_s, "%d", o.tile);
        const char *meta[] = {"mode", mode, "tile", tile_s, "v_group", attn_vgroup_name(o.v_group),
                              "qformat", attn_qformat_name(o.qformat), "qmean", attn_qmean_name(o.qmean),
                              "qdq_skip", attn_qdq_skip_name(o.qdq_skip), "case", case_path};
        struct st_wtensor t = {"out", ST_F32, 3, {c.T, c.H, c.d}, out};
        rc = st_write(out_path, &t, 1, meta, 7, e);
        if (!rc) log_info("attn: %s (Q-Mean %s) on %s (T=%d H=%d Hkv=%d d=%d, tile %d) in %.3f s -> %s", mode,
                          attn_qmean_name(o.qmean), case_path, c.T, c.H, c.Hkv, c.d, o.tile, dt, out_path);
    }
    free(out);
    attn_case_free(&c);
    return rc;
}
