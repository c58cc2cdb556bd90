// cli_util.h: driving the binary (HIFA4_BIN) from a test, for the hostile-input tests: run a
// shell command, read a file, and `expect` - exit code and the needles of the last message.
// The including test sets `bin` and `tmp` (its scratch directory) before the first call, or
// calls cli_begin. The helpers are static inline: a test that uses some of them builds without
// unused-function warnings.
#ifndef HIFA4_CLI_UTIL_H
#define HIFA4_CLI_UTIL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "base/common.h"
#include "test.h"

static const char *bin;
static char tmp[1024];

// Runs a shell command; its exit status, or 128 + signal when it crashed.
static inline int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int sh(const char *fmt, ...) {
    char cmd[16384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    if (st == -1) return -1;
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return WEXITSTATUS(st); // the shell reports a crashed child as 128 + signal too
}

static inline char *slurp(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline char *slurp(const char *fmt, ...) {
    char path[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(path, sizeof path, fmt, ap);
    va_end(ap);
    char *b = NULL;
    size_t n;
    struct err e = {0};
    return file_read_all(path, &b, &n, &e) ? NULL : b;
}

// The test's set-up: bin from HIFA4_BIN (default ./hifa4-eval), tmp = $HIFA4_TMP/NAME (default
// build/tmp/NAME), emptied and made. 0, or the shell's status when the directory cannot be made
// (checked here, so the caller only returns its summary).
static inline int cli_begin(const char *name) {
    bin = getenv("HIFA4_BIN");
    if (!bin) bin = "./hifa4-eval";
    const char *t = getenv("HIFA4_TMP");
    snprintf(tmp, sizeof tmp, "%s/%s", t ? t : "build/tmp", name);
    int rc = sh("rm -rf %s && mkdir -p %s", tmp, tmp);
    CHECK(rc == 0, "mkdir %s (exit %d)", tmp, rc);
    return rc;
}

// A log line model_open prints: a case that must fail before the weights load must not show it.
#define MODEL_LOADED "parameters; weights"


// Runs a shell command with stderr to a file; checks the exit code and that stderr's last
// message holds every '|'-separated needle (and, for a failure, that nothing says the weights
// loaded when must_be_early). Returns the check's outcome.
enum early { ANY_TIME, BEFORE_WEIGHTS };
static inline int expect(int want, const char *needles, enum early early, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static inline int expect(int want, const char *needles, enum early early, const char *fmt, ...) {
    char cmd[12000], full[16000], err[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(err, sizeof err, "%s/expect.err", tmp);
    snprintf(full, sizeof full, "timeout 120 %s >/dev/null 2>%s", cmd, err);
    int rc = sh("%s", full);
    char *s = slurp("%s", err);
    int ok = rc == want && s;
    for (const char *p = needles; ok && p && *p;) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        char nd[512];
        snprintf(nd, sizeof nd, "%.*s", (int)n, p);
        ok = strstr(s, nd) != NULL;
        p = bar ? bar + 1 : NULL;
    }
    if (ok && early == BEFORE_WEIGHTS) ok = !strstr(s, MODEL_LOADED);
    CHECK(ok, "`%s`: exit %d (want %d), needles '%s':\n%s", cmd, rc, want, needles, s ? s : "(no stderr)");
    free(s);
    return ok;
}

static inline void write_text(const char *path, const char *text, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f) fwrite(text, 1, n, f), fclose(f);
}

#endif
