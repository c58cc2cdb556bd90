// results.c: per-item sample lines (write/parse), the crash-safe zstd-frame writer with
// resume, samples reader, run-directory file helpers. The summary statistics live in
// summary.c; rendering in report.c.
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
#include "results/stamp.h"

// ---- buffer ----
int results_buf_put(struct results_buf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 1024;
        while (nc < b->n + n + 1) nc *= 2;
        char *t = realloc(b->p, nc);
        if (!t) return ERR_NOMEM;
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
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < 0) return ERR_INTERNAL;
    if ((size_t)k < sizeof tmp) return results_buf_put(b, tmp, (size_t)k);
    char *big = malloc((size_t)k + 1);
    if (!big) return ERR_NOMEM;
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

int results_samples_read_run(const char *dir, const cJSON *run, const char *task, const char *mode, struct results_sample **out,
                             int *n, struct err *e) {
    *out = NULL;
    *n = 0;
    char path[4096];
    struct results_stamp want;
    results_stamp_expect(&want, run, dir, task, mode);
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

// ---- files of a run ----
int results_samples_path(char *out, size_t n, const char *dir, const char *task, const char *mode, struct err *e) {
    char name[512];
    int k = snprintf(name, sizeof name, "samples-%s-%s.jsonl.zst", task, mode);
    if (k < 0 || (size_t)k >= sizeof name) return err_set(e, ERR_RANGE, "samples file name too long (%s, %s)", task, mode);
    for (char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
              *p == '_' || *p == '.' || *p == '+'))
            *p = '_';
    return path_join(out, n, dir, name, e);
}

int results_write_json(const char *path, const cJSON *j, struct err *e) {
    char *s = cJSON_Print(j);
    if (!s) return err_set(e, ERR_NOMEM, "%s: out of memory rendering JSON", path);
    size_t n = strlen(s);
    char *t = realloc(s, n + 2);
    if (!t) { free(s); return err_set(e, ERR_NOMEM, "%s: out of memory", path); }
    t[n] = '\n';
    t[n + 1] = 0;
    int rc = file_write_atomic(path, t, n + 1, e);
    free(t);
    return rc;
}

void results_config_key(char hex[65], const cJSON *run, int with_shard) {
    static const char *const keys[] = {"tokenizer", "modes", "attention", "scales", "tasks", "seed", "limit", "subjects", "window", "shard", "replicas"};
    static const char *const task_stats[] = {"tokenize_s", "n_requests", "n_sequences", "n_tokens", "n_truncated", "item_range"};
    cJSON *k = cJSON_CreateObject();
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(run, "model");
    cJSON_AddItemToObject(k, "model_hash", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(model, "hash"), 1));
    cJSON_AddItemToObject(k, "act", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(model, "act"), 1));
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(run, keys[i]);
        if (!x || (!with_shard && !strcmp(keys[i], "shard"))) continue;
        cJSON *d = cJSON_Duplicate(x, 1);
        if (!strcmp(keys[i], "tasks")) {
            cJSON *t;
            cJSON_ArrayForEach(t, d) {
                for (size_t s = 0; s < sizeof task_stats / sizeof task_stats[0]; s++)
                    cJSON_DeleteItemFromObjectCaseSensitive(t, task_stats[s]);
                // identity by content (issue 27): the items' hash stands for the files; their
                // paths (the source) are kept only by a run.json made before the hash existed
                if (cJSON_GetObjectItemCaseSensitive(t, "items_sha256")) cJSON_DeleteItemFromObjectCaseSensitive(t, "source");
                // "all" is what every run.json without the field scored: such runs keep their key
                const cJSON *ps = cJSON_GetObjectItemCaseSensitive(t, "ppl_score");
                if (cJSON_IsString(ps) && !strcmp(ps->valuestring, "all")) cJSON_DeleteItemFromObjectCaseSensitive(t, "ppl_score");
            }
        }
        // the tokenizer and the scales by their hashes, not by how their paths were spelled
        if (!strcmp(keys[i], "tokenizer") || !strcmp(keys[i], "scales")) cJSON_DeleteItemFromObjectCaseSensitive(d, "path");
        if (!strcmp(keys[i], "attention")) { // defaults and derived names out: older run.json keep their key
            const cJSON *q = cJSON_GetObjectItemCaseSensitive(d, "qmean"), *k = cJSON_GetObjectItemCaseSensitive(d, "qdq_skip");
            if (cJSON_IsString(q) && !strcmp(q->valuestring, "token")) cJSON_DeleteItemFromObjectCaseSensitive(d, "qmean");
            if (cJSON_IsString(k) && !strcmp(k->valuestring, "none")) cJSON_DeleteItemFromObjectCaseSensitive(d, "qdq_skip");
            cJSON_DeleteItemFromObjectCaseSensitive(d, "display");
        }
        cJSON_AddItemToObject(k, keys[i], d);
    }
    // the GEMM's arithmetic (not the CPU or path, which cannot change a bit): a run made with
    // OpenBLAS (no "gemm" record, key unchanged) cannot be resumed or merged with a newer one
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(run, "gemm"), "arithmetic");
    if (g) cJSON_AddItemToObject(k, "gemm", cJSON_Duplicate(g, 1));
    char *s = cJSON_PrintUnformatted(k);
    sha256_hex(s ? s : "", s ? strlen(s) : 0, hex);
    free(s);
    cJSON_Delete(k);
}

const char *results_run_qmean(const cJSON *run) {
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(run, "attention"), "qmean");
    return cJSON_IsString(q) ? q->valuestring : "token";
}

const char *results_mode_display(const cJSON *run, const char *mode) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(run, "attention");
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(a, "display"), mode);
    return cJSON_IsString(x) ? x->valuestring : mode;
}

int results_check_complete(const char *dir, const cJSON *run, struct err *e) {
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(run, "complete"))) return 0;
    char cmd[1200]; // the command that made it, shell-quoted, with --resume added
    const int k = results_resume_command(cmd, sizeof cmd, run) == 0;
    return err_set(e, ERR_MISMATCH, "%s is not a complete run (run.json: \"complete\" is not true): it was interrupted, "
                   "failed or is still running, and its samples files may be partial; finish it with %s%s%s", dir,
                   k ? "`" : "the same `run` command with --resume", k ? cmd : "", k ? "`" : "");
}

int results_task_items(const cJSON *task) {
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(task, "item_range"), *ni = cJSON_GetObjectItemCaseSensitive(task, "n_items");
    double v = -1;
    if (cJSON_GetArraySize(r) == 2 && cJSON_IsNumber(r->child) && cJSON_IsNumber(r->child->next))
        v = r->child->next->valuedouble - r->child->valuedouble;
    else if (cJSON_IsNumber(ni))
        v = ni->valuedouble;
    return v >= 0 && v <= INT_MAX && v == floor(v) ? (int)v : -1;
}

int results_default_dir(char *out, size_t n, const char *model, struct err *e) {
    const char *base = model;
    size_t len = strlen(model);
    while (len > 1 && model[len - 1] == '/') len--;
    for (size_t i = 0; i < len; i++)
        if (model[i] == '/') base = model + i + 1;
    size_t bl = (size_t)(model + len - base);
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    char ts[32];
    strftime(ts, sizeof ts, "%Y%m%d-%H%M%S", &tm);
    int k = snprintf(out, n, "results/%.*s-%s", (int)bl, base, ts);
    if (k < 0 || (size_t)k >= n) return err_set(e, ERR_RANGE, "run directory name too long");
    return 0;
}

// ---- summary (spec/tasks.md section 3) ----
#include "results/metrics.h"
#include "results/noise.h"

// percent p of v (sorted in place; nearest rank, metrics_percentile)
static double pctl(double *v, int n, double p) { return metrics_percentile(v, n, p / 100.0); }

// Loaded samples of one task under every mode.
struct task_samples {
    int n;                        // items (equal across modes)
    struct results_sample **s;    // [n_modes][n]
};

static void task_samples_free(struct task_samples *t, int n_modes) {
    if (!t->s) return;
    for (int m = 0; m < n_modes; m++) {
        if (!t->s[m]) continue;
        for (int i = 0; i < t->n; i++) results_sample_free(&t->s[m][i]);
        free(t->s[m]);
    }
    free(t->s);
    t->s = NULL;
}

struct run_ref {
    const char *dir;
    const cJSON *run; // its run.json
};

static int load_task(struct task_samples *t, const struct run_ref *rr, const char *task, char *const *modes, int n_modes, int want,
                     struct err *e) {
    const char *dir = rr->dir;
    memset(t, 0, sizeof *t);
    t->s = calloc((size_t)n_modes, sizeof *t->s);
    if (!t->s) return err_set(e, ERR_NOMEM, "summary: out of memory");
    for (int m = 0; m < n_modes; m++) {
        char path[4096];
        int n, rc = results_samples_path(path, sizeof path, dir, task, modes[m], e);
        if (!rc) rc = results_samples_read_run(dir, rr->run, task, modes[m], &t->s[m], &n, e);
        if (rc) return rc;
        char cmd[1200], fix[1400] = "finish it with run --resume";
        if (results_resume_command(cmd, sizeof cmd, rr->run) == 0)
            snprintf(fix, sizeof fix, "`%s` re-scores it%s", cmd, n > want ? " once the file is removed" : "");
        const int ref = m == 0 ? want : t->n; // the count this file must hold (-1: any)
        if (ref >= 0 && n != ref) {
            // free this mode's n samples now: task_samples_free frees t->n per mode (it read past a
            // shorter array - a heap overflow - when a killed run left fewer items in one mode)
            for (int i = 0; i < n; i++) results_sample_free(&t->s[m][i]);
            free(t->s[m]);
            t->s[m] = NULL;
            if (m == 0) // every mode cut alike (a kill at a frame boundary)
                return err_set(e, ERR_MISMATCH, "%s: %d items, but run.json says the task has %d (an interrupted run?): %s",
                               path, n, want, fix);
            return err_set(e, ERR_MISMATCH, "%s: %d items, but the reference mode '%s' has %d (an interrupted run?): %s", path,
                           n, modes[0], t->n, fix);
        }
        if (m == 0) t->n = n;
        for (int i = 0; m > 0 && i < n; i++)
            if (strcmp(t->s[m][i].id, t->s[0][i].id) || t->s[m][i].gold != t->s[0][i].gold || t->s[m][i].n_choices != t->s[0][i].n_choices)
                return err_set(e, ERR_MISMATCH, "%s: item %d ('%s') differs from the reference's ('%s') in id, gold or choices",
                               path, i, t->s[m][i].id, t->s[0][i].id);
    }
    return 0;
}

// Items whose log-likelihood was not finite in some mode (run --nonfinite count) leave every
// statistic of the task in every mode, so comparisons stay paired; o["nonfinite"] records how
// many were left out and how many each mode had (only when there are any: a normal run's
// summary.json is unchanged).
static void drop_nonfinite(struct task_samples *t, char *const *modes, int n_modes, cJSON *o) {
    int kept = 0, excluded = 0;
    int *per = calloc((size_t)n_modes, sizeof *per);
    for (int i = 0; i < t->n; i++) {
        int bad = 0;
        for (int m = 0; m < n_modes; m++) {
            bad |= t->s[m][i].nonfinite;
            if (per) per[m] += t->s[m][i].nonfinite;
        }
        for (int m = 0; m < n_modes; m++) {
            if (bad) results_sample_free(&t->s[m][i]);
            else t->s[m][kept] = t->s[m][i];
        }
        kept += !bad;
        excluded += bad;
    }
    t->n = kept;
    if (excluded && o) {
        cJSON *nf = cJSON_AddObjectToObject(o, "nonfinite");
        cJSON_AddNumberToObject(nf, "excluded", excluded);
        cJSON *mj = cJSON_AddObjectToObject(nf, "modes");
        for (int m = 0; per && m < n_modes; m++) cJSON_AddNumberToObject(mj, modes[m], per[m]);
    }
    free(per);
}

static cJSON *compare_json(const struct metrics_compare *c) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "n", c->n);
    cJSON_AddNumberToObject(o, "flips", c->flips);
    cJSON_AddNumberToObject(o, "pfr", c->pfr);
    cJSON_AddNumberToObject(o, "pfr_lo", c->pfr_lo);
    cJSON_AddNumberToObject(o, "pfr_hi", c->pfr_hi);
    cJSON_AddNumberToObject(o, "hurts", c->hurts);
    cJSON_AddNumberToObject(o, "helps", c->helps);
    cJSON_AddNumberToObject(o, "d_acc", c->d_acc);
    cJSON_AddNumberToObject(o, "mcnemar_p", c->mcnemar_p);
    cJSON_AddNumberToObject(o, "acc_ref", c->acc_ref);
    cJSON_AddNumberToObject(o, "acc", c->acc_q);
    return o;
}

static void add_num(cJSON *o, const char *k, double v) {
    if (isfinite(v)) cJSON_AddNumberToObject(o, k, v);
    else cJSON_AddNullToObject(o, k);
}

// Token level vs the reference: KL(ref || mode) over every scored position (mean and
// percentiles) and the same-top-1 rate, into o["token"].
static int token_json(cJSON *o, const struct task_samples *t, int m, struct err *e) {
    int n = t->n, nk = 0, same = 0;
    for (int i = 0; i < n; i++) { nk += t->s[m][i].n_kl; same += t->s[m][i].top1_same; }
    double *kl = malloc(sizeof *kl * (size_t)(nk ? nk : 1));
    if (!kl) return err_set(e, ERR_NOMEM, "summary: out of memory");
    int q = 0;
    double sum = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < t->s[m][i].n_kl; j++) { kl[q++] = t->s[m][i].kl[j]; sum += t->s[m][i].kl[j]; }
    cJSON *tk = cJSON_AddObjectToObject(o, "token");
    cJSON_AddNumberToObject(tk, "n_pos", nk);
    add_num(tk, "kl_mean", nk ? sum / nk : NAN);
    add_num(tk, "kl_p50", nk ? pctl(kl, nk, 50) : NAN);
    add_num(tk, "kl_p90", nk ? pctl(kl, nk, 90) : NAN);
    add_num(tk, "kl_p99", nk ? pctl(kl, nk, 99) : NAN);
    add_num(tk, "kl_max", nk ? pctl(kl, nk, 100) : NAN);
    add_num(tk, "same_top1", nk ? (double)same / nk : NAN);
    free(kl);
    return 0;
}

// Perplexity task (one sample per window): token perplexity exp(-sum ll / tokens) and bits
// per byte -sum ll / (ln 2 * bytes) per mode; vs the reference the perplexity change and the
// token-level statistics.
static int summarize_ppl(cJSON *tj, const struct task_samples *t, char *const *modes, int n_modes, struct err *e) {
    cJSON_AddNumberToObject(tj, "n", t->n);
    cJSON *mj = cJSON_AddObjectToObject(tj, "modes");
    double ppl_ref = NAN;
    for (int m = 0; m < n_modes; m++) {
        double ll = 0;
        int64_t tokens = 0, bytes = 0;
        for (int i = 0; i < t->n; i++) { ll += t->s[m][i].ll[0]; tokens += t->s[m][i].n_tok[0]; bytes += t->s[m][i].n_chars[0]; }
        double ppl = tokens ? exp(-ll / (double)tokens) : NAN;
        if (m == 0) ppl_ref = ppl;
        cJSON *o = cJSON_AddObjectToObject(mj, modes[m]);
        cJSON_AddNumberToObject(o, "tokens", (double)tokens);
        cJSON_AddNumberToObject(o, "bytes", (double)bytes);
        add_num(o, "loglik", ll);
        add_num(o, "ppl", ppl);
        add_num(o, "bits_per_byte", bytes ? -ll / (log(2.0) * (double)bytes) : NAN);
    }
    cJSON *vj = cJSON_AddObjectToObject(tj, "vs_reference");
    for (int m = 1; m < n_modes; m++) {
        cJSON *o = cJSON_AddObjectToObject(vj, modes[m]);
        const cJSON *x = cJSON_GetObjectItem(cJSON_GetObjectItem(mj, modes[m]), "ppl");
        add_num(o, "d_ppl", cJSON_IsNumber(x) ? x->valuedouble - ppl_ref : NAN);
        int rc = token_json(o, t, m, e);
        if (rc) return rc;
    }
    return 0;
}

// Where summarize_task leaves a task's accuracy and length-normalized accuracy per mode.
struct mode_acc {
    double *acc, *accn; // [n_modes] each
};

// Per-task statistics; out receives the accuracies for D_avg/D_w.
static int summarize_task(cJSON *tj, const struct task_samples *t, char *const *modes, int n_modes, int has_norm,
                          struct mode_acc out, struct err *e) {
    double *acc_out = out.acc, *accn_out = out.accn;
    int n = t->n, rc = 0;
    int *gold = malloc(sizeof(int) * (size_t)(n ? n : 1));
    int *pr = malloc(sizeof(int) * (size_t)(n ? n : 1)), *pq = malloc(sizeof(int) * (size_t)(n ? n : 1));
    double *buf = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!gold || !pr || !pq || !buf) { rc = err_set(e, ERR_NOMEM, "summary: out of memory"); goto done; }
    cJSON_AddNumberToObject(tj, "n", n);
    cJSON *mj = cJSON_AddObjectToObject(tj, "modes");
    for (int i = 0; i < n; i++) gold[i] = t->s[0][i].gold;
    for (int m = 0; m < n_modes; m++) {
        const struct results_sample *s = t->s[m];
        int k = 0, kn = 0;
        for (int i = 0; i < n; i++) { k += s[i].pred == s[i].gold; kn += s[i].pred_norm == s[i].gold; }
        double acc = n ? (double)k / n : NAN, accn = n ? (double)kn / n : NAN;
        acc_out[m] = acc;
        accn_out[m] = accn;
        cJSON *o = cJSON_AddObjectToObject(mj, modes[m]);
        cJSON_AddNumberToObject(o, "correct", k);
        add_num(o, "acc", acc);
        add_num(o, "acc_stderr", n > 1 ? metrics_stderr(acc, n) : NAN);
        if (has_norm) {
            cJSON_AddNumberToObject(o, "correct_norm", kn);
            add_num(o, "acc_norm", accn);
            add_num(o, "acc_norm_stderr", n > 1 ? metrics_stderr(accn, n) : NAN);
        }
        // per-subject accuracy (first-seen order)
        if (n && s[0].subject) {
            cJSON *sj = cJSON_AddObjectToObject(o, "subjects");
            for (int i = 0; i < n; i++) {
                if (!s[i].subject || cJSON_GetObjectItemCaseSensitive(sj, s[i].subject)) continue;
                int c = 0, tot = 0;
                for (int j = i; j < n; j++)
                    if (s[j].subject && !strcmp(s[j].subject, s[i].subject)) { tot++; c += s[j].pred == s[j].gold; }
                cJSON *x = cJSON_AddObjectToObject(sj, s[i].subject);
                cJSON_AddNumberToObject(x, "n", tot);
                cJSON_AddNumberToObject(x, "acc", (double)c / tot);
            }
        }
    }
    cJSON *vj = cJSON_AddObjectToObject(tj, "vs_reference");
    for (int m = 1; m < n_modes; m++) {
        struct metrics_compare c;
        for (int i = 0; i < n; i++) { pr[i] = t->s[0][i].pred; pq[i] = t->s[m][i].pred; }
        metrics_compare(&c, pr, pq, gold, n);
        cJSON *o = compare_json(&c);
        cJSON_AddItemToObject(vj, modes[m], o);
        if (has_norm) {
            for (int i = 0; i < n; i++) { pr[i] = t->s[0][i].pred_norm; pq[i] = t->s[m][i].pred_norm; }
            metrics_compare(&c, pr, pq, gold, n);
            cJSON_AddItemToObject(o, "acc_norm", compare_json(&c));
        }
        if ((rc = token_json(o, t, m, e))) goto done;
    }
    // margins on items every mode answers correctly (paper Fig. 9)
    cJSON *mg = cJSON_AddObjectToObject(tj, "margins_all_correct");
    int na = 0;
    for (int i = 0; i < n; i++) {
        int ok = 1;
        for (int m = 0; m < n_modes && ok; m++) ok = t->s[m][i].pred == t->s[m][i].gold;
        na += ok;
    }
    cJSON_AddNumberToObject(mg, "n", na);
    for (int m = 0; m < n_modes; m++) {
        int q = 0;
        for (int i = 0; i < n; i++) {
            int ok = 1;
            for (int mm = 0; mm < n_modes && ok; mm++) ok = t->s[mm][i].pred == t->s[mm][i].gold;
            if (ok && isfinite(t->s[m][i].margin)) buf[q++] = t->s[m][i].margin;
        }
        double sum = 0;
        for (int i = 0; i < q; i++) sum += buf[i];
        cJSON *o = cJSON_AddObjectToObject(mg, modes[m]);
        add_num(o, "mean", q ? sum / q : NAN);
        add_num(o, "p10", q ? pctl(buf, q, 10) : NAN);
        add_num(o, "p50", q ? pctl(buf, q, 50) : NAN);
        add_num(o, "p90", q ? pctl(buf, q, 90) : NAN);
    }
done:
    free(gold); free(pr); free(pq); free(buf);
    return rc;
}

// ---- noise: replicas (issue 21) ----
int results_run_replicas(const cJSON *run, int *k, const char *ctx, struct err *e) {
    *k = 0;
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(run, "replicas");
    if (!r) return 0;
    int rc = json_need_int(r, "k", k, ctx, e);
    if (!rc && (*k < 0 || *k > RESULTS_MAX_REPLICAS))
        rc = err_set(e, ERR_FORMAT, "%s: field 'replicas.k': %d is not in [0, %d]", ctx, *k, RESULTS_MAX_REPLICAS);
    return rc;
}

// modes[m + r * n_modes] = the name of replica r of mode m (malloc'd for r >= 1)
static int replica_modes(char **modes, int n_modes, int n_rep, struct err *e) {
    for (int r = 1; r < n_rep; r++)
        for (int m = 0; m < n_modes; m++) {
            char name[512];
            int rc = noise_replica_name(name, sizeof name, modes[m], r, e);
            if (rc) return rc;
            if (!(modes[r * n_modes + m] = str_dup(name))) return err_set(e, ERR_NOMEM, "summary: out of memory");
        }
    return 0;
}

// Predictions of every accuracy task, concatenated for the pooled "noise" object.
struct noise_pool {
    int n, cap;
    int *gold;
    int **pred;   // [n_all][cap]
};

static void noise_pool_free(struct noise_pool *p, int n_all) {
    for (int k = 0; p->pred && k < n_all; k++) free(p->pred[k]);
    free(p->pred);
    free(p->gold);
}

static int pool_add(struct noise_pool *p, const struct task_samples *t, int n_all) {
    if (!p->pred && !(p->pred = calloc((size_t)n_all, sizeof *p->pred))) return ERR_NOMEM;
    if (p->n + t->n > p->cap) {
        int cap = 2 * (p->n + t->n);
        int *g = realloc(p->gold, sizeof *g * (size_t)cap);
        if (!g) return ERR_NOMEM;
        p->gold = g;
        for (int k = 0; k < n_all; k++) {
            int *q = realloc(p->pred[k], sizeof *q * (size_t)cap);
            if (!q) return ERR_NOMEM;
            p->pred[k] = q;
        }
        p->cap = cap;
    }
    for (int i = 0; i < t->n; i++) {
        p->gold[p->n + i] = t->s[0][i].gold;
        for (int k = 0; k < n_all; k++) p->pred[k][p->n + i] = t->s[k][i].pred;
    }
    p->n += t->n;
    return 0;
}

// o["noise"] of one task from its samples of every mode and replica; appends them to pool.
static int task_noise(cJSON *o, const struct task_samples *t, char **modes, int n_modes, int n_rep,
                      struct noise_pool *pool, struct err *e) {
    const int n_all = n_modes * n_rep;
    struct noise_pool one = {0};
    if (pool_add(&one, t, n_all) || pool_add(pool, t, n_all)) {
        noise_pool_free(&one, n_all);
        return err_set(e, ERR_NOMEM, "summary: out of memory");
    }
    struct noise_preds p = {one.n, n_modes, n_rep, one.gold, (const int *const *)one.pred};
    struct stats_opts so;
    stats_opts_default(&so);
    cJSON *nj = NULL;
    int rc = noise_json(&nj, &p, modes, &so, e);
    if (!rc) cJSON_AddItemToObject(o, "noise", nj);
    noise_pool_free(&one, n_all);
    return rc;
}

// summary["noise"]: the replicas' record and the statistics over every accuracy task's items.
static int pooled_noise(cJSON *sum, const cJSON *run, const struct noise_pool *pool, char **modes, int n_modes,
                        int n_rep, struct err *e) {
    cJSON *o = cJSON_AddObjectToObject(sum, "noise");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(run, "replicas");
    if (r) cJSON_AddItemToObject(o, "replicas", cJSON_Duplicate(r, 1));
    else cJSON_AddNumberToObject(o, "replicas", 0);
    struct stats_opts so;
    stats_opts_default(&so);
    cJSON_AddNumberToObject(o, "bootstrap_seed", (double)so.seed);
    cJSON_AddNumberToObject(o, "bootstrap_resamples", so.n_boot);
    cJSON_AddNumberToObject(o, "rel", so.rel);
    if (!pool->n) return 0;
    struct noise_preds p = {pool->n, n_modes, n_rep, pool->gold, (const int *const *)pool->pred};
    cJSON *nj = NULL;
    int rc = noise_json(&nj, &p, modes, &so, e);
    if (!rc) cJSON_AddItemToObject(o, "pooled", nj);
    return rc;
}

int results_summarize(const char *dir, cJSON **out, struct err *e) {
    *out = NULL;
    char path[4096];
    int rc = path_join(path, sizeof path, dir, "run.json", e);
    cJSON *run = NULL, *sum = NULL;
    if (!rc) rc = json_parse_file(&run, path, e);
    if (rc) return rc;
    const cJSON *tasks, *modes_j;
    if ((rc = json_need_arr(run, "tasks", &tasks, path, e)) || (rc = json_need_arr(run, "modes", &modes_j, path, e))) {
        cJSON_Delete(run);
        return rc;
    }
    int n_modes = cJSON_GetArraySize(modes_j), n_tasks = cJSON_GetArraySize(tasks), n_rep = 1;
    if ((rc = results_run_replicas(run, &n_rep, path, e))) { cJSON_Delete(run); return rc; }
    n_rep += 1;
    struct noise_pool pool = {0};
    char **modes = calloc((size_t)(n_modes ? n_modes * n_rep : 1), sizeof *modes);
    double *acc = calloc((size_t)(n_modes * n_tasks + 1), sizeof *acc), *accn = calloc((size_t)(n_modes * n_tasks + 1), sizeof *accn);
    int *ns = calloc((size_t)n_tasks + 1, sizeof *ns), *norm = calloc((size_t)n_tasks + 1, sizeof *norm);
    if (!modes || !acc || !accn || !ns || !norm) { rc = err_set(e, ERR_NOMEM, "summary: out of memory"); goto done; }
    if (n_modes < 1) { rc = err_set(e, ERR_FORMAT, "%s: field 'modes': empty", path); goto done; }
    for (int m = 0; m < n_modes; m++) {
        const cJSON *x = cJSON_GetArrayItem(modes_j, m);
        if (!cJSON_IsString(x)) { rc = err_set(e, ERR_FORMAT, "%s: field 'modes'[%d]: expected a string, got %s", path, m, json_brief(x)); goto done; }
        modes[m] = x->valuestring;
    }
    if ((rc = replica_modes(modes, n_modes, n_rep, e))) goto done;
    sum = cJSON_CreateObject();
    cJSON_AddStringToObject(sum, "reference", modes[0]);
    cJSON *ma = cJSON_AddArrayToObject(sum, "modes");
    for (int m = 0; m < n_modes; m++) cJSON_AddItemToArray(ma, cJSON_CreateString(modes[m]));
    cJSON *tj = cJSON_AddObjectToObject(sum, "tasks");
    for (int k = 0; k < n_tasks; k++) {
        const cJSON *t = cJSON_GetArrayItem(tasks, k), *mets = NULL;
        const char *name;
        if ((rc = json_need_str(t, "name", &name, path, e)) || (rc = json_opt_arr(t, "metrics", &mets, path, e))) goto done;
        const cJSON *x;
        int is_ppl = 0;
        if (mets) cJSON_ArrayForEach(x, mets) {
            if (cJSON_IsString(x) && !strcmp(x->valuestring, "acc_norm")) norm[k] = 1;
            if (cJSON_IsString(x) && !strcmp(x->valuestring, "ppl")) is_ppl = 1;
        }
        struct task_samples ts;
        const struct run_ref rr = {dir, run};
        const int n_all = n_modes * n_rep;
        rc = load_task(&ts, &rr, name, modes, n_all, results_task_items(t), e);
        if (!rc) drop_nonfinite(&ts, modes, n_all, cJSON_AddObjectToObject(tj, name));
        if (!rc && is_ppl) {
            cJSON *o = cJSON_GetObjectItemCaseSensitive(tj, name);
            cJSON *ml = cJSON_AddArrayToObject(o, "metrics");
            cJSON_AddItemToArray(ml, cJSON_CreateString("ppl"));
            cJSON_AddItemToArray(ml, cJSON_CreateString("bits_per_byte"));
            ns[k] = -1; // not an accuracy task: left out of D_avg / D_w
            rc = summarize_ppl(o, &ts, modes, n_modes, e);
        } else if (!rc) {
            cJSON *o = cJSON_GetObjectItemCaseSensitive(tj, name);
            cJSON *ml = cJSON_AddArrayToObject(o, "metrics");
            cJSON_AddItemToArray(ml, cJSON_CreateString("acc"));
            if (norm[k]) cJSON_AddItemToArray(ml, cJSON_CreateString("acc_norm"));
            ns[k] = ts.n;
            const struct mode_acc out = {acc + (size_t)k * n_modes, accn + (size_t)k * n_modes};
            rc = summarize_task(o, &ts, modes, n_modes, norm[k], out, e);
            if (!rc && n_modes > 1) rc = task_noise(o, &ts, modes, n_modes, n_rep, &pool, e);
        }
        task_samples_free(&ts, n_all);
        if (rc) goto done;
    }
    // across tasks: gap = acc(mode) - acc(reference) per task; D_avg plain mean, D_w weighted by items
    cJSON *aj = cJSON_AddObjectToObject(sum, "across_tasks");
    double *gap = malloc(sizeof *gap * (size_t)(n_tasks + 1));
    int *w = malloc(sizeof *w * (size_t)(n_tasks + 1));
    if (!gap || !w) { free(gap); free(w); rc = err_set(e, ERR_NOMEM, "summary: out of memory"); goto done; }
    for (int m = 1; m < n_modes; m++) {
        cJSON *o = cJSON_AddObjectToObject(aj, modes[m]);
        int na = 0;
        for (int k = 0; k < n_tasks; k++)
            if (ns[k] >= 0) { gap[na] = acc[(size_t)k * n_modes + m] - acc[(size_t)k * n_modes]; w[na] = ns[k]; na++; }
        cJSON_AddNumberToObject(o, "n_tasks", na);
        add_num(o, "D_avg", na ? metrics_d_avg(gap, na) : NAN);
        add_num(o, "D_w", na ? metrics_d_w(gap, w, na) : NAN);
        int q = 0;
        for (int k = 0; k < n_tasks; k++)
            if (norm[k] && ns[k] >= 0) { gap[q] = accn[(size_t)k * n_modes + m] - accn[(size_t)k * n_modes]; w[q] = ns[k]; q++; }
        cJSON_AddNumberToObject(o, "n_tasks_norm", q);
        if (q) {
            add_num(o, "D_avg_norm", metrics_d_avg(gap, q));
            add_num(o, "D_w_norm", metrics_d_w(gap, w, q));
        }
    }
    free(gap); free(w);
    if (n_modes > 1) rc = pooled_noise(sum, run, &pool, modes, n_modes, n_rep, e);
done:
    if (rc) cJSON_Delete(sum);
    else *out = sum;
    if (modes) for (int m = n_modes; m < n_modes * n_rep; m++) free(modes[m]);
    noise_pool_free(&pool, n_modes * n_rep);
    free(modes); free(acc); free(accn); free(ns); free(norm);
    cJSON_Delete(run);
    return rc;
}
