// test_gemma3.c: the real Gemma 3 270M, where its data is present:
//   - the tokenizer import-gguf builds from the GGUF against Google's tokenizer.json
//     (../shared/tokenizers/gemma3) and the Hugging Face ids of ../shared/tokenizers/golden/gemma3.jsonl,
//     class by class (docs/results/gemma3.md explains the differences);
//   - the logits of the import against transformers 4.50.0 (tests/data/gemma3/, made by
//     scripts/gemma3_ref.py) under --attn exact --act f32.
// The GGUF comes from scripts/fetch_gemma3.sh (the download cache, gguf/); without it, or without
// ../shared, the cases skip with the reason.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "base/json_util.h"
#include "base/paths.h"
#include "base/pool.h"
#include "import/gguf_import.h"
#include "import/gguf_tokenizer.h"
#include "io/gguf.h"
#include "model/model.h"
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
    if (!file_exists(buf)) { TEST_NEED_REAL_MODEL("Gemma 3 270M", buf, "scripts/fetch_gemma3.sh"); return NULL; }
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

// ---- the import's logits against transformers 4.50.0 (tests/data/gemma3/README.md) ----
#define REF "tests/data/gemma3/"
#define CHUNK 128 // output rows per forward (262,144 logits each)

struct lcmp {
    double d2, r2;     // sums of squared differences and of squared references
    int argmax_bad;
    double lse_max;    // max |logsumexp difference|
};

static double logsumexp(const float *x, int V, int *am) {
    double mx = x[0], s = 0;
    *am = 0;
    for (int i = 1; i < V; i++)
        if (x[i] > mx) mx = x[i], *am = i;
    for (int i = 0; i < V; i++) s += exp((double)x[i] - mx);
    return mx + log(s);
}

// Rows [t0, t0 + n) of our logits lg against the stored ones: top-32 at every row, the sampled
// ids at even rows, argmax, logsumexp.
static void compare_rows(const float *lg, int V, int t0, int n, const cJSON *p, const float *top, const int32_t *topid,
                         const float *samp, const cJSON *sids, struct lcmp *c) {
    const int ns = cJSON_GetArraySize(sids);
    for (int r = 0; r < n; r++) {
        const int t = t0 + r;
        const float *x = lg + (size_t)r * V;
        for (int k = 0; k < 32; k++) {
            const double ref = top[(size_t)t * 32 + k], d = x[topid[(size_t)t * 32 + k]] - ref;
            c->d2 += d * d, c->r2 += ref * ref;
        }
        for (int k = 0; t % 2 == 0 && k < ns; k++) {
            const double ref = samp[(size_t)(t / 2) * ns + k], d = x[cJSON_GetArrayItem(sids, k)->valueint] - ref;
            c->d2 += d * d, c->r2 += ref * ref;
        }
        int am;
        const double lse = logsumexp(x, V, &am);
        c->argmax_bad += am != cJSON_GetArrayItem(cJSON_GetObjectItem(p, "argmax"), t)->valueint;
        const double dl = fabs(lse - cJSON_GetArrayItem(cJSON_GetObjectItem(p, "logsumexp"), t)->valuedouble);
        c->lse_max = dl > c->lse_max ? dl : c->lse_max;
    }
}

// One prompt: the forward in chunks of output rows, compared as it goes.
static int logits_prompt(struct model *m, struct attn_ctx *ctx, const cJSON *p, const cJSON *sids, struct lcmp *c,
                         struct err *e) {
    const cJSON *ids = cJSON_GetObjectItem(p, "ids");
    const int T = cJSON_GetArraySize(ids), V = model_cfg(m)->vocab_size;
    char path[512];
    float *topf = NULL, *samp = NULL, *lg = NULL;
    char *tb = NULL, *sb = NULL;
    size_t tl = 0, sl = 0;
    int rc;
    snprintf(path, sizeof path, REF "%s", cJSON_GetObjectItem(p, "top32_file")->valuestring);
    if ((rc = file_read_all(path, &tb, &tl, e))) return rc;
    snprintf(path, sizeof path, REF "%s", cJSON_GetObjectItem(p, "sample_file")->valuestring);
    if ((rc = file_read_all(path, &sb, &sl, e))) { free(tb); return rc; }
    const size_t nsr = (size_t)(T + 1) / 2 * (size_t)cJSON_GetArraySize(sids);
    if (tl != (size_t)T * 32 * 8 || sl != nsr * 4) {
        rc = err_set(e, ERR_FORMAT, "%s: %zu / %zu bytes for %d positions", path, tl, sl, T);
        goto out;
    }
    int32_t *toks = malloc(sizeof(int32_t) * (size_t)T), *topid = malloc(sizeof(int32_t) * (size_t)T * 32), pos[CHUNK];
    topf = malloc(sizeof(float) * (size_t)T * 32);
    samp = (float *)sb;
    lg = malloc(sizeof(float) * CHUNK * (size_t)V);
    for (int t = 0; t < T; t++) toks[t] = cJSON_GetArrayItem(ids, t)->valueint;
    for (size_t k = 0; k < (size_t)T * 32; k++) memcpy(&topid[k], tb + 8 * k, 4), memcpy(&topf[k], tb + 8 * k + 4, 4);
    for (int t0 = 0; !rc && t0 < T; t0 += CHUNK) {
        const int n = T - t0 < CHUNK ? T - t0 : CHUNK;
        for (int r = 0; r < n; r++) pos[r] = t0 + r;
        const struct model_batch b = {.tokens = toks, .n_seq = 1, .seq_len = &T, .out_pos = pos, .n_out = n};
        if (!(rc = model_forward(m, ctx, NULL, &b, lg, e))) compare_rows(lg, V, t0, n, p, topf, topid, samp, sids, c);
    }
    free(toks), free(topid);
out:
    free(topf), free(lg), free(tb), free(sb);
    return rc;
}

// The GGUF imported once into the test's scratch (F32, 1.07 GB), or NULL after a SKIP line.
static char imported_dir[1100];
static int imported_done;
static const char *imported(void) {
    char *dir = imported_dir;
    const size_t dir_n = sizeof imported_dir;
    int done = imported_done;
    const char *path = gguf_path();
    if (!path) return NULL;
    const char *t = getenv("HIFA4_TMP");
    snprintf(dir, dir_n, "%s/gemma3-import", t ? t : "build/tmp");
    if (done) return dir;
    struct err e = {0};
    struct gguf_import_opts o = {0};
    struct gguf_import_info info;
    char cfg[1200];
    snprintf(cfg, sizeof cfg, "%s/model.safetensors", dir);
    if (file_exists(cfg)) remove(cfg); // a previous run's
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    if (file_exists(cfg)) remove(cfg);
    double t0 = time_now();
    int rc = gguf_import(path, dir, &o, &info, &e);
    CHECK(rc == 0, "import %s: %s", path, e.msg);
    if (rc) return NULL;
    CHECK(!strcmp(info.arch, "Gemma3ForCausalLM") && info.tied && info.n_tensors == 236 && info.n_vocab == 262144,
          "import: %s, %d tensors, tied %d, %d tokens", info.arch, info.n_tensors, info.tied, info.n_vocab);
    printf("gemma3 import: %.1f s (%s)\n", time_now() - t0, info.types);
    imported_done = 1;
    return dir;
}

// The import with f32 activations and `exact` attention (2 threads), and a reference JSON.
struct ref_run {
    struct model *m;
    struct attn_ctx *ctx;
    cJSON *ref;
    struct err e;
};
static int open_ref(struct ref_run *r, const char *dir, const char *ref_path, int max_tokens) {
    struct model_opts mo;
    model_opts_default(&mo);
    mo.act_bf16 = 0, mo.max_tokens = max_tokens, mo.n_threads = 2;
    pool_set_threads(2);
    *r = (struct ref_run){0};
    int rc = json_parse_file(&r->ref, ref_path, &r->e) || model_open(&r->m, dir, &mo, &r->e) ||
             model_attn_open(&r->ctx, r->m, "exact", NULL, NULL, &r->e);
    CHECK(rc == 0, "%s: %s", ref_path, r->e.msg);
    return rc;
}
static void close_ref(struct ref_run *r) {
    attn_ctx_free(r->ctx);
    model_free(r->m);
    cJSON_Delete(r->ref);
}

static void test_logits(void) {
    const char *dir = imported();
    if (!dir) return;
    struct ref_run r;
    if (open_ref(&r, dir, REF "logits.json", 1024)) { close_ref(&r); return; }
    struct model *m = r.m;
    struct attn_ctx *ctx = r.ctx;
    const cJSON *ref = r.ref;
    struct err e = {0};
    const cJSON *sids = cJSON_GetObjectItem(ref, "sample_ids"), *p;
    int n_prompts = 0;
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(ref, "prompts")) {
        struct lcmp c = {0};
        const char *name = cJSON_GetObjectItem(p, "name")->valuestring;
        const int T = cJSON_GetArraySize(cJSON_GetObjectItem(p, "ids"));
        double t0 = time_now();
        if (logits_prompt(m, ctx, p, sids, &c, &e)) { CHECK(0, "%s: %s", name, e.msg); continue; }
        const double rel = sqrt(c.d2 / c.r2);
        printf("gemma3 %-15s %3d tokens, exact/f32 vs transformers: rel-L2 %.3g (top-32 + sampled logits), argmax "
               "%d/%d, logsumexp max |diff| %.2g (%.1f s)\n", name, T, rel, T - c.argmax_bad, T, c.lse_max, time_now() - t0);
        CHECK(rel <= 1e-4, "%s: rel-L2 %.3g > 1e-4", name, rel); // the parity bound for real models; measured ~2e-6
        CHECK(c.argmax_bad == 0, "%s: %d positions with another argmax", name, c.argmax_bad);
        CHECK(c.lse_max <= 1e-3, "%s: logsumexp differs by %.3g", name, c.lse_max);
        n_prompts++;
    }
    CHECK(n_prompts >= 3, "%d prompts compared", n_prompts);
    close_ref(&r);
}

// ---- ARC-Easy, 100 items, lm-eval's protocol (tests/data/gemma3/arc_easy_100.json) ----
// One item: every option's `ids` (= BOS + context + continuation) packed into one forward, the
// continuation's log-likelihood from the last n_cont positions of its input ids[:-1].
struct arc_cmp {
    double max_dll;
    int n_opt, greedy_same, pred_diff;
};

static double logprob(const float *x, int V, int tok, int *is_max) {
    int am;
    const double lse = logsumexp(x, V, &am);
    *is_max = am == tok;
    return (double)x[tok] - lse;
}

static int arc_item(struct model *m, struct attn_ctx *ctx, const cJSON *item, float *lg, struct arc_cmp *c, struct err *e) {
    const cJSON *opts = cJSON_GetObjectItem(item, "options"), *o;
    int32_t tokens[4096];
    int pos[512], seq_len[8], n_seq = 0, tot = 0, nrow = 0, rc;
    const int V = model_cfg(m)->vocab_size;
    cJSON_ArrayForEach(o, opts) {
        const cJSON *ids = cJSON_GetObjectItem(o, "ids");
        const int n = cJSON_GetArraySize(ids) - 1, nc = cJSON_GetObjectItem(o, "n_cont")->valueint;
        if (n_seq == 8 || tot + n > 4096 || nrow + nc > 512 || nc < 1 || nc > n)
            return err_set(e, ERR_RANGE, "item %s: options too long for the test's buffers", cJSON_GetObjectItem(item, "id")->valuestring);
        for (int t = 0; t < n; t++) tokens[tot + t] = cJSON_GetArrayItem(ids, t)->valueint;
        for (int t = 0; t < nc; t++) pos[nrow++] = tot + n - nc + t;
        seq_len[n_seq++] = n;
        tot += n;
    }
    const struct model_batch b = {.tokens = tokens, .n_seq = n_seq, .seq_len = seq_len, .out_pos = pos, .n_out = nrow};
    if ((rc = model_forward(m, ctx, NULL, &b, lg, e))) return rc;
    double best = -INFINITY;
    int k = 0, pred = -1;
    nrow = 0;
    cJSON_ArrayForEach(o, opts) {
        const cJSON *ids = cJSON_GetObjectItem(o, "ids");
        const int n = cJSON_GetArraySize(ids), nc = cJSON_GetObjectItem(o, "n_cont")->valueint;
        double ll = 0;
        int greedy = 1, is_max;
        for (int t = 0; t < nc; t++, nrow++) {
            ll += logprob(lg + (size_t)nrow * V, V, cJSON_GetArrayItem(ids, n - nc + t)->valueint, &is_max);
            greedy &= is_max;
        }
        const double d = fabs(ll - cJSON_GetObjectItem(o, "ll")->valuedouble);
        c->max_dll = d > c->max_dll ? d : c->max_dll;
        c->greedy_same += greedy == cJSON_IsTrue(cJSON_GetObjectItem(o, "is_greedy"));
        c->n_opt++;
        if (ll > best) best = ll, pred = k;
        k++;
    }
    c->pred_diff += pred != cJSON_GetObjectItem(item, "pred")->valueint;
    return 0;
}

// Our tokenizer (the GGUF's) builds the same request ids from the ARC text (needs ../shared).
static void arc_requests(const char *dir, const cJSON *items) {
    const char *data = TEST_NEED("datasets/arc/genmc/arc_easy/official/test.jsonl");
    if (!data) return;
    struct err e = {0};
    struct tokenizer *tk = NULL;
    char *buf = NULL, *text = malloc(1 << 16);
    size_t len = 0;
    if (tok_load(&tk, dir, &e) || file_read_all(data, &buf, &len, &e)) { CHECK(0, "ARC requests: %s", e.msg); goto out; }
    int n = 0, same = 0, item = 0;
    for (char *line = strtok(buf, "\n"); line && item < cJSON_GetArraySize(items); line = strtok(NULL, "\n"), item++) {
        cJSON *d = cJSON_Parse(line);
        const cJSON *q = cJSON_GetObjectItem(d, "question"), *c;
        const cJSON *ref = cJSON_GetObjectItem(cJSON_GetArrayItem(items, item), "options");
        int k = 0;
        cJSON_ArrayForEach(c, cJSON_GetObjectItem(q, "choices")) {
            snprintf(text, 1 << 16, "Question: %s\nAnswer: %s", cJSON_GetObjectItem(q, "stem")->valuestring,
                     cJSON_GetObjectItem(c, "text")->valuestring);
            int32_t *ids = NULL;
            int ni = 0;
            n++;
            if (!tok_encode(tk, text, strlen(text), 1, &ids, &ni, &e) &&
                ids_equal(ids, ni, cJSON_GetObjectItem(cJSON_GetArrayItem(ref, k), "ids")))
                same++;
            free(ids);
            k++;
        }
        cJSON_Delete(d);
    }
    printf("ARC-Easy requests: %d/%d options token-identical to the reference's (the GGUF's tokenizer, BOS)\n", same, n);
    CHECK(n >= 390 && same == n, "ARC-Easy requests: %d/%d options as the reference tokenized them", same, n);
out:
    tok_free(tk);
    free(buf), free(text);
}

static void test_arc(void) {
    const char *refp = getenv("HIFA4_GEMMA3_ARC") ? getenv("HIFA4_GEMMA3_ARC") : REF "arc_easy_100.json";
    if (!file_exists(refp)) { TEST_SKIP("%s not found", refp); return; }
    const char *dir = imported();
    if (!dir) return;
    struct ref_run r;
    if (open_ref(&r, dir, refp, 4096)) { close_ref(&r); return; }
    struct err e = {0};
    struct arc_cmp c = {0};
    const cJSON *items = cJSON_GetObjectItem(r.ref, "items"), *it;
    struct model *m = r.m;
    float *lg = malloc(sizeof(float) * 512 * (size_t)model_cfg(m)->vocab_size);
    int n = 0;
    double t0 = time_now();
    cJSON_ArrayForEach(it, items) {
        if (arc_item(m, r.ctx, it, lg, &c, &e)) { CHECK(0, "%s", e.msg); break; }
        n++;
    }
    printf("gemma3 ARC-Easy %d items vs transformers (exact/f32): max |dLL| %.2e over %d options, prediction "
           "differences %d, is_greedy %d/%d (%.0f s)\n", n, c.max_dll, c.n_opt, c.pred_diff, c.greedy_same, c.n_opt,
           time_now() - t0);
    CHECK(n == 100 && c.max_dll <= 1e-3 && c.pred_diff == 0 && c.greedy_same == c.n_opt,
          "gemma3 ARC-Easy: %d items, max |dLL| %.3g, %d prediction differences, is_greedy %d/%d", n, c.max_dll,
          c.pred_diff, c.greedy_same, c.n_opt);
    arc_requests(dir, items);
    free(lg);
    close_ref(&r);
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
