// test_gemma3.c: the real Gemma 3 270M (issue 22), where its data is present:
//   - the tokenizer import-gguf builds from the GGUF against Google's tokenizer.json
//     (../shared/tokenizers/gemma3) and the Hugging Face ids of ../shared/tokenizers/golden/gemma3.jsonl,
//     class by class (docs/gemma3.md explains the differences);
//   - the logits of the import against transformers 4.50.0 (tests/data/gemma3/, made by
//     scripts/gemma3_ref.py) under --attn exact --act f32.
// The GGUF comes from scripts/fetch_gemma3.sh (the download cache, gguf/); without it, or without
// ../shared, the cases skip with the reason.
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "base/paths.h"
#include "import/gguf_tokenizer.h"
#include "io/gguf.h"
#include "test.h"
#include "tokenizer/tokenizer.h"

#define GEMMA3_GGUF "gemma-3-270m-q4_k_m.gguf"

// The cached GGUF, or NULL after a SKIP line.
static const char *gguf_path(void) {
    static char buf[2048];
    struct err e = {0};
    char root[1024];
    if (paths_cache(root, sizeof root, &e)) { TEST_SKIP("no cache directory (%s)", e.msg); return NULL; }
    snprintf(buf, sizeof buf, "%s/gguf/" GEMMA3_GGUF, root);
    if (!file_exists(buf)) { TEST_SKIP("%s not found (scripts/fetch_gemma3.sh, or .ci/run, fetches it)", buf); return NULL; }
    return buf;
}

static int ids_equal(const int32_t *a, int n, const cJSON *want) {
    if (!cJSON_IsArray(want) || cJSON_GetArraySize(want) != n) return 0;
    for (int i = 0; i < n; i++)
        if (cJSON_GetArrayItem(want, i)->valueint != a[i]) return 0;
    return 1;
}

// ---- the tokenizer, class by class ----
#define MAX_CLASSES 32
struct tok_class {
    char name[24];
    int n, google, gguf, gguf_special; // strings; ids equal to the golden's: Google's json, the GGUF's, with BOS
};

static struct tok_class *class_of(struct tok_class *c, int *nc, const char *name) {
    for (int i = 0; i < *nc; i++)
        if (!strcmp(c[i].name, name)) return &c[i];
    if (*nc == MAX_CLASSES) return &c[MAX_CLASSES - 1];
    snprintf(c[*nc].name, sizeof c[*nc].name, "%s", name);
    return &c[(*nc)++];
}

// One golden line: both tokenizers against its ids (without and with the special tokens).
static void tok_case(const char *line, struct tokenizer *google, struct tokenizer *ours, struct tok_class *cl, int *nc,
                     int verbose) {
    cJSON *j = cJSON_Parse(line);
    const cJSON *text = cJSON_GetObjectItem(j, "text"), *cat = cJSON_GetObjectItem(j, "cat");
    struct err e = {0};
    if (!cJSON_IsString(text) || !cJSON_IsString(cat)) {
        CHECK(0, "golden line without text/cat: %.80s", line);
        cJSON_Delete(j);
        return;
    }
    struct tok_class *c = class_of(cl, nc, cat->valuestring);
    const size_t tl = strlen(text->valuestring);
    int32_t *a = NULL, *b = NULL, *s = NULL;
    int na = 0, nb = 0, ns = 0;
    c->n++;
    if (!tok_encode(google, text->valuestring, tl, 0, &a, &na, &e) && ids_equal(a, na, cJSON_GetObjectItem(j, "ids")))
        c->google++;
    else fprintf(stderr, "  Google's tokenizer.json differs: %.200s\n", line);
    if (!tok_encode(ours, text->valuestring, tl, 0, &b, &nb, &e) && ids_equal(b, nb, cJSON_GetObjectItem(j, "ids")))
        c->gguf++;
    else if (verbose) fprintf(stderr, "  GGUF tokenizer differs (%d ids): %.200s\n", nb, line);
    if (!tok_encode(ours, text->valuestring, tl, 1, &s, &ns, &e) && ids_equal(s, ns, cJSON_GetObjectItem(j, "ids_special")))
        c->gguf_special++;
    free(a), free(b), free(s);
    cJSON_Delete(j);
}

static void test_tokenizer(void) {
    const char *path = gguf_path();
    const char *gdir = path ? TEST_NEED("tokenizers/gemma3/tokenizer.json.zst") : NULL;
    const char *gold = gdir ? TEST_NEED("tokenizers/golden/gemma3.jsonl") : NULL;
    if (!gold) return;
    struct err e = {0};
    struct gguf g;
    struct gguf_tok_out to;
    struct tokenizer *google = NULL, *ours = NULL;
    char *ref = NULL;
    size_t len = 0;
    double t0 = time_now();
    if (file_read_all(gold, &ref, &len, &e) || tok_load(&google, gdir, &e) || gguf_open(&g, path, &e)) {
        CHECK(0, "gemma3 tokenizer: %s", e.msg);
        free(ref), tok_free(google);
        return;
    }
    int rc = gguf_tokenizer_build(&g, GGUF_TOK_PUBLISHED, &to, &e) ||
             tok_load_json(&ours, to.tokenizer_json, strlen(to.tokenizer_json), to.config_json, "gemma3 GGUF", &e);
    CHECK(rc == 0, "gemma3 GGUF tokenizer: %s", e.msg);
    CHECK(rc || (to.n_vocab == 262144 && to.bos_id == 2 && to.eos_id == 1 && to.add_bos && !strcmp(to.model, "llama")),
          "gemma3 GGUF tokenizer: %d tokens, bos %d, eos %d, add_bos %d, model %s", to.n_vocab, to.bos_id, to.eos_id,
          to.add_bos, to.model);
    printf("gemma3 tokenizers loaded in %.1f s\n", time_now() - t0);
    struct tok_class cl[MAX_CLASSES] = {0};
    int nc = 0;
    for (char *line = strtok(rc ? NULL : ref, "\n"); line; line = strtok(NULL, "\n"))
        tok_case(line, google, ours, cl, &nc, getenv("HIFA4_VERBOSE") != NULL);
    int n = 0, ng = 0, nu = 0, nus = 0;
    for (int i = 0; i < nc; i++) {
        printf("  %-12s %3d strings: Google's tokenizer.json %3d, GGUF %3d (with BOS %3d)\n", cl[i].name, cl[i].n,
               cl[i].google, cl[i].gguf, cl[i].gguf_special);
        n += cl[i].n, ng += cl[i].google, nu += cl[i].gguf, nus += cl[i].gguf_special;
    }
    printf("gemma3 tokenizer, %d golden strings: Google's tokenizer.json %d/%d, the GGUF's %d/%d (with BOS %d/%d)\n", n,
           ng, n, nu, n, nus, n);
    CHECK(n == 198 && ng == n, "Google's tokenizer.json: %d/%d strings as Hugging Face tokenizers", ng, n);
    tok_free(google), tok_free(ours), gguf_tok_out_free(&to), gguf_close(&g);
    free(ref);
}

int main(void) {
    log_set_level(LOG_WARN);
    test_tokenizer();
    return test_summary("test_gemma3");
}
