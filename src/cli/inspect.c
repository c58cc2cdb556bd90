// inspect.c: `hifa4-eval inspect PATH` - lists a safetensors checkpoint's tensors (name,
// dtype, shape, shard), its metadata and fingerprint, after full header validation; or, for a
// *.gguf file, its metadata (arrays abbreviated) and tensors (ggml type, ne) after gguf_open.
#include <stdio.h>

#include "cli/cli.h"
#include "io/ggml_quants.h"
#include "io/gguf.h"
#include "io/safetensors.h"

static void print_gguf_value(const struct gguf_kv *kv) {
    if (kv->type == GGUF_ARR) printf("[%llu] ", (unsigned long long)kv->n);
    uint64_t shown = kv->n < 8 ? kv->n : 8;
    for (uint64_t i = 0; i < shown; i++) {
        if (i) printf(", ");
        if (kv->elem == GGUF_STR) {
            putchar('\'');
            for (size_t k = 0; k < kv->strs[i].len && k < 120; k++) {
                unsigned char c = (unsigned char)kv->strs[i].s[k];
                if (c < 0x20 || c == 0x7f) printf("\\x%02x", c);
                else putchar(c);
            }
            printf("%s'", kv->strs[i].len > 120 ? "..." : "");
        }
        else if (kv->elem == GGUF_F32 || kv->elem == GGUF_F64) printf("%.9g", gguf_kv_float(kv, i));
        else printf("%lld", (long long)gguf_kv_int(kv, i));
    }
    printf("%s\n", shown < kv->n ? ", ..." : "");
}

static int inspect_gguf(const char *path, int quiet, struct err *e) {
    struct gguf g;
    int rc = gguf_open(&g, path, e);
    if (rc) return rc;
    for (int64_t i = 0; i < g.n_kv && !quiet; i++) {
        const struct gguf_kv *kv = &g.kv[i];
        printf("%-48s %-8s ", kv->key, gguf_vtype_name(kv->type == GGUF_ARR ? kv->elem : kv->type));
        print_gguf_value(kv);
    }
    int64_t params = 0;
    size_t bytes = 0;
    for (int64_t i = 0; i < g.n_tensors; i++) {
        const struct gguf_tensor *t = &g.tensors[i];
        params += t->numel;
        bytes += t->nbytes;
        if (quiet) continue;
        printf("%-48s %-7s ne [", t->name, ggml_type_name(t->type));
        for (int d = 0; d < t->n_dims; d++) printf("%s%lld", d ? ", " : "", (long long)t->ne[d]);
        printf("]\n");
    }
    char hex[65];
    gguf_sha256(&g, hex);
    printf("GGUF v%u, keys %lld, tensors %lld, elements %lld, bytes %zu, alignment %u\nsha256 %s\n", g.version,
           (long long)g.n_kv, (long long)g.n_tensors, (long long)params, bytes, g.alignment, hex);
    gguf_close(&g);
    return 0;
}

int cmd_inspect(int argc, char **argv, struct err *e) {
    int help = 0, quiet = 0;
    struct cli_opt opts[] = {{"help", CLI_FLAG, &help, "show this help"},
                             {"summary", CLI_FLAG, &quiet, "print only the totals"}};
    const char *pos[1];
    struct cli_pos pa = {pos, 1, 0};
    int rc = cli_parse_pos(argc, argv, opts, 2, &pa, e);
    const int np = pa.n;
    if (rc) return rc;
    if (help || np != 1) {
        cli_usage("inspect", "PATH (file, *.index.json, checkpoint directory, or FILE.gguf)", opts, 2);
        return help ? 0 : err_set(e, ERR_USAGE, "inspect needs one PATH");
    }
    if (str_ends_with(pos[0], ".gguf")) return inspect_gguf(pos[0], quiet, e);
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
