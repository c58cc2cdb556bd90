// load.c: tokenizer.json (+ tokenizer_config.json) -> struct tokenizer: the model (BPE vocabulary
// and merges, byte fallback), added tokens, normalizer / pre-tokenizer / decoder chains
// flattened into steps, and the single-sequence post-processor template. tok_load and tok_free
// of tokenizer.h live here; errors name the file and the JSON path of the bad value.
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_util.h"
#include "base/sha256.h"
#include "tokenizer/internal.h"

extern const char *tok_gpt2_regex;

// ---- loading helpers ----
struct loadctx {
    struct tokenizer *t;
    const char *ctx; // file name for messages
    struct err *e;
};

static int copy_str(struct loadctx *L, const char *s, size_t len, char **out) {
    *out = pool_add(&L->t->pool, s, len);
    return *out ? 0 : err_set(L->e, ERR_NOMEM, "%s: out of memory", L->ctx);
}

// "type" of a component; where names the component (normalizer, pre_tokenizer, ...).
static int comp_type(struct loadctx *L, const cJSON *o, const char *where, const char **type) {
    char ctx[256];
    snprintf(ctx, sizeof ctx, "%s: %s", L->ctx, where);
    if (!cJSON_IsObject(o)) return err_set(L->e, ERR_FORMAT, "%s: expected an object, got %s", ctx, json_brief(o));
    return json_need_str(o, "type", type, ctx, L->e);
}

// Pattern {"String": s} or {"Regex": r}: literal into (*lit, *litlen) or compiled regex into re.
static int parse_pattern(struct loadctx *L, const cJSON *o, const char *where, char **lit, size_t *litlen,
                         struct tok_regex *re) {
    char ctx[256];
    snprintf(ctx, sizeof ctx, "%s: %s.pattern", L->ctx, where);
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "pattern");
    if (!cJSON_IsObject(p)) return err_set(L->e, ERR_FORMAT, "%s: expected {\"String\"|\"Regex\": ...}, got %s", ctx, json_brief(p));
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(p, "String");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(p, "Regex");
    if (cJSON_IsString(s)) {
        *litlen = strlen(s->valuestring);
        return copy_str(L, s->valuestring, *litlen, lit);
    }
    if (cJSON_IsString(r)) {
        if (!re) return err_set(L->e, ERR_UNSUPPORTED, "%s: Regex patterns are not supported here", ctx);
        return regex_compile(re, r->valuestring, strlen(r->valuestring), ctx, L->e);
    }
    return err_set(L->e, ERR_FORMAT, "%s: expected {\"String\"|\"Regex\": ...}, got %s", ctx, json_brief(p));
}

static int get_bool_def(struct loadctx *L, const cJSON *o, const char *key, int def, const char *where, int *out) {
    char ctx[256];
    snprintf(ctx, sizeof ctx, "%s: %s", L->ctx, where);
    return json_opt_bool(o, key, out, def, ctx, L->e);
}

static int parse_scheme(struct loadctx *L, const cJSON *o, const char *where, enum prepend_scheme *sc) {
    char ctx[256];
    snprintf(ctx, sizeof ctx, "%s: %s", L->ctx, where);
    const char *s = NULL;
    int rc = json_opt_str(o, "prepend_scheme", &s, NULL, ctx, L->e);
    if (rc) return rc;
    if (s) {
        if (!strcmp(s, "always")) *sc = PREPEND_ALWAYS;
        else if (!strcmp(s, "first")) *sc = PREPEND_FIRST;
        else if (!strcmp(s, "never")) *sc = PREPEND_NEVER;
        else return err_set(L->e, ERR_FORMAT, "%s: field 'prepend_scheme': unknown value '%s'", ctx, s);
        return 0;
    }
    int aps = 1; // legacy field (tokenizers < 0.15)
    rc = json_opt_bool(o, "add_prefix_space", &aps, 1, ctx, L->e);
    *sc = aps ? PREPEND_ALWAYS : PREPEND_NEVER;
    return rc;
}

static int parse_repl(struct loadctx *L, const cJSON *o, const char *where, char **repl, size_t *len) {
    char ctx[256];
    snprintf(ctx, sizeof ctx, "%s: %s", L->ctx, where);
    const char *s;
    int rc = json_opt_str(o, "replacement", &s, "\xe2\x96\x81", ctx, L->e); // U+2581
    if (rc) return rc;
    uint32_t cp;
    size_t n = strlen(s);
    if (n == 0 || !utf8_valid(s, n) || (size_t)utf8_next(s, n, &cp) != n)
        return err_set(L->e, ERR_FORMAT, "%s: field 'replacement': expected one character, got '%s'", ctx, s);
    *len = n;
    return copy_str(L, s, n, repl);
}

// ---- normalizer ----
static int parse_normalizer(struct loadctx *L, const cJSON *o, int depth) {
    struct tokenizer *t = L->t;
    if (!o || cJSON_IsNull(o)) return 0;
    const char *type;
    int rc = comp_type(L, o, "normalizer", &type);
    if (rc) return rc;
    if (!strcmp(type, "Sequence")) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "normalizers");
        if (!cJSON_IsArray(arr) || depth > 8)
            return err_set(L->e, ERR_FORMAT, "%s: normalizer Sequence: field 'normalizers': expected an array", L->ctx);
        const cJSON *c;
        cJSON_ArrayForEach(c, arr) if ((rc = parse_normalizer(L, c, depth + 1))) return rc;
        return 0;
    }
    if (t->n_norm == TOK_MAX_STEPS) return err_set(L->e, ERR_RANGE, "%s: too many normalizers", L->ctx);
    struct norm_step *st = &t->norm[t->n_norm];
    memset(st, 0, sizeof *st);
    if (!strcmp(type, "NFC")) st->type = NORM_NFC;
    else if (!strcmp(type, "NFD")) st->type = NORM_NFD;
    else if (!strcmp(type, "NFKC")) st->type = NORM_NFKC;
    else if (!strcmp(type, "NFKD")) st->type = NORM_NFKD;
    else if (!strcmp(type, "Lowercase")) st->type = NORM_LOWERCASE;
    else if (!strcmp(type, "Prepend")) {
        st->type = NORM_PREPEND;
        const char *s;
        char ctx[256];
        snprintf(ctx, sizeof ctx, "%s: normalizer Prepend", L->ctx);
        if ((rc = json_need_str(o, "prepend", &s, ctx, L->e))) return rc;
        st->alen = strlen(s);
        if ((rc = copy_str(L, s, st->alen, &st->a))) return rc;
    } else if (!strcmp(type, "Replace")) {
        st->type = NORM_REPLACE;
        const char *s;
        char ctx[256];
        snprintf(ctx, sizeof ctx, "%s: normalizer Replace", L->ctx);
        if ((rc = json_need_str(o, "content", &s, ctx, L->e))) return rc;
        st->blen = strlen(s);
        if ((rc = copy_str(L, s, st->blen, &st->b))) return rc;
        t->n_norm++; // counted before the regex compiles so tok_free releases it on error
        return parse_pattern(L, o, "normalizer Replace", &st->a, &st->alen, &st->re);
    } else if (!strcmp(type, "Strip")) {
        st->type = NORM_STRIP;
        if ((rc = get_bool_def(L, o, "strip_left", 1, "normalizer Strip", &st->left))) return rc;
        if ((rc = get_bool_def(L, o, "strip_right", 1, "normalizer Strip", &st->right))) return rc;
    } else {
        return err_set(L->e, ERR_UNSUPPORTED, "%s: normalizer type '%s' is not supported", L->ctx, type);
    }
    t->n_norm++;
    return 0;
}

// ---- pre-tokenizer ----
static int parse_pretok(struct loadctx *L, const cJSON *o, int depth) {
    struct tokenizer *t = L->t;
    if (!o || cJSON_IsNull(o)) return 0;
    const char *type;
    int rc = comp_type(L, o, "pre_tokenizer", &type);
    if (rc) return rc;
    if (!strcmp(type, "Sequence")) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "pretokenizers");
        if (!cJSON_IsArray(arr) || depth > 8)
            return err_set(L->e, ERR_FORMAT, "%s: pre_tokenizer Sequence: field 'pretokenizers': expected an array", L->ctx);
        const cJSON *c;
        cJSON_ArrayForEach(c, arr) if ((rc = parse_pretok(L, c, depth + 1))) return rc;
        return 0;
    }
    if (t->n_pretok == TOK_MAX_STEPS) return err_set(L->e, ERR_RANGE, "%s: too many pre-tokenizers", L->ctx);
    struct pretok_step *st = &t->pretok[t->n_pretok];
    memset(st, 0, sizeof *st);
    char ctx[256];
    snprintf(ctx, sizeof ctx, "%s: pre_tokenizer %s", L->ctx, type);
    if (!strcmp(type, "Split")) {
        st->type = PT_SPLIT;
        const char *b;
        if ((rc = json_need_str(o, "behavior", &b, ctx, L->e))) return rc;
        if (!strcmp(b, "Removed")) st->behavior = SPLIT_REMOVED;
        else if (!strcmp(b, "Isolated")) st->behavior = SPLIT_ISOLATED;
        else if (!strcmp(b, "MergedWithPrevious")) st->behavior = SPLIT_MERGED_PREV;
        else if (!strcmp(b, "MergedWithNext")) st->behavior = SPLIT_MERGED_NEXT;
        else if (!strcmp(b, "Contiguous")) st->behavior = SPLIT_CONTIGUOUS;
        else return err_set(L->e, ERR_FORMAT, "%s: field 'behavior': unknown value '%s'", ctx, b);
        if ((rc = get_bool_def(L, o, "invert", 0, "pre_tokenizer Split", &st->invert))) return rc;
        t->n_pretok++;
        return parse_pattern(L, o, "pre_tokenizer Split", &st->lit, &st->litlen, &st->re);
    } else if (!strcmp(type, "ByteLevel")) {
        st->type = PT_BYTELEVEL;
        if ((rc = get_bool_def(L, o, "add_prefix_space", 1, "pre_tokenizer ByteLevel", &st->add_prefix_space))) return rc;
        if ((rc = get_bool_def(L, o, "use_regex", 1, "pre_tokenizer ByteLevel", &st->use_regex))) return rc;
        t->n_pretok++;
        if (st->use_regex) return regex_compile(&st->re, tok_gpt2_regex, strlen(tok_gpt2_regex), ctx, L->e);
        return 0;
    } else if (!strcmp(type, "Metaspace")) {
        st->type = PT_METASPACE;
        if ((rc = parse_repl(L, o, "pre_tokenizer Metaspace", &st->repl, &st->repllen))) return rc;
        if ((rc = parse_scheme(L, o, "pre_tokenizer Metaspace", &st->scheme))) return rc;
        if ((rc = get_bool_def(L, o, "split", 1, "pre_tokenizer Metaspace", &st->split))) return rc;
    } else if (!strcmp(type, "Digits")) {
        st->type = PT_DIGITS;
        if ((rc = get_bool_def(L, o, "individual_digits", 0, "pre_tokenizer Digits", &st->individual))) return rc;
    } else if (!strcmp(type, "Whitespace") || !strcmp(type, "WhitespaceSplit")) {
        // Whitespace = Split(\w+|[^\w\s]+, Removed, invert); WhitespaceSplit = Split(\s+, Removed).
        int ws = !strcmp(type, "Whitespace");
        const char *pat = ws ? "\\w+|[^\\w\\s]+" : "\\s+";
        st->type = PT_SPLIT;
        st->behavior = SPLIT_REMOVED;
        st->invert = ws;
        t->n_pretok++;
        return regex_compile(&st->re, pat, strlen(pat), ctx, L->e);
    } else {
        return err_set(L->e, ERR_UNSUPPORTED, "%s: pre_tokenizer type '%s' is not supported", L->ctx, type);
    }
    t->n_pretok++;
    return 0;
}

// ---- decoder ----
static int parse_decoder(struct loadctx *L, const cJSON *o, int depth) {
    struct tokenizer *t = L->t;
    if (!o || cJSON_IsNull(o)) return 0;
    t->has_decoder = 1;
    const char *type;
    int rc = comp_type(L, o, "decoder", &type);
    if (rc) return rc;
    if (!strcmp(type, "Sequence")) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "decoders");
        if (!cJSON_IsArray(arr) || depth > 8)
            return err_set(L->e, ERR_FORMAT, "%s: decoder Sequence: field 'decoders': expected an array", L->ctx);
        const cJSON *c;
        cJSON_ArrayForEach(c, arr) if ((rc = parse_decoder(L, c, depth + 1))) return rc;
        return 0;
    }
    if (t->n_dec == TOK_MAX_STEPS) return err_set(L->e, ERR_RANGE, "%s: too many decoders", L->ctx);
    struct dec_step *st = &t->dec[t->n_dec];
    memset(st, 0, sizeof *st);
    char ctx[256];
    snprintf(ctx, sizeof ctx, "%s: decoder %s", L->ctx, type);
    if (!strcmp(type, "ByteLevel")) st->type = DEC_BYTELEVEL;
    else if (!strcmp(type, "ByteFallback")) st->type = DEC_BYTEFALLBACK;
    else if (!strcmp(type, "Fuse")) st->type = DEC_FUSE;
    else if (!strcmp(type, "Metaspace")) {
        st->type = DEC_METASPACE;
        if ((rc = parse_repl(L, o, "decoder Metaspace", &st->a, &st->alen))) return rc;
        if ((rc = parse_scheme(L, o, "decoder Metaspace", &st->scheme))) return rc;
    } else if (!strcmp(type, "Replace")) {
        st->type = DEC_REPLACE;
        const char *s;
        if ((rc = json_need_str(o, "content", &s, ctx, L->e))) return rc;
        st->blen = strlen(s);
        if ((rc = copy_str(L, s, st->blen, &st->b))) return rc;
        if ((rc = parse_pattern(L, o, "decoder Replace", &st->a, &st->alen, NULL))) return rc;
    } else if (!strcmp(type, "Strip")) {
        st->type = DEC_STRIP;
        const char *s;
        if ((rc = json_need_str(o, "content", &s, ctx, L->e))) return rc;
        st->alen = strlen(s);
        if (st->alen == 0) return err_set(L->e, ERR_FORMAT, "%s: field 'content' is empty", ctx);
        if ((rc = copy_str(L, s, st->alen, &st->a))) return rc;
        if ((rc = json_opt_int(o, "start", &st->start, 0, ctx, L->e))) return rc;
        if ((rc = json_opt_int(o, "stop", &st->stop, 0, ctx, L->e))) return rc;
        if (st->start < 0 || st->stop < 0) return err_set(L->e, ERR_FORMAT, "%s: negative start/stop", ctx);
    } else {
        return err_set(L->e, ERR_UNSUPPORTED, "%s: decoder type '%s' is not supported", L->ctx, type);
    }
    t->n_dec++;
    return 0;
}

// ---- post-processor ----
static int lookup_token(const struct tokenizer *t, const char *s) {
    size_t n = strlen(s);
    int32_t i = strmap_get(&t->added_map, s, n);
    if (i >= 0) return t->added[i].id;
    return strmap_get(&t->vocab, s, n);
}

static int append_ids(struct loadctx *L, int32_t **arr, int *n, const int32_t *ids, int k) {
    int32_t *na = realloc(*arr, (size_t)(*n + k + 1) * sizeof *na);
    if (!na) return err_set(L->e, ERR_NOMEM, "%s: out of memory", L->ctx);
    memcpy(na + *n, ids, (size_t)k * sizeof *ids);
    *arr = na;
    *n += k;
    return 0;
}

static int parse_template(struct loadctx *L, const cJSON *o) {
    struct tokenizer *t = L->t;
    char ctx[256];
    snprintf(ctx, sizeof ctx, "%s: post_processor TemplateProcessing", L->ctx);
    const cJSON *single, *specials;
    int rc;
    if ((rc = json_need_arr(o, "single", &single, ctx, L->e))) return rc;
    if ((rc = json_opt_obj(o, "special_tokens", &specials, ctx, L->e))) return rc;
    int seen_seq = 0;
    const cJSON *it;
    free(t->tpl_pre); free(t->tpl_post);
    t->tpl_pre = t->tpl_post = NULL;
    t->n_pre = t->n_post = 0;
    cJSON_ArrayForEach(it, single) {
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(it, "SpecialToken");
        if (cJSON_GetObjectItemCaseSensitive(it, "Sequence")) {
            if (seen_seq) return err_set(L->e, ERR_FORMAT, "%s: 'single' holds two sequences", ctx);
            seen_seq = 1;
            continue;
        }
        const char *name;
        if (!cJSON_IsObject(sp) || (rc = json_need_str(sp, "id", &name, ctx, L->e)))
            return rc ? rc : err_set(L->e, ERR_FORMAT, "%s: bad 'single' item %s", ctx, json_brief(it));
        const cJSON *def = specials ? cJSON_GetObjectItemCaseSensitive(specials, name) : NULL;
        const cJSON *ids = def ? cJSON_GetObjectItemCaseSensitive(def, "ids") : NULL;
        int32_t buf[16];
        int k = 0;
        if (cJSON_IsArray(ids)) {
            const cJSON *x;
            cJSON_ArrayForEach(x, ids) {
                if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble >= TOK_MAX_VOCAB || k == 16)
                    return err_set(L->e, ERR_FORMAT, "%s: special_tokens '%s': bad ids", ctx, name);
                buf[k++] = (int32_t)x->valuedouble;
            }
        } else {
            int id = lookup_token(t, name);
            if (id < 0) return err_set(L->e, ERR_FORMAT, "%s: special token '%s' is not defined", ctx, name);
            buf[k++] = id;
        }
        if ((rc = seen_seq ? append_ids(L, &t->tpl_post, &t->n_post, buf, k) : append_ids(L, &t->tpl_pre, &t->n_pre, buf, k)))
            return rc;
    }
    if (!seen_seq) return err_set(L->e, ERR_FORMAT, "%s: 'single' has no Sequence item", ctx);
    return 0;
}

static int parse_post(struct loadctx *L, const cJSON *o, int depth) {
    if (!o || cJSON_IsNull(o)) return 0;
    const char *type;
    int rc = comp_type(L, o, "post_processor", &type);
    if (rc) return rc;
    if (!strcmp(type, "Sequence")) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "processors");
        if (!cJSON_IsArray(arr) || depth > 8)
            return err_set(L->e, ERR_FORMAT, "%s: post_processor Sequence: field 'processors': expected an array", L->ctx);
        const cJSON *c;
        cJSON_ArrayForEach(c, arr) if ((rc = parse_post(L, c, depth + 1))) return rc;
        return 0;
    }
    if (!strcmp(type, "ByteLevel")) return 0; // changes offsets only
    if (!strcmp(type, "TemplateProcessing")) return parse_template(L, o);
    if (!strcmp(type, "RobertaProcessing") || !strcmp(type, "BertProcessing")) {
        const cJSON *cls = cJSON_GetObjectItemCaseSensitive(o, "cls"), *sep = cJSON_GetObjectItemCaseSensitive(o, "sep");
        const cJSON *ci = cJSON_GetArrayItem(cls, 1), *si = cJSON_GetArrayItem(sep, 1);
        if (!cJSON_IsNumber(ci) || !cJSON_IsNumber(si) || ci->valuedouble < 0 || si->valuedouble < 0 ||
            ci->valuedouble >= TOK_MAX_VOCAB || si->valuedouble >= TOK_MAX_VOCAB)
            return err_set(L->e, ERR_FORMAT, "%s: post_processor %s: bad 'cls'/'sep'", L->ctx, type);
        int32_t c = (int32_t)ci->valuedouble, s = (int32_t)si->valuedouble;
        if ((rc = append_ids(L, &L->t->tpl_pre, &L->t->n_pre, &c, 1))) return rc;
        return append_ids(L, &L->t->tpl_post, &L->t->n_post, &s, 1);
    }
    return err_set(L->e, ERR_UNSUPPORTED, "%s: post_processor type '%s' is not supported", L->ctx, type);
}

// ---- model ----
static int parse_model(struct loadctx *L, const cJSON *m, int *max_id) {
    struct tokenizer *t = L->t;
    char ctx[256];
    snprintf(ctx, sizeof ctx, "%s: model", L->ctx);
    const char *type = NULL;
    int rc = json_opt_str(m, "type", &type, NULL, ctx, L->e);
    if (rc) return rc;
    if (type && strcmp(type, "BPE"))
        return err_set(L->e, ERR_UNSUPPORTED, "%s: model type '%s' is not supported (only BPE)", L->ctx, type);
    const cJSON *vocab, *merges;
    if ((rc = json_need_obj(m, "vocab", &vocab, ctx, L->e))) return rc;
    if ((rc = json_need_arr(m, "merges", &merges, ctx, L->e))) return rc;
    const char *pfx = NULL, *sfx = NULL, *unk = NULL;
    if ((rc = json_opt_str(m, "continuing_subword_prefix", &pfx, NULL, ctx, L->e))) return rc;
    if ((rc = json_opt_str(m, "end_of_word_suffix", &sfx, NULL, ctx, L->e))) return rc;
    if ((pfx && *pfx) || (sfx && *sfx))
        return err_set(L->e, ERR_UNSUPPORTED, "%s: continuing_subword_prefix/end_of_word_suffix are not supported", ctx);
    double dropout = 0;
    if ((rc = json_opt_num(m, "dropout", &dropout, 0, ctx, L->e))) return rc;
    if (dropout != 0)
        return err_set(L->e, ERR_UNSUPPORTED, "%s: field 'dropout': %g (BPE dropout is random; not supported)", ctx, dropout);
    if ((rc = json_opt_bool(m, "byte_fallback", &t->byte_fallback, 0, ctx, L->e))) return rc;
    if ((rc = json_opt_bool(m, "ignore_merges", &t->ignore_merges, 0, ctx, L->e))) return rc;
    if ((rc = json_opt_bool(m, "fuse_unk", &t->fuse_unk, 0, ctx, L->e))) return rc;
    if ((rc = json_opt_str(m, "unk_token", &unk, NULL, ctx, L->e))) return rc;

    int nv = cJSON_GetArraySize(vocab);
    if ((rc = strmap_init(&t->vocab, (uint32_t)nv))) return err_set(L->e, rc, "%s: out of memory", ctx);
    const cJSON *it;
    cJSON_ArrayForEach(it, vocab) {
        const char *k = it->string;
        size_t kl = strlen(k);
        double d = it->valuedouble;
        if (!cJSON_IsNumber(it) || d < 0 || d >= TOK_MAX_VOCAB || d != (double)(int32_t)d)
            return err_set(L->e, ERR_FORMAT, "%s: vocab '%.60s': bad id %s", ctx, k, json_brief(it));
        if (!utf8_valid(k, kl)) return err_set(L->e, ERR_FORMAT, "%s: vocab entry with invalid UTF-8", ctx);
        char *s = pool_add(&t->pool, k, kl);
        if (!s || strmap_put(&t->vocab, s, (uint32_t)kl, (int32_t)d)) return err_set(L->e, ERR_NOMEM, "%s: out of memory", ctx);
        if ((int)d > *max_id) *max_id = (int)d;
    }
    t->unk_id = -1;
    if (unk) {
        t->unk_id = strmap_get(&t->vocab, unk, strlen(unk));
        if (t->unk_id < 0) return err_set(L->e, ERR_FORMAT, "%s: unk_token '%s' is not in the vocab", ctx, unk);
    }
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        t->byte_id[b] = strmap_get(&t->vocab, name, 6);
    }
    // Merges: "a b" strings (split at the single space, as HF does) or ["a", "b"] pairs.
    int nm = cJSON_GetArraySize(merges);
    if ((rc = mergemap_init(&t->merges, (uint32_t)nm))) return err_set(L->e, rc, "%s: out of memory", ctx);
    char stackbuf[512];
    uint32_t rank = 0;
    cJSON_ArrayForEach(it, merges) {
        const char *a, *b;
        size_t al, bl;
        if (cJSON_IsString(it)) {
            const char *s = it->valuestring, *sp = strchr(s, ' ');
            if (!sp || strchr(sp + 1, ' '))
                return err_set(L->e, ERR_FORMAT, "%s: merges[%u]: expected \"a b\", got %s", ctx, rank, json_brief(it));
            a = s; al = (size_t)(sp - s);
            b = sp + 1; bl = strlen(b);
        } else if (cJSON_IsArray(it) && cJSON_GetArraySize(it) == 2 && cJSON_IsString(it->child) &&
                   cJSON_IsString(it->child->next)) {
            a = it->child->valuestring; al = strlen(a);
            b = it->child->next->valuestring; bl = strlen(b);
        } else {
            return err_set(L->e, ERR_FORMAT, "%s: merges[%u]: expected \"a b\" or [\"a\", \"b\"], got %s", ctx, rank,
                           json_brief(it));
        }
        int32_t ia = strmap_get(&t->vocab, a, al), ib = strmap_get(&t->vocab, b, bl);
        if (ia < 0 || ib < 0)
            return err_set(L->e, ERR_FORMAT, "%s: merges[%u]: token '%.60s' is not in the vocab", ctx, rank, ia < 0 ? a : b);
        char *cat = al + bl <= sizeof stackbuf ? stackbuf : malloc(al + bl);
        if (!cat) return err_set(L->e, ERR_NOMEM, "%s: out of memory", ctx);
        memcpy(cat, a, al);
        memcpy(cat + al, b, bl);
        int32_t ic = strmap_get(&t->vocab, cat, al + bl);
        if (cat != stackbuf) free(cat);
        if (ic < 0)
            return err_set(L->e, ERR_FORMAT, "%s: merges[%u]: merged token '%.30s%.30s' is not in the vocab", ctx, rank, a, b);
        if (mergemap_put(&t->merges, ia, ib, rank, ic)) return err_set(L->e, ERR_NOMEM, "%s: out of memory", ctx);
        rank++;
    }
    return 0;
}

static int parse_added(struct loadctx *L, const cJSON *arr, int *max_id) {
    struct tokenizer *t = L->t;
    char ctx[256];
    snprintf(ctx, sizeof ctx, "%s: added_tokens", L->ctx);
    if (!arr || cJSON_IsNull(arr)) return 0;
    if (!cJSON_IsArray(arr)) return err_set(L->e, ERR_FORMAT, "%s: expected an array", ctx);
    int n = cJSON_GetArraySize(arr);
    t->added = calloc((size_t)n + 1, sizeof *t->added);
    if (!t->added || strmap_init(&t->added_map, (uint32_t)n)) return err_set(L->e, ERR_NOMEM, "%s: out of memory", ctx);
    const cJSON *it;
    int rc;
    cJSON_ArrayForEach(it, arr) {
        struct added_token *a = &t->added[t->n_added];
        const char *content;
        int id = -1;
        snprintf(ctx, sizeof ctx, "%s: added_tokens[%d]", L->ctx, t->n_added);
        if ((rc = json_need_str(it, "content", &content, ctx, L->e))) return rc;
        if ((rc = json_need_int(it, "id", &id, ctx, L->e))) return rc;
        if (id < 0 || id >= TOK_MAX_VOCAB) return err_set(L->e, ERR_FORMAT, "%s: field 'id': %d out of range", ctx, id);
        a->id = id;
        a->len = strlen(content);
        if (!utf8_valid(content, a->len)) return err_set(L->e, ERR_FORMAT, "%s: content is not valid UTF-8", ctx);
        if ((rc = copy_str(L, content, a->len, (char **)&a->content))) return rc;
        if ((rc = json_opt_bool(it, "special", &a->special, 0, ctx, L->e))) return rc;
        if ((rc = json_opt_bool(it, "lstrip", &a->lstrip, 0, ctx, L->e))) return rc;
        if ((rc = json_opt_bool(it, "rstrip", &a->rstrip, 0, ctx, L->e))) return rc;
        if ((rc = json_opt_bool(it, "single_word", &a->single_word, 0, ctx, L->e))) return rc;
        if ((rc = json_opt_bool(it, "normalized", &a->normalized, !a->special, ctx, L->e))) return rc;
        if (strmap_put(&t->added_map, a->content, (uint32_t)a->len, t->n_added))
            return err_set(L->e, ERR_NOMEM, "%s: out of memory", ctx);
        if (id > *max_id) *max_id = id;
        t->n_added++;
    }
    return 0;
}

// Builds the added-token tries. Normalized tokens are matched on normalized text, so their
// content is normalized first (HF AddedVocabulary::refresh_added_tokens).
static int build_tries(struct loadctx *L) {
    struct tokenizer *t = L->t;
    struct plist tmp = {0};
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    if (!md) return err_set(L->e, ERR_NOMEM, "%s: out of memory", L->ctx);
    int rc = 0;
    for (int i = 0; i < t->n_added && !rc; i++) {
        struct added_token *a = &t->added[i];
        if (!a->normalized) { rc = trie_add(&t->trie_raw, a->content, a->len, i); continue; }
        plist_reset(&tmp);
        rc = normalize_piece(t, a->content, a->len, 0, &tmp, md, L->e);
        if (!rc) rc = trie_add(&t->trie_norm, tmp.buf, tmp.p[0].len, i);
    }
    plist_free(&tmp);
    pcre2_match_data_free(md);
    if (rc == ERR_NOMEM) return err_set(L->e, rc, "%s: out of memory", L->ctx);
    return rc;
}

static int config_token(const struct tokenizer *t, const cJSON *cfg, const char *key, int *out, int *present) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    *present = v != NULL;
    if (!v || cJSON_IsNull(v)) { *out = -1; return 0; }
    if (cJSON_IsObject(v)) v = cJSON_GetObjectItemCaseSensitive(v, "content");
    if (!cJSON_IsString(v)) { *out = -1; return 0; }
    *out = lookup_token(t, v->valuestring);
    if (*out < 0) log_warn("tokenizer_config.json: %s '%s' is not a token", key, v->valuestring);
    return 0;
}

// transformers' LlamaTokenizerFast/GemmaTokenizerFast (and CodeLlama) rebuild the
// post-processor from tokenizer_config.json at load: [bos if add_bos_token] $A [eos if
// add_eos_token], defaults true/false (update_post_processor). lm-eval-harness tokenizes
// through transformers, so we do the same for those classes; every other class keeps the
// tokenizer.json post-processor. For the shipped mistral/gemma3 files the two agree.
static int llama_class_template(struct tokenizer *t, const cJSON *cfg, const char *ctx, struct err *e) {
    const cJSON *cls = cJSON_GetObjectItemCaseSensitive(cfg, "tokenizer_class");
    if (!cJSON_IsString(cls)) return 0;
    static const char *classes[] = {"LlamaTokenizer", "LlamaTokenizerFast", "CodeLlamaTokenizer", "CodeLlamaTokenizerFast",
                                    "GemmaTokenizer", "GemmaTokenizerFast"};
    int hit = 0;
    for (int i = 0; i < 6; i++) hit |= !strcmp(cls->valuestring, classes[i]);
    if (!hit) return 0;
    int gemma = strstr(cls->valuestring, "Gemma") != NULL;
    // The classes' default bos/eos strings when the config does not name them.
    if (!cJSON_GetObjectItemCaseSensitive(cfg, "bos_token")) t->bos_id = lookup_token(t, gemma ? "<bos>" : "<s>");
    if (!cJSON_GetObjectItemCaseSensitive(cfg, "eos_token")) t->eos_id = lookup_token(t, gemma ? "<eos>" : "</s>");
    int add_bos = 1, add_eos = 0, rc;
    if ((rc = json_opt_bool(cfg, "add_bos_token", &add_bos, 1, "tokenizer_config.json", e))) return rc;
    if ((rc = json_opt_bool(cfg, "add_eos_token", &add_eos, 0, "tokenizer_config.json", e))) return rc;
    if ((add_bos && t->bos_id < 0) || (add_eos && t->eos_id < 0))
        return err_set(e, ERR_FORMAT, "%s: tokenizer_config.json asks for add_%s_token but names no such token", ctx,
                       add_bos && t->bos_id < 0 ? "bos" : "eos");
    int32_t *pre = add_bos ? malloc(sizeof *pre) : NULL, *post = add_eos ? malloc(sizeof *post) : NULL;
    if ((add_bos && !pre) || (add_eos && !post)) {
        free(pre);
        free(post);
        return err_set(e, ERR_NOMEM, "%s: out of memory", ctx);
    }
    if (pre) pre[0] = t->bos_id;
    if (post) post[0] = t->eos_id;
    int same = t->n_pre == add_bos && t->n_post == add_eos && (!add_bos || t->tpl_pre[0] == t->bos_id) &&
               (!add_eos || t->tpl_post[0] == t->eos_id);
    if (!same)
        log_info("%s: %s in tokenizer_config.json (add_bos_token=%d, add_eos_token=%d) replaces the tokenizer.json "
                 "post-processor, as transformers does", ctx, cls->valuestring, add_bos, add_eos);
    free(t->tpl_pre);
    free(t->tpl_post);
    t->tpl_pre = pre;
    t->tpl_post = post;
    t->n_pre = add_bos;
    t->n_post = add_eos;
    return 0;
}

int tok_load_json(struct tokenizer **out, const char *json, size_t len, const char *config_json, const char *ctx,
                  struct err *e) {
    *out = NULL;
    struct tokenizer *t = calloc(1, sizeof *t);
    if (!t) return err_set(e, ERR_NOMEM, "%s: out of memory", ctx);
    struct loadctx L = {t, ctx, e};
    t->cache_min_pieces = 256;
    cJSON *root = NULL, *cfg = NULL;
    sha256_hex(json, len, t->sha);
    int rc = json_parse(&root, json, len, ctx, e);
    if (rc) goto fail;
    if (!cJSON_IsObject(root)) { rc = err_set(e, ERR_FORMAT, "%s: expected a JSON object", ctx); goto fail; }
    const cJSON *model;
    if ((rc = json_need_obj(root, "model", &model, ctx, e))) goto fail;
    // HF would truncate/pad encodings; the harness manages lengths itself.
    static const char *ignored[] = {"truncation", "padding"};
    for (int i = 0; i < 2; i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(root, ignored[i]);
        if (x && !cJSON_IsNull(x)) log_warn("%s: '%s' is set; ignored (encode never truncates or pads)", ctx, ignored[i]);
    }
    int max_id = -1;
    if ((rc = parse_model(&L, model, &max_id))) goto fail;
    if ((rc = parse_added(&L, cJSON_GetObjectItemCaseSensitive(root, "added_tokens"), &max_id))) goto fail;
    if ((rc = parse_normalizer(&L, cJSON_GetObjectItemCaseSensitive(root, "normalizer"), 0))) goto fail;
    if ((rc = parse_pretok(&L, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), 0))) goto fail;
    if ((rc = parse_post(&L, cJSON_GetObjectItemCaseSensitive(root, "post_processor"), 0))) goto fail;
    if ((rc = parse_decoder(&L, cJSON_GetObjectItemCaseSensitive(root, "decoder"), 0))) goto fail;
    if ((rc = build_tries(&L))) goto fail;
    if (max_id < 0) { rc = err_set(e, ERR_FORMAT, "%s: model.vocab is empty", ctx); goto fail; }

    t->vocab_size = max_id + 1;
    t->id_piece = calloc((size_t)t->vocab_size, sizeof *t->id_piece);
    t->cp_id = malloc(0x10000 * sizeof *t->cp_id);
    if (!t->id_piece || !t->cp_id) { rc = err_set(e, ERR_NOMEM, "%s: out of memory", ctx); goto fail; }
    for (int i = 0; i < 0x10000; i++) t->cp_id[i] = -1;
    for (uint32_t i = 0; i < t->vocab.cap; i++) {
        const struct strmap_slot *s = &t->vocab.slots[i];
        if (!s->s) continue;
        t->id_piece[s->id] = s->s;
        uint32_t cp;
        if (s->len > 0 && (uint32_t)utf8_next(s->s, s->len, &cp) == s->len && cp < 0x10000) t->cp_id[cp] = s->id;
    }
    for (int i = 0; i < t->n_added; i++) t->id_piece[t->added[i].id] = t->added[i].content;
    for (int i = 0; i < t->n_pre; i++)
        if (t->tpl_pre[i] >= t->vocab_size) { rc = err_set(e, ERR_FORMAT, "%s: post_processor id %d beyond the vocab", ctx, t->tpl_pre[i]); goto fail; }
    for (int i = 0; i < t->n_post; i++)
        if (t->tpl_post[i] >= t->vocab_size) { rc = err_set(e, ERR_FORMAT, "%s: post_processor id %d beyond the vocab", ctx, t->tpl_post[i]); goto fail; }

    // BOS/EOS: tokenizer_config.json decides when it names them, else the template.
    int bos_set = 0, eos_set = 0;
    t->bos_id = t->eos_id = -1;
    if (config_json) {
        if ((rc = json_parse(&cfg, config_json, strlen(config_json), "tokenizer_config.json", e))) goto fail;
        config_token(t, cfg, "bos_token", &t->bos_id, &bos_set);
        config_token(t, cfg, "eos_token", &t->eos_id, &eos_set);
    }
    if (cfg && (rc = llama_class_template(t, cfg, ctx, e))) goto fail;
    if (t->bos_id >= 0) bos_set = 1;
    if (t->eos_id >= 0) eos_set = 1;
    if (!bos_set && t->n_pre > 0) t->bos_id = t->tpl_pre[0];
    if (!eos_set) {
        if (t->n_post > 0) t->eos_id = t->tpl_post[t->n_post - 1];
        static const char *names[] = {"</s>", "<|endoftext|>", "<eos>", "<|end_of_text|>"};
        for (int i = 0; i < 4 && t->eos_id < 0; i++) t->eos_id = lookup_token(t, names[i]);
    }
    cJSON_Delete(root);
    cJSON_Delete(cfg);
    *out = t;
    return 0;
fail:
    cJSON_Delete(root);
    cJSON_Delete(cfg);
    tok_free(t);
    return rc;
}

int tok_load(struct tokenizer **out, const char *path, struct err *e) {
    *out = NULL;
    char file[4096], cfgpath[4096];
    int rc;
    if (dir_exists(path)) {
        if ((rc = path_join(file, sizeof file, path, "tokenizer.json", e))) return rc;
        if (!file_exists(file) && (rc = path_join(file, sizeof file, path, "tokenizer.json.zst", e))) return rc;
        if (!file_exists(file)) return err_set(e, ERR_NOTFOUND, "%s: no tokenizer.json or tokenizer.json.zst", path);
        if ((rc = path_join(cfgpath, sizeof cfgpath, path, "tokenizer_config.json", e))) return rc;
    } else {
        if (!file_exists(path)) return err_set(e, ERR_NOTFOUND, "%s: no such tokenizer file or directory", path);
        if (snprintf(file, sizeof file, "%s", path) >= (int)sizeof file) return err_set(e, ERR_RANGE, "%s: path too long", path);
        const char *slash = strrchr(path, '/');
        int dl = slash ? (int)(slash - path) : 1;
        if (snprintf(cfgpath, sizeof cfgpath, "%.*s/tokenizer_config.json", dl, slash ? path : ".") >= (int)sizeof cfgpath)
            return err_set(e, ERR_RANGE, "%s: path too long", path);
    }
    char *json = NULL, *cfg = NULL;
    size_t len = 0, cfglen = 0;
    if ((rc = file_read_all(file, &json, &len, e))) return rc;
    if (file_exists(cfgpath) && (rc = file_read_all(cfgpath, &cfg, &cfglen, e))) { free(json); return rc; }
    double t0 = time_now();
    rc = tok_load_json(out, json, len, cfg, file, e);
    if (!rc) log_debug("tokenizer: loaded %s (%d ids) in %.3f s", file, (*out)->vocab_size, time_now() - t0);
    free(json);
    free(cfg);
    return rc;
}

void tok_free(struct tokenizer *t) {
    if (!t) return;
    strmap_free(&t->vocab);
    mergemap_free(&t->merges);
    free(t->id_piece);
    free(t->cp_id);
    free(t->added);
    strmap_free(&t->added_map);
    trie_free(&t->trie_raw);
    trie_free(&t->trie_norm);
    for (int i = 0; i < t->n_norm; i++) regex_free(&t->norm[i].re);
    for (int i = 0; i < t->n_pretok; i++) regex_free(&t->pretok[i].re);
    free(t->tpl_pre);
    free(t->tpl_post);
    pool_free(&t->pool);
    free(t);
}
