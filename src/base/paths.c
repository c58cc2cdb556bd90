// paths.c: run-time location of configs/ + datasets/ and of the download cache (paths.h).
#include "base/paths.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define PATHS_MAX 4096

static char g_cache_override[PATHS_MAX];

static int copy_out(char *out, size_t n, const char *s, struct err *e) {
    size_t l = strlen(s);
    if (l + 1 > n) return err_set(e, ERR_RANGE, "path too long (%zu bytes): %.200s", l, s);
    memcpy(out, s, l + 1);
    return 0;
}

static int is_home(const char *dir) {
    char p[PATHS_MAX];
    if (snprintf(p, sizeof p, "%s/configs/models", dir) < (int)sizeof p && dir_exists(p)) return 1;
    if (snprintf(p, sizeof p, "%s/datasets", dir) < (int)sizeof p && dir_exists(p)) return 1;
    return 0;
}

static void strip_last(char *p) {
    char *s = strrchr(p, '/');
    if (s == p) p[1] = 0;     // "/x" -> "/"
    else if (s) *s = 0;
}

int paths_home(char *out, size_t n, struct err *e) {
    const char *h = getenv("HIFA4_HOME");
    if (h && *h) {
        if (!dir_exists(h)) return err_set(e, ERR_NOTFOUND, "HIFA4_HOME=%s: not a directory", h);
        return copy_out(out, n, h, e);
    }
    char exe[PATHS_MAX], tried[3 * PATHS_MAX / 2] = "";
    ssize_t r = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (r > 0) {
        exe[r] = 0;
        strip_last(exe); // directory of the executable
        for (int up = 0; up < 3; up++) {
            if (is_home(exe)) return copy_out(out, n, exe, e);
            size_t tl = strlen(tried);
            snprintf(tried + tl, sizeof tried - tl, "%s%s", tl ? ", " : "", exe);
            if (!strcmp(exe, "/")) break;
            strip_last(exe);
        }
    }
    char cwd[PATHS_MAX];
    if (getcwd(cwd, sizeof cwd) && is_home(cwd)) return copy_out(out, n, cwd, e);
    return err_set(e, ERR_NOTFOUND,
                   "cannot find the hifa4-eval directory with configs/models and datasets/ "
                   "(tried %s, and the current directory); set HIFA4_HOME",
                   tried[0] ? tried : "/proc/self/exe (unreadable)");
}

int paths_set_cache(const char *dir, struct err *e) {
    if (!dir) { g_cache_override[0] = 0; return 0; }
    if (!*dir) return err_set(e, ERR_USAGE, "--cache: empty directory name");
    return copy_out(g_cache_override, sizeof g_cache_override, dir, e);
}

int paths_cache(char *out, size_t n, struct err *e) {
    if (g_cache_override[0]) return copy_out(out, n, g_cache_override, e);
    const char *c = getenv("HIFA4_CACHE");
    if (c && *c) return copy_out(out, n, c, e);
    char buf[PATHS_MAX];
    const char *home = getenv("HOME");
    if (!home || !*home)
        return err_set(e, ERR_NOTFOUND, "no cache directory: set HIFA4_CACHE (HOME is not set)");
    int w = snprintf(buf, sizeof buf, "%s/.cache/hifa4", home);
    if (w < 0 || w >= (int)sizeof buf) return err_set(e, ERR_RANGE, "cache path too long");
    return copy_out(out, n, buf, e);
}
