// fuzz_samples.c: samples files samples-<task>-<mode>.jsonl.zst (results/samples.c), the files
// `report`, `diff`, `merge` and `--resume` read back. The input is taken three ways: as the
// decompressed JSONL text (results_samples_parse_text, every line through
// results_sample_parse and back through results_sample_line, which must parse to the same
// line), as raw zstd frames (results_samples_count_mem, what --resume trusts), and as a zstd
// stream decompressed and then parsed (what results_samples_read does).
// fuzz-seeds: build/fuzz-seeds/samples/*
// fuzz-max-len: 32768
#include <stdint.h>
#include <stdlib.h>

#include "fuzz.h"
#include "results/results.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct err e = {0};
    (void)fz_dir();
    struct results_sample *v = NULL;
    int n = 0;
    if (!results_samples_parse_text((const char *)data, size, "fuzz.jsonl", &v, &n, &e)) {
        for (int i = 0; i < n; i++) {
            struct results_buf b = {0}, b2 = {0};
            struct results_sample w;
            if (results_sample_line(&b, &v[i]) || results_sample_parse(&w, b.p, b.n - 1, "re-read", &e)) {
                fprintf(stderr, "a parsed sample does not survive a write and re-read: %s\n", e.msg);
                abort();
            }
            if (results_sample_line(&b2, &w) || b2.n != b.n || memcmp(b.p, b2.p, b.n)) abort();
            results_sample_free(&w);
            free(b.p);
            free(b2.p);
            results_sample_free(&v[i]);
        }
        free(v);
    }
    int cnt = 0;
    results_samples_count_mem((const char *)data, size, "fuzz.jsonl.zst", &cnt, &e);
    char *txt = NULL;
    size_t len = 0;
    if (!zst_decompress("fuzz.jsonl.zst", (const char *)data, size, &txt, &len, &e)) {
        if (!results_samples_parse_text(txt, len, "fuzz.jsonl.zst", &v, &n, &e)) {
            for (int i = 0; i < n; i++) results_sample_free(&v[i]);
            free(v);
        }
        free(txt);
    }
    return 0;
}
