// test.h: the two check macros of STYLE.md section 7, the per-binary pass/fail/skip counter
// and the test-data lookup. Every test binary includes this once, calls its checks from
// main(), and ends with `return test_summary("name");`, which prints
// "name: N passed, M failed" (", K skipped" appended when K > 0) and returns non-zero on any
// failure. tests/run_tests.sh adds the lines up.
//
// Data the repository does not hold (goldens, spec vectors, tokenizers, datasets, stories260K)
// is read from one root, $HIFA4_TEST_DATA (default ../shared, relative to the repository root
// where tests run). A test never spells "../shared"; it asks:
//   const char *test_data(const char *rel)   path of rel (a file or directory) under the root;
//       if the root lacks it but tests/data/<rel>.zst (a file) or tests/data/<rel>/ (a
//       directory of *.zst files) is committed, the decompressed copy under
//       $HIFA4_TMP/testdata/<rel>; else NULL. Silent; the string lives until exit.
//   TEST_NEED(fmt, ...)  the same for the rel that fmt formats, but when it returns NULL it
//                     has printed "SKIP <function>: <rel>: no such file under
//                     HIFA4_TEST_DATA=<root>" and counted one skip. Typical use:
//                         const char *m = TEST_NEED("goldens/models/%s", name);
//                         if (!m) return;
//   TEST_SKIP(fmt, ...)  prints "SKIP <function>: <reason>" and counts one skip (for any
//                     other reason a group of checks cannot run here).
//   test_data_root()  the root in use.
//   test_text()       English prose for checks that need some text but not a particular one
//                     (calibration, traces): the Brown corpus of the data root, else the
//                     repository's README.md - so such checks run on a bare clone too.
// A skip is not a failure: it says which checks did not run and why. Count one skip per group
// of checks that did not run (one model, one file, one CLI scenario), never per check.
#ifndef HIFA4_TEST_H
#define HIFA4_TEST_H

#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "base/common.h"

static int test_passed_, test_failed_, test_skipped_;

#define CHECK(cond, ...)                                                                  \
    do {                                                                                  \
        if (cond) {                                                                       \
            test_passed_++;                                                               \
        } else {                                                                          \
            test_failed_++;                                                               \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);              \
            fprintf(stderr, __VA_ARGS__);                                                 \
            fputc('\n', stderr);                                                          \
        }                                                                                 \
    } while (0)

// Pass means |got-ref| <= atol + rtol*|ref| (NaN never passes unless both are NaN).
#define CHECK_CLOSE(got, ref, atol, rtol)                                                 \
    do {                                                                                  \
        double g_ = (double)(got), r_ = (double)(ref);                                    \
        int ok_ = (isnan(g_) && isnan(r_)) || fabs(g_ - r_) <= (atol) + (rtol)*fabs(r_); \
        CHECK(ok_, "got %.9g ref %.9g (diff %.3g, atol %g, rtol %g)", g_, r_,           \
              fabs(g_ - r_), (double)(atol), (double)(rtol));                             \
    } while (0)

// Whole-array comparison: returns rel-L2 ||a-b||/||b|| and prints max diff when verbose.
static inline double test_rel_l2(const float *a, const float *b, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - (double)b[i];
        num += d * d;
        den += (double)b[i] * (double)b[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

// ---- skips ----
#define TEST_SKIP(...) test_skip_(__func__, __VA_ARGS__)

static inline void test_skip_(const char *fn, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void test_skip_(const char *fn, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("SKIP %s: ", fn);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
    fflush(stdout); // before any fork of the test
    test_skipped_++;
}

// A real model (a download the tests cannot make themselves: SmolLM2, Gemma 3, Qwen2.5 from
// PyPI) is not in the download cache: a skip naming the file and the command that fetches it.
// Under HIFA4_REQUIRE_REAL_MODELS=1 (set by .ci/run) a failure instead, so a run whose fetches
// failed cannot pass by skipping every real-model check; a plain `make test` on a bare clone
// skips with the reason.
#define TEST_NEED_REAL_MODEL(name, path, how) test_need_real_model_(__func__, name, path, how)
static inline void test_need_real_model_(const char *fn, const char *name, const char *path, const char *how) {
    const char *req = getenv("HIFA4_REQUIRE_REAL_MODELS");
    if (req && !strcmp(req, "1")) {
        test_failed_++;
        fprintf(stderr, "FAIL %s: real model %s missing: %s not found (HIFA4_REQUIRE_REAL_MODELS=1; `%s` fetches it)\n",
                fn, name, path, how);
        return;
    }
    test_skip_(fn, "real model %s: %s not found (`%s` fetches it)", name, path, how);
}

// ---- test data: $HIFA4_TEST_DATA, then the committed fixtures in tests/data ----
#define TEST_FIXTURES "tests/data"

static inline const char *test_data_root(void) {
    const char *r = getenv("HIFA4_TEST_DATA");
    return r && *r ? r : "../shared";
}

// Writes the zstd-decompressed src to dst unless dst already holds those bytes. 0 or -1.
static inline int test_unzst_(const char *src, const char *dst) {
    char *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    struct err e = {0};
    int rc = file_read_all(src, &a, &na, &e);
    if (!rc) {
        struct err e2 = {0};
        int same = !file_read_raw(dst, &b, &nb, &e2) && nb == na && !memcmp(a, b, na);
        if (!same) rc = file_write_atomic(dst, a, na, &e);
    }
    if (rc) fprintf(stderr, "test_data: %s\n", e.msg);
    free(a);
    free(b);
    return rc ? -1 : 0;
}

// The committed copy of rel decompressed into $HIFA4_TMP/testdata/rel: malloc'd path or NULL.
static inline char *test_fixture_(const char *rel) {
    const char *tmp = getenv("HIFA4_TMP");
    char src[4096], dst[4096], dir[4096];
    struct err e = {0};
    snprintf(dst, sizeof dst, "%s/testdata/%s", tmp && *tmp ? tmp : "build/tmp", rel);
    snprintf(src, sizeof src, "%s/%s.zst", TEST_FIXTURES, rel);
    if (file_exists(src)) { // one file
        snprintf(dir, sizeof dir, "%s", dst);
        char *slash = strrchr(dir, '/');
        *slash = 0;
        return mkdir_p(dir, &e) || test_unzst_(src, dst) ? NULL : str_dup(dst);
    }
    snprintf(src, sizeof src, "%s/%s", TEST_FIXTURES, rel);
    DIR *d = dir_exists(src) ? opendir(src) : NULL;
    if (!d) return NULL;
    int rc = mkdir_p(dst, &e);
    for (struct dirent *de; !rc && (de = readdir(d));) { // a directory of X.zst files
        size_t n = strlen(de->d_name);
        if (n <= 4 || strcmp(de->d_name + n - 4, ".zst")) continue;
        char s[8300], t[8300];
        snprintf(s, sizeof s, "%s/%s", src, de->d_name);
        snprintf(t, sizeof t, "%s/%.*s", dst, (int)(n - 4), de->d_name);
        rc = test_unzst_(s, t);
    }
    closedir(d);
    if (rc && e.msg[0]) fprintf(stderr, "test_data: %s\n", e.msg);
    return rc ? NULL : str_dup(dst);
}

static inline const char *test_data(const char *rel) {
    static struct { char *rel, *path; } cache[256]; // reachable until exit (no leak reports)
    static int n;
    for (int i = 0; i < n; i++)
        if (!strcmp(cache[i].rel, rel)) return cache[i].path;
    char p[4096];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", test_data_root(), rel);
    char *path = stat(p, &st) == 0 ? str_dup(p) : test_fixture_(rel);
    if (n < (int)(sizeof cache / sizeof *cache)) cache[n].rel = str_dup(rel), cache[n++].path = path;
    return path;
}

#define TEST_NEED(...) test_need_(__func__, __VA_ARGS__)

static inline const char *test_need_(const char *fn, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline const char *test_need_(const char *fn, const char *fmt, ...) {
    char rel[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rel, sizeof rel, fmt, ap);
    va_end(ap);
    const char *p = test_data(rel);
    if (!p) test_skip_(fn, "%s: no such file under HIFA4_TEST_DATA=%s", rel, test_data_root());
    return p;
}

static inline const char *test_text(void) {
    const char *brown = test_data("datasets/brown/brown.txt.zst");
    return brown ? brown : "README.md";
}

// Progress of a binary that runs for minutes (test_run, test_tokenizer, test_trace): a line
// "# <text>" on stdout at once; tests/run_tests.sh shows these lines while the binary runs,
// so a long `make test` is never silent.
#define TEST_PROGRESS(...)                                                                \
    do {                                                                                  \
        printf("# ");                                                                     \
        printf(__VA_ARGS__);                                                              \
        putchar('\n');                                                                    \
        fflush(stdout);                                                                   \
    } while (0)

// 1 when files a and b exist and hold the same bytes (compressed files compared as stored).
static inline int test_same_bytes(const char *a, const char *b) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    while (same) {
        char x[65536], y[65536];
        const size_t na = fread(x, 1, sizeof x, fa), nb = fread(y, 1, sizeof y, fb);
        if (na != nb || memcmp(x, y, na)) same = 0;
        if (na == 0) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

// Runs the shell command fmt formats; returns its exit status (-1 when it did not exit).
static inline int test_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int test_sh(const char *fmt, ...) {
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static inline int test_summary(const char *name) {
    printf("%s: %d passed, %d failed", name, test_passed_, test_failed_);
    if (test_skipped_) printf(", %d skipped", test_skipped_);
    putchar('\n');
    return test_failed_ ? 1 : 0;
}

#endif
