// inspect.c: `hifa4-eval inspect PATH` - lists a safetensors checkpoint's tensors (name,
// dtype, shape, shard), its metadata and fingerprint, after full header validation.
#include <stdio.h>

#include "cli/cli.h"
#include "io/safetensors.h"

int cmd_inspect(int argc, char **argv, struct err *e) {
    int help = 0, quiet = 0;
    struct cli_opt opts[] = {{"help", CLI_FLAG, &help, "show this help"},
                             {"summary", CLI_FLAG, &quiet, "print only the totals"}};
    const char *pos[1];
    int np = 0;
    int rc = cli_parse(argc, argv, 1, opts, 2, pos, 1, &np, e);
    if (rc) return rc;
    if (help || np != 1) {
        cli_usage("inspect", "PATH (file, *.index.json or checkpoint directory)", opts, 2);
        return help ? 0 : err_set(e, ERR_USAGE, "inspect needs one PATH");
    }
    struct safetensors st;
    if ((rc = st_open(&st, pos[0], e))) return rc;
    char hex[65];
    if ((rc = st_fingerprint(&st, hex, e))) { st_close(&st); return rc; }
    int64_t params = 0;
    size_t bytes = 0;
    for (int i = 0; i < st.n_tensors; i++) {
        const struct st_tensor *t = &st.tensors[i];
        params += t->numel;
        bytes += t->nbytes;
        if (quiet) continue;
        printf("%-60s %-5s [", t->name, st_dtype_name(t->dtype));
        for (int d = 0; d < t->ndim; d++) printf("%s%lld", d ? ", " : "", (long long)t->shape[d]);
        printf("]%s%s\n", st.n_files > 1 ? "  " : "", st.n_files > 1 ? st.files[t->file].path : "");
    }
    printf("tensors %d, elements %lld, bytes %zu, files %d\nfingerprint %s\n", st.n_tensors,
           (long long)params, bytes, st.n_files, hex);
    if (st.metadata_json) printf("metadata %s\n", st.metadata_json);
    st_close(&st);
    return 0;
}
