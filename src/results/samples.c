// samples.c: per-item sample lines (write/parse), the growable buffer they are written into,
// the crash-safe writer of zstd frames with resume, and the samples reader (results.h).
#include "results/results.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "base/json_util.h"
#include "base/sha256.h"
#include "results/run_rec.h"
#include "results/stamp.h"

// ---- buffer ----
// The first error sticks (b->err): every later call returns it and appends nothing, so a
// caller that keeps `rc |= results_buf_...` or checks only its last call still sees the first
// failure's code, not an OR of different codes.
int results_buf_put(struct results_buf *b, const char *s, size_t n) {
    if (b->err) return b->err;
    if (b->n + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 1024;
        while (nc < b->n + n + 1) nc *= 2;
        char *t = realloc(b->p, nc);
        if (!t) return b->err = ERR_NOMEM;
        b->p = t;
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}

int results_buf_printf(struct results_buf *b, const char *fmt, ...) {
    char tmp[512];
    if (b->err) return b->err;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < 0) return b->err = ERR_INTERNAL;
    if ((size_t)k < sizeof tmp) return results_buf_put(b, tmp, (size_t)k);
    char *big = malloc((size_t)k + 1);
    if (!big) return b->err = ERR_NOMEM;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)k + 1, fmt, ap);
    va_end(ap);
    int rc = results_buf_put(b, big, (size_t)k);
    free(big);
    return rc;
}

// ---- sample lines ----
void results_sample_free(struct results_sample *s) {
    if (!s) return;
    free(s->id); free(s->subject); free(s->ll); free(s->n_chars); free(s->n_tok); free(s->greedy); free(s->kl); free(s->generated);
    memset(s, 0, sizeof *s);
}

static int put_str(struct results_buf *b, const char *s) {
    int rc = results_buf_put(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; !rc && *p; p++) {
        if (*p == '"' || *p == '\\') { char t[2] = {'\\', (char)*p}; rc = results_buf_put(b, t, 2); }
        else if (*p < 0x20) rc = results_buf_printf(b, "\\u%04x", *p);
        else rc = results_buf_put(b, (const char *)p, 1);
    }
    return rc ? rc : results_buf_put(b, "\"", 1);
}

static int put_dbl(struct results_buf *b, double v) {
    if (!isfinite(v)) return results_buf_put(b, "null", 4);
    return results_buf_printf(b, "%.17g", v);
}

static int put_dbl_arr(struct results_buf *b, const char *key, const double *v, int n) {
    int rc = results_buf_printf(b, ",\"%s\":[", key);
    for (int i = 0; i < n && !rc; i++) {
        if (i) rc = results_buf_put(b, ",", 1);
        if (!rc) rc = put_dbl(b, v[i]);
    }
    return rc ? rc : results_buf_put(b, "]", 1);
}

static int put_int_arr(struct results_buf *b, const char *key, const int *v, int n) {
    int rc = results_buf_printf(b, ",\"%s\":[", key);
    for (int i = 0; i < n && !rc; i++) rc = results_buf_printf(b, "%s%d", i ? "," : "", v[i]);
    return rc ? rc : results_buf_put(b, "]", 1);
}

int results_sample_line(struct results_buf *b, const struct results_sample *s) {
    int rc = results_buf_printf(b, "{\"idx\":%d,\"id\":", s->idx);
    if (!rc) rc = put_str(b, s->id ? s->id : "");
    if (!rc && s->subject) { rc = results_buf_put(b, ",\"subject\":", 11); if (!rc) rc = put_str(b, s->subject); }
    if (!rc) rc = results_buf_printf(b, ",\"gold\":%d", s->gold);
    if (!rc) rc = put_dbl_arr(b, "logliks", s->ll, s->n_choices);
    if (!rc) rc = put_int_arr(b, "char_lens", s->n_chars, s->n_choices);
    if (!rc) rc = put_int_arr(b, "tok_lens", s->n_tok, s->n_choices);
    if (!rc) rc = put_int_arr(b, "is_greedy", s->greedy, s->n_choices);
    if (!rc) rc = results_buf_printf(b, ",\"pred\":%d,\"pred_norm\":%d,\"margin\":", s->pred, s->pred_norm);
    if (!rc) rc = put_dbl(b, s->margin);
    if (!rc && s->nonfinite) rc = results_buf_put(b, ",\"nonfinite\":1", 14);
    if (!rc && s->generated) { rc = results_buf_put(b, ",\"generated\":", 13); if (!rc) rc = put_str(b, s->generated); }
    if (!rc && s->n_kl > 0) {
        rc = put_dbl_arr(b, "kl", s->kl, s->n_kl);
        if (!rc) rc = results_buf_printf(b, ",\"same_top1\":%d", s->top1_same);
    }
    if (!rc) rc = results_buf_put(b, "}\n", 2);
    return rc;
}

static int get_arr_n(const cJSON *j, const char *key, int want, const cJSON **arr, const char *ctx, struct err *e) {
    int rc = json_need_arr(j, key, arr, ctx, e);
    if (rc) return rc;
    if (want >= 0 && cJSON_GetArraySize(*arr) != want)
        return err_set(e, ERR_FORMAT, "%s: field '%s': %d entries, expected %d", ctx, key, cJSON_GetArraySize(*arr), want);
    return 0;
}

static int read_dbls(const cJSON *arr, double *out, const char *key, const char *ctx, struct err *e) {
    int i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, arr) {
        if (cJSON_IsNull(x)) out[i] = NAN;
        else if (cJSON_IsNumber(x)) out[i] = x->valuedouble;
        else return err_set(e, ERR_FORMAT, "%s: field '%s'[%d]: expected a number, got %s", ctx, key, i, json_brief(x));
        i++;
    }
    return 0;
}

static int read_ints(const cJSON *arr, int *out, const char *key, const char *ctx, struct err *e) {
    int i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, arr) {
        // range first: converting an out-of-range double to int is undefined (fuzz_samples)
        if (!cJSON_IsNumber(x) || !(x->valuedouble >= INT_MIN && x->valuedouble <= INT_MAX) ||
            x->valuedouble != floor(x->valuedouble))
            return err_set(e, ERR_FORMAT, "%s: field '%s'[%d]: expected an integer, got %s", ctx, key, i, json_brief(x));
        out[i++] = (int)x->valuedouble;
    }
    return 0;
}

int results_sample_parse(struct results_sample *s, const char *line, size_t len, const char *ctx, struct err *e) {
    memset(s, 0, sizeof *s);
    cJSON *j = NULL;
    int rc = json_parse(&j, line, len, ctx, e);
    if (rc) return rc;
    const char *id = NULL, *subject = NULL, *gen = NULL;
    const cJSON *ll, *ch, *nt, *gr, *kl = NULL;
    double margin = NAN;
    if ((rc = json_need_int(j, "idx", &s->idx, ctx, e)) || (rc = json_need_str(j, "id", &id, ctx, e)) ||
        (rc = json_opt_str(j, "subject", &subject, NULL, ctx, e)) || (rc = json_need_int(j, "gold", &s->gold, ctx, e)) ||
        (rc = get_arr_n(j, "logliks", -1, &ll, ctx, e)))
        goto fail;
    s->n_choices = cJSON_GetArraySize(ll);
    if (s->n_choices <= 0) { rc = err_set(e, ERR_FORMAT, "%s: field 'logliks': empty", ctx); goto fail; }
    if ((rc = get_arr_n(j, "char_lens", s->n_choices, &ch, ctx, e)) || (rc = get_arr_n(j, "tok_lens", s->n_choices, &nt, ctx, e)) ||
        (rc = get_arr_n(j, "is_greedy", s->n_choices, &gr, ctx, e)) || (rc = json_need_int(j, "pred", &s->pred, ctx, e)) ||
        (rc = json_need_int(j, "pred_norm", &s->pred_norm, ctx, e)) || (rc = json_opt_arr(j, "kl", &kl, ctx, e)) ||
        (rc = json_opt_int(j, "same_top1", &s->top1_same, 0, ctx, e)) ||
        (rc = json_opt_int(j, "nonfinite", &s->nonfinite, 0, ctx, e)) || (rc = json_opt_str(j, "generated", &gen, NULL, ctx, e)))
        goto fail;
    if (s->nonfinite != 0 && s->nonfinite != 1) {
        rc = err_set(e, ERR_FORMAT, "%s: field 'nonfinite': expected 1, got %d", ctx, s->nonfinite);
        goto fail;
    }
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "margin");
    if (m && cJSON_IsNumber(m)) margin = m->valuedouble;
    else if (m && !cJSON_IsNull(m)) { rc = err_set(e, ERR_FORMAT, "%s: field 'margin': expected a number, got %s", ctx, json_brief(m)); goto fail; }
    s->margin = margin;
    size_t nc = (size_t)s->n_choices;
    s->id = str_dup(id);
    s->subject = subject ? str_dup(subject) : NULL;
    s->generated = gen ? str_dup(gen) : NULL;
    s->ll = malloc(sizeof *s->ll * nc);
    s->n_chars = malloc(sizeof(int) * nc);
    s->n_tok = malloc(sizeof(int) * nc);
    s->greedy = malloc(sizeof(int) * nc);
    if (!s->id || (subject && !s->subject) || (gen && !s->generated) || !s->ll || !s->n_chars || !s->n_tok || !s->greedy) { rc = err_set(e, ERR_NOMEM, "%s: out of memory", ctx); goto fail; }
    if ((rc = read_dbls(ll, s->ll, "logliks", ctx, e)) || (rc = read_ints(ch, s->n_chars, "char_lens", ctx, e)) ||
        (rc = read_ints(nt, s->n_tok, "tok_lens", ctx, e)) || (rc = read_ints(gr, s->greedy, "is_greedy", ctx, e)))
        goto fail;
    if (s->idx < 0) { rc = err_set(e, ERR_FORMAT, "%s: field 'idx': %d is negative", ctx, s->idx); goto fail; }
    if (s->gold < 0 || s->gold >= s->n_choices || s->pred < 0 || s->pred >= s->n_choices || s->pred_norm < 0 || s->pred_norm >= s->n_choices) {
        rc = err_set(e, ERR_FORMAT, "%s: gold/pred/pred_norm (%d/%d/%d) outside 0..%d", ctx, s->gold, s->pred, s->pred_norm, s->n_choices - 1);
        goto fail;
    }
    if (kl) {
        s->n_kl = cJSON_GetArraySize(kl);
        s->kl = malloc(sizeof *s->kl * (size_t)(s->n_kl ? s->n_kl : 1));
        if (!s->kl) { rc = err_set(e, ERR_NOMEM, "%s: out of memory", ctx); goto fail; }
        if ((rc = read_dbls(kl, s->kl, "kl", ctx, e))) goto fail;
    }
    cJSON_Delete(j);
    return 0;
fail:
    cJSON_Delete(j);
    results_sample_free(s);
    return rc;
}

// ---- frames ----

// Walks the complete frames of buf; *n_items = lines in them, *good = bytes they span.
// frame_ends (may be NULL) receives the byte offset after each frame and the cumulative item
// count, up to cap entries.
static int walk_frames(const char *path, const char *buf, size_t len, int *n_items, size_t *good,
                       size_t stop_at_items, struct err *e) {
    size_t off = results_stamp_size(buf, len); // the stamp frame holds no items
    int items = 0;
    char *dec = NULL;
    size_t dcap = 0;
    while (off < len) {
        size_t fl = ZSTD_findFrameCompressedSize(buf + off, len - off);
        if (ZSTD_isError(fl)) break; // torn frame at the end of a killed run
        unsigned long long cs = ZSTD_getFrameContentSize(buf + off, fl);
        if (cs == ZSTD_CONTENTSIZE_ERROR || cs == ZSTD_CONTENTSIZE_UNKNOWN || cs > (1ull << 32)) {
            free(dec);
            return err_set(e, ERR_FORMAT, "%s: zstd frame at byte %zu has no valid content size", path, off);
        }
        if (cs + 1 > dcap) {
            dcap = (size_t)cs + 1;
            char *t = realloc(dec, dcap);
            if (!t) { free(dec); return err_set(e, ERR_NOMEM, "%s: out of memory", path); }
            dec = t;
        }
        size_t dn = ZSTD_decompress(dec, dcap, buf + off, fl);
        if (ZSTD_isError(dn)) break; // corrupt tail: treat like a torn frame
        int lines = 0;
        for (size_t k = 0; k < dn; k++) lines += dec[k] == '\n';
        if (dn == 0 || dec[dn - 1] != '\n') break;
        items += lines;
        off += fl;
        if (stop_at_items && (size_t)items >= stop_at_items) break;
    }
    free(dec);
    *n_items = items;
    *good = off;
    return 0;
}

int results_samples_count_mem(const char *raw, size_t len, const char *path, int *n_items, struct err *e) {
    size_t good;
    *n_items = 0;
    return walk_frames(path, raw, len, n_items, &good, 0, e);
}

int results_samples_count(const char *path, int *n_items, struct err *e) {
    *n_items = 0;
    if (!file_exists(path)) return 0;
    char *raw = NULL;
    size_t n = 0;
    int rc = file_read_raw(path, &raw, &n, e);
    if (rc) return rc;
    rc = results_samples_count_mem(raw, n, path, n_items, e);
    free(raw);
    return rc;
}

int results_writer_open(struct results_writer *w, const char *path, int keep_items, const struct results_stamp *stamp,
                        struct err *e) {
    memset(w, 0, sizeof *w);
    if (strlen(path) >= sizeof w->path) return err_set(e, ERR_RANGE, "%s: path too long", path);
    strcpy(w->path, path);
    size_t cut = 0;
    if (keep_items > 0) {
        char *raw = NULL;
        size_t n = 0;
        int rc = file_read_raw(path, &raw, &n, e);
        if (rc) return err_prefix(e, "cannot resume");
        int have;
        rc = walk_frames(path, raw, n, &have, &cut, (size_t)keep_items, e);
        free(raw);
        if (rc) return rc;
        if (have != keep_items)
            return err_set(e, ERR_MISMATCH, "%s: cannot resume at item %d: the file's frames end at item %d", path, keep_items, have);
        if (truncate(path, (off_t)cut) != 0) return err_set(e, ERR_IO, "%s: truncate: %s", path, strerror(errno));
        w->f = fopen(path, "ab");
    } else {
        w->f = fopen(path, "wb");
    }
    if (!w->f) return err_set(e, ERR_IO, "%s: %s", path, strerror(errno));
    if (keep_items == 0 && stamp) { // a new file starts with what it is (stamp.h)
        char *sb = NULL;
        size_t sn = 0;
        int rc = results_stamp_frame(stamp, &sb, &sn, e);
        if (!rc && (fwrite(sb, 1, sn, w->f) != sn || fflush(w->f) != 0))
            rc = err_set(e, ERR_IO, "%s: write failed: %s", path, strerror(errno));
        free(sb);
        if (rc) { fclose(w->f); w->f = NULL; return rc; }
    }
    w->cctx = ZSTD_createCCtx();
    if (!w->cctx) { fclose(w->f); w->f = NULL; return err_set(e, ERR_NOMEM, "%s: zstd init failed", path); }
    w->n_items = keep_items;
    return 0;
}

static int flush_frame(struct results_writer *w, struct err *e) {
    if (w->n_pending == 0) return 0;
    size_t bound = ZSTD_compressBound(w->pending.n);
    char *out = malloc(bound);
    if (!out) return err_set(e, ERR_NOMEM, "%s: out of memory", w->path);
    // single-threaded, fixed level: the same lines always give the same frame bytes
    size_t n = ZSTD_compressCCtx(w->cctx, out, bound, w->pending.p, w->pending.n, 3);
    if (ZSTD_isError(n)) { free(out); return err_set(e, ERR_INTERNAL, "%s: zstd: %s", w->path, ZSTD_getErrorName(n)); }
    int bad = fwrite(out, 1, n, w->f) != n;
    bad |= fflush(w->f) != 0;
    free(out);
    if (bad) return err_set(e, ERR_IO, "%s: write failed: %s", w->path, strerror(errno));
    w->pending.n = 0;
    w->n_pending = 0;
    return 0;
}

static int count_line(struct results_writer *w, struct err *e) {
    w->n_pending++;
    w->n_items++;
    if (w->n_items % RESULTS_FRAME_ITEMS == 0) return flush_frame(w, e);
    return 0;
}

int results_writer_add(struct results_writer *w, const struct results_sample *s, struct err *e) {
    if (results_sample_line(&w->pending, s)) return err_set(e, ERR_NOMEM, "%s: out of memory", w->path);
    return count_line(w, e);
}

int results_writer_add_line(struct results_writer *w, const char *line, size_t len, struct err *e) {
    if (!len || line[len - 1] != '\n' || memchr(line, '\n', len - 1))
        return err_set(e, ERR_INTERNAL, "%s: a samples line must be one line ending in a newline", w->path);
    if (results_buf_put(&w->pending, line, len)) return err_set(e, ERR_NOMEM, "%s: out of memory", w->path);
    return count_line(w, e);
}

int results_writer_close(struct results_writer *w, struct err *e) {
    int rc = 0;
    if (w->f) {
        rc = flush_frame(w, e);
        if (!rc && fsync(fileno(w->f)) != 0) rc = err_set(e, ERR_IO, "%s: fsync: %s", w->path, strerror(errno));
        if (fclose(w->f) != 0 && !rc) rc = err_set(e, ERR_IO, "%s: close: %s", w->path, strerror(errno));
        w->f = NULL;
    }
    results_writer_abort(w);
    return rc;
}

void results_writer_abort(struct results_writer *w) {
    if (w->f) fclose(w->f);
    w->f = NULL;
    ZSTD_freeCCtx(w->cctx);
    w->cctx = NULL;
    free(w->pending.p);
    w->pending = (struct results_buf){0};
}

int results_samples_parse_text(const char *buf, size_t len, const char *path, struct results_sample **out, int *n,
                               struct err *e) {
    *out = NULL;
    *n = 0;
    int cap = 0, cnt = 0, line = 1, rc = 0;
    struct results_sample *v = NULL;
    char ctx[4200];
    for (size_t off = 0; off < len && !rc; line++) {
        const char *nl = memchr(buf + off, '\n', len - off);
        if (!nl) { rc = err_set(e, ERR_FORMAT, "%s:%d: line without a newline (truncated file?)", path, line); break; }
        size_t ll = (size_t)(nl - (buf + off));
        if (cnt == INT_MAX) { rc = err_set(e, ERR_RANGE, "%s:%d: more than %d items", path, line, INT_MAX); break; }
        if (cnt == cap) {
            int nc = cap ? (cap > INT_MAX / 2 ? INT_MAX : cap * 2) : 256;
            struct results_sample *t = realloc(v, sizeof *v * (size_t)nc);
            if (!t) { rc = err_set(e, ERR_NOMEM, "%s: out of memory", path); break; }
            v = t;
            cap = nc;
        }
        snprintf(ctx, sizeof ctx, "%s:%d", path, line);
        rc = results_sample_parse(&v[cnt], buf + off, ll, ctx, e);
        if (!rc && cnt && (v[0].idx > INT_MAX - cnt || v[cnt].idx != v[0].idx + cnt)) {
            rc = err_set(e, ERR_FORMAT, "%s: field 'idx': %d, expected %lld (items out of order)", ctx, v[cnt].idx,
                         (long long)v[0].idx + cnt);
            results_sample_free(&v[cnt]);
        }
        if (!rc) cnt++;
        off += ll + 1;
    }
    if (rc) {
        for (int i = 0; i < cnt; i++) results_sample_free(&v[i]);
        free(v);
        return rc;
    }
    *out = v;
    *n = cnt;
    return 0;
}

int results_samples_read(const char *path, struct results_sample **out, int *n, struct err *e) {
    *out = NULL;
    *n = 0;
    char *buf;
    size_t len;
    int rc = file_read_all(path, &buf, &len, e);
    if (rc) return rc;
    rc = results_samples_parse_text(buf, len, path, out, n, e);
    free(buf);
    return rc;
}

int results_samples_read_run(const char *dir, const struct run_rec *run, const char *task, const char *mode,
                             struct results_sample **out, int *n, struct err *e) {
    *out = NULL;
    *n = 0;
    char path[4096];
    struct results_stamp want;
    results_stamp_expect(&want, run->json, dir, task, mode); // the configuration key: the whole record
    char *raw = NULL, *buf = NULL;
    size_t rn = 0, len = 0;
    int rc = results_samples_path(path, sizeof path, dir, task, mode, e);
    if (!rc) rc = file_read_raw(path, &raw, &rn, e);
    if (!rc) rc = results_stamp_check(path, raw, rn, &want, e);
    if (!rc) rc = zst_decompress(path, raw, rn, &buf, &len, e);
    free(raw);
    if (!rc) rc = results_samples_parse_text(buf, len, path, out, n, e);
    free(buf);
    return rc;
}

