// fuzz_config.c: config.json (model/config.c) over arbitrary bytes: cfg_parse, and for an
// accepted config the parameter count and the round trip through cfg_to_json, which must parse
// again to the same shape.
// fuzz-seeds: ../shared/goldens/models/*/config.json ../shared/models/stories260K/*.json
// fuzz-seeds: build/fuzz-seeds/config/*
// fuzz-max-len: 8192
#include <stdint.h>
#include <stdlib.h>

#include "fuzz.h"
#include "model/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct model_config c, c2;
    struct err e = {0};
    (void)fz_dir();
    if (cfg_parse(&c, (const char *)data, size, "fuzz-config.json", &e)) return 0;
    (void)cfg_n_params(&c);
    char *js = NULL;
    if (cfg_to_json(&c, NULL, &js, &e)) return 0;
    if (cfg_parse(&c2, js, strlen(js), "round-trip", &e) || c2.dim != c.dim || c2.n_layers != c.n_layers ||
        c2.n_heads != c.n_heads || c2.n_kv_heads != c.n_kv_heads || c2.head_dim != c.head_dim ||
        c2.vocab_size != c.vocab_size) {
        fprintf(stderr, "config round trip changed the shape: %s\n%s\n", e.msg, js);
        abort();
    }
    free(js);
    return 0;
}
