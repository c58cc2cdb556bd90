// decoder.c: ids -> text, HF tokenizers' decoders (ByteLevel, ByteFallback, Fuse, Replace,
// Strip, Metaspace) chained over the list of token strings, and Rust's from_utf8_lossy, which
// ByteLevel uses to turn partial UTF-8 into U+FFFD.
#include <stdlib.h>
#include <string.h>

#include "tokenizer/internal.h"

// ---- decoders ----
static int dec_one(const struct tokenizer *t, const struct dec_step *st, const struct plist *in, struct plist *out) {
    switch (st->type) {
    case DEC_BYTELEVEL: {
        // Per token: every char mapped back to its byte, or the token's own bytes if some char
        // is outside the alphabet; then one lossy UTF-8 conversion of the whole (HF ByteLevel).
        struct plist raw = {0};
        int rc = 0;
        for (int k = 0; k < in->n && !rc; k++) {
            const char *s = in->buf + in->p[k].off;
            size_t len = in->p[k].len, i = 0;
            size_t mark = raw.len;
            while (i < len && !rc) {
                uint32_t cp;
                int cl = utf8_next(s + i, len - i, &cp);
                int b = bytelevel_byte(cp);
                if (b < 0) break;
                char c = (char)b;
                rc = plist_append(&raw, &c, 1);
                i += (size_t)cl;
            }
            if (!rc && i < len) { raw.len = mark; rc = plist_append(&raw, s, len); }
        }
        size_t off = out->len;
        if (!rc) rc = utf8_lossy_append(out, raw.buf ? raw.buf : "", raw.len);
        if (!rc) rc = plist_piece(out, off, -1, 0);
        plist_free(&raw);
        return rc;
    }
    case DEC_FUSE: {
        size_t off = out->len;
        for (int k = 0; k < in->n; k++)
            if (plist_append(out, in->buf + in->p[k].off, in->p[k].len)) return ERR_NOMEM;
        return plist_piece(out, off, -1, 0);
    }
    case DEC_BYTEFALLBACK: {
        // Runs of <0xXX> tokens become their bytes if valid UTF-8, else one U+FFFD per byte.
        struct tok_sbuf bytes = {0};
        int rc = 0;
        for (int k = 0; k <= in->n && !rc; k++) {
            const char *s = k < in->n ? in->buf + in->p[k].off : NULL;
            size_t len = k < in->n ? in->p[k].len : 0;
            int isb = s && len == 6 && !memcmp(s, "<0x", 3) && s[5] == '>';
            unsigned v = 0;
            if (isb) {
                for (int j = 3; j < 5 && isb; j++) {
                    char c = s[j];
                    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
                    if (d < 0) isb = 0;
                    v = v * 16 + (unsigned)d;
                }
            }
            if (isb) { char c = (char)v; rc = tok_sbuf_put(&bytes, &c, 1); continue; }
            if (bytes.len) {
                if (utf8_valid(bytes.s, bytes.len)) rc = plist_push(out, bytes.s, bytes.len, -1, 0);
                else
                    for (size_t j = 0; j < bytes.len && !rc; j++) rc = plist_push(out, "\xef\xbf\xbd", 3, -1, 0);
                bytes.len = 0;
            }
            if (s && !rc) rc = plist_push(out, s, len, -1, 0);
        }
        free(bytes.s);
        return rc;
    }
    case DEC_REPLACE: {
        struct mlist ml = {0};
        int rc = 0;
        for (int k = 0; k < in->n && !rc; k++) {
            const char *s = in->buf + in->p[k].off;
            size_t off = out->len;
            rc = literal_matches(st->a, st->alen, s, in->p[k].len, &ml);
            for (int i = 0; !rc && i < ml.n; i++)
                rc = ml.r[i].m ? plist_append(out, st->b, st->blen) : plist_append(out, s + ml.r[i].s, ml.r[i].e - ml.r[i].s);
            if (!rc) rc = plist_piece(out, off, -1, 0);
        }
        free(ml.r);
        return rc;
    }
    case DEC_STRIP:
        // Per token: drop up to `start` leading and `stop` trailing copies of the content char.
        for (int k = 0; k < in->n; k++) {
            const char *s = in->buf + in->p[k].off;
            size_t a = 0, b = in->p[k].len;
            for (int j = 0; j < st->start && b - a >= st->alen && !memcmp(s + a, st->a, st->alen); j++) a += st->alen;
            for (int j = 0; j < st->stop && b - a >= st->alen && !memcmp(s + b - st->alen, st->a, st->alen); j++)
                b -= st->alen;
            if (plist_push(out, s + a, b - a, -1, 0)) return ERR_NOMEM;
        }
        return 0;
    case DEC_METASPACE:
        // Replacement char -> ' '; in the first token it is dropped when a prefix was prepended.
        for (int k = 0; k < in->n; k++) {
            const char *s = in->buf + in->p[k].off;
            size_t len = in->p[k].len, off = out->len;
            for (size_t i = 0; i < len;) {
                if (len - i >= st->alen && !memcmp(s + i, st->a, st->alen)) {
                    if (!(k == 0 && st->scheme != PREPEND_NEVER) && plist_append(out, " ", 1)) return ERR_NOMEM;
                    i += st->alen;
                } else {
                    if (plist_append(out, s + i, 1)) return ERR_NOMEM;
                    i++;
                }
            }
            if (plist_piece(out, off, -1, 0)) return ERR_NOMEM;
        }
        return 0;
    }
    (void)t;
    return ERR_INTERNAL;
}

int decode_chain(const struct tokenizer *t, struct plist *toks, struct plist *tmp, struct err *e) {
    struct plist *a = toks, *b = tmp;
    for (int i = 0; t->has_decoder && i < t->n_dec; i++) {
        plist_reset(b);
        int rc = dec_one(t, &t->dec[i], a, b);
        if (rc) return err_set(e, rc, "tokenizer: decoding failed (%s)", err_code_name(rc));
        struct plist *x = a;
        a = b;
        b = x;
    }
    // Concatenate what is left into one piece (HF joins with " " when there is no decoder).
    plist_reset(b);
    for (int k = 0; k < a->n; k++)
        if ((!t->has_decoder && k && plist_append(b, " ", 1)) || plist_append(b, a->buf + a->p[k].off, a->p[k].len))
            return err_set(e, ERR_NOMEM, "tokenizer: out of memory decoding");
    if (plist_append(b, "", 0) || plist_piece(b, 0, -1, 0)) return err_set(e, ERR_NOMEM, "tokenizer: out of memory");
    if (b != toks) {
        struct plist x = *toks;
        *toks = *tmp;
        *tmp = x;
    }
    return 0;
}
