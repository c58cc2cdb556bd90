// bpe.c: the BPE merge loop of HF tokenizers' Word::merge_all: a min-heap keyed by (rank, position) over a
// doubly linked symbol list, so a word of n symbols costs O(n log n), never O(n^2) rescans.
#include <stdlib.h>
#include <string.h>

#include "tokenizer/internal.h"

// ---- BPE on one word ----
void bpe_scratch_free(struct bpe_scratch *s) {
    free(s->sym);
    free(s->heap);
    memset(s, 0, sizeof *s);
}

static int push_id(int32_t **ids, int *n, int *cap, int32_t id) {
    if (*n == *cap) {
        int nc = *cap ? 2 * *cap : 64;
        int32_t *ni = realloc(*ids, (size_t)nc * sizeof *ni);
        if (!ni) return ERR_NOMEM;
        *ids = ni;
        *cap = nc;
    }
    (*ids)[(*n)++] = id;
    return 0;
}

static inline int merge_less(const struct bpe_merge *a, const struct bpe_merge *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static void heap_push(struct bpe_merge *h, int *n, struct bpe_merge m) {
    int i = (*n)++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!merge_less(&m, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = m;
}

static struct bpe_merge heap_pop(struct bpe_merge *h, int *n) {
    struct bpe_merge top = h[0], last = h[--(*n)];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && merge_less(&h[c + 1], &h[c])) c++;
        if (!merge_less(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0) h[i] = last;
    return top;
}

static int32_t char_id(const struct tokenizer *t, const char *s, int clen, uint32_t cp) {
    if (cp < 0x10000) return t->cp_id[cp];
    return strmap_get(&t->vocab, s, (size_t)clen);
}

int bpe_word(const struct tokenizer *t, const char *w, size_t len, struct bpe_scratch *s, int32_t **ids, int *n,
             int *cap) {
    if (len == 0) return 0;
    if (t->ignore_merges) {
        int32_t id = strmap_get(&t->vocab, w, len);
        if (id >= 0) return push_id(ids, n, cap, id);
    }
    // Worst case one symbol per byte (byte fallback); the heap holds at most one live entry
    // per pair plus stale ones, bounded by 2 * symbols.
    if ((size_t)s->cap_sym < len) {
        if (len > (size_t)INT32_MAX / 4) return ERR_RANGE;
        free(s->sym);
        free(s->heap);
        s->cap_sym = (int)len;
        s->sym = malloc(len * sizeof *s->sym);
        s->cap_heap = (int)len * 2 + 2;
        s->heap = malloc((size_t)s->cap_heap * sizeof *s->heap);
        if (!s->sym || !s->heap) { bpe_scratch_free(s); return ERR_NOMEM; }
    }
    struct bpe_sym *sym = s->sym;
    int ns = 0;
    int prev_unk = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        int cl = utf8_next(w + i, len - i, &cp);
        int32_t id = char_id(t, w + i, cl, cp);
        if (id >= 0) {
            sym[ns++] = (struct bpe_sym){id, 0, 0, (uint32_t)cl};
            prev_unk = 0;
        } else {
            int ok = t->byte_fallback;
            if (ok)
                for (int k = 0; k < cl; k++)
                    if (t->byte_id[(uint8_t)w[i + k]] < 0) ok = 0;
            if (ok) {
                for (int k = 0; k < cl; k++) sym[ns++] = (struct bpe_sym){t->byte_id[(uint8_t)w[i + k]], 0, 0, 1};
                prev_unk = 0;
            } else if (t->unk_id >= 0) {
                if (t->fuse_unk && prev_unk) sym[ns - 1].len += (uint32_t)cl;
                else sym[ns++] = (struct bpe_sym){t->unk_id, 0, 0, (uint32_t)cl};
                prev_unk = 1;
            } // else: HF drops the character silently
        }
        i += (size_t)cl;
    }
    for (int i = 0; i < ns; i++) {
        sym[i].prev = i - 1;
        sym[i].next = i + 1 < ns ? i + 1 : -1;
    }
    struct bpe_merge *heap = s->heap;
    int nh = 0;
    for (int i = 0; i + 1 < ns; i++) {
        uint32_t r;
        int32_t id;
        if (mergemap_get(&t->merges, sym[i].id, sym[i + 1].id, &r, &id))
            heap_push(heap, &nh, (struct bpe_merge){r, (uint32_t)i, id, sym[i].id, sym[i + 1].id});
    }
    while (nh > 0) {
        struct bpe_merge top = heap_pop(heap, &nh);
        struct bpe_sym *cur = &sym[top.pos];
        if (cur->len == 0 || cur->next < 0) continue;
        struct bpe_sym *right = &sym[cur->next];
        uint32_t r;
        int32_t id;
        // Stale entry: the pair at this position changed since it was queued. HF re-looks the
        // pair up and accepts any pair merging to the same id; an unchanged pair needs no lookup.
        if ((cur->id != top.left || right->id != top.right) &&
            (!mergemap_get(&t->merges, cur->id, right->id, &r, &id) || id != top.id))
            continue;
        cur->id = top.id;
        cur->len += right->len;
        right->len = 0;
        cur->next = right->next;
        if (right->next >= 0) sym[right->next].prev = (int32_t)top.pos;
        if (nh + 2 > s->cap_heap) {
            int nc = s->cap_heap * 2;
            struct bpe_merge *nhp = realloc(s->heap, (size_t)nc * sizeof *nhp);
            if (!nhp) return ERR_NOMEM;
            s->heap = heap = nhp;
            s->cap_heap = nc;
        }
        if (cur->prev >= 0 && mergemap_get(&t->merges, sym[cur->prev].id, cur->id, &r, &id))
            heap_push(heap, &nh, (struct bpe_merge){r, (uint32_t)cur->prev, id, sym[cur->prev].id, cur->id});
        if (cur->next >= 0 && mergemap_get(&t->merges, cur->id, sym[cur->next].id, &r, &id))
            heap_push(heap, &nh, (struct bpe_merge){r, top.pos, id, cur->id, sym[cur->next].id});
    }
    for (int i = 0; i >= 0 && i < ns; i = sym[i].next) {
        int rc = push_id(ids, n, cap, sym[i].id);
        if (rc) return rc;
    }
    return 0;
}
