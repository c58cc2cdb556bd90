// fuzz.h: helpers shared by the libFuzzer targets tests/fuzz/fuzz_<name>.c (`make fuzz`): a
// private scratch directory on tmpfs for parsers that are reached through a file path (the
// task loaders take --task-file), writing an input there, and quiet logging. Each target
// defines LLVMFuzzerTestOneInput (and may define LLVMFuzzerInitialize); the same source is
// linked with tests/fuzz/replay.c into build/tests/fuzz_replay_<name>, which `make test`
// runs over the committed regression inputs tests/data/fuzz/<name>/.
#ifndef HIFA4_FUZZ_H
#define HIFA4_FUZZ_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/common.h"

static char fz_root_[512];

static void fz_rm_(const char *p) { // rm -r: the scratch tree holds plain files and directories only
    DIR *d = opendir(p);
    if (d) {
        for (struct dirent *de; (de = readdir(d));) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
            char c[1024];
            snprintf(c, sizeof c, "%s/%s", p, de->d_name);
            fz_rm_(c);
        }
        closedir(d);
    }
    remove(p);
}
static void fz_cleanup_(void) {
    if (fz_root_[0]) fz_rm_(fz_root_);
}

// The scratch directory of this process (created once, removed at exit): $FUZZ_TMP, else
// /dev/shm when it exists (files written every execution stay in memory), else /tmp.
static inline const char *fz_dir(void) {
    if (fz_root_[0]) return fz_root_;
    const char *base = getenv("FUZZ_TMP");
    if (!base) base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(fz_root_, sizeof fz_root_, "%s/hifa4-fuzz-%d", base, (int)getpid());
    struct err e = {0};
    if (mkdir_p(fz_root_, &e)) { fprintf(stderr, "fuzz: %s\n", e.msg); abort(); }
    atexit(fz_cleanup_);
    log_set_level(LOG_QUIET); // skipped rows and other warnings would flood the fuzzer's output
    return fz_root_;
}

// dir/name, created with the n bytes of d (directories on the way are made).
static inline void fz_write(char *out, size_t cap, const char *name, const void *d, size_t n) {
    snprintf(out, cap, "%s/%s", fz_dir(), name);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", out);
    char *slash = strrchr(dir, '/');
    if (slash) { *slash = 0; mkdir_p(dir, NULL); }
    FILE *f = fopen(out, "wb");
    if (!f || (n && fwrite(d, 1, n, f) != n) || fclose(f)) { perror(out); abort(); }
}

#endif
