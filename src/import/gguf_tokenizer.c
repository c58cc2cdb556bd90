// gguf_tokenizer.c: tokenizer.ggml.* -> tokenizer.json + tokenizer_config.json (see
// gguf_tokenizer.h). The pre-tokenizer regexes are llama.cpp's (llama-vocab.cpp) written the
// way the models' own tokenizer.json files write them (Llama 3 and Qwen2 verbatim), so both
// llama.cpp and the Rust tokenizers library split text the same way.
#include "import/gguf_tokenizer.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

// llama.cpp token types (llama_token_type)
enum { TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER_DEFINED = 4, TT_UNUSED = 5, TT_BYTE = 6 };

#define RE_LLAMA3                                                                                   \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|" \
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_QWEN2                                                                                    \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"    \
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

enum pre_kind { PRE_GPT2, PRE_DIGITS_GPT2, PRE_LLAMA3, PRE_QWEN2 };
static const struct { const char *name; enum pre_kind kind; } pre_table[] = {
    {"default", PRE_GPT2},          {"gpt-2", PRE_GPT2},          {"gpt2", PRE_GPT2},
    {"mpt", PRE_GPT2},              {"olmo", PRE_GPT2},           {"jais", PRE_GPT2},
    {"smollm", PRE_DIGITS_GPT2},    {"starcoder", PRE_DIGITS_GPT2}, {"refact", PRE_DIGITS_GPT2},
    {"command-r", PRE_DIGITS_GPT2}, {"codeshell", PRE_DIGITS_GPT2}, {"exaone", PRE_DIGITS_GPT2},
    {"llama-bpe", PRE_LLAMA3},      {"llama3", PRE_LLAMA3},       {"llama-v3", PRE_LLAMA3},
    {"dbrx", PRE_LLAMA3},           {"smaug-bpe", PRE_LLAMA3},    {"falcon3", PRE_LLAMA3},
    {"qwen2", PRE_QWEN2},           {"stablelm2", PRE_QWEN2},     {"deepseek-r1-qwen", PRE_QWEN2},
};

const char *gguf_tok_pre_names(void) {
    return "default, gpt-2, gpt2, mpt, olmo, jais, smollm, starcoder, refact, command-r, codeshell, exaone, "
           "llama-bpe, llama3, llama-v3, dbrx, smaug-bpe, falcon3, qwen2, stablelm2, deepseek-r1-qwen";
}

// ---- the vocabulary, validated, with a string -> id table ----
struct vocab {
    int n;
    char **tok;        // NUL-terminated copies (in one block)
    size_t *len;
    int32_t *type;     // llama.cpp token type per id (NORMAL when the GGUF has none)
    float *score;      // NULL unless tokenizer.ggml.scores exists
    int32_t *slot;     // open addressing: id or -1
    uint32_t cap;
    char *block;
};

static uint64_t hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h;
}

static int32_t vocab_get(const struct vocab *v, const char *s, size_t n) {
    for (uint32_t i = (uint32_t)hash(s, n) & (v->cap - 1);; i = (i + 1) & (v->cap - 1)) {
        int32_t id = v->slot[i];
        if (id < 0) return -1;
        if (v->len[id] == n && !memcmp(v->tok[id], s, n)) return id;
    }
}

static void vocab_free(struct vocab *v) {
    free(v->tok), free(v->len), free(v->type), free(v->score), free(v->slot), free(v->block);
    memset(v, 0, sizeof *v);
}

// "<0xXX>" with two hexadecimal digits: the only form a BYTE-typed token has.
static int is_byte_token(const char *t, size_t n) {
    return n == 6 && !memcmp(t, "<0x", 3) && isxdigit((unsigned char)t[3]) && isxdigit((unsigned char)t[4]) && t[5] == '>';
}

// Reads tokens, token types and scores; every token non-empty, valid UTF-8 without NUL, unique.
static int vocab_load(struct vocab *v, const struct gguf *g, struct err *e) {
    memset(v, 0, sizeof *v);
    const struct gguf_kv *tk, *ty, *sc;
    int rc;
    if ((rc = gguf_get_arr(g, "tokenizer.ggml.tokens", GGUF_STR, &tk, 1, e)) ||
        (rc = gguf_get_arr(g, "tokenizer.ggml.token_type", GGUF_I64, &ty, 0, e)) ||
        (rc = gguf_get_arr(g, "tokenizer.ggml.scores", GGUF_F64, &sc, 0, e)))
        return rc;
    if (tk->n == 0 || tk->n > (1u << 24))
        return err_set(e, ERR_FORMAT, "%s: key 'tokenizer.ggml.tokens': %llu tokens (must be 1..16777216)", g->path,
                       (unsigned long long)tk->n);
    v->n = (int)tk->n;
    if ((ty && ty->n != tk->n) || (sc && sc->n != tk->n))
        return err_set(e, ERR_FORMAT, "%s: key '%s' has %llu entries but tokenizer.ggml.tokens has %d", g->path,
                       ty && ty->n != tk->n ? ty->key : sc->key, (unsigned long long)(ty && ty->n != tk->n ? ty->n : sc->n),
                       v->n);
    size_t total = 0;
    for (int i = 0; i < v->n; i++) total += tk->strs[i].len + 1;
    for (v->cap = 16; v->cap < 2u * (uint32_t)v->n; v->cap *= 2) {}
    v->tok = malloc((size_t)v->n * sizeof *v->tok);
    v->len = malloc((size_t)v->n * sizeof *v->len);
    v->type = malloc((size_t)v->n * sizeof *v->type);
    v->score = sc ? malloc((size_t)v->n * sizeof *v->score) : NULL;
    v->slot = malloc((size_t)v->cap * sizeof *v->slot);
    v->block = malloc(total);
    if (!v->tok || !v->len || !v->type || (sc && !v->score) || !v->slot || !v->block)
        return err_set(e, ERR_NOMEM, "%s: out of memory for %d tokens", g->path, v->n);
    memset(v->slot, 0xff, (size_t)v->cap * sizeof *v->slot);
    char *p = v->block;
    for (int i = 0; i < v->n; i++) {
        const struct gguf_str *s = &tk->strs[i];
        if (s->len == 0 || !utf8_valid(s->s, s->len) || memchr(s->s, 0, s->len))
            return err_set(e, ERR_FORMAT, "%s: key 'tokenizer.ggml.tokens': token %d is %s", g->path, i,
                           s->len == 0 ? "empty" : "not valid UTF-8 (or holds a NUL byte)");
        memcpy(p, s->s, s->len);
        p[s->len] = 0;
        v->tok[i] = p, v->len[i] = s->len;
        p += s->len + 1;
        v->type[i] = ty ? (int32_t)gguf_kv_int(ty, (uint64_t)i) : TT_NORMAL;
        if (v->type[i] < 0 || v->type[i] > TT_BYTE)
            return err_set(e, ERR_FORMAT, "%s: key 'tokenizer.ggml.token_type': token %d has type %d (must be 0..6)",
                           g->path, i, v->type[i]);
        if (v->type[i] == 0) v->type[i] = TT_NORMAL; // llama.cpp's UNDEFINED: an ordinary token
        if (v->type[i] == TT_BYTE && !is_byte_token(v->tok[i], v->len[i])) // llama.cpp asserts on it
            return err_set(e, ERR_FORMAT, "%s: key 'tokenizer.ggml.token_type': token %d '%.40s' is typed BYTE (6) but is "
                           "not of the form <0xXX>", g->path, i, v->tok[i]);
        if (v->score) {
            const double d = gguf_kv_float(sc, (uint64_t)i);
            if (!isfinite(d) || !isfinite((float)d)) // a NaN score makes every merge comparison false
                return err_set(e, ERR_FORMAT, "%s: key 'tokenizer.ggml.scores': token %d '%.40s' has score %g (must be "
                               "finite)", g->path, i, v->tok[i], d);
            v->score[i] = (float)d;
        }
        uint32_t h = (uint32_t)hash(v->tok[i], v->len[i]) & (v->cap - 1);
        for (; v->slot[h] >= 0; h = (h + 1) & (v->cap - 1))
            if (v->len[v->slot[h]] == v->len[i] && !memcmp(v->tok[v->slot[h]], v->tok[i], v->len[i]))
                return err_set(e, ERR_FORMAT, "%s: key 'tokenizer.ggml.tokens': token %d '%s' duplicates token %d",
                               g->path, i, v->tok[i], v->slot[h]);
        v->slot[h] = i;
    }
    return 0;
}

// ---- JSON pieces ----
static cJSON *obj_type(const char *type) {
    cJSON *o = cJSON_CreateObject();
    if (o) cJSON_AddStringToObject(o, "type", type);
    return o;
}

static cJSON *bytelevel(int use_regex) {
    cJSON *o = obj_type("ByteLevel");
    cJSON_AddFalseToObject(o, "add_prefix_space");
    cJSON_AddTrueToObject(o, "trim_offsets");
    cJSON_AddBoolToObject(o, "use_regex", use_regex);
    return o;
}

static cJSON *seq(const char *key, cJSON *a, cJSON *b) {
    cJSON *o = obj_type("Sequence"), *arr = cJSON_AddArrayToObject(o, key);
    if (a) cJSON_AddItemToArray(arr, a);
    if (b) cJSON_AddItemToArray(arr, b);
    return o;
}

static cJSON *pattern(const char *kind, const char *s) {
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, kind, s);
    return p;
}

static cJSON *pre_tokenizer(enum pre_kind k) {
    if (k == PRE_GPT2) return bytelevel(1);
    if (k == PRE_DIGITS_GPT2) {
        cJSON *d = obj_type("Digits");
        cJSON_AddTrueToObject(d, "individual_digits");
        return seq("pretokenizers", d, bytelevel(1));
    }
    cJSON *sp = obj_type("Split");
    cJSON_AddItemToObject(sp, "pattern", pattern("Regex", k == PRE_LLAMA3 ? RE_LLAMA3 : RE_QWEN2));
    cJSON_AddStringToObject(sp, "behavior", "Isolated");
    cJSON_AddFalseToObject(sp, "invert");
    return seq("pretokenizers", sp, bytelevel(0));
}

// TemplateProcessing: [BOS] $A [EOS] (pair: the same around $B), as HF writes it.
static cJSON *template_post(const struct vocab *v, int bos, int eos) {
    cJSON *post = obj_type("TemplateProcessing");
    const char *parts[2][4] = {{bos >= 0 ? v->tok[bos] : NULL, "A", eos >= 0 ? v->tok[eos] : NULL, NULL},
                               {bos >= 0 ? v->tok[bos] : NULL, "B", eos >= 0 ? v->tok[eos] : NULL, NULL}};
    cJSON *single = cJSON_AddArrayToObject(post, "single"), *pair = cJSON_AddArrayToObject(post, "pair");
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < 3; k++) {
            if (!parts[s][k]) continue;
            cJSON *it = cJSON_CreateObject(), *in = cJSON_AddObjectToObject(it, k == 1 ? "Sequence" : "SpecialToken");
            cJSON_AddStringToObject(in, "id", parts[s][k]);
            cJSON_AddNumberToObject(in, "type_id", s);
            if (s == 0) cJSON_AddItemToArray(single, cJSON_Duplicate(it, 1));
            cJSON_AddItemToArray(pair, it);
        }
    cJSON *sts = cJSON_AddObjectToObject(post, "special_tokens");
    int ids[2] = {bos, eos};
    for (int k = 0; k < 2; k++) {
        if (ids[k] < 0 || cJSON_GetObjectItemCaseSensitive(sts, v->tok[ids[k]])) continue;
        cJSON *t = cJSON_AddObjectToObject(sts, v->tok[ids[k]]);
        cJSON_AddStringToObject(t, "id", v->tok[ids[k]]);
        cJSON_AddItemToObject(t, "ids", cJSON_CreateIntArray(&ids[k], 1));
        const char *s = v->tok[ids[k]];
        cJSON_AddItemToObject(t, "tokens", cJSON_CreateStringArray(&s, 1));
    }
    return post;
}

static cJSON *added_tokens(const struct vocab *v) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < v->n; i++) {
        int t = v->type[i];
        if (t != TT_CONTROL && t != TT_UNKNOWN && t != TT_USER_DEFINED) continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "id", i);
        cJSON_AddStringToObject(o, "content", v->tok[i]);
        cJSON_AddFalseToObject(o, "single_word");
        cJSON_AddFalseToObject(o, "lstrip");
        cJSON_AddFalseToObject(o, "rstrip");
        cJSON_AddFalseToObject(o, "normalized");
        cJSON_AddBoolToObject(o, "special", t != TT_USER_DEFINED);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

static cJSON *pair_json(const char *a, size_t na, const char *b) {
    char *x = malloc(na + 1);
    if (!x) return NULL;
    memcpy(x, a, na);
    x[na] = 0;
    const char *pv[2] = {x, b};
    cJSON *r = cJSON_CreateStringArray(pv, 2);
    free(x);
    return r;
}

// gpt2 merges "a b": both parts and their concatenation must be tokens (as HF's BPE requires).
static int gpt2_merges(const struct gguf *g, const struct vocab *v, cJSON *model, struct err *e) {
    const struct gguf_kv *mk;
    int rc = gguf_get_arr(g, "tokenizer.ggml.merges", GGUF_STR, &mk, 1, e);
    if (rc) return rc;
    cJSON *arr = cJSON_AddArrayToObject(model, "merges");
    char *cat = NULL;
    for (uint64_t i = 0; i < mk->n; i++) {
        const struct gguf_str *s = &mk->strs[i];
        const char *sp = s->len > 1 ? memchr(s->s + 1, ' ', s->len - 1) : NULL; // llama.cpp: find(' ', 1)
        size_t na = sp ? (size_t)(sp - s->s) : 0, nb = sp ? s->len - na - 1 : 0;
        int32_t a = sp ? vocab_get(v, s->s, na) : -1, b = sp ? vocab_get(v, sp + 1, nb) : -1;
        char *nc = realloc(cat, s->len + 1);
        if (!nc) { free(cat); return err_set(e, ERR_NOMEM, "%s: out of memory", g->path); }
        cat = nc;
        if (sp) memcpy(cat, s->s, na), memcpy(cat + na, sp + 1, nb);
        if (a < 0 || b < 0 || vocab_get(v, cat, na + nb) < 0) {
            char shown[96];
            snprintf(shown, sizeof shown, "%.*s", (int)(s->len < 80 ? s->len : 80), s->s);
            free(cat);
            return err_set(e, ERR_FORMAT, "%s: key 'tokenizer.ggml.merges': merge %llu '%s' %s", g->path,
                           (unsigned long long)i, shown, !sp ? "is not two tokens separated by a space"
                                                             : "has a part or result that is not a token");
        }
        cJSON *pr = pair_json(s->s, na, v->tok[b]);
        if (!pr) { free(cat); return err_set(e, ERR_NOMEM, "%s: out of memory", g->path); }
        cJSON_AddItemToArray(arr, pr);
    }
    free(cat);
    return 0;
}

// ---- SentencePiece-style merges from scores ----
struct spm_merge { float score; int32_t id; uint32_t k; };
static int spm_cmp(const void *pa, const void *pb) {
    const struct spm_merge *a = pa, *b = pb;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    if (a->id != b->id) return a->id < b->id ? -1 : 1;
    return (a->k > b->k) - (a->k < b->k);
}

// Every split of a NORMAL piece into two NORMAL pieces, highest score first (llama.cpp's SPM
// tokenizer merges the adjacent pair whose concatenation has the highest score).
static int spm_merges(const struct gguf *g, const struct vocab *v, cJSON *model, struct err *e) {
    if (!v->score) return err_set(e, ERR_FORMAT, "%s: missing key 'tokenizer.ggml.scores' (needed by a 'llama' vocabulary)", g->path);
    struct spm_merge *m = NULL;
    size_t nm = 0, cap = 0;
    for (int i = 0; i < v->n; i++) {
        if (v->type[i] != TT_NORMAL) continue;
        for (size_t k = 1; k < v->len[i]; k++) {
            if (((uint8_t)v->tok[i][k] & 0xc0) == 0x80) continue; // code point boundaries only
            int32_t a = vocab_get(v, v->tok[i], k), b = vocab_get(v, v->tok[i] + k, v->len[i] - k);
            if (a < 0 || b < 0 || v->type[a] != TT_NORMAL || v->type[b] != TT_NORMAL) continue;
            if (nm == cap) {
                cap = cap ? 2 * cap : 4096;
                struct spm_merge *nmv = realloc(m, cap * sizeof *nmv);
                if (!nmv) { free(m); return err_set(e, ERR_NOMEM, "%s: out of memory", g->path); }
                m = nmv;
            }
            m[nm++] = (struct spm_merge){v->score[i], i, (uint32_t)k};
        }
    }
    if (nm) qsort(m, nm, sizeof *m, spm_cmp);
    cJSON *arr = cJSON_AddArrayToObject(model, "merges");
    for (size_t j = 0; j < nm; j++) {
        cJSON *pr = pair_json(v->tok[m[j].id], m[j].k, v->tok[m[j].id] + m[j].k);
        if (!pr) { free(m); return err_set(e, ERR_NOMEM, "%s: out of memory", g->path); }
        cJSON_AddItemToArray(arr, pr);
    }
    free(m);
    return 0;
}

// ---- special tokens ----
struct specials { int bos, eos, unk, pad, add_bos, add_eos, space_prefix; };

// An id key: absent or -1 (llama.cpp's LLAMA_TOKEN_NULL, stored as u32 0xffffffff) -> -1.
static int special_id(const struct gguf *g, const char *key, int n, int *out, struct err *e) {
    int64_t v = -1;
    int rc = gguf_get_int(g, key, &v, 0, e);
    if (rc) return rc;
    if (v == -1 || v == 0xffffffffLL) v = -1;
    else if (v < 0 || v >= n) return err_set(e, ERR_FORMAT, "%s: key '%s' = %lld is not a token id (vocabulary of %d)",
                                             g->path, key, (long long)v, n);
    *out = (int)v;
    return 0;
}

static int read_specials(const struct gguf *g, const struct vocab *v, int spm, enum pre_kind pk, struct specials *s,
                         struct err *e) {
    s->bos = s->eos = s->unk = s->pad = -1;
    s->add_bos = spm || pk == PRE_LLAMA3; // llama.cpp's defaults when the GGUF does not say
    s->add_eos = 0;
    s->space_prefix = spm;
    int rc;
    if ((rc = special_id(g, "tokenizer.ggml.bos_token_id", v->n, &s->bos, e)) ||
        (rc = special_id(g, "tokenizer.ggml.eos_token_id", v->n, &s->eos, e)) ||
        (rc = special_id(g, "tokenizer.ggml.unknown_token_id", v->n, &s->unk, e)) ||
        (rc = special_id(g, "tokenizer.ggml.padding_token_id", v->n, &s->pad, e)) ||
        (rc = gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &s->add_bos, 0, e)) ||
        (rc = gguf_get_bool(g, "tokenizer.ggml.add_eos_token", &s->add_eos, 0, e)) ||
        (rc = gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &s->space_prefix, 0, e)))
        return rc;
    if (spm && s->unk < 0) s->unk = 0; // llama.cpp: special_unk_id defaults to 0 for SPM
    if (s->add_bos && s->bos < 0)
        return err_set(e, ERR_FORMAT, "%s: tokenizer.ggml.add_bos_token is true but there is no bos_token_id", g->path);
    if (s->add_eos && s->eos < 0)
        return err_set(e, ERR_FORMAT, "%s: tokenizer.ggml.add_eos_token is true but there is no eos_token_id", g->path);
    return 0;
}

static cJSON *spm_normalizer(int prefix) {
    cJSON *rep = obj_type("Replace");
    cJSON_AddItemToObject(rep, "pattern", pattern("String", " "));
    cJSON_AddStringToObject(rep, "content", "\xe2\x96\x81");
    cJSON *pre = NULL;
    if (prefix) {
        pre = obj_type("Prepend");
        cJSON_AddStringToObject(pre, "prepend", "\xe2\x96\x81");
    }
    return seq("normalizers", pre, rep);
}

static cJSON *spm_decoder(int prefix) {
    cJSON *d = obj_type("Sequence"), *arr = cJSON_AddArrayToObject(d, "decoders");
    cJSON *rep = obj_type("Replace");
    cJSON_AddItemToObject(rep, "pattern", pattern("String", "\xe2\x96\x81"));
    cJSON_AddStringToObject(rep, "content", " ");
    cJSON_AddItemToArray(arr, rep);
    cJSON_AddItemToArray(arr, obj_type("ByteFallback"));
    cJSON_AddItemToArray(arr, obj_type("Fuse"));
    if (prefix) {
        cJSON *st = obj_type("Strip");
        cJSON_AddStringToObject(st, "content", " ");
        cJSON_AddNumberToObject(st, "start", 1);
        cJSON_AddNumberToObject(st, "stop", 0);
        cJSON_AddItemToArray(arr, st);
    }
    return d;
}

static cJSON *bytelevel_decoder(void) {
    cJSON *d = obj_type("ByteLevel");
    cJSON_AddTrueToObject(d, "add_prefix_space");
    cJSON_AddTrueToObject(d, "trim_offsets");
    cJSON_AddTrueToObject(d, "use_regex");
    return d;
}

// The "model" object without merges.
static cJSON *bpe_model(const struct vocab *v, int unk, int fallback, int ignore_merges) {
    cJSON *m = obj_type("BPE");
    cJSON_AddNullToObject(m, "dropout");
    if (unk >= 0) cJSON_AddStringToObject(m, "unk_token", v->tok[unk]);
    else cJSON_AddNullToObject(m, "unk_token");
    cJSON_AddNullToObject(m, "continuing_subword_prefix");
    cJSON_AddNullToObject(m, "end_of_word_suffix");
    cJSON_AddBoolToObject(m, "fuse_unk", fallback);
    cJSON_AddBoolToObject(m, "byte_fallback", fallback);
    cJSON_AddBoolToObject(m, "ignore_merges", ignore_merges);
    cJSON *voc = cJSON_AddObjectToObject(m, "vocab");
    for (int i = 0; i < v->n; i++) cJSON_AddNumberToObject(voc, v->tok[i], i);
    return m;
}

static void add_tok_or_null(cJSON *o, const char *key, const struct vocab *v, int id) {
    if (id >= 0) cJSON_AddStringToObject(o, key, v->tok[id]);
    else cJSON_AddNullToObject(o, key);
}

static char *config_json(const struct gguf *g, const struct vocab *v, const struct specials *s, const char *model,
                         const char *pre, enum gguf_tok_policy policy) {
    cJSON *c = cJSON_CreateObject();
    cJSON_AddBoolToObject(c, "add_bos_token", s->add_bos);
    cJSON_AddBoolToObject(c, "add_eos_token", s->add_eos);
    add_tok_or_null(c, "bos_token", v, s->bos);
    add_tok_or_null(c, "eos_token", v, s->eos);
    add_tok_or_null(c, "unk_token", v, s->unk);
    add_tok_or_null(c, "pad_token", v, s->pad);
    cJSON_AddFalseToObject(c, "clean_up_tokenization_spaces");
    struct gguf_str arch = {0};
    struct err ig = {0};
    int64_t ctx = 0;
    char key[160];
    if (!gguf_get_str(g, "general.architecture", &arch, 0, &ig) && arch.len && arch.len < 100) {
        snprintf(key, sizeof key, "%.*s.context_length", (int)arch.len, arch.s);
        if (!gguf_get_int(g, key, &ctx, 0, &ig) && ctx > 0) cJSON_AddNumberToObject(c, "model_max_length", (double)ctx);
    }
    cJSON_AddStringToObject(c, "tokenizer_class", "PreTrainedTokenizerFast");
    struct gguf_str tpl = {0};
    if (!gguf_get_str(g, "tokenizer.chat_template", &tpl, 0, &ig) && tpl.len && utf8_valid(tpl.s, tpl.len) &&
        !memchr(tpl.s, 0, tpl.len)) {
        char *t = malloc(tpl.len + 1);
        if (t) {
            memcpy(t, tpl.s, tpl.len);
            t[tpl.len] = 0;
            cJSON_AddStringToObject(c, "chat_template", t);
            free(t);
        }
    }
    cJSON *src = cJSON_AddObjectToObject(c, "_gguf");
    cJSON_AddStringToObject(src, "tokenizer_model", model);
    cJSON_AddStringToObject(src, "tokenizer_pre", pre);
    cJSON_AddStringToObject(src, "policy", policy == GGUF_TOK_TRANSFORMERS ? "transformers" : "published");
    char *out = cJSON_Print(c);
    cJSON_Delete(c);
    return out;
}

static int find_pre(const char *pre, enum pre_kind *k) {
    for (size_t i = 0; i < sizeof pre_table / sizeof pre_table[0]; i++)
        if (!strcmp(pre_table[i].name, pre)) { *k = pre_table[i].kind; return 0; }
    return -1;
}

// tokenizer.ggml.model and .pre as NUL-terminated strings (bounded).
static int read_names(const struct gguf *g, struct gguf_tok_out *out, struct err *e) {
    struct gguf_str m = {0}, p = {0};
    int rc;
    if ((rc = gguf_get_str(g, "tokenizer.ggml.model", &m, 1, e)) || (rc = gguf_get_str(g, "tokenizer.ggml.pre", &p, 0, e)))
        return rc;
    snprintf(out->model, sizeof out->model, "%.*s", (int)(m.len < 15 ? m.len : 15), m.s);
    snprintf(out->pre, sizeof out->pre, "%.*s", (int)(p.len < 47 ? p.len : 47), p.s);
    if (strlen(out->model) != m.len || strlen(out->pre) != p.len)
        return err_set(e, ERR_UNSUPPORTED, "%s: tokenizer.ggml.model/pre '%s'/'%s' is not supported", g->path, out->model,
                       out->pre);
    if (strcmp(out->model, "gpt2") && strcmp(out->model, "llama"))
        return err_set(e, ERR_UNSUPPORTED, "%s: key 'tokenizer.ggml.model' = '%s' is not supported (supported: gpt2, llama)",
                       g->path, out->model);
    return 0;
}

int gguf_tokenizer_build(const struct gguf *g, enum gguf_tok_policy policy, struct gguf_tok_out *out, struct err *e) {
    memset(out, 0, sizeof *out);
    struct vocab v;
    struct specials s;
    enum pre_kind pk = PRE_GPT2;
    cJSON *root = NULL;
    int rc = read_names(g, out, e);
    if (rc) return rc;
    int spm = !strcmp(out->model, "llama");
    if (!spm && find_pre(out->pre[0] ? out->pre : "default", &pk))
        return err_set(e, ERR_UNSUPPORTED, "%s: key 'tokenizer.ggml.pre' = '%s' is not supported (supported: %s)", g->path,
                       out->pre, gguf_tok_pre_names());
    if ((rc = vocab_load(&v, g, e))) goto done;
    if ((rc = read_specials(g, &v, spm, pk, &s, e))) goto done;
    struct gguf_str arch = {0};
    struct err ig = {0};
    gguf_get_str(g, "general.architecture", &arch, 0, &ig);
    int compat = policy == GGUF_TOK_TRANSFORMERS && !spm && arch.len == 5 && !memcmp(arch.s, "llama", 5);
    if (compat) { // transformers 4.45 GGUFLlamaConverter on a gpt2 vocabulary (see gguf_tokenizer.h)
        pk = PRE_GPT2;
        s.add_bos = s.bos >= 0;
        s.add_eos = 0;
    }
    root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "version", "1.0");
    cJSON_AddNullToObject(root, "truncation");
    cJSON_AddNullToObject(root, "padding");
    cJSON_AddItemToObject(root, "added_tokens", added_tokens(&v));
    if (spm) cJSON_AddItemToObject(root, "normalizer", spm_normalizer(s.space_prefix));
    else if (pk == PRE_QWEN2) cJSON_AddItemToObject(root, "normalizer", obj_type("NFC"));
    else cJSON_AddNullToObject(root, "normalizer");
    if (spm) cJSON_AddNullToObject(root, "pre_tokenizer");
    else cJSON_AddItemToObject(root, "pre_tokenizer", pre_tokenizer(pk));
    if (s.add_bos || s.add_eos) cJSON_AddItemToObject(root, "post_processor", template_post(&v, s.add_bos ? s.bos : -1, s.add_eos ? s.eos : -1));
    else cJSON_AddNullToObject(root, "post_processor");
    cJSON_AddItemToObject(root, "decoder", spm ? spm_decoder(s.space_prefix) : bytelevel_decoder());
    cJSON *model = bpe_model(&v, spm || compat ? s.unk : -1, spm || compat, pk == PRE_LLAMA3);
    cJSON_AddItemToObject(root, "model", model);
    if ((rc = spm ? spm_merges(g, &v, model, e) : gpt2_merges(g, &v, model, e))) goto done;
    out->tokenizer_json = cJSON_PrintUnformatted(root);
    out->config_json = config_json(g, &v, &s, out->model, out->pre, policy);
    if (!out->tokenizer_json || !out->config_json) { rc = err_set(e, ERR_NOMEM, "%s: out of memory", g->path); goto done; }
    out->n_vocab = v.n;
    out->bos_id = s.bos, out->eos_id = s.eos, out->add_bos = s.add_bos, out->add_eos = s.add_eos;
done:
    cJSON_Delete(root);
    vocab_free(&v);
    if (rc) gguf_tok_out_free(out);
    return rc;
}

void gguf_tok_out_free(struct gguf_tok_out *o) {
    if (!o) return;
    free(o->tokenizer_json);
    free(o->config_json);
    memset(o, 0, sizeof *o);
}
