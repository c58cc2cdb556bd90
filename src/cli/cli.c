// cli.c: long-option parsing for the subcommands (see cli.h).
#include "cli/cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int set_value(const struct cli_opt *o, const char *val, struct err *e) {
    char *end;
    errno = 0;
    switch (o->type) {
    case CLI_STR: *(const char **)o->dst = val; return 0;
    case CLI_INT: {
        long long v;
        if (str_to_int(val, -2147483647LL, 2147483647LL, &v))
            return err_set(e, ERR_USAGE, "--%s: expected an integer within +-2147483647, got '%s'", o->name, val);
        *(int *)o->dst = (int)v;
        return 0;
    }
    case CLI_I64: {
        long long v;
        if (str_to_int(val, INT64_MIN + 1, INT64_MAX, &v))
            return err_set(e, ERR_USAGE, "--%s: expected a 64-bit integer, got '%s'", o->name, val);
        *(int64_t *)o->dst = (int64_t)v;
        return 0;
    }
    case CLI_DBL: {
        double v = strtod(val, &end);
        if (errno || *end || end == val || !isfinite(v))
            return err_set(e, ERR_USAGE, "--%s: expected a number, got '%s'", o->name, val);
        *(double *)o->dst = v;
        return 0;
    }
    case CLI_FLAG: *(int *)o->dst = 1; return 0;
    case CLI_THREADS: {
        long long v;
        if (str_to_int(val, 0, 4096, &v))
            return err_set(e, ERR_USAGE, "--%s '%s': expected N >= 1 threads, or 0 for all cores", o->name, val);
        *(int *)o->dst = (int)v;
        return 0;
    }
    }
    return err_set(e, ERR_INTERNAL, "--%s: bad option type", o->name);
}

int cli_parse(int argc, char **argv, const struct cli_opt *opts, int n, struct err *e) {
    struct cli_pos none = {NULL, 0, 0};
    return cli_parse_pos(argc, argv, opts, n, &none, e);
}

int cli_parse_pos(int argc, char **argv, const struct cli_opt *opts, int n, struct cli_pos *pos, struct err *e) {
    int np = 0, only_pos = 0;
    const int max_pos = pos->max;
    // every option counts once: `--task a --task b` ran only b; none is documented as
    // repeatable, lists are comma-separated values of one option
    unsigned char seen[CLI_MAX_OPTS] = {0};
    if (n > CLI_MAX_OPTS) return err_set(e, ERR_INTERNAL, "cli_parse: %d options (max %d)", n, CLI_MAX_OPTS);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (only_pos || a[0] != '-' || a[1] != '-' ) {
            if (!only_pos && a[0] == '-' && a[1] != 0)
                return err_set(e, ERR_USAGE, "unknown option '%s' (options are --long)", a);
            if (np >= max_pos) return err_set(e, ERR_USAGE, "unexpected argument '%s'", a);
            pos->v[np++] = a;
            continue;
        }
        if (a[2] == 0) { only_pos = 1; continue; }
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const struct cli_opt *o = NULL;
        for (int k = 0; k < n; k++)
            if (strlen(opts[k].name) == len && memcmp(opts[k].name, name, len) == 0) { o = &opts[k]; break; }
        if (!o) return err_set(e, ERR_USAGE, "unknown option '--%.*s'", (int)len, name);
        if (seen[o - opts]++)
            return err_set(e, ERR_USAGE, "--%s given twice: give it once (a list is one comma-separated value: --%s a,b)",
                           o->name, o->name);
        const char *val;
        if (o->type == CLI_FLAG) {
            if (eq) return err_set(e, ERR_USAGE, "--%s takes no value", o->name);
            val = "1";
        } else if (eq) {
            val = eq + 1;
        } else {
            if (i + 1 >= argc) return err_set(e, ERR_USAGE, "--%s needs a value", o->name);
            val = argv[++i];
        }
        int rc = set_value(o, val, e);
        if (rc) return rc;
    }
    pos->n = np;
    return 0;
}

void cli_usage(const char *cmd, const char *synopsis, const struct cli_opt *opts, int n) {
    fprintf(stdout, "usage: hifa4-eval %s %s\n", cmd, synopsis ? synopsis : "");
    for (int k = 0; k < n; k++) {
        const char *h = opts[k].help ? opts[k].help : "";
        const char *colon = strstr(h, ": ");
        if (colon)
            fprintf(stdout, "  --%s %.*s\n      %s\n", opts[k].name, (int)(colon - h), h, colon + 2);
        else
            fprintf(stdout, "  --%s\n      %s\n", opts[k].name, h);
    }
}

int cli_split(char *buf, const char **items, int max, struct err *e) {
    // an empty element is an error: `--attn ''`, `,,` and `bf16,direct,` ran the defaults
    if (!*buf) return err_set(e, ERR_USAGE, "empty list (give at least one name)");
    int n = 0;
    for (char *p = buf;; ) {
        char *c = strchr(p, ',');
        if (c) *c = 0;
        if (!*p) return err_set(e, ERR_USAGE, "list element %d is empty (stray comma?)", n + 1);
        if (n >= max) return err_set(e, ERR_USAGE, "too many items in list (max %d)", max);
        items[n++] = p;
        if (!c) break;
        p = c + 1;
    }
    return n;
}
