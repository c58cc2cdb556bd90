// llama2c_vocab.c: llama2.c tokenizer.bin -> HF tokenizer.json (see llama2c_vocab.h).
// llama2.c's encode(): BOS, a dummy-prefix " " when the text is non-empty, one token per code
// point (or its bytes + 3 when the code point is not a piece), then repeatedly merges the
// adjacent pair whose concatenation is the vocabulary piece with the highest score. As an HF
// BPE model: every split of every piece into two pieces is a merge, ranked by the piece's score
// (highest first); Prepend("▁") + Replace(" " -> "▁") give the dummy prefix; byte_fallback the
// <0xXX> tokens; TemplateProcessing the BOS. <unk>/<s>/</s> are deliberately NOT added tokens:
// llama2.c treats the text "<s>" as text (its golden has such cases), HF would split it out.
// Known divergence: pieces holding a literal U+2581 in the input text (llama2.c sees "▁" as a
// 3-byte char, here it is a space), and ties between two different splits of the same piece.
#include "tokenizer/llama2c_vocab.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/internal.h"

struct l2c_merge { float score; int32_t id; int32_t k; };

static int merge_cmp(const void *pa, const void *pb) {
    const struct l2c_merge *a = pa, *b = pb;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    if (a->id != b->id) return a->id < b->id ? -1 : 1;
    return (a->k > b->k) - (a->k < b->k);
}

// " " -> U+2581 (SentencePiece's space) in a malloc'd copy.
static char *to_sp(const char *s, size_t len, size_t *olen) {
    char *o = malloc(len * 3 + 1);
    if (!o) return NULL;
    size_t j = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ' ') { memcpy(o + j, "\xe2\x96\x81", 3); j += 3; }
        else o[j++] = s[i];
    }
    o[j] = 0;
    *olen = j;
    return o;
}

static cJSON *obj_type(const char *type) {
    cJSON *o = cJSON_CreateObject();
    if (o) cJSON_AddStringToObject(o, "type", type);
    return o;
}

static cJSON *string_pattern(const char *s) {
    cJSON *p = cJSON_CreateObject();
    if (p) cJSON_AddStringToObject(p, "String", s);
    return p;
}

// Returns the document, or NULL when out of memory.
static cJSON *build_json(char **piece, const size_t *plen, const float *score, int n, struct strmap *map) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    cJSON_AddStringToObject(root, "version", "1.0");
    cJSON_AddNullToObject(root, "truncation");
    cJSON_AddNullToObject(root, "padding");
    cJSON_AddItemToObject(root, "added_tokens", cJSON_CreateArray());

    cJSON *norm = obj_type("Sequence"), *ns = cJSON_CreateArray();
    cJSON *pre = obj_type("Prepend"), *rep = obj_type("Replace");
    cJSON_AddStringToObject(pre, "prepend", "\xe2\x96\x81");
    cJSON_AddItemToObject(rep, "pattern", string_pattern(" "));
    cJSON_AddStringToObject(rep, "content", "\xe2\x96\x81");
    cJSON_AddItemToArray(ns, pre);
    cJSON_AddItemToArray(ns, rep);
    cJSON_AddItemToObject(norm, "normalizers", ns);
    cJSON_AddItemToObject(root, "normalizer", norm);
    cJSON_AddNullToObject(root, "pre_tokenizer");

    // TemplateProcessing: <s> $A (pair: <s> $A <s> $B, as HF writes for Llama 2).
    cJSON *post = obj_type("TemplateProcessing"), *single = cJSON_CreateArray(), *pair = cJSON_CreateArray();
    const char *seqs[2] = {"A", "B"};
    for (int s = 0; s < 2; s++) {
        cJSON *sp = cJSON_CreateObject(), *spi = cJSON_CreateObject();
        cJSON_AddStringToObject(spi, "id", "<s>");
        cJSON_AddNumberToObject(spi, "type_id", s);
        cJSON_AddItemToObject(sp, "SpecialToken", spi);
        cJSON *sq = cJSON_CreateObject(), *sqi = cJSON_CreateObject();
        cJSON_AddStringToObject(sqi, "id", seqs[s]);
        cJSON_AddNumberToObject(sqi, "type_id", s);
        cJSON_AddItemToObject(sq, "Sequence", sqi);
        if (s == 0) {
            cJSON_AddItemToArray(single, cJSON_Duplicate(sp, 1));
            cJSON_AddItemToArray(single, cJSON_Duplicate(sq, 1));
        }
        cJSON_AddItemToArray(pair, sp);
        cJSON_AddItemToArray(pair, sq);
    }
    cJSON_AddItemToObject(post, "single", single);
    cJSON_AddItemToObject(post, "pair", pair);
    cJSON *sts = cJSON_CreateObject(), *bos = cJSON_CreateObject();
    cJSON_AddStringToObject(bos, "id", "<s>");
    int one = 1;
    cJSON_AddItemToObject(bos, "ids", cJSON_CreateIntArray(&one, 1));
    const char *bos_s = "<s>";
    cJSON_AddItemToObject(bos, "tokens", cJSON_CreateStringArray(&bos_s, 1));
    cJSON_AddItemToObject(sts, "<s>", bos);
    cJSON_AddItemToObject(post, "special_tokens", sts);
    cJSON_AddItemToObject(root, "post_processor", post);

    cJSON *dec = obj_type("Sequence"), *ds = cJSON_CreateArray();
    cJSON *drep = obj_type("Replace"), *strip = obj_type("Strip");
    cJSON_AddItemToObject(drep, "pattern", string_pattern("\xe2\x96\x81"));
    cJSON_AddStringToObject(drep, "content", " ");
    cJSON_AddStringToObject(strip, "content", " ");
    cJSON_AddNumberToObject(strip, "start", 1);
    cJSON_AddNumberToObject(strip, "stop", 0);
    cJSON_AddItemToArray(ds, drep);
    cJSON_AddItemToArray(ds, obj_type("ByteFallback"));
    cJSON_AddItemToArray(ds, obj_type("Fuse"));
    cJSON_AddItemToArray(ds, strip);
    cJSON_AddItemToObject(dec, "decoders", ds);
    cJSON_AddItemToObject(root, "decoder", dec);

    cJSON *model = obj_type("BPE");
    cJSON_AddNullToObject(model, "dropout");
    cJSON_AddStringToObject(model, "unk_token", "<unk>");
    cJSON_AddNullToObject(model, "continuing_subword_prefix");
    cJSON_AddNullToObject(model, "end_of_word_suffix");
    cJSON_AddTrueToObject(model, "fuse_unk");
    cJSON_AddTrueToObject(model, "byte_fallback");
    cJSON_AddFalseToObject(model, "ignore_merges");
    cJSON *vocab = cJSON_CreateObject();
    for (int i = 0; i < n; i++) cJSON_AddNumberToObject(vocab, piece[i], i);
    cJSON_AddItemToObject(model, "vocab", vocab);

    // Every split of a piece (ids >= 3; <unk> <s> </s> are never merge results in llama2.c,
    // whose pieces for them are "<unk>", "\n<s>\n", "\n</s>\n") into two pieces.
    struct l2c_merge *m = NULL;
    size_t nm = 0, capm = 0;
    for (int i = 3; i < n; i++) {
        for (size_t k = 1; k < plen[i]; k++) {
            if (((uint8_t)piece[i][k] & 0xc0) == 0x80) continue; // code point boundaries only
            int32_t a = strmap_get(map, piece[i], k), b = strmap_get(map, piece[i] + k, plen[i] - k);
            if (a < 0 || b < 0) continue;
            if (nm == capm) {
                capm = capm ? 2 * capm : 1024;
                struct l2c_merge *nmv = realloc(m, capm * sizeof *nmv);
                if (!nmv) { free(m); cJSON_Delete(root); cJSON_Delete(model); return NULL; }
                m = nmv;
            }
            m[nm++] = (struct l2c_merge){score[i], i, (int32_t)k};
        }
    }
    if (nm) qsort(m, nm, sizeof *m, merge_cmp);
    cJSON *merges = cJSON_CreateArray();
    for (size_t j = 0; j < nm; j++) {
        const char *s = piece[m[j].id];
        size_t k = (size_t)m[j].k;
        char *a = malloc(k + 1);
        if (!a) { free(m); cJSON_Delete(merges); cJSON_Delete(model); cJSON_Delete(root); return NULL; }
        memcpy(a, s, k);
        a[k] = 0;
        const char *pairv[2] = {a, s + k};
        cJSON_AddItemToArray(merges, cJSON_CreateStringArray(pairv, 2));
        free(a);
    }
    free(m);
    cJSON_AddItemToObject(model, "merges", merges);
    cJSON_AddItemToObject(root, "model", model);
    return root;
}

int tok_llama2c_to_json(const char *path, int vocab_size, char **json, struct err *e) {
    *json = NULL;
    char *buf = NULL;
    size_t len = 0;
    int rc = file_read_all(path, &buf, &len, e);
    if (rc) return rc;
    char **piece = NULL;
    size_t *plen = NULL;
    float *score = NULL;
    struct strmap map = {0};
    struct tok_pool pool = {0};
    cJSON *root = NULL;
    int n = 0, cap = vocab_size > 0 ? vocab_size : 1024;
    if (len < 4) { rc = err_set(e, ERR_FORMAT, "%s: too short for a llama2.c tokenizer (%zu bytes)", path, len); goto done; }
    int32_t maxlen;
    memcpy(&maxlen, buf, 4);
    if (maxlen <= 0 || maxlen > 65536) { rc = err_set(e, ERR_FORMAT, "%s: max_token_length %d out of range", path, (int)maxlen); goto done; }
    piece = calloc((size_t)cap, sizeof *piece);
    plen = calloc((size_t)cap, sizeof *plen);
    score = calloc((size_t)cap, sizeof *score);
    if (!piece || !plen || !score || strmap_init(&map, (uint32_t)cap)) { rc = err_set(e, ERR_NOMEM, "%s: out of memory", path); goto done; }
    size_t off = 4;
    while (vocab_size > 0 ? n < vocab_size : off < len) {
        if (n == cap) {
            cap *= 2;
            char **np = realloc(piece, (size_t)cap * sizeof *np);
            if (np) piece = np;
            size_t *nl = realloc(plen, (size_t)cap * sizeof *nl);
            if (nl) plen = nl;
            float *nsc = realloc(score, (size_t)cap * sizeof *nsc);
            if (nsc) score = nsc;
            if (!np || !nl || !nsc) { rc = err_set(e, ERR_NOMEM, "%s: out of memory", path); goto done; }
        }
        int32_t l;
        if (len - off < 8) { rc = err_set(e, ERR_FORMAT, "%s: record %d: truncated header at byte %zu", path, n, off); goto done; }
        memcpy(&score[n], buf + off, 4);
        memcpy(&l, buf + off + 4, 4);
        off += 8;
        if (!isfinite(score[n])) { rc = err_set(e, ERR_FORMAT, "%s: record %d: score is not finite", path, n); goto done; }
        if (l <= 0 || l > maxlen * 4 || (size_t)l > len - off) { rc = err_set(e, ERR_FORMAT, "%s: record %d: bad length %d", path, n, (int)l); goto done; }
        const char *s = buf + off;
        off += (size_t)l;
        char *conv;
        size_t cl;
        if (n == 0) conv = str_dup("<unk>"), cl = 5;
        else if (n == 1) conv = str_dup("<s>"), cl = 3;
        else if (n == 2) conv = str_dup("</s>"), cl = 4;
        else conv = to_sp(s, (size_t)l, &cl);
        if (!conv) { rc = err_set(e, ERR_NOMEM, "%s: out of memory", path); goto done; }
        piece[n] = pool_add(&pool, conv, cl);
        free(conv);
        if (!piece[n]) { rc = err_set(e, ERR_NOMEM, "%s: out of memory", path); goto done; }
        plen[n] = cl;
        if (!utf8_valid(piece[n], cl) || memchr(piece[n], 0, cl)) { rc = err_set(e, ERR_FORMAT, "%s: record %d: piece is not valid UTF-8", path, n); goto done; }
        if (strmap_get(&map, piece[n], cl) >= 0) {
            rc = err_set(e, ERR_FORMAT, "%s: record %d: piece '%s' duplicates record %d", path, n, piece[n], strmap_get(&map, piece[n], cl));
            goto done;
        }
        if (strmap_put(&map, piece[n], (uint32_t)cl, n)) { rc = err_set(e, ERR_NOMEM, "%s: out of memory", path); goto done; }
        n++;
    }
    if (off != len) { rc = err_set(e, ERR_FORMAT, "%s: %zu bytes left after %d records (vocab_size mismatch?)", path, len - off, n); goto done; }
    if (n < 3 + 256) { rc = err_set(e, ERR_FORMAT, "%s: %d records; expected <unk> <s> </s> and 256 byte pieces at least", path, n); goto done; }
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        if (strcmp(piece[3 + b], name)) { rc = err_set(e, ERR_FORMAT, "%s: record %d: expected byte piece %s, got '%s'", path, 3 + b, name, piece[3 + b]); goto done; }
    }
    root = build_json(piece, plen, score, n, &map);
    if (!root) { rc = err_set(e, ERR_NOMEM, "%s: out of memory building tokenizer.json", path); goto done; }
    *json = cJSON_Print(root);
    if (!*json) rc = err_set(e, ERR_NOMEM, "%s: out of memory", path);
done:
    cJSON_Delete(root);
    strmap_free(&map);
    pool_free(&pool);
    free(piece);
    free(plen);
    free(score);
    free(buf);
    return rc;
}
