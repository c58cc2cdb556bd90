// make_tokenizer.c: the byte-level BPE tokenizer.json of synthetic checkpoints
// (make_tokenizer_json, make_model.h): GPT-2's byte alphabet and systematic merges, written in
// the Hugging Face tokenizers layout.
#include "import/make_model.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/make_internal.h"

// ---- byte-level BPE tokenizer ----
// GPT-2 bytes_to_unicode: printable bytes map to themselves, the rest to U+0100 + n.
static int byte_cp(int b) {
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) return b;
    int n = 0;
    for (int x = 0; x < b; x++)
        if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255))) n++;
    return 256 + n;
}
static int put_utf8(char *o, int cp) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    o[0] = (char)(0xC0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
}

// Training text for the learned merges (our own sentences; any fixed text works).
static const char corpus[] =
    "The quick brown fox jumps over the lazy dog. A model reads the question and then it picks the answer "
    "that has the highest likelihood. When the attention is computed in four bits, the scores of the keys "
    "change a little, and sometimes the decision of the model changes as well. We count how often that "
    "happens, and we report it with the standard error of the accuracy. There are many questions in the "
    "benchmark: history, science, mathematics, law, medicine and the other subjects of the exam. Each "
    "question has four options, and only one of them is correct. The students in the class were reading "
    "their books when the teacher came into the room and asked them what they had learned on that day. "
    "It is important to note that the numbers 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 and 10 are written with digits. "
    "She said that she would be there in the morning, but he was not sure if they could make it in time. "
    "Once upon a time there was a little girl who loved to play outside in the park with her friends.\n";

#define TOK_MAX_LEN 64
#define LEARN_MAX 1024
struct strset { char **keys; int *vals; size_t cap; };
static uint64_t hash_s(const char *s) { return fnv1a(s); }
static int set_find(const struct strset *h, const char *k) {
    for (size_t i = hash_s(k) & (h->cap - 1);; i = (i + 1) & (h->cap - 1)) {
        if (!h->keys[i]) return -1;
        if (!strcmp(h->keys[i], k)) return h->vals[i];
    }
}
static void set_put(struct strset *h, char *k, int v) {
    size_t i = hash_s(k) & (h->cap - 1);
    while (h->keys[i]) i = (i + 1) & (h->cap - 1);
    h->keys[i] = k;
    h->vals[i] = v;
}

// ---- the vocabulary under construction ----
struct vocab_build {
    char **tok;         // [n_norm] token texts (byte-level alphabet), owned
    int (*merge)[2];    // [n_norm] ids of the two tokens merged into each; -1, -1 for bytes
    struct strset set;  // token text -> id
    int n_tok, n_norm;  // tokens so far; ordinary tokens to build (vocab_size - 1)
};

// Appends token s, the merge of ids a and b.
static int add_token(struct vocab_build *v, const char *s, int a, int b, struct err *e) {
    v->tok[v->n_tok] = str_dup(s);
    if (!v->tok[v->n_tok]) return err_set(e, ERR_NOMEM, "tokenizer: out of memory");
    set_put(&v->set, v->tok[v->n_tok], v->n_tok);
    v->merge[v->n_tok][0] = a, v->merge[v->n_tok][1] = b;
    v->n_tok++;
    return 0;
}

// The corpus as words of token ids into sym (one id per byte) with word w at
// sym[wstart[w] .. wstart[w + 1]): a word is an optional leading space + letters, or a
// digit, or one other byte (GPT-2 style pre-split, simplified). Returns the word count.
static int split_corpus(int *sym, int *wstart) {
    const int clen = (int)sizeof corpus - 1;
    int n_sym = 0, n_words = 0;
    for (int i = 0; i < clen;) {
        wstart[n_words++] = n_sym;
        int c0 = (unsigned char)corpus[i];
        #define ISALPHA(ch) (((ch) | 32) >= 'a' && ((ch) | 32) <= 'z')
        if (c0 == ' ' && i + 1 < clen && ISALPHA((unsigned char)corpus[i + 1])) sym[n_sym++] = ' ', i++;
        if (ISALPHA((unsigned char)corpus[i])) {
            while (i < clen && ISALPHA((unsigned char)corpus[i])) sym[n_sym++] = (unsigned char)corpus[i++];
        } else {
            sym[n_sym++] = (unsigned char)corpus[i++];
        }
        #undef ISALPHA
    }
    wstart[n_words] = n_sym;
    return n_words;
}

// The most frequent adjacent pair within words (ties: smallest ids) that occurs at least
// twice, or *best_a = -1. counts (LEARN_MAX x LEARN_MAX) is all zero before and after.
static void best_pair(const int *sym, const int *wstart, int n_words, int *counts, int *best_a, int *best_b) {
    int ba = -1, bb = -1, best_c = 1;
    for (int pass = 0; pass < 3; pass++) // 0: count, 1: pick the best, 2: clear
        for (int w = 0; w < n_words; w++)
            for (int p = wstart[w]; p + 1 < wstart[w + 1]; p++) {
                const int a = sym[p], b = sym[p + 1];
                if (a < 0 || b < 0) continue;
                int *cnt = &counts[a * LEARN_MAX + b];
                if (pass == 0) (*cnt)++;
                else if (pass == 2) *cnt = 0;
                else if (*cnt > best_c || (*cnt == best_c && *cnt > 1 && (a < ba || (a == ba && b < bb))))
                    ba = a, bb = b, best_c = *cnt;
            }
    *best_a = ba, *best_b = bb;
}

// Replaces every adjacent (a, b) in each word by id, compacting the word (-1 after its end).
static void apply_merge(int *sym, const int *wstart, int n_words, int a, int b, int id) {
    for (int w = 0; w < n_words; w++) {
        int o = wstart[w];
        for (int p = wstart[w]; p < wstart[w + 1]; p++) {
            if (sym[p] < 0) continue;
            int q = p + 1;
            while (q < wstart[w + 1] && sym[q] < 0) q++;
            if (sym[p] == a && q < wstart[w + 1] && sym[q] == b) {
                sym[o++] = id;
                sym[q] = -1;
            } else {
                sym[o++] = sym[p];
            }
        }
        for (int p = o; p < wstart[w + 1]; p++) sym[p] = -1;
    }
}

// learned merges: most frequent adjacent pair within words (ties: smallest ids), until
// no pair occurs twice; ids stay below LEARN_MAX so counts fit one flat table
static int learn_merges(struct vocab_build *v, int *sym, const int *wstart, int n_words, int *counts,
                        struct err *e) {
    while (v->n_tok < v->n_norm && v->n_tok < LEARN_MAX) {
        int best_a, best_b;
        best_pair(sym, wstart, n_words, counts, &best_a, &best_b);
        if (best_a < 0) break;
        char s[2 * TOK_MAX_LEN + 1];
        if (strlen(v->tok[best_a]) + strlen(v->tok[best_b]) > TOK_MAX_LEN) break;
        snprintf(s, sizeof s, "%s%s", v->tok[best_a], v->tok[best_b]);
        if (set_find(&v->set, s) < 0) {
            int rc = add_token(v, s, best_a, best_b, e);
            if (rc) return rc;
        }
        const int id = set_find(&v->set, s);
        apply_merge(sym, wstart, n_words, best_a, best_b, id);
    }
    return 0;
}

// The order in which systematic merges pair tokens: 'Ġ' (the space), letters, merged tokens
// (256 .. base-1), digits, other printable ASCII. ord has room for base ids; returns the count.
static int merge_order(int *ord, int base) {
    int n_ord = 0;
    ord[n_ord++] = ' ';
    for (int ch = 'a'; ch <= 'z'; ch++) ord[n_ord++] = ch;
    for (int ch = 'A'; ch <= 'Z'; ch++) ord[n_ord++] = ch;
    for (int i = 256; i < base; i++) ord[n_ord++] = i;
    for (int ch = '0'; ch <= '9'; ch++) ord[n_ord++] = ch;
    for (int ch = 33; ch <= 126; ch++)
        if (!((ch | 32) >= 'a' && (ch | 32) <= 'z') && !(ch >= '0' && ch <= '9')) ord[n_ord++] = ch;
    return n_ord;
}

// systematic merges until full, in rounds over all tokens so far: pairs over an order that
// favours word-like tokens (merge_order); a token starting with 'Ġ' (a space) is never the
// right part. Stops early when a round adds nothing.
static int systematic_merges(struct vocab_build *v, struct err *e) {
    char **tok = v->tok;
    const int space0 = (unsigned char)tok[' '][0], space1 = (unsigned char)tok[' '][1];
    while (v->n_tok < v->n_norm) {
        const int base = v->n_tok, before = v->n_tok;
        int *ord = malloc(sizeof(int) * (size_t)base);
        if (!ord) return err_set(e, ERR_NOMEM, "tokenizer: out of memory");
        const int n_ord = merge_order(ord, base);
        for (int i = 0; i < n_ord && v->n_tok < v->n_norm; i++)
            for (int j = 0; j < n_ord && v->n_tok < v->n_norm; j++) {
                const int a = ord[i], b = ord[j];
                const unsigned char *tb = (const unsigned char *)tok[b];
                if (tb[0] == space0 && tb[1] == space1) continue;
                if (strlen(tok[a]) + strlen(tok[b]) > TOK_MAX_LEN) continue;
                char s[2 * TOK_MAX_LEN + 1];
                snprintf(s, sizeof s, "%s%s", tok[a], tok[b]);
                if (set_find(&v->set, s) >= 0) continue;
                int rc = add_token(v, s, a, b, e);
                if (rc) { free(ord); return rc; }
            }
        free(ord);
        if (v->n_tok == before) break;
    }
    return 0;
}

// ---- JSON (HF tokenizers layout) ----
static int vocab_json(const struct vocab_build *v, int vocab_size, char **json, struct err *e) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "version", "1.0");
    cJSON_AddNullToObject(root, "truncation");
    cJSON_AddNullToObject(root, "padding");
    cJSON *added = cJSON_AddArrayToObject(root, "added_tokens");
    cJSON *sp = cJSON_CreateObject();
    cJSON_AddNumberToObject(sp, "id", vocab_size - 1);
    cJSON_AddStringToObject(sp, "content", "<|endoftext|>");
    cJSON_AddBoolToObject(sp, "single_word", 0);
    cJSON_AddBoolToObject(sp, "lstrip", 0);
    cJSON_AddBoolToObject(sp, "rstrip", 0);
    cJSON_AddBoolToObject(sp, "normalized", 0);
    cJSON_AddBoolToObject(sp, "special", 1);
    cJSON_AddItemToArray(added, sp);
    cJSON_AddNullToObject(root, "normalizer");
    cJSON *pre = cJSON_AddObjectToObject(root, "pre_tokenizer");
    cJSON_AddStringToObject(pre, "type", "ByteLevel");
    cJSON_AddBoolToObject(pre, "add_prefix_space", 0);
    cJSON_AddBoolToObject(pre, "trim_offsets", 1);
    cJSON_AddBoolToObject(pre, "use_regex", 1);
    cJSON *post = cJSON_AddObjectToObject(root, "post_processor");
    cJSON_AddStringToObject(post, "type", "ByteLevel");
    cJSON_AddBoolToObject(post, "add_prefix_space", 0);
    cJSON_AddBoolToObject(post, "trim_offsets", 0);
    cJSON_AddBoolToObject(post, "use_regex", 1);
    cJSON *dec = cJSON_AddObjectToObject(root, "decoder");
    cJSON_AddStringToObject(dec, "type", "ByteLevel");
    cJSON_AddBoolToObject(dec, "add_prefix_space", 0);
    cJSON_AddBoolToObject(dec, "trim_offsets", 1);
    cJSON_AddBoolToObject(dec, "use_regex", 1);
    cJSON *model = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON_AddNullToObject(model, "dropout");
    cJSON_AddNullToObject(model, "unk_token");
    cJSON_AddStringToObject(model, "continuing_subword_prefix", "");
    cJSON_AddStringToObject(model, "end_of_word_suffix", "");
    cJSON_AddBoolToObject(model, "fuse_unk", 0);
    cJSON_AddBoolToObject(model, "byte_fallback", 0);
    cJSON_AddBoolToObject(model, "ignore_merges", 0);
    cJSON *vocab = cJSON_AddObjectToObject(model, "vocab");
    for (int i = 0; i < v->n_tok; i++) cJSON_AddNumberToObject(vocab, v->tok[i], i);
    cJSON_AddNumberToObject(vocab, "<|endoftext|>", vocab_size - 1);
    cJSON *merges = cJSON_AddArrayToObject(model, "merges");
    for (int i = 256; i < v->n_tok; i++) {
        char s[2 * TOK_MAX_LEN + 2];
        snprintf(s, sizeof s, "%s %s", v->tok[v->merge[i][0]], v->tok[v->merge[i][1]]);
        cJSON_AddItemToArray(merges, cJSON_CreateString(s));
    }
    int rc = 0;
    *json = cJSON_Print(root);
    if (!*json) rc = err_set(e, ERR_NOMEM, "tokenizer: out of memory");
    cJSON_Delete(root);
    return rc;
}

int make_tokenizer_json(int vocab_size, char **json, struct err *e) {
    *json = NULL;
    if (vocab_size < 257 || vocab_size > 1 << 22)
        return err_set(e, ERR_USAGE, "tokenizer: vocab size %d must be in [257, %d]", vocab_size, 1 << 22);
    struct vocab_build v = {.n_norm = vocab_size - 1}; // last id: <|endoftext|>
    v.tok = calloc((size_t)v.n_norm, sizeof *v.tok);
    v.merge = calloc((size_t)v.n_norm, sizeof *v.merge);
    v.set.cap = 1;
    while (v.set.cap < 4 * (size_t)vocab_size) v.set.cap <<= 1;
    v.set.keys = calloc(v.set.cap, sizeof *v.set.keys);
    v.set.vals = calloc(v.set.cap, sizeof *v.set.vals);
    const int clen = (int)sizeof corpus - 1;
    int *sym = malloc(sizeof(int) * (size_t)clen), *wstart = malloc(sizeof(int) * (size_t)(clen + 1));
    int *counts = calloc((size_t)LEARN_MAX * LEARN_MAX, sizeof(int));
    int rc = 0;
    if (!v.tok || !v.merge || !v.set.keys || !v.set.vals || !sym || !wstart || !counts) {
        rc = err_set(e, ERR_NOMEM, "tokenizer: out of memory");
        goto done;
    }
    for (int b = 0; b < 256; b++) {
        char s[4] = {0};
        put_utf8(s, byte_cp(b));
        if ((rc = add_token(&v, s, -1, -1, e))) goto done;
    }
    const int n_words = split_corpus(sym, wstart);
    if ((rc = learn_merges(&v, sym, wstart, n_words, counts, e)) || (rc = systematic_merges(&v, e))) goto done;
    if (v.n_tok < v.n_norm) {
        rc = err_set(e, ERR_RANGE, "tokenizer: cannot build %d tokens (%d possible)", vocab_size, v.n_tok + 1);
        goto done;
    }
    rc = vocab_json(&v, vocab_size, json, e);
done:
    if (v.tok)
        for (int i = 0; i < v.n_tok; i++) free(v.tok[i]);
    free(v.tok);
    free(v.merge);
    free(v.set.keys);
    free(v.set.vals);
    free(sym);
    free(wstart);
    free(counts);
    return rc;
}

