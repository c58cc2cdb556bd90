// test_tokenizer.c: the tokenizer against Hugging Face's own ids (tokenizers/golden of the test data,
// four tokenizers, with and without special tokens), decode round trips, the llama2.c
// stories260K conversion against llama2.c's own ids, malformed tokenizer.json files (errors,
// never crashes), a minimal HF-standard byte-level BPE file, and concurrent encoding.
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "base/json_util.h"
#include "test.h"
#include "tokenizer/internal.h"
#include "tokenizer/llama2c_vocab.h"
#include "tokenizer/tokenizer.h"


// ---- golden files ----
struct gcase { char *text; size_t len; int32_t *ids, *ids_sp; int n, n_sp; int added; };
struct golden { struct gcase *c; int n; };

static int read_ids(const cJSON *a, int32_t **ids, int *n) {
    *n = cJSON_GetArraySize(a);
    *ids = malloc(((size_t)*n + 1) * sizeof **ids);
    int i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, a) (*ids)[i++] = (int32_t)x->valuedouble;
    return 0;
}

static int load_golden(const char *path, struct golden *g) {
    struct err e = {0};
    char *buf;
    size_t len;
    memset(g, 0, sizeof *g);
    if (file_read_all(path, &buf, &len, &e)) { fprintf(stderr, "%s\n", e.msg); return -1; }
    for (char *line = buf; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        cJSON *j = cJSON_Parse(line);
        if (j) {
            g->c = realloc(g->c, (size_t)(g->n + 1) * sizeof *g->c);
            struct gcase *c = &g->c[g->n++];
            memset(c, 0, sizeof *c);
            const cJSON *t = cJSON_GetObjectItem(j, "text");
            // cJSON strings stop at NUL; the goldens hold no U+0000 (checked by length below).
            c->len = strlen(t->valuestring);
            c->text = strdup(t->valuestring);
            const cJSON *ids = cJSON_GetObjectItem(j, "ids");
            if (ids) read_ids(ids, &c->ids, &c->n); else c->n = -1;
            read_ids(cJSON_GetObjectItem(j, "ids_special"), &c->ids_sp, &c->n_sp);
            c->added = cJSON_GetObjectItem(j, "added") != NULL;
            cJSON_Delete(j);
        }
        line = nl ? nl + 1 : NULL;
    }
    free(buf);
    return 0;
}

static void free_golden(struct golden *g) {
    for (int i = 0; i < g->n; i++) { free(g->c[i].text); free(g->c[i].ids); free(g->c[i].ids_sp); }
    free(g->c);
}

static void show_text(const char *s, size_t n) {
    fputc('"', stderr);
    for (size_t i = 0; i < n && i < 80; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n') fputs("\\n", stderr);
        else if (c < 0x20) fprintf(stderr, "\\x%02x", c);
        else fputc(c, stderr);
    }
    fputs(n > 80 ? "\"..." : "\"", stderr);
}

static int same_ids(const int32_t *a, int na, const int32_t *b, int nb, const char *what, const char *text, size_t tl) {
    int d = 0;
    while (d < na && d < nb && a[d] == b[d]) d++;
    if (d == na && na == nb) return 1;
    fprintf(stderr, "  %s mismatch on ", what);
    show_text(text, tl);
    fprintf(stderr, " at %d: got", d);
    for (int i = d; i < na && i < d + 6; i++) fprintf(stderr, " %d", a[i]);
    fprintf(stderr, " (n=%d) want", na);
    for (int i = d; i < nb && i < d + 6; i++) fprintf(stderr, " %d", b[i]);
    fprintf(stderr, " (n=%d)\n", nb);
    return 0;
}

static int has_u2581(const char *s) { return strstr(s, "\xe2\x96\x81") != NULL; }

static int is_nfc(const char *s) {
    utf8proc_uint8_t *n = utf8proc_NFC((const utf8proc_uint8_t *)s);
    int same = n && !strcmp((const char *)n, s);
    free(n);
    return same;
}

// Which golden strings decode back exactly: qwen3 normalizes to NFC; mistral/gemma3 map a
// literal U+2581 to a space on decode; mistral also prepends "▁" after every added token.
static int lossless(const char *name, const struct gcase *c) {
    if (!strcmp(name, "qwen3")) return is_nfc(c->text);
    if (!strcmp(name, "mistral")) return !has_u2581(c->text) && !c->added;
    if (!strcmp(name, "gemma3")) return !has_u2581(c->text);
    return 1;
}

static void test_golden(const char *name, int expect_bos) {
    const char *dir = TEST_NEED("tokenizers/%s", name);
    const char *path = dir ? TEST_NEED("tokenizers/golden/%s.jsonl", name) : NULL;
    if (!path) return;
    struct tokenizer *t = NULL;
    struct err e = {0};
    double t0 = time_now();
    int rc = tok_load(&t, dir, &e);
    double dt = time_now() - t0;
    CHECK(rc == 0, "%s: tok_load: %s", name, e.msg);
    if (rc) return;
    struct golden g;
    CHECK(load_golden(path, &g) == 0, "%s", path);
    CHECK(g.n >= 198, "%s: only %d cases", path, g.n);
    int ok = 0, ok_sp = 0, rt = 0, n_rt = 0;
    for (int i = 0; i < g.n; i++) {
        struct gcase *c = &g.c[i];
        int32_t *ids = NULL;
        int n = 0;
        rc = tok_encode(t, c->text, c->len, 0, &ids, &n, &e);
        CHECK(rc == 0, "%s case %d: %s", name, i, e.msg);
        if (rc) continue;
        if (same_ids(ids, n, c->ids, c->n, "ids", c->text, c->len)) ok++;
        if (lossless(name, c)) {
            char *back = NULL;
            size_t bl = 0;
            n_rt++;
            rc = tok_decode(t, ids, n, &back, &bl, &e);
            if (rc == 0 && bl == c->len && !memcmp(back, c->text, bl)) rt++;
            else { fprintf(stderr, "  %s round trip failed on ", name); show_text(c->text, c->len); fprintf(stderr, " -> "); if (back) show_text(back, bl); fputc('\n', stderr); }
            free(back);
        }
        free(ids);
        rc = tok_encode(t, c->text, c->len, 1, &ids, &n, &e);
        if (rc == 0 && same_ids(ids, n, c->ids_sp, c->n_sp, "ids_special", c->text, c->len)) ok_sp++;
        free(ids);
    }
    CHECK(ok == g.n, "%s: ids %d/%d equal", name, ok, g.n);
    CHECK(ok_sp == g.n, "%s: ids_special %d/%d equal", name, ok_sp, g.n);
    CHECK(rt == n_rt && n_rt > g.n / 2, "%s: round trip %d/%d", name, rt, n_rt);
    CHECK(tok_adds_bos(t) == expect_bos, "%s: adds_bos %d", name, tok_adds_bos(t));
    TEST_PROGRESS("%s: %d/%d ids, %d/%d ids_special, %d/%d round trips, load %.3f s", name, ok, g.n, ok_sp, g.n, rt, n_rt, dt);
    free_golden(&g);
    tok_free(t);
}

// llama2.c's tok512.bin converted to tokenizer.json must give llama2.c's own encode() ids.
static void test_llama2c(void) {
    const char *tok512 = TEST_NEED("models/stories260K/tok512.bin");
    const char *gold = tok512 ? TEST_NEED("goldens/stories260K/tok512-golden.jsonl") : NULL;
    if (!gold) return;
    struct err e = {0};
    char *json = NULL;
    int rc = tok_llama2c_to_json(tok512, 512, &json, &e);
    CHECK(rc == 0, "tok_llama2c_to_json: %s", e.msg);
    if (rc) return;
    struct tokenizer *t = NULL;
    rc = tok_load_json(&t, json, strlen(json), NULL, "tok512.json", &e);
    CHECK(rc == 0, "tok512 tokenizer.json: %s", e.msg);
    free(json);
    if (rc) return;
    CHECK(tok_vocab_size(t) == 512, "vocab %d", tok_vocab_size(t));
    CHECK(tok_bos_id(t) == 1 && tok_adds_bos(t) == 1, "bos %d adds %d", tok_bos_id(t), tok_adds_bos(t));
    CHECK(tok_eos_id(t) == 2, "eos %d", tok_eos_id(t));
    struct golden g;
    CHECK(load_golden(gold, &g) == 0, "tok512 golden");
    CHECK(g.n >= 100, "tok512 golden: %d cases", g.n);
    int ok = 0, rt = 0;
    for (int i = 0; i < g.n; i++) {
        struct gcase *c = &g.c[i];
        int32_t *ids = NULL;
        int n = 0;
        rc = tok_encode(t, c->text, c->len, 1, &ids, &n, &e);
        CHECK(rc == 0, "tok512 case %d: %s", i, e.msg);
        if (rc) continue;
        if (same_ids(ids, n, c->ids_sp, c->n_sp, "tok512", c->text, c->len)) ok++;
        // decode(skip nothing) of BOS + text: "<s>" then the text (Strip drops the dummy prefix
        // only at the very start, so decode the text ids alone).
        char *back = NULL;
        size_t bl = 0;
        if (n > 0 && tok_decode(t, ids + 1, n - 1, &back, &bl, &e) == 0 && bl == c->len && !memcmp(back, c->text, bl)) rt++;
        free(back);
        free(ids);
    }
    CHECK(ok == g.n, "tok512: %d/%d cases equal llama2.c", ok, g.n);
    CHECK(rt == g.n, "tok512: %d/%d round trips", rt, g.n);
    printf("stories260K tok512: %d/%d llama2.c ids, %d/%d round trips\n", ok, g.n, rt, g.n);
    free_golden(&g);
    tok_free(t);
}

// ---- llama2.c's encode(), ported as an independent reference (llama2.c run.c) ----
struct l2c { char **vocab; float *score; int n; };

static int l2c_load(struct l2c *v, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    int maxlen;
    if (fread(&maxlen, 4, 1, f) != 1) { fclose(f); return -1; }
    v->n = 512;
    v->vocab = calloc(512, sizeof *v->vocab);
    v->score = calloc(512, sizeof *v->score);
    for (int i = 0; i < 512; i++) {
        int len;
        if (fread(&v->score[i], 4, 1, f) != 1 || fread(&len, 4, 1, f) != 1) { fclose(f); return -1; }
        v->vocab[i] = calloc((size_t)len + 1, 1);
        if (fread(v->vocab[i], 1, (size_t)len, f) != (size_t)len) { fclose(f); return -1; }
    }
    fclose(f);
    return 0;
}

static int l2c_lookup(const struct l2c *v, const char *s) {
    for (int i = 0; i < v->n; i++)
        if (!strcmp(v->vocab[i], s)) return i;
    return -1;
}

// bos=1, eos=0. Linear lookups: fine for a 512-entry vocabulary and short texts.
static int l2c_encode(const struct l2c *v, const char *text, int *tok) {
    char buf[64];
    int n = 0;
    size_t blen = 0;
    tok[n++] = 1;
    if (text[0]) tok[n++] = l2c_lookup(v, " ");
    for (const char *c = text; *c; c++) {
        if ((*c & 0xC0) != 0x80) blen = 0;
        buf[blen++] = *c;
        buf[blen] = 0;
        if ((c[1] & 0xC0) == 0x80 && blen < 4) continue;
        int id = l2c_lookup(v, buf);
        if (id != -1) tok[n++] = id;
        else
            for (size_t i = 0; i < blen; i++) tok[n++] = (unsigned char)buf[i] + 3;
        blen = 0;
    }
    for (;;) {
        float best = -1e10f;
        int best_id = -1, best_i = -1;
        for (int i = 0; i + 1 < n; i++) {
            char cat[128];
            snprintf(cat, sizeof cat, "%s%s", v->vocab[tok[i]], v->vocab[tok[i + 1]]);
            int id = l2c_lookup(v, cat);
            if (id != -1 && v->score[id] > best) { best = v->score[id]; best_id = id; best_i = i; }
        }
        if (best_i < 0) break;
        tok[best_i] = best_id;
        for (int i = best_i + 1; i + 1 < n; i++) tok[i] = tok[i + 1];
        n--;
    }
    return n;
}

// The converted tokenizer against the ported llama2.c encode on texts beyond the golden:
// fixed-seed random strings over a small alphabet (spaces, punctuation, newlines, a 2-byte
// and a 3-byte char) and the first lines of WikiText-2.
static void test_llama2c_reference(void) {
    const char *tok512 = TEST_NEED("models/stories260K/tok512.bin");
    const char *gold = tok512 ? TEST_NEED("goldens/stories260K/tok512-golden.jsonl") : NULL;
    if (!gold) return;
    struct l2c v = {0};
    CHECK(l2c_load(&v, tok512) == 0, "tok512.bin");
    if (!v.vocab) return;
    struct err e = {0};
    char *json = NULL;
    struct tokenizer *t = NULL;
    if (tok_llama2c_to_json(tok512, 512, &json, &e) ||
        tok_load_json(&t, json, strlen(json), NULL, "tok512.json", &e)) {
        CHECK(0, "tok512: %s", e.msg);
        free(json);
        return;
    }
    free(json);
    struct golden g;
    load_golden(gold, &g);
    int ref_ok = 0;
    int *tok = malloc(4096 * sizeof *tok);
    for (int i = 0; i < g.n; i++) {
        if (g.c[i].len > 1000) { ref_ok++; continue; }
        int n = l2c_encode(&v, g.c[i].text, tok);
        if (same_ids(tok, n, g.c[i].ids_sp, g.c[i].n_sp, "l2c reference", g.c[i].text, g.c[i].len)) ref_ok++;
    }
    CHECK(ref_ok == g.n, "the llama2.c port itself matches %d/%d goldens", ref_ok, g.n);
    free_golden(&g);

    static const char *alpha[] = {"a", "e", "t", "h", " ", " ", "s", "o", "n", ".", ",", "\n", "'", "T", "I",
                                  "\xc3\xa9", "\xe2\x80\x94", "1", "x", "d"};
    uint64_t rng = 12345;
    int ok = 0, total = 0;
    char text[256];
    for (int c = 0; c < 300; c++) {
        size_t len = 0;
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        int words = 1 + (int)((rng >> 33) % 40);
        for (int k = 0; k < words && len < 200; k++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            const char *a = alpha[(rng >> 33) % 20];
            memcpy(text + len, a, strlen(a));
            len += strlen(a);
        }
        text[len] = 0;
        int n = l2c_encode(&v, text, tok);
        int32_t *ids = NULL;
        int m = 0;
        total++;
        if (tok_encode(t, text, len, 1, &ids, &m, &e) == 0) {
            int32_t ref[4096];
            for (int i = 0; i < n; i++) ref[i] = tok[i];
            if (same_ids(ids, m, ref, n, "tok512 vs llama2.c", text, len)) ok++;
        }
        free(ids);
    }
    char *wiki = NULL;
    size_t wl = 0;
    const char *wiki_path = test_data("datasets/wikitext2/raw/wiki.test.raw"); // extra texts when present
    if (wiki_path && file_read_all(wiki_path, &wiki, &wl, &e) == 0) {
        char *line = wiki;
        for (int c = 0; c < 80 && line; c++) {
            char *nl = strchr(line, '\n');
            if (nl) *nl = 0;
            if (strlen(line) < 400) {
                int n = l2c_encode(&v, line, tok);
                int32_t *ids = NULL, ref[4096];
                int m = 0;
                total++;
                for (int i = 0; i < n; i++) ref[i] = tok[i];
                if (tok_encode(t, line, strlen(line), 1, &ids, &m, &e) == 0 && same_ids(ids, m, ref, n, "tok512 vs llama2.c", line, strlen(line)))
                    ok++;
                free(ids);
            }
            line = nl ? nl + 1 : NULL;
        }
        free(wiki);
    }
    CHECK(ok == total, "tok512 vs ported llama2.c encode: %d/%d", ok, total);
    printf("stories260K tok512 vs ported llama2.c encode: %d/%d texts\n", ok, total);
    free(tok);
    for (int i = 0; i < v.n; i++) free(v.vocab[i]);
    free(v.vocab);
    free(v.score);
    tok_free(t);
}

// Broken llama2.c tokenizer files: errors naming the problem, never a crash or a partial file.
static void test_llama2c_errors(void) {
    const char *src = TEST_NEED("models/stories260K/tok512.bin");
    if (!src) return;
    struct err e = {0};
    char *json = (char *)1;
    CHECK(tok_llama2c_to_json(src, 511, &json, &e) == ERR_FORMAT && !json && strstr(e.msg, "left"), "vocab 511: %s", e.msg);
    CHECK(tok_llama2c_to_json(src, 513, &json, &e) == ERR_FORMAT && !json && strstr(e.msg, "record 512"), "vocab 513: %s", e.msg);
    CHECK(tok_llama2c_to_json("/nonexistent/tok.bin", 512, &json, &e) != 0 && !json, "missing file");
    char *buf = NULL;
    size_t len = 0;
    const char *tmp = getenv("HIFA4_TMP") ? getenv("HIFA4_TMP") : "build/tmp";
    char path[512];
    snprintf(path, sizeof path, "%s/tok_bad.bin", tmp);
    mkdir_p(tmp, &e);
    if (file_read_all(src, &buf, &len, &e) == 0) {
        size_t cuts[] = {0, 3, 4, 10, 1000, len - 1};
        for (int i = 0; i < 6; i++) {
            file_write_atomic(path, buf, cuts[i], &e);
            int rc = tok_llama2c_to_json(path, 512, &json, &e);
            CHECK(rc == ERR_FORMAT && !json, "cut at %zu: %d (%s)", cuts[i], rc, e.msg);
        }
        int32_t neg = -5; // a negative piece length in record 0
        memcpy(buf + 8, &neg, 4);
        file_write_atomic(path, buf, len, &e);
        CHECK(tok_llama2c_to_json(path, 512, &json, &e) == ERR_FORMAT && !json && strstr(e.msg, "record 0"), "negative length: %s", e.msg);
        free(buf);
        remove(path);
    }
}

// ---- facts from the tokenizers' SOURCE.md files ----
static void test_facts(void) {
    struct { const char *name, *sha; int vocab, bos, eos, adds_bos; } f[] = {
        {"qwen3", "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4", 151669, -1, 151645, 0},
        {"llama3", "c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78", 128256, 128000, 128001, 0},
        {"mistral", "fc4f0bd70b3709312d9d1d9e5ba674794b6bc5abc17429897a540f93882f25fc", 32000, 1, 2, 1},
    };
    for (int i = 0; i < 3; i++) {
        char hex[65];
        const char *dir = TEST_NEED("tokenizers/%s", f[i].name);
        if (!dir) continue;
        struct tokenizer *t = NULL;
        struct err e = {0};
        if (tok_load(&t, dir, &e)) { CHECK(0, "%s: %s", f[i].name, e.msg); continue; }
        tok_hash(t, hex);
        CHECK(!strcmp(hex, f[i].sha), "%s: sha %s", f[i].name, hex);
        CHECK(tok_vocab_size(t) == f[i].vocab, "%s: vocab %d", f[i].name, tok_vocab_size(t));
        CHECK(tok_bos_id(t) == f[i].bos, "%s: bos %d", f[i].name, tok_bos_id(t));
        CHECK(tok_eos_id(t) == f[i].eos, "%s: eos %d", f[i].name, tok_eos_id(t));
        CHECK(tok_adds_bos(t) == f[i].adds_bos, "%s: adds_bos", f[i].name);
        CHECK(tok_piece(t, -1) == NULL && tok_piece(t, tok_vocab_size(t)) == NULL, "%s: piece out of range", f[i].name);
        int32_t bad = tok_vocab_size(t);
        char *txt = NULL;
        size_t tl;
        CHECK(tok_decode(t, &bad, 1, &txt, &tl, &e) == ERR_RANGE, "%s: decode id %d", f[i].name, bad);
        free(txt);
        // invalid UTF-8: overlong, lone continuation, surrogate, truncated sequence
        static const char *bad_utf8[] = {"\xc0\xaf", "ab\x80", "\xed\xa0\x80", "x\xe2\x82"};
        for (int k = 0; k < 4; k++) {
            int32_t *ids = (int32_t *)1;
            int n = -1;
            int rc = tok_encode(t, bad_utf8[k], strlen(bad_utf8[k]), 1, &ids, &n, &e);
            CHECK(rc == ERR_FORMAT && ids == NULL && n == 0, "%s: invalid UTF-8 case %d -> %d", f[i].name, k, rc);
        }
        tok_free(t);
    }
    // The mistral pieces named in SOURCE.md.
    const char *mistral = TEST_NEED("tokenizers/mistral/tokenizer.json");
    if (!mistral) return;
    struct tokenizer *t = NULL;
    struct err e = {0};
    if (tok_load(&t, mistral, &e) == 0) {
        CHECK(!strcmp(tok_piece(t, 28705), "\xe2\x96\x81") && !strcmp(tok_piece(t, 22557), "\xe2\x96\x81Hello"), "mistral pieces");
        CHECK(tok_piece_id(t, "<s>", 3) == 1, "mistral <s>");
        CHECK(tok_bos_id(t) == 1, "mistral bos via the file path + its config: %d", tok_bos_id(t));
        tok_free(t);
    } else CHECK(0, "mistral file path: %s", e.msg);
}

// tokenizer_config.json of a Llama/Gemma tokenizer class rebuilds BOS/EOS like transformers;
// other classes keep tokenizer.json's post-processor. "Hello world" = [22557, 1526] (SOURCE.md).
static void test_config_override(void) {
    const char *mistral = TEST_NEED("tokenizers/mistral/tokenizer.json");
    if (!mistral) return;
    struct err e = {0};
    char *json = NULL;
    size_t len = 0;
    if (file_read_all(mistral, &json, &len, &e)) { CHECK(0, "%s", e.msg); return; }
    struct { const char *cfg; int32_t want[4]; int n; int adds_bos, adds_eos; } c[] = {
        {"{\"tokenizer_class\":\"LlamaTokenizer\",\"add_bos_token\":false,\"bos_token\":\"<s>\"}", {22557, 1526}, 2, 0, 0},
        {"{\"tokenizer_class\":\"LlamaTokenizerFast\",\"add_eos_token\":true}", {1, 22557, 1526, 2}, 4, 1, 1},
        {"{\"tokenizer_class\":\"LlamaTokenizerFast\",\"add_bos_token\":false,\"add_eos_token\":true,"
         "\"eos_token\":{\"content\":\"</s>\",\"special\":true}}", {22557, 1526, 2}, 3, 0, 1},
        {"{\"tokenizer_class\":\"Qwen2Tokenizer\",\"add_bos_token\":false}", {1, 22557, 1526}, 3, 1, 0},
        {"{}", {1, 22557, 1526}, 3, 1, 0},
    };
    for (int i = 0; i < 5; i++) {
        struct tokenizer *t = NULL;
        if (tok_load_json(&t, json, len, c[i].cfg, "mistral", &e)) { CHECK(0, "config %d: %s", i, e.msg); continue; }
        int32_t *ids = NULL;
        int n = 0;
        CHECK(tok_encode(t, "Hello world", 11, 1, &ids, &n, &e) == 0 && same_ids(ids, n, c[i].want, c[i].n, "config", c[i].cfg, strlen(c[i].cfg)),
              "config %d", i);
        CHECK(tok_adds_bos(t) == c[i].adds_bos && tok_adds_eos(t) == c[i].adds_eos, "config %d: adds bos %d eos %d", i,
              tok_adds_bos(t), tok_adds_eos(t));
        CHECK(tok_bos_id(t) == 1 && tok_eos_id(t) == 2, "config %d: bos %d eos %d", i, tok_bos_id(t), tok_eos_id(t));
        free(ids);
        tok_free(t);
    }
    struct tokenizer *t = NULL;
    const char *bad = "{\"tokenizer_class\":\"LlamaTokenizer\",\"bos_token\":null}";
    CHECK(tok_load_json(&t, json, len, bad, "mistral", &e) == ERR_FORMAT && !t, "add_bos_token without a bos_token: %s", e.msg);
    CHECK(tok_load_json(&t, json, len, "{oops", "mistral", &e) == ERR_FORMAT && !t, "broken config: %s", e.msg);
    free(json);
}

// ---- malformed tokenizer.json: an error naming the problem, never a crash ----
static void expect_load_error(const char *json, int code, const char *needle) {
    struct tokenizer *t = NULL;
    struct err e = {0};
    int rc = tok_load_json(&t, json, strlen(json), NULL, "bad.json", &e);
    CHECK(rc == code && t == NULL, "expected %s for %.60s, got %d (%s)", err_code_name(code), json, rc, e.msg);
    CHECK(strstr(e.msg, needle) != NULL, "message '%s' should mention '%s'", e.msg, needle);
}

#define MODEL_OK "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[\"a b\"]}"

static void test_malformed(void) {
    expect_load_error("{\"normalizer\":null}", ERR_FORMAT, "model");
    expect_load_error("not json", ERR_FORMAT, "JSON");
    expect_load_error("[1,2]", ERR_FORMAT, "object");
    expect_load_error("{\"model\":{\"type\":\"BPE\",\"merges\":[]}}", ERR_FORMAT, "vocab");
    expect_load_error("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0}}}", ERR_FORMAT, "merges");
    expect_load_error("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1},\"merges\":[\"a c\"]}}", ERR_FORMAT, "merges[0]");
    expect_load_error("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1},\"merges\":[\"a b\"]}}", ERR_FORMAT, "merged token");
    expect_load_error("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[\"ab\"]}}", ERR_FORMAT, "merges[0]");
    expect_load_error("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[\"a b c\"]}}", ERR_FORMAT, "merges[0]");
    expect_load_error("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[[\"a\"]]}}", ERR_FORMAT, "merges[0]");
    expect_load_error("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[7]}}", ERR_FORMAT, "merges[0]");
    expect_load_error("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":-1},\"merges\":[]}}", ERR_FORMAT, "bad id");
    expect_load_error("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":\"x\"},\"merges\":[]}}", ERR_FORMAT, "bad id");
    expect_load_error("{\"model\":{\"type\":\"BPE\",\"vocab\":{},\"merges\":[]}}", ERR_FORMAT, "empty");
    expect_load_error("{\"model\":{\"type\":\"Unigram\",\"vocab\":[]}}", ERR_UNSUPPORTED, "Unigram");
    {   // unknown top-level keys are ignored, as HF does
        const char *ok = "{" MODEL_OK ",\"unk_token\":1}";
        struct tokenizer *t = NULL;
        struct err e = {0};
        CHECK(tok_load_json(&t, ok, strlen(ok), NULL, "ok.json", &e) == 0 && t, "unknown key: %s", e.msg);
        tok_free(t);
    }
    expect_load_error("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[],\"unk_token\":\"<unk>\"}}", ERR_FORMAT, "unk_token");
    expect_load_error("{" MODEL_OK ",\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(a\"},\"behavior\":\"Isolated\",\"invert\":false}}",
                      ERR_FORMAT, "invalid regex");
    expect_load_error("{" MODEL_OK ",\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":\"a\"},\"behavior\":\"Sideways\"}}",
                      ERR_FORMAT, "Sideways");
    expect_load_error("{" MODEL_OK ",\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Glob\":\"a\"},\"behavior\":\"Isolated\"}}",
                      ERR_FORMAT, "pattern");
    expect_load_error("{" MODEL_OK ",\"normalizer\":{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"[\"},\"content\":\"x\"}}", ERR_FORMAT, "invalid regex");
    expect_load_error("{" MODEL_OK ",\"normalizer\":{\"type\":\"BertNormalizer\"}}", ERR_UNSUPPORTED, "BertNormalizer");
    expect_load_error("{" MODEL_OK ",\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFC\"},{\"type\":\"Precompiled\"}]}}",
                      ERR_UNSUPPORTED, "Precompiled");
    expect_load_error("{" MODEL_OK ",\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"}}", ERR_UNSUPPORTED, "BertPreTokenizer");
    expect_load_error("{" MODEL_OK ",\"decoder\":{\"type\":\"WordPiece\"}}", ERR_UNSUPPORTED, "WordPiece");
    expect_load_error("{" MODEL_OK ",\"post_processor\":{\"type\":\"Wobble\"}}", ERR_UNSUPPORTED, "Wobble");
    expect_load_error("{" MODEL_OK ",\"normalizer\":{\"kind\":\"NFC\"}}", ERR_FORMAT, "type");
    expect_load_error("{" MODEL_OK ",\"normalizer\":7}", ERR_FORMAT, "normalizer");
    expect_load_error("{" MODEL_OK ",\"added_tokens\":[{\"id\":5}]}", ERR_FORMAT, "content");
    expect_load_error("{" MODEL_OK ",\"added_tokens\":[{\"id\":-5,\"content\":\"x\"}]}", ERR_FORMAT, "id");
    expect_load_error("{" MODEL_OK ",\"added_tokens\":{}}", ERR_FORMAT, "added_tokens");
    expect_load_error("{" MODEL_OK ",\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"<s>\"}},"
                      "{\"Sequence\":{\"id\":\"A\"}}],\"special_tokens\":{}}}", ERR_FORMAT, "<s>");
    expect_load_error("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[],\"dropout\":0.1}}", ERR_UNSUPPORTED, "dropout");
    struct tokenizer *t = NULL;
    struct err e = {0};
    CHECK(tok_load(&t, "/nonexistent/dir", &e) == ERR_NOTFOUND && !t, "missing path: %s", e.msg);
    CHECK(tok_load(&t, "tests", &e) == ERR_NOTFOUND && !t, "dir without tokenizer.json: %s", e.msg);
    // Truncated copies of a real file: every one must fail cleanly.
    char *buf = NULL;
    size_t len = 0;
    const char *mistral = TEST_NEED("tokenizers/mistral/tokenizer.json");
    if (mistral && file_read_all(mistral, &buf, &len, &e) == 0) {
        size_t cuts[] = {1, 100, 1000, len / 3, len / 2, len - 10, len - 1};
        for (int i = 0; i < 7; i++) {
            int rc = tok_load_json(&t, buf, cuts[i], NULL, "cut.json", &e);
            CHECK(rc == ERR_FORMAT && !t, "truncated at %zu: %d", cuts[i], rc);
        }
        free(buf);
    }
}

// ---- the minimal HF-standard byte-level BPE (what make-model writes) ----
// 256 byte tokens in GPT-2's bytes_to_unicode order of byte value (id = byte), 3 merges.
static char *make_bytelevel_json(const char *pretok) {
    size_t cap = 1 << 16, n = 0;
    char *s = malloc(cap);
    n += (size_t)snprintf(s + n, cap - n, "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":["
                          "{\"id\":259,\"content\":\"<|endoftext|>\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,"
                          "\"normalized\":false,\"special\":true}],\"normalizer\":null,\"pre_tokenizer\":%s,"
                          "\"post_processor\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":false,\"use_regex\":false},"
                          "\"decoder\":{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"trim_offsets\":true,\"use_regex\":true},"
                          "\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":null,\"continuing_subword_prefix\":null,"
                          "\"end_of_word_suffix\":null,\"fuse_unk\":false,\"byte_fallback\":false,\"ignore_merges\":false,\"vocab\":{",
                          pretok);
    int k = 0;
    for (int b = 0; b < 256; b++) {
        // bytes_to_unicode, written out independently of the tokenizer's table
        int keep = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        int cp = keep ? b : 256 + k++;
        char u[8];
        if (cp < 0x80) snprintf(u, sizeof u, "%c", cp);
        else snprintf(u, sizeof u, "%c%c", 0xc0 | (cp >> 6), 0x80 | (cp & 0x3f));
        if (cp == '"' || cp == '\\') n += (size_t)snprintf(s + n, cap - n, "\"\\%s\":%d,", u, b);
        else n += (size_t)snprintf(s + n, cap - n, "\"%s\":%d,", u, b);
    }
    n += (size_t)snprintf(s + n, cap - n, "\"he\":256,\"\xc4\xa0t\":257,\"\xc4\xa0the\":258},"
                          "\"merges\":[\"h e\",[\"\xc4\xa0\",\"t\"],\"\xc4\xa0t he\"]}}");
    return s;
}

static void test_bytelevel_minimal(void) {
    const char *variants[2] = {
        "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":true}",
        "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":"
        "\"'s|'t|'re|'ve|'m|'ll|'d| ?\\\\p{L}+| ?\\\\p{N}+| ?[^\\\\s\\\\p{L}\\\\p{N}]+|\\\\s+(?!\\\\S)|\\\\s+\"},"
        "\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\",\"add_prefix_space\":false,"
        "\"trim_offsets\":false,\"use_regex\":false}]}",
    };
    // Variant 2: the o200k-style pattern (Phi-4-mini / GPT-4o) with \\p{..} lists inside classes.
    const char *o200k =
        "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":"
        "\"[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?[\\\\p{Lu}\\\\p{Lt}\\\\p{Lm}\\\\p{Lo}\\\\p{M}]*[\\\\p{Ll}\\\\p{Lm}\\\\p{Lo}\\\\p{M}]+"
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?[\\\\p{Lu}\\\\p{Lt}\\\\p{Lm}\\\\p{Lo}\\\\p{M}]+"
        "[\\\\p{Ll}\\\\p{Lm}\\\\p{Lo}\\\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\\\p{N}{1,3}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n/]*"
        "|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"},\"behavior\":\"Isolated\",\"invert\":false},"
        "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":false,\"use_regex\":false}]}";
    for (int v = 0; v < 3; v++) {
        char *json = make_bytelevel_json(v < 2 ? variants[v] : o200k);
        struct tokenizer *t = NULL;
        struct err e = {0};
        int rc = tok_load_json(&t, json, strlen(json), NULL, "minimal.json", &e);
        CHECK(rc == 0, "minimal byte-level variant %d: %s", v, e.msg);
        free(json);
        if (rc) continue;
        CHECK(tok_vocab_size(t) == 260 && tok_bos_id(t) == -1 && tok_adds_bos(t) == 0, "minimal: vocab %d", tok_vocab_size(t));
        CHECK(tok_eos_id(t) == 259, "minimal: eos %d (found by name)", tok_eos_id(t));
        // Hand-derived: "the" -> t + (h e); " the" -> Ġ t h e -> (h e) rank 0, (Ġ t) rank 1, (Ġt he) rank 2.
        int32_t *ids = NULL;
        int n = 0;
        rc = tok_encode(t, "the the<|endoftext|>", 20, 1, &ids, &n, &e);
        int32_t want[] = {116, 256, 258, 259};
        CHECK(rc == 0 && same_ids(ids, n, want, 4, "minimal", "the the<|endoftext|>", 20), "minimal %d: encode", v);
        free(ids);
        const char *texts[] = {"", " ", "Hello, world!\n", "  two  spaces\t\ttabs\r\n", "caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80",
                               "they'll've 12345 the", "\x01\x7f control"};
        for (int k = 0; k < 7; k++) {
            size_t tl = strlen(texts[k]);
            char *back = NULL;
            size_t bl = 0;
            rc = tok_encode(t, texts[k], tl, 1, &ids, &n, &e);
            if (rc == 0) rc = tok_decode(t, ids, n, &back, &bl, &e);
            CHECK(rc == 0 && bl == tl && !memcmp(back, texts[k], tl), "minimal %d: round trip of case %d (%s)", v, k, e.msg);
            CHECK(rc != 0 || n >= (int)(tl > 0) , "minimal: token count");
            free(ids);
            free(back);
        }
        // Every byte value on its own decodes back (lossy only for invalid UTF-8 pieces).
        int32_t one = 'A';
        char *back = NULL;
        size_t bl;
        CHECK(tok_decode(t, &one, 1, &back, &bl, &e) == 0 && bl == 1 && back[0] == 'A', "minimal: decode A");
        free(back);
        int32_t half[1] = {0xe4};
        CHECK(tok_decode(t, half, 1, &back, &bl, &e) == 0 && bl == 3 && !memcmp(back, "\xef\xbf\xbd", 3),
              "minimal: a lone lead byte decodes to U+FFFD like from_utf8_lossy");
        free(back);
        tok_free(t);
    }
}

// ---- pre-tokenizer behaviours, with expectations worked out by hand from HF's semantics ----
// Vocabulary a b - a- -b -- 1 2 12 ▁ ▁a b▁ (+ added <s>); merges are listed so that a merge
// across a pre-token boundary shows up in the ids.
static void check_pretok(const char *pretok, const char *text, const int32_t *want, int nwant) {
    char json[2048];
    snprintf(json, sizeof json,
             "{\"added_tokens\":[{\"id\":12,\"content\":\"<s>\",\"special\":true,\"normalized\":false}],"
             "\"pre_tokenizer\":%s,\"decoder\":{\"type\":\"Metaspace\",\"replacement\":\"\u2581\",\"prepend_scheme\":\"first\",\"split\":false},"
             "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"-\":2,\"a-\":3,\"-b\":4,\"--\":5,\"1\":6,\"2\":7,\"12\":8,"
             "\"\u2581\":9,\"\u2581a\":10,\"b\u2581\":11},\"merges\":[\"a -\",\"- b\",\"- -\",\"1 2\",\"b \u2581\",\"\u2581 a\"]}}",
             pretok);
    struct tokenizer *t = NULL;
    struct err e = {0};
    if (tok_load_json(&t, json, strlen(json), NULL, "pretok.json", &e)) { CHECK(0, "%s: %s", pretok, e.msg); return; }
    int32_t *ids = NULL;
    int n = 0;
    int rc = tok_encode(t, text, strlen(text), 0, &ids, &n, &e);
    CHECK(rc == 0 && same_ids(ids, n, want, nwant, pretok, text, strlen(text)), "pre_tokenizer %s on '%s'", pretok, text);
    free(ids);
    tok_free(t);
}

#define SPLIT(b, inv) "{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},\"behavior\":\"" b "\",\"invert\":" inv "}"
#define META(sc, sp) "{\"type\":\"Metaspace\",\"replacement\":\"\u2581\",\"prepend_scheme\":\"" sc "\",\"split\":" sp "}"
#define IDS(...) (const int32_t[]){__VA_ARGS__}, (int)(sizeof((const int32_t[]){__VA_ARGS__}) / 4)

static void test_pretok_behaviors(void) {
    check_pretok("null", "a-b", IDS(3, 1));                                  // one word: (a -) first
    check_pretok(SPLIT("Isolated", "false"), "a-b", IDS(0, 2, 1));
    check_pretok(SPLIT("MergedWithPrevious", "false"), "a-b", IDS(3, 1));
    check_pretok(SPLIT("MergedWithNext", "false"), "a-b", IDS(0, 4));
    check_pretok(SPLIT("Removed", "false"), "a-b", IDS(0, 1));
    check_pretok(SPLIT("Removed", "true"), "a-b", IDS(2));                   // invert keeps the delimiters
    check_pretok(SPLIT("Isolated", "false"), "a--b", IDS(0, 2, 2, 1));
    check_pretok(SPLIT("Contiguous", "false"), "a--b", IDS(0, 5, 1));
    check_pretok(SPLIT("MergedWithPrevious", "false"), "a--b", IDS(3, 2, 1)); // 2nd '-' starts a piece
    check_pretok(SPLIT("MergedWithNext", "false"), "a--b", IDS(0, 2, 4));
    check_pretok("{\"type\":\"Digits\",\"individual_digits\":true}", "a12", IDS(0, 6, 7));
    check_pretok("{\"type\":\"Digits\",\"individual_digits\":false}", "a12", IDS(0, 8));
    check_pretok(META("first", "false"), "b a", IDS(9, 11, 0));               // "▁b▁a": (b ▁) before (▁ a)
    check_pretok(META("first", "true"), "b a", IDS(9, 1, 10));                // "▁b" "▁a"
    check_pretok(META("never", "false"), "b a", IDS(11, 0));
    check_pretok(META("first", "false"), "<s>a", IDS(12, 0));                 // not at offset 0: no prefix
    check_pretok(META("always", "false"), "<s>a", IDS(12, 10));
    check_pretok(META("first", "false"), " a", IDS(10));                       // already starts with ▁
    check_pretok(META("first", "false"), "", NULL, 0);                         // empty text: nothing
    // Metaspace decoder (prepend_scheme first): the first token loses its ▁, later ones keep a space.
    char json[] = "{\"decoder\":{\"type\":\"Metaspace\",\"replacement\":\"\u2581\",\"prepend_scheme\":\"first\"},"
                  "\"model\":{\"vocab\":{\"\u2581a\":0,\"\u2581\":1,\"b\":2},\"merges\":[]}}";
    struct tokenizer *t = NULL;
    struct err e = {0};
    if (tok_load_json(&t, json, strlen(json), NULL, "meta.json", &e) == 0) {
        int32_t ids[] = {0, 1, 2};
        char *txt = NULL;
        size_t tl = 0;
        CHECK(tok_decode(t, ids, 3, &txt, &tl, &e) == 0 && !strcmp(txt, "a b"), "metaspace decode: '%s'", txt ? txt : "");
        free(txt);
        tok_free(t);
    } else CHECK(0, "meta.json: %s", e.msg);
}

// ---- added-token options (HF AddedToken: lstrip/rstrip swallow whitespace, single_word needs
// non-word neighbours, normalized tokens match the normalized text) ----
static void check_added(const char *added, const char *normalizer, const char *text, const int32_t *want, int nwant) {
    char json[2048];
    snprintf(json, sizeof json,
             "{\"added_tokens\":[%s],\"normalizer\":%s,\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\" \":2,"
             "\"c\":5,\"h\":6,\"i\":7,\"x\":8},\"merges\":[]}}",
             added, normalizer);
    struct tokenizer *t = NULL;
    struct err e = {0};
    if (tok_load_json(&t, json, strlen(json), NULL, "added.json", &e)) { CHECK(0, "%s: %s", added, e.msg); return; }
    int32_t *ids = NULL;
    int n = 0;
    int rc = tok_encode(t, text, strlen(text), 0, &ids, &n, &e);
    CHECK(rc == 0 && same_ids(ids, n, want, nwant, added, text, strlen(text)), "added %s on '%s'", added, text);
    free(ids);
    tok_free(t);
}

#define ADDED(content, id, opts) "{\"id\":" #id ",\"content\":\"" content "\",\"special\":true" opts "}"

static void test_added_options(void) {
    check_added(ADDED("<m>", 3, ",\"normalized\":false"), "null", "a <m> b", IDS(0, 2, 3, 2, 1));
    check_added(ADDED("<m>", 3, ",\"normalized\":false,\"lstrip\":true"), "null", "a  <m> b", IDS(0, 3, 2, 1));
    check_added(ADDED("<m>", 3, ",\"normalized\":false,\"rstrip\":true"), "null", "a <m>  b", IDS(0, 2, 3, 1));
    check_added(ADDED("<m>", 3, ",\"normalized\":false,\"lstrip\":true,\"rstrip\":true"), "null", " <m> ", IDS(3));
    check_added(ADDED("ab", 4, ",\"normalized\":false,\"single_word\":true"), "null", "c ab", IDS(5, 2, 4));
    check_added(ADDED("ab", 4, ",\"normalized\":false,\"single_word\":true"), "null", "cab", IDS(5, 0, 1));
    check_added(ADDED("ab", 4, ",\"normalized\":false,\"single_word\":true"), "null", "ab_", IDS(0, 1)); // '_' is a word char: the
    // match is refused, and '_' is not in the vocab (no unk): HF drops it
    check_added(ADDED("ab", 4, ",\"normalized\":false"), "null", "cab", IDS(5, 4));
    // leftmost-longest among overlapping added tokens
    check_added(ADDED("ab", 4, ",\"normalized\":false") "," ADDED("abc", 9, ",\"normalized\":false") "," ADDED("bc", 10, ",\"normalized\":false"),
                "null", "xabcx", IDS(8, 9, 8));
    check_added(ADDED("ab", 4, ",\"normalized\":false") "," ADDED("bca", 10, ",\"normalized\":false"), "null", "xbcab", IDS(8, 10, 1));
    const char *lower = "{\"type\":\"Lowercase\"}";
    check_added(ADDED("hi", 4, ",\"normalized\":true"), lower, "xHIx", IDS(8, 4, 8));
    check_added(ADDED("hi", 4, ",\"normalized\":false"), lower, "xHIx", IDS(8, 6, 7, 8));
    check_added(ADDED("hi", 4, ",\"normalized\":false"), lower, "xhix", IDS(8, 4, 8));
}

// ---- the tokenize subcommand: exact file bytes, special tokens on by default ----
static void test_cli(void) {
    const char *bin = getenv("HIFA4_BIN"), *tmp = getenv("HIFA4_TMP");
    if (!bin) bin = "./hifa4-eval";
    if (!tmp) tmp = "build/tmp";
    if (!file_exists(bin)) { printf("test_cli: %s not built, skipped\n", bin); return; }
    const char *mistral = TEST_NEED("tokenizers/mistral");
    if (!mistral) return;
    struct err e = {0};
    mkdir_p(tmp, &e);
    char file[512], cmd[4096];
    snprintf(file, sizeof file, "%s/tok_cli.txt", tmp);
    // mistral golden: " A" -> [28705, 330] (SOURCE.md); with special tokens <s>=1 first. The
    // file ends in a newline, which must be encoded too (no stripping): "\n" is <0x0A> = 13.
    const char text[] = " A\n";
    CHECK(file_write_atomic(file, text, 3, &e) == 0, "%s", e.msg);
    const char *modes[2] = {"", "--no-special "};
    const char *want[2] = {"1 28705 330 13\n", "28705 330 13\n"};
    for (int m = 0; m < 2; m++) {
        snprintf(cmd, sizeof cmd, "%s --quiet tokenize --tokenizer %s %s--ids-only %s", bin, mistral, modes[m], file);
        FILE *p = popen(cmd, "r");
        char out[256] = {0};
        size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
        int st = p ? pclose(p) : -1;
        out[n] = 0;
        CHECK(st == 0 && !strcmp(out, want[m]), "tokenize%s: got '%s' (status %d)", modes[m], out, st);
    }
    snprintf(cmd, sizeof cmd, "%s --quiet tokenize --model %s %s", bin, mistral, file);
    FILE *p = popen(cmd, "r");
    char out[256] = {0};
    size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    int st = p ? pclose(p) : -1;
    out[n] = 0;
    CHECK(st == 0 && !strcmp(out, "1\t<s>\n28705\t\xe2\x96\x81\n330\t\xe2\x96\x81" "A\n13\t<0x0A>\n"), "tokenize pieces: '%s'", out);
    snprintf(cmd, sizeof cmd, "%s --quiet tokenize --ids-only %s 2>/dev/null", bin, file);
    p = popen(cmd, "r");
    st = p ? pclose(p) : -1;
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2, "tokenize without --tokenizer: exit %d", WEXITSTATUS(st));
    snprintf(cmd, sizeof cmd, "%s --quiet tokenize --tokenizer %s %s/no-such-file 2>/dev/null", bin, mistral, tmp);
    p = popen(cmd, "r");
    st = p ? pclose(p) : -1;
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1, "tokenize of a missing file: exit %d", WEXITSTATUS(st));
    remove(file);
}

// qwen3's NFC normalizes only the stretches around code points >= U+0300: encoding a text and
// encoding its whole-string utf8proc NFC must agree, on random mixes of starters, combining
// marks (reordering cases), precomposed letters and Hangul jamo.
static void test_nfc(void) {
    const char *qwen3 = TEST_NEED("tokenizers/qwen3");
    if (!qwen3) return;
    struct tokenizer *t = NULL;
    struct err e = {0};
    if (tok_load(&t, qwen3, &e)) { CHECK(0, "qwen3: %s", e.msg); return; }
    static const char *alpha[] = {"a", "e", "A", " ", "\xcc\x81", "\xcc\xa3", "\xcc\x80", "\xc3\x80", "\xe1\x84\x80",
                                  "\xe1\x85\xa1", "\xe1\x86\xa8", "\xea\xb0\x80", "\xe1\xba\xa1", "\xcd\x84", "\xe0\xbd\xb3",
                                  "\xc5\xbf", "\xe2\x84\xab", "\n", "\xe4\xb8\xad", "\xef\xac\x81"};
    uint64_t rng = 99;
    int ok = 0;
    for (int c = 0; c < 400; c++) {
        char text[256];
        size_t len = 0;
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        int k = 1 + (int)((rng >> 33) % 24);
        for (int i = 0; i < k; i++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            const char *a = alpha[(rng >> 33) % 20];
            memcpy(text + len, a, strlen(a));
            len += strlen(a);
        }
        text[len] = 0;
        utf8proc_uint8_t *nfc = utf8proc_NFC((const utf8proc_uint8_t *)text);
        int32_t *a = NULL, *b = NULL;
        int na = 0, nb = 0;
        if (nfc && tok_encode(t, text, len, 0, &a, &na, &e) == 0 &&
            tok_encode(t, (const char *)nfc, strlen((const char *)nfc), 0, &b, &nb, &e) == 0 &&
            same_ids(a, na, b, nb, "NFC", text, len))
            ok++;
        free(nfc);
        free(a);
        free(b);
    }
    CHECK(ok == 400, "NFC by runs vs whole-string NFC: %d/400", ok);
    tok_free(t);
}

// Random byte mutations of a valid small tokenizer.json: each either loads (and then encodes
// and decodes) or fails with an error; run under `make asan` this is the crash check.
static void test_mutations(void) {
    static const char *pretoks[] = {
        "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":\"\\\\s+(?!\\\\S)|[a-z]+\"},"
        "\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"use_regex\":false}]}",
    };
    char *base = make_bytelevel_json(pretoks[0]);
    size_t len = strlen(base);
    uint64_t rng = 7;
    int loaded = 0, failed = 0, bad = 0;
    for (int it = 0; it < 400; it++) {
        char *j = strdup(base);
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        int flips = 1 + (int)((rng >> 40) % 3);
        for (int f = 0; f < flips; f++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            size_t pos = (size_t)(rng >> 20) % len;
            static const char pool[] = "\"{}[],:0123456789 abcdefgnrtul\\";
            j[pos] = pool[(rng >> 8) % (sizeof pool - 1)];
        }
        struct tokenizer *t = NULL;
        struct err e = {0};
        int rc = tok_load_json(&t, j, len, NULL, "mutant.json", &e);
        if (rc == 0) {
            loaded++;
            int32_t *ids = NULL;
            int n = 0;
            char *back = NULL;
            size_t bl = 0;
            if (tok_encode(t, "the cat  sat\n<|endoftext|>", 26, 1, &ids, &n, &e) == 0) tok_decode(t, ids, n, &back, &bl, &e);
            free(ids);
            free(back);
            tok_free(t);
        } else {
            failed++;
            if (t != NULL || e.msg[0] == 0) bad++;
        }
        free(j);
    }
    free(base);
    printf("mutated tokenizer.json: %d loaded and ran, %d rejected with a message\n", loaded, failed);
    CHECK(bad == 0 && loaded + failed == 400, "mutations: %d loaded, %d failed, %d without a message", loaded, failed, bad);
}

// ---- concurrency: two threads on one tokenizer give the single-threaded ids ----
struct job { const struct tokenizer *t; const char *text; size_t len; int32_t *ids; int n; int rc; };

static void *run_job(void *p) {
    struct job *j = p;
    struct err e = {0};
    for (int r = 0; r < 3 && j->rc == 0; r++) {
        free(j->ids);
        j->rc = tok_encode(j->t, j->text, j->len, 1, &j->ids, &j->n, &e);
    }
    return NULL;
}

static void test_threads(void) {
    const char *qwen3 = TEST_NEED("tokenizers/qwen3");
    const char *wiki = qwen3 ? TEST_NEED("datasets/wikitext2/raw/wiki.test.raw") : NULL;
    if (!wiki) return;
    struct tokenizer *t = NULL;
    struct err e = {0};
    if (tok_load(&t, qwen3, &e)) { CHECK(0, "qwen3: %s", e.msg); return; }
    char *text = NULL;
    size_t len = 0;
    if (file_read_all(wiki, &text, &len, &e)) { CHECK(0, "%s", e.msg); tok_free(t); return; }
    if (len > 100000) len = 100000;
    while (len > 0 && ((uint8_t)text[len] & 0xc0) == 0x80) len--; // cut on a code point boundary
    int32_t *ref = NULL, *nocache = NULL;
    int nref = 0, nnc = 0;
    CHECK(tok_encode(t, text, len, 1, &ref, &nref, &e) == 0, "%s", e.msg);
    // The per-call word cache must not change a single id.
    t->cache_min_pieces = 1 << 30;
    CHECK(tok_encode(t, text, len, 1, &nocache, &nnc, &e) == 0 && same_ids(ref, nref, nocache, nnc, "cache", "wikitext", 8),
          "encode with and without the word cache");
    t->cache_min_pieces = 256;
    free(nocache);
    struct job jobs[2] = {{t, text, len, NULL, 0, 0}, {t, text, len, NULL, 0, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, run_job, &jobs[i]);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) {
        CHECK(jobs[i].rc == 0 && same_ids(jobs[i].ids, jobs[i].n, ref, nref, "thread", "wikitext", 8), "thread %d", i);
        free(jobs[i].ids);
    }
    free(ref);
    free(text);
    tok_free(t);
}

int main(void) {
    log_set_level(LOG_WARN);
    test_golden("qwen3", 0);
    test_golden("llama3", 0);
    test_golden("mistral", 1);
    test_golden("gemma3", 1);
    TEST_PROGRESS("llama2c");
    test_llama2c();
    test_llama2c_reference();
    test_llama2c_errors();
    TEST_PROGRESS("facts");
    test_facts();
    test_config_override();
    TEST_PROGRESS("malformed");
    test_malformed();
    test_bytelevel_minimal();
    test_pretok_behaviors();
    test_added_options();
    TEST_PROGRESS("cli");
    test_cli();
    test_nfc();
    TEST_PROGRESS("mutations");
    test_mutations();
    TEST_PROGRESS("threads");
    test_threads();
    return test_summary("test_tokenizer");
}
