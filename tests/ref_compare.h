// ref_compare.h: the comparisons of a real GGUF model against committed transformers references
// (header-only, tests only; test_gemma3.c and test_qwen25.c). The reference formats are
// tests/data/gemma3/README.md's (tests/data/qwen25/ uses the same): logits.json with top-32 and
// sampled logits per position, arc_easy_100.json with lm-eval's per-option log-likelihoods and
// request ids, and the golden tokenizer lines of ../shared/tokenizers/golden/.
#ifndef HIFA4_TEST_REF_COMPARE_H
#define HIFA4_TEST_REF_COMPARE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "base/json_util.h"
#include "base/pool.h"
#include "import/gguf_import.h"
#include "model/model.h"
#include "test.h"
#include "tokenizer/tokenizer.h"

static inline int ref_ids_equal(const int32_t *a, int n, const cJSON *want) {
    if (!cJSON_IsArray(want) || cJSON_GetArraySize(want) != n) return 0;
    for (int i = 0; i < n; i++)
        if (cJSON_GetArrayItem(want, i)->valueint != a[i]) return 0;
    return 1;
}

// ---- the tokenizer on the golden strings, class by class ----
#define REF_MAX_CLASSES 32
struct ref_tok_class {
    char name[24];
    int n, published, gguf, gguf_special; // strings; ids equal to the golden's: the published json, the GGUF's, with specials
};

static inline struct ref_tok_class *ref_class_of(struct ref_tok_class *c, int *nc, const char *name) {
    for (int i = 0; i < *nc; i++)
        if (!strcmp(c[i].name, name)) return &c[i];
    if (*nc == REF_MAX_CLASSES) return &c[REF_MAX_CLASSES - 1];
    snprintf(c[*nc].name, sizeof c[*nc].name, "%s", name);
    return &c[(*nc)++];
}

// One golden line: both tokenizers against its ids (without and with the special tokens).
static inline void ref_tok_case(const char *line, struct tokenizer *published, struct tokenizer *ours,
                                struct ref_tok_class *cl, int *nc, int verbose) {
    cJSON *j = cJSON_Parse(line);
    const cJSON *text = cJSON_GetObjectItem(j, "text"), *cat = cJSON_GetObjectItem(j, "cat");
    struct err e = {0};
    if (!cJSON_IsString(text) || !cJSON_IsString(cat)) {
        CHECK(0, "golden line without text/cat: %.80s", line);
        cJSON_Delete(j);
        return;
    }
    struct ref_tok_class *c = ref_class_of(cl, nc, cat->valuestring);
    const size_t tl = strlen(text->valuestring);
    int32_t *a = NULL, *b = NULL, *s = NULL;
    int na = 0, nb = 0, ns = 0;
    c->n++;
    if (!tok_encode(published, text->valuestring, tl, 0, &a, &na, &e) && ref_ids_equal(a, na, cJSON_GetObjectItem(j, "ids")))
        c->published++;
    else fprintf(stderr, "  the published tokenizer.json differs: %.200s\n", line);
    if (!tok_encode(ours, text->valuestring, tl, 0, &b, &nb, &e) && ref_ids_equal(b, nb, cJSON_GetObjectItem(j, "ids")))
        c->gguf++;
    else if (verbose) fprintf(stderr, "  GGUF tokenizer differs (%d ids): %.200s\n", nb, line);
    if (!tok_encode(ours, text->valuestring, tl, 1, &s, &ns, &e) && ref_ids_equal(s, ns, cJSON_GetObjectItem(j, "ids_special")))
        c->gguf_special++;
    free(a), free(b), free(s);
    cJSON_Delete(j);
}

// Every line of a golden file (its text, modified by strtok; NULL: none) through both tokenizers;
// prints one line per class ("published_label" names the published tokenizer.json, "special"
// what add_special adds) and returns the totals.
struct ref_tok_totals { int n, published, gguf, gguf_special; };
static inline struct ref_tok_totals ref_tok_golden(char *golden, struct tokenizer *published, struct tokenizer *ours,
                                                   const char *published_label, const char *special) {
    struct ref_tok_class cl[REF_MAX_CLASSES] = {0};
    struct ref_tok_totals t = {0};
    int nc = 0;
    for (char *line = golden ? strtok(golden, "\n") : NULL; line; line = strtok(NULL, "\n"))
        ref_tok_case(line, published, ours, cl, &nc, getenv("HIFA4_VERBOSE") != NULL);
    for (int i = 0; i < nc; i++) {
        printf("  %-12s %3d strings: %s %3d, GGUF %3d (with %s %3d)\n", cl[i].name, cl[i].n, published_label,
               cl[i].published, cl[i].gguf, special, cl[i].gguf_special);
        t.n += cl[i].n, t.published += cl[i].published, t.gguf += cl[i].gguf, t.gguf_special += cl[i].gguf_special;
    }
    return t;
}

// ---- logits against logits.json ----
#define REF_CHUNK 128 // output rows per forward

struct ref_lcmp {
    double d2, r2;     // sums of squared differences and of squared references
    int argmax_bad;
    double lse_max;    // max |logsumexp difference|
};

static inline double ref_logsumexp(const float *x, int V, int *am) {
    double mx = x[0], s = 0;
    *am = 0;
    for (int i = 1; i < V; i++)
        if (x[i] > mx) mx = x[i], *am = i;
    for (int i = 0; i < V; i++) s += exp((double)x[i] - mx);
    return mx + log(s);
}

// Rows [t0, t0 + n) of our logits lg against the stored ones: top-32 at every row, the sampled
// ids at even rows, argmax, logsumexp.
static inline void ref_compare_rows(const float *lg, int V, int t0, int n, const cJSON *p, const float *top,
                                    const int32_t *topid, const float *samp, const cJSON *sids, struct ref_lcmp *c) {
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
        const double lse = ref_logsumexp(x, V, &am);
        c->argmax_bad += am != cJSON_GetArrayItem(cJSON_GetObjectItem(p, "argmax"), t)->valueint;
        const double dl = fabs(lse - cJSON_GetArrayItem(cJSON_GetObjectItem(p, "logsumexp"), t)->valuedouble);
        c->lse_max = dl > c->lse_max ? dl : c->lse_max;
    }
}

// One prompt of logits.json (its binary files under ref_dir): the forward in chunks of output
// rows, compared as it goes.
static inline int ref_logits_prompt(struct model *m, struct attn_ctx *ctx, const char *ref_dir, const cJSON *p,
                                    const cJSON *sids, struct ref_lcmp *c, struct err *e) {
    const cJSON *ids = cJSON_GetObjectItem(p, "ids");
    const int T = cJSON_GetArraySize(ids), V = model_cfg(m)->vocab_size;
    char path[1200];
    float *topf = NULL, *samp = NULL, *lg = NULL;
    char *tb = NULL, *sb = NULL;
    size_t tl = 0, sl = 0;
    int rc;
    snprintf(path, sizeof path, "%s/%s", ref_dir, cJSON_GetObjectItem(p, "top32_file")->valuestring);
    if ((rc = file_read_all(path, &tb, &tl, e))) return rc;
    snprintf(path, sizeof path, "%s/%s", ref_dir, cJSON_GetObjectItem(p, "sample_file")->valuestring);
    if ((rc = file_read_all(path, &sb, &sl, e))) { free(tb); return rc; }
    const size_t nsr = (size_t)(T + 1) / 2 * (size_t)cJSON_GetArraySize(sids);
    if (tl != (size_t)T * 32 * 8 || sl != nsr * 4) {
        rc = err_set(e, ERR_FORMAT, "%s: %zu / %zu bytes for %d positions", path, tl, sl, T);
        goto out;
    }
    int32_t *toks = malloc(sizeof(int32_t) * (size_t)T), *topid = malloc(sizeof(int32_t) * (size_t)T * 32), pos[REF_CHUNK];
    topf = malloc(sizeof(float) * (size_t)T * 32);
    samp = (float *)sb;
    lg = malloc(sizeof(float) * REF_CHUNK * (size_t)V);
    for (int t = 0; t < T; t++) toks[t] = cJSON_GetArrayItem(ids, t)->valueint;
    for (size_t k = 0; k < (size_t)T * 32; k++) memcpy(&topid[k], tb + 8 * k, 4), memcpy(&topf[k], tb + 8 * k + 4, 4);
    for (int t0 = 0; !rc && t0 < T; t0 += REF_CHUNK) {
        const int n = T - t0 < REF_CHUNK ? T - t0 : REF_CHUNK;
        for (int r = 0; r < n; r++) pos[r] = t0 + r;
        const struct model_batch b = {.tokens = toks, .n_seq = 1, .seq_len = &T, .out_pos = pos, .n_out = n};
        if (!(rc = model_forward(m, ctx, NULL, &b, lg, e))) ref_compare_rows(lg, V, t0, n, p, topf, topid, samp, sids, c);
    }
    free(toks), free(topid);
out:
    free(topf), free(lg), free(tb), free(sb);
    return rc;
}

// A GGUF imported (F32) into dir, replacing a previous run's files.
static inline int ref_import(const char *gguf_path, const char *dir, struct gguf_import_info *info, struct err *e) {
    struct gguf_import_opts o = {0};
    char f[1200];
    snprintf(f, sizeof f, "%s/model.safetensors", dir);
    if (file_exists(f)) remove(f);
    snprintf(f, sizeof f, "%s/config.json", dir);
    if (file_exists(f)) remove(f);
    return gguf_import(gguf_path, dir, &o, info, e);
}

// The import with f32 activations and `exact` attention (2 threads), and a reference JSON.
struct ref_run {
    struct model *m;
    struct attn_ctx *ctx;
    cJSON *ref;
    struct err e;
};
static inline int ref_open(struct ref_run *r, const char *dir, const char *ref_path, int max_tokens) {
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
static inline void ref_close(struct ref_run *r) {
    attn_ctx_free(r->ctx);
    model_free(r->m);
    cJSON_Delete(r->ref);
}

// Every prompt of the open logits.json of ref_dir; prints one line per prompt (label first) and
// checks rel-L2 <= 1e-4, every argmax equal, logsumexp within 1e-3. Returns the prompts compared.
static inline int ref_logits_all(struct ref_run *r, const char *ref_dir, const char *label) {
    struct err e = {0};
    const cJSON *sids = cJSON_GetObjectItem(r->ref, "sample_ids"), *p;
    int n_prompts = 0;
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(r->ref, "prompts")) {
        struct ref_lcmp c = {0};
        const char *name = cJSON_GetObjectItem(p, "name")->valuestring;
        const int T = cJSON_GetArraySize(cJSON_GetObjectItem(p, "ids"));
        double t0 = time_now();
        if (ref_logits_prompt(r->m, r->ctx, ref_dir, p, sids, &c, &e)) { CHECK(0, "%s %s: %s", label, name, e.msg); continue; }
        const double rel = sqrt(c.d2 / c.r2);
        printf("%s %-15s %3d tokens, exact/f32 vs transformers: rel-L2 %.3g (top-32 + sampled logits), argmax "
               "%d/%d, logsumexp max |diff| %.2g (%.1f s)\n", label, name, T, rel, T - c.argmax_bad, T, c.lse_max,
               time_now() - t0);
        CHECK(rel <= 1e-4, "%s %s: rel-L2 %.3g > 1e-4", label, name, rel);
        CHECK(c.argmax_bad == 0, "%s %s: %d positions with another argmax", label, name, c.argmax_bad);
        CHECK(c.lse_max <= 1e-3, "%s %s: logsumexp differs by %.3g", label, name, c.lse_max);
        n_prompts++;
    }
    return n_prompts;
}

// ---- ARC-Easy under lm-eval's protocol (arc_easy_100.json) ----
// One item: every option's `ids` (= [BOS +] context + continuation) packed into one forward, the
// continuation's log-likelihood from the last n_cont positions of its input ids[:-1].
struct ref_arc_cmp {
    double max_dll;
    int n_opt, greedy_same, pred_diff;
};

static inline double ref_logprob(const float *x, int V, int tok, int *is_max) {
    int am;
    const double lse = ref_logsumexp(x, V, &am);
    *is_max = am == tok;
    return (double)x[tok] - lse;
}

static inline int ref_arc_item(struct model *m, struct attn_ctx *ctx, const cJSON *item, float *lg,
                               struct ref_arc_cmp *c, struct err *e) {
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
            ll += ref_logprob(lg + (size_t)nrow * V, V, cJSON_GetArrayItem(ids, n - nc + t)->valueint, &is_max);
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

// Every item of the open arc_easy_100.json; prints one line (label first) and checks 100 items,
// every option within 1e-3, no prediction difference, is_greedy everywhere the same.
static inline void ref_arc_all(struct ref_run *r, const char *label) {
    struct err e = {0};
    struct ref_arc_cmp c = {0};
    const cJSON *it;
    float *lg = malloc(sizeof(float) * 512 * (size_t)model_cfg(r->m)->vocab_size);
    int n = 0;
    double t0 = time_now();
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(r->ref, "items")) {
        if (ref_arc_item(r->m, r->ctx, it, lg, &c, &e)) { CHECK(0, "%s: %s", label, e.msg); break; }
        n++;
    }
    printf("%s ARC-Easy %d items vs transformers (exact/f32): max |dLL| %.2e over %d options, prediction "
           "differences %d, is_greedy %d/%d (%.0f s)\n", label, n, c.max_dll, c.n_opt, c.pred_diff, c.greedy_same,
           c.n_opt, time_now() - t0);
    CHECK(n == 100 && c.max_dll <= 1e-3 && c.pred_diff == 0 && c.greedy_same == c.n_opt,
          "%s ARC-Easy: %d items, max |dLL| %.3g, %d prediction differences, is_greedy %d/%d", label, n, c.max_dll,
          c.pred_diff, c.greedy_same, c.n_opt);
    free(lg);
}

// Our tokenizer (the imported model's, dir) builds the same request ids from the ARC text as the
// reference stored (needs ../shared): "Question: <stem>\nAnswer: <choice>", special tokens as
// the tokenizer adds them (BOS for Gemma 3, nothing for Qwen2).
static inline void ref_arc_requests(const char *dir, const cJSON *items, const char *label) {
    const char *data = TEST_NEED("datasets/arc/genmc/arc_easy/official/test.jsonl");
    if (!data) return;
    struct err e = {0};
    struct tokenizer *tk = NULL;
    char *buf = NULL, *text = malloc(1 << 16);
    size_t len = 0;
    if (tok_load(&tk, dir, &e) || file_read_all(data, &buf, &len, &e)) { CHECK(0, "%s ARC requests: %s", label, e.msg); goto out; }
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
                ref_ids_equal(ids, ni, cJSON_GetObjectItem(cJSON_GetArrayItem(ref, k), "ids")))
                same++;
            free(ids);
            k++;
        }
        cJSON_Delete(d);
    }
    printf("%s ARC-Easy requests: %d/%d options token-identical to the reference's (the GGUF's tokenizer)\n", label,
           same, n);
    CHECK(n >= 390 && same == n, "%s ARC-Easy requests: %d/%d options as the reference tokenized them", label, same, n);
out:
    tok_free(tk);
    free(buf), free(text);
}

#endif
