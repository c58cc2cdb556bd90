// test_gguf.c: the GGUF reader and the ggml dequantizers. Dequantization of every supported type
// bit for bit against gguf-py's gguf.quants.dequantize (tests/data/gguf/dequant_ref.json.zst,
// made by tests/gen/gguf_dequant_ref.py); valid files built here parse with the right values;
// every malformed file (truncated at every byte, bad magic/version, overflowing counts and
// lengths, unknown types, nested arrays, bad bools, misaligned or out-of-file tensor data,
// overlaps, duplicates) is refused with one error naming the problem, never a crash.
#include <stdlib.h>
#include <sys/wait.h>

#include "base/json_util.h"
#include "io/ggml_quants.h"
#include "io/gguf.h"
#include "gguf_build.h"
#include "test.h"

static char tmp[1024];
static const char *tpath(const char *name) {
    static char buf[8][1200];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmp, name);
    return buf[k];
}

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

// ---- a well-formed file with every value type ----
static float t_a[16];
static uint8_t t_b[2 * 18], t_c[16 * 2];

static void valid_kvs(struct gb *kv, uint64_t *n_kv) {
    const char *langs[] = {"en", "fr", ""};
    const int32_t ints[] = {-1, 0, 7, 2147483647};
    gb_kv_str(kv, "general.architecture", "test");
    gb_str(kv, "u8"), gb_u32(kv, 0), gb_raw(kv, "\xfe", 1);
    gb_str(kv, "i8"), gb_u32(kv, 1), gb_raw(kv, "\xfe", 1);
    gb_str(kv, "u16"), gb_u32(kv, 2), gb_le(kv, 65535, 2);
    gb_str(kv, "i16"), gb_u32(kv, 3), gb_le(kv, 0x8000, 2);
    gb_kv_u32(kv, "u32", 4000000000u);
    gb_str(kv, "i32"), gb_u32(kv, 5), gb_u32(kv, (uint32_t)-5);
    gb_kv_f32(kv, "f32", 0.25f);
    gb_kv_bool(kv, "bool", 1);
    gb_str(kv, "u64"), gb_u32(kv, 10), gb_u64(kv, 1ull << 40);
    gb_str(kv, "i64"), gb_u32(kv, 11), gb_u64(kv, (uint64_t)-3);
    double dv = -1.5;
    uint64_t du;
    memcpy(&du, &dv, 8);
    gb_str(kv, "f64"), gb_u32(kv, 12), gb_u64(kv, du);
    gb_kv_strs(kv, "langs", langs, 3);
    gb_kv_i32s(kv, "ints", ints, 4);
    gb_kv_u32(kv, "general.alignment", 32);
    *n_kv = 15;
}

// Tensors: a F32 [8, 2] (64 bytes), b Q4_0 [32, 2] (36 bytes, padded to 64), c F16 [16] (32
// bytes: the file ends with the last data byte, so every shorter prefix is truncated).
static uint8_t *valid_file(size_t *n) {
    struct gb kv = {0};
    uint64_t n_kv;
    valid_kvs(&kv, &n_kv);
    for (int i = 0; i < 16; i++) t_a[i] = (float)i - 7.5f;
    for (size_t i = 0; i < sizeof t_b; i++) t_b[i] = (uint8_t)(i * 37 + 11);
    t_b[0] = 0x00, t_b[1] = 0x3c, t_b[18] = 0x00, t_b[19] = 0xbc; // d = 1, -1
    for (int i = 0; i < 16; i++) t_c[2 * i] = 0, t_c[2 * i + 1] = (uint8_t)(0x3c + (i & 3));
    struct gb_tensor ts[] = {{"a", 2, {8, 2}, GGML_F32, t_a, 64}, {"b", 2, {32, 2}, GGML_Q4_0, t_b, 36},
                             {"c", 1, {16}, GGML_F16, t_c, 32}};
    uint8_t *f = gguf_build(&kv, n_kv, ts, 3, 32, n);
    free(kv.b);
    return f;
}

static void test_valid(void) {
    size_t n;
    uint8_t *f = valid_file(&n);
    struct gguf g;
    struct err e = {0};
    int rc = gguf_parse(&g, f, n, "valid.gguf", &e);
    CHECK(rc == 0, "valid file: %s", e.msg);
    if (rc) { free(f); return; }
    CHECK(g.version == 3 && g.n_kv == 15 && g.n_tensors == 3 && g.alignment == 32, "header");
    int64_t iv = 0;
    double dv = 0;
    int bv = 0;
    struct gguf_str sv = {0};
    const char *ik[] = {"u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64"};
    const int64_t iw[] = {254, -2, 65535, -32768, 4000000000LL, -5, 1LL << 40, -3};
    for (int i = 0; i < 8; i++) {
        rc = gguf_get_int(&g, ik[i], &iv, 1, &e);
        CHECK(rc == 0 && iv == iw[i], "%s = %lld (rc %d %s)", ik[i], (long long)iv, rc, e.msg);
    }
    CHECK(!gguf_get_float(&g, "f32", &dv, 1, &e) && dv == 0.25, "f32");
    CHECK(!gguf_get_float(&g, "f64", &dv, 1, &e) && dv == -1.5, "f64");
    CHECK(!gguf_get_bool(&g, "bool", &bv, 1, &e) && bv == 1, "bool");
    CHECK(!gguf_get_str(&g, "general.architecture", &sv, 1, &e) && sv.len == 4 && !memcmp(sv.s, "test", 4), "str");
    rc = gguf_get_int(&g, "f32", &iv, 1, &e);
    CHECK(rc == ERR_FORMAT && strstr(e.msg, "key 'f32'") && strstr(e.msg, "FLOAT32"), "wrong type: %s", e.msg);
    rc = gguf_get_str(&g, "langs", &sv, 1, &e);
    CHECK(rc == ERR_FORMAT && strstr(e.msg, "ARRAY[STRING]"), "array as string: %s", e.msg);
    rc = gguf_get_int(&g, "nope", &iv, 1, &e);
    CHECK(rc == ERR_NOTFOUND && strstr(e.msg, "valid.gguf") && strstr(e.msg, "'nope'"), "missing: %s", e.msg);
    iv = 42;
    CHECK(gguf_get_int(&g, "nope", &iv, 0, &e) == 0 && iv == 42, "optional key left unchanged");
    const struct gguf_kv *arr = NULL;
    CHECK(!gguf_get_arr(&g, "langs", GGUF_STR, &arr, 1, &e) && arr->n == 3 && arr->strs[2].len == 0 &&
              !memcmp(arr->strs[1].s, "fr", 2), "string array");
    CHECK(!gguf_get_arr(&g, "ints", GGUF_I64, &arr, 1, &e) && gguf_kv_int(arr, 0) == -1 && gguf_kv_int(arr, 3) == 2147483647,
          "int array");
    CHECK(gguf_get_arr(&g, "ints", GGUF_STR, &arr, 1, &e) == ERR_FORMAT && strstr(e.msg, "ARRAY[INT32]"), "%s", e.msg);
    const struct gguf_tensor *a = gguf_find_tensor(&g, "a"), *b = gguf_find_tensor(&g, "b"), *c = gguf_find_tensor(&g, "c");
    CHECK(a && b && c && !gguf_find_tensor(&g, "d"), "find");
    if (a && b && c) {
        CHECK(a->n_dims == 2 && a->ne[0] == 8 && a->ne[1] == 2 && a->numel == 16 && a->nbytes == 64 && a->offset == 0,
              "a info");
        CHECK(b->type == GGML_Q4_0 && b->nbytes == 36 && b->offset == 64 && c->offset == 128 && c->nbytes == 32, "b, c info");
        CHECK(a->data == f + g.data_offset && g.data_offset % 32 == 0 && c->data + 32 == f + n, "data pointers");
        float out[64];
        CHECK(!ggml_dequantize(out, a->data, a->type, a->numel, &e) && !memcmp(out, t_a, 64), "a values");
        CHECK(!ggml_dequantize(out, b->data, b->type, b->numel, &e) && out[0] == (float)((t_b[2] & 15) - 8) &&
                  out[32] == -(float)((t_b[20] & 15) - 8), "b values");
        CHECK(!ggml_dequantize(out, c->data, c->type, c->numel, &e) && out[0] == 1.0f && out[1] == 1.25f, "c values");
    }
    char hex[65];
    gguf_sha256(&g, hex);
    CHECK(strlen(hex) == 64, "sha256");
    gguf_close(&g);
    // v2 reads the same
    f[4] = 2;
    rc = gguf_parse(&g, f, n, "v2.gguf", &e);
    CHECK(rc == 0 && g.version == 2, "version 2: %s", e.msg);
    gguf_close(&g);
    // every prefix is refused as truncated (format error, never a crash)
    f[4] = 3;
    int bad = 0;
    for (size_t k = 0; k < n; k++) {
        rc = gguf_parse(&g, f, k, "cut.gguf", &e);
        if (rc != ERR_FORMAT || !strstr(e.msg, "cut.gguf") ||
            !(strstr(e.msg, "truncated") || strstr(e.msg, "past the end") || strstr(e.msg, "outside") ||
              strstr(e.msg, "cannot fit") || strstr(e.msg, "needs more")))
            bad++, fprintf(stderr, "prefix %zu: rc %d: %s\n", k, rc, e.msg);
        gguf_close(&g);
    }
    CHECK(bad == 0, "%d of %zu prefixes not refused as truncated", bad, n);
    free(f);
}

// ---- malformed files ----
static void hdr(struct gb *g, uint32_t version, uint64_t n_t, uint64_t n_kv) {
    gb_raw(g, "GGUF", 4), gb_u32(g, version), gb_u64(g, n_t), gb_u64(g, n_kv);
}
// One tensor info with the given fields, then padding and 64 data bytes.
static void one_tensor(struct gb *g, const char *name, uint32_t nd, const uint64_t *ne, uint32_t type, uint64_t off) {
    hdr(g, 3, 1, 0);
    gb_str(g, name), gb_u32(g, nd);
    for (uint32_t d = 0; d < nd && d < 8; d++) gb_u64(g, ne[d]);
    gb_u32(g, type), gb_u64(g, off);
    gb_pad(g, 32);
    for (int i = 0; i < 64; i++) gb_raw(g, "\x3c", 1);
}

static void m_empty(struct gb *g) { (void)g; }
static void m_magic(struct gb *g) { gb_raw(g, "GGUX", 4), gb_u32(g, 3), gb_u64(g, 0), gb_u64(g, 0); }
static void m_v1(struct gb *g) { hdr(g, 1, 0, 0); }
static void m_v4(struct gb *g) { hdr(g, 4, 0, 0); }
static void m_be(struct gb *g) { hdr(g, 0x03000000u, 0, 0); }
static void m_nkv(struct gb *g) { hdr(g, 3, 0, 1ull << 62); }
static void m_nt(struct gb *g) { hdr(g, 3, 1ull << 62, 0); }
static void m_keylen(struct gb *g) { hdr(g, 3, 0, 1), gb_u64(g, UINT64_MAX), gb_raw(g, "abcdefgh", 8); }
static void m_keyempty(struct gb *g) { hdr(g, 3, 0, 1), gb_str(g, ""), gb_u32(g, 4), gb_u32(g, 1); }
static void m_keynul(struct gb *g) { hdr(g, 3, 0, 1), gb_strn(g, "a\0b", 3), gb_u32(g, 4), gb_u32(g, 1); }
static void m_vtype(struct gb *g) { hdr(g, 3, 0, 1), gb_str(g, "x"), gb_u32(g, 13), gb_u32(g, 1); }
static void m_nested(struct gb *g) { hdr(g, 3, 0, 1), gb_str(g, "x"), gb_u32(g, 9), gb_u32(g, 9), gb_u64(g, 1), gb_u32(g, 4), gb_u64(g, 0); }
static void m_elem(struct gb *g) { hdr(g, 3, 0, 1), gb_str(g, "x"), gb_u32(g, 9), gb_u32(g, 99), gb_u64(g, 1), gb_u32(g, 0); }
static void m_arrcount(struct gb *g) { hdr(g, 3, 0, 1), gb_str(g, "x"), gb_u32(g, 9), gb_u32(g, 4), gb_u64(g, 1ull << 60), gb_u32(g, 0); }
static void m_arrstr(struct gb *g) {
    hdr(g, 3, 0, 1), gb_str(g, "x"), gb_u32(g, 9), gb_u32(g, 8), gb_u64(g, 2), gb_str(g, "ok"), gb_u64(g, 1ull << 50);
    gb_raw(g, "zz", 2);
}
static void m_bool(struct gb *g) { hdr(g, 3, 0, 1), gb_str(g, "x"), gb_u32(g, 7), gb_raw(g, "\x02", 1); }
static void m_dupkey(struct gb *g) { hdr(g, 3, 0, 2), gb_kv_u32(g, "x", 1), gb_kv_u32(g, "x", 2); }
static void m_align(struct gb *g) { hdr(g, 3, 0, 1), gb_kv_u32(g, "general.alignment", 48); }
static void m_aligntype(struct gb *g) { hdr(g, 3, 0, 1), gb_kv_str(g, "general.alignment", "32"); }
static void m_ndims0(struct gb *g) { uint64_t ne[1] = {16}; one_tensor(g, "t", 0, ne, GGML_F32, 0); }
static void m_ndims5(struct gb *g) { uint64_t ne[5] = {1, 1, 1, 1, 1}; one_tensor(g, "t", 5, ne, GGML_F32, 0); }
static void m_dims(struct gb *g) { uint64_t ne[2] = {1ull << 40, 1ull << 40}; one_tensor(g, "t", 2, ne, GGML_F32, 0); }
static void m_dimneg(struct gb *g) { uint64_t ne[1] = {UINT64_MAX}; one_tensor(g, "t", 1, ne, GGML_F32, 0); }
static void m_ttype(struct gb *g) { uint64_t ne[1] = {16}; one_tensor(g, "t", 1, ne, 99, 0); }
static void m_ttype4(struct gb *g) { uint64_t ne[1] = {32}; one_tensor(g, "t", 1, ne, 4, 0); }
static void m_blk(struct gb *g) { uint64_t ne[1] = {16}; one_tensor(g, "t", 1, ne, GGML_Q4_0, 0); }
static void m_misal(struct gb *g) { uint64_t ne[1] = {4}; one_tensor(g, "t", 1, ne, GGML_F32, 4); }
static void m_outside(struct gb *g) { uint64_t ne[1] = {16}; one_tensor(g, "t", 1, ne, GGML_F32, 64); }
static void m_toobig(struct gb *g) { uint64_t ne[1] = {17}; one_tensor(g, "t", 1, ne, GGML_F32, 0); }
static void m_tname(struct gb *g) { uint64_t ne[1] = {16}; one_tensor(g, "", 1, ne, GGML_F32, 0); }
static void two_tensors(struct gb *g, const char *n1, const char *n2, uint64_t off2) {
    hdr(g, 3, 2, 0);
    gb_str(g, n1), gb_u32(g, 1), gb_u64(g, 8), gb_u32(g, GGML_F32), gb_u64(g, 0);
    gb_str(g, n2), gb_u32(g, 1), gb_u64(g, 8), gb_u32(g, GGML_F32), gb_u64(g, off2);
    gb_pad(g, 32);
    for (int i = 0; i < 64; i++) gb_raw(g, "\x00", 1);
}
static void m_overlap(struct gb *g) { two_tensors(g, "a", "b", 0); }
static void m_dupname(struct gb *g) { two_tensors(g, "a", "a", 32); }

static const struct {
    const char *name;
    void (*make)(struct gb *);
    int code;
    const char *must;
} bad[] = {
    {"empty", m_empty, ERR_FORMAT, "truncated: magic"},
    {"magic", m_magic, ERR_FORMAT, "not a GGUF file (magic 'GGUX'"},
    {"version1", m_v1, ERR_UNSUPPORTED, "version 1 is not supported"},
    {"version4", m_v4, ERR_FORMAT, "unknown GGUF version 4"},
    {"big-endian", m_be, ERR_UNSUPPORTED, "big-endian"},
    {"kv-count", m_nkv, ERR_FORMAT, "metadata count 4611686018427387904 cannot fit"},
    {"tensor-count", m_nt, ERR_FORMAT, "tensor count 4611686018427387904 cannot fit"},
    {"key-length", m_keylen, ERR_FORMAT, "string length 18446744073709551615"},
    {"key-empty", m_keyempty, ERR_FORMAT, "key 0 at offset 24 is empty"},
    {"key-nul", m_keynul, ERR_FORMAT, "contains a NUL byte"},
    {"value-type", m_vtype, ERR_FORMAT, "key 'x': unknown value type 13"},
    {"nested-array", m_nested, ERR_UNSUPPORTED, "key 'x': nested arrays"},
    {"array-type", m_elem, ERR_FORMAT, "key 'x': unknown array element type 99"},
    {"array-count", m_arrcount, ERR_FORMAT, "array of 1152921504606846976 UINT32 elements"},
    {"array-string", m_arrstr, ERR_FORMAT, "key 'x' string 1: string length 1125899906842624"},
    {"bool", m_bool, ERR_FORMAT, "key 'x': bool value 2"},
    {"duplicate-key", m_dupkey, ERR_FORMAT, "duplicate key 'x'"},
    {"alignment", m_align, ERR_FORMAT, "'general.alignment' = 48 is not a power of two"},
    {"alignment-type", m_aligntype, ERR_FORMAT, "'general.alignment': expected UINT32, got STRING"},
    {"n-dims-0", m_ndims0, ERR_FORMAT, "tensor 't': n_dims = 0"},
    {"n-dims-5", m_ndims5, ERR_FORMAT, "tensor 't': n_dims = 5"},
    {"dims-overflow", m_dims, ERR_FORMAT, "tensor 't': ne[1] = 1099511627776 makes the element count overflow"},
    {"dim-huge", m_dimneg, ERR_FORMAT, "ne[0] = 18446744073709551615"},
    {"tensor-type", m_ttype, ERR_FORMAT, "tensor 't': unknown ggml type 99"},
    {"tensor-type-removed", m_ttype4, ERR_FORMAT, "tensor 't': unknown ggml type 4"},
    {"partial-block", m_blk, ERR_FORMAT, "ne[0] = 16 is not a multiple of the Q4_0 block size 32"},
    {"misaligned", m_misal, ERR_FORMAT, "tensor 't': offset 4 is not a multiple of the alignment 32"},
    {"outside", m_outside, ERR_FORMAT, "tensor 't': data [64, +64) lies outside the data section"},
    {"past-end", m_toobig, ERR_FORMAT, "tensor 't': data [0, +68) lies outside"},
    {"tensor-name", m_tname, ERR_FORMAT, "tensor 0 name at offset 24 is empty"},
    {"overlap", m_overlap, ERR_FORMAT, "overlaps tensor"},
    {"duplicate-tensor", m_dupname, ERR_FORMAT, "duplicate tensor name 'a'"},
};

// One line on stderr and exit status 1 from `hifa4-eval <cmd> FILE ...`.
static void check_cli(const char *bin, const char *cmd, const char *file, const char *name) {
    char line[4096], errf[1300];
    snprintf(errf, sizeof errf, "%s/stderr.txt", tmp);
    snprintf(line, sizeof line, "%s %s %s >/dev/null 2>%s", bin, cmd, file, errf);
    int st = system(line);
    char *txt = NULL;
    size_t len = 0;
    struct err e = {0};
    file_read_all(errf, &txt, &len, &e);
    int lines = 0;
    for (size_t k = 0; txt && k < len; k++) lines += txt[k] == '\n';
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1 && lines == 1 && txt && strstr(txt, file),
          "%s via '%s': exit %d, %d lines: %s", name, cmd, WIFEXITED(st) ? WEXITSTATUS(st) : -1, lines, txt ? txt : "");
    free(txt);
}

static void test_malformed(void) {
    const char *bin = getenv("HIFA4_BIN");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct gb g = {0};
        bad[i].make(&g);
        char name[128];
        snprintf(name, sizeof name, "bad-%s.gguf", bad[i].name);
        struct gguf gg;
        struct err e = {0};
        int rc = gguf_parse(&gg, g.b ? g.b : (uint8_t *)"", g.n, name, &e);
        CHECK(rc == bad[i].code && strstr(e.msg, bad[i].must) && strstr(e.msg, name) && !strchr(e.msg, '\n'),
              "%s: rc=%d msg='%s' (want code %d, '%s')", bad[i].name, rc, e.msg, bad[i].code, bad[i].must);
        gguf_close(&gg);
        const char *p = tpath(name);
        CHECK(!file_write_atomic(p, g.b ? (void *)g.b : "", g.n, &e), "write %s", p);
        rc = gguf_open(&gg, p, &e);
        CHECK(rc == bad[i].code && strstr(e.msg, p), "%s from a file: rc %d %s", bad[i].name, rc, e.msg);
        gguf_close(&gg);
        if (bin) {
            char cmd[1400];
            snprintf(cmd, sizeof cmd, "import-gguf --out %s", tpath("never"));
            check_cli(bin, cmd, p, bad[i].name);
            check_cli(bin, "inspect", p, bad[i].name);
        }
        free(g.b);
    }
    if (!bin) printf("skip CLI checks of malformed GGUF files: HIFA4_BIN not set\n");
    CHECK(!dir_exists(tpath("never")), "a refused file leaves no output directory");
}

// Random byte mutations of the valid file: the reader refuses or accepts, never reads out of
// bounds (run under `make asan`); whatever parses is dequantized.
static void test_mutations(void) {
    size_t n;
    uint8_t *f = valid_file(&n), *m = malloc(n);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    int ok = 0, refused = 0, bad_msg = 0;
    float out[4096];
    for (int it = 0; it < 20000; it++) {
        memcpy(m, f, n);
        int k = 1 + (int)(s % 4);
        for (int j = 0; j < k; j++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            size_t pos = (size_t)(s >> 33) % n;
            m[pos] = (uint8_t)(s >> 13) ^ (uint8_t)(it & 1 ? 0xff : 0x01);
        }
        size_t len = it % 7 == 0 ? (size_t)(s >> 40) % (n + 1) : n;
        struct gguf g;
        struct err e = {0};
        if (gguf_parse(&g, m, len, "mut.gguf", &e)) {
            refused++;
            if (!e.msg[0] || strchr(e.msg, '\n') || !strstr(e.msg, "mut.gguf")) bad_msg++;
            continue;
        }
        ok++;
        for (int64_t t = 0; t < g.n_tensors; t++)
            if (g.tensors[t].numel <= 4096 && ggml_can_dequantize(g.tensors[t].type))
                ggml_dequantize(out, g.tensors[t].data, g.tensors[t].type, g.tensors[t].numel, &e);
        gguf_close(&g);
    }
    printf("mutations: %d parsed, %d refused\n", ok, refused);
    CHECK(ok > 0 && refused > 0, "mutations exercise both paths");
    CHECK(bad_msg == 0, "%d refusals without a one-line message naming the file", bad_msg);
    free(m);
    free(f);
}

int main(void) {
    const char *t = getenv("HIFA4_TMP");
    snprintf(tmp, sizeof tmp, "%s/gguf", t ? t : "build/tmp");
    struct err e = {0};
    mkdir_p(tmp, &e);
    test_dequant_ref();
    test_valid();
    test_malformed();
    test_mutations();
    return test_summary("test_gguf");
}
