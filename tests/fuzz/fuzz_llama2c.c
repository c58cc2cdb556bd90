// fuzz_llama2c.c: the llama2.c formats `import-llama2c` reads: the checkpoint header
// (llama2c_parse_header, with the input's own length) and tokenizer.bin, converted to a
// tokenizer.json (through its file path on tmpfs) that must then load as a tokenizer.
// fuzz-seeds: ../shared/models/stories260K/tok512.bin ../shared/models/stories260K/stories260K.bin
// fuzz-max-len: 16384
#include <stdint.h>
#include <stdlib.h>

#include "fuzz.h"
#include "import/llama2c.h"
#include "tokenizer/llama2c_vocab.h"
#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct err e = {0};
    struct llama2c_header h;
    llama2c_parse_header(&h, data, size, "fuzz.bin", &e);
    char path[1024];
    fz_write(path, sizeof path, "tok.bin", data, size);
    char *json = NULL;
    if (!tok_llama2c_to_json(path, 0, &json, &e)) {
        struct tokenizer *t = NULL;
        if (tok_load_json(&t, json, strlen(json), NULL, "converted", &e)) {
            fprintf(stderr, "a converted llama2.c tokenizer does not load: %s\n", e.msg);
            abort();
        }
        int32_t *ids = NULL;
        int n = 0;
        if (!tok_encode(t, "Once upon a time", 16, 1, &ids, &n, &e)) free(ids);
        tok_free(t);
        free(json);
    }
    return 0;
}
