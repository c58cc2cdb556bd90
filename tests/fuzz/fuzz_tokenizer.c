// fuzz_tokenizer.c: tokenizer.json (+ tokenizer_config.json) over arbitrary bytes
// (tokenizer/load.c and the encode/decode pipelines it builds): the input is the tokenizer.json
// text, optionally followed by a NUL byte and a tokenizer_config.json text. An accepted
// tokenizer encodes a few fixed texts (with and without special tokens) and decodes every id.
// fuzz-seeds: build/fuzz-seeds/tokenizer/* tests/data/fuzz/seeds/tokenizer/*
// fuzz-max-len: 65536
#include <stdint.h>
#include <stdlib.h>

#include "fuzz.h"
#include "tokenizer/tokenizer.h"

static const char *const texts[] = {"", "Hello, world! 123 4567", "  spaces\tand\nnewlines\n\n",
                                    "caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80", "<s>the</s><|endoftext|> x"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct err e = {0};
    (void)fz_dir();
    const char *json = (const char *)data, *cfg = NULL;
    size_t jlen = size;
    const uint8_t *nul = memchr(data, 0, size);
    char *cfg_copy = NULL;
    if (nul) {
        jlen = (size_t)(nul - data);
        size_t cl = size - jlen - 1;
        cfg_copy = malloc(cl + 1);
        if (!cfg_copy) return 0;
        memcpy(cfg_copy, nul + 1, cl);
        cfg_copy[cl] = 0;
        cfg = cfg_copy;
    }
    struct tokenizer *t = NULL;
    if (!tok_load_json(&t, json, jlen, cfg, "fuzz-tokenizer.json", &e)) {
        for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
            for (int sp = 0; sp < 2; sp++) {
                int32_t *ids = NULL;
                int n = 0;
                if (!tok_encode(t, texts[i], strlen(texts[i]), sp, &ids, &n, &e)) {
                    char *s = NULL;
                    size_t sl = 0;
                    if (!tok_decode(t, ids, n, &s, &sl, &e)) free(s);
                }
                free(ids);
            }
        int v = tok_vocab_size(t);
        for (int i = 0; i < v && i < 4096; i++) {
            int32_t id = i;
            char *s = NULL;
            size_t sl = 0;
            tok_piece(t, i);
            if (!tok_decode(t, &id, 1, &s, &sl, &e)) free(s);
        }
        char hex[65];
        tok_hash(t, hex);
        tok_free(t);
    }
    free(cfg_copy);
    return 0;
}
