// tokenizer.c: the encode/decode pipelines of a loaded tokenizer (load.c), in HF tokenizers'
// order: added tokens split out of the raw text -> normalizer -> added tokens with
// normalized:true -> pre-tokenizers -> BPE per pre-token -> post-processor. The stages
// themselves live in pretok.c, bpe.c and decoder.c.
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/internal.h"

// ---- encode ----
struct wcache { uint64_t h; size_t off; uint32_t len; int32_t start, count; };

static size_t utf8_bad_offset(const char *s, size_t len) {
    size_t i = 0;
    while (i < len) {
        size_t n = len - i < 4 ? len - i : 4;
        size_t k = 1;
        while (k <= n && !utf8_valid(s + i, k)) k++;
        if (k > n) return i;
        i += k;
    }
    return len;
}

int tok_encode(const struct tokenizer *t, const char *text, size_t len, int add_special, int32_t **ids, int *n,
               struct err *e) {
    *ids = NULL;
    *n = 0;
    if (!text && len) return err_set(e, ERR_INTERNAL, "tok_encode: NULL text");
    if (len > (size_t)INT32_MAX / 2) return err_set(e, ERR_RANGE, "tok_encode: text of %zu bytes is too long", len);
    if (!utf8_valid(text ? text : "", len))
        return err_set(e, ERR_FORMAT, "tok_encode: input is not valid UTF-8 (byte %zu)", utf8_bad_offset(text, len));
    struct plist a = {0}, b = {0};
    struct bpe_scratch bs = {0};
    struct wcache *wc = NULL;
    int32_t *out = NULL;
    int nout = 0, cap = 0, rc = 0;
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    if (!md) { rc = err_set(e, ERR_NOMEM, "tok_encode: out of memory"); goto done; }
    if (plist_push(&a, text ? text : "", len, -1, 1)) { rc = err_set(e, ERR_NOMEM, "tok_encode: out of memory"); goto done; }
    if ((rc = split_added(t, &t->trie_raw, &a, &b, e))) goto done;
    plist_reset(&a);
    for (int k = 0; k < b.n && !rc; k++) {
        const struct piece *p = &b.p[k];
        if (p->tok >= 0) rc = plist_push(&a, b.buf + p->off, p->len, p->tok, 0) ? err_set(e, ERR_NOMEM, "tok_encode: out of memory") : 0;
        else rc = normalize_piece(t, b.buf + p->off, p->len, p->first, &a, md, e);
    }
    if (rc) goto done;
    if (t->trie_norm.n) {
        plist_reset(&b);
        if ((rc = split_added(t, &t->trie_norm, &a, &b, e))) goto done;
        struct plist x = a; a = b; b = x;
    }
    for (int i = 0; i < t->n_pretok; i++) {
        plist_reset(&b);
        if ((rc = pretok_apply(&t->pretok[i], &a, &b, md, e))) goto done;
        struct plist x = a; a = b; b = x;
    }
    cap = (int)(len / 3) + 16;
    out = malloc((size_t)cap * sizeof *out);
    if (!out) { rc = err_set(e, ERR_NOMEM, "tok_encode: out of memory"); goto done; }
    if (add_special)
        for (int i = 0; i < t->n_pre; i++) out[nout++] = t->tpl_pre[i];
    // Per-call cache of pre-token -> ids (HF keeps a shared one; per call keeps encode
    // lock-free and thread-safe). Only worth building for long inputs.
    uint32_t wcap = 0;
    uint32_t wused = 0;
    if (a.n >= t->cache_min_pieces) {
        // Distinct words grow far slower than pieces; 64K slots (2 MB) hold the first 32K.
        wcap = 1024;
        while (wcap < (uint32_t)a.n * 2u && wcap < (1u << 16)) wcap <<= 1;
        wc = calloc(wcap, sizeof *wc);  // count == 0 marks an empty slot
    }
    for (int k = 0; k < a.n && !rc; k++) {
        const struct piece *p = &a.p[k];
        if (p->tok < 0 && wc && p->len <= 128) {
            const char *w = a.buf + p->off;
            uint64_t h = tok_hash_bytes(w, p->len);
            uint32_t j = (uint32_t)h & (wcap - 1);
            while (wc[j].count && !(wc[j].h == h && wc[j].len == p->len && !memcmp(a.buf + wc[j].off, w, p->len)))
                j = (j + 1) & (wcap - 1);
            if (wc[j].count) { // hit: copy the ids this word produced before
                if (nout + wc[j].count > cap) {
                    int nc = 2 * cap + wc[j].count;
                    int32_t *no = realloc(out, (size_t)nc * sizeof *no);
                    if (!no) { rc = ERR_NOMEM; break; }
                    out = no;
                    cap = nc;
                }
                memcpy(out + nout, out + wc[j].start, (size_t)wc[j].count * sizeof *out);
                nout += wc[j].count;
                continue;
            }
            int start = nout;
            rc = bpe_word(t, w, p->len, &bs, &out, &nout, &cap);
            if (!rc && nout > start && wused < wcap / 2) {
                wc[j] = (struct wcache){h, p->off, (uint32_t)p->len, start, nout - start};
                wused++;
            }
            continue;
        }
        if (p->tok >= 0) {
            if (nout == cap) {
                int32_t *no = realloc(out, (size_t)cap * 2 * sizeof *no);
                if (!no) { rc = ERR_NOMEM; break; }
                out = no;
                cap *= 2;
            }
            out[nout++] = p->tok;
        } else {
            rc = bpe_word(t, a.buf + p->off, p->len, &bs, &out, &nout, &cap);
        }
    }
    if (rc) { rc = err_set(e, rc, "tok_encode: %s", rc == ERR_NOMEM ? "out of memory" : "text too long"); goto done; }
    if (add_special && t->n_post) {
        int32_t *no = realloc(out, (size_t)(nout + t->n_post) * sizeof *no);
        if (!no) { rc = err_set(e, ERR_NOMEM, "tok_encode: out of memory"); goto done; }
        out = no;
        for (int i = 0; i < t->n_post; i++) out[nout++] = t->tpl_post[i];
    }
done:
    free(wc);
    if (md) pcre2_match_data_free(md);
    plist_free(&a);
    plist_free(&b);
    bpe_scratch_free(&bs);
    if (rc) { free(out); return rc; }
    if (!out) out = malloc(sizeof *out);
    if (!out) return err_set(e, ERR_NOMEM, "tok_encode: out of memory");
    *ids = out;
    *n = nout;
    return 0;
}

// ---- decode ----
int tok_decode(const struct tokenizer *t, const int32_t *ids, int n, char **text, size_t *len, struct err *e) {
    *text = NULL;
    *len = 0;
    struct plist a = {0}, b = {0};
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        if (ids[i] < 0 || ids[i] >= t->vocab_size) {
            rc = err_set(e, ERR_RANGE, "tok_decode: id %d at position %d is outside [0, %d)", (int)ids[i], i, t->vocab_size);
            break;
        }
        const char *p = t->id_piece[ids[i]];
        if (p && plist_push(&a, p, strlen(p), -1, 0)) rc = err_set(e, ERR_NOMEM, "tok_decode: out of memory");
    }
    if (!rc) rc = decode_chain(t, &a, &b, e);
    if (!rc) {
        *len = a.p[0].len;
        *text = malloc(*len + 1);
        if (!*text) rc = err_set(e, ERR_NOMEM, "tok_decode: out of memory");
        else {
            memcpy(*text, a.buf + a.p[0].off, *len);
            (*text)[*len] = 0;
        }
    }
    plist_free(&a);
    plist_free(&b);
    if (rc) *len = 0;
    return rc;
}

// ---- accessors ----
int tok_vocab_size(const struct tokenizer *t) { return t->vocab_size; }
int tok_bos_id(const struct tokenizer *t) { return t->bos_id; }
int tok_eos_id(const struct tokenizer *t) { return t->eos_id; }
int tok_adds_bos(const struct tokenizer *t) { return t->n_pre > 0 && t->bos_id >= 0 && t->tpl_pre[0] == t->bos_id; }
int tok_adds_eos(const struct tokenizer *t) { return t->n_post > 0 && t->eos_id >= 0 && t->tpl_post[t->n_post - 1] == t->eos_id; }

const char *tok_piece(const struct tokenizer *t, int id) {
    return id >= 0 && id < t->vocab_size ? t->id_piece[id] : NULL;
}

int tok_piece_id(const struct tokenizer *t, const char *piece, size_t len) {
    int32_t i = strmap_get(&t->added_map, piece, len);
    if (i >= 0) return t->added[i].id;
    return strmap_get(&t->vocab, piece, len);
}

int tok_hash(const struct tokenizer *t, char hex[65]) {
    memcpy(hex, t->sha, 65);
    return 0;
}
