// test_qwen25.c: the real Qwen2.5-Coder 0.5B and 1.5B Instruct GGUFs (scripts/fetch_qwen25.sh)
// against independent references, where their data is present:
//   - the tokenizer import-gguf builds from the GGUF (Qwen2's pre-tokenizer) against a published
//     Qwen tokenizer.json (../shared/tokenizers/qwen3: the same byte-level BPE vocabulary and
//     merges, four more added tokens) and the Hugging Face ids of
//     ../shared/tokenizers/golden/qwen3.jsonl, class by class, and the two vocabularies id by id;
//   - the logits of the import against transformers 4.50.0 (tests/data/qwen25/SIZE/, made by
//     scripts/qwen25_ref.py) under --attn exact --act f32: rel-L2 <= 1e-4, every argmax equal;
//   - ARC-Easy, the first 100 items under lm-eval's protocol: every option's log-likelihood
//     within 1e-3 of the reference's, no prediction difference, and our request ids equal.
// The 0.5B runs wherever its GGUF is cached (scripts/fetch_qwen25.sh 0.5b; ~2 GB of scratch for the import).
// The 1.5B needs 7.1 GB of scratch and as much memory: it runs only with HIFA4_QWEN25_1_5B=1
// (and its GGUF cached), else it reports itself skipped. Without a GGUF, or without ../shared,
// the cases skip with the reason.
#include "base/paths.h"
#include "import/gguf_tokenizer.h"
#include "io/gguf.h"
#include "ref_compare.h"

struct qsize {
    const char *label, *gguf, *ref_sub, *opt_in; // ref_sub: under REF_ROOT; opt_in: the variable that must be 1, or NULL
    int n_tensors, n_layers;
    int committed; // references committed in tests/data/qwen25/<ref_sub>/ (missing = failure): 1 logits, 2 ARC; others skip
};
static const struct qsize SIZES[] = {
    {"qwen2.5-0.5b", "qwen2.5-coder-0.5b-instruct.gguf", "0.5b", NULL, 291, 24, 3},
    {"qwen2.5-1.5b", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "1.5b", "HIFA4_QWEN25_1_5B", 339, 28, 3},
};

// The cached GGUF of size s, or NULL after a SKIP line.
static const char *gguf_path(const struct qsize *s, char *buf, size_t n) {
    struct err e = {0};
    char root[1024];
    if (paths_cache(root, sizeof root, &e)) { TEST_SKIP("no cache directory (%s)", e.msg); return NULL; }
    snprintf(buf, n, "%s/gguf/%s", root, s->gguf);
    if (!file_exists(buf)) {
        TEST_SKIP("%s not found (scripts/fetch_qwen25.sh %s fetches it)", buf, s->label + 7);
        return NULL;
    }
    return buf;
}

// ---- the tokenizer (the vocabulary is the same in both files: checked on each cached one) ----
// The published Qwen3 tokenizer.json has Qwen2.5's 151,665 tokens (151,643 BPE pieces and 22
// added ones) plus <tool_response>, </tool_response>, <think>, </think> at 151665-151668; the
// GGUF has 151,936 rows, the last 271 of them padding.
#define QWEN25_TOKENS 151665

// Ids below QWEN25_TOKENS whose pieces differ between the two, and ids at or above it that the
// published json has.
static void vocab_compare(const struct tokenizer *pub, const struct tokenizer *ours, int *diff, int *extra) {
    *diff = *extra = 0;
    for (int i = 0; i < tok_vocab_size(pub); i++) {
        const char *a = tok_piece(pub, i), *b = tok_piece(ours, i);
        if (i >= QWEN25_TOKENS) *extra += a != NULL;
        else if (!a || !b || strcmp(a, b)) {
            (*diff)++;
            if (*diff <= 5) fprintf(stderr, "  id %d: published '%s', GGUF '%s'\n", i, a ? a : "(none)", b ? b : "(none)");
        }
    }
}

// Golden lines whose text holds one of Qwen3's four added tokens that Qwen2.5 lacks (the GGUF
// tokenizes them as plain text, the published json as one token).
static int qwen3_only_lines(const char *golden) {
    static const char *const q3[] = {"<think>", "</think>", "<tool_response>", "</tool_response>"};
    int n = 0;
    for (const char *l = golden; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *end = strchr(l, '\n'), *t = strstr(l, "\"text\":\""), *c = t ? strstr(t, "\",\"ids\":") : NULL;
        int hit = 0;
        for (int k = 0; c && (!end || c < end) && k < 4; k++) {
            const char *f = strstr(t, q3[k]);
            hit |= f && f < c;
        }
        n += hit;
    }
    return n;
}

static void test_tokenizer(const struct qsize *s, const char *path) {
    const char *pdir = TEST_NEED("tokenizers/qwen3/tokenizer.json");
    const char *gold = pdir ? TEST_NEED("tokenizers/golden/qwen3.jsonl") : NULL;
    if (!gold) return;
    char dir[1100];
    snprintf(dir, sizeof dir, "%s", pdir);
    *strrchr(dir, '/') = 0;
    struct err e = {0};
    struct gguf g;
    struct gguf_tok_out to;
    struct tokenizer *pub = NULL, *ours = NULL;
    char *ref = NULL;
    size_t len = 0;
    if (file_read_all(gold, &ref, &len, &e) || tok_load(&pub, dir, &e) || gguf_open(&g, path, &e)) {
        CHECK(0, "%s tokenizer: %s", s->label, e.msg);
        free(ref), tok_free(pub);
        return;
    }
    int rc = gguf_tokenizer_build(&g, GGUF_TOK_PUBLISHED, &to, &e) ||
             tok_load_json(&ours, to.tokenizer_json, strlen(to.tokenizer_json), to.config_json, "qwen2.5 GGUF", &e);
    CHECK(rc == 0, "%s GGUF tokenizer: %s", s->label, e.msg);
    CHECK(rc || (to.n_vocab == 151936 && to.bos_id == 151643 && to.eos_id == 151645 && !to.add_bos && !to.add_eos &&
                 !strcmp(to.model, "gpt2") && !strcmp(to.pre, "qwen2")),
          "%s GGUF tokenizer: %d tokens, bos %d, eos %d, add_bos %d, model %s, pre %s", s->label, to.n_vocab, to.bos_id,
          to.eos_id, to.add_bos, to.model, to.pre);
    if (!rc) {
        int diff, extra;
        vocab_compare(pub, ours, &diff, &extra);
        printf("%s vocabulary: ids 0-%d identical to the published tokenizer.json's but %d; it has %d more tokens\n",
               s->label, QWEN25_TOKENS - 1, diff, extra);
        CHECK(diff == 0 && extra == 4, "%s vocabulary: %d ids differ, %d extra published tokens", s->label, diff, extra);
    }
    const int n_q3 = qwen3_only_lines(ref);
    struct ref_tok_totals tt = ref_tok_golden(rc ? NULL : ref, pub, ours, "Qwen3 tokenizer.json", "specials");
    printf("%s tokenizer, %d golden strings: the published tokenizer.json %d/%d, the GGUF's %d/%d (with specials %d/%d)\n",
           s->label, tt.n, tt.published, tt.n, tt.gguf, tt.n, tt.gguf_special, tt.n);
    CHECK(tt.n == 198 && tt.published == tt.n, "%s: the published tokenizer.json %d/%d strings as Hugging Face", s->label,
          tt.published, tt.n);
    // every string but those holding Qwen3-only tokens (docs/results/qwen25_refs.md)
    CHECK(n_q3 >= 1 && tt.gguf == tt.n - n_q3 && tt.gguf_special == tt.gguf,
          "%s: the GGUF's tokenizer %d/%d (%d strings with Qwen3-only tokens), with specials %d", s->label, tt.gguf, tt.n,
          n_q3, tt.gguf_special);
    tok_free(pub), tok_free(ours), gguf_tok_out_free(&to), gguf_close(&g);
    free(ref);
}

// ---- the import against transformers ----
// The references: tests/data/qwen25/<size>/, or $HIFA4_QWEN25_REF/<size>/ (a perturbed copy, to see
// the checks fail).
static void test_model(const struct qsize *s, const char *path) {
    const char *t = getenv("HIFA4_TMP"), *root = getenv("HIFA4_QWEN25_REF");
    char dir[1100], ref_dir[600], lp[700], ap[700];
    snprintf(ref_dir, sizeof ref_dir, "%s/%s", root ? root : "tests/data/qwen25", s->ref_sub);
    snprintf(lp, sizeof lp, "%s/logits.json", ref_dir);
    snprintf(ap, sizeof ap, "%s/arc_easy_100.json", ref_dir);
    const int have_l = file_exists(lp), have_a = file_exists(ap);
    CHECK(root || ((have_l || !(s->committed & 1)) && (have_a || !(s->committed & 2))),
          "%s: a committed reference is missing (%s: %d, %s: %d)", s->label, lp, have_l, ap, have_a);
    if (!have_l) TEST_SKIP("%s: %s not found (scripts/qwen25_ref.py logits --size %s makes it)", s->label, lp, s->ref_sub);
    if (!have_a) TEST_SKIP("%s: %s not found (scripts/qwen25_ref.py arc --size %s makes it)", s->label, ap, s->ref_sub);
    if (!have_l && !have_a) return;
    snprintf(dir, sizeof dir, "%s/%s-import", t ? t : "build/tmp", s->label);
    struct err e = {0};
    struct gguf_import_info info;
    double t0 = time_now();
    int rc = ref_import(path, dir, &info, &e);
    CHECK(rc == 0, "import %s: %s", path, e.msg);
    if (rc) return;
    CHECK(!strcmp(info.arch, "Qwen2ForCausalLM") && !info.tied && info.n_tensors == s->n_tensors && info.n_vocab == 151936,
          "%s import: %s, %d tensors, tied %d, %d tokens", s->label, info.arch, info.n_tensors, info.tied, info.n_vocab);
    TEST_PROGRESS("%s import: %.1f s (%s)", s->label, time_now() - t0, info.types);
    struct ref_run r;
    if (have_l && !ref_open(&r, dir, lp, 1024)) {
        const int n = ref_logits_all(&r, ref_dir, s->label);
        CHECK(n >= 3, "%s: %d prompts compared", s->label, n);
    }
    if (have_l) ref_close(&r);
    if (have_a && !ref_open(&r, dir, ap, 4096)) {
        ref_arc_all(&r, s->label);
        ref_arc_requests(dir, cJSON_GetObjectItem(r.ref, "items"), s->label);
    }
    if (have_a) ref_close(&r);
    char st[1200];
    snprintf(st, sizeof st, "%s/model.safetensors", dir);
    remove(st); // 2-7 GB of scratch
}

int main(void) {
    log_set_level(LOG_WARN);
    for (size_t i = 0; i < sizeof SIZES / sizeof SIZES[0]; i++) {
        const struct qsize *s = &SIZES[i];
        char buf[2048];
        const char *v = s->opt_in ? getenv(s->opt_in) : "1";
        if (!v || strcmp(v, "1")) {
            TEST_SKIP("%s: set %s=1 to run it (7.1 GB of scratch and memory)", s->label, s->opt_in);
            continue;
        }
        const char *path = gguf_path(s, buf, sizeof buf);
        if (!path) continue;
        test_tokenizer(s, path);
        test_model(s, path);
    }
    return test_summary("test_qwen25");
}
