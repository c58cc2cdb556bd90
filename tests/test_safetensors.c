// test_safetensors.c: writer/reader round trip, shards, conversions, and every malformed
// header the reader must refuse - through the library (error code + message) and through
// the CLI (one-line error, exit status 1).
#include <stdlib.h>
#include <sys/wait.h>

#include "base/common.h"
#include "io/safetensors.h"
#include "test.h"

static char tmp[1024];

static const char *tpath(const char *name) {
    static char buf[8][1200];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmp, name);
    return buf[k];
}

// Writes a raw file: 8-byte length + header text + data bytes.
static void write_raw(const char *path, const char *hdr, size_t hlen_claim, size_t data_len) {
    FILE *f = fopen(path, "wb");
    unsigned char L[8];
    for (int i = 0; i < 8; i++) L[i] = (unsigned char)((uint64_t)hlen_claim >> (8 * i));
    fwrite(L, 1, 8, f);
    fwrite(hdr, 1, strlen(hdr), f);
    for (size_t i = 0; i < data_len; i++) fputc((int)(i & 0xff), f);
    fclose(f);
}

static void test_roundtrip(void) {
    float a[6] = {1, -2, 3.5f, 0, -0.0f, 1e-3f};
    uint16_t b[4] = {f32_to_bf16(1.5f), f32_to_bf16(-2), f32_to_bf16(3e5f), f32_to_bf16(-1e-5f)};
    uint16_t h[3] = {f32_to_f16(0.5f), f32_to_f16(-65504), f32_to_f16(6e-8f)};
    int32_t ids[5] = {1, 2, 3, 511, 0};
    struct st_wtensor ts[] = {
        {"a", ST_F32, 2, {2, 3}, a}, {"b.bf", ST_BF16, 1, {4}, b}, {"c.h", ST_F16, 1, {3}, h},
        {"ids", ST_I32, 1, {5}, ids}, {"empty", ST_F32, 2, {0, 4}, a},
    };
    const char *meta[] = {"k1", "v1", "model_hash", "abc"};
    struct err e = {0};
    int rc = st_write(tpath("rt.safetensors"), ts, 5, meta, 2, &e);
    CHECK(rc == 0, "write: %s", e.msg);
    struct safetensors st;
    rc = st_open(&st, tpath("rt.safetensors"), &e);
    CHECK(rc == 0, "open: %s", e.msg);
    if (rc) return;
    CHECK(st.n_tensors == 5, "n_tensors %d", st.n_tensors);
    const struct st_tensor *t = st_find(&st, "a");
    float out[6];
    CHECK(t && t->ndim == 2 && t->shape[1] == 3 && st_to_f32(out, t, &e) == 0 && !memcmp(out, a, sizeof a), "a");
    t = st_find(&st, "b.bf");
    CHECK(t && st_to_f32(out, t, &e) == 0 && out[0] == 1.5f && out[2] == round_bf16(3e5f), "bf16 widen");
    t = st_find(&st, "c.h");
    CHECK(t && st_to_f32(out, t, &e) == 0 && out[1] == -65504.0f && out[2] == round_fp16(6e-8f), "f16 widen");
    int32_t got[5];
    t = st_find(&st, "ids");
    CHECK(t && st_to_i32(got, t, &e) == 0 && got[3] == 511, "i32");
    CHECK(st_to_f32(out, t, &e) == ERR_UNSUPPORTED, "i32 -> f32 refused");
    CHECK(st_find(&st, "nope") == NULL, "missing tensor");
    const char *m = st_meta(&st, "model_hash");
    CHECK(m && !strcmp(m, "abc"), "metadata");
    CHECK(st_meta(&st, "zz") == NULL, "missing metadata");
    int64_t shp[2] = {2, 4};
    rc = st_check(&st, "a", ST_FLOATING, 2, shp, NULL, &e);
    CHECK(rc == ERR_MISMATCH && strstr(e.msg, "[2,3]") && strstr(e.msg, "[2,4]"), "st_check names shapes: %s", e.msg);
    char f1[65], f2[65];
    st_fingerprint(&st, f1, &e);
    st_close(&st);
    // same content written again -> byte-identical file and fingerprint
    st_write(tpath("rt2.safetensors"), ts, 5, meta, 2, &e);
    st_open(&st, tpath("rt2.safetensors"), &e);
    st_fingerprint(&st, f2, &e);
    st_close(&st);
    CHECK(!strcmp(f1, f2), "deterministic fingerprint");
    // same shapes, one weight changed -> another fingerprint
    a[5] = 2e-3f;
    st_write(tpath("rt3.safetensors"), ts, 5, meta, 2, &e);
    st_open(&st, tpath("rt3.safetensors"), &e);
    st_fingerprint(&st, f2, &e);
    st_close(&st);
    CHECK(strcmp(f1, f2) != 0, "fingerprint sees weights, not only the header");
    st_close(&st); // safe twice
}

static void test_shards(void) {
    float x[4] = {1, 2, 3, 4}, y[2] = {5, 6};
    struct err e = {0};
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/sharded", tmp);
    mkdir_p(dir, &e);
    char p1[1300], p2[1300], idx[1300];
    snprintf(p1, sizeof p1, "%s/model-00001-of-00002.safetensors", dir);
    snprintf(p2, sizeof p2, "%s/model-00002-of-00002.safetensors", dir);
    snprintf(idx, sizeof idx, "%s/model.safetensors.index.json", dir);
    struct st_wtensor a[] = {{"x", ST_F32, 1, {4}, x}}, b[] = {{"y", ST_F32, 1, {2}, y}};
    st_write(p1, a, 1, NULL, 0, &e);
    st_write(p2, b, 1, NULL, 0, &e);
    const char *j = "{\"metadata\":{},\"weight_map\":{\"x\":\"model-00001-of-00002.safetensors\","
                    "\"y\":\"model-00002-of-00002.safetensors\"}}";
    file_write_atomic(idx, j, strlen(j), &e);
    struct safetensors st;
    int rc = st_open(&st, dir, &e);
    CHECK(rc == 0 && st.n_files == 2 && st.n_tensors == 2, "sharded open: %s", e.msg);
    const struct st_tensor *t = st_find(&st, "y");
    CHECK(t && t->file == 1 && ((const float *)t->data)[1] == 6.0f, "tensor from shard 2");
    st_close(&st);
    // duplicate name across shards
    struct st_wtensor c[] = {{"x", ST_F32, 1, {2}, y}, {"y", ST_F32, 1, {2}, y}};
    st_write(p2, c, 2, NULL, 0, &e);
    j = "{\"weight_map\":{\"x\":\"model-00001-of-00002.safetensors\",\"y\":\"model-00002-of-00002.safetensors\"}}";
    file_write_atomic(idx, j, strlen(j), &e);
    rc = st_open(&st, dir, &e);
    CHECK(rc != 0 && strstr(e.msg, "'x'"), "duplicate across shards: %s", e.msg);
    // shard name escaping the directory
    j = "{\"weight_map\":{\"x\":\"../evil.safetensors\"}}";
    file_write_atomic(idx, j, strlen(j), &e);
    rc = st_open(&st, dir, &e);
    CHECK(rc == ERR_FORMAT && strstr(e.msg, "plain file name"), "shard path traversal: %s", e.msg);
}

struct bad_case {
    const char *name;
    const char *hdr;
    long hlen;      // -1: the header's own length
    size_t data;
    int code;
    const char *must; // substring of the message
};

static const struct bad_case bad[] = {
    {"truncated", "", 0, 0, ERR_FORMAT, "too short"},
    {"hdr-past-eof", "{}", 4096, 0, ERR_FORMAT, "past the end"},
    {"hdr-huge", "{}", 200L << 20, 0, ERR_FORMAT, "100 MB"},
    {"not-object", "[1,2]", -1, 0, ERR_FORMAT, "not a JSON object"},
    {"bad-json", "{\"a\":", -1, 0, ERR_FORMAT, "invalid JSON"},
    {"offs-outside", "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", -1, 8, ERR_FORMAT, "outside the data area"},
    {"size-mismatch", "{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,16]}}", -1, 16, ERR_FORMAT, "12 bytes"},
    {"unknown-dtype", "{\"w\":{\"dtype\":\"F8_E4M3\",\"shape\":[4],\"data_offsets\":[0,4]}}", -1, 4, ERR_UNSUPPORTED, "F8_E4M3"},
    {"bad-dtype-type", "{\"w\":{\"dtype\":7,\"shape\":[4],\"data_offsets\":[0,16]}}", -1, 16, ERR_FORMAT, "dtype"},
    {"neg-shape", "{\"w\":{\"dtype\":\"F32\",\"shape\":[-4],\"data_offsets\":[0,16]}}", -1, 16, ERR_FORMAT, "shape[0]"},
    {"overflow", "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,16]}}", -1, 16, ERR_FORMAT, "overflow"},
    {"rev-offsets", "{\"w\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,4]}}", -1, 16, ERR_FORMAT, "data_offsets"},
    {"entry-not-object", "{\"w\":5}", -1, 0, ERR_FORMAT, "not an object"},
    {"meta-not-string", "{\"__metadata__\":{\"a\":1}}", -1, 0, ERR_FORMAT, "__metadata__"},
    {"missing-offsets", "{\"w\":{\"dtype\":\"F32\",\"shape\":[4]}}", -1, 16, ERR_FORMAT, "data_offsets"},
};

static void test_malformed(void) {
    const char *bin = getenv("HIFA4_BIN");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char name[128];
        snprintf(name, sizeof name, "bad-%s.safetensors", bad[i].name);
        const char *p = tpath(name);
        if (!strcmp(bad[i].name, "truncated")) {
            FILE *f = fopen(p, "wb");
            fwrite("\x10\x00\x00", 1, 3, f);
            fclose(f);
        } else {
            write_raw(p, bad[i].hdr, bad[i].hlen < 0 ? strlen(bad[i].hdr) : (size_t)bad[i].hlen, bad[i].data);
        }
        struct safetensors st;
        struct err e = {0};
        int rc = st_open(&st, p, &e);
        CHECK(rc == bad[i].code && strstr(e.msg, bad[i].must) && strstr(e.msg, name),
              "%s: rc=%d msg='%s' (want code %d, '%s' and the file name)", bad[i].name, rc, e.msg, bad[i].code, bad[i].must);
        st_close(&st);
        if (!bin) continue;
        // through the CLI: exit 1 and exactly one line on stderr
        char cmd[2048], errf[1300];
        snprintf(errf, sizeof errf, "%s/stderr.txt", tmp);
        snprintf(cmd, sizeof cmd, "%s inspect %s >/dev/null 2>%s", bin, p, errf);
        int st_ = system(cmd);
        char *txt = NULL;
        size_t len = 0;
        file_read_all(errf, &txt, &len, &e);
        int lines = 0;
        for (size_t k = 0; txt && k < len; k++) lines += txt[k] == '\n';
        CHECK(WIFEXITED(st_) && WEXITSTATUS(st_) == 1 && lines == 1, "%s via CLI: exit %d, %d lines: %s",
              bad[i].name, WEXITSTATUS(st_), lines, txt ? txt : "");
        free(txt);
    }
}

// ---- from memory, and the numbers fuzzing found ----
// st_open_mem validates like st_open; a header without tensors is a valid empty file (qsort of
// NULL was undefined); numbers beyond the integer range are errors, not conversions.
static int mem_open(const char *hdr, size_t data_bytes, struct err *e) {
    size_t hl = strlen(hdr), n = 8 + hl + data_bytes;
    unsigned char *buf = calloc(1, n);
    for (int k = 0; k < 8; k++) buf[k] = (unsigned char)((uint64_t)hl >> (8 * k));
    memcpy(buf + 8, hdr, hl);
    struct safetensors st;
    int rc = st_open_mem(&st, buf, n, "mem.safetensors", e);
    if (!rc) { rc = st.n_tensors; st_close(&st); }
    free(buf);
    return rc;
}

static void test_mem_and_numbers(void) {
    struct err e = {0};
    CHECK(mem_open("{}", 0, &e) == 0, "empty header: %s", e.msg);
    CHECK(mem_open("{\"__metadata__\":{\"a\":\"b\"}}", 0, &e) == 0, "metadata only: %s", e.msg);
    CHECK(mem_open("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, &e) == 1, "one tensor: %s", e.msg);
    const char *bad[] = {
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[1e300],\"data_offsets\":[0,8]}}",
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[1e30,1e300]}}",
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,2.5]}}",
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,8]}}",
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        int rc = mem_open(bad[k], 8, &e);
        CHECK(rc == ERR_FORMAT && strstr(e.msg, "mem.safetensors: tensor 'w'"), "bad number %zu: rc %d: %s", k, rc, e.msg);
    }
}

int main(void) {
    const char *t = getenv("HIFA4_TMP");
    snprintf(tmp, sizeof tmp, "%s/safetensors", t ? t : "build/tmp");
    struct err e = {0};
    mkdir_p(tmp, &e);
    test_roundtrip();
    test_shards();
    test_malformed();
    test_mem_and_numbers();
    return test_summary("test_safetensors");
}
