// data.c: where a task's files are found (the data roots of DESIGN.md section 4) and the small
// text utilities the loaders share: a growable string, an RFC 4180 CSV reader and Python's
// str.strip(). No network here: a missing file is an error that points at `download`.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "base/json_util.h"
#include "eval/tasks/task.h"

// ---- data roots ----
struct root { char path[2048]; const char *origin; int set; };

// Fills the 3 roots in lookup order; unset roots have set=0 (kept to name them in errors).
static void roots_get(struct root r[3], const struct task_opts *o) {
    memset(r, 0, 3 * sizeof *r);
    r[0].origin = "--data-dir";
    if (o && o->data_dir && *o->data_dir) { snprintf(r[0].path, sizeof r[0].path, "%s", o->data_dir); r[0].set = 1; }
    r[1].origin = "$HIFA4_DATA";
    const char *d = getenv("HIFA4_DATA");
    if (d && *d) { snprintf(r[1].path, sizeof r[1].path, "%s", d); r[1].set = 1; }
    const char *c = getenv("HIFA4_CACHE"), *h = getenv("HOME");
    if (c && *c) {
        r[2].origin = "$HIFA4_CACHE/datasets";
        snprintf(r[2].path, sizeof r[2].path, "%s/datasets", c);
        r[2].set = 1;
    } else {
        r[2].origin = "cache ~/.cache/hifa4/datasets";
        if (h && *h) { snprintf(r[2].path, sizeof r[2].path, "%s/.cache/hifa4/datasets", h); r[2].set = 1; }
    }
}

int task_data_try(char *out, size_t n, const struct task_opts *o, const char *rel, int want_dir) {
    struct root r[3];
    roots_get(r, o);
    for (int i = 0; i < 3; i++) {
        if (!r[i].set) continue;
        char p[4096];
        if (path_join(p, sizeof p, r[i].path, rel, NULL)) continue;
        if (want_dir ? dir_exists(p) : file_exists(p)) {
            if (strlen(p) >= n) return 0;
            memcpy(out, p, strlen(p) + 1);
            return 1;
        }
    }
    return 0;
}

int task_data_missing(struct err *e, const struct task_opts *o, const char *task,
                      const char *const *rels, int n_rels) {
    struct root r[3];
    roots_get(r, o);
    struct sbuf b = {0};
    sb_printf(&b, "%s: data not found: ", task);
    for (int i = 0; i < n_rels; i++) sb_printf(&b, "%s'%s'", i ? " or " : "", rels[i]);
    sb_puts(&b, "; looked in");
    for (int i = 0; i < 3; i++) {
        if (r[i].set) sb_printf(&b, "%s %s (%s)", i ? "," : "", r[i].path, r[i].origin);
        else sb_printf(&b, "%s %s (unset)", i ? "," : "", r[i].origin);
    }
    sb_printf(&b, "; run `hifa4-eval download --task %s` or pass --data-dir DIR (layout of ../shared/datasets)", task);
    int rc = err_set(e, ERR_NOTFOUND, "%s", b.p ? b.p : "data not found (out of memory)");
    free(b.p);
    return rc;
}

int task_data_find(char *out, size_t n, const struct task_opts *o, const char *task,
                   const char *rel, int want_dir, struct err *e) {
    if (task_data_try(out, n, o, rel, want_dir)) return 0;
    return task_data_missing(e, o, task, &rel, 1);
}

// ---- reading ----
int task_read_text(const char *path, char **buf, size_t *len, struct err *e) {
    int rc = file_read_all(path, buf, len, e);
    if (rc) return rc;
    if (utf8_valid(*buf, *len)) return 0;
    const char *p = *buf, *end = *buf + *len;
    int line = 1;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (!utf8_valid(p, n)) break;
        line++;
        p = nl ? nl + 1 : end;
    }
    free(*buf);
    *buf = NULL;
    *len = 0;
    return err_set(e, ERR_FORMAT, "%s:%d: not valid UTF-8", path, line);
}

// ---- growable string ----
static int sb_reserve(struct sbuf *s, size_t extra) {
    if (s->n + extra + 1 <= s->cap) return 0;
    size_t nc = s->cap ? s->cap : 64;
    while (nc < s->n + extra + 1) {
        if (nc > SIZE_MAX / 2) return ERR_NOMEM;
        nc *= 2;
    }
    char *np = realloc(s->p, nc);
    if (!np) return ERR_NOMEM;
    s->p = np;
    s->cap = nc;
    return 0;
}

int sb_putn(struct sbuf *s, const char *p, size_t n) {
    if (sb_reserve(s, n)) return ERR_NOMEM;
    if (n) memcpy(s->p + s->n, p, n);
    s->n += n;
    s->p[s->n] = 0;
    return 0;
}

int sb_puts(struct sbuf *s, const char *p) { return sb_putn(s, p, strlen(p)); }

int sb_printf(struct sbuf *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k < 0) return ERR_INTERNAL;
    if (sb_reserve(s, (size_t)k)) return ERR_NOMEM;
    va_start(ap, fmt);
    vsnprintf(s->p + s->n, (size_t)k + 1, fmt, ap);
    va_end(ap);
    s->n += (size_t)k;
    return 0;
}

char *sb_take(struct sbuf *s) {
    if (!s->p && sb_reserve(s, 0)) return NULL;
    if (s->n == 0) s->p[0] = 0;
    char *p = s->p;
    memset(s, 0, sizeof *s);
    return p;
}

// ---- CSV ----
void csv_init(struct csv_reader *r, const char *buf, size_t len, const char *path) {
    memset(r, 0, sizeof *r);
    r->p = buf;
    r->end = buf + len;
    r->path = path;
    r->line = 1;
}

void csv_free(struct csv_reader *r) {
    for (int i = 0; i < r->n_fields; i++) free(r->fields[i]);
    free(r->fields);
    free(r->field.p);
    r->fields = NULL;
    r->n_fields = r->cap_fields = 0;
    r->field.p = NULL;
}

static int csv_push_field(struct csv_reader *r) {
    if (r->n_fields == r->cap_fields) {
        int nc = r->cap_fields ? r->cap_fields * 2 : 8;
        char **nf = realloc(r->fields, (size_t)nc * sizeof *nf);
        if (!nf) return ERR_NOMEM;
        r->fields = nf;
        r->cap_fields = nc;
    }
    char *f = sb_take(&r->field);
    if (!f) return ERR_NOMEM;
    r->fields[r->n_fields++] = f;
    return 0;
}

int csv_next(struct csv_reader *r, int *row_line, struct err *e) {
    for (int i = 0; i < r->n_fields; i++) free(r->fields[i]);
    r->n_fields = 0;
    // skip blank lines (LF or CRLF)
    while (r->p < r->end && (*r->p == '\n' || (*r->p == '\r' && r->p + 1 < r->end && r->p[1] == '\n'))) {
        r->p += *r->p == '\r' ? 2 : 1;
        r->line++;
    }
    if (r->p >= r->end) return 0;
    *row_line = r->line;
    for (;;) {  // one field per iteration
        r->field.n = 0;
        if (r->p < r->end && *r->p == '"') {
            r->p++;
            for (;;) {
                if (r->p >= r->end)
                    return err_set(e, ERR_FORMAT, "%s:%d: unterminated quoted field (row starts at line %d)",
                                   r->path, r->line, *row_line);
                char c = *r->p++;
                if (c == '"') {
                    if (r->p < r->end && *r->p == '"') { r->p++; if (sb_putn(&r->field, "\"", 1)) goto oom; continue; }
                    break;
                }
                if (c == '\n') r->line++;
                if (sb_putn(&r->field, &c, 1)) goto oom;
            }
            if (r->p < r->end && *r->p != ',' && *r->p != '\n' &&
                !(*r->p == '\r' && (r->p + 1 == r->end || r->p[1] == '\n')))
                return err_set(e, ERR_FORMAT, "%s:%d: unexpected character '%c' after closing quote",
                               r->path, r->line, *r->p);
        } else {
            while (r->p < r->end && *r->p != ',' && *r->p != '\n') {
                if (*r->p == '"')
                    return err_set(e, ERR_FORMAT, "%s:%d: quote inside an unquoted field", r->path, r->line);
                if (*r->p == '\r' && (r->p + 1 == r->end || r->p[1] == '\n')) { r->p++; continue; }
                if (sb_putn(&r->field, r->p, 1)) goto oom;
                r->p++;
            }
        }
        if (sb_putn(&r->field, "", 0) || csv_push_field(r)) goto oom;
        if (r->p < r->end && *r->p == '\r') r->p++;  // CR of a CRLF after a quoted field
        if (r->p >= r->end) return 1;
        if (*r->p == ',') { r->p++; continue; }
        // '\n': end of row
        r->p++;
        r->line++;
        return 1;
    }
oom:
    return err_set(e, ERR_NOMEM, "%s:%d: out of memory", r->path, r->line);
}

// ---- strings ----
static int py_space(utf8proc_int32_t c) {
    if (c == ' ' || (c >= 9 && c <= 13) || (c >= 0x1c && c <= 0x1f) || c == 0x85) return 1;
    if (c < 0x80) return 0;
    utf8proc_category_t k = utf8proc_category(c);
    return k == UTF8PROC_CATEGORY_ZS || k == UTF8PROC_CATEGORY_ZL || k == UTF8PROC_CATEGORY_ZP;
}

char *task_strip(const char *s, size_t n) {
    const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
    size_t a = 0, b = n;
    while (a < b) {  // leading
        utf8proc_int32_t c;
        utf8proc_ssize_t k = utf8proc_iterate(p + a, (utf8proc_ssize_t)(b - a), &c);
        if (k <= 0 || !py_space(c)) break;
        a += (size_t)k;
    }
    while (b > a) {  // trailing: step back to the start of the last code point
        size_t st = b - 1;
        while (st > a && (p[st] & 0xc0) == 0x80) st--;
        utf8proc_int32_t c;
        utf8proc_ssize_t k = utf8proc_iterate(p + st, (utf8proc_ssize_t)(b - st), &c);
        if (k <= 0 || !py_space(c)) break;
        b = st;
    }
    char *r = malloc(b - a + 1);
    if (!r) return NULL;
    memcpy(r, s + a, b - a);
    r[b - a] = 0;
    return r;
}

size_t task_line_len(const char *p, const char *end) {
    const char *q = memchr(p, '\n', (size_t)(end - p));
    size_t n = q ? (size_t)(q - p) : (size_t)(end - p);
    if (n && p[n - 1] == '\r') n--;
    return n;
}

// ---- JSONL rows ----
// The NUL of a raw byte or of a \u0000 escape inside a string (cJSON's strings end at it).
static long nul_at(const char *p, size_t n) {
    int in_str = 0;
    for (size_t k = 0; k < n; k++) {
        if (p[k] == 0) return (long)k;
        if (!in_str) { in_str = p[k] == '"'; continue; }
        if (p[k] == '"') in_str = 0;
        else if (p[k] == '\\' && k + 1 < n) {
            if (p[k + 1] == 'u' && k + 5 < n && !memcmp(p + k + 2, "0000", 4)) return (long)k;
            k++;
        }
    }
    return -1;
}

int task_jsonl_parse(cJSON **out, const char *line, size_t len, const char *ctx, struct err *e) {
    *out = NULL;
    const char *cr = memchr(line, '\r', len);
    if (cr)
        return err_set(e, ERR_FORMAT, "%s: a carriage return (CR) without a line feed at column %zu: lines must end in "
                       "LF or CRLF (a file with CR-only line endings is read as one line)", ctx, (size_t)(cr - line) + 1);
    long z = nul_at(line, len);
    if (z >= 0) return err_set(e, ERR_FORMAT, "%s: a NUL character at column %ld (a string would end there)", ctx, z + 1);
    return json_parse(out, line, len, ctx, e);
}

void task_lines_init(struct task_lines *it, const char *buf, size_t len) {
    it->p = buf;
    it->end = buf + len;
    it->lineno = 0;
}

int task_lines_next(struct task_lines *it, const char **line, size_t *len) {
    while (it->p < it->end) {
        const char *lp = it->p, *nl = memchr(lp, '\n', (size_t)(it->end - lp));
        size_t ll = task_line_len(lp, it->end), k = 0;
        it->p = nl ? nl + 1 : it->end;
        it->lineno++;
        while (k < ll && (lp[k] == ' ' || lp[k] == '\t')) k++;
        if (k == ll) continue;
        *line = lp;
        *len = ll;
        return 1;
    }
    return 0;
}
