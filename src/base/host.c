// host.c: provenance of the build (see host.h).
#include "base/host.h"

#include <stdio.h>
#ifdef __GLIBC__
#include <gnu/libc-version.h>
#endif
#include <string.h>
#include <unistd.h>

#include "base/common.h"

// ---- git revision ----
static int read_line(const char *path, char *out, size_t n) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int ok = fgets(out, (int)n, f) != NULL;
    fclose(f);
    if (!ok) return -1;
    out[strcspn(out, "\r\n")] = 0;
    return 0;
}

// snprintf into a local array; a path that does not fit means "no revision"
#define PJ(buf, ...) do { if (snprintf(buf, sizeof buf, __VA_ARGS__) >= (int)sizeof buf) return -1; } while (0)
static void copy_rev(char *rev, size_t n, const char *s) {
    size_t l = strlen(s);
    if (l >= n) l = n - 1;
    memcpy(rev, s, l);
    rev[l] = 0;
}

static int git_rev_in(const char *root, char *rev, size_t n) {
    char git[4096], line[4096], gitdir[4096], common[4096], p[8192];
    PJ(git, "%s/.git", root);
    if (dir_exists(git)) PJ(gitdir, "%s", git);
    else if (file_exists(git) && !read_line(git, line, sizeof line) && !strncmp(line, "gitdir: ", 8)) {
        if (line[8] == '/') PJ(gitdir, "%s", line + 8);
        else PJ(gitdir, "%s/%s", root, line + 8);
    } else return -1;
    PJ(common, "%s", gitdir);
    PJ(p, "%s/commondir", gitdir);
    if (!read_line(p, line, sizeof line)) {
        if (line[0] == '/') PJ(common, "%s", line);
        else PJ(common, "%s/%s", gitdir, line);
    }
    PJ(p, "%s/HEAD", gitdir);
    if (read_line(p, line, sizeof line)) return -1;
    if (strncmp(line, "ref: ", 5)) { copy_rev(rev, n, line); return 0; }
    const char *ref = line + 5;
    char val[256];
    PJ(p, "%s/%s", gitdir, ref);
    if (!read_line(p, val, sizeof val)) { copy_rev(rev, n, val); return 0; }
    PJ(p, "%s/%s", common, ref);
    if (!read_line(p, val, sizeof val)) { copy_rev(rev, n, val); return 0; }
    PJ(p, "%s/packed-refs", common);
    FILE *f = fopen(p, "r");
    if (!f) return -1;
    char buf[1024];
    int found = 0;
    while (!found && fgets(buf, sizeof buf, f)) {
        buf[strcspn(buf, "\r\n")] = 0;
        char *sp = strchr(buf, ' ');
        if (sp && !strcmp(sp + 1, ref)) { *sp = 0; copy_rev(rev, n, buf); found = 1; }
    }
    fclose(f);
    return found ? 0 : -1;
}

static const char *build_revision;

void host_set_build_revision(const char *rev) { build_revision = rev && rev[0] ? rev : NULL; }

void host_git_revision(char *rev, size_t n) {
    if (build_revision) {
        copy_rev(rev, n, build_revision);
        return;
    }
    char exe[4096];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    copy_rev(rev, n, "unknown");
    if (k > 0) {
        exe[k] = 0;
        char *sl = strrchr(exe, '/');
        if (sl) *sl = 0;
        if (!git_rev_in(exe, rev, n)) return;
    }
    git_rev_in(".", rev, n);
}

void host_cpu_model(char *out, size_t n) {
    copy_rev(out, n, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10)) continue;
        const char *c = strchr(line, ':');
        if (!c) break;
        c++;
        while (*c == ' ' || *c == '\t') c++;
        line[strcspn(line, "\r\n")] = 0;
        copy_rev(out, n, c);
        break;
    }
    fclose(f);
}

const char *host_simd_level(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return "avx512f";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "avx2+fma";
#endif
    return "baseline";
}

size_t host_mem_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    size_t kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %zu kB", &kb) == 1) break;
    fclose(f);
    return kb * 1024;
}

void host_libm(char *out, size_t n) {
#ifdef __GLIBC__
    const char *variant = "sse2";
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2")) variant = "fma";
#else
    variant = "generic";
#endif
    snprintf(out, n, "glibc %s %s", gnu_get_libc_version(), variant);
#else
    snprintf(out, n, "unknown");
#endif
}
