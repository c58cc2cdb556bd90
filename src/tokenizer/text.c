// text.c: the tokenizer's lowest layer - the data every stage shares and nothing else: the
// string pool, the hash tables (vocabulary string -> id, merge pair -> rank), UTF-8 helpers,
// piece and match lists, the growable byte buffer, the GPT-2 ByteLevel alphabet and Rust's
// from_utf8_lossy. Calls no other tokenizer file (internal.h: the layering of the folder).
#include <stdlib.h>
#include <string.h>

#include "tokenizer/internal.h"

// ---- string pool ----
#define POOL_BLOCK (1u << 20)

char *pool_add(struct tok_pool *p, const char *s, size_t len) {
    if (len + 1 > p->left) {
        size_t sz = len + 1 > POOL_BLOCK ? len + 1 : POOL_BLOCK;
        if (p->n == p->cap) {
            int nc = p->cap ? 2 * p->cap : 16;
            char **nb = realloc(p->blocks, (size_t)nc * sizeof *nb);
            if (!nb) return NULL;
            p->blocks = nb;
            p->cap = nc;
        }
        char *b = malloc(sz);
        if (!b) return NULL;
        p->blocks[p->n++] = b;
        p->cur = b;
        p->left = sz;
    }
    char *r = p->cur;
    if (len) memcpy(r, s, len);
    r[len] = 0;
    p->cur += len + 1;
    p->left -= len + 1;
    return r;
}

void pool_free(struct tok_pool *p) {
    for (int i = 0; i < p->n; i++) free(p->blocks[i]);
    free(p->blocks);
    memset(p, 0, sizeof *p);
}

// ---- hashing ----
// 64-bit FNV-1a over 8-byte words then a final avalanche (keys are short: vocabulary pieces).
uint64_t tok_hash_bytes(const char *s, size_t len) {
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)len;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    for (; i < len; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

static uint32_t pow2_for(uint32_t expected) {
    uint32_t cap = 16;
    while (cap < expected * 2u + 16u && cap < (1u << 30)) cap <<= 1;
    return cap;
}

int strmap_init(struct strmap *m, uint32_t expected) {
    m->cap = pow2_for(expected);
    m->n = 0;
    m->slots = calloc(m->cap, sizeof *m->slots);
    return m->slots ? 0 : ERR_NOMEM;
}

static int strmap_grow(struct strmap *m) {
    struct strmap nm;
    if (strmap_init(&nm, m->cap)) return ERR_NOMEM;
    for (uint32_t i = 0; i < m->cap; i++) {
        struct strmap_slot *s = &m->slots[i];
        if (!s->s) continue;
        uint32_t j = (uint32_t)s->h & (nm.cap - 1);
        while (nm.slots[j].s) j = (j + 1) & (nm.cap - 1);
        nm.slots[j] = *s;
        nm.n++;
    }
    free(m->slots);
    *m = nm;
    return 0;
}

int strmap_put(struct strmap *m, const char *s, uint32_t len, int32_t id) {
    if ((m->n + 1) * 2 > m->cap && strmap_grow(m)) return ERR_NOMEM;
    uint64_t h = tok_hash_bytes(s, len);
    uint32_t j = (uint32_t)h & (m->cap - 1);
    while (m->slots[j].s) {
        struct strmap_slot *x = &m->slots[j];
        if (x->h == h && x->len == len && !memcmp(x->s, s, len)) { x->id = id; return 0; }
        j = (j + 1) & (m->cap - 1);
    }
    m->slots[j] = (struct strmap_slot){h, s, len, id};
    m->n++;
    return 0;
}

int32_t strmap_get(const struct strmap *m, const char *s, size_t len) {
    if (!m->slots) return -1;
    uint64_t h = tok_hash_bytes(s, len);
    uint32_t j = (uint32_t)h & (m->cap - 1);
    while (m->slots[j].s) {
        const struct strmap_slot *x = &m->slots[j];
        if (x->h == h && x->len == len && !memcmp(x->s, s, len)) return x->id;
        j = (j + 1) & (m->cap - 1);
    }
    return -1;
}

void strmap_free(struct strmap *m) {
    free(m->slots);
    memset(m, 0, sizeof *m);
}

// ---- merge map ----
#define MERGE_EMPTY UINT64_MAX

static inline uint32_t merge_hash(uint64_t k) {
    k *= 0x9e3779b97f4a7c15ull;
    return (uint32_t)(k >> 32);
}

int mergemap_init(struct mergemap *m, uint32_t expected) {
    m->cap = pow2_for(expected);
    m->n = 0;
    m->slots = malloc((size_t)m->cap * sizeof *m->slots);
    if (!m->slots) return ERR_NOMEM;
    for (uint32_t i = 0; i < m->cap; i++) m->slots[i].key = MERGE_EMPTY;
    return 0;
}

static int mergemap_grow(struct mergemap *m) {
    struct mergemap nm;
    if (mergemap_init(&nm, m->cap)) return ERR_NOMEM;
    for (uint32_t i = 0; i < m->cap; i++) {
        if (m->slots[i].key == MERGE_EMPTY) continue;
        uint32_t j = merge_hash(m->slots[i].key) & (nm.cap - 1);
        while (nm.slots[j].key != MERGE_EMPTY) j = (j + 1) & (nm.cap - 1);
        nm.slots[j] = m->slots[i];
        nm.n++;
    }
    free(m->slots);
    *m = nm;
    return 0;
}

// A later duplicate of a pair replaces the earlier one, as HF's HashMap collect does.
int mergemap_put(struct mergemap *m, int32_t a, int32_t b, uint32_t rank, int32_t id) {
    if ((m->n + 1) * 2 > m->cap && mergemap_grow(m)) return ERR_NOMEM;
    uint64_t k = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    uint32_t j = merge_hash(k) & (m->cap - 1);
    while (m->slots[j].key != MERGE_EMPTY) {
        if (m->slots[j].key == k) { m->slots[j].rank = rank; m->slots[j].id = id; return 0; }
        j = (j + 1) & (m->cap - 1);
    }
    m->slots[j] = (struct merge_slot){k, rank, id};
    m->n++;
    return 0;
}

int mergemap_get(const struct mergemap *m, int32_t a, int32_t b, uint32_t *rank, int32_t *id) {
    if (!m->slots) return 0;
    uint64_t k = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    uint32_t j = merge_hash(k) & (m->cap - 1);
    while (m->slots[j].key != MERGE_EMPTY) {
        if (m->slots[j].key == k) { *rank = m->slots[j].rank; *id = m->slots[j].id; return 1; }
        j = (j + 1) & (m->cap - 1);
    }
    return 0;
}

void mergemap_free(struct mergemap *m) {
    free(m->slots);
    memset(m, 0, sizeof *m);
}

// ---- UTF-8 ----
int utf8_next(const char *s, size_t len, uint32_t *cp) {
    const uint8_t *u = (const uint8_t *)s;
    uint8_t c = u[0];
    if (c < 0x80) { *cp = c; return 1; }
    int n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
    if (n == 0 || (size_t)n > len) { *cp = 0xfffd; return 1; }
    uint32_t v = c & (0x7f >> n);
    for (int i = 1; i < n; i++) {
        if ((u[i] & 0xc0) != 0x80) { *cp = 0xfffd; return 1; }
        v = (v << 6) | (u[i] & 0x3f);
    }
    *cp = v;
    return n;
}

int utf8_put(char *out, uint32_t cp) {
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) { out[0] = (char)(0xc0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3f)); return 2; }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

// ---- piece lists ----
void plist_reset(struct plist *l) { l->len = 0; l->n = 0; }

void plist_free(struct plist *l) {
    free(l->buf);
    free(l->p);
    memset(l, 0, sizeof *l);
}

int plist_append(struct plist *l, const char *s, size_t len) {
    if (l->len + len + 1 > l->cap) {
        size_t nc = l->cap ? l->cap : 256;
        while (nc < l->len + len + 1) nc *= 2;
        char *nb = realloc(l->buf, nc);
        if (!nb) return ERR_NOMEM;
        l->buf = nb;
        l->cap = nc;
    }
    if (len) memcpy(l->buf + l->len, s, len);
    l->len += len;
    l->buf[l->len] = 0;
    return 0;
}

int plist_piece(struct plist *l, size_t off, int32_t tok, int first) {
    // a list of empty pieces still gets a buffer: callers address pieces as buf + off, and
    // NULL + 0 is undefined (fuzz_tokenizer: decoding an empty token with a Strip decoder)
    if (!l->buf && plist_append(l, "", 0)) return ERR_NOMEM;
    if (l->n == l->cap_p) {
        int nc = l->cap_p ? 2 * l->cap_p : 64;
        struct piece *np = realloc(l->p, (size_t)nc * sizeof *np);
        if (!np) return ERR_NOMEM;
        l->p = np;
        l->cap_p = nc;
    }
    l->p[l->n++] = (struct piece){off, l->len - off, tok, first};
    return 0;
}

int plist_push(struct plist *l, const char *s, size_t len, int32_t tok, int first) {
    size_t off = l->len;
    if (plist_append(l, s, len)) return ERR_NOMEM;
    return plist_piece(l, off, tok, first);
}

// ---- match lists (HF Pattern::find_matches: matches and the gaps between them) ----
int mlist_add(struct mlist *ml, size_t s, size_t e, int m) {
    if (ml->n == ml->cap) {
        int nc = ml->cap ? 2 * ml->cap : 64;
        struct mrange *nr = realloc(ml->r, (size_t)nc * sizeof *nr);
        if (!nr) return ERR_NOMEM;
        ml->r = nr;
        ml->cap = nc;
    }
    ml->r[ml->n++] = (struct mrange){s, e, m};
    return 0;
}

int literal_matches(const char *pat, size_t plen, const char *s, size_t len, struct mlist *ml) {
    size_t prev = 0;
    ml->n = 0;
    if (plen > 0) {
        for (size_t i = 0; i + plen <= len;) {
            if (s[i] == pat[0] && !memcmp(s + i, pat, plen)) {
                if (i > prev && mlist_add(ml, prev, i, 0)) return ERR_NOMEM;
                if (mlist_add(ml, i, i + plen, 1)) return ERR_NOMEM;
                i += plen;
                prev = i;
            } else {
                i++;
            }
        }
    }
    if (prev < len && mlist_add(ml, prev, len, 0)) return ERR_NOMEM;
    return 0;
}

// ---- ByteLevel alphabet (GPT-2 bytes_to_unicode) ----
// Printable bytes 33-126, 161-172, 174-255 map to themselves; the other 68 bytes (0-32,
// 127-160, 173), in order, to U+0100.. U+0143. Pure functions: no shared state to race on.
static uint32_t bytelevel_cp(uint8_t b) {
    if (b <= 32) return 256u + b;
    if (b >= 127 && b <= 160) return (uint32_t)b + 162u; // 256 + 33 + (b - 127)
    if (b == 173) return 323;
    return b;
}

const char *bytelevel_char(uint8_t b, int *len, char buf[4]) {
    *len = utf8_put(buf, bytelevel_cp(b));
    return buf;
}

int bytelevel_byte(uint32_t cp) {
    if ((cp >= 33 && cp <= 126) || (cp >= 161 && cp <= 172) || (cp >= 174 && cp <= 255)) return (int)cp;
    if (cp >= 256 && cp <= 288) return (int)(cp - 256);
    if (cp >= 289 && cp <= 322) return (int)(cp - 162);
    if (cp == 323) return 173;
    return -1;
}

// ---- Rust String::from_utf8_lossy ----
int utf8_lossy_append(struct plist *out, const char *s, size_t len) {
    static const char fffd[3] = {(char)0xef, (char)0xbf, (char)0xbd};
    const uint8_t *u = (const uint8_t *)s;
    size_t i = 0, run = 0; // run: start of the current valid stretch
    while (i < len) {
        uint8_t c = u[i];
        size_t need;
        uint8_t lo = 0x80, hi = 0xbf;
        if (c < 0x80) { i++; continue; }
        if (c >= 0xc2 && c <= 0xdf) need = 1;
        else if (c >= 0xe0 && c <= 0xef) { need = 2; if (c == 0xe0) lo = 0xa0; if (c == 0xed) hi = 0x9f; }
        else if (c >= 0xf0 && c <= 0xf4) { need = 3; if (c == 0xf0) lo = 0x90; if (c == 0xf4) hi = 0x8f; }
        else need = 0;
        size_t k = 0; // continuation bytes that fit (the maximal subpart)
        if (need) {
            if (i + 1 < len && u[i + 1] >= lo && u[i + 1] <= hi) {
                k = 1;
                while (k < need && i + 1 + k < len && (u[i + 1 + k] & 0xc0) == 0x80) k++;
            }
        }
        if (need && k == need) { i += 1 + need; continue; }
        if (plist_append(out, s + run, i - run)) return ERR_NOMEM;
        if (plist_append(out, fffd, 3)) return ERR_NOMEM;
        i += 1 + k;
        run = i;
    }
    return plist_append(out, s + run, len - run);
}

// ---- growable byte buffer ----
int tok_sbuf_put(struct tok_sbuf *b, const char *s, size_t len) {
    if (b->len + len + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc < b->len + len + 1) nc *= 2;
        char *ns = realloc(b->s, nc);
        if (!ns) return ERR_NOMEM;
        b->s = ns;
        b->cap = nc;
    }
    if (len) memcpy(b->s + b->len, s, len);
    b->len += len;
    b->s[b->len] = 0;
    return 0;
}
