// pretok.c: the text-side stages of the tokenizer pipeline, each mirroring HF tokenizers:
// added-token splitting (leftmost-longest over a byte trie), normalizers (utf8proc for the
// Unicode forms) and pre-tokenizers (Split with PCRE2, ByteLevel, Metaspace, Digits).
// Knows nothing about JSON (load.c fills the step structs) or about BPE (bpe.c).
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <utf8proc.h>

#include "tokenizer/internal.h"

// Unicode White_Space (what Rust's char::is_whitespace and Oniguruma's \s test).
static int is_white_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0d) || c == 0x20 || c == 0x85 || c == 0xa0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f ||
           c == 0x3000;
}

static int is_word_char(uint32_t c) {
    if (c == '_') return 1;
    utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
    return (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO) ||
           (k >= UTF8PROC_CATEGORY_ND && k <= UTF8PROC_CATEGORY_NO);
}

static int is_numeric(uint32_t c) {
    utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
    return k >= UTF8PROC_CATEGORY_ND && k <= UTF8PROC_CATEGORY_NO;
}

// Length of the last code point of valid UTF-8 s[0..len).
static size_t utf8_prev_len(const char *s, size_t len) {
    size_t k = 1;
    while (k < len && k < 4 && ((uint8_t)s[len - k] & 0xc0) == 0x80) k++;
    return k;
}

// ---- regex ----
// Oniguruma's \s (HF's regex engine) is Unicode White_Space; PCRE2's UCP \s adds U+180E.
#define WS_CLASS "\\x{9}-\\x{d}\\x{20}\\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}"

int regex_compile(struct tok_regex *r, const char *pat, size_t len, const char *ctx, struct err *e) {
    size_t cap = len * 8 + 16 + (len / 2 + 1) * sizeof WS_CLASS;
    char *buf = malloc(cap), *o = buf;
    if (!buf) return err_set(e, ERR_NOMEM, "%s: out of memory", ctx);
    int in_class = 0;
    for (size_t i = 0; i < len; i++) {
        char c = pat[i];
        if (c == '\\' && i + 1 < len) {
            char d = pat[i + 1];
            if (d == 's' || d == 'S') {
                if (in_class && d == 'S') { memcpy(o, "\\S", 2); o += 2; }
                else if (in_class) { memcpy(o, WS_CLASS, sizeof WS_CLASS - 1); o += sizeof WS_CLASS - 1; }
                else {
                    *o++ = '[';
                    if (d == 'S') *o++ = '^';
                    memcpy(o, WS_CLASS, sizeof WS_CLASS - 1);
                    o += sizeof WS_CLASS - 1;
                    *o++ = ']';
                }
            } else {
                *o++ = c;
                *o++ = d;
            }
            i++;
            continue;
        }
        if (!in_class && c == '[') {
            in_class = 1;
            *o++ = c;
            if (i + 1 < len && pat[i + 1] == '^') *o++ = pat[++i];
            if (i + 1 < len && pat[i + 1] == ']') *o++ = pat[++i]; // leading ] is literal
            continue;
        }
        if (in_class && c == '[' && i + 1 < len && pat[i + 1] == ':') { // [:posix:]
            const char *end = NULL;
            for (size_t k = i + 2; k + 1 < len; k++)
                if (pat[k] == ':' && pat[k + 1] == ']') { end = pat + k + 2; break; }
            if (end) {
                size_t n = (size_t)(end - (pat + i));
                memcpy(o, pat + i, n);
                o += n;
                i += n - 1;
                continue;
            }
        }
        if (in_class && c == ']') in_class = 0;
        *o++ = c;
    }
    int ec;
    PCRE2_SIZE eo;
    r->code = pcre2_compile((PCRE2_SPTR)buf, (PCRE2_SIZE)(o - buf), PCRE2_UTF | PCRE2_UCP, &ec, &eo, NULL);
    free(buf);
    if (!r->code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        return err_set(e, ERR_FORMAT, "%s: invalid regex '%.80s': %s", ctx, pat, (const char *)msg);
    }
    pcre2_jit_compile(r->code, PCRE2_JIT_COMPLETE); // optional: the interpreter is the fallback
    snprintf(r->where, sizeof r->where, "%s: regex '%.*s%s'", ctx, len > 60 ? 57 : (int)len, pat, len > 60 ? "..." : "");
    return 0;
}

void regex_free(struct tok_regex *r) {
    if (r->code) pcre2_code_free(r->code);
    r->code = NULL;
}

// ---- matching (HF Pattern::find_matches: matches and the gaps between them) ----
// Bounds on a pathological pattern (catastrophic backtracking): PCRE2's own limits per match
// call, and the CPU time of one text's matching, 1 s + 10 us per byte - a pattern whose every
// match costs millions of steps stays under the first and ran for minutes. Tokenizers'
// patterns take well under 0.1 us per byte.
#define REGEX_MATCH_LIMIT 10000000u
#define REGEX_DEPTH_LIMIT 1000000u
#define REGEX_CPU_SECONDS(len) (1.0 + 1e-5 * (double)(len))

static double thread_cpu(void) {
    struct timespec t;
    return clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) ? 0 : (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static pcre2_match_context *g_match_context; // made once, read-only after: shared by threads

static void make_match_context(void) {
    g_match_context = pcre2_match_context_create(NULL);
    if (!g_match_context) return; // PCRE2's defaults (the same match limit) then
    pcre2_set_match_limit(g_match_context, REGEX_MATCH_LIMIT);
    pcre2_set_depth_limit(g_match_context, REGEX_DEPTH_LIMIT);
}

static pcre2_match_context *match_context(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, make_match_context);
    return g_match_context;
}

static int regex_matches(const struct tok_regex *re, const char *s, size_t len, pcre2_match_data *md,
                         struct mlist *ml, struct err *e) {
    size_t prev = 0, start = 0;
    ml->n = 0;
    pcre2_match_context *mc = match_context();
    const double t0 = thread_cpu();
    for (unsigned calls = 1; start < len; calls++) {
        int rc = pcre2_match(re->code, (PCRE2_SPTR)s, len, start, PCRE2_NO_UTF_CHECK, md, mc);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
            rc = pcre2_match(re->code, (PCRE2_SPTR)s, len, start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md, mc);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(rc, msg, sizeof msg);
            return err_set(e, ERR_RANGE, "%s: matching failed at byte %zu of a %zu-byte text: %s (a pathological pattern: "
                           "catastrophic backtracking)", re->where[0] ? re->where : "tokenizer", start, len, (const char *)msg);
        }
        if (!(calls & 15) && thread_cpu() - t0 > REGEX_CPU_SECONDS(len))
            return err_set(e, ERR_RANGE, "%s: more than %.2g CPU seconds matching a %zu-byte text (at byte %zu): a "
                           "pathological pattern (catastrophic backtracking)", re->where[0] ? re->where : "tokenizer",
                           REGEX_CPU_SECONDS(len), len, start);
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t ms = ov[0], me = ov[1];
        if (me <= ms) { // empty match: HF keeps no piece for it; step one code point
            uint32_t cp;
            start = ms + (size_t)utf8_next(s + ms, len - ms, &cp);
            if (ms >= len) break;
            continue;
        }
        if (ms > prev && mlist_add(ml, prev, ms, 0)) return ERR_NOMEM;
        if (mlist_add(ml, ms, me, 1)) return ERR_NOMEM;
        prev = start = me;
    }
    if (prev < len && mlist_add(ml, prev, len, 0)) return ERR_NOMEM;
    return 0;
}

// HF NormalizedString::split: applies the delimiter behavior to a match list and pushes the
// non-empty results (pieces of s) to out. first: s starts the original text.
static int apply_behavior(struct mlist *ml, enum split_behavior b, int invert, const char *s, int first,
                          struct plist *out) {
    if (invert)
        for (int i = 0; i < ml->n; i++) ml->r[i].m = !ml->r[i].m;
    int n = 0; // results compacted in place into ml->r[0..n)
    struct mrange *r = ml->r;
    if (b == SPLIT_REMOVED || b == SPLIT_ISOLATED) {
        for (int i = 0; i < ml->n; i++)
            if (!(b == SPLIT_REMOVED && r[i].m)) r[n++] = r[i];
    } else if (b == SPLIT_MERGED_PREV) {
        int prev_match = 0;
        for (int i = 0; i < ml->n; i++) {
            struct mrange x = r[i];
            if (x.m && !prev_match && n > 0) r[n - 1].e = x.e;
            else r[n++] = x;
            prev_match = x.m;
        }
    } else if (b == SPLIT_MERGED_NEXT) {
        // HF folds from the right: a match is prepended to the following piece.
        int prev_match = 0, m = ml->n;
        n = 0;
        for (int i = m - 1; i >= 0; i--) {
            struct mrange x = r[i];
            // results are built at the end of the array, growing leftwards
            if (x.m && !prev_match && n > 0) r[m - n].s = x.s;
            else { n++; r[m - n] = x; }
            prev_match = x.m;
        }
        memmove(r, r + (m - n), (size_t)n * sizeof *r);
    } else { // CONTIGUOUS
        int prev_match = 0;
        for (int i = 0; i < ml->n; i++) {
            struct mrange x = r[i];
            if (x.m == prev_match && n > 0) r[n - 1].e = x.e;
            else r[n++] = x;
            prev_match = x.m;
        }
    }
    for (int i = 0; i < n; i++) {
        if (r[i].e <= r[i].s) continue;
        if (plist_push(out, s + r[i].s, r[i].e - r[i].s, -1, first && r[i].s == 0)) return ERR_NOMEM;
    }
    return 0;
}

// ---- added tokens ----
int trie_add(struct trie *tr, const char *s, size_t len, int32_t tok) {
    if (tr->n == 0) {
        tr->cap = 64;
        tr->nodes = malloc((size_t)tr->cap * sizeof *tr->nodes);
        if (!tr->nodes) return ERR_NOMEM;
        tr->nodes[0] = (struct trie_node){-1, -1, -1, 0};
        tr->n = 1;
    }
    int cur = 0;
    for (size_t i = 0; i < len; i++) {
        uint8_t b = (uint8_t)s[i];
        int c = tr->nodes[cur].child;
        while (c >= 0 && tr->nodes[c].byte != b) c = tr->nodes[c].sibling;
        if (c < 0) {
            if (tr->n == tr->cap) {
                int nc = tr->cap * 2;
                struct trie_node *nn = realloc(tr->nodes, (size_t)nc * sizeof *nn);
                if (!nn) return ERR_NOMEM;
                tr->nodes = nn;
                tr->cap = nc;
            }
            c = tr->n++;
            tr->nodes[c] = (struct trie_node){-1, tr->nodes[cur].child, -1, b};
            tr->nodes[cur].child = c;
        }
        cur = c;
    }
    if (cur == 0) return 0; // empty content never matches
    tr->nodes[cur].tok = tok;
    if (len) tr->first[(uint8_t)s[0]] = 1;
    return 0;
}

void trie_free(struct trie *tr) {
    free(tr->nodes);
    memset(tr, 0, sizeof *tr);
}

// Longest added token starting at s[0..len) (index into t->added), or -1; *mlen its length.
static int trie_longest(const struct trie *tr, const char *s, size_t len, size_t *mlen) {
    int cur = 0, best = -1;
    for (size_t i = 0; i < len; i++) {
        int c = tr->nodes[cur].child;
        uint8_t b = (uint8_t)s[i];
        while (c >= 0 && tr->nodes[c].byte != b) c = tr->nodes[c].sibling;
        if (c < 0) break;
        cur = c;
        if (tr->nodes[cur].tok >= 0) { best = tr->nodes[cur].tok; *mlen = i + 1; }
    }
    return best;
}

int split_added(const struct tokenizer *t, const struct trie *tr, const struct plist *in, struct plist *out,
                struct err *e) {
    for (int k = 0; k < in->n; k++) {
        const struct piece *p = &in->p[k];
        const char *s = in->buf + p->off;
        size_t len = p->len;
        if (p->tok >= 0 || tr->n == 0) {
            if (plist_push(out, s, len, p->tok, p->first)) goto oom;
            continue;
        }
        size_t done = 0; // end of the last emitted token (HF start_offset)
        for (size_t i = 0; i < len;) {
            size_t mlen = 0;
            int ti = tr->first[(uint8_t)s[i]] ? trie_longest(tr, s + i, len - i, &mlen) : -1;
            if (ti < 0) { i++; continue; }
            const struct added_token *at = &t->added[ti];
            size_t ms = i, me = i + mlen;
            uint32_t cp;
            if (at->single_word) {
                int before = ms > 0 && (utf8_next(s + ms - utf8_prev_len(s, ms), utf8_prev_len(s, ms), &cp),
                                        is_word_char(cp));
                int after = me < len && (utf8_next(s + me, len - me, &cp), is_word_char(cp));
                if (before || after) { i = me; continue; }
            }
            if (at->lstrip) {
                while (ms > done) {
                    size_t pl = utf8_prev_len(s, ms);
                    utf8_next(s + ms - pl, pl, &cp);
                    if (!is_white_space(cp)) break;
                    ms -= pl;
                }
            }
            if (at->rstrip) {
                while (me < len) {
                    int cl = utf8_next(s + me, len - me, &cp);
                    if (!is_white_space(cp)) break;
                    me += (size_t)cl;
                }
            }
            if (ms > done && plist_push(out, s + done, ms - done, -1, p->first && done == 0)) goto oom;
            if (plist_push(out, s + ms, me - ms, at->id, 0)) goto oom;
            done = i = me;
        }
        if (done < len && plist_push(out, s + done, len - done, -1, p->first && done == 0)) goto oom;
    }
    return 0;
oom:
    return err_set(e, ERR_NOMEM, "tokenizer: out of memory splitting added tokens");
}

// ---- normalizers ----
static int is_ascii(const char *s, size_t len) {
    for (size_t i = 0; i < len; i++)
        if ((uint8_t)s[i] >= 0x80) return 0;
    return 1;
}

static int map_utf8proc(const char *s, size_t len, int opt, struct tok_sbuf *o, struct err *e) {
    utf8proc_uint8_t *dst = NULL;
    utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)len, &dst, opt);
    if (n < 0) return err_set(e, ERR_FORMAT, "tokenizer: normalization failed: %s", utf8proc_errmsg(n));
    int rc = tok_sbuf_put(o, (const char *)dst, (size_t)n);
    free(dst);
    return rc;
}

// NFC touching only the stretches that can change. Every code point below U+0300 is a
// starter with NFC_Quick_Check=Yes that is never the second element of a canonical
// composition, so text splits into independent NFC segments before each such code point;
// only runs holding a code point >= U+0300 (plus the starter just before them) go to utf8proc.
static int nfc_runs(const char *s, size_t len, struct tok_sbuf *o, struct err *e) {
    size_t i = 0, copied = 0, last_low = 0; // last_low: start of the last code point < U+0300
    while (i < len) {
        uint32_t cp;
        int cl = utf8_next(s + i, len - i, &cp);
        if (cp < 0x300) { last_low = i; i += (size_t)cl; continue; }
        size_t a = last_low >= copied && last_low < i ? last_low : i, b = i + (size_t)cl;
        while (b < len) {
            int bl = utf8_next(s + b, len - b, &cp);
            if (cp < 0x300) break;
            b += (size_t)bl;
        }
        if (tok_sbuf_put(o, s + copied, a - copied)) return ERR_NOMEM;
        int rc = map_utf8proc(s + a, b - a, UTF8PROC_STABLE | UTF8PROC_COMPOSE, o, e);
        if (rc) return rc;
        copied = i = b;
        last_low = b;
    }
    return tok_sbuf_put(o, s + copied, len - copied);
}

static int norm_step(const struct norm_step *st, const char *s, size_t len, struct tok_sbuf *o, pcre2_match_data *md,
                     struct err *e) {
    o->len = 0;
    switch (st->type) {
    case NORM_NFC: case NORM_NFD: case NORM_NFKC: case NORM_NFKD: {
        if (is_ascii(s, len)) return tok_sbuf_put(o, s, len); // every form leaves ASCII unchanged
        if (st->type == NORM_NFC) return nfc_runs(s, len, o, e);
        int opt = UTF8PROC_STABLE;
        if (st->type == NORM_NFC || st->type == NORM_NFKC) opt |= UTF8PROC_COMPOSE;
        else opt |= UTF8PROC_DECOMPOSE;
        if (st->type == NORM_NFKC || st->type == NORM_NFKD) opt |= UTF8PROC_COMPAT;
        return map_utf8proc(s, len, opt, o, e);
    }
    case NORM_LOWERCASE:
        for (size_t i = 0; i < len;) {
            uint32_t cp;
            int cl = utf8_next(s + i, len - i, &cp);
            char tmp[4];
            // HF: Rust's char::to_lowercase, the full mapping. Unicode's one unconditional
            // multi-character lowercase (SpecialCasing.txt) is U+0130 -> "i" U+0307; utf8proc's
            // simple mapping gives "i" alone. (Char by char: no final-sigma rule, as HF.)
            if (cp == 0x130) {
                if (tok_sbuf_put(o, "i\xcc\x87", 3)) return ERR_NOMEM;
                i += (size_t)cl;
                continue;
            }
            int tl = utf8_put(tmp, (uint32_t)utf8proc_tolower((utf8proc_int32_t)cp));
            if (tok_sbuf_put(o, tmp, (size_t)tl)) return ERR_NOMEM;
            i += (size_t)cl;
        }
        return 0;
    case NORM_PREPEND:
        if (len == 0) return 0; // HF prepends only to non-empty text
        if (tok_sbuf_put(o, st->a, st->alen)) return ERR_NOMEM;
        return tok_sbuf_put(o, s, len);
    case NORM_REPLACE: {
        struct mlist ml = {0};
        int rc = st->re.code ? regex_matches(&st->re, s, len, md, &ml, e) : literal_matches(st->a, st->alen, s, len, &ml);
        for (int i = 0; !rc && i < ml.n; i++)
            rc = ml.r[i].m ? tok_sbuf_put(o, st->b, st->blen) : tok_sbuf_put(o, s + ml.r[i].s, ml.r[i].e - ml.r[i].s);
        free(ml.r);
        if (rc == 0 && o->len == 0) rc = tok_sbuf_put(o, "", 0);
        return rc;
    }
    case NORM_STRIP: {
        size_t a = 0, b = len;
        uint32_t cp;
        while (st->left && a < b) {
            int cl = utf8_next(s + a, b - a, &cp);
            if (!is_white_space(cp)) break;
            a += (size_t)cl;
        }
        while (st->right && b > a) {
            size_t pl = utf8_prev_len(s + a, b - a);
            utf8_next(s + b - pl, pl, &cp);
            if (!is_white_space(cp)) break;
            b -= pl;
        }
        return tok_sbuf_put(o, s + a, b - a);
    }
    }
    return err_set(e, ERR_INTERNAL, "tokenizer: unknown normalizer step %d", (int)st->type);
}

int normalize_piece(const struct tokenizer *t, const char *s, size_t len, int first, struct plist *out,
                    pcre2_match_data *md, struct err *e) {
    if (t->n_norm == 0) {
        if (plist_push(out, s, len, -1, first)) return err_set(e, ERR_NOMEM, "tokenizer: out of memory");
        return 0;
    }
    struct tok_sbuf b[2] = {{0}, {0}};
    const char *cur = s;
    size_t cur_len = len;
    int rc = 0;
    for (int i = 0; i < t->n_norm && !rc; i++) {
        struct tok_sbuf *o = &b[i & 1];
        rc = norm_step(&t->norm[i], cur, cur_len, o, md, e);
        if (rc == ERR_NOMEM) err_set(e, rc, "tokenizer: out of memory normalizing");
        if (!rc && !o->s && tok_sbuf_put(o, "", 0)) rc = err_set(e, ERR_NOMEM, "tokenizer: out of memory");
        cur = o->s;
        cur_len = o->len;
    }
    if (!rc && plist_push(out, cur, cur_len, -1, first)) rc = err_set(e, ERR_NOMEM, "tokenizer: out of memory");
    free(b[0].s);
    free(b[1].s);
    return rc;
}

// GPT-2's pre-tokenization regex (HF ByteLevel use_regex).
const char *tok_gpt2_regex =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

// ---- pre-tokenizers ----
static int push_bytelevel(struct plist *out, const char *s, size_t len, int first) {
    size_t off = out->len;
    for (size_t i = 0; i < len; i++) {
        int cl;
        char buf[4];
        const char *c = bytelevel_char((uint8_t)s[i], &cl, buf);
        if (plist_append(out, c, (size_t)cl)) return ERR_NOMEM;
    }
    return plist_piece(out, off, -1, first);
}

int pretok_apply(const struct pretok_step *st, const struct plist *in, struct plist *out, pcre2_match_data *md,
                 struct err *e) {
    struct mlist ml = {0};
    struct tok_sbuf tmp = {0};
    int rc = 0;
    for (int k = 0; k < in->n && !rc; k++) {
        const struct piece *p = &in->p[k];
        const char *s = in->buf + p->off;
        size_t len = p->len;
        if (p->tok >= 0) { rc = plist_push(out, s, len, p->tok, 0); continue; }
        switch (st->type) {
        case PT_SPLIT:
            rc = st->re.code ? regex_matches(&st->re, s, len, md, &ml, e) : literal_matches(st->lit, st->litlen, s, len, &ml);
            if (!rc) rc = apply_behavior(&ml, st->behavior, st->invert, s, p->first, out);
            break;
        case PT_BYTELEVEL: {
            tmp.len = 0;
            if (st->add_prefix_space && len > 0 && s[0] != ' ') { // HF prepend is a no-op on empty text
                rc = tok_sbuf_put(&tmp, " ", 1);
                if (!rc) rc = tok_sbuf_put(&tmp, s, len);
                s = tmp.s;
                len = tmp.len;
            }
            if (rc) break;
            if (!st->use_regex) {
                if (len) rc = push_bytelevel(out, s, len, p->first);
                break;
            }
            rc = regex_matches(&st->re, s, len, md, &ml, e);
            for (int i = 0; !rc && i < ml.n; i++)
                rc = push_bytelevel(out, s + ml.r[i].s, ml.r[i].e - ml.r[i].s, p->first && ml.r[i].s == 0);
            break;
        }
        case PT_METASPACE: {
            tmp.len = 0;
            int starts = len >= st->repllen && !memcmp(s, st->repl, st->repllen);
            // a leading space becomes the replacement too, so test the replaced text
            if (len > 0 && s[0] == ' ') starts = 1;
            int prepend = len > 0 && (st->scheme == PREPEND_ALWAYS || (st->scheme == PREPEND_FIRST && p->first)) && !starts;
            if (prepend) rc = tok_sbuf_put(&tmp, st->repl, st->repllen);
            for (size_t i = 0; i < len && !rc; i++)
                rc = s[i] == ' ' ? tok_sbuf_put(&tmp, st->repl, st->repllen) : tok_sbuf_put(&tmp, s + i, 1);
            if (!rc && !tmp.s) rc = tok_sbuf_put(&tmp, "", 0);
            if (rc) break;
            if (!st->split) {
                if (tmp.len) rc = plist_push(out, tmp.s, tmp.len, -1, p->first);
                break;
            }
            rc = literal_matches(st->repl, st->repllen, tmp.s, tmp.len, &ml);
            if (!rc) rc = apply_behavior(&ml, SPLIT_MERGED_NEXT, 0, tmp.s, p->first, out);
            break;
        }
        case PT_DIGITS: {
            // HF char-predicate pattern: each numeric char is a match, other runs are gaps.
            ml.n = 0;
            for (size_t i = 0; i < len && !rc;) {
                uint32_t cp;
                int cl = utf8_next(s + i, len - i, &cp);
                int m = is_numeric(cp);
                if (!m && ml.n > 0 && !ml.r[ml.n - 1].m) ml.r[ml.n - 1].e = i + (size_t)cl;
                else rc = mlist_add(&ml, i, i + (size_t)cl, m);
                i += (size_t)cl;
            }
            if (!rc) rc = apply_behavior(&ml, st->individual ? SPLIT_ISOLATED : SPLIT_CONTIGUOUS, 0, s, p->first, out);
            break;
        }
        }
    }
    free(ml.r);
    free(tmp.s);
    if (rc == ERR_NOMEM) return err_set(e, rc, "tokenizer: out of memory pre-tokenizing");
    return rc;
}
