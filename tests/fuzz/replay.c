// replay.c: a main() for a fuzz target built without libFuzzer (any C compiler): calls the
// target's LLVMFuzzerTestOneInput on every file of the directories (or files) given, by default
// tests/data/fuzz/<FUZZ_NAME>/ - the inputs that once crashed a parser, committed as regression
// tests. Prints "fuzz_replay_<name>: N passed, 0 failed" for tests/run_tests.sh; a crash (or
// a sanitizer report under `make asan`) fails the binary.
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef FUZZ_NAME
#error "build with -DFUZZ_NAME='\"name\"'"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

// Under `make asan` most regression inputs are undefined behaviour, which UBSan only reports
// by default: here it stops the binary, so a regression fails the test as under libFuzzer.
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void) { return "halt_on_error=1:print_stacktrace=1"; }
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); return -1; }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (!buf) return -1;
    // an exact-size copy, so that a read past the end is caught by a sanitizer as under libFuzzer
    uint8_t *in = malloc(n ? n : 1);
    if (n) memcpy(in, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(in, n);
    free(in);
    return 0;
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int run_path(const char *p, int *count) {
    struct stat st;
    if (stat(p, &st) != 0) return 0; // no regression inputs (yet) for this target
    if (!S_ISDIR(st.st_mode)) { (*count)++; return run_file(p); }
    DIR *d = opendir(p);
    if (!d) { perror(p); return -1; }
    char **names = NULL;
    int n = 0, rc = 0;
    for (struct dirent *de; (de = readdir(d));) {
        if (de->d_name[0] == '.') continue;
        names = realloc(names, sizeof *names * (size_t)(n + 1));
        names[n++] = strdup(de->d_name);
    }
    closedir(d);
    if (n) qsort(names, (size_t)n, sizeof *names, cmp); // a fixed order: failures reproduce
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", p, names[i]);
        if (!rc) rc = run_path(path, count);
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv) {
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    int count = 0, rc = 0;
    if (argc > 1) {
        for (int i = 1; i < argc && !rc; i++) rc = run_path(argv[i], &count);
    } else {
        rc = run_path("tests/data/fuzz/" FUZZ_NAME, &count);
    }
    printf("fuzz_replay_%s: %d passed, %d failed\n", FUZZ_NAME, rc ? 0 : count, rc ? 1 : 0);
    return rc ? 1 : 0;
}
