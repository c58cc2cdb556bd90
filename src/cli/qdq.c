// qdq.c (CLI): `hifa4-eval qdq [--format F] FILE.jsonl` - every line of a 4-bit vectors file
// (spec/fp4.md section 7, spec/hif4.md) quantized by this build's codecs and printed as the
// same line with its own codes, scale bytes and outputs (src/attention/qdq_vec.h), so that
// `qdq FILE | cmp - FILE` checks a set of vectors from the command line. Blank lines are kept.
#include <stdio.h>
#include <stdlib.h>

#include "attention/qdq_vec.h"
#include "cli/cli.h"

static int qdq_text(char *buf, const char *path, enum qdq_vec_format f, struct err *e) {
    int line = 0;
    for (char *s = buf, *nl; s && *s; s = nl ? nl + 1 : NULL) {
        nl = strchr(s, '\n');
        if (nl) *nl = 0;
        line++;
        if (!*s) {
            putchar('\n');
            continue;
        }
        char ctx[4200];
        snprintf(ctx, sizeof ctx, "%s:%d", path, line);
        cJSON *j = NULL;
        int rc = json_parse(&j, s, strlen(s), ctx, e);
        if (!rc) rc = qdq_vec_line(j, f, ctx, e);
        char *out = rc ? NULL : cJSON_PrintUnformatted(j);
        cJSON_Delete(j);
        if (!rc && !out) rc = err_set(e, ERR_NOMEM, "%s: out of memory", ctx);
        if (rc) return rc;
        fputs(out, stdout);
        putchar('\n');
        free(out);
    }
    return 0;
}

int cmd_qdq(int argc, char **argv, struct err *e) {
    int help = 0;
    const char *format = NULL;
    struct cli_opt opts[] = {
        {"format", CLI_STR, &format, "mxfp4|nvfp4|nvfp4-1l|hif4|hif4-a6|sage3-p: quantize every line in this format "
                                     "(default: each line's own format field)"},
        {"help", CLI_FLAG, &help, "show this help"},
    };
    const char *pos[1];
    struct cli_pos pa = {pos, 1, 0};
    int rc = cli_parse_pos(argc, argv, opts, 2, &pa, e);
    const int n_pos = pa.n;
    if (rc) return rc;
    if (help) {
        cli_usage("qdq", "[--format F] FILE.jsonl", opts, 2);
        return 0;
    }
    if (n_pos != 1) return err_set(e, ERR_USAGE, "expected one vectors file (JSONL)");
    enum qdq_vec_format f = QDQ_VEC_LINE;
    if (format && (rc = qdq_vec_parse_format(format, &f, "--format", e))) return rc;
    char *buf = NULL;
    size_t len = 0;
    if ((rc = file_read_all(pos[0], &buf, &len, e))) return rc;
    rc = qdq_text(buf, pos[0], f, e);
    free(buf);
    fflush(stdout);
    return rc;
}
