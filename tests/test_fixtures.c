// test_fixtures.c: the committed fixtures of our own numerics (tests/data/<rel>.zst, listed in
// tests/data/SHA256SUMS with the sha256 of each original) and the test-data lookup of test.h:
// every fixture decompresses to its original's bytes, the file test_data() finds (the data
// root's original, else the decompressed fixture) has the same bytes, a directory fixture
// decompresses file by file, and a missing file gives NULL.
#include <stdlib.h>

#include "base/common.h"
#include "base/sha256.h"
#include "test.h"

static int file_sha256(const char *path, char hex[65]) {
    char *buf = NULL;
    size_t len = 0;
    struct err e = {0};
    if (file_read_raw(path, &buf, &len, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return -1;
    }
    sha256_hex(buf, len, hex);
    free(buf);
    return 0;
}

static void test_sums(void) {
    char *list = NULL, *save = NULL;
    size_t len = 0;
    struct err e = {0};
    int rc = file_read_raw(TEST_FIXTURES "/SHA256SUMS", &list, &len, &e);
    CHECK(rc == 0, "%s", e.msg);
    if (rc) return;
    int n = 0;
    for (char *line = strtok_r(list, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char want[65], rel[1024], got[65];
        if (sscanf(line, "%64s %1023s", want, rel) != 2) {
            CHECK(0, "SHA256SUMS: bad line '%s'", line);
            continue;
        }
        n++;
        char *fx = test_fixture_(rel); // the committed copy, whatever the data root holds
        CHECK(fx && !file_sha256(fx, got) && !strcmp(got, want), "%s: committed fixture does not decompress to "
              "sha256 %s", rel, want);
        free(fx);
        const char *p = test_data(rel); // the original when the data root has it
        CHECK(p && !file_sha256(p, got) && !strcmp(got, want), "%s: test_data gives %s, not sha256 %s", rel,
              p ? p : "NULL", want);
    }
    printf("fixtures: %d files match SHA256SUMS (data root %s)\n", n, test_data_root());
    CHECK(n >= 8, "SHA256SUMS lists %d files", n);
    free(list);
}

static void test_lookup(void) {
    // a directory fixture decompresses every X.zst to X
    char *d = test_fixture_("goldens/models/qwen3-tiny");
    char p[4200];
    snprintf(p, sizeof p, "%s/model.safetensors", d ? d : "?");
    int ok = d && file_exists(p);
    snprintf(p, sizeof p, "%s/config.json", d ? d : "?");
    CHECK(ok && file_exists(p), "directory fixture goldens/models/qwen3-tiny: %s", d ? d : "NULL");
    free(d);
    CHECK(!test_data("no-such-dir/no-such-file") && !test_fixture_("no-such-dir"), "a missing file must give NULL");
    const char *old = getenv("HIFA4_TEST_DATA");
    char *keep = old ? str_dup(old) : NULL;
    setenv("HIFA4_TEST_DATA", "/nonexistent-hifa4-data", 1);
    CHECK(!strcmp(test_data_root(), "/nonexistent-hifa4-data"), "HIFA4_TEST_DATA not honoured");
    unsetenv("HIFA4_TEST_DATA");
    CHECK(!strcmp(test_data_root(), "../shared"), "default data root %s", test_data_root());
    if (keep) setenv("HIFA4_TEST_DATA", keep, 1);
    free(keep);
}

int main(void) {
    test_sums();
    test_lookup();
    return test_summary("test_fixtures");
}
