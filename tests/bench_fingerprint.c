// bench_fingerprint.c: the cost of a checkpoint's version-2 fingerprint (io/fingerprint.h,
// every byte through XXH64): `bench_fingerprint MODEL_DIR` prints it first (an empty cache in
// a temporary directory: every byte read and hashed; whether the bytes came from disk or the
// page cache is the machine's) and then cached (the same files: a stat and a small read each),
// beside the version-1 fingerprint's time. Not part of `make test` (it reads a whole checkpoint).
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/paths.h"
#include "io/fingerprint.h"

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: bench_fingerprint MODEL_DIR\n"); return 2; }
    char tmp[] = "/tmp/hifa4-fp-XXXXXX", hex[65];
    struct err e = {0};
    struct safetensors st;
    if (!mkdtemp(tmp) || paths_set_cache(tmp, &e) || st_open(&st, argv[1], &e)) { fprintf(stderr, "%s\n", e.msg); return 1; }
    double t0 = time_now();
    st_fingerprint(&st, hex, &e);
    printf("version 1 (headers, 3 x 4 KiB per tensor): %.3f s\n", time_now() - t0);
    for (int pass = 0; pass < 2; pass++) {
        struct st_fingerprint_stats s;
        if (st_fingerprint_all(&st, hex, &s, &e)) { fprintf(stderr, "%s\n", e.msg); return 1; }
        printf("version 2 %s: %d files, %d cached, %.2f GB hashed in %.3f s (%.2f GB/s) %.16s\n", pass ? "cached" : "first",
               s.files, s.cached, s.bytes_hashed / 1e9, s.seconds, s.seconds > 0 ? s.bytes_hashed / 1e9 / s.seconds : 0, hex);
    }
    st_close(&st);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    return system(cmd) ? 1 : 0;
}
