// test_gemma3.c: the real Gemma 3 270M, where its data is present:
//   - the tokenizer import-gguf builds from the GGUF against Google's tokenizer.json
//     (../shared/tokenizers/gemma3) and the Hugging Face ids of ../shared/tokenizers/golden/gemma3.jsonl,
//     class by class (docs/results/gemma3.md explains the differences);
//   - the logits of the import against transformers 4.50.0 (tests/data/gemma3/, made by
//     scripts/gemma3_ref.py) under --attn exact --act f32.
// The GGUF comes from scripts/fetch_gemma3.sh (the download cache, gguf/); without it, or without
// ../shared, the cases skip with the reason.
#include "base/paths.h"
#include "import/gguf_tokenizer.h"
#include "io/gguf.h"
#include "ref_compare.h"

#define GEMMA3_GGUF "gemma-3-270m-q4_k_m.gguf"

// The cached GGUF, or NULL after a SKIP line.
static const char *gguf_path(void) {
    static char buf[2048];
    struct err e = {0};
    char root[1024];
    if (paths_cache(root, sizeof root, &e)) { TEST_SKIP("no cache directory (%s)", e.msg); return NULL; }
    snprintf(buf, sizeof buf, "%s/gguf/" GEMMA3_GGUF, root);
    if (!file_exists(buf)) { TEST_NEED_REAL_MODEL("Gemma 3 270M", buf, "scripts/fetch_gemma3.sh"); return NULL; }
    return buf;
}

// ---- the tokenizer, class by class ----
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
    struct ref_tok_totals tt = ref_tok_golden(rc ? NULL : ref, google, ours, "Google's tokenizer.json", "BOS");
    const int n = tt.n, ng = tt.published;
    printf("gemma3 tokenizer, %d golden strings: Google's tokenizer.json %d/%d, the GGUF's %d/%d (with BOS %d/%d)\n", n,
           ng, n, tt.gguf, n, tt.gguf_special, n);
    CHECK(n == 198 && ng == n, "Google's tokenizer.json: %d/%d strings as Hugging Face tokenizers", ng, n);
    tok_free(google), tok_free(ours), gguf_tok_out_free(&to), gguf_close(&g);
    free(ref);
}

#define REF "tests/data/gemma3"

// The GGUF imported once into the test's scratch (F32, 1.07 GB), or NULL after a SKIP line.
static char imported_dir[1100];
static int imported_done;
static const char *imported(void) {
    const char *path = gguf_path();
    if (!path) return NULL;
    const char *t = getenv("HIFA4_TMP");
    snprintf(imported_dir, sizeof imported_dir, "%s/gemma3-import", t ? t : "build/tmp");
    if (imported_done) return imported_dir;
    struct err e = {0};
    struct gguf_import_info info;
    double t0 = time_now();
    int rc = ref_import(path, imported_dir, &info, &e);
    CHECK(rc == 0, "import %s: %s", path, e.msg);
    if (rc) return NULL;
    CHECK(!strcmp(info.arch, "Gemma3ForCausalLM") && info.tied && info.n_tensors == 236 && info.n_vocab == 262144,
          "import: %s, %d tensors, tied %d, %d tokens", info.arch, info.n_tensors, info.tied, info.n_vocab);
    printf("gemma3 import: %.1f s (%s)\n", time_now() - t0, info.types);
    imported_done = 1;
    return imported_dir;
}

// ---- the import's logits against transformers 4.50.0 (tests/data/gemma3/README.md) ----
static void test_logits(void) {
    const char *dir = imported();
    if (!dir) return;
    struct ref_run r;
    if (ref_open(&r, dir, REF "/logits.json", 1024)) { ref_close(&r); return; }
    const int n_prompts = ref_logits_all(&r, REF, "gemma3"); // the real models' bound 1e-4; measured ~2e-6
    CHECK(n_prompts >= 3, "%d prompts compared", n_prompts);
    ref_close(&r);
}

// ---- ARC-Easy, 100 items, lm-eval's protocol (tests/data/gemma3/arc_easy_100.json) ----
static void test_arc(void) {
    const char *refp = getenv("HIFA4_GEMMA3_ARC") ? getenv("HIFA4_GEMMA3_ARC") : REF "/arc_easy_100.json";
    if (!file_exists(refp)) { TEST_SKIP("%s not found", refp); return; }
    const char *dir = imported();
    if (!dir) return;
    struct ref_run r;
    if (ref_open(&r, dir, refp, 4096)) { ref_close(&r); return; }
    ref_arc_all(&r, "gemma3");
    ref_arc_requests(dir, cJSON_GetObjectItem(r.ref, "items"), "gemma3");
    ref_close(&r);
}

int main(void) {
    log_set_level(LOG_WARN);
    test_tokenizer();
    test_logits();
    test_arc();
    char st[1200];
    snprintf(st, sizeof st, "%s/model.safetensors", imported_dir);
    if (imported_done) remove(st); // 1.07 GB of scratch
    return test_summary("test_gemma3");
}
