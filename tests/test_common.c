// test_common.c: fp16/bf16 conversions (exhaustive against the hardware/compiler), SHA-256
// against FIPS 180-4 examples, UTF-8 validation, and the CLI parser.
#include <stdlib.h>

#include "cli/cli.h"
#include "base/common.h"
#include "base/sha256.h"
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
    // issue 27: an empty element is an error, not skipped; an option given twice is an error
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

int main(void) {
    test_fp16();
    test_bf16();
    test_sha256();
    test_utf8();
    test_cli();
    return test_summary("test_common");
}
