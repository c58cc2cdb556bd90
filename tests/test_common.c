// test_common.c: fp16/bf16 conversions (exhaustive against the hardware/compiler), SHA-256
// against FIPS 180-4 examples, UTF-8 validation, the CLI parser and the JSON getters.
#include <stdlib.h>

#include "cli/cli.h"
#include "base/common.h"
#include "base/json_util.h"
#include "base/sha256.h"
#include "base/xxh64.h"
#include "test.h"

static void test_fp16(void) {
    // every fp16 bit pattern decodes to the value _Float16 gives, and re-encodes to itself
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        _Float16 hv;
        uint16_t hb = (uint16_t)h;
        memcpy(&hv, &hb, 2);
        float want = (float)hv, got = f16_to_f32(hb);
        if (isnan(want) ? !isnan(got) : f32_bits(want) != f32_bits(got)) bad++;
        else if (!isnan(want) && f32_to_f16(got) != hb) bad++;
    }
    CHECK(bad == 0, "%d fp16 patterns decode/encode wrong", bad);
    // binary32 -> fp16 rounding against the compiler's conversion on a dense sweep of
    // exponents around the fp16 range, including every tie point pattern in the low bits
    bad = 0;
    for (uint32_t e = 90; e < 150; e++)
        for (uint32_t m = 0; m < (1u << 23); m += 4093) {
            for (uint32_t lo = 0; lo < 4; lo++) {
                uint32_t mm = (m & ~0x1fffu) | (lo == 0 ? 0 : lo == 1 ? 0x1000 : lo == 2 ? 0xfff : 0x1001);
                for (int s = 0; s < 2; s++) {
                    float x = bits_f32((uint32_t)s << 31 | e << 23 | mm);
                    _Float16 hv = (_Float16)x;
                    uint16_t want;
                    memcpy(&want, &hv, 2);
                    if (f32_to_f16(x) != want) bad++;
                }
            }
        }
    CHECK(bad == 0, "%d binary32->fp16 roundings differ from _Float16", bad);
    CHECK(round_fp16(65519.0f) == 65504.0f, "65519 -> %g", round_fp16(65519.0f));
    CHECK(isinf(round_fp16(65520.0f)), "65520 must overflow to inf");
    CHECK(round_fp16(5.9604644775390625e-8f) == 5.9604644775390625e-8f, "smallest subnormal kept");
    CHECK(round_fp16(2.98023223876953125e-8f) == 0.0f, "2^-25 ties to even (0)");
    CHECK(isnan(round_fp16(NAN)), "nan stays nan");
}

static void test_bf16(void) {
    CHECK(round_bf16(1.0f + 1.0f / 256) == 1.0f, "tie to even down");
    CHECK(round_bf16(1.0f + 3.0f / 256) == 1.0f + 4.0f / 256, "tie to even up");
    CHECK(isnan(round_bf16(NAN)), "nan stays nan");
    CHECK(isinf(round_bf16(3.4e38f)), "overflow rounds to inf");
    float x = 1.0f + 1.0f / 128 + 1.0f / 1024;
    CHECK(round_bf16(x) == 1.0f + 1.0f / 128, "round down below half");
}

static void test_sha256(void) {
    char hex[65];
    sha256_hex("abc", 3, hex);
    CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"), "abc: %s", hex);
    sha256_hex("", 0, hex);
    CHECK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"), "empty: %s", hex);
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256_hex(m, strlen(m), hex);
    CHECK(!strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"), "448-bit: %s", hex);
    // a million 'a' in uneven chunks
    struct sha256 s;
    uint8_t d[32];
    char buf[1001];
    memset(buf, 'a', sizeof buf);
    sha256_init(&s);
    for (int i = 0; i < 1000; i++) sha256_update(&s, buf, i % 2 ? 999 : 1001);
    sha256_final(&s, d);
    sha256_to_hex(d, hex);
    CHECK(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"), "1M a: %s", hex);
}

// XXH64 against the reference implementation's published values (seed 0), whole and streamed
// in pieces that cross the 32-byte stripes
static void test_xxh64(void) {
    static const struct { const char *s; uint64_t h; } v[] = {
        {"", 0xEF46DB3751D8E999ULL},
        {"a", 0xD24EC4F1A98C6E5BULL},
        {"abc", 0x44BC2CF5AD770999ULL},
        {"Nobody inspects the spammish repetition", 0xFBCEA83C8A378BF1ULL},
    };
    for (int i = 0; i < 4; i++) {
        const size_t n = strlen(v[i].s);
        CHECK(xxh64(v[i].s, n, 0) == v[i].h, "xxh64('%s') = %016llx", v[i].s, (unsigned long long)xxh64(v[i].s, n, 0));
        struct xxh64 st;
        xxh64_init(&st, 0);
        for (size_t k = 0; k < n; k += 3) xxh64_update(&st, v[i].s + k, n - k < 3 ? n - k : 3);
        CHECK(xxh64_digest(&st) == v[i].h, "xxh64 streamed '%s'", v[i].s);
    }
}

// num_shortest: the shortest %.15g..%.17g text that reads back as the same double
static void test_num_shortest(void) {
    static const struct { double d; const char *want; } v[] = {
        {0.1, "0.1"}, {0.5, "0.5"}, {1, "1"}, {0.75, "0.75"}, {1.0 / 3, "0.3333333333333333"}, {0.1 + 0.2, "0.30000000000000004"},
        {1e-300, "1e-300"}, {-2.5, "-2.5"},
    };
    char out[40];
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        num_shortest(out, sizeof out, v[k].d);
        CHECK(!strcmp(out, v[k].want) && strtod(out, NULL) == v[k].d, "num_shortest(%.17g): '%s', want '%s'", v[k].d, out, v[k].want);
    }
    num_shortest(out, sizeof out, strtod("0.10000000000000001", NULL)); // what a scales file writes for --alpha 0.1
    CHECK(!strcmp(out, "0.1"), "a scales file's 0.10000000000000001: '%s'", out);
}

static void test_utf8(void) {
    CHECK(utf8_valid("h\xc3\xa9llo", 6), "valid 2-byte");
    CHECK(!utf8_valid("\xc0\xaf", 2), "overlong rejected");
    CHECK(!utf8_valid("\xed\xa0\x80", 3), "surrogate rejected");
    CHECK(!utf8_valid("\xe2\x82", 2), "truncated rejected");
    CHECK(utf8_count("h\xc3\xa9\xf0\x9f\x98\x80", 7) == 3, "count code points");
}

static void test_cli(void) {
    const char *s = NULL;
    int n = 0, f = 0;
    double x = 0;
    struct cli_opt o[] = {{"name", CLI_STR, &s, ""}, {"n", CLI_INT, &n, ""}, {"flag", CLI_FLAG, &f, ""},
                          {"x", CLI_DBL, &x, ""}};
    char *argv[] = {"cmd", "--name", "a", "pos1", "--n=7", "--flag", "--x", "0.5", "pos2"};
    const char *pos[4];
    struct cli_pos pa = {pos, 4, 0};
    struct err e = {0};
    int rc = cli_parse_pos(9, argv, o, 4, &pa, &e);
    CHECK(rc == 0 && !strcmp(s, "a") && n == 7 && f == 1 && x == 0.5 && pa.n == 2 && !strcmp(pos[1], "pos2"),
          "parse: rc=%d %s", rc, e.msg);
    char *one[] = {"cmd", "pos1"};
    CHECK(cli_parse(2, one, o, 4, &e) == ERR_USAGE && strstr(e.msg, "pos1"), "no positionals: %s", e.msg);
    char *bad[] = {"cmd", "--nope", "1"};
    CHECK(cli_parse(3, bad, o, 4, &e) == ERR_USAGE && strstr(e.msg, "--nope"), "unknown: %s", e.msg);
    char *badn[] = {"cmd", "--n", "7x"};
    CHECK(cli_parse(3, badn, o, 4, &e) == ERR_USAGE && strstr(e.msg, "7x"), "bad int: %s", e.msg);
    char *miss[] = {"cmd", "--name"};
    CHECK(cli_parse(2, miss, o, 4, &e) == ERR_USAGE, "missing value");
    char list[] = "bf16,direct,hifa4";
    const char *items[4];
    CHECK(cli_split(list, items, 4, &e) == 3 && !strcmp(items[2], "hifa4"), "split");
    // an empty element is an error, not skipped; an option given twice is an error
    const char *const empty[] = {"", ",", "bf16,,direct", "bf16,", ",bf16"};
    for (int k = 0; k < 5; k++) {
        char b[32];
        snprintf(b, sizeof b, "%s", empty[k]);
        CHECK(cli_split(b, items, 4, &e) == ERR_USAGE && strstr(e.msg, "empty"), "split '%s': %s", empty[k], e.msg);
    }
    char *twice[] = {"cmd", "--name", "a", "--name=b"};
    CHECK(cli_parse(4, twice, o, 4, &e) == ERR_USAGE && strstr(e.msg, "--name given twice"), "twice: %s", e.msg);
    char *flag2[] = {"cmd", "--flag", "--flag"};
    CHECK(cli_parse(3, flag2, o, 4, &e) == ERR_USAGE && strstr(e.msg, "--flag given twice"), "flag twice: %s", e.msg);
}

// json_need_* / json_opt_*: a missing field is an error only for need (its message fixed, tests
// and users grep it); opt gives the default for absent and null; a wrong type is an error for
// both and leaves *out alone; obj/arr give NULL when there is nothing.
static void test_json(void) {
    const char *text = "{\"n\": 2.5, \"i\": -7, \"big\": 3e9, \"frac\": 1.5, \"b\": true, \"s\": \"x\", "
                       "\"o\": {}, \"a\": [1], \"nul\": null}";
    cJSON *j = NULL;
    struct err e = {0};
    CHECK(json_parse(&j, text, strlen(text), "t.json", &e) == 0, "%s", e.msg);
    double d = 0;
    int i = 0, b = 0;
    int64_t l = 0;
    const char *s = NULL;
    const cJSON *c = NULL;
    CHECK(json_need_num(j, "n", &d, "t.json", &e) == 0 && d == 2.5, "need num %g", d);
    CHECK(json_need_int(j, "i", &i, "t.json", &e) == 0 && i == -7, "need int %d", i);
    CHECK(json_need_i64(j, "big", &l, "t.json", &e) == 0 && l == 3000000000LL, "need i64 %lld", (long long)l);
    CHECK(json_need_bool(j, "b", &b, "t.json", &e) == 0 && b == 1, "need bool %d", b);
    CHECK(json_need_str(j, "s", &s, "t.json", &e) == 0 && s && !strcmp(s, "x"), "need str");
    CHECK(json_need_obj(j, "o", &c, "t.json", &e) == 0 && cJSON_IsObject(c), "need obj");
    CHECK(json_need_arr(j, "a", &c, "t.json", &e) == 0 && cJSON_IsArray(c), "need arr");
    // present: opt reads it as need does, the default unused
    CHECK(json_opt_int(j, "i", &i, 5, "t.json", &e) == 0 && i == -7, "opt int present %d", i);
    CHECK(json_opt_str(j, "s", &s, "dflt", "t.json", &e) == 0 && !strcmp(s, "x"), "opt str present");
    // missing or null: need fails with the message, opt gives the default
    const char *const absent[] = {"zz", "nul"};
    for (int k = 0; k < 2; k++) {
        const char *key = absent[k];
        char want[64];
        snprintf(want, sizeof want, "t.json: missing field '%s'", key);
        e.msg[0] = 0;
        CHECK(json_need_num(j, key, &d, "t.json", &e) == ERR_FORMAT && !strcmp(e.msg, want), "need num %s: %s", key, e.msg);
        CHECK(json_need_int(j, key, &i, "t.json", &e) == ERR_FORMAT && !strcmp(e.msg, want), "need int %s", key);
        CHECK(json_need_i64(j, key, &l, "t.json", &e) == ERR_FORMAT && !strcmp(e.msg, want), "need i64 %s", key);
        CHECK(json_need_bool(j, key, &b, "t.json", &e) == ERR_FORMAT && !strcmp(e.msg, want), "need bool %s", key);
        CHECK(json_need_str(j, key, &s, "t.json", &e) == ERR_FORMAT && !strcmp(e.msg, want), "need str %s", key);
        c = j;
        CHECK(json_need_obj(j, key, &c, "t.json", &e) == ERR_FORMAT && !strcmp(e.msg, want) && !c, "need obj %s", key);
        c = j;
        CHECK(json_need_arr(j, key, &c, "t.json", &e) == ERR_FORMAT && !strcmp(e.msg, want) && !c, "need arr %s", key);
        CHECK(json_opt_num(j, key, &d, -0.5, "t.json", &e) == 0 && d == -0.5, "opt num %s: %g", key, d);
        CHECK(json_opt_int(j, key, &i, 42, "t.json", &e) == 0 && i == 42, "opt int %s: %d", key, i);
        CHECK(json_opt_i64(j, key, &l, -1, "t.json", &e) == 0 && l == -1, "opt i64 %s", key);
        CHECK(json_opt_bool(j, key, &b, 0, "t.json", &e) == 0 && b == 0, "opt bool %s", key);
        CHECK(json_opt_str(j, key, &s, NULL, "t.json", &e) == 0 && !s, "opt str %s", key);
        c = j;
        CHECK(json_opt_obj(j, key, &c, "t.json", &e) == 0 && !c, "opt obj %s", key);
        c = j;
        CHECK(json_opt_arr(j, key, &c, "t.json", &e) == 0 && !c, "opt arr %s", key);
    }
    // the wrong type: an error for opt too, naming ctx, field and value; *out untouched
    i = 9, s = "keep", d = 1;
    CHECK(json_opt_int(j, "s", &i, 0, "t.json", &e) == ERR_FORMAT && i == 9 &&
              !strcmp(e.msg, "t.json: field 's': expected an integer, got \"x\""), "opt int type: %s", e.msg);
    CHECK(json_opt_int(j, "frac", &i, 0, "t.json", &e) == ERR_FORMAT && i == 9, "opt int fraction: %s", e.msg);
    CHECK(json_opt_int(j, "big", &i, 0, "t.json", &e) == ERR_RANGE && i == 9 &&
              !strcmp(e.msg, "t.json: field 'big': 3000000000 out of range"), "opt int range: %s", e.msg);
    CHECK(json_opt_str(j, "i", &s, NULL, "t.json", &e) == ERR_FORMAT && !strcmp(s, "keep") &&
              !strcmp(e.msg, "t.json: field 'i': expected a string, got -7"), "opt str type: %s", e.msg);
    CHECK(json_opt_num(j, "s", &d, 0, "t.json", &e) == ERR_FORMAT && d == 1 &&
              !strcmp(e.msg, "t.json: field 's': expected a number, got \"x\""), "opt num type: %s", e.msg);
    CHECK(json_opt_bool(j, "i", &b, 0, "t.json", &e) == ERR_FORMAT &&
              !strcmp(e.msg, "t.json: field 'i': expected true/false, got -7"), "opt bool type: %s", e.msg);
    c = j;
    CHECK(json_opt_obj(j, "a", &c, "t.json", &e) == ERR_FORMAT && !c &&
              !strcmp(e.msg, "t.json: field 'a': expected an object, got [1]"), "opt obj type: %s", e.msg);
    CHECK(json_opt_arr(j, "o", &c, "t.json", &e) == ERR_FORMAT &&
              !strcmp(e.msg, "t.json: field 'o': expected an array, got {}"), "opt arr type: %s", e.msg);
    // not an object: an error even for an optional field
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "a");
    i = 3;
    CHECK(json_opt_int(arr, "k", &i, 0, "t.json", &e) == ERR_FORMAT && i == 3 &&
              !strcmp(e.msg, "t.json: expected a JSON object holding 'k'"), "opt on an array: %s", e.msg);
    cJSON_Delete(j);
}

int main(void) {
    test_fp16();
    test_bf16();
    test_sha256();
    test_xxh64();
    test_num_shortest();
    test_utf8();
    test_cli();
    test_json();
    return test_summary("test_common");
}
