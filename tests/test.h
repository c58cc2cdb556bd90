// test.h: the two check macros of STYLE.md section 7 and the per-binary pass/fail counter.
// Every test binary includes this once, calls its checks from main(), and ends with
// `return test_summary("name");`, which prints "name: N passed, M failed" and returns
// non-zero on any failure. tests/run_tests.sh adds the lines up.
#ifndef HIFA4_TEST_H
#define HIFA4_TEST_H

#include <math.h>
#include <stdio.h>

static int test_passed_, test_failed_;

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

static inline int test_summary(const char *name) {
    printf("%s: %d passed, %d failed\n", name, test_passed_, test_failed_);
    return test_failed_ ? 1 : 0;
}

#endif
