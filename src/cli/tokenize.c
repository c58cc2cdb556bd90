// tokenize.c: `hifa4-eval tokenize` - the ids a tokenizer gives for the exact bytes of a file
// (or stdin): no newline added or stripped, special tokens (BOS/EOS of the post-processor) added
// unless --no-special. Prints "id<TAB>piece" per token (piece escaped so it stays on one line:
// \n \r \t \\ and other control bytes as \xHH) or, with --ids-only, the ids space-separated.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "tokenizer/tokenizer.h"

static int read_stream(FILE *f, const char *name, char **buf, size_t *len, struct err *e) {
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    if (!b) return err_set(e, ERR_NOMEM, "%s: out of memory", name);
    for (;;) {
        if (n == cap) {
            char *nb = realloc(b, cap * 2);
            if (!nb) { free(b); return err_set(e, ERR_NOMEM, "%s: out of memory", name); }
            b = nb;
            cap *= 2;
        }
        size_t r = fread(b + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
    }
    if (ferror(f)) { free(b); return err_set(e, ERR_IO, "%s: read error: %s", name, strerror(errno)); }
    *buf = b;
    *len = n;
    return 0;
}

static void print_piece(const char *p) {
    for (; p && *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '\n') fputs("\\n", stdout);
        else if (c == '\r') fputs("\\r", stdout);
        else if (c == '\t') fputs("\\t", stdout);
        else if (c == '\\') fputs("\\\\", stdout);
        else if (c < 0x20 || c == 0x7f) printf("\\x%02x", c);
        else putchar(c);
    }
}

int cmd_tokenize(int argc, char **argv, struct err *e) {
    const char *tokdir = NULL, *model = NULL;
    int no_special = 0, ids_only = 0, help = 0;
    struct cli_opt opts[] = {
        {"tokenizer", CLI_STR, &tokdir, "DIR: directory (or file) with tokenizer.json[.zst]"},
        {"model", CLI_STR, &model, "DIR: model directory (its tokenizer.json)"},
        {"no-special", CLI_FLAG, &no_special, "do not add the post-processor's special tokens (BOS/EOS)"},
        {"ids-only", CLI_FLAG, &ids_only, "print the ids space-separated instead of id<TAB>piece lines"},
        {"help", CLI_FLAG, &help, "show this help"},
    };
    const int nopt = (int)(sizeof opts / sizeof opts[0]);
    const char *synopsis = "--tokenizer DIR|--model DIR [--no-special] [--ids-only] [FILE|-]";
    const char *pos[1];
    struct cli_pos pa = {pos, 1, 0};
    int rc = cli_parse_pos(argc, argv, opts, nopt, &pa, e);
    const int npos = pa.n;
    if (rc) return rc;
    if (help) { cli_usage("tokenize", synopsis, opts, nopt); return 0; }
    if (!tokdir == !model) return err_set(e, ERR_USAGE, "tokenize: give exactly one of --tokenizer or --model");
    const char *file = npos ? pos[0] : "-";

    struct tokenizer *t = NULL;
    double t0 = time_now();
    if ((rc = tok_load(&t, tokdir ? tokdir : model, e))) return rc;
    double t_load = time_now() - t0;

    char *buf = NULL;
    size_t len = 0;
    if (!strcmp(file, "-")) {
        rc = read_stream(stdin, "stdin", &buf, &len, e);
    } else {
        FILE *f = fopen(file, "rb");
        if (!f) rc = err_set(e, ERR_IO, "%s: %s", file, strerror(errno));
        else {
            rc = read_stream(f, file, &buf, &len, e);
            fclose(f);
        }
    }
    if (rc) { tok_free(t); return rc; }

    int32_t *ids = NULL;
    int n = 0;
    t0 = time_now();
    rc = tok_encode(t, buf, len, !no_special, &ids, &n, e);
    double t_enc = time_now() - t0;
    if (rc) { err_prefix(e, "%s", file); free(buf); tok_free(t); return rc; }
    if (ids_only) {
        for (int i = 0; i < n; i++) printf(i ? " %d" : "%d", (int)ids[i]);
        putchar('\n');
    } else {
        for (int i = 0; i < n; i++) {
            printf("%d\t", (int)ids[i]);
            print_piece(tok_piece(t, ids[i]));
            putchar('\n');
        }
    }
    if (fflush(stdout) != 0) rc = err_set(e, ERR_IO, "tokenize: writing stdout: %s", strerror(errno));
    log_info("tokenize: %zu bytes -> %d tokens; load %.3f s, encode %.3f s (%.1f MB/s)", len, n, t_load, t_enc,
             t_enc > 0 ? (double)len / 1e6 / t_enc : 0.0);
    free(ids);
    free(buf);
    tok_free(t);
    return rc;
}
