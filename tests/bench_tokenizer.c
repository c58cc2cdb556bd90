// bench_tokenizer.c: tokenizer speed (make bench): load time of each tokenizer.json (qwen3's
// 11 MB file is the one the issue names) and encode throughput in MB/s on the WikiText-2 raw
// test file (1.3 MB of real text), best of a few runs, plus the same text cut into ~2 KB
// prompts (the eval workload: many short encodes).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer.h"

static void bench(const char *name, const char *text, size_t len) {
    char dir[256];
    snprintf(dir, sizeof dir, "../shared/tokenizers/%s", name);
    struct tokenizer *t = NULL;
    struct err e = {0};
    double best_load = 1e9;
    for (int r = 0; r < 3; r++) {
        double t0 = time_now();
        if (tok_load(&t, dir, &e)) { fprintf(stderr, "%s: %s\n", name, e.msg); return; }
        double dt = time_now() - t0;
        if (dt < best_load) best_load = dt;
        if (r < 2) tok_free(t);
    }
    double best = 1e9, best_chunks = 1e9;
    int n = 0;
    for (int r = 0; r < 3; r++) {
        int32_t *ids = NULL;
        double t0 = time_now();
        if (tok_encode(t, text, len, 0, &ids, &n, &e)) { fprintf(stderr, "%s: %s\n", name, e.msg); break; }
        double dt = time_now() - t0;
        if (dt < best) best = dt;
        free(ids);
        // ~2 KB prompts cut at line ends
        t0 = time_now();
        for (size_t off = 0; off < len;) {
            size_t end = off + 2048 < len ? off + 2048 : len;
            while (end < len && text[end - 1] != '\n') end++;
            int m;
            if (tok_encode(t, text + off, end - off, 1, &ids, &m, &e)) { fprintf(stderr, "%s: %s\n", name, e.msg); break; }
            free(ids);
            off = end;
        }
        dt = time_now() - t0;
        if (dt < best_chunks) best_chunks = dt;
    }
    printf("bench_tokenizer %-8s load %.3f s | encode %.2f MB in one call: %.1f MB/s (%d tokens) | as 2 KB prompts: %.1f MB/s\n",
           name, best_load, (double)len / 1e6, (double)len / 1e6 / best, n, (double)len / 1e6 / best_chunks);
    tok_free(t);
}

int main(void) {
    const char *path = "../shared/datasets/wikitext2/raw/wiki.test.raw";
    char *text;
    size_t len;
    struct err e = {0};
    if (file_read_all(path, &text, &len, &e)) { fprintf(stderr, "%s\n", e.msg); return 1; }
    const char *names[] = {"qwen3", "llama3", "mistral", "gemma3"};
    for (int i = 0; i < 4; i++) bench(names[i], text, len);
    free(text);
    return 0;
}
